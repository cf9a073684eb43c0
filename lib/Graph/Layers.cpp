//===- Layers.cpp - tf.layers for the graph builder ---------------------===//

#include "lib/Graph/Layers.h"
#include "lib/Graph/Train.h"

#include <algorithm>
#include <cctype>

namespace estc {
namespace layers {

namespace {
std::string layerName(Graph &g, const std::string &name,
                      const std::string &base) {
  return name.empty() ? g.unique_layer_name(base) : name;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return s;
}

[[noreturn]] void layerError(const std::string &layer, const std::string &name,
                             const Tensor &x, const std::string &problem) {
  throw GraphError(layer + " '" + name + "': input '" + x.name() + "' " +
                   shape::toString(x.shape()) + ": " + problem);
}
} // namespace

Tensor dense(const Tensor &x, int64_t units, Activation activation,
             bool use_bias, const Initializer &kernel_initializer,
             const Initializer &bias_initializer, const std::string &name,
             const std::function<Tensor(const Tensor &)> &kernel_regularizer) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "dense");
  auto scope = g.name_scope(layer);
  if (x.rank() < 2)
    layerError("dense", layer, x, "input must have rank >= 2");
  int64_t in = x.shape().back();
  if (in == shape::kUnknownDim)
    layerError("dense", layer, x, "the last dimension must be known");
  if (units < 1)
    layerError("dense", layer, x,
               "units must be positive, got " + std::to_string(units));
  Variable kernel =
      g.get_variable("kernel", x.dtype(), {in, units}, kernel_initializer);
  if (kernel_regularizer) {
    auto s = g.name_scope("kernel");
    losses::add_regularization_loss(kernel_regularizer,
                                    g.read_variable(kernel));
  }
  Tensor y = matmul(x, kernel);
  if (use_bias) {
    Variable bias =
        g.get_variable("bias", x.dtype(), {units}, bias_initializer);
    y = nn::bias_add(y, bias);
  }
  return activation(y);
}

Tensor conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
              const Dims &strides, const std::string &padding,
              Activation activation, bool use_bias,
              const Initializer &kernel_initializer,
              const Initializer &bias_initializer, const Dims &dilation_rate,
              const std::string &name) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "conv2d");
  auto scope = g.name_scope(layer);
  if (x.rank() != 4)
    layerError("conv2d", layer, x, "input must be NHWC (rank 4)");
  int64_t in = x.shape()[3];
  if (in == shape::kUnknownDim)
    layerError("conv2d", layer, x, "the channel dimension must be known");
  if (kernel_size.size() != 2 || kernel_size[0] < 1 || kernel_size[1] < 1)
    layerError("conv2d", layer, x,
               "kernel_size must be 2 positive values, got " +
                   shape::toString(kernel_size));
  if (filters < 1)
    layerError("conv2d", layer, x,
               "filters must be positive, got " + std::to_string(filters));
  Variable kernel = g.get_variable(
      "kernel", x.dtype(), {kernel_size[0], kernel_size[1], in, filters},
      kernel_initializer);
  Tensor y = nn::conv2d(x, kernel, strides, upper(padding), dilation_rate);
  if (use_bias) {
    Variable bias =
        g.get_variable("bias", x.dtype(), {filters}, bias_initializer);
    y = nn::bias_add(y, bias);
  }
  return activation(y);
}

Tensor max_pooling2d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding,
                     const std::string &name) {
  Graph &g = x.graph();
  auto scope = g.name_scope(layerName(g, name, "max_pooling2d"));
  return nn::max_pool(x, pool_size, strides, upper(padding));
}

Tensor average_pooling2d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides, const std::string &padding,
                         const std::string &name) {
  Graph &g = x.graph();
  auto scope = g.name_scope(layerName(g, name, "average_pooling2d"));
  return nn::avg_pool(x, pool_size, strides, upper(padding));
}

Tensor dropout(const Tensor &x, double rate, bool training,
               std::optional<int64_t> seed, const std::string &name) {
  Graph &g = x.graph();
  // The name is taken in every mode so later layers are named alike.
  auto scope = g.name_scope(layerName(g, name, "dropout"));
  if (!training)
    return x;
  return nn::dropout(x, rate, seed);
}

Tensor flatten(const Tensor &x, const std::string &name) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "flatten");
  auto scope = g.name_scope(layer);
  Dims s = x.shape();
  if (s.empty())
    layerError("flatten", layer, x, "input must have rank >= 1");
  Dims rest(s.begin() + 1, s.end());
  int64_t n = shape::numElements(rest);
  if (n == shape::kUnknownDim)
    layerError("flatten", layer, x, "the non-batch dimensions must be known");
  return reshape(x, {-1, n});
}

Tensor batch_normalization(const Tensor &x, bool training, int64_t axis,
                           double momentum, double epsilon, bool center,
                           bool scale, const std::string &name) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "batch_normalization");
  auto scope = g.name_scope(layer);
  if (!x.has_value() || !is_floating(x.dtype()))
    layerError("batch_normalization", layer, x,
               "input must be a float tensor, got " + to_string(x.dtype()));
  int64_t rank = x.rank();
  std::optional<int64_t> a = shape::normalizeAxis(axis, rank);
  if (!a)
    layerError("batch_normalization", layer, x,
               "axis " + std::to_string(axis) + " is out of range");
  int64_t channels = x.shape()[*a];
  if (channels == shape::kUnknownDim)
    layerError("batch_normalization", layer, x,
               "dimension " + std::to_string(*a) + " (axis) must be known");
  if (!(epsilon > 0.0))
    layerError("batch_normalization", layer, x,
               "epsilon must be positive, got " + std::to_string(epsilon));
  DType dtype = x.dtype();
  Variable gamma, beta;
  if (scale)
    gamma = g.get_variable("gamma", dtype, {channels}, ones_initializer());
  if (center)
    beta = g.get_variable("beta", dtype, {channels}, zeros_initializer());
  Variable movingMean =
      g.get_variable("moving_mean", dtype, {channels}, zeros_initializer(),
                     /*trainable=*/false);
  Variable movingVariance =
      g.get_variable("moving_variance", dtype, {channels}, ones_initializer(),
                     /*trainable=*/false);

  // [C] parameters broadcast along `axis`: [C, 1, ..., 1] unless it is last.
  auto alongAxis = [&](const Tensor &v) {
    if (*a == rank - 1)
      return v;
    Dims s(rank - *a, 1);
    s[0] = channels;
    return reshape(v, s);
  };
  auto assignMovingAverage = [&](const Variable &moving, const Tensor &value) {
    auto s = g.name_scope(g.unique_layer_name("AssignMovingAvg"));
    Tensor current = moving.read();
    Tensor delta =
        multiply(subtract(current, value), g.constant(1.0 - momentum, dtype));
    Operation op = assign(moving, subtract(current, delta));
    g.add_to_collection("update_ops", op);
  };

  // Keras's fused path (rank 4 or 5, channels first or last): one
  // est.fused_batch_norm, whose batch variance is already TF's unbiased
  // one; its gradient is one fused op.
  bool fused = (rank == 4 || rank == 5) && (*a == 1 || *a == rank - 1);
  if (training && fused) {
    std::vector<double> ones(channels, 1.0), zeros(channels, 0.0);
    Tensor gammaT = scale ? gamma.read() : g.constant(ones, {channels}, dtype);
    Tensor betaT = center ? beta.read() : g.constant(zeros, {channels}, dtype);
    const char *format = *a == 1 ? (rank == 4 ? "NCHW" : "NCDHW")
                                 : (rank == 4 ? "NHWC" : "NDHWC");
    nn::FusedBatchNorm bn = nn::fused_batch_norm(x, gammaT, betaT, epsilon,
                                                 format, "FusedBatchNormV3");
    assignMovingAverage(movingMean, bn.batch_mean);
    assignMovingAverage(movingVariance, bn.batch_variance);
    return bn.y;
  }

  Dims reduced;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *a)
      reduced.push_back(d);
  Tensor mean, variance;
  if (training) {
    // tf.nn.moments: the variance of x around the (constant) mean.
    auto s = g.name_scope("moments");
    Tensor m = reduce_mean(x, reduced, /*keep_dims=*/true, "mean");
    Tensor v = reduce_mean(square(subtract(x, stop_gradient(m))), reduced,
                           /*keep_dims=*/true, "variance");
    mean = reshape(m, {channels}, "Squeeze");
    variance = reshape(v, {channels}, "Squeeze_1");
  } else {
    mean = movingMean.read();
    variance = movingVariance.read();
  }
  // tf.nn.batch_normalization: x * inv + (beta - mean * inv).
  Tensor inv = rsqrt(add(variance, epsilon));
  if (scale)
    inv = multiply(inv, gamma.read());
  Tensor shift = multiply(mean, inv);
  shift = center ? subtract(beta.read(), shift) : negative(shift);
  Tensor y = add(multiply(x, alongAxis(inv)), alongAxis(shift));

  if (training) {
    assignMovingAverage(movingMean, mean);
    assignMovingAverage(movingVariance, variance);
  }
  return y;
}

} // namespace layers
} // namespace estc
