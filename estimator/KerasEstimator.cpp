//===- KerasEstimator.cpp - tf.keras.estimator.model_to_estimator -------===//

#include "estimator/KerasEstimator.h"

#include "estimator/KerasCompile.h"
#include "estimator/Logging.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Keras/KerasGraph.h"

#include <filesystem>
#include <regex>
#include <set>
#include <stdexcept>
#include <utility>

namespace fs = std::filesystem;

namespace estc {
namespace estimator {

namespace {

/// Everything the model_fn needs, read once.
struct KerasState {
  std::shared_ptr<const keras::KerasModel> model;
  std::vector<keras::InputSpec> inputs;
  std::vector<std::string> outputs;
  keras_compile::CompileConfig compile;
  std::map<std::string, std::string> metric_names_map;
  std::map<std::string, ExportOutput::Kind> export_outputs;
};

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string dims_str(const Dims &d) {
  std::string out = "[";
  for (size_t i = 0; i < d.size(); ++i)
    out +=
        (i ? ", " : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return out + "]";
}

/// The model's input `spec` from `features`: by its name, or the lone
/// feature of a one-input model; its dtype and shape checked.
Tensor input_feature(const KerasState &s, const keras::InputSpec &spec,
                     const TensorMap &features) {
  Tensor t;
  if (features.contains(spec.name)) {
    t = features[spec.name];
  } else {
    std::vector<std::string> keys;
    for (const auto &[k, v] : features)
      if (k.rfind("labels/", 0) != 0)
        keys.push_back(k);
    if (s.inputs.size() == 1 && keys.size() == 1)
      t = features[keys[0]];
    else
      throw std::invalid_argument(
          "model_to_estimator: the features lack the model's input \"" +
          spec.name + "\" (inputs: " + join([&] {
            std::vector<std::string> n;
            for (const auto &i : s.inputs)
              n.push_back(i.name);
            return n;
          }()) +
          "; features: " + join(keys) + ")");
  }
  if (t.dtype() != spec.dtype)
    throw std::invalid_argument("model_to_estimator: feature \"" + spec.name +
                                "\" is " + dtype_name(t.dtype()) +
                                ", the model's input takes " +
                                dtype_name(spec.dtype));
  Dims shape = t.shape();
  bool ok = shape.size() == spec.shape.size();
  for (size_t i = 1; ok && i < shape.size(); ++i)
    ok = spec.shape[i] < 0 || shape[i] < 0 || shape[i] == spec.shape[i];
  if (!ok)
    throw std::invalid_argument(
        "model_to_estimator: feature \"" + spec.name + "\" has shape " +
        dims_str(shape) + ", the model's input takes " + dims_str(spec.shape));
  return t;
}

ModelFn make_model_fn(std::shared_ptr<const KerasState> s) {
  return [s](const TensorMap &features, const Tensor &labels, ModeKeys mode,
             const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    std::vector<Tensor> inputs;
    for (const keras::InputSpec &spec : s->inputs)
      inputs.push_back(input_feature(*s, spec, features));
    keras::BuildOptions build;
    build.training = mode == ModeKeys::TRAIN;
    keras::KerasGraph kg = keras::build_model(g, *s->model, inputs, build);

    EstimatorSpec spec(mode);
    for (size_t i = 0; i < s->outputs.size(); ++i)
      spec.predictions.set(s->outputs[i], kg.outputs[i]);
    spec.export_outputs["serving_default"] = PredictOutput(spec.predictions);
    for (const auto &[name, kind] : s->export_outputs) {
      const Tensor &out = spec.predictions[name];
      if (kind == ExportOutput::Kind::Classification)
        spec.export_outputs[name] = ClassificationOutput(out, Tensor());
      else if (kind == ExportOutput::Kind::Regression)
        spec.export_outputs[name] = RegressionOutput(out);
      else
        spec.export_outputs[name] = PredictOutput({{"output", out}});
    }
    if (mode == ModeKeys::PREDICT)
      return spec;

    // Each output's labels.
    std::vector<Tensor> y(s->outputs.size());
    for (size_t i = 0; i < s->outputs.size(); ++i) {
      bool needed =
          s->compile.losses[i].has_value() || !s->compile.metrics[i].empty();
      if (!needed)
        continue;
      if (s->outputs.size() == 1) {
        if (!labels.valid())
          throw std::invalid_argument(
              "model_to_estimator: training and evaluation need labels "
              "(the model's output \"" +
              s->outputs[0] + "\")");
        y[i] = labels;
      } else {
        std::string key = "labels/" + s->outputs[i];
        if (!features.contains(key))
          throw std::invalid_argument(
              "model_to_estimator: the model has several outputs: the "
              "labels of output \"" +
              s->outputs[i] + "\" must be the feature \"" + key + "\"");
        y[i] = features[key];
      }
    }

    // Keras's total loss: the weighted output losses plus the layers'
    // regularization losses.
    Tensor loss;
    for (size_t i = 0; i < s->outputs.size(); ++i) {
      if (!s->compile.losses[i])
        continue;
      Tensor l =
          keras_compile::keras_loss(*s->compile.losses[i], y[i], kg.outputs[i]);
      if (l.dtype() != DType::Float32)
        l = cast(l, DType::Float32);
      if (s->compile.loss_weights[i] != 1.0)
        l = l * s->compile.loss_weights[i];
      loss = loss.valid() ? loss + l : l;
    }
    if (!g.get_collection("regularization_losses").empty())
      loss = loss + losses::get_regularization_loss(g);
    spec.loss = loss;

    if (mode == ModeKeys::TRAIN) {
      train::Optimizer opt =
          keras_compile::make_optimizer(s->compile.optimizer);
      std::vector<Operation> ops = {opt.minimize(loss)};
      for (const Operation &u : g.get_collection("update_ops"))
        ops.push_back(u);
      spec.train_op = ops.size() == 1 ? ops[0] : group(ops);
      return spec;
    }

    // EVAL: the compiled metrics.
    bool several = s->outputs.size() > 1;
    for (size_t i = 0; i < s->outputs.size(); ++i)
      for (const keras_compile::MetricSpec &m : s->compile.metrics[i]) {
        std::string name = several ? s->outputs[i] + "_" + m.name : m.name;
        if (!s->metric_names_map.empty())
          name = s->metric_names_map.at(name);
        spec.eval_metric_ops.emplace_back(
            name, keras_compile::keras_metric(m, s->compile.losses[i], y[i],
                                              kg.outputs[i], name));
      }
    return spec;
  };
}

std::string escape_regex(const std::string &s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

/// The Keras weights' values under their variable names.
train::VariableMap keras_values(const keras::KerasModel &model) {
  train::VariableMap out;
  for (auto &[name, value] : keras::variable_values(model))
    out[name] = value;
  return out;
}

} // namespace

KerasEstimator::KerasEstimator(std::shared_ptr<const keras::KerasModel> model,
                               ModelFn model_fn, RunConfig config,
                               std::optional<WarmStartSettings> warm_start_from)
    : Estimator(std::move(model_fn), std::move(config), Params(),
                std::move(warm_start_from)),
      model_(std::move(model)) {
  // Several outputs: their labels are features ("labels/<output>").
  if (keras::model_output_names(*model_).size() > 1)
    set_labels_in_features("labels/");
}

std::vector<std::string> KerasEstimator::input_names() const {
  std::vector<std::string> out;
  for (const keras::InputSpec &i : keras::model_inputs(*model_))
    out.push_back(i.name);
  return out;
}

std::vector<std::string> KerasEstimator::output_names() const {
  return keras::model_output_names(*model_);
}

ServingInputReceiverFn KerasEstimator::serving_input_receiver_fn(
    std::optional<int64_t> default_batch_size) const {
  std::vector<TensorSpec> features;
  for (const keras::InputSpec &i : keras::model_inputs(*model_)) {
    TensorSpec t;
    t.key = i.name;
    t.dtype = i.dtype;
    t.shape = i.shape;
    features.push_back(t);
  }
  return build_raw_serving_input_receiver_fn(features, default_batch_size);
}

namespace {

/// Writing back: `model`'s weights set to their values in `checkpoint_path`
/// (empty: `estimator`'s latest checkpoint) and the file written to
/// `out_path`. Returns how many weights were written and the checkpoint
/// file read.
std::pair<size_t, std::string> writeBack(keras::KerasModel &model,
                                         const Estimator &estimator,
                                         const std::string &out_path,
                                         const std::string &checkpoint_path) {
  std::string ckpt = checkpoint_path;
  if (ckpt.empty()) {
    std::optional<std::string> latest = estimator.latest_checkpoint();
    if (!latest)
      throw std::invalid_argument("save_keras_model: " + estimator.model_dir() +
                                  " has no checkpoint to write back");
    ckpt = *latest;
  }
  train::CheckpointReader reader = train::load_checkpoint(ckpt);
  std::map<std::string, TensorValue> values;
  for (const auto &[name, value] : keras::variable_values(model)) {
    (void)value;
    if (!reader.has_tensor(name))
      throw train::CheckpointError(reader.path() +
                                   ": save_keras_model: no variable \"" + name +
                                   "\" of the Keras model");
    values[name] = reader.get_tensor(name);
  }
  size_t n = keras::set_variable_values(model, values);
  keras::write_keras_file(model, out_path);
  return {n, reader.path()};
}

} // namespace

size_t
KerasEstimator::save_keras_model(const std::string &out_path,
                                 const std::string &checkpoint_path) const {
  keras::KerasModel copy = keras::read_keras_bytes(
      model_->original_bytes, model_->file,
      model_->format == keras::FileFormat::WeightsH5 ? &model_->config
                                                     : nullptr);
  auto [n, read] = writeBack(copy, *this, out_path, checkpoint_path);
  log_info("Wrote " + std::to_string(n) + " Keras weights from " + read +
           " to " + out_path);
  return n;
}

size_t save_keras_model(const Estimator &estimator,
                        const std::string &keras_model_path,
                        const std::string &out_path,
                        const std::string &checkpoint_path) {
  keras::KerasModel model = keras::load_model(keras_model_path);
  return writeBack(model, estimator, out_path, checkpoint_path).first;
}

std::unique_ptr<KerasEstimator>
model_to_estimator(const std::string &keras_model_path,
                   const KerasEstimatorOptions &options) {
  // TF's maybe_overwrite_model_dir_and_session_config.
  RunConfig config = options.config;
  if (!options.model_dir.empty()) {
    if (!config.model_dir().empty() &&
        fs::path(config.model_dir()).lexically_normal() !=
            fs::path(options.model_dir).lexically_normal())
      throw std::invalid_argument(
          "model_to_estimator: model_dir \"" + options.model_dir +
          "\" and config's model_dir \"" + config.model_dir() +
          "\" differ (give one, or the same)");
    RunConfigOptions o;
    o.model_dir = options.model_dir;
    config = config.replace(o);
  }
  if (!options.checkpoint_format.empty() &&
      options.checkpoint_format != "checkpoint" &&
      options.checkpoint_format != "saver")
    throw std::invalid_argument(
        "model_to_estimator: checkpoint_format must be \"checkpoint\" or "
        "\"saver\", got \"" +
        options.checkpoint_format + "\"");

  auto state = std::make_shared<KerasState>();
  log_info("Loading models from " + keras_model_path);
  auto model =
      std::make_shared<keras::KerasModel>(keras::load_model(keras_model_path));
  state->model = model;
  state->inputs = keras::model_inputs(*model);
  state->outputs = keras::model_output_names(*model);
  state->compile = keras_compile::parse_compile_config(*model, state->outputs);
  state->export_outputs = options.export_outputs;
  for (const auto &[name, kind] : options.export_outputs) {
    (void)kind;
    if (std::find(state->outputs.begin(), state->outputs.end(), name) ==
        state->outputs.end())
      throw std::invalid_argument(
          "model_to_estimator: export_outputs names \"" + name +
          "\", which is not an output of the model (outputs: " +
          join(state->outputs) + ")");
  }
  // TF's _convert_keras_metrics_to_estimator: metric_names_map names every
  // metric and only them.
  if (!options.metric_names_map.empty()) {
    std::set<std::string> expected;
    bool several = state->outputs.size() > 1;
    for (size_t i = 0; i < state->outputs.size(); ++i)
      for (const auto &m : state->compile.metrics[i])
        expected.insert(several ? state->outputs[i] + "_" + m.name : m.name);
    for (const std::string &e : expected)
      if (!options.metric_names_map.count(e))
        throw std::invalid_argument(
            "model_to_estimator: metric_names_map lacks the model's metric \"" +
            e + "\"");
    for (const auto &[k, v] : options.metric_names_map) {
      (void)v;
      if (!expected.count(k))
        throw std::invalid_argument(
            "model_to_estimator: metric_names_map names \"" + k +
            "\", which is not a metric of the model");
    }
    state->metric_names_map = options.metric_names_map;
  }

  // The first checkpoint from the Keras weights (TF's
  // _save_first_checkpoint), on the chief, unless model_dir/keras has one.
  std::optional<WarmStartSettings> warm;
  if (config.model_dir().empty()) {
    // The Estimator would pick a temporary folder: pick it here, where the
    // first checkpoint goes.
    std::string pattern =
        (fs::temp_directory_path() / "estc_model_XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data()))
      throw std::runtime_error("model_to_estimator: cannot create a "
                               "temporary model_dir");
    RunConfigOptions o;
    o.model_dir = std::string(buffer.data());
    log_info("Using temporary folder as model directory: " + *o.model_dir);
    config = config.replace(o);
  }
  if (config.is_chief()) {
    std::string kerasDir = (fs::path(config.model_dir()) / "keras").string();
    std::optional<std::string> latest;
    if (fs::exists(kerasDir))
      latest = train::latest_checkpoint(kerasDir);
    if (!latest) {
      fs::create_directories(kerasDir);
      std::string prefix = (fs::path(kerasDir) / "keras_model.ckpt").string();
      train::write_checkpoint(train::checkpoint_file(prefix),
                              keras_values(*model), 0);
      train::CheckpointState st;
      st.model_checkpoint_path = prefix;
      st.all_model_checkpoint_paths = {prefix};
      train::update_checkpoint_state(kerasDir, st);
      latest = prefix;
    }
    WarmStartSettings ws;
    ws.ckpt_to_initialize_from = *latest;
    for (const auto &[name, value] : keras::variable_values(*model)) {
      (void)value;
      ws.vars_to_warm_start_list.push_back(escape_regex(name) + "$");
    }
    warm = ws;
  }
  return std::make_unique<KerasEstimator>(model, make_model_fn(state), config,
                                          std::move(warm));
}

} // namespace estimator
} // namespace estc
