//===- Estimator.cpp - train / evaluate / predict over a compiled model --===//
//
// The Estimator's own calls (estimator/Estimator.h). Each of train, evaluate
// and predict is one MonitoredSession over the compiled model of a Backend
// (EstimatorBackend.h): detail::Runner runs train() and evaluate()
// (Runner.cpp), Predictions predict()'s loop (Predictions.cpp), over the
// session and step runners of ModelSession.cpp and StepRunners.cpp; batches
// go into the model through Feed.cpp and the tensor binding
// (runtime/binding). The AOT backend is AotBackend.cpp; the JIT backend lives
// in EstimatorJit.cpp (EstcEstimatorJit), so that this library, and an AOT
// trainer, link no LLVM.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"

#include "estimator/EstimatorBackend.h"
#include "estimator/Logging.h"
#include "estimator/Runner.h"
#include "runtime/CompiledModel.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fs = std::filesystem;

namespace {
bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
} // namespace

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

void Estimator::set_labels_in_features(const std::string &prefix) {
  backend_->set_labels_in_features(prefix);
}

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

Estimator &Estimator::train(const InputFn &input_fn,
                            const TrainOptions &options) {
  runner_->train(input_fn, options.hooks, options.steps, options.max_steps,
                 options.saving_listeners);
  return *this;
}

void detail::serveParameters(Estimator &estimator, const InputFn &input_fn) {
  estimator.runner_->serve_parameters(input_fn);
}

EvalResults Estimator::evaluate(const InputFn &input_fn,
                                const EvalOptions &options) {
  return runner_->evaluate(input_fn, options.steps, options.hooks,
                           options.checkpoint_path, options.name,
                           /*inMemory=*/false);
}

EvalResults Estimator::evaluate_in_memory(const InputFn &input_fn,
                                          const InMemoryEvalOptions &options) {
  if (!backend_->current())
    throw std::logic_error("Estimator.evaluate_in_memory: the model has not "
                           "been built yet (train first)");
  return runner_->evaluate(input_fn, options.steps, options.hooks, "",
                           options.name, /*inMemory=*/true);
}

Predictions Estimator::predict(const InputFn &input_fn,
                               const PredictOptions &options) {
  const std::vector<std::string> &predict_keys = options.predict_keys;
  const Hooks &userHooks = options.hooks;
  const std::string &checkpoint_path = options.checkpoint_path;
  const bool yield_single_examples = options.yield_single_examples;
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
