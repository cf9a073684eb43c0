//===- CheckpointTesting.h - Tensors every checkpoint test saves -*- C++
//-*-===//
//
// What CheckpointTest (safetensors) and TensorBundleTest (TF's tensor
// bundle) both save and read back: one tensor of every numeric dtype a
// checkpoint holds, empty ones included.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_CHECKPOINTTESTING_H
#define ESTC_TEST_UNIT_CHECKPOINTTESTING_H

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Tensor/DType.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <string>
#include <vector>

namespace estc {
namespace testing {

/// The bytes of 16-bit values (float16 / bfloat16 bit patterns).
inline std::string u16Bytes(const std::vector<uint16_t> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * 2);
}

/// float32, float64, int32, int64, bool, float16, bfloat16 and two empty
/// tensors, under names a model has ("dense/kernel", "global_step").
inline train::VariableMap everyNumericDType() {
  train::VariableMap m;
  m["dense/kernel"] = TensorValue::of<float>({2, 3}, {1, 2, 3, 4, 5, -6.5f});
  m["f64"] = TensorValue::of<double>({}, {3.141592653589793});
  m["i32"] = TensorValue::of<int32_t>({4}, {1, -2, 3, 2147483647});
  m["global_step"] = TensorValue::of<int64_t>({}, {200});
  m["mask"] = TensorValue::of<bool>({3}, {true, false, true});
  m["half"] = TensorValue::from_bytes(
      DType::Float16, {2},
      u16Bytes({float_to_half(1.5f), float_to_half(-0.25f)}));
  m["bf16"] = TensorValue::from_bytes(
      DType::BFloat16, {1, 2},
      u16Bytes({float_to_bfloat16(2.0f), float_to_bfloat16(-1.0f)}));
  m["empty"] = TensorValue::of<float>({0}, {});
  m["empty2d"] = TensorValue::of<int64_t>({3, 0}, {});
  return m;
}

} // namespace testing
} // namespace estc

#endif // ESTC_TEST_UNIT_CHECKPOINTTESTING_H
