//===- Elementwise.cpp - est elementwise ops to linalg
//---------------------===//
//
//   elementwise, compare, logical, select, cast, broadcast_to
//       one linalg.generic; NumPy broadcasting through the indexing maps (a
//       static size-1 operand dim reads index 0; a dynamic dim is assumed not
//       to broadcast); the body is the op's scalar computation (scalarOf)
//   constant                   arith.constant (a splat only assigned to
//                              variables: a linalg.fill)
//   zeros_like ones_like       linalg.fill
//   stop_gradient              its operand
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

//===----------------------------------------------------------------------===//
// The scalar computation of each elementwise op.
//===----------------------------------------------------------------------===//

/// The elements of one iteration (`args`, one per operand) and the builder
/// of the body computing the result element from them.
struct Scalars {
  OpBuilder &b;
  Location loc;
  ValueRange args;

  Type elt() const { return args[0].getType(); }
  bool isFloat() const { return est::lowering::isFloat(elt()); }
  Value zero() { return scalarConst(b, loc, elt(), 0); }
  Value one() { return scalarConst(b, loc, elt(), 1); }
  /// `FloatOp` of the operands on floats, `IntOp` on integers.
  template <typename FloatOp, typename IntOp> Value binary() {
    return isFloat() ? (Value)FloatOp::create(b, loc, args[0], args[1])
                     : IntOp::create(b, loc, args[0], args[1]);
  }
  Value compare(arith::CmpFPredicate fp, arith::CmpIPredicate ip) {
    return compare(fp, ip, args[0], args[1]);
  }
  Value compare(arith::CmpFPredicate fp, arith::CmpIPredicate ip, Value x,
                Value y) {
    if (isFloat())
      return arith::CmpFOp::create(b, loc, fp, x, y);
    return arith::CmpIOp::create(b, loc, ip, x, y);
  }
};

using CF = arith::CmpFPredicate;
using CI = arith::CmpIPredicate;

Value scalarOf(est::AddOp, Scalars &s) {
  return s.binary<arith::AddFOp, arith::AddIOp>();
}
Value scalarOf(est::SubOp, Scalars &s) {
  return s.binary<arith::SubFOp, arith::SubIOp>();
}
Value scalarOf(est::MulOp, Scalars &s) {
  return s.binary<arith::MulFOp, arith::MulIOp>();
}
Value scalarOf(est::DivOp, Scalars &s) {
  return s.binary<arith::DivFOp, arith::DivSIOp>();
}
Value scalarOf(est::PowOp, Scalars &s) {
  return s.binary<math::PowFOp, math::IPowIOp>();
}
Value scalarOf(est::MaximumOp, Scalars &s) {
  return s.binary<arith::MaximumFOp, arith::MaxSIOp>();
}
Value scalarOf(est::MinimumOp, Scalars &s) {
  return s.binary<arith::MinimumFOp, arith::MinSIOp>();
}
Value scalarOf(est::EqualOp, Scalars &s) { return s.compare(CF::OEQ, CI::eq); }
Value scalarOf(est::NotEqualOp, Scalars &s) {
  return s.compare(CF::UNE, CI::ne);
}
Value scalarOf(est::LessOp, Scalars &s) { return s.compare(CF::OLT, CI::slt); }
Value scalarOf(est::LessEqualOp, Scalars &s) {
  return s.compare(CF::OLE, CI::sle);
}
Value scalarOf(est::GreaterOp, Scalars &s) {
  return s.compare(CF::OGT, CI::sgt);
}
Value scalarOf(est::GreaterEqualOp, Scalars &s) {
  return s.compare(CF::OGE, CI::sge);
}
Value scalarOf(est::LogicalAndOp, Scalars &s) {
  return arith::AndIOp::create(s.b, s.loc, s.args[0], s.args[1]);
}
Value scalarOf(est::LogicalOrOp, Scalars &s) {
  return arith::OrIOp::create(s.b, s.loc, s.args[0], s.args[1]);
}
Value scalarOf(est::LogicalNotOp, Scalars &s) {
  return arith::XOrIOp::create(s.b, s.loc, s.args[0], s.one());
}
Value scalarOf(est::SelectOp, Scalars &s) {
  return arith::SelectOp::create(s.b, s.loc, s.args[0], s.args[1], s.args[2]);
}
Value scalarOf(est::CastOp cast, Scalars &s) {
  return convertScalar(s.b, s.loc, s.args[0], cast.getDtype());
}
Value scalarOf(est::BroadcastToOp, Scalars &s) { return s.args[0]; }
Value scalarOf(est::NegOp, Scalars &s) {
  return s.isFloat() ? (Value)arith::NegFOp::create(s.b, s.loc, s.args[0])
                     : arith::SubIOp::create(s.b, s.loc, s.zero(), s.args[0]);
}
Value scalarOf(est::AbsOp, Scalars &s) {
  return s.isFloat() ? (Value)math::AbsFOp::create(s.b, s.loc, s.args[0])
                     : math::AbsIOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::SquareOp, Scalars &s) {
  return s.isFloat()
             ? (Value)arith::MulFOp::create(s.b, s.loc, s.args[0], s.args[0])
             : arith::MulIOp::create(s.b, s.loc, s.args[0], s.args[0]);
}
Value scalarOf(est::ExpOp, Scalars &s) {
  return math::ExpOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::LogOp, Scalars &s) {
  return math::LogOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::SqrtOp, Scalars &s) {
  return math::SqrtOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::RsqrtOp, Scalars &s) {
  return math::RsqrtOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::TanhOp, Scalars &s) {
  return math::TanhOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::SinOp, Scalars &s) {
  return math::SinOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::CosOp, Scalars &s) {
  return math::CosOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::FloorOp, Scalars &s) {
  return math::FloorOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::CeilOp, Scalars &s) {
  return math::CeilOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::RoundOp, Scalars &s) {
  // Halves to even, as TF's Round; an integer is its own rounding.
  if (!s.isFloat())
    return s.args[0];
  return math::RoundEvenOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::SignOp, Scalars &s) {
  // x > 0 ? 1 : (x < 0 ? -1 : x): zeros and NaN stay as they are.
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value x = s.args[0];
  Value positive = s.compare(CF::OGT, CI::sgt, x, s.zero());
  Value negative = s.compare(CF::OLT, CI::slt, x, s.zero());
  Value r = arith::SelectOp::create(b, loc, negative,
                                    scalarConst(b, loc, s.elt(), -1), x);
  return arith::SelectOp::create(b, loc, positive, s.one(), r);
}
Value scalarOf(est::ErfOp, Scalars &s) {
  return math::ErfOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::Log1pOp, Scalars &s) {
  return math::Log1pOp::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::Expm1Op, Scalars &s) {
  return math::ExpM1Op::create(s.b, s.loc, s.args[0]);
}
Value scalarOf(est::SigmoidOp, Scalars &s) {
  // 1 / (1 + exp(-x)).
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value negX = arith::NegFOp::create(b, loc, s.args[0]);
  Value e = math::ExpOp::create(b, loc, negX);
  Value o = s.one();
  Value den = arith::AddFOp::create(b, loc, o, e);
  return arith::DivFOp::create(b, loc, o, den);
}
Value scalarOf(est::ReluOp, Scalars &s) {
  return arith::MaximumFOp::create(s.b, s.loc, s.args[0], s.zero());
}
Value scalarOf(est::Relu6Op, Scalars &s) {
  Value r = arith::MaximumFOp::create(s.b, s.loc, s.args[0], s.zero());
  return arith::MinimumFOp::create(s.b, s.loc, r,
                                   scalarConst(s.b, s.loc, s.elt(), 6));
}
Value scalarOf(est::EluOp, Scalars &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value positive = arith::CmpFOp::create(b, loc, CF::OGT, s.args[0], s.zero());
  Value em1 = math::ExpM1Op::create(b, loc, s.args[0]);
  return arith::SelectOp::create(b, loc, positive, s.args[0], em1);
}
Value scalarOf(est::SoftplusOp, Scalars &s) {
  // max(x, 0) + log1p(exp(-|x|)); NaN propagates through maximumf.
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value r = arith::MaximumFOp::create(b, loc, s.args[0], s.zero());
  Value a = math::AbsFOp::create(b, loc, s.args[0]);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a));
  return arith::AddFOp::create(b, loc, r, math::Log1pOp::create(b, loc, e));
}

//===----------------------------------------------------------------------===//
// Patterns.
//===----------------------------------------------------------------------===//

/// An elementwise op: one linalg.generic over the broadcast result computing
/// scalarOf(op) per element.
template <typename OpTy>
struct ElementwiseOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), op->getOperands(), resultTypeOf(op),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Scalars scalars{b, loc, args};
          return scalarOf(op, scalars);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantOpLowering : public OpRewritePattern<est::ConstantOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::ConstantOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = resultTypeOf(op);
    auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
    Value result;
    if (splat && splat.getNumElements() > 1 && splat.getType() == type &&
        !op->use_empty() &&
        llvm::all_of(op->getUsers(), llvm::IsaPred<est::AssignVariableOp>)) {
      // A splat only assigned to variables (an initializer): a fill, which
      // est-function-abi places in the variable's buffer, rather than a
      // constant the size of the variable in the object file, copied in.
      Value value = arith::ConstantOp::create(rewriter, loc,
                                              splat.getSplatValue<TypedAttr>());
      result = filledTensor(rewriter, loc, type, {}, value);
    } else {
      Value c = arith::ConstantOp::create(rewriter, loc,
                                          cast<TypedAttr>(op.getValue()));
      result = castTo(rewriter, loc, c, type);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// zeros_like / ones_like: a linalg.fill of `Fill` in x's shape.
template <typename OpTy, int Fill>
struct FillLikeOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op->getOperand(0);
    RankedTensorType type = resultTypeOf(op);
    SmallVector<Value> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(dimValue(rewriter, loc, x, d));
    Value result =
        filledTensor(rewriter, loc, type, dims,
                     scalarConst(rewriter, loc, type.getElementType(), Fill));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// stop_gradient: its operand (autodiff has run).
struct StopGradientOpLowering : public OpRewritePattern<est::StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::StopGradientOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getX());
    return success();
  }
};

} // namespace

void mlir::est::populateEstToLinalgElementwisePatterns(
    RewritePatternSet &patterns) {
  patterns.add<
      // Binary, with broadcasting.
      ElementwiseOpLowering<AddOp>, ElementwiseOpLowering<SubOp>,
      ElementwiseOpLowering<MulOp>, ElementwiseOpLowering<DivOp>,
      ElementwiseOpLowering<PowOp>, ElementwiseOpLowering<MaximumOp>,
      ElementwiseOpLowering<MinimumOp>,
      // Comparisons and logic.
      ElementwiseOpLowering<EqualOp>, ElementwiseOpLowering<NotEqualOp>,
      ElementwiseOpLowering<LessOp>, ElementwiseOpLowering<LessEqualOp>,
      ElementwiseOpLowering<GreaterOp>, ElementwiseOpLowering<GreaterEqualOp>,
      ElementwiseOpLowering<LogicalAndOp>, ElementwiseOpLowering<LogicalOrOp>,
      ElementwiseOpLowering<LogicalNotOp>, ElementwiseOpLowering<SelectOp>,
      // Conversions.
      ElementwiseOpLowering<CastOp>, ElementwiseOpLowering<BroadcastToOp>,
      // Unary.
      ElementwiseOpLowering<NegOp>, ElementwiseOpLowering<AbsOp>,
      ElementwiseOpLowering<SquareOp>, ElementwiseOpLowering<ExpOp>,
      ElementwiseOpLowering<LogOp>, ElementwiseOpLowering<SqrtOp>,
      ElementwiseOpLowering<RsqrtOp>, ElementwiseOpLowering<TanhOp>,
      ElementwiseOpLowering<SinOp>, ElementwiseOpLowering<CosOp>,
      ElementwiseOpLowering<FloorOp>, ElementwiseOpLowering<CeilOp>,
      ElementwiseOpLowering<RoundOp>, ElementwiseOpLowering<SignOp>,
      ElementwiseOpLowering<ErfOp>, ElementwiseOpLowering<Log1pOp>,
      ElementwiseOpLowering<Expm1Op>, ElementwiseOpLowering<SigmoidOp>,
      ElementwiseOpLowering<ReluOp>, ElementwiseOpLowering<Relu6Op>,
      ElementwiseOpLowering<EluOp>, ElementwiseOpLowering<SoftplusOp>,
      // Constants and fills.
      ConstantOpLowering, FillLikeOpLowering<ZerosLikeOp, 0>,
      FillLikeOpLowering<OnesLikeOp, 1>, StopGradientOpLowering>(
      patterns.getContext());
}
