//===- Layers.h - tf.layers for the graph builder -----------------------===//
//
// Each layer gets a unique name in the current scope and mode ("dense",
// "dense_1", ...), creates its variables under that name ("dense_1/kernel",
// "dense_1/bias") and its nodes in a name scope of that name
// ("train/dense_1/MatMul", "train/dense_1/BiasAdd", "train/dense_1/Relu").
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_LAYERS_H
#define ESTC_LIB_GRAPH_LAYERS_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"

#include <functional>
#include <string>
#include <type_traits>

namespace estc {

/// A layer's activation: nullptr (linear), an op of the library such as
/// `estc::nn::relu`, or any callable Tensor(const Tensor &).
class Activation {
public:
  Activation() = default;
  Activation(std::nullptr_t) {}
  Activation(Tensor (*fn)(const Tensor &, const std::string &))
      : fn_(fn ? std::function<Tensor(const Tensor &)>(
                     [fn](const Tensor &x) { return fn(x, ""); })
               : nullptr) {}
  template <typename F,
            typename = std::enable_if_t<
                std::is_invocable_r_v<Tensor, F, const Tensor &> &&
                !std::is_convertible_v<F, Tensor (*)(const Tensor &,
                                                     const std::string &)>>>
  Activation(F fn) : fn_(std::move(fn)) {}

  explicit operator bool() const { return static_cast<bool>(fn_); }
  Tensor operator()(const Tensor &x) const { return fn_ ? fn_(x) : x; }

private:
  std::function<Tensor(const Tensor &)> fn_;
};

/// A weight constraint (tf.keras.constraints): the projection of a
/// variable's value, assigned after each optimizer update (a layer's
/// kernel_constraint / bias_constraint, train::set_variable_constraint).
using Constraint = std::function<Tensor(const Tensor &)>;

/// Keras 2.15's tf.keras.constraints, computed as Keras computes them in
/// float32 (epsilon = 1e-7); `axis` are the axes a norm is taken over
/// (negative from the end). Bad arguments throw GraphError (when the
/// constraint is applied to a tensor, for its shape).
namespace constraints {
/// MaxNorm: w * (clip(norm, 0, max_value) / (epsilon + norm)).
Constraint max_norm(double max_value = 2, const Dims &axis = {0});
/// NonNeg: w * (w >= 0).
Constraint non_neg();
/// UnitNorm: w / (epsilon + norm).
Constraint unit_norm(const Dims &axis = {0});
/// MinMaxNorm: w * ((rate * clip(norm, min_value, max_value) + (1 - rate)
/// * norm) / (epsilon + norm)).
Constraint min_max_norm(double min_value = 0, double max_value = 1,
                        double rate = 1, const Dims &axis = {0});
/// RadialConstraint of a conv kernel [k, k, in, out] (k > 1): each k x k
/// slice made of rings, as Keras builds it: the centre (one element, or 2 x
/// 2 for an even k) takes w[c-1, c-1], c = k / 2, and ring d >= 1 the
/// diagonal element w[c+d-1, c+d-1] (odd k) or w[c+d, c+d] (even k).
Constraint radial_constraint();
} // namespace constraints

namespace layers {

/// tf.layers.dense: x [..., in] -> [..., units]; kernel [in, units].
/// `kernel_regularizer` (e.g. losses::l2_regularizer(0.01)): its penalty of
/// the kernel goes to the mode's "regularization_losses" collection
/// (losses::get_regularization_loss, losses::get_total_loss).
Tensor dense(
    const Tensor &x, int64_t units, Activation activation = nullptr,
    bool use_bias = true,
    const Initializer &kernel_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    const std::string &name = "",
    const std::function<Tensor(const Tensor &)> &kernel_regularizer = nullptr);

/// Keras's Dense / tf.layers.dense keyword arguments beyond `units`
/// (designated initializers): regularizers (weights -> scalar penalty, e.g.
/// losses::l2_regularizer(0.01), added to the mode's
/// "regularization_losses") of the kernel, the bias and the output
/// (activity_regularizer: of the layer's output, divided by the batch size
/// as Keras does), constraints of the kernel and the bias
/// (constraints::max_norm(2), ...: an optimizer of the mode that updates
/// the variable assigns the constraint of its new value in the same step,
/// train::set_variable_constraint), and `trainable` (false:
/// the variables are not in the trainable collection, so no optimizer
/// updates them).
struct DenseOptions {
  Activation activation = nullptr;
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  std::function<Tensor(const Tensor &)> kernel_regularizer = nullptr;
  std::function<Tensor(const Tensor &)> bias_regularizer = nullptr;
  std::function<Tensor(const Tensor &)> activity_regularizer = nullptr;
  Constraint kernel_constraint = nullptr;
  Constraint bias_constraint = nullptr;
  bool trainable = true;
  std::string name = "";
};
Tensor dense(const Tensor &x, int64_t units, const DenseOptions &options);

/// tf.layers.conv2d's keyword arguments beyond filters and kernel_size, as
/// DenseOptions.
struct Conv2DOptions {
  Dims strides = {1, 1};
  std::string padding = "valid";
  Dims dilation_rate = {1, 1};
  Activation activation = nullptr;
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  std::function<Tensor(const Tensor &)> kernel_regularizer = nullptr;
  std::function<Tensor(const Tensor &)> bias_regularizer = nullptr;
  std::function<Tensor(const Tensor &)> activity_regularizer = nullptr;
  Constraint kernel_constraint = nullptr;
  Constraint bias_constraint = nullptr;
  bool trainable = true;
  std::string name = "";
  std::string data_format = "channels_last";
};
Tensor conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
              const Conv2DOptions &options);

// The convolution and pooling layers: tf.compat.v1.layers' names,
// arguments and variables (Keras's for depthwise_conv2d and
// conv2d_transpose's output_padding / dilation_rate), with the argument
// order of this header's first conv2d (activation after padding) and
// data_format last. padding: "valid" or "same" (any case); data_format:
// "channels_last" (NWC, NHWC, NDHWC) or "channels_first" (NCW, NCHW,
// NCDHW: transposes around the channels-last op). The input's channel
// dimension must be known; the variables are "kernel" (or
// "depthwise_kernel" / "pointwise_kernel") and "bias" [filters].

/// tf.layers.conv2d: kernel [kh, kw, in, filters].
Tensor
conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
       const Dims &strides = {1, 1}, const std::string &padding = "valid",
       Activation activation = nullptr, bool use_bias = true,
       const Initializer &kernel_initializer = glorot_uniform_initializer(),
       const Initializer &bias_initializer = zeros_initializer(),
       const Dims &dilation_rate = {1, 1}, const std::string &name = "",
       const std::string &data_format = "channels_last");

/// tf.layers.conv1d: kernel [kernel_size, in, filters].
Tensor
conv1d(const Tensor &x, int64_t filters, int64_t kernel_size,
       int64_t strides = 1, const std::string &padding = "valid",
       Activation activation = nullptr, bool use_bias = true,
       const Initializer &kernel_initializer = glorot_uniform_initializer(),
       const Initializer &bias_initializer = zeros_initializer(),
       int64_t dilation_rate = 1, const std::string &name = "",
       const std::string &data_format = "channels_last");

/// tf.layers.conv3d: kernel [kd, kh, kw, in, filters].
Tensor
conv3d(const Tensor &x, int64_t filters, const Dims &kernel_size,
       const Dims &strides = {1, 1, 1}, const std::string &padding = "valid",
       Activation activation = nullptr, bool use_bias = true,
       const Initializer &kernel_initializer = glorot_uniform_initializer(),
       const Initializer &bias_initializer = zeros_initializer(),
       const Dims &dilation_rate = {1, 1, 1}, const std::string &name = "",
       const std::string &data_format = "channels_last");

/// tf.layers.conv2d_transpose (Keras Conv2DTranspose): kernel
/// [kh, kw, filters, in]; the output's H and W are Keras's
/// deconv_output_length (input * stride, plus max(kernel - stride, 0) for
/// "valid"; with output_padding [ph, pw], each below its stride:
/// (input - 1) * stride + kernel - 2 * pad + output_padding, pad =
/// kernel / 2 for "same", 0 for "valid").
Tensor conv2d_transpose(
    const Tensor &x, int64_t filters, const Dims &kernel_size,
    const Dims &strides = {1, 1}, const std::string &padding = "valid",
    Activation activation = nullptr, bool use_bias = true,
    const Initializer &kernel_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    const Dims &output_padding = {}, const Dims &dilation_rate = {1, 1},
    const std::string &name = "",
    const std::string &data_format = "channels_last");

/// tf.layers.conv3d_transpose (Keras Conv3DTranspose): kernel
/// [kd, kh, kw, filters, in]; output sizes as conv2d_transpose's.
Tensor conv3d_transpose(
    const Tensor &x, int64_t filters, const Dims &kernel_size,
    const Dims &strides = {1, 1, 1}, const std::string &padding = "valid",
    Activation activation = nullptr, bool use_bias = true,
    const Initializer &kernel_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    const Dims &output_padding = {}, const Dims &dilation_rate = {1, 1, 1},
    const std::string &name = "",
    const std::string &data_format = "channels_last");

/// Keras DepthwiseConv2D (layer name "depthwise_conv2d"): depthwise_kernel
/// [kh, kw, in, depth_multiplier], bias [in * depth_multiplier].
Tensor depthwise_conv2d(
    const Tensor &x, const Dims &kernel_size, const Dims &strides = {1, 1},
    const std::string &padding = "valid", int64_t depth_multiplier = 1,
    Activation activation = nullptr, bool use_bias = true,
    const Initializer &depthwise_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    const Dims &dilation_rate = {1, 1}, const std::string &name = "",
    const std::string &data_format = "channels_last");

/// tf.layers.separable_conv1d / separable_conv2d: depthwise_kernel
/// [k..., in, depth_multiplier], pointwise_kernel
/// [1..., in * depth_multiplier, filters], bias [filters].
Tensor separable_conv1d(
    const Tensor &x, int64_t filters, int64_t kernel_size, int64_t strides = 1,
    const std::string &padding = "valid", int64_t depth_multiplier = 1,
    Activation activation = nullptr, bool use_bias = true,
    const Initializer &depthwise_initializer = glorot_uniform_initializer(),
    const Initializer &pointwise_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    int64_t dilation_rate = 1, const std::string &name = "",
    const std::string &data_format = "channels_last");
Tensor separable_conv2d(
    const Tensor &x, int64_t filters, const Dims &kernel_size,
    const Dims &strides = {1, 1}, const std::string &padding = "valid",
    int64_t depth_multiplier = 1, Activation activation = nullptr,
    bool use_bias = true,
    const Initializer &depthwise_initializer = glorot_uniform_initializer(),
    const Initializer &pointwise_initializer = glorot_uniform_initializer(),
    const Initializer &bias_initializer = zeros_initializer(),
    const Dims &dilation_rate = {1, 1}, const std::string &name = "",
    const std::string &data_format = "channels_last");

/// tf.layers' pooling: max_pooling1d/2d/3d, average_pooling1d/2d/3d.
Tensor max_pooling1d(const Tensor &x, int64_t pool_size, int64_t strides,
                     const std::string &padding = "valid",
                     const std::string &data_format = "channels_last",
                     const std::string &name = "");
Tensor average_pooling1d(const Tensor &x, int64_t pool_size, int64_t strides,
                         const std::string &padding = "valid",
                         const std::string &data_format = "channels_last",
                         const std::string &name = "");
Tensor max_pooling2d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding = "valid",
                     const std::string &data_format = "channels_last",
                     const std::string &name = "");
Tensor average_pooling2d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides,
                         const std::string &padding = "valid",
                         const std::string &data_format = "channels_last",
                         const std::string &name = "");
Tensor max_pooling3d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding = "valid",
                     const std::string &data_format = "channels_last",
                     const std::string &name = "");
Tensor average_pooling3d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides,
                         const std::string &padding = "valid",
                         const std::string &data_format = "channels_last",
                         const std::string &name = "");

/// tf.layers.dropout: x unchanged unless `training`.
Tensor dropout(const Tensor &x, double rate = 0.5, bool training = false,
               std::optional<int64_t> seed = {}, const std::string &name = "");
/// With tf.layers.dropout's noise_shape (nn::dropout's).
Tensor dropout(const Tensor &x, double rate, const Dims &noise_shape,
               bool training = false, std::optional<int64_t> seed = {},
               const std::string &name = "");

/// tf.compat.v1.layers.batch_normalization: normalizes `x` over every
/// dimension but `axis` (its size C must be known) with the variables
/// (in this order, under the layer's name, "batch_normalization",
/// "batch_normalization_1", ...) gamma [C] (ones, if `scale`), beta [C]
/// (zeros, if `center`), moving_mean [C] (zeros) and moving_variance [C]
/// (ones), the last two not trainable:
///   y = (x - mean) * gamma / sqrt(variance + epsilon) + beta.
/// `training` (a mode's bool; TF's argument, moved forward as in dropout):
/// mean and variance are the batch's (biased variance), and the updates
/// moving -= (moving - batch statistic) * (1 - momentum) (TF's
/// assign_moving_average) are added to the mode's graph collection
/// "update_ops" (tf.GraphKeys.UPDATE_OPS): group them into the train_op.
/// For rank 4 and 5 inputs normalized over axis 1 or the last, TF uses its
/// fused kernel, whose moving variance takes the unbiased batch variance
/// (times n / (n - 1)); so does this: in training, such an input is one
/// nn::fused_batch_norm (est.fused_batch_norm, whose gradient is one fused
/// op too). Not training: the moving statistics (a composition).
Tensor batch_normalization(const Tensor &x, bool training = false,
                           int64_t axis = -1, double momentum = 0.99,
                           double epsilon = 1e-3, bool center = true,
                           bool scale = true, const std::string &name = "");

/// tf.layers.flatten: [batch, d1, d2, ...] -> [batch, d1*d2*...]; the
/// non-batch dimensions must be known.
Tensor flatten(const Tensor &x, const std::string &name = "");

// --- Attention, normalization and embedding layers (AttentionLayers.cpp) --

/// tf.keras.layers.LayerNormalization: normalizes `x` over the trailing
/// dims [axis, rank) (`axis` one int; Keras's list of axes is supported
/// when it is the trailing run [axis, ..., rank - 1]) with the variables
/// gamma (ones, if `scale`) and beta (zeros, if `center`) of shape
/// x.shape[axis:], created in this order under the layer's name
/// ("layer_normalization", "layer_normalization_1", ...):
///   y = (x - mean) * rsqrt(variance + epsilon) * gamma + beta
/// (one fused op, nn::layer_norm). The normalized dims must be known.
Tensor
layer_normalization(const Tensor &x, int64_t axis = -1, double epsilon = 1e-3,
                    bool center = true, bool scale = true,
                    const Initializer &beta_initializer = zeros_initializer(),
                    const Initializer &gamma_initializer = ones_initializer(),
                    const std::string &name = "");

/// tf.contrib.layers.layer_norm (TF 1.x's, as BERT uses it): normalizes
/// over [begin_norm_axis, rank) with beta and gamma of shape
/// x.shape[begin_params_axis:] (created in that order, under "LayerNorm",
/// "LayerNorm_1", ... unless `scope` names it) and contrib's epsilon 1e-12;
/// then `activation_fn`.
Tensor layer_norm(const Tensor &x, bool center = true, bool scale = true,
                  Activation activation_fn = nullptr,
                  int64_t begin_norm_axis = 1, int64_t begin_params_axis = -1,
                  const std::string &scope = "");

/// Options of multi_head_attention beyond Keras's two required arguments
/// (TF's keyword names; designated initializers).
struct MultiHeadAttentionOptions {
  /// value_dim: 0 means key_dim (Keras's None).
  int64_t value_dim = 0;
  double dropout = 0.0;
  bool use_bias = true;
  /// output_shape: the last dim of the output; 0 means the query's.
  int64_t output_shape = 0;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  /// key: nullopt means value (Keras's key=None).
  std::optional<Tensor> key = std::nullopt;
  /// attention_mask [B, T, S], bool: true = query t may attend to key s.
  std::optional<Tensor> attention_mask = std::nullopt;
  /// The inputs' Keras masks ([B, T] / [B, S] bool, e.g. an embedding's
  /// with mask_zero), combined as Keras's _compute_attention_mask does:
  /// query_mask[:, :, None] & value_mask[:, None, :] & key_mask[:, None, :]
  /// (and attention_mask).
  std::optional<Tensor> query_mask = std::nullopt;
  std::optional<Tensor> value_mask = std::nullopt;
  std::optional<Tensor> key_mask = std::nullopt;
  bool use_causal_mask = false;
  bool training = false;
  std::optional<int64_t> seed = std::nullopt;
  std::string name = "";
  /// Keras's trainable, and `reuse`: the variables of an earlier call of
  /// the same layer name in the mode (a Keras layer called twice).
  bool trainable = true;
  bool reuse = false;
};

/// tf.keras.layers.MultiHeadAttention (Keras 2.15) over query [B, T, dq]
/// and value [B, S, dv] (key [B, S, dk], default value), attention_axes
/// None: the variables, under "multi_head_attention", "..._1", ..., are
///   query/kernel [dq, num_heads, key_dim], query/bias [num_heads, key_dim],
///   key/kernel [dk, num_heads, key_dim], key/bias [num_heads, key_dim],
///   value/kernel [dv, num_heads, value_dim], value/bias [num_heads,
///   value_dim], attention_output/kernel [num_heads, value_dim, out],
///   attention_output/bias [out]
/// (biases if use_bias); the weights softmax(q k^T / sqrt(key_dim) + mask)
/// (one fused op, nn::attention_softmax; masked-out logits get -1e9),
/// dropout on them when `training`; the result [B, T, out].
Tensor multi_head_attention(const Tensor &query, const Tensor &value,
                            int64_t num_heads, int64_t key_dim,
                            const MultiHeadAttentionOptions &options = {});

/// tf.keras.layers.Embedding: ids (any integer shape) -> ids.shape +
/// [output_dim], rows of the variable "embedding/embeddings" [input_dim,
/// output_dim] (uniform in [-0.05, 0.05) by default). Its gradient is a
/// scatter-add of the rows used.
Tensor embedding(const Tensor &ids, int64_t input_dim, int64_t output_dim,
                 const Initializer &embeddings_initializer =
                     random_uniform_initializer(-0.05, 0.05),
                 const std::string &name = "");

/// Keras's Embedding keyword arguments beyond input_dim and output_dim.
struct EmbeddingOptions {
  Initializer embeddings_initializer = random_uniform_initializer(-0.05, 0.05);
  /// Keras's mask_zero: id 0 is padding, and the result carries the mask
  /// not_equal(ids, 0) (bool, ids' shape) that the layers taking a mask
  /// consume: RecurrentOptions::mask (Recurrent.h),
  /// MultiHeadAttentionOptions::query_mask / value_mask / key_mask,
  /// global_average_pooling1d's mask.
  bool mask_zero = false;
  std::string name = "";
};
/// An embedding's output and, with mask_zero, its mask (else empty).
struct EmbeddingOutput {
  Tensor output;
  Tensor mask;
};
EmbeddingOutput embedding(const Tensor &ids, int64_t input_dim,
                          int64_t output_dim, const EmbeddingOptions &options);

/// tf.keras.layers.GlobalAveragePooling1D / GlobalMaxPooling1D ([B, T, C]
/// -> [B, C]) and GlobalAveragePooling2D / GlobalMaxPooling2D ([B, H, W,
/// C] -> [B, C]), channels_last; keepdims keeps the pooled dims as 1.
/// GlobalAveragePooling1D's `mask` ([B, T] bool, Keras's call(mask=...),
/// e.g. an embedding's): the mean over the unmasked steps, sum(x * mask) /
/// sum(mask) as Keras computes it.
Tensor global_average_pooling1d(const Tensor &x, bool keepdims = false,
                                const std::string &name = "",
                                const Tensor &mask = Tensor());
Tensor global_max_pooling1d(const Tensor &x, bool keepdims = false,
                            const std::string &name = "");
Tensor global_average_pooling2d(const Tensor &x, bool keepdims = false,
                                const std::string &name = "");
Tensor global_max_pooling2d(const Tensor &x, bool keepdims = false,
                            const std::string &name = "");

} // namespace layers
} // namespace estc

#endif // ESTC_LIB_GRAPH_LAYERS_H
