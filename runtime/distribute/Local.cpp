//===- runtime/distribute/Local.cpp - Replicas as threads; the launchers -===//
//
// make_local_group: replicas that are threads of one process (tests of
// compiled collectives without sockets). Each collective stages every
// replica's bytes, meets at a barrier, and every replica computes the
// result itself in rank order -- the same bits everywhere.
//
// And what the MPI launchers put in the environment.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Distribute.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace estc::rt::distribute {

namespace {

/// What the replicas of one local group share.
struct Shared {
  explicit Shared(int size) : size(size), staged(static_cast<size_t>(size)) {}
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen; });
  }
  const int size;
  std::vector<std::vector<char>> staged;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
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
    stage(in, bytesPerRank[rank_]);
    size_t at = 0;
    for (int r = 0; r < size(); ++r) {
      const std::vector<char> &s = shared_->staged[static_cast<size_t>(r)];
      if (s.size() != bytesPerRank[r])
        throw CollectiveError("local: replica " + std::to_string(r) +
                              " contributed " + std::to_string(s.size()) +
                              " bytes to all_gather, not " +
                              std::to_string(bytesPerRank[r]));
      if (!s.empty())
        std::memcpy(static_cast<char *>(out) + at, s.data(), s.size());
      at += s.size();
    }
    shared_->arrive();
  }

  void broadcast(void *data, size_t bytes, int root) override {
    stage(data, rank_ == root ? bytes : 0);
    if (rank_ != root && bytes)
      std::memcpy(data, shared_->staged[static_cast<size_t>(root)].data(),
                  bytes);
    shared_->arrive();
  }

  void barrier() override { shared_->arrive(); }

private:
  void stage(const void *data, size_t bytes) {
    std::vector<char> &mine = shared_->staged[static_cast<size_t>(rank_)];
    mine.assign(static_cast<const char *>(data),
                static_cast<const char *>(data) + bytes);
    shared_->arrive();
  }
  template <typename T> void reduce(T *data, size_t n) {
    stage(data, n * sizeof(T));
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
    shared_->arrive();
  }

  std::shared_ptr<Shared> shared_;
  int rank_;
};

int envInt(const char *a, const char *b) {
  for (const char *name : {a, b}) {
    const char *v = name ? std::getenv(name) : nullptr;
    if (v && *v) {
      char *end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end == 0 && n >= 0)
        return static_cast<int>(n);
    }
  }
  return -1;
}

} // namespace

std::vector<std::unique_ptr<Collective>> make_local_group(int size) {
  if (size < 1)
    throw CollectiveError("local: a group of " + std::to_string(size) +
                          " replicas");
  auto shared = std::make_shared<Shared>(size);
  std::vector<std::unique_ptr<Collective>> group;
  for (int r = 0; r < size; ++r)
    group.push_back(std::make_unique<LocalCollective>(shared, r));
  return group;
}

int mpi_rank_from_env() { return envInt("OMPI_COMM_WORLD_RANK", "PMI_RANK"); }
int mpi_size_from_env() { return envInt("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"); }
bool launched_by_mpirun() {
  return mpi_rank_from_env() >= 0 && mpi_size_from_env() > 0;
}

} // namespace estc::rt::distribute
