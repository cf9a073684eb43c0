//===- TensorBinding.cpp - Host tensors in and out of a CompiledModel ---===//

#include "runtime/binding/TensorBinding.h"

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace estc {
namespace binding {

namespace {

/// A compiled shape in messages: "[?,n,3]", "[?,T,3]" (? for the batch, n
/// for a sparse input's number of values, T for the sequence length).
std::string dimsString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + (shape[i] == rt::kValuesDim     ? std::string("n")
                           : shape[i] == rt::kSequenceDim ? std::string("T")
                           : shape[i] < 0 ? std::string("?")
                                          : std::to_string(shape[i]));
  return s + "]";
}

/// Compiled dimension `dim` for `batch` (kBatchDim), `values` (kValuesDim)
/// and `length` (kSequenceDim); another marker (a loop's kStepsDim) stays
/// as it is, negative.
int64_t concreteDim(int64_t dim, int64_t batch, int64_t values,
                    int64_t length) {
  return dim == rt::kBatchDim      ? batch
         : dim == rt::kValuesDim   ? values
         : dim == rt::kSequenceDim ? length
                                   : dim;
}

} // namespace

// --- Types -------------------------------------------------------------------

std::optional<DType> hostDType(rt::DType d) {
  switch (d) {
  case rt::DType::F32:
    return DType::Float32;
  case rt::DType::F64:
    return DType::Float64;
  case rt::DType::I32:
    return DType::Int32;
  case rt::DType::I64:
    return DType::Int64;
  case rt::DType::Bool:
    return DType::Bool;
  case rt::DType::I8:
    break;
  }
  return std::nullopt;
}

DType toHostDType(rt::DType d, std::string_view what) {
  if (std::optional<DType> dtype = hostDType(d))
    return *dtype;
  throw std::invalid_argument(std::string(what) +
                              ": i8 tensors cannot be checkpointed or "
                              "returned");
}

VariableSpec variableSpec(const rt::VariableSpec &v) {
  return {toHostDType(v.dtype, v.name),
          std::vector<int64_t>(v.shape, v.shape + v.rank)};
}

std::vector<int64_t> concreteShape(const rt::TensorSpec &t, int64_t batch,
                                   int64_t values, int64_t length) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  for (int64_t &d : shape)
    d = concreteDim(d, batch, values, length);
  return shape;
}

bool shapeMatches(const rt::TensorSpec &t, int64_t batch, int64_t values,
                  const std::vector<int64_t> &shape, int64_t length) {
  if (shape.size() != static_cast<size_t>(t.rank))
    return false;
  for (int32_t d = 0; d < t.rank; ++d)
    if (shape[static_cast<size_t>(d)] !=
        concreteDim(t.shape[d], batch, values, length))
      return false;
  return true;
}

std::string specString(const rt::TensorSpec &t) {
  return std::string(rt::dtypeName(t.dtype)) +
         dimsString(std::vector<int64_t>(t.shape, t.shape + t.rank));
}

std::string valueString(const TensorValue &t) {
  return to_string(t.dtype) + dimsString(t.shape);
}

// --- Inputs ------------------------------------------------------------------

InputBinding::InputBinding(const rt::CompiledModel &m, int fn) : fn_(fn) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  constexpr std::string_view kFeatures = "features/";
  for (int i = 0; i < f.numInputs; ++i) {
    Input in;
    in.spec = &f.inputs[i];
    std::string_view key = in.spec->key;
    if (key.starts_with(kFeatures)) {
      in.feature = std::string(key.substr(kFeatures.size()));
      ++numFeatures_;
    }
    in.dtype = hostDType(in.spec->dtype);
    in.values = in.spec->rank > 0 && in.spec->shape[0] == rt::kValuesDim;
    in.sequence = in.spec->rank > 1 && in.spec->shape[1] == rt::kSequenceDim;
    inputs_.push_back(std::move(in));
  }
}

int64_t InputBinding::values_of(size_t i, const TensorValue &value) const {
  return inputs_[i].values && !value.shape.empty() ? value.shape[0] : 0;
}

int64_t InputBinding::length_of(size_t i, const TensorValue &value) const {
  return inputs_[i].sequence && value.shape.size() > 1 ? value.shape[1] : 0;
}

bool InputBinding::shape_fits(size_t i, const TensorValue &value,
                              int64_t batch) const {
  return shapeMatches(*inputs_[i].spec, batch, values_of(i, value), value.shape,
                      length_of(i, value));
}

int64_t InputBinding::sequence_length(
    const std::vector<const TensorValue *> &values) const {
  int64_t length = 0;
  const Input *first = nullptr;
  for (size_t i = 0; i < inputs_.size() && i < values.size(); ++i) {
    const Input &in = inputs_[i];
    // A tensor of the wrong rank is left to shape_fits to report.
    if (!in.sequence || !values[i] || values[i]->shape.size() < 2)
      continue;
    int64_t n = values[i]->shape[1];
    std::string key = in.spec->key;
    if (n == 0)
      throw std::invalid_argument("input '" + key +
                                  "': an empty sequence (length 0; a "
                                  "sequence input needs at least one step)");
    if (in.spec->maxSequenceLength > 0 && n > in.spec->maxSequenceLength)
      throw std::invalid_argument("input '" + key + "': sequence length " +
                                  std::to_string(n) + " exceeds the maximum " +
                                  std::to_string(in.spec->maxSequenceLength) +
                                  " the model declares");
    if (first && n != length)
      throw std::invalid_argument(
          "inputs '" + std::string(first->spec->key) + "' and '" + key +
          "' have sequence lengths " + std::to_string(length) + " and " +
          std::to_string(n) +
          " (the sequence inputs of one call must have the same length)");
    if (!first) {
      first = &in;
      length = n;
    }
  }
  return length;
}

bool InputBinding::accepts(size_t i, const TensorValue &value,
                           int64_t batch) const {
  const Input &in = inputs_[i];
  return in.dtype && value.dtype == *in.dtype && shape_fits(i, value, batch);
}

void InputBinding::write(rt::CompiledModel &m, size_t i,
                         const TensorValue &value) const {
  int input = static_cast<int>(i);
  if (inputs_[i].values)
    m.set_values(fn_, input, values_of(i, value));
  if (!value.data.empty())
    std::memcpy(m.input_data(fn_, input), value.data.data(), value.data.size());
}

// --- Outputs and variables ---------------------------------------------------

TensorValue readOutput(rt::CompiledModel &m, int fn, int output) {
  TensorValue value;
  readOutput(m, fn, output, value);
  return value;
}

void readOutput(rt::CompiledModel &m, int fn, int output, TensorValue &into) {
  const rt::TensorSpec &t = m.spec().functions[fn].outputs[output];
  int64_t length = m.sequence_length();
  into.dtype = toHostDType(t.dtype, t.key);
  into.shape.resize(static_cast<size_t>(t.rank));
  size_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d) {
    int64_t size = concreteDim(t.shape[d], m.batch(), 0, length);
    if (size < 0) // a loop's kStepsDim: not one tensor of the host's
      throw std::invalid_argument(std::string("output '") + t.key +
                                  "': dimension " + std::to_string(d) +
                                  " is not a size of one step");
    into.shape[static_cast<size_t>(d)] = size;
    n *= static_cast<size_t>(size);
  }
  into.data.assign(static_cast<const char *>(m.output_data(fn, output)),
                   n * rt::dtypeBytes(t.dtype));
  into.strings.clear();
}

std::map<std::string, TensorValue> readOutputs(rt::CompiledModel &m, int fn) {
  std::map<std::string, TensorValue> out;
  const rt::FunctionSpec &f = m.spec().functions[fn];
  for (int o = 0; o < f.numOutputs; ++o)
    if (hostDType(f.outputs[o].dtype))
      out[f.outputs[o].key] = readOutput(m, fn, o);
  return out;
}

TensorValue readVariable(rt::CompiledModel &m, int index) {
  TensorValue value;
  readVariable(m, index, value);
  return value;
}

void readVariable(rt::CompiledModel &m, int index, TensorValue &into) {
  const rt::VariableSpec &v = m.spec().variables[index];
  into.dtype = toHostDType(v.dtype, v.name);
  into.shape.assign(v.shape, v.shape + v.rank);
  into.data.assign(static_cast<const char *>(m.variable_data(index)),
                   static_cast<size_t>(m.variable_bytes(index)));
  into.strings.clear();
}

} // namespace binding
} // namespace estc
