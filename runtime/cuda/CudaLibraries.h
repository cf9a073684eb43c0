//===- runtime/cuda/CudaLibraries.h - The CUDA libraries, opened with dlopen
//---===//
//
// EstcRuntime never links a CUDA library (docs/design/gpu.md, "Loading"): the
// driver (libcuda.so.1), cuBLAS and cuDNN are opened with dlopen the first
// time a CUDA model, an mgpu* call or an estc_cuda_* kernel needs them, and
// the entry points the runtime uses are resolved into the tables below. Each
// table member has the exact type of the header's prototype (decltype of the
// declared function) and is looked up by the name the header #defines it to
// (cuMemAlloc -> cuMemAlloc_v2, cublasCreate -> cublasCreate_v2), so code
// reads `driver().cuMemAlloc(...)` as it would with the library linked.
//
// A failure to load is one line in an rt::DeviceError; the first attempt's
// outcome is kept, so every later use fails (or succeeds) the same way
// without retrying dlopen. Internal to EstcRuntime; only built with
// ESTC_ENABLE_CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CUDA_CUDALIBRARIES_H
#define ESTC_RUNTIME_CUDA_CUDALIBRARIES_H

#include <cublas_v2.h>
#include <cuda.h>
#include <cudnn.h>

#include <string>

// Two levels, so that the argument (cuMemAlloc) is macro-expanded by the
// header's #define (cuMemAlloc_v2) before it is turned into a string.
#define ESTC_CUDA_STR2(x) #x
#define ESTC_CUDA_STR(x) ESTC_CUDA_STR2(x)

#define ESTC_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuStreamIsCapturing)                                                       \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemHostAlloc)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuMemsetD2D32Async)                                                        \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)

#define ESTC_CUBLAS_FUNCTIONS(X)                                               \
  X(cublasGetStatusName)                                                       \
  X(cublasGetStatusString)                                                     \
  X(cublasGetProperty)                                                         \
  X(cublasCreate)                                                              \
  X(cublasDestroy)                                                             \
  X(cublasSetStream)                                                           \
  X(cublasSetWorkspace)                                                        \
  X(cublasSetMathMode)                                                         \
  X(cublasSetAtomicsMode)                                                      \
  X(cublasSetPointerMode)                                                      \
  X(cublasSgemmStridedBatched)                                                 \
  X(cublasDgemmStridedBatched)                                                 \
  X(cublasSgeam)

#define ESTC_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptorEx)                                              \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolution2dForwardOutputDim)                                     \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnConvolutionBackwardFilter)

namespace estc::rt::cuda {

#define ESTC_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
struct DriverApi {
  ESTC_CUDA_DRIVER_FUNCTIONS(ESTC_CUDA_MEMBER)
  /// The file that was opened (libcuda.so.1 or $ESTC_CUDA_DRIVER).
  std::string path;
};
struct CublasApi {
  ESTC_CUBLAS_FUNCTIONS(ESTC_CUDA_MEMBER)
  std::string path;
};
struct CudnnApi {
  ESTC_CUDNN_FUNCTIONS(ESTC_CUDA_MEMBER)
  std::string path;
};
#undef ESTC_CUDA_MEMBER

/// The driver, opened and cuInit-ed once per process. Throws rt::DeviceError
/// `estc runtime: <who>libcuda.so.1 cannot be loaded (...): this machine has
/// no NVIDIA driver` (or cuInit's error, or "no CUDA device"); `who` is put
/// before the reason ("model 'M' is compiled for CUDA, but ").
const DriverApi &driver(const std::string &who = "");
/// cuBLAS (libcublas.so.13, then libcublas.so) and cuDNN (libcudnn.so.9,
/// then libcudnn.so); they need no driver to load.
const CublasApi &cublas(const std::string &who = "");
const CudnnApi &cudnn(const std::string &who = "");

/// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)". Works even
/// when cuGetErrorName itself fails (the toolkit's stub library).
std::string driverErrorText(const char *call, CUresult result);
std::string cublasErrorText(const char *call, cublasStatus_t status);
std::string cudnnErrorText(const char *call, cudnnStatus_t status);

/// Throws rt::DeviceError("estc runtime: " + message).
[[noreturn]] void throwDeviceError(const std::string &message);

} // namespace estc::rt::cuda

#endif // ESTC_RUNTIME_CUDA_CUDALIBRARIES_H
