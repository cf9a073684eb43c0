//===- keras_bench.cpp - Issue 29's benchmarks: MobileNetV2 in estc ------===//
//
//   keras_bench --part=train|predict|dwconv [--threads=1,2] [--warmup=3]
//               [--steps=20] [--batch=32] [--size=96] [--calls=200]
//
// train: keras.applications.MobileNetV2 (alpha 1.0, 96x96x3, 10 classes;
//   bench/KerasModels.h, layer for layer Keras's, Keras's variable names)
//   trained through Estimator::train (JIT) with Keras's compile(Adam(),
//   sparse categorical cross-entropy from logits), batch norm updates in
//   the train_op, on 256 fixed random images (uniform [0, 1)) and labels
//   cycled in batches; as bench/toolbox_bench.cpp: a child process per
//   thread count pinned to that many cores, intra_op_parallelism_threads =
//   threads; steps/s after `warmup` steps, the compiled function's own time
//   per step, CPU time per step, peak RSS.
//
// --keras_model=FILE (train, predict): the Estimator is
//   model_to_estimator(FILE) (estimator/KerasEstimator.h) of the same model
//   saved by tf.keras (bench/tf_keras_peer.py --save), its compile config
//   (Adam, the loss) the training; without it, bench/KerasModels.h's
//   model_fn. Both give the same graph: the step times cross-check.
//
// predict: the same model trained 1 step, exported by export_saved_model
//   (raw receiver x [-1, size, size, 3]) and run in process by
//   serving::SavedModel::run at batch 1 (signature serving_default, every
//   output): `calls` timed calls after `warmup`, per thread count
//   (ESTC_NUM_THREADS); p50 and mean microseconds per call.
//
// dwconv: the machine's memory bandwidth (a STREAM triad a = b + s * c
//   over three 64 MiB arrays on the runtime's threads; the best of 10) and
//   each of MobileNetV2's depthwise convolution shapes (3x3, multiplier 1,
//   at this --size and --batch) alone, JIT compiled: its forward
//   (@predict) and forward + backward (@train: the gradients of
//   reduce_sum(y) w.r.t. x and the filter, an SGD step of the filter). The
//   bytes one pass must move at least: forward x + y + filter, backward dy
//   + x + dx + dfilter (+ the filter); the bound is bytes / triad
//   bandwidth; achieved GB/s = bytes / measured time.
//
// One JSON line per run ({"peer": "estc", ...}); a bad flag is one line and
// exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/KerasModels.h"
#include "bench/PinnedChild.h"
#include "bench/StepClock.h"
#include "compiler/Driver/GraphCompiler.h"
#include "estimator/Estimator.h"
#include "estimator/KerasEstimator.h"
#include "estimator/Logging.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Support/Flags.h"
#include "runtime/serving/SavedModel.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace estc;
using namespace estc::estimator;
using Clock = std::chrono::steady_clock;

constexpr int64_t kExamples = 256;

/// The ids of a run's temporary folder.
std::filesystem::path workDir(const std::string &what) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("estc-keras-bench-" + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

/// kExamples random size x size x 3 images (uniform [0, 1)) and labels,
/// `batch` at a time, cycled.
InputFn imageInput(int64_t batch, int64_t size) {
  auto elements = std::make_shared<std::vector<data::Element>>();
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> label(0, 9);
  for (int64_t start = 0; start + batch <= std::max(kExamples, batch);
       start += batch) {
    std::vector<float> x(static_cast<size_t>(batch * size * size * 3));
    std::vector<int64_t> y(static_cast<size_t>(batch));
    for (float &v : x)
      v = pixel(rng);
    for (int64_t &v : y)
      v = label(rng);
    elements->push_back(data::Element::tuple(
        {data::Element::dict(
             {{"x", TensorValue::of<float>({batch, size, size, 3}, x)}}),
         TensorValue::of<int64_t>({batch}, y)}));
  }
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

/// The Estimator of a run: MobileNetV2's model_fn (bench/KerasModels.h), or
/// model_to_estimator of `kerasFile` (the same model saved by tf.keras).
std::unique_ptr<Estimator> makeEstimator(const std::string &kerasFile,
                                         const std::string &modelDir,
                                         int threads) {
  RunConfig config = bench::benchRunConfig(modelDir, threads);
  if (kerasFile.empty())
    return std::make_unique<Estimator>(bench::mobilenet_v2_model_fn(), config);
  KerasEstimatorOptions o;
  o.config = config;
  return model_to_estimator(kerasFile, o);
}

std::string via(const std::string &kerasFile) {
  return kerasFile.empty() ? "model_fn" : "model_to_estimator";
}

std::string runTrain(const std::string &kerasFile, int threads, int64_t batch,
                     int64_t size, int64_t warmup, int64_t steps) {
  std::filesystem::path dir = workDir("train");
  ScopedLogSink quiet([](const std::string &) {});
  std::unique_ptr<Estimator> estimator =
      makeEstimator(kerasFile, dir.string(), threads);
  auto clock = std::make_shared<bench::StepClock>(warmup + steps);
  estimator->train(imageInput(batch, size),
                   {.hooks = {clock}, .steps = warmup + steps});
  std::filesystem::remove_all(dir);
  std::ostringstream json;
  json << "{\"peer\": \"estc\", \"part\": \"train\", \"model\": "
          "\"mobilenet_v2\", \"via\": \""
       << via(kerasFile) << "\", \"threads\": " << threads
       << ", \"batch\": " << batch << ", \"size\": " << size << ", "
       << clock->json_fields(warmup, steps) << "}";
  return json.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v[v.size() / 2] + v[(v.size() - 1) / 2]) / 2;
}

std::string runPredict(const std::string &kerasFile, int threads, int64_t size,
                       int64_t warmup, int64_t calls) {
  std::filesystem::path dir = workDir("predict");
  std::string exportDir;
  std::string input = "x";
  {
    ScopedLogSink quiet([](const std::string &) {});
    std::unique_ptr<Estimator> estimator =
        makeEstimator(kerasFile, (dir / "model").string(), threads);
    estimator->train(imageInput(8, size), {.steps = 1});
    auto *keras = dynamic_cast<KerasEstimator *>(estimator.get());
    if (keras)
      input = keras->input_names().at(0);
    exportDir = estimator->export_saved_model(
        (dir / "export").string(),
        keras ? keras->serving_input_receiver_fn()
              : build_raw_serving_input_receiver_fn(
                    {{"x", DType::Float32, {-1, size, size, 3}}}));
  }
  auto model = serving::SavedModel::load(exportDir);
  std::mt19937 rng(30);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(size * size * 3));
  for (float &v : x)
    v = pixel(rng);
  serving::TensorMap one = {
      {input, TensorValue::of<float>({1, size, size, 3}, x)}};
  const std::string sig = serving::kDefaultServingSignatureDefKey;
  for (int64_t i = 0; i < warmup; ++i)
    model->run(sig, one);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  for (int64_t i = 0; i < calls; ++i) {
    auto start = Clock::now();
    model->run(sig, one);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start)
                     .count());
  }
  double mean = 0;
  for (double u : us)
    mean += u / static_cast<double>(us.size());
  std::filesystem::remove_all(dir);
  std::ostringstream json;
  json << "{\"peer\": \"estc\", \"part\": \"predict\", \"model\": "
          "\"mobilenet_v2\", \"via\": \""
       << via(kerasFile) << " + SavedModel::run\", \"threads\": " << threads
       << ", \"batch\": 1, \"size\": " << size << ", \"calls\": " << calls
       << ", \"p50_us\": " << median(us) << ", \"mean_us\": " << mean << "}";
  return json.str();
}

// --- Depthwise convolutions against the memory bandwidth -----------------

/// GB/s of the STREAM triad a[i] = b[i] + s * c[i] over three 64 MiB
/// arrays, split over `threads` threads (24 bytes per element moved, the
/// best of 10 passes after one that faults the pages in).
double triadGBs(int threads) {
  const int64_t n = 16 << 20; // floats: 64 MiB per array
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 1e30;
  for (int r = 0; r < 11; ++r) {
    auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
        float *pa = a.data();
        const float *pb = b.data(), *pc = c.data();
        for (int64_t i = lo; i < hi; ++i)
          pa[i] = pb[i] + 3.0f * pc[i];
      });
    for (std::thread &w : workers)
      w.join();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (r > 0)
      best = std::min(best, s);
  }
  return 24.0 * static_cast<double>(n) / best / 1e9;
}

struct DwShape {
  const char *blocks;   // MobileNetV2's blocks of this shape
  int64_t h, c, stride; // the (padded) input [batch, h, h, c]
  int64_t count;        // depthwise convs of this shape in one step
};

/// The depthwise convolutions of MobileNetV2 at input `size` (96: 48, 24,
/// 12, 6, 3): stride-2 ones take the ZeroPadding2D'd input, VALID.
std::vector<DwShape> dwShapes(int64_t size) {
  int64_t s = size / 2;
  return {{"0", s, 32, 1, 1},           {"1", s + 1, 96, 2, 1},
          {"2", s / 2, 144, 1, 1},      {"3", s / 2 + 1, 144, 2, 1},
          {"4-5", s / 4, 192, 1, 2},    {"6", s / 4 + 1, 192, 2, 1},
          {"7-10", s / 8, 384, 1, 4},   {"11-12", s / 8, 576, 1, 2},
          {"13", s / 8 + 1, 576, 2, 1}, {"14-16", s / 16, 960, 1, 3}};
}

/// One of the three depthwise ops (0 forward, 1 input gradient, 2 filter
/// gradient) of shape `d` as the @predict function of a graph whose
/// operands are fed (the forward's filter a variable).
graph::GraphDef dwGraph(const DwShape &d, int op) {
  int64_t out = d.stride == 1 ? d.h : (d.h - 3) / d.stride + 1;
  std::string padding = d.stride == 1 ? "SAME" : "VALID";
  Dims strides = {d.stride, d.stride};
  InputSpec inputs;
  if (op != 1)
    inputs.features.push_back(
        TensorSpec{"x", DType::Float32, {-1, d.h, d.h, d.c}});
  if (op != 0)
    inputs.features.push_back(
        TensorSpec{"dy", DType::Float32, {-1, out, out, d.c}});
  return build_graph_def(inputs, [&](Graph &g, const TensorMap &f,
                                     const Tensor &, ModeKeys mode) {
    Tensor w = g.get_variable("w", DType::Float32, {3, 3, d.c, 1},
                              glorot_uniform_initializer())
                   .read();
    Tensor y;
    if (op == 0)
      y = nn::depthwise_conv2d_native(f["x"], w, strides, padding);
    else if (op == 1)
      y = nn::depthwise_conv2d_backprop_input(f["dy"], w, {d.h, d.h}, strides,
                                              padding);
    else
      y = nn::depthwise_conv2d_backprop_filter(f["x"], f["dy"], {3, 3}, strides,
                                               padding);
    Signature sig;
    sig.predictions.set("y", y);
    if (mode != ModeKeys::PREDICT) { // a graph's other modes; not timed
      sig.loss = add(reduce_sum(y), reduce_sum(w));
      if (mode == ModeKeys::TRAIN)
        sig.train_op = train::GradientDescentOptimizer(1e-6).minimize(sig.loss);
    }
    return sig;
  });
}

/// The process's CPU seconds so far.
double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Seconds per call of function `fn` over `reps` calls after one: the
/// process's CPU time divided by `threads` (on a shared machine the wall
/// clock counts the time other processes hold the cores; the kernels keep
/// their threads busy, so this is their own time).
double timeFunction(JitModel &model, int fn, int reps, int threads) {
  model.run(fn);
  double start = cpuSeconds();
  for (int i = 0; i < reps; ++i)
    model.run(fn);
  return (cpuSeconds() - start) / reps / threads;
}

/// Seconds per call of op `op` of shape `d` at `batch`, its inputs random.
double timeDepthwise(const DwShape &d, int op, int64_t batch, int threads) {
  JitOptions options;
  options.useCache = false;
  JitCompiler jit(options);
  auto compiled =
      jitCompileGraph(jit, dwGraph(d, op), "Depthwise", [](llvm::StringRef) {});
  if (!compiled)
    throw std::runtime_error(llvm::toString(compiled.takeError()));
  JitModel &model = **compiled;
  model.run(model.function_index("init"));
  model.set_batch(batch);
  int predict = model.function_index("predict");
  int64_t out = d.stride == 1 ? d.h : (d.h - 3) / d.stride + 1;
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1, 1);
  auto fill = [&](const char *name, int64_t n) {
    auto *p = static_cast<float *>(
        model.input_data(predict, model.input_index(predict, name)));
    for (int64_t i = 0; i < n; ++i)
      p[i] = u(rng);
  };
  if (op != 1)
    fill("features/x", batch * d.h * d.h * d.c);
  if (op != 0)
    fill("features/dy", batch * out * out * d.c);
  return timeFunction(model, predict, 30, threads);
}

std::string runDwconv(int threads, int64_t batch, int64_t size) {
  std::ostringstream json;
  double bw = triadGBs(threads);
  json << "{\"peer\": \"estc\", \"part\": \"triad\", \"threads\": " << threads
       << ", \"gb_per_s\": " << bw << "}";
  for (const DwShape &d : dwShapes(size)) {
    double fwd = timeDepthwise(d, 0, batch, threads);
    double bin = timeDepthwise(d, 1, batch, threads);
    double bfil = timeDepthwise(d, 2, batch, threads);
    int64_t out = d.stride == 1 ? d.h : (d.h - 3) / 2 + 1;
    double xBytes = 4.0 * batch * d.h * d.h * d.c;
    double yBytes = 4.0 * batch * out * out * d.c;
    double wBytes = 4.0 * 9 * d.c;
    // Forward: x, w in, y out; input gradient: dy, w in, dx out; filter
    // gradient: x, dy in, dw out.
    double fwdBytes = xBytes + yBytes + wBytes;
    double binBytes = yBytes + wBytes + xBytes;
    double bfilBytes = xBytes + yBytes + wBytes;
    double flops = 2.0 * 9 * batch * out * out * d.c;
    double step = fwd + bin + bfil, stepBytes = fwdBytes + binBytes + bfilBytes;
    json << "\n{\"peer\": \"estc\", \"part\": \"dwconv\", \"threads\": "
         << threads << ", \"blocks\": \"" << d.blocks << "\", \"input\": ["
         << batch << ", " << d.h << ", " << d.h << ", " << d.c
         << "], \"stride\": " << d.stride << ", \"count\": " << d.count
         << ", \"mflop\": " << flops / 1e6 << ", \"forward_ms\": " << fwd * 1e3
         << ", \"backprop_input_ms\": " << bin * 1e3
         << ", \"backprop_filter_ms\": " << bfil * 1e3
         << ", \"forward_mb\": " << fwdBytes / 1e6
         << ", \"forward_gb_per_s\": " << fwdBytes / fwd / 1e9
         << ", \"forward_bound_ms\": " << fwdBytes / bw / 1e6
         << ", \"train_ms\": " << step * 1e3
         << ", \"train_mb\": " << stepBytes / 1e6
         << ", \"train_gb_per_s\": " << stepBytes / step / 1e9
         << ", \"train_bound_ms\": " << stepBytes / bw / 1e6 << "}";
  }
  return json.str();
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string part = "train", threadList = "1,2", kerasFile;
  int64_t warmup = 3, steps = 20, batch = 32, size = 96, calls = 200;
  flags::FlagParser parser(
      "keras_bench", "Issue 29's benchmarks: MobileNetV2's training step, "
                     "batch-1 inference through SavedModel::run, its "
                     "depthwise convolutions against the memory bandwidth.");
  parser.add(Flag("part", &part, "what to measure")
                 .choices({"train", "predict", "dwconv"}));
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("warmup", &warmup, "steps (calls) before the timing starts")
                 .positive());
  parser.add(Flag("steps", &steps, "timed training steps").positive());
  parser.add(Flag("batch", &batch, "examples per training step")
                 .positive()
                 .max(static_cast<double>(kExamples)));
  parser.add(
      Flag("size", &size, "image height and width").positive().max(1024));
  parser.add(Flag("calls", &calls, "timed predict calls").positive());
  parser.add(Flag("keras_model", &kerasFile,
                  "train / predict: the model through model_to_estimator of "
                  "this .keras or .h5 file (default: bench/KerasModels.h's "
                  "model_fn)")
                 .value_name("FILE"));
  parser.parse_or_exit(argc, argv);
  if (size % 32 != 0)
    parser.fail("--size=" + std::to_string(size) +
                ": must be a multiple of 32 (MobileNetV2's 5 strides of 2)");
  std::vector<int> threads = bench::parseThreadList(parser, threadList);
  std::printf("CPU: %s\n", bench::cpuName().c_str());
  std::fflush(stdout);
  bool failed = false;
  for (int t : threads) {
    std::string json = bench::runPinnedChild(
        t,
        [&] {
          setenv("ESTC_NUM_THREADS", std::to_string(t).c_str(), 1);
          if (part == "train")
            return runTrain(kerasFile, t, batch, size, warmup, steps);
          if (part == "predict")
            return runPredict(kerasFile, t, size, warmup, calls);
          return runDwconv(t, batch, size);
        },
        "keras_bench: error: ");
    if (json.empty())
      failed = true;
    else
      std::printf("%s\n", json.c_str());
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}
