//===- EstimatorTest.cpp - The Estimator's JIT path, end to end ---------===//
//
// A small classifier (4 features, 3 classes, one dense layer, SGD) trained,
// evaluated and run for prediction through Estimator(model_fn, ...): loss
// goes down, checkpoints resume at their global_step, steps / max_steps,
// hooks' call order, request_stop, input exhaustion, predict's laziness,
// the JIT's compile cache, determinism across runs and thread counts, and
// the one-line errors of bad inputs.
//
//===----------------------------------------------------------------------===//

#include "Mlp.h"
#include "TinyClassifier.h"

#include "estimator/Estimator.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Models/Models.h"
#include "lib/Summary/Summary.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Cuda.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;

using namespace tiny;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new JitCacheEnvironment("estc-estimator-test-cache-"));

class EstimatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-estimator-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunConfig config(const std::string &sub = "model") {
    RunConfigOptions o;
    o.model_dir = (dir_ / sub).string();
    o.tf_random_seed = 42;
    o.save_checkpoints_steps = 10;
    o.log_step_count_steps = 10;
    o.save_summary_steps = 5;
    return RunConfig::from_tf_config("", o);
  }
  std::unique_ptr<Estimator> make(const std::string &sub = "model") {
    return std::make_unique<Estimator>(classifier_fn, config(sub),
                                       Params{{"hidden", 8}});
  }

  fs::path dir_;
  std::vector<std::string> logs_;
  ScopedLogSink sink_{[this](const std::string &l) { logs_.push_back(l); }};
};

/// Records every call, and the loss it fetched.
class RecordingHook : public SessionRunHook {
public:
  explicit RecordingHook(std::vector<std::string> *log, std::string name = "h",
                         std::optional<int> stopAt = {})
      : log_(log), name_(std::move(name)), stopAt_(stopAt) {}
  void begin() override { log_->push_back(name_ + ".begin"); }
  void after_create_session(Session &s) override {
    log_->push_back(name_ + ".after_create_session@" +
                    std::to_string(s.global_step()));
  }
  SessionRunArgs before_run(SessionRunContext &) override {
    log_->push_back(name_ + ".before_run");
    return {{"loss", "global_step"}};
  }
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override {
    losses.push_back(values.results.at("loss").element(0));
    int64_t step =
        static_cast<int64_t>(values.results.at("global_step").element(0));
    log_->push_back(name_ + ".after_run@" + std::to_string(step));
    if (stopAt_ && step >= *stopAt_)
      context.request_stop();
  }
  void end(Session &s) override {
    log_->push_back(name_ + ".end@" + std::to_string(s.global_step()));
  }
  std::vector<double> losses;

private:
  std::vector<std::string> *log_;
  std::string name_;
  std::optional<int> stopAt_;
};

// --- Training, evaluation, checkpoints ---------------------------------------

TEST_F(EstimatorTest, TrainReducesLossAndEvaluates) {
  auto est = make();
  EvalResults before = est->evaluate(evalInput());
  EXPECT_EQ(before.at("global_step"), 0);
  est->train(trainInput(), {.steps = 200});
  EvalResults after = est->evaluate(evalInput());
  EXPECT_EQ(after.at("global_step"), 200);
  EXPECT_LT(after.at("loss"), before.at("loss") * 0.6);
  EXPECT_GT(after.at("accuracy"), 0.8);
  EXPECT_EQ(after.size(), 3u); // accuracy, loss, global_step

  // Checkpoints every 10 steps, 5 kept, the last one at 200.
  ASSERT_TRUE(est->latest_checkpoint());
  EXPECT_EQ(fs::path(*est->latest_checkpoint()).filename(), "model.ckpt-200");
  auto state = train::get_checkpoint_state(est->model_dir());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->all_model_checkpoint_paths.size(), 5u);
  std::vector<std::string> names = est->get_variable_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "dense/kernel"), names.end());
  // Metric state is local: not checkpointed, and reset by every evaluate().
  EXPECT_EQ(std::find(names.begin(), names.end(), "accuracy/total"),
            names.end());
  EXPECT_EQ(est->evaluate(evalInput()), after);
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>(),
            std::vector<int64_t>{200});
  EXPECT_THROW(est->get_variable_value("nope"), std::invalid_argument);

  // The eval event file has the metrics at step 200.
  std::vector<std::string> files = summary::list_event_files(est->eval_dir());
  ASSERT_EQ(files.size(), 1u);
  std::map<std::string, double> at200;
  for (const summary::Event &e : summary::read_events(files[0]))
    if (e.step() == 200)
      for (const auto &v : e.summary().value())
        at200[v.tag()] = v.simple_value();
  EXPECT_FLOAT_EQ(at200.at("accuracy"), after.at("accuracy"));
  EXPECT_FLOAT_EQ(at200.at("loss"), after.at("loss"));
  EXPECT_EQ(est->eval_dir("holdout"),
            (fs::path(est->model_dir()) / "eval_holdout").string());

  // Training summaries and log lines.
  std::vector<std::string> trainEvents =
      summary::list_event_files(est->model_dir());
  ASSERT_EQ(trainEvents.size(), 1u);
  std::set<std::string> tags;
  for (const summary::Event &e : summary::read_events(trainEvents[0]))
    for (const auto &v : e.summary().value())
      tags.insert(v.tag());
  EXPECT_TRUE(tags.count("loss"));
  EXPECT_TRUE(tags.count("global_step/sec"));
  bool lossLine = false, rateLine = false;
  for (const std::string &l : logs_) {
    lossLine |= l.rfind("loss = ", 0) == 0 &&
                l.find(", step = 11 (") != std::string::npos;
    rateLine |= l.rfind("global_step/sec: ", 0) == 0;
  }
  EXPECT_TRUE(lossLine);
  EXPECT_TRUE(rateLine);
}

TEST_F(EstimatorTest, TrainInstallsTheBuiltInHooksAsTf) {
  // save_checkpoints_steps 10, log_step_count_steps 10, save_summary_steps
  // 5: a CheckpointSaverHook, a StepCounterHook, a SummarySaverHook for the
  // loss and a LoggingTensorHook for the loss line (estimator/Hooks.h), with
  // their TF schedules.
  auto est = make();
  std::vector<std::string> calls;
  auto losses = std::make_shared<RecordingHook>(&calls);
  est->train(trainInput(), {.hooks = {losses}, .steps = 25});
  auto lossText = [&](int64_t step) {
    return format_tensor(TensorValue::of<float>(
        {}, {static_cast<float>(losses->losses.at(step - 1))}));
  };

  std::vector<std::string> saving, lossLines, rateLines;
  for (const std::string &l : logs_) {
    if (l.rfind("Saving checkpoints for ", 0) == 0)
      saving.push_back(l);
    if (l.rfind("loss = ", 0) == 0)
      lossLines.push_back(l.substr(0, l.find(" (")));
    if (l.rfind("global_step/sec: ", 0) == 0)
      rateLines.push_back(l);
  }
  std::string prefix = est->model_dir() + "/model.ckpt.";
  EXPECT_EQ(saving, (std::vector<std::string>{
                        "Saving checkpoints for 0 into " + prefix,
                        "Saving checkpoints for 10 into " + prefix,
                        "Saving checkpoints for 20 into " + prefix,
                        "Saving checkpoints for 25 into " + prefix}));
  // The loss as numpy prints a float32, the step after the update.
  EXPECT_EQ(lossLines, (std::vector<std::string>{
                           "loss = " + lossText(1) + ", step = 1",
                           "loss = " + lossText(11) + ", step = 11",
                           "loss = " + lossText(21) + ", step = 21"}));
  // The rate over steps 1-11 and 11-21, logged before that step's loss line.
  EXPECT_EQ(rateLines.size(), 2u);
  auto at = [&](const std::string &prefix, const std::string &has) {
    return std::find_if(logs_.begin(), logs_.end(),
                        [&](const std::string &l) {
                          return l.rfind(prefix, 0) == 0 &&
                                 l.find(has) != l.npos;
                        }) -
           logs_.begin();
  };
  EXPECT_LT(at("global_step/sec: ", ""), at("loss = ", "step = 11"));
  EXPECT_EQ(logs_.back(), "Loss for final step: " + lossText(25) + ".");

  std::map<std::string, std::vector<int64_t>> steps;
  std::map<int64_t, float> lossAt;
  for (const std::string &file : summary::list_event_files(est->model_dir()))
    for (const summary::Event &e : summary::read_events(file))
      for (const auto &v : e.summary().value()) {
        steps[v.tag()].push_back(e.step());
        if (v.tag() == "loss")
          lossAt[e.step()] = v.simple_value();
      }
  EXPECT_EQ(steps["loss"], (std::vector<int64_t>{1, 6, 11, 16, 21}));
  EXPECT_EQ(steps["global_step/sec"], (std::vector<int64_t>{11, 21}));
  EXPECT_EQ(lossAt.at(16), static_cast<float>(losses->losses.at(15)));

  // A later call starts by saving the state it restored (TF's
  // CheckpointSaverHook.after_create_session), the input's position
  // included; its first line is step 26.
  logs_.clear();
  est->train(trainInput(), {.steps = 1});
  EXPECT_EQ(logs_.at(1), "Restored the input pipeline's position from " +
                             prefix.substr(0, prefix.size() - 1) + "-25");
  EXPECT_EQ(logs_.at(2), "Calling checkpoint listeners before saving "
                         "checkpoint 25...");
  EXPECT_EQ(logs_.at(3), "Saving checkpoints for 25 into " + prefix);
  EXPECT_EQ(at("loss = ", ", step = 26"), at("loss = ", ""));
}

TEST_F(EstimatorTest, StepsAddMaxStepsIsAbsoluteAndResumes) {
  {
    auto est = make();
    est->train(trainInput(), {.steps = 15});
    EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 15);
    est->train(trainInput(), {.steps = 5});
    EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 20);
  }
  // A new Estimator (a restarted process) resumes at the saved step.
  auto est = make();
  std::vector<std::string> calls;
  auto hook = std::make_shared<RecordingHook>(&calls);
  est->train(trainInput(), {.hooks = {hook}, .max_steps = 25});
  EXPECT_EQ(calls.at(1), "h.after_create_session@20");
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 25);
  EXPECT_EQ(hook->losses.size(), 5u);

  // Already there: skipped with a log line, no hook called.
  logs_.clear();
  calls.clear();
  est->train(trainInput(), {.hooks = {hook}, .max_steps = 25});
  EXPECT_TRUE(calls.empty());
  ASSERT_FALSE(logs_.empty());
  EXPECT_NE(logs_.back().find("Skipping training since max_steps has already "
                              "saved"),
            std::string::npos);

  EXPECT_THROW(
      {
        try {
          est->train(trainInput(), {.steps = 5, .max_steps = 10});
        } catch (const std::invalid_argument &e) {
          EXPECT_STREQ(e.what(), "Estimator.train: Can not provide both steps "
                                 "and max_steps.");
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(est->train(trainInput(), {.steps = 0}), std::invalid_argument);
  EXPECT_THROW(est->train(trainInput(), {.max_steps = -3}),
               std::invalid_argument);
}

TEST_F(EstimatorTest, HooksOrderRequestStopAndInputExhaustion) {
  auto est = make();
  std::vector<std::string> calls;
  auto a = std::make_shared<RecordingHook>(&calls, "a");
  auto b = std::make_shared<RecordingHook>(&calls, "b", /*stopAt=*/2);
  est->train(trainInput(), {.hooks = {a, b}});
  std::vector<std::string> want = {"a.begin",
                                   "b.begin",
                                   "a.after_create_session@0",
                                   "b.after_create_session@0",
                                   "a.before_run",
                                   "b.before_run",
                                   "a.after_run@1",
                                   "b.after_run@1",
                                   "a.before_run",
                                   "b.before_run",
                                   "a.after_run@2",
                                   "b.after_run@2",
                                   "a.end@2",
                                   "b.end@2"};
  EXPECT_EQ(calls, want);
  // A final checkpoint at the stop.
  EXPECT_EQ(fs::path(*est->latest_checkpoint()).filename(), "model.ckpt-2");

  // The input runs out after 3 batches (70 examples, batch 32: the last is
  // partial): the 4th before_run finds no batch, so no 4th after_run; end()
  // is called.
  calls.clear();
  auto c = std::make_shared<RecordingHook>(&calls, "c");
  est->train(trainInput(70, 32, 1), {.hooks = {c}});
  int before = 0, after = 0;
  for (const std::string &s : calls) {
    before += s == "c.before_run";
    after += s.rfind("c.after_run", 0) == 0;
  }
  EXPECT_EQ(before, 4);
  EXPECT_EQ(after, 3);
  EXPECT_EQ(calls.back(), "c.end@5");
}

TEST_F(EstimatorTest, SavingListenersAndStopFromListener) {
  struct Listener : CheckpointSaverListener {
    std::vector<std::string> calls;
    void begin() override { calls.push_back("begin"); }
    void before_save(Session &, int64_t step) override {
      calls.push_back("before_save@" + std::to_string(step));
    }
    bool after_save(Session &, int64_t step) override {
      calls.push_back("after_save@" + std::to_string(step));
      return step >= 20;
    }
    void end(Session &, int64_t step) override {
      calls.push_back("end@" + std::to_string(step));
    }
  };
  auto est = make();
  auto listener = std::make_shared<Listener>();
  est->train(trainInput(), {.steps = 100, .saving_listeners = {listener}});
  std::vector<std::string> want = {
      "begin",         "before_save@0",  "after_save@0",  "before_save@10",
      "after_save@10", "before_save@20", "after_save@20", "end@20"};
  EXPECT_EQ(listener->calls, want);

  RunConfigOptions off; // TF's None for both: no checkpoints
  off.save_checkpoints_secs = 0;
  off.save_checkpoints_steps = 0;
  Estimator noCkpt(classifier_fn, config("nockpt").replace(off));
  EXPECT_EQ(
      errorOf([&] {
        noCkpt.train(trainInput(),
                     {.steps = 5, .saving_listeners = {listener}});
      }),
      "Estimator.train: There should be a CheckpointSaverHook to use "
      "saving_listeners. Please set one of the "
      "RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.");
  noCkpt.train(trainInput(), {.steps = 5});
  EXPECT_FALSE(noCkpt.latest_checkpoint());
}

TEST_F(EstimatorTest, EvaluateLossIsTheMeanOfBatchLossesAndTakesSteps) {
  // TF's loss metric, metrics.mean(loss): every batch weighs one, whatever
  // its size. 200 rows whose loss is the row's index x: one batch of 200
  // gives 99.5; batches of 64, 64, 64, 8 give the mean of 31.5, 95.5, 159.5
  // and 195.5, 120.5, not the per-example 99.5 (both measured in TF 2.15).
  ModelFn rowLoss = [](const TensorMap &f, const Tensor &, ModeKeys mode,
                       const Params &, const RunConfig &) {
    // A zero-initialized dense layer keeps the graph trainable: y = 0.
    Tensor y = layers::dense(f["x"], 1, nullptr, false, zeros_initializer());
    EstimatorSpec spec(mode);
    spec.predictions = {{"y", y}};
    spec.loss = reduce_mean(add(f["x"], y));
    spec.train_op = train::GradientDescentOptimizer(0.0).minimize(spec.loss);
    return spec;
  };
  std::vector<float> rows(200);
  for (int i = 0; i < 200; ++i)
    rows[i] = static_cast<float>(i);
  Features x{{"x", TensorValue::of<float>({200, 1}, rows)}};
  TensorValue y = TensorValue::of<int64_t>({200}, std::vector<int64_t>(200));
  Estimator rowEst(rowLoss, config("rows"));
  auto batches = [&](int64_t size) {
    return numpy_input_fn(x, y, {size, 1, false, 0});
  };
  EXPECT_EQ(rowEst.evaluate(batches(200)).at("loss"), 99.5);
  EXPECT_EQ(rowEst.evaluate(batches(64)).at("loss"), 120.5);
  EXPECT_EQ(rowEst.evaluate(batches(64), {.steps = 2}).at("loss"), 63.5);

  auto est = make();
  est->train(trainInput(), {.steps = 30});
  // steps: the first batch only, as a batch of 64 alone gives.
  Data d = makeData(200, 2);
  Features first{
      {"x", TensorValue::from_bytes(DType::Float32, {64, 4},
                                    d.x.at("x").data.substr(0, 64 * 16))}};
  TensorValue firstLabels =
      TensorValue::from_bytes(DType::Int64, {64}, d.y.data.substr(0, 64 * 8));
  EvalResults one = est->evaluate(evalInput(200, 64), {.steps = 1});
  EvalResults alone =
      est->evaluate(numpy_input_fn(first, firstLabels, {64, 1, false, 0}));
  EXPECT_EQ(one, alone);
}

TEST_F(EstimatorTest, NonScalarMetricsGiveOneResultPerElement) {
  // true_positives_at_thresholds: one count per threshold, reported as
  // "<name>/<i>"; checked against predict()'s probabilities.
  std::vector<double> thresholds = {0.25, 0.5, 0.75};
  ModelFn fn = [&](const TensorMap &f, const Tensor &l, ModeKeys mode,
                   const Params &p, const RunConfig &c) {
    EstimatorSpec spec = classifier_fn(f, l, mode, p, c);
    if (mode == ModeKeys::EVAL) {
      Tensor isZero = equal(l, get_default_graph().constant(0, DType::Int64));
      Tensor p0 = reshape(
          slice(spec.predictions["probabilities"], {0, 0}, {-1, 1}), {-1});
      spec.eval_metric_ops.push_back(
          {"tp",
           metrics::true_positives_at_thresholds(isZero, p0, thresholds)});
    }
    return spec;
  };
  Estimator est(fn, config(), Params{{"hidden", 8}});
  est.train(trainInput(), {.steps = 20});
  EvalResults r = est.evaluate(evalInput(200, 64));
  ASSERT_EQ(r.count("tp"), 0u);
  Data d = makeData(200, 2);
  std::vector<int64_t> labels = d.y.values<int64_t>();
  std::vector<double> expected(3, 0);
  int64_t i = 0;
  for (const Prediction &p : est.predict(evalInput(200, 64))) {
    float p0 = p.at("probabilities").values<float>()[0];
    for (size_t t = 0; t < thresholds.size(); ++t)
      expected[t] += labels[i] == 0 && p0 > thresholds[t];
    ++i;
  }
  ASSERT_EQ(i, 200);
  for (size_t t = 0; t < thresholds.size(); ++t)
    EXPECT_EQ(r.at("tp/" + std::to_string(t)), expected[t]) << t;
  EXPECT_GT(expected[0], 0);
}

TEST_F(EstimatorTest, EvaluatesAGivenCheckpointUnderAName) {
  auto est = make();
  est->train(trainInput(), {.steps = 20});
  std::string at10 = (fs::path(est->model_dir()) / "model.ckpt-10").string();
  EvalResults r =
      est->evaluate(evalInput(), {.checkpoint_path = at10, .name = "ten"});
  EXPECT_EQ(r.at("global_step"), 10);
  EXPECT_EQ(summary::list_event_files(est->eval_dir("ten")).size(), 1u);
  EXPECT_THROW(est->evaluate(evalInput(),
                             {.checkpoint_path = (dir_ / "missing").string()}),
               train::CheckpointError);
}

TEST_F(EstimatorTest, RestoreSkipsACorruptCheckpoint) {
  make()->train(trainInput(), {.steps = 20});
  std::string latest = (dir_ / "model" / "model.ckpt-20.safetensors").string();
  {
    std::fstream f(latest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  // Every reader of the Estimator skips it; one warning line in all.
  ::testing::internal::CaptureStderr();
  auto est = make();
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(est->latest_checkpoint(),
              (dir_ / "model" / "model.ckpt-10").string());
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 10);
  EXPECT_EQ(est->evaluate(evalInput()).at("global_step"), 10);
  est->train(trainInput(), {.max_steps = 15});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("model.ckpt-20.safetensors"), std::string::npos) << err;
  // Resumed from step 10.
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 15);
}

TEST_F(EstimatorTest, EvaluationsFromAHookDuringTraining) {
  // evaluate_in_memory sees the training variables of this very step;
  // evaluate() of a checkpoint leaves them as they were.
  struct EvalHook : SessionRunHook {
    Estimator *est;
    InputFn input;
    std::optional<EvalResults> inMemory, fromCheckpoint;
    SessionRunArgs before_run(SessionRunContext &) override {
      return {{"global_step"}};
    }
    void after_run(SessionRunContext &, const SessionRunValues &v) override {
      if (v.results.at("global_step").element(0) == 10) {
        inMemory = est->evaluate_in_memory(input, {.name = "mem"});
        fromCheckpoint = est->evaluate(input);
      }
    }
  };
  auto est = make();
  auto hook = std::make_shared<EvalHook>();
  hook->est = est.get();
  hook->input = evalInput();
  std::vector<std::string> calls;
  auto losses = std::make_shared<RecordingHook>(&calls);
  est->train(trainInput(), {.hooks = {hook, losses}, .steps = 20});
  ASSERT_TRUE(hook->inMemory);
  EXPECT_EQ(hook->inMemory->at("global_step"), 10);
  EXPECT_EQ(*hook->inMemory,
            est->evaluate(
                evalInput(),
                {.checkpoint_path =
                     (fs::path(est->model_dir()) / "model.ckpt-10").string()}));
  EXPECT_EQ(hook->fromCheckpoint->at("global_step"), 10);

  // The same training without the evaluations: the same losses.
  auto plain = make("plain");
  std::vector<std::string> calls2;
  auto losses2 = std::make_shared<RecordingHook>(&calls2);
  plain->train(trainInput(), {.hooks = {losses2}, .steps = 20});
  EXPECT_EQ(losses->losses, losses2->losses);
}

TEST_F(EstimatorTest, NanLossRaisesNanLossDuringTrainingError) {
  // NanTensorHook, installed by train(), runs before the checkpoint saver:
  // the diverged step 2 is not saved though save_checkpoints_steps is 1.
  RunConfigOptions everyStep;
  everyStep.save_checkpoints_steps = 1;
  Estimator est(classifier_fn, config().replace(everyStep),
                Params{{"hidden", 8}});
  Data d = makeData(8, 1);
  std::vector<float> xs = d.x.at("x").values<float>();
  for (int i = 16; i < 32; ++i)
    xs[i] = std::nanf(""); // the second batch of 4
  Features nan{{"x", TensorValue::of<float>({8, 4}, xs)}};
  try {
    est.train(numpy_input_fn(nan, d.y, {4, 1, false, 0}), {.steps = 5});
    FAIL() << "no error";
  } catch (const NanLossDuringTrainingError &e) {
    EXPECT_STREQ(e.what(),
                 "NaN loss during training: fetch 'loss' is NaN at step 2");
  }
  EXPECT_EQ(
      std::count(logs_.begin(), logs_.end(), "Model diverged with loss = NaN."),
      1);
  auto state = train::get_checkpoint_state(est.model_dir());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-0", "model.ckpt-1"}));
}

TEST_F(EstimatorTest, ACheckpointSaverHookReplacesTheBuiltInSaving) {
  auto est = make();
  CheckpointSaverHook::Options o;
  o.save_steps = 4;
  auto saver = std::make_shared<CheckpointSaverHook>(est->model_dir(), o);
  est->train(trainInput(), {.hooks = {saver}, .steps = 9});
  // The hook's schedule (0, 4, 8, 9), not the built-in one (0, then 10).
  auto state = train::get_checkpoint_state(est->model_dir());
  ASSERT_TRUE(state);
  std::vector<std::string> want = {"model.ckpt-0", "model.ckpt-4",
                                   "model.ckpt-8", "model.ckpt-9"};
  EXPECT_EQ(state->all_model_checkpoint_paths, want);

  // Saving listeners go to that hook (TF: appended to its listeners, once).
  struct Listener : CheckpointSaverListener {
    std::vector<int64_t> saves;
    bool after_save(Session &, int64_t step) override {
      saves.push_back(step);
      return false;
    }
  };
  auto listener = std::make_shared<Listener>();
  est->train(trainInput(),
             {.hooks = {saver}, .steps = 5, .saving_listeners = {listener}});
  // At the start (the state at 9, as TF's after_create_session), every 4
  // steps from there, at the end.
  EXPECT_EQ(listener->saves, (std::vector<int64_t>{9, 13, 14}));
  est->train(trainInput(),
             {.hooks = {saver}, .steps = 1, .saving_listeners = {listener}});
  EXPECT_EQ(saver->listeners().size(), 1u);
  EXPECT_EQ(listener->saves, (std::vector<int64_t>{9, 13, 14, 14, 15}));
}

// --- Prediction --------------------------------------------------------------

TEST_F(EstimatorTest, PredictIsLazyWithKeysAndSingleExamples) {
  auto est = make();
  est->train(trainInput(), {.steps = 50});
  Data d = makeData(10, 3);
  int batchesRead = 0;
  auto input = [&]() {
    auto remaining = std::make_shared<int64_t>(10);
    return Dataset::from_generator([&, remaining]() -> std::optional<Batch> {
      if (*remaining == 0)
        return std::nullopt;
      ++batchesRead;
      int64_t n = std::min<int64_t>(4, *remaining);
      int64_t start = 10 - *remaining;
      *remaining -= n;
      const std::string &all = d.x.at("x").data;
      Batch b;
      b.features["x"] = TensorValue::from_bytes(DType::Float32, {n, 4},
                                                all.substr(start * 16, n * 16));
      return b;
    });
  };
  Predictions predictions = est->predict(input);
  // Reading the element spec peeks one batch; nothing ran yet.
  EXPECT_EQ(batchesRead, 1);
  int count = 0;
  for (const Prediction &p : predictions) {
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p.at("classes").shape, std::vector<int64_t>{});
    EXPECT_EQ(p.at("probabilities").shape, std::vector<int64_t>{3});
    ++count;
    // Batches of 4, 4, 2: the second is read with the 5th example.
    if (count == 4) {
      EXPECT_EQ(batchesRead, 1);
    }
    if (count == 5) {
      EXPECT_EQ(batchesRead, 2);
    }
  }
  EXPECT_EQ(count, 10);

  // predict_keys and whole batches.
  std::vector<int64_t> sizes;
  for (const Prediction &p :
       est->predict(input, {.predict_keys = {"classes"},
                            .yield_single_examples = false})) {
    ASSERT_EQ(p.size(), 1u);
    sizes.push_back(p.at("classes").shape.at(0));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));

  try {
    est->predict(input, {.predict_keys = {"logits"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "Estimator.predict: predict_keys 'logits' is not a "
                           "prediction of the model (predictions: classes, "
                           "probabilities)");
  }

  // Prediction hooks: end() once the input runs out.
  std::vector<std::string> calls;
  struct PredictHook : SessionRunHook {
    std::vector<std::string> *calls;
    SessionRunArgs before_run(SessionRunContext &) override {
      return {{"predictions/classes"}};
    }
    void after_run(SessionRunContext &, const SessionRunValues &v) override {
      calls->push_back(
          "after_run:" +
          std::to_string(v.results.at("predictions/classes").shape.at(0)));
    }
    void end(Session &) override { calls->push_back("end"); }
  };
  auto hook = std::make_shared<PredictHook>();
  hook->calls = &calls;
  int n = 0;
  for (const Prediction &p : est->predict(input, {.hooks = {hook}})) {
    (void)p;
    ++n;
  }
  EXPECT_EQ(n, 10);
  EXPECT_EQ(calls, (std::vector<std::string>{"after_run:4", "after_run:4",
                                             "after_run:2", "end"}));
}

// --- The JIT cache -----------------------------------------------------------

TEST_F(EstimatorTest, CompilesOnceAcrossCalls) {
  auto est = make();
  EXPECT_EQ(est->compile_count(), 0);
  est->train(trainInput(), {.steps = 5});
  EXPECT_EQ(est->compile_count(), 1);
  est->evaluate(evalInput());
  est->train(trainInput(), {.steps = 5});
  for (const Prediction &p : est->predict(evalInput()))
    (void)p;
  est->evaluate(evalInput(), {.steps = 1});
  EXPECT_EQ(est->compile_count(), 1);

  // A hook that fetches a graph tensor not yet an output: one recompile,
  // the variables carried over (training resumes where it was).
  struct ActivationHook : SessionRunHook {
    std::vector<std::string> graph_fetches() const override {
      return {"dense/Relu"};
    }
    SessionRunArgs before_run(SessionRunContext &) override {
      return {{"tensors/dense/Relu"}};
    }
    void after_run(SessionRunContext &, const SessionRunValues &v) override {
      shape = v.results.at("tensors/dense/Relu").shape;
    }
    std::vector<int64_t> shape;
  };
  auto hook = std::make_shared<ActivationHook>();
  est->train(trainInput(), {.hooks = {hook}, .steps = 5});
  EXPECT_EQ(est->compile_count(), 2);
  EXPECT_EQ(hook->shape, (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 15);
  est->train(trainInput(), {.hooks = {hook}, .steps = 5});
  EXPECT_EQ(est->compile_count(), 2);

  struct BadFetch : SessionRunHook {
    std::vector<std::string> graph_fetches() const override {
      return {"no/such/node"};
    }
  };
  try {
    est->train(trainInput(),
               {.hooks = {std::make_shared<BadFetch>()}, .steps = 1});
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "Estimator: hook graph fetch 'no/such/node': no "
                           "node 'train/no/such/node' in the train graph");
  }
}

TEST_F(EstimatorTest, PredictFirstThenTrainRebuildsWithLabels) {
  // The first call has no labels: only PREDICT is built (from initialized
  // variables, with a log line); train then builds every mode.
  auto est = make();
  Data d = makeData(6, 4);
  int n = 0;
  for (const Prediction &p :
       est->predict(numpy_input_fn(d.x, std::nullopt, {4, 1, false, 0}))) {
    (void)p;
    ++n;
  }
  EXPECT_EQ(n, 6);
  EXPECT_EQ(est->compile_count(), 1);
  bool initLine = false;
  for (const std::string &l : logs_)
    initLine |=
        l.find("running initialization to predict") != std::string::npos;
  EXPECT_TRUE(initLine);
  est->train(trainInput(), {.steps = 3});
  EXPECT_EQ(est->compile_count(), 2);
  EXPECT_EQ(est->evaluate(evalInput()).at("global_step"), 3);
  EXPECT_EQ(est->compile_count(), 2);
}

TEST_F(EstimatorTest, SpecHooksAndChiefOnlyWork) {
  std::vector<std::string> calls;
  auto trainHook = std::make_shared<RecordingHook>(&calls, "train");
  auto chiefHook = std::make_shared<RecordingHook>(&calls, "chief");
  auto evalHook = std::make_shared<RecordingHook>(&calls, "eval");
  struct PredictHook : SessionRunHook {
    int runs = 0;
    void after_run(SessionRunContext &, const SessionRunValues &) override {
      ++runs;
    }
  };
  auto predictHook = std::make_shared<PredictHook>();
  ModelFn fn = [&](const TensorMap &f, const Tensor &l, ModeKeys mode,
                   const Params &p, const RunConfig &c) {
    EstimatorSpec spec = classifier_fn(f, l, mode, p, c);
    spec.training_hooks = {trainHook};
    spec.training_chief_hooks = {chiefHook};
    spec.evaluation_hooks = {evalHook};
    spec.prediction_hooks = {predictHook};
    return spec;
  };
  Estimator est(fn, config(), Params{{"hidden", 8}});
  est.train(trainInput(), {.steps = 2});
  est.evaluate(evalInput(200, 100));
  for (const Prediction &p : est.predict(evalInput(10, 5)))
    (void)p;
  auto count = [&](const std::string &prefix) {
    return std::count_if(calls.begin(), calls.end(), [&](const std::string &s) {
      return s.rfind(prefix, 0) == 0;
    });
  };
  EXPECT_EQ(count("train.after_run"), 2);
  EXPECT_EQ(count("chief.after_run"), 2);
  EXPECT_EQ(count("eval.after_run"), 2);
  EXPECT_EQ(predictHook->runs, 2);

  // A worker of a cluster trains only as a replica of a distributed job
  // (train_distribute; test/e2e/distributed.py checks that its replicas
  // run no chief hooks and write nothing): without the strategy, one line
  // and nothing runs.
  calls.clear();
  RunConfigOptions o;
  o.model_dir = (dir_ / "worker").string();
  RunConfig worker = RunConfig::from_tf_config(
      R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]},
          "task": {"type": "worker", "index": 0}})",
      o);
  Estimator w(fn, worker, Params{{"hidden", 8}});
  try {
    w.train(trainInput(), {.steps = 2});
    ADD_FAILURE() << "a worker without train_distribute trained";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()),
              "Estimator.train: TF_CONFIG has 2 training tasks (chief and "
              "workers), but RunConfig has no train_distribute: set "
              "RunConfigOptions::train_distribute = "
              "MultiWorkerMirroredStrategy{} to train them as one job");
  }
  EXPECT_EQ(count("train.after_run"), 0);
  EXPECT_FALSE(w.latest_checkpoint());
  EXPECT_TRUE(summary::list_event_files(w.model_dir()).empty());
}

TEST_F(EstimatorTest, ProgressBarOnlyOnATerminal) {
  auto est = make();
  // stderr is not a terminal here: no bar.
  ::testing::internal::CaptureStderr();
  est->train(trainInput(), {.steps = 5});
  EXPECT_EQ(::testing::internal::GetCapturedStderr().find('\r'),
            std::string::npos);

  // stderr on a pseudo-terminal: a bar that ends at the last step.
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  int saved = ::dup(STDERR_FILENO);
  ::dup2(slave, STDERR_FILENO);
  est->train(trainInput(), {.steps = 20});
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(slave);
  std::string out;
  char buffer[4096];
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  ::close(master);
  EXPECT_NE(out.find("] 25/25  loss "), std::string::npos) << out;

  // Unknown number of steps (input until exhausted): no bar.
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  saved = ::dup(STDERR_FILENO);
  ::dup2(slave, STDERR_FILENO);
  est->train(trainInput(64, 32, 1));
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(slave);
  out.clear();
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  ::close(master);
  EXPECT_EQ(out.find("loss "), std::string::npos) << out;
}

TEST_F(EstimatorTest, JitAndAotRunTheSameModel) {
  // The seed MLP as a model_fn (JIT) and as compiled by estc_add_model (AOT,
  // the same graph and seed): the same losses and metrics, up to the
  // targets' rounding (x86-64-v2 vs the host CPU).
  ModelFn mlp = [](const TensorMap &f, const Tensor &l, ModeKeys mode,
                   const Params &, const RunConfig &) {
    return EstimatorSpec::from_signature(
        mode, models::mlp_model_fn(get_default_graph(), f, l, mode));
  };
  std::mt19937 rng(5);
  std::vector<float> xs(96 * 784);
  std::vector<int64_t> ys(96);
  for (int64_t i = 0; i < 96; ++i) {
    ys[i] = static_cast<int64_t>(rng() % 10);
    for (int64_t j = 0; j < 784; ++j)
      xs[i * 784 + j] = (j / 78 == ys[i] ? 1.f : 0.f) +
                        static_cast<float>(rng() % 100) / 1000.f;
  }
  Features x{{"x", TensorValue::of<float>({96, 784}, xs)}};
  TensorValue y = TensorValue::of<int64_t>({96}, ys);
  RunConfigOptions o;
  o.tf_random_seed = 0; // the seed estc-models built Mlp with
  std::vector<std::vector<double>> losses;
  std::vector<EvalResults> results;
  for (int aot = 0; aot < 2; ++aot) {
    o.model_dir = (dir_ / (aot ? "aot" : "jit")).string();
    RunConfig c = RunConfig::from_tf_config("", o);
    std::unique_ptr<Estimator> est =
        aot ? std::make_unique<Estimator>(std::make_unique<Mlp>(), c)
            : std::make_unique<Estimator>(mlp, c);
    std::vector<std::string> calls;
    auto hook = std::make_shared<RecordingHook>(&calls);
    est->train(numpy_input_fn(x, y, {32, std::nullopt, false, 0}),
               {.hooks = {hook}, .steps = 9});
    losses.push_back(hook->losses);
    results.push_back(est->evaluate(numpy_input_fn(x, y, {48, 1, false, 0})));
  }
  ASSERT_EQ(losses[0].size(), 9u);
  ASSERT_EQ(losses[1].size(), 9u);
  for (size_t i = 0; i < 9; ++i)
    EXPECT_NEAR(losses[0][i], losses[1][i], 1e-4 * std::abs(losses[1][i]))
        << "step " << i + 1;
  EXPECT_LT(losses[0].back(), losses[0].front());
  EXPECT_EQ(results[0].at("global_step"), 9);
  EXPECT_EQ(results[1].at("global_step"), 9);
  EXPECT_NEAR(results[0].at("loss"), results[1].at("loss"),
              1e-4 * results[1].at("loss"));
  EXPECT_EQ(results[0].at("accuracy"), results[1].at("accuracy"));
}

// --- Determinism -------------------------------------------------------------

std::string fileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(EstimatorTest, DeterministicAcrossRunsAndThreadCounts) {
  std::vector<std::vector<double>> losses;
  std::vector<std::string> checkpoints;
  int threads[] = {1, 1, 2};
  for (int run = 0; run < 3; ++run) {
    RunConfigOptions o;
    o.intra_op_parallelism_threads = threads[run];
    Estimator est(classifier_fn, config("run" + std::to_string(run)).replace(o),
                  Params{{"hidden", 8}});
    std::vector<std::string> calls;
    auto hook = std::make_shared<RecordingHook>(&calls);
    est.train(trainInput(), {.hooks = {hook}, .steps = 30});
    losses.push_back(hook->losses);
    checkpoints.push_back(
        fileBytes(train::checkpoint_file(*est.latest_checkpoint())));
  }
  estc_runtime_set_num_threads(0);
  EXPECT_EQ(losses[0].size(), 30u);
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(losses[0], losses[2]);
  EXPECT_EQ(checkpoints[0], checkpoints[1]);
  EXPECT_EQ(checkpoints[0], checkpoints[2]);
}

// RunConfig.device = "cuda": the JIT compiles model_fn for the device's
// architecture and trains there. Without a GPU (CI), one line from the
// runtime before anything is compiled; with one, the losses of the CPU run.
TEST_F(EstimatorTest, TrainsOnTheConfiguredDevice) {
  RunConfigOptions o;
  o.device = "cuda:0";
  Estimator gpu(classifier_fn, config("gpu").replace(o), Params{{"hidden", 8}});
  std::vector<std::string> calls;
  auto gpuHook = std::make_shared<RecordingHook>(&calls);
  std::string noDevice;
  try {
    rt::cuda_device_count();
  } catch (const rt::DeviceError &e) {
    noDevice = e.what();
  }
  if (!noDevice.empty()) {
    EXPECT_EQ(errorOf([&] { gpu.train(trainInput(), {.steps = 1}); }),
              noDevice);
    EXPECT_FALSE(gpu.latest_checkpoint()); // nothing ran, nothing written
    return;
  }
  gpu.train(trainInput(), {.hooks = {gpuHook}, .steps = 20});
  Estimator cpu(classifier_fn, config("cpu"), Params{{"hidden", 8}});
  auto cpuHook = std::make_shared<RecordingHook>(&calls);
  cpu.train(trainInput(), {.hooks = {cpuHook}, .steps = 20});
  ASSERT_EQ(gpuHook->losses.size(), cpuHook->losses.size());
  for (size_t i = 0; i < cpuHook->losses.size(); ++i)
    EXPECT_NEAR(gpuHook->losses[i], cpuHook->losses[i],
                1e-4 * std::max(1.0, std::abs(cpuHook->losses[i])))
        << "step " << i;
}

// --- Warm start --------------------------------------------------------------

TEST_F(EstimatorTest, WarmStartsFromAnotherModel) {
  auto source = make("source");
  source->train(trainInput(), {.steps = 20});
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = source->model_dir();
  ws.vars_to_warm_start = "dense/.*";
  Estimator est(classifier_fn, config("warm"), Params{{"hidden", 8}}, ws);
  est.train(trainInput(), {.steps = 1});
  // Started from the source's weights, at step 0 (global_step is not warm
  // started).
  EXPECT_EQ(est.get_variable_value("global_step").values<int64_t>()[0], 1);
  auto ckpt0 = train::load_variable(
      (fs::path(est.model_dir()) / "model.ckpt-0").string(), "dense/kernel");
  EXPECT_EQ(ckpt0.data, source->get_variable_value("dense/kernel").data);
}

TEST_F(EstimatorTest, WarmStartListChoosesAmongAllVariables) {
  // TF's list form selects from all global variables: global_step (not
  // trainable) too when an entry matches it; the regex form never does.
  auto source = make("source");
  source->train(trainInput(), {.steps = 20});
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = source->model_dir();
  ws.vars_to_warm_start = ".*";
  Estimator regex(classifier_fn, config("regex"), Params{{"hidden", 8}}, ws);
  regex.train(trainInput(), {.steps = 1});
  EXPECT_EQ(regex.get_variable_value("global_step").values<int64_t>()[0], 1);
  ws.vars_to_warm_start_list = {"dense/", "global_step"};
  Estimator list(classifier_fn, config("list"), Params{{"hidden", 8}}, ws);
  list.train(trainInput(), {.steps = 1});
  EXPECT_EQ(list.get_variable_value("global_step").values<int64_t>()[0], 21);
}

// --- ExponentialMovingAverage's shadows at evaluation, prediction, export ----

/// One dense layer (4 -> 3) trained with SGD and an ExponentialMovingAverage
/// of its weights (decay 0.9, num_updates global_step); the EVAL and
/// PREDICT specs restore the shadows when params "shadows" is true (TF's
/// Scaffold(saver=Saver(ema.variables_to_restore()))), or the var list of
/// params "var_list" ("checkpoint=variable").
EstimatorSpec ema_fn(const TensorMap &features, const Tensor &labels,
                     ModeKeys mode, const Params &params, const RunConfig &) {
  Graph &g = get_default_graph();
  Tensor logits = layers::dense(features["x"], 3);
  EstimatorSpec spec(mode);
  spec.predictions = {{"logits", logits}};
  train::ExponentialMovingAverage ema(0.9, g.global_step());
  if (mode == ModeKeys::TRAIN) {
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    spec.train_op =
        group({train::GradientDescentOptimizer(0.5).minimize(spec.loss),
               ema.apply(g.trainable_variables())});
    if (params.get<bool>("train_var_list", false))
      spec.scaffold.saver_var_list = {{"global_step", "global_step"}};
    return spec;
  }
  if (params.get<bool>("shadows", false))
    spec.scaffold.saver_var_list = ema.variables_to_restore();
  for (const std::string &entry :
       params.get<std::vector<std::string>>("var_list", {})) {
    size_t eq = entry.find('=');
    spec.scaffold.saver_var_list[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  if (mode == ModeKeys::EVAL)
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  return spec;
}

/// x [n, 4] @ kernel [4, 3] + bias, row-major, in double.
std::vector<double> denseRef(const std::vector<float> &x,
                             const std::vector<float> &kernel,
                             const std::vector<float> &bias) {
  size_t n = x.size() / 4;
  std::vector<double> out(n * 3);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < 3; ++j) {
      double s = bias[j];
      for (size_t k = 0; k < 4; ++k)
        s += double(x[i * 4 + k]) * kernel[k * 3 + j];
      out[i * 3 + j] = s;
    }
  return out;
}

/// evaluate()'s loss on evalInput() (batches of 64, the mean of the batch
/// means) for these weights.
double evalLossRef(const std::vector<float> &kernel,
                   const std::vector<float> &bias) {
  Data d = makeData(200, 2);
  std::vector<double> logits =
      denseRef(d.x.at("x").values<float>(), kernel, bias);
  std::vector<int64_t> y = d.y.values<int64_t>();
  double total = 0;
  int batches = 0;
  for (size_t start = 0; start < y.size(); start += 64, ++batches) {
    size_t end = std::min(y.size(), start + 64);
    double sum = 0;
    for (size_t i = start; i < end; ++i) {
      const double *l = &logits[i * 3];
      double m = std::max({l[0], l[1], l[2]});
      double lse = m + std::log(std::exp(l[0] - m) + std::exp(l[1] - m) +
                                std::exp(l[2] - m));
      sum += lse - l[y[i]];
    }
    total += sum / double(end - start);
  }
  return total / batches;
}

TEST_F(EstimatorTest, MovingAverageVariablesToRestore) {
  Graph g;
  Variable w = g.get_variable("w", DType::Float32, {2});
  Variable frozen =
      g.get_variable("frozen", DType::Float32, {2}, zeros_initializer(),
                     /*trainable=*/false);
  g.get_local_variable("count", DType::Float32, {});
  // Unset moving_avg_variables: the graph's trainable variables (the graph
  // from num_updates before apply ran); the other saved variables by their
  // names; local ones left out.
  train::ExponentialMovingAverage ema(0.9, g.global_step());
  std::map<std::string, std::string> want = {
      {"w/ExponentialMovingAverage", "w"},
      {"frozen", "frozen"},
      {"global_step", "global_step"}};
  EXPECT_EQ(ema.variables_to_restore(), want);
  ema.apply({w, frozen});
  want.erase("frozen");
  want["frozen/ExponentialMovingAverage"] = "frozen";
  EXPECT_EQ(ema.variables_to_restore(), want);
  EXPECT_EQ(ema.variables_to_restore(std::vector<Variable>{frozen}),
            (std::map<std::string, std::string>{
                {"frozen/ExponentialMovingAverage", "frozen"},
                {"w", "w"},
                {"w/ExponentialMovingAverage", "w/ExponentialMovingAverage"},
                {"global_step", "global_step"}}));
  EXPECT_EQ(errorOf([] {
              train::ExponentialMovingAverage(0.9).variables_to_restore();
            }),
            "ExponentialMovingAverage: variables_to_restore: no graph to take "
            "the trainable variables from (apply has not run and num_updates "
            "is unset); pass moving_avg_variables");
  EXPECT_EQ(errorOf([&] { ema.variables_to_restore(std::vector<Variable>{}); }),
            "ExponentialMovingAverage: variables_to_restore: "
            "moving_avg_variables is empty");
}

TEST_F(EstimatorTest, MovingAverageShadowsAtEvaluationPredictionAndExport) {
  Estimator raw(ema_fn, config());
  raw.train(trainInput(), {.steps = 30});
  std::vector<float> kernel =
      raw.get_variable_value("dense/kernel").values<float>();
  std::vector<float> bias =
      raw.get_variable_value("dense/bias").values<float>();
  std::vector<float> kernelAvg =
      raw.get_variable_value("dense/kernel/ExponentialMovingAverage")
          .values<float>();
  std::vector<float> biasAvg =
      raw.get_variable_value("dense/bias/ExponentialMovingAverage")
          .values<float>();

  // The same model_dir, restored through variables_to_restore().
  Estimator avg(ema_fn, config(), Params{{"shadows", true}});
  EvalResults rawResults = raw.evaluate(evalInput());
  EvalResults avgResults = avg.evaluate(evalInput());
  EXPECT_NEAR(rawResults.at("loss"), evalLossRef(kernel, bias), 1e-5);
  EXPECT_NEAR(avgResults.at("loss"), evalLossRef(kernelAvg, biasAvg), 1e-5);
  EXPECT_GT(std::abs(avgResults.at("loss") - rawResults.at("loss")), 1e-3);
  EXPECT_EQ(avgResults.at("global_step"), 30);
  // The checkpoint's own names are restored as they were.
  EXPECT_EQ(avg.get_variable_value("dense/kernel").values<float>(), kernel);

  // predict, from the latest checkpoint and from a given one.
  Data d = makeData(16, 3);
  std::vector<double> wantAvg =
      denseRef(d.x.at("x").values<float>(), kernelAvg, biasAvg);
  std::vector<double> wantRaw =
      denseRef(d.x.at("x").values<float>(), kernel, bias);
  for (const std::string &path :
       {std::string(),
        (fs::path(avg.model_dir()) / "model.ckpt-30").string()}) {
    std::vector<double> got;
    for (const Prediction &p :
         avg.predict(numpy_input_fn(d.x, std::nullopt, {8, 1, false, 0}),
                     {.checkpoint_path = path}))
      for (float v : p.at("logits").values<float>())
        got.push_back(v);
    ASSERT_EQ(got.size(), wantAvg.size());
    double rawGap = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], wantAvg[i], 1e-5) << i;
      rawGap = std::max(rawGap, std::abs(got[i] - wantRaw[i]));
    }
    EXPECT_GT(rawGap, 1e-3);
  }

  // export_saved_model writes the shadows as the serving model's variables.
  auto receiver =
      build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}});
  std::string exported =
      avg.export_saved_model((dir_ / "export").string(), receiver);
  train::CheckpointReader variables(
      (fs::path(exported) / "variables.safetensors").string());
  EXPECT_EQ(variables.get_tensor("dense/kernel").values<float>(), kernelAvg);
  EXPECT_EQ(variables.get_tensor("dense/bias").values<float>(), biasAvg);
  std::string exportedRaw =
      raw.export_saved_model((dir_ / "export_raw").string(), receiver);
  EXPECT_EQ(train::CheckpointReader(
                (fs::path(exportedRaw) / "variables.safetensors").string())
                .get_tensor("dense/kernel")
                .values<float>(),
            kernel);

  // train_and_evaluate's in-memory evaluations (evaluate_in_memory) read the
  // shadows from the training variables, and leave those as they were.
  avg.train(trainInput(), {.steps = 1});
  std::vector<float> kernel31 =
      avg.get_variable_value("dense/kernel").values<float>();
  EvalResults inMemory = avg.evaluate_in_memory(evalInput());
  EXPECT_NEAR(
      inMemory.at("loss"),
      evalLossRef(
          avg.get_variable_value("dense/kernel/ExponentialMovingAverage")
              .values<float>(),
          avg.get_variable_value("dense/bias/ExponentialMovingAverage")
              .values<float>()),
      1e-5);
  EXPECT_EQ(avg.evaluate(evalInput()).at("loss"), inMemory.at("loss"));
  avg.train(trainInput(), {.steps = 1});
  EXPECT_EQ(avg.get_variable_value("global_step").values<int64_t>()[0], 32);
  (void)kernel31;
}

TEST_F(EstimatorTest, MovingAverageRestoreErrorsAreOneLine) {
  Estimator raw(ema_fn, config());
  raw.train(trainInput(), {.steps = 10});
  std::string ckpt =
      (fs::path(raw.model_dir()) / "model.ckpt-10.safetensors").string();

  // A checkpoint name the checkpoint lacks.
  Estimator missing(
      ema_fn, config(),
      Params{{"var_list", std::vector<std::string>{"dense/kernel/Missing=dense/"
                                                   "kernel"}}});
  const std::string why =
      ": the EstimatorSpec's scaffold.saver_var_list restores 'dense/kernel' "
      "from 'dense/kernel/Missing', which is not in the checkpoint";
  EXPECT_EQ(errorOf([&] { missing.evaluate(evalInput()); }), ckpt + why);
  Data d = makeData(4, 3);
  EXPECT_EQ(errorOf([&] {
              for (const Prediction &p : missing.predict(
                       numpy_input_fn(d.x, std::nullopt, {4, 1, false, 0})))
                (void)p;
            }),
            ckpt + why);
  auto receiver =
      build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}});
  EXPECT_EQ(errorOf([&] {
              missing.export_saved_model((dir_ / "export").string(), receiver);
            }),
            "Estimator.export_saved_model: checkpoint " + ckpt +
                " has no variable 'dense/kernel/Missing', which the "
                "EstimatorSpec's scaffold.saver_var_list restores "
                "'dense/kernel' from");

  // A variable the graph does not have, and a TRAIN spec with a var list.
  Estimator unknown(ema_fn, config(),
                    Params{{"var_list", std::vector<std::string>{
                                            "dense/kernel=dense/nope"}}});
  EXPECT_EQ(errorOf([&] { unknown.evaluate(evalInput()); }),
            "EstimatorSpec (mode eval): scaffold.saver_var_list restores "
            "'dense/nope' from 'dense/kernel', but 'dense/nope' is not a saved "
            "variable of the graph");
  Estimator inTrain(ema_fn, config(), Params{{"train_var_list", true}});
  EXPECT_EQ(errorOf([&] { inTrain.train(trainInput(), {.steps = 1}); }),
            "EstimatorSpec (mode train): scaffold.saver_var_list is for EVAL "
            "and PREDICT (what evaluate, predict and export_saved_model "
            "restore); training restores and saves every variable by its own "
            "name");
}

// --- Bad inputs --------------------------------------------------------------

TEST_F(EstimatorTest, AnEmptyInputWithoutSpecCannotBuildTheModel) {
  auto est = make();
  InputFn empty = [] {
    return Dataset::from_generator([]() -> std::optional<Batch> { return {}; });
  };
  const std::string why = ": the input_fn's dataset is empty and declares no "
                          "element spec, so the model cannot be built";
  EXPECT_EQ(errorOf([&] { est->train(empty, {.steps = 1}); }),
            "Estimator.train" + why);
  EXPECT_EQ(errorOf([&] { est->evaluate(empty); }), "Estimator.evaluate" + why);
  EXPECT_EQ(errorOf([&] { est->predict(empty); }), "Estimator.predict" + why);
}

TEST_F(EstimatorTest, BadInputsAreOneLine) {
  auto est = make();
  est->train(trainInput(), {.steps = 1});
  Data d = makeData(8, 1);
  Features wrongName{{"z", d.x.at("x")}};
  EXPECT_EQ(errorOf([&] {
              est->train(numpy_input_fn(wrongName, d.y, {4, 1, false, 0}),
                         {.steps = 1});
            }),
            "Estimator.train: input_fn feature 'z' is not an input of the "
            "model's train function (features: x)");
  Features wrongShape{
      {"x", TensorValue::of<float>({8, 5}, std::vector<float>(40, 0.f))}};
  EXPECT_EQ(errorOf([&] {
              est->evaluate(numpy_input_fn(wrongShape, d.y, {4, 1, false, 0}));
            }),
            "Estimator.evaluate: feature 'x' is f32[4,5]; the model's eval "
            "function takes f32[?,4]");
  TensorValue wrongLabels =
      TensorValue::of<int32_t>({8}, std::vector<int32_t>(8, 0));
  EXPECT_EQ(errorOf([&] {
              est->train(numpy_input_fn(d.x, wrongLabels, {4, 1, false, 0}),
                         {.steps = 1});
            }),
            "Estimator.train: labels is i32[4]; the model's train function "
            "takes i64[?]");
  EXPECT_EQ(errorOf([&] {
              est->train(numpy_input_fn(d.x, std::nullopt, {4, 1, false, 0}),
                         {.steps = 1});
            }),
            "Estimator.train: input_fn gave no labels; the model's train "
            "function takes i64[?]");

  EXPECT_EQ(errorOf([&] {
              est->train(
                  [] {
                    return Dataset::from_generator(
                        []() -> std::optional<Batch> {
                          Batch b;
                          b.features["x"] = TensorValue::of<float>({0, 4}, {});
                          b.labels = TensorValue::of<int64_t>({0}, {});
                          return b;
                        });
                  },
                  {.steps = 1});
            }),
            "Estimator.train: input_fn gave an empty batch");

  // A model_fn mistake surfaces when the Estimator builds the graph.
  Estimator noTrainOp(
      [](const TensorMap &f, const Tensor &l, ModeKeys mode, const Params &p,
         const RunConfig &c) {
        EstimatorSpec spec = classifier_fn(f, l, mode, p, c);
        spec.train_op = Operation();
        return spec;
      },
      config("bad"));
  EXPECT_EQ(errorOf([&] { noTrainOp.train(trainInput(), {.steps = 1}); }),
            "EstimatorSpec (mode train): Missing train_op");
}

} // namespace
} // namespace estimator
} // namespace estc

namespace estc {
namespace estimator {
namespace {

/// A tf.data-style input_fn over makeData(n, 1): shuffled rows, parallel
/// map, batches, prefetch; forever.
InputFn pipelineInput() {
  tiny::Data d = tiny::makeData(256, 1);
  data::Element rows = data::Element::tuple(
      {data::Element::dict({{"x", data::Element(d.x.at("x"))}}),
       data::Element(d.y)});
  return [rows] {
    return data::Dataset::from_tensor_slices(rows)
        .shuffle(100, 5)
        .repeat()
        .map([](data::Element e) { return e; }, 2)
        .batch(16)
        .prefetch(2);
  };
}

TEST_F(EstimatorTest, DataPipelineResumesWhereTheCheckpointWas) {
  // Uninterrupted: 30 steps. Interrupted: 10 steps by one Estimator, then
  // 20 by a new one over the same model_dir (a restarted process). The
  // second must see the batches the first run saw at steps 11..30.
  auto whole = make("whole");
  whole->train(pipelineInput(), {.steps = 30});
  {
    auto first = make("parts");
    first->train(pipelineInput(), {.steps = 10});
  }
  logs_.clear();
  auto second = make("parts");
  second->train(pipelineInput(), {.steps = 20});
  EXPECT_NE(std::find_if(logs_.begin(), logs_.end(),
                         [](const std::string &l) {
                           return l.rfind("Restored the input pipeline's "
                                          "position from ",
                                          0) == 0;
                         }),
            logs_.end());
  for (const std::string &name : whole->get_variable_names())
    EXPECT_EQ(whole->get_variable_value(name).data, // input state included
              second->get_variable_value(name).data)
        << name;
}

TEST_F(EstimatorTest, DataPipelineOfAnotherShapeStartsAfresh) {
  auto est = make();
  est->train(pipelineInput(), {.steps = 10});
  logs_.clear();
  est->train(tiny::trainInput(), {.steps = 5});
  bool logged = false;
  for (const std::string &l : logs_)
    logged |= l.find("Not restoring the input pipeline's position") !=
                  std::string::npos &&
              l.find("another pipeline") != std::string::npos;
  EXPECT_TRUE(logged);
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 15);
}

TEST_F(EstimatorTest, AGeneratorInputIsLoggedAsNotResumable) {
  auto est = make();
  auto input = [] {
    tiny::Data d = tiny::makeData(64, 1);
    auto done = std::make_shared<bool>(false);
    return Dataset::from_generator([d, done]() -> std::optional<Batch> {
      if (*done)
        return std::nullopt;
      *done = true;
      return Batch{d.x, d.y, {}};
    });
  };
  est->train(input, {.steps = 1});
  int logged = 0;
  for (const std::string &l : logs_)
    logged += l == "The input pipeline's position is not saved with the "
                   "checkpoints (a Dataset::from_generator of batches cannot "
                   "save its position); a restarted train() starts input_fn "
                   "afresh.";
  EXPECT_EQ(logged, 1);
}

TEST_F(EstimatorTest, SparseAndStringFeaturesAreNamed) {
  auto est = make();
  auto sparseInput = [] {
    data::Element e = data::Element::tuple(
        {data::Element::dict(
             {{"x", data::Element(
                        TensorValue::of<float>({2, 4}, std::vector<float>(8)))},
              {"tags",
               data::Element(data::SparseTensor::make(
                   {0, 0}, TensorValue::of<int64_t>({1}, {3}), {2, 5}))}}),
         data::Element(TensorValue::of<int64_t>({2}, {0, 1}))});
    return data::Dataset::from_tensors(e);
  };
  EXPECT_EQ(tiny::errorOf([&] { est->train(sparseInput, {.steps = 1}); }),
            "input: feature 'tags' is sparse (a SparseTensor); sparse and "
            "string features reach a model through feature columns: use a "
            "canned estimator or Estimator::set_host_transform");
  auto stringInput = [] {
    return data::Dataset::from_tensors(data::Element::dict(
        {{"x",
          data::Element(TensorValue::of<float>({1, 4}, std::vector<float>(4)))},
         {"name", data::Element(TensorValue::of_strings({1}, {"a"}))}}));
  };
  EXPECT_NE(tiny::errorOf([&] {
              est->train(stringInput, {.steps = 1});
            }).find("feature 'name' is a string tensor"),
            std::string::npos);
}

} // namespace
} // namespace estimator
} // namespace estc
