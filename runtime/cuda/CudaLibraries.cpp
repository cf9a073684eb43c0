//===- runtime/cuda/CudaLibraries.cpp - The CUDA libraries, opened with dlopen
//-===//
//
// Each library is opened once per process, from a function-local static (so
// concurrent first uses are safe); the outcome, a table or the one-line reason
// it cannot be had, is kept for the life of the process. Libraries are never
// closed: their handles, streams and modules live as long as the process.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/CompiledModel.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string>

namespace estc::rt::cuda {
namespace {

/// The first of `names` dlopen accepts (its name in `opened`); `error` gets
/// the first one's dlerror, the name a user should install.
void *openFirst(std::initializer_list<const char *> names, std::string &opened,
                std::string &error) {
  for (const char *name : names) {
    if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      opened = name;
      return handle;
    }
    const char *why = dlerror();
    if (error.empty())
      error = why ? why : "unknown dlopen error";
  }
  return nullptr;
}

/// Resolves `name` into `slot`; false (and `missing` set) when absent.
template <typename Fn>
bool resolve(void *handle, Fn &slot, const char *name, std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!slot && missing.empty())
    missing = name;
  return slot != nullptr;
}

/// A loaded table, or why there is none.
template <typename Api> struct Loaded {
  Api api;
  std::string failure; // empty: loaded
};

/// The driver's table as soon as its symbols resolve (before cuInit), so
/// that cuInit's own error can be named.
const DriverApi *gDriverTable = nullptr;

Loaded<DriverApi> loadDriver() {
  Loaded<DriverApi> out;
  const char *env = std::getenv("ESTC_CUDA_DRIVER");
  bool custom = env && *env;
  std::string error;
  void *handle =
      openFirst({custom ? env : "libcuda.so.1"}, out.api.path, error);
  if (!handle) {
    out.failure = (custom ? std::string(env) + " ($ESTC_CUDA_DRIVER)"
                          : std::string("libcuda.so.1")) +
                  " cannot be loaded (" + error +
                  "): this machine has no NVIDIA driver";
    return out;
  }
  std::string missing;
#define ESTC_CUDA_RESOLVE(name)                                                \
  resolve(handle, out.api.name, ESTC_CUDA_STR(name), missing);
  ESTC_CUDA_DRIVER_FUNCTIONS(ESTC_CUDA_RESOLVE)
#undef ESTC_CUDA_RESOLVE
  if (!missing.empty()) {
    out.failure = out.api.path + " has no " + missing +
                  ": the NVIDIA driver is older than this runtime needs "
                  "(CUDA 12 or newer)";
    return out;
  }
  gDriverTable = new DriverApi(out.api); // for driverErrorText; never freed
  CUresult init = out.api.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE) {
    out.failure =
        "there is no CUDA device (" + driverErrorText("cuInit", init) + ")";
    return out;
  }
  if (init != CUDA_SUCCESS) {
    out.failure = "the CUDA driver cannot start (" +
                  driverErrorText("cuInit", init) + ")";
    if (init == CUDA_ERROR_STUB_LIBRARY)
      out.failure += ": " + out.api.path +
                     " is the CUDA toolkit's stub, not an NVIDIA driver";
    return out;
  }
  int count = 0;
  CUresult r = out.api.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    out.failure = driverErrorText("cuDeviceGetCount", r);
  else if (count == 0)
    out.failure = "there is no CUDA device";
  return out;
}

/// Opens the first of `names` and resolves every entry point of `Api`
/// (`resolveAll(handle, api, missing)`); `unavailable` says what to install
/// when none of the names can be opened.
template <typename Api, typename ResolveAll>
Loaded<Api> loadLibrary(std::initializer_list<const char *> names,
                        const char *unavailable, ResolveAll resolveAll) {
  Loaded<Api> out;
  std::string error;
  void *handle = openFirst(names, out.api.path, error);
  if (!handle) {
    out.failure = std::string(*names.begin()) + " cannot be loaded (" + error +
                  "): " + unavailable;
    return out;
  }
  std::string missing;
  resolveAll(handle, out.api, missing);
  if (!missing.empty())
    out.failure = out.api.path + " has no " + missing;
  return out;
}

Loaded<CublasApi> loadCublas() {
  return loadLibrary<CublasApi>(
      {"libcublas.so.13", "libcublas.so"},
      "install cuBLAS for CUDA 13 or add its folder to LD_LIBRARY_PATH",
      [](void *handle, CublasApi &api, std::string &missing) {
#define ESTC_CUDA_RESOLVE(name)                                                \
  resolve(handle, api.name, ESTC_CUDA_STR(name), missing);
        ESTC_CUBLAS_FUNCTIONS(ESTC_CUDA_RESOLVE)
#undef ESTC_CUDA_RESOLVE
      });
}

Loaded<CudnnApi> loadCudnn() {
  return loadLibrary<CudnnApi>(
      {"libcudnn.so.9", "libcudnn.so"},
      "install cuDNN 9 or add its folder to LD_LIBRARY_PATH",
      [](void *handle, CudnnApi &api, std::string &missing) {
#define ESTC_CUDA_RESOLVE(name)                                                \
  resolve(handle, api.name, ESTC_CUDA_STR(name), missing);
        ESTC_CUDNN_FUNCTIONS(ESTC_CUDA_RESOLVE)
#undef ESTC_CUDA_RESOLVE
      });
}

} // namespace

void throwDeviceError(const std::string &message) {
  throw DeviceError("estc runtime: " + message);
}

const DriverApi &driver(const std::string &who) {
  // Never destroyed: global destructors of compiled objects
  // (mgpuModuleUnload) may run after this function's statics would be.
  static const Loaded<DriverApi> &loaded = *new Loaded<DriverApi>(loadDriver());
  if (!loaded.failure.empty())
    throwDeviceError(who + loaded.failure);
  return loaded.api;
}

const CublasApi &cublas(const std::string &who) {
  // Never destroyed: global destructors of compiled objects
  // (mgpuModuleUnload) may run after this function's statics would be.
  static const Loaded<CublasApi> &loaded = *new Loaded<CublasApi>(loadCublas());
  if (!loaded.failure.empty())
    throwDeviceError(who + loaded.failure);
  return loaded.api;
}

const CudnnApi &cudnn(const std::string &who) {
  // Never destroyed: global destructors of compiled objects
  // (mgpuModuleUnload) may run after this function's statics would be.
  static const Loaded<CudnnApi> &loaded = *new Loaded<CudnnApi>(loadCudnn());
  if (!loaded.failure.empty())
    throwDeviceError(who + loaded.failure);
  return loaded.api;
}

std::string driverErrorText(const char *call, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (gDriverTable) {
    if (gDriverTable->cuGetErrorName(result, &name) != CUDA_SUCCESS)
      name = nullptr;
    if (gDriverTable->cuGetErrorString(result, &text) != CUDA_SUCCESS)
      text = nullptr;
  }
  // The stub library answers every call, cuGetErrorName included, with
  // CUDA_ERROR_STUB_LIBRARY; name the one code it returns by hand.
  std::string out = std::string(call) + ": ";
  if (name)
    out += name;
  else if (result == CUDA_ERROR_STUB_LIBRARY)
    out += "CUDA_ERROR_STUB_LIBRARY";
  else
    out += "CUDA error " + std::to_string(static_cast<int>(result));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

std::string cublasErrorText(const char *call, cublasStatus_t status) {
  const CublasApi &api = cublas();
  return std::string(call) + ": " + api.cublasGetStatusName(status) + " (" +
         api.cublasGetStatusString(status) + ")";
}

std::string cudnnErrorText(const char *call, cudnnStatus_t status) {
  return std::string(call) + ": " + cudnn().cudnnGetErrorString(status);
}

} // namespace estc::rt::cuda
