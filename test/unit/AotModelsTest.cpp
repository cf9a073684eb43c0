//===- AotModelsTest.cpp - The seed models compiled ahead of time --------===//
//
// The MLP and the ConvNet, compiled at build time by estc (estc_add_model)
// into Mlp.o / Mlp.h and ConvNet.o / ConvNet.h, run through their generated
// classes and checked against the reference evaluator (relative error
// <= 1e-5), and against the same graphs compiled by the JIT for the same
// target: the outputs must be bit-identical.
//
//===----------------------------------------------------------------------===//

#include "ConvNet.h"
#include "Mlp.h"

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphIO.h"
#include "test/unit/ModelTesting.h"


#include <gtest/gtest.h>

#include <cstring>

namespace estc {
namespace {

using namespace estc::testing;

graph::GraphDef readModel(const char *path) {
  graph::GraphDef graph;
  std::string error;
  EXPECT_TRUE(graph::readGraph(path, graph, error)) << error;
  return graph;
}

size_t outputBytes(const rt::CompiledModel &model, int function, int output,
                   int64_t batch) {
  const rt::TensorSpec &t = model.spec().functions[function].outputs[output];
  return rt::numElements(t.rank, t.shape, batch) * rt::dtypeBytes(t.dtype);
}

/// Runs `aot` (a generated class) and the JIT-compiled graph on the same
/// weights and inputs at every batch; checks both against the reference.
void checkAotModel(rt::CompiledModel &aot, const graph::GraphDef &graph,
                   llvm::StringRef name, const std::vector<Feature> &features,
                   const std::vector<int64_t> &batches) {
  JitOptions options;
  options.target.cpu = "x86-64-v2"; // what estc_add_model compiles for
  std::unique_ptr<JitModel> jit = jitCompileForTest(graph, name, options);
  ASSERT_TRUE(jit);
  reference::Evaluator evaluator(graph);
  for (const auto &[var, value] : randomVariables(graph)) {
    evaluator.variables()[var] = value;
    store(value, aot.variable_data(aot.variable_index(var)));
    store(value, jit->variable_data(jit->variable_index(var)));
  }
  int predict = aot.function_index("predict");
  ASSERT_EQ(predict, jit->function_index("predict"));
  std::mt19937 rng(5);
  for (int64_t batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::map<std::string, Value> feeds;
    for (const Feature &f : features)
      feeds.emplace(f.key, randomValue(f, batch, rng));
    std::map<std::string, Value> expected = evaluator.run("predict", feeds);
    for (rt::CompiledModel *model : {&aot, static_cast<rt::CompiledModel *>(jit.get())}) {
      model->set_batch(batch);
      for (const auto &[key, value] : feeds)
        store(value, model->input_data(
                         predict, model->input_index(predict, "features/" + key)));
      model->run(predict);
    }
    for (const auto &[key, want] : expected) {
      SCOPED_TRACE(key);
      int out = aot.output_index(predict, key);
      const void *got = aot.output_data(predict, out);
      EXPECT_TRUE(outputMatches(want, got, 1e-5));
      EXPECT_EQ(std::memcmp(got, jit->output_data(predict, out),
                            outputBytes(aot, predict, out, batch)),
                0)
          << "AOT and JIT outputs differ";
    }
  }
}

TEST(AotModels, MlpMatchesReferenceAndJit) {
  Mlp mlp;
  // The generated accessors name the same storage as the generic API.
  EXPECT_EQ(static_cast<void *>(mlp.var_dense_kernel()),
            mlp.variable_data(mlp.variable_index("dense/kernel")));
  EXPECT_EQ(Mlp::var_dense_kernel_shape[0], 784);
  checkAotModel(mlp, readModel(ESTC_MLP_GRAPH), "Mlp",
                {{"x", DType::Float32, {-1, 784}, 0, 1}}, {1, 3, 17, 128});
}

TEST(AotModels, ConvNetMatchesReferenceAndJit) {
  ConvNet convnet;
  checkAotModel(convnet, readModel(ESTC_CONVNET_GRAPH), "ConvNet",
                {{"x", DType::Float32, {-1, 28, 28, 1}, 0, 1}}, {1, 3});
}

TEST(AotModels, WrongInputShapeIsOneLineError) {
  Mlp mlp;
  mlp.set_batch(2);
  int predict = mlp.function_index("predict");
  std::vector<float> x(3 * 784);
  try {
    mlp.bind_input(predict, 0, x.data(), {3, 784});
    FAIL() << "expected an error";
  } catch (const std::exception &e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("features/x"), std::string::npos) << message;
  }
}

} // namespace
} // namespace estc
