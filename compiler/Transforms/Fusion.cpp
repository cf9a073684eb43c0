//===- Fusion.cpp - est-fusion ------------------------------------------===//
//
// Producer-consumer fusion of linalg.generic ops on tensors (upstream's
// elementwise fusion patterns), with our policy of when to fuse:
//
// - a producer with one use is always fused (bias-add into relu, a
//   broadcast_to into its consumer, an elementwise chain into the reduction
//   that consumes it: sum(exp(x - max)) is one loop nest);
// - a producer with several uses is fused when every user is a
//   linalg.generic: it is recomputed in each and disappears, so no tensor is
//   materialized for it (softmax's exp(x - max) feeds both the sum and the
//   division);
// - a producer whose body has math ops or divisions is not fused into a
//   consumer that reads it through a broadcasting map (a per-row log(sum)
//   would otherwise be recomputed for every element of the row).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTFUSION
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Does the body of `op` compute something expensive to repeat?
bool hasCostlyBody(linalg::GenericOp op) {
  for (Operation &inner : op.getRegion().front()) {
    if (isa<math::MathDialect>(inner.getDialect()))
      return true;
    if (isa<arith::DivFOp, arith::DivSIOp, arith::DivUIOp, arith::RemFOp,
            arith::RemSIOp, arith::RemUIOp>(inner))
      return true;
  }
  return false;
}

bool shouldFuse(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  if (!producer)
    return false;
  auto consumer = cast<linalg::LinalgOp>(fused->getOwner());
  auto genericConsumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (producer.getLibraryCall() ||
      (genericConsumer && genericConsumer.getLibraryCall()))
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(fused);
  bool broadcasting = !map.isPermutation();
  if (broadcasting && hasCostlyBody(producer))
    return false;
  // tensor.dim users do not count: canonicalization reads the dims from the
  // producer's init instead.
  auto users = llvm::make_filter_range(producer->getUsers(), [](Operation *u) {
    return !isa<tensor::DimOp>(u);
  });
  if (llvm::range_size(users) <= 1)
    return true;
  return llvm::all_of(users, [](Operation *user) {
    return isa<linalg::GenericOp>(user);
  });
}

struct FusionPass : public est::impl::EstFusionBase<FusionPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
