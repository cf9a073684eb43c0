//===- Shapes.cpp - est shape ops to tensor and linalg
//---------------------===//
//
//   reshape squeeze expand_dims  tensor.collapse_shape / expand_shape
//   transpose                    linalg.transpose
//   concat slice pad             tensor.insert_slice / extract_slice / pad
//   reverse                      linalg.generic reading the mirrored element
//   shape                        linalg.generic: element i is
//                                tensor.dim i
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// Reassociation between a shape and the same shape with the unit dims at
/// positions `removed` (of the larger shape) dropped.
SmallVector<ReassociationIndices>
unitDimReassociation(int64_t largeRank, ArrayRef<int64_t> removed) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t i = 0; i < largeRank; ++i) {
    pending.push_back(i);
    if (!llvm::is_contained(removed, i)) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty() && !groups.empty())
    groups.back().append(pending.begin(), pending.end());
  return groups;
}

struct ReshapeOpLowering : public OpRewritePattern<est::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::ReshapeOp op,
                                PatternRewriter &b) const override {
    if (resultTypeOf(op).getNumDynamicDims() > 1)
      return b.notifyMatchFailure(
          op, "reshape to more than one dynamic dimension is not supported");
    b.replaceOp(op, lower(b, op));
    return success();
  }

  static Value lower(OpBuilder &b, est::ReshapeOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType inType = tensorTypeOf(x);
    RankedTensorType outType = resultTypeOf(op);
    int64_t inRank = inType.getRank(), outRank = outType.getRank();
    if (inRank == 0 || outRank == 0) {
      // From / to a scalar: every other dim is 1.
      SmallVector<ReassociationIndices> none;
      if (inRank == 0)
        return tensor::ExpandShapeOp::create(b, loc, outType, x, none)
            .getResult();
      return castTo(
          b, loc, tensor::CollapseShapeOp::create(b, loc, x, none).getResult(),
          outType);
    }
    Value flat = x;
    if (inRank > 1) {
      ReassociationIndices all;
      for (int64_t i = 0; i < inRank; ++i)
        all.push_back(i);
      flat = tensor::CollapseShapeOp::create(
          b, loc, x, SmallVector<ReassociationIndices>{all});
    }
    if (outRank == 1)
      return castTo(b, loc, flat, outType);
    // The dynamic dim (at most one) is total / product(static dims).
    SmallVector<OpFoldResult> outShape;
    int64_t staticProduct = 1;
    for (int64_t d : outType.getShape())
      if (!ShapedType::isDynamic(d))
        staticProduct *= d;
    for (int64_t d = 0; d < outRank; ++d) {
      if (!outType.isDynamicDim(d)) {
        outShape.push_back(b.getIndexAttr(outType.getDimSize(d)));
        continue;
      }
      Value total = dimValue(b, loc, flat, 0);
      outShape.push_back(arith::DivUIOp::create(
                             b, loc, total, indexConst(b, loc, staticProduct))
                             .getResult());
    }
    ReassociationIndices all;
    for (int64_t i = 0; i < outRank; ++i)
      all.push_back(i);
    Value flatCast = flat;
    return tensor::ExpandShapeOp::create(b, loc, outType, flatCast,
                                         SmallVector<ReassociationIndices>{all},
                                         outShape)
        .getResult();
  }
};

struct TransposeOpLowering : public OpRewritePattern<est::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::TransposeOp transpose,
                                PatternRewriter &b) const override {
    Location loc = transpose.getLoc();
    Value x = transpose.getX();
    SmallVector<Value> dims;
    for (int64_t p : transpose.getPerm())
      dims.push_back(dimValue(b, loc, x, p));
    Value init = emptyTensor(b, loc, resultTypeOf(transpose), dims);
    b.replaceOp(transpose, linalg::TransposeOp::create(b, loc, x, init,
                                                       transpose.getPerm())
                               .getResult()[0]);
    return success();
  }
};

struct ConcatOpLowering
    : public LowerOpPattern<est::ConcatOp, ConcatOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ConcatOp concat) {
    Location loc = concat.getLoc();
    RankedTensorType outType = resultTypeOf(concat);
    int64_t rank = outType.getRank();
    int64_t axis = concat.getAxisAttr().getInt();
    if (axis < 0)
      axis += rank;
    ValueRange xs = concat.getXs();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis) {
        dims.push_back(dimValue(b, loc, xs[0], d));
        continue;
      }
      Value total = indexConst(b, loc, 0);
      for (Value x : xs)
        total = arith::AddIOp::create(b, loc, total, dimValue(b, loc, x, d));
      dims.push_back(total);
    }
    Value acc = emptyTensor(b, loc, outType, dims);
    OpFoldResult offset = b.getIndexAttr(0);
    int64_t staticOffset = 0;
    Value dynamicOffset;
    for (Value x : xs) {
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> sizes;
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(dimFold(b, loc, x, d));
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      acc = tensor::InsertSliceOp::create(b, loc, x, acc, offsets, sizes,
                                          strides);
      int64_t size = tensorTypeOf(x).getDimSize(axis);
      if (!dynamicOffset && !ShapedType::isDynamic(size)) {
        staticOffset += size;
        offset = b.getIndexAttr(staticOffset);
        continue;
      }
      if (!dynamicOffset)
        dynamicOffset = indexConst(b, loc, staticOffset);
      dynamicOffset = arith::AddIOp::create(b, loc, dynamicOffset,
                                            dimValue(b, loc, x, axis));
      offset = dynamicOffset;
    }
    return acc;
  }
};

struct SliceOpLowering : public OpRewritePattern<est::SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::SliceOp slice,
                                PatternRewriter &b) const override {
    Location loc = slice.getLoc();
    Value x = slice.getX();
    int64_t rank = tensorTypeOf(x).getRank();
    SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
    for (int64_t d = 0; d < rank; ++d) {
      int64_t begin = slice.getBegin()[d], size = slice.getSize()[d];
      offsets.push_back(b.getIndexAttr(begin));
      if (size >= 0) {
        sizes.push_back(b.getIndexAttr(size));
      } else if (!tensorTypeOf(x).isDynamicDim(d)) {
        sizes.push_back(b.getIndexAttr(tensorTypeOf(x).getDimSize(d) - begin));
      } else {
        sizes.push_back(arith::SubIOp::create(b, loc, dimValue(b, loc, x, d),
                                              indexConst(b, loc, begin))
                            .getResult());
      }
    }
    Value s =
        tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
    b.replaceOp(slice, castTo(b, loc, s, resultTypeOf(slice)));
    return success();
  }
};

struct PadOpLowering : public OpRewritePattern<est::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::PadOp pad,
                                PatternRewriter &b) const override {
    Location loc = pad.getLoc();
    ArrayRef<int64_t> paddings = pad.getPaddings();
    SmallVector<OpFoldResult> low, high;
    for (size_t i = 0; i + 1 < paddings.size(); i += 2) {
      low.push_back(b.getIndexAttr(paddings[i]));
      high.push_back(b.getIndexAttr(paddings[i + 1]));
    }
    Value value = scalarConst(b, loc, resultTypeOf(pad).getElementType(),
                              pad.getConstantValue().convertToDouble());
    Value p =
        tensor::PadOp::create(b, loc, Type(), pad.getX(), low, high, value);
    b.replaceOp(pad, castTo(b, loc, p, resultTypeOf(pad)));
    return success();
  }
};

struct SqueezeOpLowering : public OpRewritePattern<est::SqueezeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::SqueezeOp squeeze,
                                PatternRewriter &b) const override {
    Location loc = squeeze.getLoc();
    Value x = squeeze.getX();
    RankedTensorType xType = tensorTypeOf(x);
    SmallVector<int64_t> removed;
    if (auto axes = squeeze.getAxes()) {
      for (int64_t a : *axes)
        removed.push_back(a < 0 ? a + xType.getRank() : a);
    } else {
      for (int64_t d = 0; d < xType.getRank(); ++d)
        if (xType.getDimSize(d) == 1)
          removed.push_back(d);
    }
    Value c = tensor::CollapseShapeOp::create(
        b, loc, x, unitDimReassociation(xType.getRank(), removed));
    b.replaceOp(squeeze, castTo(b, loc, c, resultTypeOf(squeeze)));
    return success();
  }
};

struct ExpandDimsOpLowering : public OpRewritePattern<est::ExpandDimsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::ExpandDimsOp expand,
                                PatternRewriter &b) const override {
    Location loc = expand.getLoc();
    Value x = expand.getX();
    RankedTensorType outType = resultTypeOf(expand);
    int64_t axis = expand.getAxisAttr().getInt();
    if (axis < 0)
      axis += outType.getRank();
    SmallVector<OpFoldResult> outShape;
    for (int64_t d = 0; d < outType.getRank(); ++d) {
      if (d == axis)
        outShape.push_back(b.getIndexAttr(1));
      else
        outShape.push_back(dimFold(b, loc, x, d < axis ? d : d - 1));
    }
    b.replaceOp(expand,
                tensor::ExpandShapeOp::create(
                    b, loc, outType, x,
                    unitDimReassociation(outType.getRank(), {axis}), outShape)
                    .getResult());
    return success();
  }
};

/// One linalg.generic over the result: element i along each reversed axis
/// reads element n - 1 - i of the input (tensor.extract).
struct ReverseOpLowering
    : public LowerOpPattern<est::ReverseOp, ReverseOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ReverseOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType type = resultTypeOf(op);
    int64_t rank = type.getRank();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    SmallVector<bool> reversed(rank, false);
    for (int64_t a : op.getAxes())
      reversed[a < 0 ? a + rank : a] = true;
    Value init = emptyTensor(b, loc, type, dims);
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, maps,
               parallel(rank),
               [&](OpBuilder &nb, Location nl, ValueRange) {
                 Value one = arith::ConstantIndexOp::create(nb, nl, 1);
                 SmallVector<Value> at;
                 for (int64_t d = 0; d < rank; ++d) {
                   Value i = linalg::IndexOp::create(nb, nl, d);
                   if (reversed[d])
                     i = arith::SubIOp::create(
                         nb, nl, arith::SubIOp::create(nb, nl, dims[d], one),
                         i);
                   at.push_back(i);
                 }
                 Value v = tensor::ExtractOp::create(nb, nl, x, at);
                 linalg::YieldOp::create(nb, nl, v);
               })
        .getResult(0);
  }
};

/// The dims (run-time ones read with tensor.dim) as a rank-1 tensor: one
/// linalg.generic selecting dim i for element i, which the CUDA target maps
/// like any other (tensor.from_elements would be host stores into device
/// memory).
struct ShapeOfOpLowering
    : public LowerOpPattern<est::ShapeOfOp, ShapeOfOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ShapeOfOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType type = resultTypeOf(op);
    Type elt = type.getElementType();
    int64_t rank = tensorTypeOf(x).getRank();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    Value init = emptyTensor(b, loc, type, {});
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
               SmallVector<AffineMap>{b.getMultiDimIdentityMap(1)}, parallel(1),
               [&](OpBuilder &nb, Location nl, ValueRange) {
                 Value i = linalg::IndexOp::create(nb, nl, 0);
                 Value v = dims.empty() ? i : dims.back();
                 for (int64_t d = rank - 2; d >= 0; --d) {
                   Value isD = arith::CmpIOp::create(
                       nb, nl, arith::CmpIPredicate::eq, i,
                       arith::ConstantIndexOp::create(nb, nl, d));
                   v = arith::SelectOp::create(nb, nl, isD, dims[d], v);
                 }
                 linalg::YieldOp::create(
                     nb, nl, Value(arith::IndexCastOp::create(nb, nl, elt, v)));
               })
        .getResult(0);
  }
};

} // namespace

void mlir::est::populateEstToLinalgShapePatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeOpLowering, TransposeOpLowering, ConcatOpLowering,
               SliceOpLowering, PadOpLowering, SqueezeOpLowering,
               ExpandDimsOpLowering, ReverseOpLowering, ShapeOfOpLowering>(
      patterns.getContext());
}
