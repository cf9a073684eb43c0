//===- Decompose.cpp - est-decompose ------------------------------------===//
//
// Rewrites composite est ops into primitive est ops, in numerically stable
// forms, so that convert-est-to-linalg only sees ops that are one loop nest
// each and fusion can merge them:
//
//   softmax(x)        e / reduce_sum(e), e = exp(x - reduce_max(x))
//   log_softmax(x)    s - log(reduce_sum(exp(s))), s = x - reduce_max(x)
//                     (the reductions along `axis`, keep_dims)
//   softmax_cross_entropy(x, y)         -reduce_sum(y * log_softmax(x), -1)
//   sparse_softmax_cross_entropy(x, l)  the same with y = one_hot(l, C)
//                     (C static; an out-of-range label gives a zero row,
//                     hence a loss of 0)
//   sigmoid_cross_entropy(x, z)         softplus(x) - x * z
//                     ( = max(x, 0) - x z + log1p(exp(-|x|)) )
//   reduce_mean(x)    reduce_sum(x) / count when the reduced dims are
//                     static; with a dynamic reduced dim it stays (the linalg
//                     lowering divides by the product of the runtime dims)
//   relu6(x)          minimum(maximum(x, 0), 6)
//   stop_gradient(x)  x (autodiff has run before this stage)
//
// elu, softplus and sigmoid stay: each lowers to one linalg.generic using
// math.expm1 / math.log1p, more accurate than their est decompositions.
// avg_pool stays (linalg pooling plus a divisor).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTDECOMPOSE
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A rank-0 est.constant of element type `elt` holding `v`.
Value scalar(OpBuilder &b, Location loc, Type elt, double v) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr;
  if (auto ft = dyn_cast<FloatType>(elt))
    attr = b.getFloatAttr(ft, v);
  else
    attr = b.getIntegerAttr(elt, static_cast<int64_t>(v));
  return est::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<Attribute>{attr}));
}

/// Replaces `op` by `v`, through a tensor.cast when the decomposition
/// inferred a different (more or less static) type.
void replace(PatternRewriter &rewriter, Operation *op, Value v) {
  Type type = op->getResult(0).getType();
  if (v.getType() != type)
    v = tensor::CastOp::create(rewriter, op->getLoc(), type, v);
  rewriter.replaceOp(op, v);
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Stable (log-)softmax of `x` along `axis`.
Value softmax(OpBuilder &b, Location loc, Value x, int64_t axis, bool log) {
  DenseI64ArrayAttr axes =
      b.getDenseI64ArrayAttr({normalizeAxis(axis, typeOf(x).getRank())});
  Value max = est::ReduceMaxOp::create(b, loc, x, axes, /*keep_dims=*/true);
  Value shifted = est::SubOp::create(b, loc, x, max);
  Value e = est::ExpOp::create(b, loc, shifted);
  Value sum = est::ReduceSumOp::create(b, loc, e, axes, /*keep_dims=*/true);
  if (!log)
    return est::DivOp::create(b, loc, e, sum);
  return est::SubOp::create(b, loc, shifted, est::LogOp::create(b, loc, sum));
}

/// -reduce_sum(labels * log_softmax(logits), -1).
Value crossEntropy(OpBuilder &b, Location loc, Value logits, Value labels) {
  int64_t last = typeOf(logits).getRank() - 1;
  Value logp = softmax(b, loc, logits, last, /*log=*/true);
  Value product = est::MulOp::create(b, loc, labels, logp);
  Value sum =
      est::ReduceSumOp::create(b, loc, product, b.getDenseI64ArrayAttr({last}),
                               /*keep_dims=*/false);
  return est::NegOp::create(b, loc, sum);
}

LogicalResult decomposeSoftmax(est::SoftmaxOp op, PatternRewriter &rewriter) {
  replace(rewriter, op,
          softmax(rewriter, op.getLoc(), op.getLogits(),
                  op.getAxisAttr().getInt(), /*log=*/false));
  return success();
}

LogicalResult decomposeLogSoftmax(est::LogSoftmaxOp op,
                                  PatternRewriter &rewriter) {
  replace(rewriter, op,
          softmax(rewriter, op.getLoc(), op.getLogits(),
                  op.getAxisAttr().getInt(), /*log=*/true));
  return success();
}

LogicalResult decomposeSoftmaxCrossEntropy(est::SoftmaxCrossEntropyOp op,
                                           PatternRewriter &rewriter) {
  replace(rewriter, op,
          crossEntropy(rewriter, op.getLoc(), op.getLogits(), op.getLabels()));
  return success();
}

LogicalResult
decomposeSparseSoftmaxCrossEntropy(est::SparseSoftmaxCrossEntropyOp op,
                                   PatternRewriter &rewriter) {
  RankedTensorType logitsType = typeOf(op.getLogits());
  int64_t classes = logitsType.getDimSize(logitsType.getRank() - 1);
  if (ShapedType::isDynamic(classes))
    return rewriter.notifyMatchFailure(op, "dynamic number of classes");
  Location loc = op.getLoc();
  Value labels = est::OneHotOp::create(
      rewriter, loc, op.getLabels(), rewriter.getI64IntegerAttr(classes),
      rewriter.getF64FloatAttr(1.0), rewriter.getF64FloatAttr(0.0),
      rewriter.getI64IntegerAttr(-1),
      TypeAttr::get(logitsType.getElementType()));
  replace(rewriter, op, crossEntropy(rewriter, loc, op.getLogits(), labels));
  return success();
}

LogicalResult decomposeSigmoidCrossEntropy(est::SigmoidCrossEntropyOp op,
                                           PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Value x = op.getLogits();
  Value softplus = est::SoftplusOp::create(rewriter, loc, x);
  Value xz = est::MulOp::create(rewriter, loc, x, op.getLabels());
  replace(rewriter, op, est::SubOp::create(rewriter, loc, softplus, xz));
  return success();
}

LogicalResult decomposeReduceMean(est::ReduceMeanOp op,
                                  PatternRewriter &rewriter) {
  RankedTensorType xType = typeOf(op.getX());
  int64_t count = 1;
  for (int64_t d = 0; d < xType.getRank(); ++d) {
    bool reduced = !op.getAxes() || llvm::any_of(*op.getAxes(), [&](int64_t a) {
      return normalizeAxis(a, xType.getRank()) == d;
    });
    if (!reduced)
      continue;
    if (xType.isDynamicDim(d))
      return rewriter.notifyMatchFailure(op, "dynamic reduced dimension");
    count *= xType.getDimSize(d);
  }
  Location loc = op.getLoc();
  Value sum = est::ReduceSumOp::create(rewriter, loc, op.getX(),
                                       op.getAxesAttr(), op.getKeepDimsAttr());
  Value divisor =
      scalar(rewriter, loc, xType.getElementType(), static_cast<double>(count));
  replace(rewriter, op, est::DivOp::create(rewriter, loc, sum, divisor));
  return success();
}

LogicalResult decomposeRelu6(est::Relu6Op op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Type elt = typeOf(op.getX()).getElementType();
  Value relu = est::MaximumOp::create(rewriter, loc, op.getX(),
                                      scalar(rewriter, loc, elt, 0));
  replace(rewriter, op,
          est::MinimumOp::create(rewriter, loc, relu,
                                 scalar(rewriter, loc, elt, 6)));
  return success();
}

LogicalResult eraseStopGradient(est::StopGradientOp op,
                                PatternRewriter &rewriter) {
  replace(rewriter, op, op.getX());
  return success();
}

struct DecomposePass : public est::impl::EstDecomposeBase<DecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add(decomposeSoftmax);
    patterns.add(decomposeLogSoftmax);
    patterns.add(decomposeSoftmaxCrossEntropy);
    patterns.add(decomposeSparseSoftmaxCrossEntropy);
    patterns.add(decomposeSigmoidCrossEntropy);
    patterns.add(decomposeReduceMean);
    patterns.add(decomposeRelu6);
    patterns.add(eraseStopGradient);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
