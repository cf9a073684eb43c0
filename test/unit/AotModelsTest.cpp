//===- AotModelsTest.cpp - The seed models compiled ahead of time --------===//
//
// The MLP and the ConvNet, compiled at build time by estc (estc_add_model)
// into Mlp.o / Mlp.h and ConvNet.o / ConvNet.h, run through their generated
// classes and checked against the reference evaluator (relative error
// <= 1e-5), and against the same graphs compiled by the JIT for the same
// target: the outputs must be bit-identical. The ConvNet's training step
// too: AOT and JIT steps give bit-identical losses and variables.
//
//===----------------------------------------------------------------------===//

#include "ConvNet.h"
#include "Mlp.h"

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphIO.h"
#include "runtime/cpu/Kernels.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
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

/// `batch` int64 class labels (i * stride) % 10.
Value classLabels(int64_t batch, int64_t stride) {
  Value labels;
  labels.dtype = graph::DT_INT64;
  labels.shape = {batch};
  for (int64_t i = 0; i < batch; ++i)
    labels.data.push_back(static_cast<double>((i * stride) % 10));
  return labels;
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
    for (rt::CompiledModel *model :
         {&aot, static_cast<rt::CompiledModel *>(jit.get())}) {
      model->set_batch(batch);
      for (const auto &[key, value] : feeds)
        store(value,
              model->input_data(
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

/// The ConvNet's @train (conv2d / max_pool gradients at a run-time batch,
/// dropout, Adam) ahead of time and in the JIT: from the same @init, the
/// same steps at batches 1, 7 and 64 (where the generated loops run in
/// chunks on the thread pool) give bit-identical losses and variables.
TEST(AotModels, ConvNetTrainStepMatchesJit) {
  ConvNet aot;
  JitOptions options;
  options.target.cpu = "x86-64-v2"; // what estc_add_model compiles for
  std::unique_ptr<JitModel> jit =
      jitCompileForTest(readModel(ESTC_CONVNET_GRAPH), "ConvNet", options);
  ASSERT_TRUE(jit);
  int train = aot.function_index("train");
  ASSERT_GE(train, 0) << "@train was not compiled ahead of time";
  ASSERT_EQ(train, jit->function_index("train"));
  std::vector<rt::CompiledModel *> models = {&aot, jit.get()};
  for (rt::CompiledModel *model : models)
    model->run(model->function_index("init"));
  std::mt19937 rng(9);
  for (int64_t batch : {1, 7, 64}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Value x =
        randomValue({"x", DType::Float32, {-1, 28, 28, 1}, 0, 1}, batch, rng);
    Value labels = classLabels(batch, 1);
    float loss[2];
    for (size_t k = 0; k < models.size(); ++k) {
      rt::CompiledModel &m = *models[k];
      m.set_batch(batch);
      store(x, m.input_data(train, m.input_index(train, "features/x")));
      store(labels, m.input_data(train, m.input_index(train, "labels")));
      m.run(train);
      std::memcpy(&loss[k], m.output_data(train, m.output_index(train, "loss")),
                  sizeof(float));
    }
    EXPECT_TRUE(std::isfinite(loss[0]) && loss[0] > 0) << loss[0];
    EXPECT_EQ(std::memcmp(&loss[0], &loss[1], sizeof(float)), 0)
        << "losses " << loss[0] << " and " << loss[1];
    const rt::ModelSpec &spec = aot.spec();
    for (int v = 0; v < spec.numVariables; ++v) {
      const rt::VariableSpec &var = spec.variables[v];
      size_t bytes =
          rt::numElements(var.rank, var.shape, 1) * rt::dtypeBytes(var.dtype);
      EXPECT_EQ(std::memcmp(aot.variable_data(v), jit->variable_data(v), bytes),
                0)
          << var.name;
    }
  }
}

/// One arena serves every function, grown in run() to what the function
/// run needs: predictions at a large batch after training at a small one
/// hold the predict step's temporaries at that batch, not the train step's
/// (which keeps every activation for its gradients). An evaluation at batch
/// 500 during training once sized the arena for the train step at 500:
/// 108 MB of the Fashion-MNIST example's 607 MiB peak.
TEST(AotModels, ArenaGrowsToTheFunctionRun) {
  ConvNet m;
  int train = m.function_index("train"), predict = m.function_index("predict");
  ASSERT_GE(train, 0);
  ASSERT_GE(predict, 0);
  const rt::ModelSpec &spec = m.spec();
  auto need = [&](int f, int64_t batch) {
    return spec.functions[f].arenaStatic +
           spec.functions[f].arenaPerBatch * batch;
  };
  ASSERT_GT(need(train, 64), need(predict, 64));
  m.run(m.function_index("init"));
  m.set_batch(8);
  m.run(train);
  EXPECT_GE(m.arena_capacity(), need(train, 8));
  EXPECT_LT(m.arena_capacity(), need(train, 64));
  m.set_batch(64);
  m.run(predict);
  EXPECT_GE(m.arena_capacity(), need(predict, 64));
  EXPECT_LT(m.arena_capacity(), need(train, 64));
  // Back to training at 8: large enough already, nothing reallocated.
  int64_t capacity = m.arena_capacity();
  m.set_batch(8);
  m.run(train);
  EXPECT_EQ(m.arena_capacity(), capacity);
  m.set_batch(64);
  m.run(train);
  EXPECT_GE(m.arena_capacity(), need(train, 64));
}

/// The ConvNet's @train at batch 64, where the compiled loops (pooling and
/// its gradient, ReLU masks, dropout, softmax, Adam) are large enough to be
/// split into chunks on the runtime's pool (est-parallelize-loops): two
/// steps from the same @init with 1, 2 and 3 threads give bit-identical
/// losses and variables, and the same loops are split for every count.
TEST(AotModels, ConvNetTrainStepBitIdenticalForAnyThreadCount) {
  const int threadCounts[] = {1, 2, 3};
  ConvNet models[3];
  int train = models[0].function_index("train");
  ASSERT_GE(train, 0);
  const int64_t batch = 64;
  std::mt19937 rng(11);
  Value x =
      randomValue({"x", DType::Float32, {-1, 28, 28, 1}, 0, 1}, batch, rng);
  Value labels = classLabels(batch, 7);
  std::vector<float> losses[3];
  size_t split[3];
  for (int k = 0; k < 3; ++k) {
    ConvNet &m = models[k];
    estc_runtime_set_num_threads(threadCounts[k]);
    m.run(m.function_index("init"));
    m.set_batch(batch);
    store(x, m.input_data(train, m.input_index(train, "features/x")));
    store(labels, m.input_data(train, m.input_index(train, "labels")));
    size_t before = estc_runtime_parallel_loops_split();
    for (int step = 0; step < 2; ++step) {
      m.run(train);
      float loss;
      std::memcpy(&loss, m.output_data(train, m.output_index(train, "loss")),
                  sizeof(float));
      losses[k].push_back(loss);
    }
    split[k] = estc_runtime_parallel_loops_split() - before;
  }
  estc_runtime_set_num_threads(0);
  EXPECT_GT(split[0], 0u) << "no compiled loop was split into chunks";
  const rt::ModelSpec &spec = models[0].spec();
  for (int k = 1; k < 3; ++k) {
    SCOPED_TRACE(std::to_string(threadCounts[k]) + " threads");
    EXPECT_EQ(split[k], split[0]);
    ASSERT_EQ(losses[k].size(), losses[0].size());
    EXPECT_EQ(std::memcmp(losses[k].data(), losses[0].data(),
                          losses[0].size() * sizeof(float)),
              0)
        << "losses " << losses[0][1] << " and " << losses[k][1];
    for (int v = 0; v < spec.numVariables; ++v) {
      const rt::VariableSpec &var = spec.variables[v];
      size_t bytes =
          rt::numElements(var.rank, var.shape, 1) * rt::dtypeBytes(var.dtype);
      EXPECT_EQ(std::memcmp(models[0].variable_data(v),
                            models[k].variable_data(v), bytes),
                0)
          << var.name;
    }
  }
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
