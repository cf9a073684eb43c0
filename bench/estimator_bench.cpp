//===- estimator_bench.cpp - The seed models through Estimator.train -----===//
//
//   estimator_bench [--models=mlp,convnet,iris] [--threads=1,2]
//                   [--warmup=20] [--steps=200] [--iterations_per_loop=1,...]
//                   [--json=FILE]
//
// estc's half of issue 15's side-by-side with TF 2.15's own Estimator
// (bench/tf_estimator_peer.py builds the same networks as tf.estimator
// model_fns): each model is an Estimator model_fn compiled by the JIT
// (examples/models: the MLP 784-256-256-10 and the MNIST ConvNet, batch
// 128; an iris-sized 4-10-10-3 net, batch 32; Adam 0.002), trained with
// Estimator::train on random in-memory data (numpy_input_fn, repeated)
// with RunConfig's intra_op_parallelism_threads and checkpoints and
// summaries off but for the final checkpoint. Steps/s are measured by a
// hook from the end of step `warmup` to the end of the last step, so
// compiling, initializing and the final checkpoint are left out, as in the
// peer. --iterations_per_loop=N trains N steps per call of compiled code
// (RunConfig::iterations_per_loop; the hook then runs once per loop, and
// steps/s count steps, not loops). Each (model, threads, N) runs in a child
// process of its own, pinned
// to `threads` cores as the peer's are, whose peak resident memory
// (getrusage) is reported. The JSON also has run_us_per_step: the mean
// time of the step's compiled function (its "run:train" phase); the rest of
// us_per_step is the loop's (hooks, input, fetches). Prints the peer's table;
// a bad flag is one line and exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/PinnedChild.h"
#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;
using namespace estc::estimator;

struct ModelInfo {
  const char *name;
  std::vector<int64_t> shape; // one example
  int64_t classes;
  int64_t batch;
};
const std::vector<ModelInfo> kModels = {
    {"mlp", {784}, 10, 128},
    {"convnet", {28, 28, 1}, 10, 128},
    {"iris", {4}, 3, 32},
};

ModelFn modelFnOf(const std::string &model) {
  return [model](const TensorMap &f, const Tensor &l, ModeKeys mode,
                 const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    if (model == "mlp")
      return EstimatorSpec::from_signature(mode,
                                           models::mlp_model_fn(g, f, l, mode));
    if (model == "convnet")
      return EstimatorSpec::from_signature(
          mode, models::convnet_model_fn(g, f, l, mode));
    return EstimatorSpec::from_signature(
        mode, models::mlp_model_fn(g, f, l, mode, models::iris_params()));
  };
}

/// The end of every step (of every loop, with iterations_per_loop), the
/// global step there, and how long its compiled function ran (the step's
/// "run:..." phase).
struct Clock : SessionRunHook {
  std::vector<std::chrono::steady_clock::time_point> times;
  std::vector<int64_t> steps;
  std::vector<double> runMicros;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &v) override {
    times.push_back(std::chrono::steady_clock::now());
    steps.push_back(context.session().global_step());
    runMicros.push_back(v.phases.empty() ? 0.0 : v.phases.back().duration_us);
  }
};

/// Trains `info` with `threads` threads; returns its JSON object.
std::string runOne(const ModelInfo &info, int threads, int64_t iterations,
                   int64_t warmup, int64_t steps) {
  int64_t n = 4096, size = 1;
  for (int64_t d : info.shape)
    size *= d;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<float> xs(n * size);
  for (float &v : xs)
    v = uniform(rng);
  std::vector<int64_t> ys(n);
  for (int64_t &y : ys)
    y = static_cast<int64_t>(rng() % info.classes);
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), info.shape.begin(), info.shape.end());
  Features x{{"x", TensorValue::of<float>(shape, xs)}};
  TensorValue y = TensorValue::of<int64_t>({n}, ys);

  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("estc-estimator-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  RunConfigOptions o;
  o.model_dir = dir.string();
  o.tf_random_seed = 1;
  o.save_checkpoints_steps = 1000000000;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000000;
  o.intra_op_parallelism_threads = threads;
  o.iterations_per_loop = iterations;
  ScopedLogSink quiet([](const std::string &) {});
  Estimator estimator(modelFnOf(info.name), RunConfig::from_tf_config("", o));
  auto clock = std::make_shared<Clock>();
  // Reserved: the measuring hook itself copies no vector while it measures.
  clock->times.reserve(static_cast<size_t>(warmup + steps));
  clock->runMicros.reserve(static_cast<size_t>(warmup + steps));
  estimator.train(numpy_input_fn(x, y, {info.batch, std::nullopt, false, 0}),
                  {.hooks = {clock}, .steps = warmup + steps});
  std::filesystem::remove_all(dir);
  // From the first loop end at or past `warmup` to the last.
  size_t first = static_cast<size_t>(
      std::lower_bound(clock->steps.begin(), clock->steps.end(), warmup) -
      clock->steps.begin());
  first = std::min(first, clock->steps.size() - 1);
  double seconds =
      std::chrono::duration<double>(clock->times.back() - clock->times[first])
          .count();
  int64_t timedSteps = clock->steps.back() - clock->steps[first];
  double perSec = static_cast<double>(timedSteps) / seconds;
  // The part of a step spent in the compiled function (the rest is the
  // loop's: hooks, input, fetches).
  double runMicros = 0;
  for (size_t i = first + 1; i < clock->runMicros.size(); ++i)
    runMicros += clock->runMicros[i];
  runMicros /= static_cast<double>(std::max<int64_t>(timedSteps, 1));
  struct rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::ostringstream json;
  json << "{\"peer\": \"estc\", \"model\": \"" << info.name
       << "\", \"batch\": " << info.batch << ", \"threads\": " << threads
       << ", \"iterations_per_loop\": " << iterations
       << ", \"steps_per_sec\": " << perSec
       << ", \"us_per_step\": " << 1e6 / perSec
       << ", \"run_us_per_step\": " << runMicros
       << ", \"peak_rss_mib\": " << usage.ru_maxrss / 1024.0 << "}";
  std::printf("%-8s %5lld %7d %6lld %10.1f %10.2f %13.1f\n", info.name,
              static_cast<long long>(info.batch), threads,
              static_cast<long long>(iterations), perSec, 1e6 / perSec,
              usage.ru_maxrss / 1024.0);
  std::fflush(stdout);
  return json.str();
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string modelList = "mlp,convnet,iris", threadList = "1,2",
              loopList = "1", jsonFile;
  int64_t warmup = 20, steps = 200;
  flags::FlagParser parser(
      "estimator_bench",
      "The seed models trained through Estimator::train (JIT): steps/s and "
      "peak resident memory, the table bench/tf_estimator_peer.py prints "
      "for TF 2.15's Estimator.");
  parser.add(Flag("models", &modelList, "models, comma-separated")
                 .value_name("mlp,convnet,iris"));
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("steps", &steps, "timed steps").positive());
  parser.add(Flag("iterations_per_loop", &loopList,
                  "RunConfig::iterations_per_loop values, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("json", &jsonFile, "also write the results here")
                 .value_name("FILE"));
  parser.parse_or_exit(argc, argv);
  std::vector<const ModelInfo *> models;
  for (const std::string &m : bench::splitList(modelList)) {
    auto it = std::find_if(kModels.begin(), kModels.end(),
                           [&](const ModelInfo &i) { return m == i.name; });
    if (it == kModels.end())
      parser.fail("--models=" + modelList + ": unknown model '" + m +
                  "' (mlp, convnet, iris)");
    models.push_back(&*it);
  }
  std::vector<int> threads = bench::parseThreadList(parser, threadList);
  std::vector<int64_t> loops;
  for (const std::string &item : bench::splitList(loopList)) {
    char *end = nullptr;
    long long n = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n <= 0)
      parser.fail("--iterations_per_loop=" + loopList + ": '" + item +
                  "' is not a positive integer");
    loops.push_back(n);
  }

  std::printf("%-8s %5s %7s %6s %10s %10s %13s\n", "model", "batch", "threads",
              "loop", "steps/s", "us/step", "peak RSS MiB");
  std::fflush(stdout);
  std::vector<std::string> results;
  bool failed = false;
  for (const ModelInfo *info : models)
    for (int t : threads)
      for (int64_t n : loops) {
        // A child per run: its own thread pool and its own peak memory.
        std::string json;
        try {
          json = bench::runPinnedChild(
              t, [&] { return runOne(*info, t, n, warmup, steps); },
              std::string("estimator_bench: error: ") + info->name + ": ");
        } catch (const std::runtime_error &) {
          std::perror("estimator_bench: error: pipe");
          return 1;
        }
        if (json.empty()) {
          failed = true;
          continue;
        }
        results.push_back(json);
      }
  if (!jsonFile.empty()) {
    std::ofstream out(jsonFile);
    out << "[";
    for (size_t i = 0; i < results.size(); ++i)
      out << (i ? ",\n " : "") << results[i];
    out << "]\n";
  }
  return failed ? 1 : 0;
}
