//===- ParameterServers.h - Parameter-server training's side of train() --===//
//
// Internal to the Estimator (docs/design/distributed.md, "Parameter
// servers"). A TF_CONFIG cluster with a `ps` job trains as TF's
// between-graph replication: each ps task holds a share of the variables
// and applies the optimizers to it (a model compiled by est-ps-task); the
// chief and the workers pull the variables before each step, run the
// compiled step (est-ps-worker), which pulls the embedding rows it reads
// and pushes its gradients; the chief also saves the checkpoints and, at
// the end, ends the job.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_PARAMETERSERVERS_H
#define ESTC_ESTIMATOR_PARAMETERSERVERS_H

#include "estimator/MonitoredSession.h"
#include "estimator/RunConfig.h"
#include "lib/Checkpoint/Checkpoint.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace estc {
namespace rt {
class CompiledModel;
} // namespace rt
namespace ps {
class Client;
} // namespace ps

namespace estimator {
namespace detail {

/// Whether `config`'s cluster trains with parameter servers (it has a ps
/// job).
bool psTraining(const RunConfig &config);

/// Refuses, with one std::invalid_argument line naming what is at fault, a
/// parameter-server cluster train() cannot run: no chief or worker, jobs
/// other than chief / master, worker and ps, train_distribute as well.
void checkPsCluster(const RunConfig &config, const std::string &who);

/// A ps task: serves the variables of `m` (compiled for this task:
/// JitOptions::psTask; restored or initialized by the caller, at global
/// step `step`) at its TF_CONFIG address until the chief ends the job.
void serveParameters(const RunConfig &config, rt::CompiledModel &m,
                     int64_t step);

/// A worker's (or the chief's) connection to the ps tasks while train()
/// runs: installed for compiled code; the step's pulls and pushes around
/// each call of it.
class PsWorker {
public:
  /// Connects to every ps task of the cluster (up to the timeout) and
  /// checks that they serve the model `m` was compiled for.
  PsWorker(const RunConfig &config, rt::CompiledModel &m);
  ~PsWorker();
  PsWorker(const PsWorker &) = delete;
  PsWorker &operator=(const PsWorker &) = delete;

  /// The worker's copies of the variables the tasks hold := theirs.
  void pull();
  /// Sends the step's gradients (computed at `step`) and refreshes the
  /// worker's global_step from task 0.
  void push(int64_t step);
  /// Every variable every task holds (a checkpoint's worth).
  train::VariableMap variables();
  /// The cluster's ps tasks.
  int num_tasks() const;
  /// Task t writes its part of a sharded checkpoint at parts[t] (Saver::
  /// save_sharded; `numParts` counts the chief's part too).
  void save(const std::vector<std::string> &parts, int numParts, bool sync);
  /// The chief, at the end of training: every ps task stops serving.
  void end_job();
  /// Whether a call found the job ended by the chief (a worker then stops
  /// training as the chief did).
  bool job_ended() const;

private:
  rt::CompiledModel &m_;
  int globalStep_ = -1;
  size_t tasks_ = 0;
  std::unique_ptr<ps::Client> client_;
};

/// A step of parameter-server training: the worker's copies of the
/// variables pulled before it, its gradients pushed after it.
class PsStep : public StepRunner {
public:
  PsStep(StepRunner &inner, PsWorker &worker, const Session &session)
      : inner_(inner), worker_(worker), session_(session) {}
  std::string function_name() const override { return inner_.function_name(); }
  bool next_batch() override { return inner_.next_batch(); }
  void run(const std::vector<std::string> &fetches) override {
    worker_.pull();
    int64_t step = session_.global_step();
    inner_.run(fetches);
    worker_.push(step);
  }
  TensorValue value(const std::string &fetch) override {
    return inner_.value(fetch);
  }
  void read(size_t i, const std::string &fetch, TensorValue &into) override {
    inner_.read(i, fetch, into);
  }

private:
  StepRunner &inner_;
  PsWorker &worker_;
  const Session &session_;
};

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_PARAMETERSERVERS_H
