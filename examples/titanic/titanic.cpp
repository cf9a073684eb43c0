//===- titanic.cpp - Canned estimators on the Titanic CSVs ---------------===//
//
// Trains a LinearClassifier or a DNNLinearCombinedClassifier (the JIT
// Estimator) over the Titanic CSVs with the columns of TF's linear-model
// tutorial (Titanic.h), evaluates it on test.csv with the head's metrics and
// prints one JSON line (what bench/tf_canned_peer.py prints for TF 2.15),
// then the first predictions.
//
//   titanic --data_dir=../shared/data/titanic [--model=linear|
//           dnn_linear_combined] [--epochs=40] [--batch_size=32] [--seed=1]
//
//===----------------------------------------------------------------------===//

#include "examples/titanic/Titanic.h"
#include "lib/Data/Idx.h"
#include "lib/Support/Flags.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

using namespace estc;

int main(int argc, char **argv) {
  using flags::Flag;
  std::string dataDir, model = "linear", modelDir;
  int64_t epochs = 40, batchSize = 32, seed = 1, threads = 1, predictions = 3;
  bool defaultRates = false;
  flags::FlagParser parser(
      "titanic", "Trains and evaluates a canned estimator on the Titanic "
                 "CSVs (train.csv, test.csv) with the columns of TF's "
                 "linear-model tutorial; prints the head's metrics as JSON.");
  parser.add(Flag("data_dir", &dataDir, "folder of train.csv and test.csv")
                 .value_name("DIR")
                 .required());
  parser.add(Flag("model", &model, "linear or dnn_linear_combined"));
  parser.add(Flag("epochs", &epochs, "passes over train.csv"));
  parser.add(Flag("batch_size", &batchSize, "examples per step"));
  parser.add(Flag("seed", &seed, "graph seed and shuffle seed"));
  parser.add(Flag("threads", &threads, "runtime threads"));
  parser.add(Flag("model_dir", &modelDir,
                  "checkpoints and summaries (default: a temporary folder)"));
  parser.add(Flag("default_rates", &defaultRates,
                  "dnn_linear_combined with TF's default learning rates "
                  "(linear 0.005, dnn 0.001) instead of 0.2 / 0.05"));
  parser.add(Flag("predictions", &predictions, "test rows to print"));
  parser.parse_or_exit(argc, argv);
  if (epochs < 1 || batchSize < 1)
    parser.fail("--epochs and --batch_size must be positive");
  try {
    std::string train = (std::filesystem::path(dataDir) / "train.csv").string();
    std::string test = (std::filesystem::path(dataDir) / "test.csv").string();
    for (const std::string &f : {train, test})
      if (!std::filesystem::exists(f))
        throw data::DataError(f + ": no such file");
    estimator::CannedModel canned =
        examples::titanic_model(model, !defaultRates);
    estimator::RunConfigOptions o;
    if (!modelDir.empty())
      o.model_dir = modelDir;
    o.tf_random_seed = seed;
    o.intra_op_parallelism_threads = static_cast<int>(threads);
    o.log_step_count_steps = 1000;
    o.save_summary_steps = 0;
    estimator::CannedEstimator estimator(canned, estimator::RunConfig(o));

    auto start = std::chrono::steady_clock::now();
    estimator.train([&] {
      return examples::titanic_dataset(train, batchSize, epochs, true,
                                       static_cast<uint64_t>(seed));
    });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    estimator::EvalResults r = estimator.evaluate([&] {
      return examples::titanic_dataset(test, batchSize, 1, false, 0);
    });
    std::printf("{\"model\": \"%s\", \"seed\": %lld, \"steps\": %lld, "
                "\"train_seconds\": %.3f, \"accuracy\": %.4f, \"auc\": %.4f, "
                "\"average_loss\": %.4f}\n",
                model.c_str(), static_cast<long long>(seed),
                static_cast<long long>(r.at("global_step")), seconds,
                r.at("accuracy"), r.at("auc"), r.at("average_loss"));
    int64_t shown = 0;
    for (const estimator::Prediction &p : estimator.predict([&] {
           return examples::titanic_dataset(test, batchSize, 1, false, 0);
         })) {
      if (shown++ >= predictions)
        break;
      std::printf("prediction %lld: class %s, probability of survival %.3f\n",
                  static_cast<long long>(shown - 1),
                  p.at("classes").strings.at(0).c_str(),
                  p.at("probabilities").values<float>().at(1));
    }
  } catch (const std::exception &e) {
    std::cerr << "titanic: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
