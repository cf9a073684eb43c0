//===- rnn_bench.cpp - Recurrent training steps: estc's side -------------===//
//
//   rnn_bench --part=sst2 --data=FILE [--threads=1,2] [--warmup=20]
//             [--steps=200]
//   rnn_bench --part=lstm512 [--threads=1] [--lengths=25,50,100]
//             [--seconds=2]
//   rnn_bench --part=memory [--length=50]
//
// Issue 27's recurrent benchmarks (bench/rnn.sh runs them beside TF 2.15's
// Estimator, bench/tf_rnn_peer.py, and libtorch, rnn_torch_bench, and
// prints the tables of docs/results.md):
//
// sst2: the SST-2-shaped model of bench/RnnModels.h (embedding 128, LSTM
//   128 masked by the lengths, dense 2, Adam 0.002) trained through
//   Estimator::train (JIT) on bench/make_sst2_like.py's batches of 64, each
//   padded to its longest sentence (T varies by batch: a run-time sequence
//   length, no recompilation), as bench/estimator_bench.cpp measures the
//   seed models: a child process per thread count, pinned to `threads`
//   cores, RunConfig::intra_op_parallelism_threads = threads, steps/s
//   between the end of step `warmup` and the end of the last, the compiled
//   function's own time per step ("run_us_per_step"), the process's CPU
//   time per step ("cpu_ms_per_step": on a machine shared with other jobs,
//   with 1 thread, far steadier than the wall clock), peak RSS.
// lstm512: an LSTM 512 over x [64, T, 512] (dense 2 and the same head on
//   its last h), the compiled @train and @predict steps (CompiledModel::run,
//   no Estimator) at several T: the slope over T is the cost of one
//   timestep; beside it the runtime's matmul kernel (Eigen's sgemm, the
//   call the compiled step makes) timed alone at each recurrent GEMM's
//   shape (h U forward; dz U^T and h^T dz backward) and on a 1024^3 square
//   (the roofline), so the per-timestep time splits into recurrent GEMMs,
//   input-projection GEMMs (one [T*64, 512] x [512, 2048] product and the
//   kernel's gradient, per step; x is an input, so no gradient of it) and
//   the rest. --clock=cpu (1 thread) times with the thread's CPU time.
// memory: the sst2 model's compiled @train arena at batch 64 and T
//   (CompiledModel::arena_bytes and its formula S + P b + V v + Q T +
//   R b T) against the bytes of the activations its forward pass computes,
//   counted op by op.
//
// Every part prints a table and one JSON line per result ({"peer": "estc",
// ...}); a bad flag is one line and exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/PinnedChild.h"
#include "bench/RnnModels.h"
#include "bench/StepClock.h"
#include "compiler/Driver/GraphCompiler.h"
#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"
#include "runtime/MemRef.h"
#include "runtime/cpu/Kernels.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;
using namespace estc::estimator;
using Clock = std::chrono::steady_clock;

constexpr int64_t kEmbedding = 128, kUnits = 128, kBatch = 64;

/// bench/RnnModels.h's sst2 model; `vocab` rows of embeddings.
Signature sst2ModelFn(Graph &g, int64_t vocab, const TensorMap &f,
                      const Tensor &labels, ModeKeys mode) {
  Tensor embeddings = g.get_variable("embedding/embeddings", DType::Float32,
                                     {vocab, kEmbedding},
                                     random_uniform_initializer(-0.05, 0.05));
  Tensor x = gather(embeddings, f["ids"]);
  Tensor h = layers::lstm(x, kUnits, {}, f["lengths"]).output;
  return models::multi_class_head(layers::dense(h, 2), labels, mode, 0.002);
}

InputSpec sst2Inputs() {
  TensorSpec ids{"ids", DType::Int64, {-1, -1}};
  ids.sequence_dim = true;
  return InputSpec{{ids, {"lengths", DType::Int64, {-1}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
}

/// lstm512: LSTM `units` over x [batch, T, units].
InputSpec lstmInputs(int64_t features) {
  TensorSpec x{"x", DType::Float32, {-1, -1, features}};
  x.sequence_dim = true;
  return InputSpec{{x}, TensorSpec{"labels", DType::Int64, {-1}}};
}

std::unique_ptr<JitModel> compile(const graph::GraphDef &graph,
                                  const std::string &name) {
  JitOptions options;
  options.useCache = false;
  JitCompiler jit(options);
  auto model = jitCompileGraph(jit, graph, name, [](llvm::StringRef) {});
  if (!model)
    throw std::runtime_error(llvm::toString(model.takeError()));
  return std::move(*model);
}

// --- sst2: through Estimator::train -----------------------------------------

/// Marks "ids" as a sequence feature (its dimension 1 is the batch's T).
struct SequenceIds : HostTransform {
  Batch transform_input(const data::Element &element) const override {
    Batch b = to_batch(element);
    b.sequence_features = {"ids"};
    return b;
  }
};

std::string runSst2(const std::string &dataFile, int threads, int64_t warmup,
                    int64_t steps) {
  bench::TokenData data = bench::readTokenData(dataFile);
  std::vector<bench::TokenBatch> batches = bench::paddedBatches(data, kBatch);
  std::vector<data::Element> elements;
  double meanLength = 0;
  for (const bench::TokenBatch &b : batches) {
    meanLength += static_cast<double>(b.length) / batches.size();
    elements.push_back(data::Element::tuple(
        {data::Element::dict(
             {{"ids", TensorValue::of<int64_t>({b.batch, b.length}, b.ids)},
              {"lengths", TensorValue::of<int64_t>({b.batch}, b.lengths)}}),
         TensorValue::of<int64_t>({b.batch}, b.labels)}));
  }
  InputFn input_fn = [&elements] {
    return data::Dataset::from_generator([&elements] {
      auto next = std::make_shared<size_t>(0);
      return data::Dataset::Generator(
          [&elements, next]() -> std::optional<data::Element> {
            return elements[(*next)++ % elements.size()];
          });
    });
  };
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("estc-rnn-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ScopedLogSink quiet([](const std::string &) {});
  int64_t vocab = data.vocab;
  Estimator estimator(
      [vocab](const TensorMap &f, const Tensor &l, ModeKeys mode,
              const Params &, const RunConfig &) {
        return EstimatorSpec::from_signature(
            mode, sst2ModelFn(get_default_graph(), vocab, f, l, mode));
      },
      bench::benchRunConfig(dir.string(), threads));
  estimator.set_host_transform(std::make_shared<SequenceIds>());
  auto clock = std::make_shared<bench::StepClock>(warmup + steps);
  estimator.train(input_fn, {.hooks = {clock}, .steps = warmup + steps});
  std::filesystem::remove_all(dir);
  std::ostringstream json;
  json << "{\"peer\": \"estc\", \"part\": \"sst2\", \"threads\": " << threads
       << ", \"batch\": " << kBatch
       << ", \"mean_padded_length\": " << meanLength << ", "
       << clock->json_fields(warmup, steps) << "}";
  return json.str();
}

/// Runs `fn` in a child process pinned to cores 0 .. threads - 1; returns
/// the JSON it wrote, or "" when it failed.
std::string inChild(int threads, const std::function<std::string()> &fn) {
  return bench::runPinnedChild(threads, fn, "rnn_bench: error: ");
}

// --- lstm512: the compiled step against the sgemm roofline
// --------------------

/// Whether timeIt reads the calling thread's CPU time (--clock=cpu, one
/// thread: a machine shared with other jobs inflates it far less than the
/// wall clock) rather than the steady clock.
bool gCpuClock = false;

double now() {
  if (gCpuClock) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) +
           1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// Median seconds per call of `fn` over 5 rounds of about seconds / 5.
double timeIt(const std::function<void()> &fn, double seconds) {
  for (int i = 0; i < 2; ++i)
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

void fillRandom(std::vector<float> &v, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  for (float &x : v)
    x = dist(rng);
}

/// Seconds of the runtime's matmul kernel on C [m, n] = op(A) op(B), inner
/// dimension k.
double sgemmSeconds(int64_t m, int64_t k, int64_t n, bool ta, bool tb,
                    double seconds) {
  std::vector<float> a(m * k), b(k * n), c(m * n);
  fillRandom(a, 1);
  fillRandom(b, 2);
  rt::MemRef<float, 3> ma{a.data(),
                          a.data(),
                          0,
                          {1, ta ? k : m, ta ? m : k},
                          {m * k, ta ? m : k, 1}};
  rt::MemRef<float, 3> mb{b.data(),
                          b.data(),
                          0,
                          {1, tb ? n : k, tb ? k : n},
                          {k * n, tb ? k : n, 1}};
  rt::MemRef<float, 3> mc{c.data(), c.data(), 0, {1, m, n}, {m * n, n, 1}};
  return timeIt(
      [&] {
        _mlir_ciface_estc_matmul_f32(&ma, &mb, &mc, ta ? 1 : 0, tb ? 1 : 0);
      },
      seconds);
}

void runLstm512(int threads, const std::vector<int64_t> &lengths,
                double seconds, bool kernels) {
  estc_runtime_set_num_threads(threads);
  const int64_t units = 512, features = 512, batch = kBatch;
  graph::GraphDef graph = build_graph_def(
      lstmInputs(features),
      [&](Graph &, const TensorMap &f, const Tensor &l, ModeKeys mode) {
        Tensor h = layers::lstm(f["x"], units).output;
        return models::multi_class_head(layers::dense(h, 2), l, mode, 0.002);
      },
      1);
  if (const char *dump = std::getenv("RNN_BENCH_DUMP_GRAPH"))
    if (std::string error; !graph::writeGraph(dump, graph, error))
      throw std::runtime_error(error);
  std::unique_ptr<JitModel> model = compile(graph, "Lstm512");
  model->run("init");
  model->set_batch(batch);
  int train = model->function_index("train");
  int predict = model->function_index("predict");
  std::vector<double> trainS, predictS;
  for (int64_t t : lengths) {
    model->set_sequence_length(t);
    std::vector<float> x(batch * t * features);
    fillRandom(x, 3);
    for (int f : {train, predict})
      std::copy(x.begin(), x.end(),
                static_cast<float *>(
                    model->input_data(f, model->input_index(f, "features/x"))));
    auto *labels = static_cast<int64_t *>(
        model->input_data(train, model->input_index(train, "labels")));
    for (int64_t i = 0; i < batch; ++i)
      labels[i] = i % 2;
    trainS.push_back(timeIt([&] { model->run(train); }, seconds));
    predictS.push_back(timeIt([&] { model->run(predict); }, seconds));
  }
  // Least-squares slope and intercept of seconds over T.
  auto fit = [&](const std::vector<double> &s) {
    double n = static_cast<double>(lengths.size()), sx = 0, sy = 0, sxx = 0,
           sxy = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      double x = static_cast<double>(lengths[i]);
      sx += x;
      sy += s[i];
      sxx += x * x;
      sxy += x * s[i];
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    return std::make_pair(slope, (sy - slope * sx) / n);
  };
  auto [trainSlope, trainFixed] = fit(trainS);
  auto [predictSlope, predictFixed] = fit(predictS);
  if (!kernels) { // the compiled steps only (for a profiler)
    for (size_t i = 0; i < lengths.size(); ++i)
      std::printf("T %lld: @train %.2f ms, @predict %.2f ms\n",
                  static_cast<long long>(lengths[i]), trainS[i] * 1e3,
                  predictS[i] * 1e3);
    return;
  }

  // The kernel alone at the recurrent GEMMs' shapes.
  const int64_t g = 4 * units;
  double peak = 2.0 * 1024 * 1024 * 1024 /
                sgemmSeconds(1024, 1024, 1024, false, false, seconds) / 1e9;
  double fwd = sgemmSeconds(batch, units, g, false, false, seconds);
  double bwdH = sgemmSeconds(batch, g, units, false, true, seconds);
  double bwdU = sgemmSeconds(units, batch, g, true, false, seconds);
  double flop = 2.0 * batch * units * g;
  int64_t tMid = lengths[lengths.size() / 2];
  // The input projection at T = tMid: [T * 64, 512] x [512, 2048] and the
  // kernel's gradient [512, T * 64] x [T * 64, 2048], per step (x is an
  // input, not trained: no gradient of it).
  double proj = sgemmSeconds(tMid * batch, features, g, false, false, seconds);
  double projDw = sgemmSeconds(features, tMid * batch, g, true, false, seconds);
  double projPerStep = (proj + projDw) / static_cast<double>(tMid);

  std::printf("LSTM 512 (input 512), batch %lld, %d thread(s); sgemm "
              "roofline (Eigen, 1024^3): %.1f GFLOP/s\n\n",
              static_cast<long long>(batch), threads, peak);
  std::printf("| T | @train ms | @predict ms |\n|---|---|---|\n");
  for (size_t i = 0; i < lengths.size(); ++i)
    std::printf("| %lld | %.2f | %.2f |\n", static_cast<long long>(lengths[i]),
                trainS[i] * 1e3, predictS[i] * 1e3);
  std::printf("\nper timestep (slope over T): @train %.3f ms (+ %.2f ms "
              "fixed), @predict %.3f ms (+ %.2f ms fixed)\n\n",
              trainSlope * 1e3, trainFixed * 1e3, predictSlope * 1e3,
              predictFixed * 1e3);
  std::printf("| GEMM (one timestep) | shape | kernel ms | GFLOP/s | %% of "
              "roofline |\n|---|---|---|---|---|\n");
  auto row = [&](const char *name, const char *shape, double s) {
    std::printf("| %s | %s | %.3f | %.1f | %.0f%% |\n", name, shape, s * 1e3,
                flop / s / 1e9, 100 * flop / s / 1e9 / peak);
  };
  row("forward h U", "[64,512] x [512,2048]", fwd);
  row("backward dz U^T", "[64,2048] x [2048,512]^T", bwdH);
  row("backward h^T dz", "[512,64]^T x [64,2048]", bwdU);
  double recurrent = fwd + bwdH + bwdU;
  double rest = trainSlope - recurrent - projPerStep;
  std::printf("\n@train per timestep %.3f ms = recurrent GEMMs %.3f (%.0f%%) "
              "+ input-projection GEMMs %.3f (%.0f%%) + the rest %.3f "
              "(%.0f%%)\n",
              trainSlope * 1e3, recurrent * 1e3, 100 * recurrent / trainSlope,
              projPerStep * 1e3, 100 * projPerStep / trainSlope, rest * 1e3,
              100 * rest / trainSlope);
  std::printf("@predict per timestep %.3f ms = forward GEMM %.3f + input "
              "projection %.3f + the rest %.3f\n",
              predictSlope * 1e3, fwd * 1e3, proj / tMid * 1e3,
              (predictSlope - fwd - proj / tMid) * 1e3);
  std::printf("{\"peer\": \"estc\", \"part\": \"lstm512\", \"threads\": %d, "
              "\"roofline_gflops\": %.2f, \"train_ms_per_step\": %.4f, "
              "\"predict_ms_per_step\": %.4f, \"gemm_fwd_ms\": %.4f, "
              "\"gemm_bwd_dh_ms\": %.4f, \"gemm_bwd_du_ms\": %.4f, "
              "\"proj_ms_per_step\": %.4f, \"rest_ms_per_step\": %.4f}\n",
              threads, peak, trainSlope * 1e3, predictSlope * 1e3, fwd * 1e3,
              bwdH * 1e3, bwdU * 1e3, projPerStep * 1e3, rest * 1e3);
  std::fflush(stdout);
}

// --- memory: the arena against the activations ------------------------------

void runMemory(int64_t length, int64_t vocab) {
  graph::GraphDef graph = build_graph_def(
      sst2Inputs(),
      [&](Graph &g, const TensorMap &f, const Tensor &l, ModeKeys mode) {
        return sst2ModelFn(g, vocab, f, l, mode);
      },
      1);
  if (const char *dump = std::getenv("RNN_BENCH_DUMP_GRAPH"))
    if (std::string error; !graph::writeGraph(dump, graph, error))
      throw std::runtime_error(error);
  std::unique_ptr<JitModel> model = compile(graph, "Sst2");
  const rt::FunctionSpec &train =
      model->spec().functions[model->function_index("train")];
  const int64_t b = kBatch, t = length, u = kUnits, e = kEmbedding;
  // The values the sst2 ids: x = embedding rows of every token.
  int64_t values = b * t;
  int64_t arena = train.arenaStatic + train.arenaPerBatch * b +
                  train.arenaPerValue * values + train.arenaPerStep * t +
                  train.arenaPerBatchStep * b * t;
  // Forward activations, f32, counted op by op (Recurrent.cpp's lowering):
  int64_t embedded = b * t * e * 4;      // gather -> [b, T, 128]
  int64_t transposed = embedded;         // time major [T, b, 128]
  int64_t projected = t * b * 4 * u * 4; // x W + b [T, b, 512]
  int64_t mask = t * b * 1;              // sequence mask [T, b, 1] (i1)
  // Per step: z = xz + h U [b, 512]; i, f, g, o [b, 128] each;
  // f c, i g, c, tanh(c), h; the masked h and c (where): 14 x [b, 128].
  int64_t perStep = b * 4 * u * 4 * 2 + b * u * 4 * 10;
  int64_t recurrent = perStep * t;
  int64_t head = b * 2 * 4 * 3; // logits, softmax, loss terms
  int64_t activations =
      embedded + transposed + projected + mask + recurrent + head;
  // What a reverse pass needs stored: h_{t-1}, c_{t-1}, i, f, g, o and
  // tanh(c) per step ([b, 128] each), and the mask.
  int64_t minimal = t * b * u * 4 * 7 + mask + embedded;
  std::printf("sst2 model @train at batch %lld, T = %lld: arena formula "
              "%lld + %lld b + %lld v + %lld T + %lld b T bytes (v = %lld "
              "embedding rows)\n\n",
              static_cast<long long>(b), static_cast<long long>(t),
              static_cast<long long>(train.arenaStatic),
              static_cast<long long>(train.arenaPerBatch),
              static_cast<long long>(train.arenaPerValue),
              static_cast<long long>(train.arenaPerStep),
              static_cast<long long>(train.arenaPerBatchStep),
              static_cast<long long>(values));
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / 1048576; };
  std::printf("| | MiB |\n|---|---|\n");
  std::printf("| @train arena (CompiledModel::arena_bytes) | %.2f |\n",
              mib(model->arena_bytes(b, values, t)));
  std::printf("| of it: per-example-step region R b T | %.2f |\n",
              mib(train.arenaPerBatchStep * b * t));
  std::printf("| of it: per-step Q T + per-example P b + static S + per-value "
              "V v | %.2f |\n",
              mib(arena - train.arenaPerBatchStep * b * t));
  std::printf("| forward activations, every value computed once | %.2f |\n",
              mib(activations));
  std::printf("|   of them per timestep (x T) | %.3f (x %lld) |\n",
              mib(perStep), static_cast<long long>(t));
  std::printf("| what a reverse pass must keep (h, c, 4 gates, tanh c per "
              "step; embedded x; mask) | %.2f |\n",
              mib(minimal));
  std::printf("| variables | %.2f |\n", mib(model->variable_bytes()));
  std::printf("\n{\"peer\": \"estc\", \"part\": \"memory\", \"batch\": %lld, "
              "\"length\": %lld, \"arena_bytes\": %lld, \"formula\": [%lld, "
              "%lld, %lld, %lld, %lld], \"activation_bytes\": %lld, "
              "\"minimal_stored_bytes\": %lld, \"variable_bytes\": %lld}\n",
              static_cast<long long>(b), static_cast<long long>(t),
              static_cast<long long>(model->arena_bytes(b, values, t)),
              static_cast<long long>(train.arenaStatic),
              static_cast<long long>(train.arenaPerBatch),
              static_cast<long long>(train.arenaPerValue),
              static_cast<long long>(train.arenaPerStep),
              static_cast<long long>(train.arenaPerBatchStep),
              static_cast<long long>(activations),
              static_cast<long long>(minimal),
              static_cast<long long>(model->variable_bytes()));
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string part = "sst2", dataFile, threadList = "1,2",
              lengthList = "25,50,100";
  int64_t warmup = 20, steps = 200, length = 50, vocab = 16384;
  double seconds = 2;
  bool kernels = true;
  std::string clockName = "wall";
  flags::FlagParser parser(
      "rnn_bench", "Recurrent training steps (issue 27): the SST-2-shaped "
                   "LSTM through Estimator::train, an LSTM 512 against the "
                   "sgemm roofline, the reverse pass's memory.");
  parser.add(Flag("part", &part, "what to measure")
                 .choices({"sst2", "lstm512", "memory"}));
  parser.add(Flag("data", &dataFile, "bench/make_sst2_like.py's file (sst2)")
                 .value_name("FILE"));
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("steps", &steps, "timed steps").positive());
  parser.add(Flag("lengths", &lengthList, "lstm512: T values, comma-separated")
                 .value_name("T,..."));
  parser.add(
      Flag("seconds", &seconds, "lstm512: time per measurement").positive());
  parser.add(Flag("kernels", &kernels,
                  "lstm512: also time the GEMM kernels alone (false: the "
                  "compiled steps only, e.g. under perf)"));
  parser.add(Flag("clock", &clockName,
                  "lstm512: wall (the steady clock) or cpu (the calling "
                  "thread's CPU time; --threads=1 only)")
                 .choices({"wall", "cpu"}));
  parser.add(Flag("length", &length, "memory: T").positive());
  parser.add(Flag("vocab", &vocab, "memory: embedding rows").positive());
  parser.parse_or_exit(argc, argv);
  std::vector<int> threads = bench::parseThreadList(parser, threadList);
  std::vector<int64_t> lengths =
      bench::parseIntList(parser, "lengths", lengthList);
  if (part == "sst2" && dataFile.empty())
    parser.fail("--part=sst2 needs --data=FILE (bench/make_sst2_like.py)");
  gCpuClock = clockName == "cpu";
  if (gCpuClock && (threads.size() != 1 || threads[0] != 1))
    parser.fail("--clock=cpu needs --threads=1 (it measures the calling "
                "thread's CPU time)");
  if (part == "lstm512" && lengths.size() < 2)
    parser.fail("--lengths=" + lengthList + ": at least two T values");

  if (part == "sst2") { // a missing or bad file: one line, before anything
    try {
      bench::readTokenData(dataFile);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "rnn_bench: error: %s\n", e.what());
      return 1;
    }
  }
  std::printf("CPU: %s\n", bench::cpuName().c_str());
  std::fflush(stdout);
  bool failed = false;
  try {
    if (part == "sst2") {
      for (int t : threads) {
        std::string json =
            inChild(t, [&] { return runSst2(dataFile, t, warmup, steps); });
        if (json.empty())
          failed = true;
        else
          std::printf("%s\n", json.c_str());
        std::fflush(stdout);
      }
    } else if (part == "lstm512") {
      for (int t : threads) {
        std::string json = inChild(t, [&] {
          runLstm512(t, lengths, seconds, kernels);
          return std::string("ok");
        });
        failed |= json.empty();
      }
    } else {
      runMemory(length, vocab);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rnn_bench: error: %s\n", e.what());
    return 1;
  }
  return failed ? 1 : 0;
}
