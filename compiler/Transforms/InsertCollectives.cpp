//===- InsertCollectives.cpp - est-insert-collectives --------------------===//
//
// Data-parallel training (docs/design/distributed.md, "Compiler"): a module
// compiled for N replicas (`estc.replicas = N`) averages, in every function
// that applies gradients, what the replicas computed, before the optimizer
// uses it:
//
//   dense   every gradient of one element type, flattened and concatenated
//           into one buffer -> est.all_reduce "mean" -> sliced and reshaped
//           back. One collective a step (per element type): small
//           gradients (biases) ride with the large ones instead of paying a
//           round trip each.
//   sparse  (indices, rows) -> est.all_gather {mean}: every replica's rows,
//           divided by N, applied by the sparse update rules (duplicates
//           sum), so a step still touches only the rows some replica used.
//   loss    the function's `loss` result, averaged: the global loss, what
//           the chief logs and summarizes. It rides in the fused buffer of
//           its element type (it is computed before the updates), so a
//           float32 model makes one collective a step.
//
// Runs after est-autodiff, before est-expand-optimizers. The gradients of
// a step's later optimizers (DNNLinearCombined's two), which est-autodiff
// computes after the first update, move before it when they read no
// variable.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstBuilder.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTINSERTCOLLECTIVES
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

int64_t numElements(RankedTensorType t) {
  int64_t n = 1;
  for (int64_t d : t.getShape())
    n *= d;
  return n;
}

/// Moves the ops that compute `value` after `first`, in its block, to just
/// before it, when none has a memory effect (a variable read after an
/// update would read the new value). est-autodiff emits the gradients of a
/// step's second optimizer (`group(opt1.minimize(loss, a),
/// opt2.minimize(loss, b))`, DNNLinearCombined's) after the first one's
/// update, from values computed before it; the fused reduction needs them
/// all before the first update.
bool hoistBefore(Value value, Operation *first) {
  Block *block = first->getBlock();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work{value};
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || op->getBlock() != block || op->isBeforeInBlock(first) ||
        !slice.insert(op))
      continue;
    if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
      return false;
    llvm::append_range(work, op->getOperands());
  }
  SmallVector<Operation *> ops(slice.begin(), slice.end());
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ops)
    op->moveBefore(first);
  return true;
}

/// Replaces the dense gradients of `applies` (one function's) by their
/// mean over the replicas: one fused buffer per element type, reduced
/// before the first apply. `loss` (the return's operand), when it is
/// computed before that point, rides in the same buffer: one collective a
/// step for a float32 model; it is cleared when it does.
LogicalResult reduceDense(ArrayRef<ApplyGradientsOp> applies,
                          DominanceInfo &dominance, OpOperand *&loss) {
  // Operands by element type, in order.
  llvm::MapVector<Type, SmallVector<OpOperand *>> byType;
  for (ApplyGradientsOp apply : applies)
    for (OpOperand &operand : apply.getGradientsMutable()) {
      auto type = cast<RankedTensorType>(operand.get().getType());
      if (!type.hasStaticShape())
        return apply.emitOpError()
               << "est-insert-collectives: a gradient of dynamic shape "
               << type;
      byType[type.getElementType()].push_back(&operand);
    }
  Operation *first = applies.front();
  for (ApplyGradientsOp apply : applies)
    if (apply->isBeforeInBlock(first))
      first = apply;
  if (loss && dominance.properlyDominates(loss->get(), first)) {
    auto type = cast<RankedTensorType>(loss->get().getType());
    auto group = byType.find(type.getElementType());
    if (group != byType.end()) {
      group->second.push_back(loss);
      loss = nullptr;
    }
  }
  for (auto &[element, operands] : byType) {
    for (OpOperand *o : operands)
      if (!dominance.properlyDominates(o->get(), first) &&
          (!hoistBefore(o->get(), first) ||
           !dominance.properlyDominates(o->get(), first)))
        return first->emitOpError()
               << "est-insert-collectives: a gradient is computed after the "
                  "first optimizer update and cannot move before it (it reads "
                  "a variable)";
    OpBuilder b(first);
    EstBuilder e(b, first->getLoc());
    SmallVector<Value> flats;
    int64_t total = 0;
    for (OpOperand *o : operands) {
      int64_t n = numElements(cast<RankedTensorType>(o->get().getType()));
      flats.push_back(e.reshape(o->get(), {n}));
      total += n;
    }
    auto flatType = RankedTensorType::get({total}, element);
    Value all = flats.size() == 1
                    ? flats.front()
                    : Value(ConcatOp::create(b, e.loc, flatType, flats,
                                             b.getI64IntegerAttr(0)));
    Value mean =
        AllReduceOp::create(b, e.loc, flatType, all, b.getStringAttr("mean"));
    int64_t offset = 0;
    for (OpOperand *o : operands) {
      auto type = cast<RankedTensorType>(o->get().getType());
      int64_t n = numElements(type);
      Value part = mean;
      if (flats.size() > 1)
        part = SliceOp::create(b, e.loc, RankedTensorType::get({n}, element),
                               mean, b.getDenseI64ArrayAttr({offset}),
                               b.getDenseI64ArrayAttr({n}));
      o->set(ReshapeOp::create(b, e.loc, type, part,
                               b.getDenseI64ArrayAttr(type.getShape())));
      offset += n;
    }
  }
  return success();
}

/// Gathers every sparse gradient of `apply` from the replicas.
void gatherSparse(ApplyGradientsOp apply, int64_t replicas) {
  OpBuilder b(apply);
  EstBuilder e(b, apply.getLoc());
  auto indices = apply.getSparseIndicesMutable();
  auto values = apply.getSparseValuesMutable();
  for (unsigned i = 0; i < indices.size(); ++i) {
    Value ids = indices[i].get(), rows = values[i].get();
    auto idsType = cast<RankedTensorType>(ids.getType());
    auto rowsType = cast<RankedTensorType>(rows.getType());
    int64_t width = 1;
    for (int64_t d : rowsType.getShape().drop_front())
      width *= d;
    Type i64 = b.getI64Type();
    if (idsType.getElementType() != i64)
      ids = e.castTo(ids, i64);
    Value flatRows =
        rowsType.getRank() == 2 ? rows : e.reshape(rows, {-1, width});
    int64_t dyn = ShapedType::kDynamic;
    auto gather = AllGatherOp::create(
        b, e.loc, RankedTensorType::get({dyn}, i64),
        RankedTensorType::get({dyn, width}, rowsType.getElementType()), ids,
        flatRows, b.getI64IntegerAttr(replicas), b.getUnitAttr());
    Value outIds = gather.getGatheredIndices();
    Value outRows = gather.getGatheredRows();
    if (idsType.getElementType() != i64)
      outIds = e.castTo(outIds, idsType.getElementType());
    if (rowsType.getRank() != 2) {
      SmallVector<int64_t> shape{-1};
      llvm::append_range(shape, rowsType.getShape().drop_front());
      outRows = e.reshape(outRows, shape);
    }
    indices[i].set(outIds);
    values[i].set(outRows);
  }
}

/// The function's `loss` result (the return's operand), when it is a float
/// tensor of static shape; null otherwise.
OpOperand *lossOperand(func::FuncOp func) {
  OpOperand *found = nullptr;
  func.walk([&](func::ReturnOp ret) {
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "est.name");
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      if (name && name.getValue() == "loss" && type.hasStaticShape() &&
          isa<Float32Type, Float64Type>(type.getElementType()))
        found = &ret->getOpOperand(i);
    }
  });
  return found;
}

/// `loss` averaged on its own, right before the return.
void reduceLoss(OpOperand &loss) {
  Operation *ret = loss.getOwner();
  auto type = cast<RankedTensorType>(loss.get().getType());
  OpBuilder b(ret);
  EstBuilder e(b, ret->getLoc());
  Value flat = e.reshape(loss.get(), {numElements(type)});
  Value mean = AllReduceOp::create(b, e.loc, flat.getType(), flat,
                                   b.getStringAttr("mean"));
  loss.set(ReshapeOp::create(b, e.loc, type, mean,
                             b.getDenseI64ArrayAttr(type.getShape())));
}

struct InsertCollectivesPass
    : public est::impl::EstInsertCollectivesBase<InsertCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto attr = module->getAttrOfType<IntegerAttr>("estc.replicas");
    if (!attr || attr.getInt() <= 1)
      return;
    int64_t replicas = attr.getInt();
    DominanceInfo dominance(module);
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      SmallVector<ApplyGradientsOp> applies;
      // A constraint's operands are the variable's projections, the same
      // on every replica, not gradients.
      func.walk([&](ApplyGradientsOp op) {
        if (op.getOptimizer() != "constraint")
          applies.push_back(op);
      });
      if (applies.empty())
        continue;
      for (ApplyGradientsOp apply : applies)
        if (apply->getBlock() != applies.front()->getBlock()) {
          apply.emitOpError("est-insert-collectives: optimizer updates in "
                            "different blocks");
          return signalPassFailure();
        }
      OpOperand *loss = lossOperand(func);
      if (failed(reduceDense(applies, dominance, loss)))
        return signalPassFailure();
      for (ApplyGradientsOp apply : applies)
        gatherSparse(apply, replicas);
      if (loss)
        reduceLoss(*loss);
    }
  }
};

} // namespace
