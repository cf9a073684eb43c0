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
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace estc {

namespace {
// The stages the driver offers, in pipeline order. A stage is listed once
// its add*Passes function below is implemented.
constexpr Stage kAllStages[] = {
    Stage::Import,    Stage::Est,     Stage::Autodiff,
    Stage::Decompose, Stage::Linalg,  Stage::Fusion,
    Stage::Bufferize, Stage::MemPlan, Stage::LLVM};
} // namespace

llvm::StringRef stageName(Stage stage) {
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
    return "llvm";
  }
  return "";
}

std::optional<Stage> parseStage(llvm::StringRef name) {
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

void addBufferizationPasses(mlir::OpPassManager &pm) {
  // Variables, inputs and outputs become buffer arguments (the C ABI).
  pm.addPass(mlir::est::createEstFunctionAbi());
  // Results computed directly in the output buffers, then in-place
  // bufferization of the bodies (the signatures are buffers already).
  pm.addPass(mlir::bufferization::createEmptyTensorEliminationPass());
  pm.addPass(mlir::bufferization::createOneShotBufferizePass());
  pm.addPass(mlir::est::createEstLinalgToRuntimeCalls());
  // act(C + bias) after a kernel call into the call.
  pm.addPass(mlir::est::createEstFuseEpilogues());
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
  // Each remaining loop nest in a function of its own whose distinct
  // buffers are noalias (LLVM inlines it back, with alias scopes: no
  // overlap checks); the parallel loop nests' buffers get noalias too.
  pm.addPass(mlir::est::createEstOutlineLoopNests());
  mlir::OpPassManager &funcPm = pm.nest<mlir::func::FuncOp>();
  funcPm.addPass(mlir::createConvertLinalgToLoopsPass());
  funcPm.addPass(mlir::createLowerAffinePass());
  funcPm.addPass(mlir::createSCFToControlFlowPass());
  // The run-time checks' early returns, now that the body is in cf form.
  funcPm.addPass(mlir::est::createEstLowerRuntimeChecks());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::math::createMathExpandOpsPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
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

namespace {
/// Each stage after import: the function that adds its passes and what it
/// does, for its registered pass pipeline.
struct StagePasses {
  Stage stage;
  void (*add)(mlir::OpPassManager &);
  const char *summary;
};
constexpr StagePasses kStagePasses[] = {
    {Stage::Est, addEstOptimizationPasses,
     "The est stage: shape inference, canonicalization, CSE, DCE, @init"},
    {Stage::Autodiff, addAutodiffPasses,
     "The autodiff stage: est.minimize to gradients and optimizer updates"},
    {Stage::Decompose, addDecompositionPasses,
     "The decompose stage: composite est ops to primitives"},
    {Stage::Linalg, addLinalgLoweringPasses,
     "The linalg stage: est to linalg / tensor / arith / math on tensors"},
    {Stage::Fusion, addFusionPasses,
     "The fusion stage: elementwise and reduction fusion on linalg"},
    {Stage::Bufferize, addBufferizationPasses,
     "The bufferize stage: buffer ABI, one-shot bufferization, runtime "
     "kernel calls"},
    {Stage::MemPlan, addMemoryPlanningPasses,
     "The memplan stage: every temporary of a step in the arena"},
    {Stage::LLVM, addLLVMLoweringPasses,
     "The llvm stage: loops (large ones on the thread pool), then the LLVM "
     "dialect"},
};
} // namespace

void buildPipeline(mlir::OpPassManager &pm, Stage last) {
  for (const StagePasses &entry : kStagePasses) {
    if (static_cast<int>(entry.stage) > static_cast<int>(last) ||
        !parseStage(stageName(entry.stage)))
      return;
    entry.add(pm);
  }
}

std::string stagePipelineName(Stage stage) {
  return ("estc-" + stageName(stage) + "-stage").str();
}

void registerStagePipelines() {
  for (const StagePasses &entry : kStagePasses)
    mlir::PassPipelineRegistration<>(stagePipelineName(entry.stage),
                                     entry.summary, entry.add);
}

} // namespace estc
