//===- Estimator.cpp - train / evaluate / predict loops -----------------===//
//
// The loops of estimator/Estimator.h around a compiled model, and the AOT
// backend. The JIT backend lives in EstimatorJit.cpp (EstcEstimatorJit), so
// that this file, and an AOT trainer, link no LLVM.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"

#include "estimator/EstimatorBackend.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "lib/Summary/Summary.h"
#include "runtime/CompiledModel.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <unistd.h>

namespace estc {
namespace estimator {

namespace fs = std::filesystem;

namespace {

// --- Conversions between the runtime's and the checkpoints' tensors -------

/// The one conversion from the runtime's ABI dtype to the host's DType.
DType toDType(rt::DType d, const std::string &what) {
  switch (d) {
  case rt::DType::F32:
    return DType::Float32;
  case rt::DType::F64:
    return DType::Float64;
  case rt::DType::I32:
    return DType::Int32;
  case rt::DType::I64:
    return DType::Int64;
  case rt::DType::Bool:
    return DType::Bool;
  case rt::DType::I8:
    break;
  }
  throw std::invalid_argument(what + ": i8 tensors cannot be checkpointed or "
                                     "returned");
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") +
         (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

std::string specString(const rt::TensorSpec &t) {
  return std::string(rt::dtypeName(t.dtype)) +
         shapeString(std::vector<int64_t>(t.shape, t.shape + t.rank));
}

std::string valueString(const TensorValue &t) {
  return to_string(t.dtype) + shapeString(t.shape);
}

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::vector<int64_t> concreteShape(const rt::TensorSpec &t, int64_t batch) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  for (int64_t &d : shape)
    if (d == rt::kBatchDim)
      d = batch;
  return shape;
}

TensorValue readOutput(rt::CompiledModel &m, int fn, int output) {
  const rt::TensorSpec &t = m.spec().functions[fn].outputs[output];
  std::vector<int64_t> shape = concreteShape(t, m.batch());
  size_t bytes =
      static_cast<size_t>(rt::numElements(t.rank, t.shape, m.batch())) *
      rt::dtypeBytes(t.dtype);
  const char *data = static_cast<const char *>(m.output_data(fn, output));
  return TensorValue::from_bytes(toDType(t.dtype, t.key), std::move(shape),
                                 std::string(data, bytes));
}

TensorValue readVariable(rt::CompiledModel &m, int index) {
  const rt::VariableSpec &v = m.spec().variables[index];
  std::vector<int64_t> shape(v.shape, v.shape + v.rank);
  size_t bytes = static_cast<size_t>(m.variable_bytes(index));
  const char *data = static_cast<const char *>(m.variable_data(index));
  return TensorValue::from_bytes(toDType(v.dtype, v.name), std::move(shape),
                                 std::string(data, bytes));
}

VariableSpec variableSpec(const rt::VariableSpec &v) {
  return {toDType(v.dtype, v.name),
          std::vector<int64_t>(v.shape, v.shape + v.rank)};
}

/// Metric state, which evaluation resets and checkpoints leave out.
bool isLocal(const rt::VariableSpec &v) { return v.local; }

std::string functionName(ModeKeys mode) { return mode_key(mode); }

/// Puts `variables` (a checkpoint's) into the model: every non-local
/// variable must be there with the model's dtype and shape.
void loadVariables(rt::CompiledModel &m, const train::VariableMap &variables,
                   const std::string &source) {
  const rt::ModelSpec &spec = m.spec();
  for (int i = 0; i < spec.numVariables; ++i) {
    const rt::VariableSpec &v = spec.variables[i];
    if (isLocal(v))
      continue;
    auto it = variables.find(v.name);
    VariableSpec want = variableSpec(v);
    if (it == variables.end())
      throw train::CheckpointError(source + ": variable '" + v.name + "' (" +
                                   want.str() + ") is not in the checkpoint");
    if (it->second.spec() != want)
      throw train::CheckpointError(
          source + ": variable '" + v.name + "' is " + it->second.spec().str() +
          " in the checkpoint but " + want.str() + " in the model");
    std::memcpy(m.variable_data(i), it->second.data.data(),
                it->second.data.size());
  }
}

/// Zeroes the metrics' local state.
void resetLocalVariables(rt::CompiledModel &m) { m.reset_local_variables(); }

/// Every variable's bytes (to put a model back after a nested evaluation).
std::vector<std::string> snapshotVariables(rt::CompiledModel &m) {
  std::vector<std::string> out;
  for (int i = 0; i < m.spec().numVariables; ++i)
    out.emplace_back(static_cast<const char *>(m.variable_data(i)),
                     static_cast<size_t>(m.variable_bytes(i)));
  return out;
}

void restoreSnapshot(rt::CompiledModel &m,
                     const std::vector<std::string> &snapshot) {
  for (int i = 0; i < m.spec().numVariables; ++i)
    std::memcpy(m.variable_data(i), snapshot[i].data(), snapshot[i].size());
}

/// Copies a batch into `fn`'s inputs after checking names, dtypes and
/// shapes against the compiled function.
void feed(rt::CompiledModel &m, int fn, const Batch &batch,
          const std::string &call) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  std::string where = "Estimator." + call + ": ";
  std::vector<std::string> featureKeys;
  for (int i = 0; i < f.numInputs; ++i) {
    std::string key = f.inputs[i].key;
    if (startsWith(key, "features/"))
      featureKeys.push_back(key.substr(9));
  }
  auto listKeys = [&] {
    std::string s;
    for (const std::string &k : featureKeys)
      s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  for (const auto &entry : batch.features)
    if (std::find(featureKeys.begin(), featureKeys.end(), entry.first) ==
        featureKeys.end())
      throw std::invalid_argument(where + "input_fn feature '" + entry.first +
                                  "' is not an input of the model's " + f.name +
                                  " function (features: " + listKeys() + ")");
  int64_t n;
  try {
    n = batch.size();
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(where + e.what());
  }
  if (n == 0)
    throw std::invalid_argument(where + "input_fn gave an empty batch");
  m.set_batch(n);
  for (int i = 0; i < f.numInputs; ++i) {
    const rt::TensorSpec &spec = f.inputs[i];
    std::string key = spec.key;
    const TensorValue *value = nullptr;
    std::string what;
    if (startsWith(key, "features/")) {
      what = "feature '" + key.substr(9) + "'";
      auto it = batch.features.find(key.substr(9));
      if (it == batch.features.end())
        throw std::invalid_argument(where + "input_fn gave no " + what +
                                    "; the model's " + f.name +
                                    " function takes " + specString(spec));
      value = &it->second;
    } else {
      what = "labels";
      if (!batch.labels)
        throw std::invalid_argument(where +
                                    "input_fn gave no labels; the "
                                    "model's " +
                                    std::string(f.name) + " function takes " +
                                    specString(spec));
      value = &*batch.labels;
    }
    std::vector<int64_t> want = concreteShape(spec, n);
    bool dtypeOk = to_string(value->dtype) == rt::dtypeName(spec.dtype);
    if (!dtypeOk || value->shape != want)
      throw std::invalid_argument(where + what + " is " + valueString(*value) +
                                  "; the model's " + f.name +
                                  " function takes " + specString(spec));
    std::memcpy(m.input_data(fn, i), value->data.data(), value->data.size());
  }
}

std::string outputList(rt::CompiledModel &m, int fn) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  std::string s;
  for (int i = 0; i < f.numOutputs; ++i)
    s += (i ? ", " : "") + std::string(f.outputs[i].key);
  return s;
}

double scalarValue(const TensorValue &t) { return t.element(0); }

/// Prepares `backend`'s model for `mode` from `data`'s element spec; an empty
/// dataset that declares none runs the current model, if there is one.
/// `caller` ("Estimator.train", ...) starts the error.
void prepareModel(detail::Backend &backend, ModeKeys mode, Dataset &data,
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

using SteadyClock = std::chrono::steady_clock;
double secondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}
double wallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The progress bar train() draws on a terminal.
class ProgressBar {
public:
  ProgressBar(int64_t first, int64_t last)
      : first_(first), last_(last),
        enabled_(isatty(STDERR_FILENO) && last > first) {}
  ~ProgressBar() { finish(); }

  void update(int64_t step, double loss) {
    if (!enabled_)
      return;
    if (step < last_ && secondsSince(lastDraw_) < 0.1)
      return;
    lastDraw_ = SteadyClock::now();
    double fraction = std::clamp(static_cast<double>(step - first_) /
                                     static_cast<double>(last_ - first_),
                                 0.0, 1.0);
    const int width = 30;
    int filled = static_cast<int>(fraction * width);
    std::string bar(filled, '=');
    if (filled < width)
      bar += '>' + std::string(width - filled - 1, ' ');
    double rate = (step - first_) / std::max(secondsSince(start_), 1e-9);
    std::fprintf(stderr, "\r\033[K[%s] %lld/%lld  loss %s  %.1f steps/s",
                 bar.c_str(), static_cast<long long>(step),
                 static_cast<long long>(last_), format_number(loss).c_str(),
                 rate);
    std::fflush(stderr);
    drawn_ = true;
  }
  /// Clears the bar before a log line.
  void clear() {
    if (enabled_ && drawn_) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      drawn_ = false;
    }
  }
  void finish() {
    if (enabled_ && drawn_) {
      std::fprintf(stderr, "\n");
      std::fflush(stderr);
      drawn_ = false;
    }
    enabled_ = false;
  }

private:
  int64_t first_, last_;
  bool enabled_;
  bool drawn_ = false;
  SteadyClock::time_point start_ = SteadyClock::now();
  SteadyClock::time_point lastDraw_{};
};

// --- The AOT backend ---------------------------------------------------------

class AotBackend : public detail::Backend {
public:
  explicit AotBackend(std::unique_ptr<rt::CompiledModel> model)
      : model_(std::move(model)) {
    if (!model_)
      throw std::invalid_argument("Estimator: null compiled model");
  }
  void prepare(ModeKeys mode, const ElementSpec &spec) override {
    (void)spec;
    if (model_->find_function(functionName(mode)) < 0)
      throw std::invalid_argument(
          "Estimator: the compiled model " + std::string(model_->spec().name) +
          " has no " + functionName(mode) + " function");
  }
  rt::CompiledModel &model(ModeKeys mode,
                           const std::vector<std::string> &fetches) override {
    int fn = model_->find_function(functionName(mode));
    for (const std::string &node : fetches)
      if (fn < 0 || model_->find_output(fn, "tensors/" + node) < 0)
        throw std::invalid_argument(
            "Estimator: hook graph fetch '" + node +
            "' is not an output "
            "'tensors/" +
            node + "' of the compiled model " + model_->spec().name + "'s " +
            functionName(mode) +
            " function (an AOT model has only what estc compiled into it)");
    return *model_;
  }
  rt::CompiledModel *current() override { return model_.get(); }

private:
  std::unique_ptr<rt::CompiledModel> model_;
};

} // namespace

std::unique_ptr<detail::Backend>
detail::makeAotBackend(std::unique_ptr<rt::CompiledModel> model) {
  return std::make_unique<AotBackend>(std::move(model));
}

// --- The session hooks see ---------------------------------------------------

namespace {

class ModelSession : public Session {
public:
  ModelSession(rt::CompiledModel &model, const std::string &modelDir)
      : model_(model), modelDir_(modelDir),
        globalStep_(model.find_variable("global_step")) {}

  int64_t global_step() const override {
    if (globalStep_ < 0)
      return 0;
    return static_cast<int64_t>(readVariable(model_, globalStep_).element(0));
  }
  std::vector<std::string> variable_names() const override {
    std::vector<std::string> names;
    for (int i = 0; i < model_.spec().numVariables; ++i)
      names.push_back(model_.spec().variables[i].name);
    return names;
  }
  TensorValue variable_value(const std::string &name) const override {
    int index = model_.find_variable(name);
    if (index < 0)
      throw std::invalid_argument("Session: no variable '" + name +
                                  "' in the model");
    return readVariable(model_, index);
  }
  train::VariableMap checkpoint_variables() const override {
    train::VariableMap out;
    for (int i = 0; i < model_.spec().numVariables; ++i)
      if (!isLocal(model_.spec().variables[i]))
        out[model_.spec().variables[i].name] = readVariable(model_, i);
    return out;
  }
  const std::string &model_dir() const override { return modelDir_; }
  rt::CompiledModel &model() const { return model_; }

private:
  rt::CompiledModel &model_;
  std::string modelDir_;
  int globalStep_;
};

/// Resolves hook fetches against a function (and, in EVAL, eval_metrics)
/// and the variables.
class Fetcher {
public:
  Fetcher(rt::CompiledModel &m, int fn, int metricsFn)
      : m_(m), fn_(fn), metricsFn_(metricsFn) {}

  struct Plan {
    std::vector<std::vector<std::string>> perHook;
    bool needsMetrics = false;
  };

  Plan plan(const std::vector<SessionRunArgs> &args) {
    Plan p;
    for (const SessionRunArgs &a : args) {
      for (const std::string &fetch : a.fetches)
        if (resolve(fetch).kind == Kind::Metric)
          p.needsMetrics = true;
      p.perHook.push_back(a.fetches);
    }
    return p;
  }

  TensorValue value(const std::string &fetch) {
    Item item = resolve(fetch);
    switch (item.kind) {
    case Kind::Output:
      return readOutput(m_, fn_, item.index);
    case Kind::Metric:
      return readOutput(m_, metricsFn_, item.index);
    case Kind::Variable:
      return readVariable(m_, item.index);
    }
    return {};
  }

private:
  enum class Kind { Output, Metric, Variable };
  struct Item {
    Kind kind;
    int index;
  };
  Item resolve(const std::string &fetch) {
    auto it = cache_.find(fetch);
    if (it != cache_.end())
      return it->second;
    Item item{Kind::Output, m_.find_output(fn_, fetch)};
    if (item.index < 0 && metricsFn_ >= 0) {
      item = {Kind::Metric, m_.find_output(metricsFn_, fetch)};
    }
    if (item.index < 0)
      item = {Kind::Variable, m_.find_variable(fetch)};
    if (item.index < 0) {
      std::string outputs = outputList(m_, fn_);
      if (metricsFn_ >= 0)
        outputs += (outputs.empty() ? "" : ", ") + outputList(m_, metricsFn_);
      throw std::invalid_argument("Estimator: hook fetch '" + fetch +
                                  "' is neither an output of the "
                                  "model's " +
                                  m_.spec().functions[fn_].name +
                                  " function (" + outputs + ") nor a variable");
    }
    cache_.emplace(fetch, item);
    return item;
  }
  rt::CompiledModel &m_;
  int fn_, metricsFn_;
  std::map<std::string, Item> cache_;
};

double microsSince(SteadyClock::time_point start, SteadyClock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - start).count();
}

} // namespace

// --- The runner: the loops ---------------------------------------------------

namespace detail {

class Runner {
public:
  Runner(const RunConfig &config, const std::optional<WarmStartSettings> &warm,
         Backend &backend)
      : config_(config), warm_(warm), backend_(backend) {}

  void train(const InputFn &input_fn, const Hooks &hooks,
             std::optional<int64_t> steps, std::optional<int64_t> max_steps,
             const Listeners &listeners);
  /// RunConfig's intra-op threads for the runtime, at the start of a call.
  void applyThreads() const {
    if (config_.intra_op_parallelism_threads() > 0)
      estc_runtime_set_num_threads(config_.intra_op_parallelism_threads());
  }
  EvalResults evaluate(const InputFn &input_fn, std::optional<int64_t> steps,
                       const Hooks &hooks, const std::string &checkpoint_path,
                       const std::string &name, bool inMemory);

  /// Variables from `checkpoint_path`, the latest checkpoint, or @init (with
  /// a log line naming `call`).
  void restoreForInference(rt::CompiledModel &m,
                           const std::string &checkpoint_path,
                           const std::string &call);
  summary::SummaryWriter &writer(const std::string &logdir);
  std::string evalDir(const std::string &name) const {
    return (fs::path(config_.model_dir()) /
            (name.empty() ? std::string("eval") : "eval_" + name))
        .string();
  }
  bool training() const { return training_; }
  /// Hooks with graph fetches, for the backend.
  static std::vector<std::string> graphFetches(const Hooks &hooks) {
    std::set<std::string> all;
    for (const HookPtr &h : hooks)
      for (const std::string &f : h->graph_fetches())
        all.insert(f);
    return {all.begin(), all.end()};
  }
  Backend &backend() { return backend_; }
  const RunConfig &config() const { return config_; }

private:
  void initialize(rt::CompiledModel &m);

  const RunConfig &config_;
  const std::optional<WarmStartSettings> &warm_;
  Backend &backend_;
  // The writers this Estimator used, kept open while it lives.
  std::vector<std::shared_ptr<summary::SummaryWriter>> writers_;
  bool training_ = false;
};

summary::SummaryWriter &Runner::writer(const std::string &logdir) {
  // One event file per directory and process, shared with the hooks
  // (SummaryWriterCache, TF's FileWriterCache).
  std::shared_ptr<summary::SummaryWriter> w =
      summary::SummaryWriterCache::get(logdir);
  if (std::find(writers_.begin(), writers_.end(), w) == writers_.end())
    writers_.push_back(w);
  return *w;
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
  std::map<std::string, VariableSpec> current;
  for (int i = 0; i < m.spec().numVariables; ++i)
    if (m.spec().variables[i].trainable)
      current[m.spec().variables[i].name] = variableSpec(m.spec().variables[i]);
  log_info("Warm-starting from: " + warm_->ckpt_to_initialize_from);
  train::VariableMap values = warm_start(*warm_, current);
  for (const auto &[name, value] : values) {
    int index = m.find_variable(name);
    std::memcpy(m.variable_data(index), value.data.data(), value.data.size());
  }
}

void Runner::restoreForInference(rt::CompiledModel &m,
                                 const std::string &checkpoint_path,
                                 const std::string &call) {
  if (!checkpoint_path.empty()) {
    std::string file = train::resolve_checkpoint(checkpoint_path);
    train::CheckpointReader reader(file);
    loadVariables(m, reader.read_all(), file);
    return;
  }
  std::optional<train::RestoredCheckpoint> restored =
      train::restore_latest(config_.model_dir());
  if (restored) {
    loadVariables(m, restored->variables,
                  train::checkpoint_file(restored->path));
    return;
  }
  log_info("Could not find trained model in model_dir: " + config_.model_dir() +
           ", running initialization to " + call + ".");
  initialize(m);
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
  // Only the chief saves checkpoints and summaries (TF's chief-only hooks).
  bool chief = config_.is_chief();
  bool checkpointing = chief && (config_.save_checkpoints_steps() > 0 ||
                                 config_.save_checkpoints_secs() > 0);
  if (max_steps) {
    // Silently: restoring below reports a corrupt checkpoint once.
    if (std::optional<std::string> latest =
            train::latest_checkpoint(modelDir, [](const std::string &) {})) {
      int64_t saved = train::CheckpointReader(train::checkpoint_file(*latest))
                          .global_step();
      if (saved >= *max_steps) {
        log_info("Skipping training since max_steps has already saved (" +
                 std::to_string(saved) + " >= " + std::to_string(*max_steps) +
                 ").");
        return;
      }
    }
  }

  applyThreads();
  Dataset data = input_fn();
  prepareModel(backend_, ModeKeys::TRAIN, data, "Estimator.train");

  Hooks hooks = userHooks;
  if (const EstimatorSpec *spec = backend_.spec(ModeKeys::TRAIN)) {
    hooks.insert(hooks.end(), spec->training_hooks.begin(),
                 spec->training_hooks.end());
    if (config_.is_chief())
      hooks.insert(hooks.end(), spec->training_chief_hooks.begin(),
                   spec->training_chief_hooks.end());
  }
  // A CheckpointSaverHook among the hooks replaces the built-in saving, as
  // in TF (the listeners then belong to that hook).
  bool saverHook =
      std::any_of(hooks.begin(), hooks.end(), [](const HookPtr &h) {
        return dynamic_cast<const CheckpointSaverHook *>(h.get()) != nullptr;
      });
  if (saverHook && !listeners.empty())
    throw std::invalid_argument(
        "Estimator.train: saving_listeners with a CheckpointSaverHook among "
        "the hooks: give the listeners to that hook");
  if (!listeners.empty() && !checkpointing)
    throw std::invalid_argument(
        "Estimator.train: saving_listeners need checkpoints: set "
        "RunConfig save_checkpoints_steps or save_checkpoints_secs (and "
        "train on the chief)");
  checkpointing = checkpointing && !saverHook;
  rt::CompiledModel &m = backend_.model(ModeKeys::TRAIN, graphFetches(hooks));
  int fn = m.find_function("train");
  if (fn < 0)
    throw std::invalid_argument("Estimator.train: the compiled model " +
                                std::string(m.spec().name) +
                                " has no train function");
  int lossOut = m.find_output(fn, "loss");

  struct TrainingFlag {
    bool &flag, &locked;
    TrainingFlag(bool &f, bool &l) : flag(f), locked(l) {
      flag = locked = true;
    }
    ~TrainingFlag() { flag = locked = false; }
  } trainingFlag(training_, backend_.locked);

  SteadyClock::time_point callStart = SteadyClock::now();
  for (const HookPtr &h : hooks)
    h->begin();
  for (const ListenerPtr &l : listeners)
    l->begin();

  // The session: the latest valid checkpoint, or @init + warm start.
  ModelSession session(m, modelDir);
  std::optional<train::RestoredCheckpoint> restored =
      train::restore_latest(modelDir);
  if (restored) {
    loadVariables(m, restored->variables,
                  train::checkpoint_file(restored->path));
    log_info("Restoring parameters from " + restored->path);
  } else {
    initialize(m);
  }
  int64_t step = session.global_step();
  std::optional<int64_t> lastStep;
  if (steps)
    lastStep = step + *steps;
  else if (max_steps)
    lastStep = *max_steps;

  std::unique_ptr<train::Saver> saver;
  int64_t lastSavedStep = restored ? restored->global_step : -1;
  SteadyClock::time_point lastSaveTime = SteadyClock::now();
  bool stopFromListener = false;
  auto save = [&](int64_t globalStep) {
    if (!saver) {
      train::SaverOptions options;
      options.max_to_keep = config_.keep_checkpoint_max();
      options.keep_checkpoint_every_n_hours =
          config_.keep_checkpoint_every_n_hours();
      saver = std::make_unique<train::Saver>(modelDir, options);
    }
    for (const ListenerPtr &l : listeners)
      l->before_save(session, globalStep);
    log_info("Saving checkpoints for " + std::to_string(globalStep) + " into " +
             (fs::path(modelDir) / "model.ckpt").string() + ".");
    saver->save(session.checkpoint_variables(), globalStep);
    lastSavedStep = globalStep;
    lastSaveTime = SteadyClock::now();
    for (const ListenerPtr &l : listeners)
      if (l->after_save(session, globalStep)) {
        log_info("A CheckpointSaverListener requested that training be "
                 "stopped.");
        stopFromListener = true;
      }
  };
  if (checkpointing && lastSavedStep != step)
    save(step);
  for (const HookPtr &h : hooks)
    h->after_create_session(session);

  ProgressBar progress(step, lastStep.value_or(step));
  auto logLine = [&](const std::string &line) {
    progress.clear();
    log_info(line);
  };
  summary::SummaryWriter *events = chief ? &writer(modelDir) : nullptr;

  int64_t iteration = 0;
  std::optional<int64_t> lastSummaryStep;
  SteadyClock::time_point lastLogTime = SteadyClock::now();
  int64_t rateStartStep = step;
  SteadyClock::time_point rateStart = SteadyClock::now();
  double loss = 0;
  bool haveLoss = false;
  while (!stopFromListener && !(lastStep && step >= *lastStep)) {
    SessionRunContext context(session);
    std::vector<StepPhase> phases;
    SteadyClock::time_point t0 = SteadyClock::now();
    std::vector<SessionRunArgs> args;
    for (const HookPtr &h : hooks)
      args.push_back(h->before_run(context));
    SteadyClock::time_point t1 = SteadyClock::now();
    std::optional<Batch> batch = data.next();
    if (!batch)
      break; // input exhausted: no after_run
    feed(m, fn, *batch, "train");
    SteadyClock::time_point t2 = SteadyClock::now();
    m.run(fn);
    SteadyClock::time_point t3 = SteadyClock::now();
    phases.push_back(
        {"before_run", microsSince(callStart, t0), microsSince(t0, t1)});
    phases.push_back(
        {"input", microsSince(callStart, t1), microsSince(t1, t2)});
    phases.push_back(
        {"run:train", microsSince(callStart, t2), microsSince(t2, t3)});
    step = session.global_step();
    loss = lossOut >= 0 ? scalarValue(readOutput(m, fn, lossOut)) : 0.0;
    haveLoss = lossOut >= 0;
    if (std::isnan(loss))
      throw std::runtime_error("Model diverged with loss = NaN (global step " +
                               std::to_string(step) + ").");

    // Built in: checkpoints, summaries, log lines (TF's chief hooks).
    if (checkpointing &&
        ((config_.save_checkpoints_steps() > 0 &&
          step >= lastSavedStep + config_.save_checkpoints_steps()) ||
         (config_.save_checkpoints_secs() > 0 &&
          secondsSince(lastSaveTime) >= config_.save_checkpoints_secs())))
      save(step);
    if (events && haveLoss && config_.save_summary_steps() > 0 &&
        (!lastSummaryStep ||
         step >= *lastSummaryStep + config_.save_summary_steps())) {
      events->add_scalar("loss", loss, step);
      lastSummaryStep = step;
    }
    int64_t every = config_.log_step_count_steps();
    if (haveLoss && iteration % every == 0) {
      std::string line =
          "loss = " + format_number(loss) + ", step = " + std::to_string(step);
      if (iteration > 0) {
        char elapsed[32];
        std::snprintf(elapsed, sizeof elapsed, " (%.3f sec)",
                      secondsSince(lastLogTime));
        line += elapsed;
      }
      logLine(line);
      lastLogTime = SteadyClock::now();
    }
    if (step >= rateStartStep + every) {
      double rate = static_cast<double>(step - rateStartStep) /
                    std::max(secondsSince(rateStart), 1e-9);
      logLine("global_step/sec: " + format_number(rate));
      if (events)
        events->add_scalar("global_step/sec", rate, step);
      rateStartStep = step;
      rateStart = SteadyClock::now();
    }
    ++iteration;

    Fetcher fetcher(m, fn, -1);
    Fetcher::Plan plan = fetcher.plan(args);
    for (size_t i = 0; i < hooks.size(); ++i) {
      SessionRunValues values;
      for (const std::string &fetch : plan.perHook[i])
        values.results[fetch] = fetcher.value(fetch);
      values.phases = phases;
      hooks[i]->after_run(context, values);
    }
    progress.update(step, loss);
    if (context.stop_requested())
      break;
  }
  progress.finish();
  if (checkpointing && lastSavedStep != step)
    save(step);
  for (const ListenerPtr &l : listeners)
    l->end(session, step);
  if (haveLoss)
    log_info("Loss for final step: " + format_number(loss) + ".");
  if (events)
    events->flush();
  for (const HookPtr &h : hooks)
    h->end(session);
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
  Dataset data = input_fn();
  prepareModel(backend_, ModeKeys::EVAL, data, "Estimator.evaluate");
  Hooks hooks = userHooks;
  if (const EstimatorSpec *spec = backend_.spec(ModeKeys::EVAL))
    hooks.insert(hooks.end(), spec->evaluation_hooks.begin(),
                 spec->evaluation_hooks.end());
  rt::CompiledModel &m = backend_.model(ModeKeys::EVAL, graphFetches(hooks));
  int fn = m.find_function("eval");
  if (fn < 0)
    throw std::invalid_argument("Estimator.evaluate: the compiled model " +
                                std::string(m.spec().name) +
                                " has no eval function");
  int metricsFn = m.find_function("eval_metrics");
  int lossOut = m.find_output(fn, "loss");

  // A nested evaluation (from a hook in train()) must leave the training
  // variables as they were.
  std::vector<std::string> snapshot;
  if (training_ && !inMemory)
    snapshot = snapshotVariables(m);

  SteadyClock::time_point callStart = SteadyClock::now();
  for (const HookPtr &h : hooks)
    h->begin();
  ModelSession session(m, config_.model_dir());
  if (!inMemory)
    restoreForInference(m, checkpoint_path, "evaluate");
  resetLocalVariables(m);
  for (const HookPtr &h : hooks)
    h->after_create_session(session);

  double lossSum = 0;
  int64_t examples = 0;
  int64_t done = 0;
  while (!(steps && done >= *steps)) {
    SessionRunContext context(session);
    SteadyClock::time_point t0 = SteadyClock::now();
    std::vector<SessionRunArgs> args;
    for (const HookPtr &h : hooks)
      args.push_back(h->before_run(context));
    SteadyClock::time_point t1 = SteadyClock::now();
    std::optional<Batch> batch = data.next();
    if (!batch)
      break;
    feed(m, fn, *batch, "evaluate");
    int64_t n = m.batch();
    SteadyClock::time_point t2 = SteadyClock::now();
    m.run(fn);
    Fetcher fetcher(m, fn, metricsFn);
    Fetcher::Plan plan = fetcher.plan(args);
    if (plan.needsMetrics)
      m.run(metricsFn);
    SteadyClock::time_point t3 = SteadyClock::now();
    if (lossOut >= 0) {
      lossSum +=
          scalarValue(readOutput(m, fn, lossOut)) * static_cast<double>(n);
      examples += n;
    }
    ++done;
    std::vector<StepPhase> phases{
        {"before_run", microsSince(callStart, t0), microsSince(t0, t1)},
        {"input", microsSince(callStart, t1), microsSince(t1, t2)},
        {"run:eval", microsSince(callStart, t2), microsSince(t2, t3)}};
    for (size_t i = 0; i < hooks.size(); ++i) {
      SessionRunValues values;
      for (const std::string &fetch : plan.perHook[i])
        values.results[fetch] = fetcher.value(fetch);
      values.phases = phases;
      hooks[i]->after_run(context, values);
    }
    if (context.stop_requested())
      break;
  }

  EvalResults results;
  if (metricsFn >= 0) {
    m.run(metricsFn);
    const rt::FunctionSpec &f = m.spec().functions[metricsFn];
    for (int i = 0; i < f.numOutputs; ++i) {
      std::string key = f.outputs[i].key;
      if (!startsWith(key, "metrics/"))
        continue;
      TensorValue v = readOutput(m, metricsFn, i);
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
  results["loss"] =
      examples > 0 ? lossSum / static_cast<double>(examples) : 0.0;
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

  for (const HookPtr &h : hooks)
    h->end(session);
  if (!snapshot.empty())
    restoreSnapshot(m, snapshot);
  return results;
}

} // namespace detail

// --- Predictions -------------------------------------------------------------

struct Predictions::State {
  detail::Runner *runner = nullptr;
  Dataset data;
  Hooks hooks;
  std::vector<std::string> keys; // prediction keys, without "predictions/"
  std::vector<int> outputs;      // their output indices
  std::string checkpointPath;
  bool single = true;
  rt::CompiledModel *model = nullptr;
  int fn = -1;
  std::unique_ptr<ModelSession> session;
  bool started = false, done = false, stopAfterBatch = false;
  std::map<std::string, TensorValue> batchValues;
  int64_t batchSize = 0, index = 0;
  Prediction current;
  SteadyClock::time_point callStart = SteadyClock::now();

  explicit State(Dataset d) : data(std::move(d)) {}
};

Predictions::Predictions(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
Predictions::Predictions(Predictions &&) noexcept = default;
Predictions &Predictions::operator=(Predictions &&) noexcept = default;
Predictions::~Predictions() = default;

namespace {
/// Row `index` of `t` (first dimension removed).
TensorValue row(const TensorValue &t, int64_t index) {
  TensorValue out;
  out.dtype = t.dtype;
  out.shape.assign(t.shape.begin() + 1, t.shape.end());
  size_t bytes = t.data.size() / static_cast<size_t>(t.shape[0]);
  out.data = t.data.substr(bytes * index, bytes);
  return out;
}
} // namespace

Predictions::iterator Predictions::begin() {
  State &s = *state_;
  if (!s.started) {
    s.started = true;
    for (const HookPtr &h : s.hooks)
      h->begin();
    s.session = std::make_unique<ModelSession>(*s.model,
                                               s.runner->config().model_dir());
    s.runner->restoreForInference(*s.model, s.checkpointPath, "predict");
    for (const HookPtr &h : s.hooks)
      h->after_create_session(*s.session);
    if (!advance())
      return end();
  }
  return s.done ? end() : iterator(this);
}

bool Predictions::advance() {
  State &s = *state_;
  if (s.done)
    return false;
  while (true) {
    if (s.single && s.index + 1 < s.batchSize) {
      ++s.index;
      s.current.clear();
      for (const auto &[key, value] : s.batchValues)
        s.current[key] = row(value, s.index);
      return true;
    }
    if (s.stopAfterBatch)
      break;
    SessionRunContext context(*s.session);
    SteadyClock::time_point t0 = SteadyClock::now();
    std::vector<SessionRunArgs> args;
    for (const HookPtr &h : s.hooks)
      args.push_back(h->before_run(context));
    SteadyClock::time_point t1 = SteadyClock::now();
    std::optional<Batch> batch = s.data.next();
    if (!batch)
      break;
    feed(*s.model, s.fn, *batch, "predict");
    SteadyClock::time_point t2 = SteadyClock::now();
    s.model->run(s.fn);
    SteadyClock::time_point t3 = SteadyClock::now();
    s.batchSize = s.model->batch();
    s.batchValues.clear();
    for (size_t k = 0; k < s.keys.size(); ++k)
      s.batchValues[s.keys[k]] = readOutput(*s.model, s.fn, s.outputs[k]);
    std::vector<StepPhase> phases{
        {"before_run", microsSince(s.callStart, t0), microsSince(t0, t1)},
        {"input", microsSince(s.callStart, t1), microsSince(t1, t2)},
        {"run:predict", microsSince(s.callStart, t2), microsSince(t2, t3)}};
    Fetcher fetcher(*s.model, s.fn, -1);
    Fetcher::Plan plan = fetcher.plan(args);
    for (size_t i = 0; i < s.hooks.size(); ++i) {
      SessionRunValues values;
      for (const std::string &fetch : plan.perHook[i])
        values.results[fetch] = fetcher.value(fetch);
      values.phases = phases;
      s.hooks[i]->after_run(context, values);
    }
    if (context.stop_requested())
      s.stopAfterBatch = true;
    s.index = 0;
    if (s.single) {
      s.current.clear();
      for (const auto &[key, value] : s.batchValues)
        s.current[key] = row(value, 0);
    } else {
      s.current = s.batchValues;
      s.batchSize = 0; // one element per batch
    }
    return true;
  }
  s.done = true;
  for (const HookPtr &h : s.hooks)
    h->end(*s.session);
  return false;
}

const Prediction &Predictions::iterator::operator*() const {
  if (!range_)
    throw std::logic_error("Predictions: dereferencing the end iterator");
  return range_->state_->current;
}

Predictions::iterator &Predictions::iterator::operator++() {
  if (range_ && !range_->advance())
    range_ = nullptr;
  return *this;
}

bool Predictions::iterator::operator==(const iterator &other) const {
  return range_ == other.range_;
}

// --- Estimator ---------------------------------------------------------------

namespace {
RunConfig withModelDir(const RunConfig &config) {
  if (!config.model_dir().empty())
    return config;
  std::string pattern =
      (fs::temp_directory_path() / "estc_model_XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    throw std::runtime_error("Estimator: cannot create a temporary model_dir "
                             "under " +
                             fs::temp_directory_path().string());
  RunConfigOptions o;
  o.model_dir = std::string(buffer.data());
  log_info("Using temporary folder as model directory: " + *o.model_dir);
  return config.replace(o);
}
} // namespace

Estimator::Estimator(std::unique_ptr<detail::Backend> backend, RunConfig config,
                     Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : config_(withModelDir(config)), params_(std::move(params)),
      warmStart_(std::move(warm_start_from)), backend_(std::move(backend)) {
  backend_->bind(config_, params_);
  runner_ = std::make_unique<detail::Runner>(config_, warmStart_, *backend_);
}

Estimator::Estimator(std::unique_ptr<rt::CompiledModel> model, RunConfig config,
                     std::optional<WarmStartSettings> warm_start_from)
    : Estimator(detail::makeAotBackend(std::move(model)), std::move(config),
                Params{}, std::move(warm_start_from)) {}

Estimator::~Estimator() = default;

Estimator &Estimator::train(const InputFn &input_fn, const Hooks &hooks,
                            std::optional<int64_t> steps,
                            std::optional<int64_t> max_steps,
                            const Listeners &saving_listeners) {
  runner_->train(input_fn, hooks, steps, max_steps, saving_listeners);
  return *this;
}

EvalResults Estimator::evaluate(const InputFn &input_fn,
                                std::optional<int64_t> steps,
                                const Hooks &hooks,
                                const std::string &checkpoint_path,
                                const std::string &name) {
  return runner_->evaluate(input_fn, steps, hooks, checkpoint_path, name,
                           /*inMemory=*/false);
}

EvalResults Estimator::evaluate_in_memory(const InputFn &input_fn,
                                          std::optional<int64_t> steps,
                                          const Hooks &hooks,
                                          const std::string &name) {
  if (!backend_->current())
    throw std::logic_error("Estimator.evaluate_in_memory: the model has not "
                           "been built yet (train first)");
  return runner_->evaluate(input_fn, steps, hooks, "", name,
                           /*inMemory=*/true);
}

Predictions Estimator::predict(const InputFn &input_fn,
                               const std::vector<std::string> &predict_keys,
                               const Hooks &userHooks,
                               const std::string &checkpoint_path,
                               bool yield_single_examples) {
  auto state = std::make_unique<Predictions::State>(input_fn());
  Predictions::State &s = *state;
  runner_->applyThreads();
  prepareModel(*backend_, ModeKeys::PREDICT, s.data, "Estimator.predict");
  s.hooks = userHooks;
  if (const EstimatorSpec *spec = backend_->spec(ModeKeys::PREDICT))
    s.hooks.insert(s.hooks.end(), spec->prediction_hooks.begin(),
                   spec->prediction_hooks.end());
  s.model = &backend_->model(ModeKeys::PREDICT,
                             detail::Runner::graphFetches(s.hooks));
  s.fn = s.model->find_function("predict");
  if (s.fn < 0)
    throw std::invalid_argument("Estimator.predict: the compiled model " +
                                std::string(s.model->spec().name) +
                                " has no predict function");
  const rt::FunctionSpec &f = s.model->spec().functions[s.fn];
  std::vector<std::string> available;
  for (int i = 0; i < f.numOutputs; ++i)
    if (startsWith(f.outputs[i].key, "predictions/"))
      available.push_back(std::string(f.outputs[i].key).substr(12));
  std::vector<std::string> keys =
      predict_keys.empty() ? available : predict_keys;
  for (const std::string &key : keys) {
    int out = s.model->find_output(s.fn, "predictions/" + key);
    if (out < 0) {
      std::string list;
      for (const std::string &a : available)
        list += (list.empty() ? "" : ", ") + a;
      throw std::invalid_argument("Estimator.predict: predict_keys '" + key +
                                  "' is not a prediction of the model "
                                  "(predictions: " +
                                  list + ")");
    }
    s.keys.push_back(key);
    s.outputs.push_back(out);
  }
  s.runner = runner_.get();
  s.checkpointPath = checkpoint_path;
  s.single = yield_single_examples;
  return Predictions(std::move(state));
}

std::optional<std::string> Estimator::latest_checkpoint() const {
  return train::latest_checkpoint(model_dir());
}

std::vector<std::string> Estimator::get_variable_names() const {
  std::optional<std::string> latest = latest_checkpoint();
  if (!latest)
    throw std::invalid_argument("Estimator.get_variable_names: no checkpoint "
                                "in model_dir " +
                                model_dir());
  std::vector<std::string> names;
  train::CheckpointReader reader(train::checkpoint_file(*latest));
  for (const auto &entry : reader.variables())
    names.push_back(entry.first);
  return names;
}

TensorValue Estimator::get_variable_value(const std::string &name) const {
  std::optional<std::string> latest = latest_checkpoint();
  if (!latest)
    throw std::invalid_argument("Estimator.get_variable_value: no checkpoint "
                                "in model_dir " +
                                model_dir());
  train::CheckpointReader reader(train::checkpoint_file(*latest));
  if (!reader.has_tensor(name))
    throw std::invalid_argument("Estimator.get_variable_value: no variable '" +
                                name + "' in " + reader.path());
  return reader.get_tensor(name);
}

std::string Estimator::eval_dir(const std::string &name) const {
  return runner_->evalDir(name);
}

int Estimator::compile_count() const { return backend_->compile_count(); }

} // namespace estimator
} // namespace estc
