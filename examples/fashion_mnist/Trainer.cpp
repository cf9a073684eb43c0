//===- Trainer.cpp - The example's command line, data and training run --===//

#include "examples/fashion_mnist/Trainer.h"

#include "estimator/Training.h"
#include "lib/Data/Idx.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace estc {
namespace examples {

namespace {

using namespace estimator;

const char *kUsage =
    "flags:\n"
    "  --data_dir=DIR        IDX files (train-*, t10k-*[.gz]); default\n"
    "                        /usr/share/datasets/fashion-mnist\n"
    "  --eval_holdout=N      train on t10k's first examples and evaluate on\n"
    "                        its last N (the shared mnist-t10k set: 2000)\n"
    "  --model_dir=DIR       checkpoints and event files\n"
    "                        (default /tmp/fashion_mnist_model)\n"
    "  --epochs=N            passes over the training set (default 15)\n"
    "  --train_steps=N       the global step to train to (instead of epochs)\n"
    "  --batch_size=N        default 128\n"
    "  --save_checkpoints_steps=N  checkpoint (and evaluate) every N steps\n"
    "                        (default 500)\n"
    "  --threads=N           kernel threads (default: the runtime's)\n"
    "  --seed=N              tf_random_seed and the shuffling seed "
    "(default 1)\n"
    "  --min_accuracy=X      exit 1 when the final accuracy is below X\n"
    "  --step_indexed_input  the batch of each step is a pure function of\n"
    "                        the global step (a restart after a crash sees\n"
    "                        the data an uninterrupted run would)\n";

struct Flags {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model_dir = "/tmp/fashion_mnist_model";
  int64_t eval_holdout = 0;
  int64_t epochs = 15;
  std::optional<int64_t> train_steps;
  int64_t batch_size = 128;
  int64_t save_checkpoints_steps = 500;
  int threads = 0;
  int64_t seed = 1;
  double min_accuracy = 0;
  bool step_indexed_input = false;
};

class FlagError : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

int64_t parsePositive(const std::string &name, const std::string &value,
                      bool allowZero = false) {
  char *end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < (allowZero ? 0 : 1))
    throw FlagError("--" + name + "=" + value + ": expected " +
                    (allowZero ? "a non-negative" : "a positive") + " integer");
  return v;
}

Flags parseFlags(int argc, char **argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--step_indexed_input") {
      f.step_indexed_input = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      throw FlagError("unexpected argument '" + arg +
                      "' (flags are --name=value; see --help)");
    std::string name = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    if (name == "data_dir")
      f.data_dir = value;
    else if (name == "model_dir")
      f.model_dir = value;
    else if (name == "eval_holdout")
      f.eval_holdout = parsePositive(name, value);
    else if (name == "epochs")
      f.epochs = parsePositive(name, value);
    else if (name == "train_steps")
      f.train_steps = parsePositive(name, value);
    else if (name == "batch_size")
      f.batch_size = parsePositive(name, value);
    else if (name == "save_checkpoints_steps")
      f.save_checkpoints_steps = parsePositive(name, value);
    else if (name == "threads")
      f.threads = static_cast<int>(parsePositive(name, value));
    else if (name == "seed")
      f.seed = parsePositive(name, value, /*allowZero=*/true);
    else if (name == "min_accuracy") {
      char *end = nullptr;
      f.min_accuracy = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || f.min_accuracy < 0 ||
          f.min_accuracy > 1)
        throw FlagError("--min_accuracy=" + value +
                        ": expected a number in [0, 1]");
    } else
      throw FlagError("unknown flag --" + name + " (see --help)");
  }
  return f;
}

Features imagesOf(const data::ImageDataset &d) {
  return {
      {"x", TensorValue::of<float>({d.size(), d.rows, d.cols, 1}, d.images)}};
}
TensorValue labelsOf(const data::ImageDataset &d) {
  return TensorValue::of<int64_t>({d.size()}, d.labels);
}

/// Training batches whose content depends only on the global step: the
/// batch that step s + 1 trains on holds examples (s * batch + i) mod n,
/// starting at the step of the latest checkpoint (read when train() calls
/// the input_fn).
InputFn stepIndexedInput(const data::ImageDataset &d, int64_t batchSize,
                         Estimator &estimator) {
  auto set = std::make_shared<data::ImageDataset>(d);
  return [set, batchSize, &estimator]() {
    int64_t step = 0;
    if (estimator.latest_checkpoint())
      step = static_cast<int64_t>(
          estimator.get_variable_value("global_step").element(0));
    auto next = [set, batchSize, step]() mutable -> std::optional<Batch> {
      int64_t n = set->size(), pixels = set->rows * set->cols;
      std::vector<float> images(batchSize * pixels);
      std::vector<int64_t> labels(batchSize);
      for (int64_t i = 0; i < batchSize; ++i) {
        int64_t e = (step * batchSize + i) % n;
        std::copy(set->images.begin() + e * pixels,
                  set->images.begin() + (e + 1) * pixels,
                  images.begin() + i * pixels);
        labels[i] = set->labels[e];
      }
      ++step;
      Batch b;
      b.features["x"] =
          TensorValue::of<float>({batchSize, set->rows, set->cols, 1}, images);
      b.labels = TensorValue::of<int64_t>({batchSize}, labels);
      return b;
    };
    return Dataset::from_generator(next);
  };
}

} // namespace

int run_trainer(const char *program, int argc, char **argv,
                const EstimatorFactory &make_estimator) {
  Flags flags;
  try {
    flags = parseFlags(argc, argv);
  } catch (const FlagError &e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 2;
  }
  try {
    auto start = std::chrono::steady_clock::now();
    data::ImageDataset trainSet, evalSet;
    if (flags.eval_holdout > 0) {
      data::ImageDataset all = data::load_mnist(flags.data_dir, "t10k");
      if (flags.eval_holdout >= all.size())
        throw std::invalid_argument(
            "--eval_holdout=" + std::to_string(flags.eval_holdout) +
            " leaves no training examples of " + std::to_string(all.size()));
      trainSet = all.slice(0, all.size() - flags.eval_holdout);
      evalSet = all.slice(all.size() - flags.eval_holdout, all.size());
    } else {
      trainSet = data::load_mnist(flags.data_dir, "train");
      evalSet = data::load_mnist(flags.data_dir, "t10k");
    }
    if (trainSet.rows != 28 || trainSet.cols != 28)
      throw std::invalid_argument(
          flags.data_dir + ": images are " + std::to_string(trainSet.rows) +
          "x" + std::to_string(trainSet.cols) + ", the model takes 28x28");
    int64_t stepsPerEpoch =
        (trainSet.size() + flags.batch_size - 1) / flags.batch_size;
    int64_t maxSteps = flags.train_steps.value_or(flags.epochs * stepsPerEpoch);
    std::cerr << program << ": " << trainSet.size() << " training and "
              << evalSet.size() << " evaluation examples from "
              << flags.data_dir << "; training to step " << maxSteps << "\n";

    RunConfigOptions o;
    o.model_dir = flags.model_dir;
    o.tf_random_seed = flags.seed;
    o.save_checkpoints_steps = flags.save_checkpoints_steps;
    if (flags.threads > 0)
      o.intra_op_parallelism_threads = flags.threads;
    RunConfig config = RunConfig::from_tf_config("", o);
    std::unique_ptr<Estimator> estimator = make_estimator(config);

    Dataset::ArrayOptions trainOptions;
    trainOptions.batch_size = flags.batch_size;
    trainOptions.num_epochs = std::nullopt;
    trainOptions.shuffle = true;
    trainOptions.seed = static_cast<uint64_t>(flags.seed);
    Dataset::ArrayOptions evalOptions;
    evalOptions.batch_size = 500;
    TrainSpec trainSpec;
    trainSpec.input_fn =
        flags.step_indexed_input
            ? stepIndexedInput(trainSet, flags.batch_size, *estimator)
            : numpy_input_fn(imagesOf(trainSet), labelsOf(trainSet),
                             trainOptions);
    trainSpec.max_steps = maxSteps;
    EvalSpec evalSpec;
    evalSpec.input_fn =
        numpy_input_fn(imagesOf(evalSet), labelsOf(evalSet), evalOptions);
    evalSpec.steps = std::nullopt;
    evalSpec.throttle_secs = 0;
    EvalResults results =
        train_and_evaluate(*estimator, trainSpec, evalSpec).eval_result;

    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::cout << "final evaluation:";
    for (const auto &[name, value] : results)
      std::cout << " " << name << " = " << value;
    std::cout << "\nwall time: " << seconds << " s\n";
    double accuracy = results.at("accuracy");
    if (accuracy < flags.min_accuracy) {
      std::cerr << program << ": error: accuracy " << accuracy
                << " is below --min_accuracy=" << flags.min_accuracy << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace examples
} // namespace estc
