//===- ps_bench.cpp - Parameter-server training against one process -----===//
//
//   ps_bench --data=CSV [--ps=1] [--workers=0] [--batch=40] [--warmup=50]
//            [--steps=300] [--threads=1] [--json=FILE]
//            [--eval=CSV [--max_accuracy_gap=G]]
//
// Issue 31's parameter-server step: the census wide & deep model
// (bench/CensusTable.h, tf_canned_bench.py's DNNLinearCombinedClassifier)
// trained on `--data` (bench/make_census_table.py's CSV) by one process,
// then by a job of this process as the chief and --ps ps tasks (this
// program re-executed with TF_CONFIG) on 127.0.0.1, the same batches and
// steps. The chief times the steps after --warmup and splits them with the
// ps client's counters: pulling the variables' copies and the embedding
// rows, pushing the gradients (waiting for the tasks' updates included),
// and the rest (the compiled step, input). Also measured in the same run:
// loopback's bandwidth (one TCP stream, 64 MiB), against which the pulls'
// and pushes' bytes/s are read. Prints a JSON line per side and a table
// with the ratio ps / one process. --workers adds worker processes to the
// job (asynchronous training, each worker's input shuffled with its own
// seed; the chief starts once every worker has joined, so none comes after
// the chief has ended the job). With --eval, both final checkpoints are
// evaluated on that CSV and their accuracies printed; with --max_accuracy_gap,
// a job whose accuracy is more than G under one process's exits 1 with one line
// (the test of asynchronous training reaching one process's accuracy). A bad
// flag is one line and exit 2.
//
//===----------------------------------------------------------------------===//

#include "bench/CensusTable.h"
#include "bench/StepClock.h"
#include "estimator/Logging.h"
#include "estimator/Training.h"
#include "lib/Support/Flags.h"
#include "runtime/ParameterClient.h"
#include "runtime/ps/Client.h"
#include "test/distributed/LoopbackPort.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace estc;
using namespace estc::estimator;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string data, json, role, work, eval;
  int64_t ps = 1, workers = 0, batch = 40, warmup = 50, steps = 300,
          threads = 1, seed = 1;
  double max_accuracy_gap = -1;
};

RunConfigOptions runOptions(const Options &o, const std::string &dir) {
  RunConfigOptions c;
  c.model_dir = dir;
  c.tf_random_seed = 1;
  c.save_checkpoints_steps = 1000000000; // one at the start and the end
  c.save_summary_steps = 0;
  c.log_step_count_steps = 1000000000;
  c.intra_op_parallelism_threads = static_cast<int>(o.threads);
  return c;
}

InputFn trainInput(const Options &o) {
  return [o] {
    return bench::censusDataset(o.data, true, static_cast<uint64_t>(o.seed),
                                o.batch);
  };
}

/// The accuracy of model_dir's latest checkpoint on --eval.
double accuracy(const Options &o, const std::string &dir) {
  CannedEstimator estimator(bench::censusWideDeep(),
                            RunConfig(runOptions(o, dir)));
  EvalResults r = estimator.evaluate(
      [&] { return bench::censusDataset(o.eval, false, 0, 1024); });
  return r.at("accuracy");
}

/// The ps client's counters at the end of every step (zeros alone).
struct PsClock : SessionRunHook {
  std::vector<ps::ClientStats> stats;
  void after_run(SessionRunContext &, const SessionRunValues &) override {
    auto *client = dynamic_cast<ps::Client *>(rt::parameterClient());
    stats.push_back(client ? client->stats() : ps::ClientStats{});
  }
};

/// One side: trains warmup + steps, returns its JSON fields.
std::string train(const Options &o, const RunConfig &config,
                  const std::string &side) {
  CannedEstimator estimator(bench::censusWideDeep(), config);
  auto clock = std::make_shared<bench::StepClock>(o.warmup + o.steps);
  auto psClock = std::make_shared<PsClock>();
  estimator.train(trainInput(o),
                  {.hooks = {clock, psClock}, .max_steps = o.warmup + o.steps});
  std::ostringstream out;
  out << "\"side\": \"" << side << "\", "
      << clock->json_fields(o.warmup, o.steps);
  const ps::ClientStats &a = psClock->stats[static_cast<size_t>(o.warmup) - 1];
  const ps::ClientStats &b = psClock->stats.back();
  double n = static_cast<double>(o.steps);
  out << ", \"pull_ms_per_step\": "
      << 1e3 * (b.pull_seconds - a.pull_seconds) / n
      << ", \"push_ms_per_step\": "
      << 1e3 * (b.push_seconds - a.push_seconds) / n
      << ", \"pull_bytes_per_step\": "
      << static_cast<double>(b.pull_bytes - a.pull_bytes) / n
      << ", \"push_bytes_per_step\": "
      << static_cast<double>(b.push_bytes - a.push_bytes) / n
      << ", \"rows_per_step\": "
      << static_cast<double>(b.rows_pulled - a.rows_pulled) / n;
  return out.str();
}

/// MiB/s of one TCP stream over 127.0.0.1 (64 MiB, 1 MiB writes).
double loopbackMiBps() {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    throw std::runtime_error("loopback: cannot listen: " +
                             std::string(std::strerror(errno)));
  constexpr size_t kChunk = 1 << 20, kTotal = 64 << 20;
  std::thread reader([&] {
    int s = ::accept(listener, nullptr, nullptr);
    std::vector<char> buf(kChunk);
    size_t got = 0;
    while (got < kTotal) {
      ssize_t r = ::read(s, buf.data(), buf.size());
      if (r <= 0)
        break;
      got += static_cast<size_t>(r);
    }
    ::close(s);
  });
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(s, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
    throw std::runtime_error("loopback: cannot connect");
  std::vector<char> buf(kChunk, 'x');
  auto start = std::chrono::steady_clock::now();
  for (size_t sent = 0; sent < kTotal;) {
    ssize_t w = ::write(s, buf.data(), buf.size());
    if (w <= 0)
      break;
    sent += static_cast<size_t>(w);
  }
  ::close(s);
  reader.join();
  ::close(listener);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return static_cast<double>(kTotal) / (1 << 20) / seconds;
}

/// A ps task or a worker (TF_CONFIG from the environment): serves until
/// the chief ends the job, or trains.
/// A worker's file that says it joined the job (the chief starts after
/// every worker did, so none finds the job ended before it joins).
std::string joinedFile(const Options &o, int64_t worker) {
  return o.work + "/worker-" + std::to_string(worker) + ".joined";
}

/// Writes joinedFile once the worker's session holds the tasks' variables.
struct Joined : SessionRunHook {
  explicit Joined(std::string file) : file_(std::move(file)) {}
  void after_create_session(Session &) override { std::ofstream(file_) << 1; }
  std::string file_;
};

int runTask(const Options &o) {
  ScopedLogSink quiet([](const std::string &) {});
  RunConfig config(runOptions(o, o.work + "/job/model"));
  CannedEstimator estimator(bench::censusWideDeep(), config);
  EvalSpec eval;
  eval.input_fn = trainInput(o);
  TrainSpec spec{trainInput(o), o.warmup + o.steps};
  if (o.role == "worker")
    spec.hooks.push_back(
        std::make_shared<Joined>(joinedFile(o, config.task_id())));
  train_and_evaluate(estimator, spec, eval);
  return 0;
}

int run(const Options &o, const char *self) {
  fs::remove_all(o.work);
  fs::create_directories(o.work);
  ScopedLogSink quiet([](const std::string &) {});
  std::string single;
  auto trainSingle = [&] {
    single = train(o, RunConfig(runOptions(o, o.work + "/single/model")),
                   "one process");
  };
  // Alone, the one-process side is timed before the job starts; with
  // workers, after the job's processes are started (they compile and
  // connect meanwhile, so none joins after the chief finished the job).
  if (o.workers == 0)
    trainSingle();

  // The job: --ps tasks and --workers as children, the chief here.
  std::vector<int> ports;
  while (ports.size() < static_cast<size_t>(o.ps + o.workers) + 1)
    if (int port = test::free_loopback_port();
        std::find(ports.begin(), ports.end(), port) == ports.end())
      ports.push_back(port);
  std::string cluster =
      "{\"chief\": [\"127.0.0.1:" + std::to_string(ports[0]) + "\"], \"ps\": [";
  for (int64_t i = 0; i < o.ps; ++i)
    cluster += (i ? ", " : "") + std::string("\"127.0.0.1:") +
               std::to_string(ports[static_cast<size_t>(i) + 1]) + "\"";
  cluster += "]";
  if (o.workers > 0) {
    cluster += ", \"worker\": [";
    for (int64_t i = 0; i < o.workers; ++i)
      cluster += (i ? ", " : "") + std::string("\"127.0.0.1:") +
                 std::to_string(ports[static_cast<size_t>(o.ps + i) + 1]) +
                 "\"";
    cluster += "]";
  }
  cluster += "}";
  std::vector<pid_t> children;
  for (int64_t i = 0; i < o.ps + o.workers; ++i) {
    bool ps = i < o.ps;
    int64_t index = ps ? i : i - o.ps;
    std::string tf = "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" +
                     (ps ? "ps" : "worker") +
                     "\", \"index\": " + std::to_string(index) + "}}";
    pid_t pid = fork();
    if (pid == 0) {
      setenv("TF_CONFIG", tf.c_str(), 1);
      std::vector<std::string> args = {
          self, ps ? "--role=ps" : "--role=worker", "--data=" + o.data,
          "--work=" + o.work, "--batch=" + std::to_string(o.batch),
          "--warmup=" + std::to_string(o.warmup),
          "--steps=" + std::to_string(o.steps),
          "--threads=" + std::to_string(o.threads),
          // Each worker's own shuffle.
          "--seed=" + std::to_string(ps ? o.seed : o.seed + 1 + index)};
      std::vector<char *> argv;
      for (std::string &a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(self, argv.data());
      _exit(127);
    }
    children.push_back(pid);
  }
  if (o.workers > 0) {
    trainSingle();
    // Every worker joined (or one failed: its own line, then this).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    for (int64_t w = 0; w < o.workers; ++w)
      while (!fs::exists(joinedFile(o, w))) {
        for (pid_t pid : children)
          if (int status = 0; waitpid(pid, &status, WNOHANG) == pid)
            throw std::runtime_error(
                "a ps task or worker exited before the job began (status " +
                std::to_string(status) + ")");
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error("worker " + std::to_string(w) +
                                   " did not join the job within 5 minutes");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
  }
  // The floor of the job's steps: an empty call's round trip to ps:0,
  // measured while the tasks wait for the chief.
  double roundTripUs = 1e6 * ps::measure_round_trip(
                                 "127.0.0.1:" + std::to_string(ports[1]), 1000);
  std::string chiefConfig = "{\"cluster\": " + cluster +
                            ", \"task\": {\"type\": \"chief\", \"index\": 0}}";
  std::string job =
      train(o,
            RunConfig::from_tf_config(chiefConfig,
                                      runOptions(o, o.work + "/job/model")),
            "chief + " + std::to_string(o.ps) + " ps");
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error("a ps task or worker exited with status " +
                               std::to_string(status));
  }
  double loopback = loopbackMiBps();
  std::ostringstream lines;
  std::string singleAcc, jobAcc;
  double gap = 0;
  if (!o.eval.empty()) {
    double a = accuracy(o, o.work + "/single/model"),
           b = accuracy(o, o.work + "/job/model");
    gap = a - b;
    singleAcc = ", \"accuracy\": " + std::to_string(a);
    jobAcc = ", \"accuracy\": " + std::to_string(b);
  }
  lines << "{" << single << singleAcc << "}\n{" << job << jobAcc
        << ", \"workers\": " << o.workers + 1
        << ", \"round_trip_us\": " << roundTripUs
        << ", \"loopback_mib_per_sec\": " << loopback << "}\n";
  std::cout << lines.str();
  if (!o.json.empty())
    std::ofstream(o.json) << lines.str();
  if (o.max_accuracy_gap >= 0 && gap > o.max_accuracy_gap)
    throw std::runtime_error(
        "the job's accuracy is " + std::to_string(gap) +
        " under one process's (more than --max_accuracy_gap=" +
        std::to_string(o.max_accuracy_gap) + ")");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  Options o;
  o.work = (fs::temp_directory_path() / "estc-ps-bench").string();
  flags::FlagParser parser(
      "ps_bench", "Parameter-server training of the census wide & deep model "
                  "against one process: ms/step, its pull / push / compute "
                  "split, and loopback's bandwidth.");
  parser.add(Flag("data", &o.data,
                  "the census table's training CSV "
                  "(bench/make_census_table.py)")
                 .value_name("CSV"));
  parser.add(Flag("ps", &o.ps, "ps tasks").min(1));
  parser.add(
      Flag("workers", &o.workers, "worker processes besides the chief").min(0));
  parser.add(
      Flag("eval", &o.eval, "evaluate both on this CSV").value_name("CSV"));
  parser.add(Flag("max_accuracy_gap", &o.max_accuracy_gap,
                  "fail when the job's accuracy is more than this under one "
                  "process's"));
  parser.add(Flag("seed", &o.seed, "the input's shuffle").min(0));
  parser.add(Flag("batch", &o.batch, "examples per step").min(1));
  parser.add(Flag("warmup", &o.warmup, "steps not timed").min(1));
  parser.add(Flag("steps", &o.steps, "steps timed").min(1));
  parser.add(Flag("threads", &o.threads, "kernel threads").min(1));
  parser.add(Flag("json", &o.json, "also write the JSON lines to FILE")
                 .value_name("FILE"));
  parser.add(Flag("work", &o.work, "model_dirs").value_name("DIR"));
  parser.add(Flag("role", &o.role, "internal: a task of the job")
                 .choices({"", "ps", "worker"}));
  parser.parse_or_exit(argc, argv);
  if (o.data.empty())
    parser.fail("--data is required");
  try {
    return o.role.empty() ? run(o, argv[0]) : runTask(o);
  } catch (const std::exception &e) {
    flags::print_error_line("ps_bench", e.what());
    return 1;
  }
}
