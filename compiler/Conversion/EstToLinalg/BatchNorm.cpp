//===- BatchNorm.cpp - fused_batch_norm and its gradient to linalg --------===//
//
// Training-mode batch normalization over the channel dim `axis` of x (any
// rank; NHWC and NCHW are axis 3 and 1):
//
//   fused_batch_norm       1. the per-channel sums of d = x - shift and
//                             d * d (channelSums), shift the channel's
//                             first element (x[0, ..., c, ..., 0]), which
//                             keeps sum(d^2)/n - (sum(d)/n)^2 accurate when
//                             the mean is large;
//                          2. over [C], in f64: mean, biased variance,
//                             inv_std, the unbiased batch variance and the
//                             per-channel a = scale * inv_std, rounded;
//                          3. one elementwise pass: y = (x - mean) * a +
//                             offset, TF's form (x * a + (offset - mean * a)
//                             loses |mean| / std ulps to cancellation).
//   fused_batch_norm_grad  1. the per-channel sums of dy and dy * xhat
//                             (channelSums);
//                          2. over [C], in f64: scale * inv_std and the two
//                             means, rounded;
//                          3. one elementwise pass for dx.
//
// channelSums is two linalg.generic ops for f32 x of rank 3 or more: a pass
// over x summing each row of W elements in f32 (all loops but the row's
// parallel), then the rows summed per channel in f64; one pass over x in f64
// otherwise. A single float32 running sum over a channel's n = N*H*W
// elements errs by about sqrt(n) ulps (n = 8192: 50): y was 5 times and dx
// 15 times further from float64 than TF's (ops.tf_batch_norm_accuracy). n,
// the elements per channel, is a run-time value (a dynamic batch).
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

/// v as f64, the type the statistics are accumulated and computed in.
Value toAcc(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isF64())
    return v;
  return arith::ExtFOp::create(b, loc, b.getF64Type(), v);
}

/// An f64 statistic rounded to `elt`.
Value fromAcc(OpBuilder &b, Location loc, Value v, Type elt) {
  if (elt.isF64())
    return v;
  return arith::TruncFOp::create(b, loc, elt, v);
}

/// The loop structure shared by both ops: x's dims, its channel dim and the
/// per-channel tensors.
struct ChannelNest {
  ChannelNest(OpBuilder &b, Location loc, Value x, int64_t axis,
              RankedTensorType channelType)
      : b(b), loc(loc), x(x), type(tensorTypeOf(x)), rank(type.getRank()),
        axis(axis < 0 ? axis + rank : axis), channelType(channelType),
        accType(RankedTensorType::get(channelType.getShape(), b.getF64Type())),
        elt(type.getElementType()), ctx(b.getContext()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    // n (elements per channel) as an f64, and 1 / n.
    Value n = indexConst(b, loc, 1);
    for (int64_t d = 0; d < rank; ++d)
      if (d != this->axis)
        n = arith::MulIOp::create(b, loc, n, dims[d]);
    n = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
    count = arith::SIToFPOp::create(b, loc, b.getF64Type(), n);
    invCount = arith::DivFOp::create(
        b, loc, scalarConst(b, loc, b.getF64Type(), 1.0), count);
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
  Value emptyC() const {
    return emptyTensor(b, loc, channelType, {dims[axis]});
  }
  Value likeX() const { return emptyTensor(b, loc, type, dims); }

  /// The per-channel sums of the terms `terms` computes from the inputs'
  /// elements, as f64 [C] tensors. For f32 x of rank 3 or more, two passes:
  /// the terms computed in f32 and summed along x's last non-channel dim (a
  /// row of W pixels in NHWC or NCHW), [..., C] partials, then the partials
  /// summed in f64. A row's sum errs by about sqrt(W) ulps and the rows'
  /// errors are independent, so the result is as accurate as one f64 sum of
  /// every term, while the pass over x keeps float32's vector width and
  /// accumulators (converting each term to f64 there cost 10-25% of a batch
  /// norm's training step). Else (rank 2, f16, bf16, f64) one pass, the
  /// elements converted to f64 and the terms computed and summed in f64.
  SmallVector<Value> channelSums(
      ValueRange inputs, ArrayRef<AffineMap> inputMaps, unsigned numSums,
      function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> terms)
      const {
    auto sumInto =
        [&](ValueRange ins, ArrayRef<AffineMap> insMaps, AffineMap outMap,
            RankedTensorType outType, ArrayRef<Value> outDims,
            SmallVector<utils::IteratorType> iterators,
            function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
                body) {
          Value zero =
              filledTensor(b, loc, outType, outDims,
                           scalarConst(b, loc, outType.getElementType(), 0.0));
          SmallVector<Value> outs(numSums, zero);
          SmallVector<Type> types(numSums, outType);
          SmallVector<AffineMap> maps(insMaps);
          maps.append(numSums, outMap);
          auto generic = linalg::GenericOp::create(
              b, loc, types, ins, outs, maps, iterators,
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                SmallVector<Value> added =
                    body(nb, nl, args.take_front(ins.size()));
                for (unsigned i = 0; i < numSums; ++i)
                  added[i] = arith::AddFOp::create(nb, nl, args[ins.size() + i],
                                                   added[i]);
                linalg::YieldOp::create(nb, nl, added);
              });
          return SmallVector<Value>(generic.getResults());
        };
    auto toAccAll = [](OpBuilder &nb, Location nl, SmallVector<Value> v) {
      for (Value &e : v)
        e = toAcc(nb, nl, e);
      return v;
    };
    SmallVector<Value> channelDims = {dims[axis]};
    if (rank < 3 || !elt.isF32())
      return sumInto(
          inputs, inputMaps, channel(), accType, channelDims,
          reduceAllButChannel(), [&](OpBuilder &nb, Location nl, ValueRange a) {
            return terms(nb, nl, toAccAll(nb, nl, SmallVector<Value>(a)));
          });

    // 1. Row sums in x's type: x's dims but `row`, the last non-channel one.
    int64_t row = axis == rank - 1 ? rank - 2 : rank - 1;
    SmallVector<int64_t> partialShape;
    SmallVector<Value> partialDims;
    SmallVector<AffineExpr> partialExprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != row) {
        partialShape.push_back(type.getDimSize(d));
        partialDims.push_back(dims[d]);
        partialExprs.push_back(getAffineDimExpr(d, ctx));
      }
    auto partialType = RankedTensorType::get(partialShape, elt);
    SmallVector<utils::IteratorType> rowIterators = parallel(rank);
    rowIterators[row] = utils::IteratorType::reduction;
    SmallVector<Value> partials =
        sumInto(inputs, inputMaps, AffineMap::get(rank, 0, partialExprs, ctx),
                partialType, partialDims, rowIterators, terms);

    // 2. The row sums summed per channel in f64.
    int64_t partialRank = rank - 1;
    int64_t partialAxis = axis < row ? axis : axis - 1;
    SmallVector<AffineMap> partialMaps(numSums,
                                       b.getMultiDimIdentityMap(partialRank));
    SmallVector<utils::IteratorType> iterators(partialRank,
                                               utils::IteratorType::reduction);
    iterators[partialAxis] = utils::IteratorType::parallel;
    return sumInto(partials, partialMaps,
                   AffineMap::get(partialRank, 0,
                                  {getAffineDimExpr(partialAxis, ctx)}, ctx),
                   accType, channelDims, iterators,
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return toAccAll(nb, nl, SmallVector<Value>(a));
                   });
  }

  /// A one-loop linalg.generic over the channels: `inputs` [C] to
  /// `numOutputs` [C] results of the channel type; `body` gets the inputs'
  /// elements as f64 and returns f64 values, rounded to the channel type.
  SmallVector<Value>
  perChannel(ValueRange inputs, unsigned numOutputs,
             function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
                 body) const {
    SmallVector<Value> outs(numOutputs, emptyC());
    SmallVector<Type> types(numOutputs, channelType);
    SmallVector<AffineMap> maps(inputs.size() + numOutputs,
                                b.getMultiDimIdentityMap(1));
    Type cElt = channelType.getElementType();
    auto generic = linalg::GenericOp::create(
        b, loc, types, inputs, outs, maps, parallel(1),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          SmallVector<Value> in;
          for (Value v : args.take_front(inputs.size()))
            in.push_back(toAcc(nb, nl, v));
          SmallVector<Value> results = body(nb, nl, in);
          for (Value &r : results)
            r = fromAcc(nb, nl, r, cElt);
          linalg::YieldOp::create(nb, nl, results);
        });
    return SmallVector<Value>(generic.getResults());
  }

  OpBuilder &b;
  Location loc;
  Value x;
  RankedTensorType type;
  int64_t rank, axis;
  RankedTensorType channelType, accType;
  Type elt;
  MLIRContext *ctx;
  SmallVector<Value> dims;
  Value count, invCount; // f64
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

    // 1. The shifted sums (channelSums).
    SmallVector<Value> sums = nest.channelSums(
        ValueRange{x, shift}, {nest.identity(), nest.channel()}, 2,
        [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
          return {d, arith::MulFOp::create(nb, nl, d, d)};
        });

    // 2. The statistics and the per-channel scale, in f64.
    Value count = nest.count, invCount = nest.invCount;
    SmallVector<Value> stats = nest.perChannel(
        ValueRange{shift, sums[0], sums[1], op.getScale()}, 4,
        [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          Type f64 = nb.getF64Type();
          Value zero = scalarConst(nb, nl, f64, 0.0);
          Value one = scalarConst(nb, nl, f64, 1.0);
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
          Value inv = arith::DivFOp::create(
              nb, nl, one,
              math::SqrtOp::create(
                  nb, nl,
                  arith::AddFOp::create(nb, nl, var,
                                        scalarConst(nb, nl, f64, epsilon))));
          Value scale = arith::MulFOp::create(nb, nl, a[3], inv);
          return {mean, unbiased, inv, scale};
        });

    // 3. y = (x - mean) * scale + offset.
    AffineMap id = nest.identity(), ch = nest.channel();
    auto y = linalg::GenericOp::create(
        b, loc, TypeRange{nest.type},
        ValueRange{x, stats[0], stats[3], op.getOffset()},
        ValueRange{nest.likeX()}, SmallVector<AffineMap>{id, ch, ch, ch, id},
        parallel(rank), [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value centered = arith::SubFOp::create(nb, nl, args[0], args[1]);
          Value v = arith::AddFOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, centered, args[2]),
              args[3]);
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

    // 1. sum(dy) and sum(dy * xhat) per channel (channelSums). Each term is
    // computed in x's type, as the dx pass computes xhat: its rounding, half
    // an ulp of the term and independent from term to term, adds about
    // sqrt(n) half-ulps of a term to the sum, where one float32 running sum
    // errs by about sqrt(n) ulps of the whole sum.
    AffineMap id = nest.identity(), ch = nest.channel();
    SmallVector<Value> sums = nest.channelSums(
        ValueRange{dy, x, mean, inv}, {id, id, ch, ch}, 2,
        [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          Value xhat = arith::MulFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, a[1], a[2]), a[3]);
          return {a[0], arith::MulFOp::create(nb, nl, a[0], xhat)};
        });

    // 2. scale * inv_std, mean(dy), mean(dy * xhat), and the sums rounded:
    // the gradients of offset and scale.
    Value invCount = nest.invCount;
    SmallVector<Value> k = nest.perChannel(
        ValueRange{scale, inv, sums[0], sums[1]}, 5,
        [&](OpBuilder &nb, Location nl, ValueRange a) -> SmallVector<Value> {
          return {arith::MulFOp::create(nb, nl, a[0], a[1]),
                  arith::MulFOp::create(nb, nl, a[2], invCount),
                  arith::MulFOp::create(nb, nl, a[3], invCount), a[3], a[2]};
        });

    // 3. dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
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
                     k[3], k[4]});
    return success();
  }
};

} // namespace

void mlir::est::populateEstToLinalgBatchNormPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FusedBatchNormOpLowering, FusedBatchNormGradOpLowering>(
      patterns.getContext());
}
