//===- ModelSession.h - The session hooks see over a compiled model ----===//
//
// Internal to the Estimator. ModelSession: the Session (SessionRunHook.h)
// of a compiled model, its variables as hooks and checkpoints see them; and
// the moves of a model's variables in and out of checkpoints and snapshots.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_MODELSESSION_H
#define ESTC_ESTIMATOR_MODELSESSION_H

#include "estimator/Input.h"
#include "estimator/SessionRunHook.h"
#include "lib/Checkpoint/Checkpoint.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace estc {
namespace rt {
class CompiledModel;
} // namespace rt

namespace estimator {
namespace detail {

/// Puts `variables` (a checkpoint's) into the model: every non-local
/// variable must be there with the model's dtype and shape. `source` (the
/// checkpoint file) starts the errors.
void loadVariables(rt::CompiledModel &m, const train::VariableMap &variables,
                   const std::string &source);

/// `variables` with each variable of `varList` (checkpoint name ->
/// variable: EstimatorSpec::scaffold's saver_var_list) replaced by the
/// value under its checkpoint name; a name `variables` lacks is a one-line
/// CheckpointError starting with `source`.
/// loadVariables from a checkpoint file, reading only the model's variables,
/// one at a time (a part of a partitioned variable that the checkpoint
/// stores as slices, its slice alone): a parameter-server task restoring
/// its share of a table larger than itself.
void loadVariablesFrom(rt::CompiledModel &m,
                       const train::CheckpointReader &reader);

train::VariableMap
applySaverVarList(const train::VariableMap &variables,
                  const std::map<std::string, std::string> &varList,
                  const std::string &source);

/// Every variable's bytes (to put a model back after a nested evaluation).
std::vector<std::string> snapshotVariables(rt::CompiledModel &m);
void restoreSnapshot(rt::CompiledModel &m,
                     const std::vector<std::string> &snapshot);

/// The session hooks see: the model's variables, global_step, and what a
/// checkpoint of it holds (with the input pipeline's position, when
/// save_input_state was called).
class PsWorker;

class ModelSession : public Session {
public:
  ModelSession(rt::CompiledModel &model, const std::string &modelDir);

  int64_t global_step() const override;
  std::vector<std::string> variable_names() const override;
  TensorValue variable_value(const std::string &name) const override;
  train::VariableMap checkpoint_variables() const override;
  /// Saves `data`'s position with every checkpoint (train()).
  void save_input_state(Dataset &data) { input_ = &data; }
  /// The other replicas' input positions at global step `step` (rank ->
  /// position), saved with a checkpoint of that step.
  void set_replica_input_states(std::map<int, std::string> states,
                                int64_t step) {
    replicaStates_ = std::move(states);
    replicaStatesStep_ = step;
  }
  /// Parameter-server training: the ps tasks hold the variables with a
  /// psTask (with their slots and tables), which checkpoints then take in
  /// place of the model's copies. A checkpoint in TF's format is a sharded
  /// save (each task writes its share where it lives, the chief its own
  /// part: no process ever holds every variable); a safetensors one pulls
  /// them all into this process first.
  void set_parameter_servers(PsWorker *ps) { ps_ = ps; }
  std::string save_checkpoint(train::Saver &saver,
                              int64_t global_step) override;
  const std::string &model_dir() const override { return modelDir_; }
  rt::CompiledModel &model() const { return model_; }

private:
  rt::CompiledModel &model_;
  std::string modelDir_;
  int globalStep_;
  Dataset *input_ = nullptr;
  mutable bool warnedInput_ = false;
  /// What a checkpoint holds that this process keeps (all of it without
  /// parameter servers).
  train::VariableMap ownVariables() const;
  PsWorker *ps_ = nullptr;
  std::map<int, std::string> replicaStates_;
  int64_t replicaStatesStep_ = -1;
};

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_MODELSESSION_H
