//===- DnnLinearCombined.h - DNNLinearCombinedClassifier, ... ------------===//
//
// TF 2.15's canned/dnn_linear_combined.py: the logits of Linear.h's and
// Dnn.h's models summed; each part trained by its own optimizer on its own
// variables in one step (linear: Ftrl, min(0.005, 1/sqrt(n)); dnn: Adagrad
// 0.001). dnn_linear_combined_model() gives the CannedModel (Canned.h; no
// LLVM); the classes are JIT Estimators built from it (link EstcCannedJit).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_DNNLINEARCOMBINED_H
#define ESTC_ESTIMATOR_CANNED_DNNLINEARCOMBINED_H

#include "estimator/Canned/CannedEstimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/PartitionedVariables.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

struct DNNLinearCombinedOptions {
  FeatureColumns linear_feature_columns;
  OptimizerSpec linear_optimizer = "Ftrl";
  FeatureColumns dnn_feature_columns;
  OptimizerSpec dnn_optimizer = "Adagrad";
  std::vector<int64_t> dnn_hidden_units;
  Activation dnn_activation_fn = nn::relu;
  std::optional<double> dnn_dropout;
  bool batch_norm = false;
  std::string linear_sparse_combiner = "sum";
  /// The DNN part's input_layer_partitioner (DNNOptions's).
  Partitioner input_layer_partitioner = nullptr;
  /// The linear part's partitioner (LinearOptions::partitioner; TF 1 gives
  /// it min_max_variable_partitioner(num_ps_replicas) in a cluster).
  Partitioner linear_partitioner = nullptr;
};

CannedModel dnn_linear_combined_model(std::shared_ptr<const Head> head,
                                      DNNLinearCombinedOptions options);

class DNNLinearCombinedEstimator : public CannedEstimator {
public:
  DNNLinearCombinedEstimator(
      std::shared_ptr<const Head> head, DNNLinearCombinedOptions options,
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNLinearCombinedClassifier : public DNNLinearCombinedEstimator {
public:
  DNNLinearCombinedClassifier(
      DNNLinearCombinedOptions options, ClassifierOptions head = {},
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNLinearCombinedRegressor : public DNNLinearCombinedEstimator {
public:
  DNNLinearCombinedRegressor(
      DNNLinearCombinedOptions options, RegressorOptions head = {},
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_DNNLINEARCOMBINED_H
