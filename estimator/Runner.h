//===- Runner.h - The Estimator's calls over one MonitoredSession ------===//
//
// Internal to the Estimator. detail::Runner runs train() and evaluate(),
// each one MonitoredSession over the backend's compiled model (Runner.cpp),
// and holds what an Estimator keeps between calls (model_dir's checkpoint
// index, its event writers, its replica group). Predictions::State is a
// predict() range's loop (Predictions.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_RUNNER_H
#define ESTC_ESTIMATOR_RUNNER_H

#include "estimator/Distributed.h"
#include "estimator/Estimator.h"
#include "estimator/EstimatorBackend.h"
#include "estimator/ModelSession.h"
#include "estimator/MonitoredSession.h"
#include "estimator/StepRunners.h"
#include "lib/Summary/Summary.h"
#include "runtime/cpu/Kernels.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace estc {
namespace estimator {
namespace detail {

/// Prepares `backend`'s model for `mode` from `data`'s element spec; an empty
/// dataset that declares none runs the current model, if there is one.
/// `caller` ("Estimator.train", ...) starts the error.
void prepareModel(Backend &backend, ModeKeys mode, Dataset &data,
                  const std::string &caller);

/// The Estimator's calls over one MonitoredSession each.
class Runner {
public:
  Runner(const RunConfig &config, const std::optional<WarmStartSettings> &warm,
         Backend &backend)
      : config_(config), warm_(warm), backend_(backend),
        checkpoints_(config.model_dir()) {}

  /// model_dir's checkpoints: every reader of this Estimator (train's
  /// restore, evaluate's, latest_checkpoint) asks this one index, so a
  /// corrupt checkpoint is checked and reported once.
  train::CheckpointIndex &checkpoints() { return checkpoints_; }

  void train(const InputFn &input_fn, const Hooks &hooks,
             std::optional<int64_t> steps, std::optional<int64_t> max_steps,
             const Listeners &listeners);
  /// A ps task of parameter-server training (TF's run_ps): compiles its
  /// apply function (input_fn gives the features' shapes), restores its
  /// variables from the latest checkpoint or initializes them, and serves
  /// them until the chief ends the job.
  void serve_parameters(const InputFn &input_fn);
  /// input_fn's Dataset with the host transform installed; a replica's
  /// share of it when `shard` (train_distribute's auto_shard).
  Dataset input(const InputFn &input_fn, bool shard = false) const {
    Dataset data = input_fn();
    if (shard && group_)
      data = std::move(data).shard(group_->size(), group_->rank());
    if (transform)
      data.set_transform(transform);
    return data;
  }
  /// The model's host half (Estimator::set_host_transform).
  std::shared_ptr<const HostTransform> transform;
  /// RunConfig's intra-op threads for the runtime, at the start of a call.
  void applyThreads() const {
    if (config_.intra_op_parallelism_threads() > 0)
      estc_runtime_set_num_threads(config_.intra_op_parallelism_threads());
  }
  EvalResults evaluate(const InputFn &input_fn, std::optional<int64_t> steps,
                       const Hooks &hooks, const std::string &checkpoint_path,
                       const std::string &name, bool inMemory);

  /// Variables from `checkpoint_path`, the latest checkpoint, or @init (with
  /// a log line naming `call`); a checkpoint through `mode`'s
  /// scaffold.saver_var_list (EstimatorSpec.h).
  void restoreForInference(rt::CompiledModel &m,
                           const std::string &checkpoint_path,
                           const std::string &call, ModeKeys mode);
  /// model_fn's scaffold.saver_var_list for `mode` (empty for AOT models).
  const std::map<std::string, std::string> &saverVarList(ModeKeys mode) const;
  summary::SummaryWriter &writer(const std::string &logdir) {
    return *sharedWriter(logdir);
  }
  /// This Estimator's replica group, joined at its first distributed
  /// train() and kept for the next ones.
  ReplicaGroup &group() {
    if (!group_)
      group_ = std::make_unique<ReplicaGroup>(config_);
    return *group_;
  }
  std::string evalDir(const std::string &name) const {
    return (std::filesystem::path(config_.model_dir()) /
            (name.empty() ? std::string("eval") : "eval_" + name))
        .string();
  }
  bool training() const { return training_; }
  /// Hooks with graph fetches, for the backend.
  static std::vector<std::string> graphFetches(const Hooks &hooks) {
    std::set<std::string> all;
    for (const HookPtr &h : hooks)
      for (const std::string &f : h->graph_fetches())
        all.insert(f);
    return {all.begin(), all.end()};
  }
  Backend &backend() { return backend_; }
  const RunConfig &config() const { return config_; }

private:
  void initialize(rt::CompiledModel &m);
  /// The hooks of a train() call, built in ones included (see train()).
  Hooks trainingHooks(const Hooks &userHooks, const EstimatorSpec *spec,
                      bool hasLoss, std::optional<int64_t> steps,
                      std::optional<int64_t> max_steps,
                      const Listeners &listeners);
  std::shared_ptr<summary::SummaryWriter>
  sharedWriter(const std::string &logdir);

  const RunConfig &config_;
  const std::optional<WarmStartSettings> &warm_;
  Backend &backend_;
  // The writers this Estimator used, kept open while it lives.
  std::vector<std::shared_ptr<summary::SummaryWriter>> writers_;
  train::CheckpointIndex checkpoints_;
  bool training_ = false;
  std::unique_ptr<ReplicaGroup> group_;
};

} // namespace detail

/// A predict() range's loop, started by its first begin().
struct Predictions::State {
  detail::Runner *runner = nullptr;
  Dataset data;
  Hooks hooks;
  std::vector<std::string> fetches; // "predictions/<key>"
  std::string checkpointPath;
  bool single = true;
  rt::CompiledModel *model = nullptr;
  int fn = -1;
  std::unique_ptr<detail::ModelSession> session;
  std::unique_ptr<detail::ModelStep> step;
  std::unique_ptr<MonitoredSession> loop;
  bool done = false;
  FetchValues batchValues; // by prediction key
  std::shared_ptr<const HostTransform> transform;
  int64_t batchSize = 0, index = 0;
  Prediction current;

  explicit State(Dataset d) : data(std::move(d)) {}
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_RUNNER_H
