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
// Wall and process CPU time per step are measured by a hook from the end of
// step `warmup` to the end of the last step, and the wall time from train()
// to the end of the first step (compiling, with a fresh JIT cache each
// run, and initializing); the configurations alternate, `repeats` times,
// and the medians are printed. "defined" against "none" is
// what defining summaries costs the steps that do not write them
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
#include <cstdlib>
#include <ctime>
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

/// Wall and process CPU seconds from the end of step `warmup` to the end of
/// the last step (CPU time is what a loaded machine distorts least).
struct Timer : SessionRunHook {
  int64_t warmup, seen = 0;
  std::chrono::steady_clock::time_point first, start, end;
  double cpuStart = 0, cpuEnd = 0;
  explicit Timer(int64_t w) : warmup(w) {}
  static double cpu() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) +
           1e-9 * static_cast<double>(t.tv_nsec);
  }
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    auto now = std::chrono::steady_clock::now();
    double c = cpu();
    if (++seen == 1)
      first = now;
    if (seen == warmup) {
      start = now;
      cpuStart = c;
    }
    end = now;
    cpuEnd = c;
  }
  double seconds() const {
    return std::chrono::duration<double>(end - start).count();
  }
  double cpuSeconds() const { return cpuEnd - cpuStart; }
};

struct Times {
  double wall, cpu; // us per step
  double firstStep; // s from train() to the end of the first step
};

Times usPerStep(const std::string &config, int64_t steps, int64_t warmup,
                int64_t threads, const InputFn &input) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("estc-summaries-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // A fresh JIT cache: every run compiles, so the first step's time
  // includes compiling @train (and @train_summaries).
  fs::path cache = dir.string() + "-cache";
  fs::remove_all(cache);
  ::setenv("ESTC_CACHE_DIR", cache.c_str(), 1);
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
  auto begin = std::chrono::steady_clock::now();
  est.train(input, train);
  summary::SummaryWriterCache::clear();
  fs::remove_all(dir);
  fs::remove_all(cache);
  double n = static_cast<double>(steps - warmup);
  return {timer->seconds() / n * 1e6, timer->cpuSeconds() / n * 1e6,
          std::chrono::duration<double>(timer->first - begin).count()};
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
  std::vector<std::vector<double>> wall(configs.size()), cpu(configs.size()),
      first(configs.size());
  for (int64_t r = 0; r < repeats; ++r)
    for (size_t c = 0; c < configs.size(); ++c) {
      Times t = usPerStep(configs[c], steps, warmup, threads, input);
      wall[c].push_back(t.wall);
      cpu[c].push_back(t.cpu);
      first[c].push_back(t.firstStep);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%-8s %14s %14s %13s  (medians of %lld runs of %lld steps, "
              "%lld thread%s)\n",
              "config", "wall us/step", "CPU us/step", "1st step s",
              static_cast<long long>(repeats), static_cast<long long>(steps),
              static_cast<long long>(threads), threads == 1 ? "" : "s");
  for (size_t c = 0; c < configs.size(); ++c) {
    std::printf("%-8s %14.1f %14.1f %13.2f  (CPU:", configs[c].c_str(),
                median(wall[c]), median(cpu[c]), median(first[c]));
    for (double v : cpu[c])
      std::printf(" %.1f", v);
    std::printf(")\n");
  }
  return 0;
}
