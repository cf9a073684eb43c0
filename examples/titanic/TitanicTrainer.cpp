//===- TitanicTrainer.cpp - The Titanic example's command line and run ---===//

#include "examples/titanic/TitanicTrainer.h"

#include "estc/data.h"
#include "estc/flags.h"
#include "examples/titanic/Titanic.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

namespace estc {
namespace examples {

namespace {

/// Keeps the loss of the last training step: the JSON line prints it with
/// every digit of its float, so that two runs (the JIT and the AOT form)
/// can be compared bit for bit.
class FinalLossHook : public estimator::SessionRunHook {
public:
  estimator::SessionRunArgs
  before_run(estimator::SessionRunContext &) override {
    return {{"loss"}};
  }
  void after_run(estimator::SessionRunContext &,
                 const estimator::SessionRunValues &values) override {
    loss = values.results.at("loss").values<float>().at(0);
  }
  float loss = 0;
};

} // namespace

int run_titanic(const char *program, int argc, char **argv,
                const TitanicEstimatorFactory &make_estimator,
                const std::string &seed_note) {
  using flags::Flag;
  std::string dataDir, model = "linear", modelDir;
  int64_t epochs = 40, batchSize = 32, seed = 1, threads = 1, predictions = 3;
  bool defaultRates = false;
  flags::FlagParser parser(
      program, "Trains and evaluates a canned estimator on the Titanic "
               "CSVs (train.csv, test.csv) with the columns of TF's "
               "linear-model tutorial; prints the head's metrics as JSON.");
  parser.add(Flag("data_dir", &dataDir, "folder of train.csv and test.csv")
                 .value_name("DIR")
                 .required());
  parser.add(Flag("model", &model, "the canned estimator")
                 .choices({"linear", "dnn_linear_combined"}));
  parser.add(Flag("epochs", &epochs, "passes over train.csv").positive());
  parser.add(Flag("batch_size", &batchSize, "examples per step").positive());
  parser.add(Flag("seed", &seed, "graph seed and shuffle seed" + seed_note));
  parser.add(Flag("threads", &threads, "runtime threads").positive());
  parser.add(Flag("model_dir", &modelDir,
                  "checkpoints and summaries (default: a temporary folder)"));
  parser.add(Flag("default_rates", &defaultRates,
                  "dnn_linear_combined with TF's default learning rates "
                  "(linear 0.005, dnn 0.001) instead of 0.2 / 0.05"));
  parser.add(Flag("predictions", &predictions, "test rows to print").min(0));
  std::string exportDir;
  parser.add(Flag("export_dir", &exportDir,
                  "after training, export the serving model (a parsing "
                  "receiver: serialized tf.Example) under this folder"));
  parser.parse_or_exit(argc, argv);
  try {
    std::string train = (std::filesystem::path(dataDir) / "train.csv").string();
    std::string test = (std::filesystem::path(dataDir) / "test.csv").string();
    for (const std::string &f : {train, test})
      if (!std::filesystem::exists(f))
        throw data::DataError(f + ": no such file");
    estimator::RunConfigOptions o;
    if (!modelDir.empty())
      o.model_dir = modelDir;
    o.tf_random_seed = seed;
    o.intra_op_parallelism_threads = static_cast<int>(threads);
    o.log_step_count_steps = 1000;
    o.save_summary_steps = 0;
    std::unique_ptr<estimator::Estimator> estimator =
        make_estimator(model, defaultRates, estimator::RunConfig(o));

    auto finalLoss = std::make_shared<FinalLossHook>();
    auto start = std::chrono::steady_clock::now();
    estimator->train(
        [&] {
          return titanic_dataset(train, batchSize, epochs, true,
                                 static_cast<uint64_t>(seed));
        },
        {.hooks = {finalLoss}});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    estimator::EvalResults r = estimator->evaluate(
        [&] { return titanic_dataset(test, batchSize, 1, false, 0); });
    std::printf("{\"model\": \"%s\", \"seed\": %lld, \"steps\": %lld, "
                "\"train_seconds\": %.3f, \"accuracy\": %.4f, \"auc\": %.4f, "
                "\"average_loss\": %.4f, \"final_loss\": %.9g}\n",
                model.c_str(), static_cast<long long>(seed),
                static_cast<long long>(r.at("global_step")), seconds,
                r.at("accuracy"), r.at("auc"), r.at("average_loss"),
                static_cast<double>(finalLoss->loss));
    int64_t shown = 0;
    for (const estimator::Prediction &p : estimator->predict(
             [&] { return titanic_dataset(test, batchSize, 1, false, 0); })) {
      if (shown++ >= predictions)
        break;
      std::printf("prediction %lld: class %s, probability of survival %.3f\n",
                  static_cast<long long>(shown - 1),
                  p.at("classes").strings.at(0).c_str(),
                  p.at("probabilities").values<float>().at(1));
    }
    if (!exportDir.empty()) {
      const auto *canned =
          dynamic_cast<const estimator::CannedEstimator *>(estimator.get());
      if (!canned)
        throw std::invalid_argument("--export_dir: not a canned estimator");
      std::string dir = estimator->export_saved_model(
          exportDir, estimator::build_parsing_serving_input_receiver_fn(
                         feature_column::make_parse_example_spec(
                             canned->canned_model().feature_columns)));
      std::printf("exported: %s\n", dir.c_str());
    }
  } catch (const std::exception &e) {
    estc::flags::print_error_line(program, e.what());
    return 1;
  }
  return 0;
}

} // namespace examples
} // namespace estc
