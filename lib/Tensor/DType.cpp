//===- DType.cpp - The element types of host tensors --------------------===//

#include "lib/Tensor/DType.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace estc {

std::string to_string(DType d) {
  switch (d) {
  case DType::Float32:
    return "f32";
  case DType::Float64:
    return "f64";
  case DType::Int32:
    return "i32";
  case DType::Int64:
    return "i64";
  case DType::Bool:
    return "i1";
  case DType::Float16:
    return "f16";
  case DType::BFloat16:
    return "bf16";
  case DType::String:
    return "string";
  case DType::Invalid:
    break;
  }
  return "none";
}

const char *tf_name(DType d) {
  switch (d) {
  case DType::Float32:
    return "float32";
  case DType::Float64:
    return "float64";
  case DType::Int32:
    return "int32";
  case DType::Int64:
    return "int64";
  case DType::Bool:
    return "bool";
  case DType::Float16:
    return "float16";
  case DType::BFloat16:
    return "bfloat16";
  case DType::String:
    return "string";
  case DType::Invalid:
    break;
  }
  return "invalid";
}

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 ||
         d == DType::BFloat16;
}

bool is_integer(DType d) { return d == DType::Int32 || d == DType::Int64; }

namespace {
struct SafetensorsDType {
  DType dtype;
  const char *name;
  size_t size;
};
constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {DType::Float32, "F32", 4},   {DType::Float64, "F64", 8},
    {DType::Int32, "I32", 4},     {DType::Int64, "I64", 8},
    {DType::Bool, "BOOL", 1},     {DType::Float16, "F16", 2},
    {DType::BFloat16, "BF16", 2},
};
const SafetensorsDType &info(DType d) {
  for (const SafetensorsDType &i : kSafetensorsDTypes)
    if (i.dtype == d)
      return i;
  throw std::invalid_argument("invalid DType " +
                              std::to_string(static_cast<int>(d)));
}

uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
} // namespace

const char *safetensors_name(DType dtype) { return info(dtype).name; }
const char *dtype_name(DType dtype) {
  if (dtype == DType::String)
    return "STRING";
  if (dtype == DType::Invalid)
    return "INVALID";
  return info(dtype).name;
}
size_t dtype_size(DType dtype) { return info(dtype).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  if (name == "STRING")
    return DType::String;
  return dtype_from_safetensors_name(name);
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const SafetensorsDType &i : kSafetensorsDTypes)
    if (name == i.name)
      return i.dtype;
  return std::nullopt;
}

std::optional<DType> dtype_from_abi_name(std::string_view name) {
  if (name == "f32")
    return DType::Float32;
  if (name == "f64")
    return DType::Float64;
  if (name == "i32")
    return DType::Int32;
  if (name == "i64")
    return DType::Int64;
  if (name == "i1")
    return DType::Bool;
  return std::nullopt;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f)
    return bitsFloat(sign | 0x7f800000 | (mant << 13));
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_half(float value) {
  uint32_t x = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t a = x & 0x7fffffff;
  if (a >= 0x7f800000) // Inf or NaN
    return sign | (a > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (a >= 0x477ff000) // rounds to >= 65520: overflow to Inf
    return sign | 0x7c00;
  if (a < 0x38800000) { // below 2^-14: a half subnormal (or zero)
    float m = std::nearbyint(std::fabs(value) * 16777216.0f); // units of 2^-24
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t h = ((((a >> 23) - 112) << 10) | ((a & 0x7fffff) >> 13));
  uint32_t rem = a & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return sign | static_cast<uint16_t>(h);
}

float bfloat16_to_float(uint16_t bits) {
  return bitsFloat(uint32_t(bits) << 16);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x = floatBits(value);
  if ((x & 0x7fffffff) > 0x7f800000) // NaN stays a (quiet) NaN
    return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

} // namespace estc
