//===- runtime/distribute/Launcher.h - What an MPI launcher tells a rank -===//
//
// The rank and size an MPI launcher (Open MPI's mpirun, MPICH's, Slurm's
// PMI, PMIx) puts in a process's environment, read before MPI is
// initialized: RunConfig builds the cluster from them (rank 0 the chief),
// and train_distribute's "auto" picks MPI when they are there. Header-only
// and dependency-free, so RunConfig reads the same variables the engines
// do without linking them.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_DISTRIBUTE_LAUNCHER_H
#define ESTC_RUNTIME_DISTRIBUTE_LAUNCHER_H

#include <climits>
#include <cstdlib>
#include <initializer_list>

namespace estc::rt::distribute {

/// The first of `names` set to a non-negative integer, or -1.
inline int launcherEnvInt(std::initializer_list<const char *> names) {
  for (const char *name : names) {
    const char *v = std::getenv(name);
    if (v && *v) {
      char *end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end == 0 && n >= 0 && n <= INT_MAX)
        return static_cast<int>(n);
    }
  }
  return -1;
}

/// This process's rank and the job's size as the launcher set them (-1
/// when unknown: PMIx puts no size in the environment).
inline int mpi_rank_from_env() {
  return launcherEnvInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
}
inline int mpi_size_from_env() {
  return launcherEnvInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
}

/// Whether an MPI launcher started this process (OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE or PMIX_RANK in the environment).
inline bool launched_by_mpirun() {
  return mpi_size_from_env() > 0 || launcherEnvInt({"PMIX_RANK"}) >= 0;
}

} // namespace estc::rt::distribute

#endif // ESTC_RUNTIME_DISTRIBUTE_LAUNCHER_H
