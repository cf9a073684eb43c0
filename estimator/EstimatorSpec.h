//===- EstimatorSpec.h - What a model_fn returns ------------------------===//
//
// tf.estimator.EstimatorSpec, the model_fn contract and its params.
//
//   EstimatorSpec my_model_fn(const TensorMap &features, const Tensor &labels,
//                             ModeKeys mode, const Params &params,
//                             const RunConfig &config) {
//     Tensor logits = layers::dense(features["x"], params.get<int64_t>("n"));
//     EstimatorSpec spec(mode);
//     spec.predictions = {{"classes", argmax(logits, 1)}};
//     if (mode == ModeKeys::PREDICT) return spec;
//     spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
//     if (mode == ModeKeys::TRAIN)
//       spec.train_op = train::AdamOptimizer().minimize(spec.loss);
//     else
//       spec.eval_metric_ops = {{"accuracy",
//           metrics::accuracy(labels, spec.predictions["classes"])}};
//     return spec;
//   }
//
// The graph: the Estimator calls the model_fn once per mode into one
// estc::Graph (node names prefixed by the mode, variables shared across
// modes). Ops and layers find it through their input tensors; code that
// needs the Graph itself (g.constant, g.get_variable, g.global_step) gets it
// from any input tensor, `features["x"].graph()`, or from
// get_default_graph(), TF's tf.compat.v1.get_default_graph().
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_ESTIMATORSPEC_H
#define ESTC_ESTIMATOR_ESTIMATORSPEC_H

#include "estimator/RunConfig.h"
#include "estimator/SessionRunHook.h"
#include "lib/Graph/GraphBuilder.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace estc {
namespace summary {
struct ModelSummary;
} // namespace summary
namespace estimator {

using estc::ModeKeys;

/// One hyperparameter: a bool, integer, double, string, or a list of
/// integers, doubles or strings.
class ParamValue {
public:
  using Storage =
      std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                   std::vector<double>, std::vector<std::string>>;
  ParamValue(bool v) : value_(v) {}
  ParamValue(int v) : value_(static_cast<int64_t>(v)) {}
  ParamValue(int64_t v) : value_(v) {}
  ParamValue(double v) : value_(v) {}
  ParamValue(const char *v) : value_(std::string(v)) {}
  ParamValue(std::string v) : value_(std::move(v)) {}
  ParamValue(std::vector<int64_t> v) : value_(std::move(v)) {}
  ParamValue(std::vector<double> v) : value_(std::move(v)) {}
  ParamValue(std::vector<std::string> v) : value_(std::move(v)) {}

  const Storage &storage() const { return value_; }
  /// "bool", "int", "double", "string", "int list", "double list",
  /// "string list".
  const char *kind() const;

private:
  Storage value_;
};

/// The `params` of an Estimator, passed to every model_fn call (TF's dict).
class Params {
public:
  Params() = default;
  Params(std::initializer_list<std::pair<const std::string, ParamValue>> items)
      : values_(items) {}

  Params &set(const std::string &key, ParamValue value);
  bool contains(const std::string &key) const { return values_.count(key); }
  const std::map<std::string, ParamValue> &values() const { return values_; }

  /// The value as T: bool, int, int64_t, double (an integer converts),
  /// std::string, std::vector<int64_t>, std::vector<double>,
  /// std::vector<std::string>. std::invalid_argument naming the key when it
  /// is absent or of another kind.
  template <typename T> T get(const std::string &key) const;
  /// As above, `fallback` when the key is absent.
  template <typename T> T get(const std::string &key, T fallback) const {
    return contains(key) ? get<T>(key) : fallback;
  }

private:
  std::map<std::string, ParamValue> values_;
};

template <> bool Params::get<bool>(const std::string &) const;
template <> int Params::get<int>(const std::string &) const;
template <> int64_t Params::get<int64_t>(const std::string &) const;
template <> double Params::get<double>(const std::string &) const;
template <> std::string Params::get<std::string>(const std::string &) const;
template <>
std::vector<int64_t>
Params::get<std::vector<int64_t>>(const std::string &) const;
template <>
std::vector<double> Params::get<std::vector<double>>(const std::string &) const;
template <>
std::vector<std::string>
Params::get<std::vector<std::string>>(const std::string &) const;

/// tf.estimator.export.ClassificationOutput, RegressionOutput and
/// PredictOutput: what a signature of the export returns (Export.h,
/// docs/design/saved-model.md). `outputs` by TF's signature output names.
struct ExportOutput {
  enum class Kind { Classification, Regression, Predict };
  Kind kind = Kind::Predict;
  TensorMap outputs;
};

/// {"scores": float [batch, n], "classes": integer class ids [batch, n]
/// (the export maps them to the head's class names, or decimal strings)};
/// either may be an empty Tensor (left out), not both
/// (std::invalid_argument).
ExportOutput ClassificationOutput(const Tensor &scores, const Tensor &classes);
/// {"outputs": value}, a float tensor [batch] or [batch, 1].
ExportOutput RegressionOutput(const Tensor &value);
/// The outputs as they are (at least one).
ExportOutput PredictOutput(const TensorMap &outputs);

/// tf.compat.v1.train.Scaffold, the part the Estimator honours: the
/// var_list of its saver, TF's Scaffold(saver=tf.compat.v1.train.Saver(
/// var_list)). In an EVAL or PREDICT spec, evaluate (train_and_evaluate's
/// evaluations included), predict and export_saved_model restore each
/// listed variable from its checkpoint name, and every other variable from
/// its own name: with ExponentialMovingAverage::variables_to_restore()
/// (lib/Graph/Train.h), the model runs on the averaged weights. A name the
/// checkpoint lacks is a one-line train::CheckpointError; an in-memory
/// evaluation (EvalSpec::every_n_steps) reads the names from the training
/// variables. Not in a TRAIN spec (std::invalid_argument).
struct Scaffold {
  /// Checkpoint name -> the variable restored from it.
  std::map<std::string, std::string> saver_var_list{};
};

/// tf.estimator.EstimatorSpec. `loss` is a float scalar; `train_op` the
/// optimizer's minimize(); eval_metric_ops the streaming metrics by name
/// (the Metric of lib/Graph/Train.h: value + update ops); export_outputs
/// the signatures export_saved_model writes (serving key -> output; none:
/// one PredictOutput of the predictions under "serving_default", as TF).
struct EstimatorSpec {
  explicit EstimatorSpec(ModeKeys mode) : mode(mode) {}

  ModeKeys mode;
  TensorMap predictions;
  Tensor loss;
  Operation train_op;
  std::vector<std::pair<std::string, Metric>> eval_metric_ops;
  std::map<std::string, ExportOutput> export_outputs;
  Hooks training_hooks;
  Hooks training_chief_hooks;
  Hooks evaluation_hooks;
  Hooks prediction_hooks;
  Scaffold scaffold;

  /// TF's checks: TRAIN needs loss and train_op, EVAL needs loss, PREDICT
  /// needs predictions; loss is a float scalar; no metric is named "loss"
  /// or "global_step", and metric names are unique; export output names
  /// are not empty; scaffold.saver_var_list only in EVAL and PREDICT, and
  /// naming saved variables of the graph. Throws std::invalid_argument, one
  /// line naming the field.
  void validate() const;

  /// The graph part, for Graph::set_signature: predictions, loss, train_op,
  /// metrics.
  Signature signature() const;
  /// What this mode's compiled function computes, as the Estimator compiles
  /// it (TF ignores the other fields of a mode's spec): PREDICT its
  /// predictions; TRAIN loss and train_op; EVAL loss and metrics.
  Signature mode_signature() const;
  /// An EstimatorSpec from a graph-builder Signature (the seed models of
  /// examples/models return one).
  static EstimatorSpec from_signature(ModeKeys mode,
                                      const Signature &signature);
};

/// model_fn(features, labels, mode, params, config). `labels` is an empty
/// Tensor in PREDICT (and when the input has no labels).
using ModelFn = std::function<EstimatorSpec(
    const TensorMap &features, const Tensor &labels, ModeKeys mode,
    const Params &params, const RunConfig &config)>;

/// The Graph the Estimator is building (during a model_fn call); throws
/// std::logic_error outside one.
Graph &get_default_graph();

/// What a SummarySaverHook (Hooks.h, Options::summaries) writes for the
/// model's summaries `defs` (summary::merge_all(graph), lib/Graph/
/// Summaries.h): TF's SummarySaverHook(summary_op=merge_all()). A
/// training hook of model_fn's writes them on its own steps, as the one
/// the Estimator installs does every save_summary_steps.
std::vector<summary::ModelSummary>
summary_hook_summaries(const std::vector<graph::SummaryDef> &defs);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_ESTIMATORSPEC_H
