//===- KerasBuilder.cpp - The walk of a Keras model config ---------------===//
//
// Functional configs (tf.keras 2's inbound_nodes [[["dense", 0, 0, {}]]]
// and Keras 3's [{"args": [...], "kwargs": {...}}]), Sequential configs,
// nested models; the config readers and the variables the layer functions
// of KerasLayers.cpp use.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasJson.h"
#include "lib/Keras/KerasLayers.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Shape/ShapeFunctions.h"

#include <cmath>

namespace estc {
namespace keras {
namespace kerasgraph {

namespace rj = rapidjson;

namespace {

/// Deeper models than this are refused (a fuzzed config's recursion).
constexpr int kMaxDepth = 2000;

using json::member;
using json::stringOf;
std::string layerName(const rj::Value &entry) {
  std::string n = stringOf(member(entry, "name"));
  if (n.empty())
    if (const rj::Value *c = member(entry, "config"))
      n = stringOf(member(*c, "name"));
  return n;
}

bool isModelClass(const std::string &c) {
  return c == "Functional" || c == "Model" || c == "Sequential";
}

/// A reference to a layer's output: [name, node_index, tensor_index].
struct Ref {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
};

/// tf.keras 2's ["dense", 0, 0] (or with kwargs as a 4th element).
std::optional<Ref> refOf(const rj::Value &v) {
  if (!v.IsArray() || v.Size() < 3 || !v[0].IsString() || !v[1].IsInt64() ||
      !v[2].IsInt64())
    return std::nullopt;
  return Ref{v[0].GetString(), v[1].GetInt64(), v[2].GetInt64()};
}

/// Keras 3's {"class_name": "__keras_tensor__", "config": {"keras_history":
/// ["dense", 0, 0], ...}}.
std::optional<Ref> keras3RefOf(const rj::Value &v) {
  if (stringOf(member(v, "class_name")) != "__keras_tensor__")
    return std::nullopt;
  const rj::Value *c = member(v, "config");
  const rj::Value *h = c ? member(*c, "keras_history") : nullptr;
  if (!h)
    return std::nullopt;
  return refOf(*h);
}

/// tf.keras's _should_skip_first_node: a nested Functional model, or a
/// Sequential one whose first layer is an InputLayer. Keras 3's nested
/// models have no node of their own: its keras_history counts the calls.
bool skipsFirstNode(const rj::Value &entry, bool keras3) {
  if (keras3)
    return false;
  std::string cls = stringOf(member(entry, "class_name"));
  if (cls == "Functional" || cls == "Model")
    return true;
  if (cls != "Sequential")
    return false;
  const rj::Value *c = member(entry, "config");
  const rj::Value *layers = c ? member(*c, "layers") : nullptr;
  return layers && layers->IsArray() && !layers->Empty() &&
         stringOf(member((*layers)[0], "class_name")) == "InputLayer";
}

} // namespace

Builder::Builder(Graph &graph, const KerasModel &m, const BuildOptions &o)
    : g(graph), model(m), options(o) {
  keras3 = !m.keras_version.empty() && m.keras_version[0] == '3';
  if (m.keras_version.empty() && m.has_config()) {
    // A config from elsewhere: Keras 3's InputLayers have batch_shape.
    const rj::Value *c = member(m.config, "config");
    const rj::Value *layers = c ? member(*c, "layers") : nullptr;
    if (layers && layers->IsArray())
      for (const auto &l : layers->GetArray())
        if (const rj::Value *lc = member(l, "config"))
          if (stringOf(member(l, "class_name")) == "InputLayer" &&
              member(*lc, "batch_shape"))
            keras3 = true;
  }
  std::string scope = g.current_scope();
  scopePrefix_ = scope.empty() ? "" : scope + "/";
}

std::string Builder::unscoped(const std::string &name) const {
  if (!scopePrefix_.empty() && name.rfind(scopePrefix_, 0) == 0)
    return name.substr(scopePrefix_.size());
  return name;
}

void Builder::fail(const Layer &layer, const std::string &problem) const {
  throw KerasError(model.file + ": layer '" + layer.name + "' (" + layer.cls +
                   "): " + problem);
}

std::vector<KTensor> Builder::callTop(const std::vector<KTensor> &inputs) {
  return callModel(model.config, inputs, /*trainable=*/true, 0);
}

std::vector<KTensor> Builder::callModel(const rj::Value &entry,
                                        const std::vector<KTensor> &inputs,
                                        bool trainable, int depth) {
  std::string cls = stringOf(member(entry, "class_name"));
  std::string name = layerName(entry);
  Layer self{name.empty() ? std::string("model") : name, cls, nullptr, true};
  const rj::Value *config = member(entry, "config");
  if (!config || !config->IsObject())
    fail(self, "the model has no config");
  self.config = config;
  if (const rj::Value *t = member(*config, "trainable"); t && t->IsBool())
    trainable = trainable && t->GetBool();
  const rj::Value *layers = member(*config, "layers");
  if (!layers || !layers->IsArray())
    fail(self, "the model config has no list of layers");

  if (cls == "Sequential") {
    if (inputs.size() != 1)
      fail(self, "a Sequential model takes one input, got " +
                     std::to_string(inputs.size()));
    KTensor x = inputs[0];
    for (const auto &l : layers->GetArray()) {
      if (stringOf(member(l, "class_name")) == "InputLayer")
        continue;
      Call call;
      call.args.push_back(x);
      std::vector<KTensor> out = callLayer(l, call, trainable, depth + 1);
      if (out.size() != 1)
        fail(Layer{layerName(l), stringOf(member(l, "class_name")), nullptr,
                   trainable},
             "a layer of a Sequential model must have one output, it has " +
                 std::to_string(out.size()));
      x = out[0];
    }
    return {x};
  }
  if (cls != "Functional" && cls != "Model")
    fail(self, "not a Functional or Sequential model");

  std::map<std::string, const rj::Value *> byName;
  for (const auto &l : layers->GetArray()) {
    std::string n = layerName(l);
    if (n.empty())
      fail(self, "a layer of the config has no name");
    if (!byName.emplace(n, &l).second)
      fail(self, "two layers are named '" + n + "'");
  }
  auto refsOf = [&](const char *key) {
    const rj::Value *v = member(*config, key);
    if (!v || !v->IsArray())
      fail(self, std::string("the model config has no ") + key);
    std::vector<Ref> refs;
    if (std::optional<Ref> r = refOf(*v)) { // Keras 3: one bare triple
      refs.push_back(*r);
      return refs;
    }
    for (const auto &e : v->GetArray()) {
      std::optional<Ref> r = refOf(e);
      if (!r)
        fail(self, std::string("an entry of ") + key +
                       " is not [layer, node_index, tensor_index]");
      refs.push_back(*r);
    }
    return refs;
  };
  std::vector<Ref> inputRefs = refsOf("input_layers");
  std::vector<Ref> outputRefs = refsOf("output_layers");
  if (inputRefs.size() != inputs.size())
    fail(self, "the model has " + std::to_string(inputRefs.size()) +
                   " inputs, called on " + std::to_string(inputs.size()));

  std::map<std::pair<std::string, int64_t>, std::vector<KTensor>> done;
  std::set<std::pair<std::string, int64_t>> active;
  for (size_t i = 0; i < inputRefs.size(); ++i)
    done[{inputRefs[i].layer, inputRefs[i].node}] = {inputs[i]};

  std::function<KTensor(const Ref &, int)> resolve;
  // A tensor argument of a tf.keras 2 node entry or a Keras 3 node.
  auto tensorOf = [&](const rj::Value &v, int d) -> std::optional<KTensor> {
    if (std::optional<Ref> r = keras3RefOf(v))
      return resolve(*r, d);
    return std::nullopt;
  };
  auto nodeCall = [&](const Layer &layer, const rj::Value &node, int d) {
    Call call;
    if (node.IsArray()) { // tf.keras 2: [["x", 0, 0, {kwargs}], ...]
      for (const auto &e : node.GetArray()) {
        std::optional<Ref> r = refOf(e);
        if (!r)
          fail(layer, "an inbound node entry is not [layer, node_index, "
                      "tensor_index, kwargs]");
        call.args.push_back(resolve(*r, d));
      }
      call.list = node.Size() > 1;
      if (node.Size() > 0 && node[0].Size() > 3 && node[0][3].IsObject()) {
        call.kwargs = &node[0][3];
        for (const auto &kv : node[0][3].GetObject()) {
          std::string key(kv.name.GetString(), kv.name.GetStringLength());
          if (std::optional<Ref> r = refOf(kv.value)) {
            call.tensorKwargs[key] = {resolve(*r, d)};
          } else if (kv.value.IsArray() && !kv.value.Empty() &&
                     refOf(kv.value[0])) {
            for (const auto &e : kv.value.GetArray())
              if (std::optional<Ref> er = refOf(e))
                call.tensorKwargs[key].push_back(resolve(*er, d));
          }
        }
      }
      return call;
    }
    if (!node.IsObject())
      fail(layer, "an inbound node is neither a list nor an object");
    const rj::Value *args = member(node, "args");
    call.positional = args;
    if (args && args->IsArray() && !args->Empty()) {
      const rj::Value &first = (*args)[0];
      if (first.IsArray()) {
        call.list = true;
        for (const auto &e : first.GetArray())
          if (std::optional<KTensor> t = tensorOf(e, d))
            call.args.push_back(*t);
      } else if (std::optional<KTensor> t = tensorOf(first, d)) {
        call.args.push_back(*t);
      }
      // Further positional tensors (MultiHeadAttention(query, value)).
      for (rj::SizeType i = 1; i < args->Size(); ++i)
        if (std::optional<KTensor> t = tensorOf((*args)[i], d))
          call.tensorKwargs["arg" + std::to_string(i)] = {*t};
    }
    if (const rj::Value *kw = member(node, "kwargs"); kw && kw->IsObject()) {
      call.kwargs = kw;
      for (const auto &kv : kw->GetObject()) {
        std::string key(kv.name.GetString(), kv.name.GetStringLength());
        if (std::optional<KTensor> t = tensorOf(kv.value, d))
          call.tensorKwargs[key] = {*t};
        else if (kv.value.IsArray())
          for (const auto &e : kv.value.GetArray())
            if (std::optional<KTensor> et = tensorOf(e, d))
              call.tensorKwargs[key].push_back(*et);
      }
    }
    return call;
  };

  resolve = [&](const Ref &ref, int d) -> KTensor {
    if (d > kMaxDepth)
      fail(self,
           "the model is deeper than " + std::to_string(kMaxDepth) + " layers");
    auto key = std::make_pair(ref.layer, ref.node);
    auto it = done.find(key);
    if (it == done.end()) {
      auto l = byName.find(ref.layer);
      if (l == byName.end())
        fail(self, "a node refers to layer '" + ref.layer +
                       "', which the model does not have");
      const rj::Value &entry = *l->second;
      Layer layer{ref.layer, stringOf(member(entry, "class_name")), nullptr,
                  trainable};
      if (layer.cls == "InputLayer")
        fail(layer, "the input layer is not one of the model's inputs");
      const rj::Value *nodes = member(entry, "inbound_nodes");
      // A nested model built on its own Input has that call as its node 0,
      // which the config leaves out (Keras's _should_skip_first_node).
      int64_t index = ref.node - (skipsFirstNode(entry, keras3) ? 1 : 0);
      if (!nodes || !nodes->IsArray() || index < 0 ||
          index >= static_cast<int64_t>(nodes->Size()))
        fail(layer, "node " + std::to_string(ref.node) +
                        " is not among its inbound nodes");
      if (!active.insert(key).second)
        fail(layer, "its inputs depend on its own output (a cycle)");
      Call call =
          nodeCall(layer, (*nodes)[static_cast<rj::SizeType>(index)], d + 1);
      std::vector<KTensor> out = callLayer(entry, call, trainable, d + 1);
      active.erase(key);
      it = done.emplace(key, std::move(out)).first;
    }
    if (ref.tensor < 0 || ref.tensor >= static_cast<int64_t>(it->second.size()))
      fail(Layer{ref.layer, "", nullptr, trainable},
           "output " + std::to_string(ref.tensor) + " of node " +
               std::to_string(ref.node) + " does not exist (it has " +
               std::to_string(it->second.size()) + ")");
    return it->second[static_cast<size_t>(ref.tensor)];
  };

  std::vector<KTensor> out;
  for (const Ref &r : outputRefs)
    out.push_back(resolve(r, depth + 1));
  return out;
}

std::vector<KTensor> Builder::callLayer(const rj::Value &entry,
                                        const Call &call, bool trainable,
                                        int depth) {
  Layer layer{layerName(entry), stringOf(member(entry, "class_name")),
              member(entry, "config"), trainable};
  if (layer.name.empty())
    layer.name = layer.cls;
  if (!layer.config || !layer.config->IsObject())
    fail(layer, "the layer has no config");
  if (const rj::Value *t = member(*layer.config, "trainable"); t && t->IsBool())
    layer.trainable = trainable && t->GetBool();
  if (isModelClass(layer.cls)) {
    std::vector<KTensor> in = call.args;
    return callModel(entry, in, layer.trainable, depth + 1);
  }
  if (layer.cls == "Lambda")
    fail(layer, "a Lambda layer (Python code) cannot be built");
  const auto &table = layerTable();
  auto it = table.find(layer.cls);
  if (it == table.end()) {
    std::string registered = stringOf(member(entry, "registered_name"));
    if (!registered.empty() && registered != layer.cls)
      fail(layer, "a custom class ('" + registered + "') cannot be built");
    fail(layer, "not a layer class estc can build");
  }
  if (const rj::Value *d = member(*layer.config, "dtype")) {
    std::string dt = stringOf(d);
    if (d->IsObject())
      if (const rj::Value *c = member(*d, "config"))
        dt = stringOf(member(*c, "name"));
    if (!dt.empty() && dt != "float32")
      fail(layer, "dtype '" + dt + "' is not supported (float32 only)");
  }
  for (const KTensor &t : call.args)
    if (!t.t.valid())
      fail(layer, "an input is missing");
  // Keras 3's LoRA and quantized layers have variables of their own.
  refuseNonNull(layer, {"lora_rank", "quantization_config"},
                "LoRA and quantized layers are not built");
  // Keras 3 passes the masks it computed as ops (NotEqual(ids, 0)) in the
  // call's `mask`: they replace the inputs' own.
  Call withMasks = call;
  if (auto m = call.tensorKwargs.find("mask"); m != call.tensorKwargs.end()) {
    if (m->second.size() != call.args.size())
      fail(layer, "the call has " + std::to_string(m->second.size()) +
                      " masks for " + std::to_string(call.args.size()) +
                      " inputs");
    for (size_t i = 0; i < call.args.size(); ++i)
      withMasks.args[i].mask = m->second[i].t.dtype() == DType::Bool
                                   ? m->second[i].t
                                   : cast(m->second[i].t, DType::Bool);
  }
  try {
    std::vector<KTensor> out;
    if (it->second.ownScope) {
      out = it->second.fn(*this, layer, withMasks);
    } else {
      auto scope = g.name_scope(layer.name);
      out = it->second.fn(*this, layer, withMasks);
    }
    // Keras's activity regularization: each output's penalty over the
    // batch size, for every call of the layer.
    if (auto penalty = regularizer(layer, "activity_regularizer")) {
      auto scope = g.name_scope(layer.name);
      for (const KTensor &o : out)
        losses::add_activity_regularization_loss(penalty, o.t);
    }
    return out;
  } catch (const GraphError &e) {
    fail(layer, e.what());
  }
}

// --- Variables ---------------------------------------------------------------

Variable Builder::var(const Layer &layer, const std::string &name,
                      const Dims &shape, const Initializer &init,
                      bool trainable, DType dtype) {
  std::string weight = layer.name + "/" + name + ":0";
  if (const Weight *w = model.find_weight(weight))
    if (w->value.shape != shape)
      fail(layer, "weight '" + weight + "' has shape " +
                      shape::toString(w->value.shape) +
                      " in the file, the layer needs " +
                      shape::toString(shape));
  Variable v = g.get_variable(name, dtype, shape, init,
                              trainable && layer.trainable, /*reuse=*/true);
  if (recorded_.insert(v.name()).second) {
    variables_.push_back(v);
    regularize(layer, name, v);
  }
  return v;
}

void Builder::adopt(const Layer &layer, const std::vector<std::string> &names) {
  for (const std::string &n : names) {
    std::string full = scopePrefix_ + layer.name + "/" + n;
    std::optional<Variable> v = g.find_variable(full);
    if (!v)
      continue;
    std::string weight = layer.name + "/" + n + ":0";
    if (const Weight *w = model.find_weight(weight))
      if (w->value.shape != v->shape())
        fail(layer, "weight '" + weight + "' has shape " +
                        shape::toString(w->value.shape) +
                        " in the file, the layer needs " +
                        shape::toString(v->shape()));
    if (recorded_.insert(v->name()).second) {
      variables_.push_back(*v);
      regularize(layer, n, *v);
    }
  }
}

// --- Regularizers and constraints
// ---------------------------------------------

void Builder::regularize(const Layer &layer, const std::string &name,
                         const Variable &v) {
  // The config's key for the weight: its last name ("lstm_cell/kernel").
  std::string w = name.substr(name.rfind('/') + 1);
  if (w == "depthwise_kernel" ||
      (w == "kernel" && layer.cls == "DepthwiseConv2D"))
    w = "depthwise";
  else if (w == "pointwise_kernel")
    w = "pointwise";
  else if (w == "recurrent_kernel")
    w = "recurrent";
  std::string r = w + "_regularizer", c = w + "_constraint";
  if (auto penalty = regularizer(layer, r.c_str()))
    losses::add_regularization_loss(penalty, v);
  if (auto project = constraint(layer, c.c_str()))
    train::set_variable_constraint(v, project);
}

namespace {
/// A Keras object in a config (an initializer, regularizer, constraint):
/// "name" or {"class_name": ..., "config": {...}}.
struct KerasObject {
  /// The class name as written (for errors).
  std::string name;
  /// snake_case, so that "L1L2" / "l1_l2", "MaxNorm" / "max_norm" and
  /// "GlorotUniform" / "glorot_uniform" compare equal.
  std::string kind;
  /// The object's config; null for the string form.
  const rj::Value *config = nullptr;
};
KerasObject kerasObject(const rj::Value &v) {
  KerasObject o;
  if (v.IsString()) {
    o.name = v.GetString();
  } else if (v.IsObject()) {
    o.name = stringOf(member(v, "class_name"));
    o.config = member(v, "config");
  }
  o.kind = to_snake_case(o.name);
  return o;
}

double number(const rj::Value *config, const char *key, double fallback) {
  const rj::Value *x = config ? member(*config, key) : nullptr;
  return x && x->IsNumber() ? x->GetDouble() : fallback;
}

Dims axes(const rj::Value *config, Dims fallback) {
  const rj::Value *x = config ? member(*config, "axis") : nullptr;
  if (x && x->IsInt64())
    return {x->GetInt64()};
  if (x && x->IsArray()) {
    Dims out;
    for (const rj::Value &a : x->GetArray())
      if (a.IsInt64())
        out.push_back(a.GetInt64());
    return out;
  }
  return fallback;
}
} // namespace

std::function<Tensor(const Tensor &)>
Builder::regularizer(const Layer &l, const char *key) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return nullptr;
  auto [name, cls, config] = kerasObject(*v);
  // Keras 2.15 / 3: L1(l1=0.01), L2(l2=0.01), L1L2(l1=0, l2=0) as objects;
  // the strings "l1" and "l2" are those classes with their defaults.
  double l1 = 0, l2 = 0;
  if (cls == "l1") {
    l1 = number(config, "l1", 0.01);
  } else if (cls == "l2") {
    l2 = number(config, "l2", 0.01);
  } else if ((cls == "l1_l2" || cls == "l1l2") && config) {
    l1 = number(config, "l1", 0.0);
    l2 = number(config, "l2", 0.0);
  } else {
    fail(l, std::string("'") + key + "': regularizer '" + name +
                "' is not supported (L1, L2, L1L2)");
  }
  if (l1 < 0 || l2 < 0)
    fail(l, std::string("'") + key + "': a negative factor");
  return [l1, l2](const Tensor &x) {
    // Keras: zero, then += l1 * sum(|x|), then += l2 * sum(x^2), each term
    // only when its factor is not zero.
    Tensor penalty;
    if (l1 != 0)
      penalty = multiply(reduce_sum(abs(x)), l1);
    if (l2 != 0) {
      Tensor t = multiply(reduce_sum(square(x)), l2);
      penalty = penalty.valid() ? add(penalty, t) : t;
    }
    return penalty.valid() ? penalty : zeros_like(reduce_sum(x));
  };
}

std::function<Tensor(const Tensor &)>
Builder::constraint(const Layer &l, const char *key) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return nullptr;
  auto [name, cls, config] = kerasObject(*v);
  if (cls == "max_norm")
    return constraints::max_norm(number(config, "max_value", 2),
                                 axes(config, {0}));
  if (cls == "non_neg")
    return constraints::non_neg();
  if (cls == "unit_norm")
    return constraints::unit_norm(axes(config, {0}));
  if (cls == "min_max_norm")
    return constraints::min_max_norm(
        number(config, "min_value", 0), number(config, "max_value", 1),
        number(config, "rate", 1), axes(config, {0}));
  if (cls == "radial_constraint")
    return constraints::radial_constraint();
  fail(l, std::string("'") + key + "': constraint '" + name +
              "' is not supported (MaxNorm, NonNeg, UnitNorm, MinMaxNorm, "
              "RadialConstraint)");
}

// --- Config fields -----------------------------------------------------------

const rj::Value *Builder::field(const Layer &l, const char *key) const {
  const rj::Value *v = member(*l.config, key);
  return v && !v->IsNull() ? v : nullptr;
}

bool Builder::has(const Layer &l, const char *key) const {
  return field(l, key) != nullptr;
}

int64_t Builder::getInt(const Layer &l, const char *key,
                        int64_t fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (v->IsInt64())
    return v->GetInt64();
  if (v->IsArray() && v->Size() == 1 && (*v)[0].IsInt64())
    return (*v)[0].GetInt64();
  fail(l, std::string("'") + key + "' must be an integer");
}

double Builder::getDouble(const Layer &l, const char *key,
                          double fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (!v->IsNumber())
    fail(l, std::string("'") + key + "' must be a number");
  return v->GetDouble();
}

bool Builder::getBool(const Layer &l, const char *key, bool fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (!v->IsBool())
    fail(l, std::string("'") + key + "' must be true or false");
  return v->GetBool();
}

std::string Builder::getString(const Layer &l, const char *key,
                               const std::string &fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (!v->IsString())
    fail(l, std::string("'") + key + "' must be a string");
  return std::string(v->GetString(), v->GetStringLength());
}

Dims Builder::getInts(const Layer &l, const char *key, size_t n,
                      const Dims &fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (v->IsInt64())
    return Dims(n, v->GetInt64());
  Dims out;
  if (v->IsArray())
    for (const auto &e : v->GetArray()) {
      if (!e.IsInt64())
        break;
      out.push_back(e.GetInt64());
    }
  if (out.size() != n || !v->IsArray())
    fail(l, std::string("'") + key + "' must be an integer or a list of " +
                std::to_string(n) + " integers");
  return out;
}

Dims Builder::getIntList(const Layer &l, const char *key,
                         const Dims &fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (v->IsInt64())
    return {v->GetInt64()};
  Dims out;
  if (!v->IsArray())
    fail(l, std::string("'") + key + "' must be an integer or a list");
  for (const auto &e : v->GetArray()) {
    if (!e.IsInt64())
      fail(l, std::string("'") + key + "' must be an integer or a list");
    out.push_back(e.GetInt64());
  }
  return out;
}

void Builder::refuseNonNull(const Layer &l,
                            const std::vector<const char *> &keys,
                            const std::string &why) const {
  for (const char *k : keys)
    if (has(l, k))
      fail(l, std::string("'") + k + "' is not supported" +
                  (why.empty() ? "" : " (" + why + ")"));
}

const KTensor &Builder::single(const Layer &l, const Call &call) const {
  if (call.args.size() != 1 || call.list)
    fail(l,
         "the layer takes one input, got " + std::to_string(call.args.size()));
  return call.args[0];
}

Initializer Builder::initializer(const Layer &l, const char *key,
                                 const Initializer &fallback) const {
  const rj::Value *v = field(l, key);
  if (!v)
    return fallback;
  if (!v->IsString() && !v->IsObject())
    fail(l, std::string("'") + key + "' is not an initializer");
  auto [cls, k, c] = kerasObject(*v);
  auto num = [&](const char *name, double fb) { return number(c, name, fb); };
  auto str = [&](const char *k, const std::string &fb) {
    const rj::Value *x = c ? member(*c, k) : nullptr;
    return x && x->IsString() ? std::string(x->GetString()) : fb;
  };
  std::optional<int64_t> seed;
  if (const rj::Value *s = c ? member(*c, "seed") : nullptr; s && s->IsInt64())
    seed = s->GetInt64();
  // Keras's names and their snake_case aliases ("glorot_uniform"): k.
  if (k == "zeros" || k == "zeros_initializer")
    return zeros_initializer();
  if (k == "ones" || k == "ones_initializer")
    return ones_initializer();
  if (k == "constant")
    return constant_initializer(num("value", 0.0));
  if (k == "glorot_uniform")
    return glorot_uniform_initializer(seed);
  if (k == "glorot_normal")
    return glorot_normal_initializer(seed);
  if (k == "he_normal")
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal",
                                        seed);
  if (k == "he_uniform")
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed);
  if (k == "lecun_normal")
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal",
                                        seed);
  if (k == "lecun_uniform")
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed);
  if (k == "random_normal")
    return random_normal_initializer(num("mean", 0.0), num("stddev", 0.05),
                                     seed);
  if (k == "random_uniform")
    return random_uniform_initializer(num("minval", -0.05), num("maxval", 0.05),
                                      seed);
  if (k == "truncated_normal")
    return truncated_normal_initializer(num("mean", 0.0), num("stddev", 0.05),
                                        seed);
  if (k == "variance_scaling") {
    std::string dist = str("distribution", "truncated_normal");
    if (dist == "normal")
      dist = "truncated_normal";
    if (dist != "truncated_normal" && dist != "untruncated_normal" &&
        dist != "uniform")
      fail(l, std::string("'") + key + "': distribution '" + dist +
                  "' is not supported");
    std::string mode = str("mode", "fan_in");
    if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
      fail(l,
           std::string("'") + key + "': mode '" + mode + "' is not supported");
    return variance_scaling_initializer(num("scale", 1.0), mode, dist, seed);
  }
  if (k == "orthogonal")
    return orthogonal_initializer(num("gain", 1.0), seed);
  fail(l, std::string("'") + key + "': initializer '" + cls +
              "' is not supported");
}

Tensor Builder::applyActivation(const Layer &l, const std::string &name,
                                const Tensor &x) const {
  if (name.empty() || name == "linear")
    return x;
  if (name == "relu")
    return nn::relu(x);
  if (name == "relu6")
    return nn::relu6(x);
  if (name == "sigmoid")
    return nn::sigmoid(x);
  if (name == "tanh")
    return nn::tanh(x);
  if (name == "softmax")
    return nn::softmax(x, -1);
  if (name == "log_softmax")
    return nn::log_softmax(x, -1);
  if (name == "elu")
    return nn::elu(x);
  if (name == "selu")
    return nn::selu(x);
  if (name == "softplus")
    return nn::softplus(x);
  if (name == "softsign")
    return nn::softsign(x);
  if (name == "swish" || name == "silu")
    return nn::silu(x);
  if (name == "gelu")
    return nn::gelu(x, /*approximate=*/false);
  if (name == "exponential")
    return exp(x);
  if (name == "mish")
    return multiply(x, tanh(nn::softplus(x)));
  if (name == "leaky_relu") // Keras 3's activation (negative_slope 0.2)
    return nn::leaky_relu(x, 0.2);
  if (name == "hard_sigmoid") {
    // tf.keras 2.15: clip(0.2 x + 0.5, 0, 1); Keras 3: relu6(x + 3) / 6.
    if (!keras3)
      return activations::hard_sigmoid(x);
    return divide(nn::relu6(add(x, 3.0)), 6.0);
  }
  if (name == "hard_silu" || name == "hard_swish")
    return multiply(x, divide(nn::relu6(add(x, 3.0)), 6.0));
  fail(l, "activation '" + name + "' is not supported");
}

std::function<Tensor(const Tensor &)>
Builder::activation(const Layer &l, const char *key) const {
  const rj::Value *v = field(l, key);
  std::string name;
  if (v) {
    if (v->IsString())
      name = v->GetString();
    else if (v->IsObject()) // a serialized function object
      name = stringOf(member(*v, "config"));
    if (name.empty())
      fail(l, std::string("'") + key + "' is not a Keras activation's name");
  }
  // Checked now, so that an unknown name fails before any node is built.
  static const std::set<std::string> known = {
      "linear",   "relu",        "relu6",        "sigmoid",   "tanh",
      "softmax",  "log_softmax", "elu",          "selu",      "softplus",
      "softsign", "swish",       "silu",         "gelu",      "exponential",
      "mish",     "leaky_relu",  "hard_sigmoid", "hard_silu", "hard_swish"};
  if (!name.empty() && !known.count(name))
    fail(l, "activation '" + name + "' is not supported");
  return
      [this, l, name](const Tensor &x) { return applyActivation(l, name, x); };
}

} // namespace kerasgraph
} // namespace keras
} // namespace estc
