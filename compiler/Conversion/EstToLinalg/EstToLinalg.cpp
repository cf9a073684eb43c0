//===- EstToLinalg.cpp - convert-est-to-linalg --------------------------===//
//
// Lowers every est op of a function to linalg / tensor / arith / math on
// tensors. Types do not change (est works on builtin tensors), so the pass
// walks the function once, in order, and replaces each op by the value its
// lowering computes.
//
//   elementwise, compare, logical, select, cast, broadcast_to
//       one linalg.generic; NumPy broadcasting through the indexing maps (a
//       static size-1 operand dim reads index 0; a dynamic dim is assumed not
//       to broadcast)
//   constant                   arith.constant
//   zeros_like ones_like       linalg.fill
//   reduce_*                   linalg.generic with a reduction iterator on a
//                              linalg.fill init (identities 0, 1, -inf, +inf;
//                              max/min propagate NaN); keep_dims writes the
//                              kept dims through constant-0 map results
//   argmax argmin              one linalg.generic, two outputs (value,
//                              index); first index on ties, a NaN wins
//   matmul                     linalg.matmul / linalg.batch_matmul
//                              (transposes as linalg.transpose producers,
//                              batch dims broadcast and collapsed)
//   conv2d                     tensor.pad (TF SAME) + linalg.conv_2d_nhwc_hwcf
//   max_pool avg_pool          tensor.pad + a linalg.generic over (n, oh, ow,
//                              kh, kw, c), the channels innermost; avg
//                              divides by the count of valid elements
//   reshape squeeze expand_dims  tensor.collapse_shape / expand_shape
//   transpose                  linalg.transpose
//   conv2d_backprop_input/_filter, max_pool_grad, avg_pool_grad
//                              one linalg.generic each (two for
//                              max_pool_grad: the first argmax of each
//                              window, then the scatter, all parallel when
//                              windows do not overlap; pooling gradients
//                              with the channels innermost), reading the
//                              windowed operand with tensor.extract at
//                              computed, bounds-checked coordinates (see
//                              "Gradients of convolution and pooling");
//                              f32 conv backprops carry library_call =
//                              the runtime kernel, which
//                              est-linalg-to-runtime-calls calls instead
//   concat slice pad           tensor.insert_slice / extract_slice / pad
//   gather                     linalg.generic + tensor.extract; indices are
//                              clamped to [0, dim - 1]
//   one_hot                    linalg.generic (out-of-range: all off_value)
//   dropout random_*           linalg.generic computing Philox4x32-10 from
//                              linalg.index, exactly lib/Random/Philox.h
//   stop_gradient              its operand
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Passes.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Random/Philox.h"
#include "lib/Shape/ShapeFunctions.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_CONVERTESTTOLINALG
#include "compiler/Conversion/EstToLinalg/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
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

//===----------------------------------------------------------------------===//
// The lowering of one op.
//===----------------------------------------------------------------------===//

class Lowering {
public:
  Lowering(OpBuilder &b, Operation *op) : b(b), op(op), loc(op->getLoc()) {}

  /// The replacement values, or failure after reporting an error on `op`.
  FailureOr<SmallVector<Value>> run();

private:
  OpBuilder &b;
  Operation *op;
  Location loc;

  RankedTensorType resultType() {
    return cast<RankedTensorType>(op->getResult(0).getType());
  }
  FailureOr<Value> fail(const Twine &message) {
    op->emitOpError(message);
    return failure();
  }

  FailureOr<Value> lowerElementwise();
  FailureOr<Value> lowerReduction();
  FailureOr<Value> lowerArgReduce(Value x, int64_t axis, bool isMax);
  FailureOr<Value> lowerMatmul(est::MatmulOp matmul);
  FailureOr<Value> lowerConv(est::Conv2DOp conv);
  FailureOr<Value> lowerPool(Value input, ArrayRef<int64_t> ksize,
                             ArrayRef<int64_t> strides, StringRef padding,
                             bool isMax);
  FailureOr<Value> lowerConvBackpropInput(est::Conv2DBackpropInputOp op);
  FailureOr<Value> lowerConvBackpropFilter(est::Conv2DBackpropFilterOp op);
  FailureOr<Value> lowerMaxPoolGrad(est::MaxPoolGradOp op);
  FailureOr<Value> lowerAvgPoolGrad(est::AvgPoolGradOp op);
  FailureOr<Value> lowerReshape(Value x);
  FailureOr<Value> lowerConcat(est::ConcatOp concat);
  FailureOr<Value> lowerGather(est::GatherOp gather);
  FailureOr<Value> lowerScatter(est::ScatterOp scatter);
  FailureOr<Value> lowerOneHot(est::OneHotOp oneHot);
  FailureOr<Value> lowerRandom(Value x, Value counter, int64_t seed);

  Value transposeLastTwo(Value v);
  Value padSpatial(Value input, ArrayRef<int64_t> padBefore,
                   ArrayRef<int64_t> padAfter, double value);
};

/// The scalar computation of an elementwise est op, or null if `op` is not
/// one.
Value elementwiseBody(Operation *op, OpBuilder &b, Location loc,
                      ValueRange args) {
  Type elt = args.empty() ? Type() : args[0].getType();
  bool f = elt && isFloat(elt);
  auto zero = [&]() { return scalarConst(b, loc, elt, 0); };
  auto one = [&]() { return scalarConst(b, loc, elt, 1); };
  using CF = arith::CmpFPredicate;
  using CI = arith::CmpIPredicate;
  auto compare = [&](CF fp, CI ip) -> Value {
    if (f)
      return arith::CmpFOp::create(b, loc, fp, args[0], args[1]);
    return arith::CmpIOp::create(b, loc, ip, args[0], args[1]);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](est::AddOp) -> Value {
        return f ? (Value)arith::AddFOp::create(b, loc, args[0], args[1])
                 : arith::AddIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::SubOp) -> Value {
        return f ? (Value)arith::SubFOp::create(b, loc, args[0], args[1])
                 : arith::SubIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::MulOp) -> Value {
        return f ? (Value)arith::MulFOp::create(b, loc, args[0], args[1])
                 : arith::MulIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::DivOp) -> Value {
        return f ? (Value)arith::DivFOp::create(b, loc, args[0], args[1])
                 : arith::DivSIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::PowOp) -> Value {
        return f ? (Value)math::PowFOp::create(b, loc, args[0], args[1])
                 : math::IPowIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::MaximumOp) -> Value {
        return f ? (Value)arith::MaximumFOp::create(b, loc, args[0], args[1])
                 : arith::MaxSIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::MinimumOp) -> Value {
        return f ? (Value)arith::MinimumFOp::create(b, loc, args[0], args[1])
                 : arith::MinSIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::EqualOp) { return compare(CF::OEQ, CI::eq); })
      .Case([&](est::NotEqualOp) { return compare(CF::UNE, CI::ne); })
      .Case([&](est::LessOp) { return compare(CF::OLT, CI::slt); })
      .Case([&](est::LessEqualOp) { return compare(CF::OLE, CI::sle); })
      .Case([&](est::GreaterOp) { return compare(CF::OGT, CI::sgt); })
      .Case([&](est::GreaterEqualOp) { return compare(CF::OGE, CI::sge); })
      .Case([&](est::LogicalAndOp) -> Value {
        return arith::AndIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::LogicalOrOp) -> Value {
        return arith::OrIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](est::LogicalNotOp) -> Value {
        return arith::XOrIOp::create(b, loc, args[0], one());
      })
      .Case([&](est::SelectOp) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Case([&](est::CastOp cast) -> Value {
        return convertScalar(b, loc, args[0], cast.getDtype());
      })
      .Case([&](est::BroadcastToOp) -> Value { return args[0]; })
      .Case([&](est::NegOp) -> Value {
        return f ? (Value)arith::NegFOp::create(b, loc, args[0])
                 : arith::SubIOp::create(b, loc, zero(), args[0]);
      })
      .Case([&](est::AbsOp) -> Value {
        return f ? (Value)math::AbsFOp::create(b, loc, args[0])
                 : math::AbsIOp::create(b, loc, args[0]);
      })
      .Case([&](est::SquareOp) -> Value {
        return f ? (Value)arith::MulFOp::create(b, loc, args[0], args[0])
                 : arith::MulIOp::create(b, loc, args[0], args[0]);
      })
      .Case([&](est::ExpOp) -> Value {
        return math::ExpOp::create(b, loc, args[0]);
      })
      .Case([&](est::LogOp) -> Value {
        return math::LogOp::create(b, loc, args[0]);
      })
      .Case([&](est::SqrtOp) -> Value {
        return math::SqrtOp::create(b, loc, args[0]);
      })
      .Case([&](est::RsqrtOp) -> Value {
        return math::RsqrtOp::create(b, loc, args[0]);
      })
      .Case([&](est::TanhOp) -> Value {
        return math::TanhOp::create(b, loc, args[0]);
      })
      .Case([&](est::SinOp) -> Value {
        return math::SinOp::create(b, loc, args[0]);
      })
      .Case([&](est::CosOp) -> Value {
        return math::CosOp::create(b, loc, args[0]);
      })
      .Case([&](est::FloorOp) -> Value {
        return math::FloorOp::create(b, loc, args[0]);
      })
      .Case([&](est::SigmoidOp) -> Value {
        // 1 / (1 + exp(-x)).
        Value negX = arith::NegFOp::create(b, loc, args[0]);
        Value e = math::ExpOp::create(b, loc, negX);
        Value o = one();
        Value den = arith::AddFOp::create(b, loc, o, e);
        return arith::DivFOp::create(b, loc, o, den);
      })
      .Case([&](est::ReluOp) -> Value {
        return arith::MaximumFOp::create(b, loc, args[0], zero());
      })
      .Case([&](est::Relu6Op) -> Value {
        Value r = arith::MaximumFOp::create(b, loc, args[0], zero());
        return arith::MinimumFOp::create(b, loc, r,
                                         scalarConst(b, loc, elt, 6));
      })
      .Case([&](est::EluOp) -> Value {
        Value positive =
            arith::CmpFOp::create(b, loc, CF::OGT, args[0], zero());
        Value em1 = math::ExpM1Op::create(b, loc, args[0]);
        return arith::SelectOp::create(b, loc, positive, args[0], em1);
      })
      .Case([&](est::SoftplusOp) -> Value {
        // max(x, 0) + log1p(exp(-|x|)); NaN propagates through maximumf.
        Value r = arith::MaximumFOp::create(b, loc, args[0], zero());
        Value a = math::AbsFOp::create(b, loc, args[0]);
        Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a));
        return arith::AddFOp::create(b, loc, r,
                                     math::Log1pOp::create(b, loc, e));
      })
      .Default([](Operation *) { return Value(); });
}

bool isElementwise(Operation *op) {
  return isa<est::AddOp, est::SubOp, est::MulOp, est::DivOp, est::PowOp,
             est::MaximumOp, est::MinimumOp, est::EqualOp, est::NotEqualOp,
             est::LessOp, est::LessEqualOp, est::GreaterOp, est::GreaterEqualOp,
             est::LogicalAndOp, est::LogicalOrOp, est::LogicalNotOp,
             est::SelectOp, est::CastOp, est::BroadcastToOp, est::NegOp,
             est::AbsOp, est::SquareOp, est::ExpOp, est::LogOp, est::SqrtOp,
             est::RsqrtOp, est::TanhOp, est::SinOp, est::CosOp, est::FloorOp,
             est::SigmoidOp, est::ReluOp, est::Relu6Op, est::EluOp,
             est::SoftplusOp>(op);
}

FailureOr<Value> Lowering::lowerElementwise() {
  Operation *estOp = op;
  return buildElementwise(b, loc, op->getOperands(), resultType(),
                          [&](OpBuilder &nb, Location nloc, ValueRange args) {
                            return elementwiseBody(estOp, nb, nloc, args);
                          });
}

//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

FailureOr<Value> Lowering::lowerReduction() {
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
  RankedTensorType outType = resultType();
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

FailureOr<Value> Lowering::lowerArgReduce(Value x, int64_t axis, bool isMax) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType xType = tensorTypeOf(x);
  int64_t rank = xType.getRank();
  if (axis < 0)
    axis += rank;
  RankedTensorType outType = resultType();
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
// Linear algebra, convolution, pooling.
//===----------------------------------------------------------------------===//

Value Lowering::transposeLastTwo(Value v) {
  RankedTensorType type = tensorTypeOf(v);
  int64_t rank = type.getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  SmallVector<int64_t> shape;
  SmallVector<Value> dims;
  for (int64_t p : perm) {
    shape.push_back(type.getDimSize(p));
    dims.push_back(dimValue(b, loc, v, p));
  }
  auto outType = RankedTensorType::get(shape, type.getElementType());
  Value init = emptyTensor(b, loc, outType, dims);
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

FailureOr<Value> Lowering::lowerMatmul(est::MatmulOp matmul) {
  Value lhs = matmul.getA(), rhs = matmul.getB();
  if (matmul.getTransposeA())
    lhs = transposeLastTwo(lhs);
  if (matmul.getTransposeB())
    rhs = transposeLastTwo(rhs);
  RankedTensorType outType = resultType();
  Type elt = outType.getElementType();
  Value zero = scalarConst(b, loc, elt, 0);
  int64_t ra = tensorTypeOf(lhs).getRank(), rb = tensorTypeOf(rhs).getRank();
  int64_t ro = outType.getRank();

  if (ra == 2 && rb == 2) {
    Value init = filledTensor(
        b, loc, outType, {dimValue(b, loc, lhs, 0), dimValue(b, loc, rhs, 1)},
        zero);
    return linalg::MatmulOp::create(b, loc, TypeRange{outType},
                                    ValueRange{lhs, rhs}, ValueRange{init})
        .getResult(0);
  }

  if (rb == 2) {
    // [..., M, K] x [K, N]: collapse the leading dims of a into the rows.
    ReassociationIndices rows;
    for (int64_t i = 0; i < ra - 1; ++i)
      rows.push_back(i);
    SmallVector<ReassociationIndices> reassoc = {rows, {ra - 1}};
    Value flat = tensor::CollapseShapeOp::create(b, loc, lhs, reassoc);
    RankedTensorType flatType = tensorTypeOf(flat);
    int64_t n = tensorTypeOf(rhs).getDimSize(1);
    auto mmType = RankedTensorType::get({flatType.getDimSize(0), n}, elt);
    Value init = filledTensor(
        b, loc, mmType, {dimValue(b, loc, flat, 0), dimValue(b, loc, rhs, 1)},
        zero);
    Value mm = linalg::MatmulOp::create(b, loc, TypeRange{mmType},
                                        ValueRange{flat, rhs}, ValueRange{init})
                   .getResult(0);
    SmallVector<OpFoldResult> outShape;
    for (int64_t i = 0; i < ra - 1; ++i)
      outShape.push_back(dimFold(b, loc, lhs, i));
    outShape.push_back(dimFold(b, loc, rhs, 1));
    return tensor::ExpandShapeOp::create(b, loc, outType, mm, reassoc, outShape)
        .getResult();
  }

  // General: broadcast both to the full batch, collapse the batch dims into
  // one, linalg.batch_matmul, expand.
  int64_t batchRank = ro - 2;
  SmallVector<Value> batchDims;
  SmallVector<int64_t> batchShape;
  for (int64_t d = 0; d < batchRank; ++d) {
    batchShape.push_back(outType.getDimSize(d));
    if (!outType.isDynamicDim(d)) {
      batchDims.push_back(indexConst(b, loc, outType.getDimSize(d)));
      continue;
    }
    Value dim;
    for (Value operand : {lhs, rhs}) {
      RankedTensorType t = tensorTypeOf(operand);
      int64_t od = d - (batchRank - (t.getRank() - 2));
      if (od >= 0 && t.isDynamicDim(od)) {
        dim = tensor::DimOp::create(b, loc, operand, od);
        break;
      }
    }
    if (!dim)
      return fail("cannot determine a dynamic batch dimension");
    batchDims.push_back(dim);
  }
  auto broadcastOperand = [&](Value v) -> Value {
    RankedTensorType t = tensorTypeOf(v);
    SmallVector<int64_t> shape(batchShape);
    shape.push_back(t.getDimSize(t.getRank() - 2));
    shape.push_back(t.getDimSize(t.getRank() - 1));
    auto full = RankedTensorType::get(shape, elt);
    if (full == t)
      return v;
    // The elementwise helper derives dims from the operand; give it the
    // batch dims through a seed operand-free path: build directly.
    SmallVector<Value> dims(batchDims);
    dims.push_back(dimValue(b, loc, v, t.getRank() - 2));
    dims.push_back(dimValue(b, loc, v, t.getRank() - 1));
    Value init = emptyTensor(b, loc, full, dims);
    SmallVector<AffineMap> maps = {broadcastMap(b.getContext(), t, full),
                                   b.getMultiDimIdentityMap(full.getRank())};
    return linalg::GenericOp::create(
               b, loc, TypeRange{full}, ValueRange{v}, ValueRange{init}, maps,
               parallel(full.getRank()),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 linalg::YieldOp::create(nb, nloc, args[0]);
               })
        .getResult(0);
  };
  lhs = broadcastOperand(lhs);
  rhs = broadcastOperand(rhs);
  SmallVector<ReassociationIndices> reassoc;
  if (batchRank != 1) {
    ReassociationIndices batch;
    for (int64_t i = 0; i < batchRank; ++i)
      batch.push_back(i);
    reassoc = {batch, {batchRank}, {batchRank + 1}};
    lhs = tensor::CollapseShapeOp::create(b, loc, lhs, reassoc);
    rhs = tensor::CollapseShapeOp::create(b, loc, rhs, reassoc);
  }
  RankedTensorType lt = tensorTypeOf(lhs), rt = tensorTypeOf(rhs);
  auto bmmType = RankedTensorType::get(
      {lt.getDimSize(0), lt.getDimSize(1), rt.getDimSize(2)}, elt);
  Value init = filledTensor(b, loc, bmmType,
                            {dimValue(b, loc, lhs, 0), dimValue(b, loc, lhs, 1),
                             dimValue(b, loc, rhs, 2)},
                            zero);
  Value bmm =
      linalg::BatchMatmulOp::create(b, loc, TypeRange{bmmType},
                                    ValueRange{lhs, rhs}, ValueRange{init})
          .getResult(0);
  if (batchRank == 1)
    return castTo(b, loc, bmm, outType);
  SmallVector<OpFoldResult> outShape;
  for (Value d : batchDims)
    outShape.push_back(d);
  outShape.push_back(dimFold(b, loc, lhs, 1));
  outShape.push_back(dimFold(b, loc, rhs, 2));
  return tensor::ExpandShapeOp::create(b, loc, outType, bmm, reassoc, outShape)
      .getResult();
}

Value Lowering::padSpatial(Value input, ArrayRef<int64_t> padBefore,
                           ArrayRef<int64_t> padAfter, double value) {
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

FailureOr<Value> Lowering::lowerConv(est::Conv2DOp conv) {
  Value input = conv.getInput(), filter = conv.getFilter();
  RankedTensorType inType = tensorTypeOf(input);
  RankedTensorType fType = tensorTypeOf(filter);
  auto padding = estc::shape::parsePadding(conv.getPadding().str());
  if (!padding)
    return fail("unknown padding '" + conv.getPadding() + "'");
  if (inType.getRank() != 4 || fType.getRank() != 4 || inType.isDynamicDim(1) ||
      inType.isDynamicDim(2) || !fType.hasStaticShape())
    return fail("needs static spatial input dimensions and a static filter");
  ArrayRef<int64_t> strides = conv.getStrides();
  ArrayRef<int64_t> dilations = conv.getDilations();
  auto [top, bottom] = spatialPads(inType.getDimSize(1), fType.getDimSize(0),
                                   strides[0], dilations[0], *padding);
  auto [left, right] = spatialPads(inType.getDimSize(2), fType.getDimSize(1),
                                   strides[1], dilations[1], *padding);
  Value padded = padSpatial(input, {top, left}, {bottom, right}, 0.0);
  RankedTensorType outType = resultType();
  if (outType.isDynamicDim(1) || outType.isDynamicDim(2) ||
      outType.isDynamicDim(3))
    return fail("needs a static output shape but the batch");
  Value zero = scalarConst(b, loc, outType.getElementType(), 0);
  Value init = filledTensor(
      b, loc, outType, {dimValue(b, loc, input, 0), Value(), Value(), Value()},
      zero);
  return linalg::Conv2DNhwcHwcfOp::create(
             b, loc, TypeRange{outType}, ValueRange{padded, filter},
             ValueRange{init}, b.getI64TensorAttr(strides),
             b.getI64TensorAttr(dilations))
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Gradients of convolution and pooling.
//
// Each is one linalg.generic over the result's elements and the window
// offsets (or, for the filter gradient, over the filter's elements and the
// output pixels). The operand a window reads at a computed coordinate is
// read with tensor.extract: output pixel (oh, ow) and tap (kh, kw) read input
// pixel (oh*sh + kh*dh - pt, ow*sw + kw*dw - pl); seen from input pixel
// (ih, iw) that is output pixel ((ih + pt - kh*dh) / sh, ...) when the
// division is exact and in range. Coordinates are clamped into range and the
// contribution selected to 0 outside it, so the loops need no padding copy.
// f32 conv backprops become runtime kernel calls after bufferization
// (library_call + the "estc.conv" attribute [sh, sw, dh, dw, pt, pl]); these
// generics are their f64 (and reference) implementation.
//===----------------------------------------------------------------------===//

/// The geometry of a conv2d / pooling window over an input of spatial size
/// [h, w].
struct WindowGeometry {
  int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;

  static FailureOr<WindowGeometry> get(ArrayRef<int64_t> inputSize,
                                       ArrayRef<int64_t> window,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations,
                                       StringRef paddingName) {
    auto padding = estc::shape::parsePadding(paddingName.str());
    if (!padding || inputSize.size() != 2 || window.size() != 2 ||
        strides.size() != 2 || dilations.size() != 2 ||
        llvm::any_of(inputSize, ShapedType::isDynamic))
      return failure();
    WindowGeometry g;
    g.h = inputSize[0], g.w = inputSize[1];
    g.kh = window[0], g.kw = window[1];
    g.sh = strides[0], g.sw = strides[1];
    g.dh = dilations[0], g.dw = dilations[1];
    g.oh = estc::shape::convOutputSize(g.h, g.kh, g.sh, g.dh, *padding);
    g.ow = estc::shape::convOutputSize(g.w, g.kw, g.sw, g.dw, *padding);
    g.pt = estc::shape::convPadBefore(g.h, g.kh, g.sh, g.dh, *padding);
    g.pl = estc::shape::convPadBefore(g.w, g.kw, g.sw, g.dw, *padding);
    return g;
  }
  SmallVector<int64_t> kernelScalars() const {
    return {sh, sw, dh, dw, pt, pl};
  }
};

/// Index arithmetic inside a generic's body.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return indexConst(b, loc, v); }
  Value idx(int64_t dim) { return linalg::IndexOp::create(b, loc, dim); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t k) {
    return k == 1 ? x : arith::MulIOp::create(b, loc, x, c(k)).getResult();
  }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// Whether 0 <= v < limit.
  Value inRange(Value v, int64_t limit) {
    return both(cmp(arith::CmpIPredicate::sge, v, c(0)),
                cmp(arith::CmpIPredicate::slt, v, c(limit)));
  }
  /// The output coordinate whose window reads input coordinate `in` at tap
  /// `k` (t = in + pad - k * dilation, exact multiple of the stride, in
  /// range): (the coordinate clamped to 0 when invalid, validity).
  std::pair<Value, Value> outputOf(Value in, Value k, int64_t pad,
                                   int64_t dilation, int64_t stride,
                                   int64_t outSize) {
    Value t = sub(add(in, c(pad)), mul(k, dilation));
    Value valid = cmp(arith::CmpIPredicate::sge, t, c(0));
    Value o = t;
    if (stride != 1) {
      Value rem = arith::RemSIOp::create(b, loc, t, c(stride));
      valid = both(valid, cmp(arith::CmpIPredicate::eq, rem, c(0)));
      o = arith::DivSIOp::create(b, loc, t, c(stride));
    }
    valid = both(valid, cmp(arith::CmpIPredicate::slt, o, c(outSize)));
    return {select(valid, o, c(0)), valid};
  }
  /// The input coordinate output coordinate `out` reads at tap `k`:
  /// (clamped to 0 when outside the input, validity).
  std::pair<Value, Value> inputOf(Value out, Value k, int64_t pad,
                                  int64_t dilation, int64_t stride,
                                  int64_t inSize) {
    Value in = sub(add(mul(out, stride), mul(k, dilation)), c(pad));
    Value valid = inRange(in, inSize);
    return {select(valid, in, c(0)), valid};
  }
};

AffineMap dimsMap(MLIRContext *ctx, unsigned numDims,
                  ArrayRef<unsigned> results) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : results)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

SmallVector<utils::IteratorType> iterators(int64_t parallelLoops,
                                           int64_t reductionLoops) {
  SmallVector<utils::IteratorType> its = parallel(parallelLoops);
  its.append(reductionLoops, utils::IteratorType::reduction);
  return its;
}

/// The iterators of a window loop nest (n, y, x | kh, kw | c): the taps
/// outside the channels, so the innermost loop runs over the contiguous
/// channels of NHWC and vectorizes; each element still visits its taps in
/// row-major order.
SmallVector<utils::IteratorType> windowIterators() {
  using utils::IteratorType;
  return {IteratorType::parallel,  IteratorType::parallel,
          IteratorType::parallel,  IteratorType::reduction,
          IteratorType::reduction, IteratorType::parallel};
}

/// `acc + (valid ? v : 0)`.
Value accumulateIf(OpBuilder &b, Location loc, Value valid, Value v,
                   Value acc) {
  Value zero = scalarConst(b, loc, v.getType(), 0);
  return arith::AddFOp::create(b, loc, acc,
                               arith::SelectOp::create(b, loc, valid, v, zero));
}

/// Marks an f32 conv backprop generic for est-linalg-to-runtime-calls.
void markRuntimeKernel(OpBuilder &b, linalg::GenericOp generic,
                       StringRef kernel, const WindowGeometry &g) {
  if (!getElementTypeOrSelf(generic.getResultTypes().front()).isF32())
    return;
  generic.setLibraryCallAttr(b.getStringAttr(kernel));
  generic->setAttr("estc.conv", b.getDenseI64ArrayAttr(g.kernelScalars()));
}

/// Where a conv backprop's body reads its gathered operand: four indices
/// (coordinates clamped into range) and whether the H and W taps are valid.
struct BackpropTap {
  SmallVector<Value, 4> indices;
  Value validH, validW;
};

/// The loop nest of both conv backprops: loops (4 parallel over the result |
/// 3 reduction), `streamed` read through the map of `streamedDims`, the
/// other operand `gathered` read at `tapOf`'s tap; result += streamed *
/// gathered where both taps are valid. f32 is marked for `kernel`.
Value convBackpropLoops(OpBuilder &b, Location loc, RankedTensorType outType,
                        Value init, Value streamed,
                        ArrayRef<unsigned> streamedDims, Value gathered,
                        function_ref<BackpropTap(IndexMath &)> tapOf,
                        StringRef kernel, const WindowGeometry &g) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {dimsMap(ctx, 7, streamedDims),
                                 dimsMap(ctx, 7, {0, 1, 2, 3})};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{streamed}, ValueRange{init}, maps,
      iterators(4, 3), [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IndexMath m{nb, nloc};
        BackpropTap tap = tapOf(m);
        Value v = tensor::ExtractOp::create(nb, nloc, gathered, tap.indices);
        Value prod = arith::MulFOp::create(nb, nloc, v, args[0]);
        linalg::YieldOp::create(nb, nloc,
                                accumulateIf(nb, nloc,
                                             m.both(tap.validH, tap.validW),
                                             prod, args[1]));
      });
  markRuntimeKernel(b, generic, kernel, g);
  return generic.getResult(0);
}

FailureOr<Value>
Lowering::lowerConvBackpropInput(est::Conv2DBackpropInputOp op) {
  Value dy = op.getGradOutput(), filter = op.getFilter();
  RankedTensorType fType = tensorTypeOf(filter), outType = resultType();
  if (!fType.hasStaticShape() || outType.isDynamicDim(3))
    return fail("needs a static filter shape");
  FailureOr<WindowGeometry> g = WindowGeometry::get(
      op.getInputSize(), {fType.getDimSize(0), fType.getDimSize(1)},
      op.getStrides(), op.getDilations(), op.getPadding());
  if (failed(g))
    return fail("needs NHWC operands, 2 strides and dilations and a known "
                "padding");
  // Loops (n, ih, iw, c | kh, kw, o): the filter streamed, dy gathered.
  Type elt = outType.getElementType();
  Value init = filledTensor(
      b, loc, outType, {dimValue(b, loc, dy, 0), Value(), Value(), Value()},
      scalarConst(b, loc, elt, 0));
  return convBackpropLoops(
      b, loc, outType, init, filter, {4, 5, 3, 6}, dy,
      [&](IndexMath &m) {
        auto [oh, validH] =
            m.outputOf(m.idx(1), m.idx(4), g->pt, g->dh, g->sh, g->oh);
        auto [ow, validW] =
            m.outputOf(m.idx(2), m.idx(5), g->pl, g->dw, g->sw, g->ow);
        return BackpropTap{{m.idx(0), oh, ow, m.idx(6)}, validH, validW};
      },
      "estc_conv2d_backprop_input_f32", *g);
}

FailureOr<Value>
Lowering::lowerConvBackpropFilter(est::Conv2DBackpropFilterOp op) {
  Value x = op.getInput(), dy = op.getGradOutput();
  RankedTensorType xType = tensorTypeOf(x), outType = resultType();
  if (!outType.hasStaticShape())
    return fail("needs a static filter shape");
  FailureOr<WindowGeometry> g = WindowGeometry::get(
      {xType.getDimSize(1), xType.getDimSize(2)}, op.getFilterSize(),
      op.getStrides(), op.getDilations(), op.getPadding());
  if (failed(g))
    return fail("needs static spatial input dimensions");
  // Loops (kh, kw, c, o | n, oh, ow): dy streamed, x gathered.
  Type elt = outType.getElementType();
  Value init = filledTensor(b, loc, outType, {}, scalarConst(b, loc, elt, 0));
  return convBackpropLoops(
      b, loc, outType, init, dy, {4, 5, 6, 3}, x,
      [&](IndexMath &m) {
        auto [ih, validH] =
            m.inputOf(m.idx(5), m.idx(0), g->pt, g->dh, g->sh, g->h);
        auto [iw, validW] =
            m.inputOf(m.idx(6), m.idx(1), g->pl, g->dw, g->sw, g->w);
        return BackpropTap{{m.idx(4), ih, iw, m.idx(2)}, validH, validW};
      },
      "estc_conv2d_backprop_filter_f32", *g);
}

FailureOr<Value> Lowering::lowerMaxPoolGrad(est::MaxPoolGradOp op) {
  Value x = op.getInput(), dy = op.getGradOutput();
  RankedTensorType xType = tensorTypeOf(x), dyType = tensorTypeOf(dy);
  RankedTensorType outType = resultType();
  int64_t ones[] = {1, 1};
  FailureOr<WindowGeometry> g = WindowGeometry::get(
      {xType.getDimSize(1), xType.getDimSize(2)}, op.getKsize(),
      op.getStrides(), ones, op.getPadding());
  if (failed(g) || outType.isDynamicDim(3))
    return fail("needs static spatial and channel dimensions");
  MLIRContext *ctx = b.getContext();
  Type elt = outType.getElementType();
  Type i32 = b.getI32Type();
  Value window =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{g->kh, g->kw}, elt);
  // 1. The first maximum of each window: loops (n, oh, ow, kh, kw, c);
  // tap index kh * KW + kw, -1 while no valid element was seen.
  auto maxType = RankedTensorType::get(
      {dyType.getDimSize(0), g->oh, g->ow, outType.getDimSize(3)}, elt);
  auto argType = maxType.clone(i32);
  SmallVector<Value> dims = {dimValue(b, loc, dy, 0), Value(), Value(),
                             Value()};
  Value maxInit = filledTensor(
      b, loc, maxType, dims,
      scalarConst(b, loc, elt, -std::numeric_limits<double>::infinity()));
  Value argInit =
      filledTensor(b, loc, argType, dims, intConst(b, loc, i32, -1));
  SmallVector<AffineMap> argMaps = {dimsMap(ctx, 6, {3, 4}),
                                    dimsMap(ctx, 6, {0, 1, 2, 5}),
                                    dimsMap(ctx, 6, {0, 1, 2, 5})};
  auto argmax = linalg::GenericOp::create(
      b, loc, TypeRange{maxType, argType}, ValueRange{window},
      ValueRange{maxInit, argInit}, argMaps, windowIterators(),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IndexMath m{nb, nloc};
        Value kh = m.idx(3), kw = m.idx(4);
        auto [ih, validH] = m.inputOf(m.idx(1), kh, g->pt, 1, g->sh, g->h);
        auto [iw, validW] = m.inputOf(m.idx(2), kw, g->pl, 1, g->sw, g->w);
        Value v = tensor::ExtractOp::create(
            nb, nloc, x, ValueRange{m.idx(0), ih, iw, m.idx(5)});
        Value none =
            arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq, args[2],
                                  intConst(nb, nloc, i32, -1));
        Value greater = arith::CmpFOp::create(
            nb, nloc, arith::CmpFPredicate::OGT, v, args[1]);
        Value take = m.both(m.both(validH, validW),
                            arith::OrIOp::create(nb, nloc, none, greater));
        Value tap = arith::IndexCastOp::create(nb, nloc, i32,
                                               m.add(m.mul(kh, g->kw), kw));
        linalg::YieldOp::create(nb, nloc,
                                ValueRange{m.select(take, v, args[1]),
                                           m.select(take, tap, args[2])});
      });
  Value arg = argmax.getResult(1);
  Value zero = scalarConst(b, loc, elt, 0);
  // `acc` plus the gradient of output window `coords` when the input element
  // at its tap (tapH, tapW) is the window's first maximum.
  auto addIfFirstMax = [&](OpBuilder &nb, Location nloc, IndexMath &m,
                           ArrayRef<Value> coords, Value tapH, Value tapW,
                           Value validH, Value validW, Value acc) {
    Value winner = tensor::ExtractOp::create(nb, nloc, arg, coords);
    Value tap = arith::IndexCastOp::create(nb, nloc, i32,
                                           m.add(m.mul(tapH, g->kw), tapW));
    Value hit = m.both(
        m.both(validH, validW),
        arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq, winner, tap));
    Value v = tensor::ExtractOp::create(nb, nloc, dy, coords);
    return accumulateIf(nb, nloc, hit, v, acc);
  };
  if (g->sh >= g->kh && g->sw >= g->kw) {
    // 2'. Windows that do not overlap (TF's usual 2x2 / 2): each input
    // element is in at most one window, the one at (ih + pt) / sh, as its
    // tap (ih + pt) % sh. Loops (n, ih, iw, c), all parallel, no init. The
    // result is `0 + (hit ? g : 0)`, as the sum over taps below gives it
    // (-0 included).
    Value init = emptyTensor(
        b, loc, outType, {dimValue(b, loc, x, 0), Value(), Value(), Value()});
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{}, ValueRange{init},
               ArrayRef<AffineMap>{b.getMultiDimIdentityMap(4)}, parallel(4),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 IndexMath m{nb, nloc};
                 auto window = [&](Value in, int64_t pad, int64_t stride,
                                   int64_t k, int64_t outSize) {
                   Value t = m.add(in, m.c(pad));
                   Value o = arith::DivUIOp::create(nb, nloc, t, m.c(stride));
                   Value tap = arith::RemUIOp::create(nb, nloc, t, m.c(stride));
                   Value valid = m.both(
                       m.cmp(arith::CmpIPredicate::ult, tap, m.c(k)),
                       m.cmp(arith::CmpIPredicate::ult, o, m.c(outSize)));
                   return std::make_tuple(m.select(valid, o, m.c(0)), tap,
                                          valid);
                 };
                 auto [oh, tapH, validH] =
                     window(m.idx(1), g->pt, g->sh, g->kh, g->oh);
                 auto [ow, tapW, validW] =
                     window(m.idx(2), g->pl, g->sw, g->kw, g->ow);
                 SmallVector<Value> coords = {m.idx(0), oh, ow, m.idx(3)};
                 linalg::YieldOp::create(nb, nloc,
                                         addIfFirstMax(nb, nloc, m, coords,
                                                       tapH, tapW, validH,
                                                       validW, zero));
               })
        .getResult(0);
  }
  // 2. Each input element sums the gradients of the windows whose first
  // maximum it is: loops (n, ih, iw, kh, kw, c).
  Value init =
      filledTensor(b, loc, outType,
                   {dimValue(b, loc, x, 0), Value(), Value(), Value()}, zero);
  SmallVector<AffineMap> maps = {dimsMap(ctx, 6, {3, 4}),
                                 dimsMap(ctx, 6, {0, 1, 2, 5})};
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{window}, ValueRange{init},
             maps, windowIterators(),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               IndexMath m{nb, nloc};
               Value kh = m.idx(3), kw = m.idx(4);
               auto [oh, validH] =
                   m.outputOf(m.idx(1), kh, g->pt, 1, g->sh, g->oh);
               auto [ow, validW] =
                   m.outputOf(m.idx(2), kw, g->pl, 1, g->sw, g->ow);
               SmallVector<Value> coords = {m.idx(0), oh, ow, m.idx(5)};
               linalg::YieldOp::create(nb, nloc,
                                       addIfFirstMax(nb, nloc, m, coords, kh,
                                                     kw, validH, validW,
                                                     args[1]));
             })
      .getResult(0);
}

FailureOr<Value> Lowering::lowerAvgPoolGrad(est::AvgPoolGradOp op) {
  Value dy = op.getGradOutput();
  RankedTensorType outType = resultType();
  int64_t ones[] = {1, 1};
  FailureOr<WindowGeometry> g = WindowGeometry::get(
      op.getInputSize(), op.getKsize(), op.getStrides(), ones, op.getPadding());
  if (failed(g) || outType.isDynamicDim(3))
    return fail("needs static spatial and channel dimensions");
  MLIRContext *ctx = b.getContext();
  Type elt = outType.getElementType();
  Value window =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{g->kh, g->kw}, elt);
  Value init = filledTensor(
      b, loc, outType, {dimValue(b, loc, dy, 0), Value(), Value(), Value()},
      scalarConst(b, loc, elt, 0));
  SmallVector<AffineMap> maps = {dimsMap(ctx, 6, {3, 4}),
                                 dimsMap(ctx, 6, {0, 1, 2, 5})};
  // Loops (n, ih, iw, kh, kw, c); each window's gradient is divided by the
  // count of its valid (unpadded) elements.
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{window}, ValueRange{init},
             maps, windowIterators(),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               IndexMath m{nb, nloc};
               auto [oh, validH] =
                   m.outputOf(m.idx(1), m.idx(3), g->pt, 1, g->sh, g->oh);
               auto [ow, validW] =
                   m.outputOf(m.idx(2), m.idx(4), g->pl, 1, g->sw, g->ow);
               auto extent = [&](Value o, int64_t stride, int64_t pad,
                                 int64_t k, int64_t size) {
                 Value start = m.sub(m.mul(o, stride), m.c(pad));
                 Value end = arith::MinSIOp::create(
                     nb, nloc, m.add(start, m.c(k)), m.c(size));
                 return m.sub(end,
                              arith::MaxSIOp::create(nb, nloc, start, m.c(0)));
               };
               Value count = arith::MulIOp::create(
                   nb, nloc, extent(oh, g->sh, g->pt, g->kh, g->h),
                   extent(ow, g->sw, g->pl, g->kw, g->w));
               Value countF = arith::SIToFPOp::create(
                   nb, nloc, elt,
                   arith::IndexCastOp::create(nb, nloc, nb.getI64Type(),
                                              count));
               Value v = tensor::ExtractOp::create(
                   nb, nloc, dy, ValueRange{m.idx(0), oh, ow, m.idx(5)});
               Value share = arith::DivFOp::create(nb, nloc, v, countF);
               linalg::YieldOp::create(nb, nloc,
                                       accumulateIf(nb, nloc,
                                                    m.both(validH, validW),
                                                    share, args[1]));
             })
      .getResult(0);
}

FailureOr<Value> Lowering::lowerPool(Value input, ArrayRef<int64_t> ksize,
                                     ArrayRef<int64_t> strides,
                                     StringRef paddingName, bool isMax) {
  RankedTensorType inType = tensorTypeOf(input);
  auto padding = estc::shape::parsePadding(paddingName.str());
  if (!padding)
    return fail("unknown padding '" + paddingName + "'");
  if (inType.getRank() != 4 || inType.isDynamicDim(1) || inType.isDynamicDim(2))
    return fail("needs static spatial input dimensions");
  int64_t height = inType.getDimSize(1), width = inType.getDimSize(2);
  auto [top, bottom] = spatialPads(height, ksize[0], strides[0], 1, *padding);
  auto [left, right] = spatialPads(width, ksize[1], strides[1], 1, *padding);
  Type elt = inType.getElementType();
  double inf = std::numeric_limits<double>::infinity();
  Value padded =
      padSpatial(input, {top, left}, {bottom, right}, isMax ? -inf : 0.0);
  RankedTensorType outType = resultType();
  if (outType.isDynamicDim(1) || outType.isDynamicDim(2) ||
      outType.isDynamicDim(3))
    return fail("needs a static output shape but the batch");
  Value init = filledTensor(
      b, loc, outType, {dimValue(b, loc, input, 0), Value(), Value(), Value()},
      scalarConst(b, loc, elt, isMax ? -inf : 0.0));
  // linalg.pooling_nhwc_max / _sum as a generic with loops (n, oh, ow, kh,
  // kw, c): the channels innermost, contiguous in NHWC (the named ops put
  // the 2x2 window innermost, which LLVM unrolls and then vectorizes across
  // output pixels with gathers). Each output visits its taps in the same
  // row-major order.
  MLIRContext *ctx = b.getContext();
  Value window = tensor::EmptyOp::create(b, loc, ksize, elt);
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> poolMaps = {
      AffineMap::get(
          6, 0,
          {d(0), d(1) * strides[0] + d(3), d(2) * strides[1] + d(4), d(5)},
          ctx),
      dimsMap(ctx, 6, {3, 4}), dimsMap(ctx, 6, {0, 1, 2, 5})};
  Value pooled =
      linalg::GenericOp::create(
          b, loc, TypeRange{outType}, ValueRange{padded, window},
          ValueRange{init}, poolMaps, windowIterators(),
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value r = isMax ? (Value)arith::MaximumFOp::create(nb, nloc,
                                                               args[2], args[0])
                            : arith::AddFOp::create(nb, nloc, args[2], args[0]);
            linalg::YieldOp::create(nb, nloc, r);
          })
          .getResult(0);
  if (isMax)
    return pooled;
  Value sum = pooled;
  // Divide by the number of valid (not padded) elements of each window, a
  // function of the output row and column only.
  int64_t outH = outType.getDimSize(1), outW = outType.getDimSize(2);
  SmallVector<double> counts;
  bool uniform = true;
  for (int64_t oy = 0; oy < outH; ++oy)
    for (int64_t ox = 0; ox < outW; ++ox) {
      int64_t y0 = oy * strides[0] - top, x0 = ox * strides[1] - left;
      int64_t rows = std::min(y0 + ksize[0], height) - std::max<int64_t>(y0, 0);
      int64_t cols = std::min(x0 + ksize[1], width) - std::max<int64_t>(x0, 0);
      counts.push_back(static_cast<double>(rows * cols));
      uniform = uniform && counts.back() == counts.front();
    }
  Value divisor;
  if (uniform || counts.empty()) {
    Attribute only = b.getFloatAttr(elt, counts.empty() ? 1.0 : counts.front());
    divisor = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, elt),
                               ArrayRef<Attribute>{only}));
  } else {
    SmallVector<Attribute> values;
    for (double c : counts)
      values.push_back(b.getFloatAttr(elt, c));
    divisor = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({outH, outW}, elt),
                               values));
  }
  // Broadcast [OH, OW] against [N, OH, OW, C]: a map (n, h, w, c) -> (h, w).
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4)};
  if (uniform || counts.empty())
    maps.push_back(AffineMap::get(4, 0, {}, ctx));
  else
    maps.push_back(AffineMap::get(
        4, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx));
  maps.push_back(b.getMultiDimIdentityMap(4));
  Value out = emptyTensor(
      b, loc, outType, {dimValue(b, loc, input, 0), Value(), Value(), Value()});
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{sum, divisor},
             ValueRange{out}, maps, parallel(4),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value q = arith::DivFOp::create(nb, nloc, args[0], args[1]);
               linalg::YieldOp::create(nb, nloc, q);
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Shapes and indexing.
//===----------------------------------------------------------------------===//

FailureOr<Value> Lowering::lowerReshape(Value x) {
  RankedTensorType inType = tensorTypeOf(x);
  RankedTensorType outType = resultType();
  if (outType.getNumDynamicDims() > 1)
    return fail("reshape to more than one dynamic dimension is not supported");
  int64_t inRank = inType.getRank(), outRank = outType.getRank();
  if (inRank == 0 || outRank == 0) {
    // From / to a scalar: every other dim is 1.
    SmallVector<ReassociationIndices> none;
    if (inRank == 0)
      return tensor::ExpandShapeOp::create(b, loc, outType, x, none)
          .getResult();
    return castTo(b, loc,
                  tensor::CollapseShapeOp::create(b, loc, x, none).getResult(),
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
    outShape.push_back(
        arith::DivUIOp::create(b, loc, total, indexConst(b, loc, staticProduct))
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

FailureOr<Value> Lowering::lowerConcat(est::ConcatOp concat) {
  RankedTensorType outType = resultType();
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
    acc =
        tensor::InsertSliceOp::create(b, loc, x, acc, offsets, sizes, strides);
    int64_t size = tensorTypeOf(x).getDimSize(axis);
    if (!dynamicOffset && !ShapedType::isDynamic(size)) {
      staticOffset += size;
      offset = b.getIndexAttr(staticOffset);
      continue;
    }
    if (!dynamicOffset)
      dynamicOffset = indexConst(b, loc, staticOffset);
    dynamicOffset =
        arith::AddIOp::create(b, loc, dynamicOffset, dimValue(b, loc, x, axis));
    offset = dynamicOffset;
  }
  return acc;
}

FailureOr<Value> Lowering::lowerGather(est::GatherOp gather) {
  Value params = gather.getParams(), indices = gather.getIndices();
  RankedTensorType pType = tensorTypeOf(params);
  RankedTensorType iType = tensorTypeOf(indices);
  RankedTensorType outType = resultType();
  int64_t axis = gather.getAxisAttr().getInt();
  if (axis < 0)
    axis += pType.getRank();
  int64_t q = iType.getRank(), outRank = outType.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dims;
  for (int64_t d = 0; d < outRank; ++d) {
    if (d < axis)
      dims.push_back(dimValue(b, loc, params, d));
    else if (d < axis + q)
      dims.push_back(dimValue(b, loc, indices, d - axis));
    else
      dims.push_back(dimValue(b, loc, params, d - q + 1));
  }
  Value init = emptyTensor(b, loc, outType, dims);
  SmallVector<AffineExpr> indexExprs;
  for (int64_t i = 0; i < q; ++i)
    indexExprs.push_back(getAffineDimExpr(axis + i, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, indexExprs, ctx),
                                 b.getMultiDimIdentityMap(outRank)};
  Value limit = arith::SubIOp::create(b, loc, dimValue(b, loc, params, axis),
                                      indexConst(b, loc, 1));
  Value zero = indexConst(b, loc, 0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{indices}, ValueRange{init},
             maps, parallel(outRank),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               // Out-of-range indices are clamped into [0, dim - 1].
               Value i = arith::IndexCastOp::create(nb, nloc, nb.getIndexType(),
                                                    args[0]);
               i = arith::MaxSIOp::create(nb, nloc, i, zero);
               i = arith::MinSIOp::create(nb, nloc, i, limit);
               SmallVector<Value> coords;
               for (int64_t d = 0; d < pType.getRank(); ++d) {
                 if (d < axis)
                   coords.push_back(linalg::IndexOp::create(nb, nloc, d));
                 else if (d == axis)
                   coords.push_back(i);
                 else
                   coords.push_back(
                       linalg::IndexOp::create(nb, nloc, d + q - 1));
               }
               Value v = tensor::ExtractOp::create(nb, nloc, params, coords);
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

/// A loop nest over the updates (index dims, then the row dims) carrying the
/// result tensor, initialized with `ref`, through tensor.insert: one-shot
/// bufferization updates ref's buffer in place when ref is not used later
/// (a variable's value assigned back), so the work is O(updates).
FailureOr<Value> Lowering::lowerScatter(est::ScatterOp scatter) {
  Value ref = scatter.getRef(), indices = scatter.getIndices(),
        updates = scatter.getUpdates();
  RankedTensorType rType = tensorTypeOf(ref);
  int64_t q = tensorTypeOf(indices).getRank(), rank = rType.getRank();
  bool add = scatter.getMode() == "add";
  bool f = isFloat(rType.getElementType());
  Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
  Value limit = arith::SubIOp::create(b, loc, dimValue(b, loc, ref, 0), one);
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < q; ++d)
    ubs.push_back(dimValue(b, loc, indices, d));
  for (int64_t d = 1; d < rank; ++d)
    ubs.push_back(dimValue(b, loc, ref, d));
  lbs.assign(ubs.size(), zero);
  steps.assign(ubs.size(), one);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{ref},
      [&](OpBuilder &nb, Location nl, ValueRange ivs,
          ValueRange args) -> scf::ValueVector {
        Value raw =
            tensor::ExtractOp::create(nb, nl, indices, ivs.take_front(q));
        Value row = arith::IndexCastOp::create(nb, nl, nb.getIndexType(), raw);
        row = arith::MaxSIOp::create(nb, nl, row, zero);
        row = arith::MinSIOp::create(nb, nl, row, limit);
        SmallVector<Value> dst = {row};
        llvm::append_range(dst, ivs.drop_front(q));
        Value u = tensor::ExtractOp::create(nb, nl, updates, ivs);
        if (add) {
          Value old = tensor::ExtractOp::create(nb, nl, args[0], dst);
          u = f ? Value(arith::AddFOp::create(nb, nl, old, u))
                : Value(arith::AddIOp::create(nb, nl, old, u));
        }
        return {tensor::InsertOp::create(nb, nl, u, args[0], dst)};
      });
  if (nest.results.empty())
    return failure();
  return nest.results.front();
}

FailureOr<Value> Lowering::lowerOneHot(est::OneHotOp oneHot) {
  Value indices = oneHot.getIndices();
  RankedTensorType iType = tensorTypeOf(indices);
  RankedTensorType outType = resultType();
  int64_t outRank = outType.getRank();
  int64_t axis = oneHot.getAxisAttr().getInt();
  if (axis < 0)
    axis += outRank;
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dims;
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < outRank; ++d) {
    if (d == axis) {
      dims.push_back(indexConst(b, loc, oneHot.getDepthAttr().getInt()));
      continue;
    }
    int64_t id = d < axis ? d : d - 1;
    dims.push_back(dimValue(b, loc, indices, id));
    exprs.push_back(getAffineDimExpr(d, ctx));
  }
  Type elt = outType.getElementType();
  Value on = scalarConst(b, loc, elt, oneHot.getOnValue().convertToDouble());
  Value off = scalarConst(b, loc, elt, oneHot.getOffValue().convertToDouble());
  Value init = emptyTensor(b, loc, outType, dims);
  SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, exprs, ctx),
                                 b.getMultiDimIdentityMap(outRank)};
  Type indexElt = iType.getElementType();
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{indices}, ValueRange{init},
             maps, parallel(outRank),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value position = linalg::IndexOp::create(nb, nloc, axis);
               position =
                   arith::IndexCastOp::create(nb, nloc, indexElt, position);
               Value hot = arith::CmpIOp::create(
                   nb, nloc, arith::CmpIPredicate::eq, args[0], position);
               Value v = arith::SelectOp::create(nb, nloc, hot, on, off);
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Randomness: Philox4x32-10 inline (lib/Random/Philox.h).
//===----------------------------------------------------------------------===//

/// The four Philox words of (seed, counter, index); `index` and `counter`
/// are i64 values.
std::array<Value, 4> philox(OpBuilder &b, Location loc, int64_t seed,
                            Value counter, Value index) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value c32 = intConst(b, loc, i64, 32);
  auto lo = [&](Value v) -> Value {
    return arith::TruncIOp::create(b, loc, i32, v);
  };
  auto hi = [&](Value v) -> Value {
    return lo(arith::ShRUIOp::create(b, loc, v, c32));
  };
  std::array<Value, 4> c = {lo(index), hi(index), lo(counter), hi(counter)};
  estc::random::Key key = estc::random::makeKey(seed);
  Value m0 = intConst(b, loc, i32, estc::random::kPhiloxM0);
  Value m1 = intConst(b, loc, i32, estc::random::kPhiloxM1);
  for (int round = 0; round < estc::random::kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += estc::random::kPhiloxW0;
      key[1] += estc::random::kPhiloxW1;
    }
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c[2]);
    Value k0 = intConst(b, loc, i32, static_cast<int32_t>(key[0]));
    Value k1 = intConst(b, loc, i32, static_cast<int32_t>(key[1]));
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c[1]), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c[3]), k1);
    c = {n0, p1.getLow(), n2, p0.getLow()};
  }
  return c;
}

/// T(x >> 8) (+ 1 when `plusOne`) * 2^-24.
Value uniform01(OpBuilder &b, Location loc, Type t, Value word,
                bool plusOne = false) {
  Value shifted =
      arith::ShRUIOp::create(b, loc, word, intConst(b, loc, b.getI32Type(), 8));
  Value v = arith::UIToFPOp::create(b, loc, t, shifted);
  if (plusOne)
    v = arith::AddFOp::create(b, loc, v, scalarConst(b, loc, t, 1));
  return arith::MulFOp::create(
      b, loc, v, scalarConst(b, loc, t, estc::random::kTwoPowMinus24));
}

/// A constant of compute type `t` holding `v` rounded to `t` first.
Value computeConst(OpBuilder &b, Location loc, Type t, double v) {
  if (t.isF32())
    v = static_cast<float>(v);
  return scalarConst(b, loc, t, v);
}

FailureOr<Value> Lowering::lowerRandom(Value x, Value counterTensor,
                                       int64_t seed) {
  RankedTensorType outType = resultType();
  int64_t rank = outType.getRank();
  Type elt = outType.getElementType();
  Type t = elt.isF64() ? (Type)b.getF64Type() : (Type)b.getF32Type();
  Value counter =
      tensor::ExtractOp::create(b, loc, counterTensor, ValueRange{});
  if (!x && !outType.hasStaticShape())
    return fail("needs a static result shape");
  // Row-major strides of the result, for the linear element index.
  SmallVector<Value> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(x ? dimValue(b, loc, x, d)
                     : indexConst(b, loc, outType.getDimSize(d)));
  SmallVector<Value> strides(rank);
  Value stride = indexConst(b, loc, 1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(b, loc, stride, dims[d]);
  }
  Value init = emptyTensor(b, loc, outType, dims);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (x) {
    inputs.push_back(x);
    maps.push_back(b.getMultiDimIdentityMap(rank));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Operation *estOp = op;
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
             parallel(rank),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value linear = indexConst(nb, nloc, 0);
               for (int64_t d = 0; d < rank; ++d) {
                 Value i = linalg::IndexOp::create(nb, nloc, d);
                 linear = arith::AddIOp::create(
                     nb, nloc, linear,
                     arith::MulIOp::create(nb, nloc, i, strides[d]));
               }
               Value index64 = arith::IndexCastUIOp::create(
                   nb, nloc, nb.getI64Type(), linear);
               std::array<Value, 4> r =
                   philox(nb, nloc, seed, counter, index64);
               Value v =
                   llvm::TypeSwitch<Operation *, Value>(estOp)
                       .Case([&](est::DropoutOp dropout) -> Value {
                         double rate = dropout.getRate().convertToDouble();
                         Value xs = convertScalar(nb, nloc, args[0], t);
                         Value u = uniform01(nb, nloc, t, r[0]);
                         Value keep = arith::CmpFOp::create(
                             nb, nloc, arith::CmpFPredicate::OGE, u,
                             computeConst(nb, nloc, t, rate));
                         double scale =
                             t.isF32() ? static_cast<double>(
                                             1.0f - static_cast<float>(rate))
                                       : 1.0 - rate;
                         Value scaled = arith::DivFOp::create(
                             nb, nloc, xs, computeConst(nb, nloc, t, scale));
                         return arith::SelectOp::create(
                             nb, nloc, keep, scaled,
                             scalarConst(nb, nloc, t, 0));
                       })
                       .Case([&](est::RandomUniformOp uniform) -> Value {
                         double lo = uniform.getMinval().convertToDouble();
                         double hi = uniform.getMaxval().convertToDouble();
                         double range =
                             t.isF32()
                                 ? static_cast<double>(static_cast<float>(hi) -
                                                       static_cast<float>(lo))
                                 : hi - lo;
                         Value u = uniform01(nb, nloc, t, r[0]);
                         Value s = arith::MulFOp::create(
                             nb, nloc, u, computeConst(nb, nloc, t, range));
                         return arith::AddFOp::create(
                             nb, nloc, computeConst(nb, nloc, t, lo), s);
                       })
                       .Case([&](est::RandomNormalOp normal) -> Value {
                         Value u1 = uniform01(nb, nloc, t, r[0], true);
                         Value u2 = uniform01(nb, nloc, t, r[1]);
                         Value lg = math::LogOp::create(nb, nloc, u1);
                         Value radius = math::SqrtOp::create(
                             nb, nloc,
                             arith::MulFOp::create(
                                 nb, nloc, computeConst(nb, nloc, t, -2), lg));
                         Value angle = arith::MulFOp::create(
                             nb, nloc,
                             computeConst(nb, nloc, t,
                                          6.283185307179586476925286766559),
                             u2);
                         Value z = arith::MulFOp::create(
                             nb, nloc, radius,
                             math::CosOp::create(nb, nloc, angle));
                         Value sz = arith::MulFOp::create(
                             nb, nloc,
                             computeConst(nb, nloc, t,
                                          normal.getStddev().convertToDouble()),
                             z);
                         return arith::AddFOp::create(
                             nb, nloc,
                             computeConst(nb, nloc, t,
                                          normal.getMean().convertToDouble()),
                             sz);
                       })
                       .Case([&](est::TruncatedNormalOp normal) -> Value {
                         auto c = [&](double v) {
                           return computeConst(nb, nloc, t, v);
                         };
                         // Float-literal coefficients, as in Philox.h.
                         auto cf = [&](float v) {
                           return scalarConst(nb, nloc, t,
                                              static_cast<double>(v));
                         };
                         double erfSqrt2 = 0.95449973610364158560;
                         double twoErf =
                             t.isF32()
                                 ? static_cast<double>(
                                       2.0f * static_cast<float>(erfSqrt2))
                                 : 2.0 * erfSqrt2;
                         Value u = uniform01(nb, nloc, t, r[0]);
                         Value xv = arith::SubFOp::create(
                             nb, nloc,
                             arith::MulFOp::create(nb, nloc, u, c(twoErf)),
                             c(erfSqrt2));
                         Value oneMinus =
                             arith::SubFOp::create(nb, nloc, c(1), xv);
                         Value onePlus =
                             arith::AddFOp::create(nb, nloc, c(1), xv);
                         Value lg = math::LogOp::create(
                             nb, nloc,
                             arith::MulFOp::create(nb, nloc, oneMinus,
                                                   onePlus));
                         Value w = arith::SubFOp::create(
                             nb, nloc, arith::NegFOp::create(nb, nloc, lg),
                             cf(2.5f));
                         const float coeffs[] = {
                             3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f,
                             0.00021858087f,  -0.00125372503f, -0.00417768164f,
                             0.246640727f,    1.50140941f};
                         Value p = cf(2.81022636e-08f);
                         for (float k : coeffs)
                           p = arith::AddFOp::create(
                               nb, nloc, cf(k),
                               arith::MulFOp::create(nb, nloc, p, w));
                         Value erfinv = arith::MulFOp::create(nb, nloc, p, xv);
                         Value z = arith::MulFOp::create(
                             nb, nloc, c(1.41421356237309504880), erfinv);
                         using CF = arith::CmpFPredicate;
                         Value below =
                             arith::CmpFOp::create(nb, nloc, CF::OLT, z, c(-2));
                         z = arith::SelectOp::create(nb, nloc, below, c(-2), z);
                         Value above =
                             arith::CmpFOp::create(nb, nloc, CF::OGT, z, c(2));
                         z = arith::SelectOp::create(nb, nloc, above, c(2), z);
                         Value sz = arith::MulFOp::create(
                             nb, nloc, c(normal.getStddev().convertToDouble()),
                             z);
                         return arith::AddFOp::create(
                             nb, nloc, c(normal.getMean().convertToDouble()),
                             sz);
                       })
                       .Default([](Operation *) { return Value(); });
               linalg::YieldOp::create(nb, nloc,
                                       convertScalar(nb, nloc, v, elt));
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Dispatch.
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> Lowering::run() {
  FailureOr<Value> result = failure();
  if (isElementwise(op)) {
    result = lowerElementwise();
  } else if (auto constant = dyn_cast<est::ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (splat && splat.getNumElements() > 1 &&
        splat.getType() == resultType() && !op->use_empty() &&
        llvm::all_of(op->getUsers(), llvm::IsaPred<est::AssignVariableOp>)) {
      // A splat only assigned to variables (an initializer): a fill, which
      // est-function-abi places in the variable's buffer, rather than a
      // constant the size of the variable in the object file, copied in.
      Value value =
          arith::ConstantOp::create(b, loc, splat.getSplatValue<TypedAttr>());
      result = filledTensor(b, loc, resultType(), {}, value);
    } else {
      Value c = arith::ConstantOp::create(b, loc,
                                          cast<TypedAttr>(constant.getValue()));
      result = castTo(b, loc, c, resultType());
    }
  } else if (isa<est::ZerosLikeOp, est::OnesLikeOp>(op)) {
    Value x = op->getOperand(0);
    RankedTensorType type = resultType();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(dimValue(b, loc, x, d));
    result = filledTensor(b, loc, type, dims,
                          scalarConst(b, loc, type.getElementType(),
                                      isa<est::OnesLikeOp>(op) ? 1.0 : 0.0));
  } else if (isa<est::ReduceSumOp, est::ReduceMeanOp, est::ReduceMaxOp,
                 est::ReduceMinOp, est::ReduceProdOp>(op)) {
    result = lowerReduction();
  } else if (auto arg = dyn_cast<est::ArgmaxOp>(op)) {
    result = lowerArgReduce(arg.getX(), arg.getAxisAttr().getInt(), true);
  } else if (auto arg = dyn_cast<est::ArgminOp>(op)) {
    result = lowerArgReduce(arg.getX(), arg.getAxisAttr().getInt(), false);
  } else if (auto matmul = dyn_cast<est::MatmulOp>(op)) {
    result = lowerMatmul(matmul);
  } else if (auto conv = dyn_cast<est::Conv2DOp>(op)) {
    result = lowerConv(conv);
  } else if (auto pool = dyn_cast<est::MaxPoolOp>(op)) {
    result = lowerPool(pool.getInput(), pool.getKsize(), pool.getStrides(),
                       pool.getPadding(), true);
  } else if (auto pool = dyn_cast<est::AvgPoolOp>(op)) {
    result = lowerPool(pool.getInput(), pool.getKsize(), pool.getStrides(),
                       pool.getPadding(), false);
  } else if (auto grad = dyn_cast<est::Conv2DBackpropInputOp>(op)) {
    result = lowerConvBackpropInput(grad);
  } else if (auto grad = dyn_cast<est::Conv2DBackpropFilterOp>(op)) {
    result = lowerConvBackpropFilter(grad);
  } else if (auto grad = dyn_cast<est::MaxPoolGradOp>(op)) {
    result = lowerMaxPoolGrad(grad);
  } else if (auto grad = dyn_cast<est::AvgPoolGradOp>(op)) {
    result = lowerAvgPoolGrad(grad);
  } else if (auto reshape = dyn_cast<est::ReshapeOp>(op)) {
    result = lowerReshape(reshape.getX());
  } else if (auto transpose = dyn_cast<est::TransposeOp>(op)) {
    Value x = transpose.getX();
    SmallVector<Value> dims;
    for (int64_t p : transpose.getPerm())
      dims.push_back(dimValue(b, loc, x, p));
    Value init = emptyTensor(b, loc, resultType(), dims);
    result = linalg::TransposeOp::create(b, loc, x, init, transpose.getPerm())
                 .getResult()[0];
  } else if (auto concat = dyn_cast<est::ConcatOp>(op)) {
    result = lowerConcat(concat);
  } else if (auto slice = dyn_cast<est::SliceOp>(op)) {
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
    result = castTo(b, loc, s, resultType());
  } else if (auto pad = dyn_cast<est::PadOp>(op)) {
    ArrayRef<int64_t> paddings = pad.getPaddings();
    SmallVector<OpFoldResult> low, high;
    for (size_t i = 0; i + 1 < paddings.size(); i += 2) {
      low.push_back(b.getIndexAttr(paddings[i]));
      high.push_back(b.getIndexAttr(paddings[i + 1]));
    }
    Value value = scalarConst(b, loc, resultType().getElementType(),
                              pad.getConstantValue().convertToDouble());
    Value p =
        tensor::PadOp::create(b, loc, Type(), pad.getX(), low, high, value);
    result = castTo(b, loc, p, resultType());
  } else if (auto squeeze = dyn_cast<est::SqueezeOp>(op)) {
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
    result = castTo(b, loc, c, resultType());
  } else if (auto expand = dyn_cast<est::ExpandDimsOp>(op)) {
    Value x = expand.getX();
    RankedTensorType outType = resultType();
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
    result = tensor::ExpandShapeOp::create(
                 b, loc, outType, x,
                 unitDimReassociation(outType.getRank(), {axis}), outShape)
                 .getResult();
  } else if (auto gather = dyn_cast<est::GatherOp>(op)) {
    result = lowerGather(gather);
  } else if (auto scatter = dyn_cast<est::ScatterOp>(op)) {
    result = lowerScatter(scatter);
  } else if (auto oneHot = dyn_cast<est::OneHotOp>(op)) {
    result = lowerOneHot(oneHot);
  } else if (auto dropout = dyn_cast<est::DropoutOp>(op)) {
    result = lowerRandom(dropout.getX(), dropout.getCounter(),
                         dropout.getSeedAttr().getInt());
  } else if (auto random = dyn_cast<est::RandomUniformOp>(op)) {
    result = lowerRandom(Value(), random.getCounter(),
                         random.getSeedAttr().getInt());
  } else if (auto random = dyn_cast<est::RandomNormalOp>(op)) {
    result = lowerRandom(Value(), random.getCounter(),
                         random.getSeedAttr().getInt());
  } else if (auto random = dyn_cast<est::TruncatedNormalOp>(op)) {
    result = lowerRandom(Value(), random.getCounter(),
                         random.getSeedAttr().getInt());
  } else if (auto stop = dyn_cast<est::StopGradientOp>(op)) {
    result = stop.getX();
  } else if (isa<est::MinimizeOp>(op)) {
    result = fail("est.minimize must be expanded by the training pass first");
  } else if (isa<est::SoftmaxOp, est::LogSoftmaxOp, est::SoftmaxCrossEntropyOp,
                 est::SparseSoftmaxCrossEntropyOp, est::SigmoidCrossEntropyOp>(
                 op)) {
    result = fail("is a composite op: run est-decompose before "
                  "convert-est-to-linalg");
  } else {
    result = fail("cannot be lowered to linalg");
  }
  if (failed(result))
    return failure();
  return SmallVector<Value>{*result};
}

struct ConvertEstToLinalgPass
    : public est::impl::ConvertEstToLinalgBase<ConvertEstToLinalgPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<est::EstDialect>(op->getDialect()) &&
          !isa<est::ReadVariableOp, est::AssignVariableOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values = Lowering(rewriter, op).run();
      if (failed(values))
        return signalPassFailure();
      rewriter.replaceOp(op, *values);
    }
  }
};

} // namespace
