//===- AttentionLayers.cpp - Attention, normalization, embedding layers ---===//
//
// Keras's LayerNormalization, MultiHeadAttention, Embedding and global
// pooling layers and tf.contrib's layer_norm, built on the fused ops
// nn::layer_norm and nn::attention_softmax (lib/Graph/Ops.h).
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/LayerSupport.h"
#include "lib/Graph/Layers.h"

#include <cmath>

namespace estc {
namespace layers {

using detail::layerError;
using detail::layerName;

namespace {

/// The normalized dims' shape of `x` from `from`, which must be known.
Dims knownTail(const char *layer, const std::string &name, const Tensor &x,
               int64_t from, const char *what) {
  Dims all = x.shape();
  Dims tail(all.begin() + from, all.end());
  for (int64_t d : tail)
    if (d == shape::kUnknownDim)
      layerError(layer, name, x,
                 std::string("the dimensions from ") + what + " " +
                     std::to_string(from) + " must be known");
  return tail;
}

/// Normalizes `axis` of `x` or reports it.
int64_t axisOf(const char *layer, const std::string &name, const Tensor &x,
               int64_t axis, const char *what) {
  if (!x.has_value() || !is_floating(x.dtype()))
    layerError(layer, name, x,
               "input must be a float tensor, got " +
                   (x.has_value() ? to_string(x.dtype()) : std::string("?")));
  std::optional<int64_t> a = shape::normalizeAxis(axis, x.rank());
  if (!a)
    layerError(layer, name, x,
               std::string(what) + " " + std::to_string(axis) +
                   " is out of range for rank " + std::to_string(x.rank()));
  return *a;
}
} // namespace

Tensor layer_normalization(const Tensor &x, int64_t axis, double epsilon,
                           bool center, bool scale,
                           const Initializer &beta_initializer,
                           const Initializer &gamma_initializer,
                           const std::string &name) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "layer_normalization");
  auto s = g.name_scope(layer);
  int64_t a = axisOf("layer_normalization", layer, x, axis, "axis");
  if (!(epsilon >= 0.0))
    layerError("layer_normalization", layer, x,
               "epsilon must be >= 0, got " + std::to_string(epsilon));
  Dims params = knownTail("layer_normalization", layer, x, a, "axis");
  DType dtype = x.dtype();
  // Keras creates gamma before beta.
  Tensor gamma =
      scale ? g.get_variable("gamma", dtype, params, gamma_initializer).read()
            : g.constant({1.0}, params, dtype);
  Tensor beta =
      center ? g.get_variable("beta", dtype, params, beta_initializer).read()
             : g.constant({0.0}, params, dtype);
  return nn::layer_norm(x, gamma, beta, a, a, epsilon);
}

Tensor layer_norm(const Tensor &x, bool center, bool scale,
                  Activation activation_fn, int64_t begin_norm_axis,
                  int64_t begin_params_axis, const std::string &scope) {
  Graph &g = x.graph();
  std::string layer = layerName(g, scope, "LayerNorm");
  auto s = g.name_scope(layer);
  int64_t norm =
      axisOf("layer_norm", layer, x, begin_norm_axis, "begin_norm_axis");
  int64_t params =
      axisOf("layer_norm", layer, x, begin_params_axis, "begin_params_axis");
  if (params < norm)
    layerError("layer_norm", layer, x,
               "begin_params_axis " + std::to_string(begin_params_axis) +
                   " comes before begin_norm_axis " +
                   std::to_string(begin_norm_axis));
  Dims shape = knownTail("layer_norm", layer, x, params, "begin_params_axis");
  DType dtype = x.dtype();
  // tf.contrib creates beta before gamma.
  Tensor beta =
      center ? g.get_variable("beta", dtype, shape, zeros_initializer()).read()
             : g.constant({0.0}, shape, dtype);
  Tensor gamma =
      scale ? g.get_variable("gamma", dtype, shape, ones_initializer()).read()
            : g.constant({1.0}, shape, dtype);
  return activation_fn(nn::layer_norm(x, gamma, beta, norm, params, 1e-12));
}

namespace {
/// One of MultiHeadAttention's input projections: x [B, T, d] -> [B, heads,
/// T, size] through kernel [d, heads, size] (a broadcast batched matmul of
/// x [B, 1, T, d] with the kernel as [heads, d, size]) plus bias [heads,
/// size].
Tensor projectHeads(Graph &g, const std::string &scope, const Tensor &x,
                    int64_t heads, int64_t size,
                    const MultiHeadAttentionOptions &o) {
  auto s = g.name_scope(scope);
  int64_t d = x.shape().back();
  Variable kernel = g.get_variable("kernel", x.dtype(), {d, heads, size},
                                   o.kernel_initializer, o.trainable, o.reuse);
  Tensor y = matmul(expand_dims(x, 1), transpose(kernel.read(), {1, 0, 2}));
  if (o.use_bias) {
    Variable bias = g.get_variable("bias", x.dtype(), {heads, size},
                                   o.bias_initializer, o.trainable, o.reuse);
    y = add(y, reshape(bias.read(), {heads, 1, size}));
  }
  return y;
}
} // namespace

Tensor multi_head_attention(const Tensor &query, const Tensor &value,
                            int64_t num_heads, int64_t key_dim,
                            const MultiHeadAttentionOptions &o) {
  Graph &g = query.graph();
  const char *kLayer = "multi_head_attention";
  std::string layer = layerName(g, o.name, kLayer);
  auto s = g.name_scope(layer);
  Tensor key = o.key ? *o.key : value;
  int64_t value_dim = o.value_dim > 0 ? o.value_dim : key_dim;
  if (num_heads < 1 || key_dim < 1 || o.value_dim < 0 || o.output_shape < 0)
    layerError(kLayer, layer, query,
               "num_heads, key_dim, value_dim and output_shape must be "
               "positive, got " +
                   std::to_string(num_heads) + ", " + std::to_string(key_dim) +
                   ", " + std::to_string(o.value_dim) + ", " +
                   std::to_string(o.output_shape));
  if (!(o.dropout >= 0.0 && o.dropout < 1.0))
    layerError(kLayer, layer, query,
               "dropout must be in [0, 1), got " + std::to_string(o.dropout));
  for (const Tensor *t : {&query, &value, static_cast<const Tensor *>(&key)}) {
    if (!t->has_value() || t->rank() != 3 || !is_floating(t->dtype()) ||
        t->shape().back() == shape::kUnknownDim)
      layerError(kLayer, layer, *t,
                 "query, value and key must be float [batch, length, dim] "
                 "tensors with a known dim");
    if (t->dtype() != query.dtype())
      layerError(kLayer, layer, *t, "dtype differs from the query's");
  }
  auto mismatch = [&](int64_t a, int64_t b) {
    return a != shape::kUnknownDim && b != shape::kUnknownDim && a != b;
  };
  if (mismatch(key.shape()[1], value.shape()[1]) ||
      mismatch(key.shape()[0], value.shape()[0]) ||
      mismatch(query.shape()[0], value.shape()[0]))
    layerError(kLayer, layer, key,
               "key " + shape::toString(key.shape()) + " and value " +
                   shape::toString(value.shape()) + " must share batch and " +
                   "length, and the query " + shape::toString(query.shape()) +
                   " the batch");
  std::optional<Tensor> mask;
  if (o.attention_mask) {
    const Tensor &m = *o.attention_mask;
    Dims expected = {query.shape()[0], query.shape()[1], value.shape()[1]};
    bool ok = m.has_value() && m.dtype() == DType::Bool && m.rank() == 3;
    for (int64_t i = 0; ok && i < 3; ++i)
      ok = m.shape()[i] == 1 || !mismatch(m.shape()[i], expected[i]);
    if (!ok)
      layerError(kLayer, layer, m,
                 "attention_mask must be a bool [batch, T, S] = " +
                     shape::toString(expected) + " tensor");
    mask = m;
  }
  // The inputs' masks, as Keras's _compute_attention_mask.
  auto inputMask = [&](const std::optional<Tensor> &m, const char *what,
                       const Tensor &of, int64_t axis) {
    if (!m)
      return;
    bool ok = m->has_value() && m->dtype() == DType::Bool && m->rank() == 2 &&
              !mismatch(m->shape()[0], of.shape()[0]) &&
              !mismatch(m->shape()[1], of.shape()[1]);
    if (!ok)
      layerError(kLayer, layer, *m,
                 std::string(what) + " must be a bool [batch, length] = " +
                     shape::toString({of.shape()[0], of.shape()[1]}) +
                     " tensor");
    Tensor e = expand_dims(*m, axis);
    mask = mask ? logical_and(*mask, e) : e;
  };
  inputMask(o.query_mask, "query_mask", query, 2);
  inputMask(o.value_mask, "value_mask", value, 1);
  inputMask(o.key_mask, "key_mask", key, 1);
  if (mask)
    mask = expand_dims(*mask, 1);
  int64_t out = o.output_shape > 0 ? o.output_shape : query.shape().back();

  // Keras builds query, key, value, then attention_output.
  Tensor q = projectHeads(g, "query", query, num_heads, key_dim, o);
  Tensor k = projectHeads(g, "key", key, num_heads, key_dim, o);
  Tensor v = projectHeads(g, "value", value, num_heads, value_dim, o);
  double scale = 1.0 / std::sqrt(static_cast<double>(key_dim));
  Tensor scores = matmul(q, k, false, true, "scores");
  Tensor weights =
      mask ? nn::attention_softmax(scores, *mask, scale, o.use_causal_mask)
           : nn::attention_softmax(scores, scale, o.use_causal_mask);
  if (o.training && o.dropout > 0.0)
    weights = nn::dropout(weights, o.dropout, o.seed);
  Tensor heads = matmul(weights, v, false, false, "context"); // [B,H,T,V]

  auto os = g.name_scope("attention_output");
  Variable kernel =
      g.get_variable("kernel", query.dtype(), {num_heads, value_dim, out},
                     o.kernel_initializer, o.trainable, o.reuse);
  // sum over heads of [B, H, T, V] x [H, V, out].
  Tensor y = reduce_sum(matmul(heads, kernel.read()), Dims{1});
  if (o.use_bias) {
    Variable bias = g.get_variable("bias", query.dtype(), {out},
                                   o.bias_initializer, o.trainable, o.reuse);
    y = add(y, bias.read());
  }
  return y;
}

Tensor embedding(const Tensor &ids, int64_t input_dim, int64_t output_dim,
                 const Initializer &embeddings_initializer,
                 const std::string &name) {
  Graph &g = ids.graph();
  std::string layer = layerName(g, name, "embedding");
  auto s = g.name_scope(layer);
  if (!ids.has_value() || !is_integer(ids.dtype()))
    layerError("embedding", layer, ids, "ids must be an integer tensor");
  if (input_dim < 1 || output_dim < 1)
    layerError("embedding", layer, ids,
               "input_dim and output_dim must be positive, got " +
                   std::to_string(input_dim) + " and " +
                   std::to_string(output_dim));
  Variable table =
      g.get_variable("embeddings", DType::Float32, {input_dim, output_dim},
                     embeddings_initializer);
  return gather(table.read(), ids);
}

EmbeddingOutput embedding(const Tensor &ids, int64_t input_dim,
                          int64_t output_dim, const EmbeddingOptions &options) {
  EmbeddingOutput out;
  out.output = embedding(ids, input_dim, output_dim,
                         options.embeddings_initializer, options.name);
  if (options.mask_zero)
    out.mask = not_equal(ids, 0.0);
  return out;
}

namespace {
Tensor globalPool(const char *layerBase, bool average, int64_t rank,
                  const Tensor &x, bool keepdims, const std::string &name) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, layerBase);
  auto s = g.name_scope(layer);
  if (!x.has_value() || x.rank() != rank || !is_floating(x.dtype()))
    layerError(layerBase, layer, x,
               "input must be a float rank-" + std::to_string(rank) +
                   " tensor (channels last)");
  Dims axes;
  for (int64_t d = 1; d + 1 < rank; ++d)
    axes.push_back(d);
  return average ? reduce_mean(x, axes, keepdims)
                 : reduce_max(x, axes, keepdims);
}
} // namespace

Tensor global_average_pooling1d(const Tensor &x, bool keepdims,
                                const std::string &name, const Tensor &mask) {
  if (!mask.valid())
    return globalPool("global_average_pooling1d", true, 3, x, keepdims, name);
  const char *kLayer = "global_average_pooling1d";
  Graph &g = x.graph();
  std::string layer = layerName(g, name, kLayer);
  auto s = g.name_scope(layer);
  if (!x.has_value() || x.rank() != 3 || !is_floating(x.dtype()))
    layerError(kLayer, layer, x,
               "input must be a float rank-3 tensor (channels last)");
  auto differ = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
  if (!mask.has_value() || mask.dtype() != DType::Bool || mask.rank() != 2 ||
      differ(mask.shape()[0], x.shape()[0]) ||
      differ(mask.shape()[1], x.shape()[1]))
    layerError(kLayer, layer, mask,
               "mask must be a bool [batch, steps] = " +
                   shape::toString({x.shape()[0], x.shape()[1]}) + " tensor");
  // Keras: sum(x * mask, 1) / sum(mask, 1), the mask cast to x's dtype.
  Tensor m = expand_dims(cast(mask, x.dtype()), 2);
  return divide(reduce_sum(multiply(x, m), Dims{1}, keepdims),
                reduce_sum(m, Dims{1}, keepdims));
}
Tensor global_max_pooling1d(const Tensor &x, bool keepdims,
                            const std::string &name) {
  return globalPool("global_max_pooling1d", false, 3, x, keepdims, name);
}
Tensor global_average_pooling2d(const Tensor &x, bool keepdims,
                                const std::string &name) {
  return globalPool("global_average_pooling2d", true, 4, x, keepdims, name);
}
Tensor global_max_pooling2d(const Tensor &x, bool keepdims,
                            const std::string &name) {
  return globalPool("global_max_pooling2d", false, 4, x, keepdims, name);
}

} // namespace layers
} // namespace estc
