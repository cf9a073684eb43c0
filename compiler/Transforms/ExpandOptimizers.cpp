//===- ExpandOptimizers.cpp - est-expand-optimizers ---------------------===//
//
// Expands each `est.apply_gradients` into est ops: reads of the variables
// and their slot variables, the TF 1.x update rule, `est.assign_variable`s,
// and `global_step += 1` (the variable is created when missing). Every new
// value is computed before the first assignment, so no op reads a variable
// after it was written in the same step.
//
// A function with several apply_gradients (a train_op grouping two
// optimizers' minimizes over disjoint var_lists, as DNNLinearCombined's)
// steps global_step once: every apply_gradients of the function uses the
// value read before the first one (adam's t), and only the first that does
// not have `keep_global_step` (train::Optimizer::apply_gradients without a
// global_step) increments it, as TF's canned estimators group their
// optimizers' updates and then increment global_step once.
//
// The learning rate is the `learning_rate` operand when present (a scalar
// computed in the step, e.g. a schedule of global_step, cast to each
// variable's element type), else the hyperparameter. With the hyperparameter
// `clip_gradients_by_global_norm` = c, every gradient is first multiplied by
// c / max(global_norm, c), global_norm = sqrt(sum of all squared gradient
// elements) (tf.clip_by_global_norm). With `clip_gradients_by_norm` = c
// (Keras' clipnorm), each gradient g becomes g * c / max(norm(g), c) on its
// own (tf.clip_by_norm; a sparse gradient's norm is that of its rows with
// duplicate ids summed, as TF's embedding lookups' gradients hold one row
// per id).
//
// Sparse gradients (rows at indices, from gathers of a variable on axis 0),
// TF 1.x's _apply_sparse: sgd scatters -lr rows into the variable
// (duplicates add up). momentum, adagrad, rmsprop and ftrl first sum
// duplicate rows (a fused compare-and-sum over the step's ids, TF's
// _deduplicate_indexed_slices), then apply their dense rule to the gathered
// rows of the variable and its slots and scatter the new rows back
// ("update"; duplicates write identical rows): the other rows and their
// slots are untouched, and a step costs O(rows touched) since scatters of a
// variable's own value bufferize in place. adam scatters the rows into a
// dense zero gradient and applies its dense rule, as TF 1.x's Adam does
// (every row's m and v decay, every row moves).
//
// Slot variables are module variables named like TF's (non-trainable),
// appended after the existing variables in creation order:
//   momentum  <var>/Momentum                       zeros
//   adagrad   <var>/Adagrad                        initial_accumulator_value
//   adam      <var>/Adam (m), <var>/Adam_1 (v)     zeros
//   rmsprop   <var>/RMSProp (ms, ones), [<var>/RMSProp_1 (mg) if centered],
//             then the momentum slot (zeros)
//   ftrl      <var>/Ftrl (accum, initial_accumulator_value),
//             <var>/Ftrl_1 (linear, zeros)
//   adadelta  <var>/Adadelta (accum), <var>/Adadelta_1 (accum_update)
//   proximal_adagrad  <var>/ProximalAdagrad (initial_accumulator_value)
//   adagrad_da  <var>/AdagradDA (gradient_accumulator, zeros),
//             <var>/AdagradDA_1 (squared, initial value)
//   adamw, adamax, nadam, lazy_adam  <var>/<Name> (m), <var>/<Name>_1
//             (v, or adamax's u), zeros; nadam's scalar <var>/Nadam_2 (the
//             momentum schedule's product, ones)
// With the string hyperparameter slot_scope (train::Optimizer::
// with_keras_legacy_names: TF 2.15's canned estimators' Keras legacy
// optimizers), a slot is `<scope>/<var>/<Keras's name>` instead (Adagrad,
// Ftrl: accumulator; Ftrl_1: linear; Adam, Adam_1: m, v; Momentum:
// momentum; RMSProp: rms, then mg when centered, then momentum), and the
// optimizer's hyperparameters are f32 scalar variables `<scope>/<name>`
// (decay, learning_rate unless it is an operand, and the class's own: Ftrl's
// beta, l1/l2_regularization_strength, learning_rate_power; Adam's beta_1,
// beta_2; RMSprop's rho, momentum; SGD's momentum) holding the compiled-in
// values; with own_iterations, `<scope>/iter` (int64) counts the steps.
// (docs/autodiff.md has the rules of these: training_ops.cc's kernels for
// the TF 1.x optimizers, Keras 2.15's update steps for adamw, adamax and
// nadam, tfa's LazyAdam.)
//
// Update rules (g the gradient, lr the learning rate), computed as TF 1.x's
// kernels compute them (training_ops.cc: in the variable's element type T,
// in this order):
//   sgd       var -= lr g
//   momentum  a = m a + g; var -= lr a   (nesterov: var -= g lr + a m lr)
//   adagrad   acc += g^2; var -= lr g / sqrt(acc)
//   adam      lr_t = lr sqrt(1 - beta2_power) / (1 - beta1_power);
//             m += (g - m) (1-b1); v += (g^2 - v) (1-b2);
//             var -= lr_t m / (sqrt(v) + eps); then beta1_power *= b1,
//             beta2_power *= b2 (TF 1.x's non-slot variables, created at
//             b1 and b2: beta1_power, or beta1_power_<n> for the n-th Adam
//             of the function). With a slot_scope (Keras' legacy Adam)
//             there are none: beta^t with t = global_step + 1 (before the
//             increment).
//   rmsprop   ms += (g^2 - ms) (1-d);  [mg += (g - mg) (1-d);
//             denom = ms - mg^2 when centered, else ms]
//             mom = momentum mom + lr g / sqrt(denom + eps); var -= mom
//   ftrl      acc' = acc + g^2; p = -lr_power
//             linear += g - (acc'^p - acc^p) / lr * var
//             quad = acc'^p / lr + 2 l2
//             var = |linear| > l1 ? (sign(linear) l1 - linear) / quad : 0
//
// Hyperparameters are operands as TF 1.x's optimizers make them: the Python
// float becomes a float32 tensor, cast to T. Constants derived from them are
// computed in T as the kernels do: 1 - beta2 for beta2 = 0.999 is
// float(1) - float(0.999) = 0.00099998713, not the float rounding of the
// double 1 - 0.999 (0.0010000000475).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstBuilder.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Regex.h"

#include <string>
#include <tuple>
#include <utility>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTEXPANDOPTIMIZERS
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

/// Builds at `b` (set before `apply`): the update math in EstBuilder's ops.
class Expander : EstBuilder {
public:
  /// `step`: global_step's value read for an earlier apply_gradients of the
  /// same function, or null. `increment`: this expansion increments
  /// global_step (the function's first that does not keep it).
  Expander(ApplyGradientsOp apply, ModuleOp module, OpBuilder &b, Value step,
           bool increment)
      : EstBuilder(b, apply.getLoc()), apply(apply), module(module),
        sharedStep(step), increment(increment) {}

  LogicalResult run();
  /// The new value of each variable this expansion assigned.
  ArrayRef<std::pair<std::string, Value>> assigned() const {
    return assignments;
  }
  /// The global_step value this expansion used.
  Value step() const { return usedStep; }
  /// The number of TF 1.x Adam expansions before this one in its function.
  void setAdamIndex(int index) { adamIndex = index; }
  /// Whether this expansion made TF 1.x Adam's beta powers.
  bool madeBetaPowers() const { return !powerNames.empty(); }

private:
  double hp(StringRef name, double dflt) {
    Attribute a = apply.getHyperparameters().get(name);
    if (auto f = dyn_cast_or_null<FloatAttr>(a))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_or_null<IntegerAttr>(a))
      return static_cast<double>(i.getInt());
    return dflt;
  }
  /// Hyperparameter `name` as an operand of `like`'s element type T, the
  /// way TF 1.x's optimizers pass it to their kernels: the Python float
  /// becomes a float32 tensor (_prepare), then is cast to T.
  APFloat tfValue(Value like, double value) {
    Type elt = cast<RankedTensorType>(like.getType()).getElementType();
    APFloat v(value);
    bool lost = false;
    v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    if (auto f = dyn_cast<FloatType>(elt))
      v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return v;
  }
  Value hpScalar(Value like, StringRef name, double dflt) {
    return scalar(like, tfValue(like, hp(name, dflt)).convertToDouble());
  }
  /// `T(1) - hyperparameter`, computed in T as TF's kernels compute
  /// `T(1) - beta()`.
  Value oneMinusHp(Value like, StringRef name, double dflt) {
    APFloat x = tfValue(like, hp(name, dflt));
    APFloat one(x.getSemantics(), 1);
    one.subtract(x, APFloat::rmNearestTiesToEven);
    return scalar(like, one.convertToDouble());
  }
  /// `1 - hyperparameter` computed on the Python float, then made a float32
  /// tensor (Keras' optimizers write `(1 - self.beta_1)`).
  Value oneMinusHpDouble(Value like, StringRef name, double dflt) {
    return scalar(like, tfValue(like, 1.0 - hp(name, dflt)).convertToDouble());
  }
  /// A hyperparameter as a compile-time number, rounded as TF passes it.
  double hpValue(Value like, StringRef name, double dflt) {
    return tfValue(like, hp(name, dflt)).convertToDouble();
  }
  /// Whether `var` matches a regular expression of the string list
  /// hyperparameter `name` (Keras' exclude_from_weight_decay: re.search).
  bool matchesAny(StringRef name, StringRef var) {
    auto list =
        dyn_cast_or_null<ArrayAttr>(apply.getHyperparameters().get(name));
    if (!list)
      return false;
    for (Attribute a : list)
      if (auto pattern = dyn_cast<StringAttr>(a))
        if (llvm::Regex(pattern.getValue()).match(var))
          return true;
    return false;
  }
  bool flag(StringRef name) {
    auto a = dyn_cast_or_null<BoolAttr>(apply.getHyperparameters().get(name));
    return a && a.getValue();
  }

  /// The string hyperparameter `slot_scope` ("training/Ftrl": the Keras
  /// legacy optimizer of a TF 2.15 canned estimator), or empty.
  StringRef slotScope() {
    auto a = dyn_cast_or_null<StringAttr>(
        apply.getHyperparameters().get("slot_scope"));
    return a ? a.getValue() : StringRef();
  }
  /// The variable of `var`'s slot `slot` (TF 1.x's slot name, "Ftrl_1"):
  /// `<var>/<slot>`, or with a slot_scope `<scope>/<var>/<Keras's slot
  /// name>` ("training/Ftrl/<var>/linear"), as TF 2.15's canned estimators
  /// name their optimizers' slots.
  std::string slotVar(StringRef var, StringRef slot) {
    StringRef scope = slotScope();
    if (scope.empty())
      return (var + "/" + slot).str();
    StringRef keras =
        llvm::StringSwitch<StringRef>(slot)
            .Cases({"Adagrad", "Ftrl"}, "accumulator")
            .Case("Ftrl_1", "linear")
            .Case("Adam", "m")
            .Case("Adam_1", "v")
            .Case("Momentum", "momentum")
            .Case("RMSProp", "rms")
            .Case("RMSProp_1", flag("centered") ? "mg" : "momentum")
            .Case("RMSProp_2", "momentum")
            .Default(slot);
    return (scope + "/" + var + "/" + keras).str();
  }
  /// TF 1.x's AdamOptimizer's non-slot variables beta1_power and
  /// beta2_power (`_<n>` for the n-th Adam of the function, as TF's
  /// unique names; created at beta1 / beta2 in the first variable's element
  /// type) read once per expansion, as `elt`; finish() multiplies them by
  /// the betas after the update (TF's _finish).
  std::pair<Value, Value> betaPowers(Type elt);
  /// Schedules the updates that follow every variable's (the beta powers).
  void finish();

  /// With a slot_scope: the Keras legacy optimizer's hyperparameter
  /// variables `<scope>/<name>` (f32 scalars holding the values this
  /// expansion compiles in; TF's restore of them does not change the
  /// compiled rule), and with the flag `own_iterations` its `<scope>/iter`
  /// (int64, +1 per step: the second optimizer of a wide & deep model,
  /// whose iterations are not global_step).
  void createScopeVariables();

  Value read(StringRef name, Type type) {
    return ReadVariableOp::create(b, loc, type,
                                  FlatSymbolRefAttr::get(b.getContext(), name));
  }
  /// Schedules `name = value` after every new value is computed. In a
  /// row-wise update `value` holds the new rows, scattered into the
  /// variable's current value.
  void assign(const Twine &name, Value value) {
    std::string symbol = name.str();
    if (rowIndices) {
      auto type = module.lookupSymbol<VariableOp>(symbol).getType();
      value = scatter(read(symbol, type), rowIndices, value, "update");
    }
    // Accumulating gradients: the update happens on every N-th step only.
    if (applyNow && symbol != "global_step") {
      auto type = module.lookupSymbol<VariableOp>(symbol).getType();
      value = select(applyNow, value, read(symbol, type));
    }
    assignments.push_back({symbol, value});
  }

  /// The learning rate as a scalar of `like`'s element type: the
  /// `learning_rate` operand (cast when needed), else the hyperparameter.
  Value learningRate(Value like) {
    Value lr = apply.getLearningRate();
    if (!lr)
      return hpScalar(like, "learning_rate", 0.001);
    Type elt = cast<RankedTensorType>(like.getType()).getElementType();
    if (cast<RankedTensorType>(lr.getType()).getElementType() == elt)
      return lr;
    return castTo(lr, elt);
  }

  /// The slot variable `<var>/<slot>` of type `type` (created when missing)
  /// and its value; in a row-wise update, its gathered rows.
  Value slot(StringRef var, StringRef slotName, RankedTensorType type,
             double init) {
    std::string name = slotVar(var, slotName);
    if (!module.lookupSymbol(name)) {
      OpBuilder mb(module.getContext());
      Operation *varOp = module.lookupSymbol(var);
      setInsertionPointAfterVariables(mb);
      MLIRContext *ctx = module.getContext();
      InitializerAttr initializer =
          init == 0.0 ? InitializerAttr::get(ctx, "zeros", DictionaryAttr())
          : init == 1.0
              ? InitializerAttr::get(ctx, "ones", DictionaryAttr())
              : InitializerAttr::get(ctx, "constant",
                                     mb.getDictionaryAttr(mb.getNamedAttr(
                                         "value", mb.getF64FloatAttr(init))));
      auto op = VariableOp::create(mb, varOp->getLoc(), name, type,
                                   /*trainable=*/false, initializer);
      (void)op;
    }
    Value value = read(name, type);
    return rowIndices ? gather(value, rowIndices) : value;
  }

  /// The scalar slot variable `<var>/<slot>` (created when missing).
  Value scalarSlot(StringRef var, StringRef slotName, Type elt, double init) {
    auto type = RankedTensorType::get({}, elt);
    std::string name = slotVar(var, slotName);
    if (!module.lookupSymbol(name)) {
      OpBuilder mb(module.getContext());
      setInsertionPointAfterVariables(mb);
      MLIRContext *ctx = module.getContext();
      auto op = VariableOp::create(
          mb, module.lookupSymbol(var)->getLoc(), name, type,
          /*trainable=*/false,
          InitializerAttr::get(ctx, "constant",
                               mb.getDictionaryAttr(mb.getNamedAttr(
                                   "value", mb.getF64FloatAttr(init)))));
      (void)op;
    }
    return read(name, type);
  }
  /// Assigns a variable that is never row-wise (a scalar slot).
  void assignWhole(const Twine &name, Value value) {
    assignments.push_back({name.str(), value});
  }
  /// sign(x) * magnitude for magnitude >= 0 that is 0 where x is 0 (TF's
  /// proximal steps).
  Value withSignOf(Value x, Value magnitude) {
    return select(less(x, scalar(x, 0.0)), neg(magnitude), magnitude);
  }
  Value max(Value x, Value y) { return MaximumOp::create(b, loc, x, y); }

  /// `global_step`'s current value (created when missing).
  Value globalStep() {
    auto type = RankedTensorType::get({}, b.getI64Type());
    if (!module.lookupSymbol("global_step")) {
      OpBuilder mb(module.getContext());
      setInsertionPointAfterVariables(mb);
      auto op = VariableOp::create(
          mb, loc, "global_step", type, /*trainable=*/false,
          InitializerAttr::get(module.getContext(), "zeros", DictionaryAttr()));
      (void)op;
    }
    return read("global_step", type);
  }

  /// The update rule of variable `var` (of type `type`): `v` its value and
  /// `g` its gradient, or in a row-wise update (rowIndices set) its gathered
  /// rows and theirs.
  LogicalResult update(StringRef var, RankedTensorType type, Value v, Value g,
                       Value step);
  LogicalResult sparseUpdate(StringRef var, Value v, Value indices, Value rows,
                             Value step);
  Value scatter(Value ref, Value indices, Value updates, StringRef mode) {
    return ScatterOp::create(b, loc, ref, indices, updates,
                             b.getStringAttr(mode));
  }
  Value sumDuplicates(Value indices, Value rows);
  SmallVector<Value> clipByGlobalNorm(ArrayRef<Value> grads, double clipNorm);
  /// tf.clip_by_norm of `g` whose squared norm is `sumSq` (f32 scalar).
  Value clipByNorm(Value g, Value sumSq, double clipNorm);
  /// The f32 sum of the squares of `g`'s elements.
  Value sumSquares(Value g);

  /// New variables go after the existing ones (in creation order), so the
  /// indices of the model's variables stay as they were.
  void setInsertionPointAfterVariables(OpBuilder &mb) {
    VariableOp last;
    for (auto var : module.getOps<VariableOp>())
      last = var;
    if (last)
      mb.setInsertionPointAfter(last);
    else
      mb.setInsertionPointToStart(module.getBody());
  }

  ApplyGradientsOp apply;
  ModuleOp module;
  Value sharedStep, usedStep;
  bool increment;
  /// While a sparse update applies a dense rule to rows: their indices.
  Value rowIndices;
  /// With gradient_accumulation_steps N: whether this step applies (an i1
  /// scalar), else null.
  Value applyNow;
  SmallVector<std::pair<std::string, Value>> assignments;
  int adamIndex = 0;
  /// beta1_power and beta2_power: their names and values as read.
  SmallVector<std::string, 2> powerNames;
  SmallVector<Value, 2> powers;
};

std::pair<Value, Value> Expander::betaPowers(Type elt) {
  if (powerNames.empty()) {
    std::string suffix = adamIndex ? "_" + std::to_string(adamIndex) : "";
    MLIRContext *ctx = module.getContext();
    OpBuilder mb(ctx);
    for (auto [base, beta] :
         {std::pair<const char *, double>{"beta1_power", hp("beta1", 0.9)},
          {"beta2_power", hp("beta2", 0.999)}}) {
      std::string name = base + suffix;
      auto type = RankedTensorType::get({}, elt);
      if (auto existing = module.lookupSymbol<VariableOp>(name)) {
        type = cast<RankedTensorType>(existing.getType());
      } else {
        setInsertionPointAfterVariables(mb);
        VariableOp::create(
            mb, loc, name, type, /*trainable=*/false,
            InitializerAttr::get(ctx, "constant",
                                 mb.getDictionaryAttr(mb.getNamedAttr(
                                     "value", mb.getF64FloatAttr(beta)))));
      }
      powerNames.push_back(name);
      powers.push_back(read(name, type));
    }
  }
  auto as = [&](Value p) {
    return cast<RankedTensorType>(p.getType()).getElementType() == elt
               ? p
               : castTo(p, elt);
  };
  return {as(powers[0]), as(powers[1])};
}

void Expander::finish() {
  if (powerNames.empty())
    return;
  // _finish: beta1_power * beta1 (the Python float as a float32 tensor, in
  // the power's type).
  assign(powerNames[0], mul(powers[0], hpScalar(powers[0], "beta1", 0.9)));
  assign(powerNames[1], mul(powers[1], hpScalar(powers[1], "beta2", 0.999)));
}

LogicalResult Expander::update(StringRef var, RankedTensorType type, Value v,
                               Value g, Value step) {
  StringRef kind = apply.getOptimizer();
  Value lr = learningRate(v);
  if (kind == "sgd") {
    assign(var, sub(v, mul(lr, g)));
  } else if (kind == "momentum") {
    Value m = hpScalar(v, "momentum", 0.0);
    Value a = add(mul(m, slot(var, "Momentum", type, 0.0)), g);
    assign(slotVar(var, "Momentum"), a);
    if (flag("use_nesterov"))
      assign(var, sub(v, add(mul(g, lr), mul(mul(a, m), lr))));
    else
      assign(var, sub(v, mul(lr, a)));
  } else if (kind == "keras_sgd") {
    // Keras 2.15's SGD (tf.keras.optimizers.SGD, and its legacy twin's
    // ResourceApplyKerasMomentum): m = m momentum - g lr; variable += m
    // (nesterov: += m momentum - g lr). Unlike TF 1.x's momentum, lr
    // enters the accumulator, which a schedule makes differ.
    double momentum = hp("momentum", 0.0);
    Value step = neg(mul(g, lr));
    if (momentum == 0.0) {
      assign(var, add(v, step));
    } else {
      Value mom = hpScalar(v, "momentum", 0.0);
      Value m = add(step, mul(slot(var, "momentum", type, 0.0), mom));
      assign(slotVar(var, "momentum"), m);
      if (flag("nesterov"))
        assign(var, add(v, add(step, mul(m, mom))));
      else
        assign(var, add(v, m));
    }
  } else if (kind == "keras_rmsprop") {
    // Keras 2.15's RMSprop: velocity (from zeros) = rho velocity + (1 - rho)
    // g^2; centered: average_grad likewise, denominator = velocity -
    // average_grad^2 + epsilon (else velocity + epsilon); increment = lr g
    // rsqrt(denominator); momentum > 0: m = momentum m + increment,
    // variable -= m; else variable -= increment.
    Value rho = hpScalar(v, "rho", 0.9);
    Value c = oneMinusHpDouble(v, "rho", 0.9);
    Value vel =
        add(mul(rho, slot(var, "velocity", type, 0.0)), mul(c, square(g)));
    assign(slotVar(var, "velocity"), vel);
    Value denom = vel;
    if (flag("centered")) {
      Value ag =
          add(mul(rho, slot(var, "average_gradient", type, 0.0)), mul(c, g));
      assign(slotVar(var, "average_gradient"), ag);
      denom = sub(vel, square(ag));
    }
    denom = add(denom, hpScalar(v, "epsilon", 1e-7));
    Value increment = div(mul(lr, g), sqrt(denom));
    if (hp("momentum", 0.0) > 0.0) {
      Value m = add(
          mul(hpScalar(v, "momentum", 0.0), slot(var, "momentum", type, 0.0)),
          increment);
      assign(slotVar(var, "momentum"), m);
      assign(var, sub(v, m));
    } else {
      assign(var, sub(v, increment));
    }
  } else if (kind == "keras_adagrad") {
    // Keras 2.15's Adagrad: epsilon inside the square root.
    Value acc = add(
        slot(var, "accumulator", type, hp("initial_accumulator_value", 0.1)),
        square(g));
    assign(slotVar(var, "accumulator"), acc);
    assign(var, sub(v, div(mul(lr, g),
                           sqrt(add(acc, hpScalar(v, "epsilon", 1e-7))))));
  } else if (kind == "keras_adam") {
    // Keras 2.15's Adam (amsgrad: the running maximum of v in
    // <var>/velocity_hat divides instead of v).
    Type elt = type.getElementType();
    Value t = castTo(add(step, scalar(step, 1)), elt);
    Value one = scalar(v, 1.0);
    Value alpha =
        div(mul(lr, sqrt(sub(one, pow(hpScalar(v, "beta_2", 0.999), t)))),
            sub(one, pow(hpScalar(v, "beta_1", 0.9), t)));
    Value m0 = slot(var, "m", type, 0.0);
    Value v0 = slot(var, "v", type, 0.0);
    Value m = add(m0, mul(sub(g, m0), oneMinusHpDouble(v, "beta_1", 0.9)));
    Value s =
        add(v0, mul(sub(square(g), v0), oneMinusHpDouble(v, "beta_2", 0.999)));
    assign(slotVar(var, "m"), m);
    assign(slotVar(var, "v"), s);
    if (flag("amsgrad")) {
      s = max(slot(var, "velocity_hat", type, 0.0), s);
      assign(slotVar(var, "velocity_hat"), s);
    }
    assign(var, sub(v, div(mul(m, alpha),
                           add(sqrt(s), hpScalar(v, "epsilon", 1e-7)))));
  } else if (kind == "adagrad") {
    Value acc =
        add(slot(var, "Adagrad", type, hp("initial_accumulator_value", 0.1)),
            square(g));
    assign(slotVar(var, "Adagrad"), acc);
    assign(var, sub(v, div(mul(lr, g), sqrt(acc))));
  } else if (kind == "adam") {
    Value b1 = hpScalar(v, "beta1", 0.9), b2 = hpScalar(v, "beta2", 0.999);
    Value one = scalar(v, 1.0);
    Value p1, p2;
    if (slotScope().empty()) {
      // TF 1.x's AdamOptimizer: its beta1_power / beta2_power variables.
      std::tie(p1, p2) = betaPowers(type.getElementType());
    } else {
      // Keras' legacy Adam: beta^t, t = iterations + 1.
      Value t = castTo(add(step, scalar(step, 1)), type.getElementType());
      p1 = pow(b1, t);
      p2 = pow(b2, t);
    }
    Value lrT = div(mul(lr, sqrt(sub(one, p2))), sub(one, p1));
    Value m0 = slot(var, "Adam", type, 0.0);
    Value m = add(m0, mul(sub(g, m0), oneMinusHp(v, "beta1", 0.9)));
    Value v0 = slot(var, "Adam_1", type, 0.0);
    Value s = add(v0, mul(sub(square(g), v0), oneMinusHp(v, "beta2", 0.999)));
    assign(slotVar(var, "Adam"), m);
    assign(slotVar(var, "Adam_1"), s);
    assign(var, sub(v, div(mul(m, lrT),
                           add(sqrt(s), hpScalar(v, "epsilon", 1e-8)))));
  } else if (kind == "rmsprop") {
    Value c = oneMinusHp(v, "decay", 0.9);
    bool centered = flag("centered");
    Value ms0 = slot(var, "RMSProp", type, 1.0);
    Value ms = add(ms0, mul(sub(square(g), ms0), c));
    assign(slotVar(var, "RMSProp"), ms);
    Value denom = ms;
    std::string momName = "RMSProp_1";
    if (centered) {
      Value mg0 = slot(var, "RMSProp_1", type, 0.0);
      Value mg = add(mg0, mul(sub(g, mg0), c));
      assign(slotVar(var, "RMSProp_1"), mg);
      denom = sub(ms, square(mg));
      momName = "RMSProp_2";
    }
    Value mom =
        add(mul(hpScalar(v, "momentum", 0.0), slot(var, momName, type, 0.0)),
            div(mul(lr, g), sqrt(add(denom, hpScalar(v, "epsilon", 1e-10)))));
    assign(slotVar(var, momName), mom);
    assign(var, sub(v, mom));
  } else if (kind == "ftrl") {
    double init = hp("initial_accumulator_value", 0.1);
    Value p = scalar(
        v, -tfValue(v, hp("learning_rate_power", -0.5)).convertToDouble());
    Value l1 = hpScalar(v, "l1_regularization_strength", 0.0);
    // beta (TF 2's FtrlOptimizer): l2 + beta / (2 lr), in Python floats for
    // a number learning rate, else in T.
    double beta = hp("beta", 0.0);
    Value l2;
    if (beta == 0.0)
      l2 = hpScalar(v, "l2_regularization_strength", 0.0);
    else if (!apply.getLearningRate())
      l2 = scalar(v, tfValue(v, hp("l2_regularization_strength", 0.0) +
                                    beta / (2.0 * hp("learning_rate", 0.001)))
                         .convertToDouble());
    else
      l2 = add(hpScalar(v, "l2_regularization_strength", 0.0),
               div(hpScalar(v, "beta", 0.0), mul(scalar(v, 2.0), lr)));
    Value acc = slot(var, "Ftrl", type, init);
    Value linear = slot(var, "Ftrl_1", type, 0.0);
    Value newAcc = add(acc, square(g));
    Value newAccP = pow(newAcc, p);
    // ApplyFtrlV2: the shrinkage enters the linear term only.
    Value gs = g;
    if (hp("l2_shrinkage_regularization_strength", 0.0) != 0.0)
      gs = add(g, mul(scalar(v, 2.0 * hpValue(v,
                                              "l2_shrinkage_regularization_"
                                              "strength",
                                              0.0)),
                      v));
    Value newLinear =
        add(linear, sub(gs, mul(div(sub(newAccP, pow(acc, p)), lr), v)));
    Value quad = add(div(newAccP, lr), mul(scalar(v, 2.0), l2));
    Value positive = greater(newLinear, scalar(v, 0.0));
    Value signL1 = select(positive, l1, neg(l1));
    Value shrunk = div(sub(signL1, newLinear), quad);
    Value big = greater(abs(newLinear), l1);
    assign(slotVar(var, "Ftrl"), newAcc);
    assign(slotVar(var, "Ftrl_1"), newLinear);
    assign(var, select(big, shrunk, scalar(v, 0.0)));
  } else if (kind == "adadelta") {
    // ApplyAdadelta.
    Value rho = hpScalar(v, "rho", 0.95), c = oneMinusHp(v, "rho", 0.95);
    Value eps = hpScalar(v, "epsilon", 1e-8);
    Value accum =
        add(mul(slot(var, "Adadelta", type, 0.0), rho), mul(square(g), c));
    Value accumUpdate = slot(var, "Adadelta_1", type, 0.0);
    Value delta = mul(mul(sqrt(add(accumUpdate, eps)),
                          div(scalar(v, 1.0), sqrt(add(accum, eps)))),
                      g);
    assign(slotVar(var, "Adadelta"), accum);
    assign(slotVar(var, "Adadelta_1"),
           add(mul(accumUpdate, rho), mul(square(delta), c)));
    assign(var, sub(v, mul(delta, lr)));
  } else if (kind == "proximal_gradient_descent") {
    // ApplyProximalGradientDescent.
    Value prox = sub(v, mul(g, lr));
    Value denom = add(scalar(v, 1.0),
                      mul(hpScalar(v, "l2_regularization_strength", 0.0), lr));
    if (hp("l1_regularization_strength", 0.0) > 0.0) {
      Value shrink = mul(lr, hpScalar(v, "l1_regularization_strength", 0.0));
      Value magnitude = max(sub(abs(prox), shrink), scalar(v, 0.0));
      assign(var, div(withSignOf(prox, magnitude), denom));
    } else {
      assign(var, div(prox, denom));
    }
  } else if (kind == "proximal_adagrad") {
    // ApplyProximalAdagrad.
    Value acc = add(slot(var, "ProximalAdagrad", type,
                         hp("initial_accumulator_value", 0.1)),
                    square(g));
    Value rate = mul(lr, div(scalar(v, 1.0), sqrt(acc)));
    Value prox = sub(v, mul(g, rate));
    Value denom =
        add(scalar(v, 1.0),
            mul(hpScalar(v, "l2_regularization_strength", 0.0), rate));
    assign(slotVar(var, "ProximalAdagrad"), acc);
    if (hp("l1_regularization_strength", 0.0) > 0.0) {
      Value shrink = mul(rate, hpScalar(v, "l1_regularization_strength", 0.0));
      Value magnitude = max(sub(abs(prox), shrink), scalar(v, 0.0));
      assign(var, div(withSignOf(prox, magnitude), denom));
    } else {
      assign(var, div(prox, denom));
    }
  } else if (kind == "adagrad_da") {
    // ApplyAdagradDA at global_step + 1 (TF's _global_step_on_worker).
    Value gAcc = add(slot(var, "AdagradDA", type, 0.0), g);
    Value ggAcc =
        add(slot(var, "AdagradDA_1", type,
                 hp("initial_gradient_squared_accumulator_value", 0.1)),
            square(g));
    Value t = castTo(add(step, scalar(step, 1)), type.getElementType());
    Value denom = add(mul(t, hpScalar(v, "l2_regularization_strength", 0.0)),
                      div(sqrt(ggAcc), lr));
    assign(slotVar(var, "AdagradDA"), gAcc);
    assign(slotVar(var, "AdagradDA_1"), ggAcc);
    if (hp("l1_regularization_strength", 0.0) > 0.0) {
      Value shrink = mul(t, hpScalar(v, "l1_regularization_strength", 0.0));
      Value magnitude = max(sub(abs(gAcc), shrink), scalar(v, 0.0));
      assign(var, div(neg(withSignOf(gAcc, magnitude)), denom));
    } else {
      assign(var, div(neg(gAcc), denom));
    }
  } else if (kind == "adamw" || kind == "adamax" || kind == "nadam") {
    // Keras 2.15's optimizers (tf.keras.optimizers.AdamW, Adamax, Nadam):
    // t = global_step + 1; `1 - beta` on the Python floats.
    Type elt = type.getElementType();
    Value t = castTo(add(step, scalar(step, 1)), elt);
    Value one = scalar(v, 1.0);
    Value b1 = hpScalar(v, "beta_1", 0.9);
    std::string slotName = kind == "adamw"    ? "AdamW"
                           : kind == "adamax" ? "Adamax"
                                              : "Nadam";
    Value m0 = slot(var, slotName, type, 0.0);
    Value v0 = slot(var, slotName + "_1", type, 0.0);
    if (kind == "adamw") {
      // The decay first (variable -= variable * weight_decay * lr), then
      // Adam's update of the decayed variable.
      if (!matchesAny("exclude_from_weight_decay", var))
        v = sub(v, mul(mul(v, hpScalar(v, "weight_decay", 0.004)), lr));
      Value alpha =
          div(mul(lr, sqrt(sub(one, pow(hpScalar(v, "beta_2", 0.999), t)))),
              sub(one, pow(b1, t)));
      Value m = add(m0, mul(sub(g, m0), oneMinusHpDouble(v, "beta_1", 0.9)));
      Value s = add(
          v0, mul(sub(square(g), v0), oneMinusHpDouble(v, "beta_2", 0.999)));
      assign(slotVar(var, slotName), m);
      assign(slotVar(var, slotName + "_1"), s);
      assign(var, sub(v, div(mul(m, alpha),
                             add(sqrt(s), hpScalar(v, "epsilon", 1e-7)))));
    } else if (kind == "adamax") {
      Value m = add(m0, mul(sub(g, m0), oneMinusHpDouble(v, "beta_1", 0.9)));
      Value u = max(mul(hpScalar(v, "beta_2", 0.999), v0), abs(g));
      assign(slotVar(var, slotName), m);
      assign(slotVar(var, slotName + "_1"), u);
      assign(var, sub(v, div(mul(lr, m),
                             mul(sub(one, pow(b1, t)),
                                 add(u, hpScalar(v, "epsilon", 1e-7))))));
    } else {
      // Nadam: the momentum schedule u_t = beta_1 (1 - 0.5 0.96^t), its
      // running product in the scalar slot <var>/Nadam_2 (Keras keeps one
      // _u_product per optimizer; here one per variable, all equal).
      Value tNext = castTo(add(step, scalar(step, 2)), elt);
      Value decay = scalar(v, 0.96), half = scalar(v, 0.5);
      Value uT = mul(b1, sub(one, mul(half, pow(decay, t))));
      Value uT1 = mul(b1, sub(one, mul(half, pow(decay, tNext))));
      Value uProduct = mul(scalarSlot(var, "Nadam_2", elt, 1.0), uT);
      Value uProduct1 = mul(uProduct, uT1);
      Value b2 = hpScalar(v, "beta_2", 0.999);
      Value m = add(m0, mul(sub(g, m0), sub(one, b1)));
      Value s = add(v0, mul(sub(square(g), v0), sub(one, b2)));
      Value mHat = add(div(mul(uT1, m), sub(one, uProduct1)),
                       div(mul(sub(one, uT), g), sub(one, uProduct)));
      Value vHat = div(s, sub(one, pow(b2, t)));
      assign(slotVar(var, slotName), m);
      assign(slotVar(var, slotName + "_1"), s);
      assignWhole(slotVar(var, "Nadam_2"), uProduct);
      assign(var, sub(v, div(mul(mHat, lr),
                             add(sqrt(vHat), hpScalar(v, "epsilon", 1e-7)))));
    }
  } else if (kind == "lazy_adam") {
    // tfa.optimizers.LazyAdam: dense as Adam (ApplyAdam); on the rows of a
    // sparse gradient (rowIndices set) m, v and the variable move on those
    // rows only, written as tfa writes them.
    Value b1 = hpScalar(v, "beta_1", 0.9), b2 = hpScalar(v, "beta_2", 0.999);
    Value t = castTo(add(step, scalar(step, 1)), type.getElementType());
    Value one = scalar(v, 1.0);
    Value lrT = div(mul(lr, sqrt(sub(one, pow(b2, t)))), sub(one, pow(b1, t)));
    Value eps = hpScalar(v, "epsilon", 1e-7);
    Value m0 = slot(var, "LazyAdam", type, 0.0);
    Value v0 = slot(var, "LazyAdam_1", type, 0.0);
    Value m, s;
    if (rowIndices) {
      m = add(mul(b1, m0), mul(oneMinusHp(v, "beta_1", 0.9), g));
      s = add(mul(b2, v0), mul(oneMinusHp(v, "beta_2", 0.999), square(g)));
      assign(var, sub(v, div(mul(lrT, m), add(sqrt(s), eps))));
    } else {
      m = add(m0, mul(sub(g, m0), oneMinusHp(v, "beta_1", 0.9)));
      s = add(v0, mul(sub(square(g), v0), oneMinusHp(v, "beta_2", 0.999)));
      assign(var, sub(v, div(mul(m, lrT), add(sqrt(s), eps))));
    }
    assign(slotVar(var, "LazyAdam"), m);
    assign(slotVar(var, "LazyAdam_1"), s);
  } else {
    return apply.emitError("unknown optimizer '")
           << kind
           << "' (one of sgd, momentum, adagrad, adam, rmsprop, ftrl, "
              "adadelta, proximal_gradient_descent, proximal_adagrad, "
              "adagrad_da, adamw, adamax, nadam, lazy_adam)";
  }
  return success();
}

/// Each row replaced by the sum of the rows with the same index (so
/// duplicates carry identical values): sum_j [idx_i == idx_j] rows_j, as
/// one reduction over j of an elementwise select that est-fusion folds into
/// it, so neither an [n, n] matrix nor a tensor of the variable's size is
/// built: n x row memory (which memory planning can size when n is a sparse
/// input's number of values) for O(n^2 row) work, n being a step's ids.
Value Expander::sumDuplicates(Value indices, Value rows) {
  auto type = cast<RankedTensorType>(rows.getType());
  int64_t rowSize = 1;
  for (int64_t d : type.getShape().drop_front())
    rowSize *= d;
  Value mine = reshape(indices, {-1, 1, 1});
  Value theirs = reshape(indices, {1, -1, 1});
  Value flat = reshape(rows, {1, -1, rowSize});
  Value same = select(equal(mine, theirs), flat, scalar(rows, 0.0));
  Value summed = reduceSum(same, {1}, false);
  SmallVector<int64_t> shape = {-1};
  llvm::append_range(shape, type.getShape().drop_front());
  return reshape(summed, shape);
}

/// TF 1.x's _apply_sparse: sgd scatter-adds; adam applies its dense rule to
/// the rows scattered into a zero gradient; the others apply their dense
/// rule to the gathered rows (duplicates summed first) and scatter them back.
LogicalResult Expander::sparseUpdate(StringRef var, Value v, Value indices,
                                     Value rows, Value step) {
  auto type = cast<RankedTensorType>(v.getType());
  StringRef kind = apply.getOptimizer();
  if (kind == "sgd") {
    // Duplicates sum in the scatter itself.
    Value delta = neg(mul(learningRate(v), rows));
    assign(var, scatter(v, indices, delta, "add"));
    return success();
  }
  if (kind == "adam" || kind == "adamw" || kind == "adamax" ||
      kind == "nadam" || kind.starts_with("keras_")) {
    return update(var, type, v, scatter(splat(type, 0.0), indices, rows, "add"),
                  step);
  }
  Value g = sumDuplicates(indices, rows);
  Value vRows = gather(v, indices);
  rowIndices = indices;
  LogicalResult result = update(var, type, vRows, g, step);
  rowIndices = Value();
  return result;
}

SmallVector<Value> Expander::clipByGlobalNorm(ArrayRef<Value> grads,
                                              double clipNorm) {
  // tf.clip_by_global_norm: global_norm = sqrt(sum_i sum(g_i^2)) (in f32),
  // g_i *= clip / max(global_norm, clip).
  if (grads.empty())
    return {};
  Type f32 = b.getF32Type();
  auto scalarType = RankedTensorType::get({}, f32);
  Value sumSq;
  for (Value g : grads) {
    auto type = cast<RankedTensorType>(g.getType());
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    Value s = reduceSum(square(g), axes, /*keepDims=*/false);
    if (type.getElementType() != f32)
      s = castTo(s, f32);
    sumSq = sumSq ? add(sumSq, s) : s;
  }
  Value clip = splat(scalarType, clipNorm);
  Value scale = div(clip, MaximumOp::create(b, loc, sqrt(sumSq), clip));
  SmallVector<Value> clipped;
  for (Value g : grads) {
    Type elt = cast<RankedTensorType>(g.getType()).getElementType();
    Value s = elt == f32 ? scale : castTo(scale, elt);
    clipped.push_back(mul(g, s));
  }
  return clipped;
}

Value Expander::sumSquares(Value g) {
  auto type = cast<RankedTensorType>(g.getType());
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  Value s = reduceSum(square(g), axes, /*keepDims=*/false);
  return type.getElementType() == b.getF32Type() ? s
                                                 : castTo(s, b.getF32Type());
}

Value Expander::clipByNorm(Value g, Value sumSq, double clipNorm) {
  // tf.clip_by_norm: t * clip / maximum(norm, clip), in that order.
  Type f32 = b.getF32Type();
  Value clip = splat(RankedTensorType::get({}, f32), clipNorm);
  Value denominator = MaximumOp::create(b, loc, sqrt(sumSq), clip);
  Type elt = cast<RankedTensorType>(g.getType()).getElementType();
  if (elt != f32) {
    clip = castTo(clip, elt);
    denominator = castTo(denominator, elt);
  }
  return div(mul(g, clip), denominator);
}

void Expander::createScopeVariables() {
  StringRef scope = slotScope();
  if (scope.empty())
    return;
  StringRef kind = apply.getOptimizer();
  // Keras 2.15's legacy optimizers' hyperparameters, as their checkpoints
  // hold them (Python floats; learning_rate unless it is a schedule).
  SmallVector<std::pair<StringRef, double>> hypers = {{"decay", 0.0}};
  if (!apply.getLearningRate())
    hypers.push_back({"learning_rate", hp("learning_rate", 0.001)});
  if (kind == "adam") {
    hypers.push_back({"beta_1", hp("beta1", 0.9)});
    hypers.push_back({"beta_2", hp("beta2", 0.999)});
  } else if (kind == "ftrl") {
    hypers.push_back({"beta", hp("beta", 0.0)});
    hypers.push_back(
        {"l1_regularization_strength", hp("l1_regularization_strength", 0.0)});
    hypers.push_back(
        {"l2_regularization_strength", hp("l2_regularization_strength", 0.0)});
    hypers.push_back({"learning_rate_power", hp("learning_rate_power", -0.5)});
  } else if (kind == "rmsprop") {
    hypers.push_back({"momentum", hp("momentum", 0.0)});
    hypers.push_back({"rho", hp("decay", 0.9)});
  } else if (kind == "sgd" || kind == "momentum") {
    hypers.push_back({"momentum", hp("momentum", 0.0)});
  }
  MLIRContext *ctx = module.getContext();
  OpBuilder mb(ctx);
  for (auto [name, value] : hypers) {
    std::string symbol = (scope + "/" + name).str();
    if (module.lookupSymbol(symbol))
      continue;
    setInsertionPointAfterVariables(mb);
    VariableOp::create(
        mb, loc, symbol, RankedTensorType::get({}, mb.getF32Type()),
        /*trainable=*/false,
        InitializerAttr::get(ctx, "constant",
                             mb.getDictionaryAttr(mb.getNamedAttr(
                                 "value", mb.getF64FloatAttr(value)))));
  }
  if (!flag("own_iterations"))
    return;
  std::string iter = (scope + "/iter").str();
  auto i64 = RankedTensorType::get({}, mb.getI64Type());
  if (!module.lookupSymbol(iter)) {
    setInsertionPointAfterVariables(mb);
    VariableOp::create(mb, loc, iter, i64, /*trainable=*/false,
                       InitializerAttr::get(ctx, "zeros", DictionaryAttr()));
  }
  Value it = read(iter, i64);
  assignWhole(iter, add(it, scalar(it, 1)));
}

LogicalResult Expander::run() {
  Value step = sharedStep ? sharedStep : globalStep();
  usedStep = step;
  // The step the rules see (Adam's t - 1, AdagradDA's).
  Value ruleStep = step;
  SmallVector<Value> grads = llvm::to_vector(apply.getGradients());
  SmallVector<StringRef> denseVars;
  for (Attribute a : apply.getVariables())
    denseVars.push_back(cast<FlatSymbolRefAttr>(a).getValue());
  bool sparse = static_cast<bool>(apply.getSparseVariables());
  if (Attribute steps =
          apply.getHyperparameters().get("gradient_accumulation_steps")) {
    // Gradient accumulation: every step adds the gradient to
    // <var>/GradientAccumulator; on the steps where (global_step + 1) % N
    // == 0 the rule runs on the mean of the N gradients (at rule step
    // (global_step + 1) / N - 1, so that Adam's t counts the updates) and
    // the accumulators restart from zero; on the others every assignment of
    // the rule keeps the old value. Sparse gradients are densified.
    auto n = dyn_cast<IntegerAttr>(steps);
    if (!n || n.getInt() < 1)
      return apply.emitError("gradient_accumulation_steps must be an integer "
                             ">= 1, got ")
             << steps;
    if (n.getInt() > 1) {
      if (sparse) {
        for (auto [attr, indices, rows] : llvm::zip_equal(
                 *apply.getSparseVariables(), apply.getSparseIndices(),
                 apply.getSparseValues())) {
          StringRef var = cast<FlatSymbolRefAttr>(attr).getValue();
          auto varOp = module.lookupSymbol<VariableOp>(var);
          if (!varOp)
            return apply.emitError("unknown variable @") << var;
          auto type = cast<RankedTensorType>(varOp.getType());
          denseVars.push_back(var);
          grads.push_back(scatter(splat(type, 0.0), indices, rows, "add"));
        }
        sparse = false;
      }
      Value one = scalar(step, 1);
      Value next = add(step, one);
      Value count = scalar(step, static_cast<double>(n.getInt()));
      Value k = div(next, count);
      Value now = equal(mul(k, count), next);
      for (auto [var, g] : llvm::zip_equal(denseVars, grads)) {
        auto varOp = module.lookupSymbol<VariableOp>(var);
        if (!varOp)
          return apply.emitError("unknown variable @") << var;
        auto type = cast<RankedTensorType>(varOp.getType());
        Value acc = add(slot(var, "GradientAccumulator", type, 0.0), g);
        assignments.push_back({slotVar(var, "GradientAccumulator"),
                               select(now, splat(type, 0.0), acc)});
        g = div(acc, scalar(g, static_cast<double>(n.getInt())));
      }
      applyNow = now;
      ruleStep = sub(k, one);
    }
  }
  size_t numDense = grads.size();
  // Sparse rows take part in the global norm as values (TF's IndexedSlices).
  llvm::append_range(grads, apply.getSparseValues());
  if (Attribute clip =
          apply.getHyperparameters().get("clip_gradients_by_global_norm")) {
    double norm = hp("clip_gradients_by_global_norm", 0.0);
    if (!isa<FloatAttr, IntegerAttr>(clip) || !(norm > 0.0))
      return apply.emitError("clip_gradients_by_global_norm must be a "
                             "positive number, got ")
             << clip;
    grads = clipByGlobalNorm(grads, norm);
  }
  if (Attribute clip =
          apply.getHyperparameters().get("clip_gradients_by_norm")) {
    double norm = hp("clip_gradients_by_norm", 0.0);
    if (!isa<FloatAttr, IntegerAttr>(clip) || !(norm > 0.0))
      return apply.emitError("clip_gradients_by_norm must be a positive "
                             "number, got ")
             << clip;
    for (size_t i = 0; i < grads.size(); ++i) {
      Value g = grads[i];
      Value sumSq;
      if (i < numDense) {
        sumSq = sumSquares(g);
      } else {
        Value indices = apply.getSparseIndices()[i - numDense];
        auto type = cast<RankedTensorType>(g.getType());
        SmallVector<int64_t> axes =
            llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
        sumSq = reduceSum(mul(g, sumDuplicates(indices, g)), axes, false);
        if (type.getElementType() != b.getF32Type())
          sumSq = castTo(sumSq, b.getF32Type());
      }
      grads[i] = clipByNorm(g, sumSq, norm);
    }
  }
  if (Attribute clip =
          apply.getHyperparameters().get("clip_gradients_by_value")) {
    // Keras' clipvalue: tf.clip_by_value(g, -clipvalue, clipvalue).
    double value = hp("clip_gradients_by_value", 0.0);
    if (!isa<FloatAttr, IntegerAttr>(clip) || !(value > 0.0))
      return apply.emitError("clip_gradients_by_value must be a positive "
                             "number, got ")
             << clip;
    for (Value &g : grads)
      g = max(MinimumOp::create(b, loc, g, scalar(g, value)),
              scalar(g, -value));
  }
  SmallVector<Value> sparseRows(grads.begin() + numDense, grads.end());
  grads.resize(numDense);
  for (auto [var, g] : llvm::zip_equal(denseVars, grads)) {
    auto varOp = module.lookupSymbol<VariableOp>(var);
    if (!varOp)
      return apply.emitError("unknown variable @") << var;
    auto type = cast<RankedTensorType>(varOp.getType());
    if (g.getType() != type)
      return apply.emitError("gradient of @")
             << var << " has type " << g.getType() << ", expected " << type;
    if (failed(update(var, type, read(var, type), g, ruleStep)))
      return failure();
  }
  if (auto sparseVars = apply.getSparseVariables(); sparse && sparseVars) {
    for (auto [attr, indices, rows] :
         llvm::zip_equal(*sparseVars, apply.getSparseIndices(), sparseRows)) {
      StringRef var = cast<FlatSymbolRefAttr>(attr).getValue();
      auto varOp = module.lookupSymbol<VariableOp>(var);
      if (!varOp)
        return apply.emitError("unknown variable @") << var;
      auto type = cast<RankedTensorType>(varOp.getType());
      auto rowType = cast<RankedTensorType>(rows.getType());
      if (rowType.getElementType() != type.getElementType() ||
          rowType.getShape().drop_front() != type.getShape().drop_front())
        return apply.emitError("sparse gradient of @")
               << var << " has type " << rowType << ", expected rows of "
               << type;
      if (failed(sparseUpdate(var, read(var, type), indices, rows, ruleStep)))
        return failure();
    }
  }
  finish();
  createScopeVariables();
  if (increment)
    assign("global_step", add(step, scalar(step, 1)));
  for (auto &[name, value] : assignments)
    AssignVariableOp::create(
        b, loc, FlatSymbolRefAttr::get(b.getContext(), name), value);
  apply.erase();
  return success();
}

/// tf.train.ExponentialMovingAverage's apply (optimizer "moving_average",
/// from train::ExponentialMovingAverage): `variables` are the shadows, the
/// gradients the values they average (reads of the source variables), the
/// learning-rate operand num_updates (f32). A source variable (or the
/// variable num_updates reads, global_step) that an optimizer of the same
/// function updates is taken at its new value (TF's `with
/// control_dependencies([opt_op]): ema.apply(...)`), so the updates are
/// built at the end of the function, after every other expansion.
///   decay = min(decay, (1 + num_updates) / (10 + num_updates))  (f32)
///   shadow -= (shadow - value) * (1 - decay)
LogicalResult expandMovingAverage(ApplyGradientsOp op, ModuleOp module,
                                  const llvm::StringMap<Value> &updated) {
  OpBuilder b(op->getBlock()->getTerminator());
  EstBuilder e(b, op.getLoc());
  double decay = 0.0;
  if (auto a =
          dyn_cast_or_null<FloatAttr>(op.getHyperparameters().get("decay")))
    decay = a.getValueAsDouble();
  else
    return op.emitError("moving_average needs a float hyperparameter 'decay'");
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  Value d = e.splat(f32, static_cast<float>(decay));
  if (Value n = op.getLearningRate()) {
    // num_updates read from a variable an optimizer of the function updates
    // (global_step): its new value too.
    Value read = n;
    if (auto c = n.getDefiningOp<CastOp>())
      read = c.getX();
    if (auto r = read.getDefiningOp<ReadVariableOp>())
      if (Value v = updated.lookup(r.getVariable()))
        n = v;
    if (cast<RankedTensorType>(n.getType()).getElementType() != b.getF32Type())
      n = e.castTo(n, b.getF32Type());
    Value one = e.splat(f32, 1.0), ten = e.splat(f32, 10.0);
    d = MinimumOp::create(b, e.loc, d, e.div(e.add(one, n), e.add(ten, n)));
  }
  Value oneMinus = e.sub(e.splat(f32, 1.0), d);
  SmallVector<std::pair<FlatSymbolRefAttr, Value>> assigns;
  for (auto [attr, value] :
       llvm::zip_equal(op.getVariables(), op.getGradients())) {
    auto shadow = cast<FlatSymbolRefAttr>(attr);
    auto varOp = module.lookupSymbol<VariableOp>(shadow.getValue());
    if (!varOp)
      return op.emitError("unknown variable ") << shadow;
    auto type = cast<RankedTensorType>(varOp.getType());
    Value source = value;
    if (auto read = value.getDefiningOp<ReadVariableOp>())
      if (Value v = updated.lookup(read.getVariable()))
        source = v;
    if (source.getType() != type)
      return op.emitError("the average ") << shadow << " has type " << type
                                          << ", its value " << source.getType();
    Value rate = type.getElementType() == b.getF32Type()
                     ? oneMinus
                     : e.castTo(oneMinus, type.getElementType());
    Value s = ReadVariableOp::create(b, e.loc, type, shadow);
    assigns.push_back({shadow, e.sub(s, e.mul(e.sub(s, source), rate))});
  }
  for (auto &[shadow, value] : assigns)
    AssignVariableOp::create(b, e.loc, shadow, value);
  op.erase();
  return success();
}

/// Variable constraints (optimizer "constraint", from lib/Graph/Train.cpp's
/// optimizers for variables with train::set_variable_constraint): the
/// constraint of `variables[i]` is `gradients[i]`, computed from a read of
/// the variable. It is computed again from the variable's new value (the
/// function's optimizers') and assigned instead of that value, as TF 1.x's
/// optimizers assign var.constraint(var) after the update; a moving average
/// of the variable then averages the constrained value. A variable that no
/// optimizer of the function updates is left alone.
LogicalResult expandConstraint(ApplyGradientsOp op,
                               llvm::StringMap<Value> &updated) {
  Block *block = op->getBlock();
  OpBuilder b(block->getTerminator());
  for (auto [attr, value] :
       llvm::zip_equal(op.getVariables(), op.getGradients())) {
    StringRef name = cast<FlatSymbolRefAttr>(attr).getValue();
    Value newValue = updated.lookup(name);
    if (!newValue)
      continue;
    // The ops from the variable's reads to the constraint, cloned onto the
    // new value (those that do not depend on a read are reused).
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.inclusive = true;
    options.filter = [&](Operation *o) { return o->getBlock() == block; };
    if (Operation *def = value.getDefiningOp())
      (void)getBackwardSlice(def, &slice, options);
    IRMapping map;
    for (Operation *o : slice) {
      if (auto read = dyn_cast<ReadVariableOp>(o)) {
        if (read.getVariable() == name)
          map.map(read.getResult(), newValue);
        continue;
      }
      if (llvm::any_of(o->getOperands(),
                       [&](Value v) { return map.contains(v); }))
        b.clone(*o, map);
    }
    Value constrained = map.lookupOrDefault(value);
    if (constrained.getType() != newValue.getType())
      return op.emitError("the constraint of ")
             << attr << " has type " << constrained.getType()
             << ", the variable " << newValue.getType();
    SmallVector<AssignVariableOp> stale;
    for (auto assign : block->getOps<AssignVariableOp>())
      if (assign.getVariable() == name && assign.getValue() == newValue)
        stale.push_back(assign);
    for (AssignVariableOp assign : stale)
      assign.erase();
    AssignVariableOp::create(b, op.getLoc(), cast<FlatSymbolRefAttr>(attr),
                             constrained);
    updated[name] = constrained;
  }
  op.erase();
  return success();
}

struct ExpandOptimizersPass
    : public est::impl::EstExpandOptimizersBase<ExpandOptimizersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ApplyGradientsOp> applies;
    module.walk([&](ApplyGradientsOp op) { applies.push_back(op); });
    // global_step as read for the first apply_gradients of each function,
    // and the functions that increment it already.
    DenseMap<Operation *, Value> steps;
    DenseSet<Operation *> incremented;
    // TF 1.x Adams expanded so far, per function (their beta powers' names).
    DenseMap<Operation *, int> adams;
    // The variables' new values, per function (for the moving averages,
    // expanded last).
    DenseMap<Operation *, llvm::StringMap<Value>> updated;
    SmallVector<ApplyGradientsOp> averages, constraints;
    for (ApplyGradientsOp op : applies) {
      if (op.getOptimizer() == "moving_average") {
        averages.push_back(op);
        continue;
      }
      if (op.getOptimizer() == "constraint") {
        constraints.push_back(op);
        continue;
      }
      OpBuilder b(op);
      Operation *function = op->getParentOp();
      bool increment = !op.getKeepGlobalStep().value_or(false) &&
                       !incremented.contains(function);
      Expander expander(op, module, b, steps.lookup(function), increment);
      expander.setAdamIndex(adams[function]);
      if (failed(expander.run()))
        return signalPassFailure();
      if (expander.madeBetaPowers())
        ++adams[function];
      steps[function] = expander.step();
      if (increment)
        incremented.insert(function);
      for (const auto &[name, value] : expander.assigned())
        updated[function][name] = value;
    }
    // The constraints after every optimizer's update, the averages last.
    for (ApplyGradientsOp op : constraints)
      if (failed(expandConstraint(op, updated[op->getParentOp()])))
        return signalPassFailure();
    for (ApplyGradientsOp op : averages)
      if (failed(expandMovingAverage(op, getOperation(),
                                     updated[op->getParentOp()])))
        return signalPassFailure();
  }
};

} // namespace
