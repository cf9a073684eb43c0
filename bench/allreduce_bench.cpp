//===- allreduce_bench.cpp - The engines' all-reduce against the link ----===//
//
//   allreduce_bench [--replicas=2,3] [--engines=gloo,mpi]
//                   [--min_bytes=4096] [--max_bytes=67108864]
//                   [--seconds=0.3] [--json=FILE]
//
// In one run, on 127.0.0.1: (1) the link itself -- the bandwidth of one TCP
// stream between two processes (1 MiB writes) and its latency (a one-byte
// ping-pong, half the round trip); (2) the all-reduce the compiled steps
// use (float sums) for each engine, replica count and buffer size (x4 from
// min to max bytes), each size repeated for about --seconds after a
// warm-up. Every replica is a process of its own: Gloo's are forked
// (rt::distribute::connect_gloo), MPI's started by mpirun running this
// program again with --mpi_worker (connect_mpi; when estc was built with
// MPI). For each size: the time, the algorithm bandwidth (bytes / time)
// and the bus bandwidth (2 (n-1)/n bytes / time: what each replica sends,
// the measure a ring is judged by), and the bus bandwidth as a fraction of
// the link's. A bad flag is one line and exit status 2.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "lib/Support/Flags.h"
#include "runtime/distribute/Distribute.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int listenLoopback(int *port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
      ::listen(s, 4) != 0)
    throw std::runtime_error(std::string("loopback listen: ") +
                             std::strerror(errno));
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  *port = ntohs(a.sin_port);
  return s;
}

int connectLoopback(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
    throw std::runtime_error(std::string("loopback connect: ") +
                             std::strerror(errno));
  int one = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

bool readFull(int fd, void *p, size_t n) {
  char *c = static_cast<char *>(p);
  while (n) {
    ssize_t k = ::read(fd, c, n);
    if (k <= 0)
      return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool writeFull(int fd, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  while (n) {
    ssize_t k = ::write(fd, c, n);
    if (k <= 0)
      return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

/// (bandwidth bytes/s, one-way latency s) of a TCP stream on loopback.
std::pair<double, double> measureLink(double seconds) {
  int port = 0;
  int ls = listenLoopback(&port);
  pid_t pid = ::fork();
  if (pid == 0) {
    int c = ::accept(ls, nullptr, nullptr);
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> buf(1 << 20);
    // Stream phase: read until the 8-byte length arrives, then ack.
    uint64_t total = 0;
    readFull(c, &total, sizeof total);
    for (uint64_t got = 0; got < total;) {
      ssize_t k =
          ::read(c, buf.data(), std::min<uint64_t>(buf.size(), total - got));
      if (k <= 0)
        ::_exit(1);
      got += static_cast<uint64_t>(k);
    }
    char b = 1;
    writeFull(c, &b, 1);
    // Ping-pong phase.
    while (readFull(c, &b, 1) && writeFull(c, &b, 1)) {
    }
    ::_exit(0);
  }
  ::close(ls);
  int s = connectLoopback(port);
  std::vector<char> buf(1 << 20, 'x');
  // The stream: enough 1 MiB writes for about `seconds`, sized by a probe.
  uint64_t total = 256ull << 20;
  writeFull(s, &total, sizeof total);
  auto t = Clock::now();
  for (uint64_t sent = 0; sent < total; sent += buf.size())
    writeFull(s, buf.data(), buf.size());
  char b;
  readFull(s, &b, 1);
  double bandwidth = static_cast<double>(total) / since(t);
  int rounds = 0;
  t = Clock::now();
  while (since(t) < seconds / 2 || rounds < 100) {
    writeFull(s, &b, 1);
    readFull(s, &b, 1);
    ++rounds;
  }
  double latency = since(t) / rounds / 2;
  ::close(s);
  int status;
  ::waitpid(pid, &status, 0);
  return {bandwidth, latency};
}

struct Row {
  int replicas;
  size_t bytes;
  double seconds;
};

/// Every size's all-reduce time on `c`: rank 0's, after a barrier per
/// repetition block; rank 0 passes each row to `emit`.
void timeSizes(rt::Collective &c, const std::vector<size_t> &sizes,
               double seconds, const std::function<void(const Row &)> &emit) {
  for (size_t bytes : sizes) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    for (int i = 0; i < 3; ++i)
      c.allReduceSum(data.data(), data.size());
    // Repetitions: rank 0 decides from the warm-up's time and tells the
    // others.
    c.barrier();
    auto t = Clock::now();
    c.allReduceSum(data.data(), data.size());
    int64_t reps = static_cast<int64_t>(seconds / std::max(1e-6, since(t)));
    reps = std::max<int64_t>(3, std::min<int64_t>(reps, 100000));
    c.broadcast(&reps, sizeof reps, 0);
    c.barrier();
    t = Clock::now();
    for (int64_t i = 0; i < reps; ++i)
      c.allReduceSum(data.data(), data.size());
    double each = since(t) / static_cast<double>(reps);
    if (c.rank() == 0)
      emit(Row{c.size(), bytes, each});
  }
}

/// Gloo: `n` forked replicas meeting at a free loopback port.
std::vector<Row> measureGloo(int n, const std::vector<size_t> &sizes,
                             double seconds) {
  int port = 0;
  int ls = listenLoopback(&port); // a free port for the rendezvous
  ::close(ls);
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error("pipe");
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      try {
        rt::distribute::GlooOptions o;
        o.rank = r;
        o.size = n;
        o.rendezvous = "127.0.0.1:" + std::to_string(port);
        o.timeout_secs = 120;
        auto c = rt::distribute::connect_gloo(o);
        timeSizes(*c, sizes, seconds,
                  [&](const Row &row) { writeFull(fds[1], &row, sizeof row); });
      } catch (const std::exception &e) {
        std::fprintf(stderr, "allreduce_bench: error: %s\n", e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  ::close(fds[1]);
  std::vector<Row> rows;
  Row row;
  while (readFull(fds[0], &row, sizeof row))
    rows.push_back(row);
  ::close(fds[0]);
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!ok || rows.size() != sizes.size())
    throw std::runtime_error("the Gloo all-reduce of " + std::to_string(n) +
                             " replicas failed");
  return rows;
}

/// One rank under mpirun (--mpi_worker): rank 0 prints "row N BYTES SECS".
int mpiWorker(const std::vector<size_t> &sizes, double seconds) {
  try {
    auto c = rt::distribute::connect_mpi(120);
    timeSizes(*c, sizes, seconds, [](const Row &row) {
      std::printf("row %d %zu %.9g\n", row.replicas, row.bytes, row.seconds);
      std::fflush(stdout);
    });
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "allreduce_bench: error: %s\n", e.what());
    return 1;
  }
}

constexpr const char *kMpiTransport =
    "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo";

#ifdef ESTC_MPIEXEC
/// MPI: `n` ranks that mpirun starts, running this program again.
std::vector<Row> measureMpi(int n, int64_t minBytes, int64_t maxBytes,
                            double seconds, size_t expected) {
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    throw std::runtime_error("cannot find this program (/proc/self/exe)");
  self[len] = 0;
  // Over TCP, as Gloo: Open MPI would otherwise use shared memory between
  // the processes of one host, which is not the link being compared.
  std::string cmd = std::string("'") + ESTC_MPIEXEC + "' " +
                    (::geteuid() == 0 ? "--allow-run-as-root " : "") +
                    kMpiTransport + " --oversubscribe -np " +
                    std::to_string(n) + " '" + self +
                    "' --mpi_worker --min_bytes=" + std::to_string(minBytes) +
                    " --max_bytes=" + std::to_string(maxBytes) +
                    " --seconds=" + std::to_string(seconds);
  std::fflush(stdout);
  FILE *out = ::popen(cmd.c_str(), "r");
  if (!out)
    throw std::runtime_error("cannot run " + cmd);
  std::vector<Row> rows;
  char line[256];
  while (std::fgets(line, sizeof line, out)) {
    Row row{};
    if (std::sscanf(line, "row %d %zu %lf", &row.replicas, &row.bytes,
                    &row.seconds) == 3)
      rows.push_back(row);
  }
  int status = ::pclose(out);
  if (status != 0 || rows.size() != expected)
    throw std::runtime_error("the MPI all-reduce of " + std::to_string(n) +
                             " replicas failed (" + cmd + ")");
  return rows;
}
#endif

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
#ifdef ESTC_MPIEXEC
  std::string engineList = "gloo,mpi";
#else
  std::string engineList = "gloo";
#endif
  std::string replicaList = "2,3", jsonFile;
  int64_t minBytes = 4096, maxBytes = 64ll << 20;
  double seconds = 0.3;
  bool mpiWorkerMode = false;
  flags::FlagParser parser(
      "allreduce_bench",
      "The engines' all-reduce (what compiled steps call) against the "
      "loopback link's bandwidth and latency, measured in the same run.");
  parser.add(Flag("replicas", &replicaList, "replica counts, comma-separated")
                 .value_name("N,..."));
  parser.add(Flag("engines", &engineList,
                  "gloo and/or mpi (mpi: when estc was built with MPI)")
                 .value_name("E,..."));
  parser.add(Flag("min_bytes", &minBytes, "smallest buffer").min(4));
  parser.add(Flag("max_bytes", &maxBytes, "largest buffer").min(4));
  parser.add(Flag("seconds", &seconds, "time per size").min(0.001));
  parser.add(Flag("json", &jsonFile, "also write the results here")
                 .value_name("FILE"));
  parser.add(Flag("mpi_worker", &mpiWorkerMode,
                  "run as one MPI rank (the benchmark starts these itself)"));
  parser.parse_or_exit(argc, argv);
  std::vector<int64_t> replicas =
      bench::parseIntList(parser, "replicas", replicaList);
  for (int64_t n : replicas)
    if (n < 2 || n > 16)
      parser.fail("--replicas: " + std::to_string(n) +
                  " is not between 2 and 16");
  std::vector<std::string> engines = bench::splitList(engineList);
  for (const std::string &e : engines) {
    if (e != "gloo" && e != "mpi")
      parser.fail("--engines=" + engineList + ": '" + e +
                  "' is not gloo or mpi");
#ifndef ESTC_MPIEXEC
    if (e == "mpi")
      parser.fail("--engines=" + engineList + ": estc was built without MPI");
#endif
  }
  if (maxBytes < minBytes)
    parser.fail("--max_bytes=" + std::to_string(maxBytes) +
                " is below --min_bytes=" + std::to_string(minBytes));
  std::vector<size_t> sizes;
  for (int64_t b = minBytes; b <= maxBytes; b *= 4)
    sizes.push_back(static_cast<size_t>(b / 4 * 4));
  if (mpiWorkerMode)
    return mpiWorker(sizes, seconds);
  try {
    auto [link, latency] = measureLink(seconds);
    std::printf("# %s; 127.0.0.1\n", bench::cpuName().c_str());
    std::printf("# loopback TCP: %.2f GB/s one stream, %.1f us one way\n",
                link / 1e9, latency * 1e6);
    for (const std::string &engine : engines)
      if (engine == "mpi")
        std::printf("# mpi: Open MPI over TCP (mpirun %s)\n", kMpiTransport);
    std::printf("%-6s %8s %12s %12s %12s %12s %9s\n", "engine", "replicas",
                "bytes", "us", "algbw GB/s", "busbw GB/s", "of link");
    std::ostringstream json;
    json << "{\"cpu\": \"" << bench::cpuName()
         << "\", \"loopback_bytes_per_sec\": " << link
         << ", \"loopback_latency_sec\": " << latency;
    // "allreduce" holds Gloo's rows (what bench/scaling_model.py reads).
    for (const std::string &engine : engines) {
      json << ", \"" << (engine == "gloo" ? "allreduce" : "allreduce_mpi")
           << "\": [";
      bool first = true;
      for (int64_t n : replicas) {
        std::vector<Row> rows;
        if (engine == "gloo")
          rows = measureGloo(static_cast<int>(n), sizes, seconds);
#ifdef ESTC_MPIEXEC
        else
          rows = measureMpi(static_cast<int>(n), minBytes, maxBytes, seconds,
                            sizes.size());
#endif
        for (const Row &r : rows) {
          double alg = static_cast<double>(r.bytes) / r.seconds;
          double bus =
              alg * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
          std::printf("%-6s %8d %12zu %12.1f %12.3f %12.3f %8.0f%%\n",
                      engine.c_str(), r.replicas, r.bytes, r.seconds * 1e6,
                      alg / 1e9, bus / 1e9, 100 * bus / link);
          std::fflush(stdout);
          json << (first ? "" : ", ") << "{\"replicas\": " << r.replicas
               << ", \"bytes\": " << r.bytes << ", \"seconds\": " << r.seconds
               << "}";
          first = false;
        }
      }
      json << "]";
    }
    json << "}\n";
    if (!jsonFile.empty()) {
      std::ofstream out(jsonFile);
      out << json.str();
      if (!out.flush())
        throw std::runtime_error("--json=" + jsonFile +
                                 ": cannot write the file");
    }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "allreduce_bench: error: " << e.what() << "\n";
    return 1;
  }
}
