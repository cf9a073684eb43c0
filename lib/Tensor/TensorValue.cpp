//===- TensorValue.cpp - A tensor's value on the host -------------------===//

#include "lib/Tensor/TensorValue.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "TensorValue holds little-endian bytes as they are in memory");

namespace estc {

std::string shape_string(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string VariableSpec::str() const {
  return dtype_name(dtype) + shape_string(shape);
}

TensorValue TensorValue::of_strings(std::vector<int64_t> shape,
                                    std::vector<std::string> values) {
  TensorValue t;
  t.dtype = DType::String;
  t.shape = std::move(shape);
  if (t.num_elements() != static_cast<int64_t>(values.size()))
    throw std::invalid_argument(
        "TensorValue::of_strings: " + std::to_string(values.size()) +
        " values for shape " + t.spec().str());
  t.strings = std::move(values);
  return t;
}

TensorValue TensorValue::from_bytes(DType dtype, std::vector<int64_t> shape,
                                    std::string data) {
  if (dtype == DType::String)
    throw std::invalid_argument(
        "TensorValue::from_bytes: string tensors are built with of_strings");
  TensorValue t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape)
    if (d < 0)
      throw std::invalid_argument(
          "TensorValue::from_bytes: negative dimension in " + t.spec().str());
  size_t want = static_cast<size_t>(t.num_elements()) * dtype_size(dtype);
  if (data.size() != want)
    throw std::invalid_argument(
        "TensorValue::from_bytes: " + std::to_string(data.size()) +
        " bytes for " + t.spec().str() + ", expected " + std::to_string(want));
  t.data = std::move(data);
  return t;
}

double TensorValue::element(int64_t i) const {
  const char *p = data.data() + static_cast<size_t>(i) * dtype_size(dtype);
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
  case DType::Float32:
    return load(float());
  case DType::Float64:
    return load(double());
  case DType::Int32:
    return load(int32_t());
  case DType::Int64:
    return static_cast<double>(load(int64_t()));
  case DType::Bool:
    return load(uint8_t()) ? 1.0 : 0.0;
  case DType::Float16:
    return half_to_float(load(uint16_t()));
  case DType::BFloat16:
    return bfloat16_to_float(load(uint16_t()));
  case DType::String:
    throw std::invalid_argument("TensorValue::element: a string tensor has no "
                                "numeric elements");
  case DType::Invalid:
    break;
  }
  return 0;
}

} // namespace estc
