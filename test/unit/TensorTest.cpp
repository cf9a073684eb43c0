//===- TensorTest.cpp - DType and TensorValue (lib/Tensor) --------------===//

#include "lib/Tensor/DType.h"
#include "lib/Tensor/TensorValue.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace estc;

namespace {

constexpr DType kEveryDType[] = {DType::Float32, DType::Float64, DType::Int32,
                                 DType::Int64,   DType::Bool,    DType::Float16,
                                 DType::BFloat16};

TEST(DType, Names) {
  std::vector<std::string> names, safetensors;
  for (DType d : kEveryDType) {
    names.push_back(to_string(d));
    safetensors.push_back(safetensors_name(d));
    EXPECT_EQ(dtype_from_safetensors_name(safetensors_name(d)), d);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"f32", "f64", "i32", "i64", "i1",
                                             "f16", "bf16"}));
  EXPECT_EQ(safetensors, (std::vector<std::string>{"F32", "F64", "I32", "I64",
                                                   "BOOL", "F16", "BF16"}));
  EXPECT_EQ(to_string(DType::Invalid), "none");
  EXPECT_FALSE(dtype_from_safetensors_name("F8_E4M3"));
  EXPECT_FALSE(dtype_from_safetensors_name("f32"));
  EXPECT_THROW(safetensors_name(DType::Invalid), std::invalid_argument);
}

TEST(DType, SizesAndKinds) {
  std::vector<size_t> sizes;
  for (DType d : kEveryDType)
    sizes.push_back(dtype_size(d));
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 8, 4, 8, 1, 2, 2}));
  EXPECT_THROW(dtype_size(DType::Invalid), std::invalid_argument);
  EXPECT_TRUE(is_floating(DType::BFloat16));
  EXPECT_FALSE(is_floating(DType::Int32));
  EXPECT_TRUE(is_integer(DType::Int64));
  EXPECT_FALSE(is_integer(DType::Bool));
  EXPECT_EQ(static_cast<int>(DType::BFloat16), 7); // graph.proto's DataType
}

TEST(DType, HalfAndBFloat16) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);      // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00); // ties to even
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  for (uint32_t h = 0; h < 0x7c00; ++h) // every finite positive half
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0xc000), -2.0f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
}

TEST(TensorValue, Checks) {
  EXPECT_THROW(TensorValue::of<float>({2}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(TensorValue::from_bytes(DType::Float16, {3}, "abcd"),
               std::invalid_argument);
  TensorValue t = TensorValue::of<int32_t>({2}, {7, -1});
  EXPECT_EQ(t.values<int32_t>(), (std::vector<int32_t>{7, -1}));
  EXPECT_EQ(t.element(1), -1.0);
  try {
    t.values<float>();
    ADD_FAILURE() << "no std::invalid_argument";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "TensorValue::values: tensor is I32");
  }
  EXPECT_EQ(VariableSpec({DType::Float32, {2, 3}}).str(), "F32[2,3]");
  EXPECT_EQ(VariableSpec({DType::Int64, {}}).str(), "I64[]");
}

TEST(TensorValue, ElementOfEveryDType) {
  EXPECT_EQ(TensorValue::of<double>({2}, {0.5, -3}).element(1), -3.0);
  EXPECT_EQ(TensorValue::of<int64_t>({1}, {-7}).element(0), -7.0);
  EXPECT_EQ(TensorValue::of<bool>({2}, {false, true}).element(1), 1.0);
  uint16_t half = float_to_half(1.5f), bf16 = float_to_bfloat16(-2.0f);
  EXPECT_EQ(
      TensorValue::from_bytes(DType::Float16, {1},
                              std::string(reinterpret_cast<char *>(&half), 2))
          .element(0),
      1.5);
  EXPECT_EQ(
      TensorValue::from_bytes(DType::BFloat16, {1},
                              std::string(reinterpret_cast<char *>(&bf16), 2))
          .element(0),
      -2.0);
}

} // namespace
