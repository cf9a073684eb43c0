//===- runtime/distribute/Local.cpp - Replicas as threads ---------------===//
//
// make_local_group: replicas that are threads of one process (tests of
// compiled collectives without sockets). Each collective stages every
// replica's bytes, meets at a barrier, and every replica computes the
// result itself in rank order -- the same bits everywhere. A replica that
// does not arrive within the timeout breaks the group: every waiting and
// later call throws, so a test fails instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Distribute.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace estc::rt::distribute {

namespace {

/// What the replicas of one local group share.
struct Shared {
  Shared(int size, double timeoutSecs)
      : size(size), staged(static_cast<size_t>(size)),
        timeout(std::chrono::milliseconds(
            static_cast<int64_t>(timeoutSecs * 1000))),
        timeoutSecs(timeoutSecs) {}
  /// Waits until every replica has arrived; CollectiveError once the group
  /// is broken (a replica failed, or one did not come in time).
  void arrive(int rank, const char *what) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!broken.empty())
      throw CollectiveError(broken);
    uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(lock, timeout,
                     [&] { return generation != gen || !broken.empty(); })) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeoutSecs);
      broken = "local: " + std::to_string(size - arrived) + " of " +
               std::to_string(size) + " replicas did not reach " + what +
               " within " + secs + " s (replica " + std::to_string(rank) +
               " waited)";
      cv.notify_all();
    }
    if (generation == gen)
      throw CollectiveError(broken);
  }
  /// Breaks the group with `error` (every replica then throws it).
  void fail(const std::string &error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (broken.empty())
      broken = error;
    cv.notify_all();
  }
  const int size;
  std::vector<std::vector<char>> staged;
  const std::chrono::milliseconds timeout;
  const double timeoutSecs;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::string broken;
};

class LocalCollective : public Collective {
public:
  LocalCollective(std::shared_ptr<Shared> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_->size; }
  const char *engine() const override { return "local"; }

  void allReduceSum(float *data, size_t n) override { reduce(data, n); }
  void allReduceSum(double *data, size_t n) override { reduce(data, n); }
  void allReduceSum(int64_t *data, size_t n) override { reduce(data, n); }

  void allGatherV(const void *in, void *out,
                  const size_t *bytesPerRank) override {
    stage(in, bytesPerRank[rank_], "all_gather");
    size_t at = 0;
    std::string error;
    for (int r = 0; r < size() && error.empty(); ++r) {
      const std::vector<char> &s = shared_->staged[static_cast<size_t>(r)];
      if (s.size() != bytesPerRank[r]) {
        error = "local: replica " + std::to_string(r) + " contributed " +
                std::to_string(s.size()) + " bytes to all_gather, replica " +
                std::to_string(rank_) + " expected " +
                std::to_string(bytesPerRank[r]);
        break;
      }
      if (!s.empty())
        std::memcpy(static_cast<char *>(out) + at, s.data(), s.size());
      at += s.size();
    }
    // The others must not wait for this replica: the group fails as one.
    if (!error.empty())
      shared_->fail(error);
    shared_->arrive(rank_, "all_gather");
  }

  void broadcast(void *data, size_t bytes, int root) override {
    stage(data, rank_ == root ? bytes : 0, "broadcast");
    const std::vector<char> &s = shared_->staged[static_cast<size_t>(root)];
    if (rank_ != root && s.size() != bytes)
      shared_->fail("local: broadcast of " + std::to_string(s.size()) +
                    " bytes from replica " + std::to_string(root) +
                    ", replica " + std::to_string(rank_) + " expected " +
                    std::to_string(bytes));
    else if (rank_ != root && bytes)
      std::memcpy(data, s.data(), bytes);
    shared_->arrive(rank_, "broadcast");
  }

  void barrier() override { shared_->arrive(rank_, "barrier"); }

private:
  void stage(const void *data, size_t bytes, const char *what) {
    std::vector<char> &mine = shared_->staged[static_cast<size_t>(rank_)];
    mine.assign(static_cast<const char *>(data),
                static_cast<const char *>(data) + bytes);
    shared_->arrive(rank_, what);
  }
  template <typename T> void reduce(T *data, size_t n) {
    stage(data, n * sizeof(T), "all_reduce");
    for (int r = 0; r < size(); ++r) {
      size_t theirs = shared_->staged[static_cast<size_t>(r)].size();
      if (theirs != n * sizeof(T)) {
        // Every replica sees it: the group fails as one (arrive throws).
        shared_->fail("local: replica " + std::to_string(r) + " reduced " +
                      std::to_string(theirs / sizeof(T)) +
                      " elements, replica " + std::to_string(rank_) + " " +
                      std::to_string(n));
        shared_->arrive(rank_, "all_reduce");
      }
    }
    for (size_t i = 0; i < n; ++i) {
      T sum = 0;
      for (int r = 0; r < size(); ++r) {
        T v;
        std::memcpy(
            &v, shared_->staged[static_cast<size_t>(r)].data() + i * sizeof(T),
            sizeof(T));
        sum = r == 0 ? v : sum + v;
      }
      data[i] = sum;
    }
    shared_->arrive(rank_, "all_reduce");
  }

  std::shared_ptr<Shared> shared_;
  int rank_;
};

} // namespace

std::vector<std::unique_ptr<Collective>> make_local_group(int size,
                                                          double timeout_secs) {
  if (size < 1)
    throw CollectiveError("local: a group of " + std::to_string(size) +
                          " replicas");
  auto shared = std::make_shared<Shared>(size, timeout_secs);
  std::vector<std::unique_ptr<Collective>> group;
  for (int r = 0; r < size; ++r)
    group.push_back(std::make_unique<LocalCollective>(shared, r));
  return group;
}

} // namespace estc::rt::distribute
