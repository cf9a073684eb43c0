//===- EstBuilder.h - Short builders of est ops -----------------*- C++ -*-===//
//
// The est ops that compiler code writes math in (the gradient rules of
// EstGradients.cpp, the optimizer update rules of est-expand-optimizers), as
// one-line calls at a fixed builder and location:
//
//   EstBuilder e(builder, loc);
//   Value y = e.add(e.mul(x, e.scalar(x, 2.0)), b);
//
// Every call creates exactly the op it is named after (no folding), at the
// builder's insertion point.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_DIALECTS_EST_IR_ESTBUILDER_H
#define ESTC_DIALECTS_EST_IR_ESTBUILDER_H

#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace est {

struct EstBuilder {
  EstBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &b;
  Location loc;

  /// A constant of `type` with every element `v` (an integer element type
  /// gets `v` truncated).
  Value splat(RankedTensorType type, double v) {
    Type elt = type.getElementType();
    Attribute value = isa<FloatType>(elt)
                          ? Attribute(b.getFloatAttr(elt, v))
                          : Attribute(b.getIntegerAttr(elt, int64_t(v)));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, value));
  }
  /// A rank-0 constant `v` of `like`'s element type.
  Value scalar(Value like, double v) {
    Type elt = cast<RankedTensorType>(like.getType()).getElementType();
    return splat(RankedTensorType::get({}, elt), v);
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value abs(Value x) { return AbsOp::create(b, loc, x); }
  Value sqrt(Value x) { return SqrtOp::create(b, loc, x); }
  Value square(Value x) { return SquareOp::create(b, loc, x); }
  Value zerosLike(Value x) { return ZerosLikeOp::create(b, loc, x); }
  Value onesLike(Value x) { return OnesLikeOp::create(b, loc, x); }

  Value greater(Value x, Value y) { return GreaterOp::create(b, loc, x, y); }
  Value less(Value x, Value y) { return LessOp::create(b, loc, x, y); }
  Value equal(Value x, Value y) { return EqualOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return SelectOp::create(b, loc, c, x, y);
  }

  /// est.cast (named so that llvm::cast stays visible in derived classes).
  Value castTo(Value x, Type elt) {
    return CastOp::create(b, loc, x, TypeAttr::get(elt));
  }
  /// `shape` may hold one -1 (est.reshape's inferred dim).
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, loc, x, b.getDenseI64ArrayAttr(shape));
  }
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepDims) {
    return ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr(axes),
                               keepDims);
  }
  Value gather(Value x, Value indices, int64_t axis = 0) {
    return GatherOp::create(b, loc, x, indices, axis);
  }
};

} // namespace est
} // namespace mlir

#endif // ESTC_DIALECTS_EST_IR_ESTBUILDER_H
