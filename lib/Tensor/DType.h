//===- DType.h - The element types of host tensors ----------------------===//
//
// One DType for every host-side tensor in estc: the graph builder's tensors,
// the graph format (the values are graph.proto's DataType numbers, so a
// static_cast converts between the two), checkpoints and the Estimator's
// TensorValues. Its names: to_string gives the compiler's ("f32", "i1", as
// in docs/ops.md), safetensors_name the checkpoint files' ("F32", "BOOL").
// Compiled code has its own ABI enum, rt::DType (runtime/CompiledModel.h);
// the Estimator converts it in one place.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_TENSOR_DTYPE_H
#define ESTC_LIB_TENSOR_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace estc {

/// Element types; the values are graph.proto's DataType numbers.
enum class DType : int {
  Invalid = 0,
  Float32 = 1,
  Float64 = 2,
  Int32 = 3,
  Int64 = 4,
  Bool = 5,
  Float16 = 6,
  BFloat16 = 7,
  /// Byte strings: host-side only (input pipelines, parsed records); their
  /// TensorValues hold `strings`, not `data`.
  String = 8,
};

/// "f32", "f64", "i32", "i64", "i1", "f16", "bf16" as in docs/ops.md,
/// "string"; "none" for Invalid.
std::string to_string(DType dtype);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

/// TF's name of the dtype: "float32", "float64", "int32", "int64", "bool",
/// "float16", "bfloat16", "string" ("invalid" for Invalid).
const char *tf_name(DType dtype);

/// The safetensors names checkpoints use: "F32", "F64", "I32", "I64",
/// "BOOL", "F16", "BF16"; std::invalid_argument for Invalid and String
/// (checkpoints hold no strings).
const char *safetensors_name(DType dtype);
/// The name in messages and specs: the safetensors name, "STRING" for
/// String, "INVALID" for Invalid.
const char *dtype_name(DType dtype);
/// The DType of a dtype_name ("F32", "I64", "STRING", ...): how saved
/// models and specs name dtypes; nullopt for "INVALID" and unknown names.
std::optional<DType> dtype_from_name(std::string_view name);
/// The DType of a safetensors name; nullopt for a name estc does not read.
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
/// The DType of a compiled model's ABI name (the manifest's "f32", "f64",
/// "i32", "i64", "i1"); nullopt for others ("i8": no host dtype).
std::optional<DType> dtype_from_abi_name(std::string_view name);
/// Bytes per element (Bool: one byte, 0 or 1); std::invalid_argument for
/// Invalid and String (no fixed size).
size_t dtype_size(DType dtype);

/// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

namespace detail {
/// The DType of a C++ element type (float, double, int32_t, int64_t, bool).
template <typename T> constexpr std::optional<DType> dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, std::string>)
    return DType::String;
  else
    return std::nullopt;
}
} // namespace detail

} // namespace estc

#endif // ESTC_LIB_TENSOR_DTYPE_H
