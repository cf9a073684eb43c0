//===- model_bench.cpp - estc against libtorch, side by side -------------===//
//
// The seed MLP (784-256-256-10) and MNIST ConvNet at batch 128: estc's
// ahead-of-time compiled code (the generated Mlp / ConvNet classes) and the
// same architectures in libtorch, in one run, on the same thread count, for
//   - the forward pass (inference: estc's @predict, libtorch in eval mode
//     without grad), and
//   - the training step: forward (dropout active) + backward + Adam update
//     (estc's @train; libtorch's forward, cross_entropy, backward() and
//     optim::Adam with the same hyperparameters).
// Also: GFLOP/s against a measured Eigen sgemm roofline (the runtime's matmul
// kernel), estc's compile time (a full in-process compile, cache off) and
// arena bytes per model.
//
//   bench/model_bench [--threads=N] [--batch_size=N] [--seconds=S]
//                     [--clock=wall|cpu]
//
// --clock=wall (default) times with the steady clock; --clock=cpu (with
// --threads=1 only) with the calling thread's CPU time, which a machine
// shared with other jobs inflates far less (waiting for a core does not
// count; cache and memory contention still do).
//
// Prints a Markdown table; docs/results.md records it with this command. A
// bad flag is one line and exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "ConvNet.h"
#include "Mlp.h"
#include "TorchModels.h"

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"
#include "runtime/MemRef.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int64_t batch = 128;
  double seconds = 1.0;  // per measurement
  bool cpuClock = false; // --clock=cpu
};

/// Whether timeIt measures the calling thread's CPU time (--clock=cpu).
bool gCpuClock = false;

/// Seconds on the clock timeIt uses.
double now() {
  if (gCpuClock) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) +
           1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// Median seconds per call of `fn` over 5 rounds of about
/// `seconds / 5` each, after a warm-up.
double timeIt(const std::function<void()> &fn, double seconds) {
  for (int i = 0; i < 3; ++i)
    fn();
  double start = now();
  fn();
  double once = now() - start;
  int iterations = std::max(1, static_cast<int>(seconds / 5 / once));
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    for (int i = 0; i < iterations; ++i)
      fn();
    rounds.push_back((now() - t0) / iterations);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

void fillRandom(float *data, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  for (size_t i = 0; i < n; ++i)
    data[i] = dist(rng);
}

/// Random weights for every f32 variable of a compiled model.
void randomWeights(estc::rt::CompiledModel &model) {
  const estc::rt::ModelSpec &spec = model.spec();
  for (int v = 0; v < spec.numVariables; ++v) {
    const estc::rt::VariableSpec &var = spec.variables[v];
    if (var.dtype == estc::rt::DType::F32)
      fillRandom(static_cast<float *>(model.variable_data(v)),
                 estc::rt::numElements(var.rank, var.shape, 0), 17 + v);
  }
}

/// Seconds per estc predict() at `batch`.
double estcPredict(estc::rt::CompiledModel &model, int64_t batch,
                   int64_t inputElements, double seconds) {
  randomWeights(model);
  model.set_batch(batch);
  int predict = model.function_index("predict");
  fillRandom(static_cast<float *>(model.input_data(predict, 0)),
             batch * inputElements, 3);
  return timeIt([&] { model.run(predict); }, seconds);
}

/// Seconds per estc training step (@train) at `batch`, from the weights of
/// the compiled @init; labels uniform in [0, 10). -1 when the model has no
/// compiled training step.
double estcTrain(estc::rt::CompiledModel &model, int64_t batch,
                 int64_t inputElements, double seconds) {
  const estc::rt::ModelSpec &spec = model.spec();
  bool hasTrain = false;
  for (int f = 0; f < spec.numFunctions; ++f)
    hasTrain |= std::strcmp(spec.functions[f].name, "train") == 0;
  if (!hasTrain)
    return -1;
  model.run("init");
  model.set_batch(batch);
  int train = model.function_index("train");
  fillRandom(static_cast<float *>(model.input_data(
                 train, model.input_index(train, "features/x"))),
             batch * inputElements, 4);
  auto *labels = static_cast<int64_t *>(
      model.input_data(train, model.input_index(train, "labels")));
  std::mt19937 rng(5);
  for (int64_t i = 0; i < batch; ++i)
    labels[i] = std::uniform_int_distribution<int64_t>(0, 9)(rng);
  double t = timeIt([&] { model.run(train); }, seconds);
  float loss = *static_cast<float *>(
      model.output_data(train, model.output_index(train, "loss")));
  if (!std::isfinite(loss)) {
    std::fprintf(stderr, "model_bench: error: %s @train loss is %f\n",
                 spec.name, loss);
    std::exit(1);
  }
  return t;
}

/// Seconds per libtorch training step of `trainer` on random inputs.
template <typename Module>
double torchTrain(estc::bench::TorchTrainer<Module> &trainer,
                  torch::Tensor input, int64_t batch, double seconds) {
  torch::Tensor labels = torch::randint(0, 10, {batch}, torch::kLong);
  return timeIt([&] { trainer.step(input, labels); }, seconds);
}

double torchForward(torch::nn::Module &module,
                    const std::function<torch::Tensor(torch::Tensor)> &forward,
                    torch::Tensor input, double seconds) {
  module.eval();
  torch::NoGradGuard noGrad;
  return timeIt([&] { forward(input); }, seconds);
}

/// GFLOP/s of the runtime's (Eigen) sgemm on an n x n x n product.
double sgemmRoofline(int64_t n, double seconds) {
  std::vector<float> a(n * n), b(n * n), c(n * n);
  fillRandom(a.data(), a.size(), 1);
  fillRandom(b.data(), b.size(), 2);
  auto memref = [n](float *data) {
    estc::rt::MemRef<float, 3> m{data, data, 0, {1, n, n}, {n * n, n, 1}};
    return m;
  };
  auto ma = memref(a.data()), mb = memref(b.data()), mc = memref(c.data());
  double t = timeIt([&] { _mlir_ciface_estc_matmul_f32(&ma, &mb, &mc, 0, 0); },
                    seconds);
  return 2.0 * n * n * n / t / 1e9;
}

/// Seconds of a full in-process compile of `graph` (import to object code,
/// cache off).
double compileSeconds(const estc::graph::GraphDef &graph, const char *name) {
  estc::JitOptions options;
  options.useCache = false;
  estc::JitCompiler jit(options);
  auto start = Clock::now();
  auto model = estc::jitCompileGraph(jit, graph, name, [](llvm::StringRef) {});
  double t = std::chrono::duration<double>(Clock::now() - start).count();
  if (!model) {
    std::fprintf(stderr, "model_bench: %s\n",
                 llvm::toString(model.takeError()).c_str());
    return -1;
  }
  return t;
}

/// Arena bytes of one function's step at `batch` (the model's arena is the
/// largest of all its functions').
int64_t functionArenaBytes(const estc::rt::CompiledModel &model,
                           const char *function, int64_t batch) {
  const estc::rt::FunctionSpec &f =
      model.spec().functions[model.function_index(function)];
  return f.arenaStatic + f.arenaPerBatch * batch;
}

} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  Options opt;
  std::string clockName = "wall";
  estc::flags::FlagParser parser(
      "model_bench", "estc against libtorch on the seed MLP and ConvNet "
                     "(forward pass and training step); prints a Markdown "
                     "table.");
  parser.add(Flag("threads", &opt.threads, "threads of both")
                 .min(1)
                 .default_text("the number of cores"));
  parser.add(Flag("batch_size", &opt.batch, "examples per step").min(1));
  parser.add(Flag("seconds", &opt.seconds, "time per measurement").positive());
  parser.add(Flag("clock", &clockName,
                  "wall: the steady clock; cpu: the calling thread's\n"
                  "CPU time (with --threads=1)")
                 .choices({"wall", "cpu"}));
  parser.parse_or_exit(argc, argv);
  opt.cpuClock = clockName == "cpu";
  if (opt.cpuClock && opt.threads != 1)
    parser.fail("--clock=cpu needs --threads=1 (it measures the calling "
                "thread's CPU time)");
  gCpuClock = opt.cpuClock;
  estc_runtime_set_num_threads(opt.threads);
  torch::set_num_threads(opt.threads);
  torch::manual_seed(0);

  const int64_t b = opt.batch;
  double roofline = sgemmRoofline(512, opt.seconds);

  // Every estc measurement before libtorch runs anything: libtorch's OpenMP
  // workers keep spinning for a while after each of its parallel regions
  // and would take the cores estc's pool uses (on 2 cores, estc's 2-thread
  // ConvNet step measured 11-15 ms after libtorch's forward pass, 8.5 ms
  // before it).
  Mlp mlp;
  ConvNet convnet;
  double estcMlp = estcPredict(mlp, b, 784, opt.seconds);
  double estcConv = estcPredict(convnet, b, 28 * 28, opt.seconds);
  double estcMlpTrain = estcTrain(mlp, b, 784, opt.seconds);
  double estcConvTrain = estcTrain(convnet, b, 28 * 28, opt.seconds);

  estc::bench::TorchMlp torchMlp;
  estc::bench::TorchConvNet torchConv;
  double torchMlpT = torchForward(
      *torchMlp, [&](torch::Tensor x) { return torchMlp->forward(x); },
      torch::rand({b, 784}), opt.seconds);
  double torchConvT = torchForward(
      *torchConv, [&](torch::Tensor x) { return torchConv->forward(x); },
      torch::rand({b, 28, 28, 1}), opt.seconds);

  estc::bench::TorchTrainer<estc::bench::TorchMlp> torchMlpTrainer(
      estc::bench::TorchMlp(), 0.002);
  estc::bench::TorchTrainer<estc::bench::TorchConvNet> torchConvTrainer(
      estc::bench::TorchConvNet(), 0.002);
  double torchMlpTrainT =
      torchTrain(torchMlpTrainer, torch::rand({b, 784}), b, opt.seconds);
  double torchConvTrainT =
      torchTrain(torchConvTrainer, torch::rand({b, 28, 28, 1}), b, opt.seconds);

  double compileMlp = compileSeconds(estc::models::build_mlp(42), "Mlp");
  double compileConv =
      compileSeconds(estc::models::build_convnet(42), "ConvNet");

  const char *clock = opt.cpuClock ? ", thread CPU time" : "";
  std::printf("Forward pass (predict), batch %lld, %d thread(s)%s; Eigen sgemm "
              "roofline (512^3): %.1f GFLOP/s\n\n",
              static_cast<long long>(b), opt.threads, clock, roofline);
  std::printf(
      "| model | estc ms | libtorch ms | libtorch / estc | estc "
      "GFLOP/s | %% of roofline | estc compile s | predict arena bytes |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  auto row = [&](const char *name, double estc, double torch, double flops,
                 double compile, int64_t arena) {
    double gflops = flops / estc / 1e9;
    std::printf("| %s | %.3f | %.3f | %.2fx | %.1f | %.0f%% | %.2f | %lld |\n",
                name, estc * 1e3, torch * 1e3, torch / estc, gflops,
                100 * gflops / roofline, compile,
                static_cast<long long>(arena));
  };
  row("MLP 784-256-256-10", estcMlp, torchMlpT, estc::bench::mlpForwardFlops(b),
      compileMlp, functionArenaBytes(mlp, "predict", b));
  row("MNIST ConvNet", estcConv, torchConvT,
      estc::bench::convNetForwardFlops(b), compileConv,
      functionArenaBytes(convnet, "predict", b));

  std::printf("\nTraining step (forward + backward + Adam), batch %lld, %d "
              "thread(s)%s\n\n",
              static_cast<long long>(b), opt.threads, clock);
  std::printf("| model | estc ms | libtorch ms | libtorch / estc | roofline "
              "ms | estc GFLOP/s | %% of roofline | train arena bytes |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  auto trainRow = [&](const char *name, estc::rt::CompiledModel &model,
                      double estc, double torch, double flops) {
    double rooflineMs = flops / roofline / 1e9 * 1e3;
    if (estc < 0) {
      std::printf("| %s | @train not compiled | %.3f | - | %.3f | - | - | - "
                  "|\n",
                  name, torch * 1e3, rooflineMs);
      return;
    }
    double gflops = flops / estc / 1e9;
    std::printf("| %s | %.3f | %.3f | %.2fx | %.3f | %.1f | %.0f%% | %lld |\n",
                name, estc * 1e3, torch * 1e3, torch / estc, rooflineMs, gflops,
                100 * gflops / roofline,
                static_cast<long long>(functionArenaBytes(model, "train", b)));
  };
  trainRow("MLP 784-256-256-10", mlp, estcMlpTrain, torchMlpTrainT,
           estc::bench::mlpTrainFlops(b));
  trainRow("MNIST ConvNet", convnet, estcConvTrain, torchConvTrainT,
           estc::bench::convNetTrainFlops(b));
  return 0;
}
