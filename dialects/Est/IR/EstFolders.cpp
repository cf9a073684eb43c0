//===- EstFolders.cpp - est constant folding ------------------------------===//
//
// The fold hooks of the est ops: elementwise ops of constant operands
// (splats broadcast), identities (x + 0, x * 1, x / 1, x - 0), no-op casts,
// reshapes, broadcasts and transposes, empty reductions, and zeros_like /
// ones_like of a static shape.
//
//===----------------------------------------------------------------------===//

#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <functional>
#include <optional>

using namespace mlir;
using namespace mlir::est;

namespace {

double toDouble(const APFloat &value) {
  APFloat copy = value;
  bool losesInfo;
  copy.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
  return copy.convertToDouble();
}

APFloat fromDouble(double value, const llvm::fltSemantics &semantics) {
  APFloat result(value);
  bool losesInfo;
  result.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

/// Values of a constant operand, one value when it is a splat.
template <typename T> SmallVector<T> valuesOf(DenseElementsAttr attr) {
  if (attr.isSplat())
    return {attr.getSplatValue<T>()};
  return llvm::to_vector(attr.getValues<T>());
}

/// Folds an elementwise op whose operands are all constants. Splat operands
/// broadcast; others must already have the (static) result shape.
/// `fn(ArrayRef<InT>) -> std::optional<OutT>` computes one element.
template <typename InT, typename OutT, typename Fn>
Attribute foldElementwise(ArrayRef<Attribute> operands, Type resultType,
                          Fn fn) {
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!type || !type.hasStaticShape())
    return {};
  SmallVector<SmallVector<InT>> values;
  bool allSplat = true;
  for (Attribute operand : operands) {
    auto attr = dyn_cast_or_null<DenseElementsAttr>(operand);
    if (!attr)
      return {};
    if (!attr.isSplat() && attr.getType().getShape() != type.getShape())
      return {};
    allSplat &= attr.isSplat();
    values.push_back(valuesOf<InT>(attr));
  }
  int64_t n = allSplat ? 1 : type.getNumElements();
  SmallVector<OutT> results;
  SmallVector<InT> args;
  for (int64_t i = 0; i < n; ++i) {
    args.clear();
    for (const SmallVector<InT> &v : values)
      args.push_back(v.size() == 1 ? v[0] : v[i]);
    std::optional<OutT> r = fn(ArrayRef<InT>(args));
    if (!r)
      return {};
    results.push_back(*r);
  }
  return DenseElementsAttr::get(type, results);
}

using FloatFn = std::function<std::optional<double>(ArrayRef<double>)>;
using IntFn = std::function<std::optional<APInt>(ArrayRef<APInt>)>;

/// Folds an op whose result element type is its operands' (float or int).
Attribute foldArith(ArrayRef<Attribute> operands, Type resultType,
                    FloatFn floatFn, IntFn intFn) {
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!type)
    return {};
  Type elt = type.getElementType();
  if (auto floatType = dyn_cast<FloatType>(elt)) {
    if (!floatFn)
      return {};
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    return foldElementwise<APFloat, APFloat>(
        operands, resultType,
        [&](ArrayRef<APFloat> args) -> std::optional<APFloat> {
          SmallVector<double> d;
          for (const APFloat &a : args)
            d.push_back(toDouble(a));
          std::optional<double> r = floatFn(d);
          if (!r)
            return std::nullopt;
          return fromDouble(*r, semantics);
        });
  }
  if (isa<IntegerType>(elt) && intFn)
    return foldElementwise<APInt, APInt>(operands, resultType, intFn);
  return {};
}

/// Folds a comparison into an i1 tensor.
Attribute foldCompare(ArrayRef<Attribute> operands, Type resultType,
                      std::function<bool(double, double)> floatFn,
                      std::function<bool(const APInt &, const APInt &)> intFn) {
  auto lhs = dyn_cast_or_null<DenseElementsAttr>(operands[0]);
  if (!lhs)
    return {};
  Type elt = lhs.getElementType();
  if (isa<FloatType>(elt))
    return foldElementwise<APFloat, APInt>(
        operands, resultType, [&](ArrayRef<APFloat> a) -> std::optional<APInt> {
          return APInt(1, floatFn(toDouble(a[0]), toDouble(a[1])));
        });
  if (isa<IntegerType>(elt))
    return foldElementwise<APInt, APInt>(
        operands, resultType, [&](ArrayRef<APInt> a) -> std::optional<APInt> {
          return APInt(1, intFn(a[0], a[1]));
        });
  return {};
}

/// Is `attr` a splat constant of value `value` (integer or float)?
bool isSplatOf(Attribute attr, int64_t value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elt = splat.getElementType();
  if (isa<FloatType>(elt))
    return splat.getSplatValue<APFloat>().isExactlyValue(value);
  if (isa<IntegerType>(elt))
    return splat.getSplatValue<APInt>().getSExtValue() == value;
  return false;
}

/// `x op c` folds to `x` when c is the splat `identity` and the result has
/// x's type.
Value foldIdentityOperand(Value x, Attribute c, int64_t identity,
                          Type resultType) {
  if (x.getType() == resultType && isSplatOf(c, identity))
    return x;
  return {};
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (Value x = foldIdentityOperand(getLhs(), adaptor.getRhs(), 0, getType()))
    return x;
  if (Value x = foldIdentityOperand(getRhs(), adaptor.getLhs(), 0, getType()))
    return x;
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) { return a[0] + a[1]; },
      [](ArrayRef<APInt> a) { return a[0] + a[1]; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (Value x = foldIdentityOperand(getLhs(), adaptor.getRhs(), 0, getType()))
    return x;
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) { return a[0] - a[1]; },
      [](ArrayRef<APInt> a) { return a[0] - a[1]; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (Value x = foldIdentityOperand(getLhs(), adaptor.getRhs(), 1, getType()))
    return x;
  if (Value x = foldIdentityOperand(getRhs(), adaptor.getLhs(), 1, getType()))
    return x;
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) { return a[0] * a[1]; },
      [](ArrayRef<APInt> a) { return a[0] * a[1]; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (Value x = foldIdentityOperand(getLhs(), adaptor.getRhs(), 1, getType()))
    return x;
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) { return a[0] / a[1]; },
      [](ArrayRef<APInt> a) -> std::optional<APInt> {
        // Integer division by zero (or INT_MIN / -1) is left to run time.
        if (a[1].isZero() || (a[0].isMinSignedValue() && a[1].isAllOnes()))
          return std::nullopt;
        return a[0].sdiv(a[1]);
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) { return std::pow(a[0], a[1]); }, nullptr);
}

OpFoldResult MaximumOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) -> std::optional<double> {
        if (std::isnan(a[0]) || std::isnan(a[1]))
          return NAN;
        return std::max(a[0], a[1]);
      },
      [](ArrayRef<APInt> a) { return a[0].sge(a[1]) ? a[0] : a[1]; });
}

OpFoldResult MinimumOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getOperands(), getType(),
      [](ArrayRef<double> a) -> std::optional<double> {
        if (std::isnan(a[0]) || std::isnan(a[1]))
          return NAN;
        return std::min(a[0], a[1]);
      },
      [](ArrayRef<APInt> a) { return a[0].sle(a[1]) ? a[0] : a[1]; });
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a == b; },
      [](const APInt &a, const APInt &b) { return a == b; });
}
OpFoldResult NotEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a != b; },
      [](const APInt &a, const APInt &b) { return a != b; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a < b; },
      [](const APInt &a, const APInt &b) { return a.slt(b); });
}
OpFoldResult LessEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a <= b; },
      [](const APInt &a, const APInt &b) { return a.sle(b); });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a > b; },
      [](const APInt &a, const APInt &b) { return a.sgt(b); });
}
OpFoldResult GreaterEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      adaptor.getOperands(), getType(),
      [](double a, double b) { return a >= b; },
      [](const APInt &a, const APInt &b) { return a.sge(b); });
}

OpFoldResult LogicalAndOp::fold(FoldAdaptor adaptor) {
  return foldArith(adaptor.getOperands(), getType(), nullptr,
                   [](ArrayRef<APInt> a) { return a[0] & a[1]; });
}
OpFoldResult LogicalOrOp::fold(FoldAdaptor adaptor) {
  return foldArith(adaptor.getOperands(), getType(), nullptr,
                   [](ArrayRef<APInt> a) { return a[0] | a[1]; });
}
OpFoldResult LogicalNotOp::fold(FoldAdaptor adaptor) {
  return foldArith(adaptor.getOperands(), getType(), nullptr,
                   [](ArrayRef<APInt> a) { return ~a[0]; });
}

// Unary folds: a double function for floats, optionally an APInt one.
#define EST_FOLD_UNARY(OP, FLOAT_EXPR, INT_FN)                                 \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldArith(                                                          \
        adaptor.getOperands(), getType(),                                      \
        [](ArrayRef<double> a) -> std::optional<double> {                      \
          double x = a[0];                                                     \
          return FLOAT_EXPR;                                                   \
        },                                                                     \
        INT_FN);                                                               \
  }
EST_FOLD_UNARY(NegOp, -x, [](ArrayRef<APInt> a) { return -a[0]; })
EST_FOLD_UNARY(AbsOp, std::fabs(x),
               [](ArrayRef<APInt> a) { return a[0].abs(); })
EST_FOLD_UNARY(SquareOp, x *x, [](ArrayRef<APInt> a) { return a[0] * a[0]; })
EST_FOLD_UNARY(ExpOp, std::exp(x), nullptr)
EST_FOLD_UNARY(LogOp, std::log(x), nullptr)
EST_FOLD_UNARY(SqrtOp, std::sqrt(x), nullptr)
EST_FOLD_UNARY(RsqrtOp, 1.0 / std::sqrt(x), nullptr)
EST_FOLD_UNARY(TanhOp, std::tanh(x), nullptr)
EST_FOLD_UNARY(SinOp, std::sin(x), nullptr)
EST_FOLD_UNARY(CosOp, std::cos(x), nullptr)
EST_FOLD_UNARY(FloorOp, std::floor(x), nullptr)
EST_FOLD_UNARY(CeilOp, std::ceil(x), nullptr)
// nearbyint rounds halves to even in the default rounding mode.
EST_FOLD_UNARY(RoundOp, std::nearbyint(x),
               [](ArrayRef<APInt> a) { return a[0]; })
EST_FOLD_UNARY(SignOp, x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x),
               [](ArrayRef<APInt> a) {
                 APInt r(a[0].getBitWidth(), 0);
                 if (a[0].isStrictlyPositive())
                   r = 1;
                 else if (a[0].isNegative())
                   r = APInt::getAllOnes(a[0].getBitWidth());
                 return r;
               })
EST_FOLD_UNARY(ErfOp, std::erf(x), nullptr)
EST_FOLD_UNARY(Log1pOp, std::log1p(x), nullptr)
EST_FOLD_UNARY(Expm1Op, std::expm1(x), nullptr)
EST_FOLD_UNARY(SigmoidOp, 1.0 / (1.0 + std::exp(-x)), nullptr)
EST_FOLD_UNARY(ReluOp, x > 0.0 ? x : 0.0, nullptr)
EST_FOLD_UNARY(Relu6Op, std::min(std::max(x, 0.0), 6.0), nullptr)
EST_FOLD_UNARY(EluOp, x > 0.0 ? x : std::expm1(x), nullptr)
EST_FOLD_UNARY(SoftplusOp,
               std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0), nullptr)
#undef EST_FOLD_UNARY

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  auto value = dyn_cast_or_null<DenseElementsAttr>(adaptor.getX());
  if (value && getType().hasStaticShape())
    return value.reshape(getType());
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getX().getType() == getType())
    return getX();
  auto value = dyn_cast_or_null<SplatElementsAttr>(adaptor.getX());
  if (value && getType().hasStaticShape())
    return SplatElementsAttr::get(getType(), value.getSplatValue<Attribute>());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return {};
  if (getX().getType() == getType())
    return getX();
  return {};
}

#define EST_FOLD_REDUCE(OP)                                                    \
  OpFoldResult OP::fold(FoldAdaptor) {                                         \
    if (getAxes() && getAxes()->empty() && getX().getType() == getType())      \
      return getX();                                                           \
    return {};                                                                 \
  }
EST_FOLD_REDUCE(ReduceSumOp)
EST_FOLD_REDUCE(ReduceMeanOp)
EST_FOLD_REDUCE(ReduceMaxOp)
EST_FOLD_REDUCE(ReduceMinOp)
EST_FOLD_REDUCE(ReduceProdOp)
#undef EST_FOLD_REDUCE

//===----------------------------------------------------------------------===//
// zeros_like / ones_like
//===----------------------------------------------------------------------===//

/// A splat of `value` (1 becomes `true` for i1) when `type` is static.
static Attribute foldFillLike(Type type, int64_t value) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType || !tensorType.hasStaticShape())
    return {};
  Type element = tensorType.getElementType();
  if (auto floatType = dyn_cast<FloatType>(element))
    return DenseElementsAttr::get(
        tensorType, FloatAttr::get(floatType, static_cast<double>(value)));
  if (auto intType = dyn_cast<IntegerType>(element))
    return DenseElementsAttr::get(
        tensorType,
        IntegerAttr::get(intType, APInt(intType.getWidth(), value)));
  return {};
}

OpFoldResult ZerosLikeOp::fold(FoldAdaptor) {
  return foldFillLike(getType(), 0);
}

OpFoldResult OnesLikeOp::fold(FoldAdaptor) {
  return foldFillLike(getType(), 1);
}

/// A static shape is a constant.
OpFoldResult ShapeOfOp::fold(FoldAdaptor) {
  auto xType = dyn_cast<RankedTensorType>(getX().getType());
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!xType || !type || !xType.hasStaticShape() || !type.hasStaticShape())
    return {};
  auto intType = cast<IntegerType>(type.getElementType());
  SmallVector<APInt> dims;
  for (int64_t d : xType.getShape())
    dims.push_back(APInt(intType.getWidth(), d));
  return DenseElementsAttr::get(type, dims);
}
