//===- Metrics.cpp - Streaming metrics (tf.compat.v1.metrics) -----------===//
//
// Each metric is built from est ops only: comparisons, casts, one_hot,
// reduce_sum and matmul compute one batch's counts (top-k ranks and set
// arithmetic by broadcast comparisons, no sort; argmin / gather pick a
// threshold); read_variable + add + assign_variable fold them into local
// variables.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Metrics.h"

#include "lib/Graph/Ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace estc {
namespace metrics {
namespace {

std::string describe(const Tensor &t) {
  return "'" + t.name() + "' " + to_string(t.dtype()) + " " +
         shape::toString(t.shape());
}

/// The metric being built: its scope and the prefix of its error messages.
class Builder {
public:
  Builder(const char *metric, const Tensor &anchor, const std::string &name,
          const std::string &base)
      : g_(anchor.graph()),
        scope_(g_.name_scope(name.empty() ? g_.unique_layer_name(base) : name)),
        where_(std::string("metrics::") + metric + " '" + g_.current_scope() +
               "'") {}

  Graph &graph() const { return g_; }

  [[noreturn]] void fail(const std::string &message) const {
    throw GraphError(where_ + ": " + message);
  }

  void requireValue(const Tensor &t, const char *what) const {
    if (!t.valid() || &t.graph() != &g_ || !t.has_value())
      fail(std::string(what) + " must be a tensor of this graph with a value");
  }

  void requireFloat(const Tensor &t, const char *what) const {
    if (!is_floating(t.dtype()))
      fail(std::string(what) + " " + describe(t) + " must be float");
  }

  void requireInteger(const Tensor &t, const char *what) const {
    if (!is_integer(t.dtype()))
      fail(std::string(what) + " " + describe(t) + " must be integer");
  }

  /// TF's _remove_squeezable_dimensions for labels and predictions, then a
  /// shape check: the shapes must agree (unknown dimensions match anything).
  void alignLabels(Tensor &labels, Tensor &predictions) const {
    requireValue(labels, "labels");
    requireValue(predictions, "predictions");
    Tensor l = labels, p = predictions;
    if (l.rank() == p.rank() + 1 && l.shape().back() == 1)
      l = squeeze(l, Dims{-1});
    else if (p.rank() == l.rank() + 1 && p.shape().back() == 1)
      p = squeeze(p, Dims{-1});
    if (!shape::isCompatible(l.shape(), p.shape()))
      fail("labels " + describe(labels) + " and predictions " +
           describe(predictions) + " must have the same shape");
    labels = l;
    predictions = p;
  }

  /// `weights` as f32 broadcast to `values`' shape (TF's squeezable
  /// dimension rule, then TF's broadcast rule), or an empty Tensor.
  Tensor weightsFor(const Tensor &values, const Tensor &weights) const {
    if (!weights.valid())
      return Tensor();
    requireValue(weights, "weights");
    if (weights.dtype() == DType::Bool)
      fail("weights " + describe(weights) + " must be numeric");
    Tensor w = toFloat(weights);
    if (w.rank() != 0) {
      if (w.rank() == values.rank() + 1 && w.shape().back() == 1)
        w = squeeze(w, Dims{-1});
      else if (values.rank() == w.rank() + 1)
        w = expand_dims(w, -1);
    }
    bool ok = w.rank() == 0 || w.rank() == values.rank();
    for (int64_t i = 0; ok && i < w.rank(); ++i) {
      int64_t wd = w.shape()[i], vd = values.shape()[i];
      ok = wd == 1 || wd == vd || wd == shape::kUnknownDim ||
           vd == shape::kUnknownDim;
    }
    if (!ok)
      fail("weights " + describe(weights) +
           " must be a scalar or broadcastable to " + describe(values) +
           " (same rank, each dimension 1 or equal)");
    return multiply(ones_like(values, DType::Float32), w);
  }

  /// A local f32 (or `dtype`) variable of `shape` in the metric's scope.
  Variable state(const std::string &name, const Dims &shape,
                 DType dtype = DType::Float32) const {
    return g_.get_local_variable(name, dtype, shape);
  }

  static Tensor toFloat(const Tensor &t) {
    return t.dtype() == DType::Float32 ? t : cast(t, DType::Float32);
  }

  /// x != 0 (TF's cast to bool).
  static Tensor toBool(const Tensor &t) {
    if (t.dtype() == DType::Bool)
      return t;
    return not_equal(t, t.graph().constant(0.0, t.dtype()));
  }

private:
  Graph &g_;
  Scope scope_;
  std::string where_;
};

Tensor scalar(const Tensor &like, double value) {
  return like.graph().constant(value, like.dtype());
}

/// num / den where den > 0, else 0 (TF's _safe_div / div_no_nan for
/// non-negative counts).
Tensor safeDiv(const Tensor &num, const Tensor &den,
               const std::string &name = "") {
  Tensor zero = scalar(den, 0.0);
  return where(greater(den, zero), divide(num, den), zero, name);
}

/// variable += batch.
Operation accumulate(const Variable &variable, const Tensor &batch,
                     const std::string &name) {
  return assign(variable, add(variable.read(), batch), name);
}

/// The streaming mean of f32 `values` with broadcast f32 `weights` (or none).
Metric streamingMean(const Builder &b, const Tensor &values,
                     const Tensor &weights) {
  Variable total = b.state("total", {});
  Variable count = b.state("count", {});
  Tensor batchTotal, batchCount;
  if (weights.valid()) {
    batchTotal = reduce_sum(multiply(values, weights));
    batchCount = reduce_sum(weights);
  } else {
    batchTotal = reduce_sum(values);
    batchCount = reduce_sum(ones_like(values));
  }
  Operation updateTotal = accumulate(total, batchTotal, "update_total");
  Operation updateCount = accumulate(count, batchCount, "update_count");
  Tensor value = safeDiv(total.read(), count.read(), "value");
  return Metric{value, {updateTotal, updateCount}};
}

/// TF's _count_condition: "count" += sum(weights * condition).
Metric countCondition(const Builder &b, const Tensor &condition,
                      const Tensor &weights) {
  Variable count = b.state("count", {});
  Tensor values = cast(condition, DType::Float32);
  if (weights.valid())
    values = multiply(values, weights);
  Operation update = accumulate(count, reduce_sum(values), "update");
  return Metric{count.read(), {update}};
}

enum class Cell { TP, FP, TN, FN };

Tensor cellCondition(Cell cell, const Tensor &labelPos, const Tensor &predPos) {
  switch (cell) {
  case Cell::TP:
    return logical_and(labelPos, predPos);
  case Cell::FP:
    return logical_and(logical_not(labelPos), predPos);
  case Cell::TN:
    return logical_and(logical_not(labelPos), logical_not(predPos));
  case Cell::FN:
    return logical_and(labelPos, logical_not(predPos));
  }
  return Tensor();
}

const char *cellName(Cell cell) {
  switch (cell) {
  case Cell::TP:
    return "true_positives";
  case Cell::FP:
    return "false_positives";
  case Cell::TN:
    return "true_negatives";
  case Cell::FN:
    return "false_negatives";
  }
  return "";
}

/// true_positives(...) and friends, in the current (metric) scope.
Metric countCell(const Builder &b, Cell cell, Tensor labels, Tensor predictions,
                 const Tensor &weights) {
  b.alignLabels(labels, predictions);
  Tensor w = b.weightsFor(predictions, weights);
  return countCondition(b,
                        cellCondition(cell, Builder::toBool(labels),
                                      Builder::toBool(predictions)),
                        w);
}

Metric standaloneCell(const char *metric, Cell cell, const Tensor &labels,
                      const Tensor &predictions, const Tensor &weights,
                      const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name,
            cellName(cell));
  return countCell(b, cell, labels, predictions, weights);
}

/// A sub-metric in its own scope inside the current one (precision's
/// "true_positives/count").
Metric nestedCell(const Builder &outer, Cell cell, const Tensor &labels,
                  const Tensor &predictions, const Tensor &weights) {
  auto s = outer.graph().name_scope(cellName(cell));
  return countCell(outer, cell, labels, predictions, weights);
}

/// precision (`other` = FP) and recall (FN): tp / (tp + other), 0 where
/// both are 0.
Metric cellRatio(const char *metric, Cell other, const Tensor &labels,
                 const Tensor &predictions, const Tensor &weights,
                 const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name, metric);
  Metric tp = nestedCell(b, Cell::TP, labels, predictions, weights);
  Metric o = nestedCell(b, other, labels, predictions, weights);
  Tensor value = safeDiv(tp.value, add(tp.value, o.value), "value");
  return Metric{value, {tp.update_ops[0], o.update_ops[0]}};
}

/// TF's _confusion_matrix_at_thresholds: for each requested cell a local
/// [T] variable named after it, updated with the batch's weighted counts of
/// (label != 0, prediction > threshold[t]).
struct ThresholdCounts {
  std::map<Cell, Variable> state;
  std::vector<Operation> updates;
  Tensor read(Cell c) const { return state.at(c).read(); }
};

ThresholdCounts countsAtThresholds(const Builder &b, Tensor labels,
                                   Tensor predictions,
                                   const std::vector<double> &thresholds,
                                   const Tensor &weights,
                                   const std::vector<Cell> &cells) {
  b.alignLabels(labels, predictions);
  b.requireFloat(predictions, "predictions");
  if (thresholds.empty())
    b.fail("needs at least one threshold");
  for (double t : thresholds)
    if (!std::isfinite(t))
      b.fail("thresholds must be finite");
  Graph &g = b.graph();
  auto T = static_cast<int64_t>(thresholds.size());
  Tensor w = b.weightsFor(predictions, weights);
  Tensor preds = reshape(Builder::toFloat(predictions), {-1, 1});
  Tensor labelPos = reshape(Builder::toBool(labels), {-1, 1});
  Tensor thresh = g.constant(thresholds, {1, T}, DType::Float32, "thresholds");
  Tensor predPos = greater(preds, thresh); // [N, T]
  Tensor flatWeights = w.valid() ? reshape(w, {-1, 1}) : Tensor();
  ThresholdCounts out;
  for (Cell c : cells) {
    Variable v = b.state(cellName(c), {T});
    Tensor is = cast(cellCondition(c, labelPos, predPos), DType::Float32);
    if (flatWeights.valid())
      is = multiply(is, flatWeights);
    out.state.emplace(c, v);
    out.updates.push_back(accumulate(v, reduce_sum(is, Dims{0}),
                                     std::string("update_") + cellName(c)));
  }
  return out;
}

Metric cellAtThresholds(const char *metric, Cell cell, const Tensor &labels,
                        const Tensor &predictions,
                        const std::vector<double> &thresholds,
                        const Tensor &weights, const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name,
            cellName(cell));
  ThresholdCounts c =
      countsAtThresholds(b, labels, predictions, thresholds, weights, {cell});
  return Metric{c.read(cell), c.updates};
}

/// precision_at_thresholds (`other` = FP) and recall_at_thresholds (FN):
/// tp / (tp + other + 1e-7) per threshold.
Metric ratioAtThresholds(const char *metric, Cell other, const Tensor &labels,
                         const Tensor &predictions,
                         const std::vector<double> &thresholds,
                         const Tensor &weights, const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name, metric);
  ThresholdCounts c = countsAtThresholds(b, labels, predictions, thresholds,
                                         weights, {Cell::TP, other});
  Tensor tp = c.read(Cell::TP);
  Tensor den = add(tp, c.read(other)) + 1e-7;
  return Metric{divide(tp, den, "value"), c.updates};
}

/// x[:T-1] and x[1:] of a [T] vector.
Tensor head(const Tensor &x, int64_t T) { return slice(x, {0}, {T - 1}); }
Tensor tail(const Tensor &x, int64_t T) { return slice(x, {1}, {T - 1}); }

Tensor regressionDiff(const Builder &b, Tensor &labels, Tensor &predictions) {
  b.alignLabels(labels, predictions);
  b.requireFloat(predictions, "predictions");
  Tensor l = labels.dtype() == predictions.dtype()
                 ? labels
                 : cast(labels, predictions.dtype());
  return subtract(l, predictions);
}

/// The streaming mean of (labels - predictions)^2 (`squared`) or of
/// |labels - predictions|.
Metric meanError(const Builder &b, Tensor labels, Tensor predictions,
                 const Tensor &weights, bool squared) {
  Tensor diff = regressionDiff(b, labels, predictions);
  Tensor v = Builder::toFloat(squared ? square(diff) : abs(diff));
  return streamingMean(b, v, b.weightsFor(v, weights));
}

/// Class ids, flattened, as i64; checks num_classes.
/// `ids` as int64 [N], checked at run time to be in [0, num_classes), as
/// TF's confusion_matrix asserts (InvalidArgumentError otherwise).
Tensor flatClassIds(const Builder &b, const Tensor &ids, const char *what,
                    int64_t num_classes) {
  b.requireInteger(ids, what);
  Tensor flat = ids.rank() == 1 ? ids : reshape(ids, {-1});
  flat = flat.dtype() == DType::Int64 ? flat : cast(flat, DType::Int64);
  std::string kind = std::string(what) == "labels" ? "label" : "prediction";
  return check_range(flat, 0, num_classes, kind, what);
}

void requireNumClasses(const Builder &b, int64_t num_classes) {
  if (num_classes < 1)
    b.fail("num_classes must be at least 1, got " +
           std::to_string(num_classes));
}

/// Per-example counts (f64 [B]) of the _at_k metrics: true positives, false
/// positives and false negatives, as TF's set arithmetic on the labels and
/// the top k (both cut down to {class_id} if given), and the weights (f64
/// broadcast to [B], or empty).
struct TopK {
  Tensor tp, fp, fn;
  Tensor weights;
};

Tensor f64(const Tensor &t) { return cast(t, DType::Float64); }

/// Whether any element along the last axis is true (bool [..., n] -> [...]).
Tensor anyLast(const Tensor &t) {
  Tensor count = reduce_sum(cast(t, DType::Float32), Dims{t.rank() - 1});
  return greater(count, t.graph().constant(0.0));
}

/// Number of true elements of a bool [B, n], as f64 [B].
Tensor countRow(const Tensor &t) {
  return f64(reduce_sum(cast(t, DType::Float32), Dims{1}));
}

/// Whether entry j of each row of `x` (i64 [B, n]) repeats an earlier entry
/// of its row: the entries that are not first occurrences, which a set
/// counts once.
Tensor repeatsEarlier(const Tensor &x) {
  int64_t n = x.shape()[1];
  std::vector<double> before(n * n, 0.0); // [j, j'] = j' < j
  for (int64_t j = 0; j < n; ++j)
    for (int64_t jj = 0; jj < j; ++jj)
      before[j * n + jj] = 1.0;
  Tensor eq = cast(equal(expand_dims(x, 2), expand_dims(x, 1)), DType::Float32);
  Tensor mask = x.graph().constant(before, {n, n});
  return anyLast(greater(multiply(eq, mask), x.graph().constant(0.0)));
}

/// Whether each entry of `a` (i64 [B, n]) is among its row of `set` (i64
/// [B, m]): bool [B, n].
Tensor memberOf(const Tensor &a, const Tensor &set) {
  return anyLast(equal(expand_dims(a, 2), expand_dims(set, 1)));
}

/// The examples of an _at_k metric, flattened: labels as i64 [M,
/// num_labels], predictions [M, X] (X: classes or k) and the weights as f64
/// [M] (or empty), M the product of the leading dimensions D1 ... DN.
struct Examples {
  Tensor ids, predictions, weights;
};

/// Integer labels [D1, ..., DN] or [D1, ..., DN, num_labels] against
/// `predictions` [D1, ..., DN, X] (rank >= 2 and X known, checked by the
/// caller); weights of rank 0 or N broadcast to [D1, ..., DN].
Examples flattenExamples(const Builder &b, const Tensor &labels,
                         const Tensor &predictions, const char *predictionsWhat,
                         const Tensor &weights) {
  b.requireValue(labels, "labels");
  b.requireInteger(labels, "labels");
  int64_t rank = predictions.rank();
  Tensor l = labels;
  if (l.rank() == rank - 1)
    l = expand_dims(l, -1);
  if (l.rank() != rank)
    b.fail("labels " + describe(labels) + " must be [D1, ..., DN] or [D1, " +
           "..., DN, num_labels] class ids for " + predictionsWhat + " " +
           describe(predictions));
  int64_t L = l.shape().back(), X = predictions.shape().back();
  if (L == shape::kUnknownDim)
    b.fail("labels " + describe(labels) +
           " must have a known number of labels per example");
  for (int64_t i = 0; i + 1 < rank; ++i) {
    int64_t ld = l.shape()[i], pd = predictions.shape()[i];
    if (ld != shape::kUnknownDim && pd != shape::kUnknownDim && ld != pd)
      b.fail("labels " + describe(labels) + " and " + predictionsWhat + " " +
             describe(predictions) + " must have the same leading dimensions");
  }
  Examples out;
  out.ids = l.dtype() == DType::Int64 ? l : cast(l, DType::Int64);
  Tensor perExample = reduce_sum(cast(out.ids, DType::Float32), Dims{rank - 1});
  if (Tensor w = b.weightsFor(perExample, weights); w.valid())
    out.weights = f64(rank == 2 ? w : reshape(w, {-1}));
  out.predictions = predictions;
  if (rank > 2) {
    out.ids = reshape(out.ids, {-1, L});
    out.predictions = reshape(predictions, {-1, X});
  }
  return out;
}

/// Whether class `ids` (i64, broadcasting against `iota`) of each example is
/// among the k best of `scores` in tf.nn.top_k's order: fewer than k classes
/// score higher, or equally with a lower id. `score` is that class's score;
/// the comparisons run along the last axis.
Tensor classInTopK(const Tensor &scores, const Tensor &iota, const Tensor &ids,
                   const Tensor &score, int64_t k) {
  Tensor ahead = logical_or(greater(scores, score),
                            logical_and(equal(scores, score), less(iota, ids)));
  Tensor rank = reduce_sum(cast(ahead, DType::Float32), Dims{ahead.rank() - 1});
  return less(rank, scores.graph().constant(static_cast<double>(k)));
}

/// The class ids 0 .. C-1 as an i64 constant of `shape` (C last).
Tensor classIota(Graph &g, int64_t C, const Dims &shape) {
  std::vector<double> values(C);
  for (int64_t i = 0; i < C; ++i)
    values[i] = static_cast<double>(i);
  return g.constant(values, shape, DType::Int64, "class_ids");
}

/// Scores [D1, ..., DN, num_classes] (float) of the *_at_k metrics; checks
/// k.
int64_t checkScores(const Builder &b, const Tensor &predictions, int64_t k) {
  b.requireValue(predictions, "predictions");
  b.requireFloat(predictions, "predictions");
  if (predictions.rank() < 2)
    b.fail("predictions " + describe(predictions) +
           " must be [batch, num_classes] (or [D1, ..., DN, num_classes])");
  int64_t C = predictions.shape().back();
  if (C == shape::kUnknownDim)
    b.fail("predictions " + describe(predictions) +
           " must have a known number of classes");
  if (k < 1 || k > C)
    b.fail("k must be in [1, " + std::to_string(C) + "], got " +
           std::to_string(k));
  return C;
}

/// The rank (f32 [B, L]) of each label's class among `predictions` [B, C]
/// in tf.nn.top_k's order: the classes that score higher, or equally with a
/// lower id (meaningless for an id outside [0, C): callers mask those).
Tensor labelRanks(const Tensor &predictions, const Tensor &ids) {
  Graph &g = predictions.graph();
  int64_t C = predictions.shape()[1];
  Tensor label = expand_dims(ids, 2);          // [B, L, 1]
  Tensor scores = expand_dims(predictions, 1); // [B, 1, C]
  Tensor iota = classIota(g, C, {1, 1, C});
  Tensor zero = scalar(predictions, 0.0);
  Tensor labelScore = reduce_sum(where(equal(iota, label), scores, zero),
                                 Dims{2}, /*keep_dims=*/true); // [B, L, 1]
  Tensor ahead =
      logical_or(greater(scores, labelScore),
                 logical_and(equal(scores, labelScore), less(iota, label)));
  return reduce_sum(cast(ahead, DType::Float32), Dims{2});
}

/// precision_at_k / recall_at_k: the top k of `predictions` by rank, without
/// sorting. Labels [B, L]: each distinct label is a true positive when it is
/// a class in the top k, else a false negative (an id outside [0, C) too:
/// TF's set difference keeps it); the top k has k distinct classes, so fp =
/// k - tp.
TopK topK(const Builder &b, const Tensor &labels, const Tensor &predictions,
          int64_t k, std::optional<int64_t> class_id, const Tensor &weights) {
  int64_t C = checkScores(b, predictions, k);
  if (class_id && (*class_id < 0 || *class_id >= C))
    b.fail("class_id must be in [0, " + std::to_string(C) + "), got " +
           std::to_string(*class_id));
  Examples ex = flattenExamples(b, labels, predictions, "predictions", weights);
  Tensor ids = ex.ids, scores = ex.predictions; // [B, L], [B, C]
  Graph &g = b.graph();
  TopK out;
  out.weights = ex.weights;
  if (class_id) {
    // Binary in class_id: is it a label, is it in the top k.
    Tensor c = g.constant(static_cast<double>(*class_id), DType::Int64);
    Tensor score = slice(scores, {0, *class_id}, {-1, 1}); // [B, 1]
    Tensor in = classInTopK(scores, classIota(g, C, {1, C}), reshape(c, {1, 1}),
                            score, k); // [B]
    Tensor isClass = anyLast(equal(ids, c));
    out.tp = f64(cast(logical_and(isClass, in), DType::Float32));
    out.fp = f64(cast(logical_and(logical_not(isClass), in), DType::Float32));
    out.fn = f64(cast(logical_and(isClass, logical_not(in)), DType::Float32));
    return out;
  }
  Tensor valid =
      logical_and(greater_equal(ids, g.constant(0.0, DType::Int64)),
                  less(ids, g.constant(static_cast<double>(C), DType::Int64)));
  Tensor distinct = logical_not(repeatsEarlier(ids)); // [B, L]
  Tensor in = logical_and(
      logical_and(distinct, valid),
      less(labelRanks(scores, ids), static_cast<double>(k))); // [B, L]
  out.tp = countRow(in);
  out.fp = subtract(g.constant(static_cast<double>(k), DType::Float64), out.tp);
  out.fn = subtract(countRow(distinct), out.tp);
  return out;
}

/// precision_at_top_k / recall_at_top_k: set arithmetic on given top-k ids.
TopK topKOnIds(const Builder &b, const Tensor &labels,
               const Tensor &predictions_idx, std::optional<int64_t> k,
               std::optional<int64_t> class_id, const Tensor &weights) {
  b.requireValue(predictions_idx, "predictions_idx");
  b.requireInteger(predictions_idx, "predictions_idx");
  if (predictions_idx.rank() < 2 ||
      predictions_idx.shape().back() == shape::kUnknownDim)
    b.fail("predictions_idx " + describe(predictions_idx) +
           " must be [batch, k] (or [D1, ..., DN, k]) class ids with a known "
           "k");
  if (k && *k < 1)
    b.fail("k must be >= 1, got " + std::to_string(*k));
  Examples ex =
      flattenExamples(b, labels, predictions_idx, "predictions_idx", weights);
  Tensor ids = ex.ids;
  Tensor top = ex.predictions.dtype() == DType::Int64
                   ? ex.predictions
                   : cast(ex.predictions, DType::Int64);
  Graph &g = b.graph();
  TopK out;
  out.weights = ex.weights;
  auto count = [](const Tensor &t) { return f64(cast(t, DType::Float32)); };
  if (class_id) {
    Tensor c = g.constant(static_cast<double>(*class_id), DType::Int64);
    Tensor isLabel = anyLast(equal(ids, c)), isTop = anyLast(equal(top, c));
    out.tp = count(logical_and(isLabel, isTop));
    out.fp = count(logical_and(logical_not(isLabel), isTop));
    out.fn = count(logical_and(isLabel, logical_not(isTop)));
    return out;
  }
  Tensor topDistinct = logical_not(repeatsEarlier(top));
  Tensor labelDistinct = logical_not(repeatsEarlier(ids));
  Tensor topInLabels = memberOf(top, ids);
  out.tp = countRow(logical_and(topDistinct, topInLabels));
  out.fp = countRow(logical_and(topDistinct, logical_not(topInLabels)));
  out.fn =
      countRow(logical_and(labelDistinct, logical_not(memberOf(ids, top))));
  return out;
}

/// TF's _at_k_name: "precision_at_5", "true_positive_at_5_class3",
/// "precision_at_k" without k.
std::string atKName(const std::string &base, std::optional<int64_t> k,
                    std::optional<int64_t> class_id) {
  std::string name = base + "_at_" + (k ? std::to_string(*k) : "k");
  if (class_id)
    name += "_class" + std::to_string(*class_id);
  return name;
}

/// A weighted sum of an f64 [B] vector.
Tensor weightedSum64(const Tensor &values, const Tensor &weights) {
  return reduce_sum(weights.valid() ? multiply(values, weights) : values);
}

/// precision (`other` = FP) and recall (FN) at k: tp / (tp + other) of the
/// weighted counts, kept in f64, in the builder's scope.
Metric ratioAtK(const Builder &b, const TopK &t, Cell other,
                std::optional<int64_t> k, std::optional<int64_t> class_id) {
  bool fp = other == Cell::FP;
  Variable tp =
      b.state(atKName("true_positive", k, class_id), {}, DType::Float64);
  Variable o =
      b.state(atKName(fp ? "false_positive" : "false_negative", k, class_id),
              {}, DType::Float64);
  Operation updateTp =
      accumulate(tp, weightedSum64(t.tp, t.weights), "update_tp");
  Operation updateOther =
      accumulate(o, weightedSum64(fp ? t.fp : t.fn, t.weights),
                 fp ? "update_fp" : "update_fn");
  Tensor value = divide(tp.read(), add(tp.read(), o.read()), "value");
  return Metric{value, {updateTp, updateOther}};
}

Metric ratioAtK(const char *metric, const char *base, Cell other,
                const Tensor &labels, const Tensor &predictions, int64_t k,
                std::optional<int64_t> class_id, const Tensor &weights,
                const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name,
            atKName(base, k, class_id));
  return ratioAtK(b, topK(b, labels, predictions, k, class_id, weights), other,
                  k, class_id);
}

Metric ratioAtTopK(const char *metric, const char *base, Cell other,
                   const Tensor &labels, const Tensor &predictions_idx,
                   std::optional<int64_t> k, std::optional<int64_t> class_id,
                   const Tensor &weights, const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions_idx, name,
            atKName(base, k, class_id));
  return ratioAtK(b,
                  topKOnIds(b, labels, predictions_idx, k, class_id, weights),
                  other, k, class_id);
}

/// TF's div_no_nan: 0 where the denominator is 0.
Tensor divNoNan(const Tensor &num, const Tensor &den,
                const std::string &name = "") {
  Tensor zero = scalar(den, 0.0);
  return where(equal(den, zero), zero, divide(num, den), name);
}

/// The confusion counts at TF's num_thresholds thresholds for
/// sensitivity_at_specificity (last = 1 + 1e-7) and
/// specificity_at_sensitivity (1 - 1e-7).
ThresholdCounts countsForRate(const Builder &b, const Tensor &labels,
                              const Tensor &predictions, const Tensor &weights,
                              int64_t num_thresholds, double rate,
                              const char *rateName, double last) {
  if (!(rate >= 0.0 && rate <= 1.0))
    b.fail(std::string(rateName) + " must be in [0, 1], got " +
           std::to_string(rate));
  if (num_thresholds < 2)
    b.fail("num_thresholds must be > 1, got " + std::to_string(num_thresholds));
  const double kEpsilon = 1e-7;
  std::vector<double> all = {0.0 - kEpsilon};
  for (int64_t i = 0; i < num_thresholds - 2; ++i)
    all.push_back((i + 1) * 1.0 / static_cast<double>(num_thresholds - 1));
  all.push_back(last);
  return countsAtThresholds(b, labels, predictions, all, weights,
                            {Cell::TP, Cell::FN, Cell::TN, Cell::FP});
}
} // namespace

// --- Means
// ------------------------------------------------------------------------

Metric accuracy(const Tensor &labels, const Tensor &predictions,
                const Tensor &weights, const std::string &name) {
  Builder b("accuracy", labels.valid() ? labels : predictions, name,
            "accuracy");
  Tensor l = labels, p = predictions;
  b.alignLabels(l, p);
  if (p.dtype() != l.dtype())
    p = cast(p, l.dtype());
  Tensor correct = cast(equal(p, l), DType::Float32);
  return streamingMean(b, correct, b.weightsFor(correct, weights));
}

Metric mean(const Tensor &values, const Tensor &weights,
            const std::string &name) {
  Builder b("mean", values, name, "mean");
  b.requireValue(values, "values");
  if (values.dtype() == DType::Bool)
    b.fail("values " + describe(values) + " must be numeric");
  Tensor v = Builder::toFloat(values);
  return streamingMean(b, v, b.weightsFor(v, weights));
}

Metric mean_squared_error(const Tensor &labels, const Tensor &predictions,
                          const Tensor &weights, const std::string &name) {
  Builder b("mean_squared_error", labels.valid() ? labels : predictions, name,
            "mean_squared_error");
  return meanError(b, labels, predictions, weights, /*squared=*/true);
}

Metric root_mean_squared_error(const Tensor &labels, const Tensor &predictions,
                               const Tensor &weights, const std::string &name) {
  Builder b("root_mean_squared_error", labels.valid() ? labels : predictions,
            name, "root_mean_squared_error");
  Metric mse = meanError(b, labels, predictions, weights, /*squared=*/true);
  return Metric{sqrt(mse.value, "rmse"), mse.update_ops};
}

Metric mean_absolute_error(const Tensor &labels, const Tensor &predictions,
                           const Tensor &weights, const std::string &name) {
  Builder b("mean_absolute_error", labels.valid() ? labels : predictions, name,
            "mean_absolute_error");
  return meanError(b, labels, predictions, weights, /*squared=*/false);
}

// --- Confusion counts
// -------------------------------------------------------------

// true_positives, ..., false_negatives and their *_at_thresholds forms
// (true_positives_at_thresholds, ...): the count of one cell.
#define ESTC_CELL_METRICS(NAME, CELL)                                          \
  Metric NAME(const Tensor &labels, const Tensor &predictions,                 \
              const Tensor &weights, const std::string &name) {                \
    return standaloneCell(#NAME, CELL, labels, predictions, weights, name);    \
  }                                                                            \
  Metric NAME##_at_thresholds(const Tensor &labels, const Tensor &predictions, \
                              const std::vector<double> &thresholds,           \
                              const Tensor &weights,                           \
                              const std::string &name) {                       \
    return cellAtThresholds(#NAME "_at_thresholds", CELL, labels, predictions, \
                            thresholds, weights, name);                        \
  }
ESTC_CELL_METRICS(true_positives, Cell::TP)
ESTC_CELL_METRICS(false_positives, Cell::FP)
ESTC_CELL_METRICS(true_negatives, Cell::TN)
ESTC_CELL_METRICS(false_negatives, Cell::FN)
#undef ESTC_CELL_METRICS

Metric precision(const Tensor &labels, const Tensor &predictions,
                 const Tensor &weights, const std::string &name) {
  return cellRatio("precision", Cell::FP, labels, predictions, weights, name);
}

Metric recall(const Tensor &labels, const Tensor &predictions,
              const Tensor &weights, const std::string &name) {
  return cellRatio("recall", Cell::FN, labels, predictions, weights, name);
}

// --- At thresholds
// ----------------------------------------------------------------

Metric precision_at_thresholds(const Tensor &labels, const Tensor &predictions,
                               const std::vector<double> &thresholds,
                               const Tensor &weights, const std::string &name) {
  return ratioAtThresholds("precision_at_thresholds", Cell::FP, labels,
                           predictions, thresholds, weights, name);
}

Metric recall_at_thresholds(const Tensor &labels, const Tensor &predictions,
                            const std::vector<double> &thresholds,
                            const Tensor &weights, const std::string &name) {
  return ratioAtThresholds("recall_at_thresholds", Cell::FN, labels,
                           predictions, thresholds, weights, name);
}

Metric auc(const Tensor &labels, const Tensor &predictions,
           const Tensor &weights, int64_t num_thresholds,
           const std::string &curve, const std::string &name,
           const std::string &summation_method,
           const std::vector<double> &thresholds) {
  Builder b("auc", labels.valid() ? labels : predictions, name, "auc");
  if (curve != "ROC" && curve != "PR")
    b.fail("curve must be \"ROC\" or \"PR\", got \"" + curve + "\"");
  if (summation_method != "trapezoidal" &&
      summation_method != "careful_interpolation" &&
      summation_method != "minoring" && summation_method != "majoring")
    b.fail("summation_method must be trapezoidal, careful_interpolation, "
           "minoring or majoring, got \"" +
           summation_method + "\"");
  if (thresholds.empty() && num_thresholds < 2)
    b.fail("num_thresholds must be > 1, got " + std::to_string(num_thresholds));
  // TF: the given thresholds (sorted) or num_thresholds - 2 thresholds
  // evenly inside (0, 1), then the two edges just outside [0, 1] so that
  // predictions of exactly 0 and 1 are counted.
  const double kEpsilon = 1e-7;
  std::vector<double> inner = thresholds;
  std::sort(inner.begin(), inner.end());
  if (thresholds.empty())
    for (int64_t i = 0; i < num_thresholds - 2; ++i)
      inner.push_back((i + 1) * 1.0 / static_cast<double>(num_thresholds - 1));
  std::vector<double> all = {0.0 - kEpsilon};
  all.insert(all.end(), inner.begin(), inner.end());
  all.push_back(1.0 + kEpsilon);
  const auto T = static_cast<int64_t>(all.size());
  ThresholdCounts c =
      countsAtThresholds(b, labels, predictions, all, weights,
                         {Cell::TP, Cell::FN, Cell::TN, Cell::FP});
  Tensor tp = c.read(Cell::TP), fn = c.read(Cell::FN), tn = c.read(Cell::TN),
         fp = c.read(Cell::FP);

  if (curve == "PR" && summation_method == "careful_interpolation") {
    // TF's interpolate_pr_auc (Davis & Goadrich 2006).
    Tensor zero = scalar(tp, 0.0);
    auto divNoNan = [&](const Tensor &num, const Tensor &den) {
      return where(not_equal(den, zero), divide(num, den), zero);
    };
    Tensor dtp = subtract(head(tp, T), tail(tp, T));
    Tensor p = add(tp, fp);
    Tensor precSlope =
        divNoNan(dtp, maximum(subtract(head(p, T), tail(p, T)), zero));
    Tensor intercept = subtract(tail(tp, T), multiply(precSlope, tail(p, T)));
    Tensor safePRatio = where(
        logical_and(greater(head(p, T), zero), greater(tail(p, T), zero)),
        divNoNan(head(p, T), maximum(tail(p, T), zero)), ones_like(tail(p, T)));
    Tensor increment = divNoNan(
        multiply(precSlope, add(dtp, multiply(intercept, log(safePRatio)))),
        maximum(add(tail(tp, T), tail(fn, T)), zero));
    return Metric{reduce_sum(increment, std::nullopt, false, "value"),
                  c.updates};
  }
  const double kDivEpsilon = 1e-6;
  Tensor rec = divide(tp + kDivEpsilon, add(tp, fn) + kDivEpsilon);
  Tensor x, y;
  if (curve == "ROC") {
    x = divide(fp, add(fp, tn) + kDivEpsilon);
    y = rec;
  } else {
    x = rec;
    y = divide(tp + kDivEpsilon, add(tp, fp) + kDivEpsilon);
  }
  Tensor dx = subtract(head(x, T), tail(x, T));
  Tensor height;
  if (summation_method == "minoring")
    height = minimum(head(y, T), tail(y, T));
  else if (summation_method == "majoring")
    height = maximum(head(y, T), tail(y, T));
  else
    height = add(head(y, T), tail(y, T)) * 0.5;
  return Metric{reduce_sum(multiply(dx, height), std::nullopt, false, "value"),
                c.updates};
}

// --- Per class
// --------------------------------------------------------------------

Metric mean_per_class_accuracy(const Tensor &labels, const Tensor &predictions,
                               int64_t num_classes, const Tensor &weights,
                               const std::string &name) {
  Builder b("mean_per_class_accuracy", labels.valid() ? labels : predictions,
            name, "mean_accuracy");
  requireNumClasses(b, num_classes);
  Tensor l = labels, p = predictions;
  b.alignLabels(l, p);
  Tensor w = b.weightsFor(l, weights);
  Tensor ids = flatClassIds(b, l, "labels", num_classes);
  Tensor predIds = flatClassIds(b, p, "predictions", num_classes);
  Variable total = b.state("total", {num_classes});
  Variable count = b.state("count", {num_classes});
  Tensor onehot = one_hot(ids, num_classes); // [N, C] f32
  Tensor isCorrect = cast(equal(predIds, ids), DType::Float32);
  Tensor ones = ones_like(isCorrect);
  if (w.valid()) {
    Tensor flatW = reshape(w, {-1});
    isCorrect = multiply(isCorrect, flatW);
    ones = multiply(ones, flatW);
  }
  auto perClass = [&](const Tensor &v) {
    return reduce_sum(multiply(onehot, expand_dims(v, 1)), Dims{0});
  };
  Operation updateTotal = accumulate(total, perClass(ones), "update_total");
  Operation updateCount =
      accumulate(count, perClass(isCorrect), "update_count");
  Tensor perClassAccuracy = safeDiv(count.read(), total.read());
  return Metric{reduce_mean(perClassAccuracy, std::nullopt, false, "value"),
                {updateTotal, updateCount}};
}

Metric mean_iou(const Tensor &labels, const Tensor &predictions,
                int64_t num_classes, const Tensor &weights,
                const std::string &name) {
  Builder b("mean_iou", labels.valid() ? labels : predictions, name,
            "mean_iou");
  requireNumClasses(b, num_classes);
  Tensor l = labels, p = predictions;
  b.alignLabels(l, p);
  Tensor w = b.weightsFor(l, weights);
  Tensor ids = flatClassIds(b, l, "labels", num_classes);
  Tensor predIds = flatClassIds(b, p, "predictions", num_classes);
  Variable cm = b.state("total_confusion_matrix", {num_classes, num_classes},
                        DType::Float64);
  Tensor labelOneHot = one_hot(ids, num_classes); // [N, C]
  if (w.valid())
    labelOneHot = multiply(labelOneHot, reshape(w, {-1, 1}));
  // cm[i, j] += sum over examples with label i and prediction j of weight.
  Tensor batchCm = matmul(labelOneHot, one_hot(predIds, num_classes),
                          /*transpose_a=*/true);
  Operation update =
      accumulate(cm, cast(batchCm, DType::Float64), "update_confusion_matrix");

  Graph &g = b.graph();
  Tensor total = cast(cm.read(), DType::Float32);
  std::vector<double> eye(num_classes * num_classes, 0.0);
  for (int64_t i = 0; i < num_classes; ++i)
    eye[i * num_classes + i] = 1.0;
  Tensor diag = reduce_sum(
      multiply(total, g.constant(eye, {num_classes, num_classes})), Dims{1});
  Tensor sumOverRow = reduce_sum(total, Dims{0});
  Tensor sumOverCol = reduce_sum(total, Dims{1});
  Tensor denominator = subtract(add(sumOverRow, sumOverCol), diag);
  Tensor zero = scalar(denominator, 0.0);
  Tensor numValid =
      reduce_sum(cast(not_equal(denominator, zero), DType::Float32));
  Tensor safeDen =
      where(greater(denominator, zero), denominator, ones_like(denominator));
  Tensor iou = divide(diag, safeDen);
  Tensor value = where(greater(numValid, zero),
                       divide(reduce_sum(iou), numValid), zero, "value");
  return Metric{value, {update}};
}

// --- Top k
// ------------------------------------------------------------------------

Metric precision_at_k(const Tensor &labels, const Tensor &predictions,
                      int64_t k, std::optional<int64_t> class_id,
                      const Tensor &weights, const std::string &name) {
  return ratioAtK("precision_at_k", "precision", Cell::FP, labels, predictions,
                  k, class_id, weights, name);
}

Metric recall_at_k(const Tensor &labels, const Tensor &predictions, int64_t k,
                   std::optional<int64_t> class_id, const Tensor &weights,
                   const std::string &name) {
  return ratioAtK("recall_at_k", "recall", Cell::FN, labels, predictions, k,
                  class_id, weights, name);
}

Metric sparse_precision_at_k(const Tensor &labels, const Tensor &predictions,
                             int64_t k, std::optional<int64_t> class_id,
                             const Tensor &weights, const std::string &name) {
  return ratioAtK("sparse_precision_at_k", "precision", Cell::FP, labels,
                  predictions, k, class_id, weights, name);
}

Metric precision_at_top_k(const Tensor &labels, const Tensor &predictions_idx,
                          std::optional<int64_t> k,
                          std::optional<int64_t> class_id,
                          const Tensor &weights, const std::string &name) {
  return ratioAtTopK("precision_at_top_k", "precision", Cell::FP, labels,
                     predictions_idx, k, class_id, weights, name);
}

Metric recall_at_top_k(const Tensor &labels, const Tensor &predictions_idx,
                       std::optional<int64_t> k,
                       std::optional<int64_t> class_id, const Tensor &weights,
                       const std::string &name) {
  return ratioAtTopK("recall_at_top_k", "recall", Cell::FN, labels,
                     predictions_idx, k, class_id, weights, name);
}

namespace {

/// TF's _sparse_average_precision_at_top_k and its streaming mean.
Metric averagePrecisionAtK(const char *metric, const Tensor &labels,
                           const Tensor &predictions, int64_t k,
                           const Tensor &weights, const std::string &name) {
  Builder b(metric, labels.valid() ? labels : predictions, name,
            atKName("average_precision", k, std::nullopt));
  if (k < 1)
    b.fail("k must be >= 1, got " + std::to_string(k));
  int64_t C = checkScores(b, predictions, k);
  Graph &g = b.graph();
  Examples ex = flattenExamples(b, labels, predictions, "predictions", weights);
  Tensor ids = ex.ids; // [B, L]
  // TF's _clean_out_of_range_indices: ids >= num_classes become -1.
  Tensor numClasses = g.constant(static_cast<double>(C), DType::Int64);
  ids = where(greater_equal(ids, numClasses), g.constant(-1.0, DType::Int64),
              ids);
  // The j-th of the top k is relevant when it is a label: the distinct
  // labels (ids >= 0 after the cleaning are classes) of rank < k. At the
  // position of such a label, precision@j = (the relevant labels of rank
  // <= its rank) / (its rank + 1); precision_sum adds those.
  Tensor rank = labelRanks(ex.predictions, ids); // [B, L]
  Tensor relevant =
      cast(logical_and(
               logical_and(logical_not(repeatsEarlier(ids)),
                           greater_equal(ids, g.constant(0.0, DType::Int64))),
               less(rank, static_cast<double>(k))),
           DType::Float32); // [B, L]
  Tensor upTo = cast(less_equal(expand_dims(rank, 1), expand_dims(rank, 2)),
                     DType::Float32); // [B, l, l']: rank l' <= rank l
  Tensor tpUpTo =
      reduce_sum(multiply(upTo, expand_dims(relevant, 1)), Dims{2}); // [B, L]
  Tensor precisionAt = divide(f64(tpUpTo), f64(rank + 1.0));
  Tensor precisionSum =
      reduce_sum(multiply(precisionAt, f64(relevant)), Dims{1}); // [B]
  // TF's _num_relevant: min(number of ids >= 0, k), duplicates included.
  Tensor numLabels = reduce_sum(
      cast(greater_equal(ids, g.constant(0.0, DType::Int64)), DType::Float32),
      Dims{1});
  Tensor numRelevant =
      f64(minimum(numLabels, g.constant(static_cast<double>(k))));
  Tensor average = divide(precisionSum, numRelevant); // NaN without labels
  Tensor w = ex.weights;
  Tensor batchMax;
  if (w.valid()) {
    average = multiply(average, w);
    batchMax = reduce_sum(w);
  } else {
    batchMax = f64(reduce_sum(ones_like(numLabels)));
  }
  Variable max = b.state("max", {}, DType::Float64);
  Variable total = b.state("total", {}, DType::Float64);
  Operation updateMax = accumulate(max, batchMax, "update_max");
  Operation updateTotal =
      accumulate(total, reduce_sum(average), "update_total");
  return Metric{divNoNan(total.read(), max.read(), "value"),
                {updateMax, updateTotal}};
}

} // namespace

Metric average_precision_at_k(const Tensor &labels, const Tensor &predictions,
                              int64_t k, const Tensor &weights,
                              const std::string &name) {
  return averagePrecisionAtK("average_precision_at_k", labels, predictions, k,
                             weights, name);
}

Metric sparse_average_precision_at_k(const Tensor &labels,
                                     const Tensor &predictions, int64_t k,
                                     const Tensor &weights,
                                     const std::string &name) {
  return averagePrecisionAtK("sparse_average_precision_at_k", labels,
                             predictions, k, weights, name);
}

// --- More means
// -------------------------------------------------------------------

Metric mean_cosine_distance(const Tensor &labels, const Tensor &predictions,
                            int64_t dim, const Tensor &weights,
                            const std::string &name) {
  Builder b("mean_cosine_distance", labels.valid() ? labels : predictions, name,
            "mean_cosine_distance");
  Tensor l = labels, p = predictions;
  b.alignLabels(l, p);
  b.requireFloat(p, "predictions");
  int64_t rank = p.rank();
  if (dim < -rank || dim >= rank)
    b.fail("dim " + std::to_string(dim) + " is out of range for predictions " +
           describe(predictions) + " (rank " + std::to_string(rank) + ")");
  if (l.dtype() != p.dtype())
    l = cast(l, p.dtype());
  int64_t axis = dim < 0 ? dim + rank : dim;
  Tensor radial = Builder::toFloat(
      reduce_sum(multiply(p, l), Dims{axis}, /*keep_dims=*/true));
  Metric m = streamingMean(b, radial, b.weightsFor(radial, weights));
  return Metric{subtract(1.0, m.value, "value"), m.update_ops};
}

Metric mean_relative_error(const Tensor &labels, const Tensor &predictions,
                           const Tensor &normalizer, const Tensor &weights,
                           const std::string &name) {
  Builder b("mean_relative_error", labels.valid() ? labels : predictions, name,
            "mean_relative_error");
  Tensor l = labels, p = predictions;
  Tensor diff = regressionDiff(b, l, p);
  b.requireValue(normalizer, "normalizer");
  if (normalizer.dtype() == DType::Bool)
    b.fail("normalizer " + describe(normalizer) + " must be numeric");
  Tensor n = normalizer;
  if (n.rank() == p.rank() + 1 && n.shape().back() == 1)
    n = squeeze(n, Dims{-1});
  if (!shape::isCompatible(n.shape(), p.shape()))
    b.fail("normalizer " + describe(normalizer) +
           " must have the shape of predictions " + describe(predictions));
  if (n.dtype() != p.dtype())
    n = cast(n, p.dtype());
  Tensor zero = scalar(n, 0.0);
  Tensor relative =
      Builder::toFloat(where(equal(n, zero), zero, divide(abs(diff), n)));
  return streamingMean(b, relative, b.weightsFor(relative, weights));
}

Metric mean_tensor(const Tensor &values, const Tensor &weights,
                   const std::string &name) {
  Builder b("mean_tensor", values, name, "mean");
  b.requireValue(values, "values");
  if (values.dtype() == DType::Bool)
    b.fail("values " + describe(values) + " must be numeric");
  for (int64_t d : values.shape())
    if (d == shape::kUnknownDim)
      b.fail("values " + describe(values) +
             " must have a static shape (the state has the values' shape)");
  Tensor v = Builder::toFloat(values);
  Variable total = b.state("total_tensor", v.shape());
  Variable count = b.state("count_tensor", v.shape());
  Tensor num = ones_like(v);
  if (Tensor w = b.weightsFor(v, weights); w.valid()) {
    v = multiply(v, w);
    num = w;
  }
  Operation updateTotal = accumulate(total, v, "update_total");
  Operation updateCount = accumulate(count, num, "update_count");
  return Metric{safeDiv(total.read(), count.read(), "value"),
                {updateTotal, updateCount}};
}

Metric percentage_below(const Tensor &values, double threshold,
                        const Tensor &weights, const std::string &name) {
  Builder b("percentage_below", values, name, "percentage_below_threshold");
  b.requireValue(values, "values");
  if (values.dtype() == DType::Bool)
    b.fail("values " + describe(values) + " must be numeric");
  if (is_integer(values.dtype()) && threshold != std::floor(threshold))
    b.fail("threshold " + std::to_string(threshold) +
           " is not a value of values " + describe(values));
  Tensor below = cast(less(values, threshold), DType::Float32);
  return streamingMean(b, below, b.weightsFor(below, weights));
}

// --- At a sensitivity or specificity
// ----------------------------------------------

Metric sensitivity_at_specificity(const Tensor &labels,
                                  const Tensor &predictions, double specificity,
                                  const Tensor &weights, int64_t num_thresholds,
                                  const std::string &name) {
  Builder b("sensitivity_at_specificity", labels.valid() ? labels : predictions,
            name, "sensitivity_at_specificity");
  ThresholdCounts c =
      countsForRate(b, labels, predictions, weights, num_thresholds,
                    specificity, "specificity", 1.0 + 1e-7);
  Tensor tp = c.read(Cell::TP), fn = c.read(Cell::FN), tn = c.read(Cell::TN),
         fp = c.read(Cell::FP);
  const double kEpsilon = 1e-7;
  Tensor specificities = divide(tn, add(tn, fp) + kEpsilon);
  // The first threshold nearest the specificity (TF's argmin).
  Tensor index = argmin(abs(specificities - specificity), 0);
  Tensor tpAt = gather(tp, index), fnAt = gather(fn, index);
  return Metric{divide(tpAt, add(tpAt, fnAt) + kEpsilon, "value"), c.updates};
}

Metric specificity_at_sensitivity(const Tensor &labels,
                                  const Tensor &predictions, double sensitivity,
                                  const Tensor &weights, int64_t num_thresholds,
                                  const std::string &name) {
  Builder b("specificity_at_sensitivity", labels.valid() ? labels : predictions,
            name, "specificity_at_sensitivity");
  ThresholdCounts c =
      countsForRate(b, labels, predictions, weights, num_thresholds,
                    sensitivity, "sensitivity", 1.0 - 1e-7);
  Tensor tp = c.read(Cell::TP), fn = c.read(Cell::FN), tn = c.read(Cell::TN),
         fp = c.read(Cell::FP);
  const double kEpsilon = 1e-7;
  Tensor sensitivities = divide(tp, add(tp, fn) + kEpsilon);
  // The last threshold nearest the sensitivity (TF's argmax of the cumsum
  // of the indicator of the nearest ones).
  Tensor distance = abs(sensitivities - sensitivity);
  Tensor nearest = equal(distance, reduce_min(distance));
  auto T = static_cast<int64_t>(tp.shape()[0]);
  std::vector<double> positions(T);
  for (int64_t i = 0; i < T; ++i)
    positions[i] = static_cast<double>(i);
  Tensor index =
      cast(reduce_max(where(nearest, b.graph().constant(positions, {T}), 0.0)),
           DType::Int64);
  Tensor tnAt = gather(tn, index), fpAt = gather(fp, index);
  return Metric{divide(tnAt, add(tnAt, fpAt) + kEpsilon, "value"), c.updates};
}

} // namespace metrics
} // namespace estc
