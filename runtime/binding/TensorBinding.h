//===- TensorBinding.h - Host tensors in and out of a CompiledModel -----===//
//
// The one place where host tensors (TensorValue, lib/Tensor) meet a compiled
// model (rt::CompiledModel): the host DType of a compiled tensor, a
// function's inputs bound by key (InputBinding: checked against the compiled
// dtypes and shapes, then copied in), and outputs and variables read back as
// TensorValues. The Estimator (estimator/) and the SavedModel loader
// (runtime/serving/) feed their models through it; each words its own errors
// from what the checks here say.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_BINDING_TENSORBINDING_H
#define ESTC_RUNTIME_BINDING_TENSORBINDING_H

#include "lib/Tensor/TensorValue.h"
#include "runtime/CompiledModel.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace binding {

// --- Types -------------------------------------------------------------------

/// The host DType of the runtime's `d`; nullopt for i8, which no host tensor
/// is.
std::optional<DType> hostDType(rt::DType d);

/// hostDType(d); for i8, std::invalid_argument "<what>: i8 tensors cannot be
/// checkpointed or returned".
DType toHostDType(rt::DType d, std::string_view what);

/// A compiled variable's type, as checkpoints write it (toHostDType).
VariableSpec variableSpec(const rt::VariableSpec &v);

/// `t`'s shape with its batch dimensions `batch`, its number of values
/// (dimension 0 of a sparse input) `values` and its sequence length
/// dimensions `length`.
std::vector<int64_t> concreteShape(const rt::TensorSpec &t, int64_t batch,
                                   int64_t values = 0, int64_t length = 0);

/// Whether `shape` is concreteShape(t, batch, values, length).
bool shapeMatches(const rt::TensorSpec &t, int64_t batch, int64_t values,
                  const std::vector<int64_t> &shape, int64_t length = 0);

/// `t`'s dtype and shape as messages write them: "f32[?,3]", "i64[n]",
/// "f32[?,T,8]" (? for the batch, n for a sparse input's number of values, T
/// for the sequence length).
std::string specString(const rt::TensorSpec &t);

/// A host tensor's dtype and shape in the same words: "f32[2,3]".
std::string valueString(const TensorValue &t);

// --- Inputs ------------------------------------------------------------------

/// The inputs of one compiled function, worked out once: a step feeds them
/// every call, and string work per input and call was a good part of a
/// small model's step.
class InputBinding {
public:
  struct Input {
    const rt::TensorSpec *spec = nullptr;
    /// The key without "features/"; nullopt for an input that is not a
    /// feature (the labels).
    std::optional<std::string> feature;
    /// The host dtype a fed tensor must have; nullopt for i8, which no host
    /// tensor is.
    std::optional<DType> dtype;
    /// A sparse input: dimension 0 is its number of values, which the fed
    /// tensor brings.
    bool values = false;
    /// A sequence input: dimension 1 is the sequence length, which the fed
    /// tensor brings (the same for every sequence input of a call).
    bool sequence = false;
  };

  InputBinding() = default;
  /// The inputs of `m`'s function `fn`.
  InputBinding(const rt::CompiledModel &m, int fn);

  int function() const { return fn_; }
  const std::vector<Input> &inputs() const { return inputs_; }
  size_t size() const { return inputs_.size(); }
  const Input &operator[](size_t i) const { return inputs_[i]; }
  /// The number of inputs that are features.
  size_t num_features() const { return numFeatures_; }

  /// The number of values `value` brings to input `i`: its dimension 0 when
  /// the input is sparse, else 0.
  int64_t values_of(size_t i, const TensorValue &value) const;
  /// The sequence length `value` brings to input `i`: its dimension 1 when
  /// the input is a sequence, else 0.
  int64_t length_of(size_t i, const TensorValue &value) const;
  /// Whether `value` has input `i`'s shape for the batch `batch` (and the
  /// values or sequence length it brings).
  bool shape_fits(size_t i, const TensorValue &value, int64_t batch) const;

  /// The sequence length of a call fed `values` (values[i] for input i;
  /// null for one not fed), or 0 when no fed input is a sequence. Throws
  /// std::invalid_argument, one line naming the inputs, when two sequence
  /// inputs have different lengths, one is empty (length 0), or the length
  /// is over an input's declared maximum (`input 'features/tokens':
  /// sequence length 70 exceeds the maximum 64 the model declares`).
  int64_t sequence_length(const std::vector<const TensorValue *> &values) const;
  /// Whether `value` has input `i`'s dtype and shape_fits.
  bool accepts(size_t i, const TensorValue &value, int64_t batch) const;

  /// Copies `value` into input `i` of `m`, sizing a sparse input for the
  /// values it brings first. The model's batch and sequence length
  /// (sequence_length) are set and `value` checked (accepts) by the caller.
  void write(rt::CompiledModel &m, size_t i, const TensorValue &value) const;

private:
  int fn_ = -1;
  std::vector<Input> inputs_;
  size_t numFeatures_ = 0;
};

// --- Outputs and variables ---------------------------------------------------

/// Output `output` of `fn` for the model's current batch and sequence length
/// (toHostDType: an i8 output throws, naming it).
TensorValue readOutput(rt::CompiledModel &m, int fn, int output);
/// readOutput into `into`, reusing its buffers (no allocation when they
/// already hold as much).
void readOutput(rt::CompiledModel &m, int fn, int output, TensorValue &into);

/// Every output of `fn` a host tensor can hold (i8 ones are left out), by
/// key, for the model's current batch.
std::map<std::string, TensorValue> readOutputs(rt::CompiledModel &m, int fn);

/// Variable `index`'s value (toHostDType: an i8 variable throws, naming it).
TensorValue readVariable(rt::CompiledModel &m, int index);
/// readVariable into `into`, reusing its buffers.
void readVariable(rt::CompiledModel &m, int index, TensorValue &into);

} // namespace binding
} // namespace estc

#endif // ESTC_RUNTIME_BINDING_TENSORBINDING_H
