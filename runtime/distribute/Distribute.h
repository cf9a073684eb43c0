//===- runtime/distribute/Distribute.h - The collective engines ----------===//
//
// Implementations of rt::Collective (runtime/Collective.h) over existing,
// proven engines (docs/design/distributed.md, "Engines"):
//
//   Gloo  TCP between every pair of replicas; they meet at a rendezvous
//         store the chief (rank 0) serves at its TF_CONFIG address. The
//         default for CPU workers: it needs nothing but the addresses.
//   MPI   the processes `mpirun -np N` started (Open MPI); the HPC launcher.
//   local replicas that are threads of one process (tests of compiled code).
//
// Library EstcDistribute (estc::distribute), linked by the Estimator;
// estc::runtime and compiled code never depend on it. Every failure is an
// rt::CollectiveError whose what() is one line naming the task at fault.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_DISTRIBUTE_DISTRIBUTE_H
#define ESTC_RUNTIME_DISTRIBUTE_DISTRIBUTE_H

#include "runtime/Collective.h"
#include "runtime/distribute/Launcher.h"

#include <memory>
#include <string>
#include <vector>

namespace estc::rt::distribute {

struct GlooOptions {
  int rank = 0, size = 1;
  /// "host:port": rank 0 serves the rendezvous store there, the others
  /// connect to it.
  std::string rendezvous;
  /// The address this replica's transport binds (its TF_CONFIG host).
  std::string host = "127.0.0.1";
  /// Per rank, for messages ("chief:0", "worker:0", ...); empty: "rank r".
  std::vector<std::string> task_names;
  /// Per rank, as TF_CONFIG lists them, for messages (may be empty).
  std::vector<std::string> addresses;
  /// Bound on the rendezvous and on every collective.
  double timeout_secs = 60;
};

/// Joins the Gloo group of `options` (blocks until all `size` replicas have
/// joined): CollectiveError after timeout_secs without the chief
/// ("cannot reach the chief at H:P within N s (task worker:1)") or the
/// others, or for a rank another process already holds.
std::unique_ptr<Collective> connect_gloo(const GlooOptions &options);

/// The MPI_COMM_WORLD of the processes mpirun started (MPI_Init_thread on
/// first use, MPI_Finalize at exit), with MPI_ERRORS_RETURN: a failed call
/// throws CollectiveError with MPI's error string. MPI has no timeout of
/// its own: a collective still waiting after `timeout_secs` (a frozen
/// rank) ends this process with one line on stderr, and mpirun then ends
/// the job. CollectiveError when estc was built without MPI.
std::unique_ptr<Collective> connect_mpi(double timeout_secs = 60);

// launched_by_mpirun(), mpi_rank_from_env(), mpi_size_from_env():
// runtime/distribute/Launcher.h.

/// `size` replicas that are threads of one process ("local"): replica r is
/// group[r], to be used from one thread each. A replica that waits more
/// than `timeout_secs` for the others breaks the group: every call then
/// throws CollectiveError (a test fails instead of hanging).
std::vector<std::unique_ptr<Collective>>
make_local_group(int size, double timeout_secs = 60);

} // namespace estc::rt::distribute

#endif // ESTC_RUNTIME_DISTRIBUTE_DISTRIBUTE_H
