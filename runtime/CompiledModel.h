//===- runtime/CompiledModel.h - What a compiled model runs on ------------===//
//
// The runtime half of an estc-compiled model, shared by the AOT path (the
// class estc generates in NAME.h derives from CompiledModel) and the JIT
// (compiler/Target/Jit.h builds a ModelSpec from the manifest). No LLVM or
// MLIR: an AOT trainer links only estc::runtime.
//
// A CompiledModel owns
//   - one buffer per module variable (zero-filled at construction; they
//     persist across calls and compiled functions update them in place),
//   - one buffer per function input and output, sized for the batch given to
//     set_batch() (or a caller's buffer bound with bind_input/bind_output),
//   - the arena, the temporaries of a step: max over functions of
//     S + P * batch (+ V * values + Q * T + R * batch * T for sparse and
//     sequence inputs) bytes (codegen-abi.md, `estc.arena`),
// all 64-byte aligned, and calls a function's entry point with the memref
// descriptors of docs/design/codegen-abi.md: arena, every variable, inputs,
// outputs.
//
// Entry points have the packed form `void f(void **args)`: args[i] points at
// the i-th memref descriptor (runtime/MemRef.h layout). estc emits one per
// compiled function, `<Name>_<function>_packed`, next to the typed C
// interface `<Name>_<function>`.
//
// The run-time sizes (docs/design/run-time-dimensions.md): the batch
// (set_batch), a sparse input's number of values (set_values) and the
// sequence length of a padded batch (set_sequence_length).
//
// User errors (unknown name, wrong shape, no batch) throw
// std::invalid_argument / std::logic_error with a one-line message naming the
// model, function and tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_COMPILEDMODEL_H
#define ESTC_RUNTIME_COMPILEDMODEL_H

#include "lib/Support/Device.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// EstcRuntime hides every symbol it does not export on purpose.
#define ESTC_RT_EXPORT __attribute__((visibility("default")))

namespace estc::rt {

/// Element types of variables, inputs and outputs. `Bool` (i1) is stored as
/// one byte holding 0 or 1.
enum class DType : int32_t { F32, F64, I8, I32, I64, Bool };

/// Bytes per element.
ESTC_RT_EXPORT size_t dtypeBytes(DType dtype);
/// "f32", "f64", "i8", "i32", "i64", "i1".
ESTC_RT_EXPORT const char *dtypeName(DType dtype);

/// A dimension of this size is the batch.
constexpr int64_t kBatchDim = -1;
/// Dimension 0 of a sparse input (a feature column's ids, rows, weights) is
/// its number of values, set per call (CompiledModel::set_values).
constexpr int64_t kValuesDim = -2;
/// Dimension 0 of a multi-step loop's staged input (a function compiled as
/// RunConfig::iterations_per_loop steps of another, `train_loop`): the
/// number of steps of the call, set per call (CompiledModel::set_steps).
constexpr int64_t kStepsDim = -3;
/// Dimension 1 of a sequence input (a padded batch of sequences: [batch,
/// length, ...]) and the dimensions of outputs that keep it: the sequence
/// length of the call, the same for every sequence input
/// (CompiledModel::set_sequence_length).
constexpr int64_t kSequenceDim = -4;

/// A function input or output: its key ("features/x", "labels", "loss",
/// "predictions/classes", ...), element type and shape (kBatchDim = batch,
/// kValuesDim = the input's number of values, kStepsDim = a loop's steps,
/// kSequenceDim = the sequence length). A sequence input may declare the
/// longest sequence it accepts (`maxSequenceLength`, 0: none).
struct TensorSpec {
  const char *key;
  DType dtype;
  int32_t rank;
  const int64_t *shape;
  int64_t maxSequenceLength = 0;
};

/// A module variable, static shape. `local` variables are TF's
/// LOCAL_VARIABLES (metric state): zeros-initialized, not checkpointed, and
/// zeroed by CompiledModel::reset_local_variables() before an evaluation.
/// `psTask` is the parameter-server task holding it (docs/design/
/// distributed.md, "Parameter servers"), -1 when this process holds it.
struct VariableSpec {
  const char *name;
  DType dtype;
  int32_t rank;
  const int64_t *shape;
  bool trainable;
  bool local;
  int32_t psTask = -1;
};

/// A compiled function and its arena formula: S + P * batch + V * values +
/// Q * length + R * batch * length bytes, `values` being the largest number
/// of values of its sparse inputs in the call and `length` its sequence
/// length (arenaPerStep, arenaPerBatchStep: 0 without sequence inputs;
/// last, so that headers generated before them still compile). With
/// run-time checks (`hasChecks`), the function reports a failed check in
/// the three int64 words at byte `statusOffset` of the arena: check index +
/// 1 (0: none failed), flat position, value (docs/design/codegen-abi.md).
struct FunctionSpec {
  const char *name;
  int32_t numInputs;
  const TensorSpec *inputs;
  int32_t numOutputs;
  const TensorSpec *outputs;
  int64_t arenaStatic;
  int64_t arenaPerBatch;
  bool hasChecks;
  int64_t statusOffset;
  int64_t arenaPerValue;
  int64_t arenaPerStep = 0;
  int64_t arenaPerBatchStep = 0;
};

/// A run-time check (est.check_range): every element of a tensor of `shape`
/// (kBatchDim = batch) must be in [lower, upper). `node` is the graph node
/// it checks for, `what` names the elements ("label", "id").
struct CheckSpec {
  const char *node;
  const char *what;
  int64_t lower;
  int64_t upper;
  int32_t rank;
  const int64_t *shape;
};

/// Where a model's compiled code runs: estc's one Device
/// (lib/Support/Device.h).
using Device = ::estc::Device;

/// A CUDA model or kernel cannot run: no NVIDIA driver, no device, a device
/// index out of range, a missing cuBLAS/cuDNN, a runtime built without CUDA,
/// or a CUDA, cuBLAS or cuDNN call that failed (named with the library's
/// message). what() is one line starting "estc runtime: ".
class ESTC_RT_EXPORT DeviceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The CUDA device (`cuda:N`) that CUDA models constructed afterwards run on,
/// for the whole process; 0 by default. Each model uses the device's primary
/// context. A negative index throws std::invalid_argument; one the machine
/// does not have throws DeviceError when a model is constructed.
ESTC_RT_EXPORT void set_cuda_device(int device);
ESTC_RT_EXPORT int get_cuda_device();

/// Everything a CompiledModel needs to know about a model. Generated headers
/// keep it in constexpr tables; the JIT builds it from the manifest.
struct ModelSpec {
  const char *name;
  int32_t numVariables;
  const VariableSpec *variables;
  int32_t numFunctions;
  const FunctionSpec *functions;
  int32_t numChecks;
  const CheckSpec *checks;
  Device device = Device::Cpu;
  /// The replicas the training step was compiled for (estc --replicas=N;
  /// RunConfig's train_distribute): it averages its gradients over them
  /// through runtime/Collective.h. 0: one replica, no collectives.
  int32_t replicas = 0;
  /// Parameter-server training (docs/design/distributed.md, "Parameter
  /// servers"): the ps tasks of the cluster the model was compiled for (0:
  /// none), and the task whose apply function this model is (-1: a
  /// worker's step).
  int32_t psTasks = 0;
  int32_t psTask = -1;
  /// A worker's step: the tensors it pushes for the tasks' apply functions
  /// (runtime/ParameterClient.h's `input` indexes them; keys
  /// `grad/<var>`, `ids/<var>`, `rows/<var>`, `learning_rate/<k>`; a
  /// sparse gradient's number of rows is kValuesDim), and the variables it
  /// only pulls rows of (`variable` of pullRows indexes them; psTask set),
  /// which the worker does not hold.
  int32_t numPsInputs = 0;
  const TensorSpec *psInputs = nullptr;
  int32_t numPsRemote = 0;
  const VariableSpec *psRemote = nullptr;
  /// Synchronous parameter-server training (the step's optimizer is a
  /// SyncReplicasOptimizer): each ps task applies the mean of this many
  /// workers' pushes per step; 0: asynchronous (TF's default). And the
  /// workers there are (total_num_replicas; 0: as many).
  int32_t psReplicasToAggregate = 0;
  int32_t psTotalNumReplicas = 0;
};

/// A run-time check failed (TF's InvalidArgumentError): what() is one line,
/// `node 'loss' : label 3 at batch row 17 is outside [0, 3)`. The step
/// stopped before updating any variable.
class ESTC_RT_EXPORT InvalidArgumentError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// The message of check `check` failing on `value` at flat position
/// `position` of a tensor whose batch is `batch`.
ESTC_RT_EXPORT std::string checkFailureMessage(const CheckSpec &check,
                                               int64_t position, int64_t value,
                                               int64_t batch);

/// Elements of a tensor of `shape` for `batch` (kBatchDim dims = batch),
/// `values` (kValuesDim dims), `steps` (kStepsDim dims) and `length`
/// (kSequenceDim dims).
ESTC_RT_EXPORT int64_t numElements(int32_t rank, const int64_t *shape,
                                   int64_t batch, int64_t values = 0,
                                   int64_t steps = 1, int64_t length = 0);

/// Whether `fn` is a multi-step loop: an input's dimension 0 is kStepsDim.
ESTC_RT_EXPORT bool isStepLoop(const FunctionSpec &fn);

/// Whether `t` has a kSequenceDim dimension.
ESTC_RT_EXPORT bool hasSequenceDim(const TensorSpec &t);
/// Whether an input or output of `fn` has a kSequenceDim dimension.
ESTC_RT_EXPORT bool hasSequenceDim(const FunctionSpec &fn);

/// `void f(void **descriptors)`.
using EntryPoint = void (*)(void **);

class ESTC_RT_EXPORT CompiledModel {
public:
  /// `entries[i]` runs `spec.functions[i]`. Both must outlive the model.
  CompiledModel(const ModelSpec &spec, const EntryPoint *entries);
  /// As above, with the variables in the caller's buffers
  /// (`variables[i]` for variable i, 64-byte aligned, of variable_bytes(i)),
  /// not owned and not zeroed: several models share one copy of read-only
  /// variables (a served model's concurrent runners). They must outlive
  /// the model; a function that assigns a variable writes them.
  CompiledModel(const ModelSpec &spec, const EntryPoint *entries,
                void *const *variables);
  virtual ~CompiledModel();
  CompiledModel(const CompiledModel &) = delete;
  CompiledModel &operator=(const CompiledModel &) = delete;

  const ModelSpec &spec() const { return *spec_; }

  /// Sizes every function's input and output buffers and the arena for
  /// `batch` examples (buffers only grow; bound caller buffers are unbound).
  void set_batch(int64_t batch);
  /// The batch of the last set_batch(), or -1.
  int64_t batch() const { return batch_; }

  /// Sizes a sparse input (one whose dimension 0 is kValuesDim) for `n`
  /// values, n >= 0, until the next set_values of it (set_batch keeps it).
  void set_values(int function, int input, int64_t n);
  /// The number of values of a sparse input (0 until set_values).
  int64_t values(int function, int input) const;

  /// Sizes every sequence input and output (a kSequenceDim dimension) and
  /// the arena for sequences of `length` steps, length >= 1, until the next
  /// set_sequence_length (set_batch keeps it): the longest sequence of the
  /// padded batch, the same for every sequence input of a call. run() of a
  /// function with sequence inputs needs it, and refuses a length over an
  /// input's declared maximum (TensorSpec::maxSequenceLength).
  void set_sequence_length(int64_t length);
  /// The length of the last set_sequence_length(), or 0.
  int64_t sequence_length() const { return length_; }

  /// Sizes the staged inputs of a multi-step loop (a function whose inputs'
  /// dimension 0 is kStepsDim, e.g. `train_loop`) for `n` steps, n >= 1,
  /// until the next set_steps (set_batch keeps it). A call of the loop runs
  /// its step function n times, step i on row block i of every staged input;
  /// its outputs are the last step's. A failed run-time check stops the
  /// loop before that step's updates: steps before it keep theirs, and the
  /// error names the step.
  void set_steps(int function, int64_t n);
  /// The steps of a multi-step loop's next call (1 until set_steps).
  int64_t steps(int function) const;

  /// Bytes of temporaries one step of any function needs at `batch` (and
  /// `values` for the sparse inputs, `length` for the sequence inputs): the
  /// most the arena grows to at those sizes (it grows in run() to what the
  /// function run needs).
  int64_t arena_bytes(int64_t batch, int64_t values = 0,
                      int64_t length = 0) const;
  /// Bytes the arena holds now: what the largest run so far needed.
  int64_t arena_capacity() const {
    return static_cast<int64_t>(arena_.capacity);
  }
  /// Bytes of all variables.
  int64_t variable_bytes() const;
  /// Bytes of one variable.
  int64_t variable_bytes(int variable) const;

  /// Indices by name, or -1 for an unknown name.
  int find_function(const std::string &name) const;
  int find_variable(const std::string &name) const;
  int find_input(int function, const std::string &key) const;
  int find_output(int function, const std::string &key) const;

  /// Indices by name; throw std::invalid_argument for an unknown name.
  int function_index(const std::string &name) const;
  int variable_index(const std::string &name) const;
  int input_index(int function, const std::string &key) const;
  int output_index(int function, const std::string &key) const;

  void *variable_data(int variable);

  /// Zero-fills every local variable (metric state): what an evaluation does
  /// first, like running tf.local_variables_initializer(). Other variables
  /// are untouched.
  void reset_local_variables();
  void *input_data(int function, int input);
  void *output_data(int function, int output);

  /// Uses the caller's buffer for an input or output until the next
  /// set_batch(); `shape` is checked against the spec and the batch (a
  /// sparse input's dimension 0 sets its number of values). The
  /// buffers of one call must not overlap: run() throws if a bound one
  /// overlaps another input, output, variable or the arena.
  void bind_input(int function, int input, void *data,
                  const std::vector<int64_t> &shape);
  void bind_output(int function, int output, void *data,
                   const std::vector<int64_t> &shape);

  /// Runs one compiled function on the current buffers. Functions with a
  /// batch-dependent input or output need set_batch() first. Throws
  /// InvalidArgumentError when one of its run-time checks fails; the step
  /// then returned before any variable update.
  void run(int function);
  void run(const std::string &function) { run(function_index(function)); }

private:
  struct Buffer {
    std::unique_ptr<char, void (*)(void *)> owned{nullptr, nullptr};
    size_t capacity = 0;
    void *data = nullptr; // owned.get() or a bound caller buffer
  };
  struct FunctionState {
    std::vector<Buffer> inputs, outputs;
    std::vector<int64_t> values; // per input: its number of values
    int64_t steps = 1;           // a multi-step loop's steps (kStepsDim)
    std::vector<std::vector<int64_t>> descriptors; // one per argument
    std::vector<void *> args;
    /// What the CPU path last filled `descriptors` for: run() refills them
    /// only when the batch, the arena's size or the layout changed (a
    /// small model's step is short enough for the filling to show).
    int64_t filledBatch = -1, filledArenaBytes = -1;
    uint64_t filledLayout = 0;
  };

  struct CudaState; // runtime/cuda/CudaModel.cpp

  /// Grows `buffer` to `bytes` (64-byte aligned, zero-filled); a CUDA
  /// model's host buffers are pinned (reserveCudaHost).
  void reserve(Buffer &buffer, size_t bytes);
  /// Bytes of temporaries one step of `function` needs at these sizes.
  int64_t functionArenaBytes(int function, int64_t batch, int64_t values,
                             int64_t length) const;
  [[noreturn]] void fail(const std::string &message) const;
  /// Throws the InvalidArgumentError of the failed check in `status`.
  [[noreturn]] void throwCheckFailure(int function, const int64_t *status,
                                      int64_t batch) const;
  void checkShape(int function, const TensorSpec &tensor, const char *what,
                  const std::vector<int64_t> &shape) const;
  bool needsBatch(int function) const;
  /// Throws when a caller's buffer bound to `function` overlaps another
  /// buffer of the call (the compiled loops assume none do).
  void checkBoundBuffersDisjoint(int function, int64_t batch,
                                 int64_t values) const;
  /// The largest number of values of `function`'s sparse inputs.
  int64_t maxValues(int function) const;

  // The CUDA path (docs/design/gpu.md, "Memory"): runtime/cuda/CudaModel.cpp,
  // or runtime/cuda/CudaDisabled.cpp in a runtime built without CUDA.
  void initCuda(void *const *variables);
  void reserveCudaHost(Buffer &buffer, size_t bytes);
  void runCuda(int function, int64_t batch);
  void *cudaVariableData(int variable);
  void cudaResetLocalVariables();
  static void destroyCudaState(CudaState *state);

  /// Throws when `function` has sequence inputs and no length is set, or
  /// the length is over an input's declared maximum.
  void checkSequenceLength(int function) const;

  const ModelSpec *spec_;
  const EntryPoint *entries_;
  int64_t batch_ = -1;
  int64_t length_ = 0; // the sequence length (kSequenceDim); 0: not set
  /// Changes whenever a buffer moves (grows, is bound or unbound) or a
  /// sparse input's number of values changes: the descriptors filled
  /// before are then stale.
  uint64_t layout_ = 1;
  /// Whether a caller's buffer is bound (set_batch() then unbinds it, so
  /// it cannot skip a batch it already has).
  bool anyBound_ = false;
  std::vector<Buffer> variables_;
  Buffer arena_; // CPU only: a CUDA model's arena is device memory
  std::vector<FunctionState> functions_;
  /// Set for a CUDA model. Destroyed first (last member), before the pinned
  /// host buffers above.
  std::unique_ptr<CudaState, void (*)(CudaState *)> cuda_{nullptr, nullptr};
};

} // namespace estc::rt

#endif // ESTC_RUNTIME_COMPILEDMODEL_H
