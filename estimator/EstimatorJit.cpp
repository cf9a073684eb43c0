//===- EstimatorJit.cpp - The Estimator's JIT path (EstcEstimatorJit) ----===//
//
// Estimator(model_fn, ...): model_fn is called for each mode into one graph,
// which compiler/Driver/GraphCompiler.h compiles in process. This is the
// only part of the Estimator that links LLVM and MLIR.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "estimator/EstimatorBackend.h"
#include "estimator/Logging.h"
#include "estimator/ParameterServers.h"

#include "compiler/Driver/GraphCompiler.h"
#include "runtime/CompiledModel.h"
#include "runtime/cuda/Cuda.h"

#include <cstring>
#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace {

class JitBackend : public detail::Backend {
public:
  explicit JitBackend(ModelFn modelFn) : modelFn_(std::move(modelFn)) {
    if (!modelFn_)
      throw std::invalid_argument("Estimator: empty model_fn");
  }

  void set_labels_in_features(const std::string &prefix) override {
    labelsOptional_ = true;
    labelPrefix_ = prefix;
  }

  void prepare(ModeKeys mode, const ElementSpec &spec) override {
    if (labelsOptional_) {
      // Labels (if any) come with the features: every mode is built from
      // the first TRAIN or EVAL spec (PREDICT alone until one comes).
      if (!built_ || (mode != ModeKeys::PREDICT && !allModes_)) {
        allModes_ = mode != ModeKeys::PREDICT;
        build(spec);
      }
      return;
    }
    if (built_) {
      bool needsLabels = mode != ModeKeys::PREDICT;
      if (needsLabels && !inputs_.labels) {
        if (!spec.labels)
          throw std::invalid_argument(
              std::string("Estimator.") +
              (mode == ModeKeys::TRAIN ? "train" : "evaluate") +
              ": the input_fn gives no labels");
        // Built for PREDICT only so far: rebuild every mode.
        ElementSpec all = inputs_;
        all.labels = spec.labels;
        build(all);
      }
      return;
    }
    if (mode != ModeKeys::PREDICT && !spec.labels)
      throw std::invalid_argument(
          std::string("Estimator.") +
          (mode == ModeKeys::TRAIN ? "train" : "evaluate") +
          ": the input_fn gives no labels");
    build(spec);
  }

  const EstimatorSpec *spec(ModeKeys mode) const override {
    auto it = specs_.find(mode);
    return it == specs_.end() ? nullptr : &it->second;
  }

  std::vector<graph::SummaryDef> summaries(ModeKeys mode) const override {
    auto it = def_.signature().find(mode_key(mode));
    if (it == def_.signature().end())
      return {};
    return {it->second.summaries().begin(), it->second.summaries().end()};
  }

  rt::CompiledModel &model(ModeKeys mode,
                           const std::vector<std::string> &fetches) override {
    std::set<std::string> &compiled = fetches_[mode];
    bool missing = false;
    for (const std::string &f : fetches)
      missing |= !compiled.count(f);
    if (missing || dirty_) {
      if (locked)
        throw std::invalid_argument(
            "Estimator: hook graph fetches of the " +
            std::string(mode_key(mode)) +
            " function need a recompile, which cannot happen inside train(); "
            "declare them in a hook of the first call");
      compiled.insert(fetches.begin(), fetches.end());
      compile();
    }
    return *model_;
  }

  rt::CompiledModel *current() override { return model_.get(); }

  detail::ServingCode compile_serving(ModeKeys mode, const InputSpec &inputs,
                                      const ExportTarget &target) override {
    if (mode != ModeKeys::PREDICT)
      throw std::invalid_argument(
          std::string("Estimator.export_saved_model: experimental_mode ") +
          mode_key(mode) + " is not exported (estc exports PREDICT)");
    detail::ServingCode code;
    code.function = mode_key(mode);
    Graph graph;
    graph.set_seed(config_->tf_random_seed().value_or(0));
    build_mode(graph, mode, inputs,
               [&](Graph &g, const TensorMap &features, const Tensor &labels,
                   ModeKeys m) {
                 detail::DefaultGraphScope scope(g);
                 EstimatorSpec es =
                     modelFn_(features, labels, m, *params_, *config_);
                 es.validate();
                 Signature sig = es.mode_signature();
                 for (const auto &[key, t] : es.predictions)
                   code.prediction_keys.push_back(key);
                 code.saver_var_list = es.scaffold.saver_var_list;
                 // Each export output tensor is read from the prediction
                 // that holds it, or compiled as an extra output.
                 std::map<std::string, std::string> byNode;
                 for (const auto &[key, t] : es.predictions)
                   byNode.emplace(t.name(), "predictions/" + key);
                 for (const auto &[name, output] : es.export_outputs) {
                   code.output_kinds[name] = output.kind;
                   for (const auto &[alias, t] : output.outputs) {
                     auto it = byNode.find(t.name());
                     if (it == byNode.end()) {
                       std::string key = "_export/" + name + "/" + alias;
                       sig.predictions.set(key, t);
                       it =
                           byNode.emplace(t.name(), "predictions/" + key).first;
                     }
                     code.output_sources[name][alias] = it->second;
                   }
                 }
                 return sig;
               });
    TargetOptions options;
    options.cpu = target.cpu;
    options.features = target.features;
    auto compiled = compileGraphToObject(
        graph.graph_def(), detail::kServingModelName, options,
        /*runtimeChecks=*/true, {code.function},
        [](llvm::StringRef w) { log_info("warning: " + w.str()); });
    if (!compiled)
      throw std::invalid_argument("Estimator.export_saved_model: " +
                                  llvm::toString(compiled.takeError()));
    code.object = std::move(compiled->object);
    code.manifest_json = toJson(compiled->manifest);
    code.triple = compiled->target.triple;
    code.cpu = compiled->target.cpu;
    code.features = compiled->target.features;
    return code;
  }
  int compile_count() const override { return compiles_; }

private:
  void build(const ElementSpec &spec) {
    auto graph = std::make_unique<Graph>();
    graph->set_seed(config_->tf_random_seed().value_or(0));
    ElementSpec inputs = spec;
    if (inputs.labels)
      inputs.labels->key = "labels";
    std::map<ModeKeys, EstimatorSpec> specs;
    std::vector<ModeKeys> modes = {ModeKeys::PREDICT};
    if (inputs.labels || allModes_)
      modes = {ModeKeys::TRAIN, ModeKeys::EVAL, ModeKeys::PREDICT};
    for (ModeKeys mode : modes) {
      InputSpec modeInputs = inputs;
      if (mode == ModeKeys::PREDICT) {
        modeInputs.labels.reset();
        if (labelsOptional_)
          std::erase_if(modeInputs.features, [&](const TensorSpec &f) {
            return f.key.rfind(labelPrefix_, 0) == 0;
          });
      }
      build_mode(*graph, mode, modeInputs,
                 [&](Graph &g, const TensorMap &features, const Tensor &labels,
                     ModeKeys m) {
                   detail::DefaultGraphScope scope(g);
                   EstimatorSpec es =
                       modelFn_(features, labels, m, *params_, *config_);
                   if (es.mode != m)
                     throw std::invalid_argument(
                         std::string("model_fn returned an EstimatorSpec for "
                                     "mode ") +
                         mode_key(es.mode) + " when called for mode " +
                         mode_key(m));
                   es.validate();
                   specs.emplace(m, es);
                   return es.mode_signature();
                 });
    }
    graph_ = std::move(graph);
    specs_ = std::move(specs);
    def_ = graph_->graph_def();
    inputs_ = inputs;
    built_ = true;
    dirty_ = true; // compiled by the next model() call, with its fetches
  }

  void compile() {
    graph::GraphDef def = def_;
    for (const auto &[mode, nodes] : fetches_) {
      auto it = def.mutable_signature()->find(mode_key(mode));
      if (it == def.mutable_signature()->end())
        continue;
      for (const std::string &node : nodes) {
        std::string full = std::string(mode_key(mode)) + "/" + node;
        if (!graph_->has_node(full))
          throw std::invalid_argument("Estimator: hook graph fetch '" + node +
                                      "': no node '" + full + "' in the " +
                                      mode_key(mode) + " graph");
        if (graph_->node(full).dtype() == graph::DT_INVALID)
          throw std::invalid_argument("Estimator: hook graph fetch '" + node +
                                      "': node '" + full +
                                      "' produces no value");
        graph::Binding *b = it->second.add_tensors();
        b->set_key(node);
        b->set_node(full);
      }
    }
    ++compiles_;
    JitOptions options;
    // iterations_per_loop: N steps a call (a CUDA model runs one).
    // Parameter-server training: a worker's step (pushes and pulls around
    // each call, so one step a call) or a ps task's apply function.
    bool ps = detail::psTraining(*config_);
    options.trainLoop =
        config_->iterations_per_loop() > 1 && !config_->on_cuda() && !ps;
    if (ps) {
      options.psTasks = static_cast<int>(config_->num_ps_replicas());
      options.psTask = config_->task_type() == TaskType::PS
                           ? static_cast<int>(config_->task_id())
                           : -1;
      if (config_->ps_strategy() == "greedy")
        options.psStrategy = "greedy";
    }
    // The training step averages its gradients over the replicas.
    if (config_->distributed())
      options.replicas = static_cast<int>(config_->num_worker_replicas());
    if (config_->on_cuda()) {
      // Kernels for this device's architecture; the model's buffers on it.
      // Without a GPU: one line (rt::DeviceError), before any compiling.
      int device = config_->cuda_device_index();
      options.target.device = Device::Cuda;
      options.target.gpuArch = rt::cuda_device_arch(device);
      rt::set_cuda_device(device);
    }
    JitCompiler jit(options);
    auto compiled = jitCompileGraph(jit, def, "Model", [](llvm::StringRef w) {
      log_info("warning: " + w.str());
    });
    if (!compiled)
      throw std::runtime_error("Estimator: " +
                               llvm::toString(compiled.takeError()));
    std::unique_ptr<rt::CompiledModel> next = std::move(*compiled);
    if (model_) {
      // A recompile (new outputs): the variables keep their values.
      const rt::ModelSpec &spec = next->spec();
      for (int i = 0; i < spec.numVariables; ++i) {
        int j = model_->find_variable(spec.variables[i].name);
        if (j >= 0)
          std::memcpy(next->variable_data(i), model_->variable_data(j),
                      static_cast<size_t>(next->variable_bytes(i)));
      }
    }
    model_ = std::move(next);
    dirty_ = false;
  }

  ModelFn modelFn_;
  bool built_ = false, dirty_ = false;
  bool labelsOptional_ = false, allModes_ = false;
  std::string labelPrefix_;
  ElementSpec inputs_;
  std::unique_ptr<Graph> graph_;
  graph::GraphDef def_;
  std::map<ModeKeys, EstimatorSpec> specs_;
  std::map<ModeKeys, std::set<std::string>> fetches_;
  std::unique_ptr<rt::CompiledModel> model_;
  int compiles_ = 0;
};

} // namespace

std::unique_ptr<detail::Backend> detail::makeJitBackend(ModelFn model_fn) {
  return std::make_unique<JitBackend>(std::move(model_fn));
}

Estimator::Estimator(ModelFn model_fn, RunConfig config, Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : Estimator(detail::makeJitBackend(std::move(model_fn)), std::move(config),
                std::move(params), std::move(warm_start_from)) {}

} // namespace estimator
} // namespace estc
