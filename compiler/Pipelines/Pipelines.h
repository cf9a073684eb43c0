//===- Pipelines.h - The estc compilation pipeline, stage by stage ------===//
//
// The pipeline from an imported `est` module to native code, as named stages
// (like onnx-mlir's add*Passes functions and IREE's --compile-to phases).
// Each stage is a short list of passes; the driver can stop after any stage
// and print the module (`estc --compile-to=<stage> --emit=mlir`).
//
//   import   the module as the importer built it (no passes)
//   est      shape inference, canonicalization, CSE, dead-code elimination
//
// Later stages (decomposition, lowering to linalg, fusion, bufferization,
// memory planning, LLVM, object code) are added here as they land; see
// docs/architecture.md.
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

enum class Stage { Import, Est };

/// "import", "est".
llvm::StringRef stageName(Stage stage);
std::optional<Stage> parseStage(llvm::StringRef name);
/// Comma-separated names of every stage, for help and error messages.
std::string allStageNames();

/// est-level clean-up: shape inference, canonicalization, CSE, DCE.
void addEstOptimizationPasses(mlir::OpPassManager &pm);

/// Adds every stage's passes up to and including `last`.
void buildPipeline(mlir::OpPassManager &pm, Stage last);

} // namespace estc

#endif // ESTC_COMPILER_PIPELINES_PIPELINES_H
