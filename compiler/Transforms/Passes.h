//===- Passes.h - est transformation passes ---------------------*- C++ -*-===//
#ifndef ESTC_COMPILER_TRANSFORMS_PASSES_H
#define ESTC_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/Est/IR/EstDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
namespace est {

/// `est-shape-inference`: refines dynamic result dims from operand types.
std::unique_ptr<Pass> createShapeInferencePass();
/// `est-dce`: erases unused ops without write effects.
std::unique_ptr<Pass> createDCEPass();

/// Declares registerEstPasses(), which registers every est pass.
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_TRANSFORMS_PASSES_H
