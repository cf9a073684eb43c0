//===- SessionRunHook.h - The hook contract of the Estimator loop ---------===//
//
// tf.estimator.SessionRunHook for compiled step functions. The loop of every
// train / evaluate / predict call (MonitoredSession.h) calls, for its hooks:
//
//   begin()                                  once, before anything runs
//   after_create_session(session)            once, variables initialized or
//                                            restored
//   loop:  args = before_run(context)        every hook, in order
//          <read one batch; run the step>
//          after_run(context, values)        every hook, in order; values
//                                            holds what before_run fetched
//          stop when a hook called context.request_stop() (after this
//          step's after_run calls), or at the step limit
//   end(session)                             once, also when input runs out
//
// When the input runs out, the step that found no batch does not run and its
// after_run calls are skipped, but end() is called (TF's OutOfRangeError
// rule). An exception thrown by a hook ends the call and propagates; end()
// is then not called.
//
// Fetches are names resolved by the Estimator against the running function:
//   - an output key of the compiled function ("loss", "predictions/classes",
//     a metric update's value, an extra output "tensors/<node>"),
//   - "global_step" (the value *after* this step's update in TRAIN, as TF's
//     global_step read after the train op), or any variable name.
// Graph tensors that are not outputs (e.g. an intermediate activation for
// LoggingTensorHook) are declared up front by graph_fetches(): the JIT path
// compiles each as an extra output "tensors/<node name without the mode
// prefix>"; an AOT model only has what estc compiled into it, and an unknown
// fetch is a one-line std::invalid_argument naming the fetch and the
// function.
//
// CheckpointSaverListener, the other half of TF's hook API, is here too:
// CheckpointSaverHook (Hooks.h) calls it around each checkpoint.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SESSIONRUNHOOK_H
#define ESTC_ESTIMATOR_SESSIONRUNHOOK_H

#include "lib/Checkpoint/Checkpoint.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

using train::VariableMap;

/// What hooks may look at between steps: the model's variables in host
/// memory terms. Implemented by the Estimator over its CompiledModel.
class Session {
public:
  virtual ~Session() = default;
  /// The global_step variable's current value.
  virtual int64_t global_step() const = 0;
  /// Every variable of the model, in the model's order.
  virtual std::vector<std::string> variable_names() const = 0;
  /// One variable's current value; std::invalid_argument for an unknown name.
  virtual TensorValue variable_value(const std::string &name) const = 0;
  /// Every variable a checkpoint holds (weights, optimizer slots,
  /// global_step; not the metrics' local state).
  virtual VariableMap checkpoint_variables() const = 0;
  /// Writes the checkpoint of `global_step` with `saver` and returns its
  /// prefix (CheckpointSaverHook): saver.save(checkpoint_variables()),
  /// unless the variables live elsewhere (parameter-server training writes
  /// a sharded checkpoint, each ps task its share).
  virtual std::string save_checkpoint(train::Saver &saver,
                                      int64_t global_step) {
    return saver.save(checkpoint_variables(), global_step);
  }
  /// The Estimator's model_dir ("" when it has none).
  virtual const std::string &model_dir() const = 0;
};

/// tf.train.SessionRunArgs: what a hook wants fetched in the coming step.
struct SessionRunArgs {
  std::vector<std::string> fetches;
};

/// Timing of one phase of a step, for ProfilerHook: microseconds since the
/// Estimator call began.
struct StepPhase {
  std::string name; // "input", "before_run", "run:<function>", "after_run"
  double start_us = 0;
  double duration_us = 0;
};

/// tf.train.SessionRunValues: the fetched values, by fetch name, and the
/// step's phase timings (TF's run_metadata, for ProfilerHook).
struct SessionRunValues {
  std::map<std::string, TensorValue> results;
  std::vector<StepPhase> phases;
};

/// tf.train.SessionRunContext.
class SessionRunContext {
public:
  explicit SessionRunContext(Session &session) : session_(&session) {}
  Session &session() const { return *session_; }
  /// Ends the loop after this step (its remaining after_run calls still run).
  void request_stop() { stopRequested_ = true; }
  bool stop_requested() const { return stopRequested_; }

private:
  Session *session_;
  bool stopRequested_ = false;
};

/// tf.estimator.SessionRunHook. Every method has an empty default.
class SessionRunHook {
public:
  virtual ~SessionRunHook() = default;
  /// Graph nodes (names without the mode prefix, e.g. "dense/Relu") this hook
  /// will fetch though they are not function outputs; asked once before the
  /// JIT compiles the mode.
  virtual std::vector<std::string> graph_fetches() const { return {}; }
  virtual void begin() {}
  virtual void after_create_session(Session &session) { (void)session; }
  virtual SessionRunArgs before_run(SessionRunContext &context) {
    (void)context;
    return {};
  }
  virtual void after_run(SessionRunContext &context,
                         const SessionRunValues &values) {
    (void)context;
    (void)values;
  }
  virtual void end(Session &session) { (void)session; }
};

using HookPtr = std::shared_ptr<SessionRunHook>;
using Hooks = std::vector<HookPtr>;

/// tf.estimator.CheckpointSaverListener: called around every checkpoint a
/// CheckpointSaverHook saves (train()'s saving_listeners). Every method has
/// an empty default.
class CheckpointSaverListener {
public:
  virtual ~CheckpointSaverListener() = default;
  virtual void begin() {}
  virtual void before_save(Session &session, int64_t global_step) {
    (void)session;
    (void)global_step;
  }
  /// Returning true requests that training stop (TF's after_save -> True).
  virtual bool after_save(Session &session, int64_t global_step) {
    (void)session;
    (void)global_step;
    return false;
  }
  virtual void end(Session &session, int64_t global_step) {
    (void)session;
    (void)global_step;
  }
};
using ListenerPtr = std::shared_ptr<CheckpointSaverListener>;

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_SESSIONRUNHOOK_H
