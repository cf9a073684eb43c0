//===- runtime/distribute/Mpi.cpp - rt::Collective over MPI --------------===//
//
// The processes mpirun started (Open MPI, Debian's libopenmpi-dev): their
// MPI_COMM_WORLD, with MPI_ERRORS_RETURN so a failure is an error status
// turned into a CollectiveError, not an abort inside the library. A replica
// that dies is normally noticed by mpirun itself, which then stops the job
// with its own message. Built only with ESTC_ENABLE_MPI (MpiDisabled.cpp
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

#include <climits>
#include <cstdlib>
#include <mutex>
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

class MpiCollective : public Collective {
public:
  MpiCollective() {
    initialize();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCollective() override {
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
    check(MPI_Allgatherv(in, counts[static_cast<size_t>(rank_)], MPI_BYTE, out,
                         counts.data(), displs.data(), MPI_BYTE, comm_),
          "all_gather (MPI_Allgatherv)");
  }

  void broadcast(void *data, size_t bytes, int root) override {
    if (bytes == 0)
      return;
    check(MPI_Bcast(data, asCount(bytes, "broadcast"), MPI_BYTE, root, comm_),
          "broadcast (MPI_Bcast)");
  }

  void barrier() override { check(MPI_Barrier(comm_), "barrier"); }

private:
  void reduce(void *data, size_t n, MPI_Datatype type) {
    if (n == 0 || size_ == 1)
      return;
    check(MPI_Allreduce(MPI_IN_PLACE, data, asCount(n, "all_reduce"), type,
                        MPI_SUM, comm_),
          "all_reduce (MPI_Allreduce)");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

} // namespace

std::unique_ptr<Collective> connect_mpi(double timeout_secs) {
  // Open MPI bounds nothing itself; mpirun ends the job when a process
  // dies, which is the bound a lost replica gets under MPI.
  (void)timeout_secs;
  return std::make_unique<MpiCollective>();
}

} // namespace estc::rt::distribute
