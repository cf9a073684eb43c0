//===- HeadMetrics.h - The tf.keras.metrics TF's heads evaluate ----------===//
//
// TF 2.15's heads evaluate with tf.keras.metrics, whose arithmetic differs
// from tf.compat.v1.metrics (lib/Graph/Metrics.h) in ways a user sees:
// ratios are divide_no_nan (0, not 1e-7-smoothed), AUC places a prediction
// in Keras's buckets (ceil(p * (T - 1)) - 1 over T evenly spaced
// thresholds) and counts a label as positive when it is non-zero. These
// builders reproduce Keras's: each returns a Metric {value, update_ops}
// whose state lives in local variables under `scope` (a name scope opened
// for the metric; "total", "count", "true_positives", ...).
//
// Internal to EstcCanned (the heads' sources, estimator/Canned/*Head.cpp);
// tested through the heads (HeadTest, heads.tf_compat).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_HEADMETRICS_H
#define ESTC_ESTIMATOR_CANNED_HEADMETRICS_H

#include "lib/Graph/GraphBuilder.h"

#include <string>

namespace estc {
namespace estimator {
namespace head_metrics {

/// tf.keras.metrics.Mean: sum(values * w) / sum(w) over every batch, with
/// `weights` (float32, or invalid: 1) broadcast to `values`' shape; 0 before
/// any weight. `total` and `count` are its state (accuracy_baseline reads
/// label/mean's).
struct MeanMetric {
  Metric metric;
  Variable total;
  Variable count;
};
MeanMetric mean(const std::string &scope, const Tensor &values,
                const Tensor &weights);

/// tf.keras.metrics.Accuracy: the weighted mean of labels == predictions
/// (predictions cast to the labels' dtype); same shapes.
Metric accuracy(const std::string &scope, const Tensor &labels,
                const Tensor &predictions, const Tensor &weights);

/// tf.keras.metrics.BinaryAccuracy(threshold): per example the mean over
/// the last axis of labels == (predictions > threshold), then the weighted
/// mean over examples (`weights` [D0, ..., 1] or invalid).
Metric binary_accuracy(const std::string &scope, const Tensor &labels,
                       const Tensor &predictions, double threshold,
                       const Tensor &weights);

/// tf.keras.metrics.Precision / Recall(thresholds=threshold): counts of
/// (label != 0, prediction > threshold) with broadcast weights, then
/// divide_no_nan(tp, tp + fp) / divide_no_nan(tp, tp + fn).
Metric precision(const std::string &scope, const Tensor &labels,
                 const Tensor &predictions, double threshold,
                 const Tensor &weights);
Metric recall(const std::string &scope, const Tensor &labels,
              const Tensor &predictions, double threshold,
              const Tensor &weights);

/// tf.keras.metrics.AUC(num_thresholds, curve="ROC" or "PR",
/// summation_method="interpolation"): the confusion counts of every
/// threshold (Keras's evenly distributed thresholds with epsilon edges),
/// then the trapezoidal ROC area or the interpolated PR area (Davis &
/// Goadrich). Labels, predictions (in [0, 1]) and weights are flattened.
Metric auc(const std::string &scope, const Tensor &labels,
           const Tensor &predictions, const Tensor &weights, bool pr_curve,
           int64_t num_thresholds = 200);

/// The heads' accuracy_baseline: max(total, count - total) / count of the
/// label mean (divide_no_nan).
Tensor accuracy_baseline(const MeanMetric &label_mean);

} // namespace head_metrics
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_HEADMETRICS_H
