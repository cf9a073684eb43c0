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

} // namespace layers
} // namespace estc
