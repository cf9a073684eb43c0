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

#endif // ESTC_COMPILER_TRANSFORMS_PASSES_TD
