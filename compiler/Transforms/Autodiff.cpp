//===- Autodiff.cpp - est-autodiff --------------------------------------===//
//
// Reverse-mode automatic differentiation of each `est.minimize`:
//
//   1. The variables to train: `var_list`, or every trainable variable.
//   2. Forward: the float values that depend on a read of such a variable
//      (the "active" values; only they get gradients).
//   3. Backward: from the loss (seed 1.0), in reverse program order, each op
//      with an active operand and a result gradient builds its operands'
//      gradients through GradientOpInterface (dialects/Est/IR/
//      EstGradients.cpp); gradients of a value used several times are
//      summed.
//   A gather on axis 0 of a trained variable's read is not differentiated
//   densely: its gradient is kept as rows (indices, rows of g). A variable
//   whose only gradients are such rows gets them as a sparse gradient of
//   apply_gradients (so its update is O(rows touched)); one also used
//   otherwise gets them scattered into its dense gradient.
//   4. The minimize becomes `est.apply_gradients` with, for each variable
//      that influences the loss, the sum of the gradients of its reads.
//      Variables that do not influence the loss get no update (no slots
//      either); when none does, a one-line warning names the loss and the
//      variables (global_step is still incremented), and so does one for
//      var_list entries that do not influence it.
//   An op on the path without a gradient rule leaves the minimize in place
//   with a warning naming the op (the driver then drops @train), and so
//   does a rule that does not cover its op's shapes or attributes.
//
// The backward ops are inserted right before the minimize, after the
// forward pass they read.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstInterfaces.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTAUTODIFF
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// A short description of the loss for diagnostics: its location's name
/// when it has one.
std::string describe(Value loss) {
  if (auto name = dyn_cast<NameLoc>(loss.getLoc()))
    return "'" + name.getName().str() + "'";
  if (Operation *op = loss.getDefiningOp())
    return "'" + op->getName().getStringRef().str() + "'";
  return "the loss";
}

LogicalResult differentiate(MinimizeOp minimize, ModuleOp module) {
  // 1. The variables to train, in var_list or module order.
  SmallVector<StringRef> names;
  if (auto list = minimize.getVarList()) {
    for (Attribute a : *list)
      names.push_back(cast<FlatSymbolRefAttr>(a).getValue());
  } else {
    for (auto var : module.getOps<VariableOp>())
      if (var.getTrainable())
        names.push_back(var.getSymName());
  }
  llvm::StringSet<> trainable;
  for (StringRef n : names)
    trainable.insert(n);

  // 2. Active values: float results that depend on a trained variable.
  Block *block = minimize->getBlock();
  DenseSet<Value> active;
  llvm::MapVector<StringRef, SmallVector<Value>> reads;
  DenseSet<Value> readValues;
  for (Operation &op : *block) {
    if (&op == minimize.getOperation())
      break;
    if (auto read = dyn_cast<ReadVariableOp>(op)) {
      if (trainable.contains(read.getVariable()) &&
          isFloatTensor(read.getResult())) {
        active.insert(read.getResult());
        reads[read.getVariable()].push_back(read.getResult());
        readValues.insert(read.getResult());
      }
      continue;
    }
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          active.insert(r);
  }

  // 3. Backward.
  OpBuilder b(minimize);
  Location loc = minimize.getLoc();
  DenseMap<Value, Value> grads;
  // Rows of a variable read's gradient from gathers on axis 0: (indices
  // [n], rows [n] + var[1:]).
  DenseMap<Value, SmallVector<std::pair<Value, Value>>> sparse;
  auto accumulate = [&](Value v, Value g) {
    Value &slot = grads[v];
    slot = slot ? Value(AddOp::create(b, loc, slot, g)) : g;
  };
  Value loss = minimize.getLoss();
  if (active.contains(loss)) {
    auto lossType = cast<RankedTensorType>(loss.getType());
    accumulate(loss, ConstantOp::create(
                         b, loc,
                         DenseElementsAttr::get(
                             lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0))));
    // Reverse program order: every use of a value is visited before it.
    for (Operation *op = minimize->getPrevNode(); op; op = op->getPrevNode()) {
      if (op->getNumResults() != 1)
        continue;
      Value g = grads.lookup(op->getResult(0));
      if (!g || !llvm::any_of(op->getOperands(),
                              [&](Value v) { return active.contains(v); }))
        continue;
      if (auto gather = dyn_cast<GatherOp>(op)) {
        Value params = gather.getParams();
        auto pType = cast<RankedTensorType>(params.getType());
        int64_t axis = gather.getAxisAttr().getInt();
        if (readValues.contains(params) &&
            (axis == 0 || axis == -pType.getRank()) && pType.hasStaticShape()) {
          Value indices = gather.getIndices();
          Value rows = g;
          if (cast<RankedTensorType>(indices.getType()).getRank() != 1) {
            indices = ReshapeOp::create(b, loc, indices,
                                        b.getDenseI64ArrayAttr({-1}));
            SmallVector<int64_t> shape = {-1};
            llvm::append_range(shape, pType.getShape().drop_front());
            rows =
                ReshapeOp::create(b, loc, rows, b.getDenseI64ArrayAttr(shape));
          }
          sparse[params].push_back({indices, rows});
          continue;
        }
      }
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule) {
        // Left for the driver to drop @train with a warning: a model whose
        // training needs an op without a rule still compiles eval/predict.
        minimize.emitWarning("not differentiated: no gradient rule for '")
            << op->getName() << "' (needed to train on the loss "
            << describe(loss) << ")";
        return success();
      }
      SmallVector<Value> operandGrads;
      std::string why;
      LogicalResult built = success();
      {
        // A rule that does not cover its op's shapes or attributes reports
        // an error; it becomes the warning of an undifferentiated minimize.
        ScopedDiagnosticHandler capture(b.getContext(), [&](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return failure();
          if (why.empty())
            why = diag.str();
          return success();
        });
        built = rule.buildGradients(b, g, operandGrads);
      }
      if (failed(built)) {
        minimize.emitWarning("not differentiated: the gradient of '")
            << op->getName() << "' failed: " << why;
        return success();
      }
      for (auto [operand, og] :
           llvm::zip_equal(op->getOperands(), operandGrads))
        if (og && active.contains(operand))
          accumulate(operand, og);
    }
  }

  // 4. apply_gradients for the variables the loss depends on.
  SmallVector<Attribute> variables;
  SmallVector<Value> variableGrads;
  SmallVector<StringRef> unused;
  SmallVector<Attribute> sparseVariables;
  SmallVector<Value> sparseIndices, sparseValues;
  for (StringRef name : names) {
    Value sum;
    SmallVector<std::pair<Value, Value>> rows;
    for (Value read : reads.lookup(name)) {
      if (Value g = grads.lookup(read))
        sum = sum ? Value(AddOp::create(b, loc, sum, g)) : g;
      llvm::append_range(rows, sparse.lookup(read));
    }
    if (!rows.empty() && !sum) {
      // Only gathered: the gradient stays rows (concatenated when several).
      SmallVector<Value> indices, values;
      for (auto [i, v] : rows) {
        indices.push_back(i);
        values.push_back(v);
      }
      Value i = indices.size() == 1
                    ? indices.front()
                    : Value(ConcatOp::create(b, loc, indices, 0));
      Value v = values.size() == 1 ? values.front()
                                   : Value(ConcatOp::create(b, loc, values, 0));
      sparseVariables.push_back(FlatSymbolRefAttr::get(b.getContext(), name));
      sparseIndices.push_back(i);
      sparseValues.push_back(v);
      continue;
    }
    // Also used densely: the rows are added into a dense gradient.
    for (auto [i, v] : rows) {
      Value zeros = ZerosLikeOp::create(b, loc, reads.lookup(name).front());
      Value dense =
          ScatterOp::create(b, loc, zeros, i, v, b.getStringAttr("add"));
      sum = sum ? Value(AddOp::create(b, loc, sum, dense)) : dense;
    }
    if (!sum) {
      unused.push_back(name);
      continue;
    }
    variables.push_back(FlatSymbolRefAttr::get(b.getContext(), name));
    variableGrads.push_back(sum);
  }
  auto list = [](ArrayRef<StringRef> vars) {
    std::string s;
    for (StringRef v : vars)
      s += (s.empty() ? "@" : ", @") + v.str();
    return s;
  };
  if (variables.empty() && sparseVariables.empty())
    minimize.emitWarning("no trainable variable influences the loss ")
        << describe(loss) << " (variables: "
        << (unused.empty() ? std::string("none") : list(unused))
        << "); the train op only increments global_step";
  else if (minimize.getVarList() && !unused.empty())
    minimize.emitWarning("var_list variable")
        << (unused.size() > 1 ? "s " : " ") << list(unused) << " do"
        << (unused.size() > 1 ? "" : "es") << " not influence the loss "
        << describe(loss) << "; no update";
  ApplyGradientsOp::create(
      b, loc, minimize.getOptimizerAttr(), minimize.getHyperparametersAttr(),
      b.getArrayAttr(variables), variableGrads, minimize.getLearningRate(),
      sparseVariables.empty() ? ArrayAttr() : b.getArrayAttr(sparseVariables),
      sparseIndices, sparseValues);
  minimize.erase();
  return success();
}

struct AutodiffPass : public est::impl::EstAutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MinimizeOp> minimizes;
    module.walk([&](MinimizeOp op) { minimizes.push_back(op); });
    for (MinimizeOp op : minimizes)
      if (failed(differentiate(op, module)))
        return signalPassFailure();
  }
};

} // namespace
