//===- fault_train.cpp - A small real training run for the fault tests ---===//
//
// The seed MLP (compiled ahead of time, test/unit's estc_test_mlp) trained by
// the real Estimator with train_and_evaluate on a synthetic, separable
// 10-class problem, so that test/faults/fault_injection.py needs no data
// set. The batch of each step is a pure function of the global step (as
// fashion_mnist's --step_indexed_input), and the run uses one thread: a run
// that is stopped and restarted ends with the same checkpoint, byte for
// byte, as one that was not. Every error is one line "fault_train: error:
// <what>" on stderr and exit status 1; a bad flag exits 2.
//
//===----------------------------------------------------------------------===//

#include "Mlp.h"

#include "estimator/Estimator.h"
#include "estimator/Training.h"
#include "lib/Support/Flags.h"

#include <iostream>
#include <memory>
#include <random>

using namespace estc;
using namespace estc::estimator;

namespace {

constexpr int64_t kFeatures = 784, kExamples = 256;

/// Class c raises features [78c, 78c + 10); a little noise.
struct Data {
  std::vector<float> x;
  std::vector<int64_t> y;
};
Data makeData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0, 0.05f);
  Data d{std::vector<float>(n * kFeatures), std::vector<int64_t>(n)};
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = static_cast<int64_t>(rng() % 10);
    d.y[i] = c;
    for (int64_t j = 0; j < kFeatures; ++j)
      d.x[i * kFeatures + j] =
          (j >= 78 * c && j < 78 * c + 10 ? 1.f : 0.f) + noise(rng);
  }
  return d;
}

/// Step s + 1 trains on examples (s * batch + i) mod n, from the step of the
/// latest checkpoint on.
InputFn stepIndexedInput(std::shared_ptr<const Data> data, int64_t batch,
                         Estimator &estimator) {
  return [data, batch, &estimator]() {
    int64_t step = 0;
    if (estimator.latest_checkpoint())
      step = static_cast<int64_t>(
          estimator.get_variable_value("global_step").element(0));
    auto next = [data, batch, step]() mutable -> std::optional<Batch> {
      std::vector<float> x(batch * kFeatures);
      std::vector<int64_t> y(batch);
      for (int64_t i = 0; i < batch; ++i) {
        int64_t e = (step * batch + i) % kExamples;
        std::copy(data->x.begin() + e * kFeatures,
                  data->x.begin() + (e + 1) * kFeatures,
                  x.begin() + i * kFeatures);
        y[i] = data->y[e];
      }
      ++step;
      Batch b;
      b.features["x"] = TensorValue::of<float>({batch, kFeatures}, x);
      b.labels = TensorValue::of<int64_t>({batch}, y);
      return b;
    };
    return Dataset::from_generator(next);
  };
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string modelDir;
  int64_t trainSteps = 16, saveSteps = 4, batchSize = 16;
  flags::FlagParser parser("fault_train",
                           "Trains the seed MLP on synthetic data with "
                           "train_and_evaluate (for the fault tests).");
  parser.add(Flag("model_dir", &modelDir, "checkpoints and event files")
                 .value_name("DIR"));
  parser.add(
      Flag("train_steps", &trainSteps, "the global step to train to").min(1));
  parser.add(Flag("save_checkpoints_steps", &saveSteps,
                  "checkpoint (and evaluate) every N steps")
                 .min(1));
  parser.add(Flag("batch_size", &batchSize, "examples per step").min(1));
  parser.parse_or_exit(argc, argv);
  if (modelDir.empty())
    parser.fail("--model_dir is required");

  try {
    RunConfigOptions o;
    o.model_dir = modelDir;
    o.save_checkpoints_steps = saveSteps;
    o.intra_op_parallelism_threads = 1;
    o.log_step_count_steps = 1;
    o.save_summary_steps = 1;
    Estimator estimator(std::make_unique<Mlp>(),
                        RunConfig::from_tf_config("", o));

    auto train = std::make_shared<const Data>(makeData(kExamples, 1));
    Data eval = makeData(64, 2);
    Dataset::ArrayOptions evalOptions;
    evalOptions.batch_size = 32;
    TrainSpec trainSpec(stepIndexedInput(train, batchSize, estimator),
                        trainSteps);
    EvalSpec evalSpec;
    evalSpec.input_fn =
        numpy_input_fn({{"x", TensorValue::of<float>({64, kFeatures}, eval.x)}},
                       TensorValue::of<int64_t>({64}, eval.y), evalOptions);
    evalSpec.throttle_secs = 0;
    EvalResults results =
        train_and_evaluate(estimator, trainSpec, evalSpec).eval_result;
    std::cout << "final evaluation: accuracy = " << results.at("accuracy")
              << " global_step = " << results.at("global_step") << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "fault_train: error: " << e.what() << "\n";
    return 1;
  }
}
