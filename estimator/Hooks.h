//===- Hooks.h - The built-in SessionRunHooks (tf.train's hooks) ---------===//
//
// The hooks of tf.compat.v1.train / tf.estimator, over the contract of
// SessionRunHook.h, with TF's names, arguments and semantics:
//
//   LoggingTensorHook     logs fetched tensors every N steps or seconds
//   StopAtStepHook        requests a stop at num_steps / last_step
//   CheckpointSaverHook   saves checkpoints every N steps or seconds, with
//                         CheckpointSaverListeners
//   StepCounterHook       "global_step/sec" to the log and an event file
//   NanTensorHook         a NaN loss fails the run, or stops it
//   SummarySaverHook      scalar fetches and the model's summaries into
//                         the model_dir event file
//   FinalOpsHook          values read when the loop ends
//   GlobalStepWaiterHook  waits until the global step reaches a value
//   ProfilerHook          Chrome trace (timeline-<step>.json) of a step's
//                         phases
//
// Where TF differs because of our contract, the hook says so. The main
// difference: the "global_step" a hook fetches is the value *after* the
// step's update (the step that just ran), where TF's hooks fetched it before
// the train op and added one.
//
// Graph tensors: a fetch "tensors/<node>" (e.g. "tensors/dense/Relu") names
// a graph node that is not a function output; the hooks that take fetch
// names declare such nodes in graph_fetches(), so the JIT compiles them as
// outputs.
//
// Time: every hook that acts "every N seconds" takes a Clock (monotonic
// seconds), so tests can drive time by hand. Logging goes through
// estimator/Logging.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_HOOKS_H
#define ESTC_ESTIMATOR_HOOKS_H

#include "estimator/SessionRunHook.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Summary/Summary.h"
#include "lib/Summary/SummaryValues.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace estimator {

/// The fetch name of the global step.
constexpr const char *kGlobalStepFetch = "global_step";

/// Seconds on a monotonic clock. An empty Clock means monotonic_seconds().
using Clock = std::function<double()>;
double monotonic_seconds();

/// A tensor as numpy prints it: "0.35", "200", "True", "[1.5 2 3]",
/// "[[1 2]\n [3 4]]" is written on one line as "[[1 2] [3 4]]"; more than
/// 1000 elements are summarized as "[a b c ... x y z]".
std::string format_tensor(const TensorValue &value);

/// The value of fetch `name` in `values`; std::runtime_error
/// "<who>: no value for fetch '<name>'" when the loop did not provide it.
const TensorValue &fetched(const SessionRunValues &values,
                           const std::string &name, const char *who);

/// The prefix of fetches that name graph nodes ("tensors/dense/Relu").
constexpr const char *kGraphTensorPrefix = "tensors/";

/// The nodes of the "tensors/<node>" fetches among `fetches`, for
/// SessionRunHook::graph_fetches().
std::vector<std::string>
graph_fetches_of(const std::vector<std::string> &fetches);

/// tf.compat.v1.train.SecondOrStepTimer: triggers every `every_secs`
/// seconds or every `every_steps` steps (exactly one of them), always on the
/// first step asked, never twice for the same step.
class SecondOrStepTimer {
public:
  /// std::invalid_argument unless exactly one is given and it is > 0.
  SecondOrStepTimer(std::optional<double> every_secs,
                    std::optional<int64_t> every_steps, Clock clock = {});
  void reset();
  bool should_trigger_for_step(int64_t step) const;
  /// Records a trigger at `step` now; returns the seconds and steps since
  /// the previous trigger (nullopt for the first).
  std::optional<std::pair<double, int64_t>>
  update_last_triggered_step(int64_t step);
  std::optional<int64_t> last_triggered_step() const { return lastStep_; }

private:
  double now() const;
  std::optional<double> everySecs_;
  std::optional<int64_t> everySteps_;
  Clock clock_;
  std::optional<int64_t> lastStep_;
  double lastTime_ = 0;
};

/// tf.compat.v1.summary.FileWriterCache (lib/Summary/Summary.h).
using summary::SummaryWriterCache;

//===----------------------------------------------------------------------===//
// LoggingTensorHook
//===----------------------------------------------------------------------===//

/// tf.estimator.LoggingTensorHook: logs the values of fetches every
/// `every_n_iter` calls of this hook or every `every_n_secs` seconds, and/or
/// at the end. The default line is "tag = value, tag = value" followed by
/// " (0.812 sec)", the time since the previous line, from the second line on.
///
/// at_end: end() receives only the Session, so a fetch that names a variable
/// is read from it there; any other fetch is requested in every step and the
/// value from the last step that ran is logged.
class LoggingTensorHook : public SessionRunHook {
public:
  /// Values by tag, for a formatter.
  using Formatter =
      std::function<std::string(const std::map<std::string, TensorValue> &)>;
  struct Options {
    std::optional<int64_t> every_n_iter;
    std::optional<double> every_n_secs;
    bool at_end = false;
    Formatter formatter;
    Clock clock;
  };
  /// Tags are the fetch names, logged in this order.
  LoggingTensorHook(std::vector<std::string> tensors, Options options);
  /// Tag -> fetch name, logged in tag order (TF's dict form).
  LoggingTensorHook(const std::map<std::string, std::string> &tensors,
                    Options options);
  /// {"loss", "global_step"}: the list form (a braced list of two strings
  /// would otherwise also read as a map's iterator range).
  LoggingTensorHook(std::initializer_list<std::string> tensors, Options options)
      : LoggingTensorHook(std::vector<std::string>(tensors),
                          std::move(options)) {}

  std::vector<std::string> graph_fetches() const override;
  void begin() override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;

private:
  void logValues(const std::map<std::string, TensorValue> &byTag);
  std::vector<std::pair<std::string, std::string>> tensors_; // tag, fetch
  Options options_;
  std::optional<SecondOrStepTimer> timer_;
  int64_t iterCount_ = 0;
  bool shouldTrigger_ = false;
  std::map<std::string, TensorValue> last_; // by tag, for at_end
};

//===----------------------------------------------------------------------===//
// StopAtStepHook
//===----------------------------------------------------------------------===//

/// tf.estimator.StopAtStepHook: requests a stop once the global step
/// reaches last_step, or num_steps past the global step at
/// after_create_session. Exactly one of them.
class StopAtStepHook : public SessionRunHook {
public:
  StopAtStepHook(std::optional<int64_t> num_steps,
                 std::optional<int64_t> last_step);
  void after_create_session(Session &session) override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  /// The step to stop at (known after after_create_session).
  std::optional<int64_t> last_step() const { return lastStep_; }

private:
  std::optional<int64_t> numSteps_;
  std::optional<int64_t> lastStep_;
};

//===----------------------------------------------------------------------===//
// CheckpointSaverHook
//===----------------------------------------------------------------------===//

/// tf.estimator.CheckpointSaverHook: saves the session's variables
/// (Session::save_checkpoint: checkpoint_variables(), or a sharded save of
/// parameter-server training) with a train::Saver into checkpoint_dir
/// after the session is created
/// (the state at its global step), every save_steps steps or save_secs
/// seconds (exactly one), and at the end unless that step was just saved.
/// Listeners see every save; one returning true from after_save stops
/// training.
class CheckpointSaverHook : public SessionRunHook {
public:
  struct Options {
    std::optional<double> save_secs;
    std::optional<int64_t> save_steps;
    std::vector<ListenerPtr> listeners;
    /// keep_checkpoint_max etc.; `prefix` is TF's checkpoint_basename.
    train::SaverOptions saver_options;
    /// A Saver to use instead of making one over checkpoint_dir in begin().
    std::shared_ptr<train::Saver> saver;
    Clock clock;
  };
  CheckpointSaverHook(std::string checkpoint_dir, Options options);

  void begin() override;
  void after_create_session(Session &session) override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;

  /// Appends `listener` unless it is already there (what TF's Estimator
  /// does with train()'s saving_listeners when this hook is among the
  /// hooks: it stays attached for later calls). Before begin().
  void add_listener(ListenerPtr listener);
  const std::vector<ListenerPtr> &listeners() const {
    return options_.listeners;
  }

  /// Whether after_run will save when the global step reaches `step` (a
  /// distributed job's replicas gather their input positions then).
  bool will_save_at(int64_t step) const {
    return timer_.should_trigger_for_step(step);
  }

  /// The Saver (after begin()).
  const std::shared_ptr<train::Saver> &saver() const { return saver_; }

private:
  bool save(Session &session, int64_t step); // true: a listener wants a stop
  std::string checkpointDir_;
  Options options_;
  SecondOrStepTimer timer_;
  std::shared_ptr<train::Saver> saver_;
};

//===----------------------------------------------------------------------===//
// StepCounterHook
//===----------------------------------------------------------------------===//

/// tf.estimator.StepCounterHook: every every_n_steps steps (default 100) or
/// every_n_secs seconds (then every_n_steps must be unset), logs
/// "global_step/sec: <rate>" and writes it as the scalar "global_step/sec"
/// to output_dir's event file (none when output_dir is empty and no writer
/// is given). Warns (five times at most) when the global step does not grow.
class StepCounterHook : public SessionRunHook {
public:
  struct Options {
    std::optional<int64_t> every_n_steps = 100;
    std::optional<double> every_n_secs;
    std::string output_dir;
    std::shared_ptr<summary::SummaryWriter> summary_writer;
    Clock clock;
  };
  explicit StepCounterHook(Options options);

  void begin() override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;

private:
  Options options_;
  SecondOrStepTimer timer_;
  std::shared_ptr<summary::SummaryWriter> writer_;
  std::optional<int64_t> lastGlobalStep_;
  int warnings_ = 0;
};

//===----------------------------------------------------------------------===//
// NanTensorHook
//===----------------------------------------------------------------------===//

/// tf.train.NanLossDuringTrainingError; what() is one line naming the loss
/// fetch and the global step.
class NanLossDuringTrainingError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// tf.estimator.NanTensorHook: after each step, a NaN in the loss fetch
/// throws NanLossDuringTrainingError (fail_on_nan_loss) or logs a warning
/// and requests a stop.
class NanTensorHook : public SessionRunHook {
public:
  explicit NanTensorHook(std::string loss_tensor = "loss",
                         bool fail_on_nan_loss = true);
  std::vector<std::string> graph_fetches() const override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;

private:
  std::string loss_;
  bool fail_;
};

//===----------------------------------------------------------------------===//
// SummarySaverHook
//===----------------------------------------------------------------------===//

/// tf.estimator.SummarySaverHook: on the first step and then every
/// save_steps steps or save_secs seconds, the scalar fetches and the
/// model's summaries (TF's summary_op, merge_all()) are written at the
/// global step, in one Event, to output_dir's event file (the cached writer
/// of SummaryWriterCache unless one is given). Only those steps fetch the
/// summaries' values ("summaries/<tag>"), so only they run the model's
/// `train_summaries` function. A scalar fetch that is not a scalar is a
/// one-line std::invalid_argument.
class SummarySaverHook : public SessionRunHook {
public:
  struct Options {
    std::optional<int64_t> save_steps;
    std::optional<double> save_secs;
    std::string output_dir;
    std::shared_ptr<summary::SummaryWriter> summary_writer;
    Clock clock;
    /// The model's summaries (lib/Graph/Summaries.h), written before the
    /// scalars: summary_hook_summaries(summary::merge_all(graph))
    /// (EstimatorSpec.h) in a model_fn.
    std::vector<summary::ModelSummary> summaries;
  };
  /// Tag -> fetch name; the tag is what TensorBoard shows ("loss").
  SummarySaverHook(std::map<std::string, std::string> scalars, Options options);
  /// Tags are the fetch names.
  SummarySaverHook(const std::vector<std::string> &scalars, Options options);
  SummarySaverHook(std::initializer_list<std::string> scalars, Options options)
      : SummarySaverHook(std::vector<std::string>(scalars),
                         std::move(options)) {}

  std::vector<std::string> graph_fetches() const override;
  void begin() override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;

private:
  std::map<std::string, std::string> scalars_;
  Options options_;
  SecondOrStepTimer timer_;
  std::shared_ptr<summary::SummaryWriter> writer_;
  std::optional<int64_t> nextStep_;
  bool requestSummary_ = false;
};

//===----------------------------------------------------------------------===//
// FinalOpsHook
//===----------------------------------------------------------------------===//

/// tf.estimator.FinalOpsHook: the values of `final_ops` when the loop ends,
/// readable afterwards with final_ops_values(). end() receives only the
/// Session: names that are variables are read from it in end(); any other
/// name (an output such as a metric's value) is fetched in every step and
/// the value of the last step that ran is kept — the final value of a
/// streaming metric. Such a name has no value when no step ran.
class FinalOpsHook : public SessionRunHook {
public:
  explicit FinalOpsHook(std::vector<std::string> final_ops);
  std::vector<std::string> graph_fetches() const override;
  void begin() override;
  void after_create_session(Session &session) override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;
  /// By name; filled by end().
  const std::map<std::string, TensorValue> &final_ops_values() const {
    return final_;
  }

private:
  std::vector<std::string> ops_;
  std::vector<std::string> fetches_; // the non-variable ones
  std::map<std::string, TensorValue> last_;
  std::map<std::string, TensorValue> final_;
};

//===----------------------------------------------------------------------===//
// GlobalStepWaiterHook
//===----------------------------------------------------------------------===//

/// tf.estimator.GlobalStepWaiterHook: the first before_run blocks until the
/// global step reaches wait_until_step (a worker waiting for the chief),
/// polling every poll_secs and logging the wait. In one process the
/// Session's global step cannot move while the loop waits, so `global_step`
/// can read it elsewhere (e.g. the step of the latest checkpoint a chief
/// wrote). With timeout_secs, a wait that long throws one line.
class GlobalStepWaiterHook : public SessionRunHook {
public:
  struct Options {
    double poll_secs = 0.5;
    std::optional<double> timeout_secs;
    /// Where the global step is read; Session::global_step() when empty.
    std::function<int64_t(Session &)> global_step;
    Clock clock;
    /// Sleeps that many seconds; std::this_thread::sleep_for when empty.
    std::function<void(double)> sleep;
  };
  explicit GlobalStepWaiterHook(int64_t wait_until_step);
  GlobalStepWaiterHook(int64_t wait_until_step, Options options);
  void begin() override;
  SessionRunArgs before_run(SessionRunContext &context) override;

private:
  int64_t waitUntil_;
  Options options_;
  bool started_ = false;
};

//===----------------------------------------------------------------------===//
// ProfilerHook
//===----------------------------------------------------------------------===//

/// tf.estimator.ProfilerHook: every save_steps steps or save_secs seconds
/// (the first step only starts the timer, as in TF), writes the step's
/// phases (SessionRunValues::phases) as a Chrome trace to
/// output_dir/timeline-<global step>.json ("traceEvents" of complete "X"
/// events in microseconds; chrome://tracing and Perfetto open it). An empty
/// output_dir means the Session's model_dir.
class ProfilerHook : public SessionRunHook {
public:
  struct Options {
    std::optional<int64_t> save_steps;
    std::optional<double> save_secs;
    std::string output_dir;
    Clock clock;
  };
  explicit ProfilerHook(Options options);
  void begin() override;
  void after_create_session(Session &session) override;
  SessionRunArgs before_run(SessionRunContext &context) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  /// The files written, in order.
  const std::vector<std::string> &written() const { return written_; }

private:
  Options options_;
  SecondOrStepTimer timer_;
  std::string dir_;
  std::optional<int64_t> nextStep_;
  bool requestTrace_ = false;
  std::vector<std::string> written_;
};

/// The Chrome trace JSON of one step's phases (what ProfilerHook writes).
std::string chrome_trace_json(const std::vector<StepPhase> &phases,
                              int64_t global_step);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_HOOKS_H
