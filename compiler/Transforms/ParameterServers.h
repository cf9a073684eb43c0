//===- ParameterServers.h - What est-ps-worker and est-ps-task share ----===//
//
// Parameter-server training (docs/design/distributed.md, "Parameter
// servers"): a worker's step and each ps task's apply function are compiled
// from the same module, after est-autodiff, by est-ps-worker and
// est-ps-task. Both derive from it, with the functions below, which task
// holds which variable and how the tensors a worker pushes are keyed, so
// the two sides agree without talking.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TRANSFORMS_PARAMETERSERVERS_H
#define ESTC_COMPILER_TRANSFORMS_PARAMETERSERVERS_H

#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir::est::ps {

/// The module attributes: the ps task count, the task a module is compiled
/// for (absent: a worker), and what a worker's module records for the
/// runtime (estc.ps_inputs, estc.ps_remote) and on its variables
/// (est.ps_task).
inline constexpr llvm::StringLiteral kTasksAttr = "estc.ps_tasks";
inline constexpr llvm::StringLiteral kTaskAttr = "estc.ps_task";
inline constexpr llvm::StringLiteral kInputsAttr = "estc.ps_inputs";
inline constexpr llvm::StringLiteral kRemoteAttr = "estc.ps_remote";
inline constexpr llvm::StringLiteral kVariableTaskAttr = "est.ps_task";
/// "greedy": placeVariables balances the tasks' bytes.
inline constexpr llvm::StringLiteral kStrategyAttr = "estc.ps_strategy";
/// Set once a module is split: the pipeline runs its stages again from the
/// start on a lowered module (each pass must leave a module it already
/// transformed alone).
inline constexpr llvm::StringLiteral kSplitAttr = "estc.ps_split";

/// The ps task count of a module compiled for parameter-server training, or
/// nullopt.
std::optional<int64_t> psTasks(ModuleOp module);

/// Which task holds each variable the module's optimizers update, as TF's
/// replica_device_setter places them: round robin, `global_step` on task 0
/// (the Estimator creates it first), then each updated variable, in module
/// order, on the next task; or, with `estc.ps_strategy = "greedy"` (TF's
/// GreedyLoadBalancingStrategy with byte_size_load_fn), each on the task
/// holding the fewest bytes so far (the lowest such index), global_step
/// first. Slots live with their variable (they are created later, on the
/// task's own side) and are not counted, as in TF.
llvm::StringMap<int64_t> placeVariables(ModuleOp module, int64_t tasks);

/// The step's optimizer updates of `func` in block order (not the
/// constraints'); fails, naming the op, when they are in different blocks
/// or use what parameter-server training cannot split across tasks.
FailureOr<SmallVector<ApplyGradientsOp>> stepUpdates(func::FuncOp func,
                                                     llvm::StringRef pass);

/// Synchronous training (train::SyncReplicasOptimizer: the hyperparameters
/// replicas_to_aggregate and total_num_replicas on the step's updates):
/// records `estc.ps_sync = array<i64: R, N>` on the module; nothing for
/// asynchronous updates. Fails, naming the op, when the updates disagree or
/// only some are synchronous.
LogicalResult recordSync(ModuleOp module, ArrayRef<ApplyGradientsOp> applies,
                         llvm::StringRef pass);

/// The keys of the tensors a worker pushes and a task's apply function takes.
std::string gradKey(llvm::StringRef variable);
std::string idsKey(llvm::StringRef variable);
std::string rowsKey(llvm::StringRef variable);
std::string learningRateKey(int64_t update);

/// The type a task's apply function takes a sparse gradient's rows in:
/// [?] + the variable's shape[1:].
RankedTensorType rowsType(RankedTensorType variable);

} // namespace mlir::est::ps

#endif // ESTC_COMPILER_TRANSFORMS_PARAMETERSERVERS_H
