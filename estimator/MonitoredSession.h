//===- MonitoredSession.h - The one hooked loop of the Estimator ---------===//
//
// tf.compat.v1.train.MonitoredSession for the Estimator: the loop that
// train(), evaluate() and predict() all run, with the contract of
// SessionRunHook.h:
//
//   MonitoredSession loop(session, step, hooks, create_session);
//       // every hook's begin(); create_session() (restore or initialize);
//       // every hook's after_create_session(session)
//   while (!loop.should_stop()) {
//     std::optional<FetchValues> out = loop.run({"loss"});
//       // every hook's before_run; the next batch (none: the input ran out,
//       // nothing runs, no after_run, nullopt); the step; every hook's
//       // after_run with the values of its fetches
//     if (!out) break;
//     use(out->at("loss"));
//   }
//   loop.close();  // every hook's end(session), once
//
// What a step is (which function, where its batches come from, how a fetch
// name is resolved) is the StepRunner's business: the Estimator runs a
// compiled function on an input_fn's batches (estimator/Estimator.cpp), the
// hook tests run a hand-written step (test/unit/HooksTest.cpp). Everything
// train() does beyond stepping — checkpoints, step counting, the NaN check,
// summaries, the log line — is a hook it installs (estimator/Hooks.h), as
// TF's Estimator does.
//
// An exception from a hook or a step propagates out of the constructor or
// run(); the hooks' end() is then not called (TF's rule: end() only after a
// loop that ended normally or ran out of input).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_MONITOREDSESSION_H
#define ESTC_ESTIMATOR_MONITOREDSESSION_H

#include "estimator/SessionRunHook.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

/// Fetched values by fetch name.
using FetchValues = std::map<std::string, TensorValue>;

/// One step of a model between the hooks' before_run and after_run calls.
class StepRunner {
public:
  virtual ~StepRunner() = default;
  /// The function a step runs ("train"): its phase is "run:<function>".
  virtual std::string function_name() const = 0;
  /// Reads the next batch and makes it the step's input; false when the
  /// input has run out.
  virtual bool next_batch() = 0;
  /// Runs the step on that batch so that every name in `fetches` (the
  /// hooks' and the caller's) can be read with value(). A name the step
  /// cannot resolve is a one-line std::invalid_argument, thrown before
  /// anything runs.
  virtual void run(const std::vector<std::string> &fetches) = 0;
  /// The value of a fetch after run().
  virtual TensorValue value(const std::string &fetch) = 0;
  /// The value of `fetch`, the i-th name of the last run()'s fetches, into
  /// `into`, whose buffers a step may reuse: the loop reads every fetch of
  /// every step this way, without allocating once the values are sized.
  virtual void read(size_t i, const std::string &fetch, TensorValue &into) {
    (void)i;
    into = value(fetch);
  }
};

/// tf.compat.v1.train.MonitoredSession over a Session (what hooks see of
/// the variables) and a StepRunner (what a step does).
class MonitoredSession {
public:
  /// Calls every hook's begin(), then `create_session` (which restores or
  /// initializes the variables `session` reads), then every hook's
  /// after_create_session(session). The hooks are called in this order in
  /// every phase. `session` and `step` must outlive the loop.
  MonitoredSession(Session &session, StepRunner &step, Hooks hooks,
                   const std::function<void()> &create_session);
  MonitoredSession(const MonitoredSession &) = delete;
  MonitoredSession &operator=(const MonitoredSession &) = delete;

  /// True once a hook requested a stop (after that step's after_run calls)
  /// or the input ran out.
  bool should_stop() const { return stop_; }

  /// One hooked step: every hook's before_run; the next batch; the step,
  /// run for the hooks' fetches and `fetches`; every hook's after_run with
  /// the values of its own fetches and the step's phases. Returns the
  /// values of `fetches`, or nullopt when the input had run out (no step
  /// ran, no after_run was called; should_stop() is then true). A
  /// std::logic_error after should_stop() or close().
  std::optional<FetchValues> run(const std::vector<std::string> &fetches = {});

  /// run() without building its map: false when the input had run out;
  /// after true, value(f) is the step's value of each f of `fetches` (the
  /// Estimator's own loop, which reads one loss a step).
  bool run_step(const std::vector<std::string> &fetches);
  /// A fetch of the last run_step() / run() (the caller's or a hook's);
  /// std::out_of_range for a name that step did not fetch.
  const TensorValue &value(const std::string &fetch) const {
    return values_.at(fetch);
  }

  /// Every hook's end(session), once (later calls do nothing).
  void close();

  Session &session() const { return *session_; }
  /// Steps that ran (their after_run calls were made).
  int64_t steps_run() const { return stepsRun_; }

private:
  double microsSinceStart(std::chrono::steady_clock::time_point t) const;
  /// Whether this step's fetches (the caller's, each hook's) are the last
  /// step's; if not, remembers them and rebuilds what is kept per step.
  bool sameFetchesAsLastStep(const std::vector<std::string> &fetches);
  void rebuildFetches();

  Session *session_;
  StepRunner *step_;
  Hooks hooks_;
  std::chrono::steady_clock::time_point start_;
  bool stop_ = false;
  bool closed_ = false;
  int64_t stepsRun_ = 0;

  // Kept from step to step, so that a step whose fetches are the last
  // step's (nearly every step) allocates nothing here: what the hooks'
  // before_run gave, the fetches it was all built for, the union of the
  // fetches in the order StepRunner::run gets them, their values, and each
  // hook's SessionRunValues with where each of its values comes from.
  std::vector<SessionRunArgs> args_;
  std::vector<std::string> lastCallerFetches_;
  std::vector<std::vector<std::string>> lastHookFetches_;
  bool fetchesBuilt_ = false;
  std::vector<std::string> allFetches_;
  FetchValues values_;
  std::vector<std::pair<const std::string *, TensorValue *>> valueSlots_;
  std::vector<SessionRunValues> hookValues_;
  std::vector<std::vector<std::pair<TensorValue *, const TensorValue *>>>
      hookCopies_;
  std::string runFunction_;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_MONITOREDSESSION_H
