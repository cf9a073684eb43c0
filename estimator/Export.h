//===- Export.h - tf.estimator.export: receivers and export outputs -----===//
//
// What Estimator::export_saved_model takes (docs/design/saved-model.md):
//
//   - a serving_input_receiver_fn returning a ServingInputReceiver: the
//     tensors a client sends and how they become the model's raw features.
//     TF computes features from receiver tensors with graph ops; estc's
//     receivers are host stages the exported model rebuilds at load time:
//     *raw* (the receiver tensors are the features) or *parsing* (one
//     string tensor of serialized tf.Example, parsed with a parse spec, as
//     tf.estimator.export.build_parsing_serving_input_receiver_fn does);
//     receiver_tensors_alternatives adds more receivers, each with its own
//     signatures ("<alternative>:<key>");
//   - EstimatorSpec::export_outputs (EstimatorSpec.h's ExportOutput:
//     ClassificationOutput, RegressionOutput, PredictOutput), which become
//     the export's signatures with TF's rules.
//
//   est.export_saved_model(
//       "/models/titanic",
//       estimator::build_parsing_serving_input_receiver_fn(
//           feature_column::make_parse_example_spec(columns)));
//
// The Estimator's host transform (feature columns, a head's class names)
// is exported with the model, so a canned estimator served from raw
// tf.Examples applies all its transformations.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_EXPORT_H
#define ESTC_ESTIMATOR_EXPORT_H

#include "lib/Data/Example.h"
#include "lib/Graph/GraphBuilder.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

/// One receiver: the tensors a client sends (name, dtype, shape with -1 for
/// the batch) and, for a parsing receiver, the spec its single string
/// tensor of serialized tf.Example is parsed with.
struct ReceiverTensors {
  std::vector<TensorSpec> tensors;
  /// Set: `tensors` is one STRING [-1] tensor of serialized tf.Example,
  /// parsed with this spec into the features. Unset: the tensors are the
  /// features.
  std::optional<data::FeatureSpecs> parse_spec;
};

/// tf.estimator.export.ServingInputReceiver.
struct ServingInputReceiver : ReceiverTensors {
  /// More receivers (TF's receiver_tensors_alternatives), by name; each
  /// gets the signatures "<name>:<export output key>".
  std::map<std::string, ReceiverTensors> receiver_tensors_alternatives;

  /// std::invalid_argument, one line: no tensors, an empty or duplicate
  /// name, a parsing receiver with other than one STRING tensor of rank 1,
  /// an empty alternative name.
  void validate() const;
};

using ServingInputReceiverFn = std::function<ServingInputReceiver()>;

/// tf.estimator.export.build_parsing_serving_input_receiver_fn: one STRING
/// tensor "examples" ([default_batch_size] or [-1]) parsed with
/// `feature_spec`.
ServingInputReceiverFn build_parsing_serving_input_receiver_fn(
    data::FeatureSpecs feature_spec,
    std::optional<int64_t> default_batch_size = {});

/// tf.estimator.export.build_raw_serving_input_receiver_fn: the features
/// themselves (each spec's key is its name; dimension 0, the batch, becomes
/// default_batch_size or -1).
ServingInputReceiverFn build_raw_serving_input_receiver_fn(
    std::vector<TensorSpec> features,
    std::optional<int64_t> default_batch_size = {});

/// The code target of an export (the loading CPU must have its features).
/// "native": the exporting machine's CPU with all its features; or an LLVM
/// CPU name ("x86-64-v3", "skylake-avx512", "znver3") plus features
/// ("+avx2,-avx512f").
struct ExportTarget {
  std::string cpu = "native";
  std::string features{};
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_EXPORT_H
