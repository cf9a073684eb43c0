//===- SummariesTest.cpp - In-graph summaries (tf.compat.v1.summary) ----===//
//
// lib/Graph/Summaries.h: TF's tags (scopes, repeated names, families), the
// one-line errors, the "no cost on other steps" property checked on the
// imported module (@train is the same with and without summaries; only
// @train_summaries computes them), and the Estimator writing every kind
// into model_dir's event file every save_summary_steps, and none into the
// evaluation's directory. test/e2e/tf_summaries_compat.py compares the
// values with TensorFlow's through TensorBoard's reader.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Registration.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/Summaries.h"
#include "lib/Summary/Summary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace estc {
namespace {

namespace fs = std::filesystem;
using estimator::tiny::errorOf;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new estimator::tiny::JitCacheEnvironment("estc-summaries-test-cache-"));

std::vector<std::string> tagsOf(const Graph &g) {
  std::vector<std::string> tags;
  for (const graph::SummaryDef &s : summary::merge_all(g))
    tags.push_back(s.tag());
  return tags;
}

TEST(SummariesTest, TagsAreTensorFlows) {
  Graph g;
  auto mode = g.mode_scope(ModeKeys::TRAIN);
  Tensor x = g.placeholder("x", DType::Float32, {-1, 4, 4, 3});
  Tensor m = reduce_mean(x);
  summary::scalar("acc", m);
  summary::scalar("acc", m); // a repeated name: "acc_1", as TF's scopes
  {
    Scope scope = g.name_scope("block");
    summary::histogram("acc", x);
  }
  summary::scalar("lr", m, "optimizer");
  graph::SummaryDef image = summary::image("input", x, 2);
  summary::text(g, "notes", "hello");
  EXPECT_EQ(tagsOf(g), (std::vector<std::string>{"acc", "acc_1", "block/acc",
                                                 "optimizer/optimizer/lr",
                                                 "input", "notes"}));
  EXPECT_EQ(image.kind(), "image");
  EXPECT_EQ(image.node(), x.name());
  EXPECT_EQ(image.max_outputs(), 2);
  EXPECT_EQ(summary::output_key(image), "summaries/input");
  // Each mode has its own summaries (TF: one graph per mode).
  {
    Graph other;
    auto eval = other.mode_scope(ModeKeys::EVAL);
    EXPECT_TRUE(summary::merge_all(other).empty());
  }
}

TEST(SummariesTest, BadSummariesAreOneLineErrors) {
  Graph g;
  auto mode = g.mode_scope(ModeKeys::TRAIN);
  Tensor x = g.placeholder("x", DType::Float32, {-1, 4});
  Tensor img = g.placeholder("img", DType::Float32, {-1, 4, 4, 2});
  Tensor ids = g.placeholder("ids", DType::Int64, {-1, 4, 4, 1});
  Tensor flag = g.placeholder("flag", DType::Bool, {});
  EXPECT_EQ(errorOf([&] { summary::scalar("loss_x", x); }),
            "summary.scalar 'loss_x': tensor 'train/x' (f32 [?,4]) is not a "
            "scalar of a float or integer type");
  EXPECT_EQ(errorOf([&] { summary::scalar("flag", flag); }),
            "summary.scalar 'flag': tensor 'train/flag' (i1 []) is not a "
            "scalar of a float or integer type");
  EXPECT_EQ(errorOf([&] { summary::histogram("h", flag); }),
            "summary.histogram 'h': values 'train/flag' (i1 []) are not of a "
            "float or integer type");
  EXPECT_EQ(errorOf([&] { summary::image("im", x); }),
            "summary.image 'im': tensor 'train/x' (f32 [?,4]) is not "
            "[batch, height, width, channels] with 1, 3 or 4 channels");
  EXPECT_EQ(errorOf([&] { summary::image("im", img); }),
            "summary.image 'im': tensor 'train/img' (f32 [?,4,4,2]) is "
            "not [batch, height, width, channels] with 1, 3 or 4 channels");
  EXPECT_EQ(errorOf([&] { summary::image("im", ids); }),
            "summary.image 'im': tensor 'train/ids' (i64 [?,4,4,1]) is "
            "not f32, f64 or f16");
  Tensor ok = g.placeholder("ok", DType::Float32, {-1, 4, 4, 1});
  EXPECT_EQ(errorOf([&] { summary::image("im", ok, 0); }),
            "summary.image 'im': max_outputs must be >= 1, got 0");
  EXPECT_EQ(errorOf([&] { summary::scalar("a b", reduce_sum(x)); }),
            "summary.scalar 'a b': invalid summary name (letters, digits, "
            "'_', '-', '.', '/')");
  EXPECT_EQ(
      errorOf([&] { summary::text(g, "table", {"a", "b", "c"}, Dims{2, 2}); }),
      "summary.text 'table': shape [2,2] does not hold the 3 strings "
      "given (rank 1 or 2)");
  EXPECT_EQ(errorOf([&] { summary::scalar("s", Tensor()); }),
            "summary.scalar 's': no tensor");
  // In a loop body: the summary would be a value of one step.
  Tensor seq = g.placeholder("seq", DType::Float32, {4, 3});
  std::string inBody = errorOf([&] {
    scan(
        [](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
          summary::scalar("step_sum", reduce_sum(in[0]));
          return ScanStep{{add(c[0], in[0])}, {}};
        },
        {g.constant(std::vector<double>(3, 0.0), {3})}, {seq});
  });
  EXPECT_NE(inBody.find("summary.scalar 'step_sum': a summary inside a "
                        "control-flow body (scan, cond, while_loop) is not "
                        "supported"),
            std::string::npos)
      << inBody;
  EXPECT_EQ(inBody.find('\n'), std::string::npos) << inBody;
  // Nothing was recorded by the failed calls.
  EXPECT_TRUE(summary::merge_all(g).empty());
}

/// The tiny classifier's graph, with summaries in TRAIN when asked.
graph::GraphDef classifierGraph(bool summaries) {
  InputSpec inputs;
  inputs.features = {{"x", DType::Float32, {-1, 4}}};
  inputs.labels = TensorSpec{"labels", DType::Int64, {-1}};
  return build_graph_def(inputs, [&](Graph &g, const TensorMap &features,
                                     const Tensor &labels, ModeKeys mode) {
    Tensor hidden = layers::dense(features["x"], 8, nn::relu);
    Tensor logits = layers::dense(hidden, 3);
    Signature sig;
    sig.predictions = {{"classes", argmax(logits, 1)}};
    if (mode == ModeKeys::PREDICT)
      return sig;
    sig.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    if (summaries) {
      // Values only the summaries need: a compiled @train that computed
      // them would have more ops.
      summary::scalar("hidden_norm", reduce_sum(square(hidden)));
      summary::histogram("logits", logits);
      summary::text(g, "notes", "hello");
    }
    if (mode == ModeKeys::TRAIN)
      sig.train_op = train::GradientDescentOptimizer(0.1).minimize(sig.loss);
    return sig;
  });
}

struct Imported {
  std::map<std::string, size_t> ops;     // function -> number of ops
  std::map<std::string, size_t> results; // function -> number of results
};
Imported importCounts(const graph::GraphDef &def) {
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  std::string error;
  auto module = importGraph(def, context, "model.pb", error);
  EXPECT_TRUE(module) << error;
  Imported out;
  if (!module)
    return out;
  module->walk([&](mlir::func::FuncOp f) {
    size_t n = 0;
    f.walk([&](mlir::Operation *) { ++n; });
    out.ops[f.getName().str()] = n;
    out.results[f.getName().str()] = f.getNumResults();
  });
  return out;
}

TEST(SummariesTest, TrainComputesNoSummaryOnlyTrainSummariesDoes) {
  graph::GraphDef with = classifierGraph(true);
  graph::GraphDef without = classifierGraph(false);
  ASSERT_EQ(with.signature().at("train").summaries_size(), 3);
  // Eval's summaries are recorded but not compiled (TF writes none).
  EXPECT_EQ(with.signature().at("eval").summaries_size(), 3);
  Imported a = importCounts(with), b = importCounts(without);
  ASSERT_TRUE(a.ops.count("train") && b.ops.count("train"));
  // @train is the same function whether or not model_fn has summaries.
  EXPECT_EQ(a.ops.at("train"), b.ops.at("train"));
  EXPECT_EQ(a.results.at("train"), b.results.at("train"));
  EXPECT_EQ(a.ops.at("eval"), b.ops.at("eval"));
  // @train_summaries: the train step plus the two summaries with values.
  ASSERT_TRUE(a.ops.count("train_summaries"));
  EXPECT_FALSE(b.ops.count("train_summaries"));
  EXPECT_FALSE(a.ops.count("eval_summaries"));
  EXPECT_EQ(a.results.at("train_summaries"), a.results.at("train") + 2);
  EXPECT_GT(a.ops.at("train_summaries"), a.ops.at("train"));
}

class SummariesEstimatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-summaries-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    summary::SummaryWriterCache::clear();
    fs::remove_all(dir_);
  }
  fs::path dir_;
  estimator::ScopedLogSink quiet_{[](const std::string &) {}};
};

estimator::EstimatorSpec summarizedClassifier(const TensorMap &features,
                                              const Tensor &labels,
                                              ModeKeys mode,
                                              const estimator::Params &params,
                                              const estimator::RunConfig &c) {
  estimator::EstimatorSpec spec =
      estimator::tiny::classifier_fn(features, labels, mode, params, c);
  Tensor x = features["x"];
  summary::scalar("x_mean", reduce_mean(x));
  summary::histogram("x", x);
  summary::image("x_image", reshape(x, {-1, 2, 2, 1}), 2);
  summary::text(estimator::get_default_graph(), "notes", "*hello*");
  return spec;
}

/// The function each step ran (its "run:<function>" phase), by global step.
struct FunctionsRun : estimator::SessionRunHook {
  std::map<int64_t, std::string> byStep;
  estimator::SessionRunArgs
  before_run(estimator::SessionRunContext &) override {
    return {{"global_step"}};
  }
  void after_run(estimator::SessionRunContext &,
                 const estimator::SessionRunValues &values) override {
    byStep[static_cast<int64_t>(values.results.at("global_step").element(0))] =
        values.phases.at(2).name;
  }
};

TEST_F(SummariesEstimatorTest, EveryKindIsWrittenEverySaveSummarySteps) {
  estimator::RunConfigOptions o;
  o.model_dir = (dir_ / "model").string();
  o.tf_random_seed = 3;
  o.save_summary_steps = 3;
  o.log_step_count_steps = 1000000;
  estimator::Estimator est(summarizedClassifier,
                           estimator::RunConfig::from_tf_config("", o), {});
  auto functions = std::make_shared<FunctionsRun>();
  estimator::TrainOptions train;
  train.steps = 7;
  train.hooks = {functions};
  est.train(estimator::tiny::trainInput(), train);
  est.evaluate(estimator::tiny::evalInput());
  summary::SummaryWriterCache::clear();

  // tag -> the steps it was written at, and the last value of each kind.
  std::map<std::string, std::vector<int64_t>> steps;
  std::map<std::string, tensorboard::Summary::Value> last;
  for (const std::string &file : summary::list_event_files(*o.model_dir))
    for (const summary::Event &e : summary::read_events(file))
      for (const auto &v : e.summary().value()) {
        steps[v.tag()].push_back(e.step());
        last[v.tag()] = v;
      }
  std::vector<int64_t> lossSteps = steps["loss"];
  ASSERT_GE(lossSteps.size(), 2u);
  // @train_summaries ran on exactly the steps written, @train on the others.
  ASSERT_EQ(functions->byStep.size(), 7u);
  for (const auto &[step, function] : functions->byStep) {
    bool written = std::count(lossSteps.begin(), lossSteps.end(), step) > 0;
    EXPECT_EQ(function, written ? "run:train_summaries" : "run:train")
        << "step " << step;
  }
  for (const char *tag :
       {"x_mean", "x", "x_image/image/0", "x_image/image/1", "notes"})
    EXPECT_EQ(steps[tag], lossSteps) << tag;
  EXPECT_EQ(last["x"].histo().num(), 32 * 4); // a batch of 32 rows of 4
  EXPECT_EQ(last["x_image/image/0"].image().height(), 2);
  EXPECT_EQ(last["x_image/image/0"].image().colorspace(), 1);
  EXPECT_EQ(last["notes"].tensor().string_val(0), "*hello*");
  EXPECT_LE(std::abs(last["x_mean"].simple_value()), 1.0f);

  // The evaluation writes its metrics, none of model_fn's summaries.
  std::set<std::string> evalTags;
  for (const std::string &file :
       summary::list_event_files((fs::path(*o.model_dir) / "eval").string()))
    for (const summary::Event &e : summary::read_events(file))
      for (const auto &v : e.summary().value())
        evalTags.insert(v.tag());
  EXPECT_TRUE(evalTags.count("loss"));
  EXPECT_FALSE(evalTags.count("x_mean"));
  EXPECT_FALSE(evalTags.count("x"));
}

TEST_F(SummariesEstimatorTest, ALoopsLastStepWritesTheSummaries) {
  // iterations_per_loop 3: train_loop runs two steps, @train_summaries the
  // third, on the last batch staged.
  estimator::RunConfigOptions o;
  o.model_dir = (dir_ / "loop").string();
  o.tf_random_seed = 3;
  o.save_summary_steps = 3;
  o.iterations_per_loop = 3;
  o.log_step_count_steps = 1000000;
  estimator::Estimator est(summarizedClassifier,
                           estimator::RunConfig::from_tf_config("", o), {});
  estimator::TrainOptions train;
  train.steps = 9;
  est.train(estimator::tiny::trainInput(), train);
  summary::SummaryWriterCache::clear();
  std::map<std::string, std::vector<int64_t>> steps;
  for (const std::string &file : summary::list_event_files(*o.model_dir))
    for (const summary::Event &e : summary::read_events(file))
      for (const auto &v : e.summary().value())
        steps[v.tag()].push_back(e.step());
  ASSERT_GE(steps["loss"].size(), 2u);
  EXPECT_EQ(steps["loss"].front(), 3); // the first loop's last step
  EXPECT_EQ(steps["x"], steps["loss"]);
  EXPECT_EQ(steps["x_image/image/1"], steps["loss"]);
  EXPECT_EQ(est.get_variable_value("global_step").element(0), 9);
}

TEST_F(SummariesEstimatorTest, AModelFnHookWritesMergeAllOnItsOwnSteps) {
  // TF's SummarySaverHook(save_steps=2, summary_op=merge_all()) as a
  // training hook, with the Estimator's own summaries off.
  std::string hookDir = (dir_ / "every2").string();
  estimator::ModelFn fn = [hookDir](const TensorMap &features,
                                    const Tensor &labels, ModeKeys mode,
                                    const estimator::Params &params,
                                    const estimator::RunConfig &config) {
    estimator::EstimatorSpec spec =
        summarizedClassifier(features, labels, mode, params, config);
    if (mode == ModeKeys::TRAIN) {
      estimator::SummarySaverHook::Options o;
      o.save_steps = 2;
      o.output_dir = hookDir;
      o.summaries = estimator::summary_hook_summaries(
          summary::merge_all(estimator::get_default_graph()));
      spec.training_hooks = {std::make_shared<estimator::SummarySaverHook>(
          std::vector<std::string>{}, o)};
    }
    return spec;
  };
  estimator::RunConfigOptions o;
  o.model_dir = (dir_ / "model").string();
  o.tf_random_seed = 3;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000;
  estimator::Estimator est(fn, estimator::RunConfig::from_tf_config("", o), {});
  estimator::TrainOptions train;
  train.steps = 5;
  est.train(estimator::tiny::trainInput(), train);
  summary::SummaryWriterCache::clear();
  std::map<std::string, std::vector<int64_t>> steps;
  for (const std::string &file : summary::list_event_files(hookDir))
    for (const summary::Event &e : summary::read_events(file))
      for (const auto &v : e.summary().value())
        steps[v.tag()].push_back(e.step());
  EXPECT_EQ(steps["x"], (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(steps["notes"], steps["x"]);
  EXPECT_EQ(steps["x_image/image/0"], steps["x"]);
  EXPECT_FALSE(steps.count("loss"));
}

TEST_F(SummariesEstimatorTest, NoSummaryStepsTrainTheSameVariables) {
  // Summary steps run @train_summaries, other steps @train: the same
  // updates, so training with and without summaries ends at the same loss.
  auto lossAfter = [&](bool summaries, const std::string &sub) {
    estimator::RunConfigOptions o;
    o.model_dir = (dir_ / sub).string();
    o.tf_random_seed = 3;
    o.save_summary_steps = 2;
    o.log_step_count_steps = 1000000;
    estimator::Estimator est(
        summaries ? estimator::ModelFn(summarizedClassifier)
                  : estimator::ModelFn(estimator::tiny::classifier_fn),
        estimator::RunConfig::from_tf_config("", o), {});
    estimator::TrainOptions train;
    train.steps = 6;
    est.train(estimator::tiny::trainInput(), train);
    return est.evaluate(estimator::tiny::evalInput()).at("loss");
  };
  EXPECT_EQ(lossAfter(true, "with"), lossAfter(false, "without"));
}

} // namespace
} // namespace estc
