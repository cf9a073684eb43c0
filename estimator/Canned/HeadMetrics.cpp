//===- HeadMetrics.cpp - The tf.keras.metrics TF's heads evaluate --------===//
//
// Built from est ops: a batch's counts are comparisons, casts and sums;
// read_variable + add + assign_variable fold them into local variables.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/HeadMetrics.h"

#include "lib/Graph/Ops.h"

#include <vector>

namespace estc {
namespace estimator {
namespace head_metrics {
namespace {

Tensor toFloat(const Tensor &t) {
  return t.dtype() == DType::Float32 ? t : cast(t, DType::Float32);
}

/// num / den where den != 0, else 0 (tf.math.divide_no_nan).
Tensor divideNoNan(const Tensor &num, const Tensor &den,
                   const std::string &name = "") {
  return where(not_equal(den, 0.0), divide(num, den), 0.0, name);
}

/// variable += batch.
Operation accumulate(const Variable &variable, const Tensor &batch,
                     const std::string &name) {
  return assign(variable, add(variable.read(), batch), name);
}

/// Keras's squeeze_or_expand_dimensions for weights, then a broadcast to
/// `values`' shape: float32 weights of values' shape, or invalid (no
/// weights).
Tensor broadcastWeights(const Tensor &values, const Tensor &weights) {
  if (!weights.valid())
    return Tensor();
  Tensor w = toFloat(weights);
  if (w.rank() == values.rank() + 1 && w.shape().back() == 1)
    w = squeeze(w, Dims{-1});
  else if (w.rank() + 1 == values.rank())
    w = expand_dims(w, -1);
  return multiply(ones_like(values, DType::Float32), w);
}

Variable state(Graph &g, const std::string &name, const Dims &shape = {}) {
  return g.get_local_variable(name, DType::Float32, shape);
}

/// x[:n-1] and x[1:] of a [n] vector.
Tensor leading(const Tensor &x, int64_t n) { return slice(x, {0}, {n - 1}); }
Tensor trailing(const Tensor &x, int64_t n) { return slice(x, {1}, {n - 1}); }

/// Precision (`precision` true) or recall at one threshold.
Metric ratioAtThreshold(const std::string &scope, const Tensor &labels,
                        const Tensor &predictions, double threshold,
                        const Tensor &weights, bool precision) {
  Graph &g = predictions.graph();
  auto s = g.name_scope(scope);
  Tensor preds = toFloat(predictions);
  Tensor labelPos = not_equal(toFloat(labels), 0.0);
  Tensor predPos = greater(preds, g.constant(threshold, DType::Float32));
  Tensor w = broadcastWeights(preds, weights);
  auto count = [&](const Tensor &condition) {
    Tensor c = cast(condition, DType::Float32);
    return reduce_sum(w.valid() ? multiply(c, w) : c);
  };
  Variable tp = state(g, "true_positives");
  Variable other = state(g, precision ? "false_positives" : "false_negatives");
  Tensor otherCondition = precision
                              ? logical_and(logical_not(labelPos), predPos)
                              : logical_and(labelPos, logical_not(predPos));
  Operation updateTp = accumulate(tp, count(logical_and(labelPos, predPos)),
                                  "update_true_positives");
  Operation updateOther = accumulate(other, count(otherCondition),
                                     precision ? "update_false_positives"
                                               : "update_false_negatives");
  Tensor value = divideNoNan(tp.read(), add(tp.read(), other.read()), "value");
  return Metric{value, {updateTp, updateOther}};
}

} // namespace

MeanMetric mean(const std::string &scope, const Tensor &values,
                const Tensor &weights) {
  Graph &g = values.graph();
  auto s = g.name_scope(scope);
  Tensor v = toFloat(values);
  Tensor w = broadcastWeights(v, weights);
  Variable total = state(g, "total");
  Variable count = state(g, "count");
  Tensor batchTotal = reduce_sum(w.valid() ? multiply(v, w) : v);
  Tensor batchCount = reduce_sum(w.valid() ? w : ones_like(v));
  Operation updateTotal = accumulate(total, batchTotal, "update_total");
  Operation updateCount = accumulate(count, batchCount, "update_count");
  Tensor value = divideNoNan(total.read(), count.read(), "value");
  return MeanMetric{Metric{value, {updateTotal, updateCount}}, total, count};
}

Metric accuracy(const std::string &scope, const Tensor &labels,
                const Tensor &predictions, const Tensor &weights) {
  Tensor p = predictions.dtype() == labels.dtype()
                 ? predictions
                 : cast(predictions, labels.dtype());
  return mean(scope, cast(equal(labels, p), DType::Float32), weights).metric;
}

Metric binary_accuracy(const std::string &scope, const Tensor &labels,
                       const Tensor &predictions, double threshold,
                       const Tensor &weights) {
  Graph &g = predictions.graph();
  Tensor preds = toFloat(predictions);
  Tensor positive = cast(greater(preds, g.constant(threshold, DType::Float32)),
                         DType::Float32);
  Tensor matches = cast(equal(toFloat(labels), positive), DType::Float32);
  // Keras: the mean over the last axis per example, then the weighted mean
  // of the examples (weights lose their trailing 1).
  Tensor perExample = reduce_mean(matches, Dims{matches.rank() - 1});
  return mean(scope, perExample, weights).metric;
}

Metric precision(const std::string &scope, const Tensor &labels,
                 const Tensor &predictions, double threshold,
                 const Tensor &weights) {
  return ratioAtThreshold(scope, labels, predictions, threshold, weights,
                          /*precision=*/true);
}

Metric recall(const std::string &scope, const Tensor &labels,
              const Tensor &predictions, double threshold,
              const Tensor &weights) {
  return ratioAtThreshold(scope, labels, predictions, threshold, weights,
                          /*precision=*/false);
}

Metric auc(const std::string &scope, const Tensor &labels,
           const Tensor &predictions, const Tensor &weights, bool pr_curve,
           int64_t num_thresholds) {
  Graph &g = predictions.graph();
  auto s = g.name_scope(scope);
  const int64_t T = num_thresholds;
  Tensor preds = toFloat(predictions);
  Tensor w = broadcastWeights(preds, weights);
  // Keras's _update_confusion_matrix_variables_optimized: a prediction p
  // (clipped to [0, 1]) falls in bucket relu(ceil(p * (T - 1)) - 1) and
  // counts as positive at threshold i when its bucket is >= i; the first
  // threshold (-epsilon) takes every prediction, the last (1 + epsilon)
  // none.
  Tensor p = reshape(minimum(maximum(preds, 0.0), 1.0), {-1, 1});
  Tensor scaled = multiply(p, static_cast<double>(T - 1));
  Tensor bucket = nn::relu(subtract(negative(floor(negative(scaled))), 1.0));
  std::vector<double> ids(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i)
    ids[static_cast<size_t>(i)] = static_cast<double>(i);
  Tensor thresholdIds =
      g.constant(ids, {1, T}, DType::Float32, "threshold_ids");
  Tensor above = cast(greater_equal(bucket, thresholdIds), DType::Float32);
  Tensor y =
      reshape(cast(not_equal(toFloat(labels), 0.0), DType::Float32), {-1, 1});
  Tensor trueLabels = y;
  Tensor falseLabels = subtract(1.0, y);
  if (w.valid()) {
    Tensor flatWeights = reshape(w, {-1, 1});
    trueLabels = multiply(trueLabels, flatWeights);
    falseLabels = multiply(falseLabels, flatWeights);
  }
  Tensor batchTp = reduce_sum(multiply(above, trueLabels), Dims{0});
  Tensor batchFp = reduce_sum(multiply(above, falseLabels), Dims{0});
  Tensor batchFn = subtract(reduce_sum(trueLabels), batchTp);
  Tensor batchTn = subtract(reduce_sum(falseLabels), batchFp);
  Variable tpVar = state(g, "true_positives", {T});
  Variable tnVar = state(g, "true_negatives", {T});
  Variable fpVar = state(g, "false_positives", {T});
  Variable fnVar = state(g, "false_negatives", {T});
  std::vector<Operation> updates = {
      accumulate(tpVar, batchTp, "update_true_positives"),
      accumulate(tnVar, batchTn, "update_true_negatives"),
      accumulate(fpVar, batchFp, "update_false_positives"),
      accumulate(fnVar, batchFn, "update_false_negatives")};
  Tensor tp = tpVar.read(), tn = tnVar.read(), fp = fpVar.read(),
         fn = fnVar.read();

  if (pr_curve) {
    // Keras's interpolate_pr_auc (Davis & Goadrich 2006).
    Tensor dtp = subtract(leading(tp, T), trailing(tp, T));
    Tensor positives = add(tp, fp);
    Tensor dp = subtract(leading(positives, T), trailing(positives, T));
    Tensor precSlope = divideNoNan(dtp, maximum(dp, 0.0));
    Tensor intercept =
        subtract(trailing(tp, T), multiply(precSlope, trailing(positives, T)));
    Tensor safePRatio = where(logical_and(greater(leading(positives, T), 0.0),
                                          greater(trailing(positives, T), 0.0)),
                              divideNoNan(leading(positives, T),
                                          maximum(trailing(positives, T), 0.0)),
                              ones_like(trailing(positives, T)));
    Tensor increment = divideNoNan(
        multiply(precSlope, add(dtp, multiply(intercept, log(safePRatio)))),
        maximum(add(trailing(tp, T), trailing(fn, T)), 0.0));
    return Metric{reduce_sum(increment, std::nullopt, false, "value"), updates};
  }
  Tensor recallCurve = divideNoNan(tp, add(tp, fn));
  Tensor fpRate = divideNoNan(fp, add(fp, tn));
  Tensor heights =
      divide(add(leading(recallCurve, T), trailing(recallCurve, T)), 2.0);
  Tensor widths = subtract(leading(fpRate, T), trailing(fpRate, T));
  return Metric{
      reduce_sum(multiply(widths, heights), std::nullopt, false, "value"),
      updates};
}

Tensor accuracy_baseline(const MeanMetric &label_mean) {
  Tensor total = label_mean.total.read();
  Tensor count = label_mean.count.read();
  return divideNoNan(maximum(total, subtract(count, total)), count,
                     "accuracy_baseline");
}

} // namespace head_metrics
} // namespace estimator
} // namespace estc
