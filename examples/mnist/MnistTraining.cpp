//===- MnistTraining.cpp - Train and evaluate a compiled MNIST classifier -===//

#include "examples/mnist/MnistTraining.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc {
namespace mnist {
namespace {

/// A function's image input and label input (labels: -1 when `withLabels`
/// is false), checked against the data set's image size.
struct Feed {
  int function;
  int images;
  int labels = -1;
};

[[noreturn]] void fail(const rt::CompiledModel &model, const std::string &fn,
                       const std::string &what) {
  throw std::invalid_argument(std::string("model '") + model.spec().name +
                              "', function '" + fn + "': " + what);
}

Feed feedOf(rt::CompiledModel &model, const std::string &name,
            const data::ImageDataset &data, bool withLabels) {
  Feed feed;
  feed.function = model.function_index(name);
  const rt::FunctionSpec &fn = model.spec().functions[feed.function];
  feed.images = model.input_index(feed.function, "features/x");
  const rt::TensorSpec &x = fn.inputs[feed.images];
  int64_t pixels = rt::numElements(x.rank, x.shape, 1);
  if (x.dtype != rt::DType::F32 || x.rank < 1 || x.shape[0] != rt::kBatchDim ||
      pixels != data.rows * data.cols)
    fail(model, name,
         "input 'features/x' must be f32 [batch, ...] with " +
             std::to_string(data.rows * data.cols) +
             " values per example (the images are " +
             std::to_string(data.rows) + "x" + std::to_string(data.cols) +
             "), it holds " + std::to_string(pixels));
  if (withLabels) {
    feed.labels = model.input_index(feed.function, "labels");
    const rt::TensorSpec &y = fn.inputs[feed.labels];
    if (y.dtype != rt::DType::I64 || rt::numElements(y.rank, y.shape, 1) != 1)
      fail(model, name, "input 'labels' must be i64 [batch]");
  }
  return feed;
}

/// Copies examples `order[begin, begin + n)` into the feed's inputs.
void fill(rt::CompiledModel &model, const Feed &feed,
          const data::ImageDataset &data, const std::vector<int64_t> &order,
          int64_t begin, int64_t n) {
  const int64_t pixels = data.rows * data.cols;
  auto *x = static_cast<float *>(model.input_data(feed.function, feed.images));
  int64_t *y = feed.labels < 0 ? nullptr
                               : static_cast<int64_t *>(model.input_data(
                                     feed.function, feed.labels));
  for (int64_t i = 0; i < n; ++i) {
    int64_t e = order[begin + i];
    std::memcpy(x + i * pixels, data.images.data() + e * pixels,
                pixels * sizeof(float));
    if (y)
      y[i] = data.labels[e];
  }
}

float scalarOutput(rt::CompiledModel &model, int function,
                   const std::string &key) {
  return *static_cast<float *>(
      model.output_data(function, model.output_index(function, key)));
}

void checkBatch(rt::CompiledModel &model, const std::string &fn,
                int64_t batch) {
  if (batch < 1)
    fail(model, fn, "batch must be positive, got " + std::to_string(batch));
}

/// Runs `feed.function` on `data` in order, `batch` examples at a time (the
/// last batch partial); `after(begin, n)` reads each run's outputs.
void runInOrder(rt::CompiledModel &model, const Feed &feed,
                const data::ImageDataset &data, int64_t batch,
                const std::function<void(int64_t begin, int64_t n)> &after) {
  std::vector<int64_t> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  for (int64_t begin = 0; begin < data.size(); begin += batch) {
    int64_t n = std::min(batch, data.size() - begin);
    model.set_batch(n);
    fill(model, feed, data, order, begin, n);
    model.run(feed.function);
    after(begin, n);
  }
}

} // namespace

float train(rt::CompiledModel &model, const data::ImageDataset &data,
            const TrainConfig &config) {
  Feed feed = feedOf(model, "train", data, /*withLabels=*/true);
  checkBatch(model, "train", config.batch);
  if (data.size() < config.batch)
    fail(model, "train",
         "the data set has " + std::to_string(data.size()) +
             " examples, fewer than one batch of " +
             std::to_string(config.batch));
  model.set_batch(config.batch);
  std::vector<int64_t> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(config.shuffle_seed);
  int64_t next = data.size(); // forces a shuffle first
  float loss = 0;
  for (int64_t step = 1; step <= config.steps; ++step) {
    if (next + config.batch > data.size()) {
      std::shuffle(order.begin(), order.end(), rng);
      next = 0;
    }
    fill(model, feed, data, order, next, config.batch);
    next += config.batch;
    model.run(feed.function);
    loss = scalarOutput(model, feed.function, "loss");
    if (config.log_every > 0 && step % config.log_every == 0 && config.on_log)
      config.on_log(step, loss);
  }
  return loss;
}

Evaluation evaluate(rt::CompiledModel &model, const data::ImageDataset &data,
                    int64_t batch) {
  Feed feed = feedOf(model, "eval", data, /*withLabels=*/true);
  checkBatch(model, "eval", batch);
  int metrics = model.function_index("eval_metrics");
  model.reset_local_variables();
  Evaluation result;
  double lossSum = 0;
  runInOrder(model, feed, data, batch, [&](int64_t, int64_t n) {
    lossSum +=
        static_cast<double>(scalarOutput(model, feed.function, "loss")) * n;
    result.examples += n;
  });
  model.run(metrics);
  result.accuracy = scalarOutput(model, metrics, "metrics/accuracy");
  result.loss = result.examples ? lossSum / result.examples : 0;
  return result;
}

double predict_accuracy(rt::CompiledModel &model,
                        const data::ImageDataset &data, int64_t batch) {
  Feed feed = feedOf(model, "predict", data, /*withLabels=*/false);
  checkBatch(model, "predict", batch);
  int classes = model.output_index(feed.function, "predictions/classes");
  int64_t correct = 0;
  runInOrder(model, feed, data, batch, [&](int64_t begin, int64_t n) {
    const auto *predicted =
        static_cast<const int64_t *>(model.output_data(feed.function, classes));
    for (int64_t i = 0; i < n; ++i)
      correct += predicted[i] == data.labels[begin + i];
  });
  return data.size() ? static_cast<double>(correct) / data.size() : 0;
}

} // namespace mnist
} // namespace estc
