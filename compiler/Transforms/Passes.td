//===- Passes.td - est transformation passes ---------------*- tablegen -*-===//
#ifndef ESTC_COMPILER_TRANSFORMS_PASSES_TD
#define ESTC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def EstShapeInference : Pass<"est-shape-inference", "func::FuncOp"> {
  let summary = "Refine result types from operand types";
  let description = [{
    Walks each function in order and re-infers the result type of every op
    implementing InferTypeOpInterface. A dynamic dimension (`?`) that the
    shape rules now know is made static, e.g. after the function's argument
    types were made static. The function's result types follow its refined
    return operands.
  }];
  let constructor = "::mlir::est::createShapeInferencePass()";
  let dependentDialects = ["::mlir::est::EstDialect"];
}

def EstDCE : Pass<"est-dce", "func::FuncOp"> {
  let summary = "Erase unused ops that have no write effects";
  let description = [{
    Erases, until nothing changes, every op whose results are unused and
    that does not write (pure ops and reads such as `est.read_variable`).
    State updates (`est.assign_variable`, `est.minimize`) and ops with
    unknown effects are kept.
  }];
  let constructor = "::mlir::est::createDCEPass()";
}

def EstDecompose : Pass<"est-decompose", "func::FuncOp"> {
  let summary = "Rewrite composite est ops into primitive est ops";
  let description = [{
    Numerically stable decompositions: softmax and log_softmax subtract the
    row maximum; softmax_cross_entropy is -sum(labels * log_softmax);
    sparse_softmax_cross_entropy one-hot encodes its labels first;
    sigmoid_cross_entropy is softplus(x) - x * z; reduce_mean over static
    dims is reduce_sum / count; relu6 is minimum(maximum(x, 0), 6);
    stop_gradient is erased (autodiff has run before).
  }];
  let dependentDialects = ["::mlir::est::EstDialect",
                           "::mlir::tensor::TensorDialect"];
}

def EstFusion : Pass<"est-fusion", "func::FuncOp"> {
  let summary = "Fuse elementwise linalg.generics into producers/consumers";
  let description = [{
    Producer-consumer fusion of elementwise `linalg.generic`s, also into
    reductions (a reduction consumer absorbs its elementwise producers).
    A producer is fused when it has one use, or when every user is a
    `linalg.generic` (it is then recomputed in each and disappears). A
    producer with transcendental or division ops is not fused into a
    consumer that reads it through a broadcasting map (that would repeat it
    per broadcast element).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def EstCreateInitFunction
    : Pass<"est-create-init-function", "::mlir::ModuleOp"> {
  let summary = "Build @init: every variable's initializer, computed";
  let description = [{
    Adds `func.func @init()` (no arguments, no results): for every
    `est.variable`, the est ops computing its `initializer` (zeros, ones,
    constant, random_uniform, random_normal, truncated_normal,
    glorot_uniform, glorot_normal, variance_scaling; tf.compat.v1
    semantics, random ops at counter 0 with the initializer's seed) and an
    `est.assign_variable`. Idempotent: an existing @init is rebuilt from all
    variables. Formulas: compiler/Transforms/CreateInitFunction.cpp.
  }];
  let dependentDialects = ["::mlir::est::EstDialect",
                           "::mlir::func::FuncDialect"];
}

def EstAutodiff : Pass<"est-autodiff", "ModuleOp"> {
  let summary = "Reverse-mode autodiff of each est.minimize";
  let description = [{
    For each `est.minimize`, builds the gradient of the loss with respect to
    every trained variable (its `var_list`, or all trainable variables) from
    the ops' GradientOpInterface rules, and replaces the minimize by
    `est.apply_gradients`. Variables that do not influence the loss get no
    update (a warning names the loss when none does). An op on the path
    without a gradient rule (or whose rule does not cover its shapes)
    leaves the minimize in place with a warning naming the op.
  }];
  let dependentDialects = ["::mlir::est::EstDialect"];
}

def EstExpandOptimizers : Pass<"est-expand-optimizers", "ModuleOp"> {
  let summary = "Expand est.apply_gradients into TF 1.x optimizer updates";
  let description = [{
    sgd, momentum (nesterov), adagrad, adam, rmsprop (momentum, centered)
    and ftrl (l1, l2) as est ops and `est.assign_variable`s. Slot variables
    are created as module variables named like TF's (`<var>/Adam`,
    `<var>/Adam_1`, `<var>/Momentum`, ...); `global_step` is incremented
    (and created when missing).
  }];
  let dependentDialects = ["::mlir::est::EstDialect"];
}

def EstCollapseLoopDims : Pass<"est-collapse-loop-dims", "func::FuncOp"> {
  let summary = "Unused inputs dropped and contiguous loops merged in linalg.generic on buffers";
  let description = [{
    For LLVM's vectorizer: a `linalg.generic` on buffers loses the inputs
    its body never reads, then consecutive loops of the same iterator type
    that every indexing map keeps as one contiguous run of dimensions (or
    leaves out) become one loop (linalg::collapseOpIterationDims, with
    `memref.collapse_shape` views of the buffers). An elementwise op over
    `?x24x24x20` becomes one loop over `?x11520`; a reduction over N, H and W
    one reduction loop. The order of every reduction is unchanged.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def EstOutlineLoopNests : Pass<"est-outline-loop-nests", "ModuleOp"> {
  let summary = "Each linalg op on buffers into an always-inline function whose distinct buffers are noalias";
  let description = [{
    Every linalg op on buffers of a public function (a runtime kernel call,
    `library_call`, excepted) moves into `func.func private
    @<function>_loop<i>` (`passthrough = ["alwaysinline"]`), called where
    the op was. Constants are cloned in; every other value the op uses is an
    argument. A buffer argument whose root (through casts, reshapes and
    subviews) is distinct from every other buffer argument's (different
    `memref.view`s of the arena, which est-memory-planning never overlaps
    for buffers used by one op; different function arguments other than
    the arena; globals) is noalias: the LLVM positions of its descriptor's
    pointers are listed in `estc.noalias_args` for est-noalias-to-llvm.
    LLVM inlines the functions back and keeps the noalias facts as alias
    scopes, so the loop vectorizer needs no run-time overlap checks. The
    nests est-parallelize-loops moved out (launch calls of
    `estc.parallel_body` functions) get the same facts on their body's
    arguments. A short (<= 64) innermost loop is marked `unroll disable`
    in all-parallel nests and in every parallel body, so LLVM vectorizes
    the contiguous channels rather than unroll them and vectorize across
    pixels with gathers.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def EstNoAliasToLLVM : Pass<"est-noalias-to-llvm", "ModuleOp"> {
  let summary = "estc.noalias_args of LLVM functions to llvm.noalias arguments";
  let description = [{
    After func-to-llvm: the arguments listed in a function's
    `estc.noalias_args` (pointers of memref descriptors, recorded by
    est-outline-loop-nests) get `llvm.noalias`; the list is removed. A
    branch's discardable `llvm.loop_annotation` (an scf.for's, copied to
    its latch by scf-to-cf) becomes the branch's `loop_annotation`, which
    the translation to LLVM IR emits as `!llvm.loop` metadata.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ESTC_COMPILER_TRANSFORMS_PASSES_TD
