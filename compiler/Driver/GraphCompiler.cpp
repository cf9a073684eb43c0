//===- GraphCompiler.cpp - Graph to native code, as a library -----------===//

#include "compiler/Driver/GraphCompiler.h"

#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Pipelines/Registration.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Graph/GraphIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

namespace estc {

namespace {
#ifdef NDEBUG
constexpr bool kAssertionsEnabled = false;
#else
constexpr bool kAssertionsEnabled = true;
#endif

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Error runStages(mlir::ModuleOp module, Stage last, llvm::StringRef what,
                      bool applyCLOptions, const PipelineOptions &options,
                      bool verifyEachPass) {
  if (options.device == Device::Cuda && last == Stage::LLVM) {
    std::string problem = checkCudaToolkit(options.cudaPath);
    if (!problem.empty())
      return makeError(problem);
  }
  mlir::MLIRContext *context = module.getContext();
  std::string message;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
        message.empty())
      message = formatImportDiagnostic(diag, what.str());
    return mlir::success();
  });
  mlir::PassManager pm(context);
  // The module is verified once at the end rather than after every pass
  // (that was half of the ConvNet's lowering time: 0.12 s CPU), but for
  // estc --verify-each and builds with assertions, where the verifier names
  // the pass at fault.
  verifyEachPass |= kAssertionsEnabled;
  pm.enableVerifier(verifyEachPass);
  if (applyCLOptions && mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return makeError("invalid pass manager options");
  buildPipeline(pm, last, options);
  if (applyCLOptions) {
    // --mlir-timing (when the tool registered it): last, so that it times
    // the passes only.
    auto timing = std::make_unique<mlir::DefaultTimingManager>();
    mlir::applyDefaultTimingManagerCLOptions(*timing);
    if (timing->isEnabled())
      pm.enableTiming(std::move(timing));
  }
  if (mlir::failed(pm.run(module)) ||
      (!verifyEachPass && mlir::failed(mlir::verify(module))))
    return makeError(message.empty() ? what.str() + ": compilation failed"
                                     : message);
  return llvm::Error::success();
}

void disableRuntimeChecks(mlir::ModuleOp module) {
  module->setAttr("estc.runtime_checks_disabled",
                  mlir::UnitAttr::get(module.getContext()));
}

void setReplicas(mlir::ModuleOp module, int replicas) {
  if (replicas > 1)
    module->setAttr(
        "estc.replicas",
        mlir::IntegerAttr::get(mlir::IntegerType::get(module.getContext(), 64),
                               replicas));
}

void setParameterServers(mlir::ModuleOp module, int tasks, int task,
                         llvm::StringRef strategy) {
  if (tasks <= 0)
    return;
  auto i64 = mlir::IntegerType::get(module.getContext(), 64);
  module->setAttr("estc.ps_tasks", mlir::IntegerAttr::get(i64, tasks));
  if (task >= 0)
    module->setAttr("estc.ps_task", mlir::IntegerAttr::get(i64, task));
  if (!strategy.empty())
    module->setAttr("estc.ps_strategy",
                    mlir::StringAttr::get(module.getContext(), strategy));
}

void dropUncompilableTrain(mlir::ModuleOp module, WarningHandler warn) {
  auto train = module.lookupSymbol<mlir::func::FuncOp>("train");
  if (!train)
    return;
  bool minimizes = false;
  train.walk([&](mlir::est::MinimizeOp) { minimizes = true; });
  if (!minimizes)
    return;
  warn("@train not compiled: est-autodiff cannot differentiate its loss "
       "(see estc --compile-to=autodiff)");
  train.erase();
}

llvm::Expected<Manifest>
prepareForLowering(mlir::ModuleOp module, llvm::StringRef modelName,
                   llvm::StringRef what, WarningHandler warn,
                   bool applyCLOptions, bool verifyEachPass) {
  if (llvm::Error e = runStages(module, Stage::Autodiff, what, applyCLOptions,
                                /*options=*/{}, verifyEachPass))
    return e;
  dropUncompilableTrain(module, warn);
  llvm::Expected<Manifest> manifest = extractManifest(module, modelName);
  if (!manifest)
    return makeError(what.str() + ": " + llvm::toString(manifest.takeError()));
  module->setAttr("estc.manifest", mlir::StringAttr::get(module.getContext(),
                                                         toJson(*manifest)));
  return manifest;
}

void setManifestDevice(mlir::ModuleOp module, Manifest &manifest,
                       const PipelineOptions &options) {
  manifest.device = options.device;
  manifest.gpuArch = options.device == Device::Cuda ? options.gpuArch : "";
  module->setAttr("estc.manifest",
                  mlir::StringAttr::get(module.getContext(), toJson(manifest)));
}

llvm::Expected<Manifest>
lowerToLLVMDialect(mlir::ModuleOp module, llvm::StringRef modelName,
                   llvm::StringRef what, WarningHandler warn,
                   const PipelineOptions &options, CompileTimer *timer) {
  llvm::Expected<Manifest> manifest = [&] {
    CompileTimer::Scope phase(timer, "est");
    return prepareForLowering(module, modelName, what, warn);
  }();
  if (!manifest)
    return manifest.takeError();
  setManifestDevice(module, *manifest, options);
  CompileTimer::Scope phase(timer, "lower");
  if (llvm::Error e = runStages(module, Stage::LLVM, what,
                                /*applyCLOptions=*/false, options))
    return e;
  if (llvm::Error e = readArenaSizes(module, *manifest))
    return makeError(what.str() + ": " + llvm::toString(std::move(e)));
  return manifest;
}

llvm::Expected<std::unique_ptr<JitModel>>
jitCompileGraph(JitCompiler &jit, const graph::GraphDef &graph,
                llvm::StringRef modelName, WarningHandler warn) {
  // The cache key's source: the graph's deterministic bytes.
  std::string bytes;
  if (!graph::serializeGraph(graph, bytes))
    return makeError(modelName.str() + ": the graph cannot be serialized");
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  std::string what = modelName.str() + " (graph)";
  CompileTimer *timer = jit.options().timer;
  // As estc --replicas: a count the manifest can hold, on the CPU only.
  int replicas = jit.options().replicas;
  std::string replicasOption =
      modelName.str() + ": JitOptions::replicas = " + std::to_string(replicas);
  if (replicas < 0 || replicas > (1 << 20))
    return makeError(replicasOption + ": not in 0..1048576");
  if (replicas > 1 && jit.options().target.device == Device::Cuda)
    return makeError(replicasOption + ": only for the CPU target (NCCL for "
                                      "CUDA replicas is not built yet)");
  const JitOptions &o = jit.options();
  if (o.psTasks < 0 || o.psTasks > (1 << 16) || o.psTask < -1 ||
      (o.psTasks > 0 && o.psTask >= o.psTasks) ||
      (o.psTasks == 0 && o.psTask != -1))
    return makeError(modelName.str() +
                     ": JitOptions::psTasks = " + std::to_string(o.psTasks) +
                     ", psTask = " + std::to_string(o.psTask) +
                     ": not a task of the cluster (psTasks in 0..65536, "
                     "psTask in -1..psTasks-1)");
  if (o.psTasks > 0 && (replicas > 1 || o.target.device == Device::Cuda))
    return makeError(modelName.str() +
                     ": parameter-server training runs on the CPU, without "
                     "replicas (JitOptions::replicas)");
  return jit.compile(bytes, modelName, [&]() -> llvm::Expected<LoweredModule> {
    std::string error;
    LoweredModule lowered;
    {
      CompileTimer::Scope phase(timer, "import");
      lowered.module = importGraph(graph, context, what, error);
    }
    if (!lowered.module)
      return makeError(error);
    if (!jit.options().runtimeChecks)
      disableRuntimeChecks(*lowered.module);
    setReplicas(*lowered.module, jit.options().replicas);
    setParameterServers(*lowered.module, jit.options().psTasks,
                        jit.options().psTask, jit.options().psStrategy);
    llvm::Expected<Manifest> manifest =
        lowerToLLVMDialect(*lowered.module, modelName, what, warn,
                           jit.options().target.pipelineOptions(), timer);
    if (!manifest)
      return manifest.takeError();
    lowered.manifest = std::move(*manifest);
    return lowered;
  });
}

llvm::Expected<CompiledObject>
compileGraphToObject(const graph::GraphDef &graph, llvm::StringRef modelName,
                     const TargetOptions &target, bool runtimeChecks,
                     llvm::ArrayRef<std::string> keep, WarningHandler warn,
                     CompileTimer *timer) {
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  std::string what = modelName.str() + " (graph)";
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    CompileTimer::Scope phase(timer, "import");
    module = importGraph(graph, context, what, error);
  }
  if (!module)
    return makeError(error);
  if (!runtimeChecks)
    disableRuntimeChecks(*module);
  llvm::Expected<Manifest> manifest = lowerToLLVMDialect(
      *module, modelName, what, warn, target.pipelineOptions(), timer);
  if (!manifest)
    return manifest.takeError();
  if (!keep.empty())
    keepFunctions(*manifest, keep);
  std::vector<std::string> functions;
  for (const FunctionInfo &f : manifest->functions)
    functions.push_back(f.name);
  llvm::Expected<TargetDescription> description = describeTarget(target);
  if (!description)
    return description.takeError();
  llvm::Expected<unsigned> threads = compileThreadCount(0);
  if (!threads)
    return threads.takeError();
  llvm::Expected<std::string> object = compileModuleOnThreads(
      *module, modelName, functions, target, CodeKind::Object, *threads, timer);
  if (!object)
    return object.takeError();
  return CompiledObject{std::move(*object), std::move(*manifest),
                        std::move(*description)};
}

} // namespace estc
