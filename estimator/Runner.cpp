//===- Runner.cpp - The Estimator's calls over one MonitoredSession ----===//
//
// train() and evaluate(): each one MonitoredSession over the backend's
// compiled model (ModelSession: the variables hooks see; a StepRunner: one
// step of a compiled function on an input_fn's batches) with the hooks
// train() installs.
//
//===----------------------------------------------------------------------===//

#include "estimator/Runner.h"

#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "estimator/ParameterServers.h"
#include "estimator/ProgressBar.h"
#include "runtime/Collective.h"
#include "runtime/CompiledModel.h"
#include "runtime/ParameterClient.h"
#include "runtime/binding/TensorBinding.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

namespace {

/// Continues `data` where the checkpoint's input position was (when it has
/// one); a position of another pipeline is logged and ignored.
void restoreInput(Dataset &data, const train::RestoredCheckpoint &restored) {
  auto it = restored.variables.find(kInputStateTensor);
  if (it == restored.variables.end())
    return;
  std::string why;
  bool ok = false;
  try {
    ok = data.restore_state(unpack_bytes(it->second), &why);
  } catch (const data::DataError &e) {
    why = e.what();
  }
  if (ok)
    log_info("Restored the input pipeline's position from " + restored.path);
  else
    log_info("Not restoring the input pipeline's position from " +
             restored.path + " (" + why + "); input_fn starts afresh.");
}

/// RunConfig's checkpoint_format as the Saver's (validated by RunConfig).
train::CheckpointFormat saverFormat(const std::string &format) {
  if (format == "tf")
    return train::CheckpointFormat::TensorBundle;
  if (format == "safetensors")
    return train::CheckpointFormat::Safetensors;
  return train::CheckpointFormat::Auto;
}

/// The first CheckpointSaverHook among `hooks`, or null.
CheckpointSaverHook *findSaverHook(const Hooks &hooks) {
  for (const HookPtr &h : hooks)
    if (auto *saver = dynamic_cast<CheckpointSaverHook *>(h.get()))
      return saver;
  return nullptr;
}

void append(Hooks &to, const Hooks &hooks) {
  to.insert(to.end(), hooks.begin(), hooks.end());
}

} // namespace

void prepareModel(Backend &backend, ModeKeys mode, Dataset &data,
                  const std::string &caller) {
  if (std::optional<ElementSpec> spec = data.element_spec())
    backend.prepare(mode, *spec);
  else if (!backend.current())
    throw std::invalid_argument(
        caller + ": the input_fn's dataset is empty and declares no element "
                 "spec, so the model cannot be built");
  else
    backend.prepare(mode, ElementSpec{});
}

std::shared_ptr<summary::SummaryWriter>
Runner::sharedWriter(const std::string &logdir) {
  // One event file per directory and process, shared with the hooks
  // (SummaryWriterCache, TF's FileWriterCache).
  std::shared_ptr<summary::SummaryWriter> w =
      summary::SummaryWriterCache::get(logdir);
  if (std::find(writers_.begin(), writers_.end(), w) == writers_.end())
    writers_.push_back(w);
  return w;
}

void Runner::initialize(rt::CompiledModel &m) {
  int init = m.find_function("init");
  if (init < 0)
    throw std::invalid_argument("Estimator: the compiled model " +
                                std::string(m.spec().name) +
                                " has no init function");
  m.run(init);
  if (!warm_)
    return;
  // TF: the trainable variables for a regex, all of them for a list.
  bool all = !warm_->vars_to_warm_start_list.empty();
  std::map<std::string, VariableSpec> current;
  for (int i = 0; i < m.spec().numVariables; ++i)
    if (all || m.spec().variables[i].trainable)
      current[m.spec().variables[i].name] =
          binding::variableSpec(m.spec().variables[i]);
  log_info("Warm-starting from: " + warm_->ckpt_to_initialize_from);
  train::VariableMap values = warm_start(*warm_, current);
  for (const auto &[name, value] : values) {
    int index = m.find_variable(name);
    std::memcpy(m.variable_data(index), value.data.data(), value.data.size());
  }
}

const std::map<std::string, std::string> &
Runner::saverVarList(ModeKeys mode) const {
  static const std::map<std::string, std::string> none;
  const EstimatorSpec *spec = backend_.spec(mode);
  return spec ? spec->scaffold.saver_var_list : none;
}

void Runner::restoreForInference(rt::CompiledModel &m,
                                 const std::string &checkpoint_path,
                                 const std::string &call, ModeKeys mode) {
  const std::map<std::string, std::string> &varList = saverVarList(mode);
  auto load = [&](const train::VariableMap &variables,
                  const std::string &file) {
    if (varList.empty())
      loadVariables(m, variables, file);
    else
      loadVariables(m, applySaverVarList(variables, varList, file), file);
  };
  if (!checkpoint_path.empty()) {
    std::string file = train::resolve_checkpoint(checkpoint_path);
    train::CheckpointReader reader(file);
    load(reader.read_all(), file);
    return;
  }
  std::optional<train::RestoredCheckpoint> restored = checkpoints_.restore();
  if (restored) {
    load(restored->variables, train::checkpoint_file(restored->path));
    return;
  }
  log_info("Could not find trained model in model_dir: " + config_.model_dir() +
           ", running initialization to " + call + ".");
  initialize(m);
}

Hooks Runner::trainingHooks(const Hooks &userHooks, const EstimatorSpec *spec,
                            bool hasLoss, std::optional<int64_t> steps,
                            std::optional<int64_t> max_steps,
                            const Listeners &listeners) {
  const std::string &modelDir = config_.model_dir();
  bool chief = config_.is_chief();
  Hooks specHooks, chiefHooks;
  if (spec) {
    specHooks = spec->training_hooks;
    chiefHooks = spec->training_chief_hooks;
  }
  // TF's _train_with_estimator_spec: the saving listeners go to the first
  // CheckpointSaverHook of the hooks (it replaces the built-in one), else to
  // the built-in one RunConfig asks for.
  CheckpointSaverHook *userSaver = findSaverHook(userHooks);
  if (!userSaver)
    userSaver = findSaverHook(specHooks);
  if (!userSaver)
    userSaver = findSaverHook(chiefHooks);
  bool configSaves = config_.save_checkpoints_steps() > 0 ||
                     config_.save_checkpoints_secs() > 0;
  if (!listeners.empty() && !userSaver && !configSaves)
    throw std::invalid_argument(
        "Estimator.train: There should be a CheckpointSaverHook to use "
        "saving_listeners. Please set one of the "
        "RunConfig.save_checkpoints_steps or "
        "RunConfig.save_checkpoints_secs.");
  for (const ListenerPtr &l : listeners) {
    if (!l)
      throw std::invalid_argument("Estimator.train: a saving listener is null");
    if (userSaver)
      userSaver->add_listener(l);
  }

  Hooks hooks;
  // One deliberate difference from TF's order: the NaN check runs first, so
  // the checkpoint of a diverged step is never saved.
  if (hasLoss)
    hooks.push_back(std::make_shared<NanTensorHook>("loss"));
  // The chief's hooks (TF's MonitoredTrainingSession: checkpoints, then
  // global_step/sec, then summaries, before every other hook).
  if (chief) {
    if (!userSaver && configSaves) {
      CheckpointSaverHook::Options o;
      if (config_.save_checkpoints_steps() > 0)
        o.save_steps = config_.save_checkpoints_steps();
      else
        o.save_secs = config_.save_checkpoints_secs();
      o.listeners = listeners;
      o.saver_options.max_to_keep = config_.keep_checkpoint_max();
      o.saver_options.keep_checkpoint_every_n_hours =
          config_.keep_checkpoint_every_n_hours();
      o.saver_options.format = saverFormat(config_.checkpoint_format());
      // Parameter-server training starts a model_dir in TF's format: its
      // checkpoints are sharded saves, each ps task writing its share.
      if (o.saver_options.format == train::CheckpointFormat::Auto &&
          psTraining(config_) && !checkpoints_.latest())
        o.saver_options.format = train::CheckpointFormat::TensorBundle;
      o.saver_options.sync = config_.sync_checkpoints();
      hooks.push_back(std::make_shared<CheckpointSaverHook>(modelDir, o));
    }
    append(hooks, chiefHooks);
    std::shared_ptr<summary::SummaryWriter> events = sharedWriter(modelDir);
    StepCounterHook::Options counter;
    counter.every_n_steps = config_.log_step_count_steps();
    counter.summary_writer = events;
    hooks.push_back(std::make_shared<StepCounterHook>(counter));
    if (hasLoss && config_.save_summary_steps() > 0) {
      SummarySaverHook::Options summaries;
      summaries.save_steps = config_.save_summary_steps();
      summaries.summary_writer = events;
      // model_fn's summaries (TF's Scaffold summary_op, merge_all()), then
      // the loss, which TF's Estimator adds to them.
      summaries.summaries =
          summary_hook_summaries(backend_.summaries(ModeKeys::TRAIN));
      hooks.push_back(std::make_shared<SummarySaverHook>(
          std::map<std::string, std::string>{{"loss", "loss"}}, summaries));
    }
  }
  // Every worker's hooks: the user's, the step limit, the loss log line,
  // the EstimatorSpec's.
  append(hooks, userHooks);
  if (steps || max_steps)
    hooks.push_back(std::make_shared<StopAtStepHook>(steps, max_steps));
  if (hasLoss) {
    LoggingTensorHook::Options every;
    every.every_n_iter = config_.log_step_count_steps();
    hooks.push_back(std::make_shared<LoggingTensorHook>(
        std::map<std::string, std::string>{{"loss", "loss"},
                                           {"step", kGlobalStepFetch}},
        every));
  }
  append(hooks, specHooks);
  return hooks;
}

void Runner::train(const InputFn &input_fn, const Hooks &userHooks,
                   std::optional<int64_t> steps,
                   std::optional<int64_t> max_steps,
                   const Listeners &listeners) {
  if (training_)
    throw std::logic_error("Estimator.train: already training (called from a "
                           "hook?)");
  if (steps && max_steps)
    throw std::invalid_argument(
        "Estimator.train: Can not provide both steps and max_steps.");
  if (steps && *steps <= 0)
    throw std::invalid_argument("Estimator.train: Must specify steps > 0, "
                                "given: " +
                                std::to_string(*steps));
  if (max_steps && *max_steps <= 0)
    throw std::invalid_argument("Estimator.train: Must specify max_steps > 0, "
                                "given: " +
                                std::to_string(*max_steps));
  const std::string &modelDir = config_.model_dir();
  bool psCluster = psTraining(config_);
  if (psCluster) {
    checkPsCluster(config_, "Estimator.train");
    if (config_.task_type() == TaskType::PS)
      throw std::invalid_argument(
          "Estimator.train: this task is ps:" +
          std::to_string(config_.task_id()) +
          " of a parameter-server cluster: it serves variables "
          "(train_and_evaluate) and does not train");
  } else {
    checkTrainingCluster(config_, "Estimator.train");
  }
  // One replica of a MultiWorkerMirroredStrategy job: the chief alone reads
  // model_dir and tells the others.
  ReplicaGroup *group = config_.distributed() ? &this->group() : nullptr;
  bool chief = !group || group->rank() == 0;
  if (max_steps) {
    int64_t saved = -1;
    if (chief)
      if (std::optional<std::string> latest = checkpoints_.latest())
        saved = train::CheckpointReader(train::checkpoint_file(*latest))
                    .global_step();
    if (group)
      group->collective().broadcast(&saved, sizeof saved, 0);
    if (saved >= *max_steps) {
      log_info("Skipping training since max_steps has already saved (" +
               std::to_string(saved) + " >= " + std::to_string(*max_steps) +
               ").");
      return;
    }
  }
  // Compiled code reaches the group while train() runs.
  struct CollectiveScope {
    explicit CollectiveScope(ReplicaGroup *g) : on(g != nullptr) {
      if (on)
        rt::setCollective(&g->collective());
    }
    ~CollectiveScope() {
      if (on)
        rt::setCollective(nullptr);
    }
    bool on;
  } collectiveScope(group);

  applyThreads();
  Dataset data =
      input(input_fn, group && config_.train_distribute()->auto_shard);
  prepareModel(backend_, ModeKeys::TRAIN, data, "Estimator.train");
  const EstimatorSpec *spec = backend_.spec(ModeKeys::TRAIN);
  Hooks compiledFor = userHooks;
  if (spec) {
    append(compiledFor, spec->training_hooks);
    if (config_.is_chief())
      append(compiledFor, spec->training_chief_hooks);
  }
  rt::CompiledModel &m =
      backend_.model(ModeKeys::TRAIN, graphFetches(compiledFor));
  int fn = m.find_function("train");
  if (fn < 0)
    throw std::invalid_argument("Estimator.train: the compiled model " +
                                std::string(m.spec().name) +
                                " has no train function");
  if (group && m.spec().replicas != group->size())
    throw std::invalid_argument(
        "Estimator.train: the compiled model " + std::string(m.spec().name) +
        " was compiled for " +
        (m.spec().replicas > 1 ? std::to_string(m.spec().replicas) + " replicas"
                               : std::string("one replica")) +
        ", but the job has " + std::to_string(group->size()) +
        " (compile it with estc --replicas=" + std::to_string(group->size()) +
        ", or estc_add_model(... REPLICAS " + std::to_string(group->size()) +
        "))");
  bool hasLoss = m.find_output(fn, "loss") >= 0;
  Hooks hooks =
      trainingHooks(userHooks, spec, hasLoss, steps, max_steps, listeners);
  // Parameter-server training: the ps tasks hold the variables.
  std::unique_ptr<PsWorker> psWorker;
  if (psCluster)
    psWorker = std::make_unique<PsWorker>(config_, m);

  struct TrainingFlag {
    bool &flag, &locked;
    TrainingFlag(bool &f, bool &l) : flag(f), locked(l) {
      flag = locked = true;
    }
    ~TrainingFlag() { flag = locked = false; }
  } trainingFlag(training_, backend_.locked);

  // The session: the latest valid checkpoint, or @init + warm start.
  ModelSession session(m, modelDir);
  session.save_input_state(data);
  if (psWorker)
    session.set_parameter_servers(psWorker.get());
  // iterations_per_loop: up to N steps between two rounds of hooks.
  std::optional<int64_t> lastStep;
  std::unique_ptr<ModelStep> step;
  if (int64_t iterations = config_.iterations_per_loop();
      iterations > 1 && !psWorker) {
    int loopFn = m.find_function("train_loop");
    if (loopFn < 0)
      log_info("iterations_per_loop=" + std::to_string(iterations) +
               ": the model has no compiled train_loop (" +
               (config_.on_cuda() ? "a CUDA model"
                                  : "sparse inputs, or an AOT model compiled "
                                    "without estc --train-loop") +
               "); each step of a loop is one call");
    step = std::make_unique<LoopStep>(m, fn, loopFn, data, session, iterations,
                                      lastStep);
  } else {
    step = std::make_unique<ModelStep>(m, fn, /*metricsFn=*/-1, data, "train");
  }
  // The steps whose summaries are written run it instead of @train.
  step->set_summaries_function(m.find_function("train_summaries"));
  std::unique_ptr<DistributedStep> replicaStep;
  if (group)
    replicaStep = std::make_unique<DistributedStep>(
        *step, *group, session, data, findSaverHook(hooks), lastStep);
  std::unique_ptr<PsStep> psStep;
  if (psWorker)
    psStep = std::make_unique<PsStep>(*step, *psWorker, session);
  StepRunner &runner = psStep        ? static_cast<StepRunner &>(*psStep)
                       : replicaStep ? static_cast<StepRunner &>(*replicaStep)
                                     : *step;
  MonitoredSession loop(session, runner, hooks, [&] {
    if (psWorker) {
      // The ps tasks restored or initialized the variables they hold;
      // this process initializes the rest (not trained, the same on
      // every worker) and copies theirs. The chief continues its input
      // where the checkpoint saved it (the workers start afresh, as TF's
      // between-graph workers do).
      m.run(m.find_function("init"));
      if (chief)
        if (std::optional<std::string> latest = checkpoints_.latest()) {
          // Its input position only: the tasks' variables stay theirs.
          train::CheckpointReader reader(train::checkpoint_file(*latest));
          train::RestoredCheckpoint restored{*latest, reader.global_step(), {}};
          if (reader.has_tensor(kInputStateTensor))
            restored.variables[kInputStateTensor] =
                reader.get_tensor(kInputStateTensor);
          restoreInput(data, restored);
        }
      psWorker->pull();
      if (session.global_step() > 0)
        log_info("Training continues at global step " +
                 std::to_string(session.global_step()) +
                 " (the ps tasks' variables)");
      return;
    }
    std::optional<train::RestoredCheckpoint> restored;
    if (chief)
      restored = checkpoints_.restore();
    if (restored) {
      loadVariables(m, restored->variables,
                    train::checkpoint_file(restored->path));
      log_info("Restoring parameters from " + restored->path);
      restoreInput(data, *restored);
    } else if (chief) {
      initialize(m);
    } else {
      m.run(m.find_function("init")); // the chief's values follow
    }
    if (!group)
      return;
    // Every replica starts from the chief's variables (restored or not) and
    // continues its input where the chief's checkpoint saved it.
    group->broadcast_variables(m);
    std::map<int, std::string> states;
    if (restored)
      for (int r = 1; r < group->size(); ++r) {
        auto it = restored->variables.find(replicaInputStateTensor(r));
        if (it != restored->variables.end())
          states[r] = unpack_bytes(it->second);
      }
    std::string mine = group->broadcast_input_states(states);
    if (chief) {
      session.set_replica_input_states(states, session.global_step());
    } else if (!mine.empty()) {
      std::string why;
      bool ok = false;
      try {
        ok = data.restore_state(mine, &why);
      } catch (const data::DataError &e) {
        why = e.what();
      }
      if (ok)
        log_info("Restored the input pipeline's position from the chief's "
                 "checkpoint");
      else
        log_info("Not restoring the input pipeline's position from the "
                 "chief's checkpoint (" +
                 why + "); input_fn starts afresh.");
    } else if (session.global_step() > 0) {
      log_info("The chief's checkpoint has no input position for " +
               group->task_name(group->rank()) + "; input_fn starts afresh.");
    }
  });

  int64_t first = session.global_step();
  lastStep = max_steps;
  if (steps)
    lastStep = first + *steps;
  ProgressBar progress(first, lastStep.value_or(first));
  ClearBarBeforeLogLines clearBar(progress);
  std::vector<std::string> fetches;
  if (hasLoss)
    fetches.push_back("loss");
  std::optional<TensorValue> loss;
  while (!loop.should_stop()) {
    bool ran;
    try {
      ran = loop.run_step(fetches);
    } catch (const rt::ParameterServerError &) {
      if (!psWorker || !psWorker->job_ended())
        throw;
      log_info("The chief ended the job: training stops.");
      return;
    }
    if (!ran)
      break; // the input ran out
    if (hasLoss)
      loss = loop.value(fetches[0]);
    progress.update(session.global_step(), loss ? loss->element(0) : 0.0);
  }
  progress.finish();
  loop.close();
  if (psWorker && config_.is_chief())
    psWorker->end_job();
  if (loop.steps_run() == 0)
    log_info("Training with estimator made no steps. Perhaps input is empty "
             "or misspecified.");
  if (loss)
    log_info("Loss for final step: " + format_tensor(*loss) + ".");
}

void Runner::serve_parameters(const InputFn &input_fn) {
  checkPsCluster(config_, "train_and_evaluate");
  applyThreads();
  Dataset data = input(input_fn, false);
  prepareModel(backend_, ModeKeys::TRAIN, data, "train_and_evaluate");
  rt::CompiledModel &m = backend_.model(ModeKeys::TRAIN, {});
  int64_t step = 0;
  if (std::optional<std::string> latest = checkpoints_.latest()) {
    // This task's variables only, each read alone (a part of a
    // partitioned table as its slice): a task never holds more than its
    // share.
    train::CheckpointReader reader(train::checkpoint_file(*latest));
    loadVariablesFrom(m, reader);
    step = reader.global_step();
    log_info("Restoring parameters from " + *latest);
  } else {
    initialize(m);
  }
  serveParameters(config_, m, step);
}

EvalResults Runner::evaluate(const InputFn &input_fn,
                             std::optional<int64_t> steps,
                             const Hooks &userHooks,
                             const std::string &checkpoint_path,
                             const std::string &name, bool inMemory) {
  if (steps && *steps <= 0)
    throw std::invalid_argument("Estimator.evaluate: Must specify steps > 0, "
                                "given: " +
                                std::to_string(*steps));
  applyThreads();
  Dataset data = input(input_fn);
  prepareModel(backend_, ModeKeys::EVAL, data, "Estimator.evaluate");
  Hooks hooks = userHooks;
  if (const EstimatorSpec *spec = backend_.spec(ModeKeys::EVAL))
    append(hooks, spec->evaluation_hooks);
  rt::CompiledModel &m = backend_.model(ModeKeys::EVAL, graphFetches(hooks));
  int fn = m.find_function("eval");
  if (fn < 0)
    throw std::invalid_argument("Estimator.evaluate: the compiled model " +
                                std::string(m.spec().name) +
                                " has no eval function");
  int metricsFn = m.find_function("eval_metrics");
  bool hasLoss = m.find_output(fn, "loss") >= 0;

  // A nested evaluation (from a hook in train()) must leave the training
  // variables as they were; so must an in-memory one that restores
  // scaffold.saver_var_list's variables from the training variables.
  const std::map<std::string, std::string> &varList =
      saverVarList(ModeKeys::EVAL);
  std::vector<std::string> snapshot;
  if ((training_ && !inMemory) || (inMemory && !varList.empty()))
    snapshot = snapshotVariables(m);

  ModelSession session(m, config_.model_dir());
  ModelStep step(m, fn, metricsFn, data, "evaluate");
  MonitoredSession loop(session, step, hooks, [&] {
    if (!inMemory) {
      restoreForInference(m, checkpoint_path, "evaluate", ModeKeys::EVAL);
    } else if (!varList.empty()) {
      const std::string source = "Estimator.evaluate_in_memory";
      loadVariables(
          m, applySaverVarList(session.checkpoint_variables(), varList, source),
          source);
    }
    m.reset_local_variables();
  });
  // TF's loss metric, metrics.mean(loss): the mean of the per-batch losses,
  // each batch weighing one, in float32.
  float lossTotal = 0, lossCount = 0;
  std::vector<std::string> fetches;
  if (hasLoss)
    fetches.push_back("loss");
  int64_t done = 0;
  while (!loop.should_stop() && !(steps && done >= *steps)) {
    std::optional<FetchValues> values = loop.run(fetches);
    if (!values)
      break; // the input ran out
    ++done;
    if (hasLoss) {
      lossTotal += static_cast<float>(values->at("loss").element(0));
      lossCount += 1;
    }
  }
  loop.close();

  EvalResults results;
  if (metricsFn >= 0) {
    m.run(metricsFn);
    const rt::FunctionSpec &f = m.spec().functions[metricsFn];
    for (int i = 0; i < f.numOutputs; ++i) {
      std::string key = f.outputs[i].key;
      if (!key.starts_with("metrics/"))
        continue;
      TensorValue v = binding::readOutput(m, metricsFn, i);
      std::string metric = key.substr(8);
      if (v.shape.empty()) {
        results[metric] = v.element(0);
        continue;
      }
      // A metric with a value per threshold (or class, ...): one result
      // per element, "<name>/<i>" in row-major order.
      for (int64_t e = 0; e < v.num_elements(); ++e)
        results[metric + "/" + std::to_string(e)] = v.element(e);
    }
  }
  results["loss"] = lossCount > 0 ? lossTotal / lossCount : 0.0f;
  int64_t globalStep = session.global_step();
  results["global_step"] = static_cast<double>(globalStep);

  std::string line;
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto &[key, value] : results) {
    line += (line.empty() ? "" : ", ") + key + " = " + format_number(value);
    if (key != "global_step")
      scalars.push_back({key, value});
  }
  log_info("Saving dict for global step " + std::to_string(globalStep) + ": " +
           line);
  summary::SummaryWriter &w = writer(evalDir(name));
  w.add_scalars(scalars, globalStep);
  w.flush();

  if (!snapshot.empty())
    restoreSnapshot(m, snapshot);
  return results;
}

} // namespace detail
} // namespace estimator
} // namespace estc
