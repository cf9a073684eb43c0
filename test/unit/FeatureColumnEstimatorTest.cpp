//===- FeatureColumnEstimatorTest.cpp - Feature columns through the JIT ---===//
//
// The whole path of docs/design/feature-columns.md: raw strings, ids and
// numbers from a tf.data pipeline, the Transformer as the Estimator's host
// half, placeholders with a run-time number of values, and a wide-and-deep
// model_fn (linear_model over a crossed, a hashed and a bucketized column,
// trained by FTRL; input_layer over an embedding, an indicator and a
// weighted embedding, by Adagrad) compiled by the JIT and trained. The compiled
// predictions equal the reference evaluator's on the trained variables, and the
// checkpoint holds TF's variable names.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/Estimator.h"
#include "estimator/FeatureColumnTransform.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Data/Dataset.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Summaries.h"
#include "lib/Graph/Train.h"
#include "test/reference/ReferenceEvaluator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace estc {
namespace estimator {
namespace {

namespace fc = feature_column;
namespace fs = std::filesystem;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new tiny::JitCacheEnvironment("estc-fc-estimator-test-cache-"));

const std::vector<std::string> kJobs = {"a", "b", "c", "d", "e", "f",
                                        "g", "h", "i", "j", "k", "l"};

struct Columns {
  fc::FeatureColumns linear, dnn, all;
};

Columns columns() {
  auto age = fc::numeric_column("age", {1}, {}, DType::Float32,
                                [](const Tensor &x) { return x / 100.0; });
  auto ageBuckets = fc::bucketized_column(fc::numeric_column("age"), {30, 45});
  auto sex = fc::categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto job = fc::categorical_column_with_hash_bucket("job", 50);
  auto tags = fc::weighted_categorical_column(
      fc::categorical_column_with_identity("tag", 6), "tag_weight");
  Columns c;
  c.linear = {fc::crossed_column({ageBuckets, "sex"}, 64), job, ageBuckets};
  c.dnn = {age, fc::indicator_column(sex), fc::embedding_column(job, 3),
           fc::embedding_column(tags, 2, "sqrtn")};
  c.all = c.linear;
  c.all.insert(c.all.end(), c.dnn.begin(), c.dnn.end());
  return c;
}

/// Wide and deep logits [B, 1].
Tensor logits(const TensorMap &features) {
  Columns c = columns();
  Tensor wide = fc::linear_model(features, c.linear);
  Tensor deep = layers::dense(fc::input_layer(features, c.dnn), 8, nn::relu);
  return wide + layers::dense(deep, 1);
}

EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &, const RunConfig &) {
  Tensor l = logits(features);
  EstimatorSpec spec(mode);
  Tensor p = nn::sigmoid(l);
  spec.predictions = {{"logistic", p}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sigmoid_cross_entropy(labels, l);
  // As TF's DNNLinearCombined: FTRL for the linear part, Adagrad for the
  // rest, grouped.
  std::vector<Variable> wide, deep;
  for (const Variable &v : l.graph().trainable_variables())
    (v.name().rfind("linear_model/", 0) == 0 ? wide : deep).push_back(v);
  spec.train_op =
      group({train::FtrlOptimizer(0.3).minimize(spec.loss, wide),
             train::AdagradOptimizer(0.3).minimize(spec.loss, deep)});
  spec.eval_metric_ops = {
      {"accuracy",
       metrics::accuracy(labels, cast(greater(p, 0.5), DType::Float32))}};
  return spec;
}

/// n examples: label 1 when (sex f and age > 45) or job in {a, b, c}.
data::Element examples(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> age, label, tagWeight;
  std::vector<std::string> sex, job;
  std::vector<int64_t> tag;
  for (int64_t i = 0; i < n; ++i) {
    age.push_back(static_cast<float>(18 + rng() % 60));
    sex.push_back(rng() % 2 ? "f" : "m");
    job.push_back(kJobs[rng() % kJobs.size()]);
    // Noise features: two tags, the second sometimes missing (-1).
    tag.push_back(static_cast<int64_t>(rng() % 6));
    tag.push_back(rng() % 3 ? static_cast<int64_t>(rng() % 6) : -1);
    tagWeight.push_back(1.0f + static_cast<float>(rng() % 3));
    tagWeight.push_back(tag.back() < 0 ? 0.0f : 0.5f);
    bool yes = (sex.back() == "f" && age.back() > 45) || job.back() == "a" ||
               job.back() == "b" || job.back() == "c";
    label.push_back(yes ? 1.0f : 0.0f);
  }
  std::map<std::string, data::Element> f;
  f.emplace("age", TensorValue::of<float>({n, 1}, age));
  f.emplace("sex", TensorValue::of_strings({n}, sex));
  f.emplace("job", TensorValue::of_strings({n, 1}, job));
  f.emplace("tag", TensorValue::of<int64_t>({n, 2}, tag));
  f.emplace("tag_weight", TensorValue::of<float>({n, 2}, tagWeight));
  return data::Element::tuple({data::Element::dict(std::move(f)),
                               TensorValue::of<float>({n, 1}, label)});
}

InputFn trainInput() {
  return [] {
    return Dataset(data::Dataset::from_tensor_slices(examples(512, 1))
                       .shuffle(512, 3)
                       .repeat()
                       .batch(32));
  };
}

InputFn evalInput() {
  return [] {
    return Dataset(
        data::Dataset::from_tensor_slices(examples(256, 2)).batch(64));
  };
}

class FeatureColumnEstimatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-fc-estimator-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// embedding_column(ckpt_to_load_from, tensor_name_in_ckpt) in a model: the
// model starts from the checkpoint's tensor (TF's init_from_checkpoint), and
// a later train() restores its own model_dir instead.
TEST_F(FeatureColumnEstimatorTest, EmbeddingStartsFromACheckpoint) {
  fs::create_directories(dir_);
  std::string prefix = (dir_ / "tf" / "model.ckpt-9").string();
  fs::create_directories(dir_ / "tf");
  TensorValue old = TensorValue::of<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  train::write_tensor_bundle(prefix, {{"emb/old", old}});
  auto sex = fc::categorical_column_with_vocabulary_list("sex", {"m", "f"});
  fc::FeatureColumns cols = {
      fc::embedding_column(sex, 3, "mean", {}, {}, true, prefix, "emb/old")};
  auto fn = [cols](const TensorMap &features, const Tensor &labels,
                   ModeKeys mode, const Params &, const RunConfig &) {
    Tensor l = layers::dense(fc::input_layer(features, cols), 1);
    EstimatorSpec spec(mode);
    spec.predictions = {{"logits", l}};
    if (mode == ModeKeys::PREDICT)
      return spec;
    spec.loss = losses::sigmoid_cross_entropy(labels, l);
    spec.train_op = train::GradientDescentOptimizer(0.1).minimize(spec.loss);
    return spec;
  };
  InputFn input = [] {
    std::map<std::string, data::Element> f;
    f.emplace("sex", TensorValue::of_strings({4}, {"m", "f", "f", "m"}));
    return Dataset(data::Dataset::from_tensor_slices(
                       data::Element::tuple(
                           {data::Element::dict(std::move(f)),
                            TensorValue::of<float>({4, 1}, {1, 0, 0, 1})}))
                       .repeat()
                       .batch(2));
  };
  RunConfigOptions o;
  o.model_dir = (dir_ / "model").string();
  o.save_checkpoints_steps = 100;
  Estimator est(fn, RunConfig::from_tf_config("", o));
  est.set_host_transform(fc::make_host_transform(cols));
  est.train(input, {.steps = 2});
  const std::string name = "input_layer/sex_embedding/embedding_weights";
  EXPECT_EQ(
      train::load_variable(o.model_dir.value() + "/model.ckpt-0", name).data,
      old.data);
  TensorValue trained = est.get_variable_value(name);
  EXPECT_NE(trained.data, old.data);
  est.train(input, {.steps = 1}); // restores step 2, not the tensor
  EXPECT_EQ(
      train::load_variable(o.model_dir.value() + "/model.ckpt-2", name).data,
      trained.data);
}

TEST_F(FeatureColumnEstimatorTest, WideAndDeepTrainsAndMatchesReference) {
  RunConfigOptions o;
  o.model_dir = (dir_ / "model").string();
  o.tf_random_seed = 5;
  o.save_checkpoints_steps = 100;
  o.log_step_count_steps = 1000;
  Estimator est(model_fn, RunConfig::from_tf_config("", o));
  est.set_host_transform(fc::make_host_transform(columns().all));

  EvalResults before = est.evaluate(evalInput());
  est.train(trainInput(), {.steps = 300});
  EvalResults after = est.evaluate(evalInput());
  EXPECT_LT(after.at("loss"), before.at("loss") * 0.6);
  EXPECT_GT(after.at("accuracy"), 0.9);

  // TF's names.
  std::vector<std::string> names = est.get_variable_names();
  for (const char *want :
       {"linear_model/age_bucketized_X_sex/weights", "linear_model/job/weights",
        "linear_model/age_bucketized/weights", "linear_model/bias_weights",
        "input_layer/job_embedding/embedding_weights",
        "input_layer/tag_weighted_by_tag_weight_embedding/embedding_weights"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;

  // Compiled predictions against the reference evaluator of the same graph
  // on the checkpoint's variables.
  fc::Transformer transformer(columns().all);
  InputSpec spec;
  spec.features = transformer.input_specs();
  Graph g;
  build_mode(g, ModeKeys::PREDICT, spec,
             [](Graph &, const TensorMap &f, const Tensor &, ModeKeys) {
               Signature sig;
               sig.predictions.set("logistic", nn::sigmoid(logits(f)));
               return sig;
             });
  graph::GraphDef def = g.graph_def();
  reference::Evaluator ref(def);
  for (const auto &v : def.variable()) {
    TensorValue t = est.get_variable_value(v.name());
    std::vector<double> d(static_cast<size_t>(t.num_elements()));
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = t.element(static_cast<int64_t>(i));
    ref.variables()[v.name()] = reference::Value(v.dtype(), t.shape, d);
  }
  data::Element eval = examples(64, 9);
  std::map<std::string, reference::Value> feeds;
  for (const auto &[key, t] : transformer.transform(eval[0])) {
    std::vector<double> d(static_cast<size_t>(t.num_elements()));
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = t.element(static_cast<int64_t>(i));
    feeds[key] = reference::Value(to_proto(t.dtype), t.shape, d);
  }
  reference::Value want = ref.run("predict", feeds).at("predictions/logistic");
  InputFn predictInput = [] {
    data::Element e = examples(64, 9);
    return Dataset(data::Dataset::from_tensors(e[0]));
  };
  int64_t i = 0;
  for (const Prediction &p : est.predict(predictInput)) {
    ASSERT_LT(i, 64);
    EXPECT_NEAR(p.at("logistic").element(0), want.data[i], 1e-5) << i;
    ++i;
  }
  EXPECT_EQ(i, 64);
}

TEST_F(FeatureColumnEstimatorTest, SummaryStepsFeedTheSparseInputsToo) {
  // save_summary_steps 1: every step runs @train_summaries on the inputs
  // fed to @train (sparse ids with their number of values, strings made
  // ids by the host transform): the same updates as without summaries.
  auto lossAfter = [&](bool summaries, const std::string &sub) {
    RunConfigOptions o;
    o.model_dir = (dir_ / sub).string();
    o.tf_random_seed = 5;
    o.save_summary_steps = 1;
    o.log_step_count_steps = 1000;
    ModelFn fn = [summaries](const TensorMap &features, const Tensor &labels,
                             ModeKeys mode, const Params &params,
                             const RunConfig &config) {
      EstimatorSpec spec = model_fn(features, labels, mode, params, config);
      if (summaries) {
        summary::histogram("logistic", spec.predictions["logistic"]);
        summary::scalar("mean_logistic",
                        reduce_mean(spec.predictions["logistic"]));
      }
      return spec;
    };
    Estimator est(fn, RunConfig::from_tf_config("", o));
    est.set_host_transform(fc::make_host_transform(columns().all));
    est.train(trainInput(), {.steps = 20});
    return est.evaluate(evalInput()).at("loss");
  };
  EXPECT_EQ(lossAfter(true, "with"), lossAfter(false, "without"));
}

} // namespace
} // namespace estimator
} // namespace estc
