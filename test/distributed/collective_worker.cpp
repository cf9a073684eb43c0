//===- collective_worker.cpp - One replica of the engines' tests ---------===//
//
// test/e2e/collectives.py starts several of these on 127.0.0.1 (Gloo) or
// under mpirun (MPI). Each runs --iterations rounds of every collective on
// data it can also compute for the other ranks (a seeded hash of rank,
// round and index), checks the results (sums within float rounding of a
// double-precision sum, gathers and broadcasts exactly), and prints one
// digest of every result's bytes: the driver compares digests across ranks
// and runs. --die_at=K makes rank --victim SIGKILL itself in round K (or
// --freeze: SIGSTOP), for the fault tests; --addresses are the ranks'
// TF_CONFIG addresses the errors name. Errors: one line, exit 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Support/Flags.h"
#include "runtime/distribute/Distribute.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

using namespace estc;
using namespace estc::rt;

namespace {

float value(int rank, int round, size_t i) {
  uint64_t s =
      (uint64_t(rank) * 1000003u + uint64_t(round)) * 0x9E3779B97F4A7C15ull +
      i * 0xBF58476D1CE4E5B9ull;
  s ^= s >> 31;
  s *= 0x94D049BB133111EBull;
  s ^= s >> 29;
  return static_cast<float>(static_cast<int64_t>(s % 2000001) - 1000000) / 1e5f;
}

struct Digest {
  uint64_t h = 1469598103934665603ull;
  void add(const void *p, size_t n) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  }
};

[[noreturn]] void fail(const std::string &what) {
  estc::flags::print_error_line("collective_worker", what);
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string engine = "gloo", rendezvous, addresses;
  int rank = 0, size = 1, iterations = 5, dieAt = -1, victim = -1;
  double timeout = 10;
  bool freeze = false;
  flags::FlagParser parser("collective_worker",
                           "One replica of the collective engines' tests.");
  parser.add(Flag("engine", &engine, "the engine").choices({"gloo", "mpi"}));
  parser.add(Flag("rank", &rank, "this replica (gloo)").min(0));
  parser.add(Flag("size", &size, "replicas (gloo)").min(1));
  parser.add(Flag("rendezvous", &rendezvous, "the chief's host:port (gloo)"));
  parser.add(Flag("addresses", &addresses,
                  "every rank's address, comma-separated, for errors (gloo)"));
  parser.add(Flag("timeout_secs", &timeout, "the engine's timeout").min(0.1));
  parser.add(Flag("iterations", &iterations, "rounds").min(1));
  parser.add(Flag("die_at", &dieAt, "round in which --victim dies"));
  parser.add(Flag("victim", &victim, "the rank that dies"));
  parser.add(Flag("freeze", &freeze, "the victim stops (SIGSTOP) instead"));
  parser.parse_or_exit(argc, argv);
  try {
    std::unique_ptr<Collective> c;
    if (engine == "gloo") {
      distribute::GlooOptions o;
      o.rank = rank;
      o.size = size;
      o.rendezvous = rendezvous;
      o.timeout_secs = timeout;
      o.task_names.push_back("chief:0");
      for (int r = 1; r < size; ++r)
        o.task_names.push_back("worker:" + std::to_string(r - 1));
      for (size_t at = 0; !addresses.empty() && at != std::string::npos;) {
        size_t comma = addresses.find(',', at);
        o.addresses.push_back(addresses.substr(at, comma - at));
        at = comma == std::string::npos ? comma : comma + 1;
      }
      c = distribute::connect_gloo(o);
    } else {
      c = distribute::connect_mpi(timeout);
    }
    rank = c->rank();
    size = c->size();
    Digest digest;
    // Sizes around Gloo's segments: empty, smaller than the group, odd, a
    // few segments.
    const size_t sizes[] = {0, 1, 2, 7, 1000, 300000};
    for (int round = 0; round < iterations; ++round) {
      if (round == dieAt && rank == victim)
        ::raise(freeze ? SIGSTOP : SIGKILL);
      for (size_t n : sizes) {
        std::vector<float> data(n);
        for (size_t i = 0; i < n; ++i)
          data[i] = value(rank, round, i);
        c->allReduceSum(data.data(), n);
        for (size_t i = 0; i < n; ++i) {
          double want = 0;
          for (int r = 0; r < size; ++r)
            want += value(r, round, i);
          if (std::fabs(data[i] - want) > 1e-4 * (1 + std::fabs(want)))
            fail("all_reduce of " + std::to_string(n) + " floats: element " +
                 std::to_string(i) + " is " + std::to_string(data[i]) +
                 ", not " + std::to_string(want));
        }
        digest.add(data.data(), n * sizeof(float));
      }
      std::vector<int64_t> counts(static_cast<size_t>(size));
      for (int r = 0; r < size; ++r)
        counts[static_cast<size_t>(r)] = r + round;
      std::vector<int64_t> sum = {rank + round, 1};
      c->allReduceSum(sum.data(), 2);
      int64_t wantSum = 0;
      for (int64_t k : counts)
        wantSum += k;
      if (sum[0] != wantSum || sum[1] != size)
        fail("all_reduce of int64: " + std::to_string(sum[0]));
      // Every rank contributes rank + round floats (rank 0 none in round 0).
      std::vector<size_t> bytes;
      size_t total = 0;
      for (int64_t k : counts)
        total += bytes.emplace_back(static_cast<size_t>(k) * sizeof(float));
      std::vector<float> mine(static_cast<size_t>(rank + round));
      for (size_t i = 0; i < mine.size(); ++i)
        mine[i] = value(rank, round, i);
      std::vector<float> all(total / sizeof(float));
      c->allGatherV(mine.data(), all.data(), bytes.data());
      size_t at = 0;
      for (int r = 0; r < size; ++r)
        for (int64_t i = 0; i < counts[static_cast<size_t>(r)]; ++i, ++at)
          if (all[at] != value(r, round, static_cast<size_t>(i)))
            fail("all_gather: element " + std::to_string(at) + " is wrong");
      digest.add(all.data(), total);
      std::vector<float> b(33);
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = value(rank, round, i);
      int root = round % size;
      c->broadcast(b.data(), b.size() * sizeof(float), root);
      for (size_t i = 0; i < b.size(); ++i)
        if (b[i] != value(root, round, i))
          fail("broadcast from " + std::to_string(root) + " is wrong");
      c->barrier();
    }
    std::printf("rank %d of %d (%s): digest %016llx\n", rank, size, c->engine(),
                static_cast<unsigned long long>(digest.h));
    std::fflush(stdout);
    return 0;
  } catch (const std::exception &e) {
    fail(e.what());
  }
}
