//===- Utils.cpp - Helpers shared by the est-to-linalg patterns -----------===//

#include "compiler/Conversion/EstToLinalg/Utils.h"

namespace mlir {
namespace est {
namespace lowering {

RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

RankedTensorType resultTypeOf(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType());
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// A scalar constant of element type `type` (integers truncate `v`).
Value scalarConst(OpBuilder &b, Location loc, Type type, double v) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
  if (type.isInteger(1))
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v != 0));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
}

Value intConst(OpBuilder &b, Location loc, Type type, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

/// The size of dim `d` of `t`, as an index value.
Value dimValue(OpBuilder &b, Location loc, Value t, int64_t d) {
  int64_t s = tensorTypeOf(t).getDimSize(d);
  if (!ShapedType::isDynamic(s))
    return indexConst(b, loc, s);
  return tensor::DimOp::create(b, loc, t, d);
}

OpFoldResult dimFold(OpBuilder &b, Location loc, Value t, int64_t d) {
  int64_t s = tensorTypeOf(t).getDimSize(d);
  if (!ShapedType::isDynamic(s))
    return b.getIndexAttr(s);
  return tensor::DimOp::create(b, loc, t, d).getResult();
}

/// tensor.empty of `type`; `dims[i]` gives dynamic dim i.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<Value> dims) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(dims[i]);
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynamic);
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<Value> dims, Value fill) {
  Value empty = emptyTensor(b, loc, type, dims);
  return linalg::FillOp::create(b, loc, ValueRange{fill}, ValueRange{empty})
      .getResult(0);
}

Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

SmallVector<utils::IteratorType> parallel(int64_t n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// Output dims of a broadcast: the result dim when static, else a dynamic
/// operand dim at that position (right-aligned), else a static one.
SmallVector<Value> broadcastDims(OpBuilder &b, Location loc,
                                 ValueRange operands,
                                 RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      dims[d] = indexConst(b, loc, resultType.getDimSize(d));
      continue;
    }
    Value fromStatic;
    for (Value operand : operands) {
      RankedTensorType type = tensorTypeOf(operand);
      int64_t od = d - (rank - type.getRank());
      if (od < 0)
        continue;
      if (type.isDynamicDim(od)) {
        dims[d] = tensor::DimOp::create(b, loc, operand, od);
        break;
      }
      if (type.getDimSize(od) != 1 || !fromStatic)
        fromStatic = indexConst(b, loc, type.getDimSize(od));
    }
    if (!dims[d])
      dims[d] = fromStatic ? fromStatic : indexConst(b, loc, 1);
  }
  return dims;
}

/// The indexing map of a broadcast operand of `type` in a loop nest of
/// `resultType`'s rank.
AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType type,
                       RankedTensorType resultType) {
  int64_t rank = resultType.getRank(), offset = rank - type.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t d = offset + i;
    if (type.getDimSize(i) == 1 && resultType.getDimSize(d) != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// One linalg.generic computing `body` of the operands' elements into a
/// tensor of `resultType`, broadcasting NumPy-style.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange operands,
                       RankedTensorType resultType, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dims = broadcastDims(b, loc, operands, resultType);
  Value init = emptyTensor(b, loc, resultType, dims);
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(broadcastMap(ctx, tensorTypeOf(operand), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, operands, ValueRange{init}, maps,
      parallel(resultType.getRank()),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

bool isFloat(Type t) { return isa<FloatType>(t); }

/// Scalar conversion between est element types (f16 bf16 f32 f64 i32 i64 i1):
/// float -> int truncates toward zero, x -> i1 is x != 0, i1 -> x is 0 / 1.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) {
    if (isFloat(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   scalarConst(b, loc, from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 scalarConst(b, loc, from, 0));
  }
  if (from.isInteger(1)) {
    if (isFloat(to))
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::ExtUIOp::create(b, loc, to, v);
  }
  if (isFloat(from) && isFloat(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (isFloat(from))
    return arith::FPToSIOp::create(b, loc, to, v);
  if (isFloat(to))
    return arith::SIToFPOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtSIOp::create(b, loc, to, v);
  return arith::TruncIOp::create(b, loc, to, v);
}

Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padBefore, ArrayRef<int64_t> padAfter,
                 double value) {
  if (llvm::all_of(padBefore, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(padAfter, [](int64_t p) { return p == 0; }))
    return input;
  SmallVector<OpFoldResult> low = {
      b.getIndexAttr(0), b.getIndexAttr(padBefore[0]),
      b.getIndexAttr(padBefore[1]), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> high = {
      b.getIndexAttr(0), b.getIndexAttr(padAfter[0]),
      b.getIndexAttr(padAfter[1]), b.getIndexAttr(0)};
  Value padValue =
      scalarConst(b, loc, tensorTypeOf(input).getElementType(), value);
  return tensor::PadOp::create(b, loc, Type(), input, low, high, padValue)
      .getResult();
}

/// TF padding of one spatial dim: (before, after).
std::pair<int64_t, int64_t> spatialPads(int64_t in, int64_t window,
                                        int64_t stride, int64_t dilation,
                                        estc::shape::Padding padding) {
  int64_t out =
      estc::shape::convOutputSize(in, window, stride, dilation, padding);
  int64_t before =
      estc::shape::convPadBefore(in, window, stride, dilation, padding);
  int64_t needed = (out - 1) * stride + (window - 1) * dilation + 1 - in;
  int64_t after = std::max<int64_t>(needed - before, 0);
  if (padding == estc::shape::Padding::Valid)
    return {0, 0};
  return {before, after};
}

} // namespace lowering
} // namespace est
} // namespace mlir
