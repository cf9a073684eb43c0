//===- Metrics.h - Streaming metrics (tf.compat.v1.metrics) -------------===//
//
// Every metric returns a Metric {value, update_ops}: the update ops fold one
// batch into the metric's state, `value` reads the result so far. The state
// lives in local variables (Graph::get_local_variable: zeros, not trainable,
// not checkpointed, reset before every evaluation) named like TF's:
// "accuracy/total", "auc/true_positives", "mean_iou/total_confusion_matrix".
// The EVAL function runs the updates batch by batch (any batch size,
// including a partial last one); @eval_metrics reads the values.
//
// Names, arguments, defaults and arithmetic follow tf.compat.v1.metrics:
//   - `weights` (optional; an empty Tensor means none) is a scalar or has the
//     rank of the values (TF's squeezable dimension rule also applies: one
//     extra or missing trailing dimension of size 1), each dimension 1 or
//     equal; a weight multiplies the example's contribution to every count.
//   - labels of [batch, 1] against predictions of [batch] (or the reverse)
//     are squeezed, as TF's _remove_squeezable_dimensions.
//   - "binary" labels and predictions (precision, recall, true_positives, ...)
//     count a value as true when it is non-zero; threshold metrics count a
//     prediction as positive when it is strictly greater than the threshold.
//   - Counts are f32 (f64 for mean_iou's confusion matrix and the _at_k
//     counts), as in TF; every value is f32 (the _at_k values f64).
// The user guide (docs/user-guide.md, "Metrics") lists every metric with its
// formula and edge cases.
//
// Errors a model_fn can make (mismatched shapes, wrong dtypes, bad
// num_classes, k, thresholds or options) throw GraphError with one line
// naming the metric and its inputs.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_METRICS_H
#define ESTC_LIB_GRAPH_METRICS_H

#include "lib/Graph/GraphBuilder.h"

#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace metrics {

/// Fraction of predictions equal to labels (predictions are cast to the
/// labels' dtype). State: "<name>/total", "<name>/count".
Metric accuracy(const Tensor &labels, const Tensor &predictions,
                const Tensor &weights = {}, const std::string &name = "");

/// Weighted mean of all elements of `values` seen so far (values are cast to
/// f32); 0 before any weight. State: "<name>/total", "<name>/count".
Metric mean(const Tensor &values, const Tensor &weights = {},
            const std::string &name = "");

/// Weighted counts of (label != 0, prediction != 0) pairs. State:
/// "<name>/count".
Metric true_positives(const Tensor &labels, const Tensor &predictions,
                      const Tensor &weights = {}, const std::string &name = "");
Metric false_positives(const Tensor &labels, const Tensor &predictions,
                       const Tensor &weights = {},
                       const std::string &name = "");
Metric true_negatives(const Tensor &labels, const Tensor &predictions,
                      const Tensor &weights = {}, const std::string &name = "");
Metric false_negatives(const Tensor &labels, const Tensor &predictions,
                       const Tensor &weights = {},
                       const std::string &name = "");

/// tp / (tp + fp), 0 when tp + fp is 0. State: "<name>/true_positives/count",
/// "<name>/false_positives/count".
Metric precision(const Tensor &labels, const Tensor &predictions,
                 const Tensor &weights = {}, const std::string &name = "");
/// tp / (tp + fn), 0 when tp + fn is 0.
Metric recall(const Tensor &labels, const Tensor &predictions,
              const Tensor &weights = {}, const std::string &name = "");

/// Per-threshold counts, value [thresholds.size()]: prediction (f32, meant
/// to be in [0, 1]) > threshold. State: "<name>/true_positives" (etc.), one
/// f32 per threshold.
Metric true_positives_at_thresholds(const Tensor &labels,
                                    const Tensor &predictions,
                                    const std::vector<double> &thresholds,
                                    const Tensor &weights = {},
                                    const std::string &name = "");
Metric false_positives_at_thresholds(const Tensor &labels,
                                     const Tensor &predictions,
                                     const std::vector<double> &thresholds,
                                     const Tensor &weights = {},
                                     const std::string &name = "");
Metric true_negatives_at_thresholds(const Tensor &labels,
                                    const Tensor &predictions,
                                    const std::vector<double> &thresholds,
                                    const Tensor &weights = {},
                                    const std::string &name = "");
Metric false_negatives_at_thresholds(const Tensor &labels,
                                     const Tensor &predictions,
                                     const std::vector<double> &thresholds,
                                     const Tensor &weights = {},
                                     const std::string &name = "");
/// tp / (tp + fp + 1e-7) per threshold.
Metric precision_at_thresholds(const Tensor &labels, const Tensor &predictions,
                               const std::vector<double> &thresholds,
                               const Tensor &weights = {},
                               const std::string &name = "");
/// tp / (tp + fn + 1e-7) per threshold.
Metric recall_at_thresholds(const Tensor &labels, const Tensor &predictions,
                            const std::vector<double> &thresholds,
                            const Tensor &weights = {},
                            const std::string &name = "");

/// Area under the ROC or PR curve from confusion counts at `num_thresholds`
/// thresholds: -1e-7, i/(num_thresholds-1) for i = 1..num_thresholds-2,
/// 1+1e-7 (TF's placement); or, when `thresholds` is given, at -1e-7, the
/// sorted `thresholds`, 1+1e-7 (num_thresholds is then ignored). `curve`:
/// "ROC" or "PR"; `summation_method`: "trapezoidal" (default),
/// "careful_interpolation" (PR: TF's interpolated precision; ROC:
/// trapezoidal), "minoring", "majoring". State: "<name>/true_positives",
/// "false_negatives", "true_negatives", "false_positives", one f32 per
/// threshold.
Metric auc(const Tensor &labels, const Tensor &predictions,
           const Tensor &weights = {}, int64_t num_thresholds = 200,
           const std::string &curve = "ROC", const std::string &name = "",
           const std::string &summation_method = "trapezoidal",
           const std::vector<double> &thresholds = {});

/// Weighted means of (labels - predictions)^2, its square root, and
/// |labels - predictions|. Labels are cast to the predictions' (float)
/// dtype.
Metric mean_squared_error(const Tensor &labels, const Tensor &predictions,
                          const Tensor &weights = {},
                          const std::string &name = "");
Metric root_mean_squared_error(const Tensor &labels, const Tensor &predictions,
                               const Tensor &weights = {},
                               const std::string &name = "");
Metric mean_absolute_error(const Tensor &labels, const Tensor &predictions,
                           const Tensor &weights = {},
                           const std::string &name = "");

/// Mean over all `num_classes` classes of the per-class accuracy (a class
/// never seen contributes 0, as in TF). Integer class ids; an id outside
/// [0, num_classes) stops the step with rt::InvalidArgumentError (TF's
/// confusion_matrix asserts the same; a check_range node "labels" /
/// "predictions"). State: "<name>/total" (examples per
/// class) and "<name>/count" (correct per class); default name
/// "mean_accuracy".
Metric mean_per_class_accuracy(const Tensor &labels, const Tensor &predictions,
                               int64_t num_classes, const Tensor &weights = {},
                               const std::string &name = "");

/// Mean intersection-over-union over the classes that occur in labels or
/// predictions. Class ids are checked as for mean_per_class_accuracy. State:
/// "<name>/total_confusion_matrix" (f64, [num_classes, num_classes], rows =
/// labels).
Metric mean_iou(const Tensor &labels, const Tensor &predictions,
                int64_t num_classes, const Tensor &weights = {},
                const std::string &name = "");

/// Sparse labels [batch] or [batch, num_labels] of class ids (a set per
/// example: a repeated id counts once), predictions [batch, num_classes] of
/// scores (or [D1, ..., DN] / [D1, ..., DN, num_labels] labels against [D1,
/// ..., DN, num_classes], weights of rank 0 or N: every leading position an
/// example). The top k are tf.nn.top_k's: higher score first, equal scores by
/// lower class id first, so a class is in the top k when fewer than k
/// classes have a higher score or an equal score and a lower id. Per
/// example, as TF's set arithmetic on the labels and the top k: tp = labels
/// in the top k, fp = k - tp, fn = labels not in the top k (an id outside
/// [0, num_classes) is never in the top k, so it is a false negative). With
/// `class_id` c (in [0, num_classes)) the metric is binary in c: tp = c is a
/// label and in the top k, fp = c is in the top k but no label, fn = c is a
/// label but not in the top k. precision = tp / (tp + fp), recall = tp / (tp
/// + fn), both f64 and NaN before anything is counted (TF divides plainly).
/// Default names "precision_at_<k>[_class<c>]" / "recall_at_<k>[_class<c>]";
/// state "<name>/true_positive_at_<k>[_class<c>]" and
/// "false_positive_at_..." (or "false_negative_at_..."), f64 scalars.
Metric precision_at_k(const Tensor &labels, const Tensor &predictions,
                      int64_t k, std::optional<int64_t> class_id = std::nullopt,
                      const Tensor &weights = {}, const std::string &name = "");
Metric recall_at_k(const Tensor &labels, const Tensor &predictions, int64_t k,
                   std::optional<int64_t> class_id = std::nullopt,
                   const Tensor &weights = {}, const std::string &name = "");

/// TF's deprecated alias of precision_at_k: the same metric, the same names
/// (errors name metrics::sparse_precision_at_k).
Metric sparse_precision_at_k(const Tensor &labels, const Tensor &predictions,
                             int64_t k,
                             std::optional<int64_t> class_id = std::nullopt,
                             const Tensor &weights = {},
                             const std::string &name = "");

/// precision_at_k / recall_at_k on given top-k class ids: `predictions_idx`
/// [batch, k] (integer, any ids; a repeated id counts once; or [D1, ...,
/// DN, k]), `labels` [batch] or [batch, num_labels] integer ids. Per example,
/// as TF's set arithmetic: tp = |top ∩ labels|, fp = |top − labels|, fn =
/// |labels − top|; with `class_id` c both sets are first cut down to {c}. `k`
/// only names the metric ("precision_at_<k>", or "precision_at_k" without it)
/// and must be >= 1 when given. f64 values, NaN before anything is counted.
Metric precision_at_top_k(const Tensor &labels, const Tensor &predictions_idx,
                          std::optional<int64_t> k = std::nullopt,
                          std::optional<int64_t> class_id = std::nullopt,
                          const Tensor &weights = {},
                          const std::string &name = "");
Metric recall_at_top_k(const Tensor &labels, const Tensor &predictions_idx,
                       std::optional<int64_t> k = std::nullopt,
                       std::optional<int64_t> class_id = std::nullopt,
                       const Tensor &weights = {},
                       const std::string &name = "");

/// Mean average precision at k: per example, over the top k classes of
/// `predictions` [batch, num_classes] in tf.nn.top_k's order, the sum of
/// precision@j at each position j holding a label, divided by min(number of
/// labels >= 0, k) (labels [batch] or [batch, num_labels]; ids >=
/// num_classes become -1 first, as TF; an example without labels gives NaN,
/// as TF). The weighted mean of that over examples: state "<name>/total"
/// and "<name>/max" (the weight sum; TF's is "max_1", a name-scope
/// artifact), f64; the value is 0 before any weight. Default name
/// "average_precision_at_<k>". Leading dimensions as precision_at_k's. The
/// labels' ranks come from score comparisons ([batch, num_labels,
/// num_classes] of them). sparse_average_precision_at_k is TF's deprecated
/// alias.
Metric average_precision_at_k(const Tensor &labels, const Tensor &predictions,
                              int64_t k, const Tensor &weights = {},
                              const std::string &name = "");
Metric sparse_average_precision_at_k(const Tensor &labels,
                                     const Tensor &predictions, int64_t k,
                                     const Tensor &weights = {},
                                     const std::string &name = "");

/// 1 - the weighted mean of sum(labels * predictions) along `dim` (negative
/// counts from the end): the mean cosine distance of unit vectors. Weights
/// are broadcast to the reduced shape, so their dimension `dim` must be 1.
/// State "<name>/total", "<name>/count"; 1 before any weight.
Metric mean_cosine_distance(const Tensor &labels, const Tensor &predictions,
                            int64_t dim, const Tensor &weights = {},
                            const std::string &name = "");

/// Weighted mean of |labels - predictions| / normalizer, 0 where the
/// normalizer is 0 (`normalizer` has the predictions' shape).
Metric mean_relative_error(const Tensor &labels, const Tensor &predictions,
                           const Tensor &normalizer, const Tensor &weights = {},
                           const std::string &name = "");

/// Element-wise weighted mean of `values`, which must have a static shape
/// (the state has it): state "<name>/total_tensor", "<name>/count_tensor";
/// 0 where the count is 0. Default name "mean" (as TF's).
Metric mean_tensor(const Tensor &values, const Tensor &weights = {},
                   const std::string &name = "");

/// Weighted fraction of `values` < threshold. Default name
/// "percentage_below_threshold"; state "total", "count".
Metric percentage_below(const Tensor &values, double threshold,
                        const Tensor &weights = {},
                        const std::string &name = "");

/// From confusion counts at num_thresholds thresholds (as auc's, except that
/// specificity_at_sensitivity's last one is 1 - 1e-7, as TF's): the
/// sensitivity tp / (tp + fn + 1e-7) at the threshold whose specificity tn /
/// (tn + fp + 1e-7) is nearest `specificity` (the first such threshold), and
/// the specificity at the threshold whose sensitivity is nearest
/// `sensitivity` (the last such one). `specificity` / `sensitivity` in [0,
/// 1]. State as auc's, f32 [num_thresholds].
Metric sensitivity_at_specificity(const Tensor &labels,
                                  const Tensor &predictions, double specificity,
                                  const Tensor &weights = {},
                                  int64_t num_thresholds = 200,
                                  const std::string &name = "");
Metric specificity_at_sensitivity(const Tensor &labels,
                                  const Tensor &predictions, double sensitivity,
                                  const Tensor &weights = {},
                                  int64_t num_thresholds = 200,
                                  const std::string &name = "");

} // namespace metrics
} // namespace estc

#endif // ESTC_LIB_GRAPH_METRICS_H
