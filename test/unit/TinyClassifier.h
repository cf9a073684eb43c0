//===- TinyClassifier.h - The Estimator tests' small model -*- C++ -*-===//
//
// What EstimatorTest and TrainAndEvaluateTest train through the real
// Estimator (JIT), and the error helper they share with HooksTest:
//   - classifier_fn: 4 features, a dense relu layer (params "hidden", 8),
//     3 classes, SGD (params "learning_rate", 0.5), accuracy;
//   - makeData / trainInput / evalInput: x uniform in [-1, 1]^4, class =
//     argmax(x0 + x1, x2, x3), train data seed 1, eval data seed 2;
//   - JitCacheEnvironment: one JIT cache per test process, so no test loads
//     an object from an earlier build;
//   - errorOf: the message a call throws.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_TINYCLASSIFIER_H
#define ESTC_TEST_UNIT_TINYCLASSIFIER_H

#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace estc {
namespace estimator {
namespace tiny {

/// Points ESTC_CACHE_DIR at a fresh directory `<tmp>/<prefix><pid>` for the
/// whole test program; register it once with
/// ::testing::AddGlobalTestEnvironment.
class JitCacheEnvironment : public ::testing::Environment {
public:
  explicit JitCacheEnvironment(std::string prefix)
      : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("ESTC_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

private:
  std::string prefix_;
  std::filesystem::path dir_;
};

inline EstimatorSpec classifier_fn(const TensorMap &features,
                                   const Tensor &labels, ModeKeys mode,
                                   const Params &params,
                                   const RunConfig &config) {
  (void)config;
  Tensor hidden =
      layers::dense(features["x"], params.get<int64_t>("hidden", 8), nn::relu);
  Tensor logits = layers::dense(hidden, 3);
  EstimatorSpec spec(mode);
  spec.predictions = {{"classes", argmax(logits, 1)},
                      {"probabilities", nn::softmax(logits)}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  spec.train_op =
      train::GradientDescentOptimizer(params.get<double>("learning_rate", 0.5))
          .minimize(spec.loss);
  spec.eval_metric_ops = {
      {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
  return spec;
}

/// n examples: x uniform in [-1, 1]^4, class = argmax(x0 + x1, x2, x3).
struct Data {
  Features x;
  TensorValue y;
};
inline Data makeData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(n * 4);
  std::vector<int64_t> ys(n);
  for (int64_t i = 0; i < n; ++i) {
    float *r = &xs[i * 4];
    for (int j = 0; j < 4; ++j)
      r[j] = u(rng);
    float s[3] = {r[0] + r[1], r[2], r[3]};
    ys[i] = std::max_element(s, s + 3) - s;
  }
  return {{{"x", TensorValue::of<float>({n, 4}, xs)}},
          TensorValue::of<int64_t>({n}, ys)};
}

/// Shuffled batches (seed 7) of makeData(n, 1), `epochs` times (unset:
/// forever).
inline InputFn trainInput(int64_t n = 256, int64_t batch = 32,
                          std::optional<int64_t> epochs = std::nullopt) {
  Data d = makeData(n, 1);
  return numpy_input_fn(d.x, d.y, {batch, epochs, true, 7});
}
/// One epoch of makeData(n, 2) in order.
inline InputFn evalInput(int64_t n = 200, int64_t batch = 64) {
  Data d = makeData(n, 2);
  return numpy_input_fn(d.x, d.y, {batch, 1, false, 0});
}

/// The message of the exception `f()` throws, or "(no error)".
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace tiny
} // namespace estimator
} // namespace estc

#endif // ESTC_TEST_UNIT_TINYCLASSIFIER_H
