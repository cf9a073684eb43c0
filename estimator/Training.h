//===- Training.h - tf.estimator.train_and_evaluate ----------------------===//
//
// train_and_evaluate(estimator, TrainSpec, EvalSpec) in TF's local
// (non-distributed) form: one train() call up to TrainSpec::max_steps; after
// each checkpoint it saves (RunConfig's save_checkpoints_steps / _secs), the
// latest checkpoint is evaluated with EvalSpec's input_fn, steps, name and
// hooks, unless the previous evaluation is less than throttle_secs old; the
// checkpoint saved when training starts is not evaluated; a final evaluation
// at the end when the last step was not evaluated. Exporters run after each
// evaluation. Returns, as TF 2.15 does, the final evaluation's results and
// what its exporters returned:
//
//   auto [metrics, exports] = train_and_evaluate(estimator, train, eval);
//
// estc addition: EvalSpec::every_n_steps evaluates every N global steps
// instead, on the variables in memory (Estimator::evaluate_in_memory: no
// checkpoint written or read for it), and at the end of training when the
// last step was not a multiple of N; exporters then run once, at the end,
// with the latest checkpoint.
//
// InMemoryEvaluatorHook is tf.estimator.experimental.InMemoryEvaluatorHook:
// a training hook that evaluates every N iterations of the loop from the
// training variables in memory.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_TRAINING_H
#define ESTC_ESTIMATOR_TRAINING_H

#include "estimator/Estimator.h"
#include "estimator/Hooks.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace estimator {

/// tf.estimator.TrainSpec(input_fn, max_steps=None, hooks=(),
/// saving_listeners=()), an aggregate: TrainSpec{input_fn, 1000} or, by
/// name as TrainOptions, TrainSpec{.input_fn = input_fn, .max_steps = 1000}.
struct TrainSpec {
  InputFn input_fn{};
  /// The global step to train to; unset: until the input runs out.
  std::optional<int64_t> max_steps{};
  Hooks hooks{};
  Listeners saving_listeners{};
};

/// tf.estimator.Exporter: called after each evaluation of
/// train_and_evaluate with the evaluated checkpoint.
class Exporter {
public:
  virtual ~Exporter() = default;
  /// Unique among an EvalSpec's exporters; the export directory is
  /// model_dir/export/<name>.
  virtual std::string name() const = 0;
  /// Returns what was exported (a path), or "" for nothing.
  virtual std::string export_model(Estimator &estimator,
                                   const std::string &export_path,
                                   const std::string &checkpoint_path,
                                   const EvalResults &eval_result,
                                   bool is_the_final_export) = 0;
};
using ExporterPtr = std::shared_ptr<Exporter>;

/// tf.estimator.EvalSpec (TF's defaults).
struct EvalSpec {
  InputFn input_fn{};
  /// Batches per evaluation; unset: until the input runs out.
  std::optional<int64_t> steps = 100;
  /// Evaluations go to model_dir/eval_<name> ("eval" when empty).
  std::string name{};
  Hooks hooks{};
  std::vector<ExporterPtr> exporters{};
  /// For a distributed evaluator only; ignored in local mode (as TF does).
  double start_delay_secs = 120;
  /// At least this many seconds between two evaluations (0: every
  /// checkpoint).
  double throttle_secs = 600;
  /// estc: evaluate every this many global steps, in memory, instead of
  /// after checkpoints (throttle_secs is then not used).
  std::optional<int64_t> every_n_steps{};
  /// Seconds for throttle_secs (monotonic when empty); for tests.
  Clock clock{};
  /// Sleeps that many seconds (the evaluator task's waits);
  /// std::this_thread::sleep_for when empty; for tests.
  std::function<void(double)> sleep{};
};

/// What train_and_evaluate returns: TF 2.15's (eval_result, export_results).
struct TrainAndEvaluateResult {
  /// The last evaluation's results.
  EvalResults eval_result;
  /// What each exporter returned after the last evaluation (a path, or ""
  /// for nothing), in EvalSpec::exporters order; empty without exporters.
  std::vector<std::string> export_results;
};

/// tf.estimator.train_and_evaluate. Local mode (no TF_CONFIG cluster):
/// trains and evaluates as above. The "evaluator" task of a TF_CONFIG
/// cluster: TF's continuous evaluation of a model_dir another process
/// trains — wait start_delay_secs, then evaluate each new checkpoint (at
/// most one evaluation per throttle_secs), until one at or past
/// TrainSpec::max_steps (forever without max_steps). The chief and workers
/// of a cluster with RunConfig's train_distribute train as the replicas of
/// one job (docs/design/distributed.md) and return an empty result (TF's
/// None): the evaluator task evaluates and exports. A "ps" job, or workers
/// without train_distribute: std::invalid_argument. A bad spec is a
/// std::invalid_argument with TF's one-line message. The result is the last
/// evaluation's, with its exports (when training did nothing because max_steps
/// was already reached: an evaluation of the latest checkpoint).
TrainAndEvaluateResult train_and_evaluate(Estimator &estimator,
                                          const TrainSpec &train_spec,
                                          const EvalSpec &eval_spec);

/// tf.estimator.experimental.InMemoryEvaluatorHook: evaluates `input_fn`
/// (steps batches, with `hooks`, into eval_dir(name)) on the training
/// variables in memory, without a checkpoint: once after the session is
/// created, every every_n_iter iterations of this hook, and at the end.
class InMemoryEvaluatorHook : public SessionRunHook {
public:
  InMemoryEvaluatorHook(Estimator &estimator, InputFn input_fn,
                        std::optional<int64_t> steps = {}, Hooks hooks = {},
                        std::string name = "", int64_t every_n_iter = 100);

  void begin() override;
  void after_create_session(Session &session) override;
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override;
  void end(Session &session) override;

  /// The results of every evaluation so far, in order.
  const std::vector<EvalResults> &results() const { return results_; }

private:
  void evaluate();
  Estimator &estimator_;
  InputFn inputFn_;
  std::optional<int64_t> steps_;
  Hooks hooks_;
  std::string name_;
  SecondOrStepTimer timer_;
  int64_t iterCount_ = 0;
  std::vector<EvalResults> results_;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_TRAINING_H
