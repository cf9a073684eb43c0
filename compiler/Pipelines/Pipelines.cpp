//===- Pipelines.cpp - The estc compilation pipeline, stage by stage ----===//
//
// The table of contents of the compiler: one function per stage, each a
// short list of passes, in the order they run.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Codegen/Passes.h"
#include "compiler/Conversion/EstToLinalg/Passes.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace estc {

namespace {
// The stages the driver offers, in pipeline order. A stage is listed once
// its add*Passes function below is implemented.
constexpr Stage kAllStages[] = {
    Stage::Import,    Stage::Est,     Stage::Autodiff,
    Stage::Decompose, Stage::Linalg,  Stage::Fusion,
    Stage::Bufferize, Stage::MemPlan, Stage::LLVM};
} // namespace

llvm::StringRef deviceName(Device device) {
  return device == Device::Cuda ? "cuda" : "cpu";
}

std::optional<Device> parseDevice(llvm::StringRef name) {
  if (name == "cpu")
    return Device::Cpu;
  if (name == "cuda")
    return Device::Cuda;
  return std::nullopt;
}

llvm::ArrayRef<llvm::StringRef> supportedGpuArchs() {
  static const llvm::StringRef archs[] = {"sm_80", "sm_86",  "sm_89",
                                          "sm_90", "sm_90a", "sm_100"};
  return archs;
}

std::string checkGpuArch(llvm::StringRef arch) {
  if (llvm::is_contained(supportedGpuArchs(), arch))
    return "";
  std::string names;
  for (llvm::StringRef name : supportedGpuArchs())
    names += (names.empty() ? "" : ", ") + name.str();
  return "--gpu-arch=" + arch.str() +
         ": unsupported GPU architecture (one of " + names + ")";
}

std::string checkCudaToolkit(llvm::StringRef cudaPath) {
  std::string root = cudaPath.empty() ? defaultCudaPath() : cudaPath.str();
  for (const char *tool : {"ptxas", "fatbinary"}) {
    llvm::SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", tool);
    if (!llvm::sys::fs::can_execute(path))
      return "CUDA toolkit not found: " + std::string(path) +
             " does not exist (set ESTC_CUDA_PATH to the toolkit)";
  }
  return "";
}

llvm::StringRef stageName(Stage stage, Device device) {
  switch (stage) {
  case Stage::Import:
    return "import";
  case Stage::Est:
    return "est";
  case Stage::Autodiff:
    return "autodiff";
  case Stage::Decompose:
    return "decompose";
  case Stage::Linalg:
    return "linalg";
  case Stage::Fusion:
    return "fusion";
  case Stage::Bufferize:
    return "bufferize";
  case Stage::MemPlan:
    return "memplan";
  case Stage::LLVM:
    return device == Device::Cuda ? "gpu" : "llvm";
  }
  return "";
}

std::optional<Stage> parseStage(llvm::StringRef name) {
  if (name == "gpu")
    return Stage::LLVM;
  for (Stage stage : kAllStages)
    if (stageName(stage) == name)
      return stage;
  return std::nullopt;
}

std::string allStageNames() {
  std::string names;
  for (Stage stage : kAllStages)
    names += (names.empty() ? "" : ", ") + stageName(stage).str();
  return names;
}

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

void addEstOptimizationPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::est::createShapeInferencePass());
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
  funcPm.addPass(mlir::est::createDCEPass());
  // The labels' and indices' range checks, once shapes are known.
  pm.addPass(mlir::est::createEstInsertRuntimeChecks());
  // @init computes every variable's initializer; last, so that it sees
  // every variable (rebuilt if a stage before added some).
  pm.addPass(mlir::est::createEstCreateInitFunction());
}

void addAutodiffPasses(mlir::OpPassManager &pm) {
  pm.addPass(mlir::est::createEstAutodiff());
  pm.nest<mlir::func::FuncOp>().addPass(mlir::est::createShapeInferencePass());
  // A module compiled for data-parallel replicas averages the gradients
  // (and the loss) over them before the update.
  pm.addPass(mlir::est::createEstInsertCollectives());
  // A module compiled for parameter-server training: a worker's step pushes
  // the gradients and pulls table rows; a ps task's keeps the updates of
  // its variables.
  pm.addPass(mlir::est::createEstPsWorker());
  pm.addPass(mlir::est::createEstPsTask());
  pm.addPass(mlir::est::createEstExpandOptimizers());
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
  funcPm.addPass(mlir::est::createDCEPass());
  // @init again: it now also initializes the optimizer's slot variables and
  // global_step.
  pm.addPass(mlir::est::createEstCreateInitFunction());
}

void addDecompositionPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::est::createEstDecompose());
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
}

void addLinalgLoweringPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::est::createConvertEstToLinalg());
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
}

void addFusionPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::est::createEstFusion());
  funcPm.addPass(mlir::createCanonicalizerPass());
  funcPm.addPass(mlir::createCSEPass());
}

void addBufferizationPasses(mlir::OpPassManager &pm,
                            const PipelineOptions &options) {
  // Variables, inputs and outputs become buffer arguments (the C ABI).
  pm.addPass(mlir::est::createEstFunctionAbi());
  // Results computed directly in the output buffers, then in-place
  // bufferization of the bodies (the signatures are buffers already).
  pm.addPass(mlir::bufferization::createEmptyTensorEliminationPass());
  pm.addPass(mlir::bufferization::createOneShotBufferizePass());
  if (options.device == Device::Cuda) {
    // cuBLAS / cuDNN calls; the epilogues stay fused elementwise kernels.
    mlir::est::EstLinalgToRuntimeCallsOptions calls;
    calls.device = "cuda";
    pm.addPass(mlir::est::createEstLinalgToRuntimeCalls(calls));
  } else {
    pm.addPass(mlir::est::createEstLinalgToRuntimeCalls());
    // act(C + bias) after a kernel call into the call.
    pm.addPass(mlir::est::createEstFuseEpilogues());
    // Tiny products (the iris-sized net's) as vector code, not calls.
    pm.addPass(mlir::est::createEstInlineSmallMatmuls());
  }
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void addMemoryPlanningPasses(mlir::OpPassManager &pm) {
  pm.addPass(mlir::est::createEstMemoryPlanning());
  pm.addPass(mlir::createCanonicalizerPass());
}

void addLLVMLoweringPasses(mlir::OpPassManager &pm) {
  mlir::OpPassManager &prepPm = pm.nest<mlir::func::FuncOp>();
  prepPm.addPass(mlir::est::createEstMemrefCopyToLinalg());
  prepPm.addPass(mlir::est::createEstLoadScalarOperands());
  // Loops shaped for the vectorizer: unused inputs dropped, contiguous
  // loops merged.
  prepPm.addPass(mlir::est::createEstCollapseLoopDims());
  // One view per collapsed buffer: an in-place update reads and writes the
  // same value, which LLVM then sees as one pointer.
  prepPm.addPass(mlir::createCSEPass());
  // Large loop nests move to functions the runtime's thread pool runs in
  // chunks (estc_parallel_for); the rest become loops in place.
  pm.addPass(mlir::est::createEstParallelizeLoops());
  // Each remaining loop nest in a function of its own (a call: noinline)
  // whose distinct buffers are noalias, so the vectorizer needs no overlap
  // checks; the parallel loop nests' buffers get noalias too.
  pm.addPass(mlir::est::createEstOutlineLoopNests());
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::createConvertLinalgToLoopsPass());
  // The fused row ops' phases, each a loop of its own.
  funcPm.addPass(mlir::est::createEstUnrollPhaseLoops());
  funcPm.addPass(mlir::createLowerAffinePass());
  funcPm.addPass(mlir::createSCFToControlFlowPass());
  // The run-time checks' early returns, now that the body is in cf form.
  funcPm.addPass(mlir::est::createEstLowerRuntimeChecks());
  // The conversions that touch one function at a time run on each function
  // (in parallel, on the context's threads); those that add declarations
  // to the module (libm, the function signatures) on the module.
  funcPm.addPass(mlir::est::createEstExpandShapeToReinterpretCast());
  funcPm.addPass(mlir::memref::createExpandStridedMetadataPass());
  funcPm.addPass(mlir::createLowerAffinePass());
  // f32 exp, log, log1p, expm1, tanh and erf as arithmetic the loop
  // vectorizer widens, not libm calls (MathAccuracyTest bounds their error;
  // docs/conventions.md). The rest of math stays libm calls or expansions.
  // Before math-expand-ops, which would turn tanh into an exp formula;
  // again after it, for the exps and logs of its expansions (sinh, powf,
  // ...).
  mlir::est::EstApproximateMathOptions approximate;
  approximate.ops = {"exp", "log", "log1p", "expm1", "tanh", "erf"};
  funcPm.addPass(mlir::est::createEstApproximateMath(approximate));
  funcPm.addPass(mlir::math::createMathExpandOpsPass());
  funcPm.addPass(mlir::est::createEstApproximateMath(approximate));
  // est-inline-small-matmuls' vector loads, stores and broadcasts.
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  pm.nest<mlir::func::FuncOp>().addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.nest<mlir::func::FuncOp>().addPass(
      mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  // The calls of the parallel loop nests, now that their captures are
  // plain LLVM values: packed into a struct for estc_parallel_for.
  pm.addPass(mlir::est::createEstLowerParallelCalls());
  // noalias arguments and loop annotations recorded by
  // est-outline-loop-nests, onto the LLVM functions and branches.
  pm.addPass(mlir::est::createEstNoAliasToLLVM());
}

void addGpuLoweringPasses(mlir::OpPassManager &pm,
                          const PipelineOptions &options) {
  // As on the CPU, minus est-load-scalar-operands: host code never reads a
  // buffer (every buffer is device memory).
  mlir::OpPassManager &prepPm = pm.nest<mlir::func::FuncOp>();
  prepPm.addPass(mlir::est::createEstMemrefCopyToLinalg());
  prepPm.addPass(mlir::est::createEstCollapseLoopDims());
  prepPm.addPass(mlir::createCSEPass());
  // Every loop nest and run-time check a gpu.launch.
  pm.addPass(mlir::est::createEstGpuMapLoops());
  // (No CSE before outlining: it would replace a kernel's constants by the
  // host's, which then become kernel arguments.)
  pm.addPass(mlir::createGpuKernelOutliningPass());
  // One gpu.module for all the kernels: one ptxas run, one image to load.
  pm.addPass(mlir::est::createEstGpuMergeKernelModules());
  mlir::GpuNVVMAttachTargetOptions nvvm;
  nvvm.chip = options.gpuArch;
  // The PTX ISA every accepted architecture has (sm_100 needs 8.6).
  nvvm.features = options.gpuArch == "sm_100" ? "+ptx86" : "+ptx80";
  nvvm.optLevel = 3;
  pm.addPass(mlir::createGpuNVVMAttachTarget(nvvm));
  // The kernels: loops to branches, then NVVM (math ops become libdevice
  // calls, which gpu-module-to-binary links from the toolkit).
  mlir::OpPassManager &kernelPm = pm.nest<mlir::gpu::GPUModuleOp>();
  // (A linalg op inside a loop nest a kernel runs whole.)
  kernelPm.addPass(mlir::createConvertLinalgToLoopsPass());
  kernelPm.addPass(mlir::createCanonicalizerPass());
  kernelPm.addPass(mlir::createCSEPass());
  kernelPm.addPass(mlir::createLowerAffinePass());
  kernelPm.addPass(mlir::createSCFToControlFlowPass());
  kernelPm.addPass(mlir::memref::createExpandStridedMetadataPass());
  kernelPm.addPass(mlir::createLowerAffinePass());
  kernelPm.addPass(mlir::createConvertGpuOpsToNVVMOps());
  kernelPm.addPass(mlir::createReconcileUnrealizedCastsPass());
  // The host: the entry points' descriptor arithmetic, kernel calls and
  // launches, to the LLVM dialect.
  mlir::OpPassManager &hostPm = pm.nest<mlir::func::FuncOp>();
  hostPm.addPass(mlir::createLowerAffinePass());
  hostPm.addPass(mlir::createSCFToControlFlowPass());
  hostPm.addPass(mlir::est::createEstExpandShapeToReinterpretCast());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createGpuToLLVMConversionPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  // ptxas and fatbinary from the toolkit: a cubin for the arch and its PTX.
  mlir::GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath =
      options.cudaPath.empty() ? defaultCudaPath() : options.cudaPath;
  binary.compilationTarget = options.gpuFormat;
  pm.addPass(mlir::createGpuModuleToBinaryPass(binary));
}

namespace {
/// Each stage after import: the function that adds its passes and what it
/// does, for its registered pass pipeline.
struct StagePasses {
  Stage stage;
  void (*add)(mlir::OpPassManager &, const PipelineOptions &);
  const char *summary;
};

/// The add*Passes functions that do not depend on the target.
template <void (*Add)(mlir::OpPassManager &)>
void anyTarget(mlir::OpPassManager &pm, const PipelineOptions &) {
  Add(pm);
}

void addLastStagePasses(mlir::OpPassManager &pm,
                        const PipelineOptions &options) {
  if (options.device == Device::Cuda)
    addGpuLoweringPasses(pm, options);
  else
    addLLVMLoweringPasses(pm);
}

constexpr StagePasses kStagePasses[] = {
    {Stage::Est, anyTarget<addEstOptimizationPasses>,
     "The est stage: shape inference, canonicalization, CSE, DCE, @init"},
    {Stage::Autodiff, anyTarget<addAutodiffPasses>,
     "The autodiff stage: est.minimize to gradients and optimizer updates"},
    {Stage::Decompose, anyTarget<addDecompositionPasses>,
     "The decompose stage: composite est ops to primitives"},
    {Stage::Linalg, anyTarget<addLinalgLoweringPasses>,
     "The linalg stage: est to linalg / tensor / arith / math on tensors"},
    {Stage::Fusion, anyTarget<addFusionPasses>,
     "The fusion stage: elementwise and reduction fusion on linalg"},
    {Stage::Bufferize, addBufferizationPasses,
     "The bufferize stage: buffer ABI, one-shot bufferization, runtime "
     "kernel calls"},
    {Stage::MemPlan, anyTarget<addMemoryPlanningPasses>,
     "The memplan stage: every temporary of a step in the arena"},
    {Stage::LLVM, addLastStagePasses,
     "The llvm stage: loops (large ones on the thread pool), then the LLVM "
     "dialect"},
};

/// The registered stage pipelines' options (PipelineOptions).
struct StagePipelineOptions
    : public mlir::PassPipelineOptions<StagePipelineOptions> {
  Option<Device> device{
      *this, "device", llvm::cl::desc("What the code runs on (default cpu)"),
      llvm::cl::init(Device::Cpu),
      llvm::cl::values(clEnumValN(Device::Cpu, "cpu", "the host CPU"),
                       clEnumValN(Device::Cuda, "cuda", "a CUDA GPU"))};
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("CUDA: the GPU architecture"),
                              llvm::cl::init("sm_90")};
  Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA: the toolkit (default $ESTC_CUDA_PATH, else "
                     "/usr/local/cuda)"),
      llvm::cl::init("")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("CUDA: the kernels as fatbin (default) or isa (PTX)"),
      llvm::cl::init("fatbin")};

  PipelineOptions toPipelineOptions(Device fixed) const {
    PipelineOptions options;
    options.device = fixed == Device::Cuda ? Device::Cuda : device.getValue();
    options.gpuArch = gpuArch;
    options.cudaPath = cudaPath;
    options.gpuFormat = format;
    return options;
  }
};
} // namespace

void buildPipeline(mlir::OpPassManager &pm, Stage last,
                   const PipelineOptions &options) {
  for (const StagePasses &entry : kStagePasses) {
    if (static_cast<int>(entry.stage) > static_cast<int>(last) ||
        !parseStage(stageName(entry.stage)))
      return;
    entry.add(pm, options);
  }
}

std::string stagePipelineName(Stage stage, Device device) {
  return ("estc-" + stageName(stage, device) + "-stage").str();
}

void registerStagePipelines() {
  for (const StagePasses &entry : kStagePasses) {
    auto add = entry.add;
    mlir::PassPipelineRegistration<StagePipelineOptions>(
        stagePipelineName(entry.stage), entry.summary,
        [add](mlir::OpPassManager &pm, const StagePipelineOptions &options) {
          add(pm, options.toPipelineOptions(Device::Cpu));
        });
  }
  mlir::PassPipelineRegistration<StagePipelineOptions>(
      stagePipelineName(Stage::LLVM, Device::Cuda),
      "The gpu stage (CUDA's last): every loop nest a GPU kernel, the host "
      "in the LLVM dialect, the kernels serialized",
      [](mlir::OpPassManager &pm, const StagePipelineOptions &options) {
        addGpuLoweringPasses(pm, options.toPipelineOptions(Device::Cuda));
      });
}

} // namespace estc
