//===- runtime/cuda/CudaModel.cpp - CompiledModel on a CUDA device
//-------------===//
//
// The CUDA half of CompiledModel (docs/design/gpu.md, "Memory"):
//   - variables and the arena are device memory (cuMemAlloc, 256-byte
//     aligned); each variable has a host mirror that variable_data() hands
//     out: the first call after a step downloads the variables, and a mirror
//     that was handed out is uploaded before the next step;
//   - inputs and outputs are pinned host buffers (input_data/output_data)
//     with a device twin; a caller's buffer bound with bind_input/bind_output
//     goes through a pinned staging buffer, so the copies a step makes
//     always read and write the same pinned memory;
//   - run(): upload the handed-out variables, then the step on the model's
//     stream: inputs host->device, the status word cleared, the entry point
//     (its launches and kernels on this stream), outputs and status
//     device->host; one cuStreamSynchronize; then the step's first CUDA error
//     or failed check is thrown.
//   - CUDA graphs: the third run of a function at the same batch, values,
//     sequence length, buffers and workspace captures the step into a
//     graph, and later runs at that key replay it (one cuGraphLaunch
//     instead of every launch's host work). Anything else invalidates it;
//     ESTC_CUDA_GRAPHS=0 turns it off.
//   - profiling (rt::cuda_profiling(), ESTC_CUDA_PROFILE): no graph (events
//     cannot be recorded inside a capture); the step, its copies, launches
//     and kernels are bracketed by events, read after the synchronization.
//
//===----------------------------------------------------------------------===//
#include "runtime/CompiledModel.h"
#include "runtime/cuda/Cuda.h"
#include "runtime/cuda/CudaInternal.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace estc::rt {

using namespace cuda;

namespace {

/// Device memory that only grows.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t capacity = 0;
};

/// Pinned host memory that only grows (staging for bound buffers).
struct PinnedBuffer {
  void *ptr = nullptr;
  size_t capacity = 0;
};

/// The context pinned host memory is freed in when the freeing thread has
/// none (a model destroyed on another thread): portable pinned memory
/// belongs to every context, and primary contexts live as long as the
/// process.
std::atomic<CUcontext> gPinnedContext{nullptr};

void freePinned(void *p) {
  try {
    const DriverApi &d = driver();
    CUcontext current = nullptr;
    d.cuCtxGetCurrent(&current);
    if (current) {
      d.cuMemFreeHost(p);
      return;
    }
    ContextScope scope(gPinnedContext.load());
    d.cuMemFreeHost(p);
  } catch (const std::exception &) {
    // Only reached when the driver is gone (process exit): nothing leaks.
  }
}

size_t roundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

/// A function's captured step, and the key it was captured at.
struct Graph {
  std::vector<int64_t> key;
  int runs = 0;
  CUgraphExec exec = nullptr;
  bool disabled = false; // capture failed once: run without graphs
};

bool graphsEnabledByEnvironment() {
  const char *env = std::getenv("ESTC_CUDA_GRAPHS");
  return !(env && std::strcmp(env, "0") == 0);
}

} // namespace

struct CompiledModel::CudaState {
  std::string name; // "model 'M'"
  int device = 0;
  CUcontext context = nullptr;
  CUstream rawStream = nullptr;
  std::unique_ptr<StreamContext> stream;
  std::vector<DeviceBuffer> variables;
  DeviceBuffer arena;
  struct Function {
    std::vector<DeviceBuffer> inputs, outputs;
    std::vector<PinnedBuffer> inputStaging, outputStaging;
    Graph graph;
  };
  std::vector<Function> functions;
  int64_t *status = nullptr; // pinned: the status slot's three words
  /// Whether the host mirrors hold the device variables' values.
  bool hostValid = true;
  /// Mirrors handed out by variable_data() since the last step.
  std::vector<bool> handedOut;
  bool graphsEnabled = true;

  [[noreturn]] void fail(const std::string &message) const {
    throwDeviceError(name + ": " + message);
  }
  void check(CUresult r, const char *call) const {
    if (r != CUDA_SUCCESS)
      fail(driverErrorText(call, r));
  }
  /// Grows `buffer` to `bytes` (at least 256).
  void reserve(DeviceBuffer &buffer, size_t bytes) {
    if (bytes <= buffer.capacity && buffer.ptr)
      return;
    const DriverApi &d = driver();
    size_t want = roundUp(std::max<size_t>(bytes, 1), 256);
    if (buffer.ptr)
      d.cuMemFree(buffer.ptr);
    buffer = {};
    check(d.cuMemAlloc(&buffer.ptr, want), ESTC_CUDA_STR(cuMemAlloc));
    buffer.capacity = want;
  }
  void reserve(PinnedBuffer &buffer, size_t bytes) {
    if (bytes <= buffer.capacity && buffer.ptr)
      return;
    const DriverApi &d = driver();
    size_t want = roundUp(std::max<size_t>(bytes, 1), 64);
    if (buffer.ptr)
      d.cuMemFreeHost(buffer.ptr);
    buffer = {};
    check(d.cuMemHostAlloc(&buffer.ptr, want, CU_MEMHOSTALLOC_PORTABLE),
          "cuMemHostAlloc");
    buffer.capacity = want;
  }
  /// Throws the step's recorded error, if any (and clears it).
  void throwStepError() {
    if (!stream->failed())
      return;
    std::string error = stream->error;
    stream->error.clear();
    fail(error);
  }
  void destroyGraph(Graph &graph) {
    if (graph.exec)
      driver().cuGraphExecDestroy(graph.exec);
    graph.exec = nullptr;
  }
};

void CompiledModel::destroyCudaState(CudaState *state) {
  try {
    const DriverApi &d = driver();
    ContextScope scope(state->context);
    if (state->rawStream)
      d.cuStreamSynchronize(state->rawStream);
    for (CudaState::Function &f : state->functions) {
      state->destroyGraph(f.graph);
      for (DeviceBuffer &b : f.inputs)
        d.cuMemFree(b.ptr);
      for (DeviceBuffer &b : f.outputs)
        d.cuMemFree(b.ptr);
      for (PinnedBuffer &b : f.inputStaging)
        d.cuMemFreeHost(b.ptr);
      for (PinnedBuffer &b : f.outputStaging)
        d.cuMemFreeHost(b.ptr);
    }
    for (DeviceBuffer &b : state->variables)
      d.cuMemFree(b.ptr);
    d.cuMemFree(state->arena.ptr);
    if (state->status)
      d.cuMemFreeHost(state->status);
    state->stream.reset(); // its handles and workspace, before the stream
    if (state->rawStream)
      d.cuStreamDestroy(state->rawStream);
  } catch (const std::exception &) {
    // A destructor cannot report; only reached with the driver gone.
  }
  delete state;
}

void CompiledModel::initCuda(void *const *variables) {
  std::string who =
      "model '" + std::string(spec_->name) + "' is compiled for CUDA, but ";
  const DriverApi &d = driver(who);
  int device = get_cuda_device();
  CUcontext context = primaryContext(device, who);
  cuda_ = std::unique_ptr<CudaState, void (*)(CudaState *)>(new CudaState,
                                                            destroyCudaState);
  CudaState &st = *cuda_;
  st.name = "model '" + std::string(spec_->name) +
            "' on cuda:" + std::to_string(device);
  st.device = device;
  st.context = context;
  st.graphsEnabled = graphsEnabledByEnvironment();
  CUcontext none = nullptr;
  gPinnedContext.compare_exchange_strong(none, context);
  ContextScope scope(context);
  st.check(d.cuStreamCreate(&st.rawStream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
  st.stream = std::make_unique<StreamContext>();
  st.stream->context = context;
  st.stream->stream = st.rawStream;
  st.stream->recordErrors = true;
  void *status = nullptr;
  st.check(d.cuMemHostAlloc(&status, 64, CU_MEMHOSTALLOC_PORTABLE),
           "cuMemHostAlloc");
  st.status = static_cast<int64_t *>(status);
  std::memset(st.status, 0, 64);

  st.variables.resize(spec_->numVariables);
  st.handedOut.assign(spec_->numVariables, variables != nullptr);
  for (int32_t i = 0; i < spec_->numVariables; ++i) {
    size_t bytes = static_cast<size_t>(variable_bytes(i));
    st.reserve(st.variables[i], bytes);
    // Zeros, as the CPU's variables; shared ones are uploaded before the
    // first step (handedOut).
    st.check(d.cuMemsetD8Async(st.variables[i].ptr, 0, bytes, st.rawStream),
             ESTC_CUDA_STR(cuMemsetD8Async));
  }
  st.check(d.cuStreamSynchronize(st.rawStream),
           ESTC_CUDA_STR(cuStreamSynchronize));
  st.functions.resize(spec_->numFunctions);
  for (int32_t f = 0; f < spec_->numFunctions; ++f) {
    const FunctionSpec &fn = spec_->functions[f];
    st.functions[f].inputs.resize(fn.numInputs);
    st.functions[f].inputStaging.resize(fn.numInputs);
    st.functions[f].outputs.resize(fn.numOutputs);
    st.functions[f].outputStaging.resize(fn.numOutputs);
  }
}

void CompiledModel::reserveCudaHost(Buffer &buffer, size_t bytes) {
  CudaState &st = *cuda_;
  const DriverApi &d = driver();
  ContextScope scope(st.context);
  size_t rounded = roundUp(std::max<size_t>(bytes, 1), 64);
  void *p = nullptr;
  st.check(d.cuMemHostAlloc(&p, rounded, CU_MEMHOSTALLOC_PORTABLE),
           "cuMemHostAlloc");
  std::memset(p, 0, rounded);
  buffer.owned = std::unique_ptr<char, void (*)(void *)>(static_cast<char *>(p),
                                                         freePinned);
  buffer.capacity = rounded;
  buffer.data = p;
}

void *CompiledModel::cudaVariableData(int variable) {
  CudaState &st = *cuda_;
  Buffer &mirror = variables_.at(variable);
  if (!st.hostValid) {
    const DriverApi &d = driver();
    ContextScope scope(st.context);
    for (int32_t i = 0; i < spec_->numVariables; ++i)
      st.check(d.cuMemcpyDtoHAsync(variables_[i].data, st.variables[i].ptr,
                                   static_cast<size_t>(variable_bytes(i)),
                                   st.rawStream),
               ESTC_CUDA_STR(cuMemcpyDtoHAsync));
    st.check(d.cuStreamSynchronize(st.rawStream),
             ESTC_CUDA_STR(cuStreamSynchronize));
    st.hostValid = true;
  }
  st.handedOut[variable] = true;
  return mirror.data;
}

void CompiledModel::cudaResetLocalVariables() {
  CudaState &st = *cuda_;
  const DriverApi &d = driver();
  ContextScope scope(st.context);
  for (int32_t i = 0; i < spec_->numVariables; ++i) {
    if (!spec_->variables[i].local)
      continue;
    size_t bytes = static_cast<size_t>(variable_bytes(i));
    // The device copy now, in stream order; the mirror too, so that a
    // handed-out mirror uploads zeros rather than stale values.
    st.check(d.cuMemsetD8Async(st.variables[i].ptr, 0, bytes, st.rawStream),
             ESTC_CUDA_STR(cuMemsetD8Async));
    std::memset(variables_[i].data, 0, bytes);
  }
}

void CompiledModel::runCuda(int function, int64_t batch) {
  CudaState &st = *cuda_;
  const DriverApi &d = driver();
  const FunctionSpec &fn = spec_->functions[function];
  FunctionState &state = functions_[function];
  CudaState::Function &dev = st.functions[function];
  ContextScope scope(st.context);
  CUstream stream = st.rawStream;

  int64_t values = maxValues(function);
  int64_t length = length_; // the sequence length (kSequenceDim dims)
  int64_t arenaBytes = functionArenaBytes(function, batch, values, length);
  st.reserve(st.arena, static_cast<size_t>(arenaBytes));

  // Where each input is copied from and each output to: the pinned buffer
  // the model owns, or the staging buffer of a bound one.
  std::vector<int64_t> key = {batch,
                              values,
                              length,
                              arenaBytes,
                              int64_t(st.arena.ptr),
                              int64_t(st.stream->generation)};
  std::vector<const void *> inputSrc(fn.numInputs);
  std::vector<size_t> inputBytes(fn.numInputs);
  for (int32_t i = 0; i < fn.numInputs; ++i) {
    const TensorSpec &t = fn.inputs[i];
    size_t bytes = static_cast<size_t>(numElements(
                       t.rank, t.shape, batch, state.values[i], 1, length)) *
                   dtypeBytes(t.dtype);
    st.reserve(dev.inputs[i], bytes);
    const Buffer &host = state.inputs[i];
    if (host.data != host.owned.get()) {
      st.reserve(dev.inputStaging[i], bytes);
      if (bytes)
        std::memcpy(dev.inputStaging[i].ptr, host.data, bytes);
      inputSrc[i] = dev.inputStaging[i].ptr;
    } else {
      inputSrc[i] = host.data;
    }
    inputBytes[i] = bytes;
    key.insert(key.end(), {int64_t(reinterpret_cast<intptr_t>(inputSrc[i])),
                           int64_t(dev.inputs[i].ptr), int64_t(bytes)});
  }
  std::vector<void *> outputDst(fn.numOutputs);
  std::vector<size_t> outputBytes(fn.numOutputs);
  for (int32_t i = 0; i < fn.numOutputs; ++i) {
    const TensorSpec &t = fn.outputs[i];
    size_t bytes =
        static_cast<size_t>(numElements(t.rank, t.shape, batch, 0, 1, length)) *
        dtypeBytes(t.dtype);
    st.reserve(dev.outputs[i], bytes);
    const Buffer &host = state.outputs[i];
    if (host.data != host.owned.get()) {
      st.reserve(dev.outputStaging[i], bytes);
      outputDst[i] = dev.outputStaging[i].ptr;
    } else {
      outputDst[i] = host.data;
    }
    outputBytes[i] = bytes;
    key.insert(key.end(), {int64_t(reinterpret_cast<intptr_t>(outputDst[i])),
                           int64_t(dev.outputs[i].ptr), int64_t(bytes)});
  }

  // Mirrors handed out since the last step may have been written.
  for (int32_t i = 0; i < spec_->numVariables; ++i) {
    if (!st.handedOut[i])
      continue;
    st.check(d.cuMemcpyHtoDAsync(st.variables[i].ptr, variables_[i].data,
                                 static_cast<size_t>(variable_bytes(i)),
                                 stream),
             ESTC_CUDA_STR(cuMemcpyHtoDAsync));
    st.handedOut[i] = false;
  }

  // The descriptors hold device pointers.
  auto fill = [length](std::vector<int64_t> &desc, CUdeviceptr data,
                       int32_t rank, const int64_t *shape, int64_t batch,
                       int64_t values) {
    desc.assign(3 + 2 * static_cast<size_t>(rank), 0);
    desc[0] = desc[1] = static_cast<int64_t>(data);
    int64_t stride = 1;
    for (int32_t dim = rank - 1; dim >= 0; --dim) {
      int64_t size = shape[dim] == kBatchDim      ? batch
                     : shape[dim] == kValuesDim   ? values
                     : shape[dim] == kSequenceDim ? length
                                                  : shape[dim];
      desc[3 + dim] = size;
      desc[3 + rank + dim] = stride;
      stride *= size;
    }
  };
  size_t a = 0;
  int64_t arenaSize[] = {arenaBytes};
  fill(state.descriptors[a++], st.arena.ptr, 1, arenaSize, batch, 0);
  for (int32_t i = 0; i < spec_->numVariables; ++i) {
    const VariableSpec &v = spec_->variables[i];
    fill(state.descriptors[a++], st.variables[i].ptr, v.rank, v.shape, batch,
         0);
  }
  for (int32_t i = 0; i < fn.numInputs; ++i)
    fill(state.descriptors[a++], dev.inputs[i].ptr, fn.inputs[i].rank,
         fn.inputs[i].shape, batch, state.values[i]);
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    fill(state.descriptors[a++], dev.outputs[i].ptr, fn.outputs[i].rank,
         fn.outputs[i].shape, batch, 0);
  for (size_t i = 0; i < state.args.size(); ++i)
    state.args[i] = state.descriptors[i].data();

  StreamContext &sc = *st.stream;
  CUdeviceptr statusPtr =
      st.arena.ptr +
      static_cast<CUdeviceptr>(fn.hasChecks ? fn.statusOffset : 0);
  // One step on the stream; every call's error is recorded in `sc`.
  auto step = [&] {
    if (sc.profiling)
      sc.markProfiledStep(/*last=*/false);
    for (int32_t i = 0; i < fn.numInputs; ++i)
      if (inputBytes[i]) {
        ProfiledRange range(sc);
        if (range)
          range.begin(stream, "copy input '%s' host->device %zu bytes",
                      fn.inputs[i].key, inputBytes[i]);
        sc.check(d.cuMemcpyHtoDAsync(dev.inputs[i].ptr, inputSrc[i],
                                     inputBytes[i], stream),
                 ESTC_CUDA_STR(cuMemcpyHtoDAsync));
      }
    if (fn.hasChecks)
      sc.check(d.cuMemsetD8Async(statusPtr, 0, sizeof(int64_t), stream),
               ESTC_CUDA_STR(cuMemsetD8Async));
    if (!sc.failed()) {
      CurrentStream current(&sc);
      entries_[function](state.args.data());
    }
    for (int32_t i = 0; i < fn.numOutputs; ++i)
      if (outputBytes[i]) {
        ProfiledRange range(sc);
        if (range)
          range.begin(stream, "copy output '%s' device->host %zu bytes",
                      fn.outputs[i].key, outputBytes[i]);
        sc.check(d.cuMemcpyDtoHAsync(outputDst[i], dev.outputs[i].ptr,
                                     outputBytes[i], stream),
                 ESTC_CUDA_STR(cuMemcpyDtoHAsync));
      }
    if (fn.hasChecks)
      sc.check(d.cuMemcpyDtoHAsync(st.status, statusPtr, 3 * sizeof(int64_t),
                                   stream),
               ESTC_CUDA_STR(cuMemcpyDtoHAsync));
    if (sc.profiling)
      sc.markProfiledStep(/*last=*/true);
  };

  // Read once per run, so that a step is profiled whole or not at all.
  sc.profiling = cuda_profiling();
  sc.profileCount = 0;
  Graph &graph = dev.graph;
  bool useGraph = st.graphsEnabled && !graph.disabled && !sc.profiling;
  if (useGraph) {
    if (graph.key == key) {
      ++graph.runs;
    } else {
      st.destroyGraph(graph);
      graph.key = key;
      graph.runs = 1;
    }
  }
  if (useGraph && graph.exec) {
    sc.check(d.cuGraphLaunch(graph.exec, stream), ESTC_CUDA_STR(cuGraphLaunch));
  } else if (useGraph && graph.runs >= 3) {
    // Relaxed: the step may load a module or grow the workspace; nothing
    // in it synchronizes.
    uint64_t generation = sc.generation;
    bool captured = false;
    if (sc.check(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                 ESTC_CUDA_STR(cuStreamBeginCapture))) {
      step();
      CUgraph g = nullptr;
      CUresult ended = d.cuStreamEndCapture(stream, &g);
      CUgraphExec exec = nullptr;
      if (ended == CUDA_SUCCESS && g && !sc.failed() &&
          sc.generation == generation &&
          d.cuGraphInstantiate(&exec, g, 0) == CUDA_SUCCESS) {
        graph.exec = exec;
        captured = true;
      }
      if (g)
        d.cuGraphDestroy(g);
    }
    if (captured) {
      sc.check(d.cuGraphLaunch(graph.exec, stream),
               ESTC_CUDA_STR(cuGraphLaunch));
    } else {
      // Nothing captured ran. A moved workspace only needs a new key; any
      // other failure turns graphs off for this function, and the step
      // runs plainly (reporting its own error, if it has one).
      if (sc.generation == generation)
        graph.disabled = true;
      sc.error.clear();
      step();
    }
  } else {
    step();
  }
  sc.check(d.cuStreamSynchronize(stream), ESTC_CUDA_STR(cuStreamSynchronize));
  if (sc.profiling)
    sc.collectProfile();
  st.hostValid = false;
  st.throwStepError();
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    if (outputDst[i] != state.outputs[i].data && outputBytes[i])
      std::memcpy(state.outputs[i].data, outputDst[i], outputBytes[i]);
  if (fn.hasChecks && st.status[0] != 0)
    throwCheckFailure(function, st.status, batch);
}

} // namespace estc::rt
