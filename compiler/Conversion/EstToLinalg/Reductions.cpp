//===- Reductions.cpp - est reductions to linalg
//---------------------------===//
//
//   reduce_*        linalg.generic with a reduction iterator on a linalg.fill
//                   init (identities 0, 1, -inf, +inf; max/min propagate
//                   NaN); keep_dims writes the kept dims through constant-0
//                   map results; reduce_mean then divides by the count
//   argmax argmin   one linalg.generic, two outputs (value, index); first
//                   index on ties, a NaN wins
//   cumsum cumprod  an scf.for along the axis (backwards with reverse)
//                   carrying the result; inside, a loop nest over the other
//                   dims combines the previous position's result with the
//                   input element (tensor.extract / tensor.insert, in place
//                   after bufferization): O(elements), no quadratic sums
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// Normalized, sorted reduction axes (all when absent).
SmallVector<int64_t> reductionAxes(std::optional<ArrayRef<int64_t>> axes,
                                   int64_t rank) {
  SmallVector<int64_t> result;
  if (!axes) {
    for (int64_t i = 0; i < rank; ++i)
      result.push_back(i);
    return result;
  }
  for (int64_t a : *axes)
    result.push_back(a < 0 ? a + rank : a);
  llvm::sort(result);
  return result;
}

/// reduce_sum / _mean / _max / _min / _prod of `op`.
Value lowerReduction(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Value x = op->getOperand(0);
  RankedTensorType xType = tensorTypeOf(x);
  int64_t rank = xType.getRank();
  auto axesAttr = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  std::optional<ArrayRef<int64_t>> axesList;
  if (axesAttr)
    axesList = axesAttr.asArrayRef();
  SmallVector<int64_t> axes = reductionAxes(axesList, rank);
  auto keepAttr = op->getAttrOfType<BoolAttr>("keep_dims");
  bool keepDims = keepAttr && keepAttr.getValue();
  RankedTensorType outType = resultTypeOf(op);
  Type elt = xType.getElementType();
  bool f = isFloat(elt);

  // Output map and dims.
  SmallVector<AffineExpr> outExprs;
  SmallVector<Value> outDims;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (reduced) {
      if (keepDims) {
        outExprs.push_back(getAffineConstantExpr(0, ctx));
        outDims.push_back(indexConst(b, loc, 1));
      }
      continue;
    }
    outExprs.push_back(getAffineDimExpr(d, ctx));
    outDims.push_back(dimValue(b, loc, x, d));
  }

  bool isMean = isa<est::ReduceMeanOp>(op);
  Value identity;
  if (isa<est::ReduceSumOp, est::ReduceMeanOp>(op))
    identity = scalarConst(b, loc, elt, 0);
  else if (isa<est::ReduceProdOp>(op))
    identity = scalarConst(b, loc, elt, 1);
  else {
    bool isMax = isa<est::ReduceMaxOp>(op);
    if (f) {
      double inf = std::numeric_limits<double>::infinity();
      identity = scalarConst(b, loc, elt, isMax ? -inf : inf);
    } else {
      unsigned width = elt.getIntOrFloatBitWidth();
      APInt v = isMax ? APInt::getSignedMinValue(width)
                      : APInt::getSignedMaxValue(width);
      identity = arith::ConstantOp::create(b, loc, b.getIntegerAttr(elt, v));
    }
  }
  Value init = filledTensor(b, loc, outType, outDims, identity);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  Operation *estOp = op;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{x}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = args[0], acc = args[1], r;
        if (isa<est::ReduceSumOp, est::ReduceMeanOp>(estOp))
          r = f ? (Value)arith::AddFOp::create(nb, nloc, v, acc)
                : arith::AddIOp::create(nb, nloc, v, acc);
        else if (isa<est::ReduceProdOp>(estOp))
          r = f ? (Value)arith::MulFOp::create(nb, nloc, v, acc)
                : arith::MulIOp::create(nb, nloc, v, acc);
        else if (isa<est::ReduceMaxOp>(estOp))
          r = f ? (Value)arith::MaximumFOp::create(nb, nloc, v, acc)
                : arith::MaxSIOp::create(nb, nloc, v, acc);
        else
          r = f ? (Value)arith::MinimumFOp::create(nb, nloc, v, acc)
                : arith::MinSIOp::create(nb, nloc, v, acc);
        linalg::YieldOp::create(nb, nloc, r);
      });
  Value sum = generic.getResult(0);
  if (!isMean)
    return sum;

  // mean = sum / count, count the product of the reduced dims.
  Value count = indexConst(b, loc, 1);
  for (int64_t a : axes)
    count = arith::MulIOp::create(b, loc, count, dimValue(b, loc, x, a));
  Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  Value countElt = f ? (Value)arith::SIToFPOp::create(b, loc, elt, count64)
                     : convertScalar(b, loc, count64, elt);
  return buildElementwise(
      b, loc, ValueRange{sum}, outType,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        if (f)
          return arith::DivFOp::create(nb, nloc, args[0], countElt);
        return arith::DivSIOp::create(nb, nloc, args[0], countElt);
      });
}

/// argmax (`isMax`) / argmin of `x` along `axis`: the index result of a
/// generic computing (best value, its first index).
Value lowerArgReduce(OpBuilder &b, Operation *op, Value x, int64_t axis,
                     bool isMax) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType xType = tensorTypeOf(x);
  int64_t rank = xType.getRank();
  if (axis < 0)
    axis += rank;
  RankedTensorType outType = resultTypeOf(op);
  Type elt = xType.getElementType();
  Type indexElt = outType.getElementType();
  bool f = isFloat(elt);
  SmallVector<AffineExpr> outExprs;
  SmallVector<Value> outDims;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    iterators.push_back(d == axis ? utils::IteratorType::reduction
                                  : utils::IteratorType::parallel);
    if (d == axis)
      continue;
    outExprs.push_back(getAffineDimExpr(d, ctx));
    outDims.push_back(dimValue(b, loc, x, d));
  }
  Value start;
  if (f) {
    double inf = std::numeric_limits<double>::infinity();
    start = scalarConst(b, loc, elt, isMax ? -inf : inf);
  } else {
    unsigned width = elt.getIntOrFloatBitWidth();
    APInt v = isMax ? APInt::getSignedMinValue(width)
                    : APInt::getSignedMaxValue(width);
    start = arith::ConstantOp::create(b, loc, b.getIntegerAttr(elt, v));
  }
  auto valueType = RankedTensorType::get(outType.getShape(), elt);
  Value valueInit = filledTensor(b, loc, valueType, outDims, start);
  Value indexInit =
      filledTensor(b, loc, outType, outDims, scalarConst(b, loc, indexElt, 0));
  AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank), outMap,
                                 outMap};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{valueType, outType}, ValueRange{x},
      ValueRange{valueInit, indexInit}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = args[0], best = args[1], bestIndex = args[2];
        Value better;
        if (f) {
          // Better iff best is not NaN and (v is NaN or v beats best).
          using CF = arith::CmpFPredicate;
          Value bestOrdered =
              arith::CmpFOp::create(nb, nloc, CF::ORD, best, best);
          Value vNaN = arith::CmpFOp::create(nb, nloc, CF::UNO, v, v);
          Value beats = arith::CmpFOp::create(
              nb, nloc, isMax ? CF::OGT : CF::OLT, v, best);
          better = arith::AndIOp::create(
              nb, nloc, bestOrdered,
              arith::OrIOp::create(nb, nloc, vNaN, beats));
        } else {
          better = arith::CmpIOp::create(nb, nloc,
                                         isMax ? arith::CmpIPredicate::sgt
                                               : arith::CmpIPredicate::slt,
                                         v, best);
        }
        Value position = linalg::IndexOp::create(nb, nloc, axis);
        position = arith::IndexCastOp::create(nb, nloc, indexElt, position);
        Value newBest = arith::SelectOp::create(nb, nloc, better, v, best);
        Value newIndex =
            arith::SelectOp::create(nb, nloc, better, position, bestIndex);
        linalg::YieldOp::create(nb, nloc, ValueRange{newBest, newIndex});
      });
  return generic.getResult(1);
}

//===----------------------------------------------------------------------===//
// Patterns.
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct ReductionOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerReduction(rewriter, op));
    return success();
  }
};

template <typename OpTy, bool IsMax>
struct ArgReduceOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerArgReduce(rewriter, op, op.getX(),
                                          op.getAxisAttr().getInt(), IsMax));
    return success();
  }
};

/// cumsum / cumprod (see the file comment). Position k of the loop is
/// p = k (n - 1 - k with reverse); its predecessor q = p - 1 (p + 1). The
/// result at p is result[q] op x[p], or with `exclusive` result[q] op
/// x[q]; at k = 0 the identity op x[p], or the identity itself.
template <typename OpTy, bool IsSum>
struct CumulativeOpLowering
    : public LowerOpPattern<OpTy, CumulativeOpLowering<OpTy, IsSum>> {
  using LowerOpPattern<OpTy, CumulativeOpLowering<OpTy, IsSum>>::LowerOpPattern;

  static Value lower(OpBuilder &b, OpTy op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType type = resultTypeOf(op);
    int64_t rank = type.getRank();
    int64_t axis = op.getAxis();
    if (axis < 0)
      axis += rank;
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    Type elt = type.getElementType();
    bool f = isFloat(elt);
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    Value init = filledTensor(b, loc, type, dims, scalarConst(b, loc, elt, 0));
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    Value n = dims[axis];
    SmallVector<Value> ubs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        ubs.push_back(dims[d]);
    SmallVector<Value> lbs(ubs.size(), zero), steps(ubs.size(), one);
    auto combine = [&](OpBuilder &nb, Location nl, Value a, Value c) -> Value {
      if (IsSum)
        return f ? Value(arith::AddFOp::create(nb, nl, a, c))
                 : Value(arith::AddIOp::create(nb, nl, a, c));
      return f ? Value(arith::MulFOp::create(nb, nl, a, c))
               : Value(arith::MulIOp::create(nb, nl, a, c));
    };
    auto loop = scf::ForOp::create(
        b, loc, zero, n, one, ValueRange{init},
        [&](OpBuilder &kb, Location kl, Value k, ValueRange acc) {
          Value last = arith::SubIOp::create(kb, kl, n, one);
          Value p = reverse ? Value(arith::SubIOp::create(kb, kl, last, k)) : k;
          Value q = reverse ? Value(arith::AddIOp::create(kb, kl, p, one))
                            : Value(arith::SubIOp::create(kb, kl, p, one));
          Value first =
              arith::CmpIOp::create(kb, kl, arith::CmpIPredicate::eq, k, zero);
          // At k = 0 the predecessor is not read (selected away): p itself.
          q = arith::SelectOp::create(kb, kl, first, p, q);
          Value identity = scalarConst(kb, kl, elt, IsSum ? 0 : 1);
          scf::LoopNest nest = scf::buildLoopNest(
              kb, kl, lbs, ubs, steps, ValueRange{acc[0]},
              [&](OpBuilder &nb, Location nl, ValueRange ivs,
                  ValueRange args) -> scf::ValueVector {
                SmallVector<Value> at, before;
                for (int64_t d = 0, i = 0; d < rank; ++d) {
                  at.push_back(d == axis ? p : ivs[i]);
                  before.push_back(d == axis ? q : ivs[i]);
                  if (d != axis)
                    ++i;
                }
                Value prev = tensor::ExtractOp::create(nb, nl, args[0], before);
                prev = arith::SelectOp::create(nb, nl, first, identity, prev);
                Value term;
                if (exclusive) {
                  Value xq = tensor::ExtractOp::create(nb, nl, x, before);
                  term = arith::SelectOp::create(nb, nl, first, identity, xq);
                  // identity op identity is the identity.
                } else {
                  term = tensor::ExtractOp::create(nb, nl, x, at);
                }
                Value v = combine(nb, nl, prev, term);
                return {tensor::InsertOp::create(nb, nl, v, args[0], at)};
              });
          scf::YieldOp::create(kb, kl, nest.results);
        });
    return loop.getResult(0);
  }
};

} // namespace

void mlir::est::populateEstToLinalgReductionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<
      ReductionOpLowering<ReduceSumOp>, ReductionOpLowering<ReduceMeanOp>,
      ReductionOpLowering<ReduceMaxOp>, ReductionOpLowering<ReduceMinOp>,
      ReductionOpLowering<ReduceProdOp>, ArgReduceOpLowering<ArgmaxOp, true>,
      ArgReduceOpLowering<ArgminOp, false>,
      CumulativeOpLowering<CumsumOp, true>,
      CumulativeOpLowering<CumprodOp, false>>(patterns.getContext());
}
