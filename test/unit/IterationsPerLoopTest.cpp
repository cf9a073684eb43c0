//===- IterationsPerLoopTest.cpp - RunConfig::iterations_per_loop ---------===//
//
// TPUEstimator's iterations_per_loop on the CPU (docs/design/codegen-abi.md,
// "Multi-step loops"):
//   - the compiled `train_loop` (JIT and estc --train-loop) runs N steps in
//     one call with exactly the variables and outputs of N calls of `train`;
//     a failed run-time check stops it at its step, the steps before it
//     applied;
//   - through the Estimator: the same checkpoints and losses as single
//     steps, hooks once per loop at its boundaries, loops cut at max_steps,
//     at the end of the input and before a batch of another size; the host
//     loop (a model without train_loop) gives the same results;
//   - the one-line errors (RunConfig, set_steps, a sparse model's loop).
//
//===----------------------------------------------------------------------===//

#include "Mlp.h"
#include "MlpLoop.h"
#include "ModelTesting.h"
#include "TinyClassifier.h"

#include "compiler/Target/Manifest.h"
#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "lib/Models/Models.h"
#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <cstring>
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
    new JitCacheEnvironment("estc-iterations-per-loop-test-cache-"));

// --- The compiled loop, without the Estimator
// ---------------------------------

constexpr int64_t kBatch = 16, kSteps = 5;

/// kSteps batches of MNIST-shaped inputs and labels in [0, 10).
struct Batches {
  std::vector<float> x;
  std::vector<int64_t> y;
};
Batches randomBatches() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0, 1);
  Batches b;
  b.x.resize(kSteps * kBatch * 784);
  b.y.resize(kSteps * kBatch);
  for (float &v : b.x)
    v = u(rng);
  for (int64_t &v : b.y)
    v = static_cast<int64_t>(rng() % 10);
  return b;
}

/// Every variable's bytes.
std::vector<std::string> variables(rt::CompiledModel &m) {
  std::vector<std::string> out;
  for (int i = 0; i < m.spec().numVariables; ++i)
    out.emplace_back(static_cast<const char *>(m.variable_data(i)),
                     static_cast<size_t>(m.variable_bytes(i)));
  return out;
}

/// Runs `steps` single train steps of `m` on the first batches of `b`.
void singleSteps(rt::CompiledModel &m, const Batches &b, int64_t steps) {
  int train = m.function_index("train");
  for (int64_t i = 0; i < steps; ++i) {
    std::memcpy(m.input_data(train, 0), &b.x[i * kBatch * 784],
                kBatch * 784 * sizeof(float));
    std::memcpy(m.input_data(train, 1), &b.y[i * kBatch],
                kBatch * sizeof(int64_t));
    m.run(train);
  }
}

/// Stages every batch of `b` in train_loop's inputs.
void stage(rt::CompiledModel &m, const Batches &b) {
  int loop = m.function_index("train_loop");
  m.set_steps(loop, kSteps);
  std::memcpy(m.input_data(loop, 0), b.x.data(), b.x.size() * sizeof(float));
  std::memcpy(m.input_data(loop, 1), b.y.data(), b.y.size() * sizeof(int64_t));
}

std::unique_ptr<JitModel> compileMlpWithLoop() {
  JitOptions options;
  options.trainLoop = true;
  std::unique_ptr<JitModel> m =
      testing::jitCompileForTest(models::build_mlp(3), "Mlp", options);
  if (m) {
    m->set_batch(kBatch);
    m->run("init");
  }
  return m;
}

TEST(CompiledLoop, IsNSingleStepsBitForBit) {
  std::unique_ptr<JitModel> single = compileMlpWithLoop();
  std::unique_ptr<JitModel> looped = compileMlpWithLoop();
  ASSERT_TRUE(single && looped);
  const FunctionInfo *loopInfo = looped->manifest().findFunction("train_loop");
  ASSERT_NE(loopInfo, nullptr);
  EXPECT_EQ(loopInfo->loopOf, "train");
  EXPECT_EQ(loopInfo->inputs[0].shape,
            (std::vector<int64_t>{rt::kStepsDim, rt::kBatchDim, 784}));
  ASSERT_EQ(variables(*single), variables(*looped)); // the same @init

  Batches b = randomBatches();
  singleSteps(*single, b, kSteps);
  stage(*looped, b);
  looped->run("train_loop");
  EXPECT_EQ(variables(*single), variables(*looped));
  // The outputs are the last step's.
  int train = single->function_index("train");
  int loop = looped->function_index("train_loop");
  float singleLoss, loopLoss;
  std::memcpy(&singleLoss,
              single->output_data(train, single->output_index(train, "loss")),
              sizeof(float));
  std::memcpy(&loopLoss,
              looped->output_data(loop, looped->output_index(loop, "loss")),
              sizeof(float));
  EXPECT_EQ(singleLoss, loopLoss);
  int step = looped->variable_index("global_step");
  EXPECT_EQ(*static_cast<int64_t *>(looped->variable_data(step)), kSteps);
}

TEST(CompiledLoop, AFailedCheckStopsAtItsStepWithTheStepsBeforeApplied) {
  std::unique_ptr<JitModel> single = compileMlpWithLoop();
  std::unique_ptr<JitModel> looped = compileMlpWithLoop();
  ASSERT_TRUE(single && looped);
  Batches b = randomBatches();
  b.y[2 * kBatch + 5] = 10; // step 3, batch row 5
  stage(*looped, b);
  std::string error = errorOf([&] { looped->run("train_loop"); });
  EXPECT_NE(error.find("label 10 at batch row 5 is outside [0, 10)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(in step 3 of 5 of train_loop; the steps before it "
                       "were applied)"),
            std::string::npos)
      << error;
  singleSteps(*single, b, 2);
  EXPECT_EQ(variables(*single), variables(*looped));
}

TEST(CompiledLoop, SetStepsErrorsAreOneLine) {
  std::unique_ptr<JitModel> m = compileMlpWithLoop();
  ASSERT_TRUE(m);
  EXPECT_EQ(errorOf([&] { m->set_steps(m->function_index("train"), 2); }),
            "Mlp: train: set_steps: not a multi-step loop (no input's "
            "dimension 0 is its number of steps)");
  EXPECT_EQ(errorOf([&] { m->set_steps(m->function_index("train_loop"), 0); }),
            "Mlp: train_loop: set_steps(0): a loop runs at least one step");
  EXPECT_EQ(m->steps(m->function_index("train_loop")), 1);
}

TEST(CompiledLoop, ASparseOrMissingStepHasNoLoop) {
  Manifest m;
  m.name = "Wide";
  FunctionInfo train;
  train.name = "train";
  train.inputs.push_back({"features/ids", rt::DType::I64, {rt::kValuesDim}});
  m.functions.push_back(train);
  llvm::Error e = addStepLoop(m, "train");
  EXPECT_EQ(llvm::toString(std::move(e)),
            "a multi-step loop of @train: input 'features/ids' is sparse (its "
            "number of values changes from step to step); such a model runs "
            "its steps one call each");
  e = addStepLoop(m, "fit");
  EXPECT_EQ(llvm::toString(std::move(e)),
            "a multi-step loop of @fit: the model has no compiled @fit");
  EXPECT_EQ(m.functions.size(), 1u);
}

// --- Through the Estimator
// -----------------------------------------------------

std::string fileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Records the global step and loss each after_run sees.
class BoundaryHook : public SessionRunHook {
public:
  SessionRunArgs before_run(SessionRunContext &) override {
    ++beforeRuns;
    return {{"loss", "global_step"}};
  }
  void after_run(SessionRunContext &, const SessionRunValues &v) override {
    steps.push_back(
        static_cast<int64_t>(v.results.at("global_step").element(0)));
    losses.push_back(v.results.at("loss").element(0));
  }
  int beforeRuns = 0;
  std::vector<int64_t> steps;
  std::vector<double> losses;
};

class IterationsPerLoopTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("estc-iterations-per-loop-test-" + std::to_string(::getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunConfig config(int64_t iterations, const std::string &sub) {
    RunConfigOptions o;
    o.model_dir = (dir_ / sub).string();
    o.tf_random_seed = 42;
    o.save_checkpoints_steps = 10;
    o.save_summary_steps = 0;
    o.iterations_per_loop = iterations;
    return RunConfig::from_tf_config("", o);
  }
  bool logged(const std::string &text) const {
    for (const std::string &line : logs_)
      if (line.find(text) != std::string::npos)
        return true;
    return false;
  }

  fs::path dir_;
  std::vector<std::string> logs_;
  ScopedLogSink sink_{[this](const std::string &l) { logs_.push_back(l); }};
};

TEST_F(IterationsPerLoopTest, SameCheckpointsAsSingleStepsHooksAtBoundaries) {
  std::vector<std::shared_ptr<BoundaryHook>> hooks;
  std::vector<std::string> checkpoints;
  for (int64_t n : {1, 4}) {
    Estimator est(classifier_fn, config(n, "n" + std::to_string(n)),
                  Params{{"hidden", 8}});
    auto hook = std::make_shared<BoundaryHook>();
    est.train(trainInput(), {.hooks = {hook}, .max_steps = 23});
    hooks.push_back(hook);
    ASSERT_EQ(fs::path(*est.latest_checkpoint()).filename(), "model.ckpt-23");
    checkpoints.push_back(
        fileBytes(train::checkpoint_file(*est.latest_checkpoint())));
  }
  EXPECT_FALSE(logged("no compiled train_loop"));
  EXPECT_EQ(checkpoints[0], checkpoints[1]);
  // One round of hooks per loop; the last loop stops at max_steps.
  EXPECT_EQ(hooks[1]->steps, (std::vector<int64_t>{4, 8, 12, 16, 20, 23}));
  EXPECT_EQ(hooks[1]->beforeRuns, 6);
  // Each loop's loss is its last step's.
  ASSERT_EQ(hooks[0]->losses.size(), 23u);
  for (size_t i = 0; i < hooks[1]->steps.size(); ++i)
    EXPECT_EQ(hooks[1]->losses[i],
              hooks[0]->losses[static_cast<size_t>(hooks[1]->steps[i] - 1)])
        << "step " << hooks[1]->steps[i];
}

TEST_F(IterationsPerLoopTest, ALoopEndsWithTheInputAndBeforeASmallerBatch) {
  // 70 examples, batch 32, one epoch: 32, 32, 6. A loop of 4 runs the two
  // full batches; the batch of 6 is a loop of its own; then the input is out.
  std::vector<std::string> checkpoints;
  std::vector<std::vector<int64_t>> steps;
  for (int64_t n : {1, 4}) {
    Estimator est(classifier_fn, config(n, "n" + std::to_string(n)),
                  Params{{"hidden", 8}});
    auto hook = std::make_shared<BoundaryHook>();
    est.train(trainInput(70, 32, 1), {.hooks = {hook}});
    steps.push_back(hook->steps);
    checkpoints.push_back(
        fileBytes(train::checkpoint_file(*est.latest_checkpoint())));
  }
  EXPECT_EQ(steps[0], (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(steps[1], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(checkpoints[0], checkpoints[1]);
}

TEST_F(IterationsPerLoopTest, ABadLabelNamesTheStepOfTheLoop) {
  Data d = makeData(128, 1);
  std::vector<int64_t> labels = d.y.values<int64_t>();
  labels[70] = 7; // batch 3 (0-based 2), row 6
  d.y = TensorValue::of<int64_t>({128}, labels);
  Estimator est(classifier_fn, config(4, "model"), Params{{"hidden", 8}});
  std::string error =
      errorOf([&] { est.train(numpy_input_fn(d.x, d.y, {32, 1, false, 0})); });
  EXPECT_NE(error.find("label 7 at batch row 6 is outside [0, 3) (in step 3 of "
                       "4 of train_loop; the steps before it were applied)"),
            std::string::npos)
      << error;
}

TEST_F(IterationsPerLoopTest, AotLoopAndHostLoopMatchSingleSteps) {
  // The seed MLP compiled by estc: Mlp has no train_loop (the Estimator runs
  // the loop's steps one call each), MlpLoop has (estc --train-loop).
  std::mt19937 rng(5);
  std::vector<float> xs(96 * 784);
  std::vector<int64_t> ys(96);
  for (int64_t i = 0; i < 96; ++i) {
    ys[i] = static_cast<int64_t>(rng() % 10);
    for (int64_t j = 0; j < 784; ++j)
      xs[i * 784 + j] = static_cast<float>(rng() % 100) / 100.f;
  }
  Features x{{"x", TensorValue::of<float>({96, 784}, xs)}};
  TensorValue y = TensorValue::of<int64_t>({96}, ys);
  std::vector<std::string> checkpoints;
  struct Run {
    int64_t iterations;
    bool compiledLoop;
  };
  for (Run run : {Run{1, false}, Run{3, false}, Run{3, true}}) {
    logs_.clear();
    RunConfig c =
        config(run.iterations, "run" + std::to_string(checkpoints.size()));
    std::unique_ptr<rt::CompiledModel> model;
    if (run.compiledLoop)
      model = std::make_unique<MlpLoop>();
    else
      model = std::make_unique<Mlp>();
    Estimator est(std::move(model), c);
    est.train(numpy_input_fn(x, y, {32, std::nullopt, false, 0}), {.steps = 7});
    EXPECT_EQ(logged("iterations_per_loop=3: the model has no compiled "
                     "train_loop"),
              run.iterations == 3 && !run.compiledLoop);
    ASSERT_EQ(fs::path(*est.latest_checkpoint()).filename(), "model.ckpt-7");
    checkpoints.push_back(
        fileBytes(train::checkpoint_file(*est.latest_checkpoint())));
  }
  EXPECT_EQ(checkpoints[0], checkpoints[1]);
  EXPECT_EQ(checkpoints[0], checkpoints[2]);
}

TEST(IterationsPerLoopConfig, MustBePositive) {
  RunConfigOptions o;
  o.iterations_per_loop = 0;
  EXPECT_EQ(errorOf([&] { RunConfig::from_tf_config("", o); }),
            "RunConfig: iterations_per_loop should be > 0, given: 0");
  o.iterations_per_loop = 8;
  EXPECT_EQ(RunConfig::from_tf_config("", o).iterations_per_loop(), 8);
  EXPECT_EQ(RunConfig().iterations_per_loop(), 1);
}

} // namespace
} // namespace estimator
} // namespace estc
