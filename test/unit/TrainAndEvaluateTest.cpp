//===- TrainAndEvaluateTest.cpp - train_and_evaluate, early stopping ----===//
//
// train_and_evaluate, the early-stopping hooks and InMemoryEvaluatorHook
// through the real Estimator (JIT) on a tiny classifier (4 features, 3
// classes), plus the built-in hooks of Hooks.h under the real loop. The
// early-stopping predicates are also checked on hand-written event files.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/EarlyStopping.h"
#include "estimator/Estimator.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "estimator/Training.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Summary/Summary.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;

using namespace tiny;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new JitCacheEnvironment("estc-tae-test-cache-"));

/// Records every export; "exports" <path>/<global step>.
class RecordingExporter : public Exporter {
public:
  std::vector<std::string> calls;
  std::string name() const override { return "rec"; }
  std::string export_model(Estimator &estimator, const std::string &path,
                           const std::string &checkpoint,
                           const EvalResults &result, bool final) override {
    EXPECT_EQ(path, estimator.model_dir() + "/export/rec");
    std::string step = std::to_string(int64_t(result.at("global_step")));
    calls.push_back(fs::path(checkpoint).filename().string() + " " + step +
                    (final ? " final" : ""));
    return path + "/" + step;
  }
};

class TrainAndEvaluateTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-tae-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    SummaryWriterCache::clear();
    fs::remove_all(dir_);
  }
  RunConfig config(int64_t saveSteps = 10) {
    RunConfigOptions o;
    o.model_dir = (dir_ / "model").string();
    o.tf_random_seed = 42;
    o.save_checkpoints_steps = saveSteps;
    o.log_step_count_steps = 100;
    o.save_summary_steps = 0;
    return RunConfig::from_tf_config("", o);
  }
  std::vector<int64_t> evalSteps(const std::string &evalDir) {
    std::vector<int64_t> steps;
    for (const auto &entry : read_eval_metrics(evalDir))
      steps.push_back(entry.first);
    return steps;
  }
  EvalSpec evalSpec() {
    EvalSpec e;
    e.input_fn = evalInput(128);
    e.steps = 2;
    e.throttle_secs = 0;
    return e;
  }

  fs::path dir_;
  std::vector<std::string> logs_;
  ScopedLogSink sink_{[this](const std::string &l) { logs_.push_back(l); }};
};

//===----------------------------------------------------------------------===//
// train_and_evaluate
//===----------------------------------------------------------------------===//

TEST_F(TrainAndEvaluateTest, EvaluatesEveryNewCheckpointAndReturnsTheLast) {
  Estimator est(classifier_fn, config(10));
  auto exporter = std::make_shared<RecordingExporter>();
  EvalSpec eval = evalSpec();
  eval.exporters = {exporter};
  // TF 2.15's (eval_result, export_results): the last evaluation's.
  auto [r, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval);
  EXPECT_EQ(r.at("global_step"), 40);
  EXPECT_TRUE(r.count("accuracy") && r.count("loss"));
  EXPECT_EQ(exports,
            std::vector<std::string>{est.model_dir() + "/export/rec/40"});
  // Not the checkpoint training started from (step 0).
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(read_eval_metrics(est.eval_dir()).at(40).at("accuracy"),
            static_cast<float>(r.at("accuracy")));
  EXPECT_EQ(
      exporter->calls,
      (std::vector<std::string>{"model.ckpt-10 10", "model.ckpt-20 20",
                                "model.ckpt-30 30", "model.ckpt-40 40 final"}));

  // Training already at max_steps: the latest checkpoint is evaluated.
  EvalSpec named = evalSpec();
  named.name = "again";
  TrainAndEvaluateResult again =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, named);
  EXPECT_EQ(again.eval_result.at("global_step"), 40);
  EXPECT_EQ(again.eval_result.at("accuracy"), r.at("accuracy"));
  EXPECT_TRUE(again.export_results.empty()); // no exporters
  EXPECT_EQ(evalSteps(est.eval_dir("again")), (std::vector<int64_t>{40}));
}

TEST_F(TrainAndEvaluateTest, ThrottleSecsSkipsCheckpointsThenEvaluatesTheEnd) {
  Estimator est(classifier_fn, config(10));
  EvalSpec eval = evalSpec();
  eval.throttle_secs = 600;
  eval.clock = [] { return 5.0; }; // time stands still
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval).eval_result;
  EXPECT_EQ(r.at("global_step"), 40);
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{10, 40}));
  int skipped = 0;
  for (const auto &l : logs_)
    skipped += l == "Skip the current checkpoint eval due to throttle secs "
                    "(600 secs).";
  EXPECT_EQ(skipped, 3); // 20, 30 and the final save at 40 (then end())
}

TEST_F(TrainAndEvaluateTest, EveryNStepsEvaluatesInMemory) {
  Estimator est(classifier_fn, config(100));
  EvalSpec eval = evalSpec();
  eval.every_n_steps = 15;
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval).eval_result;
  EXPECT_EQ(r.at("global_step"), 40);
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{15, 30, 40}));
  // The checkpoints are RunConfig's alone: 0 and the final 40.
  auto state = train::get_checkpoint_state(est.model_dir());
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-0", "model.ckpt-40"}));
  // In memory at 40 is the final checkpoint.
  EvalSpec check = evalSpec();
  EvalResults fromCheckpoint = est.evaluate(check.input_fn, {.steps = 2});
  EXPECT_EQ(fromCheckpoint.at("accuracy"), r.at("accuracy"));
  EXPECT_EQ(fromCheckpoint.at("loss"), r.at("loss"));
}

/// The checkpoint files of model_dir: "model.ckpt-N.index" etc., sorted
/// (the state file and temporary files left out).
std::vector<std::string> checkpointFiles(const std::string &modelDir) {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(modelDir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("model.ckpt-", 0) == 0)
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(TrainAndEvaluateTest, RunConfigCheckpointFormatPicksTheSaversFormat) {
  // "tf": train_and_evaluate's training saves TF tensor bundles, and its
  // evaluations and exporters read them.
  RunConfigOptions tf;
  tf.checkpoint_format = "tf";
  tf.keep_checkpoint_max = 2;
  Estimator est(classifier_fn, config(10).replace(tf));
  auto exporter = std::make_shared<RecordingExporter>();
  EvalSpec eval = evalSpec();
  eval.exporters = {exporter};
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 20}, eval).eval_result;
  EXPECT_EQ(r.at("global_step"), 20);
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(
      exporter->calls,
      (std::vector<std::string>{"model.ckpt-10 10", "model.ckpt-20 20 final"}));
  const std::string dir = est.model_dir();
  EXPECT_EQ(checkpointFiles(dir),
            (std::vector<std::string>{
                "model.ckpt-10.data-00000-of-00001", "model.ckpt-10.index",
                "model.ckpt-20.data-00000-of-00001", "model.ckpt-20.index"}));
  train::CheckpointReader bundle(dir + "/model.ckpt-20");
  EXPECT_EQ(bundle.global_step(), 20);
  EXPECT_EQ(bundle.metadata().at("format"), "tensor-bundle-v2");

  // Unset ("auto"): a model_dir whose newest checkpoint is TF's stays TF's.
  Estimator autoEst(classifier_fn, config(10));
  EXPECT_EQ(autoEst.config().checkpoint_format(), "auto");
  autoEst.train(trainInput(), {.max_steps = 30});
  EXPECT_TRUE(fs::exists(dir + "/model.ckpt-30.index"));
  EXPECT_FALSE(fs::exists(dir + "/model.ckpt-30.safetensors"));

  // "safetensors" switches it: the restored step 30 is saved again as
  // safetensors (its TF files go), the older TF checkpoints are collected
  // as usual, and "auto" then continues in safetensors.
  RunConfigOptions st;
  st.checkpoint_format = "safetensors";
  st.keep_checkpoint_max = 2;
  Estimator stEst(classifier_fn, config(10).replace(st));
  stEst.train(trainInput(), {.max_steps = 40});
  EXPECT_EQ(checkpointFiles(dir),
            (std::vector<std::string>{"model.ckpt-30.safetensors",
                                      "model.ckpt-40.safetensors"}));
  Estimator again(classifier_fn, config(10));
  again.train(trainInput(), {.max_steps = 50});
  EXPECT_TRUE(fs::exists(dir + "/model.ckpt-50.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.ckpt-50.index"));
  // Each restore read the checkpoint before it, whatever its format.
  EXPECT_EQ(
      train::CheckpointReader(dir + "/model.ckpt-50.safetensors").global_step(),
      50);

  // A fresh model_dir without the field gets safetensors.
  RunConfigOptions fresh;
  fresh.model_dir = (dir_ / "fresh").string();
  Estimator freshEst(classifier_fn, config(10).replace(fresh));
  freshEst.train(trainInput(), {.max_steps = 10});
  EXPECT_TRUE(fs::exists(dir_ / "fresh" / "model.ckpt-10.safetensors"));
}

TEST_F(TrainAndEvaluateTest, BadSpecsAreOneLine) {
  Estimator est(classifier_fn, config(10));
  EvalSpec eval = evalSpec();
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 0}, eval);
            }),
            "train_and_evaluate: Must specify max_steps > 0, given: 0");
  EXPECT_EQ(
      errorOf([&] { train_and_evaluate(est, TrainSpec{nullptr, 10}, eval); }),
      "train_and_evaluate: TrainSpec.input_fn is empty");
  EvalSpec badSteps = evalSpec();
  badSteps.steps = 0;
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10}, badSteps);
            }),
            "train_and_evaluate: Must specify steps > 0, given: 0");
  EvalSpec badThrottle = evalSpec();
  badThrottle.throttle_secs = -1;
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10}, badThrottle);
            }),
            "train_and_evaluate: Must specify throttle_secs >= 0, given: -1");
  EvalSpec twice = evalSpec();
  twice.exporters = {std::make_shared<RecordingExporter>(),
                     std::make_shared<RecordingExporter>()};
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10}, twice);
            }),
            "train_and_evaluate: `exporters` must have unique names. Such a "
            "name cannot be `None`. All exporter names: ['rec', 'rec']");
  RunConfigOptions none;
  none.save_checkpoints_steps = 0;
  none.save_checkpoints_secs = 0;
  Estimator noCheckpoints(classifier_fn, config(10).replace(none));
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(noCheckpoints, TrainSpec{trainInput(), 10},
                                 eval);
            }),
            "train_and_evaluate: evaluations follow checkpoints, but RunConfig "
            "saves none: set save_checkpoints_steps or save_checkpoints_secs "
            "(or EvalSpec.every_n_steps, or a CheckpointSaverHook in "
            "TrainSpec.hooks)");
  RunConfigOptions o;
  o.model_dir = (dir_ / "dist").string();
  Estimator distributed(
      classifier_fn, RunConfig::from_tf_config(
                         R"({"cluster": {"chief": ["h0:1"], "worker": ["h1:1"]},
              "task": {"type": "worker", "index": 0}})",
                         o));
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(distributed, TrainSpec{trainInput(), 10},
                                 eval);
            }),
            "train_and_evaluate: TF_CONFIG has 2 training tasks (chief and "
            "workers), but RunConfig has no train_distribute: set "
            "RunConfigOptions::train_distribute = "
            "MultiWorkerMirroredStrategy{} to train them as one job");
  RunConfigOptions strategy = o;
  strategy.train_distribute = MultiWorkerMirroredStrategy{};
  Estimator withPs(classifier_fn,
                   RunConfig::from_tf_config(
                       R"({"cluster": {"chief": ["h0:1"], "ps": ["h1:1"]},
              "task": {"type": "chief", "index": 0}})",
                       strategy));
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(withPs, TrainSpec{trainInput(), 10}, eval);
            }),
            "train_and_evaluate: TF_CONFIG has a 'ps' job and RunConfig has "
            "train_distribute (MultiWorkerMirroredStrategy): parameter-server "
            "training and all-reduce training are two ways to train a "
            "cluster; remove the ps job or train_distribute");
  Estimator psNoWorker(classifier_fn,
                       RunConfig::from_tf_config(
                           R"({"cluster": {"chief": ["h0:1"], "ps": ["h0:1"]},
              "task": {"type": "ps", "index": 0}})",
                           o));
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(psNoWorker, TrainSpec{trainInput(), 10}, eval);
            }),
            "train_and_evaluate: TF_CONFIG gives tasks chief:0 and ps:0 the "
            "same address h0:1");
  EXPECT_FALSE(fs::exists(dir_ / "model" / "checkpoint")); // nothing ran
}

TEST_F(TrainAndEvaluateTest,
       EvaluatorTaskEvaluatesNewCheckpointsUntilMaxSteps) {
  // Another "process" trains the model_dir; here, each wait of the
  // evaluator lets it train 10 more steps, except every second one.
  Estimator trainer(classifier_fn, config(10));
  trainer.train(trainInput(), {.max_steps = 10});
  RunConfigOptions o;
  o.model_dir = trainer.model_dir();
  Estimator est(classifier_fn,
                RunConfig::from_tf_config(
                    R"({"cluster": {"chief": ["h0:1"], "worker": ["h1:1"]},
                        "task": {"type": "evaluator", "index": 0}})",
                    o));
  double now = 0;
  std::vector<double> sleeps;
  EvalSpec eval = evalSpec();
  eval.start_delay_secs = 3;
  eval.throttle_secs = 5;
  eval.clock = [&] { return now; };
  eval.sleep = [&](double secs) {
    sleeps.push_back(secs);
    now += secs;
    if (sleeps.size() % 2 == 1 &&
        trainer.get_variable_value("global_step").values<int64_t>()[0] < 30)
      trainer.train(trainInput(), {.steps = 10});
  };
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 30}, eval).eval_result;
  EXPECT_EQ(r.at("global_step"), 30);
  // Delay (trains to 20), evaluate 20, wait; same checkpoint, wait (trains
  // to 30); evaluate 30, wait; 30 >= max_steps: done.
  EXPECT_EQ(sleeps, (std::vector<double>{3, 5, 5, 5}));
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(std::count(logs_.begin(), logs_.end(),
                       "Exiting evaluation, global_step=30 >= train "
                       "max_steps=30"),
            1);
}

//===----------------------------------------------------------------------===//
// Early stopping
//===----------------------------------------------------------------------===//

TEST_F(TrainAndEvaluateTest, StopIfHigherStopsAfterTheFirstEvaluation) {
  Estimator est(classifier_fn, config(10));
  EarlyStoppingOptions o;
  o.run_every_secs = std::nullopt;
  o.run_every_steps = 1;
  auto hook = stop_if_higher_hook(est, "accuracy", -1.0, o);
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 1000, {hook}}, evalSpec())
          .eval_result;
  EXPECT_EQ(r.at("global_step"), 10);
  EXPECT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{10}));
  bool logged = false;
  for (const auto &l : logs_)
    logged |= l == "Requesting early stopping at global step 10";
  EXPECT_TRUE(logged);
}

TEST_F(TrainAndEvaluateTest, StopIfNoIncreaseUnderTrainAndEvaluate) {
  Estimator est(classifier_fn, config(10));
  EarlyStoppingOptions o;
  o.run_every_secs = std::nullopt;
  o.run_every_steps = 1;
  // The eval loss falls (0.75, 0.46, 0.32 at steps 10, 20, 30), so it has
  // not increased for 20 steps at the evaluation of step 30.
  auto hook = stop_if_no_increase_hook(est, "loss", 20, o);
  EvalResults r =
      train_and_evaluate(est, TrainSpec{trainInput(), 100, {hook}}, evalSpec())
          .eval_result;
  auto evals = read_eval_metrics(est.eval_dir());
  ASSERT_EQ(evalSteps(est.eval_dir()), (std::vector<int64_t>{10, 20, 30}));
  ASSERT_LT(evals.at(20).at("loss"), evals.at(10).at("loss"));
  ASSERT_LT(evals.at(30).at("loss"), evals.at(10).at("loss"));
  EXPECT_EQ(r.at("global_step"), 30);
  EXPECT_EQ(std::count(logs_.begin(), logs_.end(),
                       "No increase in metric \"loss\" for 20 steps, which "
                       "is greater than or equal to max steps (20) configured "
                       "for early stopping."),
            1);
  // A decreasing loss never triggers stop_if_no_decrease_hook.
  auto never = stop_if_no_decrease_hook(est, "loss", 20, o);
  EvalResults more =
      train_and_evaluate(est, TrainSpec{trainInput(), 50, {never}}, evalSpec())
          .eval_result;
  EXPECT_EQ(more.at("global_step"), 50);
}

class EarlyStoppingFiles : public TrainAndEvaluateTest {
protected:
  std::string writeEvals(
      const std::vector<std::pair<int64_t, std::map<std::string, double>>>
          &evals) {
    std::string dir = (dir_ / "eval").string();
    summary::SummaryWriter w(dir);
    for (const auto &[step, metrics] : evals) {
      std::vector<std::pair<std::string, double>> scalars(metrics.begin(),
                                                          metrics.end());
      w.add_scalars(scalars, step);
    }
    w.close();
    return dir;
  }
};

TEST_F(EarlyStoppingFiles, ReadEvalMetricsAndThePredicates) {
  std::string dir = writeEvals({{20, {{"loss", 0.5}, {"auc", 0.7}}},
                                {10, {{"loss", 1.0}, {"auc", 0.6}}},
                                {30, {{"loss", 0.6}, {"auc", 0.75}}},
                                {40, {{"loss", 0.7}, {"auc", 0.74}}}});
  auto m = read_eval_metrics(dir);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m.begin()->first, 10); // by step
  EXPECT_DOUBLE_EQ(m.at(20).at("loss"), 0.5);
  EXPECT_TRUE(read_eval_metrics((dir_ / "none").string()).empty());

  // Best loss 0.5 at 20: 20 steps without a decrease at 40.
  EXPECT_TRUE(no_metric_improvement(dir, "loss", 20, false, 0));
  EXPECT_FALSE(no_metric_improvement(dir, "loss", 21, false, 0));
  // From step 25 on: best 0.6 at 30, 10 steps at 40.
  EXPECT_FALSE(no_metric_improvement(dir, "loss", 20, false, 25));
  EXPECT_TRUE(no_metric_improvement(dir, "loss", 10, false, 25));
  // auc: best 0.75 at 30.
  EXPECT_TRUE(no_metric_improvement(dir, "auc", 10, true, 0));
  EXPECT_FALSE(no_metric_improvement(dir, "auc", 11, true, 0));

  EXPECT_TRUE(threshold_crossed(dir, "auc", 0.74, true, 0));
  EXPECT_FALSE(threshold_crossed(dir, "auc", 0.75, true, 0));
  EXPECT_TRUE(threshold_crossed(dir, "loss", 0.55, false, 0));
  EXPECT_FALSE(threshold_crossed(dir, "loss", 0.55, false, 25));
  EXPECT_EQ(errorOf([&] { threshold_crossed(dir, "acc", 0.5, true, 0); }),
            "early stopping: metric 'acc' is not in the evaluation at global "
            "step 10 in " +
                dir + " (it has: auc, loss)");
}

TEST_F(TrainAndEvaluateTest, EarlyStoppingBadArguments) {
  Estimator est(classifier_fn, config(10));
  EarlyStoppingOptions both;
  both.run_every_steps = 5; // run_every_secs keeps its default 60
  EXPECT_EQ(errorOf([&] { stop_if_lower_hook(est, "loss", 0.1, both); }),
            "make_early_stopping_hook: Only one of run_every_secs and "
            "run_every_steps can be set.");
  EXPECT_EQ(errorOf([&] { stop_if_no_increase_hook(est, "auc", 0); }),
            "stop_if_no_increase_hook: max steps without improvement must be "
            "> 0, given: 0");
  EXPECT_EQ(errorOf([&] { stop_if_higher_hook(est, "", 0.1); }),
            "stop_if_higher_hook: metric_name is empty");
}

//===----------------------------------------------------------------------===//
// InMemoryEvaluatorHook
//===----------------------------------------------------------------------===//

TEST_F(TrainAndEvaluateTest, InMemoryEvaluatorHookUsesTheTrainingVariables) {
  Estimator est(classifier_fn, config(10));
  auto hook = std::make_shared<InMemoryEvaluatorHook>(est, evalInput(128), 2,
                                                      Hooks{}, "mem", 10);
  est.train(trainInput(), {.hooks = {hook}, .steps = 25});
  // Before training, every 10 iterations, and at the end.
  ASSERT_EQ(hook->results().size(), 4u);
  std::vector<double> steps;
  for (const auto &r : hook->results())
    steps.push_back(r.at("global_step"));
  EXPECT_EQ(steps, (std::vector<double>{0, 10, 20, 25}));
  EXPECT_EQ(evalSteps(est.eval_dir("mem")),
            (std::vector<int64_t>{0, 10, 20, 25}));
  // The same numbers as evaluating the checkpoints of those steps.
  for (int i : {1, 3}) {
    std::string ckpt =
        est.model_dir() + "/model.ckpt-" +
        std::to_string(int64_t(hook->results()[i].at("global_step")));
    EvalResults fromCheckpoint =
        est.evaluate(evalInput(128), {.steps = 2, .checkpoint_path = ckpt});
    EXPECT_EQ(fromCheckpoint.at("loss"), hook->results()[i].at("loss"));
    EXPECT_EQ(fromCheckpoint.at("accuracy"), hook->results()[i].at("accuracy"));
  }
  EXPECT_EQ(errorOf([&] {
              InMemoryEvaluatorHook(est, evalInput(128), 2, {}, "", 0);
            }),
            "InMemoryEvaluatorHook: invalid every_n_iter=0");
}

//===----------------------------------------------------------------------===//
// The built-in hooks under the real loop
//===----------------------------------------------------------------------===//

TEST_F(TrainAndEvaluateTest, BuiltInHooksUnderTheEstimator) {
  Estimator est(classifier_fn, config(10));
  std::string out = (dir_ / "hooks").string();
  LoggingTensorHook::Options every2;
  every2.every_n_iter = 2;
  auto logging = std::make_shared<LoggingTensorHook>(
      std::map<std::string, std::string>{{"my_loss", "loss"},
                                         {"step", "global_step"}},
      every2);
  ProfilerHook::Options p;
  p.save_steps = 3;
  p.output_dir = out;
  auto profiler = std::make_shared<ProfilerHook>(p);
  SummarySaverHook::Options s;
  s.save_steps = 2;
  s.output_dir = out;
  auto summaries =
      std::make_shared<SummarySaverHook>(std::vector<std::string>{"loss"}, s);
  auto final = std::make_shared<FinalOpsHook>(
      std::vector<std::string>{"global_step", "loss", "tensors/dense/Relu"});
  auto stop = std::make_shared<StopAtStepHook>(std::nullopt, 6);
  est.train(trainInput(),
            {.hooks = {logging, profiler, summaries, final, stop}});

  EXPECT_EQ(final->final_ops_values().at("global_step").element(0), 6);
  EXPECT_EQ(final->final_ops_values().at("loss").num_elements(), 1);
  // A graph tensor, compiled as an output because the hook declared it.
  EXPECT_EQ(final->final_ops_values().at("tensors/dense/Relu").shape,
            (std::vector<int64_t>{32, 8}));
  std::vector<std::string> steps1;
  for (const auto &l : logs_)
    if (l.rfind("my_loss = ", 0) == 0) {
      std::string tail = l.substr(l.find(", step = "));
      steps1.push_back(tail.substr(0, tail.find(" (")));
    }
  EXPECT_EQ(steps1, (std::vector<std::string>{", step = 1", ", step = 3",
                                              ", step = 5"}));
  EXPECT_EQ(profiler->written(),
            (std::vector<std::string>{out + "/timeline-3.json",
                                      out + "/timeline-6.json"}));
  json::Value trace = json::parse(fileio::readFile(out + "/timeline-6.json"));
  bool run = false;
  for (const auto &e : trace.find("traceEvents")->items)
    run |= e.find("name")->text == "run:train" && e.find("ph")->text == "X";
  EXPECT_TRUE(run);
  std::vector<int64_t> steps;
  for (const auto &file : summary::list_event_files(out))
    for (const auto &e : summary::read_events(file))
      if (e.has_summary())
        steps.push_back(e.step());
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 3, 5}));
}

TEST_F(TrainAndEvaluateTest, HooksAndTheEstimatorShareOneEventFile) {
  RunConfigOptions summaries;
  summaries.save_summary_steps = 2;
  Estimator est(classifier_fn, config(10).replace(summaries));
  SummarySaverHook::Options o;
  o.save_steps = 3;
  o.output_dir = est.model_dir();
  est.train(trainInput(),
            {.hooks = {std::make_shared<SummarySaverHook>(
                 std::map<std::string, std::string>{{"my_loss", "loss"}}, o)},
             .steps = 6});
  ASSERT_EQ(summary::list_event_files(est.model_dir()).size(), 1u);
  std::map<std::string, std::vector<int64_t>> steps;
  for (const auto &e :
       summary::read_events(summary::list_event_files(est.model_dir())[0]))
    if (e.has_summary())
      for (const auto &v : e.summary().value())
        steps[v.tag()].push_back(e.step());
  EXPECT_EQ(steps["my_loss"], (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(steps["loss"], (std::vector<int64_t>{1, 3, 5}));
}

} // namespace
} // namespace estimator
} // namespace estc
