//===- EstimatorStepTest.cpp - What one step of Estimator::train costs ----===//
//
// Issue 15 ("microsecond steps"): the loop around a small model's compiled
// step (hooks, input, fetches) must stay cheap. Timings depend on the
// machine's load, so nothing here is timed: this program replaces the global
// operator new to count heap allocations, and checks that a steady-state
// step of train() makes no more than the hook API itself needs. It also
// checks that the path that makes that possible for in-memory arrays
// (numpy_input_fn's rows gathered straight into the model's inputs, no
// Batch built) trains, evaluates and resumes exactly as the batches it
// stands for.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/Estimator.h"
#include "estimator/Logging.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

namespace {
std::atomic<int64_t> gAllocations{0};

void *counted(std::size_t bytes, std::size_t alignment = 0) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0)
    bytes = 1;
  if (alignment > alignof(std::max_align_t))
    return std::aligned_alloc(alignment,
                              (bytes + alignment - 1) / alignment * alignment);
  return std::malloc(bytes);
}
void *countedOrThrow(std::size_t bytes, std::size_t alignment = 0) {
  if (void *p = counted(bytes, alignment))
    return p;
  throw std::bad_alloc();
}
} // namespace

// Every allocating form of operator new, and the deletes that free them.
void *operator new(std::size_t n) { return countedOrThrow(n); }
void *operator new[](std::size_t n) { return countedOrThrow(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  return counted(n);
}
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
  return counted(n);
}
void *operator new(std::size_t n, std::align_val_t a) {
  return countedOrThrow(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a) {
  return countedOrThrow(n, static_cast<std::size_t>(a));
}
void *operator new(std::size_t n, std::align_val_t a,
                   const std::nothrow_t &) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a,
                     const std::nothrow_t &) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;
using namespace tiny;

const auto *const kCacheEnvironment = ::testing::AddGlobalTestEnvironment(
    new JitCacheEnvironment("estc-estimator-step-test-cache-"));

class EstimatorStepTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-estimator-step-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// bench/estimator_bench's configuration: no checkpoint, summary or log
  /// line while it trains (the hooks are installed all the same).
  std::unique_ptr<Estimator> make(const std::string &sub = "model") {
    RunConfigOptions o;
    o.model_dir = (dir_ / sub).string();
    o.tf_random_seed = 42;
    o.save_checkpoints_steps = 1000000000;
    o.save_summary_steps = 0;
    o.log_step_count_steps = 1000000000;
    o.intra_op_parallelism_threads = 1;
    return std::make_unique<Estimator>(
        classifier_fn, RunConfig::from_tf_config("", o), Params{});
  }

  fs::path dir_;
  ScopedLogSink quiet_{[](const std::string &) {}};
};

/// The allocation count at the end of every step (its own after_run makes
/// none: the vector is reserved).
struct AllocationProbe : SessionRunHook {
  std::vector<int64_t> counts;
  explicit AllocationProbe(size_t steps) { counts.reserve(steps); }
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    counts.push_back(gAllocations.load(std::memory_order_relaxed));
  }
};

TEST_F(EstimatorStepTest, ASteadyStateStepAllocatesOnlyWhatTheHookApiNeeds) {
  auto est = make();
  auto probe = std::make_shared<AllocationProbe>(300);
  est->train(trainInput(), {.hooks = {probe}, .steps = 300});
  ASSERT_EQ(probe->counts.size(), 300u);
  // Steps 101..300: compiled, warmed up, the fetches the same every step.
  double perStep =
      static_cast<double>(probe->counts[299] - probe->counts[99]) / 200.0;
  // What is left is the API's own: the fetch vector each of NanTensorHook,
  // CheckpointSaverHook, StepCounterHook and StopAtStepHook returns from
  // before_run. Everything else (the batch, the fetch lists and values, each
  // hook's SessionRunValues, the phases, the global step, train()'s loss
  // through MonitoredSession::run_step) is reused. Before issue 15 a step
  // made 42; before run_step, 5.
  EXPECT_LE(perStep, 4.0);
}

/// (global_step, loss) at every step.
struct LossRecorder : SessionRunHook {
  std::vector<std::pair<int64_t, float>> seen;
  SessionRunArgs before_run(SessionRunContext &) override {
    return {{"global_step", "loss"}};
  }
  void after_run(SessionRunContext &, const SessionRunValues &v) override {
    seen.emplace_back(
        static_cast<int64_t>(v.results.at("global_step").element(0)),
        static_cast<float>(v.results.at("loss").element(0)));
  }
};

/// `input`'s batches through a generator: the Estimator's general path.
InputFn throughGenerator(InputFn input) {
  return [input] {
    auto inner = std::make_shared<Dataset>(input());
    return Dataset::from_generator([inner] { return inner->next(); });
  };
}

TEST_F(EstimatorStepTest, ArraysFedDirectlyTrainAsTheirBatches) {
  // 100 examples, batches of 32, 3 shuffled epochs: batches run across the
  // epochs' ends and the last one has 12 rows.
  InputFn arrays = trainInput(100, 32, 3);
  auto direct = make("direct");
  auto viaBatches = make("batches");
  auto directLosses = std::make_shared<LossRecorder>();
  auto batchLosses = std::make_shared<LossRecorder>();
  direct->train(arrays, {.hooks = {directLosses}});
  viaBatches->train(throughGenerator(arrays), {.hooks = {batchLosses}});
  ASSERT_EQ(directLosses->seen.size(), 10u);
  EXPECT_EQ(directLosses->seen, batchLosses->seen);
  for (const std::string &name : viaBatches->get_variable_names())
    EXPECT_EQ(direct->get_variable_value(name).data,
              viaBatches->get_variable_value(name).data)
        << name;
  // Evaluation too (batches of 64, 64, 64 and 8).
  EXPECT_EQ(direct->evaluate(evalInput()),
            viaBatches->evaluate(throughGenerator(evalInput())));
}

TEST_F(EstimatorStepTest, ArraysResumeWhereTheCheckpointWas) {
  auto whole = make("whole");
  whole->train(trainInput(100, 32), {.steps = 25});
  {
    auto first = make("parts");
    first->train(trainInput(100, 32), {.steps = 10});
  }
  auto second = make("parts");
  second->train(trainInput(100, 32), {.steps = 15});
  for (const std::string &name : whole->get_variable_names())
    EXPECT_EQ(whole->get_variable_value(name).data, // the input's position too
              second->get_variable_value(name).data)
        << name;
}

} // namespace
} // namespace estimator
} // namespace estc
