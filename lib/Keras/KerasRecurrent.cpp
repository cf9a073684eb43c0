//===- KerasRecurrent.cpp - Keras's RNN and attention layers -------------===//
//
// SimpleRNN, LSTM, GRU, Bidirectional and MultiHeadAttention through
// lib/Graph's layer functions (Recurrent.h, Layers.h), which name their
// variables as tf.keras does ("lstm/lstm_cell/kernel", "bi/forward_lstm/
// lstm_cell/bias", "mha/query/kernel") under the layer's name. Keras masks
// (an Embedding's mask_zero) reach them as RecurrentOptions::mask and the
// attention's query/value/key masks.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasLayers.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Shape/ShapeFunctions.h"

namespace estc {
namespace keras {
namespace kerasgraph {

namespace rj = rapidjson;

namespace {

using Outs = std::vector<KTensor>;

layers::CellType cellOf(const std::string &cls) {
  if (cls == "LSTM")
    return layers::CellType::LSTM;
  if (cls == "GRU")
    return layers::CellType::GRU;
  return layers::CellType::SimpleRNN;
}

const char *cellName(layers::CellType c) {
  switch (c) {
  case layers::CellType::LSTM:
    return "lstm_cell";
  case layers::CellType::GRU:
    return "gru_cell";
  default:
    return "simple_rnn_cell";
  }
}

/// The RecurrentOptions of an RNN layer's config `l` (the wrapped layer's
/// for Bidirectional).
layers::RecurrentOptions rnnOptions(Builder &b, const Layer &l,
                                    layers::CellType cell, bool wrapped) {
  // A layer's regularizers and constraints are the builder's (Builder::
  // adopt: kernel, recurrent_kernel and bias by their config keys; the
  // activity regularizer of each output); a Bidirectional's wrapped
  // layer's are not applied to its two copies yet.
  if (wrapped)
    b.refuseNonNull(l,
                    {"kernel_regularizer", "recurrent_regularizer",
                     "bias_regularizer", "activity_regularizer",
                     "kernel_constraint", "recurrent_constraint",
                     "bias_constraint"},
                    "the regularizers and constraints of a Bidirectional's "
                    "layer are not built");
  if (b.getBool(l, "stateful", false))
    b.fail(l, "stateful is not supported");
  if (b.getBool(l, "time_major", false))
    b.fail(l, "time_major is not supported");
  layers::RecurrentOptions o;
  o.activation = Activation(b.activation(l, "activation"));
  if (!b.has(l, "activation"))
    o.activation = Activation(estc::tanh);
  if (cell != layers::CellType::SimpleRNN) {
    o.recurrent_activation =
        b.has(l, "recurrent_activation")
            ? Activation(b.activation(l, "recurrent_activation"))
            : Activation(estc::sigmoid);
  }
  o.use_bias = b.getBool(l, "use_bias", true);
  o.kernel_initializer =
      b.initializer(l, "kernel_initializer", glorot_uniform_initializer());
  o.recurrent_initializer =
      b.initializer(l, "recurrent_initializer", orthogonal_initializer());
  o.bias_initializer =
      b.initializer(l, "bias_initializer", zeros_initializer());
  o.unit_forget_bias = b.getBool(l, "unit_forget_bias", true);
  o.reset_after = b.getBool(l, "reset_after", true);
  o.dropout = b.getDouble(l, "dropout", 0.0);
  o.recurrent_dropout = b.getDouble(l, "recurrent_dropout", 0.0);
  o.return_sequences = b.getBool(l, "return_sequences", false);
  o.return_state = b.getBool(l, "return_state", false);
  o.go_backwards = b.getBool(l, "go_backwards", false);
  o.training = b.options.training;
  if (b.has(l, "seed"))
    o.seed = b.getInt(l, "seed", 0);
  o.trainable = l.trainable;
  o.reuse = true;
  o.name = l.name;
  return o;
}

int64_t unitsOf(Builder &b, const Layer &l) {
  int64_t units = b.getInt(l, "units", 0);
  if (units < 1)
    b.fail(l, "units must be positive");
  return units;
}

void checkSequence(Builder &b, const Layer &l, const Tensor &x) {
  if (x.rank() != 3)
    b.fail(l, "the input must be [batch, timesteps, features], got " +
                  shape::toString(x.shape()));
  if (x.shape()[2] < 0)
    b.fail(l, "the input's features must be known, got " +
                  shape::toString(x.shape()));
}

Outs rnnLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  checkSequence(b, l, x.t);
  layers::CellType cell = cellOf(l.cls);
  int64_t units = unitsOf(b, l);
  layers::RecurrentOptions o = rnnOptions(b, l, cell, /*wrapped=*/false);
  o.mask = x.mask;
  std::vector<Tensor> initial;
  if (auto it = c.tensorKwargs.find("initial_state");
      it != c.tensorKwargs.end())
    for (const KTensor &t : it->second)
      initial.push_back(t.t);
  layers::RecurrentOutput r;
  if (cell == layers::CellType::LSTM)
    r = layers::lstm(x.t, units, o, Tensor(), initial);
  else if (cell == layers::CellType::GRU)
    r = layers::gru(x.t, units, o, Tensor(), initial);
  else
    r = layers::simple_rnn(x.t, units, o, Tensor(), initial);
  std::string cellScope = cellName(cell);
  b.adopt(l, {cellScope + "/kernel", cellScope + "/recurrent_kernel",
              cellScope + "/bias"});
  Outs out{KTensor{r.output, o.return_sequences ? x.mask : Tensor()}};
  if (o.return_state)
    for (const Tensor &s : r.states)
      out.push_back(KTensor{s, Tensor()});
  return out;
}

Outs bidirectionalLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  checkSequence(b, l, x.t);
  const rj::Value *inner = b.field(l, "layer");
  if (!inner || !inner->IsObject())
    b.fail(l, "the wrapped layer's config is missing");
  auto innerClass = inner->FindMember("class_name");
  auto innerConfig = inner->FindMember("config");
  if (innerClass == inner->MemberEnd() || !innerClass->value.IsString() ||
      innerConfig == inner->MemberEnd() || !innerConfig->value.IsObject())
    b.fail(l, "the wrapped layer's config is malformed");
  std::string cls = innerClass->value.GetString();
  if (cls != "LSTM" && cls != "GRU" && cls != "SimpleRNN")
    b.fail(l, "wrapping a " + cls + " is not supported");
  Layer wrapped{"", cls, &innerConfig->value, l.trainable};
  wrapped.name = b.getString(wrapped, "name", "");
  if (wrapped.name.empty())
    b.fail(l, "the wrapped layer has no name");
  if (const rj::Value *t = b.field(wrapped, "trainable"); t && t->IsBool())
    wrapped.trainable = wrapped.trainable && t->GetBool();
  // Keras 3 stores both copies: "forward_lstm" as the layer and
  // "backward_lstm" (go_backwards) as backward_layer, otherwise alike; a
  // backward layer of another kind or name is refused.
  auto strip = [](const std::string &n, const std::string &p) {
    return n.rfind(p, 0) == 0 ? n.substr(p.size()) : n;
  };
  if (const rj::Value *bl = b.field(l, "backward_layer")) {
    std::string base = strip(wrapped.name, "forward_");
    bool alike = bl->IsObject();
    rj::Value::ConstMemberIterator bc, bcls;
    if (alike) {
      bc = bl->FindMember("config");
      bcls = bl->FindMember("class_name");
      alike = bc != bl->MemberEnd() && bc->value.IsObject() &&
              bcls != bl->MemberEnd() && bcls->value.IsString() &&
              bcls->value.GetString() == cls;
    }
    if (alike) {
      Layer backward{"", cls, &bc->value, l.trainable};
      alike = b.getString(backward, "name", "") == "backward_" + base &&
              b.getInt(backward, "units", 0) == b.getInt(wrapped, "units", 0) &&
              b.getBool(backward, "go_backwards", false) !=
                  b.getBool(wrapped, "go_backwards", false);
    }
    if (!alike)
      b.fail(l, "a backward_layer other than the wrapped layer's backward "
                "copy is not supported");
    wrapped.name = base;
  }
  layers::CellType cell = cellOf(cls);
  int64_t units = unitsOf(b, wrapped);
  layers::RecurrentOptions o = rnnOptions(b, wrapped, cell, /*wrapped=*/true);
  o.mask = x.mask;
  std::string merge = b.getString(l, "merge_mode", "concat");
  if (merge != "concat" && merge != "sum" && merge != "mul" && merge != "ave")
    b.fail(l, "merge_mode '" + merge + "' is not supported");
  layers::RecurrentOutput r =
      layers::bidirectional(cell, x.t, units, o, merge, Tensor(), l.name);
  // lib/Graph's names, tf.keras's: forward_<wrapped>, backward_<wrapped>.
  std::string cs = cellName(cell);
  std::vector<std::string> names;
  for (const char *half : {"forward_", "backward_"})
    for (const char *v : {"/kernel", "/recurrent_kernel", "/bias"})
      names.push_back(half + wrapped.name + "/" + cs + v);
  b.adopt(l, names);
  Outs out{KTensor{r.output, o.return_sequences ? x.mask : Tensor()}};
  if (o.return_state)
    for (const Tensor &s : r.states)
      out.push_back(KTensor{s, Tensor()});
  return out;
}

Outs multiHeadAttentionLayer(Builder &b, const Layer &l, const Call &c) {
  if (c.args.size() != 1 || c.list)
    b.fail(l, "the layer is called on query and value");
  const KTensor &query = c.args[0];
  auto kw = [&](const char *name, const char *positional) -> const KTensor * {
    for (const char *k : {name, positional}) {
      auto it = c.tensorKwargs.find(k);
      if (it != c.tensorKwargs.end() && !it->second.empty())
        return &it->second[0];
    }
    return nullptr;
  };
  const KTensor *value = kw("value", "arg1");
  if (!value)
    b.fail(l, "the call has no value");
  const KTensor *key = kw("key", "arg2");
  const KTensor *attentionMask = kw("attention_mask", "arg4");
  // Its kernel and bias regularizers and constraints apply to the four
  // projections' (Builder::adopt), as Keras passes them to its EinsumDense
  // sublayers; Keras's activity regularizer of each projection is not
  // built.
  b.refuseNonNull(l, {"activity_regularizer"},
                  "the projections' activity regularization is not built");
  if (c.kwargs && c.kwargs->IsObject()) {
    auto r = c.kwargs->FindMember("return_attention_scores");
    if (r != c.kwargs->MemberEnd() && r->value.IsBool() && r->value.GetBool())
      b.fail(l, "return_attention_scores is not supported");
  }
  for (const KTensor *t : {&query, value, key})
    if (t && (t->t.rank() != 3 || t->t.shape()[2] < 0))
      b.fail(l, "query, value and key must be [batch, steps, features] "
                "with known features, got " +
                    shape::toString(t->t.shape()));
  Dims axes = b.getIntList(l, "attention_axes", {1});
  if (axes != Dims{1} && axes != Dims{-2})
    b.fail(l, "attention_axes other than the steps are not supported");
  int64_t heads = b.getInt(l, "num_heads", 0);
  int64_t keyDim = b.getInt(l, "key_dim", 0);
  if (heads < 1 || keyDim < 1)
    b.fail(l, "num_heads and key_dim must be positive");
  layers::MultiHeadAttentionOptions o;
  o.value_dim = b.getInt(l, "value_dim", 0);
  o.dropout = b.getDouble(l, "dropout", 0.0);
  o.use_bias = b.getBool(l, "use_bias", true);
  if (const rj::Value *os = b.field(l, "output_shape")) {
    Dims d = b.getIntList(l, "output_shape", {});
    if (d.size() != 1 || (!os->IsInt64() && !os->IsArray()))
      b.fail(l, "output_shape must be one size");
    o.output_shape = d[0];
  }
  o.kernel_initializer =
      b.initializer(l, "kernel_initializer", glorot_uniform_initializer());
  o.bias_initializer =
      b.initializer(l, "bias_initializer", zeros_initializer());
  if (key)
    o.key = key->t;
  if (attentionMask)
    o.attention_mask = cast(attentionMask->t, DType::Bool);
  if (query.mask.valid())
    o.query_mask = query.mask;
  if (value->mask.valid())
    o.value_mask = value->mask;
  if (key && key->mask.valid())
    o.key_mask = key->mask;
  if (c.kwargs && c.kwargs->IsObject()) {
    auto u = c.kwargs->FindMember("use_causal_mask");
    if (u != c.kwargs->MemberEnd() && u->value.IsBool())
      o.use_causal_mask = u->value.GetBool();
  }
  o.training = b.options.training;
  if (b.has(l, "seed"))
    o.seed = b.getInt(l, "seed", 0);
  o.name = l.name;
  o.trainable = l.trainable;
  o.reuse = true;
  Tensor y = layers::multi_head_attention(query.t, value->t, heads, keyDim, o);
  std::vector<std::string> names;
  for (const char *p : {"query", "key", "value", "attention_output"})
    for (const char *v : {"/kernel", "/bias"})
      names.push_back(std::string(p) + v);
  b.adopt(l, names);
  return {KTensor{y, query.mask}};
}

} // namespace

void addRecurrentLayers(std::map<std::string, LayerImpl> &table) {
  for (const char *cls : {"SimpleRNN", "LSTM", "GRU"})
    table[cls] = LayerImpl{rnnLayer, true};
  table["Bidirectional"] = LayerImpl{bidirectionalLayer, true};
  table["MultiHeadAttention"] = LayerImpl{multiHeadAttentionLayer, true};
}

} // namespace kerasgraph
} // namespace keras
} // namespace estc
