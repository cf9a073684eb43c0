//===- KerasGraph.cpp - estc graphs from Keras model configs -------------===//
//
// A Keras config is walked as Keras's own from_config walks it: a
// Functional model's layers each have inbound nodes (one per call), whose
// tensors are other layers' outputs ["layer", node_index, tensor_index];
// the outputs named by "output_layers" are computed on demand (memoized per
// node, so a layer called twice builds twice on one set of variables). A
// Sequential model calls its layers in order. A nested model is a layer:
// calling it walks its own config on the given tensors. Each tensor travels
// with its Keras mask (an Embedding's mask_zero), which the layers that
// support masking pass on and the recurrent, attention and pooling layers
// consume (docs/design/keras.md, "Graphs from configs").
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasGraph.h"
#include "lib/Keras/KerasJson.h"
#include "lib/Keras/KerasLayers.h"
#include "lib/Shape/ShapeFunctions.h"

#include <algorithm>
#include <set>

namespace estc {
namespace keras {

namespace rj = rapidjson;
using kerasgraph::Builder;
using kerasgraph::KTensor;

namespace {

using json::member;
using json::stringOf;
[[noreturn]] void modelError(const KerasModel &model,
                             const std::string &problem) {
  throw KerasError(model.file + ": " + problem);
}

const rj::Value &topConfig(const KerasModel &model) {
  if (!model.has_config())
    modelError(model, "the file has no model config (a weights-only file)");
  const rj::Value *c = member(model.config, "config");
  if (!c || !c->IsObject())
    modelError(model, "the model config has no \"config\" object");
  return *c;
}

bool isFunctionalClass(const std::string &c) {
  return c == "Functional" || c == "Model";
}

/// The InputLayer entry of a Functional config's layer `name`.
const rj::Value *findLayer(const rj::Value &modelConfig,
                           const std::string &name) {
  const rj::Value *layers = member(modelConfig, "layers");
  if (!layers || !layers->IsArray())
    return nullptr;
  for (const auto &l : layers->GetArray()) {
    std::string n = stringOf(member(l, "name"));
    if (n.empty())
      if (const rj::Value *c = member(l, "config"))
        n = stringOf(member(*c, "name"));
    if (n == name)
      return &l;
  }
  return nullptr;
}

DType dtypeOf(const KerasModel &model, const std::string &layer,
              const rj::Value *dtype) {
  std::string name = stringOf(dtype);
  if (dtype && dtype->IsObject()) // Keras 3's DTypePolicy
    if (const rj::Value *c = member(*dtype, "config"))
      name = stringOf(member(*c, "name"));
  if (name.empty() || name == "float32")
    return DType::Float32;
  if (name == "int32")
    return DType::Int32;
  if (name == "int64")
    return DType::Int64;
  if (name == "float64")
    return DType::Float64;
  if (name == "bool")
    return DType::Bool;
  modelError(model, "layer '" + layer + "' (InputLayer): dtype '" + name +
                        "' is not supported");
}

InputSpec inputSpecOf(const KerasModel &model, const rj::Value &layer) {
  const rj::Value *config = member(layer, "config");
  InputSpec s;
  s.name = stringOf(member(layer, "name"));
  if (config && s.name.empty())
    s.name = stringOf(member(*config, "name"));
  const rj::Value *shape = nullptr;
  if (config) {
    shape = member(*config, "batch_input_shape");
    if (!shape || !shape->IsArray())
      shape = member(*config, "batch_shape");
    s.dtype = dtypeOf(model, s.name, member(*config, "dtype"));
    for (const char *flag : {"sparse", "ragged"})
      if (const rj::Value *f = member(*config, flag); f && f->IsTrue())
        modelError(model, "layer '" + s.name + "' (InputLayer): a " +
                              std::string(flag) + " input is not supported");
  }
  if (!shape || !shape->IsArray() || shape->Empty())
    modelError(model, "layer '" + s.name +
                          "' (InputLayer): no batch_input_shape or "
                          "batch_shape");
  for (const auto &d : shape->GetArray()) {
    if (d.IsNull())
      s.shape.push_back(-1);
    else if (d.IsInt64() && d.GetInt64() >= 0)
      s.shape.push_back(d.GetInt64());
    else
      modelError(model, "layer '" + s.name +
                            "' (InputLayer): a dimension of its shape is "
                            "neither null nor a size");
  }
  s.shape[0] = -1;
  s.sequence_dim = s.shape.size() >= 2 && s.shape[1] == -1;
  return s;
}

std::vector<std::string> uniquified(std::vector<std::string> names) {
  // tf.keras's output_names: a repeated layer name gets "_1", "_2", ...
  std::map<std::string, int> seen;
  for (std::string &n : names) {
    int k = seen[n]++;
    if (k > 0)
      n += "_" + std::to_string(k);
  }
  return names;
}

std::string weightKey(const std::string &weightName) {
  std::string n = weightName;
  if (n.size() > 2 && n.compare(n.size() - 2, 2, ":0") == 0)
    n.resize(n.size() - 2);
  return n;
}

} // namespace

std::vector<InputSpec> model_inputs(const KerasModel &model) {
  const rj::Value &c = topConfig(model);
  std::string cls = model.class_name();
  std::vector<InputSpec> out;
  if (cls == "Sequential") {
    const rj::Value *layers = member(c, "layers");
    if (!layers || !layers->IsArray() || layers->Empty())
      modelError(model, "the Sequential model has no layers");
    const rj::Value &first = (*layers)[0];
    if (stringOf(member(first, "class_name")) == "InputLayer") {
      out.push_back(inputSpecOf(model, first));
    } else {
      // tf.keras's Sequential without an InputLayer: the first layer's
      // batch_input_shape, the input named "<first layer>_input".
      InputSpec s = inputSpecOf(model, first);
      s.name += "_input";
      out.push_back(s);
    }
    return out;
  }
  if (!isFunctionalClass(cls))
    modelError(model, "model class '" + cls +
                          "' is neither Functional nor Sequential");
  const rj::Value *inputs = member(c, "input_layers");
  if (!inputs || !inputs->IsArray())
    modelError(model, "the Functional config has no input_layers");
  // One input: [name, 0, 0]; several: a list of them (Keras 3 writes a
  // single input as the bare triple too).
  std::vector<const rj::Value *> refs;
  if (inputs->Size() > 0 && (*inputs)[0].IsString())
    refs.push_back(inputs);
  else
    for (const auto &r : inputs->GetArray())
      refs.push_back(&r);
  for (const rj::Value *r : refs) {
    if (!r->IsArray() || r->Empty() || !(*r)[0].IsString())
      modelError(model, "an entry of input_layers is not [name, node, index]");
    std::string name = (*r)[0].GetString();
    const rj::Value *layer = findLayer(c, name);
    if (!layer)
      modelError(model, "input layer '" + name + "' is not among the layers");
    if (stringOf(member(*layer, "class_name")) != "InputLayer")
      modelError(model, "input layer '" + name + "' is a " +
                            stringOf(member(*layer, "class_name")) +
                            ", not an InputLayer");
    out.push_back(inputSpecOf(model, *layer));
  }
  return out;
}

std::vector<std::string> model_output_names(const KerasModel &model) {
  const rj::Value &c = topConfig(model);
  std::string cls = model.class_name();
  if (cls == "Sequential") {
    const rj::Value *layers = member(c, "layers");
    if (!layers || !layers->IsArray() || layers->Empty())
      modelError(model, "the Sequential model has no layers");
    const rj::Value &last = (*layers)[layers->Size() - 1];
    std::string n = stringOf(member(last, "name"));
    if (n.empty())
      if (const rj::Value *lc = member(last, "config"))
        n = stringOf(member(*lc, "name"));
    return {n};
  }
  if (!isFunctionalClass(cls))
    modelError(model, "model class '" + cls +
                          "' is neither Functional nor Sequential");
  const rj::Value *outputs = member(c, "output_layers");
  if (!outputs || !outputs->IsArray() || outputs->Empty())
    modelError(model, "the Functional config has no output_layers");
  std::vector<std::string> names;
  if ((*outputs)[0].IsString()) {
    names.push_back((*outputs)[0].GetString());
  } else {
    for (const auto &r : outputs->GetArray()) {
      if (!r.IsArray() || r.Empty() || !r[0].IsString())
        modelError(model,
                   "an entry of output_layers is not [name, node, index]");
      names.push_back(r[0].GetString());
    }
  }
  return uniquified(names);
}

KerasGraph build_model(Graph &g, const KerasModel &model,
                       const std::vector<Tensor> &inputs,
                       const BuildOptions &options) {
  std::vector<InputSpec> specs = model_inputs(model);
  if (inputs.size() != specs.size())
    modelError(model, "the model has " + std::to_string(specs.size()) +
                          " inputs, " + std::to_string(inputs.size()) +
                          " were given");
  for (size_t i = 0; i < specs.size(); ++i) {
    const InputSpec &s = specs[i];
    if (!inputs[i].valid() || inputs[i].dtype() != s.dtype)
      modelError(model, "input '" + s.name + "' must be " + to_string(s.dtype) +
                            ", got " +
                            (inputs[i].valid() ? to_string(inputs[i].dtype())
                                               : std::string("no tensor")));
    Dims shape = inputs[i].shape();
    bool ok = shape.size() == s.shape.size();
    for (size_t d = 1; ok && d < shape.size(); ++d)
      ok = s.shape[d] < 0 || shape[d] < 0 || s.shape[d] == shape[d];
    if (!ok)
      modelError(model, "input '" + s.name + "' must have shape " +
                            shape::toString(s.shape) + ", got " +
                            shape::toString(shape));
  }
  Builder builder(g, model, options);
  std::vector<KTensor> in;
  for (const Tensor &t : inputs)
    in.push_back(KTensor{t, Tensor()});
  std::vector<KTensor> out = builder.callTop(in);
  KerasGraph kg;
  for (const InputSpec &s : specs)
    kg.input_names.push_back(s.name);
  kg.inputs = inputs;
  kg.output_names = model_output_names(model);
  for (const KTensor &t : out)
    kg.outputs.push_back(t.t);
  if (kg.outputs.size() != kg.output_names.size())
    modelError(model, "the model computed " +
                          std::to_string(kg.outputs.size()) + " outputs for " +
                          std::to_string(kg.output_names.size()) + " names");
  // Keras's order: the file's weights (Model.weights), then any variable
  // the file does not have (a config without weights: creation order).
  std::vector<Variable> created = builder.variables();
  std::map<std::string, Variable> byName;
  for (const Variable &v : created)
    byName.emplace(builder.unscoped(v.name()), v);
  std::set<std::string> taken;
  for (const Weight *w : model.weights()) {
    auto it = byName.find(weightKey(w->name));
    if (it != byName.end() && taken.insert(it->first).second)
      kg.variables.push_back(it->second);
  }
  for (const Variable &v : created)
    if (!taken.count(builder.unscoped(v.name())))
      kg.variables.push_back(v);
  return kg;
}

KerasGraph build_model(Graph &g, const KerasModel &model,
                       const BuildOptions &options) {
  std::vector<Tensor> inputs;
  for (const InputSpec &s : model_inputs(model))
    inputs.push_back(g.placeholder(
        s.name, s.dtype, s.shape,
        Graph::PlaceholderOptions{.sequence_dim = s.sequence_dim}));
  return build_model(g, model, inputs, options);
}

std::map<std::string, TensorValue> variable_values(const KerasModel &model) {
  std::map<std::string, TensorValue> out;
  for (const Weight *w : model.weights())
    out.emplace(weightKey(w->name), w->value);
  return out;
}

size_t set_variable_values(KerasModel &model,
                           const std::map<std::string, TensorValue> &values) {
  size_t n = 0;
  for (LayerWeights &l : model.layers)
    for (Weight &w : l.weights) {
      auto it = values.find(weightKey(w.name));
      if (it == values.end())
        continue;
      const TensorValue &v = it->second;
      if (v.shape != w.value.shape)
        throw KerasError(model.file + ": weight '" + w.name + "' has shape " +
                         VariableSpec{w.value.dtype, w.value.shape}.str() +
                         ", the value given " + v.spec().str());
      if (v.dtype == w.value.dtype) {
        w.value = v;
      } else if (w.value.dtype == DType::Float32 ||
                 w.value.dtype == DType::Float64) {
        // write_keras_file converts float types; keep the value's bytes in
        // the weight's dtype here.
        std::vector<double> d(static_cast<size_t>(v.num_elements()));
        for (size_t i = 0; i < d.size(); ++i)
          d[i] = v.element(static_cast<int64_t>(i));
        if (w.value.dtype == DType::Float64) {
          w.value = TensorValue::of(v.shape, d);
        } else {
          std::vector<float> f(d.begin(), d.end());
          w.value = TensorValue::of(v.shape, f);
        }
      } else {
        throw KerasError(model.file + ": weight '" + w.name + "' is " +
                         to_string(w.value.dtype) + ", the value given " +
                         to_string(v.dtype));
      }
      ++n;
    }
  return n;
}

} // namespace keras
} // namespace estc
