//===- ModelFormatTest.cpp - runtime/format: manifest and saved_model ----===//

#include "runtime/format/ModelFormat.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::modelformat;

namespace {

Manifest sample() {
  Manifest m;
  m.name = "Mlp";
  VariableInfo v{"dense/kernel",
                 rt::DType::F32,
                 {784, 10},
                 true,
                 false,
                 "glorot_uniform",
                 {{"seed", "42"}, {"stddev", "0.10000000000000001"}}};
  m.variables.push_back(v);
  m.variables.push_back({"acc/total", rt::DType::F32, {}, false, true, "", {}});
  FunctionInfo f;
  f.name = "predict";
  f.inputs.push_back({"features/x", rt::DType::F32, {rt::kBatchDim, 784}});
  f.outputs.push_back({"predictions/classes", rt::DType::I64, {-1}});
  f.arenaStatic = 4096;
  f.arenaPerBatch = 64;
  f.statusOffset = 8;
  m.functions.push_back(f);
  m.checks.push_back({"loss", "label", 0, 10, {-1}});
  return m;
}

} // namespace

TEST(ModelFormat, LlvmJsonText) {
  EXPECT_EQ(quoteString("a\"b\\c\n\t\r\x01/"),
            "\"a\\\"b\\\\c\\n\\t\\r\\u0001/\"");
  EXPECT_EQ(quoteString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(quoteString("a\xff"
                        "b"),
            "\"a\xef\xbf\xbd"
            "b\"");
  EXPECT_EQ(formatDouble(0.1), "0.10000000000000001");
  EXPECT_EQ(formatDouble(1.0), "1");
  EXPECT_EQ(formatDouble(1e-5), "1.0000000000000001e-05");
}

TEST(ModelFormat, ManifestRoundTrip) {
  std::string json = writeManifest(sample());
  EXPECT_NE(json.find("    {\"name\": \"dense/kernel\", \"dtype\": \"f32\", "
                      "\"shape\": [784, 10], \"trainable\": true, \"local\": "
                      "false, \"initializer\": \"glorot_uniform\", "
                      "\"initializer_params\": {\"seed\": 42, \"stddev\": "
                      "0.10000000000000001}}"),
            std::string::npos)
      << json;
  Manifest back = readManifest(json);
  EXPECT_EQ(writeManifest(back), json);
  EXPECT_EQ(back.variables[0].initializerParams[1].second,
            "0.10000000000000001");
  EXPECT_TRUE(back.variables[1].local);
  EXPECT_EQ(back.functions[0].statusOffset, 8);
  ASSERT_NE(back.findFunction("predict"), nullptr);
}

TEST(ModelFormat, ManifestOfParameterServerTrainingRoundTrips) {
  // A worker's step: its copies' tasks, what it pushes, the table it
  // pulls rows of (not one of its variables), synchronous training.
  Manifest m = sample();
  m.psTasks = 2;
  m.psReplicasToAggregate = 2;
  m.psTotalNumReplicas = 3;
  m.variables[0].psTask = 1;
  m.psInputs.push_back({"grad/dense/kernel", rt::DType::F32, {784, 10}});
  m.psInputs.push_back({"ids/emb", rt::DType::I64, {rt::kValuesDim}});
  m.psRemote.push_back(
      {"emb", rt::DType::F32, {1000, 8}, true, false, "", {}, 0});
  std::string json = writeManifest(m);
  Manifest back = readManifest(json);
  EXPECT_EQ(writeManifest(back), json);
  EXPECT_EQ(back.psTasks, 2);
  EXPECT_EQ(back.psTask, -1);
  EXPECT_EQ(back.psReplicasToAggregate, 2);
  EXPECT_EQ(back.psTotalNumReplicas, 3);
  EXPECT_EQ(back.variables[0].psTask, 1);
  EXPECT_EQ(back.variables[1].psTask, -1);
  ASSERT_EQ(back.psInputs.size(), 2u);
  EXPECT_EQ(back.psInputs[1].shape, std::vector<int64_t>{rt::kValuesDim});
  ASSERT_EQ(back.psRemote.size(), 1u);
  EXPECT_EQ(back.psRemote[0].name, "emb");
  EXPECT_EQ(back.psRemote[0].psTask, 0);
  // As a ModelSpec.
  std::shared_ptr<ModelSpecStorage> storage;
  rt::ModelSpec spec = toModelSpec(back, storage);
  EXPECT_EQ(spec.psTasks, 2);
  EXPECT_EQ(spec.numPsInputs, 2);
  EXPECT_STREQ(spec.psInputs[0].key, "grad/dense/kernel");
  EXPECT_EQ(spec.numPsRemote, 1);
  EXPECT_EQ(spec.psRemote[0].psTask, 0);
  EXPECT_EQ(spec.variables[0].psTask, 1);
  EXPECT_EQ(spec.psReplicasToAggregate, 2);
  // Without parameter servers the text has none of it.
  EXPECT_EQ(writeManifest(sample()).find("ps_"), std::string::npos);
}

TEST(ModelFormat, ManifestParamsAsLlvmPrintsThem) {
  Manifest m = readManifest(
      R"({"format": "estc-manifest-1", "name": "M", "variables": [
        {"name": "v", "dtype": "i1", "shape": [2.0],
         "initializer_params": {"z": {"b": [1, 2.5], "a": "x"}, "a": 1e2}}]})");
  ASSERT_EQ(m.variables.size(), 1u);
  EXPECT_EQ(m.variables[0].dtype, rt::DType::Bool);
  EXPECT_EQ(m.variables[0].shape, std::vector<int64_t>{2});
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(
      m.variables[0].initializerParams,
      (std::vector<P>{{"a", "100"}, {"z", "{\"a\":\"x\",\"b\":[1,2.5]}"}}));
}

TEST(ModelFormat, ManifestErrors) {
  auto message = [](std::string_view json) -> std::string {
    try {
      readManifest(json);
    } catch (const FormatError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(R"({"format": "other"})"),
            "manifest: not an estc-manifest-1 document");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "variables": [{}]})"),
            "manifest: malformed variable entry");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "functions": [
              {"name": "f", "inputs": [{"key": "x"}]}]})"),
            "manifest: @f: malformed inputs entry");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "device": "tpu"})"),
            "manifest: device 'tpu' is not one of cpu, cuda");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "replicas": 1})"),
            "manifest: replicas 1 is not in 2..1048576");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "ps_tasks": 2,
                        "ps_task": 2})"),
            "manifest: ps_task 2 is not in -1..1");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "ps_tasks": 1,
                        "ps_sync": [0, 1]})"),
            "manifest: ps_sync is not [replicas_to_aggregate >= 1, "
            "total_num_replicas >= 0]");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "ps_tasks": 1,
              "variables": [{"name": "w", "dtype": "f32", "shape": [2],
                             "ps_task": 3}]})"),
            "manifest: variable 'w': ps_task 3 is not a task of the 1 ps "
            "tasks");
  EXPECT_EQ(message(R"({"format": "estc-manifest-1", "functions": [
              {"name": "f", "arena": {"status": 0}}]})"),
            "manifest: @f has a status slot but the model has no checks");
  EXPECT_EQ(message("{\n"), "manifest: [2:0, byte=2]: Missing a name for "
                            "object member.");
}

TEST(ModelFormat, SavedModelRoundTrip) {
  SavedModelFile file;
  file.estcVersion = "0.1";
  file.globalStep = 7;
  file.checkpoint = "model.ckpt-7";
  file.mode = "infer";
  file.target = {hostArch(), "x86_64-unknown-linux-gnu", "generic", {"sse2"}};
  file.function = "predict";
  Manifest m = sample();
  m.checks.clear();
  m.functions[0].statusOffset = -1;
  file.modelJson = writeManifest(m);
  Receiver r;
  r.tensors.push_back({"x", DType::Float32, {-1, 784}, ""});
  file.receivers.emplace_back("", r);
  Signature sig;
  sig.methodName = "tensorflow/serving/predict";
  sig.inputs["x"] = {"x", DType::Float32, {-1, 784}, ""};
  sig.outputs["classes"] = {"predictions/classes", DType::Int64, {-1}, ""};
  file.signatures.emplace_back("serving_default", sig);
  for (bool asText : {false, true}) {
    std::string json = writeSavedModel(file, asText);
    EXPECT_EQ(json.back(), '\n');
    std::vector<std::string> calls;
    SavedModelHooks hooks;
    hooks.arch = [&](const std::string &a) { calls.push_back("arch " + a); };
    hooks.library = [&](const SavedModelFile &f) {
      calls.push_back("library " + f.library);
    };
    SavedModelFile back = readSavedModel(json, hooks);
    EXPECT_EQ(calls,
              (std::vector<std::string>{std::string("arch ") + hostArch(),
                                        "library model.so"}));
    EXPECT_EQ(back.globalStep, 7);
    EXPECT_EQ(back.model.functions[0].outputs[0].key, "predictions/classes");
    ASSERT_EQ(back.signatures.size(), 1u);
    EXPECT_EQ(back.signatures[0].second.outputs.at("classes").name,
              "predictions/classes");
    EXPECT_EQ(writeManifest(back.model).size() > 0, true);
  }
}

TEST(ModelFormat, SavedModelErrors) {
  auto message = [](std::string_view json) -> std::string {
    try {
      readSavedModel(json);
    } catch (const FormatError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("{"), "saved_model.json is not JSON (at byte 1)");
  EXPECT_EQ(message("[]"), "saved_model.json is not an object");
  EXPECT_EQ(message("{}"), "saved_model.json has no \"format\"");
  EXPECT_EQ(message(R"({"format": "x"})"),
            "format 'x' is not estc-saved-model-1");
  EXPECT_EQ(message(R"({"format": "estc-saved-model-1", "global_step": 1,
              "target": {"arch": "x", "features": [1]}})"),
            "target.features has a non-string");
  EXPECT_EQ(message(R"({"format": "estc-saved-model-1", "global_step": 1,
              "target": {"arch": "x", "features": []},
              "model": {"variables": [], "functions": [], "name": "m"},
              "function": "f"})"),
            "model has no single function 'f'");
  EXPECT_EQ(message(R"({"format": "estc-saved-model-1", "global_step": 1,
              "target": {"arch": "x", "features": []},
              "model": {"variables": [{"shape": [-1]}], "functions": [],
                        "name": "m"}})"),
            "model.variables[0].shape has a bad dimension");
}
