//===- HeaderGeneratorTest.cpp - The generated C++ header -----------------===//
//
// The golden MLP header (test/golden/Mlp.h, also diffed by the lit test
// aot-header.test) is compiled here against stub entry points that check the
// descriptors CompiledModel passes: arena, every variable, inputs, outputs
// (docs/design/codegen-abi.md). Then generateHeader() on small manifests.
//
//===----------------------------------------------------------------------===//

#include "test/golden/Mlp.h"

#include "compiler/Target/HeaderGenerator.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

int predictCalls = 0, evalMetricsCalls = 0;

int64_t word(void *descriptor, int i) {
  return static_cast<int64_t *>(descriptor)[i];
}

} // namespace

// Stub entry points for the golden header.
extern "C" void Mlp_predict_packed(void **args) {
  ++predictCalls;
  // arena: memref<?xi8>; arena sizes are 0 in --emit=header mode.
  EXPECT_EQ(word(args[0], 3), 0);
  // dense/kernel: 784x256, row major.
  EXPECT_EQ(word(args[1], 3), 784);
  EXPECT_EQ(word(args[1], 4), 256);
  EXPECT_EQ(word(args[1], 5), 256);
  EXPECT_EQ(word(args[1], 6), 1);
  EXPECT_EQ(word(args[1], 0) % 64, 0); // 64-byte aligned
  EXPECT_EQ(word(args[1], 0), word(args[1], 1));
  EXPECT_EQ(word(args[1], 2), 0); // offset
  // accuracy/total: rank 0 (3 words).
  EXPECT_EQ(word(args[7], 2), 0);
  // global_step: i64 rank 0, after the graph's variables; then the Adam
  // slots.
  EXPECT_EQ(word(args[9], 2), 0);
  // features/x (after the 23 variables): 5x784.
  EXPECT_EQ(word(args[24], 3), 5);
  EXPECT_EQ(word(args[24], 4), 784);
  float *x = reinterpret_cast<float *>(word(args[24], 1));
  // predictions/classes: 5; predictions/probabilities: 5x10.
  EXPECT_EQ(word(args[25], 3), 5);
  EXPECT_EQ(word(args[26], 3), 5);
  EXPECT_EQ(word(args[26], 4), 10);
  int64_t *classes = reinterpret_cast<int64_t *>(word(args[25], 1));
  float *kernel = reinterpret_cast<float *>(word(args[1], 1));
  for (int i = 0; i < 5; ++i)
    classes[i] = static_cast<int64_t>(x[i * 784] + kernel[0]);
}
extern "C" void Mlp_eval_packed(void **) {}
extern "C" void Mlp_train_packed(void **) {}
extern "C" void Mlp_init_packed(void **) {}
extern "C" void Mlp_eval_metrics_packed(void **args) {
  ++evalMetricsCalls;
  float *total = reinterpret_cast<float *>(word(args[7], 1));
  float *count = reinterpret_cast<float *>(word(args[8], 1));
  float *accuracy = reinterpret_cast<float *>(word(args[24], 1));
  *accuracy = *total / *count;
}

namespace {

TEST(GoldenMlpHeader, Metadata) {
  // 8 graph variables, global_step, 12 Adam slots and Adam's beta1_power
  // and beta2_power.
  static_assert(Mlp::kNumVariables == 23);
  static_assert(Mlp::kNumFunctions == 5);
  static_assert(Mlp::var_dense_kernel_shape[0] == 784);
  static_assert(Mlp::var_dense_kernel_count == 784 * 256);
  static_assert(Mlp::var_accuracy_total_shape.size() == 0);
  static_assert(Mlp::predict_arg_features_x_shape[0] == -1);
  static_assert(
      Mlp::kVariableBytes ==
      4 * (3 * (784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10) + 4) + 8);
  Mlp model;
  const estc::rt::ModelSpec &spec = model.spec();
  EXPECT_STREQ(spec.name, "Mlp");
  EXPECT_STREQ(spec.variables[0].name, "dense/kernel");
  EXPECT_TRUE(spec.variables[0].trainable);
  EXPECT_FALSE(spec.variables[6].trainable);
  EXPECT_FALSE(spec.variables[0].local);
  EXPECT_TRUE(spec.variables[6].local);  // accuracy/total
  EXPECT_TRUE(spec.variables[7].local);  // accuracy/count
  EXPECT_FALSE(spec.variables[8].local); // global_step
  EXPECT_STREQ(spec.functions[Mlp::k_predict].outputs[1].key,
               "predictions/probabilities");
  EXPECT_EQ(model.variable_bytes(), Mlp::kVariableBytes);
}

TEST(GoldenMlpHeader, RunsEntryPointsWithDescriptors) {
  Mlp model;
  EXPECT_THROW(model.predict(), std::logic_error);
  model.set_batch(5);
  model.var_dense_kernel()[0] = 0.5f;
  for (int i = 0; i < 5; ++i)
    model.predict_arg_features_x()[i * 784] = static_cast<float>(i);
  model.predict();
  EXPECT_EQ(predictCalls, 1);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(model.predict_result_predictions_classes()[i], i);

  // No batch needed for eval_metrics; variables persist.
  *model.var_accuracy_total() = 3;
  *model.var_accuracy_count() = 4;
  model.eval_metrics();
  EXPECT_EQ(*model.eval_metrics_result_metrics_accuracy(), 0.75f);
  EXPECT_EQ(model.var_dense_kernel()[0], 0.5f);
}

TEST(GoldenMlpHeader, ResetLocalVariablesZeroesOnlyMetricState) {
  Mlp model;
  *model.var_accuracy_total() = 3;
  *model.var_accuracy_count() = 4;
  model.var_dense_kernel()[7] = 0.25f;
  *model.var_global_step() = 12;
  model.reset_local_variables();
  EXPECT_EQ(*model.var_accuracy_total(), 0.0f);
  EXPECT_EQ(*model.var_accuracy_count(), 0.0f);
  EXPECT_EQ(model.var_dense_kernel()[7], 0.25f);
  EXPECT_EQ(*model.var_global_step(), 12);
}

TEST(HeaderGenerator, NamesAreSanitizedAndUnique) {
  estc::Manifest m;
  m.name = "Tiny";
  m.variables.push_back(
      {"a/b", estc::rt::DType::F64, {2}, true, false, "", {}});
  m.variables.push_back(
      {"a_b", estc::rt::DType::I32, {}, false, true, "zeros", {}});
  estc::FunctionInfo f;
  f.name = "run"; // a CompiledModel method
  f.inputs.push_back({"x-1", estc::rt::DType::Bool, {-1}});
  m.functions.push_back(f);
  std::string h = estc::generateHeader(m);
  EXPECT_NE(h.find("double *var_a_b() {"), std::string::npos) << h;
  EXPECT_NE(h.find("int32_t *var_a_b_2() {"), std::string::npos) << h;
  EXPECT_NE(h.find("void run_2() { run(k_run_2); }"), std::string::npos) << h;
  EXPECT_NE(h.find("bool *run_2_arg_x_1() {"), std::string::npos) << h;
  EXPECT_NE(h.find("void Tiny_run_packed(void **args);"), std::string::npos);
  EXPECT_NE(
      h.find("{\"a/b\", estc::rt::DType::F64, 1, kVarShape0, true, false},"),
      std::string::npos)
      << h;
  EXPECT_NE(h.find("{\"a_b\", estc::rt::DType::I32, 0, nullptr, false, true},"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("// a_b: i32[], local, initializer zeros"),
            std::string::npos)
      << h;
}

TEST(HeaderGenerator, EmptyModel) {
  estc::Manifest m;
  m.name = "Empty";
  std::string h = estc::generateHeader(m);
  EXPECT_NE(h.find("class Empty : public estc::rt::CompiledModel"),
            std::string::npos);
  EXPECT_NE(h.find("kNumFunctions = 0"), std::string::npos);
}

} // namespace
