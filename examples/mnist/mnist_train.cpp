//===- mnist_train.cpp - Train a seed model on MNIST, evaluate it --------===//
//
// Trains the seed MLP or ConvNet (examples/models; compiled ahead of time by
// estc_add_model, --mcpu=native) on the shared MNIST test set the way issue 4
// asks: the first 8,000 images train, the last 2,000 evaluate; Adam at
// learning rate 0.002 (the models' default), batch 128. Prints the loss every
// --log_every steps, then the evaluation's accuracy and loss, and the wall
// time of the training.
//
//   mnist_train [--model=convnet|mlp] [--data_dir=DIR] [--steps=N]
//               [--batch_size=N] [--log_every=N] [--threads=N] [--seed=N]
//
// DIR holds mnist-t10k/ (default: ESTC_DATA_DIR, the environment variable or
// the CMake cache entry). A bad flag is one line on stderr and exit status 2
// (lib/Support/Flags.h); data that cannot be read, one line and exit status
// 1.
//
//===----------------------------------------------------------------------===//

#include "ConvNet.h"
#include "Mlp.h"

#include "estc/flags.h"
#include "estc/runtime.h"
#include "examples/mnist/MnistTraining.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>

namespace {

struct Options {
  std::string model = "convnet";
  std::string dataDir;
  int64_t steps = 1000;
  int64_t batchSize = 128;
  int64_t logEvery = 100;
  int64_t threads = static_cast<int64_t>(std::thread::hardware_concurrency());
  int64_t seed = 1;
};

Options parseFlags(int argc, char **argv) {
  using estc::flags::Flag;
  Options opt;
  opt.dataDir = estc::data::data_dir(ESTC_DATA_DIR);
  estc::flags::FlagParser parser(
      "mnist_train", "Trains a seed model on the MNIST test set's first "
                     "8,000 images and evaluates it on the last 2,000.");
  parser.add(
      Flag("model", &opt.model, "the seed model").choices({"convnet", "mlp"}));
  parser.add(
      Flag("data_dir", &opt.dataDir, "holds mnist-t10k/").value_name("DIR"));
  parser.add(Flag("steps", &opt.steps, "training steps").min(1));
  parser.add(Flag("batch_size", &opt.batchSize, "examples per step").min(1));
  parser.add(
      Flag("log_every", &opt.logEvery, "print the loss every N steps; 0: never")
          .min(0));
  parser.add(Flag("threads", &opt.threads, "kernel threads")
                 .min(1)
                 .default_text("the number of cores"));
  parser.add(Flag("seed", &opt.seed, "the shuffling seed").min(0));
  parser.parse_or_exit(argc, argv);
  return opt;
}

} // namespace

int main(int argc, char **argv) {
  Options opt = parseFlags(argc, argv);
  using Clock = std::chrono::steady_clock;
  try {
    estc::data::ImageDataset all =
        estc::data::load_mnist(opt.dataDir + "/mnist-t10k", "t10k");
    if (all.size() != 10000)
      throw estc::data::DataError(opt.dataDir +
                                  "/mnist-t10k: expected 10000 images, found " +
                                  std::to_string(all.size()));
    estc::data::ImageDataset trainSet = all.slice(0, 8000);
    estc::data::ImageDataset evalSet = all.slice(8000, 10000);

    estc_runtime_set_num_threads(static_cast<int>(opt.threads));
    std::unique_ptr<estc::rt::CompiledModel> model;
    if (opt.model == "mlp")
      model = std::make_unique<Mlp>();
    else
      model = std::make_unique<ConvNet>();
    model->run("init");

    std::printf("%s on %s/mnist-t10k: %lld train / %lld eval images, "
                "batch %lld, %lld steps (%.1f epochs), %lld thread(s)\n",
                opt.model.c_str(), opt.dataDir.c_str(),
                static_cast<long long>(trainSet.size()),
                static_cast<long long>(evalSet.size()),
                static_cast<long long>(opt.batchSize),
                static_cast<long long>(opt.steps),
                static_cast<double>(opt.steps) *
                    static_cast<double>(opt.batchSize) /
                    static_cast<double>(trainSet.size()),
                static_cast<long long>(opt.threads));
    std::fflush(stdout);

    estc::mnist::TrainConfig config;
    config.batch = opt.batchSize;
    config.steps = opt.steps;
    config.shuffle_seed = static_cast<uint64_t>(opt.seed);
    config.log_every = opt.logEvery;
    config.on_log = [](int64_t step, float loss) {
      std::printf("step %lld: loss %.4f\n", static_cast<long long>(step), loss);
      std::fflush(stdout);
    };
    auto start = Clock::now();
    float loss = estc::mnist::train(*model, trainSet, config);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    estc::mnist::Evaluation eval =
        estc::mnist::evaluate(*model, evalSet, opt.batchSize);

    std::printf("trained %lld steps in %.1f s (%.2f ms/step), last loss "
                "%.4f\n",
                static_cast<long long>(opt.steps), seconds,
                1e3 * seconds / static_cast<double>(opt.steps), loss);
    std::printf("eval (%lld images): accuracy %.4f, loss %.4f\n",
                static_cast<long long>(eval.examples), eval.accuracy,
                eval.loss);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mnist_train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
