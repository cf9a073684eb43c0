//===- Estimator.cpp - train / evaluate / predict over a compiled model --===//
//
// The calls of estimator/Estimator.h, each one MonitoredSession over a
// compiled model (ModelSession: the variables hooks see; ModelStep: one
// step of a compiled function on an input_fn's batches), the hooks train()
// installs, and the AOT backend. The JIT backend lives in EstimatorJit.cpp
// (EstcEstimatorJit), so that this file, and an AOT trainer, link no LLVM.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "estimator/Distributed.h"

#include "estimator/EstimatorBackend.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "estimator/MonitoredSession.h"
#include "lib/Summary/Summary.h"
#include "runtime/CompiledModel.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
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
    s += (i ? "," : "") + (shape[i] == rt::kValuesDim ? std::string("n")
                           : shape[i] < 0 ? std::string("?")
                                          : std::to_string(shape[i]));
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

std::vector<int64_t> concreteShape(const rt::TensorSpec &t, int64_t batch,
                                   int64_t values = 0) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  for (int64_t &d : shape)
    if (d == rt::kBatchDim)
      d = batch;
    else if (d == rt::kValuesDim)
      d = values;
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

/// What feed() needs of a function's inputs, worked out once: it runs
/// every step, and string work per input and step was a good part of a
/// small model's step.
struct FeedKeys {
  /// Per input: the feature key (without "features/"), or nullopt for the
  /// labels.
  std::vector<std::optional<std::string>> features;
  /// Per input: the host dtype a fed tensor must have (Invalid for i8,
  /// which no host tensor is).
  std::vector<DType> dtypes;
  size_t numFeatures = 0;
};

/// The host dtype of an input of the runtime's `d`, Invalid for none.
DType hostDType(rt::DType d) {
  return d == rt::DType::I8 ? DType::Invalid : toDType(d, "");
}

FeedKeys feedKeys(const rt::FunctionSpec &f) {
  FeedKeys k;
  for (int i = 0; i < f.numInputs; ++i) {
    std::string key = f.inputs[i].key;
    if (startsWith(key, "features/")) {
      k.features.emplace_back(key.substr(9));
      ++k.numFeatures;
    } else {
      k.features.emplace_back(std::nullopt);
    }
    k.dtypes.push_back(hostDType(f.inputs[i].dtype));
  }
  return k;
}

/// Whether `shape` is `t`'s with the batch `batch` and `values` values.
bool shapeMatches(const rt::TensorSpec &t, int64_t batch, int64_t values,
                  const std::vector<int64_t> &shape) {
  if (shape.size() != static_cast<size_t>(t.rank))
    return false;
  for (int32_t d = 0; d < t.rank; ++d) {
    int64_t want = t.shape[d] == rt::kBatchDim    ? batch
                   : t.shape[d] == rt::kValuesDim ? values
                                                  : t.shape[d];
    if (shape[static_cast<size_t>(d)] != want)
      return false;
  }
  return true;
}

/// Copies a batch into `fn`'s inputs after checking names, dtypes and
/// shapes against the compiled function (`keys`: feedKeys of it).
void feed(rt::CompiledModel &m, int fn, const FeedKeys &keys,
          const Batch &batch, const std::string &call) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  auto where = [&] { return "Estimator." + call + ": "; };
  auto listKeys = [&] {
    std::string s;
    for (const std::optional<std::string> &k : keys.features)
      if (k)
        s += (s.empty() ? "" : ", ") + *k;
    return s;
  };
  // Each input finds a distinct feature: the batch has no other feature
  // when it has as many as the inputs found.
  size_t found = 0;
  for (const std::optional<std::string> &k : keys.features)
    found += k && batch.features.count(*k);
  if (found != batch.features.size())
    for (const auto &entry : batch.features)
      if (std::find(keys.features.begin(), keys.features.end(), entry.first) ==
          keys.features.end())
        throw std::invalid_argument(
            where() + "input_fn feature '" + entry.first +
            "' is not an input of the model's " + f.name +
            " function (features: " + listKeys() + ")");
  int64_t n;
  try {
    n = batch.size();
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(where() + e.what());
  }
  if (n == 0)
    throw std::invalid_argument(where() + "input_fn gave an empty batch");
  m.set_batch(n);
  for (int i = 0; i < f.numInputs; ++i) {
    const rt::TensorSpec &spec = f.inputs[i];
    const std::optional<std::string> &feature = keys.features[i];
    const TensorValue *value = nullptr;
    if (feature) {
      auto it = batch.features.find(*feature);
      if (it == batch.features.end())
        throw std::invalid_argument(where() + "input_fn gave no feature '" +
                                    *feature + "'; the model's " + f.name +
                                    " function takes " + specString(spec));
      value = &it->second;
    } else {
      if (!batch.labels)
        throw std::invalid_argument(where() +
                                    "input_fn gave no labels; the "
                                    "model's " +
                                    std::string(f.name) + " function takes " +
                                    specString(spec));
      value = &*batch.labels;
    }
    // A sparse input (feature-column ids) brings its number of values.
    bool sparse = spec.rank > 0 && spec.shape[0] == rt::kValuesDim;
    int64_t values = sparse && !value->shape.empty() ? value->shape[0] : 0;
    DType want = keys.dtypes[static_cast<size_t>(i)];
    if (want == DType::Invalid || value->dtype != want ||
        !shapeMatches(spec, n, values, value->shape))
      throw std::invalid_argument(
          where() + (feature ? "feature '" + *feature + "'" : "labels") +
          " is " + valueString(*value) + "; the model's " + f.name +
          " function takes " + specString(spec));
    if (sparse)
      m.set_values(fn, i, values);
    std::memcpy(m.input_data(fn, i), value->data.data(), value->data.size());
  }
}

/// numpy_input_fn's arrays fed straight into a function's inputs, each
/// batch's rows gathered from the arrays into the input buffers: no Batch
/// is built. Worked out once for the arrays; `ok` only when every batch of
/// them passes feed()'s checks (otherwise feed() reads them, and throws
/// what it throws).
struct ArrayFeed {
  const Batch *arrays = nullptr;
  bool ok = false;
  /// Per input: the array's bytes and the bytes of one of its rows.
  std::vector<std::pair<const char *, size_t>> sources;
};

ArrayFeed arrayFeed(const rt::FunctionSpec &f, const FeedKeys &keys,
                    const Batch &arrays) {
  ArrayFeed feed;
  feed.arrays = &arrays;
  size_t found = 0;
  for (const std::optional<std::string> &k : keys.features)
    found += k && arrays.features.count(*k);
  if (found != arrays.features.size() || !arrays.values_features.empty())
    return feed;
  for (int i = 0; i < f.numInputs; ++i) {
    const rt::TensorSpec &spec = f.inputs[i];
    const std::optional<std::string> &feature = keys.features[i];
    const TensorValue *value = nullptr;
    if (feature) {
      auto it = arrays.features.find(*feature);
      if (it == arrays.features.end())
        return feed;
      value = &it->second;
    } else {
      if (!arrays.labels)
        return feed;
      value = &*arrays.labels;
    }
    // Every batch has the arrays' shape but for dimension 0, the batch.
    if (value->dtype != keys.dtypes[static_cast<size_t>(i)] || spec.rank < 1 ||
        spec.shape[0] != rt::kBatchDim ||
        value->shape.size() != static_cast<size_t>(spec.rank))
      return feed;
    for (int32_t d = 1; d < spec.rank; ++d)
      if (spec.shape[d] < 0 ||
          value->shape[static_cast<size_t>(d)] != spec.shape[d])
        return feed;
    size_t rowBytes =
        value->shape[0] > 0
            ? value->data.size() / static_cast<size_t>(value->shape[0])
            : 0;
    feed.sources.emplace_back(value->data.data(), rowBytes);
  }
  feed.ok = true;
  return feed;
}

/// Gathers `rows` of each of `feed`'s arrays into `fn`'s inputs (what
/// feed() does with the batch those rows make).
void feedRows(rt::CompiledModel &m, int fn, const ArrayFeed &feed,
              const std::vector<int64_t> &rows) {
  m.set_batch(static_cast<int64_t>(rows.size()));
  for (size_t i = 0; i < feed.sources.size(); ++i) {
    auto [source, rowBytes] = feed.sources[i];
    char *to = static_cast<char *>(m.input_data(fn, static_cast<int>(i)));
    // Consecutive rows (every batch unless shuffled) in one copy.
    for (size_t r = 0; r < rows.size();) {
      size_t run = 1;
      while (r + run < rows.size() &&
             rows[r + run] == rows[r] + static_cast<int64_t>(run))
        ++run;
      std::memcpy(to + r * rowBytes,
                  source + static_cast<size_t>(rows[r]) * rowBytes,
                  run * rowBytes);
      r += run;
    }
  }
}

std::string outputList(rt::CompiledModel &m, int fn) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  std::string s;
  for (int i = 0; i < f.numOutputs; ++i)
    s += (i ? ", " : "") + std::string(f.outputs[i].key);
  return s;
}

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

/// The progress bar train() draws on a terminal.
class ProgressBar {
public:
  ProgressBar(int64_t first, int64_t last)
      : first_(first), last_(last),
        enabled_(isatty(STDERR_FILENO) && last > first) {}
  ~ProgressBar() { finish(); }
  bool enabled() const { return enabled_; }

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
    // Read every step (the progress bar): the i64 scalar it nearly always
    // is without a TensorValue.
    const rt::VariableSpec &v = model_.spec().variables[globalStep_];
    if (v.dtype == rt::DType::I64 && v.rank == 0) {
      int64_t step;
      std::memcpy(&step, model_.variable_data(globalStep_), sizeof step);
      return step;
    }
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
    // The other replicas' input positions, when they were gathered for
    // this very step (DistributedStep).
    if (replicaStatesStep_ == global_step())
      for (const auto &[rank, state] : replicaStates_)
        if (rank > 0)
          out[detail::replicaInputStateTensor(rank)] = pack_bytes(state);
    if (input_) {
      std::string why;
      if (std::optional<std::string> state = input_->save_state(&why)) {
        out[kInputStateTensor] = pack_bytes(*state);
      } else if (!warnedInput_ && why != "the input ran out") {
        log_info("The input pipeline's position is not saved with the "
                 "checkpoints (" +
                 why + "); a restarted train() starts input_fn afresh.");
        warnedInput_ = true;
      }
    }
    return out;
  }
  /// Saves `data`'s position with every checkpoint (train()).
  void save_input_state(Dataset &data) { input_ = &data; }
  /// The other replicas' input positions at global step `step` (rank ->
  /// position), saved with a checkpoint of that step.
  void set_replica_input_states(std::map<int, std::string> states,
                                int64_t step) {
    replicaStates_ = std::move(states);
    replicaStatesStep_ = step;
  }
  const std::string &model_dir() const override { return modelDir_; }
  rt::CompiledModel &model() const { return model_; }

private:
  rt::CompiledModel &model_;
  std::string modelDir_;
  int globalStep_;
  Dataset *input_ = nullptr;
  mutable bool warnedInput_ = false;
  std::map<int, std::string> replicaStates_;
  int64_t replicaStatesStep_ = -1;
};

/// One step of a compiled function on an input_fn's batches (the
/// MonitoredSession's StepRunner). Fetches resolve against the function's
/// outputs, then (in EVAL) eval_metrics' outputs, which run after the step
/// when a fetch needs them, then the variables.
class ModelStep : public StepRunner {
public:
  /// `call` ("train", ...) names the Estimator call in input errors.
  ModelStep(rt::CompiledModel &m, int fn, int metricsFn, Dataset &data,
            std::string call)
      : m_(m), fn_(fn), metricsFn_(metricsFn), data_(data),
        call_(std::move(call)), keys_(feedKeys(m.spec().functions[fn])) {}

  std::string function_name() const override {
    return m_.spec().functions[fn_].name;
  }

  bool next_batch() override {
    if (const Batch *arrays = data_.arrays()) {
      if (arrayFeed_.arrays != arrays)
        arrayFeed_ = arrayFeed(m_.spec().functions[fn_], keys_, *arrays);
      if (arrayFeed_.ok) {
        data_.next_rows(rows_);
        if (rows_.empty())
          return false;
        feedRows(m_, fn_, arrayFeed_, rows_);
        batchSize_ = m_.batch();
        return true;
      }
    }
    std::optional<Batch> batch = data_.next();
    if (!batch)
      return false;
    feed(m_, fn_, keys_, *batch, call_);
    batchSize_ = m_.batch();
    return true;
  }
  /// The size of the last batch read.
  int64_t batch_size() const { return batchSize_; }
  /// Training steps the batch next_batch() read makes (a loop's: several).
  virtual int64_t steps_in_batch() const { return 1; }

  void run(const std::vector<std::string> &fetches) override {
    // The fetches are nearly always the last step's: resolved once.
    if (fetches != lastFetches_) {
      std::vector<Item> items;
      for (const std::string &fetch : fetches)
        items.push_back(resolve(fetch));
      lastFetches_ = fetches;
      lastItems_ = std::move(items);
    }
    bool metrics = false;
    for (const Item &item : lastItems_)
      metrics |= item.kind == Kind::Metric;
    m_.run(fn_);
    if (metrics)
      m_.run(metricsFn_);
  }

  TensorValue value(const std::string &fetch) override {
    Item item = lastItem(fetch);
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

protected:
  enum class Kind { Output, Metric, Variable };
  struct Item {
    Kind kind;
    int index;
  };
  /// `fetch` resolved, from the last run() when it was one of its fetches.
  Item lastItem(const std::string &fetch) {
    for (size_t i = 0; i < lastFetches_.size(); ++i)
      if (lastFetches_[i] == fetch)
        return lastItems_[i];
    return resolve(fetch);
  }
  Item resolve(const std::string &fetch) {
    auto it = cache_.find(fetch);
    if (it != cache_.end())
      return it->second;
    Item item{Kind::Output, m_.find_output(fn_, fetch)};
    if (item.index < 0 && metricsFn_ >= 0)
      item = {Kind::Metric, m_.find_output(metricsFn_, fetch)};
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
  Dataset &data_;
  std::string call_;
  FeedKeys keys_;
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
           const std::optional<int64_t> &lastStep)
      : ModelStep(m, loopFn >= 0 ? loopFn : stepFn, /*metricsFn=*/-1, data,
                  "train"),
        stepFn_(stepFn), loopFn_(loopFn), session_(session),
        iterations_(iterations), lastStep_(lastStep),
        stepKeys_(feedKeys(m.spec().functions[stepFn])) {}

  bool next_batch() override {
    int64_t want = iterations_;
    if (lastStep_)
      want = std::clamp<int64_t>(*lastStep_ - session_.global_step(), 1,
                                 iterations_);
    staged_.clear();
    steps_ = 0;
    while (steps_ < want) {
      std::optional<Batch> batch = std::move(pending_);
      pending_.reset();
      if (!batch)
        batch = data_.next();
      if (!batch)
        break;
      if (steps_ > 0 && sizeOf(*batch) != batchSize_) {
        pending_ = std::move(batch);
        break;
      }
      if (loopFn_ < 0) {
        batchSize_ = batch->size();
        staged_.push_back(std::move(*batch));
      } else {
        stage(*batch, want);
      }
      ++steps_;
    }
    return steps_ > 0;
  }
  int64_t steps_in_batch() const override { return steps_; }

  void run(const std::vector<std::string> &fetches) override {
    for (const std::string &fetch : fetches)
      resolve(fetch); // an unknown fetch fails before any step
    if (loopFn_ >= 0) {
      m_.set_steps(loopFn_, steps_);
      m_.run(loopFn_);
      return;
    }
    for (const Batch &batch : staged_) {
      feed(m_, stepFn_, stepKeys_, batch, call_);
      m_.run(stepFn_);
    }
  }

private:
  /// The batch's size; -1 when it has none (feed() then says why).
  static int64_t sizeOf(const Batch &batch) {
    try {
      return batch.size();
    } catch (const std::invalid_argument &) {
      return -1;
    }
  }

  /// Copies `batch` into row block steps_ of train_loop's inputs (feed()
  /// checks it against the step function first).
  void stage(const Batch &batch, int64_t want) {
    feed(m_, stepFn_, stepKeys_, batch, call_);
    batchSize_ = m_.batch();
    if (steps_ == 0)
      m_.set_steps(loopFn_, want);
    const rt::FunctionSpec &f = m_.spec().functions[stepFn_];
    for (int i = 0; i < f.numInputs; ++i) {
      const rt::TensorSpec &t = f.inputs[i];
      size_t bytes =
          static_cast<size_t>(rt::numElements(t.rank, t.shape, batchSize_)) *
          rt::dtypeBytes(t.dtype);
      std::memcpy(static_cast<char *>(m_.input_data(loopFn_, i)) +
                      static_cast<size_t>(steps_) * bytes,
                  m_.input_data(stepFn_, i), bytes);
    }
  }

  int stepFn_, loopFn_;
  const Session &session_;
  int64_t iterations_;
  const std::optional<int64_t> &lastStep_;
  FeedKeys stepKeys_;
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
  DistributedStep(ModelStep &inner, detail::ReplicaGroup &group,
                  ModelSession &session, Dataset &data,
                  CheckpointSaverHook *saver,
                  const std::optional<int64_t> &lastStep)
      : inner_(inner), group_(group), session_(session), data_(data),
        saver_(saver), lastStep_(lastStep) {}

  std::string function_name() const override { return inner_.function_name(); }
  bool next_batch() override {
    bool have = inner_.next_batch();
    int64_t after =
        session_.global_step() + (have ? inner_.steps_in_batch() : 0);
    int64_t flags[2] = {have ? 0 : 1, 0};
    if (group_.rank() == 0 && have && saver_)
      flags[1] =
          saver_->will_save_at(after) || (lastStep_ && after >= *lastStep_);
    auto start = SteadyClock::now();
    group_.collective().allReduceSum(flags, 2);
    rt::recordCollective(secondsSince(start), sizeof flags);
    if (flags[0] > 0) {
      if (have)
        log_info("The input of " + std::to_string(flags[0]) +
                 " other replica(s) ran out: every replica stops.");
      return false;
    }
    if (flags[1] > 0) {
      std::string mine;
      if (std::optional<std::string> state = data_.save_state())
        mine = *state;
      std::vector<std::string> all = group_.all_gather(mine);
      std::map<int, std::string> states;
      for (size_t r = 1; r < all.size(); ++r)
        if (!all[r].empty())
          states[static_cast<int>(r)] = std::move(all[r]);
      session_.set_replica_input_states(std::move(states), after);
    }
    return true;
  }
  void run(const std::vector<std::string> &fetches) override {
    inner_.run(fetches);
  }
  TensorValue value(const std::string &fetch) override {
    return inner_.value(fetch);
  }

private:
  ModelStep &inner_;
  detail::ReplicaGroup &group_;
  ModelSession &session_;
  Dataset &data_;
  CheckpointSaverHook *saver_;
  const std::optional<int64_t> &lastStep_;
};

/// While it lives (and the bar is drawn at all), every log line first
/// clears the progress bar, then goes where it went before.
class ClearBarBeforeLogLines {
public:
  explicit ClearBarBeforeLogLines(ProgressBar &bar) : active_(bar.enabled()) {
    if (!active_)
      return;
    previous_ = set_log_sink([this, &bar](const std::string &line) {
      bar.clear();
      if (previous_)
        previous_(line);
      else
        log_to_stderr(line);
    });
  }
  ~ClearBarBeforeLogLines() {
    if (active_)
      set_log_sink(std::move(previous_));
  }
  ClearBarBeforeLogLines(const ClearBarBeforeLogLines &) = delete;
  ClearBarBeforeLogLines &operator=(const ClearBarBeforeLogLines &) = delete;

private:
  bool active_;
  LogSink previous_;
};

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

// --- The runner: the Estimator's calls over one MonitoredSession ------------

namespace detail {

class Runner {
public:
  Runner(const RunConfig &config, const std::optional<WarmStartSettings> &warm,
         Backend &backend)
      : config_(config), warm_(warm), backend_(backend),
        checkpoints_(config.model_dir()) {}

  /// model_dir's checkpoints: every reader of this Estimator (train's
  /// restore, evaluate's, latest_checkpoint) asks this one index, so a
  /// corrupt checkpoint is checked and reported once.
  train::CheckpointIndex &checkpoints() { return checkpoints_; }

  void train(const InputFn &input_fn, const Hooks &hooks,
             std::optional<int64_t> steps, std::optional<int64_t> max_steps,
             const Listeners &listeners);
  /// input_fn's Dataset with the host transform installed; a replica's
  /// share of it when `shard` (train_distribute's auto_shard).
  Dataset input(const InputFn &input_fn, bool shard = false) const {
    Dataset data = input_fn();
    if (shard && group_)
      data = std::move(data).shard(group_->size(), group_->rank());
    if (transform)
      data.set_transform(transform);
    return data;
  }
  /// The model's host half (Estimator::set_host_transform).
  std::shared_ptr<const HostTransform> transform;
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
  summary::SummaryWriter &writer(const std::string &logdir) {
    return *sharedWriter(logdir);
  }
  /// This Estimator's replica group, joined at its first distributed
  /// train() and kept for the next ones.
  ReplicaGroup &group() {
    if (!group_)
      group_ = std::make_unique<ReplicaGroup>(config_);
    return *group_;
  }
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
  /// The hooks of a train() call, built in ones included (see train()).
  Hooks trainingHooks(const Hooks &userHooks, const EstimatorSpec *spec,
                      bool hasLoss, std::optional<int64_t> steps,
                      std::optional<int64_t> max_steps,
                      const Listeners &listeners);
  std::shared_ptr<summary::SummaryWriter>
  sharedWriter(const std::string &logdir);

  const RunConfig &config_;
  const std::optional<WarmStartSettings> &warm_;
  Backend &backend_;
  // The writers this Estimator used, kept open while it lives.
  std::vector<std::shared_ptr<summary::SummaryWriter>> writers_;
  train::CheckpointIndex checkpoints_;
  bool training_ = false;
  std::unique_ptr<ReplicaGroup> group_;
};

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
  std::optional<train::RestoredCheckpoint> restored = checkpoints_.restore();
  if (restored) {
    loadVariables(m, restored->variables,
                  train::checkpoint_file(restored->path));
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
  checkTrainingCluster(config_, "Estimator.train");
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
  // iterations_per_loop: up to N steps between two rounds of hooks.
  std::optional<int64_t> lastStep;
  std::unique_ptr<ModelStep> step;
  if (int64_t iterations = config_.iterations_per_loop(); iterations > 1) {
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
  std::unique_ptr<DistributedStep> replicaStep;
  if (group)
    replicaStep = std::make_unique<DistributedStep>(
        *step, *group, session, data, findSaverHook(hooks), lastStep);
  MonitoredSession loop(
      session, replicaStep ? static_cast<StepRunner &>(*replicaStep) : *step,
      hooks, [&] {
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
                   group->task_name(group->rank()) +
                   "; input_fn starts afresh.");
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
    std::optional<FetchValues> values = loop.run(fetches);
    if (!values)
      break; // the input ran out
    if (hasLoss)
      loss = values->at("loss");
    progress.update(session.global_step(), loss ? loss->element(0) : 0.0);
  }
  progress.finish();
  loop.close();
  if (loop.steps_run() == 0)
    log_info("Training with estimator made no steps. Perhaps input is empty "
             "or misspecified.");
  if (loss)
    log_info("Loss for final step: " + format_tensor(*loss) + ".");
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
  // variables as they were.
  std::vector<std::string> snapshot;
  if (training_ && !inMemory)
    snapshot = snapshotVariables(m);

  ModelSession session(m, config_.model_dir());
  ModelStep step(m, fn, metricsFn, data, "evaluate");
  MonitoredSession loop(session, step, hooks, [&] {
    if (!inMemory)
      restoreForInference(m, checkpoint_path, "evaluate");
    resetLocalVariables(m);
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

// --- Predictions -------------------------------------------------------------

struct Predictions::State {
  detail::Runner *runner = nullptr;
  Dataset data;
  Hooks hooks;
  std::vector<std::string> fetches; // "predictions/<key>"
  std::string checkpointPath;
  bool single = true;
  rt::CompiledModel *model = nullptr;
  int fn = -1;
  std::unique_ptr<ModelSession> session;
  std::unique_ptr<ModelStep> step;
  std::unique_ptr<MonitoredSession> loop;
  bool done = false;
  FetchValues batchValues; // by prediction key
  std::shared_ptr<const HostTransform> transform;
  int64_t batchSize = 0, index = 0;
  Prediction current;

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
  if (t.dtype == DType::String) { // host predictions: class names
    size_t n = t.strings.size() / static_cast<size_t>(t.shape[0]);
    out.strings.assign(t.strings.begin() + static_cast<ptrdiff_t>(n * index),
                       t.strings.begin() +
                           static_cast<ptrdiff_t>(n * (index + 1)));
    return out;
  }
  size_t bytes = t.data.size() / static_cast<size_t>(t.shape[0]);
  out.data = t.data.substr(bytes * index, bytes);
  return out;
}
} // namespace

Predictions::iterator Predictions::begin() {
  State &s = *state_;
  if (!s.loop) {
    s.session = std::make_unique<ModelSession>(*s.model,
                                               s.runner->config().model_dir());
    s.step = std::make_unique<ModelStep>(*s.model, s.fn, -1, s.data, "predict");
    s.loop =
        std::make_unique<MonitoredSession>(*s.session, *s.step, s.hooks, [&s] {
          s.runner->restoreForInference(*s.model, s.checkpointPath, "predict");
        });
    if (!advance())
      return end();
  }
  return s.done ? end() : iterator(this);
}

bool Predictions::advance() {
  State &s = *state_;
  if (s.done)
    return false;
  if (s.single && s.index + 1 < s.batchSize) {
    ++s.index;
    s.current.clear();
    for (const auto &[key, value] : s.batchValues)
      s.current[key] = row(value, s.index);
    return true;
  }
  std::optional<FetchValues> values;
  if (!s.loop->should_stop())
    values = s.loop->run(s.fetches);
  if (!values) { // the input ran out, or a hook asked for a stop
    s.done = true;
    s.loop->close();
    return false;
  }
  s.batchValues.clear();
  for (auto &[fetch, value] : *values)
    s.batchValues[fetch.substr(std::string("predictions/").size())] =
        std::move(value);
  if (s.transform)
    s.transform->transform_predictions(s.batchValues);
  s.batchSize = s.step->batch_size();
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

void Estimator::set_host_transform(
    std::shared_ptr<const HostTransform> transform) {
  runner_->transform = std::move(transform);
}

const HostTransform *Estimator::host_transform() const {
  return runner_->transform.get();
}

Estimator::Estimator(std::unique_ptr<detail::Backend> backend, RunConfig config,
                     Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : config_(withModelDir(config)), params_(std::move(params)),
      warmStart_(std::move(warm_start_from)), backend_(std::move(backend)) {
  backend_->bind(config_, params_);
  runner_ = std::make_unique<detail::Runner>(config_, warmStart_, *backend_);
}

namespace {
/// An AOT model runs where it was compiled for: RunConfig.device must say
/// the same (one line naming both, before anything runs).
std::unique_ptr<rt::CompiledModel>
checkDevice(std::unique_ptr<rt::CompiledModel> model, const RunConfig &config) {
  if (!model)
    return model;
  bool cuda = model->spec().device == rt::Device::Cuda;
  if (cuda != config.on_cuda())
    throw std::invalid_argument(
        std::string("Estimator: the compiled model ") + model->spec().name +
        " runs on " + (cuda ? "CUDA" : "the CPU") +
        ", but RunConfig.device is \"" + config.device() +
        "\" (compile it with estc --target=" + (cuda ? "cpu" : "cuda") +
        ", or set RunConfigOptions::device)");
  return model;
}
} // namespace

Estimator::Estimator(std::unique_ptr<rt::CompiledModel> model, RunConfig config,
                     std::optional<WarmStartSettings> warm_start_from)
    // `config` copied, not moved: the arguments' order of evaluation is
    // unspecified, and checkDevice reads it.
    : Estimator(detail::makeAotBackend(checkDevice(std::move(model), config)),
                config, Params{}, std::move(warm_start_from)) {}

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
  auto state = std::make_unique<Predictions::State>(runner_->input(input_fn));
  state->transform = runner_->transform;
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
    if (s.model->find_output(s.fn, "predictions/" + key) < 0) {
      std::string list;
      for (const std::string &a : available)
        list += (list.empty() ? "" : ", ") + a;
      throw std::invalid_argument("Estimator.predict: predict_keys '" + key +
                                  "' is not a prediction of the model "
                                  "(predictions: " +
                                  list + ")");
    }
    s.fetches.push_back("predictions/" + key);
  }
  s.runner = runner_.get();
  s.checkpointPath = checkpoint_path;
  s.single = yield_single_examples;
  return Predictions(std::move(state));
}

std::optional<std::string> Estimator::latest_checkpoint() const {
  return runner_->checkpoints().latest();
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
