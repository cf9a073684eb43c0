//===- JitTest.cpp - JIT and AOT on one hand-lowered module ---------------===//
//
// test/estc/Inputs/aot-scale-add.mlir (y = 2 * x + v, steps += 1), lowered
// to the LLVM dialect by mlir-opt, is compiled twice: ahead of time by
// `estc --emit=obj` through estc_add_model (ScaleAdd.h / ScaleAdd.o), and in
// process by JitCompiler. Both must give bit-identical results, the JIT for
// the same target must produce the very same object, and a second compile
// of the same source must come from the cache without lowering or codegen.
//
//===----------------------------------------------------------------------===//

#include "ScaleAdd.h"

#include "compiler/Pipelines/Registration.h"
#include "compiler/Target/Jit.h"
#include "runtime/MemRef.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace {

std::string readFile(const char *path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "";
  return (*buffer)->getBuffer().str();
}

/// A fresh cache directory per test.
class JitTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("estc-jit-test", dir));
    cacheDir = std::string(dir);
    source = readFile(ESTC_SCALE_ADD_LLVM);
    ASSERT_FALSE(source.empty()) << ESTC_SCALE_ADD_LLVM;
    registry = std::make_unique<mlir::DialectRegistry>();
    estc::registerCompilerDialects(*registry);
    context = std::make_unique<mlir::MLIRContext>(*registry);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(cacheDir); }

  /// The lowering callback: parses the LLVM-dialect module and reads the
  /// manifest it carries. Counts its calls.
  estc::JitCompiler::Lower lower() {
    return [this]() -> llvm::Expected<estc::LoweredModule> {
      ++lowerings;
      estc::LoweredModule lowered;
      lowered.module =
          mlir::parseSourceString<mlir::ModuleOp>(source, context.get());
      if (!lowered.module)
        return llvm::createStringError("cannot parse the module");
      auto json =
          (*lowered.module)->getAttrOfType<mlir::StringAttr>("estc.manifest");
      if (!json)
        return llvm::createStringError("no estc.manifest");
      auto manifest = estc::manifestFromJson(json.getValue());
      if (!manifest)
        return manifest.takeError();
      lowered.manifest = std::move(*manifest);
      return lowered;
    };
  }

  std::unique_ptr<estc::JitModel> compile(estc::JitCompiler &jit) {
    auto model = jit.compile(source, "ScaleAdd", lower());
    if (!model) {
      ADD_FAILURE() << llvm::toString(model.takeError());
      return nullptr;
    }
    return std::move(*model);
  }

  std::string cacheDir, source;
  std::unique_ptr<mlir::DialectRegistry> registry;
  std::unique_ptr<mlir::MLIRContext> context;
  int lowerings = 0;
};

constexpr int64_t kBatch = 3;
const float kX[kBatch * 4] = {1.5f,    -2, 0.25f, 3e7f, 0,   1e-30f,
                              -7.125f, 8,  9,     10,   -11, 0.1f};
const float kV[4] = {0.3f, -0.7f, 1e-8f, 2};

std::vector<float> expected() {
  std::vector<float> y(kBatch * 4);
  for (int64_t i = 0; i < kBatch * 4; ++i)
    y[i] = kX[i] * 2.0f + kV[i % 4];
  return y;
}

/// Runs `model` twice on kX, kV through the generic CompiledModel API;
/// returns y.
std::vector<float> runTwice(estc::rt::CompiledModel &model) {
  int f = model.function_index("scale_add");
  model.set_batch(kBatch);
  std::memcpy(model.variable_data(model.variable_index("scale/v")), kV,
              sizeof kV);
  std::memcpy(model.input_data(f, model.input_index(f, "features/x")), kX,
              sizeof kX);
  model.run(f);
  model.run("scale_add");
  float steps =
      *static_cast<float *>(model.variable_data(model.variable_index("steps")));
  EXPECT_EQ(steps, 2.0f); // variables persist across calls
  const float *y = static_cast<const float *>(model.output_data(f, 0));
  return std::vector<float>(y, y + kBatch * 4);
}

TEST_F(JitTest, AotHeaderRunsTheObject) {
  ScaleAdd model;
  EXPECT_EQ(ScaleAdd::kNumVariables, 2);
  EXPECT_EQ(ScaleAdd::var_scale_v_count, 4);
  EXPECT_EQ(model.arena_bytes(10), 64 + 16 * 10);
  model.set_batch(kBatch);
  std::memcpy(model.var_scale_v(), kV, sizeof kV);
  std::memcpy(model.scale_add_arg_features_x(), kX, sizeof kX);
  model.scale_add();
  EXPECT_EQ(*model.var_steps(), 1.0f);
  std::vector<float> want = expected();
  EXPECT_EQ(0, std::memcmp(model.scale_add_result_y(), want.data(),
                           want.size() * sizeof(float)));
}

TEST_F(JitTest, JitAndAotAreBitIdentical) {
  ScaleAdd aot;
  std::vector<float> aotY = runTwice(aot);

  estc::JitCompiler jit({estc::TargetOptions{}, cacheDir, true});
  std::unique_ptr<estc::JitModel> model = compile(jit);
  ASSERT_TRUE(model);
  std::vector<float> jitY = runTwice(*model);
  ASSERT_EQ(aotY.size(), jitY.size());
  EXPECT_EQ(0,
            std::memcmp(aotY.data(), jitY.data(), aotY.size() * sizeof(float)));
  std::vector<float> want = expected();
  EXPECT_EQ(0,
            std::memcmp(want.data(), jitY.data(), want.size() * sizeof(float)));
}

TEST_F(JitTest, TypedCInterface) {
  estc::JitCompiler jit({estc::TargetOptions{}, cacheDir, true});
  std::unique_ptr<estc::JitModel> model = compile(jit);
  ASSERT_TRUE(model);
  struct Rank0 {
    float *allocated, *aligned;
    int64_t offset;
  };
  alignas(64) int8_t arena[64];
  alignas(64) float v[4], steps = 41, x[kBatch * 4], y[kBatch * 4];
  std::memcpy(v, kV, sizeof v);
  std::memcpy(x, kX, sizeof x);
  auto arenaDesc = estc::rt::makeRowMajor<int8_t, 1>(arena, {64});
  auto vDesc = estc::rt::makeRowMajor<float, 1>(v, {4});
  Rank0 stepsDesc{&steps, &steps, 0};
  auto xDesc = estc::rt::makeRowMajor<float, 2>(x, {kBatch, 4});
  auto yDesc = estc::rt::makeRowMajor<float, 2>(y, {kBatch, 4});
  using Fn = void (*)(void *, void *, void *, void *, void *);
  auto fn = reinterpret_cast<Fn>(model->lookupCInterface("scale_add"));
  ASSERT_NE(fn, nullptr);
  fn(&arenaDesc, &vDesc, &stepsDesc, &xDesc, &yDesc);
  EXPECT_EQ(steps, 42.0f);
  std::vector<float> want = expected();
  EXPECT_EQ(0, std::memcmp(y, want.data(), sizeof y));
}

TEST_F(JitTest, SameTargetSameObjectAsAot) {
  // estc_add_model compiled ScaleAdd.o for x86-64-v2; so does this JIT.
  estc::TargetOptions target;
  target.cpu = "x86-64-v2";
  estc::JitCompiler jit({target, cacheDir, true});
  ASSERT_TRUE(compile(jit));
  auto key = jit.cacheKey(source, "ScaleAdd");
  ASSERT_TRUE(bool(key));
  llvm::SmallString<256> cached(cacheDir);
  llvm::sys::path::append(cached, *key + ".o");
  std::string jitObject = readFile(cached.c_str());
  std::string aotObject = readFile(ESTC_SCALE_ADD_OBJECT);
  ASSERT_FALSE(aotObject.empty());
  EXPECT_TRUE(jitObject == aotObject)
      << "the JIT and estc --emit=obj compiled different code";
}

TEST_F(JitTest, SecondCompileIsACacheHit) {
  {
    estc::JitCompiler jit({estc::TargetOptions{}, cacheDir, true});
    ASSERT_TRUE(compile(jit));
    EXPECT_EQ(jit.stats().codegenRuns, 1);
    EXPECT_EQ(jit.stats().cacheHits, 0);
    EXPECT_EQ(jit.stats().cacheStores, 1);
    ASSERT_TRUE(compile(jit));
    EXPECT_EQ(jit.stats().codegenRuns, 1);
    EXPECT_EQ(jit.stats().cacheHits, 1);
  }
  EXPECT_EQ(lowerings, 1);
  // A new compiler (a new process, as far as the cache knows).
  estc::JitCompiler again({estc::TargetOptions{}, cacheDir, true});
  std::unique_ptr<estc::JitModel> model = compile(again);
  ASSERT_TRUE(model);
  EXPECT_EQ(lowerings, 1) << "a cached graph was lowered again";
  EXPECT_EQ(again.stats().codegenRuns, 0);
  EXPECT_EQ(again.stats().cacheHits, 1);
  std::vector<float> want = expected();
  std::vector<float> got = runTwice(*model);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4));
  EXPECT_EQ(model->manifest().functions.at(0).arenaStatic, 64);

  // Another source, name or target is another key.
  auto k1 = again.cacheKey(source, "ScaleAdd");
  auto k2 = again.cacheKey(source + " ", "ScaleAdd");
  auto k3 = again.cacheKey(source, "Other");
  estc::TargetOptions v2;
  v2.cpu = "x86-64-v2";
  auto k4 =
      estc::JitCompiler({v2, cacheDir, true}).cacheKey(source, "ScaleAdd");
  ASSERT_TRUE(k1 && k2 && k3 && k4);
  EXPECT_NE(*k1, *k2);
  EXPECT_NE(*k1, *k3);
  EXPECT_NE(*k1, *k4);
}

TEST_F(JitTest, NoCacheAlwaysCompiles) {
  estc::JitCompiler jit({estc::TargetOptions{}, cacheDir, false});
  ASSERT_TRUE(compile(jit));
  ASSERT_TRUE(compile(jit));
  EXPECT_EQ(jit.stats().codegenRuns, 2);
  EXPECT_EQ(jit.stats().cacheHits, 0);
}

TEST_F(JitTest, BadCpuIsOneLine) {
  estc::TargetOptions bogus;
  bogus.cpu = "bogus";
  estc::JitCompiler jit({bogus, cacheDir, true});
  auto model = jit.compile(source, "ScaleAdd", lower());
  ASSERT_FALSE(model);
  std::string message = llvm::toString(model.takeError());
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_NE(message.find("--mcpu=bogus"), std::string::npos) << message;
  EXPECT_EQ(lowerings, 0);
}

TEST_F(JitTest, ShapeErrors) {
  ScaleAdd model;
  EXPECT_THROW(model.scale_add(), std::logic_error); // no batch yet
  model.set_batch(2);
  float buffer[12];
  try {
    model.bind_input(ScaleAdd::k_scale_add, 0, buffer, {3, 4});
    FAIL() << "wrong batch accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "ScaleAdd: scale_add: input 'features/x': "
                           "expected shape [batch, 4] with batch 2, got "
                           "[3, 4]");
  }
  EXPECT_THROW(model.bind_input(ScaleAdd::k_scale_add, 0, buffer, {2, 5}),
               std::invalid_argument);
  EXPECT_THROW(model.variable_index("nope"), std::invalid_argument);
  try {
    model.output_index(ScaleAdd::k_scale_add, "nope");
    FAIL() << "unknown output accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "ScaleAdd: scale_add: no output 'nope'");
  }
  // The find_* lookups answer -1 where the *_index ones throw.
  EXPECT_EQ(model.find_function("nope"), -1);
  EXPECT_EQ(model.find_variable("nope"), -1);
  EXPECT_EQ(model.find_input(ScaleAdd::k_scale_add, "nope"), -1);
  EXPECT_EQ(model.find_output(ScaleAdd::k_scale_add, "nope"), -1);
  EXPECT_EQ(model.find_function("scale_add"), ScaleAdd::k_scale_add);
  EXPECT_EQ(model.find_variable("steps"), model.variable_index("steps"));
  EXPECT_EQ(model.find_input(ScaleAdd::k_scale_add, "features/x"), 0);
  EXPECT_EQ(model.find_output(ScaleAdd::k_scale_add, "y"), 0);
  EXPECT_EQ(model.variable_bytes(model.variable_index("scale/v")),
            4 * static_cast<int64_t>(sizeof(float)));
  // A bound caller buffer is used as is.
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
  model.bind_input(ScaleAdd::k_scale_add, 0, x, {2, 4});
  model.bind_output(ScaleAdd::k_scale_add, 0, y, {2, 4});
  model.scale_add();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], 2 * x[i]);
  // Overlapping buffers of one call are refused with one line, the model's
  // buffers untouched.
  float z[12] = {};
  model.bind_input(ScaleAdd::k_scale_add, 0, z, {2, 4});
  model.bind_output(ScaleAdd::k_scale_add, 0, z + 4, {2, 4});
  try {
    model.scale_add();
    FAIL() << "overlapping input and output accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "ScaleAdd: scale_add: bound input 'features/x' "
                           "overlaps output 'y' (the buffers of one call "
                           "must not overlap)");
  }
  for (float v : z)
    EXPECT_EQ(v, 0.0f);
  model.bind_input(ScaleAdd::k_scale_add, 0,
                   model.variable_data(model.variable_index("scale/v")),
                   {2, 4});
  try {
    model.scale_add();
    FAIL() << "an input bound over a variable accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("overlaps variable 'scale/v'"),
              std::string::npos)
        << e.what();
  }
  // Disjoint again: runs.
  model.bind_input(ScaleAdd::k_scale_add, 0, x, {2, 4});
  model.bind_output(ScaleAdd::k_scale_add, 0, z, {2, 4});
  model.scale_add();
  EXPECT_EQ(z[7], 2 * x[7]);
}

} // namespace
