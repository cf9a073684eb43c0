//===- Passes.td - est conversion passes -------------------*- tablegen -*-===//
#ifndef ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_TD
#define ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertEstToLinalg : Pass<"convert-est-to-linalg", "func::FuncOp"> {
  let summary = "Lower est ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Replaces every est op of a function by linalg / tensor / arith / math
    ops on tensors (docs/design/codegen-abi.md, "After fusion"):
    elementwise ops with NumPy broadcasting become `linalg.generic`s (a
    static size-1 operand dim reads index 0; dynamic dims are assumed not to
    broadcast), reductions are `linalg.generic`s on a `linalg.fill`ed init,
    matmuls `linalg.matmul` / `linalg.batch_matmul`, convolutions
    `linalg.conv_2d_nhwc_hwcf` on a `tensor.pad`ded input, random ops
    compute Philox4x32-10 (lib/Random/Philox.h) inline. `est.read_variable`
    and `est.assign_variable` stay. Composite ops (softmax, the
    cross-entropies) must have been decomposed by `est-decompose`; any op
    that cannot be lowered is reported by name and the pass fails.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::bufferization::BufferizationDialect"
  ];
}

#endif // ESTC_COMPILER_CONVERSION_ESTTOLINALG_PASSES_TD
