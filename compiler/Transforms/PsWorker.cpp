//===- PsWorker.cpp - est-ps-worker --------------------------------------===//
//
// A worker's step in parameter-server training (docs/design/distributed.md,
// "Parameter servers"), for a module with `estc.ps_tasks = N` and no
// `estc.ps_task`: the variables live on the ps tasks, which apply the
// optimizers; the worker computes the gradients and pushes them.
//
//   updates    every `est.apply_gradients` is replaced by `est.ps_push`es of
//              what the tasks' apply functions take: each dense gradient
//              (`grad/<var>`), each sparse one's ids and rows (`ids/<var>`,
//              `rows/<var>`), the learning rate when the step computes it
//              (`learning_rate/<k>`, the function's k-th update). The
//              module's `estc.ps_inputs` lists them ({key, type}); the
//              runtime sends each to the task holding its variable.
//   tables     a variable the step only gathers rows of (an embedding table,
//              a partitioned variable's part) is not held by the worker:
//              each gather becomes `est.ps_pull_rows` from its task, and the
//              variable leaves the module, listed in `estc.ps_remote`
//              ({name, task, type}) -- so a table may be larger than a
//              worker's memory.
//   the rest   the other variables the optimizers update, and global_step,
//              stay as the worker's copies, marked `est.ps_task = t`: the
//              runtime refreshes them from their tasks before each step.
//
// Placement is ps::placeVariables' (TF's round robin); est-ps-task compiles
// each task's side from the same module. Runs after est-autodiff, where
// est-insert-collectives would (a module is one or the other). A step that
// assigns a non-local variable itself (batch normalization's moving
// statistics), a constraint or clipping by the global norm is refused: the
// tasks could not reproduce it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ParameterServers.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstBuilder.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTPSWORKER
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

struct PsWorkerPass : public est::impl::EstPsWorkerBase<PsWorkerPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<int64_t> tasks = ps::psTasks(module);
    if (!tasks || module->hasAttr(ps::kTaskAttr) ||
        module->hasAttr(ps::kSplitAttr))
      return;
    module->setAttr(ps::kSplitAttr, UnitAttr::get(module.getContext()));
    placement = ps::placeVariables(module, *tasks);
    // @init is rebuilt from the variables that remain (the pipeline's
    // est-create-init-function runs after this stage).
    if (auto init = module.lookupSymbol<func::FuncOp>("init"))
      init.erase();
    llvm::SetVector<StringRef> sparse;
    bool trains = false;
    for (func::FuncOp func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isDeclaration())
        continue;
      func.walk([&](ApplyGradientsOp) { trains = true; });
      if (failed(replaceUpdates(func, sparse)) ||
          failed(checkAssignments(func)))
        return signalPassFailure();
    }
    // The worker's copy of global_step (task 0 counts the steps; the
    // Estimator's hooks read the copy).
    if (trains && !module.lookupSymbol("global_step")) {
      OpBuilder mb(module.getContext());
      auto vars = module.getOps<VariableOp>();
      Operation *last = nullptr;
      for (VariableOp var : vars)
        last = var;
      if (last)
        mb.setInsertionPointAfter(last);
      else
        mb.setInsertionPointToStart(module.getBody());
      VariableOp::create(
          mb, module.getLoc(), "global_step",
          RankedTensorType::get({}, mb.getI64Type()), /*trainable=*/false,
          InitializerAttr::get(module.getContext(), "zeros", DictionaryAttr()));
    }
    for (StringRef name : sparse)
      if (failed(pullRows(module, name)))
        return signalPassFailure();
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      insertWaits(func);
    Builder b(module.getContext());
    for (VariableOp var : module.getOps<VariableOp>()) {
      auto it = placement.find(var.getSymName());
      if (it != placement.end())
        var->setAttr(ps::kVariableTaskAttr, b.getI64IntegerAttr(it->second));
    }
    SmallVector<Attribute> list;
    for (auto &[key, type] : inputs)
      list.push_back(
          b.getDictionaryAttr({b.getNamedAttr("key", b.getStringAttr(key)),
                               b.getNamedAttr("type", TypeAttr::get(type))}));
    module->setAttr(ps::kInputsAttr, b.getArrayAttr(list));
    module->setAttr(ps::kRemoteAttr, b.getArrayAttr(remote));
  }

  /// The index of input `key` in estc.ps_inputs (added when new).
  int64_t input(const std::string &key, Type type) {
    auto [it, fresh] =
        inputIndex.try_emplace(key, static_cast<int64_t>(inputs.size()));
    if (fresh)
      inputs.emplace_back(key, type);
    return it->second;
  }

  void push(EstBuilder &e, Value value, const std::string &key, Type type) {
    auto shaped = cast<RankedTensorType>(value.getType());
    Value flat =
        e.reshape(value, {shaped.hasStaticShape() ? shaped.getNumElements()
                                                  : int64_t{-1}});
    PsPushOp::create(e.b, e.loc, flat, e.b.getStringAttr(key),
                     e.b.getI64IntegerAttr(input(key, type)));
  }

  LogicalResult replaceUpdates(func::FuncOp func,
                               llvm::SetVector<StringRef> &sparse) {
    FailureOr<SmallVector<ApplyGradientsOp>> applies =
        ps::stepUpdates(func, "est-ps-worker");
    if (failed(applies) ||
        failed(ps::recordSync(func->getParentOfType<ModuleOp>(), *applies,
                              "est-ps-worker")))
      return failure();
    llvm::StringSet<> pushed;
    for (auto [k, apply] : llvm::enumerate(*applies)) {
      OpBuilder b(apply);
      EstBuilder e(b, apply.getLoc());
      Type f32 = b.getF32Type(), i64 = b.getI64Type();
      auto once = [&](StringRef name) -> LogicalResult {
        if (pushed.insert(name).second)
          return success();
        return apply.emitOpError()
               << "est-ps-worker: variable '" << name
               << "' is updated by two optimizers of one step";
      };
      auto f32Only = [&](StringRef name, Type type) -> LogicalResult {
        if (cast<RankedTensorType>(type).getElementType().isF32())
          return success();
        return apply.emitOpError()
               << "est-ps-worker: variable '" << name << "' is " << type
               << "; parameter-server training updates float32 variables";
      };
      if (Value lr = apply.getLearningRate()) {
        Value v = cast<RankedTensorType>(lr.getType()).getElementType() == f32
                      ? lr
                      : e.castTo(lr, f32);
        push(e, v, ps::learningRateKey(k), RankedTensorType::get({}, f32));
      }
      for (auto [attr, grad] :
           llvm::zip(apply.getVariables(), apply.getGradients())) {
        StringRef name = cast<FlatSymbolRefAttr>(attr).getValue();
        if (failed(once(name)) || failed(f32Only(name, grad.getType())))
          return failure();
        push(e, grad, ps::gradKey(name), grad.getType());
      }
      if (ArrayAttr vars = apply.getSparseVariablesAttr())
        for (auto [attr, ids, rows] : llvm::zip(vars, apply.getSparseIndices(),
                                                apply.getSparseValues())) {
          StringRef name = cast<FlatSymbolRefAttr>(attr).getValue();
          auto var = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
              func, cast<FlatSymbolRefAttr>(attr));
          if (failed(once(name)) || failed(f32Only(name, rows.getType())))
            return failure();
          auto varType = cast<RankedTensorType>(var.getType());
          Value ids64 =
              cast<RankedTensorType>(ids.getType()).getElementType() == i64
                  ? ids
                  : e.castTo(ids, i64);
          push(e, ids64, ps::idsKey(name),
               RankedTensorType::get({ShapedType::kDynamic}, i64));
          push(e, rows, ps::rowsKey(name), ps::rowsType(varType));
          sparse.insert(name);
        }
      apply.erase();
    }
    return success();
  }

  /// A step that writes a variable itself (not through an optimizer) would
  /// write only the worker's copy.
  LogicalResult checkAssignments(func::FuncOp func) {
    WalkResult result =
        func.walk([&](AssignVariableOp assign) {
          auto var = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
              assign, assign.getVariableAttr());
          if (!var || var.getLocal())
            return WalkResult::advance();
          assign.emitOpError()
              << "est-ps-worker: @" << func.getSymName()
              << " assigns variable '" << var.getSymName()
              << "' itself (not through an optimizer); in parameter-server "
                 "training the ps tasks hold the variables and apply only "
                 "optimizer updates (batch normalization's moving statistics "
                 "are not supported yet)";
          return WalkResult::interrupt();
        });
    return failure(result.wasInterrupted());
  }

  /// The variable `name`, when every read of it is gathered on axis 0, is
  /// pulled by rows and leaves the module; else the worker keeps a copy.
  LogicalResult pullRows(ModuleOp module, StringRef name) {
    auto var = module.lookupSymbol<VariableOp>(name);
    if (!var)
      return success();
    auto varType = cast<RankedTensorType>(var.getType());
    SmallVector<GatherOp> gathers;
    bool onlyGathered = varType.getRank() >= 1;
    SmallVector<ReadVariableOp> reads;
    module.walk([&](ReadVariableOp read) {
      if (read.getVariable() != name)
        return;
      reads.push_back(read);
      for (Operation *user : read->getUsers()) {
        auto gather = dyn_cast<GatherOp>(user);
        int64_t axis = gather ? gather.getAxisAttr().getInt() : 1;
        auto idsType =
            gather ? cast<RankedTensorType>(gather.getIndices().getType())
                   : RankedTensorType();
        if (!gather || gather.getParams() != read.getResult() ||
            (axis != 0 && axis != -varType.getRank()) ||
            llvm::count_if(idsType.getShape(), ShapedType::isDynamic) > 1)
          onlyGathered = false;
        else
          gathers.push_back(gather);
      }
    });
    if (!onlyGathered)
      return success();
    int64_t task = placement.lookup(name);
    int64_t index = static_cast<int64_t>(remote.size());
    int64_t width = 1;
    for (int64_t d : varType.getShape().drop_front())
      width *= d;
    for (GatherOp gather : gathers) {
      // The pull as soon as its ids are known (insertWaits batches the
      // pulls before the first read of their rows); the rows' reshape where
      // the gather was.
      Value ids = gather.getIndices();
      OpBuilder early(gather);
      if (Operation *def = ids.getDefiningOp())
        early.setInsertionPointAfter(def);
      else
        early.setInsertionPointToStart(cast<BlockArgument>(ids).getOwner());
      EstBuilder pe(early, gather.getLoc());
      auto idsType = cast<RankedTensorType>(ids.getType());
      if (idsType.getRank() != 1)
        ids = pe.reshape(ids, {-1});
      if (!idsType.getElementType().isInteger(64))
        ids = pe.castTo(ids, early.getI64Type());
      Value rows = PsPullRowsOp::create(
          early, gather.getLoc(),
          RankedTensorType::get({ShapedType::kDynamic, width},
                                early.getF32Type()),
          ids, early.getStringAttr(name), early.getI64IntegerAttr(index));
      OpBuilder b(gather);
      EstBuilder e(b, gather.getLoc());
      SmallVector<int64_t> shape;
      for (int64_t d : idsType.getShape())
        shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      llvm::append_range(shape, varType.getShape().drop_front());
      gather.getResult().replaceAllUsesWith(e.reshape(rows, shape));
      gather.erase();
    }
    for (ReadVariableOp read : reads)
      read.erase();
    Builder b(module.getContext());
    remote.push_back(
        b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(name)),
                             b.getNamedAttr("task", b.getI64IntegerAttr(task)),
                             b.getNamedAttr("type", TypeAttr::get(varType))}));
    var.erase();
    return success();
  }

  /// The pulls of a block (each right after its ids) up to the first op
  /// reading any of their rows share one est.ps_wait: one call per task
  /// for a step's lookups.
  void insertWaits(func::FuncOp func) {
    SmallVector<Block *> blocks;
    func.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      SmallVector<PsPullRowsOp> group;
      llvm::SmallPtrSet<Operation *, 8> members;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        if (auto pull = dyn_cast<PsPullRowsOp>(op)) {
          group.push_back(pull);
          members.insert(pull);
          continue;
        }
        if (group.empty())
          continue;
        bool reads = op.hasTrait<OpTrait::IsTerminator>();
        op.walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            if (Operation *def = v.getDefiningOp(); def && members.count(def))
              reads = true;
        });
        if (!reads)
          continue;
        OpBuilder b(&op);
        SmallVector<Value> rows;
        for (PsPullRowsOp p : group)
          rows.push_back(p.getRows());
        auto wait =
            PsWaitOp::create(b, op.getLoc(), ValueRange(rows).getTypes(), rows);
        for (auto [p, ready] : llvm::zip(group, wait.getReady()))
          p.getRows().replaceAllUsesExcept(ready, wait);
        group.clear();
        members.clear();
      }
    }
  }

  llvm::StringMap<int64_t> placement;
  std::vector<std::pair<std::string, Type>> inputs;
  llvm::StringMap<int64_t> inputIndex;
  SmallVector<Attribute> remote;
};

} // namespace
