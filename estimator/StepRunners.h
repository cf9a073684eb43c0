//===- StepRunners.h - One step of a compiled function on the input ----===//
//
// Internal to the Estimator: the MonitoredSession's StepRunners
// (MonitoredSession.h) over a compiled model. ModelStep runs one step of a
// function on an input_fn's batches; LoopStep, iterations_per_loop steps
// between two rounds of hooks; DistributedStep, a replica's step in a
// MultiWorkerMirroredStrategy job.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_STEPRUNNERS_H
#define ESTC_ESTIMATOR_STEPRUNNERS_H

#include "estimator/Feed.h"
#include "estimator/Input.h"
#include "estimator/MonitoredSession.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

class CheckpointSaverHook;

namespace detail {

class ModelSession;
class ReplicaGroup;

/// One step of a compiled function on an input_fn's batches (the
/// MonitoredSession's StepRunner). Fetches resolve against the function's
/// outputs, then (in EVAL) eval_metrics' outputs, which run after the step
/// when a fetch needs them, then the variables.
class ModelStep : public StepRunner {
public:
  /// `call` ("train", ...) names the Estimator call in input errors;
  /// `metricsFn` is eval_metrics, or -1.
  ModelStep(rt::CompiledModel &m, int fn, int metricsFn, Dataset &data,
            std::string call);

  /// The function the last step ran (`train_summaries` on a summary step).
  std::string function_name() const override;
  bool next_batch() override;
  /// The size of the last batch read.
  int64_t batch_size() const { return batchSize_; }
  /// Training steps the batch next_batch() read makes (a loop's: several).
  virtual int64_t steps_in_batch() const { return 1; }
  void run(const std::vector<std::string> &fetches) override;
  TensorValue value(const std::string &fetch) override;
  void read(size_t i, const std::string &fetch, TensorValue &into) override;

  /// The function with the summaries' values (`train_summaries`, or -1):
  /// a step with a fetch only it has ("summaries/<tag>") runs it instead of
  /// the step function, on the same inputs, and every output fetch of that
  /// step is read from it.
  void set_summaries_function(int fn) { summariesFn_ = fn; }

protected:
  enum class Kind { Output, Metric, Variable, Summary };
  struct Item {
    Kind kind;
    int index;
  };
  /// `fetch` resolved, from the last run() when it was one of its fetches.
  Item lastItem(const std::string &fetch);
  void readItem(const Item &item, const std::string &fetch, TensorValue &into);
  Item resolve(const std::string &fetch);

  /// Runs summariesFn_ on the inputs fed to function `from` (the step
  /// function).
  void runSummaries(int from);

  rt::CompiledModel &m_;
  int fn_, metricsFn_;
  int summariesFn_ = -1;
  bool ranSummaries_ = false;
  Dataset &data_;
  std::string call_;
  binding::InputBinding inputs_;
  ArrayFeed arrayFeed_;
  std::vector<int64_t> rows_;
  int64_t batchSize_ = 0;
  std::map<std::string, Item> cache_;
  std::vector<std::string> lastFetches_;
  std::vector<Item> lastItems_;
};

/// RunConfig::iterations_per_loop = N > 1: a step of the MonitoredSession
/// (so one round of hooks) is up to N training steps. With the model's
/// compiled `train_loop` (`loopFn`), the N batches are staged in its inputs
/// and run in one call; without one (an AOT model compiled without
/// --train-loop, a model with sparse inputs), the steps run one call each.
/// A loop stops short at `lastStep` (max_steps / steps), when the input runs
/// out, and before a batch of another size (which then starts the next).
class LoopStep : public ModelStep {
public:
  LoopStep(rt::CompiledModel &m, int stepFn, int loopFn, Dataset &data,
           const Session &session, int64_t iterations,
           const std::optional<int64_t> &lastStep);

  bool next_batch() override;
  int64_t steps_in_batch() const override { return steps_; }
  void run(const std::vector<std::string> &fetches) override;

private:
  /// Copies `batch` into row block steps_ of train_loop's inputs (feed()
  /// checks it against the step function first).
  void stage(const Batch &batch, int64_t want);

  int stepFn_, loopFn_;
  const Session &session_;
  int64_t iterations_;
  const std::optional<int64_t> &lastStep_;
  binding::InputBinding stepInputs_;
  int64_t steps_ = 0;
  std::vector<Batch> staged_;    // the host loop's batches
  std::optional<Batch> pending_; // a batch of another size, for the next loop
};

/// A replica's step in a MultiWorkerMirroredStrategy job: before each step
/// the replicas agree (one all-reduce of two words) on whether every one of
/// them has a batch -- a replica whose input ran out stops them all, where
/// it would otherwise leave the others waiting in the step's collectives --
/// and on whether the chief's checkpoint saver will save after it; then
/// every replica's input position is gathered for that checkpoint.
class DistributedStep : public StepRunner {
public:
  DistributedStep(ModelStep &inner, ReplicaGroup &group, ModelSession &session,
                  Dataset &data, CheckpointSaverHook *saver,
                  const std::optional<int64_t> &lastStep)
      : inner_(inner), group_(group), session_(session), data_(data),
        saver_(saver), lastStep_(lastStep) {}

  std::string function_name() const override { return inner_.function_name(); }
  bool next_batch() override;
  void run(const std::vector<std::string> &fetches) override {
    inner_.run(fetches);
  }
  TensorValue value(const std::string &fetch) override {
    return inner_.value(fetch);
  }
  void read(size_t i, const std::string &fetch, TensorValue &into) override {
    inner_.read(i, fetch, into);
  }

private:
  ModelStep &inner_;
  ReplicaGroup &group_;
  ModelSession &session_;
  Dataset &data_;
  CheckpointSaverHook *saver_;
  const std::optional<int64_t> &lastStep_;
};

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_STEPRUNNERS_H
