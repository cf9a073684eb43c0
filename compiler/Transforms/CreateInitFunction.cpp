//===- CreateInitFunction.cpp - est-create-init-function ----------------===//
//
// Builds `func.func @init()`: for every `est.variable`, in module order, est
// ops that compute its `initializer` and an `est.assign_variable`. @init is
// an ordinary function with no arguments and no results, compiled like the
// others, so `CompiledModel::run("init")` initializes every variable.
//
// Initializers (tf.compat.v1 semantics; random ops draw at counter 0 with the
// initializer's `seed`, which the graph builder derives from the graph seed
// and the variable name):
//   zeros, ones, constant(value)   a splat est.constant
//   random_uniform(minval, maxval) est.random_uniform
//   random_normal(mean, stddev)    est.random_normal
//   truncated_normal(mean, stddev) est.truncated_normal (within 2 stddev)
//   variance_scaling(scale, mode, distribution), with fans from the shape
//     (rank 0: 1, 1; rank 1: n, n; rank 2: in, out; rank k > 2, e.g. an
//     HWIO conv kernel: receptive field r = prod(shape[:-2]),
//     fan_in = r * shape[-2], fan_out = r * shape[-1]):
//       s = scale / max(1, fan_in | fan_out | (fan_in + fan_out) / 2)
//       truncated_normal (or "normal")  truncated_normal(0, sqrt(s) / .8796...)
//       untruncated_normal              random_normal(0, sqrt(s))
//       uniform                         random_uniform(-sqrt(3 s), sqrt(3 s))
//   glorot_uniform   variance_scaling(1, fan_avg, uniform):
//                      U(-l, l), l = sqrt(6 / (fan_in + fan_out))
//   glorot_normal    variance_scaling(1, fan_avg, truncated_normal):
//                      stddev = sqrt(2 / (fan_in + fan_out)) / .8796...
// (.8796... = kTruncatedNormalStddev below.)
// A variable without an initializer is zero-filled.
//
// Idempotent: an existing @init is replaced by one rebuilt from all
// variables, so the pass can run again after a stage that adds variables
// (optimizer slots). It runs at the end of the `est` stage
// (compiler/Pipelines), after which no stage adds variables.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>
#include <optional>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTCREATEINITFUNCTION
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// stddev of the standard normal truncated to [-2, 2] (TF's constant).
constexpr double kTruncatedNormalStddev = .87962566103423978;

/// What computes a variable's first value.
struct InitPlan {
  enum Kind {
    Constant,
    Uniform,
    Normal,
    TruncatedNormal,
    Orthogonal
  } kind = Constant;
  double a = 0.0, b = 0.0; // value | minval, maxval | mean, stddev
  /// Constant: every element (tf.constant_initializer of a list), when set.
  SmallVector<double> values;
  int64_t seed = 0;
};

/// (fan_in, fan_out) of a shape, like TF's _compute_fans.
std::pair<double, double> computeFans(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return {1.0, 1.0};
  if (shape.size() == 1)
    return {double(shape[0]), double(shape[0])};
  double receptiveField = 1.0;
  for (int64_t d : shape.drop_back(2))
    receptiveField *= double(d);
  return {double(shape[shape.size() - 2]) * receptiveField,
          double(shape.back()) * receptiveField};
}

/// Reads the initializer of `var`; the error names the variable.
FailureOr<InitPlan> planInitializer(est::VariableOp var) {
  est::InitializerAttr init = var.getInitializerAttr();
  if (!init)
    return InitPlan{};
  StringRef kind = init.getKind();
  DictionaryAttr params = init.getParams();
  auto fail = [&](const Twine &message) {
    return var.emitError() << "variable '" << var.getSymName()
                           << "': initializer '" << kind << "' " << message;
  };
  auto number = [&](StringRef name, double dflt) -> FailureOr<double> {
    Attribute a = params ? params.get(name) : Attribute();
    if (!a)
      return dflt;
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    if (auto i = dyn_cast<IntegerAttr>(a))
      return double(i.getInt());
    return fail("parameter '" + name + "' must be a number");
  };
  auto string = [&](StringRef name, StringRef dflt) -> FailureOr<StringRef> {
    Attribute a = params ? params.get(name) : Attribute();
    if (!a)
      return dflt;
    if (auto s = dyn_cast<StringAttr>(a))
      return s.getValue();
    return fail("parameter '" + name + "' must be a string");
  };

  InitPlan plan;
  if (kind == "zeros" || kind == "ones" || kind == "constant") {
    FailureOr<double> value = kind == "constant" ? number("value", 0.0)
                              : kind == "ones"   ? 1.0
                                                 : 0.0;
    if (failed(value))
      return failure();
    plan.a = *value;
    if (Attribute list = params ? params.get("values") : Attribute()) {
      auto values = dyn_cast<DenseF64ArrayAttr>(list);
      auto type = cast<RankedTensorType>(var.getType());
      if (kind != "constant" || !values)
        return fail("parameter 'values' must be a list of numbers of a "
                    "constant initializer");
      if (static_cast<int64_t>(values.size()) != type.getNumElements())
        return fail("has " + Twine(values.size()) + " values for " +
                    Twine(type.getNumElements()) + " elements");
      plan.values.assign(values.asArrayRef().begin(),
                         values.asArrayRef().end());
    }
    return plan;
  }

  // Random initializers: a float variable and a seed.
  if (kind != "random_uniform" && kind != "random_normal" &&
      kind != "truncated_normal" && kind != "glorot_uniform" &&
      kind != "glorot_normal" && kind != "variance_scaling" &&
      kind != "orthogonal")
    return fail("is unknown (expected zeros, ones, constant, random_uniform, "
                "random_normal, truncated_normal, glorot_uniform, "
                "glorot_normal, variance_scaling or orthogonal)");
  auto type = cast<RankedTensorType>(var.getType());
  if (!isa<FloatType>(type.getElementType()))
    return fail("needs a float variable");
  auto seed = params ? dyn_cast_or_null<IntegerAttr>(params.get("seed"))
                     : IntegerAttr();
  if (!seed)
    return fail("requires an integer parameter 'seed'");
  plan.seed = seed.getInt();

  if (kind == "orthogonal") {
    FailureOr<double> gain = number("gain", 1.0);
    if (failed(gain))
      return failure();
    if (type.getRank() < 2 || !type.getElementType().isF32())
      return fail("needs an f32 variable of rank >= 2");
    plan.kind = InitPlan::Orthogonal;
    plan.a = *gain;
    return plan;
  }
  if (kind == "random_uniform") {
    FailureOr<double> lo = number("minval", -0.05), hi = number("maxval", 0.05);
    if (failed(lo) || failed(hi))
      return failure();
    plan.kind = InitPlan::Uniform;
    plan.a = *lo;
    plan.b = *hi;
    return plan;
  }
  if (kind == "random_normal" || kind == "truncated_normal") {
    FailureOr<double> mean = number("mean", 0.0),
                      stddev = number("stddev", 1.0);
    if (failed(mean) || failed(stddev))
      return failure();
    plan.kind =
        kind == "random_normal" ? InitPlan::Normal : InitPlan::TruncatedNormal;
    plan.a = *mean;
    plan.b = *stddev;
    return plan;
  }

  // variance_scaling and its glorot special cases.
  double scale = 1.0;
  StringRef mode = "fan_avg";
  StringRef distribution =
      kind == "glorot_uniform" ? "uniform" : "truncated_normal";
  if (kind == "variance_scaling") {
    FailureOr<double> s = number("scale", 1.0);
    FailureOr<StringRef> m = string("mode", "fan_in");
    FailureOr<StringRef> d = string("distribution", "truncated_normal");
    if (failed(s) || failed(m) || failed(d))
      return failure();
    if (!(*s > 0.0))
      return fail("needs scale > 0");
    if (*m != "fan_in" && *m != "fan_out" && *m != "fan_avg")
      return fail("has mode '" + *m +
                  "' (expected fan_in, fan_out or "
                  "fan_avg)");
    if (*d != "truncated_normal" && *d != "normal" &&
        *d != "untruncated_normal" && *d != "uniform")
      return fail("has distribution '" + *d +
                  "' (expected truncated_normal, untruncated_normal or "
                  "uniform)");
    scale = *s;
    mode = *m;
    distribution = *d;
  }
  auto [fanIn, fanOut] = computeFans(type.getShape());
  double fan = mode == "fan_in"    ? fanIn
               : mode == "fan_out" ? fanOut
                                   : (fanIn + fanOut) / 2.0;
  scale /= std::max(1.0, fan);
  if (distribution == "uniform") {
    double limit = std::sqrt(3.0 * scale);
    plan.kind = InitPlan::Uniform;
    plan.a = -limit;
    plan.b = limit;
  } else if (distribution == "untruncated_normal") {
    plan.kind = InitPlan::Normal;
    plan.b = std::sqrt(scale);
  } else {
    plan.kind = InitPlan::TruncatedNormal;
    plan.b = std::sqrt(scale) / kTruncatedNormalStddev;
  }
  return plan;
}

/// A splat tensor of `type` holding `value` (integers truncated, i1 != 0).
Attribute splat(RankedTensorType type, double value) {
  Type elt = type.getElementType();
  if (auto ft = dyn_cast<FloatType>(elt))
    return SplatElementsAttr::get(type, FloatAttr::get(ft, value));
  if (elt.isInteger(1))
    return SplatElementsAttr::get(
        type, BoolAttr::get(type.getContext(), value != 0.0));
  return SplatElementsAttr::get(
      type, IntegerAttr::get(elt, static_cast<int64_t>(value)));
}

/// tf.keras.initializers.Orthogonal for an f32 `type` (rank >= 2): with
/// rows = prod(shape[:-1]) and cols = shape[-1], a standard normal
/// [max, min] matrix A; its QR factorization with diag(R) > 0, as TF makes
/// it, is Gram-Schmidt's Q; Q, or Q transposed when rows < cols, reshaped
/// to `type`, times `gain`. Gram-Schmidt is one est.scan over A's columns,
/// each orthogonalized twice against the rows of Q built so far (zeros
/// before they are set; "twice is enough" keeps it orthogonal in f32).
Value orthogonal(OpBuilder &b, Location loc, RankedTensorType type,
                 Value counter, IntegerAttr seed, double gain) {
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  int64_t cols = shape.back();
  int64_t m = std::max(rows, cols), n = std::min(rows, cols);
  Type f32 = b.getF32Type();
  auto matrix = [&](int64_t r, int64_t c) {
    return RankedTensorType::get({r, c}, f32);
  };
  Value normal = est::RandomNormalOp::create(
      b, loc, matrix(m, n), counter, b.getDenseI64ArrayAttr({m, n}), TypeAttr(),
      seed, b.getF64FloatAttr(0.0), b.getF64FloatAttr(1.0));
  // Column j of A is row j of A^T: the scan's sequence.
  Value columns =
      est::TransposeOp::create(b, loc, normal, b.getDenseI64ArrayAttr({1, 0}));
  SmallVector<Attribute> eye;
  for (int64_t i = 0; i < n * n; ++i)
    eye.push_back(b.getF32FloatAttr(i % (n + 1) == 0 ? 1.0f : 0.0f));
  Value identity = est::ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(matrix(n, n), eye)));
  Value zeros = est::ConstantOp::create(
      b, loc, cast<ElementsAttr>(splat(matrix(n, m), 0.0)));
  auto scan =
      est::ScanOp::create(b, loc, TypeRange{matrix(n, m)}, ValueRange{zeros},
                          ValueRange{columns, identity}, false);
  Block *body = new Block();
  scan.getBody().push_back(body);
  Value q = body->addArgument(matrix(n, m), loc);
  Value column = body->addArgument(RankedTensorType::get({m}, f32), loc);
  Value unit = body->addArgument(RankedTensorType::get({n}, f32), loc);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    auto reshape = [&](Value x, ArrayRef<int64_t> to) -> Value {
      return est::ReshapeOp::create(b, loc, x, b.getDenseI64ArrayAttr(to));
    };
    // v - Q^T (Q v): v without its components along Q's rows.
    auto project = [&](Value v) -> Value {
      Value coefficients = est::MatmulOp::create(b, loc, q, v, false, false);
      Value along = est::MatmulOp::create(b, loc, q, coefficients, true, false);
      return est::SubOp::create(b, loc, v, along);
    };
    Value v = project(project(reshape(column, {m, 1})));
    Value norm2 = est::ReduceSumOp::create(
        b, loc, est::MulOp::create(b, loc, v, v), DenseI64ArrayAttr(), false);
    Value normalized =
        est::MulOp::create(b, loc, v, est::RsqrtOp::create(b, loc, norm2));
    Value row =
        est::MatmulOp::create(b, loc, reshape(unit, {n, 1}),
                              reshape(normalized, {1, m}), false, false);
    est::YieldOp::create(b, loc,
                         ValueRange{est::AddOp::create(b, loc, q, row)});
  }
  Value result = scan.getResult(0); // [n, m], orthonormal rows
  if (rows >= cols)
    result = est::TransposeOp::create(b, loc, result,
                                      b.getDenseI64ArrayAttr({1, 0}));
  result =
      est::ReshapeOp::create(b, loc, result, b.getDenseI64ArrayAttr(shape));
  if (gain != 1.0)
    result = est::MulOp::create(
        b, loc, result,
        est::ConstantOp::create(
            b, loc,
            cast<ElementsAttr>(splat(RankedTensorType::get({}, f32), gain))));
  return result;
}

/// Emits the ops computing `plan` for `var` and the assignment.
void emitInitializer(OpBuilder &b, est::VariableOp var, const InitPlan &plan,
                     Value &counter) {
  Location loc = var.getLoc();
  auto type = cast<RankedTensorType>(var.getType());
  Value value;
  if (plan.kind == InitPlan::Constant && !plan.values.empty()) {
    Type elt = type.getElementType();
    SmallVector<Attribute> elements;
    for (double v : plan.values)
      elements.push_back(
          isa<FloatType>(elt) ? Attribute(FloatAttr::get(elt, v))
          : elt.isInteger(1)
              ? Attribute(BoolAttr::get(b.getContext(), v != 0.0))
              : Attribute(IntegerAttr::get(elt, int64_t(v))));
    value = est::ConstantOp::create(
        b, loc, type,
        cast<ElementsAttr>(DenseElementsAttr::get(type, elements)));
  } else if (plan.kind == InitPlan::Constant) {
    value = est::ConstantOp::create(b, loc, type,
                                    cast<ElementsAttr>(splat(type, plan.a)));
  } else {
    if (!counter)
      counter = est::ConstantOp::create(
          b, loc,
          cast<ElementsAttr>(
              splat(RankedTensorType::get({}, b.getI64Type()), 0.0)));
    DenseI64ArrayAttr shape = b.getDenseI64ArrayAttr(type.getShape());
    TypeAttr dtype = type.getElementType().isF32()
                         ? TypeAttr()
                         : TypeAttr::get(type.getElementType());
    IntegerAttr seed = b.getI64IntegerAttr(plan.seed);
    FloatAttr a = b.getF64FloatAttr(plan.a), c = b.getF64FloatAttr(plan.b);
    if (plan.kind == InitPlan::Orthogonal) {
      value = orthogonal(b, loc, type, counter, seed, plan.a);
      est::AssignVariableOp::create(
          b, loc, FlatSymbolRefAttr::get(var.getSymNameAttr()), value);
      return;
    }
    switch (plan.kind) {
    case InitPlan::Uniform:
      value = est::RandomUniformOp::create(b, loc, type, counter, shape, dtype,
                                           seed, a, c);
      break;
    case InitPlan::Normal:
      value = est::RandomNormalOp::create(b, loc, type, counter, shape, dtype,
                                          seed, a, c);
      break;
    default:
      value = est::TruncatedNormalOp::create(b, loc, type, counter, shape,
                                             dtype, seed, a, c);
      break;
    }
  }
  est::AssignVariableOp::create(
      b, loc, FlatSymbolRefAttr::get(var.getSymNameAttr()), value);
}

struct CreateInitFunctionPass
    : public est::impl::EstCreateInitFunctionBase<CreateInitFunctionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (auto old = module.lookupSymbol<func::FuncOp>("init"))
      old.erase();

    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto init = func::FuncOp::create(b, module.getLoc(), "init",
                                     b.getFunctionType({}, {}));
    b.setInsertionPointToStart(init.addEntryBlock());
    Value counter;
    bool ok = true;
    for (auto var : module.getOps<est::VariableOp>()) {
      FailureOr<InitPlan> plan = planInitializer(var);
      if (failed(plan)) {
        ok = false;
        continue;
      }
      emitInitializer(b, var, *plan, counter);
    }
    func::ReturnOp::create(b, module.getLoc());
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
