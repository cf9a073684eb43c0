//===- ApproximateMath.cpp - est-approximate-math -------------------------===//
//
// The f32 math ops named in the pass's `ops` become arithmetic on the
// element, which LLVM's loop vectorizer widens with the rest of the loop,
// where a libm call (`expf`, `logf`) keeps the whole loop scalar:
//
//  - exp: our own expansion (below), correct at the edges of the float
//    range: overflow to +inf, NaN kept, results under FLT_MIN flushed
//    to 0;
//  - log: MLIR's approximation, on a subnormal argument first scaled by
//    2^23 (MLIR's treats subnormals as zero's neighbours, off by millions
//    of ulp) and the 23 ln 2 taken off after;
//  - tanh: MLIR's approximation, +-1 where tanh rounds to it;
//  - the rest (log1p, expm1, erf, ...): MLIR's approximations
//    (populateMathPolynomialApproximationPatterns), whose exps and logs
//    are then the two above.
//
// MathAccuracyTest measures each against the correctly rounded result
// over the float range; docs/conventions.md ("Floating point") lists the
// bounds.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTAPPROXIMATEMATH
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Scalar f32 arithmetic. No contraction and no FMAs: the same bits on
/// every target, whether it has FMA (the JIT's host) or not (AOT's default
/// x86-64-v2, where an llvm.fma is a call of libm's fmaf).
struct F32Builder {
  PatternRewriter &b;
  Location loc;

  Value c(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value ci(int32_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  Value gt(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// 2^k for an i32 k in [-126, 127], as a float.
  Value pow2(Value k) {
    Value bits = arith::ShLIOp::create(
        b, loc, arith::AddIOp::create(b, loc, k, ci(127)), ci(23));
    return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  }
};

/// exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 in
/// [-ln 2 / 2, ln 2 / 2] (Cody and Waite: ln 2's leading bits exact, so
/// x - k ln2_hi is exact), exp(r) by its Taylor polynomial of degree 7
/// (truncation error below 5.3e-9, a tenth of an ulp). 2^k is applied as
/// two factors 2^(k/2) and 2^(k - k/2), so results up to FLT_MAX are finite
/// and larger ones +inf. Results below FLT_MIN (x < -87.34) are 0, as
/// under TF's flush-to-zero: a subnormal result or operand costs the CPU a
/// microcode assist per element, and masked attention logits (-1e9) would
/// all take it. NaN is returned as it is.
struct ExpF32Expansion : public OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "not a scalar f32");
    F32Builder f{rewriter, op.getLoc()};
    Value x = op.getOperand();
    // Below -87.33654 (exp < FLT_MIN) the result is 0: such x are computed
    // as -87, where every intermediate is a normal float.
    Value underflows = f.lt(x, f.c(-87.33654));
    Value hi = f.c(88.8);
    Value xc = f.select(underflows, f.c(-87.0), x);
    xc = f.select(f.gt(xc, hi), hi, xc);
    Value k = math::FloorOp::create(
        rewriter, op.getLoc(),
        f.add(f.mul(xc, f.c(1.0 / std::log(2.0))), f.c(0.5)));
    // ln 2 = ln2Hi + ln2Lo, ln2Hi with 9 significant bits: k ln2Hi exact.
    const double ln2Hi = 0.693359375;
    const double ln2Lo = std::log(2.0) - ln2Hi;
    Value r = f.sub(xc, f.mul(k, f.c(ln2Hi)));
    r = f.sub(r, f.mul(k, f.c(ln2Lo)));
    // 1 + r + r^2 (1/2 + r (1/6 + r (1/24 + ...))), Horner.
    Value q = f.c(1.0 / 5040.0);
    for (double coefficient : {1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5})
      q = f.add(f.mul(q, r), f.c(coefficient));
    Value p = f.add(f.add(f.mul(f.mul(r, r), q), r), f.c(1.0));
    Value ki = arith::FPToSIOp::create(rewriter, op.getLoc(),
                                       rewriter.getI32Type(), k);
    Value k1 = arith::ShRSIOp::create(rewriter, op.getLoc(), ki, f.ci(1));
    Value k2 = arith::SubIOp::create(rewriter, op.getLoc(), ki, k1);
    Value y = f.mul(f.mul(p, f.pow2(k1)), f.pow2(k2));
    y = f.select(underflows, f.c(0.0), y);
    Value isNan = arith::CmpFOp::create(rewriter, op.getLoc(),
                                        arith::CmpFPredicate::UNO, x, x);
    rewriter.replaceOp(op, f.select(isNan, x, y));
    return success();
  }
};

/// Marks the ops the wrappers below made, which they leave to MLIR's
/// approximations.
constexpr llvm::StringLiteral kPrescaled = "estc.prescaled";

/// Whether a wrapper below applies to `op`: a scalar f32 op it did not make.
bool isUnwrappedF32(Operation *op) {
  return op->getResult(0).getType().isF32() && !op->hasAttr(kPrescaled);
}

/// OpT(x), marked so the wrappers leave it to MLIR's approximation.
template <typename OpT>
Value createForMlir(PatternRewriter &rewriter, Location loc, Value x) {
  auto op = OpT::create(rewriter, loc, x);
  op->setAttr(kPrescaled, rewriter.getUnitAttr());
  return op;
}

/// log(x) for a subnormal x as log(x 2^23) - 23 ln 2: MLIR's
/// approximation takes the exponent from the bits, which a subnormal does
/// not have. The log made here is marked, so this pattern leaves it to
/// MLIR's.
struct LogF32Subnormals : public OpRewritePattern<math::LogOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::LogOp op,
                                PatternRewriter &rewriter) const override {
    if (!isUnwrappedF32(op))
      return rewriter.notifyMatchFailure(op, "not an unmarked scalar f32");
    F32Builder f{rewriter, op.getLoc()};
    Value x = op.getOperand();
    Value tiny = f.lt(x, f.c(std::ldexp(1.0, -126)));
    Value scaled = f.select(tiny, f.mul(x, f.c(std::ldexp(1.0, 23))), x);
    Value log = createForMlir<math::LogOp>(rewriter, op.getLoc(), scaled);
    Value shifted = f.sub(log, f.c(23.0 * std::log(2.0)));
    rewriter.replaceOp(op, f.select(tiny, shifted, log));
    return success();
  }
};

/// tanh(x) = +-1 for |x| > 13 ln 2 (where it rounds to 1): MLIR's
/// approximation clamps x to +-7.9 and stays 3 ulp under 1 beyond.
struct TanhF32Saturation : public OpRewritePattern<math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &rewriter) const override {
    if (!isUnwrappedF32(op))
      return rewriter.notifyMatchFailure(op, "not an unmarked scalar f32");
    F32Builder f{rewriter, op.getLoc()};
    Value x = op.getOperand();
    Value tanh = createForMlir<math::TanhOp>(rewriter, op.getLoc(), x);
    Value saturated = f.gt(math::AbsFOp::create(rewriter, op.getLoc(), x),
                           f.c(13.0 * std::log(2.0)));
    Value one = math::CopySignOp::create(rewriter, op.getLoc(), f.c(1.0), x);
    rewriter.replaceOp(op, f.select(saturated, one, tanh));
    return success();
  }
};

struct EstApproximateMath
    : public mlir::est::impl::EstApproximateMathBase<EstApproximateMath> {
  using Base::Base;

  void runOnOperation() override {
    if (ops.empty())
      return;
    auto named = [&](StringRef mnemonic) {
      return llvm::is_contained(ops, mnemonic.str());
    };
    RewritePatternSet patterns(&getContext());
    if (named("exp"))
      patterns.add<ExpF32Expansion>(&getContext(), /*benefit=*/2);
    if (named("log"))
      patterns.add<LogF32Subnormals>(&getContext(), /*benefit=*/2);
    if (named("tanh"))
      patterns.add<TanhF32Saturation>(&getContext(), /*benefit=*/2);
    // MLIR's patterns select by operation name ("math.tanh"); exp is ours.
    populateMathPolynomialApproximationPatterns(patterns, [&](StringRef op) {
      return op.consume_front("math.") && op != "exp" && named(op);
    });
    // An op left unrewritten (not converging) stays a libm call: correct.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    getOperation().walk([](Operation *op) { op->removeAttr(kPrescaled); });
    // MLIR's approximations' f32 math.fma as a multiply and an add, for the
    // reason F32Builder has none (math-expand-ops, which runs next, expands
    // every other math.fma the same way).
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](math::FmaOp op) {
      if (!op.getType().isF32())
        return;
      rewriter.setInsertionPoint(op);
      Value product =
          arith::MulFOp::create(rewriter, op.getLoc(), op.getA(), op.getB());
      rewriter.replaceOpWithNewOp<arith::AddFOp>(op, product, op.getC());
    });
  }
};

} // namespace
