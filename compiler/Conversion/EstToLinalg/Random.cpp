//===- Random.cpp - est random ops to linalg
//-------------------------------===//
//
//   dropout random_uniform random_normal truncated_normal
//       one linalg.generic computing Philox4x32-10 from the linear element
//       index (linalg.index), exactly lib/Random/Philox.h, then the op's
//       distribution (sampleOf)
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Random/Philox.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

#include <array>

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

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

//===----------------------------------------------------------------------===//
// The distribution of each random op, from the Philox words `r` of one
// element, in compute type `t` (f32, or f64 for f64 results); `args` are the
// elements of the op's tensor operand (dropout's x).
//===----------------------------------------------------------------------===//

Value sampleOf(est::DropoutOp dropout, OpBuilder &nb, Location nloc, Type t,
               ValueRange args, const std::array<Value, 4> &r) {
  double rate = dropout.getRate().convertToDouble();
  Value xs = convertScalar(nb, nloc, args[0], t);
  Value u = uniform01(nb, nloc, t, r[0]);
  Value keep = arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OGE, u,
                                     computeConst(nb, nloc, t, rate));
  double scale = t.isF32()
                     ? static_cast<double>(1.0f - static_cast<float>(rate))
                     : 1.0 - rate;
  Value scaled =
      arith::DivFOp::create(nb, nloc, xs, computeConst(nb, nloc, t, scale));
  return arith::SelectOp::create(nb, nloc, keep, scaled,
                                 scalarConst(nb, nloc, t, 0));
}

Value sampleOf(est::RandomUniformOp uniform, OpBuilder &nb, Location nloc,
               Type t, ValueRange, const std::array<Value, 4> &r) {
  double lo = uniform.getMinval().convertToDouble();
  double hi = uniform.getMaxval().convertToDouble();
  double range =
      t.isF32()
          ? static_cast<double>(static_cast<float>(hi) - static_cast<float>(lo))
          : hi - lo;
  Value u = uniform01(nb, nloc, t, r[0]);
  Value s =
      arith::MulFOp::create(nb, nloc, u, computeConst(nb, nloc, t, range));
  return arith::AddFOp::create(nb, nloc, computeConst(nb, nloc, t, lo), s);
}

Value sampleOf(est::RandomNormalOp normal, OpBuilder &nb, Location nloc, Type t,
               ValueRange, const std::array<Value, 4> &r) {
  Value u1 = uniform01(nb, nloc, t, r[0], true);
  Value u2 = uniform01(nb, nloc, t, r[1]);
  Value lg = math::LogOp::create(nb, nloc, u1);
  Value radius = math::SqrtOp::create(
      nb, nloc,
      arith::MulFOp::create(nb, nloc, computeConst(nb, nloc, t, -2), lg));
  Value angle = arith::MulFOp::create(
      nb, nloc, computeConst(nb, nloc, t, 6.283185307179586476925286766559),
      u2);
  Value z = arith::MulFOp::create(nb, nloc, radius,
                                  math::CosOp::create(nb, nloc, angle));
  Value sz = arith::MulFOp::create(
      nb, nloc, computeConst(nb, nloc, t, normal.getStddev().convertToDouble()),
      z);
  return arith::AddFOp::create(
      nb, nloc, computeConst(nb, nloc, t, normal.getMean().convertToDouble()),
      sz);
}

Value sampleOf(est::TruncatedNormalOp normal, OpBuilder &nb, Location nloc,
               Type t, ValueRange, const std::array<Value, 4> &r) {
  auto c = [&](double v) { return computeConst(nb, nloc, t, v); };
  // Float-literal coefficients, as in Philox.h.
  auto cf = [&](float v) {
    return scalarConst(nb, nloc, t, static_cast<double>(v));
  };
  double erfSqrt2 = 0.95449973610364158560;
  double twoErf = t.isF32()
                      ? static_cast<double>(2.0f * static_cast<float>(erfSqrt2))
                      : 2.0 * erfSqrt2;
  Value u = uniform01(nb, nloc, t, r[0]);
  Value xv = arith::SubFOp::create(
      nb, nloc, arith::MulFOp::create(nb, nloc, u, c(twoErf)), c(erfSqrt2));
  Value oneMinus = arith::SubFOp::create(nb, nloc, c(1), xv);
  Value onePlus = arith::AddFOp::create(nb, nloc, c(1), xv);
  Value lg = math::LogOp::create(
      nb, nloc, arith::MulFOp::create(nb, nloc, oneMinus, onePlus));
  Value w = arith::SubFOp::create(nb, nloc, arith::NegFOp::create(nb, nloc, lg),
                                  cf(2.5f));
  const float coeffs[] = {3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f,
                          0.00021858087f,  -0.00125372503f, -0.00417768164f,
                          0.246640727f,    1.50140941f};
  Value p = cf(2.81022636e-08f);
  for (float k : coeffs)
    p = arith::AddFOp::create(nb, nloc, cf(k),
                              arith::MulFOp::create(nb, nloc, p, w));
  Value erfinv = arith::MulFOp::create(nb, nloc, p, xv);
  Value z = arith::MulFOp::create(nb, nloc, c(1.41421356237309504880), erfinv);
  using CF = arith::CmpFPredicate;
  Value below = arith::CmpFOp::create(nb, nloc, CF::OLT, z, c(-2));
  z = arith::SelectOp::create(nb, nloc, below, c(-2), z);
  Value above = arith::CmpFOp::create(nb, nloc, CF::OGT, z, c(2));
  z = arith::SelectOp::create(nb, nloc, above, c(2), z);
  Value sz = arith::MulFOp::create(nb, nloc,
                                   c(normal.getStddev().convertToDouble()), z);
  return arith::AddFOp::create(nb, nloc, c(normal.getMean().convertToDouble()),
                               sz);
}

/// dropout's x, the shape operand of the random ops (none: their shape is
/// the static result shape).
Value shapedOperand(est::DropoutOp dropout) { return dropout.getX(); }
template <typename OpTy> Value shapedOperand(OpTy) { return Value(); }

//===----------------------------------------------------------------------===//
// Patterns.
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct RandomOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = shapedOperand(op);
    int64_t seed = op.getSeedAttr().getInt();
    RankedTensorType outType = resultTypeOf(op);
    if (!x && !outType.hasStaticShape())
      return b.notifyMatchFailure(op, "needs a static result shape");
    int64_t rank = outType.getRank();
    Type elt = outType.getElementType();
    Type t = elt.isF64() ? (Type)b.getF64Type() : (Type)b.getF32Type();
    Value counter =
        tensor::ExtractOp::create(b, loc, op.getCounter(), ValueRange{});
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
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
        parallel(rank), [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value linear = indexConst(nb, nloc, 0);
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(nb, nloc, d);
            linear = arith::AddIOp::create(
                nb, nloc, linear,
                arith::MulIOp::create(nb, nloc, i, strides[d]));
          }
          Value index64 =
              arith::IndexCastUIOp::create(nb, nloc, nb.getI64Type(), linear);
          std::array<Value, 4> r = philox(nb, nloc, seed, counter, index64);
          Value v = sampleOf(op, nb, nloc, t, args, r);
          linalg::YieldOp::create(nb, nloc, convertScalar(nb, nloc, v, elt));
        });
    b.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void mlir::est::populateEstToLinalgRandomPatterns(RewritePatternSet &patterns) {
  patterns.add<RandomOpLowering<DropoutOp>, RandomOpLowering<RandomUniformOp>,
               RandomOpLowering<RandomNormalOp>,
               RandomOpLowering<TruncatedNormalOp>>(patterns.getContext());
}
