//===- ModelSession.cpp - The session hooks see over a compiled model --===//

#include "estimator/ModelSession.h"

#include "estimator/Distributed.h"
#include "estimator/Logging.h"
#include "estimator/ParameterServers.h"
#include "lib/Checkpoint/Partitions.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "runtime/CompiledModel.h"
#include "runtime/binding/TensorBinding.h"

#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

namespace {
/// Metric state, which evaluation resets and checkpoints leave out.
bool isLocal(const rt::VariableSpec &v) { return v.local; }

/// Copies `value` into variable i of `m` after checking its dtype and shape.
void storeVariable(rt::CompiledModel &m, int i, const TensorValue &value,
                   const std::string &source) {
  const rt::VariableSpec &v = m.spec().variables[i];
  VariableSpec want = binding::variableSpec(v);
  if (value.spec() != want)
    throw train::CheckpointError(
        source + ": variable '" + v.name + "' is " + value.spec().str() +
        " in the checkpoint but " + want.str() + " in the model");
  std::memcpy(m.variable_data(i), value.data.data(), value.data.size());
}

[[noreturn]] void notInCheckpoint(const rt::VariableSpec &v,
                                  const std::string &source) {
  throw train::CheckpointError(source + ": variable '" + v.name + "' (" +
                               binding::variableSpec(v).str() +
                               ") is not in the checkpoint");
}
} // namespace

void loadVariables(rt::CompiledModel &m, const train::VariableMap &variables,
                   const std::string &source) {
  const rt::ModelSpec &spec = m.spec();
  // The parts of partitioned variables, which a TF checkpoint holds as
  // one full tensor (lib/Checkpoint/Partitions.h); computed when needed.
  std::optional<std::map<std::string, train::PartLayout>> layouts;
  for (int i = 0; i < spec.numVariables; ++i) {
    const rt::VariableSpec &v = spec.variables[i];
    if (isLocal(v))
      continue;
    auto it = variables.find(v.name);
    if (it != variables.end()) {
      storeVariable(m, i, it->second, source);
      continue;
    }
    if (!layouts) {
      std::map<std::string, VariableSpec> specs;
      for (int j = 0; j < spec.numVariables; ++j)
        if (!isLocal(spec.variables[j]))
          specs[spec.variables[j].name] =
              binding::variableSpec(spec.variables[j]);
      layouts = train::partition_layouts(specs);
    }
    auto layout = layouts->find(v.name);
    if (layout == layouts->end())
      notInCheckpoint(v, source);
    auto full = variables.find(layout->second.full_name);
    if (full == variables.end())
      notInCheckpoint(v, source);
    storeVariable(m, i, train::slice_of(full->second, layout->second, source),
                  source);
  }
}

void loadVariablesFrom(rt::CompiledModel &m,
                       const train::CheckpointReader &reader) {
  const rt::ModelSpec &spec = m.spec();
  const std::string &source = reader.path();
  const train::TensorBundleReader *bundle = reader.tensor_bundle();
  for (int i = 0; i < spec.numVariables; ++i) {
    const rt::VariableSpec &v = spec.variables[i];
    if (isLocal(v))
      continue;
    VariableSpec want = binding::variableSpec(v);
    auto *out = static_cast<char *>(m.variable_data(i));
    if (bundle) {
      // Straight into the variable (a whole tensor, or a part's stored
      // slice): the restore holds nothing more than the model.
      if (bundle->has_tensor(v.name) && bundle->slices_of(v.name).empty()) {
        bundle->read_into(v.name, want.dtype, want.shape, out);
        continue;
      }
      if (auto part = train::stored_part(*bundle, v.name)) {
        bundle->read_into(part->first, want.dtype, want.shape, out,
                          &part->second);
        continue;
      }
      notInCheckpoint(v, source);
    }
    if (!reader.has_tensor(v.name))
      notInCheckpoint(v, source);
    storeVariable(m, i, reader.get_tensor(v.name), source);
  }
}

train::VariableMap
applySaverVarList(const train::VariableMap &variables,
                  const std::map<std::string, std::string> &varList,
                  const std::string &source) {
  train::VariableMap out = variables;
  for (const auto &[checkpointName, variable] : varList) {
    auto it = variables.find(checkpointName);
    if (it == variables.end())
      throw train::CheckpointError(
          source + ": the EstimatorSpec's scaffold.saver_var_list restores '" +
          variable + "' from '" + checkpointName +
          "', which is not in the checkpoint");
    out[variable] = it->second;
  }
  return out;
}

std::vector<std::string> snapshotVariables(rt::CompiledModel &m) {
  std::vector<std::string> out;
  for (int i = 0; i < m.spec().numVariables; ++i)
    out.emplace_back(static_cast<const char *>(m.variable_data(i)),
                     static_cast<size_t>(m.variable_bytes(i)));
  return out;
}

void restoreSnapshot(rt::CompiledModel &m,
                     const std::vector<std::string> &snapshot) {
  for (int i = 0; i < m.spec().numVariables; ++i)
    std::memcpy(m.variable_data(i), snapshot[i].data(), snapshot[i].size());
}

ModelSession::ModelSession(rt::CompiledModel &model,
                           const std::string &modelDir)
    : model_(model), modelDir_(modelDir),
      globalStep_(model.find_variable("global_step")) {}

int64_t ModelSession::global_step() const {
  if (globalStep_ < 0)
    return 0;
  // Read every step (the progress bar): the i64 scalar it nearly always
  // is without a TensorValue.
  const rt::VariableSpec &v = model_.spec().variables[globalStep_];
  if (v.dtype == rt::DType::I64 && v.rank == 0) {
    int64_t step;
    std::memcpy(&step, model_.variable_data(globalStep_), sizeof step);
    return step;
  }
  return static_cast<int64_t>(
      binding::readVariable(model_, globalStep_).element(0));
}

std::vector<std::string> ModelSession::variable_names() const {
  std::vector<std::string> names;
  for (int i = 0; i < model_.spec().numVariables; ++i)
    names.push_back(model_.spec().variables[i].name);
  return names;
}

TensorValue ModelSession::variable_value(const std::string &name) const {
  int index = model_.find_variable(name);
  if (index < 0)
    throw std::invalid_argument("Session: no variable '" + name +
                                "' in the model");
  return binding::readVariable(model_, index);
}

train::VariableMap ModelSession::checkpoint_variables() const {
  train::VariableMap out = ownVariables();
  if (ps_)
    out.merge(ps_->variables());
  return out;
}

std::string ModelSession::save_checkpoint(train::Saver &saver,
                                          int64_t global_step) {
  if (!ps_ || saver.format() != train::CheckpointFormat::TensorBundle)
    return Session::save_checkpoint(saver, global_step);
  return saver.save_sharded(
      global_step, ps_->num_tasks() + 1,
      [&](const std::vector<std::string> &parts, bool sync) {
        // The chief's part (its input position, the variables no task
        // holds), then every task's, concurrently.
        train::write_tensor_bundle(parts.back(), ownVariables(),
                                   {.num_shards = 1, .sync = sync});
        ps_->save({parts.begin(), parts.end() - 1},
                  static_cast<int>(parts.size()), sync);
      });
}

train::VariableMap ModelSession::ownVariables() const {
  train::VariableMap out;
  for (int i = 0; i < model_.spec().numVariables; ++i)
    if (!isLocal(model_.spec().variables[i]) &&
        !(ps_ && model_.spec().variables[i].psTask >= 0))
      out[model_.spec().variables[i].name] = binding::readVariable(model_, i);
  // The other replicas' input positions, when they were gathered for
  // this very step (DistributedStep).
  if (replicaStatesStep_ == global_step())
    for (const auto &[rank, state] : replicaStates_)
      if (rank > 0)
        out[replicaInputStateTensor(rank)] = pack_bytes(state);
  if (input_) {
    std::string why;
    if (std::optional<std::string> state = input_->save_state(&why)) {
      out[kInputStateTensor] = pack_bytes(*state);
    } else if (!warnedInput_ && why != "the input ran out") {
      log_info("The input pipeline's position is not saved with the "
               "checkpoints (" +
               why + "); a restarted train() starts input_fn afresh.");
      warnedInput_ = true;
    }
  }
  return out;
}

} // namespace detail
} // namespace estimator
} // namespace estc
