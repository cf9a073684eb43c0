//===- canned_bench.cpp - estc's canned estimators on the census table ---===//
//
// The estc half of bench/canned.sh: bench/tf_canned_bench.py's measurement
// with estc's canned estimators (the JIT classes, as a user writes them),
// the same files, columns, models, settings and timing:
//
//   canned_bench [--work_dir=/tmp/estc-canned] [--train_rows=32768]
//       [--eval_rows=8192] [--steps=2000] [--warmup=200] [--threads=1,2]
//       [--models=linear,dnn,dnn_linear_combined] [--seed=1]
//
// Data: <work_dir>/census_train_<train_rows>.csv and
// census_eval_<eval_rows>.csv as bench/make_census_table.py writes them
// (seeds 1 and 2; bench/canned.sh or tf_canned_bench.py writes them), read
// through estc's make_csv_dataset with TF's arguments: batch 40, every
// column required (ints I64, floats F32, strings), label "label", training
// repeated forever and shuffled (buffer 10000, shuffle seed --seed),
// evaluation one pass in order. ESTC_DATA_THREADS is set to the thread
// count (TF: a private tf.data threadpool of that size).
//
// Columns and models: those of tf_canned_bench.py's header (WIDE for the
// linear part, DEEP for the dnn part, hidden units [100, 50], the
// combined model's rates Ftrl 0.2 / Adagrad 0.05). RunConfig: tf_random_seed
// --seed, intra-op threads, TF's defaults otherwise (checkpoints at step 0
// and the end, summaries and the step counter every 100 steps).
//
// Timing, per (threads, model), in this process (the runtime's thread pool
// is resized between runs): one train(steps=N) call; a hook stamps the time
// after step --warmup and after step N:
//   steps_per_sec       (N - warmup) / (t_N - t_warmup)
//   wall_seconds        the whole train() call (graph building, JIT compile
//                       or on-disk JIT cache load, checkpoints included)
//   first_step_seconds  train() start to the end of step 1 (what of the
//                       wall time is the graph, the compile and step 0)
//   input_us, run_us    per timed step: the input phase (the CSV pipeline
//                       and the host transform: vocabulary lookups, hashes,
//                       crosses) and the compiled step, from the
//                       MonitoredSession's step phases
// then evaluate() over the eval file: accuracy, auc, eval_seconds.
// Output: one JSON line per run,
//   {"peer": "estc", "model", "threads", "batch", "steps", "warmup",
//    "steps_per_sec", "wall_seconds", "accuracy", "auc", "eval_seconds",
//    "first_step_seconds", "input_us", "run_us"}
//
// --parts measures the host side's CPU time per batch instead (CPU time:
// a shared machine's load changes it less than wall time), one JSON line
// per model, {"parts": model, "pipeline_cpu_us", "transform_cpu_us"}:
// the training pipeline's (CSV, shuffle, batch, with its prefetch thread:
// the process's CPU time over --steps batches) and the canned model's host
// transform alone (this thread's CPU time over the same batches, held in
// memory).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "bench/CensusTable.h"
#include "estimator/Canned/Estimators.h"
#include "lib/Data/Idx.h"
#include "lib/Data/Readers.h"
#include "lib/Support/Flags.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace estc;
namespace fc = estc::feature_column;
using namespace estc::bench;

namespace {

constexpr int64_t kBatchSize = 40;
const std::vector<std::string> kModels = {"linear", "dnn",
                                          "dnn_linear_combined"};

data::Dataset censusDataset(const std::string &file, bool training,
                            uint64_t seed) {
  return bench::censusDataset(file, training, seed, kBatchSize);
}

estimator::CannedModel censusModel(const std::string &kind) {
  CensusColumns c = censusColumns();
  auto head = estimator::classifier_head(estimator::ClassifierOptions{});
  if (kind == "linear")
    return estimator::linear_model(head, c.wide);
  if (kind == "dnn") {
    estimator::DNNOptions o;
    o.hidden_units = {100, 50};
    return estimator::dnn_model(head, c.deep, o);
  }
  return censusWideDeep();
}

using Clock = std::chrono::steady_clock;

/// tf_canned_bench.py's StepTimer, plus the step phases.
class StepTimer : public estimator::SessionRunHook {
public:
  StepTimer(int64_t warmup, Clock::time_point start)
      : warmup_(warmup), start_(start) {}

  void after_run(estimator::SessionRunContext &,
                 const estimator::SessionRunValues &values) override {
    ++steps;
    last = Clock::now();
    if (steps == 1)
      firstStepSeconds = std::chrono::duration<double>(last - start_).count();
    if (steps == warmup_)
      atWarmup = last;
    if (steps <= warmup_)
      return;
    for (const estimator::StepPhase &p : values.phases) {
      if (p.name == "input")
        inputUs += p.duration_us;
      else if (p.name.rfind("run:", 0) == 0)
        runUs += p.duration_us;
    }
  }

  int64_t steps = 0;
  Clock::time_point atWarmup, last;
  double firstStepSeconds = 0, inputUs = 0, runUs = 0;

private:
  int64_t warmup_;
  Clock::time_point start_;
};

double cpuSeconds(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// --parts: the host side's CPU time per batch (the header).
void measureParts(const std::string &model, int64_t batches, int64_t seed,
                  const std::string &trainFile) {
  std::vector<data::Element> held;
  held.reserve(static_cast<size_t>(batches));
  data::Iterator it(
      censusDataset(trainFile, true, static_cast<uint64_t>(seed)));
  it.next(); // the shuffle buffer's first fill
  double start = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  for (int64_t i = 0; i < batches; ++i)
    held.push_back(*it.next());
  double pipeline = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - start;
  estimator::CannedModel m = censusModel(model);
  size_t inputs = 0;
  start = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  for (const data::Element &e : held)
    inputs += m.transform->transform_input(e).features.size();
  double transform = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - start;
  std::printf("{\"parts\": \"%s\", \"batches\": %lld, \"model_inputs\": %zu, "
              "\"pipeline_cpu_us\": %.1f, \"transform_cpu_us\": %.1f}\n",
              model.c_str(), static_cast<long long>(batches),
              inputs / held.size(), pipeline / batches * 1e6,
              transform / batches * 1e6);
  std::fflush(stdout);
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void runOne(const std::string &model, int threads, int64_t steps,
            int64_t warmup, int64_t seed, const std::string &trainFile,
            const std::string &evalFile) {
  // The tf.data private threadpool's size (read when pipelines start).
  setenv("ESTC_DATA_THREADS", std::to_string(threads).c_str(), 1);
  std::filesystem::path modelDir =
      std::filesystem::temp_directory_path() /
      ("estc_canned_bench_" + model + "_" + std::to_string(threads));
  std::filesystem::remove_all(modelDir);
  estimator::RunConfigOptions o;
  o.model_dir = modelDir.string();
  o.tf_random_seed = seed;
  o.intra_op_parallelism_threads = threads;
  estimator::CannedEstimator est(censusModel(model), estimator::RunConfig(o));

  Clock::time_point start = Clock::now();
  auto timer = std::make_shared<StepTimer>(warmup, start);
  est.train(
      [&] {
        return censusDataset(trainFile, true, static_cast<uint64_t>(seed));
      },
      {.hooks = {timer}, .steps = steps});
  double wall = secondsSince(start);
  Clock::time_point evalStart = Clock::now();
  estimator::EvalResults r =
      est.evaluate([&] { return censusDataset(evalFile, false, 0); });
  double evalSeconds = secondsSince(evalStart);
  std::filesystem::remove_all(modelDir);

  int64_t timed = timer->steps - warmup;
  double timedSeconds =
      std::chrono::duration<double>(timer->last - timer->atWarmup).count();
  std::printf(
      "{\"peer\": \"estc\", \"model\": \"%s\", \"threads\": %d, \"batch\": "
      "%lld, \"steps\": %lld, \"warmup\": %lld, \"steps_per_sec\": %.1f, "
      "\"wall_seconds\": %.2f, \"accuracy\": %.4f, \"auc\": %.4f, "
      "\"eval_seconds\": %.2f, \"first_step_seconds\": %.2f, \"input_us\": "
      "%.1f, \"run_us\": %.1f}\n",
      model.c_str(), threads, static_cast<long long>(kBatchSize),
      static_cast<long long>(timer->steps), static_cast<long long>(warmup),
      timed / timedSeconds, wall, r.at("accuracy"), r.at("auc"), evalSeconds,
      timer->firstStepSeconds, timer->inputUs / timed, timer->runUs / timed);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string workDir = "/tmp/estc-canned", threadList = "1,2",
              modelList = "linear,dnn,dnn_linear_combined";
  int64_t trainRows = 32768, evalRows = 8192, steps = 2000, warmup = 200,
          seed = 1;
  bool parts = false;
  flags::FlagParser parser(
      "canned_bench", "estc's canned estimators on the census-like table "
                      "(bench/make_census_table.py): steps/s, wall time and "
                      "accuracy, as bench/tf_canned_bench.py measures TF's.");
  parser.add(
      Flag("work_dir", &workDir, "where the CSV files are").value_name("DIR"));
  parser.add(
      Flag("train_rows", &trainRows, "rows of the training file").positive());
  parser.add(
      Flag("eval_rows", &evalRows, "rows of the evaluation file").positive());
  parser.add(Flag("steps", &steps, "training steps (N)").positive());
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("threads", &threadList, "thread counts, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("models", &modelList, "models, comma-separated")
                 .value_name("linear,dnn,dnn_linear_combined"));
  parser.add(Flag("seed", &seed, "graph seed and shuffle seed"));
  parser.add(Flag("parts", &parts,
                  "measure the input pipeline's and the host transform's "
                  "CPU time per batch (over --steps batches), not training"));
  parser.parse_or_exit(argc, argv);
  if (warmup >= steps)
    parser.fail("--warmup (" + std::to_string(warmup) +
                ") must be below --steps (" + std::to_string(steps) + ")");
  std::vector<int> threads = bench::parseThreadList(parser, threadList);
  std::vector<std::string> models = bench::splitList(modelList);
  for (const std::string &m : models)
    if (std::find(kModels.begin(), kModels.end(), m) == kModels.end())
      parser.fail("--models=" + modelList + ": unknown model '" + m +
                  "' (linear, dnn, dnn_linear_combined)");

  std::string trainFile =
      (std::filesystem::path(workDir) /
       ("census_train_" + std::to_string(trainRows) + ".csv"))
          .string();
  std::string evalFile = (std::filesystem::path(workDir) /
                          ("census_eval_" + std::to_string(evalRows) + ".csv"))
                             .string();
  try {
    for (const std::string &f : {trainFile, evalFile})
      if (!std::filesystem::exists(f))
        throw data::DataError(f + ": no such file (bench/make_census_table.py "
                                  "writes it; bench/canned.sh runs it)");
    if (parts) {
      for (const std::string &m : models)
        measureParts(m, steps, seed, trainFile);
      return 0;
    }
    for (int t : threads)
      for (const std::string &m : models)
        runOne(m, t, steps, warmup, seed, trainFile, evalFile);
  } catch (const std::exception &e) {
    std::cerr << "canned_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
