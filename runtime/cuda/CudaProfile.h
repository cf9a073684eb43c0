//===- runtime/cuda/CudaProfile.h - The CUDA profile's process table (internal)
//===//
//
// ESTC_CUDA_PROFILE=1 (runtime/README.md, "CUDA", profiling): CompiledModel's
// CUDA run brackets each piece of a step's GPU work (a kernel launch, a cuBLAS
// or cuDNN call, a copy) with two CUDA events; after the step's
// synchronization it hands the elapsed times here, where they are summed by
// name (name and shape) in one table for the process, reported by
// rt::cuda_profile_report() and printed on stderr at exit. This half needs
// no CUDA header, so a runtime built without CUDA has the same (empty)
// report; the event half is StreamContext's (runtime/cuda/CudaInternal.h).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CUDA_CUDAPROFILE_H
#define ESTC_RUNTIME_CUDA_CUDAPROFILE_H

#include <cstddef>
#include <string>

namespace estc::rt::cuda {

/// One bracketed piece of a step's GPU work.
struct ProfileSample {
  std::string name; // "cublas matmul f32 1024x256x784 batch 1"
  float ms = 0;
};

/// Adds one step: `stepMs` from its first to its last work on the GPU, and
/// its `count` samples.
void addProfiledStep(float stepMs, const ProfileSample *samples, size_t count);

} // namespace estc::rt::cuda

#endif // ESTC_RUNTIME_CUDA_CUDAPROFILE_H
