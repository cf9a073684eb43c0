//===- HeadTest.cpp - The heads of estimator/Canned/Head.h ---------------===//
//
// Per head: its arguments' errors, prediction / metric / export keys, shape
// errors, the host label transforms and class names, and its numbers: the
// loss, every metric and the predictions of small batches, computed through
// the JIT Estimator (a model_fn whose logits are a feature) and compared
// with the values TF 2.15's heads give for the same logits, labels and
// weights (test/e2e/tf_heads_compat.py checks many more against TF itself).
// End to end: a small classifier with a MultiClassHead and string labels,
// and a binary one with a weight column, trained, evaluated and run for
// prediction through the Estimator.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/Canned/Head.h"
#include "estimator/Estimator.h"
#include "lib/Data/Idx.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;
using tiny::errorOf;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new tiny::JitCacheEnvironment("estc-head-test-cache-"));

TensorValue f32(std::vector<int64_t> shape, std::vector<float> values) {
  return TensorValue::of<float>(std::move(shape), values);
}
TensorValue i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return TensorValue::of<int64_t>(std::move(shape), values);
}
TensorValue strs(std::vector<int64_t> shape, std::vector<std::string> values) {
  return TensorValue::of_strings(std::move(shape), std::move(values));
}

std::vector<std::string> keysOf(const TensorMap &m) {
  std::vector<std::string> out;
  for (const auto &[k, t] : m)
    out.push_back(k);
  return out;
}
std::vector<std::string> keysOf(const ExportOutput &m) {
  return keysOf(m.outputs);
}

std::vector<std::string> keysOf(const Head::NamedMetrics &m) {
  std::vector<std::string> out;
  for (const auto &[k, metric] : m)
    out.push_back(k);
  return out;
}
template <typename M> std::vector<std::string> mapKeys(const M &m) {
  std::vector<std::string> out;
  for (const auto &[k, v] : m)
    out.push_back(k);
  return out;
}

/// One mode of a graph with placeholders "logits" F32 [-1, d], labels and
/// optional features.
class GraphFixture {
public:
  GraphFixture(ModeKeys mode, int64_t d, DType labelType, Dims labelShape)
      : scope_(g_.mode_scope(mode)) {
    logits = g_.placeholder("logits", DType::Float32, {-1, d});
    labels = g_.placeholder("labels", labelType, labelShape);
    features.set("logits", logits);
  }
  Tensor feature(const std::string &key, DType dtype, const Dims &shape) {
    Tensor t = g_.placeholder(key, dtype, shape);
    features.set(key, t);
    return t;
  }
  Graph &graph() { return g_; }

  Tensor logits, labels;
  TensorMap features;

private:
  Graph g_;
  Scope scope_;
};

// --- Arguments
// -----------------------------------------------------------------

TEST(HeadArgumentsTest, TfRejectsTheseArguments) {
  EXPECT_EQ(errorOf([] { BinaryClassHead("", {0.5, 1.0}); }),
            "BinaryClassHead: thresholds not in (0, 1): 1");
  EXPECT_EQ(errorOf([] { BinaryClassHead("", {}, {"a", "b", "c"}); }),
            "BinaryClassHead: label_vocabulary must have 2 entries (class 0, "
            "class 1), got 3");
  EXPECT_EQ(errorOf([] { BinaryClassHead("", {}, {"a", "a"}); }),
            "BinaryClassHead: label_vocabulary: vocabulary: duplicate key 'a' "
            "in vocabulary_list");
  EXPECT_EQ(errorOf([] { BinaryClassHead("", {}, {}, Reduction::NONE); }),
            "BinaryClassHead: Invalid loss_reduction: none (it gives no scalar "
            "loss; use sum or sum_over_batch_size)");
  EXPECT_EQ(errorOf([] { MultiClassHead(2); }),
            "MultiClassHead: n_classes must be > 2: 2 (two classes: "
            "BinaryClassHead)");
  EXPECT_EQ(errorOf([] { MultiClassHead(3, "", {"a", "b"}); }),
            "MultiClassHead: \"label_vocabulary\" does not have \"n_classes\" "
            "items. len(label_vocabulary)=2, n_classes=3");
  EXPECT_EQ(errorOf([] { MultiLabelHead(1); }),
            "MultiLabelHead: n_classes must be > 1 for multi-label "
            "classification. Given: 1");
  EXPECT_EQ(errorOf([] { MultiLabelHead(2, "", {0.0}); }),
            "MultiLabelHead: thresholds must be in (0, 1) range. Given: 0");
  EXPECT_EQ(errorOf([] { MultiLabelHead(3, "", {}, {"a"}); }),
            "MultiLabelHead: Length of label_vocabulary must be n_classes (3). "
            "Given: 1");
  EXPECT_EQ(errorOf([] {
              MultiLabelHead(3, "", {}, {}, Reduction::SUM_OVER_BATCH_SIZE,
                             nullptr, std::vector<std::string>{"a"});
            }),
            "MultiLabelHead: label_vocabulary must be provided when "
            "classes_for_class_based_metrics are strings");
  EXPECT_EQ(errorOf([] {
              MultiLabelHead(3, "", {}, {"a", "b", "c"},
                             Reduction::SUM_OVER_BATCH_SIZE, nullptr,
                             std::vector<std::string>{"d"});
            }),
            "MultiLabelHead: classes_for_class_based_metrics: 'd' is not in "
            "label_vocabulary");
  EXPECT_EQ(errorOf([] {
              MultiLabelHead(3, "", {}, {}, Reduction::SUM_OVER_BATCH_SIZE,
                             nullptr, std::vector<int64_t>{3}, "ml");
            }),
            "MultiLabelHead 'ml': All classes_for_class_based_metrics must be "
            "in range [0, 2]. Given: 3");
  EXPECT_EQ(errorOf([] { RegressionHead(0); }),
            "RegressionHead: Invalid label_dimension 0");
  EXPECT_EQ(errorOf([] { PoissonRegressionHead(-1); }),
            "PoissonRegressionHead: Invalid label_dimension -1");
  EXPECT_EQ(errorOf([] { LogisticRegressionHead("", Reduction::NONE, "l"); }),
            "LogisticRegressionHead 'l': Invalid loss_reduction: none (it "
            "gives no scalar loss; use sum or sum_over_batch_size)");
}

TEST(HeadArgumentsTest, MultiHeadRejectsTheseArguments) {
  auto a = std::make_shared<BinaryClassHead>(
      "", std::vector<double>{}, std::vector<std::string>{},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, "a");
  auto unnamed = std::make_shared<RegressionHead>();
  EXPECT_EQ(errorOf([] { MultiHead({}); }),
            "MultiHead: Must specify heads. Given: none");
  EXPECT_EQ(errorOf([&] { MultiHead({a}, {1.0, 2.0}); }),
            "MultiHead: heads and head_weights must have the same size. Given "
            "len(heads): 1. Given len(head_weights): 2");
  EXPECT_EQ(errorOf([&] { MultiHead({a, unnamed}); }),
            "MultiHead: All given heads must have name specified");
  EXPECT_EQ(errorOf([&] { MultiHead({a, a}); }),
            "MultiHead: head name 'a' is given twice");
  auto b = std::make_shared<RegressionHead>(2, "", Reduction::SUM, nullptr,
                                            nullptr, "b");
  MultiHead multi({a, b});
  EXPECT_EQ(multi.name(), "a_b");
  EXPECT_EQ(multi.logits_dimension(), 3);
  EXPECT_EQ(errorOf([&] { multi.loss_reduction(); }),
            "MultiHead: The loss_reduction must be the same for different "
            "heads. Given: [sum_over_batch_size, sum]");
}

// --- Graph half: keys and shapes ---------------------------------------------

TEST(HeadGraphTest, BinaryClassHeadPredictionsMetricsAndExports) {
  BinaryClassHead head("", {0.25, 0.5, 1e-05});
  {
    GraphFixture f(ModeKeys::PREDICT, 1, DType::Float32, {-1, 1});
    TensorMap p = head.predictions(f.logits);
    EXPECT_EQ(keysOf(p),
              (std::vector<std::string>{"logits", "logistic", "probabilities",
                                        "class_ids", "all_class_ids"}));
    EXPECT_EQ(p["probabilities"].shape(), (Dims{-1, 2}));
    EXPECT_EQ(p["class_ids"].dtype(), DType::Int64);
    EXPECT_EQ(p["class_ids"].shape(), (Dims{-1, 1}));
    EXPECT_EQ(p["all_class_ids"].dtype(), DType::Int32);
    EXPECT_EQ(p["all_class_ids"].shape(), (Dims{-1, 2}));
    // The string keys are the host's: asking gives their id tensors.
    EXPECT_EQ(keysOf(head.predictions(f.logits, {"classes", "logistic"})),
              (std::vector<std::string>{"logistic", "class_ids"}));
    EXPECT_EQ(errorOf([&] { head.predictions(f.logits, {"predictions"}); }),
              "BinaryClassHead: Prediction key must be in PredictionKeys, "
              "given: 'predictions'. Valid prediction keys include logits, "
              "logistic, probabilities, class_ids, classes, all_class_ids, "
              "all_classes");
    auto exports = head.export_outputs(p);
    EXPECT_EQ(mapKeys(exports),
              (std::vector<std::string>{"classification", "predict",
                                        "regression", "serving_default"}));
    EXPECT_EQ(keysOf(exports["serving_default"]),
              (std::vector<std::string>{"scores", "classes"}));
    EXPECT_EQ(exports["serving_default"].kind,
              ExportOutput::Kind::Classification);
    EXPECT_EQ(exports["regression"].kind, ExportOutput::Kind::Regression);
    EXPECT_EQ(exports["predict"].kind, ExportOutput::Kind::Predict);
    EXPECT_EQ(exports["classification"].outputs["scores"].name(),
              p["probabilities"].name());
    EXPECT_EQ(exports["classification"].outputs["classes"].name(),
              p["all_class_ids"].name());
    EXPECT_EQ(keysOf(exports["regression"]),
              (std::vector<std::string>{"outputs"}));
    EXPECT_EQ(exports["regression"].outputs["outputs"].name(),
              p["logistic"].name());
    EXPECT_EQ(keysOf(exports["predict"]), keysOf(p));
  }
  GraphFixture f(ModeKeys::EVAL, 1, DType::Float32, {-1, 1});
  EXPECT_EQ(
      keysOf(head.metrics(f.features, f.logits, f.labels)),
      (std::vector<std::string>{
          "average_loss", "accuracy", "precision", "recall", "prediction/mean",
          "label/mean", "accuracy_baseline", "auc", "auc_precision_recall",
          "accuracy/positive_threshold_0.25",
          "precision/positive_threshold_0.25", "recall/positive_threshold_0.25",
          "accuracy/positive_threshold_0.5", "precision/positive_threshold_0.5",
          "recall/positive_threshold_0.5", "accuracy/positive_threshold_1e-05",
          "precision/positive_threshold_1e-05",
          "recall/positive_threshold_1e-05"}));
}

TEST(HeadGraphTest, NamedHeadsSuffixTheirMetricKeys) {
  MultiClassHead head(3, "", {}, Reduction::SUM_OVER_BATCH_SIZE, nullptr,
                      "animal");
  GraphFixture f(ModeKeys::EVAL, 3, DType::Int64, {-1});
  Tensor reg = f.graph().constant(0.5);
  EXPECT_EQ(keysOf(head.metrics(f.features, f.logits, f.labels, {reg})),
            (std::vector<std::string>{"average_loss/animal",
                                      "regularization_loss/animal",
                                      "accuracy/animal"}));
  // Any name: its node scope is made of the characters a node name takes.
  RegressionHead odd(3, "", Reduction::SUM, nullptr, nullptr, "a/b c");
  EstimatorSpec spec =
      odd.create_estimator_spec(f.features, ModeKeys::EVAL, f.logits, f.logits);
  EXPECT_EQ(spec.eval_metric_ops[0].first, "average_loss/a/b c");
  EXPECT_EQ(spec.loss.name().rfind("eval/a_b_c/", 0), 0u) << spec.loss.name();
}

TEST(HeadGraphTest, MultiLabelAndRegressionKeys) {
  MultiLabelHead head(3, "", {0.5}, {"a", "b c", "d"},
                      Reduction::SUM_OVER_BATCH_SIZE, nullptr,
                      std::vector<std::string>{"b c"});
  {
    GraphFixture f(ModeKeys::EVAL, 3, DType::Int64, {-1, 3});
    EXPECT_EQ(
        keysOf(head.metrics(f.features, f.logits, f.labels)),
        (std::vector<std::string>{
            "average_loss", "auc", "auc_precision_recall",
            "accuracy/positive_threshold_0.5",
            "precision/positive_threshold_0.5", "recall/positive_threshold_0.5",
            "probability_mean/b c", "auc/b c", "auc_precision_recall/b c"}));
    EXPECT_EQ(keysOf(head.predictions(f.logits)),
              (std::vector<std::string>{"logits", "probabilities"}));
    auto exports = head.export_outputs(head.predictions(f.logits));
    EXPECT_EQ(mapKeys(exports),
              (std::vector<std::string>{"classification", "predict",
                                        "serving_default"}));
    EXPECT_EQ(exports["classification"].outputs["classes"].shape(),
              (Dims{-1, 3}));
  }
  RegressionHead regression(2);
  GraphFixture f(ModeKeys::EVAL, 2, DType::Float32, {-1, 2});
  EXPECT_EQ(keysOf(regression.metrics(f.features, f.logits, f.labels)),
            (std::vector<std::string>{"average_loss", "prediction/mean",
                                      "label/mean"}));
  EXPECT_EQ(keysOf(regression.predictions(f.logits)),
            (std::vector<std::string>{"predictions"}));
  EXPECT_EQ(keysOf(PoissonRegressionHead().predictions(
                slice(f.logits, {0, 0}, {-1, 1}))),
            (std::vector<std::string>{"predictions", "logits"}));
  auto exports = regression.export_outputs(regression.predictions(f.logits));
  EXPECT_EQ(mapKeys(exports), (std::vector<std::string>{"predict", "regression",
                                                        "serving_default"}));
  EXPECT_EQ(keysOf(exports["serving_default"]),
            (std::vector<std::string>{"outputs"}));
}

TEST(HeadGraphTest, ShapeAndArgumentErrors) {
  BinaryClassHead binary("w");
  GraphFixture f(ModeKeys::TRAIN, 1, DType::Float32, {-1, 1});
  Tensor wide = f.feature("wide", DType::Float32, {-1, 2});
  EXPECT_EQ(errorOf([&] { binary.loss(f.labels, wide, f.features); }),
            "BinaryClassHead: logits shape must be [D0, D1, ... DN, 1], got "
            "[?,2]");
  EXPECT_EQ(errorOf([&] { binary.loss(f.labels, reshape(f.logits, {-1})); }),
            "BinaryClassHead: logits must have rank at least 2. Received rank "
            "1, shape [?]");
  EXPECT_EQ(errorOf([&] { binary.loss(Tensor(), f.logits, f.features); }),
            "BinaryClassHead: You must provide a labels Tensor. Given: None. "
            "Check that your input_fn returns labels");
  EXPECT_EQ(errorOf([&] { binary.loss(wide, f.logits, f.features); }),
            "BinaryClassHead: Mismatched label shape. Expected labels "
            "dimension=1. Received 2. Check n_classes / label_dimension and "
            "the shape of your labels");
  EXPECT_EQ(errorOf([&] { binary.loss(f.labels, f.logits, f.features); }),
            "BinaryClassHead: weight_column 'w' is not a feature (logits, "
            "wide)");
  f.feature("w", DType::Float32, {-1, 2});
  EXPECT_EQ(errorOf([&] { binary.loss(f.labels, f.logits, f.features); }),
            "BinaryClassHead: weights shape must be [D0, D1, ... DN] or [D0, "
            "D1, ... DN, 1], logits_shape: [?,1]. weights_shape: [?,2] "
            "(weight_column 'w')");
  // Regression heads take a weight per logit.
  RegressionHead regression(2, "w");
  EXPECT_TRUE(regression.loss(wide, wide, f.features).valid());

  MultiClassHead multi(3);
  GraphFixture g(ModeKeys::TRAIN, 3, DType::Float32, {-1});
  EXPECT_EQ(errorOf([&] { multi.loss(g.labels, g.logits); }),
            "MultiClassHead: Labels dtype should be integer (class ids). "
            "Instead got f32");
  Tensor ids = g.feature("ids", DType::Int64, {-1, 1});
  Head::LossFn badLossFn = [](const Tensor &, const Tensor &logits,
                              const TensorMap &) { return logits; };
  MultiClassHead custom(3, "", {}, Reduction::SUM_OVER_BATCH_SIZE, badLossFn);
  EXPECT_EQ(errorOf([&] { custom.loss(ids, g.logits); }),
            "MultiClassHead: loss_fn must return a float Tensor of shape [D0, "
            "D1, ... DN, 1]. logits_shape: [?,3], loss: f32 [?,3]");

  // The train op: exactly one of optimizer and train_op_fn; update_ops need
  // tf.group.
  auto opt = train::GradientDescentOptimizer(0.1);
  Head::TrainOpFn fn = [&](const Tensor &loss) { return opt.minimize(loss); };
  Variable v = g.graph().get_variable("v", DType::Float32, {});
  Tensor logits = g.logits + v.read();
  EXPECT_EQ(errorOf([&] {
              multi.create_estimator_spec(g.features, ModeKeys::TRAIN, logits,
                                          ids, opt, {}, fn);
            }),
            "MultiClassHead: train_op_fn and optimizer cannot both be set");
  EXPECT_EQ(errorOf([&] {
              multi.create_estimator_spec(g.features, ModeKeys::TRAIN, logits,
                                          ids);
            }),
            "MultiClassHead: train_op_fn and optimizer cannot both be None");
  Operation update = assign(v, v.read());
  // Update ops (batch normalization's) are grouped with the train op.
  EstimatorSpec grouped = multi.create_estimator_spec(
      g.features, ModeKeys::TRAIN, logits, ids, opt, {}, nullptr, {update});
  EXPECT_EQ(grouped.train_op.op(), "group");
  EstimatorSpec spec = multi.create_estimator_spec(
      g.features, ModeKeys::TRAIN, logits, ids, std::nullopt, {}, fn);
  EXPECT_EQ(spec.train_op.op(), "minimize");
  EXPECT_NO_THROW(spec.validate());
}

TEST(HeadGraphTest, MultiHeadSplitsLogitsAndMergesKeys) {
  auto a = std::make_shared<MultiLabelHead>(
      2, "", std::vector<double>{}, std::vector<std::string>{},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, ClassList(), "head1");
  auto b = std::make_shared<MultiClassHead>(3, "", std::vector<std::string>{},
                                            Reduction::SUM_OVER_BATCH_SIZE,
                                            nullptr, "head2");
  MultiHead multi({a, b});
  {
    GraphFixture f(ModeKeys::PREDICT, 5, DType::Float32, {-1});
    EstimatorSpec spec =
        multi.create_estimator_spec(f.features, ModeKeys::PREDICT, f.logits);
    EXPECT_EQ(
        keysOf(spec.predictions),
        (std::vector<std::string>{"head1/logits", "head1/probabilities",
                                  "head2/logits", "head2/probabilities",
                                  "head2/class_ids", "head2/all_class_ids"}));
    EXPECT_EQ(spec.predictions["head2/logits"].shape(), (Dims{-1, 3}));
    EXPECT_EQ(mapKeys(spec.export_outputs),
              (std::vector<std::string>{"head1", "head1/classification",
                                        "head1/predict", "head2",
                                        "head2/classification", "head2/predict",
                                        "predict", "serving_default"}));
    EXPECT_EQ(keysOf(spec.export_outputs["predict"]), keysOf(spec.predictions));
    EXPECT_EQ(keysOf(spec.export_outputs["serving_default"]),
              (std::vector<std::string>{"scores", "classes"}));
    Tensor six = f.feature("six", DType::Float32, {-1, 6});
    EXPECT_EQ(errorOf([&] { multi.predictions(six); }),
              "MultiHead: Could not split logits of shape [?,6] among the "
              "heads with individual logits dimensions: [2, 3]. The last "
              "dimension of the logits tensor should equal 5");
    EXPECT_EQ(errorOf([&] {
                multi.predictions(MultiHead::Logits(
                    TensorMap{{"head1", slice(f.logits, {0, 0}, {-1, 2})}}));
              }),
              "MultiHead: logits has missing values for head(s): head2");
  }
  GraphFixture f(ModeKeys::EVAL, 5, DType::Int64, {-1, 2});
  Tensor classLabels = f.feature("class", DType::Int64, {-1});
  EXPECT_EQ(
      errorOf([&] {
        multi.create_estimator_spec(f.features, ModeKeys::EVAL, f.logits,
                                    f.labels);
      }),
      "MultiHead: labels must be a dict keyed by head name (a TensorMap)");
  EXPECT_EQ(errorOf([&] {
              multi.create_estimator_spec(f.features, ModeKeys::EVAL, f.logits,
                                          TensorMap{{"head1", f.labels}});
            }),
            "MultiHead: labels has missing values for head(s): head2");
  EstimatorSpec spec = multi.create_estimator_spec(
      f.features, ModeKeys::EVAL, f.logits,
      TensorMap{{"head1", f.labels}, {"head2", classLabels}});
  std::vector<std::string> keys;
  for (const auto &[k, m] : spec.eval_metric_ops)
    keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "loss/head1", "loss/head2", "average_loss/head1",
                      "auc/head1", "auc_precision_recall/head1",
                      "average_loss/head2", "accuracy/head2"}));
  EXPECT_NO_THROW(spec.validate());
}

// --- Host half ---------------------------------------------------------------

TEST(HeadHostTest, BinaryLabels) {
  BinaryClassHead head;
  EXPECT_EQ(head.transform_labels(i64({3, 1}, {0, 1, 1})).values<float>(),
            (std::vector<float>{0, 1, 1}));
  // TF takes any value in [0, 1].
  EXPECT_EQ(head.transform_labels(f32({2}, {0.25f, 1})).values<float>(),
            (std::vector<float>{0.25f, 1}));
  EXPECT_EQ(errorOf([&] { head.transform_labels(i64({3, 1}, {0, 2, 1})); }),
            "BinaryClassHead: label 2 at batch row 1 is outside [0, 1]");
  EXPECT_THROW(head.transform_labels(i64({3, 1}, {0, -1, 1})), data::DataError);
  EXPECT_EQ(errorOf([&] { head.transform_labels(strs({1}, {"yes"})); }),
            "BinaryClassHead: labels are strings; give label_vocabulary, or "
            "numeric labels");
  EXPECT_EQ(errorOf([&] {
              head.transform_labels(data::Value(
                  data::SparseTensor::make({0, 0}, i64({1}, {1}), {1, 1})));
            }),
            "BinaryClassHead: SparseTensor labels are not supported; labels "
            "must be a dense tensor [D0, ..., DN, 1]");

  BinaryClassHead vocab("", {}, {"no", "yes"});
  EXPECT_EQ(
      vocab.transform_labels(strs({3}, {"yes", "no", "yes"})).values<float>(),
      (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(
      errorOf([&] { vocab.transform_labels(strs({2, 1}, {"yes", "maybe"})); }),
      "BinaryClassHead: label 'maybe' at batch row 1 is not in "
      "label_vocabulary");
  EXPECT_THROW(vocab.transform_labels(strs({1}, {"maybe"})), data::DataError);
  EXPECT_EQ(errorOf([&] { vocab.transform_labels(i64({1}, {1})); }),
            "BinaryClassHead: labels must be strings of label_vocabulary, got "
            "I64");

  HostPrediction p = {{"class_ids", i64({2, 1}, {1, 0})},
                      {"all_class_ids", i64({2, 2}, {0, 1, 0, 1})}};
  vocab.complete_predictions(p);
  EXPECT_EQ(p["classes"].strings, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(p["classes"].shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p["all_classes"].strings,
            (std::vector<std::string>{"no", "yes", "no", "yes"}));
  HostPrediction single = {{"class_ids", i64({1}, {1})}};
  head.complete_predictions(single);
  EXPECT_EQ(single["classes"].strings, (std::vector<std::string>{"1"}));
  EXPECT_EQ(errorOf([&] { head.class_names(i64({1}, {2})); }),
            "BinaryClassHead: class id 2 is outside [0, 2)");
}

TEST(HeadHostTest, MultiClassLabels) {
  MultiClassHead head(3);
  EXPECT_EQ(head.transform_labels(TensorValue::of<int32_t>({3}, {2, 0, 1}))
                .values<int64_t>(),
            (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(errorOf([&] { head.transform_labels(i64({4, 1}, {0, 1, 2, 3})); }),
            "MultiClassHead: label 3 at batch row 3 is outside [0, 3)");
  EXPECT_THROW(head.transform_labels(i64({1}, {-1})), data::DataError);
  EXPECT_EQ(errorOf([&] { head.transform_labels(f32({1}, {1})); }),
            "MultiClassHead: Labels dtype should be integer (class ids). "
            "Instead got F32");
  EXPECT_EQ(errorOf([&] { head.transform_labels(strs({1}, {"a"})); }),
            "MultiClassHead: Labels dtype should be integer (class ids). "
            "Instead got STRING (give label_vocabulary)");

  MultiClassHead vocab(3, "", {"cat", "dog", "owl"}, Reduction::SUM, nullptr,
                       "pets");
  EXPECT_EQ(vocab.transform_labels(strs({3, 1}, {"owl", "cat", "dog"}))
                .values<int64_t>(),
            (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(errorOf([&] { vocab.transform_labels(strs({2}, {"cat", "cow"})); }),
            "MultiClassHead 'pets': label 'cow' at batch row 1 is not in "
            "label_vocabulary");
  EXPECT_EQ(errorOf([&] { vocab.transform_labels(i64({1}, {1})); }),
            "MultiClassHead 'pets': Labels dtype should be string if there is "
            "a vocabulary. Instead got I64");
  HostPrediction p = {{"class_ids", i64({2, 1}, {2, 0})},
                      {"probabilities", f32({2, 3}, {0, 0, 1, 1, 0, 0})}};
  vocab.complete_predictions(p);
  EXPECT_EQ(p["classes"].strings, (std::vector<std::string>{"owl", "cat"}));
  EXPECT_FALSE(p.count("all_classes"));
  HostPrediction q = {{"all_class_ids", i64({3}, {0, 1, 2})}};
  head.complete_predictions(q);
  EXPECT_EQ(q["all_classes"].strings,
            (std::vector<std::string>{"0", "1", "2"}));
}

TEST(HeadHostTest, MultiLabelLabels) {
  MultiLabelHead head(3, "", {}, {"a", "b", "c"});
  TensorValue dense = head.transform_labels(i64({2, 3}, {1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(dense.dtype, DType::Int64);
  EXPECT_EQ(
      errorOf([&] { head.transform_labels(i64({2, 3}, {1, 0, 1, 0, 2, 0})); }),
      "MultiLabelHead: label 2 at batch row 1 is outside [0, 1] (labels "
      "must be an integer indicator Tensor with values in [0, 1])");
  EXPECT_EQ(head.transform_labels(f32({1, 3}, {0.5f, 0, 1})).dtype,
            DType::Float32);
  // Sparse: each example's classes, as ids or vocabulary entries.
  data::SparseTensor names = data::SparseTensor::make(
      {0, 0, 0, 1, 2, 0}, strs({3}, {"c", "a", "b"}), {3, 2});
  EXPECT_EQ(head.transform_labels(names).values<int64_t>(),
            (std::vector<int64_t>{1, 0, 1, 0, 0, 0, 0, 1, 0}));
  data::SparseTensor ids =
      data::SparseTensor::make({0, 0, 1, 0, 1, 1}, i64({3}, {2, 2, 0}), {2, 2});
  EXPECT_EQ(head.transform_labels(ids).values<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 1, 0, 1}));
  data::SparseTensor bad =
      data::SparseTensor::make({0, 0, 1, 0}, i64({2}, {2, 3}), {2, 1});
  EXPECT_EQ(errorOf([&] { head.transform_labels(bad); }),
            "MultiLabelHead: label 3 at batch row 1 is outside [0, 3) (labels "
            "must be an integer SparseTensor with values in [0, 3))");
  data::SparseTensor unknown =
      data::SparseTensor::make({1, 0}, strs({1}, {"z"}), {2, 1});
  EXPECT_EQ(errorOf([&] { head.transform_labels(unknown); }),
            "MultiLabelHead: label 'z' at batch row 1 is not in "
            "label_vocabulary");
  HostPrediction p = {{"probabilities", f32({2, 3}, {0, 0, 0, 0, 0, 0})}};
  head.complete_predictions(p);
  EXPECT_EQ(p["classes"].strings,
            (std::vector<std::string>{"a", "b", "c", "a", "b", "c"}));
  EXPECT_EQ(p["classes"].shape, (std::vector<int64_t>{2, 3}));
}

TEST(HeadHostTest, RegressionAndMultiHeadLabels) {
  RegressionHead regression(2);
  EXPECT_EQ(regression.transform_labels(TensorValue::of<double>({1, 2}, {1, 2}))
                .values<float>(),
            (std::vector<float>{1, 2}));
  EXPECT_EQ(errorOf([&] { regression.transform_labels(strs({1}, {"1"})); }),
            "RegressionHead: labels are strings; give label_vocabulary, or "
            "numeric labels");
  LogisticRegressionHead logistic;
  EXPECT_EQ(errorOf([&] { logistic.transform_labels(f32({2}, {0.5f, 1.5f})); }),
            "LogisticRegressionHead: label 1.5 at batch row 1 is outside [0, "
            "1]");
  // Poisson labels are counts; TF checks nothing.
  EXPECT_EQ(PoissonRegressionHead().transform_labels(i64({1}, {7})).dtype,
            DType::Float32);

  auto a = std::make_shared<MultiClassHead>(
      3, "", std::vector<std::string>{"x", "y", "z"},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, "a");
  auto b = std::make_shared<RegressionHead>(
      1, "", Reduction::SUM_OVER_BATCH_SIZE, nullptr, nullptr, "b");
  MultiHead multi({a, b});
  auto labels = multi.transform_labels(std::map<std::string, TensorValue>{
      {"a", strs({2}, {"z", "x"})}, {"b", i64({2}, {4, 5})}});
  EXPECT_EQ(labels["a"].values<int64_t>(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(labels["b"].values<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(errorOf([&] {
              multi.transform_labels(
                  std::map<std::string, TensorValue>{{"a", strs({1}, {"x"})}});
            }),
            "MultiHead: labels has missing values for head(s): b");
  EXPECT_EQ(errorOf([&] { multi.transform_labels(strs({1}, {"x"})); }),
            "MultiHead: labels must be a dict keyed by head name");
  HostPrediction p = {{"a/class_ids", i64({1}, {1})},
                      {"b/predictions", f32({1}, {3})}};
  multi.complete_predictions(p);
  EXPECT_EQ(mapKeys(p), (std::vector<std::string>{"a/class_ids", "a/classes",
                                                  "b/predictions"}));
  EXPECT_EQ(p["a/classes"].strings, (std::vector<std::string>{"y"}));
}

// --- Numbers, through the JIT Estimator
// ---------------------------------------

/// Evaluates and predicts `head` on one batch whose logits are the feature
/// "logits" (plus a zero bias, so TRAIN has a variable to minimize).
class HeadNumbersTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-head-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Estimator> make(std::shared_ptr<const Head> head,
                                  std::vector<double> regularization = {}) {
    RunConfigOptions o;
    o.model_dir = (dir_ / std::to_string(models_++)).string();
    o.tf_random_seed = 1;
    ModelFn fn = [head, regularization](const TensorMap &features,
                                        const Tensor &labels, ModeKeys mode,
                                        const Params &, const RunConfig &) {
      Graph &g = get_default_graph();
      Variable bias = g.get_variable("bias", DType::Float32, {},
                                     zeros_initializer(), true, true);
      Tensor logits = features["logits"] + bias.read();
      std::vector<Tensor> reg;
      for (double r : regularization)
        reg.push_back(g.constant(r));
      return head->create_estimator_spec(features, mode, logits, labels,
                                         train::GradientDescentOptimizer(0.1),
                                         {}, nullptr, {}, reg);
    };
    return std::make_unique<Estimator>(fn, RunConfig::from_tf_config("", o));
  }

  EvalResults evaluate(std::shared_ptr<const Head> head, Features x,
                       TensorValue y, std::vector<double> regularization = {}) {
    int64_t n = x.at("logits").shape[0];
    auto est = make(std::move(head), std::move(regularization));
    return est->evaluate(numpy_input_fn(x, y, {n, 1, false, 0}));
  }

  HostPrediction predict(const Head &head, Features x) {
    int64_t n = x.at("logits").shape[0];
    auto est = make(std::shared_ptr<const Head>(&head, [](const Head *) {}));
    HostPrediction out;
    for (const Prediction &p :
         est->predict(numpy_input_fn(x, std::nullopt, {n, 1, false, 0}),
                      {.yield_single_examples = false}))
      out = p;
    head.complete_predictions(out);
    return out;
  }

  /// Every expected metric is there, within float tolerance.
  void expectMetrics(const EvalResults &got,
                     const std::map<std::string, double> &want) {
    for (const auto &[key, value] : want) {
      ASSERT_TRUE(got.count(key)) << "no metric " << key;
      EXPECT_NEAR(got.at(key), value, 2e-6 * std::max(1.0, std::abs(value)))
          << key;
    }
    EXPECT_EQ(got.size(), want.size()) << "metrics beyond the expected";
  }

  fs::path dir_;
  int models_ = 0;
};

// Expected values: TF 2.15's heads on the same inputs (head.loss,
// head.update_metrics(...).result(), head.predictions).

TEST_F(HeadNumbersTest, BinaryClassHeadAsTfDocuments) {
  auto head = std::make_shared<BinaryClassHead>();
  Features x = {{"logits", f32({2, 1}, {45, -41})}};
  EvalResults r = evaluate(head, x, i64({2, 1}, {1, 1}));
  expectMetrics(r, {{"loss", 20.5},
                    {"average_loss", 20.5},
                    {"accuracy", 0.5},
                    {"precision", 1.0},
                    {"recall", 0.5},
                    {"prediction/mean", 0.5},
                    {"label/mean", 1.0},
                    {"accuracy_baseline", 1.0},
                    {"auc", 0.0},
                    {"auc_precision_recall", 1.0},
                    {"global_step", 0}});
}

TEST_F(HeadNumbersTest, BinaryClassHeadWeightedWithThresholdsAndSum) {
  auto head = std::make_shared<BinaryClassHead>(
      "w", std::vector<double>{0.3, 0.7}, std::vector<std::string>{},
      Reduction::SUM);
  Features x = {{"logits", f32({4, 1}, {0.5f, -1.f, 2.f, -0.3f})},
                {"w", f32({4}, {1, 2, 0.5f, 3})}};
  EvalResults r = evaluate(head, x, i64({4, 1}, {1, 0, 0, 1}));
  expectMetrics(r, {{"loss", 4.727129936218262},
                    {"average_loss", 0.7272507548332214},
                    {"accuracy", 0.4615384638309479},
                    {"precision", 0.6666666865348816},
                    {"recall", 0.25},
                    {"prediction/mean", 0.44267895817756653},
                    {"label/mean", 0.6153846383094788},
                    {"accuracy_baseline", 0.6153846383094788},
                    {"auc", 0.800000011920929},
                    {"auc_precision_recall", 0.7253469228744507},
                    {"accuracy/positive_threshold_0.3", 0.9230769276618958},
                    {"precision/positive_threshold_0.3", 0.8888888955116272},
                    {"recall/positive_threshold_0.3", 1.0},
                    {"accuracy/positive_threshold_0.7", 0.3076923191547394},
                    {"precision/positive_threshold_0.7", 0.0},
                    {"recall/positive_threshold_0.7", 0.0},
                    {"global_step", 0}});
  HostPrediction p = predict(*head, x);
  EXPECT_EQ(p["class_ids"].values<int64_t>(),
            (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(p["classes"].strings,
            (std::vector<std::string>{"1", "0", "1", "0"}));
  std::vector<float> logistic = p["logistic"].values<float>();
  std::vector<float> want = {0.622459352016449f, 0.2689414322376251f,
                             0.8807970881462097f, 0.4255574643611908f};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(logistic[i], want[i], 1e-6);
  EXPECT_EQ(p["all_classes"].strings.size(), 8u);
}

TEST_F(HeadNumbersTest, BinaryClassHeadVocabularyNamedRegularized) {
  auto head = std::make_shared<BinaryClassHead>(
      "", std::vector<double>{}, std::vector<std::string>{"neg", "pos"},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, "b");
  Features x = {{"logits", f32({2, 1}, {0.5f, -1.f})}};
  TensorValue y = head->transform_labels(strs({2, 1}, {"pos", "neg"}));
  EvalResults r = evaluate(head, x, y, {0.25});
  expectMetrics(r, {{"loss", 0.6436693668365479},
                    {"average_loss/b", 0.39366933703422546},
                    {"accuracy/b", 1.0},
                    {"precision/b", 1.0},
                    {"recall/b", 1.0},
                    {"prediction/mean/b", 0.44570040702819824},
                    {"label/mean/b", 0.5},
                    {"accuracy_baseline/b", 0.5},
                    {"auc/b", 1.0},
                    {"auc_precision_recall/b", 1.0},
                    {"regularization_loss/b", 0.25},
                    {"global_step", 0}});
  HostPrediction p = predict(*head, x);
  EXPECT_EQ(p["classes"].strings, (std::vector<std::string>{"pos", "neg"}));
  EXPECT_EQ(p["all_classes"].strings,
            (std::vector<std::string>{"neg", "pos", "neg", "pos"}));
}

TEST_F(HeadNumbersTest, MultiClassHeadVocabularyWeighted) {
  auto head = std::make_shared<MultiClassHead>(
      3, "w", std::vector<std::string>{"a", "b", "c"});
  Features x = {{"logits", f32({3, 3}, {10, 0, 0, 0, 10, 0, 1, 2, 3})},
                {"w", f32({3, 1}, {1, 2, 3})}};
  TensorValue y = head->transform_labels(strs({3, 1}, {"a", "c", "c"}));
  EvalResults r = evaluate(head, x, y);
  expectMetrics(r, {{"loss", 7.074363708496094},
                    {"average_loss", 3.537181854248047},
                    {"accuracy", 0.6666666865348816},
                    {"global_step", 0}});
  HostPrediction p = predict(*head, x);
  EXPECT_EQ(p["classes"].strings, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p["all_class_ids"].values<int32_t>(),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_NEAR(p["probabilities"].values<float>()[8], 0.6652408838272095, 1e-6);
}

TEST_F(HeadNumbersTest, MultiClassHeadChecksLabelsInTheStep) {
  // Labels that skipped the host transform: the compiled step's own check.
  auto head = std::make_shared<MultiClassHead>(3);
  Features x = {{"logits", f32({2, 3}, {1, 0, 0, 0, 1, 0})}};
  std::string error = errorOf([&] { evaluate(head, x, i64({2, 1}, {1, 4})); });
  EXPECT_NE(error.find("node 'eval/head/losses/check_label_range' : label 4 "
                       "at batch row 1, index [1, 0] is outside [0, 3)"),
            std::string::npos)
      << error;
}

TEST_F(HeadNumbersTest, MultiLabelHeadWithThresholdsAndClassMetrics) {
  auto head = std::make_shared<MultiLabelHead>(
      3, "", std::vector<double>{0.4}, std::vector<std::string>{},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, std::vector<int64_t>{0, 2});
  Features x = {
      {"logits", f32({3, 3}, {-1, 1, 0.5f, -1.5f, 1.5f, -0.2f, 2, -1, 0.1f})}};
  EvalResults r = evaluate(head, x, i64({3, 3}, {1, 0, 1, 1, 1, 0, 0, 0, 1}));
  expectMetrics(r, {{"loss", 0.9651280045509338},
                    {"average_loss", 0.9651280045509338},
                    {"auc", 0.375},
                    {"auc_precision_recall", 0.4628138840198517},
                    {"accuracy/positive_threshold_0.4", 0.4444444477558136},
                    {"precision/positive_threshold_0.4", 0.5},
                    {"recall/positive_threshold_0.4", 0.6000000238418579},
                    {"probability_mean/class0", 0.4440546929836273},
                    {"auc/class0", 0.0},
                    {"auc_precision_recall/class0", 0.45069384574890137},
                    {"probability_mean/class2", 0.5325348377227783},
                    {"auc/class2", 1.0},
                    {"auc_precision_recall/class2", 1.0},
                    {"global_step", 0}});
  HostPrediction p = predict(*head, x);
  EXPECT_EQ(p["classes"].strings.size(), 9u);
  EXPECT_EQ(p["classes"].strings[5], "2");
}

TEST_F(HeadNumbersTest, RegressionHeads) {
  auto regression = std::make_shared<RegressionHead>(2, "w");
  Features x = {{"logits", f32({3, 2}, {1, 2, 3, 4, 5, 6})},
                {"w", f32({3, 1}, {1, 0.5f, 2})}};
  expectMetrics(evaluate(regression, x, f32({3, 2}, {1.5f, 2, 2, 4.5f, 5, 7})),
                {{"loss", 0.4791666567325592},
                 {"average_loss", 0.4107142984867096},
                 {"prediction/mean", 4.0714287757873535},
                 {"label/mean", 4.392857074737549},
                 {"global_step", 0}});

  Features one = {{"logits", f32({3, 1}, {0.5f, 1, 2})}};
  expectMetrics(evaluate(std::make_shared<PoissonRegressionHead>(), one,
                         f32({3, 1}, {0, 2, 5})),
                {{"loss", 1.7262376546859741},
                 {"average_loss", 1.7262376546859741},
                 {"prediction/mean", 3.918686628341675},
                 {"label/mean", 2.3333332538604736},
                 {"global_step", 0}});
  expectMetrics(evaluate(std::make_shared<LogisticRegressionHead>(), one,
                         f32({3, 1}, {0.2f, 1, 0})),
                {{"loss", 1.1047555208206177},
                 {"average_loss", 1.1047555208206177},
                 {"prediction/mean", 0.7447717189788818},
                 {"label/mean", 0.4000000059604645},
                 {"global_step", 0}});
  HostPrediction p = predict(PoissonRegressionHead(), one);
  EXPECT_NEAR(p["predictions"].values<float>()[2], 7.389056205749512, 1e-5);
  EXPECT_FALSE(p.count("classes"));
}

TEST_F(HeadNumbersTest, MultiHeadAsTfDocuments) {
  auto head1 = std::make_shared<MultiLabelHead>(
      2, "", std::vector<double>{}, std::vector<std::string>{},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, ClassList(), "head1");
  auto head2 = std::make_shared<MultiLabelHead>(
      3, "", std::vector<double>{}, std::vector<std::string>{},
      Reduction::SUM_OVER_BATCH_SIZE, nullptr, ClassList(), "head2");
  auto multi = std::make_shared<MultiHead>(
      std::vector<std::shared_ptr<const Head>>{head1, head2});
  RunConfigOptions o;
  o.model_dir = (dir_ / "multi").string();
  // The Estimator gives one labels tensor: the heads' labels travel as
  // features.
  ModelFn fn = [multi](const TensorMap &features, const Tensor &, ModeKeys mode,
                       const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    Variable bias = g.get_variable("bias", DType::Float32, {},
                                   zeros_initializer(), true, true);
    Tensor logits = features["logits"] + bias.read();
    TensorMap labels;
    if (mode != ModeKeys::PREDICT)
      labels = TensorMap{{"head1", features["label1"]},
                         {"head2", features["label2"]}};
    return multi->create_estimator_spec(features, mode, logits, labels,
                                        train::GradientDescentOptimizer(0.1));
  };
  Estimator est(fn, RunConfig::from_tf_config("", o));
  Features x = {
      {"logits", f32({2, 5}, {-10, 10, 20, -20, 20, -15, 10, -30, 20, -20})},
      {"label1", i64({2, 2}, {1, 0, 1, 1})},
      {"label2", i64({2, 3}, {0, 1, 0, 1, 1, 0})}};
  EvalResults r = est.evaluate(numpy_input_fn(x, i64({2}, {0, 0}), {2, 1}));
  expectMetrics(r, {{"loss", 23.75003433227539},
                    {"loss/head1", 8.75003433227539},
                    {"loss/head2", 15.0},
                    {"average_loss/head1", 8.75003433227539},
                    {"average_loss/head2", 15.0},
                    {"auc/head1", 0.1666666716337204},
                    {"auc/head2", 0.3333333134651184},
                    {"auc_precision_recall/head1", 0.6022842526435852},
                    {"auc_precision_recall/head2", 0.40152284502983093},
                    {"global_step", 0}});
}

// --- End to end
// ----------------------------------------------------------------

class HeadEstimatorTest : public HeadNumbersTest {};

TEST_F(HeadEstimatorTest, MultiClassHeadWithStringLabelsLearns) {
  // TinyClassifier's data, its labels as strings; the head's host half
  // turns them into ids before the Estimator feeds them.
  MultiClassHead head(3, "", {"left", "middle", "right"});
  const std::vector<std::string> names = {"left", "middle", "right"};
  auto asStrings = [&](const TensorValue &ids) {
    std::vector<std::string> s;
    for (int64_t id : ids.values<int64_t>())
      s.push_back(names[static_cast<size_t>(id)]);
    return strs(ids.shape, s);
  };
  tiny::Data train = tiny::makeData(256, 1), eval = tiny::makeData(200, 2);
  TensorValue trainLabels = head.transform_labels(asStrings(train.y));
  TensorValue evalLabels = head.transform_labels(asStrings(eval.y));
  EXPECT_EQ(trainLabels.values<int64_t>(), train.y.values<int64_t>());

  RunConfigOptions o;
  o.model_dir = (dir_ / "classifier").string();
  o.tf_random_seed = 42;
  o.save_checkpoints_steps = 100;
  ModelFn fn = [&head](const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &, const RunConfig &) {
    Tensor hidden = layers::dense(features["x"], 16, nn::relu);
    Tensor logits = layers::dense(hidden, head.logits_dimension());
    return head.create_estimator_spec(features, mode, logits, labels,
                                      train::AdagradOptimizer(0.3));
  };
  Estimator est(fn, RunConfig::from_tf_config("", o));
  EvalResults before =
      est.evaluate(numpy_input_fn(eval.x, evalLabels, {64, 1, false, 0}));
  est.train(numpy_input_fn(train.x, trainLabels, {32, std::nullopt, true, 7}),
            {.steps = 300});
  EvalResults after =
      est.evaluate(numpy_input_fn(eval.x, evalLabels, {64, 1, false, 0}));
  EXPECT_EQ(mapKeys(after),
            (std::vector<std::string>{"accuracy", "average_loss", "global_step",
                                      "loss"}));
  EXPECT_EQ(after.at("global_step"), 300);
  EXPECT_LT(after.at("average_loss"), before.at("average_loss"));
  EXPECT_GT(after.at("accuracy"), 0.85);

  int64_t n = 0, agree = 0;
  for (Prediction p :
       est.predict(numpy_input_fn(eval.x, std::nullopt, {64, 1, false, 0}))) {
    head.complete_predictions(p);
    int64_t id = p.at("class_ids").values<int64_t>()[0];
    ASSERT_EQ(p.at("classes").strings,
              (std::vector<std::string>{names[static_cast<size_t>(id)]}));
    ASSERT_EQ(p.at("all_classes").strings, names);
    agree += id == eval.y.values<int64_t>()[static_cast<size_t>(n)];
    ++n;
  }
  EXPECT_EQ(n, 200);
  EXPECT_NEAR(static_cast<double>(agree) / n, after.at("accuracy"), 1e-6);
}

TEST_F(HeadEstimatorTest, BinaryClassHeadWithWeightsAndTrainOpFn) {
  // Class 1 when x0 + x1 > 0; examples weighted 1 or 2.
  tiny::Data d = tiny::makeData(256, 3);
  std::vector<float> xs = d.x.at("x").values<float>();
  std::vector<int64_t> y(256);
  std::vector<float> w(256);
  for (size_t i = 0; i < 256; ++i) {
    y[i] = xs[i * 4] + xs[i * 4 + 1] > 0 ? 1 : 0;
    w[i] = i % 2 ? 2.0f : 1.0f;
  }
  BinaryClassHead head("weight", {0.3, 0.7});
  Features x = {{"x", d.x.at("x")}, {"weight", f32({256}, w)}};
  TensorValue labels = head.transform_labels(i64({256, 1}, y));
  RunConfigOptions o;
  o.model_dir = (dir_ / "binary").string();
  o.tf_random_seed = 42;
  ModelFn fn = [&head](const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &, const RunConfig &) {
    Tensor logits = layers::dense(features["x"], 1);
    return head.create_estimator_spec(
        features, mode, logits, labels, std::nullopt, {},
        [](const Tensor &loss) {
          return train::GradientDescentOptimizer(1.0).minimize(loss);
        });
  };
  Estimator est(fn, RunConfig::from_tf_config("", o));
  est.train(numpy_input_fn(x, labels, {32, std::nullopt, true, 1}),
            {.steps = 200});
  EvalResults r = est.evaluate(numpy_input_fn(x, labels, {64, 1, false, 0}));
  EXPECT_EQ(r.at("global_step"), 200);
  EXPECT_GT(r.at("accuracy"), 0.9);
  EXPECT_GT(r.at("auc"), 0.95);
  EXPECT_GT(r.at("auc_precision_recall"), 0.95);
  EXPECT_TRUE(r.count("precision/positive_threshold_0.7"));
  // label/mean is weighted: sum(w * y) / sum(w).
  double wy = 0, ws = 0;
  for (size_t i = 0; i < 256; ++i)
    wy += w[i] * static_cast<double>(y[i]), ws += w[i];
  EXPECT_NEAR(r.at("label/mean"), wy / ws, 1e-6);
  EXPECT_NEAR(r.at("accuracy_baseline"), std::max(wy / ws, 1.0 - wy / ws),
              1e-6);
}

} // namespace
} // namespace estimator
} // namespace estc
