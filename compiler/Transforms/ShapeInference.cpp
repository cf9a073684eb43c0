//===- ShapeInference.cpp - est-shape-inference -----------------------===//
//
// Re-infers result types in program order so that static dimensions flow from
// the function arguments to the results, then updates the function type.
// Control flow: a region's arguments are refined from the op's operands
// (est.scan's slices from its sequences), its ops in order, then the op's
// results from what the regions yield.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTSHAPEINFERENCE
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

/// Is `refined` the same tensor as `type` with some dynamic dims now known?
bool isRefinementOf(Type refined, Type type) {
  return refined != type && areRelaxedCompatible(refined, type);
}

struct ShapeInferencePass
    : public est::impl::EstShapeInferenceBase<ShapeInferencePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.isExternal() && failed(inferShapes(func.getBody().front())))
      return signalPassFailure();

    // The function returns what its return operands now are.
    if (func.isExternal())
      return;
    Operation *terminator = func.getBody().back().getTerminator();
    auto resultTypes = llvm::to_vector(func.getResultTypes());
    bool changed = false;
    for (auto [i, operand] : llvm::enumerate(terminator->getOperands())) {
      if (i < resultTypes.size() &&
          isRefinementOf(operand.getType(), resultTypes[i])) {
        resultTypes[i] = operand.getType();
        changed = true;
      }
    }
    if (changed)
      func.setFunctionType(FunctionType::get(
          func.getContext(), func.getArgumentTypes(), resultTypes));
  }
};

} // namespace

std::unique_ptr<Pass> mlir::est::createShapeInferencePass() {
  return std::make_unique<ShapeInferencePass>();
}
