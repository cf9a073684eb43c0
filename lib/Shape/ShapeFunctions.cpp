//===- ShapeFunctions.cpp - Shape inference rules for every est op ------===//

#include "lib/Shape/ShapeFunctions.h"

#include <algorithm>
#include <sstream>

namespace estc {
namespace shape {

namespace {
bool known(int64_t d) { return d != kUnknownDim; }

std::string str(int64_t v) { return std::to_string(v); }

// Formats an error from stream-able pieces.
template <typename... Args> ShapeOr fail(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return ShapeOr::error(os.str());
}

// Validates a list of axes against `rank`; returns normalized, sorted axes.
std::optional<std::string> normalizeAxes(const Dims &axes, int64_t rank,
                                         Dims &out) {
  out.clear();
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return "axis " + str(a) + " is out of range for rank " + str(rank);
    if (std::find(out.begin(), out.end(), *n) != out.end())
      return "axis " + str(a) + " is repeated";
    out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return std::nullopt;
}
} // namespace

std::string toString(const Dims &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ",";
    s += known(dims[i]) ? str(dims[i]) : "?";
  }
  return s + "]";
}

int64_t numElements(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (!known(d))
      return kUnknownDim;
    n *= d;
  }
  return n;
}

bool isFullyKnown(const Dims &dims) {
  return std::all_of(dims.begin(), dims.end(), known);
}

bool isCompatible(const Dims &a, const Dims &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && known(a[i]) && known(b[i]))
      return false;
  return true;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

ShapeOr broadcast(const Dims &a, const Dims &b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing dimension.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (!known(da))
      out[i] = db;
    else if (!known(db) || da == db)
      out[i] = da;
    else
      return fail("shapes ", toString(a), " and ", toString(b),
                  " cannot be broadcast (dimension ", i, ": ", da, " vs ", db,
                  ")");
  }
  return out;
}

ShapeOr broadcast(const std::vector<Dims> &shapes) {
  Dims out;
  for (const Dims &s : shapes) {
    ShapeOr r = broadcast(out, s);
    if (!r)
      return r;
    out = *r;
  }
  return out;
}

ShapeOr broadcastTo(const Dims &from, const Dims &to) {
  if (from.size() > to.size())
    return fail("cannot broadcast ", toString(from), " to lower rank ",
                toString(to));
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[i], t = to[i + offset];
    if (f != 1 && known(f) && known(t) && f != t)
      return fail("cannot broadcast ", toString(from), " to ", toString(to));
  }
  return to;
}

ShapeOr matmul(const Dims &a, const Dims &b, bool transposeA, bool transposeB) {
  if (a.size() < 2 || b.size() < 2)
    return fail("matmul operands must have rank >= 2, got ", toString(a),
                " and ", toString(b));
  size_t ra = a.size(), rb = b.size();
  int64_t m = transposeA ? a[ra - 1] : a[ra - 2];
  int64_t ka = transposeA ? a[ra - 2] : a[ra - 1];
  int64_t kb = transposeB ? b[rb - 1] : b[rb - 2];
  int64_t n = transposeB ? b[rb - 2] : b[rb - 1];
  if (known(ka) && known(kb) && ka != kb)
    return fail("matmul inner dimensions differ: ", toString(a),
                transposeA ? "^T" : "", " x ", toString(b),
                transposeB ? "^T" : "", " (", ka, " vs ", kb, ")");
  ShapeOr batch =
      broadcast(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
  if (!batch)
    return fail("matmul batch dimensions: ", batch.message());
  Dims out = *batch;
  out.push_back(m);
  out.push_back(n);
  return out;
}

std::optional<Padding> parsePadding(const std::string &padding) {
  if (padding == "SAME")
    return Padding::Same;
  if (padding == "VALID")
    return Padding::Valid;
  return std::nullopt;
}

int64_t convOutputSize(int64_t in, int64_t window, int64_t stride,
                       int64_t dilation, Padding padding) {
  if (!known(in))
    return kUnknownDim;
  int64_t effective = (window - 1) * dilation + 1;
  if (padding == Padding::Same)
    return (in + stride - 1) / stride;
  if (in < effective)
    return 0;
  return (in - effective) / stride + 1;
}

int64_t convPadBefore(int64_t in, int64_t window, int64_t stride,
                      int64_t dilation, Padding padding) {
  if (padding == Padding::Valid)
    return 0;
  int64_t out = convOutputSize(in, window, stride, dilation, padding);
  int64_t effective = (window - 1) * dilation + 1;
  int64_t total = std::max<int64_t>(0, (out - 1) * stride + effective - in);
  return total / 2;
}

namespace {
std::optional<std::string> checkWindow(const char *what, const Dims &v) {
  if (v.size() != 2)
    return std::string(what) + " must have 2 values, got " +
           str(static_cast<int64_t>(v.size()));
  for (int64_t x : v)
    if (x < 1)
      return std::string(what) + " must be positive, got " + toString(v);
  return std::nullopt;
}
} // namespace

ShapeOr conv2d(const Dims &input, const Dims &filter, const Dims &strides,
               const Dims &dilations, Padding padding) {
  if (input.size() != 4)
    return fail("conv2d input must be NHWC (rank 4), got ", toString(input));
  if (filter.size() != 4)
    return fail("conv2d filter must be HWIO (rank 4), got ", toString(filter));
  if (auto e = checkWindow("strides", strides))
    return ShapeOr::error(*e);
  if (auto e = checkWindow("dilations", dilations))
    return ShapeOr::error(*e);
  if (known(input[3]) && known(filter[2]) && input[3] != filter[2])
    return fail("conv2d input channels ", input[3],
                " do not match filter input channels ", filter[2], " (input ",
                toString(input), ", filter ", toString(filter), ")");
  for (int i = 0; i < 2; ++i) {
    if (!known(filter[i]))
      return fail("conv2d filter spatial size must be known, got ",
                  toString(filter));
    int64_t eff = (filter[i] - 1) * dilations[i] + 1;
    if (padding == Padding::Valid && known(input[1 + i]) && input[1 + i] < eff)
      return fail("conv2d VALID window ", eff, " is larger than input ",
                  toString(input));
  }
  return Dims{
      input[0],
      convOutputSize(input[1], filter[0], strides[0], dilations[0], padding),
      convOutputSize(input[2], filter[1], strides[1], dilations[1], padding),
      filter[3]};
}

ShapeOr pool2d(const Dims &input, const Dims &ksize, const Dims &strides,
               Padding padding) {
  if (input.size() != 4)
    return fail("pooling input must be NHWC (rank 4), got ", toString(input));
  if (auto e = checkWindow("ksize", ksize))
    return ShapeOr::error(*e);
  if (auto e = checkWindow("strides", strides))
    return ShapeOr::error(*e);
  for (int i = 0; i < 2; ++i)
    if (padding == Padding::Valid && known(input[1 + i]) &&
        input[1 + i] < ksize[i])
      return fail("pooling VALID window ", toString(ksize),
                  " is larger than input ", toString(input));
  return Dims{
      input[0], convOutputSize(input[1], ksize[0], strides[0], 1, padding),
      convOutputSize(input[2], ksize[1], strides[1], 1, padding), input[3]};
}

namespace {
/// Whether `got` (a gradient) fits `want` (the forward result's shape):
/// same rank, and equal wherever both are known.
bool fits(const Dims &got, const Dims &want) {
  if (got.size() != want.size())
    return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (known(got[i]) && known(want[i]) && got[i] != want[i])
      return false;
  return true;
}

/// The shape check shared by the four gradient ops: the forward result over
/// the recovered operands must fit the incoming gradient.
ShapeOr checkGradient(const char *what, const ShapeOr &forward,
                      const Dims &gradOutput, Dims result) {
  if (!forward)
    return ShapeOr::error(std::string(what) + ": " + forward.message());
  if (!fits(gradOutput, *forward))
    return fail(what, " grad_output ", toString(gradOutput),
                " does not match the forward result ", toString(*forward));
  return result;
}
} // namespace

ShapeOr conv2dBackpropInput(const Dims &gradOutput, const Dims &filter,
                            const Dims &inputSize, const Dims &strides,
                            const Dims &dilations, Padding padding) {
  if (gradOutput.size() != 4)
    return fail("conv2d_backprop_input grad_output must be NHWO (rank 4), "
                "got ",
                toString(gradOutput));
  if (filter.size() != 4)
    return fail("conv2d_backprop_input filter must be HWIO (rank 4), got ",
                toString(filter));
  if (auto e = checkWindow("input_size", inputSize))
    return ShapeOr::error(*e);
  Dims input = {gradOutput[0], inputSize[0], inputSize[1], filter[2]};
  return checkGradient("conv2d_backprop_input",
                       conv2d(input, filter, strides, dilations, padding),
                       gradOutput, input);
}

ShapeOr conv2dBackpropFilter(const Dims &input, const Dims &gradOutput,
                             const Dims &filterSize, const Dims &strides,
                             const Dims &dilations, Padding padding) {
  if (input.size() != 4)
    return fail("conv2d_backprop_filter input must be NHWC (rank 4), got ",
                toString(input));
  if (gradOutput.size() != 4)
    return fail("conv2d_backprop_filter grad_output must be NHWO (rank 4), "
                "got ",
                toString(gradOutput));
  if (auto e = checkWindow("filter_size", filterSize))
    return ShapeOr::error(*e);
  Dims filter = {filterSize[0], filterSize[1], input[3], gradOutput[3]};
  return checkGradient("conv2d_backprop_filter",
                       conv2d(input, filter, strides, dilations, padding),
                       gradOutput, filter);
}

ShapeOr depthwiseConv2d(const Dims &input, const Dims &filter,
                        const Dims &strides, const Dims &dilations,
                        Padding padding) {
  if (input.size() != 4)
    return fail("depthwise_conv2d input must be NHWC (rank 4), got ",
                toString(input));
  if (filter.size() != 4)
    return fail("depthwise_conv2d filter must be [height, width, in, "
                "multiplier] (rank 4), got ",
                toString(filter));
  if (auto e = checkWindow("strides", strides))
    return ShapeOr::error(*e);
  if (auto e = checkWindow("dilations", dilations))
    return ShapeOr::error(*e);
  if (known(input[3]) && known(filter[2]) && input[3] != filter[2])
    return fail("depthwise_conv2d input channels ", input[3],
                " do not match filter input channels ", filter[2], " (input ",
                toString(input), ", filter ", toString(filter), ")");
  for (int i = 0; i < 2; ++i) {
    if (!known(filter[i]))
      return fail("depthwise_conv2d filter spatial size must be known, got ",
                  toString(filter));
    int64_t eff = (filter[i] - 1) * dilations[i] + 1;
    if (padding == Padding::Valid && known(input[1 + i]) && input[1 + i] < eff)
      return fail("depthwise_conv2d VALID window ", eff,
                  " is larger than input ", toString(input));
  }
  int64_t c = known(input[3]) ? input[3] : filter[2];
  return Dims{
      input[0],
      convOutputSize(input[1], filter[0], strides[0], dilations[0], padding),
      convOutputSize(input[2], filter[1], strides[1], dilations[1], padding),
      known(c) && known(filter[3]) ? c * filter[3] : kUnknownDim};
}

ShapeOr depthwiseConv2dBackpropInput(const Dims &gradOutput, const Dims &filter,
                                     const Dims &inputSize, const Dims &strides,
                                     const Dims &dilations, Padding padding) {
  if (gradOutput.size() != 4)
    return fail("depthwise_conv2d_backprop_input grad_output must be NHWC "
                "(rank 4), got ",
                toString(gradOutput));
  if (filter.size() != 4)
    return fail("depthwise_conv2d_backprop_input filter must be [height, "
                "width, in, multiplier] (rank 4), got ",
                toString(filter));
  if (auto e = checkWindow("input_size", inputSize))
    return ShapeOr::error(*e);
  Dims input = {gradOutput[0], inputSize[0], inputSize[1], filter[2]};
  return checkGradient(
      "depthwise_conv2d_backprop_input",
      depthwiseConv2d(input, filter, strides, dilations, padding), gradOutput,
      input);
}

ShapeOr depthwiseConv2dBackpropFilter(const Dims &input, const Dims &gradOutput,
                                      const Dims &filterSize,
                                      const Dims &strides,
                                      const Dims &dilations, Padding padding) {
  if (input.size() != 4)
    return fail("depthwise_conv2d_backprop_filter input must be NHWC (rank "
                "4), got ",
                toString(input));
  if (gradOutput.size() != 4)
    return fail("depthwise_conv2d_backprop_filter grad_output must be NHWC "
                "(rank 4), got ",
                toString(gradOutput));
  if (auto e = checkWindow("filter_size", filterSize))
    return ShapeOr::error(*e);
  if (!known(input[3]) || !known(gradOutput[3]) || input[3] == 0 ||
      gradOutput[3] % input[3] != 0)
    return fail("depthwise_conv2d_backprop_filter grad_output channels ",
                gradOutput[3], " must be a known multiple of the input's ",
                input[3]);
  Dims filter = {filterSize[0], filterSize[1], input[3],
                 gradOutput[3] / input[3]};
  return checkGradient(
      "depthwise_conv2d_backprop_filter",
      depthwiseConv2d(input, filter, strides, dilations, padding), gradOutput,
      filter);
}

ShapeOr maxPoolGrad(const Dims &input, const Dims &gradOutput,
                    const Dims &ksize, const Dims &strides, Padding padding) {
  return checkGradient("max_pool_grad", pool2d(input, ksize, strides, padding),
                       gradOutput, input);
}

ShapeOr avgPoolGrad(const Dims &gradOutput, const Dims &inputSize,
                    const Dims &ksize, const Dims &strides, Padding padding) {
  if (gradOutput.size() != 4)
    return fail("avg_pool_grad grad_output must be NHWC (rank 4), got ",
                toString(gradOutput));
  if (auto e = checkWindow("input_size", inputSize))
    return ShapeOr::error(*e);
  Dims input = {gradOutput[0], inputSize[0], inputSize[1], gradOutput[3]};
  return checkGradient("avg_pool_grad", pool2d(input, ksize, strides, padding),
                       gradOutput, input);
}

ShapeOr batchNorm(const Dims &x, const Dims &scale, const Dims &offset,
                  int64_t axis) {
  int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 1)
    return fail("x must have rank >= 1");
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  Dims channels = {x[*a]};
  for (const auto &[what, dims] :
       {std::pair{"scale", &scale}, {"offset", &offset}}) {
    if (!isCompatible(*dims, channels))
      return fail(what, " ", toString(*dims), " must have the shape ",
                  toString(channels), " of x's channel dim ", *a);
  }
  if (!known(channels[0]))
    channels[0] = known(scale[0]) ? scale[0] : offset[0];
  return channels;
}

ShapeOr reduce(const Dims &input, const std::optional<Dims> &axes,
               bool keepDims) {
  int64_t rank = static_cast<int64_t>(input.size());
  Dims norm;
  if (axes) {
    if (auto e = normalizeAxes(*axes, rank, norm))
      return ShapeOr::error(*e);
  } else {
    for (int64_t i = 0; i < rank; ++i)
      norm.push_back(i);
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = std::binary_search(norm.begin(), norm.end(), i);
    if (!reduced)
      out.push_back(input[i]);
    else if (keepDims)
      out.push_back(1);
  }
  return out;
}

ShapeOr argReduce(const Dims &input, int64_t axis) {
  int64_t rank = static_cast<int64_t>(input.size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  Dims out = input;
  out.erase(out.begin() + *a);
  return out;
}

ShapeOr reshape(const Dims &input, const Dims &target) {
  int64_t inferIndex = -1, knownProduct = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferIndex >= 0)
        return fail("reshape target ", toString(target),
                    " has more than one -1");
      inferIndex = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      return fail("reshape target ", toString(target),
                  " has a negative dimension");
    } else {
      knownProduct *= target[i];
    }
  }
  int64_t in = numElements(input);
  Dims out = target;
  if (inferIndex >= 0) {
    if (in == kUnknownDim)
      return out; // resolved at run time
    if (knownProduct == 0 || in % knownProduct != 0)
      return fail("cannot reshape ", toString(input), " (", in,
                  " elements) to ", toString(target));
    out[inferIndex] = in / knownProduct;
    return out;
  }
  if (in != kUnknownDim && in != knownProduct)
    return fail("cannot reshape ", toString(input), " (", in, " elements) to ",
                toString(target), " (", knownProduct, " elements)");
  return out;
}

ShapeOr transpose(const Dims &input, const Dims &perm) {
  int64_t rank = static_cast<int64_t>(input.size());
  if (static_cast<int64_t>(perm.size()) != rank)
    return fail("permutation ", toString(perm), " does not match rank ", rank);
  Dims seen(rank, 0), out(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]++)
      return fail(toString(perm), " is not a permutation of rank ", rank);
    out[i] = input[perm[i]];
  }
  return out;
}

ShapeOr concat(const std::vector<Dims> &inputs, int64_t axis) {
  if (inputs.empty())
    return fail("concat needs at least one input");
  int64_t rank = static_cast<int64_t>(inputs[0].size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  Dims out = inputs[0];
  bool runTimeAxis = false;
  for (size_t k = 1; k < inputs.size(); ++k) {
    const Dims &s = inputs[k];
    if (static_cast<int64_t>(s.size()) != rank)
      return fail("concat inputs have different ranks: ", toString(inputs[0]),
                  " and ", toString(s));
    for (int64_t i = 0; i < rank; ++i) {
      if (i == *a) {
        runTimeAxis |= !known(out[i]) || !known(s[i]);
        out[i] = known(out[i]) && known(s[i]) ? out[i] + s[i] : kUnknownDim;
      } else if (known(out[i]) && known(s[i]) && out[i] != s[i]) {
        return fail("concat inputs differ outside axis ", *a, ": ",
                    toString(inputs[0]), " and ", toString(s));
      } else if (!known(out[i])) {
        out[i] = s[i];
      }
    }
  }
  // A run-time dimension is the batch (or a number of values); a sum of
  // one with anything is neither, and nothing could size the result.
  if (runTimeAxis)
    return fail("concat along axis ", *a,
                ", a dimension of run-time size (the batch): the result's "
                "size there would not be the batch");
  return out;
}

ShapeOr slice(const Dims &input, const Dims &begin, const Dims &size) {
  size_t rank = input.size();
  if (begin.size() != rank || size.size() != rank)
    return fail("slice begin ", toString(begin), " and size ", toString(size),
                " must both have rank ", rank, " like the input ",
                toString(input));
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (begin[i] < 0)
      return fail("slice begin ", toString(begin), " is negative");
    if (size[i] < -1)
      return fail("slice size ", toString(size), " is invalid");
    if (size[i] == -1) {
      if (!known(input[i])) {
        out[i] = kUnknownDim;
        continue;
      }
      out[i] = input[i] - begin[i];
    } else {
      out[i] = size[i];
    }
    if (known(input[i]) && (begin[i] + out[i] > input[i] || out[i] < 0))
      return fail("slice [", begin[i], ", ", begin[i] + out[i],
                  ") is out of bounds for dimension ", i, " of ",
                  toString(input));
  }
  return out;
}

ShapeOr pad(const Dims &input, const Dims &paddings) {
  if (paddings.size() != 2 * input.size())
    return fail("paddings ", toString(paddings),
                " must have 2 * rank = ", 2 * input.size(), " values");
  Dims out(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    if (paddings[2 * i] < 0 || paddings[2 * i + 1] < 0)
      return fail("paddings ", toString(paddings), " must be non-negative");
    out[i] = known(input[i]) ? input[i] + paddings[2 * i] + paddings[2 * i + 1]
                             : kUnknownDim;
  }
  return out;
}

ShapeOr squeeze(const Dims &input, const std::optional<Dims> &axes) {
  int64_t rank = static_cast<int64_t>(input.size());
  Dims norm;
  if (axes) {
    if (auto e = normalizeAxes(*axes, rank, norm))
      return ShapeOr::error(*e);
    for (int64_t a : norm)
      if (input[a] != 1)
        return fail("cannot squeeze dimension ", a, " of ", toString(input),
                    ": its size is not 1");
  } else {
    for (int64_t i = 0; i < rank; ++i)
      if (input[i] == 1)
        norm.push_back(i);
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i)
    if (!std::binary_search(norm.begin(), norm.end(), i))
      out.push_back(input[i]);
  return out;
}

ShapeOr reverse(const Dims &input, const Dims &axes) {
  Dims norm;
  if (auto e = normalizeAxes(axes, static_cast<int64_t>(input.size()), norm))
    return ShapeOr::error(*e);
  return input;
}

ShapeOr expandDims(const Dims &input, int64_t axis) {
  int64_t rank = static_cast<int64_t>(input.size());
  auto a = normalizeAxis(axis, rank + 1);
  if (!a)
    return fail("axis ", axis, " is out of range for expand_dims of rank ",
                rank);
  Dims out = input;
  out.insert(out.begin() + *a, 1);
  return out;
}

ShapeOr gather(const Dims &params, const Dims &indices, int64_t axis) {
  int64_t rank = static_cast<int64_t>(params.size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for params ",
                toString(params));
  Dims out(params.begin(), params.begin() + *a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), params.begin() + *a + 1, params.end());
  return out;
}

ShapeOr scatter(const Dims &ref, const Dims &indices, const Dims &updates) {
  if (ref.empty())
    return fail("scatter needs ref of rank >= 1, got a scalar");
  Dims want = indices;
  want.insert(want.end(), ref.begin() + 1, ref.end());
  bool ok = want.size() == updates.size();
  for (size_t i = 0; ok && i < want.size(); ++i)
    ok = want[i] == kUnknownDim || updates[i] == kUnknownDim ||
         want[i] == updates[i];
  if (!ok)
    return fail("updates ", toString(updates),
                " must have the shape indices + ref[1:] = ", toString(want));
  return ref;
}

ShapeOr unsortedSegmentSum(const Dims &data, const Dims &segmentIds,
                           const Dims &numSegmentsLike) {
  if (data.empty())
    return fail("data must have rank >= 1, got a scalar");
  if (segmentIds.size() != 1)
    return fail("segment_ids must have rank 1, got ", toString(segmentIds));
  if (segmentIds[0] != kUnknownDim && data[0] != kUnknownDim &&
      segmentIds[0] != data[0])
    return fail("segment_ids ", toString(segmentIds),
                " must have one id per row of data ", toString(data));
  if (numSegmentsLike.empty())
    return fail("num_segments_like must have rank >= 1, got a scalar");
  Dims out = data;
  out[0] = numSegmentsLike[0];
  return out;
}

ShapeOr oneHot(const Dims &indices, int64_t depth, int64_t axis) {
  if (depth < 1)
    return fail("one_hot depth must be positive, got ", depth);
  int64_t rank = static_cast<int64_t>(indices.size());
  auto a = normalizeAxis(axis, rank + 1);
  if (!a)
    return fail("axis ", axis, " is out of range for one_hot of rank ", rank);
  Dims out = indices;
  out.insert(out.begin() + *a, depth);
  return out;
}

ShapeOr argsort(const Dims &input, int64_t axis, int64_t k) {
  int64_t rank = static_cast<int64_t>(input.size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  Dims out = input;
  if (k == -1)
    return out;
  if (k < 0)
    return fail("k must be >= 0 (or -1 for the whole axis), got ", k);
  if (!known(input[*a]))
    return fail("k = ", k, " needs a static size of axis ", *a,
                ", which is only known at run time");
  if (k > input[*a])
    return fail("k = ", k, " is larger than the size ", input[*a], " of axis ",
                *a);
  out[*a] = k;
  return out;
}

namespace {
/// `a` and `b` have one rank and agree on every dim but `axis` (unknown
/// dims agree with any).
bool sameBesideAxis(const Dims &a, const Dims &b, int64_t axis) {
  if (a.size() != b.size())
    return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (static_cast<int64_t>(d) != axis && known(a[d]) && known(b[d]) &&
        a[d] != b[d])
      return false;
  return true;
}
} // namespace

ShapeOr takeAlongAxis(const Dims &arr, const Dims &indices, int64_t axis) {
  int64_t rank = static_cast<int64_t>(arr.size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  if (!sameBesideAxis(arr, indices, *a))
    return fail("indices ", toString(indices), " must have the shape of ",
                toString(arr), " except along axis ", *a);
  Dims out = indices;
  for (size_t d = 0; d < out.size(); ++d)
    if (static_cast<int64_t>(d) != *a && !known(out[d]))
      out[d] = arr[d];
  return out;
}

ShapeOr scatterAlongAxis(const Dims &ref, const Dims &indices,
                         const Dims &updates, int64_t axis) {
  int64_t rank = static_cast<int64_t>(ref.size());
  auto a = normalizeAxis(axis, rank);
  if (!a)
    return fail("axis ", axis, " is out of range for rank ", rank);
  if (!isCompatible(indices, updates))
    return fail("updates ", toString(updates),
                " must have the shape of indices ", toString(indices));
  if (!sameBesideAxis(ref, indices, *a))
    return fail("indices ", toString(indices), " must have the shape of ",
                toString(ref), " except along axis ", *a);
  return ref;
}

namespace {
ShapeOr resized(const Dims &in, const Dims &size, const char *what,
                const char *sizeName) {
  if (in.size() != 4)
    return fail(what, " must be NHWC (rank 4), got ", toString(in));
  if (size.size() != 2 || size[0] < 1 || size[1] < 1)
    return fail(sizeName, " must be [height, width], both >= 1, got ",
                toString(size));
  if (!known(in[1]) || !known(in[2]))
    return fail(what, " ", toString(in),
                " must have a static height and width");
  return Dims{in[0], size[0], size[1], in[3]};
}
} // namespace

ShapeOr resizeImages(const Dims &images, const Dims &size) {
  return resized(images, size, "images", "size");
}

ShapeOr resizeImagesGrad(const Dims &gradOutput, const Dims &inputSize) {
  return resized(gradOutput, inputSize, "grad_output", "input_size");
}

ShapeOr softmaxCrossEntropy(const Dims &logits, const Dims &labels) {
  if (logits.empty())
    return fail("logits must have rank >= 1");
  if (logits.size() != labels.size())
    return fail("labels ", toString(labels), " must have the shape of logits ",
                toString(logits));
  Dims out;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (known(logits[i]) && known(labels[i]) && logits[i] != labels[i])
      return fail("labels ", toString(labels),
                  " must have the shape of logits ", toString(logits));
    if (i + 1 < logits.size())
      out.push_back(known(logits[i]) ? logits[i] : labels[i]);
  }
  return out;
}

ShapeOr sparseSoftmaxCrossEntropy(const Dims &logits, const Dims &labels) {
  if (logits.empty())
    return fail("logits must have rank >= 1");
  if (labels.size() + 1 != logits.size())
    return fail("labels ", toString(labels), " must have the shape of logits ",
                toString(logits), " without its last dimension");
  Dims out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (known(logits[i]) && known(labels[i]) && logits[i] != labels[i])
      return fail("labels ", toString(labels), " do not match logits ",
                  toString(logits));
    out.push_back(known(logits[i]) ? logits[i] : labels[i]);
  }
  return out;
}

ShapeOr layerNorm(const Dims &x, const Dims &gamma, const Dims &beta,
                  int64_t beginNormAxis, int64_t beginParamsAxis) {
  int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 1)
    return fail("x must have rank >= 1");
  auto norm = normalizeAxis(beginNormAxis, rank);
  if (!norm)
    return fail("begin_norm_axis ", beginNormAxis, " is out of range for rank ",
                rank);
  auto params = normalizeAxis(beginParamsAxis, rank);
  if (!params)
    return fail("begin_params_axis ", beginParamsAxis,
                " is out of range for rank ", rank);
  if (*params < *norm)
    return fail("begin_params_axis ", beginParamsAxis,
                " must not come before begin_norm_axis ", beginNormAxis);
  Dims expected(x.begin() + *params, x.end());
  for (const auto &[what, dims] :
       {std::pair{"gamma", &gamma}, {"beta", &beta}}) {
    if (!isCompatible(*dims, expected))
      return fail(what, " ", toString(*dims), " must have the shape ",
                  toString(expected), " of x's dims from ", *params);
  }
  return x;
}

ShapeOr attentionSoftmax(const Dims &logits, const std::optional<Dims> &mask) {
  if (logits.size() < 2)
    return fail("logits must have rank >= 2 ([..., T, S]), got ",
                toString(logits));
  if (!mask)
    return logits;
  bool ok = mask->size() == logits.size();
  for (size_t i = 0; ok && i < logits.size(); ++i)
    ok = (*mask)[i] == 1 || !known((*mask)[i]) || !known(logits[i]) ||
         (*mask)[i] == logits[i];
  if (!ok)
    return fail("mask ", toString(*mask), " must have the rank of logits ",
                toString(logits), " and each dim 1 or logits'");
  return logits;
}

} // namespace shape
} // namespace estc
