//===- distributed_bench.cpp - Data-parallel steps: compute vs communication
//
//   distributed_bench [--models=mlp,convnet] [--workers=1,2] [--batch=128]
//                     [--warmup=10] [--steps=60] [--threads=1]
//                     [--communication=gloo] [--json=FILE]
//
// Issue 16's split of a synchronous data-parallel training step: each
// (model, workers) runs as a job of `workers` processes on 127.0.0.1 (this
// program, re-executed with TF_CONFIG; MultiWorkerMirroredStrategy over
// Gloo, or mpirun's processes are not used here), each replica training the
// seed model (examples/models: the MLP 784-256-256-10, the MNIST ConvNet;
// Adam) on random in-memory data with per-replica batch --batch and
// --threads kernel threads. Every replica measures, from the end of step
// `warmup` to the last: the wall time per step, and the time its compiled
// step spent in collectives (rt::collectiveStats: the gradient all-reduce
// and the loss; it includes waiting for the slower replica) and the bytes
// it contributed. The step's compute is the rest. Prints one row per
// (model, workers): the chief's numbers, the all-reduce's algorithm
// bandwidth (bytes / time in collectives), and the job's examples/s with
// its scaling efficiency against one replica of the same batch. A bad flag
// is one line and exit status 2.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "estimator/Estimator.h"
#include "estimator/Logging.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"
#include "runtime/Collective.h"
#include "test/distributed/LoopbackPort.h"

#include <sys/wait.h>
#include <unistd.h>

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

std::vector<int64_t> exampleShape(const std::string &model) {
  return model == "convnet" ? std::vector<int64_t>{28, 28, 1}
                            : std::vector<int64_t>{784};
}

ModelFn modelFnOf(const std::string &model) {
  return [model](const TensorMap &f, const Tensor &l, ModeKeys mode,
                 const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    return EstimatorSpec::from_signature(
        mode, model == "convnet" ? models::convnet_model_fn(g, f, l, mode)
                                 : models::mlp_model_fn(g, f, l, mode));
  };
}

/// The end of every step, and the collectives' counters there.
struct Clock : SessionRunHook {
  std::vector<std::chrono::steady_clock::time_point> times;
  std::vector<rt::CollectiveStats> stats;
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    times.push_back(std::chrono::steady_clock::now());
    stats.push_back(rt::collectiveStats());
  }
};

/// One replica (TF_CONFIG set by the parent): prints its JSON line.
int runReplica(const std::string &model, int64_t batch, int threads,
               int64_t warmup, int64_t steps, const std::string &communication,
               const std::string &dir) {
  int64_t n = 2048, size = 1;
  for (int64_t d : exampleShape(model))
    size *= d;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::vector<float> xs(static_cast<size_t>(n * size));
  for (float &v : xs)
    v = uniform(rng);
  std::vector<int64_t> ys(static_cast<size_t>(n));
  for (int64_t &y : ys)
    y = static_cast<int64_t>(rng() % 10);
  std::vector<int64_t> shape = {n};
  for (int64_t d : exampleShape(model))
    shape.push_back(d);
  Features x{{"x", TensorValue::of<float>(shape, xs)}};
  TensorValue y = TensorValue::of<int64_t>({n}, ys);

  RunConfigOptions o;
  o.model_dir = dir;
  o.tf_random_seed = 1;
  o.save_checkpoints_steps = 1000000000;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000000;
  o.intra_op_parallelism_threads = threads;
  MultiWorkerMirroredStrategy strategy;
  strategy.communication = communication;
  strategy.timeout_secs = 120;
  o.train_distribute = strategy;
  ScopedLogSink quiet([](const std::string &) {});
  RunConfig config(o);
  Estimator estimator(modelFnOf(model), config);
  auto clock = std::make_shared<Clock>();
  clock->times.reserve(static_cast<size_t>(warmup + steps));
  clock->stats.reserve(static_cast<size_t>(warmup + steps));
  estimator.train(numpy_input_fn(x, y, {batch, std::nullopt, false, 0}),
                  {.hooks = {clock}, .steps = warmup + steps});
  size_t first = static_cast<size_t>(warmup) - 1,
         last = clock->times.size() - 1;
  double seconds =
      std::chrono::duration<double>(clock->times[last] - clock->times[first])
          .count();
  double timed = static_cast<double>(last - first);
  const rt::CollectiveStats &a = clock->stats[first], &b = clock->stats[last];
  std::cout << "{\"model\": \"" << model
            << "\", \"rank\": " << config.global_id_in_cluster().value_or(0)
            << ", \"workers\": " << config.num_worker_replicas()
            << ", \"batch\": " << batch << ", \"threads\": " << threads
            << ", \"ms_per_step\": " << 1e3 * seconds / timed
            << ", \"comm_ms_per_step\": "
            << 1e3 * (b.seconds - a.seconds) / timed
            << ", \"comm_calls_per_step\": "
            << static_cast<double>(b.calls - a.calls) / timed
            << ", \"comm_bytes_per_step\": "
            << static_cast<double>(b.bytes - a.bytes) / timed << "}"
            << std::endl;
  return 0;
}

/// Runs a job of `workers` replicas of this program; the chief's JSON.
std::string runJob(const char *self, const std::string &model, int workers,
                   int64_t batch, int threads, int64_t warmup, int64_t steps,
                   const std::string &communication) {
  std::vector<int> ports;
  for (int i = 0; i < workers; ++i)
    ports.push_back(estc::test::free_loopback_port());
  std::string cluster =
      "{\"chief\": [\"127.0.0.1:" + std::to_string(ports[0]) + "\"]";
  if (workers > 1) {
    cluster += ", \"worker\": [";
    for (int i = 1; i < workers; ++i)
      cluster += std::string(i > 1 ? ", " : "") +
                 "\"127.0.0.1:" + std::to_string(ports[i]) + "\"";
    cluster += "]";
  }
  cluster += "}";
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("estc-distributed-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::string out = (dir.string() + ".json");
  std::vector<pid_t> pids;
  std::fflush(stdout); // the children must not print the parent's buffer
  for (int r = 0; r < workers; ++r) {
    std::string task = r == 0 ? "chief" : "worker";
    std::string tfConfig =
        "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" + task +
        "\", \"index\": " + std::to_string(r == 0 ? 0 : r - 1) + "}}";
    pid_t pid = ::fork();
    if (pid == 0) {
      if (workers > 1)
        ::setenv("TF_CONFIG", tfConfig.c_str(), 1);
      else
        ::unsetenv("TF_CONFIG");
      if (r != 0 || !std::freopen(out.c_str(), "w", stdout))
        if (r != 0 && !std::freopen("/dev/null", "w", stdout))
          ::_exit(3);
      std::string args[] = {self,
                            "--replica",
                            "--models=" + model,
                            "--batch=" + std::to_string(batch),
                            "--threads=" + std::to_string(threads),
                            "--warmup=" + std::to_string(warmup),
                            "--steps=" + std::to_string(steps),
                            "--communication=" + communication,
                            "--model_dir=" + dir.string()};
      std::vector<char *> argv;
      for (std::string &a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(self, argv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::filesystem::remove_all(dir);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  std::filesystem::remove(out);
  if (!ok || line.empty())
    throw std::runtime_error("the job of " + std::to_string(workers) +
                             " replicas of " + model + " failed");
  return line;
}

double field(const std::string &json, const std::string &name) {
  size_t at = json.find("\"" + name + "\": ");
  return at == std::string::npos
             ? 0
             : std::atof(json.c_str() + at + name.size() + 4);
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string modelList = "mlp,convnet", workerList = "1,2", jsonFile,
              communication = "gloo", modelDir;
  int64_t batch = 128, warmup = 10, steps = 60;
  int threads = 1;
  bool replica = false;
  flags::FlagParser parser(
      "distributed_bench",
      "Synchronous data-parallel training steps on loopback: time per step "
      "split into compute and communication, per (model, workers).");
  parser.add(Flag("models", &modelList, "models, comma-separated")
                 .value_name("mlp,convnet"));
  parser.add(Flag("workers", &workerList, "replica counts, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("batch", &batch, "examples per replica and step").positive());
  parser.add(Flag("threads", &threads, "kernel threads per replica").min(1));
  parser.add(
      Flag("warmup", &warmup, "steps before the timing starts").positive());
  parser.add(Flag("steps", &steps, "timed steps").positive());
  parser.add(Flag("communication", &communication, "the engine")
                 .choices({"gloo", "mpi", "auto"}));
  parser.add(Flag("json", &jsonFile, "also write the results here")
                 .value_name("FILE"));
  parser.add(Flag("replica", &replica, "internal: run one replica"));
  parser.add(Flag("model_dir", &modelDir, "internal: the replica's model_dir"));
  parser.parse_or_exit(argc, argv);
  std::vector<std::string> models = bench::splitList(modelList);
  std::vector<int64_t> workers =
      bench::parseIntList(parser, "workers", workerList);
  for (const std::string &m : models)
    if (m != "mlp" && m != "convnet")
      parser.fail("--models: unknown model '" + m + "' (one of mlp, convnet)");
  for (int64_t w : workers)
    if (w < 1 || w > 16)
      parser.fail("--workers: " + std::to_string(w) +
                  " is not between 1 and 16");
  try {
    if (replica)
      return runReplica(models.at(0), batch, threads, warmup, steps,
                        communication, modelDir);
    std::printf("# %s; %d kernel thread(s) per replica, batch %lld per "
                "replica, 127.0.0.1\n",
                bench::cpuName().c_str(), threads,
                static_cast<long long>(batch));
    std::printf("%-8s %7s %9s %11s %9s %6s %9s %11s %11s %9s\n", "model",
                "workers", "step ms", "compute ms", "comm ms", "comm%",
                "MB/step", "allred GB/s", "examples/s", "scaling");
    std::vector<std::string> rows;
    for (const std::string &model : models) {
      double single = 0;
      for (int64_t w : workers) {
        std::string row = runJob(argv[0], model, static_cast<int>(w), batch,
                                 threads, warmup, steps, communication);
        rows.push_back(row);
        double ms = field(row, "ms_per_step"),
               comm = field(row, "comm_ms_per_step"),
               bytes = field(row, "comm_bytes_per_step");
        double examples = 1e3 * static_cast<double>(w * batch) / ms;
        if (w == 1)
          single = examples;
        std::printf("%-8s %7lld %9.2f %11.2f %9.2f %5.0f%% %9.2f %11.2f "
                    "%11.0f %9s\n",
                    model.c_str(), static_cast<long long>(w), ms, ms - comm,
                    comm, 100 * comm / ms, bytes / 1e6,
                    comm > 0 ? bytes / (comm * 1e6) : 0.0, examples,
                    single > 0 ? (std::to_string(static_cast<int>(
                                      100 * examples / (single * w) + 0.5)) +
                                  "%")
                                     .c_str()
                               : "-");
        std::fflush(stdout);
      }
    }
    if (!jsonFile.empty()) {
      std::ofstream out(jsonFile);
      out << "[\n";
      for (size_t i = 0; i < rows.size(); ++i)
        out << "  " << rows[i] << (i + 1 < rows.size() ? ",\n" : "\n");
      out << "]\n";
      if (!out.flush()) {
        std::cerr << "distributed_bench: error: --json=" << jsonFile
                  << ": cannot write the file\n";
        return 1;
      }
    }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "distributed_bench: error: " << e.what() << "\n";
    return 1;
  }
}
