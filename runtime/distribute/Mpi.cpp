//===- runtime/distribute/Mpi.cpp - rt::Collective over MPI --------------===//
//
// The processes mpirun started (Open MPI, Debian's libopenmpi-dev): their
// MPI_COMM_WORLD, with MPI_ERRORS_RETURN so a failure is an error status
// turned into a CollectiveError, not an abort inside the library. A replica
// that dies is normally noticed by mpirun itself, which then stops the job
// with its own message. A replica that freezes is not: MPI has no timeout,
// so a watchdog thread ends a process whose collective has waited longer
// than the timeout (one line on stderr, exit status 1), and mpirun, seeing
// it, ends the job. Built only with ESTC_ENABLE_MPI (MpiDisabled.cpp
// otherwise).
//
// The sums are MPI_Allreduce's. Open MPI's algorithm for a given message
// size and process count is fixed, and for the counts and sizes estc
// reduces every rank gets the same bits (test/e2e/distributed.py checks the
// replicas' variables are identical and equal to Gloo's).
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Distribute.h"

#include <mpi.h>

#include <unistd.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace estc::rt::distribute {

namespace {

void check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CollectiveError(std::string("mpi: ") + what + " failed: " +
                        std::string(text, static_cast<size_t>(len)));
}

/// MPI_Init_thread once per process; MPI_Finalize at exit.
void initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized)
      return;
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
          "MPI_Init_thread");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    });
  });
}

int asCount(size_t n, const char *what) {
  if (n > static_cast<size_t>(INT_MAX))
    throw CollectiveError(std::string("mpi: ") + what + " of " +
                          std::to_string(n) +
                          " elements is more than MPI's int counts hold");
  return static_cast<int>(n);
}

/// Ends the process when one collective waits longer than the timeout: it
/// cannot throw from its thread, and the collective cannot be cancelled.
/// It makes no MPI call (the thread level is MPI_THREAD_SERIALIZED).
class Watchdog {
public:
  Watchdog(double timeoutSecs, int rank, int size)
      : timeout_(std::chrono::milliseconds(
            static_cast<int64_t>(timeoutSecs * 1000))),
        timeoutSecs_(timeoutSecs), rank_(rank), size_(size),
        thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void begin(const char *what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = what;
    started_ = Clock::now();
    ++calls_;
    active_ = true;
    cv_.notify_all();
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = false;
  }

private:
  using Clock = std::chrono::steady_clock;
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!active_) {
        cv_.wait(lock);
        continue;
      }
      uint64_t call = calls_;
      if (cv_.wait_until(lock, started_ + timeout_,
                         [&] { return stop_ || !active_ || calls_ != call; }))
        continue;
      std::fprintf(stderr,
                   "%s: error: mpi: %s did not complete within %g s on rank "
                   "%d of %d (a rank is frozen, or the network is down; MPI "
                   "cannot say which): ending the job\n",
                   program_invocation_short_name, what_, timeoutSecs_, rank_,
                   size_);
      std::fflush(stderr);
      ::_exit(1); // MPI_Finalize would wait for the frozen rank
    }
  }
  const std::chrono::milliseconds timeout_;
  const double timeoutSecs_;
  const int rank_, size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false, active_ = false;
  const char *what_ = "";
  Clock::time_point started_;
  uint64_t calls_ = 0;
  std::thread thread_; // last: starts once the rest is set
};

class MpiCollective : public Collective {
public:
  explicit MpiCollective(double timeoutSecs) {
    initialize();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (timeoutSecs > 0 && size_ > 1)
      watchdog_ = std::make_unique<Watchdog>(timeoutSecs, rank_, size_);
  }
  ~MpiCollective() override {
    watchdog_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *engine() const override { return "mpi"; }

  void allReduceSum(float *data, size_t n) override {
    reduce(data, n, MPI_FLOAT);
  }
  void allReduceSum(double *data, size_t n) override {
    reduce(data, n, MPI_DOUBLE);
  }
  void allReduceSum(int64_t *data, size_t n) override {
    reduce(data, n, MPI_INT64_T);
  }

  void allGatherV(const void *in, void *out,
                  const size_t *bytesPerRank) override {
    std::vector<int> counts(static_cast<size_t>(size_)),
        displs(static_cast<size_t>(size_));
    size_t at = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      counts[r] = asCount(bytesPerRank[r], "all_gather");
      displs[r] = asCount(at, "all_gather");
      at += bytesPerRank[r];
    }
    guarded("all_gather", [&] {
      return MPI_Allgatherv(in, counts[static_cast<size_t>(rank_)], MPI_BYTE,
                            out, counts.data(), displs.data(), MPI_BYTE, comm_);
    });
  }

  void broadcast(void *data, size_t bytes, int root) override {
    if (bytes == 0)
      return;
    int count = asCount(bytes, "broadcast");
    guarded("broadcast",
            [&] { return MPI_Bcast(data, count, MPI_BYTE, root, comm_); });
  }

  void barrier() override {
    guarded("barrier", [&] { return MPI_Barrier(comm_); });
  }

private:
  void reduce(void *data, size_t n, MPI_Datatype type) {
    if (n == 0 || size_ == 1)
      return;
    int count = asCount(n, "all_reduce");
    guarded("all_reduce", [&] {
      return MPI_Allreduce(MPI_IN_PLACE, data, count, type, MPI_SUM, comm_);
    });
  }

  /// Runs one MPI collective under the watchdog; its error status becomes
  /// a CollectiveError with MPI's text.
  template <typename Fn> void guarded(const char *what, Fn &&fn) {
    if (watchdog_)
      watchdog_->begin(what);
    int rc = fn();
    if (watchdog_)
      watchdog_->end();
    check(rc, what);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
};

} // namespace

std::unique_ptr<Collective> connect_mpi(double timeout_secs) {
  return std::make_unique<MpiCollective>(timeout_secs);
}

} // namespace estc::rt::distribute
