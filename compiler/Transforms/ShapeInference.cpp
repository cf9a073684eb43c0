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
  /// Sets `value`'s type to `type` when that refines it.
  static void refine(Value value, Type type) {
    if (isRefinementOf(type, value.getType()))
      value.setType(type);
  }

  LogicalResult inferBlock(Block &block) {
    for (Operation &op : block) {
      if (auto scan = dyn_cast<ScanOp>(op)) {
        for (auto [init, arg] :
             llvm::zip_equal(scan.getInits(), scan.getCarriedArgs()))
          refine(arg, init.getType());
        for (auto [seq, arg] :
             llvm::zip_equal(scan.getSequences(), scan.getSliceArgs()))
          refine(arg, ScanOp::sliceType(cast<RankedTensorType>(seq.getType())));
        if (failed(inferBlock(scan.getBody().front())))
          return failure();
        size_t numCarried = scan.getInits().size();
        for (auto [i, pair] : llvm::enumerate(llvm::zip_equal(
                 scan.getResults(), scan.getYield().getValues()))) {
          auto [result, yielded] = pair;
          refine(result,
                 i < numCarried
                     ? scan.getInits()[i].getType()
                     : Type(ScanOp::stackedType(
                           cast<RankedTensorType>(yielded.getType()),
                           scan.getStaticLength())));
        }
        continue;
      }
      if (auto branch = dyn_cast<IfOp>(op)) {
        if (failed(inferBlock(branch.getThenRegion().front())) ||
            failed(inferBlock(branch.getElseRegion().front())))
          return failure();
        for (auto [result, a, b] : llvm::zip_equal(
                 branch.getResults(), branch.getThenYield().getValues(),
                 branch.getElseYield().getValues()))
          if (a.getType() == b.getType())
            refine(result, a.getType());
        continue;
      }
      if (auto loop = dyn_cast<WhileOp>(op)) {
        for (Region *region : {&loop.getCondRegion(), &loop.getBodyRegion()}) {
          for (auto [init, arg] : llvm::zip_equal(
                   loop.getInits(), region->front().getArguments()))
            refine(arg, init.getType());
          if (failed(inferBlock(region->front())))
            return failure();
        }
        for (auto [result, init] :
             llvm::zip_equal(loop.getResults(), loop.getInits()))
          refine(result, init.getType());
        continue;
      }
      auto infer = dyn_cast<InferTypeOpInterface>(op);
      if (!infer)
        continue;
      SmallVector<Type> inferred;
      if (failed(infer.inferReturnTypes(
              op.getContext(), op.getLoc(), op.getOperands(),
              op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
              op.getRegions(), inferred)))
        return failure();
      for (auto [result, type] : llvm::zip_equal(op.getResults(), inferred))
        refine(result, type);
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.isExternal() && failed(inferBlock(func.getBody().front())))
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
