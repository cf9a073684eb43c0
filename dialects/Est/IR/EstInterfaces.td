//===- EstInterfaces.td - est op interfaces ----------------*- tablegen -*-===//
#ifndef EST_INTERFACES_TD
#define EST_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Est_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::est";
  let description = [{
    The reverse-mode gradient rule of a differentiable op (one result).
    Given the gradient of the loss with respect to the op's result, builds
    est ops (at the builder's insertion point) computing the gradient with
    respect to each operand. `operandGrads` gets one entry per operand; a
    null entry means "no gradient" (integer, boolean or non-differentiable
    operands). Each gradient has its operand's type (broadcasts are summed
    back). The rules live beside each other in dialects/Est/IR/
    EstGradients.cpp and are attached to the ops as external models.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands from `resultGrad`; fails (with a
        diagnostic on the op) when the rule does not cover this op's shapes
        or attributes.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$resultGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // EST_INTERFACES_TD
