//===- toolbox_bench.cpp - Issue 28's models: estc's training steps -----===//
//
//   toolbox_bench --part=resnet|bert [--threads=1,2] [--warmup=5]
//                 [--steps=30] [--batch=128 (resnet) | 32 (bert)]
//
// resnet: examples/fashion_mnist/ResNetModel.h at its defaults (width 16,
//   2 basic blocks per stage, momentum with weight decay on the piecewise
//   schedule, batch norm updates in the train_op) trained through
//   Estimator::train (JIT) on 28x28x1 images (4096 fixed random images and
//   labels, cycled in batches; TF gets its own random images of the same
//   shape), as bench/estimator_bench.cpp measures the
//   seed models: a child process per thread count pinned to that many
//   cores, intra_op_parallelism_threads = threads; steps/s after `warmup`
//   steps, the compiled function's own time per step, the process's CPU
//   time per step, peak RSS. bench/tf_toolbox_peer.py runs TF 2.15's
//   Estimator on the same model (bench/tf_toolbox_models.py);
//   bench/toolbox.sh runs both and prints the ratios.
//
// bert: examples/sst2/Bert.h at BERT-mini size (4 layers, hidden 256, 4
//   heads, feed-forward 1024, sequence 128, dropout 0.1; 8192 word ids)
//   trained with BERT's AdamWeightDecay (clip by global norm, warmup,
//   polynomial decay) on 4096 random sentences of 32 to 128 tokens ([CLS]
//   first, padded to 128), through Estimator::train as above.
//
// One JSON line per run ({"peer": "estc", ...}); a bad flag is one line and
// exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/PinnedChild.h"
#include "bench/StepClock.h"
#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "examples/fashion_mnist/ResNetModel.h"
#include "examples/sst2/Bert.h"
#include "lib/Support/Flags.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;
using namespace estc::estimator;

constexpr int64_t kExamples = 4096;

/// An input_fn whose dataset yields `elements` in order, again and again.
InputFn cycled(std::shared_ptr<const std::vector<data::Element>> elements) {
  return [elements] {
    return data::Dataset::from_generator([elements] {
      auto next = std::make_shared<size_t>(0);
      return data::Dataset::Generator(
          [elements, next]() -> std::optional<data::Element> {
            return (*elements)[(*next)++ % elements->size()];
          });
    });
  };
}

/// kExamples random 28x28x1 images (uniform [0, 1)) and labels, `batch` at a
/// time, cycled.
InputFn imageInput(int64_t batch) {
  auto elements = std::make_shared<std::vector<data::Element>>();
  std::mt19937 rng(28);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> label(0, 9);
  for (int64_t start = 0; start + batch <= kExamples; start += batch) {
    std::vector<float> x(static_cast<size_t>(batch * 28 * 28));
    std::vector<int64_t> y(static_cast<size_t>(batch));
    for (float &v : x)
      v = pixel(rng);
    for (int64_t &v : y)
      v = label(rng);
    elements->push_back(data::Element::tuple(
        {data::Element::dict(
             {{"x", TensorValue::of<float>({batch, 28, 28, 1}, x)}}),
         TensorValue::of<int64_t>({batch}, y)}));
  }
  return cycled(elements);
}

/// The BERT-mini benchmark's options (bench/tf_toolbox_peer.py's
/// BERT_BENCH over BERT_DEFAULTS).
examples::BertOptions bertOptions() {
  examples::BertOptions o;
  o.vocab_size = 8192;
  o.seq_length = 128;
  o.num_train_steps = 100000;
  o.num_warmup_steps = 1000;
  return o;
}

/// kExamples random sentences of 32 to seq_length tokens as BERT's inputs
/// ([CLS] first, padded), `batch` at a time, cycled.
InputFn sentenceInput(int64_t batch, const examples::BertOptions &o) {
  auto elements = std::make_shared<std::vector<data::Element>>();
  std::mt19937 rng(28);
  std::uniform_int_distribution<int64_t> word(examples::kBertFirstWordId,
                                              o.vocab_size - 1);
  std::uniform_int_distribution<int64_t> length(32, o.seq_length);
  std::uniform_int_distribution<int64_t> label(0, 1);
  for (int64_t start = 0; start + batch <= kExamples; start += batch) {
    std::vector<int64_t> ids(static_cast<size_t>(batch * o.seq_length),
                             examples::kBertPadId);
    std::vector<int64_t> lengths(static_cast<size_t>(batch)),
        y(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      lengths[b] = length(rng);
      y[b] = label(rng);
      ids[b * o.seq_length] = examples::kBertClsId;
      for (int64_t t = 1; t < lengths[b]; ++t)
        ids[b * o.seq_length + t] = word(rng);
    }
    elements->push_back(data::Element::tuple(
        {data::Element::dict(
             {{"input_ids",
               TensorValue::of<int64_t>({batch, o.seq_length}, ids)},
              {"lengths", TensorValue::of<int64_t>({batch}, lengths)}}),
         TensorValue::of<int64_t>({batch}, y)}));
  }
  return cycled(elements);
}

std::string run(const std::string &part, int threads, int64_t batch,
                int64_t warmup, int64_t steps) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("estc-toolbox-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ScopedLogSink quiet([](const std::string &) {});
  bool resnet = part == "resnet";
  Estimator estimator(resnet ? examples::resnet_model_fn({})
                             : examples::bert_model_fn(bertOptions()),
                      bench::benchRunConfig(dir.string(), threads));
  auto clock = std::make_shared<bench::StepClock>(warmup + steps);
  estimator.train(resnet ? imageInput(batch)
                         : sentenceInput(batch, bertOptions()),
                  {.hooks = {clock}, .steps = warmup + steps});
  std::filesystem::remove_all(dir);
  std::ostringstream json;
  json << "{\"peer\": \"estc\", \"part\": \"" << part
       << "\", \"threads\": " << threads << ", \"batch\": " << batch << ", "
       << clock->json_fields(warmup, steps) << "}";
  return json.str();
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string part = "resnet", threadList = "1,2";
  int64_t warmup = 5, steps = 30;
  std::optional<int64_t> batchFlag;
  flags::FlagParser parser("toolbox_bench",
                           "Issue 28's models through Estimator::train: the "
                           "ResNet-style Fashion-MNIST model and BERT-mini.");
  parser.add(
      Flag("part", &part, "what to measure").choices({"resnet", "bert"}));
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("steps", &steps, "timed steps").positive());
  parser.add(
      Flag("batch", &batchFlag, "examples per step (resnet: 128, bert: 32)")
          .positive()
          .max(static_cast<double>(kExamples)));
  parser.parse_or_exit(argc, argv);
  int64_t batch = batchFlag.value_or(part == "resnet" ? 128 : 32);
  std::vector<int> threads = bench::parseThreadList(parser, threadList);
  std::printf("CPU: %s\n", bench::cpuName().c_str());
  std::fflush(stdout);
  bool failed = false;
  for (int t : threads) {
    std::string json = bench::runPinnedChild(
        t, [&] { return run(part, t, batch, warmup, steps); },
        "toolbox_bench: error: ");
    if (json.empty())
      failed = true;
    else
      std::printf("%s\n", json.c_str());
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}
