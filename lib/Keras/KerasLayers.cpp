//===- KerasLayers.cpp - The Keras layer classes as estc graph ops -------===//
//
// One function per Keras layer class, with tf.keras 2.15's semantics (and
// Keras 3's where its config differs), variables named as tf.keras names
// them. Each runs in the layer's name scope (unless it calls a lib/Graph
// layer function that names its scope by the layer itself).
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasLayers.h"

#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Shape/ShapeFunctions.h"

#include <cmath>

namespace estc {
namespace keras {
namespace kerasgraph {

namespace rj = rapidjson;

namespace {

using Outs = std::vector<KTensor>;

/// The mask a layer that supports masking passes on: its input's.
Outs same(const Tensor &y, const KTensor &x) { return {KTensor{y, x.mask}}; }

std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// A config's list as Keras writes it: "[3, -1]".
std::string listOf(const Dims &d) {
  std::string out = "[";
  for (size_t i = 0; i < d.size(); ++i)
    out += (i ? ", " : "") + std::to_string(d[i]);
  return out + "]";
}

/// x's dimension `d`, which must be known.
int64_t knownDim(Builder &b, const Layer &l, const Tensor &x, int64_t d) {
  Dims s = x.shape();
  int64_t i = d < 0 ? d + static_cast<int64_t>(s.size()) : d;
  if (i < 0 || i >= static_cast<int64_t>(s.size()))
    b.fail(l, "the input " + shape::toString(s) + " has no dimension " +
                  std::to_string(d));
  if (s[i] < 0)
    b.fail(l, "dimension " + std::to_string(d) + " of the input " +
                  shape::toString(s) + " must be known");
  return s[i];
}

void requireRank(Builder &b, const Layer &l, const Tensor &x, int64_t rank) {
  if (x.rank() != rank)
    b.fail(l, "the input must have rank " + std::to_string(rank) + ", got " +
                  shape::toString(x.shape()));
}

void channelsLast(Builder &b, const Layer &l) {
  std::string f = b.getString(l, "data_format", "channels_last");
  if (f != "channels_last")
    b.fail(l, "data_format '" + f + "' is not supported (channels_last only)");
}

Tensor reluLike(const Tensor &x, double negativeSlope,
                std::optional<double> maxValue, double threshold) {
  // keras.backend.relu (tf.keras 2.15).
  if (negativeSlope != 0.0 && !maxValue && threshold == 0.0)
    return nn::leaky_relu(x, negativeSlope);
  Tensor negativePart;
  if (negativeSlope != 0.0)
    negativePart = threshold == 0.0 ? nn::relu(negative(x))
                                    : nn::relu(add(negative(x), threshold));
  bool clipMax = maxValue.has_value();
  Tensor y;
  if (threshold != 0.0) {
    y = multiply(x, cast(greater(x, threshold), x.dtype()));
  } else if (maxValue && *maxValue == 6.0) {
    y = nn::relu6(x);
    clipMax = false;
  } else {
    y = nn::relu(x);
  }
  if (clipMax)
    y = clip_by_value(y, 0.0, *maxValue);
  if (negativeSlope != 0.0)
    y = subtract(y, multiply(negativePart, negativeSlope));
  return y;
}

// --- Core layers -------------------------------------------------------------

Outs denseLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  int64_t units = b.getInt(l, "units", 0);
  if (units < 1)
    b.fail(l, "units must be positive");
  if (x.t.rank() < 2)
    b.fail(l, "the input must have rank >= 2, got " +
                  shape::toString(x.t.shape()));
  int64_t in = knownDim(b, l, x.t, -1);
  Variable kernel = b.var(
      l, "kernel", {in, units},
      b.initializer(l, "kernel_initializer", glorot_uniform_initializer()));
  Tensor y = matmul(x.t, kernel);
  if (b.getBool(l, "use_bias", true))
    y = nn::bias_add(
        y, b.var(l, "bias", {units},
                 b.initializer(l, "bias_initializer", zeros_initializer())));
  return same(b.activation(l)(y), x);
}

Outs activationLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  return same(b.activation(l)(x.t), x);
}

Outs dropoutLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  double rate = b.getDouble(l, "rate", 0.0);
  if (rate < 0.0 || rate >= 1.0)
    b.fail(l, "rate must be in [0, 1)");
  std::optional<int64_t> seed;
  if (b.has(l, "seed"))
    seed = b.getInt(l, "seed", 0);
  if (!b.options.training || rate == 0.0)
    return same(x.t, x);
  Dims noise;
  if (const rj::Value *ns = b.field(l, "noise_shape")) {
    if (!ns->IsArray() || ns->Size() != x.t.rank())
      b.fail(l, "noise_shape must have the input's rank");
    for (const auto &d : ns->GetArray())
      noise.push_back(d.IsInt64() ? d.GetInt64() : -1);
  }
  // SpatialDropout1D/2D/3D: one decision per sample and channel.
  if (l.cls.rfind("SpatialDropout", 0) == 0) {
    noise.assign(x.t.rank(), 1);
    noise.front() = -1;
    noise.back() = -1;
  }
  if (noise.empty())
    return same(nn::dropout(x.t, rate, seed), x);
  return same(nn::dropout(x.t, rate, noise, seed), x);
}

Outs flattenLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  Dims s = x.t.shape();
  if (s.size() < 2)
    return {KTensor{reshape(x.t, {-1, 1}), Tensor()}};
  int64_t n = 1;
  for (size_t d = 1; d < s.size(); ++d) {
    if (s[d] < 0)
      b.fail(l, "the input's non-batch dimensions must be known, got " +
                    shape::toString(s));
    n *= s[d];
  }
  return {KTensor{reshape(x.t, {-1, n}), Tensor()}};
}

/// BatchNormalization (tf.keras 2.15): inference from the moving
/// statistics, or (training and trainable) from the batch's with the
/// moving-average updates in "update_ops" (the fused kernel's unbiased
/// variance for rank 4 and 5, as Keras's fused path).
Outs batchNormLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Dims axes = b.getIntList(l, "axis", {-1});
  int64_t rank = x.t.rank();
  if (axes.size() != 1)
    b.fail(l, "axis must be one axis");
  int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (a < 0 || a >= rank)
    b.fail(l, "axis " + std::to_string(axes[0]) + " is out of range for " +
                  shape::toString(x.t.shape()));
  if (b.has(l, "virtual_batch_size"))
    b.fail(l, "virtual_batch_size is not supported");
  if (b.getBool(l, "renorm", false))
    b.fail(l, "renorm is not supported");
  if (b.getBool(l, "synchronized", false))
    b.fail(l, "synchronized is not supported");
  int64_t ch = knownDim(b, l, x.t, a);
  double momentum = b.getDouble(l, "momentum", 0.99);
  double eps = b.getDouble(l, "epsilon", 1e-3);
  bool center = b.getBool(l, "center", true);
  bool scale = b.getBool(l, "scale", true);
  Graph &g = b.g;
  Variable gamma, beta;
  if (scale)
    gamma = b.var(l, "gamma", {ch},
                  b.initializer(l, "gamma_initializer", ones_initializer()));
  if (center)
    beta = b.var(l, "beta", {ch},
                 b.initializer(l, "beta_initializer", zeros_initializer()));
  Variable movingMean = b.var(
      l, "moving_mean", {ch},
      b.initializer(l, "moving_mean_initializer", zeros_initializer()), false);
  Variable movingVariance =
      b.var(l, "moving_variance", {ch},
            b.initializer(l, "moving_variance_initializer", ones_initializer()),
            false);
  auto along = [&](const Tensor &v) {
    if (a == rank - 1)
      return v;
    Dims s(static_cast<size_t>(rank - a), 1);
    s[0] = ch;
    return reshape(v, s);
  };
  auto update = [&](const Variable &moving, const Tensor &value) {
    auto s = g.name_scope(g.unique_layer_name("AssignMovingAvg"));
    Tensor current = moving.read();
    Tensor delta = multiply(subtract(current, value), 1.0 - momentum);
    g.add_to_collection("update_ops", assign(moving, subtract(current, delta)));
  };
  bool training = b.options.training && l.trainable;
  bool fused = (rank == 4 || rank == 5) && (a == 1 || a == rank - 1);
  if (training && fused) {
    std::vector<double> ones(ch, 1.0), zeros(ch, 0.0);
    Tensor gt = scale ? gamma.read() : g.constant(ones, {ch});
    Tensor bt = center ? beta.read() : g.constant(zeros, {ch});
    const char *format = a == 1 ? (rank == 4 ? "NCHW" : "NCDHW")
                                : (rank == 4 ? "NHWC" : "NDHWC");
    nn::FusedBatchNorm bn =
        nn::fused_batch_norm(x.t, gt, bt, eps, format, "FusedBatchNormV3");
    update(movingMean, bn.batch_mean);
    update(movingVariance, bn.batch_variance);
    return same(bn.y, x);
  }
  Tensor mean, variance;
  if (training) {
    Dims reduced;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a)
        reduced.push_back(d);
    auto s = g.name_scope("moments");
    Tensor m = reduce_mean(x.t, reduced, true, "mean");
    Tensor v = reduce_mean(square(subtract(x.t, stop_gradient(m))), reduced,
                           true, "variance");
    mean = reshape(m, {ch});
    variance = reshape(v, {ch});
  } else {
    mean = movingMean.read();
    variance = movingVariance.read();
  }
  Tensor inv = rsqrt(add(variance, eps));
  if (scale)
    inv = multiply(inv, gamma.read());
  Tensor shift = multiply(mean, inv);
  shift = center ? subtract(beta.read(), shift) : negative(shift);
  Tensor y = add(multiply(x.t, along(inv)), along(shift));
  if (training) {
    update(movingMean, mean);
    update(movingVariance, variance);
  }
  return same(y, x);
}

// --- Merging layers ----------------------------------------------------------

std::vector<Tensor> mergeInputs(Builder &b, const Layer &l, const Call &c,
                                size_t minCount = 2) {
  if (c.args.size() < minCount)
    b.fail(l, "the layer takes a list of at least " + std::to_string(minCount) +
                  " inputs, got " + std::to_string(c.args.size()));
  std::vector<Tensor> xs;
  for (const KTensor &k : c.args)
    xs.push_back(k.t);
  return xs;
}

/// Keras's Merge.compute_mask: the inputs' masks and-ed (none: no mask).
Tensor mergedMask(const Call &c) {
  Tensor m;
  for (const KTensor &k : c.args) {
    if (!k.mask.valid())
      continue;
    m = m.valid() ? logical_and(m, k.mask) : k.mask;
  }
  return m;
}

template <typename F>
Outs elementwiseMerge(Builder &b, const Layer &l, const Call &c, F combine) {
  std::vector<Tensor> xs = mergeInputs(b, l, c);
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i)
    y = combine(y, xs[i]);
  return {KTensor{y, mergedMask(c)}};
}

Outs addLayer(Builder &b, const Layer &l, const Call &c) {
  return elementwiseMerge(
      b, l, c, [](const Tensor &x, const Tensor &y) { return add(x, y); });
}
Outs multiplyLayer(Builder &b, const Layer &l, const Call &c) {
  return elementwiseMerge(
      b, l, c, [](const Tensor &x, const Tensor &y) { return multiply(x, y); });
}
Outs maximumLayer(Builder &b, const Layer &l, const Call &c) {
  return elementwiseMerge(
      b, l, c, [](const Tensor &x, const Tensor &y) { return maximum(x, y); });
}
Outs minimumLayer(Builder &b, const Layer &l, const Call &c) {
  return elementwiseMerge(
      b, l, c, [](const Tensor &x, const Tensor &y) { return minimum(x, y); });
}
Outs averageLayer(Builder &b, const Layer &l, const Call &c) {
  Outs sum = addLayer(b, l, c);
  sum[0].t = divide(sum[0].t, static_cast<double>(c.args.size()));
  return sum;
}
Outs subtractLayer(Builder &b, const Layer &l, const Call &c) {
  if (c.args.size() != 2)
    b.fail(l, "the layer takes exactly 2 inputs, got " +
                  std::to_string(c.args.size()));
  return {KTensor{subtract(c.args[0].t, c.args[1].t), mergedMask(c)}};
}

Outs concatenateLayer(Builder &b, const Layer &l, const Call &c) {
  std::vector<Tensor> xs = mergeInputs(b, l, c, 1);
  int64_t axis = b.getInt(l, "axis", -1);
  int64_t rank = xs[0].rank();
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    b.fail(l, "axis " + std::to_string(axis) + " is out of range");
  Tensor y = concat(xs, a);
  // Keras's masks: along the features (the last axis) the inputs' masks
  // and-ed; along another axis the masks concatenated when every input
  // has one (else none).
  Tensor mask;
  bool all = true;
  for (const KTensor &k : c.args)
    all = all && k.mask.valid();
  if (a == rank - 1) {
    mask = mergedMask(c);
  } else if (all) {
    std::vector<Tensor> masks;
    for (const KTensor &k : c.args)
      masks.push_back(k.mask);
    if (masks[0].rank() > a)
      mask = concat(masks, a);
  }
  return {KTensor{y, mask}};
}

Outs dotLayer(Builder &b, const Layer &l, const Call &c) {
  if (c.args.size() != 2)
    b.fail(l, "the layer takes exactly 2 inputs");
  Tensor x = c.args[0].t, y = c.args[1].t;
  Dims axes = b.getIntList(l, "axes", {});
  if (axes.size() == 1)
    axes.push_back(axes[0]);
  if (axes.size() != 2)
    b.fail(l, "axes must be an integer or a pair");
  int64_t rx = x.rank(), ry = y.rank();
  int64_t ax = axes[0] < 0 ? axes[0] + rx : axes[0];
  int64_t ay = axes[1] < 0 ? axes[1] + ry : axes[1];
  if (b.getBool(l, "normalize", false)) {
    x = nn::l2_normalize(x, Dims{ax});
    y = nn::l2_normalize(y, Dims{ay});
  }
  if (rx == 2 && ry == 2) {
    if (ax != 1 || ay != 1)
      b.fail(l, "axes of rank-2 inputs must be 1");
    return {KTensor{reduce_sum(multiply(x, y), Dims{1}, true), Tensor()}};
  }
  if (rx == 3 && ry == 3 && ax >= 1 && ay >= 1) {
    // keras.backend.batch_dot: x's contracted axis last, y's first.
    Tensor xt = ax == 2 ? x : transpose(x, {0, 2, 1});
    Tensor yt = ay == 1 ? y : transpose(y, {0, 2, 1});
    return {KTensor{matmul(xt, yt), Tensor()}};
  }
  b.fail(l, "inputs of ranks " + std::to_string(rx) + " and " +
                std::to_string(ry) + " with axes (" + std::to_string(axes[0]) +
                ", " + std::to_string(axes[1]) +
                ") are not supported (rank 2 or 3, not the batch axis)");
}

// --- Activation layers -------------------------------------------------------

Outs reluLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  std::optional<double> maxValue;
  if (b.has(l, "max_value"))
    maxValue = b.getDouble(l, "max_value", 0.0);
  double slope = b.getDouble(l, "negative_slope", 0.0);
  double threshold = b.getDouble(l, "threshold", 0.0);
  if (maxValue && *maxValue < 0)
    b.fail(l, "max_value must be >= 0");
  return same(reluLike(x.t, slope, maxValue, threshold), x);
}

Outs leakyReluLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  // tf.keras 2.15: alpha (0.3); Keras 3: negative_slope (0.3).
  double alpha = b.has(l, "alpha") ? b.getDouble(l, "alpha", 0.3)
                                   : b.getDouble(l, "negative_slope", 0.3);
  return same(nn::leaky_relu(x.t, alpha), x);
}

Outs softmaxLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Dims axes = b.getIntList(l, "axis", {-1});
  if (axes.size() != 1)
    b.fail(l, "axis must be one axis");
  Tensor logits = x.t;
  if (x.mask.valid() && x.mask.rank() == x.t.rank()) {
    // Keras's Softmax(mask): masked-out logits get -1e9 added.
    Tensor off = subtract(1.0, cast(x.mask, x.t.dtype()));
    logits = add(logits, multiply(off, -1e9));
  }
  return {KTensor{nn::softmax(logits, axes[0]), x.mask}};
}

Outs preluLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Dims s = x.t.shape();
  Dims alphaShape(s.begin() + 1, s.end());
  for (int64_t a : b.getIntList(l, "shared_axes", {})) {
    if (a < 1 || a >= static_cast<int64_t>(s.size()))
      b.fail(l, "shared_axes " + std::to_string(a) + " is out of range");
    alphaShape[a - 1] = 1;
  }
  for (int64_t d : alphaShape)
    if (d < 0)
      b.fail(l, "the input's non-batch dimensions must be known, got " +
                    shape::toString(s));
  Variable alpha =
      b.var(l, "alpha", alphaShape,
            b.initializer(l, "alpha_initializer", zeros_initializer()));
  Tensor pos = nn::relu(x.t);
  Tensor neg = multiply(negative(alpha.read()), nn::relu(negative(x.t)));
  return same(add(pos, neg), x);
}

// --- Convolutions ------------------------------------------------------------

struct ConvArgs {
  int64_t filters = 0;
  Dims kernel, strides, dilation;
  std::string padding;
};

ConvArgs convArgs(Builder &b, const Layer &l, size_t n, bool hasFilters) {
  channelsLast(b, l);
  ConvArgs a;
  if (hasFilters) {
    a.filters = b.getInt(l, "filters", 0);
    if (a.filters < 1)
      b.fail(l, "filters must be positive");
  }
  a.kernel = b.getInts(l, "kernel_size", n, {});
  if (a.kernel.size() != n)
    b.fail(l, "kernel_size is missing");
  a.strides = b.getInts(l, "strides", n, Dims(n, 1));
  a.dilation = b.getInts(l, "dilation_rate", n, Dims(n, 1));
  a.padding = b.getString(l, "padding", "valid");
  for (int64_t k : a.kernel)
    if (k < 1)
      b.fail(l, "kernel_size must be positive");
  bool strided = false, dilated = false;
  for (size_t i = 0; i < n; ++i) {
    if (a.strides[i] < 1 || a.dilation[i] < 1)
      b.fail(l, "strides and dilation_rate must be positive");
    strided = strided || a.strides[i] > 1;
    dilated = dilated || a.dilation[i] > 1;
  }
  if (strided && dilated)
    b.fail(l, "dilation_rate > 1 with strides > 1 is not supported");
  if (a.padding != "valid" && a.padding != "same" &&
      !(a.padding == "causal" && n == 1))
    b.fail(l, "padding '" + a.padding + "' is not supported");
  if (b.getInt(l, "groups", 1) != 1)
    b.fail(l, "groups other than 1 are not supported");
  return a;
}

/// Conv1D's causal padding: (kernel - 1) * dilation zeros on the left.
Tensor causalPad(const Tensor &x, const ConvArgs &a) {
  int64_t left = (a.kernel[0] - 1) * a.dilation[0];
  return pad(x, {0, 0, left, 0, 0, 0});
}

Tensor biasAndActivation(Builder &b, const Layer &l, Tensor y,
                         int64_t filters) {
  if (b.getBool(l, "use_bias", true))
    y = nn::bias_add(
        y, b.var(l, "bias", {filters},
                 b.initializer(l, "bias_initializer", zeros_initializer())));
  return b.activation(l)(y);
}

Outs convLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  ConvArgs a = convArgs(b, l, n, true);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  int64_t in = knownDim(b, l, x.t, -1);
  Dims kshape = a.kernel;
  kshape.push_back(in);
  kshape.push_back(a.filters);
  Variable kernel = b.var(
      l, "kernel", kshape,
      b.initializer(l, "kernel_initializer", glorot_uniform_initializer()));
  Tensor y;
  std::string padding = upper(a.padding);
  if (n == 1) {
    Tensor xin = x.t;
    if (a.padding == "causal") {
      xin = causalPad(x.t, a);
      padding = "VALID";
    }
    y = nn::conv1d(xin, kernel, a.strides[0], padding, "NWC", a.dilation[0]);
  } else if (n == 2) {
    y = nn::conv2d(x.t, kernel, a.strides, padding, "NHWC", a.dilation);
  } else {
    y = nn::conv3d(x.t, kernel, a.strides, padding, "NDHWC", a.dilation);
  }
  return {KTensor{biasAndActivation(b, l, y, a.filters), Tensor()}};
}

Outs depthwiseConv2DLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  ConvArgs a = convArgs(b, l, 2, false);
  requireRank(b, l, x.t, 4);
  int64_t in = knownDim(b, l, x.t, -1);
  int64_t mult = b.getInt(l, "depth_multiplier", 1);
  if (mult < 1)
    b.fail(l, "depth_multiplier must be positive");
  // tf.keras's depthwise_kernel; a file Keras 3 wrote names it kernel.
  bool keras3Name = b.model.find_weight(l.name + "/kernel:0") != nullptr;
  Variable kernel = b.var(
      l, keras3Name ? "kernel" : "depthwise_kernel",
      {a.kernel[0], a.kernel[1], in, mult},
      b.initializer(l, "depthwise_initializer", glorot_uniform_initializer()));
  Tensor y = nn::depthwise_conv2d(x.t, kernel, a.strides, upper(a.padding),
                                  "NHWC", a.dilation);
  return {KTensor{biasAndActivation(b, l, y, in * mult), Tensor()}};
}

Outs separableConvLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  ConvArgs a = convArgs(b, l, n, true);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  int64_t in = knownDim(b, l, x.t, -1);
  int64_t mult = b.getInt(l, "depth_multiplier", 1);
  if (mult < 1)
    b.fail(l, "depth_multiplier must be positive");
  Dims dshape = a.kernel, pshape(n, 1);
  dshape.push_back(in);
  dshape.push_back(mult);
  pshape.push_back(in * mult);
  pshape.push_back(a.filters);
  Variable depthwise = b.var(
      l, "depthwise_kernel", dshape,
      b.initializer(l, "depthwise_initializer", glorot_uniform_initializer()));
  Variable pointwise = b.var(
      l, "pointwise_kernel", pshape,
      b.initializer(l, "pointwise_initializer", glorot_uniform_initializer()));
  Tensor y;
  if (n == 2) {
    y = nn::separable_conv2d(x.t, depthwise, pointwise, a.strides,
                             upper(a.padding), "NHWC", a.dilation);
  } else {
    // Keras's SeparableConv1D: a SeparableConv2D over [B, 1, W, C].
    Tensor xin = x.t;
    std::string padding = upper(a.padding);
    if (a.padding == "causal") {
      xin = causalPad(x.t, a);
      padding = "VALID";
    }
    Tensor x4 = expand_dims(xin, 1);
    Tensor d4 = expand_dims(depthwise.read(), 0);
    Tensor p4 = expand_dims(pointwise.read(), 0);
    y = squeeze(nn::separable_conv2d(x4, d4, p4, {1, a.strides[0]}, padding,
                                     "NHWC", {1, a.dilation[0]}),
                Dims{1});
  }
  return {KTensor{biasAndActivation(b, l, y, a.filters), Tensor()}};
}

/// keras.utils.conv_utils.deconv_output_length.
int64_t deconvLength(int64_t in, int64_t k, const std::string &padding,
                     std::optional<int64_t> outputPadding, int64_t stride,
                     int64_t dilation) {
  k = k + (k - 1) * (dilation - 1);
  if (!outputPadding) {
    if (padding == "valid")
      return in * stride + std::max<int64_t>(k - stride, 0);
    return in * stride;
  }
  int64_t p = padding == "same" ? k / 2 : 0;
  return (in - 1) * stride + k - 2 * p + *outputPadding;
}

Outs convTransposeLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  ConvArgs a = convArgs(b, l, n, true);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  int64_t in = knownDim(b, l, x.t, -1);
  Dims outPad;
  if (b.has(l, "output_padding"))
    outPad = b.getInts(l, "output_padding", n, {});
  Dims kshape = a.kernel;
  kshape.push_back(a.filters);
  kshape.push_back(in);
  Variable kernel = b.var(
      l, "kernel", kshape,
      b.initializer(l, "kernel_initializer", glorot_uniform_initializer()));
  Dims outShape{-1};
  for (size_t i = 0; i < n; ++i) {
    int64_t d = knownDim(b, l, x.t, static_cast<int64_t>(i) + 1);
    std::optional<int64_t> op;
    if (!outPad.empty())
      op = outPad[i];
    outShape.push_back(deconvLength(d, a.kernel[i], a.padding, op, a.strides[i],
                                    a.dilation[i]));
  }
  outShape.push_back(a.filters);
  Tensor y = n == 2
                 ? nn::conv2d_transpose(x.t, kernel, outShape, a.strides,
                                        upper(a.padding), "NHWC", a.dilation)
                 : nn::conv3d_transpose(x.t, kernel, outShape, a.strides,
                                        upper(a.padding), "NDHWC", a.dilation);
  return {KTensor{biasAndActivation(b, l, y, a.filters), Tensor()}};
}

// --- Pooling -----------------------------------------------------------------

Outs poolLayer(Builder &b, const Layer &l, const Call &c, size_t n, bool max) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  Dims pool = b.getInts(l, "pool_size", n, Dims(n, 2));
  Dims strides = b.getInts(l, "strides", n, pool);
  std::string padding = b.getString(l, "padding", "valid");
  if (padding != "valid" && padding != "same")
    b.fail(l, "padding '" + padding + "' is not supported");
  for (size_t i = 0; i < n; ++i)
    if (pool[i] < 1 || strides[i] < 1)
      b.fail(l, "pool_size and strides must be positive");
  std::string p = upper(padding);
  Tensor y;
  if (n == 1)
    y = max ? nn::max_pool1d(x.t, pool[0], strides[0], p)
            : nn::avg_pool1d(x.t, pool[0], strides[0], p);
  else if (n == 2)
    y = max ? nn::max_pool(x.t, pool, strides, p)
            : nn::avg_pool(x.t, pool, strides, p);
  else
    y = max ? nn::max_pool3d(x.t, pool, strides, p)
            : nn::avg_pool3d(x.t, pool, strides, p);
  return {KTensor{y, Tensor()}};
}

Outs globalPoolLayer(Builder &b, const Layer &l, const Call &c, size_t n,
                     bool max) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  bool keepdims = b.getBool(l, "keepdims", false);
  Dims axes;
  for (size_t i = 1; i <= n; ++i)
    axes.push_back(static_cast<int64_t>(i));
  if (n == 1 && !max && x.mask.valid()) {
    // GlobalAveragePooling1D with a mask: sum(x * mask) / sum(mask).
    Tensor m = expand_dims(cast(x.mask, x.t.dtype()), 2);
    Tensor y = divide(reduce_sum(multiply(x.t, m), Dims{1}, keepdims),
                      reduce_sum(m, Dims{1}, keepdims));
    return {KTensor{y, Tensor()}};
  }
  Tensor y =
      max ? reduce_max(x.t, axes, keepdims) : reduce_mean(x.t, axes, keepdims);
  return {KTensor{y, Tensor()}};
}

// --- Reshaping ---------------------------------------------------------------

/// A [[a, b], [c, d]] / [a, b] / a config of `n` pairs (ZeroPadding2D's
/// padding, Cropping2D's cropping).
Dims pairs(Builder &b, const Layer &l, const char *key, size_t n) {
  const rj::Value *v = b.field(l, key);
  Dims out;
  if (!v)
    b.fail(l, std::string("'") + key + "' is missing");
  if (v->IsInt64()) {
    out.assign(2 * n, v->GetInt64());
  } else if (n == 1 && v->IsArray() && v->Size() == 2 && (*v)[0].IsInt64() &&
             (*v)[1].IsInt64()) {
    // ZeroPadding1D / Cropping1D: (left, right).
    out = {(*v)[0].GetInt64(), (*v)[1].GetInt64()};
  } else if (v->IsArray() && v->Size() == n) {
    for (const auto &e : v->GetArray()) {
      if (e.IsInt64()) {
        out.push_back(e.GetInt64());
        out.push_back(e.GetInt64());
      } else if (e.IsArray() && e.Size() == 2 && e[0].IsInt64() &&
                 e[1].IsInt64()) {
        out.push_back(e[0].GetInt64());
        out.push_back(e[1].GetInt64());
      } else {
        b.fail(l, std::string("'") + key + "' is malformed");
      }
    }
  } else {
    b.fail(l, std::string("'") + key + "' is malformed");
  }
  for (int64_t p : out)
    if (p < 0)
      b.fail(l, std::string("'") + key + "' must not be negative");
  return out;
}

Outs zeroPaddingLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  Dims p = pairs(b, l, "padding", n);
  Dims paddings{0, 0};
  paddings.insert(paddings.end(), p.begin(), p.end());
  paddings.push_back(0);
  paddings.push_back(0);
  return {KTensor{pad(x.t, paddings), Tensor()}};
}

Outs croppingLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  Dims p = pairs(b, l, "cropping", n);
  Dims begin(n + 2, 0), size(n + 2, -1);
  for (size_t i = 0; i < n; ++i) {
    int64_t d = knownDim(b, l, x.t, static_cast<int64_t>(i) + 1);
    int64_t keep = d - p[2 * i] - p[2 * i + 1];
    if (keep <= 0)
      b.fail(l, "cropping leaves nothing of dimension " +
                    std::to_string(i + 1) + " (" + std::to_string(d) + ")");
    begin[i + 1] = p[2 * i];
    size[i + 1] = keep;
  }
  return {KTensor{slice(x.t, begin, size), Tensor()}};
}

Outs upSamplingLayer(Builder &b, const Layer &l, const Call &c, size_t n) {
  const KTensor &x = b.single(l, c);
  channelsLast(b, l);
  requireRank(b, l, x.t, static_cast<int64_t>(n) + 2);
  Dims size = b.getInts(l, n == 1 ? "size" : "size", n, Dims(n, 2));
  for (int64_t s : size)
    if (s < 1)
      b.fail(l, "size must be positive");
  std::string interpolation = b.getString(l, "interpolation", "nearest");
  Dims s = x.t.shape();
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] < 0)
      b.fail(l, "the input's non-batch dimensions must be known");
  if (interpolation == "bilinear" && n == 2)
    return {KTensor{
        image::resize(x.t, {s[1] * size[0], s[2] * size[1]}, "bilinear"),
        Tensor()}};
  if (interpolation != "nearest")
    b.fail(l, "interpolation '" + interpolation + "' is not supported");
  // Each element repeated size[i] times along dimension i + 1: [B, d1, 1,
  // d2, 1, ..., C] times ones [1, 1, s1, 1, s2, ..., 1], then merged.
  Dims expanded{-1}, ones{1}, out{-1};
  for (size_t i = 0; i < n; ++i) {
    expanded.push_back(s[i + 1]);
    expanded.push_back(1);
    ones.push_back(1);
    ones.push_back(size[i]);
    out.push_back(s[i + 1] * size[i]);
  }
  expanded.push_back(s.back());
  ones.push_back(1);
  out.push_back(s.back());
  int64_t count = 1;
  for (int64_t d : ones) {
    if (d > (int64_t{1} << 20) / count)
      b.fail(l, "size is too large");
    count *= d;
  }
  Tensor e = reshape(x.t, expanded);
  Tensor tiled =
      multiply(e, b.g.constant(std::vector<double>(count, 1.0), ones));
  return {KTensor{reshape(tiled, out), Tensor()}};
}

Outs reshapeLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Dims target = b.getIntList(l, "target_shape", {});
  Dims s = x.t.shape();
  int64_t known = 1;
  bool allKnown = true;
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] < 0)
      allKnown = false;
    else
      known *= s[i];
  }
  int64_t unknownAt = -1, product = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (unknownAt >= 0)
        b.fail(l, "target_shape has more than one -1");
      unknownAt = static_cast<int64_t>(i);
    } else if (target[i] < 1) {
      b.fail(l, "target_shape has a bad dimension");
    } else {
      product *= target[i];
    }
  }
  if (!allKnown)
    b.fail(l, "the input's non-batch dimensions must be known, got " +
                  shape::toString(s));
  if (unknownAt >= 0) {
    if (known % product != 0)
      b.fail(l,
             "cannot reshape " + shape::toString(s) + " to " + listOf(target));
    target[unknownAt] = known / product;
  } else if (product != known) {
    b.fail(l, "cannot reshape " + shape::toString(s) + " to " + listOf(target));
  }
  Dims full{-1};
  full.insert(full.end(), target.begin(), target.end());
  return {KTensor{reshape(x.t, full), Tensor()}};
}

Outs permuteLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Dims dims = b.getIntList(l, "dims", {});
  if (static_cast<int64_t>(dims.size()) != x.t.rank() - 1)
    b.fail(l, "dims must list every non-batch dimension");
  Dims perm{0};
  std::vector<bool> seen(dims.size() + 1, false);
  for (int64_t d : dims) {
    if (d < 1 || d > static_cast<int64_t>(dims.size()) || seen[d])
      b.fail(l,
             "dims must be a permutation of 1.." + std::to_string(dims.size()));
    seen[d] = true;
    perm.push_back(d);
  }
  return {KTensor{transpose(x.t, perm), Tensor()}};
}

Outs repeatVectorLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  requireRank(b, l, x.t, 2);
  int64_t n = b.getInt(l, "n", 0);
  if (n < 1)
    b.fail(l, "n must be positive");
  return {KTensor{tile(expand_dims(x.t, 1), {1, n, 1}), Tensor()}};
}

// --- Normalization and preprocessing -----------------------------------------

Outs layerNormLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  int64_t rank = x.t.rank();
  Dims axes = b.getIntList(l, "axis", {-1});
  for (int64_t &a : axes)
    a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || axes.back() != rank - 1 || axes.front() < 1)
    b.fail(l, "axis must be the trailing dimensions");
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1)
      b.fail(l, "axis must be the trailing dimensions");
  int64_t begin = axes.front();
  Dims pshape;
  for (int64_t a : axes)
    pshape.push_back(knownDim(b, l, x.t, a));
  double eps = b.getDouble(l, "epsilon", 1e-3);
  int64_t count = 1;
  for (int64_t d : pshape) {
    if (d > (int64_t{1} << 26) / count)
      b.fail(l, "the normalized dimensions are too large");
    count *= d;
  }
  Tensor gamma =
      b.getBool(l, "scale", true)
          ? b.var(l, "gamma", pshape,
                  b.initializer(l, "gamma_initializer", ones_initializer()))
                .read()
          : b.g.constant(std::vector<double>(count, 1.0), pshape);
  Tensor beta =
      b.getBool(l, "center", true)
          ? b.var(l, "beta", pshape,
                  b.initializer(l, "beta_initializer", zeros_initializer()))
                .read()
          : b.g.constant(std::vector<double>(count, 0.0), pshape);
  if (b.getBool(l, "rms_scaling", false))
    b.fail(l, "rms_scaling is not supported");
  return same(nn::layer_norm(x.t, gamma, beta, begin, begin, eps), x);
}

/// A number or a list of numbers of the config as a constant broadcasting
/// against the channels.
Tensor scalarOrList(Builder &b, const Layer &l, const char *key,
                    double fallback) {
  const rj::Value *v = b.field(l, key);
  if (!v)
    return b.g.constant(fallback);
  if (v->IsNumber())
    return b.g.constant(v->GetDouble());
  std::vector<double> values;
  if (v->IsArray())
    for (const auto &e : v->GetArray()) {
      if (!e.IsNumber())
        b.fail(l, std::string("'") + key + "' must be numbers");
      values.push_back(e.GetDouble());
    }
  if (values.empty())
    b.fail(l, std::string("'") + key + "' must be a number or a list");
  return b.g.constant(values, {static_cast<int64_t>(values.size())});
}

Outs rescalingLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  Tensor xin = x.t.dtype() == DType::Float32 ? x.t : cast(x.t, DType::Float32);
  Tensor y = add(multiply(xin, scalarOrList(b, l, "scale", 1.0)),
                 scalarOrList(b, l, "offset", 0.0));
  return same(y, x);
}

/// Normalization: (x - mean) / max(sqrt(variance), 1e-7) with the adapted
/// mean and variance (variables mean, variance, count) or the config's.
Outs normalizationLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  if (b.getBool(l, "invert", false))
    b.fail(l, "invert is not supported");
  int64_t rank = x.t.rank();
  Dims axes = b.getIntList(l, "axis", {-1});
  for (int64_t &a : axes) {
    a = a < 0 ? a + rank : a;
    if (a < 1 || a >= rank)
      b.fail(l, "axis is out of range");
  }
  std::sort(axes.begin(), axes.end());
  Dims kept, broadcast(rank, 1);
  for (int64_t a : axes) {
    kept.push_back(knownDim(b, l, x.t, a));
    broadcast[a] = kept.back();
  }
  Tensor xin = x.t.dtype() == DType::Float32 ? x.t : cast(x.t, DType::Float32);
  Tensor mean, variance;
  if (b.has(l, "mean")) {
    mean = scalarOrList(b, l, "mean", 0.0);
    variance = scalarOrList(b, l, "variance", 1.0);
    if (mean.rank() == 1)
      mean = reshape(mean, broadcast);
    if (variance.rank() == 1)
      variance = reshape(variance, broadcast);
  } else {
    // The adapted state: tf.keras 2.15 keeps mean / variance of the kept
    // axes' shape; the file's shape wins where it has the weight.
    Dims shape = kept;
    if (const Weight *w = b.model.find_weight(l.name + "/mean:0"))
      shape = w->value.shape;
    Variable m = b.var(l, "mean", shape, zeros_initializer(), false);
    Variable v = b.var(l, "variance", shape, ones_initializer(), false);
    // Keras's count (int64, not used in the call): kept for writing back.
    if (const Weight *w = b.model.find_weight(l.name + "/count:0"))
      (void)b.var(l, "count", w->value.shape, zeros_initializer(), false,
                  w->value.dtype);
    mean = reshape(m.read(), broadcast);
    variance = reshape(v.read(), broadcast);
  }
  Tensor y = divide(subtract(xin, mean), maximum(sqrt(variance), 1e-7));
  return same(y, x);
}

Outs embeddingLayer(Builder &b, const Layer &l, const Call &c) {
  const KTensor &x = b.single(l, c);
  int64_t inputDim = b.getInt(l, "input_dim", 0);
  int64_t outputDim = b.getInt(l, "output_dim", 0);
  if (inputDim < 1 || outputDim < 1)
    b.fail(l, "input_dim and output_dim must be positive");
  if (b.has(l, "input_length") && b.field(l, "input_length")->IsInt64() &&
      x.t.rank() >= 2 && x.t.shape()[1] >= 0 &&
      x.t.shape()[1] != b.getInt(l, "input_length", 0))
    b.fail(l, "input_length disagrees with the input's shape " +
                  shape::toString(x.t.shape()));
  Variable table =
      b.var(l, "embeddings", {inputDim, outputDim},
            b.initializer(l, "embeddings_initializer",
                          random_uniform_initializer(-0.05, 0.05)));
  Tensor ids = x.t;
  if (ids.dtype() != DType::Int32 && ids.dtype() != DType::Int64)
    ids = cast(ids, DType::Int32);
  Tensor y = gather(table.read(), ids);
  Tensor mask;
  if (b.getBool(l, "mask_zero", false))
    mask = not_equal(ids, 0.0);
  return {KTensor{y, mask}};
}

// --- Keras 3's ops in a functional graph (the masks it computes) ------------

/// NotEqual / Equal / LogicalAnd / LogicalOr of a tensor and a tensor or a
/// number (Keras 3's `ops.not_equal(ids, 0)` of an Embedding's mask).
Outs comparisonOp(Builder &b, const Layer &l, const Call &c) {
  if (c.args.size() != 1 || c.list)
    b.fail(l, "the op takes a tensor first");
  Operand other = 0.0;
  if (auto it = c.tensorKwargs.find("arg1");
      it != c.tensorKwargs.end() && !it->second.empty()) {
    other = it->second[0].t;
  } else if (c.positional && c.positional->IsArray() &&
             c.positional->Size() == 2 && (*c.positional)[1].IsNumber()) {
    other = (*c.positional)[1].GetDouble();
  } else {
    b.fail(l, "the op's second argument is neither a tensor nor a number");
  }
  const Tensor &x = c.args[0].t;
  Tensor y;
  if (l.cls == "NotEqual")
    y = not_equal(x, other);
  else if (l.cls == "Equal")
    y = equal(x, other);
  else if (l.cls == "LogicalAnd")
    y = logical_and(x, other);
  else
    y = logical_or(x, other);
  return {KTensor{y, Tensor()}};
}

} // namespace

const std::map<std::string, LayerImpl> &layerTable() {
  using namespace std::placeholders;
  static const std::map<std::string, LayerImpl> table = [] {
    std::map<std::string, LayerImpl> t;
    auto add = [&](const char *name, LayerFn fn) {
      t[name] = LayerImpl{std::move(fn), false};
    };
    auto dim = [](Outs (*f)(Builder &, const Layer &, const Call &, size_t),
                  size_t n) {
      return [f, n](Builder &b, const Layer &l, const Call &c) {
        return f(b, l, c, n);
      };
    };
    auto pool = [](size_t n, bool max) {
      return [n, max](Builder &b, const Layer &l, const Call &c) {
        return poolLayer(b, l, c, n, max);
      };
    };
    auto global = [](size_t n, bool max) {
      return [n, max](Builder &b, const Layer &l, const Call &c) {
        return globalPoolLayer(b, l, c, n, max);
      };
    };
    add("Dense", denseLayer);
    add("Activation", activationLayer);
    add("Dropout", dropoutLayer);
    add("SpatialDropout1D", dropoutLayer);
    add("SpatialDropout2D", dropoutLayer);
    add("SpatialDropout3D", dropoutLayer);
    add("Flatten", flattenLayer);
    add("BatchNormalization", batchNormLayer);
    add("LayerNormalization", layerNormLayer);
    add("Add", addLayer);
    add("Subtract", subtractLayer);
    add("Multiply", multiplyLayer);
    add("Average", averageLayer);
    add("Maximum", maximumLayer);
    add("Minimum", minimumLayer);
    add("Concatenate", concatenateLayer);
    add("Dot", dotLayer);
    add("ReLU", reluLayer);
    add("LeakyReLU", leakyReluLayer);
    add("PReLU", preluLayer);
    add("Softmax", softmaxLayer);
    add("Conv1D", dim(convLayer, 1));
    add("Conv2D", dim(convLayer, 2));
    add("Conv3D", dim(convLayer, 3));
    add("DepthwiseConv2D", depthwiseConv2DLayer);
    add("SeparableConv1D", dim(separableConvLayer, 1));
    add("SeparableConv2D", dim(separableConvLayer, 2));
    add("Conv2DTranspose", dim(convTransposeLayer, 2));
    add("Conv3DTranspose", dim(convTransposeLayer, 3));
    add("MaxPooling1D", pool(1, true));
    add("MaxPooling2D", pool(2, true));
    add("MaxPooling3D", pool(3, true));
    add("AveragePooling1D", pool(1, false));
    add("AveragePooling2D", pool(2, false));
    add("AveragePooling3D", pool(3, false));
    add("MaxPool1D", pool(1, true));
    add("MaxPool2D", pool(2, true));
    add("MaxPool3D", pool(3, true));
    add("AvgPool1D", pool(1, false));
    add("AvgPool2D", pool(2, false));
    add("AvgPool3D", pool(3, false));
    add("GlobalAveragePooling1D", global(1, false));
    add("GlobalAveragePooling2D", global(2, false));
    add("GlobalAveragePooling3D", global(3, false));
    add("GlobalMaxPooling1D", global(1, true));
    add("GlobalMaxPooling2D", global(2, true));
    add("GlobalMaxPooling3D", global(3, true));
    add("GlobalAvgPool1D", global(1, false));
    add("GlobalAvgPool2D", global(2, false));
    add("GlobalMaxPool1D", global(1, true));
    add("GlobalMaxPool2D", global(2, true));
    add("ZeroPadding1D", dim(zeroPaddingLayer, 1));
    add("ZeroPadding2D", dim(zeroPaddingLayer, 2));
    add("ZeroPadding3D", dim(zeroPaddingLayer, 3));
    add("Cropping1D", dim(croppingLayer, 1));
    add("Cropping2D", dim(croppingLayer, 2));
    add("Cropping3D", dim(croppingLayer, 3));
    add("UpSampling1D", dim(upSamplingLayer, 1));
    add("UpSampling2D", dim(upSamplingLayer, 2));
    add("UpSampling3D", dim(upSamplingLayer, 3));
    add("Reshape", reshapeLayer);
    add("Permute", permuteLayer);
    add("RepeatVector", repeatVectorLayer);
    add("Rescaling", rescalingLayer);
    add("Normalization", normalizationLayer);
    add("Embedding", embeddingLayer);
    for (const char *op : {"NotEqual", "Equal", "LogicalAnd", "LogicalOr"})
      add(op, comparisonOp);
    addRecurrentLayers(t);
    return t;
  }();
  return table;
}

} // namespace kerasgraph
} // namespace keras
} // namespace estc
