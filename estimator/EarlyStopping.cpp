//===- EarlyStopping.cpp - tf.estimator.experimental early stopping -----===//

#include "estimator/EarlyStopping.h"

#include "estimator/Logging.h"
#include "lib/Summary/Summary.h"
#include "lib/Support/FileIO.h"

#include <stdexcept>

namespace estc {
namespace estimator {

std::map<int64_t, std::map<std::string, double>>
read_eval_metrics(const std::string &eval_dir) {
  std::map<int64_t, std::map<std::string, double>> out;
  if (!fileio::isDirectory(eval_dir))
    return out;
  for (const std::string &file : summary::list_event_files(eval_dir))
    for (const summary::Event &event : summary::read_events(file)) {
      if (!event.has_summary())
        continue;
      for (const auto &value : event.summary().value())
        if (value.value_case() == tensorboard::Summary::Value::kSimpleValue)
          out[event.step()][value.tag()] = value.simple_value();
    }
  return out;
}

namespace {

double metricAt(const std::map<std::string, double> &metrics,
                const std::string &name, int64_t step,
                const std::string &eval_dir) {
  auto it = metrics.find(name);
  if (it != metrics.end())
    return it->second;
  std::string have;
  for (const auto &entry : metrics)
    have += (have.empty() ? "" : ", ") + entry.first;
  throw std::invalid_argument("early stopping: metric '" + name +
                              "' is not in the evaluation at global step " +
                              std::to_string(step) + " in " + eval_dir +
                              " (it has: " + have + ")");
}

/// TF's _StopOnPredicateHook.
class StopOnPredicateHook : public SessionRunHook {
public:
  StopOnPredicateHook(std::function<bool()> fn,
                      std::optional<double> every_secs,
                      std::optional<int64_t> every_steps, Clock clock)
      : fn_(std::move(fn)), timer_(every_secs, every_steps, std::move(clock)) {}
  void begin() override { timer_.reset(); }
  SessionRunArgs before_run(SessionRunContext &context) override {
    (void)context;
    return {{kGlobalStepFetch}};
  }
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override {
    int64_t step = static_cast<int64_t>(
        fetched(values, kGlobalStepFetch, "early stopping").element(0));
    if (!timer_.should_trigger_for_step(step))
      return;
    timer_.update_last_triggered_step(step);
    if (fn_()) {
      log_info("Requesting early stopping at global step " +
               std::to_string(step));
      context.request_stop();
    }
  }

private:
  std::function<bool()> fn_;
  SecondOrStepTimer timer_;
};

std::string evalDirOf(const Estimator &estimator,
                      const EarlyStoppingOptions &o) {
  return o.eval_dir.empty() ? estimator.eval_dir() : o.eval_dir;
}

} // namespace

HookPtr make_early_stopping_hook(const Estimator &estimator,
                                 std::function<bool()> should_stop_fn,
                                 std::optional<double> run_every_secs,
                                 std::optional<int64_t> run_every_steps,
                                 Clock clock) {
  (void)estimator; // TF gives a non-chief another hook; one process is chief
  if (!should_stop_fn)
    throw std::invalid_argument(
        "make_early_stopping_hook: should_stop_fn is empty");
  if (run_every_secs && run_every_steps)
    throw std::invalid_argument("make_early_stopping_hook: Only one of "
                                "run_every_secs and run_every_steps can be "
                                "set.");
  if (!run_every_secs && !run_every_steps)
    throw std::invalid_argument("make_early_stopping_hook: one of "
                                "run_every_secs and run_every_steps must be "
                                "set.");
  if (run_every_secs && !(*run_every_secs > 0))
    throw std::invalid_argument(
        "make_early_stopping_hook: run_every_secs must be > 0, given: " +
        format_number(*run_every_secs));
  if (run_every_steps && *run_every_steps <= 0)
    throw std::invalid_argument(
        "make_early_stopping_hook: run_every_steps must be > 0, given: " +
        std::to_string(*run_every_steps));
  return std::make_shared<StopOnPredicateHook>(std::move(should_stop_fn),
                                               run_every_secs, run_every_steps,
                                               std::move(clock));
}

bool threshold_crossed(const std::string &eval_dir,
                       const std::string &metric_name, double threshold,
                       bool higher_is_better, int64_t min_steps) {
  for (const auto &[step, metrics] : read_eval_metrics(eval_dir)) {
    if (step < min_steps)
      continue;
    double value = metricAt(metrics, metric_name, step, eval_dir);
    if (higher_is_better ? value > threshold : value < threshold) {
      log_info("At step " + std::to_string(step) + ", metric \"" + metric_name +
               "\" has value " + format_number(value) + " which is " +
               (higher_is_better ? "greater" : "less") +
               " than the configured threshold (" + format_number(threshold) +
               ") for early stopping.");
      return true;
    }
  }
  return false;
}

bool no_metric_improvement(const std::string &eval_dir,
                           const std::string &metric_name,
                           int64_t max_steps_without_improvement,
                           bool higher_is_better, int64_t min_steps) {
  std::optional<double> best;
  int64_t bestStep = 0;
  for (const auto &[step, metrics] : read_eval_metrics(eval_dir)) {
    if (step < min_steps)
      continue;
    double value = metricAt(metrics, metric_name, step, eval_dir);
    if (!best || (higher_is_better ? value > *best : value < *best)) {
      best = value;
      bestStep = step;
    }
    if (step - bestStep >= max_steps_without_improvement) {
      log_info("No " + std::string(higher_is_better ? "increase" : "decrease") +
               " in metric \"" + metric_name + "\" for " +
               std::to_string(step - bestStep) +
               " steps, which is greater than or equal to max steps (" +
               std::to_string(max_steps_without_improvement) +
               ") configured for early stopping.");
      return true;
    }
  }
  return false;
}

namespace {
HookPtr thresholdHook(const char *who, const Estimator &estimator,
                      const std::string &metric, double threshold, bool higher,
                      const EarlyStoppingOptions &o) {
  if (metric.empty())
    throw std::invalid_argument(std::string(who) + ": metric_name is empty");
  std::string dir = evalDirOf(estimator, o);
  int64_t minSteps = o.min_steps;
  return make_early_stopping_hook(
      estimator,
      [=] {
        return threshold_crossed(dir, metric, threshold, higher, minSteps);
      },
      o.run_every_secs, o.run_every_steps, o.clock);
}

HookPtr improvementHook(const char *who, const Estimator &estimator,
                        const std::string &metric, int64_t maxSteps,
                        bool higher, const EarlyStoppingOptions &o) {
  if (metric.empty())
    throw std::invalid_argument(std::string(who) + ": metric_name is empty");
  if (maxSteps <= 0)
    throw std::invalid_argument(std::string(who) +
                                ": max steps without improvement must be > "
                                "0, given: " +
                                std::to_string(maxSteps));
  std::string dir = evalDirOf(estimator, o);
  int64_t minSteps = o.min_steps;
  return make_early_stopping_hook(
      estimator,
      [=] {
        return no_metric_improvement(dir, metric, maxSteps, higher, minSteps);
      },
      o.run_every_secs, o.run_every_steps, o.clock);
}
} // namespace

HookPtr stop_if_higher_hook(const Estimator &estimator,
                            const std::string &metric_name, double threshold,
                            const EarlyStoppingOptions &options) {
  return thresholdHook("stop_if_higher_hook", estimator, metric_name, threshold,
                       true, options);
}

HookPtr stop_if_lower_hook(const Estimator &estimator,
                           const std::string &metric_name, double threshold,
                           const EarlyStoppingOptions &options) {
  return thresholdHook("stop_if_lower_hook", estimator, metric_name, threshold,
                       false, options);
}

HookPtr stop_if_no_increase_hook(const Estimator &estimator,
                                 const std::string &metric_name,
                                 int64_t max_steps_without_increase,
                                 const EarlyStoppingOptions &options) {
  return improvementHook("stop_if_no_increase_hook", estimator, metric_name,
                         max_steps_without_increase, true, options);
}

HookPtr stop_if_no_decrease_hook(const Estimator &estimator,
                                 const std::string &metric_name,
                                 int64_t max_steps_without_decrease,
                                 const EarlyStoppingOptions &options) {
  return improvementHook("stop_if_no_decrease_hook", estimator, metric_name,
                         max_steps_without_decrease, false, options);
}

} // namespace estimator
} // namespace estc
