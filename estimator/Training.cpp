//===- Training.cpp - tf.estimator.train_and_evaluate --------------------===//

#include "estimator/Training.h"

#include "estimator/Distributed.h"
#include "estimator/Logging.h"
#include "estimator/ParameterServers.h"
#include "lib/Support/FileIO.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

namespace estc {
namespace estimator {

namespace {

std::string num(double v) { return format_number(v); }

void validate(const Estimator &estimator, const TrainSpec &train,
              const EvalSpec &eval) {
  const std::string who = "train_and_evaluate: ";
  if (!train.input_fn)
    throw std::invalid_argument(who + "TrainSpec.input_fn is empty");
  if (train.max_steps && *train.max_steps <= 0)
    throw std::invalid_argument(who + "Must specify max_steps > 0, given: " +
                                std::to_string(*train.max_steps));
  if (!eval.input_fn)
    throw std::invalid_argument(who + "EvalSpec.input_fn is empty");
  if (eval.steps && *eval.steps <= 0)
    throw std::invalid_argument(
        who + "Must specify steps > 0, given: " + std::to_string(*eval.steps));
  if (!(eval.start_delay_secs >= 0))
    throw std::invalid_argument(who +
                                "Must specify start_delay_secs >= 0, given: " +
                                num(eval.start_delay_secs));
  if (!(eval.throttle_secs >= 0))
    throw std::invalid_argument(
        who +
        "Must specify throttle_secs >= 0, given: " + num(eval.throttle_secs));
  if (eval.every_n_steps && *eval.every_n_steps <= 0)
    throw std::invalid_argument(who +
                                "Must specify every_n_steps > 0, given: " +
                                std::to_string(*eval.every_n_steps));
  // TF's messages list every name as a Python list does: ['a', 'b'].
  std::string allNames;
  for (const ExporterPtr &e : eval.exporters) {
    if (!e)
      throw std::invalid_argument(who + "an exporter is null");
    allNames += (allNames.empty() ? "'" : ", '") + e->name() + "'";
  }
  allNames = "[" + allNames + "]";
  std::set<std::string> names;
  for (const ExporterPtr &e : eval.exporters) {
    std::string name = e->name();
    if (name.empty())
      throw std::invalid_argument(who +
                                  "An Exporter cannot have a name that is "
                                  "`None` or empty. All exporter names: " +
                                  allNames);
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw std::invalid_argument(who + "exporter name '" + name +
                                  "' must be a directory name");
    if (!names.insert(name).second)
      throw std::invalid_argument(
          who +
          "`exporters` must have unique names. Such a "
          "name cannot be `None`. All exporter names: " +
          allNames);
  }
  const RunConfig &config = estimator.config();
  if (config.task_type() == TaskType::EVALUATOR)
    return; // evaluates checkpoints another process writes
  bool saverHook =
      std::any_of(train.hooks.begin(), train.hooks.end(), [](const HookPtr &h) {
        return dynamic_cast<const CheckpointSaverHook *>(h.get()) != nullptr;
      });
  if (!eval.every_n_steps && !saverHook &&
      config.save_checkpoints_steps() <= 0 &&
      config.save_checkpoints_secs() <= 0)
    throw std::invalid_argument(
        who + "evaluations follow checkpoints, but RunConfig saves none: set "
              "save_checkpoints_steps or save_checkpoints_secs (or "
              "EvalSpec.every_n_steps, or a CheckpointSaverHook in "
              "TrainSpec.hooks)");
  if (detail::psTraining(config))
    detail::checkPsCluster(config, "train_and_evaluate");
  else
    detail::checkTrainingCluster(config, "train_and_evaluate");
}

/// TF's _Evaluator: evaluates the latest checkpoint once, then exports.
class Evaluator {
public:
  Evaluator(Estimator &estimator, const EvalSpec &spec,
            std::optional<int64_t> maxSteps)
      : estimator_(estimator), spec_(spec), maxSteps_(maxSteps) {}

  /// Evaluates the latest checkpoint, then exports; nullopt (with a log
  /// line) when there is none or it was evaluated already.
  std::optional<TrainAndEvaluateResult> evaluateLatest() {
    std::optional<std::string> latest = estimator_.latest_checkpoint();
    if (!latest) {
      log_info("Estimator is not trained yet. Will start an evaluation when a "
               "checkpoint is ready.");
      return std::nullopt;
    }
    if (latest == previousCheckpoint_) {
      log_info("Skipping evaluation due to same checkpoint " + *latest +
               " as the previous evaluation.");
      return std::nullopt;
    }
    previousCheckpoint_ = latest;
    TrainAndEvaluateResult result;
    result.eval_result =
        estimator_.evaluate(spec_.input_fn, {.steps = spec_.steps,
                                             .hooks = spec_.hooks,
                                             .checkpoint_path = *latest,
                                             .name = spec_.name});
    result.export_results = exportModel(*latest, result.eval_result);
    return result;
  }

  /// The global step of the latest checkpoint.
  std::optional<int64_t> latestStep() const {
    std::optional<std::string> latest = estimator_.latest_checkpoint();
    if (!latest)
      return std::nullopt;
    return train::CheckpointReader(train::checkpoint_file(*latest))
        .global_step();
  }

  /// The variables in memory (from a training hook).
  EvalResults evaluateInMemory() {
    EvalResults result = estimator_.evaluate_in_memory(
        spec_.input_fn,
        {.steps = spec_.steps, .hooks = spec_.hooks, .name = spec_.name});
    return result;
  }

  /// What each exporter returned, in order.
  std::vector<std::string> exportModel(const std::string &checkpoint,
                                       const EvalResults &result) {
    bool isFinal = false;
    if (maxSteps_) {
      auto it = result.find("global_step");
      isFinal = it != result.end() && it->second >= double(*maxSteps_);
    }
    std::vector<std::string> exports;
    for (const ExporterPtr &e : spec_.exporters) {
      std::string path = fileio::joinPath(
          fileio::joinPath(estimator_.model_dir(), "export"), e->name());
      std::string exported =
          e->export_model(estimator_, path, checkpoint, result, isFinal);
      if (!exported.empty())
        log_info("Exporter " + e->name() + " exported " + exported);
      exports.push_back(std::move(exported));
    }
    return exports;
  }

private:
  Estimator &estimator_;
  const EvalSpec &spec_;
  std::optional<int64_t> maxSteps_;
  std::optional<std::string> previousCheckpoint_;
};

/// TF's _NewCheckpointListenerForEvaluate: evaluates after each new
/// checkpoint (not the one saved when training starts), throttled by
/// throttle_secs, and at the end when the last step was not evaluated.
class EvaluateAfterCheckpoint : public CheckpointSaverListener {
public:
  EvaluateAfterCheckpoint(Evaluator &evaluator, const EvalSpec &spec)
      : evaluator_(evaluator), spec_(spec) {}

  void begin() override {
    startStep_ = evaluator_.latestStep().value_or(0);
    lastStep_.reset();
  }

  bool after_save(Session &session, int64_t step) override {
    (void)session;
    if (step == startStep_)
      return false; // the checkpoint of the state training starts from
    if (!lastStep_ ||
        (*lastStep_ != step && now() >= lastTime_ + spec_.throttle_secs))
      evaluate(step);
    else
      log_info("Skip the current checkpoint eval due to throttle secs (" +
               num(spec_.throttle_secs) + " secs).");
    return false;
  }

  void end(Session &session, int64_t step) override {
    (void)session;
    if (lastStep_ != step)
      evaluate(step);
  }

  const std::optional<TrainAndEvaluateResult> &result() const {
    return result_;
  }

private:
  double now() const {
    return spec_.clock ? spec_.clock() : monotonic_seconds();
  }
  void evaluate(int64_t step) {
    lastStep_ = step;
    lastTime_ = now();
    if (std::optional<TrainAndEvaluateResult> r = evaluator_.evaluateLatest())
      result_ = std::move(r);
    else
      throw std::runtime_error("train_and_evaluate: there was no new "
                               "checkpoint to evaluate at global step " +
                               std::to_string(step));
  }

  Evaluator &evaluator_;
  const EvalSpec &spec_;
  int64_t startStep_ = 0;
  std::optional<int64_t> lastStep_;
  double lastTime_ = 0;
  std::optional<TrainAndEvaluateResult> result_;
};

/// EvalSpec::every_n_steps: evaluates in memory each time the global step
/// reaches a multiple of N.
class EvaluateEveryNSteps : public SessionRunHook {
public:
  EvaluateEveryNSteps(Evaluator &evaluator, int64_t every)
      : evaluator_(evaluator), every_(every) {}
  SessionRunArgs before_run(SessionRunContext &context) override {
    (void)context;
    return {{kGlobalStepFetch}};
  }
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override {
    (void)context;
    const TensorValue &v =
        fetched(values, kGlobalStepFetch, "train_and_evaluate");
    int64_t step = static_cast<int64_t>(v.element(0));
    if (step % every_ == 0)
      evaluate(step);
  }
  /// The final evaluation, unless the last step was just evaluated.
  void end(Session &session) override {
    if (lastStep_ != session.global_step())
      evaluate(session.global_step());
  }
  const std::optional<EvalResults> &result() const { return result_; }

private:
  void evaluate(int64_t step) {
    result_ = evaluator_.evaluateInMemory();
    lastStep_ = step;
  }
  Evaluator &evaluator_;
  int64_t every_;
  std::optional<EvalResults> result_;
  std::optional<int64_t> lastStep_;
};

/// TF's run_evaluator: continuous evaluation of new checkpoints until one
/// reaches max_steps.
TrainAndEvaluateResult runEvaluator(Estimator &estimator,
                                    const TrainSpec &train,
                                    const EvalSpec &eval) {
  auto now = [&] { return eval.clock ? eval.clock() : monotonic_seconds(); };
  auto sleep = [&](double secs) {
    if (eval.sleep)
      eval.sleep(secs);
    else
      std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  };
  if (eval.start_delay_secs > 0) {
    log_info("Waiting " + num(eval.start_delay_secs) +
             " secs before starting eval.");
    sleep(eval.start_delay_secs);
  }
  Evaluator evaluator(estimator, eval, train.max_steps);
  std::optional<TrainAndEvaluateResult> latest;
  bool evaluated = false;
  while (true) {
    if (evaluated && train.max_steps) {
      double step = latest->eval_result.at("global_step");
      if (step >= double(*train.max_steps)) {
        log_info("Exiting evaluation, global_step=" + num(step) +
                 " >= train max_steps=" + std::to_string(*train.max_steps));
        return *latest;
      }
    }
    double start = now();
    std::optional<TrainAndEvaluateResult> result = evaluator.evaluateLatest();
    evaluated = result.has_value();
    if (evaluated)
      latest = std::move(result);
    double wait = eval.throttle_secs - (now() - start);
    if (wait > 0) {
      log_info("Waiting " + num(wait) + " secs before starting next eval run.");
      sleep(wait);
    } else if (eval.throttle_secs == 0 && !evaluated) {
      log_info("EvalSpec.throttle_secs is set as 0. This might overload the "
               "job before finding (next) new checkpoint. Please consider to "
               "increase it.");
    }
  }
}

} // namespace

TrainAndEvaluateResult train_and_evaluate(Estimator &estimator,
                                          const TrainSpec &train_spec,
                                          const EvalSpec &eval_spec) {
  validate(estimator, train_spec, eval_spec);
  const RunConfig &config = estimator.config();
  if (config.task_type() == TaskType::EVALUATOR)
    return runEvaluator(estimator, train_spec, eval_spec);
  bool ps = detail::psTraining(config);
  if (ps && config.task_type() == TaskType::PS) {
    // TF's run_ps: a ps task serves its variables until the chief ends the
    // job.
    detail::serveParameters(estimator, train_spec.input_fn);
    return {};
  }
  if (ps || config.distributed()) {
    // TF's run_chief / run_worker: the replicas (or the chief and workers
    // of parameter-server training) train; the evaluator task evaluates
    // the chief's checkpoints (and exports), and the training tasks return
    // no evaluation.
    log_info(std::string("Start ") + (ps ? "parameter-server" : "distributed") +
             " training as " + config.task_type() + ":" +
             std::to_string(config.task_id()) +
             "; the evaluator task evaluates the chief's checkpoints.");
    estimator.train(train_spec.input_fn,
                    {.hooks = train_spec.hooks,
                     .max_steps = train_spec.max_steps,
                     .saving_listeners = train_spec.saving_listeners});
    return {};
  }
  Evaluator evaluator(estimator, eval_spec, train_spec.max_steps);
  Hooks hooks = train_spec.hooks;
  Listeners listeners = train_spec.saving_listeners;
  std::optional<TrainAndEvaluateResult> result;

  if (eval_spec.every_n_steps) {
    log_info("Start train and evaluate loop. The evaluate will happen every " +
             std::to_string(*eval_spec.every_n_steps) +
             " steps, on the variables in memory.");
    auto everyN = std::make_shared<EvaluateEveryNSteps>(
        evaluator, *eval_spec.every_n_steps);
    hooks.push_back(everyN);
    estimator.train(train_spec.input_fn, {.hooks = hooks,
                                          .max_steps = train_spec.max_steps,
                                          .saving_listeners = listeners});
    if (std::optional<EvalResults> inMemory = everyN->result()) {
      result = TrainAndEvaluateResult{*inMemory, {}};
      if (std::optional<std::string> latest = estimator.latest_checkpoint())
        result->export_results =
            evaluator.exportModel(*latest, *inMemory); // once, at the end
    } else { // training had nothing to do: the latest checkpoint
      result = evaluator.evaluateLatest();
    }
  } else {
    log_info("Start train and evaluate loop. The evaluate will happen after "
             "every checkpoint. Checkpoint frequency is determined based on "
             "RunConfig arguments: save_checkpoints_steps " +
             std::to_string(config.save_checkpoints_steps()) +
             " or save_checkpoints_secs " +
             num(config.save_checkpoints_secs()) + ".");
    // TF's order: the evaluation's listener, then the TrainSpec's.
    auto listener =
        std::make_shared<EvaluateAfterCheckpoint>(evaluator, eval_spec);
    listeners.insert(listeners.begin(), listener);
    estimator.train(train_spec.input_fn, {.hooks = hooks,
                                          .max_steps = train_spec.max_steps,
                                          .saving_listeners = listeners});
    result = listener->result();
    if (!result) // training had nothing to do: the latest checkpoint
      result = evaluator.evaluateLatest();
  }
  if (!result)
    throw std::runtime_error("train_and_evaluate: no checkpoint in " +
                             estimator.model_dir() + " to evaluate");
  return *result;
}

//===----------------------------------------------------------------------===//
// InMemoryEvaluatorHook
//===----------------------------------------------------------------------===//

namespace {
int64_t checkEveryNIter(int64_t every_n_iter) {
  if (every_n_iter <= 0)
    throw std::invalid_argument("InMemoryEvaluatorHook: invalid every_n_iter=" +
                                std::to_string(every_n_iter));
  return every_n_iter;
}
} // namespace

InMemoryEvaluatorHook::InMemoryEvaluatorHook(Estimator &estimator,
                                             InputFn input_fn,
                                             std::optional<int64_t> steps,
                                             Hooks hooks, std::string name,
                                             int64_t every_n_iter)
    : estimator_(estimator), inputFn_(std::move(input_fn)), steps_(steps),
      hooks_(std::move(hooks)), name_(std::move(name)),
      timer_(std::nullopt, checkEveryNIter(every_n_iter)) {
  if (!inputFn_)
    throw std::invalid_argument("InMemoryEvaluatorHook: input_fn is empty");
  if (steps_ && *steps_ <= 0)
    throw std::invalid_argument(
        "InMemoryEvaluatorHook: Must specify steps > 0, given: " +
        std::to_string(*steps_));
}

void InMemoryEvaluatorHook::begin() {
  timer_.reset();
  iterCount_ = 0;
  results_.clear();
}

void InMemoryEvaluatorHook::after_create_session(Session &session) {
  (void)session;
  evaluate(); // the metrics before training
}

void InMemoryEvaluatorHook::after_run(SessionRunContext &context,
                                      const SessionRunValues &values) {
  (void)context;
  (void)values;
  ++iterCount_;
  if (timer_.should_trigger_for_step(iterCount_))
    evaluate();
}

void InMemoryEvaluatorHook::end(Session &session) {
  (void)session;
  evaluate();
}

void InMemoryEvaluatorHook::evaluate() {
  results_.push_back(estimator_.evaluate_in_memory(
      inputFn_, {.steps = steps_, .hooks = hooks_, .name = name_}));
  timer_.update_last_triggered_step(iterCount_);
}

} // namespace estimator
} // namespace estc
