//===- gpu_step_bench.cpp - The seed models' training step on CUDA -------===//
//
// gpu_step_bench [--batches=128,1024] [--warmup=N] [--steps=N]
//                [--device=N] [--json=FILE]
//
// Steps per second of @train of the seed MLP (784-256-256-10) and ConvNet
// (examples/models), compiled ahead of time for CUDA (bench/gpu/
// CMakeLists.txt); links no LLVM. For each model and batch: @init, one
// batch of random images (uniform [0, 1)) and labels written once into the
// model's (pinned) input buffers, `--warmup` steps (the first runs load the
// kernels and capture the CUDA graph), then `--steps` steps timed with
// steady_clock. run() returns after the step's single synchronization, so
// the time is the GPU's and includes the input upload, as a trainer sees
// it. bench/gpu/torch_peer.py times PyTorch the same way.
//
// Prints a table and one JSON line. No CUDA device: "SKIP: ..." and exit
// status 77. A bad flag: one line, status 2.
//
// ESTC_CUDA_PROFILE=1: the runtime's per-kernel profile of each model's
// timed steps (the warmup's is dropped) on stderr after that model, and the
// profile emptied, so the runtime has nothing left to print at exit. The
// steps/s are then those of profiled steps: no CUDA graphs, two events
// around every launch.
//
//===----------------------------------------------------------------------===//

#include "test/gpu/CudaProbe.h"

#include "BenchConvNetCuda.h"
#include "BenchMlpCuda.h"

#include "lib/Support/Flags.h"
#include "runtime/CompiledModel.h"
#include "runtime/cuda/Cuda.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;

struct Result {
  std::string model;
  int64_t batch;
  double stepsPerSec, msPerStep, firstStepMs, finalLoss;
};

std::vector<int64_t> parseBatches(const std::string &list,
                                  estc::flags::FlagParser &parser) {
  std::vector<int64_t> batches;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long long b = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || b < 1)
      parser.fail("--batches=" + list +
                  ": must be positive integers separated by commas");
    batches.push_back(b);
  }
  return batches;
}

Result bench(rt::CompiledModel &model, const std::string &name, int64_t batch,
             int64_t warmup, int64_t steps) {
  using Clock = std::chrono::steady_clock;
  model.run("init");
  int train = model.function_index("train");
  model.set_batch(batch);
  const rt::TensorSpec &x = model.spec()
                                .functions[train]
                                .inputs[model.input_index(train, "features/x")];
  float *images = static_cast<float *>(
      model.input_data(train, model.input_index(train, "features/x")));
  int64_t *labels = static_cast<int64_t *>(
      model.input_data(train, model.input_index(train, "labels")));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(0, 1);
  for (int64_t i = 0, n = rt::numElements(x.rank, x.shape, batch); i < n; ++i)
    images[i] = pixel(rng);
  for (int64_t i = 0; i < batch; ++i)
    labels[i] = static_cast<int64_t>(rng() % 10);

  auto start = Clock::now();
  model.run(train);
  double firstMs =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  for (int64_t i = 1; i < warmup; ++i)
    model.run(train);
  if (rt::cuda_profiling())
    rt::cuda_profile_reset();
  start = Clock::now();
  for (int64_t i = 0; i < steps; ++i)
    model.run(train);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  float loss = *static_cast<const float *>(
      model.output_data(train, model.output_index(train, "loss")));
  return {name,    batch, steps / seconds, 1000.0 * seconds / steps,
          firstMs, loss};
}

} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string batchList = "128,1024", jsonPath;
  int64_t warmup = 20, steps = 200;
  int device = 0;
  estc::flags::FlagParser parser(
      "gpu_step_bench",
      "Steps per second of the seed models' @train compiled for CUDA.");
  parser.add(Flag("batches", &batchList, "batch sizes, comma separated")
                 .value_name("LIST"));
  parser.add(Flag("warmup", &warmup, "untimed steps first").min(1));
  parser.add(Flag("steps", &steps, "timed steps").min(1));
  parser.add(Flag("device", &device, "the CUDA device").min(0));
  parser.add(Flag("json", &jsonPath, "also write the JSON line here")
                 .value_name("FILE"));
  parser.parse_or_exit(argc, argv);
  std::vector<int64_t> batches = parseBatches(batchList, parser);

  const gpu_test::CudaProbe &probe = gpu_test::probeCuda();
  if (probe.devices == 0) {
    std::cout << "SKIP: no CUDA device (" << probe.reason << ")\n";
    return 77;
  }
  std::vector<Result> results;
  try {
    rt::set_cuda_device(device);
    for (int64_t batch : batches) {
      std::unique_ptr<rt::CompiledModel> models[] = {
          std::make_unique<BenchMlpCuda>(),
          std::make_unique<BenchConvNetCuda>()};
      const char *names[] = {"mlp", "convnet"};
      for (int m = 0; m < 2; ++m) {
        results.push_back(bench(*models[m], names[m], batch, warmup, steps));
        // Progress, in case a time limit stops the run.
        std::cerr << "gpu_step_bench: " << names[m] << " batch " << batch
                  << ": " << results.back().stepsPerSec << " steps/s\n";
        if (rt::cuda_profiling()) {
          std::cerr << "gpu_step_bench: " << names[m] << " batch " << batch
                    << ", its " << steps
                    << " timed steps, profiled (no CUDA graphs):\n"
                    << rt::cuda_profile_report();
          rt::cuda_profile_reset();
        }
      }
    }
  } catch (const std::exception &e) {
    std::cerr << "gpu_step_bench: error: " << e.what() << "\n";
    return 1;
  }

  std::printf("%-8s %6s %12s %10s %14s %10s\n", "model", "batch", "steps/s",
              "ms/step", "first step ms", "loss");
  for (const Result &r : results)
    std::printf("%-8s %6lld %12.1f %10.3f %14.1f %10.4f\n", r.model.c_str(),
                static_cast<long long>(r.batch), r.stepsPerSec, r.msPerStep,
                r.firstStepMs, r.finalLoss);
  std::ostringstream json;
  json << "{\"bench\": \"gpu_step_bench\", \"device\": " << device
       << ", \"warmup\": " << warmup << ", \"steps\": " << steps
       << ", \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result &r = results[i];
    json << (i ? ", " : "") << "{\"model\": \"" << r.model
         << "\", \"batch\": " << r.batch
         << ", \"steps_per_sec\": " << r.stepsPerSec
         << ", \"ms_per_step\": " << r.msPerStep
         << ", \"first_step_ms\": " << r.firstStepMs << ", \"final_loss\": "
         << (std::isfinite(r.finalLoss) ? std::to_string(r.finalLoss)
                                        : std::string("null"))
         << "}";
  }
  json << "]}";
  std::cout << json.str() << "\n";
  if (!jsonPath.empty()) {
    std::ofstream out(jsonPath);
    out << json.str() << "\n";
    if (!out) {
      std::cerr << "gpu_step_bench: error: cannot write " << jsonPath << "\n";
      return 1;
    }
  }
  for (const Result &r : results)
    if (!std::isfinite(r.finalLoss)) {
      std::cerr << "gpu_step_bench: error: " << r.model << " at batch "
                << r.batch << " trained to a non-finite loss\n";
      return 1;
    }
  return 0;
}
