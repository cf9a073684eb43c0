//===- ParameterServers.cpp - What est-ps-worker and est-ps-task share --===//

#include "compiler/Transforms/ParameterServers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::est;

std::optional<int64_t> ps::psTasks(ModuleOp module) {
  auto attr = module->getAttrOfType<IntegerAttr>(kTasksAttr);
  if (!attr || attr.getInt() < 1)
    return std::nullopt;
  return attr.getInt();
}

llvm::StringMap<int64_t> ps::placeVariables(ModuleOp module, int64_t tasks) {
  llvm::DenseSet<StringRef> updated;
  module.walk([&](ApplyGradientsOp apply) {
    if (apply.getOptimizer() == "constraint")
      return;
    for (Attribute v : apply.getVariables())
      updated.insert(cast<FlatSymbolRefAttr>(v).getValue());
    if (ArrayAttr sparse = apply.getSparseVariablesAttr())
      for (Attribute v : sparse)
        updated.insert(cast<FlatSymbolRefAttr>(v).getValue());
  });
  llvm::StringMap<int64_t> placement;
  auto strategy = module->getAttrOfType<StringAttr>(kStrategyAttr);
  if (strategy && strategy.getValue() == "greedy") {
    SmallVector<int64_t> load(static_cast<size_t>(tasks), 0);
    auto place = [&](VariableOp var) {
      auto type = cast<RankedTensorType>(var.getType());
      int64_t bytes = type.getNumElements() *
                      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      auto least = std::min_element(load.begin(), load.end());
      placement[var.getSymName()] = least - load.begin();
      *least += bytes;
    };
    for (VariableOp var : module.getOps<VariableOp>())
      if (var.getSymName() == "global_step")
        place(var);
    for (VariableOp var : module.getOps<VariableOp>())
      if (var.getSymName() != "global_step" &&
          updated.contains(var.getSymName()))
        place(var);
    placement.try_emplace("global_step", 0);
    return placement;
  }
  placement["global_step"] = 0;
  int64_t next = 1 % tasks;
  for (VariableOp var : module.getOps<VariableOp>()) {
    StringRef name = var.getSymName();
    if (name == "global_step" || !updated.contains(name))
      continue;
    placement[name] = next;
    next = (next + 1) % tasks;
  }
  return placement;
}

FailureOr<SmallVector<ApplyGradientsOp>> ps::stepUpdates(func::FuncOp func,
                                                         StringRef pass) {
  SmallVector<ApplyGradientsOp> applies;
  Operation *failed = nullptr;
  std::string why;
  func.walk([&](ApplyGradientsOp op) {
    if (failed)
      return;
    if (op.getOptimizer() == "constraint") {
      failed = op;
      why = "a variable constraint (a projection after the update) cannot "
            "run on the worker; parameter-server training does not support "
            "constraints yet";
      return;
    }
    if (op.getHyperparameters().get("clip_gradients_by_global_norm")) {
      failed = op;
      why = "clip_gradients_by_global_norm needs every gradient of the step, "
            "which parameter-server training splits across tasks; clip by "
            "value or by each gradient's norm instead";
      return;
    }
    if (!applies.empty() && op->getBlock() != applies.front()->getBlock()) {
      failed = op;
      why = "optimizer updates in different blocks (a multi-step loop)";
      return;
    }
    applies.push_back(op);
  });
  if (failed) {
    failed->emitOpError() << pass << ": " << why;
    return failure();
  }
  llvm::sort(applies, [](ApplyGradientsOp a, ApplyGradientsOp b) {
    return a->isBeforeInBlock(b);
  });
  return applies;
}

LogicalResult ps::recordSync(ModuleOp module,
                             ArrayRef<ApplyGradientsOp> applies,
                             StringRef pass) {
  std::optional<std::pair<int64_t, int64_t>> sync;
  for (ApplyGradientsOp apply : applies) {
    auto r =
        apply.getHyperparameters().getAs<IntegerAttr>("replicas_to_aggregate");
    auto n =
        apply.getHyperparameters().getAs<IntegerAttr>("total_num_replicas");
    std::optional<std::pair<int64_t, int64_t>> mine;
    if (r)
      mine = {r.getInt(), n ? n.getInt() : 0};
    if (apply != applies.front() && mine != sync)
      return apply.emitOpError()
             << pass
             << ": the step's optimizers differ in synchronous training "
                "(SyncReplicasOptimizer's replicas_to_aggregate and "
                "total_num_replicas): wrap every one, or none";
    sync = mine;
    if (mine && (mine->first < 1 || mine->second < 0))
      return apply.emitOpError() << pass << ": replicas_to_aggregate "
                                 << mine->first << " and total_num_replicas "
                                 << mine->second << " (>= 1 and >= 0)";
  }
  if (sync)
    module->setAttr("estc.ps_sync",
                    DenseI64ArrayAttr::get(module.getContext(),
                                           {sync->first, sync->second}));
  return success();
}

std::string ps::gradKey(StringRef variable) {
  return ("grad/" + variable).str();
}
std::string ps::idsKey(StringRef variable) { return ("ids/" + variable).str(); }
std::string ps::rowsKey(StringRef variable) {
  return ("rows/" + variable).str();
}
std::string ps::learningRateKey(int64_t update) {
  return "learning_rate/" + std::to_string(update);
}

RankedTensorType ps::rowsType(RankedTensorType variable) {
  SmallVector<int64_t> shape{ShapedType::kDynamic};
  llvm::append_range(shape, variable.getShape().drop_front());
  return RankedTensorType::get(shape, variable.getElementType());
}
