//===- BatchNorm.cpp - fused_batch_norm and its gradient to linalg --------===//
//
// Training-mode batch normalization over the channel dim `axis` of x (any
// rank; NHWC and NCHW are axis 3 and 1). Each op is three linalg.generic
// ops:
//
//   fused_batch_norm       1. one pass over x: per channel, the sums of
//                             d = x - shift and d * d, shift the channel's
//                             first element (x[0, ..., c, ..., 0]), which
//                             keeps sum(d^2)/n - (sum(d)/n)^2 accurate when
//                             the mean is large;
//                          2. over [C]: mean, biased variance, inv_std,
//                             the unbiased batch variance and the per-channel
//                             a = scale * inv_std, b = offset - mean * a;
//                          3. one elementwise pass: y = x * a + b.
//   fused_batch_norm_grad  1. one pass over (dy, x): per channel, sum(dy)
//                             and sum(dy * xhat);
//                          2. over [C]: scale * inv_std and the two means;
//                          3. one elementwise pass for dx.
//
// The passes over x are single loop nests over x's dims (the channel loop
// parallel, the others reductions in the statistics passes), which the
// fusion keeps as they are; n, the elements per channel, is a run-time
// value (a dynamic batch).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::est;
using namespace mlir::est::lowering;

namespace {

/// The loop structure shared by both ops: x's dims, its channel dim and the
/// per-channel tensors.
struct ChannelNest {
  ChannelNest(OpBuilder &b, Location loc, Value x, int64_t axis,
              RankedTensorType channelType)
      : b(b), loc(loc), x(x), type(tensorTypeOf(x)), rank(type.getRank()),
        axis(axis < 0 ? axis + rank : axis), channelType(channelType),
        elt(type.getElementType()), ctx(b.getContext()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    // n (elements per channel) as a float of x's type, and 1 / n.
    Value n = indexConst(b, loc, 1);
    for (int64_t d = 0; d < rank; ++d)
      if (d != this->axis)
        n = arith::MulIOp::create(b, loc, n, dims[d]);
    n = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
    count = arith::SIToFPOp::create(b, loc, elt, n);
    invCount =
        arith::DivFOp::create(b, loc, scalarConst(b, loc, elt, 1.0), count);
  }

  AffineMap identity() const { return b.getMultiDimIdentityMap(rank); }
  AffineMap channel() const {
    return AffineMap::get(rank, 0, {getAffineDimExpr(axis, ctx)}, ctx);
  }
  SmallVector<utils::IteratorType> reduceAllButChannel() const {
    SmallVector<utils::IteratorType> its(rank, utils::IteratorType::reduction);
    its[axis] = utils::IteratorType::parallel;
    return its;
  }
  Value zerosC() const {
    return filledTensor(b, loc, channelType, {dims[axis]},
                        scalarConst(b, loc, elt, 0.0));
  }
  Value emptyC() const {
    return emptyTensor(b, loc, channelType, {dims[axis]});
  }
  Value likeX() const { return emptyTensor(b, loc, type, dims); }

  /// A one-loop linalg.generic over the channels: `inputs` [C] to
  /// `numOutputs` [C] results.
  SmallVector<Value>
  perChannel(ValueRange inputs, unsigned numOutputs,
             function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
                 body) const {
    SmallVector<Value> outs(numOutputs, emptyC());
    SmallVector<Type> types(numOutputs, channelType);
    SmallVector<AffineMap> maps(inputs.size() + numOutputs,
                                b.getMultiDimIdentityMap(1));
    auto generic = linalg::GenericOp::create(
        b, loc, types, inputs, outs, maps, parallel(1),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, body(nb, nl, args));
        });
    return SmallVector<Value>(generic.getResults());
  }

  OpBuilder &b;
  Location loc;
  Value x;
  RankedTensorType type;
  int64_t rank, axis;
  RankedTensorType channelType;
  Type elt;
  MLIRContext *ctx;
  SmallVector<Value> dims;
  Value count, invCount;
};

struct FusedBatchNormOpLowering : public OpRewritePattern<FusedBatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(FusedBatchNormOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getX();
    auto cType = cast<RankedTensorType>(op.getBatchMean().getType());
    ChannelNest nest(b, loc, x, op.getAxis(), cType);
    int64_t rank = nest.rank, axis = nest.axis;
    double epsilon = op.getEpsilon().convertToDouble();

    // The shift: x[0, ..., :, ..., 0]; 0 for an empty x (n = 0), which is
    // not read: each non-channel dim is sliced to min(size, 1) elements and
    // summed (the element, or nothing). The statistics are then 0 / 0, NaN,
    // as TF's FusedBatchNormV3 gives for an empty batch.
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes(rank, b.getIndexAttr(1));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    sizes[axis] = dimFold(b, loc, x, axis);
    bool mayBeEmpty = false, empty = false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && nest.type.getDimSize(d) < 1) {
        mayBeEmpty = true;
        // A dim known to be 0: x is empty and any slice of it, even of
        // size 0, is out of bounds for tensor.extract_slice's verifier.
        empty |= nest.type.getDimSize(d) == 0;
        sizes[d] =
            arith::MinSIOp::create(b, loc, nest.dims[d], indexConst(b, loc, 1))
                .getResult();
      }
    Value shift;
    if (empty) {
      shift = filledTensor(
          b, loc, RankedTensorType::get({nest.type.getDimSize(axis)}, nest.elt),
          {nest.dims[axis]}, scalarConst(b, loc, nest.elt, 0.0));
    } else if (!mayBeEmpty) {
      auto sliceType =
          RankedTensorType::get({nest.type.getDimSize(axis)}, nest.elt);
      shift = tensor::ExtractSliceOp::create(b, loc, sliceType, x, offsets,
                                             sizes, strides);
    } else {
      Value first =
          tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
      Value zeros = filledTensor(
          b, loc, RankedTensorType::get({nest.type.getDimSize(axis)}, nest.elt),
          {nest.dims[axis]}, scalarConst(b, loc, nest.elt, 0.0));
      shift = linalg::GenericOp::create(
                  b, loc, TypeRange{zeros.getType()}, ValueRange{first},
                  ValueRange{zeros},
                  SmallVector<AffineMap>{nest.identity(), nest.channel()},
                  nest.reduceAllButChannel(),
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    linalg::YieldOp::create(nb, nl,
                                            ValueRange{arith::AddFOp::create(
                                                nb, nl, args[1], args[0])});
                  })
                  .getResult(0);
    }
    shift = castTo(b, loc, shift, cType);

    // 1. The shifted sums.
    Value zeros = nest.zerosC();
    auto sums = linalg::GenericOp::create(
        b, loc, TypeRange{cType, cType}, ValueRange{x, shift},
        ValueRange{zeros, zeros},
        SmallVector<AffineMap>{nest.identity(), nest.channel(), nest.channel(),
                               nest.channel()},
        nest.reduceAllButChannel(),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value d = arith::SubFOp::create(nb, nl, args[0], args[1]);
          Value sum = arith::AddFOp::create(nb, nl, args[2], d);
          Value sumSq = arith::AddFOp::create(
              nb, nl, args[3], arith::MulFOp::create(nb, nl, d, d));
          linalg::YieldOp::create(nb, nl, ValueRange{sum, sumSq});
        });

    // 2. The statistics and the per-channel affine map.
    Value count = nest.count, invCount = nest.invCount;
    Type elt = nest.elt;
    SmallVector<Value> stats = nest.perChannel(
        ValueRange{shift, sums.getResult(0), sums.getResult(1), op.getScale(),
                   op.getOffset()},
        5, [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          Value zero = scalarConst(nb, nl, elt, 0.0);
          Value one = scalarConst(nb, nl, elt, 1.0);
          Value m = arith::MulFOp::create(nb, nl, a[1], invCount);
          Value var = arith::SubFOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, a[2], invCount),
              arith::MulFOp::create(nb, nl, m, m));
          var = arith::MaximumFOp::create(nb, nl, var, zero);
          Value mean = arith::AddFOp::create(nb, nl, a[0], m);
          // TF's unbiased batch variance: var * n / max(n - 1, 1).
          Value bessel = arith::DivFOp::create(
              nb, nl, count,
              arith::MaximumFOp::create(
                  nb, nl, arith::SubFOp::create(nb, nl, count, one), one));
          Value unbiased = arith::MulFOp::create(nb, nl, var, bessel);
          Value inv = math::RsqrtOp::create(
              nb, nl,
              arith::AddFOp::create(nb, nl, var,
                                    scalarConst(nb, nl, elt, epsilon)));
          Value scale = arith::MulFOp::create(nb, nl, a[3], inv);
          Value shiftC = arith::SubFOp::create(
              nb, nl, a[4], arith::MulFOp::create(nb, nl, mean, scale));
          return {mean, unbiased, inv, scale, shiftC};
        });

    // 3. y = x * scale + shift.
    auto y = linalg::GenericOp::create(
        b, loc, TypeRange{nest.type}, ValueRange{x, stats[3], stats[4]},
        ValueRange{nest.likeX()},
        SmallVector<AffineMap>{nest.identity(), nest.channel(), nest.channel(),
                               nest.identity()},
        parallel(rank), [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value v = arith::AddFOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, args[0], args[1]), args[2]);
          linalg::YieldOp::create(nb, nl, v);
        });
    b.replaceOp(op, {castTo(b, loc, y.getResult(0), op.getY().getType()),
                     stats[0], stats[1], stats[2]});
    return success();
  }
};

struct FusedBatchNormGradOpLowering
    : public OpRewritePattern<FusedBatchNormGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(FusedBatchNormGradOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getX(), dy = op.getDy();
    auto cType = cast<RankedTensorType>(op.getDscale().getType());
    ChannelNest nest(b, loc, x, op.getAxis(), cType);
    int64_t rank = nest.rank;
    Value mean = castTo(b, loc, op.getBatchMean(), cType);
    Value inv = castTo(b, loc, op.getInvStd(), cType);
    Value scale = castTo(b, loc, op.getScale(), cType);
    dy = castTo(b, loc, dy, nest.type);

    // 1. sum(dy) and sum(dy * xhat) per channel.
    Value zeros = nest.zerosC();
    auto sums = linalg::GenericOp::create(
        b, loc, TypeRange{cType, cType}, ValueRange{dy, x, mean, inv},
        ValueRange{zeros, zeros},
        SmallVector<AffineMap>{nest.identity(), nest.identity(), nest.channel(),
                               nest.channel(), nest.channel(), nest.channel()},
        nest.reduceAllButChannel(),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value xhat = arith::MulFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, args[1], args[2]), args[3]);
          Value sumDy = arith::AddFOp::create(nb, nl, args[4], args[0]);
          Value sumDyXhat = arith::AddFOp::create(
              nb, nl, args[5], arith::MulFOp::create(nb, nl, args[0], xhat));
          linalg::YieldOp::create(nb, nl, ValueRange{sumDy, sumDyXhat});
        });
    Value sumDy = sums.getResult(0), sumDyXhat = sums.getResult(1);

    // 2. scale * inv_std, mean(dy), mean(dy * xhat).
    Value invCount = nest.invCount;
    SmallVector<Value> k = nest.perChannel(
        ValueRange{scale, inv, sumDy, sumDyXhat}, 3,
        [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          return {arith::MulFOp::create(nb, nl, a[0], a[1]),
                  arith::MulFOp::create(nb, nl, a[2], invCount),
                  arith::MulFOp::create(nb, nl, a[3], invCount)};
        });

    // 3. dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
    AffineMap id = nest.identity(), ch = nest.channel();
    auto dx = linalg::GenericOp::create(
        b, loc, TypeRange{nest.type},
        ValueRange{dy, x, mean, inv, k[0], k[1], k[2]},
        ValueRange{nest.likeX()},
        SmallVector<AffineMap>{id, id, ch, ch, ch, ch, ch, id}, parallel(rank),
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value xhat = arith::MulFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, a[1], a[2]), a[3]);
          Value v = arith::SubFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, a[0], a[5]),
              arith::MulFOp::create(nb, nl, xhat, a[6]));
          Value dxv = arith::MulFOp::create(nb, nl, a[4], v);
          linalg::YieldOp::create(nb, nl, dxv);
        });
    b.replaceOp(op, {castTo(b, loc, dx.getResult(0), op.getDx().getType()),
                     sumDyXhat, sumDy});
    return success();
  }
};

} // namespace

void mlir::est::populateEstToLinalgBatchNormPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FusedBatchNormOpLowering, FusedBatchNormGradOpLowering>(
      patterns.getContext());
}
