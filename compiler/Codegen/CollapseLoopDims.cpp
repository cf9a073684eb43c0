//===- CollapseLoopDims.cpp - est-collapse-loop-dims ----------------------===//
//
// Shapes the loops of linalg.generic ops on buffers for LLVM's vectorizer:
//
// 0. linalg.fill and linalg.copy become linalg.generic.
// 1. Inputs the body never reads are dropped (after est-fusion and the
//    runtime-call rewrite, a ReLU that follows a convolution with a fused
//    bias still lists the bias as an input).
// 2. Consecutive loops of the same kind (parallel or reduction) that every
//    operand indexes as one contiguous run of dimensions, or not at all,
//    become one loop (linalg::collapseOpIterationDims; the buffers get
//    memref.collapse_shape views). A ReLU over ?x24x24x20 becomes one loop
//    over ?x11520 elements instead of an innermost loop of 20, which LLVM
//    unrolls completely before vectorizing the next loop out with
//    gathers and scatters; a bias gradient over ?x24x24x20 becomes a
//    reduction over ?*576 rows of 20.
//
// A loop whose index the body reads (linalg.index: pooling windows, random
// numbers) is not merged.
//
// Neither changes what is computed, nor the order in which a reduction
// accumulates: collapsed reduction loops visit their elements in the same
// (row-major) order.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTCOLLAPSELOOPDIMS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Drops the inputs of `op` whose block argument has no use, as long as the
/// remaining operands still give every loop its size (a pooling window's
/// shape-only input stays).
void dropUnusedInputs(linalg::GenericOp op, RewriterBase &rewriter) {
  SmallVector<OpOperand *> kept;
  for (OpOperand &operand : op->getOpOperands())
    kept.push_back(&operand);
  auto coversEveryLoop = [&](ArrayRef<OpOperand *> operands) {
    llvm::SmallBitVector seen(op.getNumLoops());
    for (OpOperand *operand : operands)
      for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults())
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          seen.set(dim.getPosition());
    return seen.all();
  };
  Block &body = op.getRegion().front();
  SmallVector<unsigned> unused;
  for (OpOperand *input : op.getDpsInputOperands()) {
    unsigned i = input->getOperandNumber();
    if (!body.getArgument(i).use_empty())
      continue;
    SmallVector<OpOperand *> without =
        llvm::filter_to_vector(kept, [&](OpOperand *o) { return o != input; });
    if (!coversEveryLoop(without))
      continue;
    kept = without;
    unused.push_back(i);
  }
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (llvm::is_contained(unused, input->getOperandNumber()))
      continue;
    inputs.push_back(input->get());
    maps.push_back(op.getMatchingIndexingMap(input));
  }
  if (unused.empty())
    return;
  for (OpOperand &init : op.getDpsInitsMutable())
    maps.push_back(op.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(op);
  auto replacement = linalg::GenericOp::create(
      rewriter, op.getLoc(), op.getResultTypes(), inputs, op.getDpsInits(),
      maps, op.getIteratorTypesArray(), /*doc=*/"", /*libraryCall=*/"");
  replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getRegion(), replacement.getRegion(),
                              replacement.getRegion().begin());
  Block &moved = replacement.getRegion().front();
  for (unsigned i : llvm::reverse(unused))
    moved.eraseArgument(i);
  rewriter.replaceOp(op, replacement->getResults());
}

/// Maximal runs of consecutive loops of one kind that every indexing map
/// keeps contiguous (or leaves out); nothing when no run is longer than one.
SmallVector<ReassociationIndices> collapsibleRuns(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps,
                    [](AffineMap m) { return m.isProjectedPermutation(); }))
    return {};
  // Buffers must be contiguous to be viewed collapsed.
  for (Value operand : op->getOperands()) {
    if (!isa<ShapedType>(operand.getType()))
      continue; // a scalar
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.getLayout().isIdentity())
      return {};
  }
  // A loop whose index the body reads stays (collapsing would recompute the
  // index with a division at every iteration).
  llvm::SmallBitVector indexed(op.getNumLoops());
  op.getRegion().walk(
      [&](linalg::IndexOp index) { indexed.set(index.getDim()); });
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<ReassociationIndices> runs;
  bool collapses = false;
  for (unsigned d = 0; d < iterators.size(); ++d) {
    if (!runs.empty() && iterators[runs.back().back()] == iterators[d] &&
        !indexed[d] && !indexed[runs.back().back()]) {
      ReassociationIndices longer = runs.back();
      longer.push_back(d);
      if (linalg::areDimSequencesPreserved(maps, {longer})) {
        runs.back() = longer;
        collapses = true;
        continue;
      }
    }
    runs.push_back({d});
  }
  if (!collapses)
    return {};
  return runs;
}

struct EstCollapseLoopDims
    : public mlir::est::impl::EstCollapseLoopDimsBase<EstCollapseLoopDims> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Fills and copies as generics, so they collapse too.
    SmallVector<linalg::LinalgOp> named;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::FillOp, linalg::CopyOp>(op) &&
          op.hasPureBufferSemantics())
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op))) {
        op.emitError("est-collapse-loop-dims: cannot generalize");
        return signalPassFailure();
      }
    }
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && !op.getLibraryCall())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops)
      dropUnusedInputs(op, rewriter);
    ops.clear();
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && !op.getLibraryCall())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops) {
      SmallVector<ReassociationIndices> runs = collapsibleRuns(op);
      if (runs.empty())
        continue;
      rewriter.setInsertionPoint(op);
      SmallVector<ReassociationIndices> folded;
      for (ReassociationIndices &run : runs)
        if (run.size() > 1)
          folded.push_back(run);
      if (failed(linalg::collapseOpIterationDims(op, folded, rewriter))) {
        op.emitError("est-collapse-loop-dims: cannot collapse the loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
