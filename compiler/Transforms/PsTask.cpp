//===- PsTask.cpp - est-ps-task ------------------------------------------===//
//
// A ps task's side of parameter-server training (docs/design/distributed.md,
// "Parameter servers"), for a module with `estc.ps_tasks = N` and
// `estc.ps_task = t`: @train becomes the task's apply function. Its inputs
// are what the workers push for the variables the task holds (ps::
// placeVariables, the same placement est-ps-worker uses): `grad/<var>` (a
// dense gradient), `ids/<var>` and `rows/<var>` (a sparse one; their first
// dimension is the number of rows, `est.values_dim`), `learning_rate/<k>`
// (the k-th update's, when the step computes it); its body is the step's
// `est.apply_gradients`, each keeping only this task's variables, which
// est-expand-optimizers expands as in a single process: the same slots,
// names and update rules. Task 0 holds global_step and increments it once
// per apply; the other tasks keep global_step (the runtime sets a copy,
// never saved, to the step a push was computed at, for the rules that read
// it). Every other function, the forward and backward passes, and the
// variables other tasks hold leave the module.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ParameterServers.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTPSTASK
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

struct PsTaskPass : public est::impl::EstPsTaskBase<PsTaskPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> tasks = ps::psTasks(module);
    auto taskAttr = module->getAttrOfType<IntegerAttr>(ps::kTaskAttr);
    if (!tasks || !taskAttr || module->hasAttr(ps::kSplitAttr))
      return;
    module->setAttr(ps::kSplitAttr, UnitAttr::get(module.getContext()));
    int64_t task = taskAttr.getInt();
    if (task < 0 || task >= *tasks) {
      module.emitError() << "est-ps-task: task " << task << " of " << *tasks
                         << " ps tasks";
      return signalPassFailure();
    }
    auto train = module.lookupSymbol<func::FuncOp>("train");
    if (!train || train.isDeclaration()) {
      module.emitError("est-ps-task: the module has no @train to take the "
                       "optimizer updates from");
      return signalPassFailure();
    }
    llvm::StringMap<int64_t> placement = ps::placeVariables(module, *tasks);
    FailureOr<SmallVector<ApplyGradientsOp>> applies =
        ps::stepUpdates(train, "est-ps-task");
    if (failed(applies) ||
        failed(ps::recordSync(module, *applies, "est-ps-task")))
      return signalPassFailure();

    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    b.setInsertionPoint(train);
    auto apply =
        func::FuncOp::create(b, train.getLoc(), "train",
                             FunctionType::get(ctx, TypeRange{}, TypeRange{}));
    Block *body = apply.addEntryBlock();
    SmallVector<DictionaryAttr> argAttrs;
    auto arg = [&](const std::string &key, Type type, bool values) {
      SmallVector<NamedAttribute> attrs{
          b.getNamedAttr("est.name", b.getStringAttr(key))};
      if (values)
        attrs.push_back(b.getNamedAttr("est.values_dim", b.getUnitAttr()));
      argAttrs.push_back(b.getDictionaryAttr(attrs));
      return body->addArgument(type, train.getLoc());
    };
    b.setInsertionPointToStart(body);
    bool increments = false;
    for (auto [k, old] : llvm::enumerate(*applies)) {
      auto mine = [&](Attribute v) {
        return placement.lookup(cast<FlatSymbolRefAttr>(v).getValue()) == task;
      };
      SmallVector<Attribute> dense, sparse;
      SmallVector<Value> grads, ids, rows;
      for (Attribute v : old.getVariables())
        if (mine(v)) {
          StringRef name = cast<FlatSymbolRefAttr>(v).getValue();
          auto var = module.lookupSymbol<VariableOp>(name);
          dense.push_back(v);
          grads.push_back(arg(ps::gradKey(name), var.getType(), false));
        }
      if (ArrayAttr vars = old.getSparseVariablesAttr())
        for (Attribute v : vars)
          if (mine(v)) {
            StringRef name = cast<FlatSymbolRefAttr>(v).getValue();
            auto type = cast<RankedTensorType>(
                module.lookupSymbol<VariableOp>(name).getType());
            sparse.push_back(v);
            ids.push_back(arg(
                ps::idsKey(name),
                RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type()),
                true));
            rows.push_back(arg(ps::rowsKey(name), ps::rowsType(type), true));
          }
      // Task 0 increments global_step once per apply: with the first update
      // that does in the step, kept (empty) when the task holds none of its
      // variables.
      bool carrier =
          task == 0 && !increments && !old.getKeepGlobalStep().value_or(false);
      // The learning rate the step computes goes to every task: an input
      // here even when the task holds none of the update's variables.
      Value lr;
      if (Value oldLr = old.getLearningRate()) {
        auto f32 = RankedTensorType::get({}, b.getF32Type());
        lr = arg(ps::learningRateKey(k), f32, false);
        if (oldLr.getType() != f32)
          lr = CastOp::create(
              b, old.getLoc(), lr,
              TypeAttr::get(
                  cast<RankedTensorType>(oldLr.getType()).getElementType()));
      }
      if (dense.empty() && sparse.empty() && !carrier)
        continue;
      increments |= carrier;
      ApplyGradientsOp::create(
          b, old.getLoc(), old.getOptimizerAttr(), old.getHyperparametersAttr(),
          b.getArrayAttr(dense), grads, lr,
          sparse.empty() ? ArrayAttr() : b.getArrayAttr(sparse), ids, rows,
          carrier ? BoolAttr() : b.getBoolAttr(true));
    }
    func::ReturnOp::create(b, train.getLoc());
    apply.setType(FunctionType::get(ctx, body->getArgumentTypes(), {}));
    for (auto [i, attrs] : llvm::enumerate(argAttrs))
      apply.setArgAttrs(i, attrs);

    // Only the apply function and this task's variables remain (@init is
    // rebuilt from them after this stage).
    for (func::FuncOp func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func != apply && !func.isDeclaration())
        func.erase();
    for (VariableOp var :
         llvm::make_early_inc_range(module.getOps<VariableOp>()))
      if (SymbolTable::symbolKnownUseEmpty(var, module) &&
          (task != 0 || var.getSymName() != "global_step"))
        var.erase();
  }
};

} // namespace
