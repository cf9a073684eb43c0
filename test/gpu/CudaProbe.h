//===- CudaProbe.h - Is there a CUDA device to run on? -------------------===//
//
// The number of CUDA devices, asked of the driver directly (dlopen of
// libcuda.so.1, cuInit, cuDeviceGetCount), so that GpuTest and
// gpu_step_bench can skip their GPU cases visibly on a machine without a
// GPU before any model touches the runtime's CUDA path, and can still check
// the runtime's own error there. Needs neither the CUDA headers nor a CUDA
// library at link time.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_GPU_CUDAPROBE_H
#define ESTC_TEST_GPU_CUDAPROBE_H

#include <dlfcn.h>

#include <string>

namespace estc {
namespace gpu_test {

/// What the probe found: the number of devices, and why it is 0.
struct CudaProbe {
  int devices = 0;
  std::string reason; // empty when devices > 0
};

/// Asks the driver once; later calls return the same answer. The driver
/// stays loaded (the runtime opens the same library).
inline const CudaProbe &probeCuda() {
  static const CudaProbe probe = [] {
    CudaProbe p;
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
      const char *error = dlerror();
      p.reason = std::string("libcuda.so.1 cannot be loaded (") +
                 (error ? error : "unknown error") + ")";
      return p;
    }
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int *);
    auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
    auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
    if (!init || !count) {
      p.reason = "libcuda.so.1 has no cuInit/cuDeviceGetCount";
      return p;
    }
    if (int status = init(0)) {
      p.reason = "cuInit failed (CUresult " + std::to_string(status) + ")";
      return p;
    }
    int n = 0;
    if (int status = count(&n)) {
      p.reason =
          "cuDeviceGetCount failed (CUresult " + std::to_string(status) + ")";
      return p;
    }
    p.devices = n;
    if (n == 0)
      p.reason = "the driver reports no device";
    return p;
  }();
  return probe;
}

} // namespace gpu_test
} // namespace estc

#endif // ESTC_TEST_GPU_CUDAPROBE_H
