//===- summaries_bench.cpp - What in-graph summaries cost a training step ===//
//
//   summaries_bench [--steps=300] [--warmup=20] [--repeats=3] [--threads=1]
//
// An MLP 784-256-256-10 (batch 128, SGD) trained by Estimator::train (JIT)
// on random in-memory data, in three configurations:
//
//   none       no summaries but the loss; save_summary_steps huge (only the
//              first step writes);
//   defined    model_fn defines 3 histograms (both hidden layers, the
//              logits), an image summary of the input (3 of 28x28), 2
//              scalars and a text; save_summary_steps huge, so every
//              measured step is a non-summary step (@train);
//   every      the same summaries written on every step
//              (save_summary_steps 1: @train_summaries, the histograms and
//              PNGs made and written each step).
//
// Time per step is measured by a hook from the end of step `warmup` to the
// end of the last step; the configurations alternate, `repeats` times, and
// the median is printed. "defined" against "none" is what defining
// summaries costs the steps that do not write them
// (docs/design/summaries.md; docs/results.md has a run). A bad flag is one
// line and exit status 2.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Summaries.h"
#include "lib/Graph/Train.h"
#include "lib/Summary/Summary.h"
#include "lib/Support/Flags.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace estc;
using namespace estc::estimator;

EstimatorSpec mlp(const TensorMap &features, const Tensor &labels,
                  ModeKeys mode, const Params &params, const RunConfig &) {
  bool summaries = params.get<int64_t>("summaries", 0) != 0;
  Tensor x = features["x"];
  Tensor h1 = layers::dense(x, 256, nn::relu);
  Tensor h2 = layers::dense(h1, 256, nn::relu);
  Tensor logits = layers::dense(h2, 10);
  EstimatorSpec spec(mode);
  spec.predictions = {{"classes", argmax(logits, 1)}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  if (summaries) {
    summary::histogram("hidden1", h1);
    summary::histogram("hidden2", h2);
    summary::histogram("logits", logits);
    summary::image("input", reshape(x, {-1, 28, 28, 1}), 3);
    summary::scalar("hidden1_mean", reduce_mean(h1));
    summary::scalar("hidden2_max", reduce_max(h2));
    summary::text(get_default_graph(), "notes", "MLP 784-256-256-10");
  }
  spec.train_op = train::GradientDescentOptimizer(0.01).minimize(spec.loss);
  return spec;
}

/// Seconds from the end of step `warmup` to the end of the last step.
struct Timer : SessionRunHook {
  int64_t warmup, seen = 0;
  std::chrono::steady_clock::time_point start, end;
  explicit Timer(int64_t w) : warmup(w) {}
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    auto now = std::chrono::steady_clock::now();
    if (++seen == warmup)
      start = now;
    end = now;
  }
  double seconds() const {
    return std::chrono::duration<double>(end - start).count();
  }
};

double usPerStep(const std::string &config, int64_t steps, int64_t warmup,
                 int64_t threads, const InputFn &input) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("estc-summaries-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunConfigOptions o;
  o.model_dir = dir.string();
  o.tf_random_seed = 1;
  o.save_checkpoints_steps = 1000000000;
  o.log_step_count_steps = 1000000000;
  o.save_summary_steps = config == "every" ? 1 : 1000000000;
  o.intra_op_parallelism_threads = threads;
  Params params;
  params.set("summaries", static_cast<int64_t>(config != "none"));
  Estimator est(mlp, RunConfig::from_tf_config("", o), params);
  auto timer = std::make_shared<Timer>(warmup);
  TrainOptions train;
  train.steps = steps;
  train.hooks = {timer};
  est.train(input, train);
  summary::SummaryWriterCache::clear();
  fs::remove_all(dir);
  return timer->seconds() / static_cast<double>(steps - warmup) * 1e6;
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  int64_t steps = 300, warmup = 20, repeats = 3, threads = 1;
  flags::FlagParser parser(
      "summaries_bench",
      "What in-graph summaries cost a training step: an MLP trained with "
      "none, with summaries defined but not written, and with summaries "
      "written every step.");
  parser.add(Flag("steps", &steps, "training steps per run").positive());
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(
      Flag("repeats", &repeats, "runs of each configuration").positive());
  parser.add(
      Flag("threads", &threads, "intra_op_parallelism_threads").positive());
  parser.parse_or_exit(argc, argv);
  if (steps <= warmup) {
    std::fprintf(stderr, "summaries_bench: error: --steps must be more than "
                         "--warmup\n");
    return flags::kExitBadCommandLine;
  }
  ScopedLogSink quiet([](const std::string &) {});
  const int64_t n = 128 * 8;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> xs(static_cast<size_t>(n * 784));
  for (float &v : xs)
    v = u(rng);
  std::vector<int64_t> ys(static_cast<size_t>(n));
  for (int64_t &y : ys)
    y = static_cast<int64_t>(rng() % 10);
  InputFn input = numpy_input_fn({{"x", TensorValue::of<float>({n, 784}, xs)}},
                                 TensorValue::of<int64_t>({n}, ys),
                                 {128, std::nullopt, true, 7});
  std::vector<std::string> configs = {"none", "defined", "every"};
  std::vector<std::vector<double>> times(configs.size());
  for (int64_t r = 0; r < repeats; ++r)
    for (size_t c = 0; c < configs.size(); ++c)
      times[c].push_back(usPerStep(configs[c], steps, warmup, threads, input));
  std::printf("%-8s %12s  (median of %lld runs of %lld steps, %lld thread%s)\n",
              "config", "us/step", static_cast<long long>(repeats),
              static_cast<long long>(steps), static_cast<long long>(threads),
              threads == 1 ? "" : "s");
  for (size_t c = 0; c < configs.size(); ++c) {
    std::vector<double> t = times[c];
    std::sort(t.begin(), t.end());
    std::printf("%-8s %12.1f  (runs:", configs[c].c_str(), t[t.size() / 2]);
    for (double v : times[c])
      std::printf(" %.1f", v);
    std::printf(")\n");
  }
  return 0;
}
