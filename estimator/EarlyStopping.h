//===- EarlyStopping.h - tf.estimator.experimental early stopping -------===//
//
// Training hooks that stop training when the evaluation metrics say so,
// reading the evaluations from the event files under the estimator's
// eval_dir() (what evaluate() and train_and_evaluate write), exactly as
// TF's early_stopping module:
//
//   auto hook = stop_if_no_decrease_hook(estimator, "loss", 1000);
//   train_and_evaluate(estimator, TrainSpec{input_fn, 100000, {hook}},
//                      eval_spec);
//
// Each hook checks its condition every run_every_secs seconds (default 60)
// or every run_every_steps global steps (then set run_every_secs to
// nullopt; both set is an error), and requests a stop when it holds.
// Evaluations before min_steps are ignored. In a single process the hook
// is always the chief's.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_EARLYSTOPPING_H
#define ESTC_ESTIMATOR_EARLYSTOPPING_H

#include "estimator/Estimator.h"
#include "estimator/Hooks.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace estc {
namespace estimator {

/// The scalars of every evaluation in `eval_dir`'s event files, by global
/// step (ascending), then tag. Later values of a tag at the same step
/// replace earlier ones. An eval_dir that does not exist has none.
std::map<int64_t, std::map<std::string, double>>
read_eval_metrics(const std::string &eval_dir);

struct EarlyStoppingOptions {
  /// Where the evaluations are read; estimator.eval_dir() when empty.
  std::string eval_dir;
  /// Evaluations at global steps below this are ignored.
  int64_t min_steps = 0;
  std::optional<double> run_every_secs = 60;
  std::optional<int64_t> run_every_steps;
  Clock clock;
};

/// tf.estimator.experimental.make_early_stopping_hook: a hook that calls
/// `should_stop_fn` every run_every_secs / run_every_steps and requests a
/// stop when it returns true.
HookPtr make_early_stopping_hook(const Estimator &estimator,
                                 std::function<bool()> should_stop_fn,
                                 std::optional<double> run_every_secs = 60,
                                 std::optional<int64_t> run_every_steps = {},
                                 Clock clock = {});

/// Stop once an evaluation has `metric_name` above / below `threshold`.
HookPtr stop_if_higher_hook(const Estimator &estimator,
                            const std::string &metric_name, double threshold,
                            const EarlyStoppingOptions &options = {});
HookPtr stop_if_lower_hook(const Estimator &estimator,
                           const std::string &metric_name, double threshold,
                           const EarlyStoppingOptions &options = {});

/// Stop once `metric_name` has not improved (increased / decreased) for
/// max_steps_without_increase / _decrease global steps of evaluations.
HookPtr stop_if_no_increase_hook(const Estimator &estimator,
                                 const std::string &metric_name,
                                 int64_t max_steps_without_increase,
                                 const EarlyStoppingOptions &options = {});
HookPtr stop_if_no_decrease_hook(const Estimator &estimator,
                                 const std::string &metric_name,
                                 int64_t max_steps_without_decrease,
                                 const EarlyStoppingOptions &options = {});

/// The predicates the hooks above evaluate, over read_eval_metrics(
/// eval_dir); a metric missing from an evaluation is a one-line
/// std::invalid_argument naming it, the step and the directory.
bool threshold_crossed(const std::string &eval_dir,
                       const std::string &metric_name, double threshold,
                       bool higher_is_better, int64_t min_steps);
bool no_metric_improvement(const std::string &eval_dir,
                           const std::string &metric_name,
                           int64_t max_steps_without_improvement,
                           bool higher_is_better, int64_t min_steps);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_EARLYSTOPPING_H
