//===- runtime/cuda/Cuda.h - What CUDA-compiled code calls
//---------------------===//
//
// The CUDA half of EstcRuntime (docs/design/gpu.md, "Runtime"): the mgpu*
// functions the host code of a `--target=cuda` model calls (the names and
// signatures MLIR's gpu.binary translation declares), the estc_cuda_* kernels
// (cuBLAS and cuDNN, on the same descriptors as the CPU kernels of
// runtime/cpu/Kernels.h, holding device pointers), and a few queries. The CUDA
// libraries are opened with dlopen on first use, never linked (runtime/
// CudaLibraries.h); a runtime built without CUDA (ESTC_ENABLE_CUDA=OFF) has
// the same symbols, which fail with "this estc runtime was built without
// CUDA".
//
// Errors: inside CompiledModel::run the C entry points below record the first
// error of the step (and skip every later launch and kernel), and run()
// throws it as rt::DeviceError after the step; called outside a run (compiled
// code driven by hand, a test calling a kernel) they print one line
// `estc runtime: ...` on stderr and abort, since an exception cannot unwind
// through compiled code. runtime/README.md, section "CUDA", has the contract.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CUDA_CUDA_H
#define ESTC_RUNTIME_CUDA_CUDA_H

#include "runtime/CompiledModel.h"
#include "runtime/MemRef.h"

#include <cstdint>
#include <string>

namespace estc::rt {

/// Whether this runtime was built with CUDA support (ESTC_ENABLE_CUDA). Says
/// nothing about the machine: see cuda_device_count().
ESTC_RT_EXPORT bool cuda_built();

/// The number of CUDA devices. Throws DeviceError when the driver cannot be
/// loaded or started, or when there is none ("there is no CUDA device").
ESTC_RT_EXPORT int cuda_device_count();

/// The architecture of device `device` as estc --gpu-arch names it
/// ("sm_90" for compute capability 9.0): what the JIT compiles kernels for.
/// Throws DeviceError as cuda_device_count(), or when the device does not
/// exist.
ESTC_RT_EXPORT std::string cuda_device_arch(int device);

/// Opens cuBLAS and cuDNN and resolves every entry point the kernels use;
/// returns "cuBLAS 13.0.2 (libcublas.so.13), cuDNN 91400 (libcudnn.so.9)".
/// Needs no driver or device. Throws DeviceError naming the library that
/// cannot be loaded or lacks an entry point.
ESTC_RT_EXPORT std::string cuda_library_versions();

// --- Profiling (runtime/README.md, "CUDA", profiling) -----------------------

/// Turns the per-kernel profiler on or off for the CUDA runs that start
/// afterwards. Its initial value is $ESTC_CUDA_PROFILE (set and not "0"),
/// read once when the runtime is loaded. While it is on, CUDA graphs are not
/// used, and every kernel launch, cuBLAS/cuDNN call and input/output copy of
/// a CompiledModel::run is timed with a pair of CUDA events.
ESTC_RT_EXPORT void set_cuda_profiling(bool on);
ESTC_RT_EXPORT bool cuda_profiling();

/// The profile of every CUDA run profiled since the start (or the last
/// cuda_profile_reset()): the steps and their GPU time, then the 40 kinds
/// of work (name and shape) with the most GPU time: total ms, calls, mean
/// microseconds, share of the profiled total. "estc CUDA profile: no CUDA
/// work profiled" when there is none. Needs no driver. The same text is
/// printed on stderr at exit when anything was profiled.
ESTC_RT_EXPORT std::string cuda_profile_report();
/// Forgets everything profiled so far (a benchmark's warmup, say).
ESTC_RT_EXPORT void cuda_profile_reset();

} // namespace estc::rt

extern "C" {

// --- MLIR's GPU runtime ABI (gpu-to-llvm + gpu.binary translation) ----------

/// Records a fatbin (or cubin) image; called by compiled objects' global
/// constructors, so it touches no CUDA: the image is loaded into the calling
/// thread's context by the first mgpuModuleGetFunction. `data` must outlive
/// the module (it is the object's constant).
ESTC_RT_EXPORT void *mgpuModuleLoad(void *data, uint64_t gpuBlobSize);
/// The same for a PTX image (JIT-compiled by the driver at `optLevel`).
ESTC_RT_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel);
ESTC_RT_EXPORT void mgpuModuleUnload(void *module);
/// The kernel `name` of `module` in the current context (loading the module
/// there on first use; cached).
ESTC_RT_EXPORT void *mgpuModuleGetFunction(void *module, const char *name);
/// The calling thread's current stream: the running CompiledModel's, else the
/// default stream (null). Creates nothing.
ESTC_RT_EXPORT void *mgpuStreamCreate();
/// Inside a run: nothing (the runtime synchronizes once per step). Outside:
/// cuStreamSynchronize.
ESTC_RT_EXPORT void mgpuStreamSynchronize(void *stream);
/// Nothing: streams belong to their CompiledModel.
ESTC_RT_EXPORT void mgpuStreamDestroy(void *stream);
ESTC_RT_EXPORT void mgpuLaunchKernel(void *function, int64_t gridX,
                                     int64_t gridY, int64_t gridZ,
                                     int64_t blockX, int64_t blockY,
                                     int64_t blockZ, int32_t smem, void *stream,
                                     void **params, void **extra,
                                     int64_t paramsCount);

// --- Kernels on device memory (runtime/README.md has the CPU semantics) -----

/// Batched matmul with cuBLAS (strided batched GEMM; batch 1 of A or B is
/// broadcast). Each matrix needs a unit stride in one of its two dimensions.
ESTC_RT_EXPORT void _mlir_ciface_estc_cuda_matmul_f32(
    estc::rt::MemRef<float, 3> *a, estc::rt::MemRef<float, 3> *b,
    estc::rt::MemRef<float, 3> *c, int64_t transpose_a, int64_t transpose_b);
ESTC_RT_EXPORT void _mlir_ciface_estc_cuda_matmul_f64(
    estc::rt::MemRef<double, 3> *a, estc::rt::MemRef<double, 3> *b,
    estc::rt::MemRef<double, 3> *c, int64_t transpose_a, int64_t transpose_b);

/// Convolutions with cuDNN: NHWC activations, HWIO filter (contiguous),
/// symmetric padding (pad_top above and below, pad_left left and right: the
/// output descriptor's size must be what that padding gives).
ESTC_RT_EXPORT void _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *filter,
    estc::rt::MemRef<float, 4> *output, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);
ESTC_RT_EXPORT void _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(
    estc::rt::MemRef<float, 4> *filter, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);
ESTC_RT_EXPORT void _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);

} // extern "C"

#endif // ESTC_RUNTIME_CUDA_CUDA_H
