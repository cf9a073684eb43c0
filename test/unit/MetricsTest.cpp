//===- MetricsTest.cpp - Streaming metrics, compiled and run ------------===//
//
// Every metric of lib/Graph/Metrics.h in one EVAL graph, compiled by the JIT,
// fed fixed data in batches of 8, 8 and 7 (a partial last batch), then
// compared with values computed here independently, in double, by plain
// loops and textbook formulas (Mann-Whitney for ROC AUC, sorted top-k, a
// confusion matrix): every metric unweighted and weighted. Hand-worked AUC
// examples, and reset_local_variables() between evaluations.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace estc {
namespace {

using namespace estc::testing;

constexpr int64_t kClasses = 4;
const std::vector<double> kThresholds = {0.0, 0.3, 0.5, 0.9};

/// One evaluation's data, as the compiled model sees it (f32 / i64).
struct Data {
  std::vector<int64_t> labels;  // class ids in [0, kClasses)
  std::vector<int64_t> cls;     // predicted class ids
  std::vector<int64_t> bin;     // binary labels 0/1
  std::vector<int64_t> binpred; // 0, 1 or 2 (non-zero = true)
  std::vector<float> p;         // probabilities in [0, 1], 0 and 1 included
  std::vector<float> scores;    // [N, kClasses], with ties
  std::vector<float> y, yhat;   // regression
  std::vector<float> w;         // weights in {0, 0.5, 1, 2}
  size_t size() const { return labels.size(); }
};

Data makeData(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  Data d;
  const float weights[] = {0.0f, 0.5f, 1.0f, 2.0f};
  for (size_t i = 0; i < n; ++i) {
    d.labels.push_back(uniform(0, kClasses - 1));
    d.cls.push_back(uniform(0, 2) == 0 ? d.labels.back()
                                       : uniform(0, kClasses - 1));
    d.bin.push_back(uniform(0, 1));
    d.binpred.push_back(uniform(0, 2));
    // Multiples of 1/20: ties between examples, exactly 0 and 1 too.
    d.p.push_back(static_cast<float>(uniform(0, 20)) / 20.0f);
    for (int64_t c = 0; c < kClasses; ++c)
      d.scores.push_back(static_cast<float>(uniform(0, 4)) * 0.25f);
    // Half the time the label gets the top score (perhaps tied with others).
    if (uniform(0, 1))
      d.scores[i * kClasses + d.labels.back()] = 1.0f;
    d.y.push_back(static_cast<float>(uniform(-8, 8)) * 0.5f);
    d.yhat.push_back(static_cast<float>(uniform(-8, 8)) * 0.375f);
    d.w.push_back(weights[uniform(0, 3)]);
  }
  return d;
}

// --- Independent expectations (double, plain loops)
// -------------------------------

using Weights = std::vector<double>; // one per example

Weights unitWeights(const Data &d) { return Weights(d.size(), 1.0); }
Weights dataWeights(const Data &d) { return Weights(d.w.begin(), d.w.end()); }

double weightedMean(const std::vector<double> &v, const Weights &w) {
  double num = 0, den = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    num += w[i] * v[i];
    den += w[i];
  }
  return den > 0 ? num / den : 0.0;
}

struct Counts {
  double tp = 0, fp = 0, tn = 0, fn = 0;
};

/// Confusion counts of (label, prediction) pairs of truth values.
Counts confusion(const std::vector<bool> &label, const std::vector<bool> &pred,
                 const Weights &w) {
  Counts c;
  for (size_t i = 0; i < label.size(); ++i) {
    if (label[i] && pred[i])
      c.tp += w[i];
    else if (!label[i] && pred[i])
      c.fp += w[i];
    else if (!label[i] && !pred[i])
      c.tn += w[i];
    else
      c.fn += w[i];
  }
  return c;
}

std::vector<bool> nonZero(const std::vector<int64_t> &v) {
  std::vector<bool> out;
  for (int64_t x : v)
    out.push_back(x != 0);
  return out;
}

/// Counts at each threshold: prediction > threshold (both as f32).
std::vector<Counts> countsAtThresholds(const std::vector<bool> &label,
                                       const std::vector<float> &p,
                                       const std::vector<double> &thresholds,
                                       const Weights &w) {
  std::vector<Counts> out;
  for (double t : thresholds) {
    std::vector<bool> pred;
    for (float x : p)
      pred.push_back(x > static_cast<float>(t));
    out.push_back(confusion(label, pred, w));
  }
  return out;
}

std::vector<double> aucThresholds(int64_t n) {
  std::vector<double> t = {-1e-7};
  for (int64_t i = 0; i < n - 2; ++i)
    t.push_back((i + 1) * 1.0 / static_cast<double>(n - 1));
  t.push_back(1.0 + 1e-7);
  return t;
}

/// TF's AUC formulas, written out per threshold.
double tfAuc(const std::vector<bool> &label, const std::vector<float> &p,
             const Weights &w, const std::string &curve,
             const std::string &method,
             std::vector<double> thresholds = aucThresholds(200)) {
  std::vector<Counts> c = countsAtThresholds(label, p, thresholds, w);
  size_t T = c.size();
  double area = 0;
  if (curve == "PR" && method == "careful_interpolation") {
    auto divNoNan = [](double a, double b) { return b == 0 ? 0.0 : a / b; };
    for (size_t i = 0; i + 1 < T; ++i) {
      double dtp = c[i].tp - c[i + 1].tp;
      double p0 = c[i].tp + c[i].fp, p1 = c[i + 1].tp + c[i + 1].fp;
      double slope = divNoNan(dtp, std::max(p0 - p1, 0.0));
      double intercept = c[i + 1].tp - slope * p1;
      double ratio = p0 > 0 && p1 > 0 ? divNoNan(p0, std::max(p1, 0.0)) : 1.0;
      area += divNoNan(slope * (dtp + intercept * std::log(ratio)),
                       std::max(c[i + 1].tp + c[i + 1].fn, 0.0));
    }
    return area;
  }
  const double e = 1e-6;
  std::vector<double> x(T), y(T);
  for (size_t i = 0; i < T; ++i) {
    double rec = (c[i].tp + e) / (c[i].tp + c[i].fn + e);
    if (curve == "ROC") {
      x[i] = c[i].fp / (c[i].fp + c[i].tn + e);
      y[i] = rec;
    } else {
      x[i] = rec;
      y[i] = (c[i].tp + e) / (c[i].tp + c[i].fp + e);
    }
  }
  for (size_t i = 0; i + 1 < T; ++i) {
    double h = method == "minoring"   ? std::min(y[i], y[i + 1])
               : method == "majoring" ? std::max(y[i], y[i + 1])
                                      : (y[i] + y[i + 1]) / 2;
    area += (x[i] - x[i + 1]) * h;
  }
  return area;
}

/// ROC AUC as the (weighted) Mann-Whitney statistic: the chance that a
/// positive scores above a negative, ties counting one half.
double mannWhitney(const std::vector<bool> &label, const std::vector<float> &p,
                   const Weights &w) {
  double num = 0, pos = 0, neg = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    (label[i] ? pos : neg) += w[i];
    if (!label[i])
      continue;
    for (size_t j = 0; j < label.size(); ++j) {
      if (label[j])
        continue;
      num += w[i] * w[j] * (p[i] > p[j] ? 1.0 : p[i] == p[j] ? 0.5 : 0.0);
    }
  }
  return num / (pos * neg);
}

/// Whether class `c` is among the k best classes of example i in
/// tf.nn.top_k's order (descending score, equal scores by ascending id).
bool classInTopK(const Data &d, size_t i, int64_t c, int64_t k) {
  std::vector<int64_t> order(kClasses);
  std::iota(order.begin(), order.end(), 0);
  const float *s = &d.scores[i * kClasses];
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return s[a] > s[b]; });
  return std::find(order.begin(), order.begin() + k, c) != order.begin() + k;
}

bool inTopK(const Data &d, size_t i, int64_t k) {
  return classInTopK(d, i, d.labels[i], k);
}

/// Binary in class c: {tp, fp, fn}.
std::vector<double> classCountsAtK(const Data &d, int64_t c, int64_t k,
                                   const Weights &w) {
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    bool in = classInTopK(d, i, c, k), is = d.labels[i] == c;
    if (is && in)
      tp += w[i];
    else if (in)
      fp += w[i];
    else if (is)
      fn += w[i];
  }
  return {tp, fp, fn};
}

double precisionAtK(const Data &d, int64_t k, const Weights &w) {
  double tp = 0, fp = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    double hit = inTopK(d, i, k) ? 1.0 : 0.0;
    tp += w[i] * hit;
    fp += w[i] * (static_cast<double>(k) - hit);
  }
  return tp / (tp + fp);
}

double recallAtK(const Data &d, int64_t k, const Weights &w) {
  double tp = 0, fn = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    bool hit = inTopK(d, i, k);
    (hit ? tp : fn) += w[i];
  }
  return tp / (tp + fn);
}

/// cm[label][prediction].
std::vector<std::vector<double>> confusionMatrix(const Data &d,
                                                 const Weights &w) {
  std::vector<std::vector<double>> cm(kClasses,
                                      std::vector<double>(kClasses, 0.0));
  for (size_t i = 0; i < d.size(); ++i)
    cm[d.labels[i]][d.cls[i]] += w[i];
  return cm;
}

double meanPerClassAccuracy(const Data &d, const Weights &w) {
  auto cm = confusionMatrix(d, w);
  double sum = 0;
  for (int64_t c = 0; c < kClasses; ++c) {
    double total = std::accumulate(cm[c].begin(), cm[c].end(), 0.0);
    sum += total > 0 ? cm[c][c] / total : 0.0;
  }
  return sum / kClasses;
}

double meanIou(const Data &d, const Weights &w) {
  auto cm = confusionMatrix(d, w);
  double sum = 0;
  int valid = 0;
  for (int64_t c = 0; c < kClasses; ++c) {
    double row = 0, col = 0;
    for (int64_t j = 0; j < kClasses; ++j) {
      row += cm[c][j];
      col += cm[j][c];
    }
    double uni = row + col - cm[c][c];
    if (uni != 0) {
      sum += cm[c][c] / uni;
      ++valid;
    }
  }
  return valid ? sum / valid : 0.0;
}

/// Every metric's expected value: one double per element.
std::map<std::string, std::vector<double>> expectations(const Data &d) {
  std::map<std::string, std::vector<double>> out;
  std::vector<bool> bin = nonZero(d.bin), binpred = nonZero(d.binpred);
  for (bool weighted : {false, true}) {
    Weights w = weighted ? dataWeights(d) : unitWeights(d);
    std::string sfx = weighted ? "_w" : "";
    auto set = [&](const std::string &k, std::vector<double> v) {
      out[k + sfx] = std::move(v);
    };
    std::vector<double> correct, values, sq, absd;
    for (size_t i = 0; i < d.size(); ++i) {
      correct.push_back(d.cls[i] == d.labels[i] ? 1.0 : 0.0);
      values.push_back(d.yhat[i]);
      double diff = static_cast<double>(d.y[i]) - d.yhat[i];
      sq.push_back(diff * diff);
      absd.push_back(std::fabs(diff));
    }
    set("accuracy", {weightedMean(correct, w)});
    set("mean", {weightedMean(values, w)});
    set("mean_squared_error", {weightedMean(sq, w)});
    set("root_mean_squared_error", {std::sqrt(weightedMean(sq, w))});
    set("mean_absolute_error", {weightedMean(absd, w)});
    Counts c = confusion(bin, binpred, w);
    set("true_positives", {c.tp});
    set("false_positives", {c.fp});
    set("true_negatives", {c.tn});
    set("false_negatives", {c.fn});
    set("precision", {c.tp + c.fp > 0 ? c.tp / (c.tp + c.fp) : 0.0});
    set("recall", {c.tp + c.fn > 0 ? c.tp / (c.tp + c.fn) : 0.0});
    std::vector<Counts> at = countsAtThresholds(bin, d.p, kThresholds, w);
    std::vector<double> tp, fp, tn, fn, prec, rec;
    for (const Counts &x : at) {
      tp.push_back(x.tp);
      fp.push_back(x.fp);
      tn.push_back(x.tn);
      fn.push_back(x.fn);
      prec.push_back(x.tp / (x.tp + x.fp + 1e-7));
      rec.push_back(x.tp / (x.tp + x.fn + 1e-7));
    }
    set("true_positives_at_thresholds", tp);
    set("false_positives_at_thresholds", fp);
    set("true_negatives_at_thresholds", tn);
    set("false_negatives_at_thresholds", fn);
    set("precision_at_thresholds", prec);
    set("recall_at_thresholds", rec);
    set("auc", {tfAuc(bin, d.p, w, "ROC", "trapezoidal")});
    set("auc_pr", {tfAuc(bin, d.p, w, "PR", "trapezoidal")});
    set("auc_pr_careful", {tfAuc(bin, d.p, w, "PR", "careful_interpolation")});
    set("auc_minoring", {tfAuc(bin, d.p, w, "ROC", "minoring")});
    set("auc_majoring", {tfAuc(bin, d.p, w, "ROC", "majoring")});
    set("mean_per_class_accuracy", {meanPerClassAccuracy(d, w)});
    set("mean_iou", {meanIou(d, w)});
    set("precision_at_1", {precisionAtK(d, 1, w)});
    set("recall_at_1", {recallAtK(d, 1, w)});
    set("precision_at_2", {precisionAtK(d, 2, w)});
    set("recall_at_2", {recallAtK(d, 2, w)});
    for (auto [c, k] : {std::pair<int64_t, int64_t>{1, 2}, {3, 1}}) {
      std::vector<double> n = classCountsAtK(d, c, k, w);
      std::string at =
          "_at_" + std::to_string(k) + "_class" + std::to_string(c);
      set("precision" + at, {n[0] / (n[0] + n[1])});
      set("recall" + at, {n[0] / (n[0] + n[2])});
    }
    set("auc_thresholds", {tfAuc(bin, d.p, w, "ROC", "trapezoidal",
                                 {-1e-7, 0.25, 0.5, 0.75, 1 + 1e-7})});
  }
  return out;
}

// --- The graph
// --------------------------------------------------------------------

const Dims kB = {-1};

graph::GraphDef metricsGraph() {
  Graph graph;
  InputSpec inputs;
  inputs.features = {{"cls", DType::Int64, kB},
                     {"bin", DType::Int64, kB},
                     {"binpred", DType::Int64, kB},
                     {"p", DType::Float32, kB},
                     {"scores", DType::Float32, {-1, kClasses}},
                     {"y", DType::Float32, kB},
                     {"yhat", DType::Float32, kB},
                     {"w", DType::Float32, kB}};
  inputs.labels = TensorSpec{"labels", DType::Int64, kB};
  build_mode(
      graph, ModeKeys::EVAL, inputs,
      [](Graph &, const TensorMap &f, const Tensor &labels, ModeKeys) {
        Signature s;
        s.loss = reduce_mean(f["p"]);
        for (bool weighted : {false, true}) {
          Tensor w = weighted ? f["w"] : Tensor();
          std::string sfx = weighted ? "_w" : "";
          auto add = [&](const std::string &key, Metric m) {
            s.metrics.push_back({key + sfx, m});
          };
          Tensor bin = f["bin"], binpred = f["binpred"], p = f["p"];
          add("accuracy", metrics::accuracy(labels, f["cls"], w));
          add("mean", metrics::mean(f["yhat"], w));
          add("mean_squared_error",
              metrics::mean_squared_error(f["y"], f["yhat"], w));
          add("root_mean_squared_error",
              metrics::root_mean_squared_error(f["y"], f["yhat"], w));
          add("mean_absolute_error",
              metrics::mean_absolute_error(f["y"], f["yhat"], w));
          add("true_positives", metrics::true_positives(bin, binpred, w));
          add("false_positives", metrics::false_positives(bin, binpred, w));
          add("true_negatives", metrics::true_negatives(bin, binpred, w));
          add("false_negatives", metrics::false_negatives(bin, binpred, w));
          add("precision", metrics::precision(bin, binpred, w));
          add("recall", metrics::recall(bin, binpred, w));
          add("true_positives_at_thresholds",
              metrics::true_positives_at_thresholds(bin, p, kThresholds, w));
          add("false_positives_at_thresholds",
              metrics::false_positives_at_thresholds(bin, p, kThresholds, w));
          add("true_negatives_at_thresholds",
              metrics::true_negatives_at_thresholds(bin, p, kThresholds, w));
          add("false_negatives_at_thresholds",
              metrics::false_negatives_at_thresholds(bin, p, kThresholds, w));
          add("precision_at_thresholds",
              metrics::precision_at_thresholds(bin, p, kThresholds, w));
          add("recall_at_thresholds",
              metrics::recall_at_thresholds(bin, p, kThresholds, w));
          add("auc", metrics::auc(bin, p, w));
          add("auc_pr", metrics::auc(bin, p, w, 200, "PR"));
          add("auc_pr_careful",
              metrics::auc(bin, p, w, 200, "PR", "", "careful_interpolation"));
          add("auc_minoring",
              metrics::auc(bin, p, w, 200, "ROC", "", "minoring"));
          add("auc_majoring",
              metrics::auc(bin, p, w, 200, "ROC", "", "majoring"));
          // The confusion-matrix metrics check their class ids at run time;
          // the hand-worked top-k case feeds label 7 (no class), so they
          // see min(label, kClasses - 1). Random labels are all in range.
          Tensor classIds = minimum(labels, double(kClasses - 1));
          add("mean_per_class_accuracy", metrics::mean_per_class_accuracy(
                                             classIds, f["cls"], kClasses, w));
          add("mean_iou", metrics::mean_iou(classIds, f["cls"], kClasses, w));
          add("precision_at_1",
              metrics::precision_at_k(labels, f["scores"], 1, std::nullopt, w));
          add("recall_at_1",
              metrics::recall_at_k(labels, f["scores"], 1, std::nullopt, w));
          add("precision_at_2",
              metrics::precision_at_k(labels, f["scores"], 2, std::nullopt, w));
          add("recall_at_2",
              metrics::recall_at_k(labels, f["scores"], 2, std::nullopt, w));
          add("precision_at_2_class1",
              metrics::precision_at_k(labels, f["scores"], 2, 1, w));
          add("recall_at_2_class1",
              metrics::recall_at_k(labels, f["scores"], 2, 1, w));
          add("precision_at_1_class3",
              metrics::precision_at_k(labels, f["scores"], 1, 3, w));
          add("recall_at_1_class3",
              metrics::recall_at_k(labels, f["scores"], 1, 3, w));
          add("auc_thresholds", metrics::auc(bin, p, w, 200, "ROC", "",
                                             "trapezoidal", {0.75, 0.25, 0.5}));
        }
        return s;
      });
  return graph.graph_def();
}

// --- Running it
// -------------------------------------------------------------------

class Evaluation {
public:
  explicit Evaluation(JitModel &model)
      : model_(model), eval_(model.function_index("eval")),
        metrics_(model.function_index("eval_metrics")) {}

  /// Runs @eval on examples [begin, end) of `d`.
  void update(const Data &d, size_t begin, size_t end) {
    int64_t n = static_cast<int64_t>(end - begin);
    model_.set_batch(n);
    auto put = [&](const std::string &key, const auto &values, size_t width) {
      int input = model_.input_index(eval_, key);
      std::memcpy(model_.input_data(eval_, input),
                  values.data() + begin * width, n * width * sizeof(values[0]));
    };
    put("labels", d.labels, 1);
    put("features/cls", d.cls, 1);
    put("features/bin", d.bin, 1);
    put("features/binpred", d.binpred, 1);
    put("features/p", d.p, 1);
    put("features/scores", d.scores, kClasses);
    put("features/y", d.y, 1);
    put("features/yhat", d.yhat, 1);
    put("features/w", d.w, 1);
    model_.run(eval_);
  }

  /// Runs @eval_metrics and reads metric `key`.
  std::vector<double> value(const std::string &key) {
    model_.run(metrics_);
    const rt::FunctionSpec &fn = model_.spec().functions[metrics_];
    int out = model_.output_index(metrics_, "metrics/" + key);
    const rt::TensorSpec &t = fn.outputs[out];
    int64_t count = rt::numElements(t.rank, t.shape, 0);
    const void *data = model_.output_data(metrics_, out);
    std::vector<double> v;
    for (int64_t i = 0; i < count; ++i)
      v.push_back(t.dtype == rt::DType::F64
                      ? static_cast<const double *>(data)[i]
                      : static_cast<const float *>(data)[i]);
    return v;
  }

private:
  JitModel &model_;
  int eval_, metrics_;
};

void expectNear(const std::vector<double> &got, const std::vector<double> &want,
                const std::string &key, double tolerance = 2e-6) {
  ASSERT_EQ(got.size(), want.size()) << key;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance * std::max(1.0, std::fabs(want[i])))
        << key << "[" << i << "]";
}

class Metrics : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    model_ = jitCompileForTest(metricsGraph(), "Metrics").release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static JitModel *model_;
};
JitModel *Metrics::model_ = nullptr;

TEST_F(Metrics, EveryMetricOverBatchesWithAPartialLastBatch) {
  ASSERT_NE(model_, nullptr);
  Data d = makeData(23, 5);
  auto want = expectations(d);
  model_->reset_local_variables();
  Evaluation e(*model_);
  e.update(d, 0, 8);
  e.update(d, 8, 16);
  e.update(d, 16, 23); // partial
  for (const auto &[key, value] : want) {
    SCOPED_TRACE(key);
    expectNear(e.value(key), value, key);
  }
  // The data has both classes, ties and 0/1 probabilities, so the bucketed
  // ROC AUC is the Mann-Whitney statistic (up to TF's 1e-6 epsilons).
  std::vector<bool> bin = nonZero(d.bin);
  expectNear(e.value("auc"), {mannWhitney(bin, d.p, unitWeights(d))}, "auc",
             1e-5);
  expectNear(e.value("auc_w"), {mannWhitney(bin, d.p, dataWeights(d))}, "auc_w",
             1e-5);

  // Other data, one example per step: batching does not change results.
  Data d2 = makeData(23, 9);
  auto want2 = expectations(d2);
  model_->reset_local_variables();
  for (size_t i = 0; i < d2.size(); ++i)
    e.update(d2, i, i + 1);
  for (const auto &[key, value] : want2) {
    SCOPED_TRACE(key + " (batches of 1)");
    expectNear(e.value(key), value, key);
  }
}

/// Hand-worked: labels [1, 0, 1], scores [0.9, 0.6, 0.3].
/// ROC: of the two (positive, negative) pairs, (0.9, 0.6) is ordered and
/// (0.3, 0.6) is not: AUC = 1/2.
/// PR (thresholds low to high): recall 1 at precision 2/3, recall 1/2 at
/// precision 1/2, recall 1/2 at precision 1, recall 0 at precision 1:
/// trapezoids (1 - 1/2)(2/3 + 1/2)/2 + (1/2 - 0)(1 + 1)/2 = 7/24 + 1/2.
TEST_F(Metrics, HandWorkedAucAndResetBetweenEvaluations) {
  ASSERT_NE(model_, nullptr);
  // Something in every metric's state first: reset must clear it.
  Data noise = makeData(8, 3);
  Evaluation e(*model_);
  e.update(noise, 0, 8);
  EXPECT_NE(e.value("true_positives_at_thresholds")[0], 0.0);

  Data d = makeData(3, 1);
  d.bin = {1, 0, 1};
  d.p = {0.9f, 0.6f, 0.3f};
  d.w = {1.0f, 1.0f, 1.0f};
  model_->reset_local_variables();
  e.update(d, 0, 3);
  expectNear(e.value("auc"), {0.5}, "auc", 1e-5);
  expectNear(e.value("auc_pr"), {7.0 / 24 + 0.5}, "auc_pr", 1e-5);
  expectNear(e.value("auc_w"), {0.5}, "auc_w", 1e-5);
  // Counts at 0.0, 0.3, 0.5, 0.9: 0.3 > 0.3 is false.
  expectNear(e.value("true_positives_at_thresholds"), {2, 1, 1, 0},
             "true_positives_at_thresholds");
  expectNear(e.value("false_positives_at_thresholds"), {1, 1, 1, 0},
             "false_positives_at_thresholds");

  // A weight of 2 on the last positive: 2 of 3 weighted pairs misordered.
  d.w = {1.0f, 1.0f, 2.0f};
  model_->reset_local_variables();
  e.update(d, 0, 3);
  expectNear(e.value("auc_w"), {1.0 / 3}, "auc_w", 1e-5);
  expectNear(e.value("true_positives_at_thresholds_w"), {3, 1, 1, 0},
             "true_positives_at_thresholds_w");

  // Top k by hand. Example 0: label 0 has the best score. Example 1: label
  // 7 is no class (k false positives, and a false negative: TF's set
  // difference keeps it). Example 2: label 1 ties class 0, which comes
  // first (tf.nn.top_k), so it is second.
  d.labels = {0, 7, 1};
  d.scores = {1, 0, 0, 0, /**/ 0, 1, 0, 0, /**/ 0.5, 0.5, 0, 0};
  model_->reset_local_variables();
  e.update(d, 0, 3);
  expectNear(e.value("precision_at_1"), {1.0 / 3}, "precision_at_1"); // 1/(1+2)
  expectNear(e.value("recall_at_1"), {1.0 / 3}, "recall_at_1");       // 1/(1+2)
  expectNear(e.value("precision_at_2"), {1.0 / 3}, "precision_at_2"); // 2/(2+4)
  expectNear(e.value("recall_at_2"), {2.0 / 3}, "recall_at_2");
  expectNear(e.value("recall_at_2_w"), {0.75}, "recall_at_2_w"); // w = 1, 1, 2
  // Class 1 is in every example's top 2 (second, first, second by id) and
  // the label of example 2 only.
  expectNear(e.value("precision_at_2_class1"), {1.0 / 3},
             "precision_at_2_class1");
  expectNear(e.value("recall_at_2_class1"), {1.0}, "recall_at_2_class1");
  // tp = 1; fp = 1 * 0 + 1 * 1 + 2 * 1.
  expectNear(e.value("precision_at_1_w"), {0.25}, "precision_at_1_w");
}

TEST_F(Metrics, EmptyEvaluationAndLocalState) {
  ASSERT_NE(model_, nullptr);
  model_->reset_local_variables();
  Evaluation e(*model_);
  // Means and ratios are 0 before any example; the _at_k ratios NaN (TF
  // divides plainly).
  for (const char *key : {"accuracy", "mean", "precision", "recall", "mean_iou",
                          "mean_per_class_accuracy", "root_mean_squared_error"})
    expectNear(e.value(key), {0.0}, key);
  expectNear(e.value("true_positives_at_thresholds"), {0, 0, 0, 0},
             "true_positives_at_thresholds");
  EXPECT_TRUE(std::isnan(e.value("precision_at_1")[0]));
  EXPECT_TRUE(std::isnan(e.value("recall_at_2")[0]));

  // Every piece of state is a local variable named like TF's.
  const rt::ModelSpec &spec = model_->spec();
  std::map<std::string, const rt::VariableSpec *> vars;
  for (int32_t i = 0; i < spec.numVariables; ++i)
    vars[spec.variables[i].name] = &spec.variables[i];
  for (const char *name : {"accuracy/total",
                           "accuracy/count",
                           "mean/total",
                           "precision/true_positives/count",
                           "precision/false_positives/count",
                           "recall/false_negatives/count",
                           "true_positives/count",
                           "auc/true_positives",
                           "auc/false_negatives",
                           "auc/true_negatives",
                           "auc/false_positives",
                           "precision_at_thresholds/true_positives",
                           "mean_squared_error/total",
                           "root_mean_squared_error/count",
                           "mean_accuracy/total",
                           "mean_accuracy/count",
                           "mean_iou/total_confusion_matrix",
                           "precision_at_1/true_positive_at_1",
                           "precision_at_1/false_positive_at_1",
                           "recall_at_2/true_positive_at_2",
                           "recall_at_2/false_negative_at_2",
                           "accuracy_1/total",
                           "precision_at_2_class1/true_positive_at_2_class1",
                           "recall_at_1_class3/false_negative_at_1_class3"}) {
    ASSERT_TRUE(vars.count(name)) << name;
    EXPECT_TRUE(vars[name]->local) << name;
    EXPECT_FALSE(vars[name]->trainable) << name;
  }
  EXPECT_EQ(vars["auc/true_positives"]->shape[0], 200);
  EXPECT_EQ(vars["auc_5/true_positives"]->shape[0], 5); // auc_thresholds
  EXPECT_EQ(vars["mean_iou/total_confusion_matrix"]->dtype, rt::DType::F64);
  EXPECT_EQ(vars["recall_at_2/true_positive_at_2"]->dtype, rt::DType::F64);
  // No state besides the metrics' (an EVAL graph has no global_step here).
  for (const auto &[name, v] : vars)
    EXPECT_TRUE(v->local) << name;
}

/// The top-k, average precision, cosine, relative error, mean_tensor,
/// percentage_below and sensitivity / specificity metrics on one
/// hand-worked batch of 3 (values as TF 2.15 computes them; the TF oracle,
/// test/e2e/tf_metrics_compat.py, compares them on random batches).
/// Scores [0.9, 0.5, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.3]: top 2 = {0, 1},
/// {2, 0} (0 ties 1 and comes first), {0, 1}. Label sets {1} (repeated),
/// {0, 5} (5 is no class), {2, -1}.
TEST(MetricsHandWorked, TopKAndMeans) {
  Graph graph;
  InputSpec inputs;
  inputs.features = {
      {"multi", DType::Int64, {-1, 2}},  {"scores", DType::Float32, {-1, 3}},
      {"idx", DType::Int64, {-1, 2}},    {"bin", DType::Int64, {-1}},
      {"p", DType::Float32, {-1}},       {"y", DType::Float32, {-1, 2}},
      {"yhat", DType::Float32, {-1, 2}}, {"norm", DType::Float32, {-1, 2}}};
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  build_mode(
      graph, ModeKeys::EVAL, inputs,
      [](Graph &, const TensorMap &f, const Tensor &, ModeKeys) {
        Signature s;
        s.loss = reduce_mean(f["p"]);
        auto add = [&](const std::string &key, Metric m) {
          s.metrics.push_back({key, m});
        };
        Tensor multi = f["multi"], scores = f["scores"], idx = f["idx"];
        add("ap2", metrics::average_precision_at_k(multi, scores, 2));
        add("sp2", metrics::sparse_precision_at_k(multi, scores, 2));
        add("r2", metrics::recall_at_k(multi, scores, 2));
        add("ptk", metrics::precision_at_top_k(multi, idx));
        add("rtk", metrics::recall_at_top_k(multi, idx));
        add("ptk0", metrics::precision_at_top_k(multi, idx, 2, 0));
        add("rtk0", metrics::recall_at_top_k(multi, idx, 2, 0));
        add("cos", metrics::mean_cosine_distance(f["y"], f["yhat"], 1));
        add("rel", metrics::mean_relative_error(f["y"], f["yhat"], f["norm"]));
        add("mt", metrics::mean_tensor(reduce_sum(f["yhat"], Dims{0})));
        add("pb", metrics::percentage_below(f["p"], 0.5));
        add("ss",
            metrics::sensitivity_at_specificity(f["bin"], f["p"], 0.5, {}, 3));
        add("sp",
            metrics::specificity_at_sensitivity(f["bin"], f["p"], 0.25, {}, 3));
        return s;
      });
  std::unique_ptr<JitModel> model =
      jitCompileForTest(graph.graph_def(), "MetricsHandWorked");
  ASSERT_NE(model, nullptr);
  model->reset_local_variables();
  int eval = model->function_index("eval");
  int values = model->function_index("eval_metrics");
  auto value = [&](const std::string &key) {
    model->run(values);
    int out = model->output_index(values, "metrics/" + key);
    const rt::TensorSpec &t = model->spec().functions[values].outputs[out];
    const void *data = model->output_data(values, out);
    std::vector<double> v;
    for (int64_t i = 0; i < rt::numElements(t.rank, t.shape, 0); ++i)
      v.push_back(t.dtype == rt::DType::F64
                      ? static_cast<const double *>(data)[i]
                      : static_cast<const float *>(data)[i]);
    return v;
  };
  // The state: local variables named like TF's.
  std::map<std::string, const rt::VariableSpec *> vars;
  for (int32_t i = 0; i < model->spec().numVariables; ++i)
    vars[model->spec().variables[i].name] = &model->spec().variables[i];
  for (const char *name :
       {"average_precision_at_2/max", "average_precision_at_2/total",
        "precision_at_2/true_positive_at_2",
        "precision_at_2/false_positive_at_2", "recall_at_2/false_negative_at_2",
        "precision_at_k/true_positive_at_k",
        "precision_at_k/false_positive_at_k", "recall_at_k/false_negative_at_k",
        "precision_at_2_class0/true_positive_at_2_class0",
        "recall_at_2_class0/false_negative_at_2_class0",
        "mean_cosine_distance/total", "mean_relative_error/count",
        "mean/total_tensor", "mean/count_tensor",
        "percentage_below_threshold/total",
        "sensitivity_at_specificity/true_positives",
        "specificity_at_sensitivity/false_positives"}) {
    ASSERT_TRUE(vars.count(name)) << name;
    EXPECT_TRUE(vars[name]->local) << name;
  }
  EXPECT_EQ(vars["average_precision_at_2/max"]->dtype, rt::DType::F64);
  EXPECT_EQ(vars["mean/total_tensor"]->shape[0], 2);
  EXPECT_EQ(vars["sensitivity_at_specificity/true_positives"]->shape[0], 3);

  // Before any batch: the ratios NaN, the means 0 (cosine distance 1).
  EXPECT_TRUE(std::isnan(value("ptk")[0]));
  expectNear(value("ap2"), {0.0}, "ap2");
  expectNear(value("cos"), {1.0}, "cos");
  expectNear(value("mt"), {0.0, 0.0}, "mt");
  model->set_batch(3);
  auto put = [&](const std::string &key, const auto &v) {
    std::memcpy(model->input_data(eval, model->input_index(eval, key)),
                v.data(), v.size() * sizeof(v[0]));
  };
  put("labels", std::vector<int64_t>{0, 0, 0});
  put("features/multi", std::vector<int64_t>{1, 1, 0, 5, 2, -1});
  put("features/scores",
      std::vector<float>{0.9f, 0.5f, 0.1f, 0.2f, 0.2f, 0.6f, 0.3f, 0.3f, 0.3f});
  put("features/idx", std::vector<int64_t>{1, 1, 0, 7, 2, 2});
  put("features/bin", std::vector<int64_t>{1, 0, 1});
  put("features/p", std::vector<float>{0.1f, 0.6f, 0.7f});
  put("features/y", std::vector<float>{1, 0, 0, 1, 0.6f, 0.8f});
  put("features/yhat", std::vector<float>{1, 0, 1, 0, 0.6f, 0.8f});
  put("features/norm", std::vector<float>{2, 1, 0, 2, 1, 1});
  model->run(eval);
  // AP@2: {1} (counted twice in num_relevant, as TF) at position 2: 0.5/2;
  // {0} at position 2 of {2, 0}: 0.5/1; {2} not in {0, 1}: 0.
  expectNear(value("ap2"), {0.25}, "ap2");
  // tp 1 + 1 + 0, fp 1 + 1 + 2, fn 0 + 1 (label 5) + 2 (labels 2 and -1).
  expectNear(value("sp2"), {1.0 / 3}, "sp2");
  expectNear(value("r2"), {0.4}, "r2");
  // Given ids {1}, {0, 7}, {2}: tp 1 + 1 + 1, fp 0 + 1 + 0, fn 0 + 1 + 1.
  expectNear(value("ptk"), {0.75}, "ptk");
  expectNear(value("rtk"), {0.6}, "rtk");
  expectNear(value("ptk0"), {1.0}, "ptk0");
  expectNear(value("rtk0"), {1.0}, "rtk0");
  expectNear(value("cos"), {1.0 / 3}, "cos");  // 1 - (1 + 0 + 1) / 3
  expectNear(value("rel"), {1.0 / 12}, "rel"); // 0.5 / 6 (norm 0 -> 0)
  expectNear(value("mt"), {2.6, 0.8}, "mt");
  expectNear(value("pb"), {1.0 / 3}, "pb");
  // Thresholds -1e-7, 0.5, 1 + 1e-7: specificities 0, 0, 1/(1+1e-7): the
  // last is nearest 0.5, where the sensitivity is 0.
  expectNear(value("ss"), {0.0}, "ss");
  // Thresholds -1e-7, 0.5, 1 - 1e-7: sensitivities 1, 0.5, 0 tie at 0.25
  // from 0.25: the last one, specificity 1/(1+1e-7) (the first: 0).
  expectNear(value("sp"), {1.0 / (1.0 + 1e-7)}, "sp");
}

// --- Errors: one line naming the metric and its inputs
// ----------------------------

void expectError(const std::function<void()> &build,
                 std::vector<std::string> fragments) {
  try {
    build();
    ADD_FAILURE() << "no GraphError";
  } catch (const GraphError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const std::string &f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos)
          << "missing '" << f << "' in: " << msg;
  }
}

TEST(MetricsErrors, BadInputsAndOptions) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::EVAL);
  Tensor labels = g.placeholder("labels", DType::Int64, {-1});
  Tensor p = g.placeholder("p", DType::Float32, {-1});
  Tensor scores = g.placeholder("scores", DType::Float32, {-1, 5});
  Tensor wide = g.placeholder("wide", DType::Float32, {-1, 3});
  Tensor ids = g.placeholder("ids", DType::Int64, {-1});
  expectError([&] { metrics::accuracy(labels, scores); },
              {"metrics::accuracy 'accuracy'", "'eval/labels' i64 [?]",
               "'eval/scores' f32 [?,5]", "same shape"});
  expectError(
      [&] { metrics::mean(p, wide); },
      {"metrics::mean", "weights 'eval/wide' f32 [?,3]", "broadcastable"});
  expectError([&] { metrics::auc(labels, p, {}, 1); },
              {"metrics::auc", "num_thresholds must be > 1, got 1"});
  expectError([&] { metrics::auc(labels, p, {}, 200, "DET"); },
              {"curve must be \"ROC\" or \"PR\", got \"DET\""});
  expectError([&] { metrics::auc(labels, p, {}, 200, "ROC", "", "simpson"); },
              {"summation_method", "\"simpson\""});
  expectError([&] { metrics::auc(labels, ids); },
              {"metrics::auc", "predictions 'eval/ids' i64 [?] must be float"});
  expectError([&] { metrics::precision_at_thresholds(labels, p, {}); },
              {"precision_at_thresholds", "at least one threshold"});
  expectError([&] { metrics::mean_iou(labels, ids, 0); },
              {"metrics::mean_iou", "num_classes must be at least 1, got 0"});
  expectError([&] { metrics::mean_per_class_accuracy(labels, p, 3); },
              {"mean_per_class_accuracy", "predictions", "must be integer"});
  expectError(
      [&] { metrics::recall_at_k(labels, scores, 6); },
      {"metrics::recall_at_k 'recall_at_6'", "k must be in [1, 5], got 6"});
  expectError([&] { metrics::precision_at_k(labels, scores, 2, 5); },
              {"metrics::precision_at_k 'precision_at_2_class5'",
               "class_id must be in [0, 5), got 5"});
  expectError([&] { metrics::precision_at_k(labels, p, 1); },
              {"precision_at_k", "must be [batch, num_classes]"});
  expectError([&] { metrics::precision_at_k(p, scores, 1); },
              {"precision_at_k", "labels 'eval/p' f32 [?] must be integer"});
  expectError([&] { metrics::mean_squared_error(labels, ids); },
              {"mean_squared_error", "must be float"});
}

TEST(MetricsErrors, TopKAverageAndRateMetrics) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::EVAL);
  Tensor labels = g.placeholder("labels", DType::Int64, {-1});
  Tensor p = g.placeholder("p", DType::Float32, {-1});
  Tensor scores = g.placeholder("scores", DType::Float32, {-1, 5});
  Tensor idx = g.placeholder("idx", DType::Int64, {-1, 2});
  Tensor cube = g.placeholder("cube", DType::Int64, {-1, 2, 2});
  Tensor four = g.placeholder("four", DType::Int64, {4});
  Tensor three = g.placeholder("three", DType::Int64, {3, 2});
  Tensor wide = g.placeholder("wide", DType::Float32, {-1, 3});
  Tensor wider = g.placeholder("wider", DType::Float32, {-1, 4});
  Tensor ids = g.placeholder("ids", DType::Int64, {-1});
  // k <= 0.
  expectError([&] { metrics::precision_at_top_k(labels, idx, 0); },
              {"metrics::precision_at_top_k 'precision_at_0'",
               "k must be >= 1, got 0"});
  expectError([&] { metrics::average_precision_at_k(labels, scores, 0); },
              {"metrics::average_precision_at_k 'average_precision_at_0'",
               "k must be >= 1, got 0"});
  expectError(
      [&] { metrics::sparse_precision_at_k(labels, scores, -1); },
      {"metrics::sparse_precision_at_k", "k must be in [1, 5], got -1"});
  expectError(
      [&] { metrics::sparse_average_precision_at_k(labels, scores, 6); },
      {"metrics::sparse_average_precision_at_k", "k must be in [1, 5], got 6"});
  // Bad labels / ids dtypes.
  expectError([&] { metrics::recall_at_top_k(p, idx); },
              {"metrics::recall_at_top_k 'recall_at_k'",
               "labels 'eval/p' f32 [?] must be integer"});
  expectError([&] { metrics::precision_at_top_k(labels, scores); },
              {"predictions_idx 'eval/scores' f32 [?,5] must be integer"});
  expectError([&] { metrics::average_precision_at_k(p, scores, 2); },
              {"average_precision_at_k", "labels 'eval/p' f32 [?] must be "
                                         "integer"});
  expectError([&] { metrics::average_precision_at_k(labels, idx, 1); },
              {"average_precision_at_k", "predictions 'eval/idx' i64 [?,2] "
                                         "must be float"});
  // Shape mismatches.
  expectError([&] { metrics::recall_at_top_k(labels, ids); },
              {"predictions_idx 'eval/ids' i64 [?] must be [batch, k]"});
  expectError([&] { metrics::precision_at_top_k(cube, idx); },
              {"labels 'eval/cube' i64 [?,2,2] must be [D1, ..., DN] or [D1, "
               "..., DN, num_labels] class ids for predictions_idx 'eval/idx' "
               "i64 [?,2]"});
  expectError([&] { metrics::precision_at_top_k(four, three); },
              {"labels 'eval/four' i64 [4] and predictions_idx 'eval/three' "
               "i64 [3,2] must have the same leading dimensions"});
  expectError([&] { metrics::mean_cosine_distance(wide, wider, 1); },
              {"metrics::mean_cosine_distance 'mean_cosine_distance'",
               "'eval/wide' f32 [?,3]", "'eval/wider' f32 [?,4]",
               "same shape"});
  expectError([&] { metrics::mean_cosine_distance(wide, wide, 2); },
              {"mean_cosine_distance", "dim 2 is out of range for predictions "
                                       "'eval/wide' f32 [?,3] (rank 2)"});
  expectError([&] { metrics::mean_cosine_distance(wide, wide, 1, wide); },
              {"mean_cosine_distance", "weights 'eval/wide' f32 [?,3]",
               "broadcastable"});
  expectError([&] { metrics::mean_cosine_distance(ids, ids, 0); },
              {"mean_cosine_distance", "predictions", "must be float"});
  expectError([&] { metrics::mean_relative_error(wide, wide, wider); },
              {"metrics::mean_relative_error", "normalizer 'eval/wider' f32 "
                                               "[?,4] must have the shape of "
                                               "predictions 'eval/wide'"});
  expectError([&] { metrics::mean_relative_error(wide, wider, wider); },
              {"mean_relative_error", "same shape"});
  expectError([&] { metrics::mean_tensor(wide); },
              {"metrics::mean_tensor 'mean'", "values 'eval/wide' f32 [?,3] "
                                              "must have a static shape"});
  expectError([&] { metrics::mean_tensor(reduce_sum(wide, Dims{0}), four); },
              {"mean_tensor", "weights 'eval/four' i64 [4]", "broadcastable"});
  expectError([&] { metrics::percentage_below(ids, 0.5); },
              {"metrics::percentage_below 'percentage_below_threshold'",
               "threshold 0.500000 is not a value of values 'eval/ids' i64"});
  expectError([&] { metrics::sensitivity_at_specificity(labels, p, 1.5); },
              {"metrics::sensitivity_at_specificity",
               "specificity must be in [0, 1], got 1.500000"});
  expectError(
      [&] { metrics::specificity_at_sensitivity(labels, p, 0.5, {}, 1); },
      {"metrics::specificity_at_sensitivity",
       "num_thresholds must be > 1, got 1"});
  expectError([&] { metrics::specificity_at_sensitivity(labels, ids, 0.5); },
              {"specificity_at_sensitivity", "predictions 'eval/ids' i64 [?] "
                                             "must be float"});
  expectError([&] { metrics::sensitivity_at_specificity(labels, wide, 0.5); },
              {"sensitivity_at_specificity", "same shape"});
}

TEST(MetricsErrors, SqueezableLabelsAndWeights) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::EVAL);
  Tensor labels = g.placeholder("labels", DType::Int64, {-1, 1});
  Tensor pred = g.placeholder("pred", DType::Int64, {-1});
  Tensor w = g.placeholder("w", DType::Float32, {-1, 1});
  // [batch, 1] labels and weights against [batch] predictions are squeezed.
  Metric acc = metrics::accuracy(labels, pred, w);
  EXPECT_EQ(acc.value.shape(), Dims{});
  Metric rec = metrics::recall_at_k(
      labels, g.placeholder("s", DType::Float32, {-1, 3}), 2);
  EXPECT_EQ(rec.value.dtype(), DType::Float64);
}

} // namespace
} // namespace estc
