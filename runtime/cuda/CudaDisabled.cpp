//===- runtime/cuda/CudaDisabled.cpp - The CUDA symbols of a CPU-only runtime
//--===//
//
// Built instead of the runtime/Cuda*.cpp files when ESTC_ENABLE_CUDA is OFF
// (no CUDA headers at build time): every symbol runtime/cuda/Cuda.h declares
// exists, so a CUDA model's object still links, and fails with one line. A
// CUDA CompiledModel throws DeviceError at construction; the C entry points
// compiled code calls print the line and abort (they cannot throw).
//
//===----------------------------------------------------------------------===//
#include "runtime/CompiledModel.h"
#include "runtime/cuda/Cuda.h"

#include <cstdio>
#include <cstdlib>

namespace estc::rt {
namespace {

constexpr const char *kNoCuda = "this estc runtime was built without CUDA";

[[noreturn]] void noCuda() {
  std::fprintf(stderr, "estc runtime: %s\n", kNoCuda);
  std::fflush(stderr);
  std::abort();
}

} // namespace

bool cuda_built() { return false; }

int cuda_device_count() {
  throw DeviceError(std::string("estc runtime: ") + kNoCuda);
}

std::string cuda_device_arch(int) {
  throw DeviceError(std::string("estc runtime: ") + kNoCuda);
}

std::string cuda_library_versions() {
  throw DeviceError(std::string("estc runtime: ") + kNoCuda);
}

struct CompiledModel::CudaState {};

void CompiledModel::initCuda(void *const *) {
  throw DeviceError("estc runtime: model '" + std::string(spec_->name) +
                    "' is compiled for CUDA, but " + kNoCuda);
}

// Unreachable: initCuda throws, so no model has a CudaState.
void CompiledModel::reserveCudaHost(Buffer &, size_t) { noCuda(); }
void CompiledModel::runCuda(int, int64_t) { noCuda(); }
void *CompiledModel::cudaVariableData(int) { noCuda(); }
void CompiledModel::cudaResetLocalVariables() { noCuda(); }
void CompiledModel::destroyCudaState(CudaState *state) { delete state; }

} // namespace estc::rt

using estc::rt::MemRef;
using estc::rt::noCuda;

extern "C" {

// Module registration runs from global constructors and destructors of a
// CUDA model's object: a program that links one but never constructs the
// model must still start and exit.
void *mgpuModuleLoad(void *data, uint64_t) { return data; }
void *mgpuModuleLoadJIT(void *data, int) { return data; }
void mgpuModuleUnload(void *) {}
void *mgpuModuleGetFunction(void *, const char *) { noCuda(); }
void *mgpuStreamCreate() { noCuda(); }
void mgpuStreamSynchronize(void *) { noCuda(); }
void mgpuStreamDestroy(void *) { noCuda(); }
void mgpuLaunchKernel(void *, int64_t, int64_t, int64_t, int64_t, int64_t,
                      int64_t, int32_t, void *, void **, void **, int64_t) {
  noCuda();
}

void _mlir_ciface_estc_cuda_matmul_f32(MemRef<float, 3> *, MemRef<float, 3> *,
                                       MemRef<float, 3> *, int64_t, int64_t) {
  noCuda();
}
void _mlir_ciface_estc_cuda_matmul_f64(MemRef<double, 3> *, MemRef<double, 3> *,
                                       MemRef<double, 3> *, int64_t, int64_t) {
  noCuda();
}
void _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(MemRef<float, 4> *,
                                                 MemRef<float, 4> *,
                                                 MemRef<float, 4> *, int64_t,
                                                 int64_t, int64_t, int64_t,
                                                 int64_t, int64_t) {
  noCuda();
}
void _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(
    MemRef<float, 4> *, MemRef<float, 4> *, MemRef<float, 4> *, int64_t,
    int64_t, int64_t, int64_t, int64_t, int64_t) {
  noCuda();
}
void _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(
    MemRef<float, 4> *, MemRef<float, 4> *, MemRef<float, 4> *, int64_t,
    int64_t, int64_t, int64_t, int64_t, int64_t) {
  noCuda();
}

} // extern "C"
