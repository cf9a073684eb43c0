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
// A producer that must be materialized anyway (a user is not a
// linalg.generic: an est.assign_variable, a matmul, the return) is not
// recomputed: it is fused into its first consumer as an extra result of the
// fused loop (multi-result fusion). An optimizer's slot updates and the
// variable update are one loop with one result per state tensor (Adam's m, v
// and the variable); est-function-abi then makes those results the variables'
// own buffers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTFUSION
#include "compiler/Codegen/Passes.h.inc"
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

/// The users of `producer`'s results, tensor.dim ops excluded.
auto valueUsers(linalg::GenericOp producer) {
  return llvm::make_filter_range(producer->getUsers(), [](Operation *u) {
    return !isa<tensor::DimOp>(u);
  });
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
  auto users = valueUsers(producer);
  if (llvm::range_size(users) <= 1)
    return true;
  return llvm::all_of(
      users, [](Operation *user) { return isa<linalg::GenericOp>(user); });
}

bool isAllParallel(linalg::GenericOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// Fuses a producer whose value is also used outside linalg.generic ops into
/// its first consumer, the fused loop computing the producer's results as
/// extra results. Nothing is recomputed: the consumer reads the producer
/// elementwise (through a permutation), both loops are all-parallel, and the
/// fused op, which takes the consumer's place, comes before every other user.
struct FuseIntoMultiResultGeneric : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool applies(OpOperand &operand) {
    auto consumer = cast<linalg::GenericOp>(operand.getOwner());
    auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
    if (!producer || !linalg::areElementwiseOpsFusable(&operand))
      return false;
    // In one block: a producer outside a loop fused into a consumer inside
    // would be recomputed every iteration.
    if (producer->getBlock() != consumer->getBlock())
      return false;
    if (producer.getLibraryCall() || consumer.getLibraryCall() ||
        !isAllParallel(producer) || !isAllParallel(consumer))
      return false;
    // The other policy (shouldFuse) covers producers only generics use.
    if (llvm::all_of(valueUsers(producer), [](Operation *user) {
          return isa<linalg::GenericOp>(user);
        }))
      return false;
    if (!consumer.getMatchingIndexingMap(&operand).isPermutation())
      return false;
    for (OpResult result : producer->getResults())
      if (!producer.getIndexingMapMatchingResult(result).isPermutation())
        return false;
    // The consumer reads the producer once, and every other user (tensor.dim
    // included) follows it in the same block: their uses move to the fused op.
    for (OpOperand &use : producer->getUses()) {
      Operation *user = use.getOwner();
      if (user == consumer) {
        if (&use != &operand)
          return false;
        continue;
      }
      if (user->getBlock() != consumer->getBlock() ||
          !consumer->isBeforeInBlock(user))
        return false;
    }
    return true;
  }

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!applies(operand))
        continue;
      Operation *producer = operand.get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        return rewriter.notifyMatchFailure(consumer, "fusion failed");
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

struct FusionPass : public est::impl::EstFusionBase<FusionPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    patterns.add<FuseIntoMultiResultGeneric>(ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
