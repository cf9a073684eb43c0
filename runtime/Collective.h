//===- runtime/Collective.h - Replicas reducing tensors together ---------===//
//
// Data-parallel training (docs/design/distributed.md): N replicas -- one
// process each, usually on different hosts -- run the same compiled step on
// their own batches, and the step combines their gradients between their
// computation and the optimizer update. The compiler emits calls of the C
// functions below for that (`est.all_reduce`, `est.all_gather`); they reach
// the replica group through the abstract `Collective`, so compiled code and
// this library never depend on an engine. The engines -- Gloo over TCP, MPI
// -- implement `Collective` in EstcDistribute (runtime/distribute/), which
// the Estimator links; a process that installs none runs as one replica,
// and every call below is then the identity.
//
// Errors: an engine throws CollectiveError, one line naming the task it
// lost ("lost task worker:1 (127.0.0.1:40123) during all_reduce: ..."). The
// C entry points cannot throw through compiled code: they record the first
// error, turn every later collective of the process into a no-op, and
// return; rt::CompiledModel checks estc_collective_error() after each call
// of a compiled function and throws the recorded CollectiveError, before
// anything reads the step's results.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_COLLECTIVE_H
#define ESTC_RUNTIME_COLLECTIVE_H

#include "runtime/cpu/Kernels.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace estc::rt {

/// A collective failed: a peer died or timed out, or the group is broken.
/// what() is one line naming the task at fault where the engine knows it.
class ESTC_RT_EXPORT CollectiveError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A group of `size()` replicas; this process is replica `rank()` (0 is the
/// chief). Every replica calls the same collectives in the same order with
/// the same sizes (compiled code does by construction). Each call blocks
/// until it is complete here, and throws CollectiveError when it cannot
/// complete (within the engine's timeout at most).
class ESTC_RT_EXPORT Collective {
public:
  virtual ~Collective();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The engine's name ("gloo", "mpi", "local").
  virtual const char *engine() const = 0;

  /// data[0, n) := the elementwise sum over replicas, in place. Every
  /// replica gets the same bits, and the same inputs give the same bits on
  /// every run with the same number of replicas (the summation order
  /// depends on the replica count alone).
  virtual void allReduceSum(float *data, size_t n) = 0;
  virtual void allReduceSum(double *data, size_t n) = 0;
  virtual void allReduceSum(int64_t *data, size_t n) = 0;

  /// out := the concatenation, in rank order, of every replica's `in`;
  /// replica r contributes bytesPerRank[r] bytes (every replica passes the
  /// same bytesPerRank; `out` holds their sum).
  virtual void allGatherV(const void *in, void *out,
                          const size_t *bytesPerRank) = 0;

  /// data[0, bytes) := replica `root`'s bytes, on every replica.
  virtual void broadcast(void *data, size_t bytes, int root) = 0;

  /// Returns when every replica has called it.
  virtual void barrier() = 0;
};

/// The group compiled code of this process uses: `c` (not owned; null
/// restores "one replica"). Set it before the first step and keep it alive
/// until the last; clears a recorded error, and a new group's counters.
ESTC_RT_EXPORT void setCollective(Collective *c);
ESTC_RT_EXPORT Collective *collective();
/// As setCollective, for the calling thread alone (its error and counters
/// too): replicas that are threads of one process, as in tests of compiled
/// code. Null returns the thread to the process's group.
ESTC_RT_EXPORT void setThreadCollective(Collective *c);

/// Time and bytes the collectives of compiled code took in this process (or
/// thread, after setThreadCollective) since the last reset (for the compute /
/// communication split in bench/).
struct CollectiveStats {
  int64_t calls = 0;
  int64_t bytes = 0; ///< this replica's contribution, summed over calls
  double seconds = 0;
};
ESTC_RT_EXPORT CollectiveStats collectiveStats();
/// Adds a collective the host code made itself (the Estimator's agreement
/// before each step) to the counters.
ESTC_RT_EXPORT void recordCollective(double seconds, int64_t bytes);
ESTC_RT_EXPORT void resetCollectiveStats();

} // namespace estc::rt

extern "C" {

// --- What compiled code calls (runtime/README.md, "Collectives") ------------

/// Replicas in the group (1 without one).
ESTC_RT_EXPORT int64_t estc_collective_size(void);

/// In place: buf := (sum over replicas of buf) / size -- the mean of the
/// replicas' gradients, i.e. the gradient of the global batch when each
/// replica's loss is a mean over its own batch. Any strides.
ESTC_RT_EXPORT void
_mlir_ciface_estc_all_reduce_mean_f32(estc::rt::MemRef<float, 1> *buf);
ESTC_RT_EXPORT void
_mlir_ciface_estc_all_reduce_mean_f64(estc::rt::MemRef<double, 1> *buf);

/// out := the rows of every replica's `in`, in rank order (a sparse
/// gradient's indices and rows). out has room for at least the total of
/// every replica's rows (compiled code gives it replicas x its own); the
/// rows past the total are padding: copies of the first gathered index,
/// zero rows (which add nothing to a row that is updated anyway). More rows
/// than out holds is a CollectiveError. Float rows are divided by the
/// replica count when `mean` is non-zero (as the dense mean above).
ESTC_RT_EXPORT void
_mlir_ciface_estc_all_gather_i64(estc::rt::MemRef<int64_t, 1> *in,
                                 estc::rt::MemRef<int64_t, 1> *out);
ESTC_RT_EXPORT void
_mlir_ciface_estc_all_gather_f32(estc::rt::MemRef<float, 2> *in,
                                 estc::rt::MemRef<float, 2> *out, int64_t mean);
ESTC_RT_EXPORT void
_mlir_ciface_estc_all_gather_f64(estc::rt::MemRef<double, 2> *in,
                                 estc::rt::MemRef<double, 2> *out,
                                 int64_t mean);

/// The first error a collective of compiled code recorded since the
/// collective was set (one line), or null.
ESTC_RT_EXPORT const char *estc_collective_error(void);

} // extern "C"

#endif // ESTC_RUNTIME_COLLECTIVE_H
