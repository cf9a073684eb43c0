//===- Passes.h - est conversion passes -------------------------*- C++ -*-===//
#ifndef ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_H
#define ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_H

#include "dialects/Est/IR/EstDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
namespace est {

/// Declares createConvertEstToLinalg() and registerEstConversionPasses().
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/EstToLinalg/Passes.h.inc"

} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_H
