//===- MnistTraining.h - Train and evaluate a compiled MNIST classifier --===//
//
// The loops an Estimator runs, written directly against CompiledModel for the
// seed MNIST models (examples/models: the MLP and the ConvNet, AOT or JIT):
// train() feeds shuffled batches to the compiled @train, evaluate() runs
// @eval over a data set and reads @eval_metrics. Used by the mnist_train tool
// and the learning tests.
//
// The model's "features/x" input must hold one image per example (28 x 28
// pixels, as [?, 784] or [?, 28, 28, 1]) and "labels" one i64 class. A
// model or data set that does not fit throws std::invalid_argument with one
// line naming the model, function and tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_MNIST_MNISTTRAINING_H
#define ESTC_EXAMPLES_MNIST_MNISTTRAINING_H

#include "estc/data.h"
#include "estc/runtime.h"

#include <cstdint>
#include <functional>

namespace estc {
namespace mnist {

struct TrainConfig {
  int64_t batch = 128;
  int64_t steps = 1000;
  /// Seeds the shuffle of the examples (one permutation per epoch).
  uint64_t shuffle_seed = 1;
  /// on_log is called every `log_every` steps (0: never).
  int64_t log_every = 0;
  /// (step, loss of that step).
  std::function<void(int64_t, float)> on_log;
};

/// Runs `config.steps` steps of the model's compiled "train" function from
/// its current variables (run "init" first for a fresh model). Batches are
/// drawn without replacement from a shuffle of `data`, reshuffled every
/// epoch; an epoch's last partial batch is dropped. Returns the last loss.
float train(rt::CompiledModel &model, const data::ImageDataset &data,
            const TrainConfig &config);

struct Evaluation {
  /// @eval_metrics' "metrics/accuracy" after every batch of `data`.
  double accuracy = 0;
  /// @eval's "loss", averaged over all examples.
  double loss = 0;
  int64_t examples = 0;
};

/// Resets the metric state (local variables), runs "eval" over `data` in
/// batches of `batch` (the last may be smaller) and reads "eval_metrics".
Evaluation evaluate(rt::CompiledModel &model, const data::ImageDataset &data,
                    int64_t batch);

/// The fraction of `data` whose "predict" class is the label.
double predict_accuracy(rt::CompiledModel &model,
                        const data::ImageDataset &data, int64_t batch);

} // namespace mnist
} // namespace estc

#endif // ESTC_EXAMPLES_MNIST_MNISTTRAINING_H
