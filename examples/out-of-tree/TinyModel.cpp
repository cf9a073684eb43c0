//===- TinyModel.cpp - The out-of-tree example's model and data ---------===//

#include "TinyModel.h"

#include "estc/graph.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace classifier {

using namespace estc;
using estimator::EstimatorSpec;

EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const estimator::Params &params,
                       const estimator::RunConfig &) {
  Tensor hidden = layers::dense(features["x"], 16, nn::relu);
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

graph::GraphDef build_graph(int64_t seed) {
  InputSpec inputs{{{"x", DType::Float32, {-1, 4}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
  estimator::Params params;
  estimator::RunConfig config;
  return build_graph_def(
      inputs,
      [&](Graph &, const TensorMap &features, const Tensor &labels,
          ModeKeys mode) {
        EstimatorSpec spec = model_fn(features, labels, mode, params, config);
        spec.validate();
        return spec.mode_signature();
      },
      seed);
}

namespace {

/// n examples: x uniform in [-1, 1]^4, class = argmax(x0 + x1, x2, x3).
estimator::InputFn input_fn(int64_t n, uint32_t seed, bool train) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(n * 4);
  std::vector<int64_t> ys(n);
  for (int64_t i = 0; i < n; ++i) {
    float *row = &xs[i * 4];
    for (int j = 0; j < 4; ++j)
      row[j] = u(rng);
    float scores[3] = {row[0] + row[1], row[2], row[3]};
    ys[i] = std::max_element(scores, scores + 3) - scores;
  }
  estimator::Features x{{"x", TensorValue::of<float>({n, 4}, xs)}};
  TensorValue y = TensorValue::of<int64_t>({n}, ys);
  if (train) // shuffled batches of 32, forever
    return estimator::numpy_input_fn(x, y, {32, std::nullopt, true, 7});
  return estimator::numpy_input_fn(x, y, {64, 1, false, 0});
}

} // namespace

int train_and_check(const char *name,
                    const std::function<std::unique_ptr<estimator::Estimator>(
                        const estimator::RunConfig &)> &make,
                    int64_t steps) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 (std::string(name) + "-" + std::to_string(::getpid()));
  try {
    estimator::RunConfigOptions o;
    o.model_dir = dir.string();
    o.tf_random_seed = kSeed;
    std::unique_ptr<estimator::Estimator> est = make(estimator::RunConfig(o));
    estimator::EvalResults before = est->evaluate(input_fn(256, 2, false));
    est->train(input_fn(512, 1, true), {.steps = steps});
    estimator::EvalResults after = est->evaluate(input_fn(256, 2, false));
    fs::remove_all(dir);
    std::cout << name << ": before training loss " << before.at("loss")
              << " accuracy " << before.at("accuracy") << "; after " << steps
              << " steps loss " << after.at("loss") << " accuracy "
              << after.at("accuracy") << "\n";
    if (after.at("loss") < 0.5 * before.at("loss") &&
        after.at("accuracy") > 0.8)
      return 0;
    std::cerr << name << ": error: did not learn (want loss below half and "
              << "accuracy above 0.8)\n";
  } catch (const std::exception &e) {
    fs::remove_all(dir);
    std::cerr << name << ": error: " << e.what() << "\n";
  }
  return 1;
}

} // namespace classifier
