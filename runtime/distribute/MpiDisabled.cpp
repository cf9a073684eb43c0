//===- runtime/distribute/MpiDisabled.cpp - connect_mpi without MPI ------===//
//
// Built when CMake found no MPI (ESTC_ENABLE_MPI=OFF): the same entry point,
// failing with one line.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Distribute.h"

namespace estc::rt::distribute {

std::unique_ptr<Collective> connect_mpi(double timeout_secs) {
  (void)timeout_secs;
  throw CollectiveError("estc was built without MPI (install libopenmpi-dev "
                        "and configure with -DESTC_ENABLE_MPI=ON), so "
                        "communication 'mpi' is not available");
}

} // namespace estc::rt::distribute
