//===- ManifestTest.cpp - Manifests of the seed models --------------------===//
//
// The seed MLP and ConvNet, built with the graph API, imported and run
// through the `est` stage: the manifest lists every variable and function
// signature exactly; JSON round-trips. (test/estc/aot-header.test diffs the
// JSON text of both against golden files.)
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/Manifest.h"

#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Pipelines/Registration.h"
#include "lib/Models/Models.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

namespace {

using estc::rt::DType;
constexpr int64_t B = estc::rt::kBatchDim;

estc::Manifest manifestOf(const estc::graph::GraphDef &graph,
                          const char *name) {
  mlir::DialectRegistry registry;
  estc::registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  std::string error;
  auto module = estc::importGraph(graph, context, "model.pb", error);
  EXPECT_TRUE(module) << error;
  mlir::PassManager pm(&context);
  estc::buildPipeline(pm, estc::Stage::Est);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  auto manifest = estc::extractManifest(*module, name);
  if (!manifest) {
    ADD_FAILURE() << llvm::toString(manifest.takeError());
    return {};
  }
  return std::move(*manifest);
}

void expectTensor(const estc::TensorInfo &t, const char *key, DType dtype,
                  std::vector<int64_t> shape) {
  EXPECT_EQ(t.key, key);
  EXPECT_EQ(t.dtype, dtype) << key;
  EXPECT_EQ(t.shape, shape) << key;
}

TEST(Manifest, Mlp) {
  estc::Manifest m = manifestOf(estc::models::build_mlp(), "Mlp");
  EXPECT_EQ(m.name, "Mlp");
  struct Var {
    const char *name;
    std::vector<int64_t> shape;
    bool trainable;
    bool local;
    const char *init;
  };
  std::vector<Var> vars = {
      {"dense/kernel", {784, 256}, true, false, "glorot_uniform"},
      {"dense/bias", {256}, true, false, "zeros"},
      {"dense_1/kernel", {256, 256}, true, false, "glorot_uniform"},
      {"dense_1/bias", {256}, true, false, "zeros"},
      {"dense_2/kernel", {256, 10}, true, false, "glorot_uniform"},
      {"dense_2/bias", {10}, true, false, "zeros"},
      {"accuracy/total", {}, false, true, "zeros"},
      {"accuracy/count", {}, false, true, "zeros"}};
  ASSERT_EQ(m.variables.size(), vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(m.variables[i].name, vars[i].name);
    EXPECT_EQ(m.variables[i].dtype, DType::F32);
    EXPECT_EQ(m.variables[i].shape, vars[i].shape) << vars[i].name;
    EXPECT_EQ(m.variables[i].trainable, vars[i].trainable) << vars[i].name;
    EXPECT_EQ(m.variables[i].local, vars[i].local) << vars[i].name;
    EXPECT_EQ(m.variables[i].initializer, vars[i].init) << vars[i].name;
  }
  ASSERT_EQ(m.variables[0].initializerParams.size(), 1u);
  EXPECT_EQ(m.variables[0].initializerParams[0].first, "seed");

  ASSERT_EQ(m.functions.size(), 5u);
  const estc::FunctionInfo &train = m.functions[0];
  EXPECT_EQ(train.name, "train");
  ASSERT_EQ(train.inputs.size(), 2u);
  expectTensor(train.inputs[0], "features/x", DType::F32, {B, 784});
  expectTensor(train.inputs[1], "labels", DType::I64, {B});
  ASSERT_EQ(train.outputs.size(), 1u);
  expectTensor(train.outputs[0], "loss", DType::F32, {});

  const estc::FunctionInfo &eval = m.functions[1];
  EXPECT_EQ(eval.name, "eval");
  ASSERT_EQ(eval.inputs.size(), 2u);
  expectTensor(eval.inputs[1], "labels", DType::I64, {B});
  ASSERT_EQ(eval.outputs.size(), 1u);
  expectTensor(eval.outputs[0], "loss", DType::F32, {});

  const estc::FunctionInfo &metrics = m.functions[2];
  EXPECT_EQ(metrics.name, "eval_metrics");
  EXPECT_TRUE(metrics.inputs.empty());
  ASSERT_EQ(metrics.outputs.size(), 1u);
  expectTensor(metrics.outputs[0], "metrics/accuracy", DType::F32, {});

  const estc::FunctionInfo &predict = m.functions[3];
  EXPECT_EQ(predict.name, "predict");
  ASSERT_EQ(predict.inputs.size(), 1u);
  expectTensor(predict.inputs[0], "features/x", DType::F32, {B, 784});
  ASSERT_EQ(predict.outputs.size(), 2u);
  expectTensor(predict.outputs[0], "predictions/classes", DType::I64, {B});
  expectTensor(predict.outputs[1], "predictions/probabilities", DType::F32,
               {B, 10});
  EXPECT_EQ(predict.arenaStatic, 0);

  // @init (est-create-init-function) sets the variables: no inputs, outputs.
  const estc::FunctionInfo &init = m.functions[4];
  EXPECT_EQ(init.name, "init");
  EXPECT_TRUE(init.inputs.empty());
  EXPECT_TRUE(init.outputs.empty());
}

TEST(Manifest, ConvNet) {
  estc::Manifest m = manifestOf(estc::models::build_convnet(), "ConvNet");
  ASSERT_EQ(m.variables.size(), 13u);
  EXPECT_EQ(m.variables[0].name, "conv2d/kernel");
  EXPECT_EQ(m.variables[0].shape, (std::vector<int64_t>{5, 5, 1, 20}));
  EXPECT_EQ(m.variables[2].shape, (std::vector<int64_t>{5, 5, 20, 40}));
  EXPECT_EQ(m.variables[4].shape, (std::vector<int64_t>{640, 256}));
  EXPECT_EQ(m.variables[6].name, "global_step");
  EXPECT_EQ(m.variables[6].dtype, DType::I64);
  EXPECT_FALSE(m.variables[6].trainable);
  // Every variable is static; every function input has the batch first.
  for (const estc::VariableInfo &v : m.variables)
    for (int64_t d : v.shape)
      EXPECT_GT(d, 0) << v.name;
  const estc::FunctionInfo *predict = m.findFunction("predict");
  ASSERT_NE(predict, nullptr);
  ASSERT_FALSE(predict->inputs.empty());
  expectTensor(predict->inputs[0], "features/x", DType::F32, {B, 28, 28, 1});
  ASSERT_EQ(predict->outputs.size(), 2u);
  expectTensor(predict->outputs[1], "predictions/probabilities", DType::F32,
               {B, 10});
  EXPECT_NE(m.findFunction("eval"), nullptr);
}

TEST(Manifest, JsonRoundTrip) {
  estc::Manifest m = manifestOf(estc::models::build_mlp(), "Mlp");
  m.functions[1].arenaStatic = 4096;
  m.functions[1].arenaPerBatch = 3136;
  std::string json = estc::toJson(m);
  auto back = estc::manifestFromJson(json);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(estc::toJson(*back), json);
  EXPECT_EQ(back->functions[1].arenaPerBatch, 3136);
  EXPECT_EQ(back->variables[0].initializerParams,
            m.variables[0].initializerParams);
  EXPECT_FALSE(back->variables[0].local);
  EXPECT_TRUE(back->variables[6].local);
  EXPECT_NE(json.find("\"name\": \"accuracy/total\", \"dtype\": \"f32\", "
                      "\"shape\": [], \"trainable\": false, \"local\": true"),
            std::string::npos)
      << json;
}

TEST(Manifest, BadJson) {
  auto bad = estc::manifestFromJson("{\"format\": \"other\"}");
  ASSERT_FALSE(bad);
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "manifest: not an estc-manifest-1 document");
  auto broken = estc::manifestFromJson("{");
  ASSERT_FALSE(broken);
  llvm::consumeError(broken.takeError());
}

TEST(Manifest, Names) {
  EXPECT_EQ(estc::sanitizeIdentifier("predictions/classes"),
            "predictions_classes");
  EXPECT_EQ(estc::sanitizeIdentifier("0x"), "_0x");
  EXPECT_EQ(estc::entrySymbol("Mlp", "eval_metrics"), "Mlp_eval_metrics");
  EXPECT_EQ(estc::packedEntrySymbol("Mlp", "predict"), "Mlp_predict_packed");
}

TEST(Manifest, ArenaFromModuleAttribute) {
  mlir::MLIRContext context;
  mlir::OpBuilder b(&context);
  auto module = mlir::ModuleOp::create(b.getUnknownLoc());
  module->setAttr("estc.arena",
                  b.getDictionaryAttr({b.getNamedAttr(
                      "predict", b.getDenseI64ArrayAttr({128, 40}))}));
  estc::Manifest m;
  m.functions.push_back({"predict", {}, {}, 0, 0});
  m.functions.push_back({"eval", {}, {}, 0, 0});
  ASSERT_FALSE(bool(estc::readArenaSizes(module, m)));
  EXPECT_EQ(m.functions[0].arenaStatic, 128);
  EXPECT_EQ(m.functions[0].arenaPerBatch, 40);
  EXPECT_EQ(m.functions[1].arenaStatic, 0);
  module->erase();
}

} // namespace
