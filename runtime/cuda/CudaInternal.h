//===- runtime/cuda/CudaInternal.h - Streams, errors and contexts (internal)
//---===//
//
// What the mgpu* entry points, the estc_cuda_* kernels and CompiledModel's
// CUDA path share:
//   - StreamContext: one CUDA stream and what runs on it: the cuBLAS and
//     cuDNN handles (bound to that stream once, at creation), the kernels'
//     device workspace, the cuDNN algorithm choices, and the first error of
//     the current step. A CUDA CompiledModel owns one; a thread calling
//     kernels outside any run gets its own on the default stream.
//   - the calling thread's current StreamContext, which CompiledModel::run
//     sets (CurrentStream) for the duration of the step;
//   - contexts: the primary context of the device rt::set_cuda_device chose;
//   - profiling (ESTC_CUDA_PROFILE): the stream's event pool and the step's
//     samples, and ProfiledRange, which brackets one call with two events.
// Internal to EstcRuntime; only built with ESTC_ENABLE_CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CUDA_CUDAINTERNAL_H
#define ESTC_RUNTIME_CUDA_CUDAINTERNAL_H

#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaProfile.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace estc::rt::cuda {

/// A cuDNN algorithm picked for one convolution shape, and its workspace.
struct ConvAlgorithm {
  int algorithm;
  cudnnMathType_t mathType;
  size_t workspaceBytes;
};

struct StreamContext {
  CUcontext context = nullptr;
  CUstream stream = nullptr; // null: the legacy default stream
  /// Inside CompiledModel::run: keep the step's first error in `error` (and
  /// skip every later launch) instead of aborting.
  bool recordErrors = false;
  std::string error;

  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  CUdeviceptr cublasWorkspace = 0;
  /// The kernels' scratch (transposed filters, cuDNN's workspace); grows.
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
  /// Workspaces replaced while the stream was being captured into a graph
  /// (the captured nodes may still use them): freed at the next growth
  /// outside a capture, or with the context.
  std::vector<CUdeviceptr> retired;
  /// Bumped whenever `workspace` moves: a CUDA graph captured before uses
  /// the old address and must not be replayed.
  uint64_t generation = 0;
  std::map<std::vector<int64_t>, ConvAlgorithm> convAlgorithms;

  /// ESTC_CUDA_PROFILE: set by CompiledModel::run for one step, when
  /// rt::cuda_profiling() is on (never outside a run). The one branch the
  /// launches and kernels take when it is off.
  bool profiling = false;
  /// The event pool, reused step after step: the step's first and last
  /// events, then two per sample. Destroyed with the context.
  std::vector<CUevent> profileEvents;
  /// The step's samples are the first profileCount (the rest keep their
  /// strings' storage for the next steps).
  std::vector<ProfileSample> profileSamples;
  size_t profileCount = 0;

  StreamContext() = default;
  StreamContext(const StreamContext &) = delete;
  StreamContext &operator=(const StreamContext &) = delete;
  /// Destroys the handles and frees the workspaces (not the stream), in
  /// `context`.
  ~StreamContext();

  /// Reports `message` (one line, without "estc runtime: "): kept as the
  /// step's error when recordErrors (the first one wins), else printed on
  /// stderr before aborting.
  void fail(const std::string &message);
  /// fail() with the message of `e` (a DeviceError from a library loader).
  void fail(const std::exception &e);
  bool failed() const { return !error.empty(); }
  /// Checks a driver call: false after fail() when it did not succeed.
  bool check(CUresult result, const char *call);
  bool check(cublasStatus_t status, const char *call);
  bool check(cudnnStatus_t status, const char *call);

  /// At least `bytes` of workspace (256-byte aligned), or 0 after fail().
  CUdeviceptr reserveWorkspace(size_t bytes);
  /// The stream's handles, created (and bound to the stream, FP32 math
  /// without TF32) on first use; null after fail().
  cublasHandle_t cublasHandle();
  cudnnHandle_t cudnnHandle();

  /// Pooled event `i` (created on first use, in the current context), or
  /// null after fail().
  CUevent profileEvent(size_t i);
  /// Records the step's first (`last` false) or last event on the stream.
  void markProfiledStep(bool last);
  /// After the stream's synchronization: the step's times, unless it
  /// failed, go to the process table (addProfiledStep). Ends the step's
  /// profile either way.
  void collectProfile();
};

/// Brackets the GPU work a call enqueues with two events while its stream
/// is profiled. Off, constructing it is one branch and begin() is never
/// called:
///   ProfiledRange range(s);
///   if (range)
///     range.begin(s.stream, "cublas matmul ...", ...);
///   ... enqueue ...
///   range.end(); // or at the end of the scope
class ProfiledRange {
public:
  explicit ProfiledRange(StreamContext &s) : s_(s.profiling ? &s : nullptr) {}
  ~ProfiledRange() { end(); }
  ProfiledRange(const ProfiledRange &) = delete;
  ProfiledRange &operator=(const ProfiledRange &) = delete;
  explicit operator bool() const { return s_ != nullptr; }
  /// Names the sample (printf-style) and records its first event on
  /// `stream`; nothing after a failure in the step.
  void begin(CUstream stream, const char *format, ...)
      __attribute__((format(printf, 3, 4)));
  /// Records the sample's last event (once; nothing when not begun).
  void end() {
    if (open_)
      finish();
  }

private:
  void finish();
  StreamContext *s_;
  CUstream stream_ = nullptr;
  size_t sample_ = 0;
  bool open_ = false;
};

/// The calling thread's current StreamContext: the running model's, else the
/// thread's own on the default stream of the current context (the selected
/// device's primary context is made current first if the thread has none;
/// when that fails, outside a run, the process stops with one line).
StreamContext *currentStream();
/// The running model's StreamContext, or null outside CompiledModel::run.
StreamContext *runningStream();

/// Makes `stream` the calling thread's current one for its lifetime.
class CurrentStream {
public:
  explicit CurrentStream(StreamContext *stream);
  ~CurrentStream();
  CurrentStream(const CurrentStream &) = delete;
  CurrentStream &operator=(const CurrentStream &) = delete;

private:
  StreamContext *previous_;
};

/// Pushes `context` onto the calling thread's context stack for its lifetime.
class ContextScope {
public:
  explicit ContextScope(CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
};

/// The driver's handle of `device`. Throws DeviceError `estc runtime:
/// <who>device cuda:3 does not exist (2 devices)` or the driver's error.
CUdevice deviceHandle(int device, const std::string &who);

/// The primary context of `device`, retained for the process (so models
/// constructed and destroyed in turn do not tear it down). Throws
/// DeviceError `estc runtime: <who>device cuda:3 does not exist (2
/// devices)` or the driver's error.
CUcontext primaryContext(int device, const std::string &who);

/// Whether `stream` is being captured into a CUDA graph.
bool isCapturing(CUstream stream);

/// "estc runtime: " is the prefix of every DeviceError; the recorded errors
/// are kept without it.
std::string withoutPrefix(const char *what);

} // namespace estc::rt::cuda

#endif // ESTC_RUNTIME_CUDA_CUDAINTERNAL_H
