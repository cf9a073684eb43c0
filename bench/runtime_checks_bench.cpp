//===- runtime_checks_bench.cpp - What the run-time checks cost -----------===//
//
// The seed models' training steps compiled twice in one process, with the
// run-time checks (labels of the sparse cross-entropy; est-insert-runtime-
// checks) and without (JitOptions::runtimeChecks = false, estc
// --runtime-checks=false), timed in alternating rounds: the median step time
// of each and their ratio. The CPU's model name is printed with the results.
// Run:
//   build/bin/runtime_checks_bench [--rounds=N] [--steps=N] [--threads=N]
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "compiler/Target/Jit.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::unique_ptr<estc::JitModel> compile(const estc::graph::GraphDef &graph,
                                        const std::string &name,
                                        bool runtimeChecks) {
  estc::JitOptions options;
  options.runtimeChecks = runtimeChecks;
  options.useCache = false;
  estc::JitCompiler jit(options);
  auto model = estc::jitCompileGraph(jit, graph, name, [](llvm::StringRef) {});
  if (!model) {
    std::cerr << "runtime_checks_bench: error: "
              << llvm::toString(model.takeError()) << "\n";
    std::exit(1);
  }
  return std::move(*model);
}

/// Random features in [-1, 1] and labels in [0, 10) for @train at `batch`.
void fillInputs(estc::rt::CompiledModel &model, int64_t batch) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> x(-1, 1);
  std::uniform_int_distribution<int64_t> y(0, 9);
  int f = model.function_index("train");
  const estc::rt::FunctionSpec &spec = model.spec().functions[f];
  for (int i = 0; i < spec.numInputs; ++i) {
    int64_t n =
        estc::rt::numElements(spec.inputs[i].rank, spec.inputs[i].shape, batch);
    void *data = model.input_data(f, i);
    if (spec.inputs[i].dtype == estc::rt::DType::F32)
      for (int64_t k = 0; k < n; ++k)
        static_cast<float *>(data)[k] = x(rng);
    else
      for (int64_t k = 0; k < n; ++k)
        static_cast<int64_t *>(data)[k] = y(rng);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int64_t rounds = 15, steps = 20, threads = 0;
  estc::flags::FlagParser parser(
      "runtime_checks_bench",
      "Times the seed models' training steps with and without run-time "
      "checks, in one process.");
  parser.add(
      estc::flags::Flag("rounds", &rounds, "alternating rounds per variant")
          .min(1));
  parser.add(
      estc::flags::Flag("steps", &steps, "training steps per round").min(1));
  parser.add(
      estc::flags::Flag("threads", &threads, "runtime threads (0: the default)")
          .min(0));
  parser.parse_or_exit(argc, argv);
  if (threads > 0)
    estc_runtime_set_num_threads(static_cast<int>(threads));

  std::printf("CPU: %s, %d runtime threads\n", cpuModel().c_str(),
              estc_runtime_get_num_threads());
  std::printf("%-8s %6s %14s %14s %8s\n", "model", "batch", "checked ms",
              "unchecked ms", "ratio");
  struct Seed {
    const char *name;
    estc::graph::GraphDef graph;
    int64_t batch;
  };
  std::vector<Seed> seeds = {{"mlp", estc::models::build_mlp(1), 128},
                             {"convnet", estc::models::build_convnet(1), 64}};
  for (Seed &seed : seeds) {
    std::unique_ptr<estc::JitModel> models[2] = {
        compile(seed.graph, "Checked", true),
        compile(seed.graph, "Unchecked", false)};
    std::vector<double> times[2];
    for (auto &model : models) {
      model->run("init");
      model->set_batch(seed.batch);
      fillInputs(*model, seed.batch);
      for (int i = 0; i < 3; ++i) // warm-up
        model->run("train");
    }
    for (int64_t r = 0; r < rounds; ++r) {
      for (int v = 0; v < 2; ++v) {
        // Alternate which variant goes first.
        int which = (r % 2) ? 1 - v : v;
        auto start = Clock::now();
        for (int64_t s = 0; s < steps; ++s)
          models[which]->run("train");
        std::chrono::duration<double, std::milli> ms = Clock::now() - start;
        times[which].push_back(ms.count() / double(steps));
      }
    }
    double checked = median(times[0]), unchecked = median(times[1]);
    std::printf("%-8s %6lld %14.3f %14.3f %8.4f\n", seed.name,
                static_cast<long long>(seed.batch), checked, unchecked,
                checked / unchecked);
  }
  return 0;
}
