//===- Convolution.cpp - tf.nn's other convolutions and poolings ---------===//
//
// conv1d, conv3d, conv2d_transpose, conv3d_transpose, depthwise_conv2d,
// separable_conv2d and the 1-D and 3-D poolings, each built from the ops the
// compiler lowers to its fast kernels (conv2d, max_pool, avg_pool,
// conv2d_backprop_input) and shape ops, so that their gradients, the reference
// evaluator and the CUDA target need nothing new:
//
//   conv1d / pool1d   the 2-D op on an inserted H axis of size 1 (TF's own
//                     conv1d)
//   conv3d            the sum over the filter's depth taps a of conv2d of
//                     the input's depth slices a*dd, a*dd + sd, ... (folded
//                     into the batch) with filter[a]
//   max_pool3d        the maximum over the window's depth taps of max_pool
//                     of those slices (the depth padding is -inf, which no
//                     window's maximum takes)
//   avg_pool3d        the sum over the depth taps of avg_pool of the
//                     zero-padded slices, divided by each output depth's
//                     count of valid taps (TF's SAME divisor is the product
//                     of the per-dimension counts)
//   depthwise_conv2d  one depthwise_conv2d_native node (est.depthwise_conv2d,
//                     whose gradients are its own two ops and whose f32
//                     lowering calls the runtime's depthwise kernels)
//   conv2d_transpose  conv2d_backprop_input, as in TF
//   conv3d_transpose  conv3d's adjoint: per depth tap, conv2d_backprop_input
//                     of every input depth, spread to the output depths
//                     that tap reads (pads and reshapes), summed
//
// A channels-first data_format transposes the input to channels-last and
// the result back.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Ops.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace estc {
namespace nn {

namespace {

/// The checked call of one builder: its op name and node scope, for errors
/// of one line that name both and the input.
class Call {
public:
  Call(const char *op, const char *base, const std::string &name,
       const Tensor &input)
      : op_(op), base_(name.empty() ? base : name), input_(input) {
    if (!input.valid())
      throw GraphError(op_ + " '" + base_ + "': input is an empty Tensor");
    if (!input.has_value())
      throw GraphError(op_ + " '" + base_ + "': input '" + input.name() +
                       "' has no value");
  }

  [[noreturn]] void fail(const std::string &problem) const {
    throw GraphError(op_ + " '" + base_ + "': input '" + input_.name() + "' " +
                     shape::toString(input_.shape()) + ": " + problem);
  }

  void requireFloat(const Tensor &t, const char *what) const {
    if (!t.valid() || !t.has_value())
      fail(std::string(what) + " is an empty Tensor");
    if (!is_floating(t.dtype()))
      fail(std::string(what) + " '" + t.name() +
           "' must be a float tensor, got " + to_string(t.dtype()));
    if (t.dtype() != input_.dtype())
      fail(std::string(what) + " '" + t.name() + "' is " +
           to_string(t.dtype()) + ", the input " + to_string(input_.dtype()));
  }

  /// Whether `format` is the channels-first one of `last` / `first`
  /// ("NHWC" / "NCHW", ...); any other value is an error.
  bool channelsFirst(const std::string &format, const char *last,
                     const char *first) const {
    if (format == last)
      return false;
    if (format == first)
      return true;
    fail("data_format must be \"" + std::string(last) + "\" or \"" + first +
         "\", got \"" + format + "\"");
  }

  shape::Padding padding(const std::string &p) const {
    auto parsed = shape::parsePadding(p);
    if (!parsed)
      fail("padding must be \"SAME\" or \"VALID\", got \"" + p + "\"");
    return *parsed;
  }

  /// `v` has `n` positive values.
  void requireWindow(const char *what, const Dims &v, size_t n) const {
    if (v.size() != n)
      fail(std::string(what) + " must have " + std::to_string(n) +
           " values, got " + shape::toString(v));
    for (int64_t x : v)
      if (x < 1)
        fail(std::string(what) + " must be positive, got " +
             shape::toString(v));
  }

  /// The input has rank `rank` and known dimensions but the batch.
  void requireShape(size_t rank, const char *layout) const {
    if (input_.rank() != static_cast<int64_t>(rank))
      fail("input must be " + std::string(layout) + " (rank " +
           std::to_string(rank) + ")");
    for (size_t d = 1; d < rank; ++d)
      if (input_.shape()[d] == shape::kUnknownDim)
        fail("every dimension but the batch must be known");
  }

  /// `filter` (`what`: "filters" or "filter") is `layout` ("[depth, height,
  /// width, in, out]", one name a dimension) and, with `known`, has every
  /// dimension known; returns its shape.
  Dims requireFilter(const Tensor &filter, const char *what, const char *layout,
                     bool known) const {
    Dims f = filter.shape();
    size_t rank = 1 + std::count(layout, layout + std::strlen(layout), ',');
    if (f.size() != rank ||
        (known && std::any_of(f.begin(), f.end(), [](int64_t d) {
           return d == shape::kUnknownDim;
         })))
      fail(std::string(what) + " '" + filter.name() + "' must be " + layout +
           (known ? " and known" : "") + ", got " + shape::toString(f));
    return f;
  }

  /// The input's channels (dimension `channelAxis`) are `filter`'s dimension
  /// `filterIn`, where both are known (as conv2d checks them).
  void requireChannels(int64_t channelAxis, const Tensor &filter,
                       const char *what, size_t filterIn) const {
    int64_t channels = input_.shape()[channelAxis];
    int64_t in = filter.shape()[filterIn];
    if (channels != shape::kUnknownDim && in != shape::kUnknownDim &&
        channels != in)
      fail("input channels " + std::to_string(channels) + " do not match " +
           what + " '" + filter.name() + "' " +
           shape::toString(filter.shape()));
  }

  /// The output size of each spatial dimension of `x` (dims 1..n) for
  /// windows `window` (dilated by `dilations`), failing on a VALID window
  /// larger than its input.
  Dims outputSizes(const Tensor &x, const Dims &window, const Dims &strides,
                   const Dims &dilations, shape::Padding p) const {
    Dims out;
    for (size_t i = 0; i < window.size(); ++i) {
      int64_t in = x.shape()[1 + i];
      int64_t eff = (window[i] - 1) * dilations[i] + 1;
      if (p == shape::Padding::Valid && in < eff)
        fail("VALID window " + shape::toString(window) +
             " is larger than the input");
      out.push_back(
          shape::convOutputSize(in, window[i], strides[i], dilations[i], p));
    }
    return out;
  }

  Scope scope(Graph &g) const {
    return g.name_scope(g.unique_layer_name(base_));
  }

private:
  std::string op_;
  std::string base_;
  Tensor input_;
};

/// The permutation moving the channels of a rank-`rank` tensor from last to
/// second (`toFirst`) or back.
Dims channelsPerm(int64_t rank, bool toFirst) {
  Dims perm{0};
  if (toFirst) {
    perm.push_back(rank - 1);
    for (int64_t d = 1; d < rank - 1; ++d)
      perm.push_back(d);
  } else {
    for (int64_t d = 2; d < rank; ++d)
      perm.push_back(d);
    perm.push_back(1);
  }
  return perm;
}

Tensor toChannelsLast(const Tensor &x) {
  return transpose(x, channelsPerm(x.rank(), false));
}
Tensor toChannelsFirst(const Tensor &x) {
  return transpose(x, channelsPerm(x.rank(), true));
}

/// `x` padded by `lo` / `hi` elements of `value` along `axis`.
Tensor padAxis(const Tensor &x, int64_t axis, int64_t lo, int64_t hi,
               double value = 0.0) {
  if (lo == 0 && hi == 0)
    return x;
  Dims paddings(2 * x.rank(), 0);
  paddings[2 * axis] = lo;
  paddings[2 * axis + 1] = hi;
  return pad(x, paddings, value);
}

/// `x` with every dimension but the batch: -1 for reshape.
Dims reshapeDims(Dims d) {
  d[0] = -1;
  return d;
}

/// Elements offset, offset + stride, ..., count of them, of dimension `axis`
/// of `x` (static, all dimensions but the batch known): a slice, and for a
/// stride > 1 a reshape to [..., count, stride, ...] and its first column.
Tensor strided(const Tensor &x, int64_t axis, int64_t offset, int64_t count,
               int64_t stride) {
  int64_t rank = x.rank();
  Dims begin(rank, 0), size(rank, -1);
  begin[axis] = offset;
  if (stride == 1) {
    size[axis] = count;
    return slice(x, begin, size);
  }
  Tensor t =
      padAxis(x, axis, 0,
              std::max<int64_t>(0, offset + count * stride - x.shape()[axis]));
  size[axis] = count * stride;
  t = slice(t, begin, size);
  Dims split = reshapeDims(t.shape());
  split[axis] = count;
  split.insert(split.begin() + axis + 1, stride);
  t = reshape(t, split);
  Dims begin2(rank + 1, 0), size2(rank + 1, -1);
  size2[axis + 1] = 1;
  return squeeze(slice(t, begin2, size2), Dims{axis + 1});
}

/// filter[a] of a filter [K, ...]: [...].
Tensor tap(const Tensor &filter, int64_t a) {
  Dims begin(filter.rank(), 0), size(filter.rank(), -1);
  begin[0] = a;
  size[0] = 1;
  return squeeze(slice(filter, begin, size), Dims{0});
}

/// The depth windows of an NDHWC `xp` (already padded, windowPadding):
/// for each depth tap a of `kd` (dilated by `dd`), the depth slices that
/// output depths 0, 1, ... (`od` of them, stride `sd`) read, folded into
/// the batch, [N * od, H, W, C], go through `each(a, slices)` (the 2-D op,
/// [N * od, OH, OW, C']); the results are combined by `add` and unfolded to
/// [N, od, OH, OW, C'].
template <typename F, typename Combine>
Tensor overDepth(const Tensor &xp, int64_t kd, int64_t dd, int64_t od,
                 int64_t sd, F each, Combine add) {
  Tensor acc;
  Dims folded = reshapeDims(xp.shape());
  folded.erase(folded.begin() + 1);
  for (int64_t a = 0; a < kd; ++a) {
    Tensor slices = reshape(strided(xp, 1, a * dd, od, sd), folded);
    Tensor y = each(a, slices);
    acc = acc.valid() ? add(acc, y) : y;
  }
  Dims out = reshapeDims(acc.shape());
  out.insert(out.begin() + 1, od);
  return reshape(acc, out);
}

/// The padding [lo, hi] of one spatial dimension of a window op done as
/// strided slices: TF's low padding, and a high one covering every slice.
std::pair<int64_t, int64_t> windowPadding(int64_t in, int64_t k, int64_t s,
                                          int64_t d, int64_t out,
                                          shape::Padding p) {
  int64_t lo = shape::convPadBefore(in, k, s, d, p);
  return {lo, std::max<int64_t>(0, (k - 1) * d + out * s - in - lo)};
}

Tensor addTensors(const Tensor &a, const Tensor &b) { return add(a, b); }
Tensor maxTensors(const Tensor &a, const Tensor &b) { return maximum(a, b); }

/// A channels-last op wrapped for channels-first input and output.
template <typename F> Tensor inFormat(bool first, const Tensor &x, F op) {
  if (!first)
    return op(x);
  return toChannelsFirst(op(toChannelsLast(x)));
}

} // namespace

Tensor conv1d(const Tensor &input, const Tensor &filters, int64_t stride,
              const std::string &padding, const std::string &data_format,
              int64_t dilations, const std::string &name) {
  Call c("conv1d", "conv1d", name, input);
  bool first = c.channelsFirst(data_format, "NWC", "NCW");
  c.requireFloat(filters, "filters");
  c.padding(padding);
  if (input.rank() != 3)
    c.fail(std::string("input must be ") + (first ? "NCW" : "NWC") +
           " (rank 3)");
  // conv1d is conv2d on an inserted axis and takes what conv2d takes:
  // unknown dimensions in the input and the filters (conv2d's shape function
  // checks the known ones and needs the filter's width). conv3d and
  // depthwise_conv2d slice the input per filter tap, so they need both
  // shapes known (requireShape, requireFilter's `known`).
  c.requireFilter(filters, "filters", "[width, in, out]", /*known=*/false);
  c.requireChannels(first ? 1 : 2, filters, "filters", 1);
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    Tensor y = conv2d(expand_dims(x, 1), expand_dims(filters, 0), {1, stride},
                      padding, "NHWC", {1, dilations});
    return squeeze(y, Dims{1});
  });
}

Tensor conv3d(const Tensor &input, const Tensor &filters, const Dims &strides,
              const std::string &padding, const std::string &data_format,
              const Dims &dilations, const std::string &name) {
  Call c("conv3d", "Conv3D", name, input);
  bool first = c.channelsFirst(data_format, "NDHWC", "NCDHW");
  c.requireFloat(filters, "filters");
  shape::Padding p = c.padding(padding);
  c.requireWindow("strides", strides, 3);
  c.requireWindow("dilations", dilations, 3);
  c.requireShape(5, first ? "NCDHW" : "NDHWC");
  Dims f = c.requireFilter(filters, "filters",
                           "[depth, height, width, in, out]", /*known=*/true);
  c.requireChannels(first ? 1 : 4, filters, "filters", 3);
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    Dims out = c.outputSizes(x, {f[0], f[1], f[2]}, strides, dilations, p);
    auto [lo, hi] =
        windowPadding(x.shape()[1], f[0], strides[0], dilations[0], out[0], p);
    return overDepth(
        padAxis(x, 1, lo, hi), f[0], dilations[0], out[0], strides[0],
        [&](int64_t a, const Tensor &slices) {
          return conv2d(slices, tap(filters, a), {strides[1], strides[2]},
                        padding, "NHWC", {dilations[1], dilations[2]});
        },
        addTensors);
  });
}

Tensor conv2d_transpose(const Tensor &input, const Tensor &filters,
                        const Dims &output_shape, const Dims &strides,
                        const std::string &padding,
                        const std::string &data_format, const Dims &dilations,
                        const std::string &name) {
  Call c("conv2d_transpose", "conv2d_transpose", name, input);
  bool first = c.channelsFirst(data_format, "NHWC", "NCHW");
  c.requireFloat(filters, "filters");
  c.padding(padding);
  if (output_shape.size() != 4)
    c.fail("output_shape must have 4 values, got " +
           shape::toString(output_shape));
  if (filters.rank() != 4)
    c.fail("filters '" + filters.name() +
           "' must be [height, width, out, in], got " +
           shape::toString(filters.shape()));
  int64_t outChannels = output_shape[first ? 1 : 3];
  if (filters.shape()[2] != outChannels)
    c.fail("output_shape " + shape::toString(output_shape) + " has channels " +
           std::to_string(outChannels) + ", filters '" + filters.name() + "' " +
           shape::toString(filters.shape()) + " make " +
           std::to_string(filters.shape()[2]));
  Dims size = first ? Dims{output_shape[2], output_shape[3]}
                    : Dims{output_shape[1], output_shape[2]};
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    return conv2d_backprop_input(x, filters, size, strides, padding, dilations);
  });
}

Tensor conv3d_transpose(const Tensor &input, const Tensor &filters,
                        const Dims &output_shape, const Dims &strides,
                        const std::string &padding,
                        const std::string &data_format, const Dims &dilations,
                        const std::string &name) {
  Call c("conv3d_transpose", "conv3d_transpose", name, input);
  bool first = c.channelsFirst(data_format, "NDHWC", "NCDHW");
  c.requireFloat(filters, "filters");
  shape::Padding p = c.padding(padding);
  c.requireWindow("strides", strides, 3);
  c.requireWindow("dilations", dilations, 3);
  c.requireShape(5, first ? "NCDHW" : "NDHWC");
  Dims f = c.requireFilter(filters, "filters",
                           "[depth, height, width, out, in]", /*known=*/true);
  if (output_shape.size() != 5)
    c.fail("output_shape must have 5 values, got " +
           shape::toString(output_shape));
  Dims size = first ? Dims{output_shape[2], output_shape[3], output_shape[4]}
                    : Dims{output_shape[1], output_shape[2], output_shape[3]};
  int64_t outChannels = output_shape[first ? 1 : 4];
  int64_t inChannels = input.shape()[first ? 1 : 4];
  if (f[3] != outChannels || f[4] != inChannels)
    c.fail("filters '" + filters.name() + "' " + shape::toString(f) +
           " must be [kd, kh, kw, " + std::to_string(outChannels) + ", " +
           std::to_string(inChannels) + "] for output_shape " +
           shape::toString(output_shape));
  // The input must be what conv3d makes of an output_shape-sized tensor.
  Dims forward;
  for (int i = 0; i < 3; ++i) {
    if (size[i] < 1)
      c.fail("output_shape " + shape::toString(output_shape) +
             " must have positive spatial sizes");
    int64_t eff = (f[i] - 1) * dilations[i] + 1;
    forward.push_back(p == shape::Padding::Valid && size[i] < eff
                          ? 0
                          : shape::convOutputSize(size[i], f[i], strides[i],
                                                  dilations[i], p));
  }
  Dims inSize =
      first ? Dims{input.shape()[2], input.shape()[3], input.shape()[4]}
            : Dims{input.shape()[1], input.shape()[2], input.shape()[3]};
  if (forward != inSize)
    c.fail("conv3d of output_shape " + shape::toString(output_shape) +
           " would have spatial size " + shape::toString(forward) +
           ", not the input's " + shape::toString(inSize));
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    int64_t depth = size[0], od = inSize[0], sd = strides[0], dd = dilations[0];
    auto [lo, hi] = windowPadding(depth, f[0], sd, dd, od, p);
    int64_t padded = depth + lo + hi;
    Dims folded = reshapeDims(x.shape());
    folded.erase(folded.begin() + 1);
    Dims unfolded = {-1, od, size[1], size[2], f[3]};
    Tensor acc;
    for (int64_t a = 0; a < f[0]; ++a) {
      // Depth tap a: the 2-D transpose of every input depth, placed at
      // depths a * dd + k * sd of the padded output (the adjoint of
      // conv3d's strided slices).
      Tensor y = reshape(
          conv2d_backprop_input(reshape(x, folded), tap(filters, a),
                                {size[1], size[2]}, {strides[1], strides[2]},
                                padding, {dilations[1], dilations[2]}),
          unfolded);
      if (sd > 1) {
        y = padAxis(expand_dims(y, 2), 2, 0, sd - 1);
        y = reshape(y, {-1, od * sd, size[1], size[2], f[3]});
      }
      y = padAxis(y, 1, a * dd, padded - a * dd - y.shape()[1]);
      acc = acc.valid() ? add(acc, y) : y;
    }
    return slice(acc, {0, lo, 0, 0, 0}, {-1, depth, -1, -1, -1});
  });
}

Tensor depthwise_conv2d(const Tensor &input, const Tensor &filter,
                        const Dims &strides, const std::string &padding,
                        const std::string &data_format, const Dims &dilations,
                        const std::string &name) {
  Call c("depthwise_conv2d", "depthwise", name, input);
  bool first = c.channelsFirst(data_format, "NHWC", "NCHW");
  c.requireFloat(filter, "filter");
  c.padding(padding);
  c.requireWindow("strides", strides, 2);
  c.requireWindow("dilations", dilations, 2);
  c.requireShape(4, first ? "NCHW" : "NHWC");
  c.requireFilter(filter, "filter", "[height, width, in, multiplier]",
                  /*known=*/true);
  c.requireChannels(first ? 1 : 3, filter, "filter", 2);
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    return depthwise_conv2d_native(x, filter, strides, padding, dilations);
  });
}

Tensor separable_conv2d(const Tensor &input, const Tensor &depthwise_filter,
                        const Tensor &pointwise_filter, const Dims &strides,
                        const std::string &padding,
                        const std::string &data_format, const Dims &dilations,
                        const std::string &name) {
  Call c("separable_conv2d", "separable_conv2d", name, input);
  bool first = c.channelsFirst(data_format, "NHWC", "NCHW");
  c.requireFloat(pointwise_filter, "pointwise_filter");
  const Dims &pw = pointwise_filter.shape();
  const Dims &dw = depthwise_filter.valid() && depthwise_filter.has_value()
                       ? depthwise_filter.shape()
                       : Dims{};
  if (pointwise_filter.rank() != 4 || pw[0] != 1 || pw[1] != 1)
    c.fail("pointwise_filter '" + pointwise_filter.name() +
           "' must be [1, 1, in * multiplier, out], got " +
           shape::toString(pw));
  if (dw.size() == 4 && pw[2] != dw[2] * dw[3])
    c.fail("pointwise_filter '" + pointwise_filter.name() + "' " +
           shape::toString(pw) + " must take the depthwise output's " +
           std::to_string(dw[2] * dw[3]) + " channels");
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    Tensor d = depthwise_conv2d(x, depthwise_filter, strides, padding, "NHWC",
                                dilations, "depthwise");
    return conv2d(d, pointwise_filter, {1, 1}, "VALID");
  });
}

namespace {
Tensor pool1d(const char *op, const char *base, bool max, const Tensor &input,
              int64_t ksize, int64_t strides, const std::string &padding,
              const std::string &data_format, const std::string &name) {
  Call c(op, base, name, input);
  bool first = c.channelsFirst(data_format, "NWC", "NCW");
  c.padding(padding);
  if (input.rank() != 3)
    c.fail(std::string("input must be ") + (first ? "NCW" : "NWC") +
           " (rank 3)");
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    Tensor y =
        max ? max_pool(expand_dims(x, 1), {1, ksize}, {1, strides}, padding)
            : avg_pool(expand_dims(x, 1), {1, ksize}, {1, strides}, padding);
    return squeeze(y, Dims{1});
  });
}

Tensor pool3d(const char *op, const char *base, bool max, const Tensor &input,
              const Dims &ksize, const Dims &strides,
              const std::string &padding, const std::string &data_format,
              const std::string &name) {
  Call c(op, base, name, input);
  bool first = c.channelsFirst(data_format, "NDHWC", "NCDHW");
  shape::Padding p = c.padding(padding);
  c.requireWindow("ksize", ksize, 3);
  c.requireWindow("strides", strides, 3);
  c.requireShape(5, first ? "NCDHW" : "NDHWC");
  if (!is_floating(input.dtype()))
    c.fail("input must be a float tensor, got " + to_string(input.dtype()));
  Graph &g = input.graph();
  auto scope = c.scope(g);
  return inFormat(first, input, [&](const Tensor &x) {
    Dims out = c.outputSizes(x, ksize, strides, {1, 1, 1}, p);
    int64_t depth = x.shape()[1];
    auto [lo, hi] = windowPadding(depth, ksize[0], strides[0], 1, out[0], p);
    Dims window{ksize[1], ksize[2]}, steps{strides[1], strides[2]};
    if (max)
      return overDepth(
          padAxis(x, 1, lo, hi, -std::numeric_limits<double>::infinity()),
          ksize[0], 1, out[0], strides[0],
          [&](int64_t, const Tensor &slices) {
            return max_pool(slices, window, steps, padding);
          },
          maxTensors);
    Tensor sum = overDepth(
        padAxis(x, 1, lo, hi), ksize[0], 1, out[0], strides[0],
        [&](int64_t, const Tensor &slices) {
          return avg_pool(slices, window, steps, padding);
        },
        addTensors);
    // Each output depth's count of taps inside the input.
    std::vector<double> counts;
    for (int64_t d = 0; d < out[0]; ++d) {
      int64_t start = d * strides[0] - lo;
      int64_t end = std::min(start + ksize[0], depth);
      counts.push_back(static_cast<double>(end - std::max<int64_t>(start, 0)));
    }
    return divide(sum, g.constant(counts, {out[0], 1, 1, 1}, x.dtype()));
  });
}
} // namespace

Tensor max_pool1d(const Tensor &input, int64_t ksize, int64_t strides,
                  const std::string &padding, const std::string &data_format,
                  const std::string &name) {
  return pool1d("max_pool1d", "MaxPool1d", true, input, ksize, strides, padding,
                data_format, name);
}
Tensor avg_pool1d(const Tensor &input, int64_t ksize, int64_t strides,
                  const std::string &padding, const std::string &data_format,
                  const std::string &name) {
  return pool1d("avg_pool1d", "AvgPool1D", false, input, ksize, strides,
                padding, data_format, name);
}
Tensor max_pool3d(const Tensor &input, const Dims &ksize, const Dims &strides,
                  const std::string &padding, const std::string &data_format,
                  const std::string &name) {
  return pool3d("max_pool3d", "MaxPool3D", true, input, ksize, strides, padding,
                data_format, name);
}
Tensor avg_pool3d(const Tensor &input, const Dims &ksize, const Dims &strides,
                  const std::string &padding, const std::string &data_format,
                  const std::string &name) {
  return pool3d("avg_pool3d", "AvgPool3D", false, input, ksize, strides,
                padding, data_format, name);
}

} // namespace nn
} // namespace estc
