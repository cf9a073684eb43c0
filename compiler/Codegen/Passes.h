//===- Passes.h - estc code generation passes -------------------*- C++ -*-===//
//
// Our passes of the stages after est is lowered to linalg: fusion,
// bufferize, memplan and llvm (the rest of those stages are upstream
// passes); see compiler/Pipelines/Pipelines.cpp and
// docs/design/codegen-abi.md.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CODEGEN_PASSES_H
#define ESTC_COMPILER_CODEGEN_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
namespace est {

/// Declares createEst*() for every pass and registerEstCodegenPasses().
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/Codegen/Passes.h.inc"

/// The positions of a function's LLVM arguments that alias nothing else:
/// set by est-outline-loop-nests, made `noalias` by est-noalias-to-llvm.
constexpr StringLiteral kNoAliasArgsAttr = "estc.noalias_args";

/// The buffer a chain of views (memref.view, subviews, reshapes, casts)
/// starts from: a function argument (the arena, a variable, an input or an
/// output: distinct memory, docs/design/codegen-abi.md) or an allocation.
inline Value rootOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CODEGEN_PASSES_H
