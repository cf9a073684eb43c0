//===- CudaTargetTest.cpp - The CUDA target of the compiler, in process --===//
//
// What the compiler does for --target=cuda without a GPU (docs/design/gpu.md):
// a seed model compiled in process to an object that embeds its kernels
// (fatbin) and calls the runtime's mgpu* functions, the manifest's device,
// the target's one-line errors and its JIT cache key. The JIT compiles and
// loads a CUDA model when the process has the runtime's mgpu* functions;
// running it needs a GPU, and is skipped (visibly) without one. Tests that
// need the toolkit skip visibly without it (ESTC_CUDA_TOOLKIT).
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Registration.h"
#include "lib/Models/Models.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>
#include <set>
#include <string>

#ifndef ESTC_CUDA_TOOLKIT
#define ESTC_CUDA_TOOLKIT ""
#endif

namespace estc {
namespace {

bool haveToolkit() { return std::strlen(ESTC_CUDA_TOOLKIT) > 0; }

TargetOptions cudaTarget(const std::string &arch) {
  TargetOptions target;
  target.device = Device::Cuda;
  target.gpuArch = arch;
  target.cudaPath = ESTC_CUDA_TOOLKIT;
  return target;
}

void noWarnings(llvm::StringRef warning) {
  ADD_FAILURE() << "warning: " << warning.str();
}

/// The symbols an object defines and leaves undefined, and its sections.
struct ObjectContents {
  std::set<std::string> defined, undefined, sections;
  /// Whether a section is .init_array or .init_array.<priority>.
  bool hasInitArray() const {
    return llvm::any_of(sections, [](const std::string &name) {
      return llvm::StringRef(name).starts_with(".init_array");
    });
  }
};

ObjectContents contentsOf(const std::string &bytes) {
  ObjectContents contents;
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(bytes, "object.o"));
  if (!object) {
    ADD_FAILURE() << llvm::toString(object.takeError());
    return contents;
  }
  for (const llvm::object::SymbolRef &symbol : (*object)->symbols()) {
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    llvm::Expected<uint32_t> flags = symbol.getFlags();
    if (!name || !flags) {
      ADD_FAILURE() << "unreadable symbol";
      llvm::consumeError(name.takeError());
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (*flags & llvm::object::SymbolRef::SF_Undefined)
      contents.undefined.insert(name->str());
    else if (*flags & llvm::object::SymbolRef::SF_Global)
      contents.defined.insert(name->str());
  }
  for (const llvm::object::SectionRef &section : (*object)->sections())
    if (llvm::Expected<llvm::StringRef> name = section.getName())
      contents.sections.insert(name->str());
    else
      llvm::consumeError(name.takeError());
  return contents;
}

TEST(CudaTarget, ObjectEmbedsKernelsAndCallsTheRuntime) {
  if (!haveToolkit())
    GTEST_SKIP() << "SKIP: no CUDA toolkit (ESTC_CUDA_TOOLKIT)";
  llvm::Expected<CompiledObject> compiled =
      compileGraphToObject(models::build_mlp(42), "Mlp", cudaTarget("sm_80"),
                           /*runtimeChecks=*/true, {}, noWarnings);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  EXPECT_EQ(compiled->manifest.device, rt::Device::Cuda);
  EXPECT_EQ(compiled->manifest.gpuArch, "sm_80");
  EXPECT_NE(toJson(compiled->manifest).find("\"device\": \"cuda\""),
            std::string::npos);

  // A fatbin (magic 0xBA55ED50, little-endian) per kernel module.
  const char magic[] = {'\x50', '\xED', '\x55', '\xBA'};
  EXPECT_NE(compiled->object.find(std::string(magic, 4)), std::string::npos);

  ObjectContents contents = contentsOf(compiled->object);
  const std::set<std::string> &defined = contents.defined;
  const std::set<std::string> &undefined = contents.undefined;
  EXPECT_TRUE(contents.hasInitArray());
  for (const char *f : {"train", "eval", "predict", "init"}) {
    EXPECT_TRUE(defined.count(std::string("Mlp_") + f)) << f;
    EXPECT_TRUE(defined.count(std::string("Mlp_") + f + "_packed")) << f;
  }
  for (const char *runtime :
       {"mgpuModuleLoad", "mgpuModuleUnload", "mgpuModuleGetFunction",
        "mgpuLaunchKernel", "mgpuStreamCreate", "mgpuStreamSynchronize",
        "mgpuStreamDestroy", "_mlir_ciface_estc_cuda_matmul_f32"})
    EXPECT_TRUE(undefined.count(runtime)) << runtime;
  // No CPU kernel and no thread pool: everything runs on the device.
  EXPECT_FALSE(undefined.count("_mlir_ciface_estc_matmul_f32"));
  EXPECT_FALSE(undefined.count("estc_parallel_for"));
}

TEST(CudaTarget, JitObjectExportsItsConstructors) {
  if (!haveToolkit())
    GTEST_SKIP() << "SKIP: no CUDA toolkit (ESTC_CUDA_TOOLKIT)";
  // The AOT object loads its kernels from .init_array; the JIT's (ORC runs
  // no constructors of an object file) from Mlp__estc_init, which the JIT
  // calls, and unloads them in Mlp__estc_fini.
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  for (bool exported : {false, true}) {
    SCOPED_TRACE(exported ? "exported" : "constructors");
    mlir::MLIRContext context(registry);
    std::string error;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        importGraph(models::build_linear(1), context, "linear (graph)", error);
    ASSERT_TRUE(module) << error;
    TargetOptions target = cudaTarget("sm_90");
    llvm::Expected<Manifest> manifest =
        lowerToLLVMDialect(*module, "Linear", "linear (graph)", noWarnings,
                           target.pipelineOptions());
    ASSERT_TRUE(static_cast<bool>(manifest))
        << llvm::toString(manifest.takeError());
    std::vector<std::string> functions;
    for (const FunctionInfo &f : manifest->functions)
      functions.push_back(f.name);
    llvm::Expected<std::string> object = compileModule(
        *module, "Linear", functions, target, CodeKind::Object, exported);
    ASSERT_TRUE(static_cast<bool>(object))
        << llvm::toString(object.takeError());
    ObjectContents contents = contentsOf(*object);
    EXPECT_EQ(contents.defined.count("Linear__estc_init"), exported ? 1u : 0u);
    EXPECT_EQ(contents.defined.count("Linear__estc_fini"), exported ? 1u : 0u);
    EXPECT_EQ(contents.hasInitArray(), !exported);
    EXPECT_TRUE(contents.undefined.count("mgpuModuleLoad"));
    EXPECT_TRUE(contents.defined.count("Linear_train_packed"));
  }
}

TEST(CudaTarget, BadArchitectureAndToolkitAreOneLine) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(cudaTarget("sm_75"));
  ASSERT_FALSE(static_cast<bool>(machine));
  EXPECT_EQ(llvm::toString(machine.takeError()),
            "--gpu-arch=sm_75: unsupported GPU architecture (one of sm_80, "
            "sm_86, sm_89, sm_90, sm_90a, sm_100)");

  TargetOptions noToolkit = cudaTarget("sm_90");
  noToolkit.cudaPath = "/nonexistent/cuda";
  machine = createTargetMachine(noToolkit);
  ASSERT_FALSE(static_cast<bool>(machine));
  EXPECT_EQ(llvm::toString(machine.takeError()),
            "CUDA toolkit not found: /nonexistent/cuda/bin/ptxas does not "
            "exist (set ESTC_CUDA_PATH to the toolkit)");

  // The same from the library's compile path.
  llvm::Expected<CompiledObject> compiled =
      compileGraphToObject(models::build_linear(1), "Linear", noToolkit,
                           /*runtimeChecks=*/true, {}, noWarnings);
  ASSERT_FALSE(static_cast<bool>(compiled));
  std::string message = llvm::toString(compiled.takeError());
  EXPECT_NE(message.find("CUDA toolkit not found: /nonexistent/cuda/bin/ptxas"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(CudaTarget, CacheKeyKeepsDevicesAndArchitecturesApart) {
  TargetOptions cpu;
  TargetOptions sm80 = cudaTarget("sm_80");
  TargetOptions sm90 = cudaTarget("sm_90");
  EXPECT_EQ(cpu.describe().find("cuda"), std::string::npos);
  EXPECT_NE(cpu.describe(), sm80.describe());
  EXPECT_NE(sm80.describe(), sm90.describe());
  EXPECT_EQ(sm90.describe(), cpu.describe() + "/cuda/sm_90");
}

TEST(CudaTarget, JitCompilesAndLoadsInProcess) {
  if (!haveToolkit())
    GTEST_SKIP() << "SKIP: no CUDA toolkit (ESTC_CUDA_TOOLKIT)";
  // The runtime's mgpu* functions (runtime/Cuda) resolve the object's
  // kernel loading and launches.
  if (!dlsym(RTLD_DEFAULT, "mgpuModuleLoad"))
    GTEST_SKIP() << "SKIP: this process has no mgpuModuleLoad (a runtime "
                    "built without runtime/Cuda)";
  JitOptions options;
  options.target = cudaTarget("sm_80");
  options.useCache = false;
  JitCompiler jit(options);
  std::unique_ptr<JitModel> model;
  try {
    llvm::Expected<std::unique_ptr<JitModel>> compiled =
        jitCompileGraph(jit, models::build_mlp(42), "Mlp", noWarnings);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError());
    model = std::move(*compiled);
  } catch (const std::runtime_error &e) {
    // The model is compiled and its object loaded; its device memory needs
    // a GPU.
    EXPECT_EQ(jit.stats().codegenRuns, 1);
    GTEST_SKIP() << "SKIP: no CUDA device: " << e.what();
  }
  EXPECT_EQ(model->manifest().device, rt::Device::Cuda);
  ASSERT_NE(model->lookupPacked("train"), nullptr);
  model->set_batch(2);
  model->run(model->function_index("init"));
  model->run(model->function_index("predict"));
  int predict = model->function_index("predict");
  const float *p = static_cast<const float *>(model->output_data(
      predict, model->output_index(predict, "predictions/probabilities")));
  float sum = 0;
  for (int i = 0; i < 10; ++i)
    sum += p[i];
  EXPECT_NEAR(sum, 1.0f, 1e-5f);
}

} // namespace
} // namespace estc
