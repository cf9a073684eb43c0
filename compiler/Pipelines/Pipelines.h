//===- Pipelines.h - The estc compilation pipeline, stage by stage ------===//
//
// The pipeline from an imported `est` module to native code, as named stages
// (like onnx-mlir's add*Passes functions and IREE's --compile-to phases).
// Each stage is a short list of passes; the driver can stop after any stage
// and print the module (`estc --compile-to=<stage> --emit=mlir`).
//
//   import     the module as the importer built it (no passes)
//   est        shape inference, canonicalization, CSE, dead-code elimination
//   autodiff   est.minimize to gradients (est-autodiff) and optimizer
//              updates with slot variables (est-expand-optimizers)
//   decompose  composite est ops (softmax, cross-entropies, ...) to primitives
//   linalg     est to linalg / tensor / arith / math on tensors
//   fusion     elementwise and reduction fusion on linalg
//   bufferize  function ABI (variables, inputs, outputs as buffers),
//              one-shot bufferization, matmul/conv to runtime kernel calls,
//              bias + activation epilogues fused into those calls
//   memplan    every temporary of a step in one arena, by liveness
//   llvm       loops, then the LLVM dialect
//
// Each stage is also a registered pass pipeline, `--estc-<stage>-stage`
// (registerStagePipelines).
//
// After `llvm` the module is translated to LLVM IR and compiled to object
// code (compiler/Target). See docs/architecture.md.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_PIPELINES_PIPELINES_H
#define ESTC_COMPILER_PIPELINES_PIPELINES_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace estc {

enum class Stage {
  Import,
  Est,
  Autodiff,
  Decompose,
  Linalg,
  Fusion,
  Bufferize,
  MemPlan,
  LLVM,
};

/// "import", "est", ...
llvm::StringRef stageName(Stage stage);
std::optional<Stage> parseStage(llvm::StringRef name);
/// Comma-separated names of every stage, for help and error messages.
std::string allStageNames();

// One function per stage: the passes that stage adds.
void addEstOptimizationPasses(mlir::OpPassManager &pm);
void addAutodiffPasses(mlir::OpPassManager &pm);
void addDecompositionPasses(mlir::OpPassManager &pm);
void addLinalgLoweringPasses(mlir::OpPassManager &pm);
void addFusionPasses(mlir::OpPassManager &pm);
void addBufferizationPasses(mlir::OpPassManager &pm);
void addMemoryPlanningPasses(mlir::OpPassManager &pm);
void addLLVMLoweringPasses(mlir::OpPassManager &pm);

/// Adds every stage's passes up to and including `last`.
void buildPipeline(mlir::OpPassManager &pm, Stage last);

/// "estc-<stage>-stage": the name of the stage's registered pass pipeline.
std::string stagePipelineName(Stage stage);
/// Registers every stage after import as a pass pipeline named
/// stagePipelineName(stage), built by the stage's add*Passes function, so
/// estc-opt and the lit tests run the very stages estc runs
/// (`estc-opt --estc-llvm-stage`).
void registerStagePipelines();

} // namespace estc

#endif // ESTC_COMPILER_PIPELINES_PIPELINES_H
