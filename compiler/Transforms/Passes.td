//===- Passes.td - est transformation passes ---------------*- tablegen -*-===//
//
// The passes of the stages that work on the est dialect: est, autodiff and
// decompose (compiler/Pipelines/Pipelines.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TRANSFORMS_PASSES_TD
#define ESTC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// est stage (the autodiff stage runs them again)
//===----------------------------------------------------------------------===//

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

def EstInsertRuntimeChecks
    : Pass<"est-insert-runtime-checks", "::mlir::ModuleOp"> {
  let summary = "Check labels and indices at run time (est.check_range)";
  let description = [{
    Adds an `est.check_range` on the labels of
    `est.sparse_softmax_cross_entropy` ([0, classes)) and the indices of
    `est.gather` and `est.scatter` ([0, rows)) where that bound is static,
    moves every check to right after its input's definition, numbers them
    and records the module's `estc.runtime_checks` table. With the module
    attribute `estc.runtime_checks_disabled`, erases every check instead.
  }];
  let dependentDialects = ["::mlir::est::EstDialect"];
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

//===----------------------------------------------------------------------===//
// autodiff stage
//===----------------------------------------------------------------------===//

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

def EstInsertCollectives : Pass<"est-insert-collectives", "ModuleOp"> {
  let summary = "Average a data-parallel step's gradients over the replicas";
  let description = [{
    For a module compiled for data-parallel replicas (the module attribute
    `estc.replicas = N`, N > 1; without it the pass does nothing): in every
    function with `est.apply_gradients`, all dense gradients of one element
    type are flattened into one buffer, averaged over the replicas by one
    `est.all_reduce "mean"` and sliced back (one collective per step and
    element type, as Horovod's tensor fusion); each sparse gradient goes
    through `est.all_gather {mean}`; and the function's `loss` result is
    averaged too, so what the chief logs is the global loss. Runs before
    est-expand-optimizers: gradient clipping and the update rules see the
    averaged gradients.
  }];
  let dependentDialects = ["::mlir::est::EstDialect"];
}

def EstPsWorker : Pass<"est-ps-worker", "ModuleOp"> {
  let summary = "A parameter-server worker's step: push gradients, pull rows";
  let description = [{
    For a module with `estc.ps_tasks = N` and no `estc.ps_task` (without it
    the pass does nothing): every `est.apply_gradients` becomes
    `est.ps_push`es of its gradients (and learning rate) for the ps tasks,
    listed in `estc.ps_inputs`; a variable the step only gathers rows of is
    pulled by rows (`est.ps_pull_rows`) and leaves the module, listed in
    `estc.ps_remote`; the other updated variables get `est.ps_task`, the
    task that holds them (TF's round-robin placement, global_step on task
    0). A step that assigns a non-local variable itself, a constraint or
    clipping by the global norm is an error.
  }];
  let dependentDialects = ["::mlir::est::EstDialect"];
}

def EstPsTask : Pass<"est-ps-task", "ModuleOp"> {
  let summary = "A parameter-server task's apply function";
  let description = [{
    For a module with `estc.ps_tasks = N` and `estc.ps_task = t`: @train
    becomes the task's apply function, whose inputs are the gradients the
    workers push for the variables task t holds (`grad/<var>`,
    `ids/<var>`, `rows/<var>`, `learning_rate/<k>`) and whose body is the
    step's optimizer updates restricted to them; every other function and
    variable leaves the module. Task 0 increments global_step.
  }];
  let dependentDialects = ["::mlir::est::EstDialect",
                           "::mlir::func::FuncDialect"];
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

//===----------------------------------------------------------------------===//
// decompose stage
//===----------------------------------------------------------------------===//

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

#endif // ESTC_COMPILER_TRANSFORMS_PASSES_TD
