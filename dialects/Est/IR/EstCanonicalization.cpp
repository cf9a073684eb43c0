//===- EstCanonicalization.cpp - est canonicalization patterns ------------===//
//
// The simple DAG rewrites are declared in EstCanonicalization.td (DRR);
// those that compute attributes or inspect constants are written here.
//
//===----------------------------------------------------------------------===//

#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::est;

namespace {
#include "dialects/Est/IR/EstCanonicalization.inc"
} // namespace

namespace {

/// transpose(transpose(x, p1), p2) -> transpose(x, p1 . p2).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getX().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> outer = op.getPerm(), first = inner.getPerm();
    SmallVector<int64_t> perm;
    for (int64_t p : outer) {
      if (p < 0 || p >= static_cast<int64_t>(first.size()))
        return failure();
      perm.push_back(first[p]);
    }
    rewriter.replaceOpWithNewOp<TransposeOp>(
        op, op.getType(), inner.getX(), rewriter.getDenseI64ArrayAttr(perm));
    return success();
  }
};

/// select(splat c, a, b) -> a or b, when that side has the result type.
struct SelectConstantCondition : OpRewritePattern<SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SelectOp op,
                                PatternRewriter &rewriter) const override {
    SplatElementsAttr cond;
    if (!matchPattern(op.getCond(), m_Constant(&cond)))
      return failure();
    Value chosen =
        cond.getSplatValue<bool>() ? op.getOnTrue() : op.getOnFalse();
    if (chosen.getType() != op.getType())
      return failure();
    rewriter.replaceOp(op, chosen);
    return success();
  }
};

} // namespace

void NegOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<FoldDoubleNeg>(context);
}
void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldDoubleReshape>(context);
}
void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}
void SqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<SqueezeToReshape>(context);
}
void ExpandDimsOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<ExpandDimsToReshape>(context);
}
void SelectOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<SelectConstantCondition>(context);
}
