//===- EstimatorAotTest.cpp - The Estimator on an estc-compiled model ----===//
//
// The seed MLP compiled ahead of time by estc_add_model (Mlp.h / Mlp.o) run
// by Estimator(std::make_unique<Mlp>(), ...). This binary links the
// Estimator and the runtime only: the test EstimatorAotTest.NoLLVM checks
// with ldd that neither libLLVM nor libMLIR is among its libraries.
//
//===----------------------------------------------------------------------===//

#include "Mlp.h"

#include "estimator/Estimator.h"
#include "estimator/Logging.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;

/// A separable 10-class problem: class c raises features [78c, 78c + 10).
struct Data {
  Features x;
  TensorValue y;
};
Data makeData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0, 0.05f);
  std::vector<float> xs(n * 784);
  std::vector<int64_t> ys(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = static_cast<int64_t>(rng() % 10);
    ys[i] = c;
    for (int64_t j = 0; j < 784; ++j)
      xs[i * 784 + j] =
          (j >= 78 * c && j < 78 * c + 10 ? 1.f : 0.f) + noise(rng);
  }
  return {{{"x", TensorValue::of<float>({n, 784}, xs)}},
          TensorValue::of<int64_t>({n}, ys)};
}

class EstimatorAotTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-estimator-aot-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunConfig config() {
    RunConfigOptions o;
    o.model_dir = dir_.string();
    o.save_checkpoints_steps = 20;
    return RunConfig::from_tf_config("", o);
  }
  fs::path dir_;
  ScopedLogSink quiet_{[](const std::string &) {}};
};

TEST_F(EstimatorAotTest, TrainsEvaluatesPredicts) {
  Data train = makeData(320, 1), eval = makeData(200, 2);
  InputFn trainInput =
      numpy_input_fn(train.x, train.y, {32, std::nullopt, true, 3});
  InputFn evalInput = numpy_input_fn(eval.x, eval.y, {50, 1, false, 0});
  {
    Estimator est(std::make_unique<Mlp>(), config());
    EXPECT_EQ(est.compile_count(), 0);
    EvalResults before = est.evaluate(evalInput);
    est.train(trainInput, {.steps = 60});
    EvalResults after = est.evaluate(evalInput);
    EXPECT_EQ(after.at("global_step"), 60);
    EXPECT_LT(after.at("loss"), before.at("loss") * 0.5);
    EXPECT_GT(after.at("accuracy"), 0.9);
  }
  // A new process resumes from the checkpoint.
  Estimator est(std::make_unique<Mlp>(), config());
  est.train(trainInput, {.max_steps = 80});
  EXPECT_EQ(est.get_variable_value("global_step").values<int64_t>()[0], 80);

  int64_t correct = 0, n = 0;
  std::vector<int64_t> labels = eval.y.values<int64_t>();
  for (const Prediction &p :
       est.predict(evalInput, {.predict_keys = {"classes"}})) {
    correct += p.at("classes").values<int64_t>()[0] == labels[n];
    ++n;
  }
  EXPECT_EQ(n, 200);
  EXPECT_GT(correct, 180);

  // An AOT model has only the outputs estc compiled into it.
  struct Fetch : SessionRunHook {
    std::vector<std::string> graph_fetches() const override {
      return {"dense/Relu"};
    }
  };
  try {
    est.train(trainInput, {.hooks = {std::make_shared<Fetch>()}, .steps = 1});
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(),
                 "Estimator: hook graph fetch 'dense/Relu' is not an output "
                 "'tensors/dense/Relu' of the compiled model Mlp's train "
                 "function (an AOT model has only what estc compiled into it)");
  }
}

// An AOT model runs on the device it was compiled for; RunConfig.device
// must agree, before anything runs.
TEST_F(EstimatorAotTest, DeviceMustMatchTheCompiledModel) {
  RunConfigOptions o;
  o.device = "cuda:1";
  try {
    Estimator est(std::make_unique<Mlp>(), config().replace(o));
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(),
                 "Estimator: the compiled model Mlp runs on the CPU, but "
                 "RunConfig.device is \"cuda:1\" (compile it with estc "
                 "--target=cuda, or set RunConfigOptions::device)");
  }
}

} // namespace
} // namespace estimator
} // namespace estc
