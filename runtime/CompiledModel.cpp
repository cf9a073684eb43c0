//===- runtime/CompiledModel.cpp - What a compiled model runs on ----------===//

#include "runtime/CompiledModel.h"
#include "runtime/Collective.h"
#include "runtime/ParameterClient.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace estc::rt {

namespace {
/// The device CUDA models constructed next run on (runtime/cuda/Cuda.h): kept
/// here, beside the models, in runtimes built with or without CUDA.
std::atomic<int> gCudaDevice{0};
} // namespace

void set_cuda_device(int device) {
  if (device < 0)
    throw std::invalid_argument("set_cuda_device(" + std::to_string(device) +
                                "): a CUDA device index is 0 or more");
  gCudaDevice.store(device);
}

int get_cuda_device() { return gCudaDevice.load(); }

size_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::Bool:
    return 1;
  }
  return 1;
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "i1";
  }
  return "?";
}

int64_t numElements(int32_t rank, const int64_t *shape, int64_t batch,
                    int64_t values, int64_t steps, int64_t length) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d)
    n *= shape[d] == kBatchDim      ? batch
         : shape[d] == kValuesDim   ? values
         : shape[d] == kStepsDim    ? steps
         : shape[d] == kSequenceDim ? length
                                    : shape[d];
  return n;
}

bool hasSequenceDim(const TensorSpec &t) {
  for (int32_t d = 0; d < t.rank; ++d)
    if (t.shape[d] == kSequenceDim)
      return true;
  return false;
}

bool hasSequenceDim(const FunctionSpec &fn) {
  for (int32_t i = 0; i < fn.numInputs; ++i)
    if (hasSequenceDim(fn.inputs[i]))
      return true;
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    if (hasSequenceDim(fn.outputs[i]))
      return true;
  return fn.arenaPerStep != 0 || fn.arenaPerBatchStep != 0;
}

namespace {
constexpr size_t kAlignment = 64;

std::string shapeString(int32_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d)
      s += ", ";
    s += shape[d] == kBatchDim      ? std::string("batch")
         : shape[d] == kValuesDim   ? std::string("values")
         : shape[d] == kStepsDim    ? std::string("steps")
         : shape[d] == kSequenceDim ? std::string("length")
                                    : std::to_string(shape[d]);
  }
  return s + "]";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return shapeString(static_cast<int32_t>(shape.size()), shape.data());
}

/// Fills a memref descriptor {allocated, aligned, offset, sizes, strides} for
/// a row-major buffer.
void fillDescriptor(std::vector<int64_t> &desc, void *data, int32_t rank,
                    const int64_t *shape, int64_t batch, int64_t values = 0,
                    int64_t steps = 1, int64_t length = 0) {
  desc.assign(3 + 2 * static_cast<size_t>(rank), 0);
  int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  desc[0] = ptr;
  desc[1] = ptr;
  desc[2] = 0;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    int64_t size = shape[d] == kBatchDim      ? batch
                   : shape[d] == kValuesDim   ? values
                   : shape[d] == kStepsDim    ? steps
                   : shape[d] == kSequenceDim ? length
                                              : shape[d];
    desc[3 + d] = size;
    desc[3 + rank + d] = stride;
    stride *= size;
  }
}
} // namespace

CompiledModel::CompiledModel(const ModelSpec &spec, const EntryPoint *entries)
    : CompiledModel(spec, entries, nullptr) {}

CompiledModel::CompiledModel(const ModelSpec &spec, const EntryPoint *entries,
                             void *const *variables)
    : spec_(&spec), entries_(entries) {
  // A CUDA model's host buffers are pinned, so the driver comes first.
  if (spec.device == Device::Cuda)
    initCuda(variables);
  variables_.resize(spec.numVariables);
  for (int32_t i = 0; i < spec.numVariables; ++i) {
    if (variables) {
      variables_[i].data = variables[i];
      continue;
    }
    size_t bytes = static_cast<size_t>(variable_bytes(i));
    reserve(variables_[i], bytes);
    std::memset(variables_[i].data, 0, bytes);
  }
  functions_.resize(spec.numFunctions);
  for (int32_t f = 0; f < spec.numFunctions; ++f) {
    const FunctionSpec &fn = spec.functions[f];
    FunctionState &state = functions_[f];
    state.inputs.resize(fn.numInputs);
    state.values.assign(fn.numInputs, 0);
    state.outputs.resize(fn.numOutputs);
    size_t numArgs = 1 + spec.numVariables + fn.numInputs + fn.numOutputs;
    state.descriptors.resize(numArgs);
    state.args.resize(numArgs);
    // Functions without a batch (eval_metrics) can run at once.
    if (!needsBatch(f)) {
      for (int32_t i = 0; i < fn.numInputs; ++i)
        reserve(state.inputs[i],
                numElements(fn.inputs[i].rank, fn.inputs[i].shape, 0) *
                    dtypeBytes(fn.inputs[i].dtype));
      for (int32_t i = 0; i < fn.numOutputs; ++i)
        reserve(state.outputs[i],
                numElements(fn.outputs[i].rank, fn.outputs[i].shape, 0) *
                    dtypeBytes(fn.outputs[i].dtype));
    }
  }
  if (!cuda_)
    reserve(arena_, static_cast<size_t>(arena_bytes(0)));
}

CompiledModel::~CompiledModel() = default;

void CompiledModel::reserve(Buffer &buffer, size_t bytes) {
  if (bytes <= buffer.capacity && buffer.owned) {
    if (buffer.data != buffer.owned.get())
      ++layout_; // a bound caller buffer is unbound
    buffer.data = buffer.owned.get();
    return;
  }
  ++layout_;
  if (cuda_) {
    reserveCudaHost(buffer, bytes);
    return;
  }
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0)
    rounded = kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded);
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, rounded);
  buffer.owned = std::unique_ptr<char, void (*)(void *)>(static_cast<char *>(p),
                                                         std::free);
  buffer.capacity = rounded;
  buffer.data = p;
}

void CompiledModel::fail(const std::string &message) const {
  throw std::invalid_argument(std::string(spec_->name) + ": " + message);
}

bool isStepLoop(const FunctionSpec &fn) {
  for (int32_t i = 0; i < fn.numInputs; ++i)
    if (fn.inputs[i].rank > 0 && fn.inputs[i].shape[0] == kStepsDim)
      return true;
  return false;
}

bool CompiledModel::needsBatch(int function) const {
  const FunctionSpec &fn = spec_->functions[function];
  auto dynamic = [](const TensorSpec &t) {
    for (int32_t d = 0; d < t.rank; ++d)
      if (t.shape[d] == kBatchDim)
        return true;
    return false;
  };
  for (int32_t i = 0; i < fn.numInputs; ++i)
    if (dynamic(fn.inputs[i]))
      return true;
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    if (dynamic(fn.outputs[i]))
      return true;
  return fn.arenaPerBatch != 0;
}

void CompiledModel::set_batch(int64_t batch) {
  if (batch <= 0)
    fail("set_batch(" + std::to_string(batch) +
         "): the batch must be positive");
  // Every buffer already has this batch's size (sparse inputs grow in
  // set_values, the arena in run()): nothing to do, step after step.
  if (batch == batch_ && !anyBound_)
    return;
  batch_ = batch;
  anyBound_ = false;
  for (int32_t f = 0; f < spec_->numFunctions; ++f) {
    const FunctionSpec &fn = spec_->functions[f];
    for (int32_t i = 0; i < fn.numInputs; ++i)
      reserve(functions_[f].inputs[i],
              numElements(fn.inputs[i].rank, fn.inputs[i].shape, batch,
                          functions_[f].values[i], functions_[f].steps,
                          length_) *
                  dtypeBytes(fn.inputs[i].dtype));
    for (int32_t i = 0; i < fn.numOutputs; ++i)
      reserve(functions_[f].outputs[i],
              numElements(fn.outputs[i].rank, fn.outputs[i].shape, batch, 0, 1,
                          length_) *
                  dtypeBytes(fn.outputs[i].dtype));
  }
  // The arena grows in run(), to what the function run needs: an
  // evaluation at a large batch does not size it for the train step's
  // temporaries at that batch.
}

void CompiledModel::set_sequence_length(int64_t length) {
  if (length < 1)
    fail("set_sequence_length(" + std::to_string(length) +
         "): a sequence length must be positive (an empty sequence has no "
         "steps to compute)");
  if (length == length_)
    return;
  length_ = length;
  ++layout_; // the descriptors of the sequence tensors change
  int64_t batch = std::max<int64_t>(batch_, 0);
  for (int32_t f = 0; f < spec_->numFunctions; ++f) {
    const FunctionSpec &fn = spec_->functions[f];
    FunctionState &state = functions_[f];
    // A bound caller buffer of a sequence tensor has the old length: it
    // goes back to the model's own buffer, as set_batch does.
    for (int32_t i = 0; i < fn.numInputs; ++i)
      if (hasSequenceDim(fn.inputs[i]))
        reserve(state.inputs[i],
                numElements(fn.inputs[i].rank, fn.inputs[i].shape, batch,
                            state.values[i], state.steps, length) *
                    dtypeBytes(fn.inputs[i].dtype));
    for (int32_t i = 0; i < fn.numOutputs; ++i)
      if (hasSequenceDim(fn.outputs[i]))
        reserve(state.outputs[i],
                numElements(fn.outputs[i].rank, fn.outputs[i].shape, batch, 0,
                            1, length) *
                    dtypeBytes(fn.outputs[i].dtype));
  }
}

void CompiledModel::checkSequenceLength(int function) const {
  const FunctionSpec &fn = spec_->functions[function];
  if (!hasSequenceDim(fn))
    return;
  if (length_ < 1)
    throw std::logic_error(std::string(spec_->name) + ": " + fn.name +
                           ": call set_sequence_length() before running");
  for (int32_t i = 0; i < fn.numInputs; ++i) {
    const TensorSpec &t = fn.inputs[i];
    if (t.maxSequenceLength > 0 && length_ > t.maxSequenceLength)
      fail(std::string(fn.name) + ": input '" + t.key + "': sequence length " +
           std::to_string(length_) + " exceeds the maximum " +
           std::to_string(t.maxSequenceLength) + " the model declares");
  }
}

void CompiledModel::set_values(int function, int input, int64_t n) {
  if (function < 0 || function >= spec_->numFunctions)
    fail("set_values(" + std::to_string(function) + "): no such function");
  const FunctionSpec &fn = spec_->functions[function];
  if (input < 0 || input >= fn.numInputs)
    fail(std::string(fn.name) + ": set_values: no input " +
         std::to_string(input));
  const TensorSpec &t = fn.inputs[input];
  if (t.rank == 0 || t.shape[0] != kValuesDim)
    fail(std::string(fn.name) + ": input '" + t.key +
         "' is not sparse (its dimension 0 is not a number of values)");
  if (n < 0)
    fail(std::string(fn.name) + ": input '" + t.key +
         "': " + std::to_string(n) + " values");
  FunctionState &state = functions_[function];
  if (state.values[input] != n)
    ++layout_;
  state.values[input] = n;
  reserve(state.inputs[input],
          numElements(t.rank, t.shape, std::max<int64_t>(batch_, 0), n, 1,
                      length_) *
              dtypeBytes(t.dtype));
}

int64_t CompiledModel::values(int function, int input) const {
  return functions_.at(function).values.at(input);
}

void CompiledModel::set_steps(int function, int64_t n) {
  if (function < 0 || function >= spec_->numFunctions)
    fail("set_steps(" + std::to_string(function) + "): no such function");
  const FunctionSpec &fn = spec_->functions[function];
  if (!isStepLoop(fn))
    fail(std::string(fn.name) +
         ": set_steps: not a multi-step loop (no input's dimension 0 is its "
         "number of steps)");
  if (n < 1)
    fail(std::string(fn.name) + ": set_steps(" + std::to_string(n) +
         "): a loop runs at least one step");
  FunctionState &state = functions_[function];
  if (state.steps != n)
    ++layout_; // the staged inputs' descriptors change
  state.steps = n;
  for (int32_t i = 0; i < fn.numInputs; ++i)
    reserve(state.inputs[i], numElements(fn.inputs[i].rank, fn.inputs[i].shape,
                                         std::max<int64_t>(batch_, 0),
                                         state.values[i], n, length_) *
                                 dtypeBytes(fn.inputs[i].dtype));
}

int64_t CompiledModel::steps(int function) const {
  return functions_.at(function).steps;
}

int64_t CompiledModel::maxValues(int function) const {
  const std::vector<int64_t> &values = functions_[function].values;
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

int64_t CompiledModel::arena_bytes(int64_t batch, int64_t values,
                                   int64_t length) const {
  int64_t bytes = 0;
  for (int32_t f = 0; f < spec_->numFunctions; ++f)
    bytes = std::max(bytes, functionArenaBytes(f, batch, values, length));
  return bytes;
}

int64_t CompiledModel::functionArenaBytes(int function, int64_t batch,
                                          int64_t values,
                                          int64_t length) const {
  const FunctionSpec &fn = spec_->functions[function];
  return fn.arenaStatic + fn.arenaPerBatch * batch + fn.arenaPerValue * values +
         fn.arenaPerStep * length + fn.arenaPerBatchStep * batch * length;
}

int64_t CompiledModel::variable_bytes() const {
  int64_t bytes = 0;
  for (int32_t i = 0; i < spec_->numVariables; ++i)
    bytes += variable_bytes(i);
  return bytes;
}

int64_t CompiledModel::variable_bytes(int variable) const {
  const VariableSpec &v = spec_->variables[variable];
  return numElements(v.rank, v.shape, 0) * dtypeBytes(v.dtype);
}

int CompiledModel::find_function(const std::string &name) const {
  for (int32_t f = 0; f < spec_->numFunctions; ++f)
    if (name == spec_->functions[f].name)
      return f;
  return -1;
}

int CompiledModel::find_variable(const std::string &name) const {
  for (int32_t i = 0; i < spec_->numVariables; ++i)
    if (name == spec_->variables[i].name)
      return i;
  return -1;
}

int CompiledModel::find_input(int function, const std::string &key) const {
  const FunctionSpec &fn = spec_->functions[function];
  for (int32_t i = 0; i < fn.numInputs; ++i)
    if (key == fn.inputs[i].key)
      return i;
  return -1;
}

int CompiledModel::find_output(int function, const std::string &key) const {
  const FunctionSpec &fn = spec_->functions[function];
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    if (key == fn.outputs[i].key)
      return i;
  return -1;
}

int CompiledModel::function_index(const std::string &name) const {
  int f = find_function(name);
  if (f < 0)
    fail("no compiled function '" + name + "'");
  return f;
}

int CompiledModel::variable_index(const std::string &name) const {
  int i = find_variable(name);
  if (i < 0)
    fail("no variable '" + name + "'");
  return i;
}

int CompiledModel::input_index(int function, const std::string &key) const {
  int i = find_input(function, key);
  if (i < 0)
    fail(std::string(spec_->functions[function].name) + ": no input '" + key +
         "'");
  return i;
}

int CompiledModel::output_index(int function, const std::string &key) const {
  int i = find_output(function, key);
  if (i < 0)
    fail(std::string(spec_->functions[function].name) + ": no output '" + key +
         "'");
  return i;
}

void *CompiledModel::variable_data(int variable) {
  if (cuda_)
    return cudaVariableData(variable);
  return variables_.at(variable).data;
}

void CompiledModel::reset_local_variables() {
  if (cuda_) {
    cudaResetLocalVariables();
    return;
  }
  for (int32_t i = 0; i < spec_->numVariables; ++i)
    if (spec_->variables[i].local)
      std::memset(variables_[i].data, 0,
                  static_cast<size_t>(variable_bytes(i)));
}

void *CompiledModel::input_data(int function, int input) {
  return functions_.at(function).inputs.at(input).data;
}

void *CompiledModel::output_data(int function, int output) {
  return functions_.at(function).outputs.at(output).data;
}

void CompiledModel::checkShape(int function, const TensorSpec &tensor,
                               const char *what,
                               const std::vector<int64_t> &shape) const {
  const FunctionSpec &fn = spec_->functions[function];
  bool ok = static_cast<int32_t>(shape.size()) == tensor.rank;
  for (int32_t d = 0; ok && d < tensor.rank; ++d) {
    if (tensor.shape[d] == kValuesDim)
      ok = shape[d] >= 0;
    else if (tensor.shape[d] == kStepsDim)
      ok = shape[d] == functions_[function].steps;
    else if (tensor.shape[d] == kSequenceDim)
      ok = length_ > 0 && shape[d] == length_;
    else if (tensor.shape[d] == kBatchDim)
      ok = batch_ > 0 && shape[d] == batch_;
    else
      ok = shape[d] == tensor.shape[d];
  }
  if (!ok) {
    std::string batch =
        batch_ > 0 ? " with batch " + std::to_string(batch_) : "";
    if (length_ > 0 && hasSequenceDim(tensor))
      batch += " and sequence length " + std::to_string(length_);
    fail(std::string(fn.name) + ": " + what + " '" + tensor.key +
         "': expected shape " + shapeString(tensor.rank, tensor.shape) + batch +
         ", got " + shapeString(shape));
  }
}

void CompiledModel::bind_input(int function, int input, void *data,
                               const std::vector<int64_t> &shape) {
  const TensorSpec &t = spec_->functions[function].inputs[input];
  checkShape(function, t, "input", shape);
  if (t.rank > 0 && t.shape[0] == kValuesDim)
    functions_[function].values[input] = shape[0];
  functions_[function].inputs[input].data = data;
  anyBound_ = true;
  ++layout_;
}

void CompiledModel::bind_output(int function, int output, void *data,
                                const std::vector<int64_t> &shape) {
  checkShape(function, spec_->functions[function].outputs[output], "output",
             shape);
  functions_[function].outputs[output].data = data;
  anyBound_ = true;
  ++layout_;
}

void CompiledModel::checkBoundBuffersDisjoint(int function, int64_t batch,
                                              int64_t values) const {
  const FunctionSpec &fn = spec_->functions[function];
  const FunctionState &state = functions_[function];
  enum Kind { Arena, Variable, Input, Output };
  struct Range {
    const char *begin;
    size_t bytes;
    bool bound;
    Kind kind;
    int32_t index;
  };
  std::vector<Range> ranges;
  auto tensorBytes = [&](const TensorSpec &t, int64_t n) {
    return static_cast<size_t>(
               numElements(t.rank, t.shape, batch, n, state.steps, length_)) *
           dtypeBytes(t.dtype);
  };
  auto add = [&](const Buffer &buffer, size_t bytes, Kind kind, int32_t i) {
    ranges.push_back({static_cast<const char *>(buffer.data), bytes,
                      buffer.data != buffer.owned.get(), kind, i});
  };
  add(arena_,
      static_cast<size_t>(functionArenaBytes(function, batch, values, length_)),
      Arena, 0);
  for (int32_t i = 0; i < spec_->numVariables; ++i)
    add(variables_[i], static_cast<size_t>(variable_bytes(i)), Variable, i);
  for (int32_t i = 0; i < fn.numInputs; ++i)
    add(state.inputs[i], tensorBytes(fn.inputs[i], state.values[i]), Input, i);
  for (int32_t i = 0; i < fn.numOutputs; ++i)
    add(state.outputs[i], tensorBytes(fn.outputs[i], 0), Output, i);
  auto describe = [&](const Range &r) -> std::string {
    switch (r.kind) {
    case Arena:
      return "the arena";
    case Variable:
      return std::string("variable '") + spec_->variables[r.index].name + "'";
    case Input:
      return std::string("input '") + fn.inputs[r.index].key + "'";
    case Output:
      return std::string("output '") + fn.outputs[r.index].key + "'";
    }
    return "";
  };
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (!ranges[i].bound || ranges[i].bytes == 0)
      continue;
    for (size_t j = 0; j < ranges.size(); ++j) {
      if (j == i || ranges[j].bytes == 0 || (ranges[j].bound && j < i))
        continue;
      const Range &a = ranges[i], &b = ranges[j];
      if (a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes)
        fail(std::string(fn.name) + ": bound " + describe(a) + " overlaps " +
             describe(b) + " (the buffers of one call must not overlap)");
    }
  }
}

void CompiledModel::run(int function) {
  if (function < 0 || function >= spec_->numFunctions)
    fail("run(" + std::to_string(function) + "): no such function");
  const FunctionSpec &fn = spec_->functions[function];
  if (batch_ <= 0 && needsBatch(function))
    throw std::logic_error(std::string(spec_->name) + ": " + fn.name +
                           ": call set_batch() before running");
  int64_t batch = batch_ > 0 ? batch_ : 0;
  checkSequenceLength(function);
  if (cuda_) {
    runCuda(function, batch);
    return;
  }
  FunctionState &state = functions_[function];
  // The arena holds this function's temporaries at this batch, number of
  // sparse values and sequence length: it grows when they need more (one
  // arena for every function, as large as the largest run so far; step
  // after step it is already large enough).
  int64_t values = maxValues(function);
  int64_t arenaBytes = functionArenaBytes(function, batch, values, length_);
  reserve(arena_, static_cast<size_t>(arenaBytes));
  auto isBound = [](const Buffer &b) { return b.data != b.owned.get(); };
  if (std::any_of(state.inputs.begin(), state.inputs.end(), isBound) ||
      std::any_of(state.outputs.begin(), state.outputs.end(), isBound))
    checkBoundBuffersDisjoint(function, batch, values);
  // The descriptors depend on the buffers' addresses, the batch, the
  // sparse inputs' numbers of values and the arena's size: the same as at
  // the last call (the common case, step after step), they still hold.
  if (state.filledLayout != layout_ || state.filledBatch != batch ||
      state.filledArenaBytes != arenaBytes) {
    size_t a = 0;
    int64_t arenaSize[] = {arenaBytes};
    fillDescriptor(state.descriptors[a++], arena_.data, 1, arenaSize, batch);
    for (int32_t i = 0; i < spec_->numVariables; ++i) {
      const VariableSpec &v = spec_->variables[i];
      fillDescriptor(state.descriptors[a++], variables_[i].data, v.rank,
                     v.shape, batch);
    }
    for (int32_t i = 0; i < fn.numInputs; ++i)
      fillDescriptor(state.descriptors[a++], state.inputs[i].data,
                     fn.inputs[i].rank, fn.inputs[i].shape, batch,
                     state.values[i], state.steps, length_);
    for (int32_t i = 0; i < fn.numOutputs; ++i)
      fillDescriptor(state.descriptors[a++], state.outputs[i].data,
                     fn.outputs[i].rank, fn.outputs[i].shape, batch, 0, 1,
                     length_);
    for (size_t i = 0; i < state.args.size(); ++i)
      state.args[i] = state.descriptors[i].data();
    state.filledLayout = layout_;
    state.filledBatch = batch;
    state.filledArenaBytes = arenaBytes;
  }
  int64_t *status =
      fn.hasChecks ? reinterpret_cast<int64_t *>(
                         static_cast<char *>(arena_.data) + fn.statusOffset)
                   : nullptr;
  if (status)
    status[0] = 0;
  entries_[function](state.args.data());
  // A collective of the step failed (a lost replica): its results are not
  // the step's, whatever else happened.
  if (const char *lost = estc_collective_error())
    throw CollectiveError(lost);
  // So did a pull or push of a parameter-server worker's step.
  if (const char *failed = estc_ps_error())
    throw ParameterServerError(failed);
  if (!status || status[0] == 0)
    return;
  throwCheckFailure(function, status, batch);
}

void CompiledModel::throwCheckFailure(int function, const int64_t *status,
                                      int64_t batch) const {
  int64_t check = status[0] - 1;
  const FunctionSpec &fn = spec_->functions[function];
  if (check < 0 || check >= spec_->numChecks)
    fail(std::string(fn.name) + ": run-time check " + std::to_string(check) +
         " failed, but the model has no such check");
  std::string message =
      checkFailureMessage(spec_->checks[check], status[1], status[2], batch);
  // A multi-step loop wrote the step that failed into the slot's 4th word.
  if (isStepLoop(fn))
    message += " (in step " + std::to_string(status[3] + 1) + " of " +
               std::to_string(functions_[function].steps) + " of " + fn.name +
               "; the steps before it were applied)";
  throw InvalidArgumentError(message);
}

std::string checkFailureMessage(const CheckSpec &check, int64_t position,
                                int64_t value, int64_t batch) {
  // Row-major coordinates of `position` in the checked tensor.
  std::vector<int64_t> coords(check.rank);
  int64_t rest = position;
  for (int32_t d = check.rank - 1; d >= 0; --d) {
    int64_t size = check.shape[d] == kBatchDim ? batch : check.shape[d];
    coords[d] = size > 0 ? rest % size : 0;
    rest = size > 0 ? rest / size : 0;
  }
  std::string where;
  bool batchMajor = check.rank > 0 && check.shape[0] == kBatchDim;
  if (check.rank == 0) {
    where = "";
  } else if (check.rank == 1) {
    where = (batchMajor ? " at batch row " : " at index ") +
            std::to_string(coords[0]);
  } else {
    where = batchMajor ? " at batch row " + std::to_string(coords[0]) + ", "
                       : std::string(" at ");
    where += "index [";
    for (int32_t d = 0; d < check.rank; ++d)
      where += (d ? ", " : "") + std::to_string(coords[d]);
    where += "]";
  }
  std::string node = check.node && *check.node ? check.node : "<unnamed>";
  return "node '" + node + "' : " + check.what + " " + std::to_string(value) +
         where + " is outside [" + std::to_string(check.lower) + ", " +
         std::to_string(check.upper) + ")";
}

} // namespace estc::rt
