//===- Layers.cpp - tf.layers for the graph builder ---------------------===//

#include "lib/Graph/Layers.h"
#include "lib/Graph/LayerSupport.h"
#include "lib/Graph/Train.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace estc {

namespace constraints {
namespace {
/// Keras's backend.epsilon().
constexpr double kEpsilon = 1e-7;

[[noreturn]] void constraintError(const char *kind, const Tensor &w,
                                  const std::string &message) {
  throw GraphError(
      std::string("constraints::") + kind + " of '" + w.name() + "' " +
      (w.has_value() ? shape::toString(w.shape()) : std::string("(no value)")) +
      ": " + message);
}

/// The axes (non-negative) a norm of `w` is taken over; `w` a float tensor.
Dims normAxes(const char *kind, const Tensor &w, const Dims &axis) {
  if (!w.has_value() || !is_floating(w.dtype()))
    constraintError(kind, w, "the weight must be a float tensor");
  if (axis.empty())
    constraintError(kind, w, "axis is empty");
  int64_t rank = w.rank();
  Dims out;
  for (int64_t a : axis) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      constraintError(kind, w,
                      "axis " + std::to_string(a) + " is out of range");
    out.push_back(n);
  }
  return out;
}

/// sqrt(sum(square(w), axes, keepdims=True)).
Tensor norms(const Tensor &w, const Dims &axes) {
  return sqrt(reduce_sum(square(w), axes, /*keep_dims=*/true));
}
} // namespace

Constraint max_norm(double max_value, const Dims &axis) {
  return [=](const Tensor &w) {
    Tensor n = norms(w, normAxes("max_norm", w, axis));
    Tensor desired = clip_by_value(n, 0.0, std::max(max_value, 0.0));
    return multiply(w, divide(desired, add(kEpsilon, n)));
  };
}

Constraint non_neg() {
  return [](const Tensor &w) {
    if (!w.has_value() || !is_floating(w.dtype()))
      constraintError("non_neg", w, "the weight must be a float tensor");
    return multiply(w, cast(greater_equal(w, 0.0), w.dtype()));
  };
}

Constraint unit_norm(const Dims &axis) {
  return [=](const Tensor &w) {
    return divide(w, add(kEpsilon, norms(w, normAxes("unit_norm", w, axis))));
  };
}

Constraint min_max_norm(double min_value, double max_value, double rate,
                        const Dims &axis) {
  return [=](const Tensor &w) {
    Tensor n = norms(w, normAxes("min_max_norm", w, axis));
    // Keras's backend.clip raises max_value to min_value.
    Tensor desired =
        add(multiply(rate, clip_by_value(n, min_value,
                                         std::max(max_value, min_value))),
            multiply(1.0 - rate, n));
    return multiply(w, divide(desired, add(kEpsilon, n)));
  };
}

Constraint radial_constraint() {
  return [](const Tensor &w) {
    const char *kind = "radial_constraint";
    if (!w.has_value() || !is_floating(w.dtype()))
      constraintError(kind, w, "the weight must be a float tensor");
    if (w.rank() != 4)
      constraintError(kind, w, "the weight must have rank 4 (a conv2d kernel)");
    Dims s = w.shape();
    int64_t k = s[0];
    if (k < 2 || s[1] != k || s[2] < 0 || s[3] < 0)
      constraintError(kind, w,
                      "needs a square kernel [k, k, in, out] of known sizes, "
                      "k >= 2");
    // Keras's rings: ring d of the k x k slice takes the diagonal element
    // w[a, a], a = c - 1 for the centre (d = 0), c + d - 1 (odd k) or
    // c + d (even k) after, c = k / 2.
    int64_t c = k / 2;
    auto ring = [&](int64_t i) {
      return k % 2 ? std::abs(i - c) : (i >= c ? i - c : c - 1 - i);
    };
    std::vector<double> source(k * k);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        int64_t d = std::max(ring(i), ring(j));
        int64_t a = d == 0 ? c - 1 : (k % 2 ? c + d - 1 : c + d);
        source[i * k + j] = static_cast<double>(a * k + a);
      }
    Tensor rows = reshape(w, {k * k, s[2], s[3]});
    Tensor picked =
        gather(rows, w.graph().constant(source, {k * k}, DType::Int64));
    return reshape(picked, s);
  };
}
} // namespace constraints

namespace layers {

using detail::layerError;
using detail::layerName;

namespace {
std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return s;
}

} // namespace

namespace {
/// A layer's penalty of `t` under the name scope `scope`, when given.
/// A layer variable's constraint (Keras's kernel_constraint, ...).
void constrain(const Constraint &constraint, const Variable &variable) {
  if (constraint)
    train::set_variable_constraint(variable, constraint);
}

void regularize(Graph &g, const std::function<Tensor(const Tensor &)> &fn,
                const char *scope, const Tensor &t) {
  if (!fn)
    return;
  auto s = g.name_scope(scope);
  losses::add_regularization_loss(fn, t);
}

} // namespace

Tensor dense(const Tensor &x, int64_t units, Activation activation,
             bool use_bias, const Initializer &kernel_initializer,
             const Initializer &bias_initializer, const std::string &name,
             const std::function<Tensor(const Tensor &)> &kernel_regularizer) {
  return dense(x, units,
               DenseOptions{.activation = std::move(activation),
                            .use_bias = use_bias,
                            .kernel_initializer = kernel_initializer,
                            .bias_initializer = bias_initializer,
                            .kernel_regularizer = kernel_regularizer,
                            .name = name});
}

Tensor dense(const Tensor &x, int64_t units, const DenseOptions &o) {
  Graph &g = x.graph();
  std::string layer = layerName(g, o.name, "dense");
  auto scope = g.name_scope(layer);
  if (x.rank() < 2)
    layerError("dense", layer, x, "input must have rank >= 2");
  int64_t in = x.shape().back();
  if (in == shape::kUnknownDim)
    layerError("dense", layer, x, "the last dimension must be known");
  if (units < 1)
    layerError("dense", layer, x,
               "units must be positive, got " + std::to_string(units));
  Variable kernel = g.get_variable("kernel", x.dtype(), {in, units},
                                   o.kernel_initializer, o.trainable);
  regularize(g, o.kernel_regularizer, "kernel", g.read_variable(kernel));
  constrain(o.kernel_constraint, kernel);
  Tensor y = matmul(x, kernel);
  if (o.use_bias) {
    Variable bias = g.get_variable("bias", x.dtype(), {units},
                                   o.bias_initializer, o.trainable);
    regularize(g, o.bias_regularizer, "bias", g.read_variable(bias));
    constrain(o.bias_constraint, bias);
    y = nn::bias_add(y, bias);
  }
  y = o.activation(y);
  if (o.activity_regularizer)
    losses::add_activity_regularization_loss(o.activity_regularizer, y);
  return y;
}

namespace {
/// Whether `format` ("channels_last" / "channels_first") is channels-first.
bool channelsFirst(const char *kind, const std::string &layer, const Tensor &x,
                   const std::string &format) {
  if (format == "channels_last")
    return false;
  if (format != "channels_first")
    layerError(kind, layer, x,
               "data_format must be \"channels_last\" or \"channels_first\", "
               "got \"" +
                   format + "\"");
  return true;
}

/// tf.nn's data_format of a rank-`rank` input.
std::string nnFormat(int64_t rank, bool first) {
  static const char *last[] = {"NWC", "NHWC", "NDHWC"};
  static const char *firsts[] = {"NCW", "NCHW", "NCDHW"};
  return (first ? firsts : last)[rank - 3];
}

/// Checks a conv layer's input (rank `spatial` + 2, known channels) and
/// returns its channel count.
int64_t convInput(const char *kind, const std::string &layer, const Tensor &x,
                  size_t spatial, bool first) {
  int64_t rank = static_cast<int64_t>(spatial) + 2;
  if (x.rank() != rank)
    layerError(kind, layer, x,
               "input must be " + nnFormat(rank, first) + " (rank " +
                   std::to_string(rank) + ")");
  int64_t in = x.shape()[first ? 1 : spatial + 1];
  if (in == shape::kUnknownDim)
    layerError(kind, layer, x, "the channel dimension must be known");
  return in;
}

/// `v` has `n` positive values (what: "kernel_size", ...).
void windowArg(const char *kind, const std::string &layer, const Tensor &x,
               const char *what, const Dims &v, size_t n) {
  bool ok = v.size() == n;
  for (int64_t d : v)
    ok = ok && d >= 1;
  if (!ok)
    layerError(kind, layer, x,
               std::string(what) + " must be " + std::to_string(n) +
                   " positive values, got " + shape::toString(v));
}

void positiveArg(const char *kind, const std::string &layer, const Tensor &x,
                 const char *what, int64_t v) {
  if (v < 1)
    layerError(kind, layer, x,
               std::string(what) + " must be positive, got " +
                   std::to_string(v));
}

/// The bias [units] (if `use_bias`) added along the channel axis, then the
/// activation.
Tensor biasAndActivate(
    Graph &g, Tensor y, int64_t units, bool use_bias,
    const Initializer &bias_initializer, bool first,
    const Activation &activation, bool trainable = true,
    const std::function<Tensor(const Tensor &)> &bias_regularizer = nullptr,
    const Constraint &bias_constraint = nullptr) {
  if (use_bias) {
    Variable bias =
        g.get_variable("bias", y.dtype(), {units}, bias_initializer, trainable);
    regularize(g, bias_regularizer, "bias", g.read_variable(bias));
    constrain(bias_constraint, bias);
    if (first) {
      Dims shape(y.rank() - 1, 1);
      shape[0] = units;
      y = add(y, reshape(bias, shape), "BiasAdd");
    } else {
      y = nn::bias_add(y, bias);
    }
  }
  return activation(y);
}

/// Keras's deconv_output_length.
int64_t deconvOutputLength(int64_t in, int64_t kernel, bool same,
                           std::optional<int64_t> outputPadding, int64_t stride,
                           int64_t dilation) {
  kernel = kernel + (kernel - 1) * (dilation - 1);
  if (!outputPadding)
    return same ? in * stride
                : in * stride + std::max<int64_t>(kernel - stride, 0);
  int64_t pad = same ? kernel / 2 : 0;
  return (in - 1) * stride + kernel - 2 * pad + *outputPadding;
}
} // namespace

Tensor conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
              const Dims &strides, const std::string &padding,
              Activation activation, bool use_bias,
              const Initializer &kernel_initializer,
              const Initializer &bias_initializer, const Dims &dilation_rate,
              const std::string &name, const std::string &data_format) {
  return conv2d(x, filters, kernel_size,
                Conv2DOptions{.strides = strides,
                              .padding = padding,
                              .dilation_rate = dilation_rate,
                              .activation = std::move(activation),
                              .use_bias = use_bias,
                              .kernel_initializer = kernel_initializer,
                              .bias_initializer = bias_initializer,
                              .name = name,
                              .data_format = data_format});
}

Tensor conv2d(const Tensor &x, int64_t filters, const Dims &kernel_size,
              const Conv2DOptions &o) {
  Graph &g = x.graph();
  std::string layer = layerName(g, o.name, "conv2d");
  auto scope = g.name_scope(layer);
  bool first = channelsFirst("conv2d", layer, x, o.data_format);
  int64_t in = convInput("conv2d", layer, x, 2, first);
  if (kernel_size.size() != 2 || kernel_size[0] < 1 || kernel_size[1] < 1)
    layerError("conv2d", layer, x,
               "kernel_size must be 2 positive values, got " +
                   shape::toString(kernel_size));
  if (filters < 1)
    layerError("conv2d", layer, x,
               "filters must be positive, got " + std::to_string(filters));
  Variable kernel = g.get_variable(
      "kernel", x.dtype(), {kernel_size[0], kernel_size[1], in, filters},
      o.kernel_initializer, o.trainable);
  regularize(g, o.kernel_regularizer, "kernel", g.read_variable(kernel));
  constrain(o.kernel_constraint, kernel);
  Tensor y = nn::conv2d(x, kernel, o.strides, upper(o.padding),
                        nnFormat(4, first), o.dilation_rate);
  y = biasAndActivate(g, y, filters, o.use_bias, o.bias_initializer, first,
                      o.activation, o.trainable, o.bias_regularizer,
                      o.bias_constraint);
  if (o.activity_regularizer)
    losses::add_activity_regularization_loss(o.activity_regularizer, y);
  return y;
}

Tensor conv1d(const Tensor &x, int64_t filters, int64_t kernel_size,
              int64_t strides, const std::string &padding,
              Activation activation, bool use_bias,
              const Initializer &kernel_initializer,
              const Initializer &bias_initializer, int64_t dilation_rate,
              const std::string &name, const std::string &data_format) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "conv1d");
  auto scope = g.name_scope(layer);
  bool first = channelsFirst("conv1d", layer, x, data_format);
  int64_t in = convInput("conv1d", layer, x, 1, first);
  positiveArg("conv1d", layer, x, "kernel_size", kernel_size);
  positiveArg("conv1d", layer, x, "filters", filters);
  Variable kernel = g.get_variable(
      "kernel", x.dtype(), {kernel_size, in, filters}, kernel_initializer);
  Tensor y = nn::conv1d(x, kernel, strides, upper(padding), nnFormat(3, first),
                        dilation_rate);
  return biasAndActivate(g, y, filters, use_bias, bias_initializer, first,
                         activation);
}

Tensor conv3d(const Tensor &x, int64_t filters, const Dims &kernel_size,
              const Dims &strides, const std::string &padding,
              Activation activation, bool use_bias,
              const Initializer &kernel_initializer,
              const Initializer &bias_initializer, const Dims &dilation_rate,
              const std::string &name, const std::string &data_format) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, "conv3d");
  auto scope = g.name_scope(layer);
  bool first = channelsFirst("conv3d", layer, x, data_format);
  int64_t in = convInput("conv3d", layer, x, 3, first);
  windowArg("conv3d", layer, x, "kernel_size", kernel_size, 3);
  positiveArg("conv3d", layer, x, "filters", filters);
  Variable kernel = g.get_variable(
      "kernel", x.dtype(),
      {kernel_size[0], kernel_size[1], kernel_size[2], in, filters},
      kernel_initializer);
  Tensor y = nn::conv3d(x, kernel, strides, upper(padding), nnFormat(5, first),
                        dilation_rate);
  return biasAndActivate(g, y, filters, use_bias, bias_initializer, first,
                         activation);
}

namespace {
/// conv2d_transpose / conv3d_transpose over `spatial` (2 or 3) dimensions.
Tensor transposeLayer(const char *kind, size_t spatial, const Tensor &x,
                      int64_t filters, const Dims &kernel_size,
                      const Dims &strides, const std::string &padding,
                      const Activation &activation, bool use_bias,
                      const Initializer &kernel_initializer,
                      const Initializer &bias_initializer,
                      const Dims &output_padding, const Dims &dilation_rate,
                      const std::string &name, const std::string &data_format) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, kind);
  auto scope = g.name_scope(layer);
  bool first = channelsFirst(kind, layer, x, data_format);
  int64_t in = convInput(kind, layer, x, spatial, first);
  windowArg(kind, layer, x, "kernel_size", kernel_size, spatial);
  windowArg(kind, layer, x, "strides", strides, spatial);
  windowArg(kind, layer, x, "dilation_rate", dilation_rate, spatial);
  positiveArg(kind, layer, x, "filters", filters);
  std::string pad = upper(padding);
  if (pad != "SAME" && pad != "VALID")
    layerError(kind, layer, x,
               "padding must be \"valid\" or \"same\", got \"" + padding +
                   "\"");
  if (!output_padding.empty()) {
    bool ok = output_padding.size() == spatial;
    for (size_t i = 0; ok && i < spatial; ++i)
      ok = output_padding[i] >= 0 && output_padding[i] < strides[i];
    if (!ok)
      layerError(kind, layer, x,
                 "output_padding must be " + std::to_string(spatial) +
                     " values each below its stride " +
                     shape::toString(strides) + ", got " +
                     shape::toString(output_padding));
  }
  Dims kernelShape = kernel_size, outputShape = {-1};
  kernelShape.insert(kernelShape.end(), {filters, in});
  if (first)
    outputShape.push_back(filters);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t length = x.shape()[first ? 2 + i : 1 + i];
    if (length == shape::kUnknownDim)
      layerError(kind, layer, x, "the spatial dimensions must be known");
    outputShape.push_back(deconvOutputLength(
        length, kernel_size[i], pad == "SAME",
        output_padding.empty() ? std::nullopt
                               : std::optional<int64_t>(output_padding[i]),
        strides[i], dilation_rate[i]));
  }
  if (!first)
    outputShape.push_back(filters);
  Variable kernel =
      g.get_variable("kernel", x.dtype(), kernelShape, kernel_initializer);
  std::string format = nnFormat(x.rank(), first);
  Tensor y = spatial == 2
                 ? nn::conv2d_transpose(x, kernel, outputShape, strides, pad,
                                        format, dilation_rate)
                 : nn::conv3d_transpose(x, kernel, outputShape, strides, pad,
                                        format, dilation_rate);
  return biasAndActivate(g, y, filters, use_bias, bias_initializer, first,
                         activation);
}
} // namespace

Tensor conv2d_transpose(const Tensor &x, int64_t filters,
                        const Dims &kernel_size, const Dims &strides,
                        const std::string &padding, Activation activation,
                        bool use_bias, const Initializer &kernel_initializer,
                        const Initializer &bias_initializer,
                        const Dims &output_padding, const Dims &dilation_rate,
                        const std::string &name,
                        const std::string &data_format) {
  return transposeLayer("conv2d_transpose", 2, x, filters, kernel_size, strides,
                        padding, activation, use_bias, kernel_initializer,
                        bias_initializer, output_padding, dilation_rate, name,
                        data_format);
}

Tensor conv3d_transpose(const Tensor &x, int64_t filters,
                        const Dims &kernel_size, const Dims &strides,
                        const std::string &padding, Activation activation,
                        bool use_bias, const Initializer &kernel_initializer,
                        const Initializer &bias_initializer,
                        const Dims &output_padding, const Dims &dilation_rate,
                        const std::string &name,
                        const std::string &data_format) {
  return transposeLayer("conv3d_transpose", 3, x, filters, kernel_size, strides,
                        padding, activation, use_bias, kernel_initializer,
                        bias_initializer, output_padding, dilation_rate, name,
                        data_format);
}

Tensor depthwise_conv2d(const Tensor &x, const Dims &kernel_size,
                        const Dims &strides, const std::string &padding,
                        int64_t depth_multiplier, Activation activation,
                        bool use_bias, const Initializer &depthwise_initializer,
                        const Initializer &bias_initializer,
                        const Dims &dilation_rate, const std::string &name,
                        const std::string &data_format) {
  const char *kind = "depthwise_conv2d";
  Graph &g = x.graph();
  std::string layer = layerName(g, name, kind);
  auto scope = g.name_scope(layer);
  bool first = channelsFirst(kind, layer, x, data_format);
  int64_t in = convInput(kind, layer, x, 2, first);
  windowArg(kind, layer, x, "kernel_size", kernel_size, 2);
  positiveArg(kind, layer, x, "depth_multiplier", depth_multiplier);
  Variable kernel =
      g.get_variable("depthwise_kernel", x.dtype(),
                     {kernel_size[0], kernel_size[1], in, depth_multiplier},
                     depthwise_initializer);
  Tensor y = nn::depthwise_conv2d(x, kernel, strides, upper(padding),
                                  nnFormat(4, first), dilation_rate);
  return biasAndActivate(g, y, in * depth_multiplier, use_bias,
                         bias_initializer, first, activation);
}

namespace {
/// separable_conv1d / separable_conv2d over `spatial` (1 or 2) dimensions.
Tensor separable(const char *kind, const Tensor &x, int64_t filters,
                 Dims kernel_size, Dims strides, const std::string &padding,
                 int64_t depth_multiplier, const Activation &activation,
                 bool use_bias, const Initializer &depthwise_initializer,
                 const Initializer &pointwise_initializer,
                 const Initializer &bias_initializer, Dims dilation_rate,
                 const std::string &name, const std::string &data_format,
                 size_t spatial) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, kind);
  auto scope = g.name_scope(layer);
  bool first = channelsFirst(kind, layer, x, data_format);
  int64_t in = convInput(kind, layer, x, spatial, first);
  windowArg(kind, layer, x, "kernel_size", kernel_size, spatial);
  windowArg(kind, layer, x, "strides", strides, spatial);
  windowArg(kind, layer, x, "dilation_rate", dilation_rate, spatial);
  positiveArg(kind, layer, x, "filters", filters);
  positiveArg(kind, layer, x, "depth_multiplier", depth_multiplier);
  Dims depthwiseShape = kernel_size, pointwiseShape(spatial, 1);
  depthwiseShape.insert(depthwiseShape.end(), {in, depth_multiplier});
  pointwiseShape.insert(pointwiseShape.end(), {in * depth_multiplier, filters});
  Tensor depthwise = g.read_variable(g.get_variable(
      "depthwise_kernel", x.dtype(), depthwiseShape, depthwise_initializer));
  Tensor pointwise = g.read_variable(g.get_variable(
      "pointwise_kernel", x.dtype(), pointwiseShape, pointwise_initializer));
  Tensor input = x;
  if (spatial == 1) {
    // Keras's SeparableConv1D: the 2-D op on an inserted H axis.
    input = expand_dims(x, first ? 2 : 1);
    depthwise = expand_dims(depthwise, 0);
    pointwise = expand_dims(pointwise, 0);
    kernel_size.insert(kernel_size.begin(), 1);
    strides.insert(strides.begin(), 1);
    dilation_rate.insert(dilation_rate.begin(), 1);
  }
  Tensor y =
      nn::separable_conv2d(input, depthwise, pointwise, strides, upper(padding),
                           nnFormat(4, first), dilation_rate);
  if (spatial == 1)
    y = squeeze(y, Dims{first ? 2 : 1});
  return biasAndActivate(g, y, filters, use_bias, bias_initializer, first,
                         activation);
}
} // namespace

Tensor separable_conv1d(const Tensor &x, int64_t filters, int64_t kernel_size,
                        int64_t strides, const std::string &padding,
                        int64_t depth_multiplier, Activation activation,
                        bool use_bias, const Initializer &depthwise_initializer,
                        const Initializer &pointwise_initializer,
                        const Initializer &bias_initializer,
                        int64_t dilation_rate, const std::string &name,
                        const std::string &data_format) {
  return separable("separable_conv1d", x, filters, {kernel_size}, {strides},
                   padding, depth_multiplier, activation, use_bias,
                   depthwise_initializer, pointwise_initializer,
                   bias_initializer, {dilation_rate}, name, data_format, 1);
}

Tensor separable_conv2d(const Tensor &x, int64_t filters,
                        const Dims &kernel_size, const Dims &strides,
                        const std::string &padding, int64_t depth_multiplier,
                        Activation activation, bool use_bias,
                        const Initializer &depthwise_initializer,
                        const Initializer &pointwise_initializer,
                        const Initializer &bias_initializer,
                        const Dims &dilation_rate, const std::string &name,
                        const std::string &data_format) {
  return separable("separable_conv2d", x, filters, kernel_size, strides,
                   padding, depth_multiplier, activation, use_bias,
                   depthwise_initializer, pointwise_initializer,
                   bias_initializer, dilation_rate, name, data_format, 2);
}

namespace {
/// A pooling layer of `spatial` dimensions (rank spatial + 2).
template <typename F>
Tensor poolLayer(const char *kind, const Tensor &x, const std::string &format,
                 size_t spatial, const std::string &name, F pool) {
  Graph &g = x.graph();
  std::string layer = layerName(g, name, kind);
  auto scope = g.name_scope(layer);
  bool first = channelsFirst(kind, layer, x, format);
  if (x.rank() != static_cast<int64_t>(spatial) + 2)
    layerError(kind, layer, x,
               "input must have rank " + std::to_string(spatial + 2));
  return pool(nnFormat(x.rank(), first));
}
} // namespace

Tensor max_pooling1d(const Tensor &x, int64_t pool_size, int64_t strides,
                     const std::string &padding, const std::string &data_format,
                     const std::string &name) {
  return poolLayer(
      "max_pooling1d", x, data_format, 1, name, [&](const std::string &f) {
        return nn::max_pool1d(x, pool_size, strides, upper(padding), f);
      });
}

Tensor average_pooling1d(const Tensor &x, int64_t pool_size, int64_t strides,
                         const std::string &padding,
                         const std::string &data_format,
                         const std::string &name) {
  return poolLayer(
      "average_pooling1d", x, data_format, 1, name, [&](const std::string &f) {
        return nn::avg_pool1d(x, pool_size, strides, upper(padding), f);
      });
}

Tensor max_pooling2d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding,
                     const std::string &data_format, const std::string &name) {
  return poolLayer(
      "max_pooling2d", x, data_format, 2, name, [&](const std::string &f) {
        return nn::max_pool(x, pool_size, strides, upper(padding), f);
      });
}

Tensor average_pooling2d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides, const std::string &padding,
                         const std::string &data_format,
                         const std::string &name) {
  return poolLayer(
      "average_pooling2d", x, data_format, 2, name, [&](const std::string &f) {
        return nn::avg_pool(x, pool_size, strides, upper(padding), f);
      });
}

Tensor max_pooling3d(const Tensor &x, const Dims &pool_size,
                     const Dims &strides, const std::string &padding,
                     const std::string &data_format, const std::string &name) {
  return poolLayer(
      "max_pooling3d", x, data_format, 3, name, [&](const std::string &f) {
        return nn::max_pool3d(x, pool_size, strides, upper(padding), f);
      });
}

Tensor average_pooling3d(const Tensor &x, const Dims &pool_size,
                         const Dims &strides, const std::string &padding,
                         const std::string &data_format,
                         const std::string &name) {
  return poolLayer(
      "average_pooling3d", x, data_format, 3, name, [&](const std::string &f) {
        return nn::avg_pool3d(x, pool_size, strides, upper(padding), f);
      });
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

Tensor dropout(const Tensor &x, double rate, const Dims &noise_shape,
               bool training, std::optional<int64_t> seed,
               const std::string &name) {
  Graph &g = x.graph();
  auto scope = g.name_scope(layerName(g, name, "dropout"));
  if (!training)
    return x;
  return nn::dropout(x, rate, noise_shape, seed);
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
