//===- TensorValue.h - A tensor's value on the host ---------------------===//
//
// TensorValue is what the host side of estc passes around as a tensor: the
// Estimator's features, labels, predictions and hook fetches, and the
// variables a checkpoint saves and restores. VariableSpec is its type (dtype
// and shape), written "F32[2,3]" in messages as in checkpoint files.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_TENSOR_TENSORVALUE_H
#define ESTC_LIB_TENSOR_TENSORVALUE_H

#include "lib/Tensor/DType.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace estc {

/// A shape as messages write it: "[2,3]", "[]" for a scalar (every
/// dimension as a number, -1 too).
std::string shape_string(const std::vector<int64_t> &shape);

/// The number of elements of `shape` (1 for a scalar).
inline int64_t shape_num_elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A tensor's type: dtype and shape (an empty shape is a scalar).
struct VariableSpec {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;

  int64_t num_elements() const { return shape_num_elements(shape); }
  /// "F32[2,3]"; a scalar is "F32[]" (dtype_name of the dtype).
  std::string str() const;
  bool operator==(const VariableSpec &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const VariableSpec &o) const { return !(*this == o); }
};

/// A tensor's value on the host: dtype, shape and the little-endian bytes
/// of its elements in row-major order; a String tensor holds its elements
/// in `strings` (row-major) and no `data`.
struct TensorValue {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::string data;
  std::vector<std::string> strings;

  VariableSpec spec() const { return {dtype, shape}; }
  int64_t num_elements() const { return shape_num_elements(shape); }

  /// From typed values (float, double, int32_t, int64_t, bool,
  /// std::string); throws std::invalid_argument when shape and value count
  /// disagree.
  template <typename T>
  static TensorValue of(std::vector<int64_t> shape,
                        const std::vector<T> &values) {
    static_assert(detail::dtypeOf<T>().has_value(),
                  "use from_bytes for Float16/BFloat16");
    if constexpr (std::is_same_v<T, std::string>) {
      return of_strings(std::move(shape), values);
    } else {
      TensorValue t;
      t.dtype = *detail::dtypeOf<T>();
      t.shape = std::move(shape);
      if (t.num_elements() != static_cast<int64_t>(values.size()))
        throw std::invalid_argument(
            "TensorValue::of: " + std::to_string(values.size()) +
            " values for shape " + t.spec().str());
      if constexpr (std::is_same_v<T, bool>) {
        for (bool b : values)
          t.data.push_back(b ? 1 : 0);
      } else {
        t.data.assign(reinterpret_cast<const char *>(values.data()),
                      values.size() * sizeof(T));
      }
      return t;
    }
  }

  /// A String tensor; std::invalid_argument when shape and value count
  /// disagree.
  static TensorValue of_strings(std::vector<int64_t> shape,
                                std::vector<std::string> values);

  /// From raw little-endian bytes of any numeric dtype; throws
  /// std::invalid_argument when the byte count is not dtype_size *
  /// num_elements.
  static TensorValue from_bytes(DType dtype, std::vector<int64_t> shape,
                                std::string data);

  /// The elements as T, which must match dtype (std::invalid_argument).
  template <typename T> std::vector<T> values() const {
    static_assert(detail::dtypeOf<T>().has_value(),
                  "use element() for Float16/BFloat16");
    if (*detail::dtypeOf<T>() != dtype)
      throw std::invalid_argument(
          std::string("TensorValue::values: tensor is ") + dtype_name(dtype));
    if constexpr (std::is_same_v<T, std::string>) {
      return strings;
    } else {
      std::vector<T> out(static_cast<size_t>(num_elements()));
      if constexpr (std::is_same_v<T, bool>) {
        for (size_t i = 0; i < out.size(); ++i)
          out[i] = data[i] != 0;
      } else if (!out.empty()) {
        std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
      }
      return out;
    }
  }

  /// Element i converted to double, for any dtype.
  double element(int64_t i) const;
};

} // namespace estc

#endif // ESTC_LIB_TENSOR_TENSORVALUE_H
