//===- runtime/cuda/Cuda.cpp - Streams, contexts and MLIR's GPU runtime ABI
//----===//
//
// The mgpu* functions compiled host code calls, and the per-stream state
// they and the kernels share. Nothing here may throw into compiled code: an
// error is recorded in the running model's StreamContext (CompiledModel::run
// throws it after the step) or, outside a run, printed before aborting.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Cuda.h"
#include "runtime/cuda/CudaInternal.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace estc::rt {

bool cuda_built() { return true; }

int cuda_device_count() {
  const cuda::DriverApi &d = cuda::driver();
  int count = 0;
  CUresult r = d.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    cuda::throwDeviceError(cuda::driverErrorText("cuDeviceGetCount", r));
  return count;
}

std::string cuda_device_arch(int device) {
  const cuda::DriverApi &d = cuda::driver();
  CUdevice handle = cuda::deviceHandle(device, "");
  int major = 0, minor = 0;
  CUresult r = d.cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle);
  if (r == CUDA_SUCCESS)
    r = d.cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle);
  if (r != CUDA_SUCCESS)
    cuda::throwDeviceError(cuda::driverErrorText("cuDeviceGetAttribute", r));
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::string cuda_library_versions() {
  const cuda::CublasApi &blas = cuda::cublas();
  const cuda::CudnnApi &dnn = cuda::cudnn();
  int major = 0, minor = 0, patch = 0;
  blas.cublasGetProperty(MAJOR_VERSION, &major);
  blas.cublasGetProperty(MINOR_VERSION, &minor);
  blas.cublasGetProperty(PATCH_LEVEL, &patch);
  return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch) + " (" + blas.path + "), cuDNN " +
         std::to_string(dnn.cudnnGetVersion()) + " (" + dnn.path + ")";
}

} // namespace estc::rt

namespace estc::rt::cuda {
namespace {

thread_local StreamContext *tCurrent = nullptr;

/// cuBLAS's own workspace per handle, set explicitly so that it never
/// allocates while a step is captured into a graph (NVIDIA recommends
/// 32 MiB on Hopper; smaller GPUs use less of it).
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

[[noreturn]] void abortWith(const std::string &message) {
  std::fprintf(stderr, "estc runtime: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

/// The thread's StreamContext for calls outside any run.
StreamContext *threadDefaultStream() {
  thread_local std::unique_ptr<StreamContext> tDefault;
  try {
    const DriverApi &d = driver();
    CUcontext context = nullptr;
    CUresult r = d.cuCtxGetCurrent(&context);
    if (r != CUDA_SUCCESS)
      abortWith(driverErrorText("cuCtxGetCurrent", r));
    if (!context) {
      context = primaryContext(get_cuda_device(), "");
      r = d.cuCtxSetCurrent(context);
      if (r != CUDA_SUCCESS)
        abortWith(driverErrorText("cuCtxSetCurrent", r));
    }
    if (!tDefault || tDefault->context != context) {
      tDefault = std::make_unique<StreamContext>();
      tDefault->context = context;
    }
    return tDefault.get();
  } catch (const std::exception &e) {
    abortWith(withoutPrefix(e.what()));
  }
}

} // namespace

std::string withoutPrefix(const char *what) {
  constexpr const char kPrefix[] = "estc runtime: ";
  if (std::strncmp(what, kPrefix, sizeof(kPrefix) - 1) == 0)
    return what + sizeof(kPrefix) - 1;
  return what;
}

StreamContext *runningStream() { return tCurrent; }

StreamContext *currentStream() {
  return tCurrent ? tCurrent : threadDefaultStream();
}

CurrentStream::CurrentStream(StreamContext *stream) : previous_(tCurrent) {
  tCurrent = stream;
}

CurrentStream::~CurrentStream() { tCurrent = previous_; }

ContextScope::ContextScope(CUcontext context) {
  CUresult r = driver().cuCtxPushCurrent(context);
  if (r != CUDA_SUCCESS)
    throwDeviceError(driverErrorText("cuCtxPushCurrent", r));
}

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  driver().cuCtxPopCurrent(&popped);
}

CUdevice deviceHandle(int device, const std::string &who) {
  const DriverApi &d = driver(who);
  int count = 0;
  CUresult r = d.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    throwDeviceError(who + driverErrorText("cuDeviceGetCount", r));
  if (device < 0 || device >= count)
    throwDeviceError(who + "device cuda:" + std::to_string(device) +
                     " does not exist (" + std::to_string(count) +
                     (count == 1 ? " device)" : " devices)"));
  CUdevice handle = 0;
  r = d.cuDeviceGet(&handle, device);
  if (r != CUDA_SUCCESS)
    throwDeviceError(who + driverErrorText("cuDeviceGet", r));
  return handle;
}

CUcontext primaryContext(int device, const std::string &who) {
  // Never destroyed (see CudaLibraries.cpp): used until the process ends.
  static std::mutex &mutex = *new std::mutex;
  static std::map<int, CUcontext> &contexts = *new std::map<int, CUcontext>;
  const DriverApi &d = driver(who);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device);
  if (it != contexts.end())
    return it->second;
  CUdevice handle = deviceHandle(device, who);
  CUcontext context = nullptr;
  CUresult r = d.cuDevicePrimaryCtxRetain(&context, handle);
  if (r != CUDA_SUCCESS)
    throwDeviceError(who + driverErrorText("cuDevicePrimaryCtxRetain", r));
  contexts[device] = context;
  return context;
}

bool isCapturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver().cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// --- StreamContext -----------------------------------------------------------

StreamContext::~StreamContext() {
  if (!context)
    return;
  try {
    ContextScope scope(context);
    if (blas)
      cublas().cublasDestroy(blas);
    if (dnn)
      cudnn().cudnnDestroy(dnn);
    const DriverApi &d = driver();
    for (CUevent e : profileEvents)
      d.cuEventDestroy(e);
    for (CUdeviceptr p : retired)
      d.cuMemFree(p);
    if (workspace)
      d.cuMemFree(workspace);
    if (cublasWorkspace)
      d.cuMemFree(cublasWorkspace);
  } catch (const std::exception &) {
    // The handles could only have been created with the libraries loaded;
    // a failure here (a context already torn down at exit) leaks them.
  }
}

void StreamContext::fail(const std::string &message) {
  if (!recordErrors)
    abortWith(message);
  if (error.empty())
    error = message;
}

void StreamContext::fail(const std::exception &e) {
  fail(withoutPrefix(e.what()));
}

bool StreamContext::check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  fail(driverErrorText(call, result));
  return false;
}

bool StreamContext::check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  fail(cublasErrorText(call, status));
  return false;
}

bool StreamContext::check(cudnnStatus_t status, const char *call) {
  if (status == CUDNN_STATUS_SUCCESS)
    return true;
  fail(cudnnErrorText(call, status));
  return false;
}

CUdeviceptr StreamContext::reserveWorkspace(size_t bytes) {
  if (bytes <= workspaceBytes && workspace)
    return workspace;
  const DriverApi &d = driver();
  // Grow by half again at least, in whole MiB, so a model whose shapes
  // grow one at a time reallocates a few times only.
  constexpr size_t kMiB = size_t(1) << 20;
  size_t want = std::max(bytes, workspaceBytes + workspaceBytes / 2);
  want = (want + kMiB - 1) / kMiB * kMiB;
  bool capturing = isCapturing(stream);
  if (workspace) {
    if (capturing) {
      retired.push_back(workspace);
    } else {
      if (!check(d.cuStreamSynchronize(stream),
                 ESTC_CUDA_STR(cuStreamSynchronize)))
        return 0;
      d.cuMemFree(workspace);
    }
    workspace = 0;
    workspaceBytes = 0;
  }
  if (!capturing) {
    for (CUdeviceptr p : retired)
      d.cuMemFree(p);
    retired.clear();
  }
  CUdeviceptr p = 0;
  if (!check(d.cuMemAlloc(&p, want), ESTC_CUDA_STR(cuMemAlloc)))
    return 0;
  workspace = p;
  workspaceBytes = want;
  ++generation;
  return workspace;
}

cublasHandle_t StreamContext::cublasHandle() {
  if (blas)
    return blas;
  try {
    const CublasApi &api = cublas();
    const DriverApi &d = driver();
    cublasHandle_t handle = nullptr;
    if (!check(api.cublasCreate(&handle), ESTC_CUDA_STR(cublasCreate)))
      return nullptr;
    // cublasSetStream resets the workspace to cuBLAS's pool, so the stream
    // comes first. DEFAULT_MATH keeps SGEMM in full FP32 (no TF32 tensor
    // cores); atomics off keeps results deterministic.
    CUdeviceptr ws = 0;
    bool ok =
        check(api.cublasSetStream(handle, stream),
              ESTC_CUDA_STR(cublasSetStream)) &&
        check(d.cuMemAlloc(&ws, kCublasWorkspaceBytes),
              ESTC_CUDA_STR(cuMemAlloc)) &&
        check(api.cublasSetWorkspace(handle, reinterpret_cast<void *>(ws),
                                     kCublasWorkspaceBytes),
              ESTC_CUDA_STR(cublasSetWorkspace)) &&
        check(api.cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH),
              "cublasSetMathMode") &&
        check(api.cublasSetAtomicsMode(handle, CUBLAS_ATOMICS_NOT_ALLOWED),
              "cublasSetAtomicsMode") &&
        check(api.cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST),
              ESTC_CUDA_STR(cublasSetPointerMode));
    if (!ok) {
      api.cublasDestroy(handle);
      if (ws)
        d.cuMemFree(ws);
      return nullptr;
    }
    blas = handle;
    cublasWorkspace = ws;
  } catch (const std::exception &e) {
    fail(e);
  }
  return blas;
}

cudnnHandle_t StreamContext::cudnnHandle() {
  if (dnn)
    return dnn;
  try {
    const CudnnApi &api = cudnn();
    cudnnHandle_t handle = nullptr;
    if (!check(api.cudnnCreate(&handle), "cudnnCreate"))
      return nullptr;
    if (!check(api.cudnnSetStream(handle, stream), "cudnnSetStream")) {
      api.cudnnDestroy(handle);
      return nullptr;
    }
    dnn = handle;
  } catch (const std::exception &e) {
    fail(e);
  }
  return dnn;
}

// --- Profiling ---------------------------------------------------------------

CUevent StreamContext::profileEvent(size_t i) {
  const DriverApi &d = driver();
  while (profileEvents.size() <= i) {
    CUevent event = nullptr;
    if (!check(d.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"))
      return nullptr;
    profileEvents.push_back(event);
  }
  return profileEvents[i];
}

void StreamContext::markProfiledStep(bool last) {
  if (failed())
    return;
  if (CUevent event = profileEvent(last ? 1 : 0))
    check(driver().cuEventRecord(event, stream), ESTC_CUDA_STR(cuEventRecord));
}

void StreamContext::collectProfile() {
  size_t count = profileCount;
  profileCount = 0;
  profiling = false;
  // A failed step's events may not all have been recorded; it is not
  // counted.
  if (failed() || profileEvents.size() < 2 + 2 * count)
    return;
  const DriverApi &d = driver();
  float stepMs = 0;
  if (!check(d.cuEventElapsedTime(&stepMs, profileEvents[0], profileEvents[1]),
             ESTC_CUDA_STR(cuEventElapsedTime)))
    return;
  for (size_t i = 0; i < count; ++i)
    if (!check(d.cuEventElapsedTime(&profileSamples[i].ms,
                                    profileEvents[2 + 2 * i],
                                    profileEvents[3 + 2 * i]),
               ESTC_CUDA_STR(cuEventElapsedTime)))
      return;
  addProfiledStep(stepMs, profileSamples.data(), count);
}

void ProfiledRange::begin(CUstream stream, const char *format, ...) {
  StreamContext &s = *s_;
  if (open_ || s.failed())
    return;
  size_t sample = s.profileCount;
  CUevent first = s.profileEvent(2 + 2 * sample);
  if (!first || !s.profileEvent(3 + 2 * sample))
    return;
  if (s.profileSamples.size() <= sample)
    s.profileSamples.resize(sample + 1);
  // Assigned into the pooled sample's string: no allocation once its
  // storage has grown.
  char name[320];
  va_list args;
  va_start(args, format);
  std::vsnprintf(name, sizeof name, format, args);
  va_end(args);
  s.profileSamples[sample].name.assign(name);
  if (!s.check(driver().cuEventRecord(first, stream),
               ESTC_CUDA_STR(cuEventRecord)))
    return;
  s.profileCount = sample + 1;
  stream_ = stream;
  sample_ = sample;
  open_ = true;
}

void ProfiledRange::finish() {
  open_ = false;
  s_->check(driver().cuEventRecord(s_->profileEvents[3 + 2 * sample_], stream_),
            ESTC_CUDA_STR(cuEventRecord));
}

// --- Modules -----------------------------------------------------------------

namespace {

/// An image compiled code registered; loaded into each context that asks
/// for one of its kernels.
struct GpuModule {
  const void *data;
  bool ptx;
  int optLevel;
  struct Loaded {
    CUcontext context;
    CUmodule module;
    std::vector<std::pair<std::string, CUfunction>> functions;
  };
  std::mutex mutex;
  std::vector<Loaded> loaded;
};

/// Each kernel's name (what mgpuModuleGetFunction was asked for), for the
/// profile's launches. Never destroyed, like the modules' handles.
struct KernelNames {
  std::mutex mutex;
  std::unordered_map<CUfunction, std::string> names;
};

KernelNames &kernelNames() {
  static KernelNames &names = *new KernelNames;
  return names;
}

/// The name of `function` into `out` ("kernel 0x..." if it has none).
void kernelName(CUfunction function, char *out, size_t size) {
  KernelNames &k = kernelNames();
  std::lock_guard<std::mutex> lock(k.mutex);
  auto it = k.names.find(function);
  if (it != k.names.end())
    std::snprintf(out, size, "%s", it->second.c_str());
  else
    std::snprintf(out, size, "kernel %p", static_cast<void *>(function));
}

} // namespace
} // namespace estc::rt::cuda

using namespace estc::rt::cuda;

extern "C" {

void *mgpuModuleLoad(void *data, uint64_t /*gpuBlobSize*/) {
  // No CUDA here: this runs from global constructors, before main, on
  // machines that may never touch a GPU.
  return new GpuModule{data, false, 0, {}, {}};
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  return new GpuModule{data, true, optLevel, {}, {}};
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<GpuModule *>(module);
  if (!m)
    return;
  // Best effort: at process exit the driver may already have destroyed the
  // contexts, which cuModuleUnload then reports (and nothing is leaked).
  if (!m->loaded.empty()) {
    try {
      const DriverApi &d = driver();
      for (GpuModule::Loaded &l : m->loaded)
        d.cuModuleUnload(l.module);
    } catch (const std::exception &) {
    }
  }
  delete m;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  StreamContext *s = currentStream();
  if (s->failed())
    return nullptr;
  auto *m = static_cast<GpuModule *>(module);
  try {
    const DriverApi &d = driver();
    std::lock_guard<std::mutex> lock(m->mutex);
    GpuModule::Loaded *loaded = nullptr;
    for (GpuModule::Loaded &l : m->loaded)
      if (l.context == s->context)
        loaded = &l;
    if (!loaded) {
      CUmodule handle = nullptr;
      if (m->ptx) {
        CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
        void *values[] = {
            reinterpret_cast<void *>(static_cast<intptr_t>(m->optLevel))};
        if (!s->check(
                d.cuModuleLoadDataEx(&handle, m->data, 1, options, values),
                "cuModuleLoadDataEx"))
          return nullptr;
      } else if (!s->check(d.cuModuleLoadData(&handle, m->data),
                           "cuModuleLoadData")) {
        return nullptr;
      }
      m->loaded.push_back({s->context, handle, {}});
      loaded = &m->loaded.back();
    }
    for (auto &[fnName, fn] : loaded->functions)
      if (fnName == name)
        return fn;
    CUfunction fn = nullptr;
    CUresult r = d.cuModuleGetFunction(&fn, loaded->module, name);
    if (r != CUDA_SUCCESS) {
      s->fail(driverErrorText("cuModuleGetFunction", r) + " for kernel '" +
              name + "'");
      return nullptr;
    }
    loaded->functions.emplace_back(name, fn);
    {
      KernelNames &k = kernelNames();
      std::lock_guard<std::mutex> namesLock(k.mutex);
      k.names.insert_or_assign(fn, name);
    }
    return fn;
  } catch (const std::exception &e) {
    s->fail(e);
    return nullptr;
  }
}

void *mgpuStreamCreate() {
  StreamContext *s = runningStream();
  return s ? s->stream : nullptr;
}

void mgpuStreamSynchronize(void *stream) {
  if (runningStream())
    return;
  StreamContext *s = currentStream();
  s->check(driver().cuStreamSynchronize(static_cast<CUstream>(stream)),
           ESTC_CUDA_STR(cuStreamSynchronize));
}

void mgpuStreamDestroy(void * /*stream*/) {}

void mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY,
                      int64_t gridZ, int64_t blockX, int64_t blockY,
                      int64_t blockZ, int32_t smem, void *stream, void **params,
                      void **extra, int64_t /*paramsCount*/) {
  StreamContext *s = currentStream();
  // After a failure in this step, nothing else runs: the step's outputs are
  // garbage anyway, and run() throws the first error.
  if (s->failed())
    return;
  if (!function) {
    s->fail("mgpuLaunchKernel: no kernel (mgpuModuleGetFunction failed)");
    return;
  }
  // An empty launch (a loop over zero elements) has nothing to do; the
  // driver would call it an invalid value.
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  auto fits = [](int64_t v) { return v >= 1 && v <= int64_t(UINT32_MAX); };
  if (!fits(gridX) || !fits(gridY) || !fits(gridZ) || !fits(blockX) ||
      !fits(blockY) || !fits(blockZ) || smem < 0) {
    s->fail("mgpuLaunchKernel: launch shape " + std::to_string(gridX) + "x" +
            std::to_string(gridY) + "x" + std::to_string(gridZ) +
            " blocks of " + std::to_string(blockX) + "x" +
            std::to_string(blockY) + "x" + std::to_string(blockZ) +
            " threads is out of range");
    return;
  }
  ProfiledRange range(*s);
  if (range) {
    char name[256];
    kernelName(static_cast<CUfunction>(function), name, sizeof name);
    range.begin(static_cast<CUstream>(stream),
                "%s grid %lldx%lldx%lld block %lldx%lldx%lld", name,
                static_cast<long long>(gridX), static_cast<long long>(gridY),
                static_cast<long long>(gridZ), static_cast<long long>(blockX),
                static_cast<long long>(blockY), static_cast<long long>(blockZ));
  }
  s->check(driver().cuLaunchKernel(
               static_cast<CUfunction>(function), unsigned(gridX),
               unsigned(gridY), unsigned(gridZ), unsigned(blockX),
               unsigned(blockY), unsigned(blockZ), unsigned(smem),
               static_cast<CUstream>(stream), params, extra),
           ESTC_CUDA_STR(cuLaunchKernel));
}

} // extern "C"
