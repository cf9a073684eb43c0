//===- Head.h - tf.estimator heads: loss, predictions, metrics, specs ---===//
//
// TF 2.15's heads (tf.estimator.BinaryClassHead, MultiClassHead,
// MultiLabelHead, RegressionHead, PoissonRegressionHead,
// LogisticRegressionHead, MultiHead): given a model's logits, a head builds
// the loss, the predictions, the evaluation metrics, the export outputs and
// the train op, and returns the EstimatorSpec a model_fn returns:
//
//   EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
//                          ModeKeys mode, const Params &, const RunConfig &) {
//     MultiClassHead head(3, "weight", {"cat", "dog", "owl"});
//     Tensor logits = layers::dense(features["x"], head.logits_dimension());
//     return head.create_estimator_spec(features, mode, logits, labels,
//                                       train::AdagradOptimizer(0.1));
//   }
//
// Semantics, names and defaults are TF's (tensorflow_estimator/python/
// estimator/head/*.py): the same per-example losses, weighted and reduced by
// `loss_reduction` (SUM_OVER_BATCH_SIZE: the weighted sum over the number of
// loss elements); the same prediction keys and metric keys ("accuracy",
// "auc", "label/mean", "precision/positive_threshold_0.5", ..., suffixed
// "/<name>" for a named head); the metrics are tf.keras.metrics' (TF 2.15's
// heads use them: AUC over 200 evenly spaced thresholds with Keras's bucket
// placement, divide-no-nan ratios), built from est ops. docs/heads.md lists
// every head's losses, prediction keys and metric keys.
//
// Strings never reach compiled code (docs/design/feature-columns.md), so a
// head has two halves:
//   - graph (compiled): loss, predictions, metrics, create_estimator_spec.
//     Labels arrive as numbers: class ids (I64) or values; the graph keeps
//     TF's run-time range check of integer class-id labels (check_range:
//     the compiled step stops with rt::InvalidArgumentError naming the label
//     and its batch row).
//   - host: transform_labels() turns the raw labels of a batch (strings of
//     label_vocabulary, class ids, 0/1 or [0, 1] values) into what the graph
//     takes, and throws data::DataError naming the bad label and its batch
//     row, as TF fails at run time; complete_predictions() adds the string
//     predictions TF returns ("classes", "all_classes": the vocabulary entry
//     or the decimal class id) to a prediction the compiled model returned,
//     from its "class_ids" / "all_class_ids" (class_names()).
// The Estimator applies both (its input transform, its predict()); a
// program that runs a compiled model itself calls them around each batch.
//
// Export outputs (EstimatorSpec::export_outputs, PREDICT mode) are filled as
// TF's heads fill them: serving keys "serving_default", "classification",
// "regression", "predict"; each entry is a TensorMap keyed by TF's signature
// output names: a ClassificationOutput is {"scores", "classes"} (with
// "classes" the I64 class ids of every class, [batch, n_classes], which the
// serving host maps to strings with class_names()), a RegressionOutput
// {"outputs"}, a PredictOutput the predictions themselves.
//
// Errors: arguments TF rejects with ValueError (n_classes, thresholds,
// label_vocabulary, loss_reduction, shapes of logits / labels / weights,
// missing labels, optimizer and train_op_fn both or neither) throw
// std::invalid_argument, one line naming the head and the argument.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_HEAD_H
#define ESTC_ESTIMATOR_CANNED_HEAD_H

#include "estimator/EstimatorSpec.h"
#include "lib/Data/Value.h"
#include "lib/Data/Vocabulary.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Train.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace estimator {

/// tf.losses.Reduction (Keras's ReductionV2): how a head reduces the
/// weighted per-example losses of a batch. AUTO is SUM_OVER_BATCH_SIZE;
/// NONE is refused by every head (it gives no scalar loss).
enum class Reduction { AUTO, NONE, SUM, SUM_OVER_BATCH_SIZE };
/// "auto", "none", "sum", "sum_over_batch_size" (TF's values).
const char *reduction_name(Reduction reduction);

/// tf.estimator's PredictionKeys.
struct PredictionKeys {
  static constexpr const char *CLASSES = "classes";
  static constexpr const char *CLASS_IDS = "class_ids";
  static constexpr const char *ALL_CLASSES = "all_classes";
  static constexpr const char *ALL_CLASS_IDS = "all_class_ids";
  static constexpr const char *LOGISTIC = "logistic";
  static constexpr const char *LOGITS = "logits";
  static constexpr const char *PREDICTIONS = "predictions";
  static constexpr const char *PROBABILITIES = "probabilities";
};

/// tf.estimator's MetricKeys (the %g / %d / %s forms are formatted as
/// Python's % does).
struct MetricKeys {
  static constexpr const char *LOSS = "loss";
  static constexpr const char *LOSS_MEAN = "average_loss";
  static constexpr const char *LOSS_REGULARIZATION = "regularization_loss";
  static constexpr const char *ACCURACY = "accuracy";
  static constexpr const char *PRECISION = "precision";
  static constexpr const char *RECALL = "recall";
  static constexpr const char *ACCURACY_BASELINE = "accuracy_baseline";
  static constexpr const char *AUC = "auc";
  static constexpr const char *AUC_PR = "auc_precision_recall";
  static constexpr const char *LABEL_MEAN = "label/mean";
  static constexpr const char *PREDICTION_MEAN = "prediction/mean";
  static constexpr const char *ACCURACY_AT_THRESHOLD =
      "accuracy/positive_threshold_%g";
  static constexpr const char *PRECISION_AT_THRESHOLD =
      "precision/positive_threshold_%g";
  static constexpr const char *RECALL_AT_THRESHOLD =
      "recall/positive_threshold_%g";
  static constexpr const char *PROBABILITY_MEAN_AT_CLASS =
      "probability_mean/class%d";
  static constexpr const char *AUC_AT_CLASS = "auc/class%d";
  static constexpr const char *AUC_PR_AT_CLASS = "auc_precision_recall/class%d";
  static constexpr const char *PROBABILITY_MEAN_AT_NAME = "probability_mean/%s";
  static constexpr const char *AUC_AT_NAME = "auc/%s";
  static constexpr const char *AUC_PR_AT_NAME = "auc_precision_recall/%s";
};

/// The serving keys of a head's export outputs (TF's base_head).
constexpr const char *DEFAULT_SERVING_KEY = "serving_default";
constexpr const char *CLASSIFY_SERVING_KEY = "classification";
constexpr const char *REGRESS_SERVING_KEY = "regression";
constexpr const char *PREDICT_SERVING_KEY = "predict";

/// One prediction as the Estimator's predict() yields it (key -> value).
using HostPrediction = std::map<std::string, TensorValue>;

/// The interface of every head (tf.estimator.Head).
class Head {
public:
  /// A custom per-example loss (TF's loss_fn(labels, logits, features)):
  /// labels as the head processed them (float 0/1 or [0, 1] values for the
  /// binary and multi-label heads, I64 class ids [D0, ..., 1] for the
  /// multi-class head, float values for regression), float logits; returns
  /// the unweighted loss [D0, ..., DN, 1] (regression: [..., label_dimension]).
  using LossFn = std::function<Tensor(
      const Tensor &labels, const Tensor &logits, const TensorMap &features)>;
  /// create_estimator_spec's train_op_fn: loss -> train op.
  using TrainOpFn = std::function<Operation(const Tensor &loss)>;
  /// A named streaming metric (EstimatorSpec::eval_metric_ops' element).
  using NamedMetrics = std::vector<std::pair<std::string, Metric>>;

  virtual ~Head();

  /// The head's name ("" when none): metric keys and summaries are suffixed
  /// "/<name>", and it is the name scope of the head's nodes.
  const std::string &name() const { return name_; }
  /// The size of the logits' last dimension.
  virtual int64_t logits_dimension() const = 0;
  /// How the training loss is reduced over the batch.
  virtual Reduction loss_reduction() const { return lossReduction_; }

  // --- Graph half --------------------------------------------------------

  /// The regularized training loss (a float32 scalar): the per-example loss
  /// times the weights of `weight_column`, reduced by loss_reduction(), plus
  /// the sum of `regularization_losses`. `mode` is unused, as in TF.
  virtual Tensor
  loss(const Tensor &labels, const Tensor &logits,
       const TensorMap &features = {},
       std::optional<ModeKeys> mode = std::nullopt,
       const std::vector<Tensor> &regularization_losses = {}) const = 0;

  /// The predictions (all of the head's keys, or `keys`; an unknown key is
  /// std::invalid_argument). The string keys "classes" and "all_classes"
  /// are the host's: asking for them gives the tensors the host derives
  /// them from ("class_ids", "all_class_ids"; complete_predictions).
  virtual TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const = 0;

  /// The evaluation metrics, by TF's metric keys in TF's order (TF's
  /// metrics() and update_metrics() in one: each Metric's update ops fold a
  /// batch in). Build them in EVAL (they create local variables).
  virtual NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const = 0;

  /// The EstimatorSpec of `mode`, as TF's create_estimator_spec: PREDICT:
  /// predictions and export_outputs; EVAL: predictions, loss and metrics;
  /// TRAIN: predictions, loss and the train op: `optimizer`.minimize(loss,
  /// trainable_variables) (which also increments global_step, as TF's
  /// optimizer.get_updates does) or train_op_fn(loss) (exactly one of them),
  /// grouped with `update_ops` (tf.group, as batch normalization needs).
  /// `labels` are required in TRAIN and EVAL.
  virtual EstimatorSpec create_estimator_spec(
      const TensorMap &features, ModeKeys mode, const Tensor &logits,
      const Tensor &labels = {},
      const std::optional<train::Optimizer> &optimizer = std::nullopt,
      const std::vector<Variable> &trainable_variables = {},
      const TrainOpFn &train_op_fn = nullptr,
      const std::vector<Operation> &update_ops = {},
      const std::vector<Tensor> &regularization_losses = {}) const;

  /// The export outputs of PREDICT mode, from this head's predictions.
  virtual std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const = 0;

  // --- Host half ---------------------------------------------------------

  /// A batch's raw labels -> the labels the graph takes (I64 class ids,
  /// float32 values). data::DataError naming the value and its batch row
  /// for a label TF would reject at run time (not in label_vocabulary, a
  /// class id outside [0, n_classes), a binary label outside [0, 1]);
  /// std::invalid_argument for labels of the wrong kind (strings without a
  /// vocabulary, floats as class ids).
  virtual TensorValue transform_labels(const TensorValue &labels) const = 0;
  /// Sparse labels: MultiLabelHead takes class ids or vocabulary strings per
  /// example; the other heads refuse them (std::invalid_argument, as TF).
  virtual TensorValue transform_labels(const data::SparseTensor &labels) const;
  /// Either kind.
  TensorValue transform_labels(const data::Value &labels) const;

  /// Adds the string predictions ("classes", "all_classes") to a prediction
  /// of the compiled model (an example's or a batch's), from the class ids
  /// it holds. Nothing for regression heads.
  virtual void complete_predictions(HostPrediction &prediction) const;

protected:
  Head(std::string name, Reduction loss_reduction);
  /// "<key>/<name>", or `key` for an unnamed head (TF's _summary_key).
  std::string summary_key(const std::string &key) const;
  /// "<Kind>" or "<Kind> '<name>'": the prefix of this head's messages.
  virtual std::string describe() const = 0;

private:
  std::string name_;
  Reduction lossReduction_;
};

/// Shared by the single heads (all but MultiHead): the labels' processing,
/// the weights, the weighted loss.
class SingleHead : public Head {
public:
  const std::string &weight_column() const { return weightColumn_; }

  Tensor
  loss(const Tensor &labels, const Tensor &logits,
       const TensorMap &features = {},
       std::optional<ModeKeys> mode = std::nullopt,
       const std::vector<Tensor> &regularization_losses = {}) const override;

protected:
  SingleHead(std::string name, Reduction loss_reduction,
             std::string weight_column, LossFn loss_fn);

  /// Logits as float32 [D0, ..., logits_dimension] (checked).
  Tensor checkedLogits(const Tensor &logits) const;
  /// Labels as the loss takes them (TF's _processed_labels), [D0, ..., d].
  virtual Tensor processedLabels(const Tensor &logits,
                                 const Tensor &labels) const = 0;
  /// The built-in per-example loss, [D0, ..., 1] (regression: [..., d]).
  virtual Tensor builtinLoss(const Tensor &labels,
                             const Tensor &logits) const = 0;
  /// The last dimension of the per-example loss.
  virtual int64_t lossDimension() const { return 1; }
  /// Weights may be [D0, ..., logits_dimension] (regression).
  virtual bool allowPerLogitWeights() const { return false; }
  /// The per-example loss (loss_fn's, checked, or the built-in one).
  Tensor unweightedLoss(const Tensor &labels, const Tensor &logits,
                        const TensorMap &features) const;
  /// The weights of weight_column as float32 [D0, ..., 1] (or [..., d]);
  /// an invalid Tensor when there is no weight column (weight 1).
  Tensor weights(const TensorMap &features, const Tensor &logits) const;
  /// Labels [D0, ..., DN] or [D0, ..., d] as [D0, ..., d] (TF's
  /// check_dense_labels_match_logits_and_reshape).
  Tensor labelsMatchingLogits(const Tensor &labels, const Tensor &logits,
                              int64_t expected_dimension) const;
  /// What every head's metrics() starts from (TF's update_metrics
  /// preamble): the checked logits; the predictions of `prediction_keys`
  /// (outside the "metrics" name scope); then, in the "metrics" scope,
  /// which stays open while the result lives, the processed labels, the
  /// weights, and the metrics begun with "average_loss" (the weighted mean
  /// of the unweighted loss).
  struct MetricInputs {
    Tensor logits;
    TensorMap predictions;
    Tensor labels;
    /// Invalid when there is no weight column (weight 1).
    Tensor weights;
    NamedMetrics metrics;
    Scope scope;
  };
  MetricInputs
  metricInputs(const TensorMap &features, const Tensor &logits,
               const Tensor &labels,
               const std::vector<std::string> &prediction_keys) const;
  /// "regularization_loss" when there are regularization losses.
  void addRegularizationMetric(NamedMetrics &metrics,
                               const std::vector<Tensor> &losses) const;

private:
  std::string weightColumn_;
  LossFn lossFn_;
};

/// tf.estimator.BinaryClassHead: sigmoid cross-entropy; logits [D0, ..., 1];
/// labels 0/1 (or values in [0, 1]), or strings of a two-entry
/// label_vocabulary. `thresholds` in (0, 1) add accuracy / precision /
/// recall at each threshold on the logistic.
class BinaryClassHead : public SingleHead {
public:
  explicit BinaryClassHead(
      std::string weight_column = "", std::vector<double> thresholds = {},
      std::vector<std::string> label_vocabulary = {},
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      LossFn loss_fn = nullptr, std::string name = "");

  int64_t logits_dimension() const override { return 1; }
  const std::vector<double> &thresholds() const { return thresholds_; }
  const std::vector<std::string> &label_vocabulary() const {
    return labelVocabulary_;
  }

  /// logits, logistic, probabilities, class_ids, all_class_ids.
  TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const override;
  NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const override;
  std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const override;

  /// Float32 labels: vocabulary ids, or the values (checked in [0, 1]).
  TensorValue transform_labels(const TensorValue &labels) const override;
  using Head::transform_labels;
  /// "0"/"1" or the vocabulary entries of integer class ids.
  TensorValue class_names(const TensorValue &class_ids) const;
  void complete_predictions(HostPrediction &prediction) const override;

protected:
  Tensor processedLabels(const Tensor &logits,
                         const Tensor &labels) const override;
  Tensor builtinLoss(const Tensor &labels, const Tensor &logits) const override;
  std::string describe() const override;

private:
  std::vector<double> thresholds_;
  std::vector<std::string> labelVocabulary_;
  std::optional<data::VocabularyLookup> lookup_;
};

/// tf.estimator.MultiClassHead: softmax cross-entropy over n_classes > 2;
/// labels I64 class ids in [0, n_classes), or strings of label_vocabulary
/// (n_classes entries).
class MultiClassHead : public SingleHead {
public:
  explicit MultiClassHead(
      int64_t n_classes, std::string weight_column = "",
      std::vector<std::string> label_vocabulary = {},
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      LossFn loss_fn = nullptr, std::string name = "");

  int64_t logits_dimension() const override { return nClasses_; }
  int64_t n_classes() const { return nClasses_; }
  const std::vector<std::string> &label_vocabulary() const {
    return labelVocabulary_;
  }

  /// logits, probabilities, class_ids, all_class_ids.
  TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const override;
  NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const override;
  std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const override;

  /// I64 class ids (vocabulary ids, or integers checked in [0, n_classes)).
  TensorValue transform_labels(const TensorValue &labels) const override;
  using Head::transform_labels;
  TensorValue class_names(const TensorValue &class_ids) const;
  void complete_predictions(HostPrediction &prediction) const override;

protected:
  Tensor processedLabels(const Tensor &logits,
                         const Tensor &labels) const override;
  Tensor builtinLoss(const Tensor &labels, const Tensor &logits) const override;
  std::string describe() const override;

private:
  int64_t nClasses_;
  std::vector<std::string> labelVocabulary_;
  std::optional<data::VocabularyLookup> lookup_;
};

/// The classes of MultiLabelHead's per-class metrics: class ids, or
/// entries of label_vocabulary.
class ClassList {
public:
  ClassList() = default;
  ClassList(std::vector<int64_t> ids) : ids_(std::move(ids)) {}
  ClassList(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<int64_t> &ids() const { return ids_; }
  const std::vector<std::string> &names() const { return names_; }
  bool empty() const { return ids_.empty() && names_.empty(); }

private:
  std::vector<int64_t> ids_;
  std::vector<std::string> names_;
};

/// tf.estimator.MultiLabelHead: sigmoid cross-entropy per class, averaged
/// over the n_classes > 1 classes; labels a multi-hot indicator [batch,
/// n_classes] (0/1 or values in [0, 1]), or, sparse, each example's class
/// ids or vocabulary strings (transform_labels makes the indicator).
class MultiLabelHead : public SingleHead {
public:
  explicit MultiLabelHead(
      int64_t n_classes, std::string weight_column = "",
      std::vector<double> thresholds = {},
      std::vector<std::string> label_vocabulary = {},
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      LossFn loss_fn = nullptr, ClassList classes_for_class_based_metrics = {},
      std::string name = "");

  int64_t logits_dimension() const override { return nClasses_; }
  int64_t n_classes() const { return nClasses_; }

  /// logits, probabilities ("classes" is the host's: every class name).
  TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const override;
  NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const override;
  std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const override;

  /// A dense indicator (values checked in [0, 1]): I64 for integer labels,
  /// float32 otherwise.
  TensorValue transform_labels(const TensorValue &labels) const override;
  /// Class ids or vocabulary strings [batch, k] -> I64 indicator [batch,
  /// n_classes].
  TensorValue transform_labels(const data::SparseTensor &labels) const override;
  using Head::transform_labels;
  TensorValue class_names(const TensorValue &class_ids) const;
  /// "classes": every class name, in the shape of "probabilities" (or
  /// "logits").
  void complete_predictions(HostPrediction &prediction) const override;

protected:
  Tensor processedLabels(const Tensor &logits,
                         const Tensor &labels) const override;
  Tensor builtinLoss(const Tensor &labels, const Tensor &logits) const override;
  std::string describe() const override;

private:
  int64_t nClasses_;
  std::vector<double> thresholds_;
  std::vector<std::string> labelVocabulary_;
  std::optional<data::VocabularyLookup> lookup_;
  std::vector<int64_t> classesForClassBasedMetrics_;
};

/// tf.estimator.RegressionHead: mean squared error; logits and labels
/// [D0, ..., label_dimension] (label_dimension 1: labels may be [D0, ...]);
/// weights [D0, ...], [D0, ..., 1] or [D0, ..., label_dimension].
/// `inverse_link_fn` (optional) maps logits to "predictions" (then
/// "logits" is a prediction too).
class RegressionHead : public SingleHead {
public:
  using InverseLinkFn = std::function<Tensor(const Tensor &logits)>;

  explicit RegressionHead(
      int64_t label_dimension = 1, std::string weight_column = "",
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      LossFn loss_fn = nullptr, InverseLinkFn inverse_link_fn = nullptr,
      std::string name = "");

  int64_t logits_dimension() const override { return labelDimension_; }

  /// predictions (and logits with an inverse link).
  TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const override;
  NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const override;
  std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const override;

  /// Float32 values (numeric labels only).
  TensorValue transform_labels(const TensorValue &labels) const override;
  using Head::transform_labels;

protected:
  Tensor processedLabels(const Tensor &logits,
                         const Tensor &labels) const override;
  Tensor builtinLoss(const Tensor &labels, const Tensor &logits) const override;
  int64_t lossDimension() const override { return labelDimension_; }
  bool allowPerLogitWeights() const override { return true; }
  std::string describe() const override;
  /// For the GLM heads: `kind` names the head in messages.
  RegressionHead(const char *kind, int64_t label_dimension,
                 std::string weight_column, Reduction loss_reduction,
                 LossFn loss_fn, InverseLinkFn inverse_link_fn,
                 std::string name);

private:
  const char *kind_;
  int64_t labelDimension_;
  InverseLinkFn inverseLinkFn_;
};

/// tf.estimator.PoissonRegressionHead: tf.nn.log_poisson_loss (with the
/// Stirling term for labels > 1 when compute_full_loss); predictions =
/// exp(logits).
class PoissonRegressionHead : public RegressionHead {
public:
  explicit PoissonRegressionHead(
      int64_t label_dimension = 1, std::string weight_column = "",
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      bool compute_full_loss = true, std::string name = "");
};

/// tf.estimator.LogisticRegressionHead: sigmoid cross-entropy against labels
/// in [0, 1]; predictions = sigmoid(logits), and logits.
class LogisticRegressionHead : public RegressionHead {
public:
  explicit LogisticRegressionHead(
      std::string weight_column = "",
      Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE,
      std::string name = "");

  /// Float32 values, checked in [0, 1].
  TensorValue transform_labels(const TensorValue &labels) const override;
  using Head::transform_labels;

protected:
  /// Integer labels are range-checked in the step before they are cast.
  Tensor processedLabels(const Tensor &logits,
                         const Tensor &labels) const override;
};

/// tf.estimator.MultiHead: several named heads on one logits tensor (split
/// along its last dimension in the heads' order) or on logits per head
/// name; labels per head name. The loss is the sum of the heads' losses
/// (times head_weights). Prediction keys and export outputs are the heads'
/// as "<head name>/<key>" (TF's (head name, key) tuples); metrics are each
/// head's plus "loss/<head name>".
///
/// The Estimator gives a model_fn one labels tensor; a model with a
/// MultiHead passes the heads' labels in a TensorMap (e.g. from features).
class MultiHead : public Head {
public:
  /// Every head must have a name. head_weights: empty, or one per head.
  explicit MultiHead(std::vector<std::shared_ptr<const Head>> heads,
                     std::vector<double> head_weights = {});

  /// The logits of each head: one tensor split, or a map by head name.
  class Logits {
  public:
    Logits(const Tensor &logits) : tensor_(logits) {}
    Logits(const TensorMap &by_head) : map_(by_head), isMap_(true) {}
    bool is_map() const { return isMap_; }
    const Tensor &tensor() const { return tensor_; }
    const TensorMap &map() const { return map_; }

  private:
    Tensor tensor_;
    TensorMap map_;
    bool isMap_ = false;
  };

  const std::vector<std::shared_ptr<const Head>> &heads() const {
    return heads_;
  }
  int64_t logits_dimension() const override { return logitsDimension_; }
  /// The heads' common loss reduction (std::invalid_argument when they
  /// differ, as TF).
  Reduction loss_reduction() const override;

  /// The logits of each head by name (std::invalid_argument when the last
  /// dimension is not the sum of the heads' logits dimensions).
  TensorMap split_logits(const Tensor &logits) const;

  Tensor loss(const TensorMap &labels, const Logits &logits,
              const TensorMap &features = {},
              std::optional<ModeKeys> mode = std::nullopt,
              const std::vector<Tensor> &regularization_losses = {}) const;
  /// TF's MultiHead takes labels by head name only: std::invalid_argument.
  Tensor
  loss(const Tensor &labels, const Tensor &logits,
       const TensorMap &features = {},
       std::optional<ModeKeys> mode = std::nullopt,
       const std::vector<Tensor> &regularization_losses = {}) const override;

  TensorMap
  predictions(const Tensor &logits,
              const std::vector<std::string> &keys = {}) const override;
  TensorMap predictions(const Logits &logits) const;

  NamedMetrics
  metrics(const TensorMap &features, const Logits &logits,
          const TensorMap &labels,
          const std::vector<Tensor> &regularization_losses = {}) const;
  /// std::invalid_argument (labels must be by head name).
  NamedMetrics
  metrics(const TensorMap &features, const Tensor &logits, const Tensor &labels,
          const std::vector<Tensor> &regularization_losses = {}) const override;

  EstimatorSpec create_estimator_spec(
      const TensorMap &features, ModeKeys mode, const Logits &logits,
      const TensorMap &labels = {},
      const std::optional<train::Optimizer> &optimizer = std::nullopt,
      const std::vector<Variable> &trainable_variables = {},
      const TrainOpFn &train_op_fn = nullptr,
      const std::vector<Operation> &update_ops = {},
      const std::vector<Tensor> &regularization_losses = {}) const;
  /// PREDICT needs no labels; TRAIN and EVAL: std::invalid_argument (labels
  /// must be by head name).
  EstimatorSpec create_estimator_spec(
      const TensorMap &features, ModeKeys mode, const Tensor &logits,
      const Tensor &labels = {},
      const std::optional<train::Optimizer> &optimizer = std::nullopt,
      const std::vector<Variable> &trainable_variables = {},
      const TrainOpFn &train_op_fn = nullptr,
      const std::vector<Operation> &update_ops = {},
      const std::vector<Tensor> &regularization_losses = {}) const override;

  /// The heads' export outputs merged as TF's: "serving_default" is the
  /// first head's default, "<head>" each head's default, "<head>/<key>"
  /// its others, "predict" every head's predictions as "<head>/<key>".
  std::map<std::string, ExportOutput>
  export_outputs(const TensorMap &predictions) const override;

  /// Each head's transform_labels, by head name (std::invalid_argument
  /// naming a missing head).
  std::map<std::string, TensorValue>
  transform_labels(const std::map<std::string, TensorValue> &labels) const;
  /// std::invalid_argument: labels must be by head name.
  TensorValue transform_labels(const TensorValue &labels) const override;
  using Head::transform_labels;
  /// Each head's complete_predictions on its "<head>/<key>" entries.
  void complete_predictions(HostPrediction &prediction) const override;

protected:
  std::string describe() const override { return "MultiHead"; }

private:
  TensorMap logitsByHead(const Logits &logits) const;
  void checkLabels(const TensorMap &labels) const;

  std::vector<std::shared_ptr<const Head>> heads_;
  std::vector<double> headWeights_;
  int64_t logitsDimension_ = 0;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_HEAD_H
