//===- InitializersTest.cpp - The compiled @init against the reference ---===//
//
// One variable per initializer kind, compiled by the whole pipeline (the
// `est` stage builds @init, compiler/Transforms/CreateInitFunction.cpp) and
// run by the JIT: the values match the reference evaluator's
// initialize_variables() (relative 1e-5), have the distributions TF's
// initializers have, and are bit-identical for 1 and 2 runtime threads and
// across two compiles.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "runtime/cpu/Kernels.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

/// A variable of the test graph: name, dtype, shape, initializer.
struct Var {
  std::string name;
  DType dtype;
  Dims shape;
  Initializer init;
};

std::vector<Var> testVariables() {
  return {
      {"zeros", DType::Float32, {3, 4}, zeros_initializer()},
      {"ones", DType::Float32, {5}, ones_initializer()},
      {"constant", DType::Float32, {2, 3}, constant_initializer(2.5)},
      {"constant_scalar", DType::Float32, {}, constant_initializer(-1.25)},
      {"step", DType::Int64, {}, zeros_initializer()},
      {"ones_i32", DType::Int32, {4}, ones_initializer()},
      {"random_uniform",
       DType::Float32,
       {1000},
       random_uniform_initializer(-1.0, 3.0)},
      {"random_normal",
       DType::Float32,
       {1000},
       random_normal_initializer(0.5, 2.0)},
      {"truncated_normal",
       DType::Float32,
       {2000},
       truncated_normal_initializer(1.0, 0.5)},
      {"glorot_uniform",
       DType::Float32,
       {200, 300},
       glorot_uniform_initializer()},
      {"glorot_normal",
       DType::Float32,
       {3, 3, 16, 32},
       glorot_normal_initializer()},
      {"he_normal",
       DType::Float32,
       {256, 128},
       variance_scaling_initializer(2.0, "fan_in", "truncated_normal")},
      {"lecun_untruncated",
       DType::Float32,
       {64, 32},
       variance_scaling_initializer(1.0, "fan_out", "untruncated_normal")},
      {"vs_uniform_conv",
       DType::Float32,
       {5, 5, 3, 8},
       variance_scaling_initializer(1.0, "fan_avg", "uniform")},
      {"vs_rank1",
       DType::Float32,
       {100},
       variance_scaling_initializer(3.0, "fan_in", "uniform")},
      {"glorot_f64", DType::Float64, {10, 20}, glorot_uniform_initializer()},
      {"seeded", DType::Float32, {50}, random_uniform_initializer(0, 1, 99)},
      // Orthogonal: wide (a recurrent kernel [units, 4 units]: orthonormal
      // rows), tall with a gain (orthonormal columns), and rank 3.
      {"orthogonal_wide", DType::Float32, {16, 64}, orthogonal_initializer()},
      {"orthogonal_tall",
       DType::Float32,
       {40, 12},
       orthogonal_initializer(2.0)},
      {"orthogonal_rank3", DType::Float32, {2, 3, 6}, orthogonal_initializer()},
      {"constant_list",
       DType::Float32,
       {2, 2},
       constant_initializer(std::vector<double>{1, -2, 3.5, 0})},
  };
}

/// A predict graph (y = x + 1) declaring every test variable.
g::GraphDef initGraph(int64_t seed = 42) {
  Graph graph;
  graph.set_seed(seed);
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1, 2}});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &g, const TensorMap &x, const Tensor &, ModeKeys) {
               for (const Var &v : testVariables())
                 g.get_variable(v.name, v.dtype, v.shape, v.init,
                                /*trainable=*/v.dtype != DType::Int64);
               Signature spec;
               spec.predictions.set("y", add(x.at("x"), g.constant(1.0)));
               return spec;
             });
  return graph.graph_def();
}

std::unique_ptr<JitModel> compile(const g::GraphDef &graph) {
  return jitCompileForTest(graph, "Init",
                           JitOptions{TargetOptions{}, "", /*useCache=*/false});
}

/// Every variable's bytes, after filling them with garbage and running init.
std::vector<std::string> runInit(JitModel &model) {
  const rt::ModelSpec &spec = model.spec();
  for (int i = 0; i < spec.numVariables; ++i) {
    const rt::VariableSpec &v = spec.variables[i];
    std::memset(model.variable_data(i), 0x5a,
                rt::numElements(v.rank, v.shape, 0) * rt::dtypeBytes(v.dtype));
  }
  model.run("init");
  std::vector<std::string> bytes;
  for (int i = 0; i < spec.numVariables; ++i) {
    const rt::VariableSpec &v = spec.variables[i];
    bytes.emplace_back(static_cast<const char *>(model.variable_data(i)),
                       rt::numElements(v.rank, v.shape, 0) *
                           rt::dtypeBytes(v.dtype));
  }
  return bytes;
}

/// The f32 values of a variable after init.
std::vector<double> values(JitModel &model, const std::string &name) {
  int i = model.variable_index(name);
  const rt::VariableSpec &v = model.spec().variables[i];
  std::vector<double> out;
  for (int64_t k = 0; k < rt::numElements(v.rank, v.shape, 0); ++k)
    out.push_back(static_cast<const float *>(model.variable_data(i))[k]);
  return out;
}

void meanVariance(const std::vector<double> &xs, double &mean, double &var) {
  mean = 0;
  for (double x : xs)
    mean += x;
  mean /= double(xs.size());
  var = 0;
  for (double x : xs)
    var += (x - mean) * (x - mean);
  var /= double(xs.size());
}

TEST(Initializers, InitIsAFunctionWithoutInputsOrOutputs) {
  std::unique_ptr<JitModel> model = compile(initGraph());
  ASSERT_TRUE(model);
  int init = model->function_index("init");
  EXPECT_EQ(model->spec().functions[init].numInputs, 0);
  EXPECT_EQ(model->spec().functions[init].numOutputs, 0);
}

TEST(Initializers, MatchReference) {
  g::GraphDef graph = initGraph();
  std::unique_ptr<JitModel> model = compile(graph);
  ASSERT_TRUE(model);
  runInit(*model);
  reference::Evaluator evaluator(graph);
  evaluator.initialize_variables();
  ASSERT_EQ(evaluator.variables().size(), testVariables().size());
  for (const auto &[name, want] : evaluator.variables()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(outputMatches(
        want, model->variable_data(model->variable_index(name)), 1e-5));
  }
  // Orthogonal: W W^T = I for the wide one (rows), W^T W = 4 I for the tall
  // one with gain 2 (columns), in f32.
  auto gram = [&](const char *name, int64_t rows, int64_t cols, bool ofRows,
                  double expected) {
    std::vector<double> w = values(*model, name);
    int64_t n = ofRows ? rows : cols, len = ofRows ? cols : rows;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t k = 0; k < len; ++k)
          dot += ofRows ? w[i * cols + k] * w[j * cols + k]
                        : w[k * cols + i] * w[k * cols + j];
        EXPECT_NEAR(dot, i == j ? expected : 0.0, 1e-5)
            << name << " (" << i << ", " << j << ")";
      }
  };
  gram("orthogonal_wide", 16, 64, true, 1.0);
  gram("orthogonal_tall", 40, 12, false, 4.0);
  gram("orthogonal_rank3", 6, 6, true, 1.0);
  EXPECT_EQ(values(*model, "constant_list"),
            (std::vector<double>{1, -2, 3.5, 0}));
  // Spot checks of the constants.
  EXPECT_EQ(values(*model, "ones")[4], 1.0);
  EXPECT_EQ(values(*model, "constant")[5], 2.5);
  EXPECT_EQ(values(*model, "constant_scalar")[0], -1.25);
  EXPECT_EQ(static_cast<const int32_t *>(
                model->variable_data(model->variable_index("ones_i32")))[3],
            1);
}

TEST(Initializers, Statistics) {
  std::unique_ptr<JitModel> model = compile(initGraph());
  ASSERT_TRUE(model);
  runInit(*model);
  double mean, var;

  // glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)), var l^2/3.
  std::vector<double> gu = values(*model, "glorot_uniform");
  double l = std::sqrt(6.0 / (200 + 300));
  for (double x : gu)
    ASSERT_TRUE(x >= -l && x < l) << x;
  meanVariance(gu, mean, var);
  EXPECT_NEAR(mean, 0.0, 0.01 * l);
  EXPECT_NEAR(var, l * l / 3, 0.03 * l * l / 3);

  // glorot_normal (HWIO 3x3x16x32: fan_in 144, fan_out 288): truncated to
  // 2 stddev, stddev = sqrt(2 / 432) / .8796..., variance 2 / 432.
  std::vector<double> gn = values(*model, "glorot_normal");
  double sn = std::sqrt(2.0 / 432) / .87962566103423978;
  for (double x : gn)
    ASSERT_LE(std::abs(x), 2 * sn * (1 + 1e-6)) << x;
  meanVariance(gn, mean, var);
  EXPECT_NEAR(var, 2.0 / 432, 0.05 * 2.0 / 432);

  // truncated_normal(1, 0.5): within [0, 2].
  std::vector<double> tn = values(*model, "truncated_normal");
  for (double x : tn)
    ASSERT_TRUE(x >= 0.0 - 1e-6 && x <= 2.0 + 1e-6) << x;
  meanVariance(tn, mean, var);
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 0.5 * .87962566103423978, 0.05);

  // He normal: variance 2 / fan_in.
  meanVariance(values(*model, "he_normal"), mean, var);
  EXPECT_NEAR(var, 2.0 / 256, 0.05 * 2.0 / 256);

  // random_normal(0.5, 2).
  meanVariance(values(*model, "random_normal"), mean, var);
  EXPECT_NEAR(mean, 0.5, 0.2);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.15);

  // random_uniform(-1, 3).
  for (double x : values(*model, "random_uniform"))
    ASSERT_TRUE(x >= -1.0 && x < 3.0) << x;

  // variance_scaling on a rank-1 shape: fan_in = 100, l = sqrt(3 * 3 / 100).
  double l1 = std::sqrt(9.0 / 100);
  for (double x : values(*model, "vs_rank1"))
    ASSERT_TRUE(x >= -l1 && x < l1) << x;
}

TEST(Initializers, SameForAnyThreadCountAndCompile) {
  g::GraphDef graph = initGraph();
  std::unique_ptr<JitModel> first = compile(graph);
  std::unique_ptr<JitModel> second = compile(graph);
  ASSERT_TRUE(first && second);
  estc_runtime_set_num_threads(1);
  std::vector<std::string> one = runInit(*first);
  estc_runtime_set_num_threads(2);
  std::vector<std::string> two = runInit(*first);
  std::vector<std::string> recompiled = runInit(*second);
  estc_runtime_set_num_threads(0);
  EXPECT_TRUE(one == two);
  EXPECT_TRUE(one == recompiled);
}

TEST(Initializers, SeedsComeFromTheGraphSeedAndName) {
  std::unique_ptr<JitModel> a = compile(initGraph(42));
  std::unique_ptr<JitModel> b = compile(initGraph(43));
  ASSERT_TRUE(a && b);
  runInit(*a);
  runInit(*b);
  // Another graph seed draws other values (an op seed is combined with the
  // graph seed, as in TF).
  EXPECT_NE(values(*a, "glorot_uniform"), values(*b, "glorot_uniform"));
  EXPECT_NE(values(*a, "seeded"), values(*b, "seeded"));
  // Two variables of one initializer kind draw different values.
  EXPECT_NE(values(*a, "random_uniform")[0], values(*a, "seeded")[0]);
}

} // namespace
} // namespace estc
