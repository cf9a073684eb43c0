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

/// tf.layers.conv2d: NHWC input, HWIO kernel [kh, kw, in, filters].
/// padding: "valid" or "same" (any case).
Tensor
conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
       const Dims &strides = {1, 1}, const std::string &padding = "valid",
       Activation activation = nullptr, bool use_bias = true,
       const Initializer &kernel_initializer = glorot_uniform_initializer(),
       const Initializer &bias_initializer = zeros_initializer(),
       const Dims &dilation_rate = {1, 1}, const std::string &name = "");

Tensor max_pooling2d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding = "valid",
                     const std::string &name = "");
Tensor average_pooling2d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides,
                         const std::string &padding = "valid",
                         const std::string &name = "");

/// tf.layers.dropout: x unchanged unless `training`.
Tensor dropout(const Tensor &x, double rate = 0.5, bool training = false,
               std::optional<int64_t> seed = {}, const std::string &name = "");

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

} // namespace layers
} // namespace estc

#endif // ESTC_LIB_GRAPH_LAYERS_H
