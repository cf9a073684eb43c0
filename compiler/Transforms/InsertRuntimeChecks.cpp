//===- InsertRuntimeChecks.cpp - est-insert-runtime-checks ----------------===//
//
// The run-time checks of a step (docs/design/codegen-abi.md, "Run-time
// checks"): an `est.check_range` on every class-id or index operand whose
// range the compiler knows,
//
//   est.sparse_softmax_cross_entropy  labels in [0, classes)  what = "label"
//   est.gather                        indices in [0, params dim axis)  "id"
//   est.scatter                       indices in [0, ref rows)         "id"
//
// (for a dynamic dim the index is clamped instead, as before), plus the
// checks the graph asked for itself (lib/Graph's check_range: the metrics'
// class ids). Every check then moves to right after the definition of its
// input and, when that is after a variable update (a metric's update before
// another metric's predictions), above the first update together with the
// ops it depends on: it runs before any variable update of the step. (A
// check that depends on a variable updated before it stays, with a
// warning.) The checks are numbered: attribute `check`, an index into the
// module's `estc.runtime_checks` table of {node, what, lower, upper, shape},
// which the manifest carries to the runtime for its error messages.
//
// A module with the unit attribute `estc.runtime_checks_disabled` (estc
// --runtime-checks=false) gets no checks: existing ones are erased.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTINSERTRUNTIMECHECKS
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

/// The node name an op was imported from (its NameLoc), or "".
StringRef nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef name = nodeName(inner); !name.empty())
        return name;
  return "";
}

/// Replaces operand `operand` of its op by a check of it against
/// [0, upper), unless it is checked against that range already.
void checkOperand(OpOperand &operand, int64_t upper, StringRef what) {
  Value input = operand.get();
  if (auto check = input.getDefiningOp<CheckRangeOp>())
    if (check.getLowerAttr().getInt() == 0 &&
        check.getUpperAttr().getInt() == upper)
      return;
  Operation *user = operand.getOwner();
  OpBuilder b(user);
  auto check = CheckRangeOp::create(b, user->getLoc(), input.getType(), input,
                                    /*lower=*/0, upper, what,
                                    /*check=*/IntegerAttr());
  operand.set(check.getResult());
}

/// The static size of dim `dim` of `value`'s type, or nullopt.
std::optional<int64_t> staticDim(Value value, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || dim < 0 || dim >= type.getRank() || type.isDynamicDim(dim))
    return std::nullopt;
  return type.getDimSize(dim);
}

/// Moves `check`, and the ops of its block it depends on, above the block's
/// first variable update (est.assign_variable, est.minimize,
/// est.apply_gradients) when it comes after one, so that a failed check
/// leaves every variable as it was. Not done (false) when the check depends
/// on a variable updated before it or on another update.
bool hoistAboveUpdates(CheckRangeOp check) {
  Block *block = check->getBlock();
  auto isUpdate = [](Operation *op) {
    return isa<AssignVariableOp, MinimizeOp, ApplyGradientsOp>(op);
  };
  Operation *firstUpdate = nullptr;
  for (Operation &op : *block) {
    if (&op == check.getOperation())
      return true;
    if (isUpdate(&op)) {
      firstUpdate = &op;
      break;
    }
  }
  if (!firstUpdate)
    return true;
  llvm::StringSet<> updated;
  bool updatesAll = false; // est.minimize / apply_gradients: every trainable
  for (Operation *op = firstUpdate; op != check.getOperation();
       op = op->getNextNode()) {
    if (auto assign = dyn_cast<AssignVariableOp>(op))
      updated.insert(assign.getVariable());
    else if (isUpdate(op))
      updatesAll = true;
  }
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  options.filter = [&](Operation *op) { return op->getBlock() == block; };
  SetVector<Operation *> slice;
  (void)getBackwardSlice(check.getOperation(), &slice, options);
  for (Operation *op : slice) {
    if (op->isBeforeInBlock(firstUpdate))
      continue;
    if (auto read = dyn_cast<ReadVariableOp>(op)) {
      if (updatesAll || updated.contains(read.getVariable()))
        return false;
    } else if (isUpdate(op)) {
      return false;
    }
  }
  for (Operation *op : slice) // topologically sorted
    if (firstUpdate->isBeforeInBlock(op))
      op->moveBefore(firstUpdate);
  check->moveBefore(firstUpdate);
  return true;
}

struct InsertRuntimeChecks
    : public est::impl::EstInsertRuntimeChecksBase<InsertRuntimeChecks> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr("estc.runtime_checks_disabled")) {
      module.walk([](CheckRangeOp check) {
        check.getResult().replaceAllUsesWith(check.getInput());
        check.erase();
      });
      module->removeAttr("estc.runtime_checks");
      return;
    }

    module.walk([](Operation *op) {
      if (auto loss = dyn_cast<SparseSoftmaxCrossEntropyOp>(op)) {
        auto logits = cast<RankedTensorType>(loss.getLogits().getType());
        if (auto classes = staticDim(loss.getLogits(), logits.getRank() - 1))
          checkOperand(loss.getLabelsMutable(), *classes, "label");
      } else if (auto gather = dyn_cast<GatherOp>(op)) {
        int64_t axis = gather.getAxis();
        auto params = cast<RankedTensorType>(gather.getParams().getType());
        if (axis < 0)
          axis += params.getRank();
        if (auto rows = staticDim(gather.getParams(), axis))
          checkOperand(gather.getIndicesMutable(), *rows, "id");
      } else if (auto scatter = dyn_cast<ScatterOp>(op)) {
        if (auto rows = staticDim(scatter.getRef(), 0))
          checkOperand(scatter.getIndicesMutable(), *rows, "id");
      }
    });

    // Each check right after its input's definition (function arguments:
    // the start of the body), checks of one input in program order, so that
    // running the pass again changes nothing; then number them.
    SmallVector<CheckRangeOp> checks;
    module.walk([&](CheckRangeOp check) { checks.push_back(check); });
    llvm::DenseMap<void *, Operation *> lastPlaced; // input or block -> check
    for (CheckRangeOp check : checks) {
      Value input = check.getInput();
      Block *block = check->getBlock();
      auto arg = dyn_cast<BlockArgument>(input);
      if (arg ? arg.getOwner() != block
              : input.getDefiningOp()->getBlock() != block)
        continue;
      void *key = arg ? static_cast<void *>(block) : input.getAsOpaquePointer();
      if (Operation *last = lastPlaced.lookup(key))
        check->moveAfter(last);
      else if (arg)
        check->moveBefore(block, block->begin());
      else
        check->moveAfter(input.getDefiningOp());
      lastPlaced[key] = check;
    }
    for (CheckRangeOp check : checks)
      if (!hoistAboveUpdates(check))
        check.emitWarning("run-time check after a variable update it "
                          "depends on: a failed check leaves that update");
    checks.clear();
    module.walk([&](CheckRangeOp check) { checks.push_back(check); });

    MLIRContext *ctx = module.getContext();
    Builder b(ctx);
    SmallVector<Attribute> table;
    for (auto [index, check] : llvm::enumerate(checks)) {
      check.setCheckAttr(b.getI64IntegerAttr(index));
      auto type = cast<RankedTensorType>(check.getInput().getType());
      SmallVector<int64_t> shape;
      for (int64_t dim : type.getShape())
        shape.push_back(ShapedType::isDynamic(dim) ? -1 : dim);
      table.push_back(b.getDictionaryAttr({
          b.getNamedAttr("node", b.getStringAttr(nodeName(check.getLoc()))),
          b.getNamedAttr("what", check.getWhatAttr()),
          b.getNamedAttr("lower", check.getLowerAttr()),
          b.getNamedAttr("upper", check.getUpperAttr()),
          b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape)),
      }));
    }
    if (table.empty())
      module->removeAttr("estc.runtime_checks");
    else
      module->setAttr("estc.runtime_checks", b.getArrayAttr(table));
  }
};

} // namespace
