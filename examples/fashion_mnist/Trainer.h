//===- Trainer.h - The example's command line, data and training run ----===//
//
// What the JIT and the AOT trainer share: flags, loading the IDX data,
// train_and_evaluate, and the final report. Each trainer only says how its
// Estimator is made.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_FASHION_MNIST_TRAINER_H
#define ESTC_EXAMPLES_FASHION_MNIST_TRAINER_H

#include "estc/estimator.h"
#include "estc/flags.h"

#include <functional>
#include <memory>
#include <string>

namespace estc {
namespace examples {

using EstimatorFactory = std::function<std::unique_ptr<estimator::Estimator>(
    const estimator::RunConfig &config)>;

/// Runs the trainer: parses argv (see --help), trains with
/// train_and_evaluate and prints the final evaluation. With
/// --target_accuracy=X it measures the time to accuracy instead: one
/// train() whose checkpoints are evaluated until one reaches X, then one
/// line of accuracy, steps, seconds and peak RSS (bench/tf_fashion_peer.py
/// prints the same for TF's Estimator; --json writes them). Returns the
/// exit status: 0, or 1 for a failed run (bad data, accuracy below
/// --min_accuracy). A bad flag exits the process with status 2
/// (lib/Support/Flags.h). Errors are one line on stderr.
/// `default_device` is --device's default: "cpu", or "cuda:0" for a
/// trainer whose model was compiled for CUDA.
/// `add_model_flags` adds a trainer's own flags (the model's
/// hyperparameters) to the command line before it is parsed; the factory
/// reads what they stored.
int run_trainer(
    const char *program, int argc, char **argv,
    const EstimatorFactory &make_estimator,
    const std::string &default_device = "cpu",
    const std::function<void(flags::FlagParser &)> &add_model_flags = {});

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_FASHION_MNIST_TRAINER_H
