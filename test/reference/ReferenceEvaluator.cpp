//===- ReferenceEvaluator.cpp - A plain interpreter of model graphs -----===//

#include "test/reference/ReferenceEvaluator.h"

#include "lib/Graph/Topology.h"
#include "lib/Random/Philox.h"
#include "lib/Shape/ShapeFunctions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace estc {
namespace reference {

namespace g = ::estc::graph;
using shape::Dims;

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error("reference: " + message);
}

std::string dtypeName(g::DataType dtype) {
  switch (dtype) {
  case g::DT_FLOAT:
    return "f32";
  case g::DT_DOUBLE:
    return "f64";
  case g::DT_INT32:
    return "i32";
  case g::DT_INT64:
    return "i64";
  case g::DT_BOOL:
    return "i1";
  case g::DT_HALF:
    return "f16";
  case g::DT_BFLOAT16:
    return "bf16";
  default:
    return "invalid";
  }
}

bool isFloat(g::DataType t) {
  return t == g::DT_FLOAT || t == g::DT_DOUBLE || t == g::DT_HALF ||
         t == g::DT_BFLOAT16;
}
bool isInteger(g::DataType t) { return t == g::DT_INT32 || t == g::DT_INT64; }

/// Rounds a double to what `dtype` can hold: integers truncate toward zero
/// (NaN -> 0, saturating at the type's range; i32 wraps modulo 2^32 within
/// the i64 range), booleans become 0/1. Floats are kept as they are.
double normalize(g::DataType dtype, double v) {
  switch (dtype) {
  case g::DT_BOOL:
    return v != 0 ? 1.0 : 0.0;
  case g::DT_INT32: {
    if (std::isnan(v))
      return 0;
    double t = std::trunc(v);
    if (t >= 9.2233720368547758e18 || t <= -9.2233720368547758e18)
      return t > 0 ? std::numeric_limits<int32_t>::max()
                   : std::numeric_limits<int32_t>::min();
    return static_cast<double>(
        static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(t))));
  }
  case g::DT_INT64: {
    if (std::isnan(v))
      return 0;
    double t = std::trunc(v);
    if (t >= 9.2233720368547758e18)
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    if (t <= -9.2233720368547758e18)
      return static_cast<double>(std::numeric_limits<int64_t>::min());
    return t;
  }
  default:
    return v;
  }
}

int64_t product(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

Dims stridesOf(const Dims &dims) {
  Dims strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

/// Calls fn(index, linear) for every element of `dims` in row-major order.
void forEachIndex(const Dims &dims,
                  const std::function<void(const Dims &, int64_t)> &fn) {
  int64_t n = product(dims);
  Dims index(dims.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(index, linear);
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < dims[d])
        break;
      index[d] = 0;
    }
  }
}

int64_t linearIndex(const Dims &index, const Dims &strides) {
  int64_t linear = 0;
  for (size_t d = 0; d < index.size(); ++d)
    linear += index[d] * strides[d];
  return linear;
}

/// For each element of `out` (row-major), the linear index of the element of
/// a tensor of shape `in` that NumPy broadcasting maps to it.
std::vector<int64_t> broadcastOffsets(const Dims &in, const Dims &out) {
  size_t shift = out.size() - in.size();
  Dims inStrides = stridesOf(in);
  Dims strides(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1)
      strides[d + shift] = inStrides[d];
  std::vector<int64_t> offsets(product(out));
  forEachIndex(out, [&](const Dims &index, int64_t linear) {
    offsets[linear] = linearIndex(index, strides);
  });
  return offsets;
}

double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}
double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::min(a, b);
}

/// One node being evaluated: its definition, its input values, attribute
/// accessors and error reporting that names the node.
struct OpContext {
  const g::NodeDef &node;
  const std::vector<const Value *> &inputs;

  [[noreturn]] void error(const std::string &message) const {
    fail("node '" + node.name() + "' (" + node.op() + "): " + message);
  }

  const Value &input(size_t k) const { return *inputs[k]; }

  void expectInputs(size_t minCount, size_t maxCount) const {
    if (inputs.size() < minCount || inputs.size() > maxCount) {
      std::string expected = std::to_string(minCount);
      if (maxCount != minCount)
        expected += maxCount == SIZE_MAX ? " or more"
                                         : " to " + std::to_string(maxCount);
      error("expects " + expected + " inputs, got " +
            std::to_string(inputs.size()));
    }
  }

  const g::AttrValue *find(const std::string &name) const {
    auto it = node.attr().find(name);
    return it == node.attr().end() ? nullptr : &it->second;
  }
  const g::AttrValue &require(const std::string &name) const {
    const g::AttrValue *attr = find(name);
    if (!attr)
      error("requires attribute '" + name + "'");
    return *attr;
  }
  int64_t getInt(const std::string &name,
                 std::optional<int64_t> fallback = std::nullopt) const {
    const g::AttrValue *attr = fallback ? find(name) : &require(name);
    if (!attr)
      return *fallback;
    if (!attr->has_i())
      error("attribute '" + name + "' must be an integer");
    return attr->i();
  }
  double getFloat(const std::string &name,
                  std::optional<double> fallback = std::nullopt) const {
    const g::AttrValue *attr = fallback ? find(name) : &require(name);
    if (!attr)
      return *fallback;
    if (attr->has_f())
      return attr->f();
    if (attr->has_i())
      return static_cast<double>(attr->i());
    error("attribute '" + name + "' must be a float");
  }
  bool getBool(const std::string &name, bool fallback) const {
    const g::AttrValue *attr = find(name);
    if (!attr)
      return fallback;
    if (!attr->has_b())
      error("attribute '" + name + "' must be a bool");
    return attr->b();
  }
  std::string getString(const std::string &name) const {
    const g::AttrValue &attr = require(name);
    if (!attr.has_s())
      error("attribute '" + name + "' must be a string");
    return attr.s();
  }
  g::DataType getType(const std::string &name, g::DataType fallback) const {
    const g::AttrValue *attr = find(name);
    if (!attr)
      return fallback;
    if (!attr->has_type())
      error("attribute '" + name + "' must be a type");
    return attr->type();
  }
  /// An integer list (AttrValue.list.i) or a shape (AttrValue.shape).
  std::optional<Dims> findInts(const std::string &name) const {
    const g::AttrValue *attr = find(name);
    if (!attr)
      return std::nullopt;
    if (attr->has_shape())
      return Dims(attr->shape().dim().begin(), attr->shape().dim().end());
    if (attr->has_list() && attr->list().f_size() == 0 &&
        attr->list().s_size() == 0)
      return Dims(attr->list().i().begin(), attr->list().i().end());
    error("attribute '" + name + "' must be a list of integers");
  }
  Dims getInts(const std::string &name) const {
    std::optional<Dims> ints = findInts(name);
    if (!ints)
      error("requires attribute '" + name + "'");
    return *ints;
  }
  Dims getInts(const std::string &name, const Dims &fallback) const {
    std::optional<Dims> ints = findInts(name);
    return ints ? *ints : fallback;
  }

  /// Unwraps a shape-function result, reporting its error on this node.
  Dims check(const shape::ShapeOr &result) const {
    if (!result)
      error(result.message());
    return *result;
  }
  int64_t axis(int64_t axis, int64_t rank) const {
    std::optional<int64_t> normalized = shape::normalizeAxis(axis, rank);
    if (!normalized)
      error("axis " + std::to_string(axis) + " is out of range for rank " +
            std::to_string(rank));
    return *normalized;
  }
  void expectFloat(const Value &v, const char *what) const {
    if (!isFloat(v.dtype))
      error(std::string(what) + " must be a float tensor, got " +
            dtypeName(v.dtype));
  }
  void expectInteger(const Value &v, const char *what) const {
    if (!isInteger(v.dtype))
      error(std::string(what) + " must be an i32 or i64 tensor, got " +
            dtypeName(v.dtype));
  }
  void expectBool(const Value &v, const char *what) const {
    if (v.dtype != g::DT_BOOL)
      error(std::string(what) + " must be an i1 tensor, got " +
            dtypeName(v.dtype));
  }
};

Value makeValue(g::DataType dtype, Dims shape) {
  Value v;
  v.dtype = dtype;
  v.data.assign(product(shape), 0.0);
  v.shape = std::move(shape);
  return v;
}

// --- Sources ---------------------------------------------------------------

Value constant(const OpContext &ctx) {
  ctx.expectInputs(0, 0);
  const g::AttrValue &attr = ctx.require("value");
  if (!attr.has_tensor())
    ctx.error("attribute 'value' must be a tensor");
  const g::TensorProto &t = attr.tensor();
  Dims shape(t.shape().dim().begin(), t.shape().dim().end());
  for (int64_t d : shape)
    if (d < 0)
      ctx.error("constant shape must be fully known, got " +
                shape::toString(shape));
  std::vector<double> values;
  switch (t.dtype()) {
  case g::DT_FLOAT:
  case g::DT_HALF:
  case g::DT_BFLOAT16:
    values.assign(t.float_val().begin(), t.float_val().end());
    break;
  case g::DT_DOUBLE:
    values.assign(t.double_val().begin(), t.double_val().end());
    break;
  case g::DT_INT32:
    values.assign(t.int_val().begin(), t.int_val().end());
    break;
  case g::DT_INT64:
    values.assign(t.int64_val().begin(), t.int64_val().end());
    break;
  case g::DT_BOOL:
    for (bool b : t.bool_val())
      values.push_back(b ? 1.0 : 0.0);
    break;
  default:
    ctx.error("constant has invalid dtype");
  }
  Value v = makeValue(t.dtype(), shape);
  if (values.size() == 1)
    std::fill(v.data.begin(), v.data.end(), values.front());
  else if (static_cast<int64_t>(values.size()) == v.numElements())
    v.data = values;
  else
    ctx.error("constant holds " + std::to_string(values.size()) +
              " values but its shape " + shape::toString(shape) + " needs " +
              std::to_string(v.numElements()) + " (or 1 to splat)");
  return v;
}

// --- Elementwise -----------------------------------------------------------

Value unary(const OpContext &ctx, const std::function<double(double)> &fn) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Value out = makeValue(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    out.data[i] = normalize(x.dtype, fn(x.data[i]));
  return out;
}

Value floatUnary(const OpContext &ctx,
                 const std::function<double(double)> &fn) {
  ctx.expectInputs(1, 1);
  ctx.expectFloat(ctx.input(0), "x");
  return unary(ctx, fn);
}

/// Applies fn over the broadcast of all inputs; the result has `dtype`.
Value broadcastMap(const OpContext &ctx, g::DataType dtype,
                   const std::function<double(const double *)> &fn) {
  std::vector<Dims> shapes;
  for (const Value *v : ctx.inputs)
    shapes.push_back(v->shape);
  Dims outShape = ctx.check(shape::broadcast(shapes));
  std::vector<std::vector<int64_t>> offsets;
  for (const Value *v : ctx.inputs)
    offsets.push_back(broadcastOffsets(v->shape, outShape));
  Value out = makeValue(dtype, outShape);
  std::vector<double> args(ctx.inputs.size());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    for (size_t k = 0; k < ctx.inputs.size(); ++k)
      args[k] = ctx.inputs[k]->data[offsets[k][i]];
    out.data[i] = normalize(dtype, fn(args.data()));
  }
  return out;
}

void expectSameDtype(const OpContext &ctx, const Value &a, const Value &b) {
  if (a.dtype != b.dtype)
    ctx.error("operands have different dtypes " + dtypeName(a.dtype) + " and " +
              dtypeName(b.dtype) + " (no implicit promotion)");
}

Value binary(const OpContext &ctx,
             const std::function<double(double, double)> &fn) {
  ctx.expectInputs(2, 2);
  expectSameDtype(ctx, ctx.input(0), ctx.input(1));
  return broadcastMap(ctx, ctx.input(0).dtype,
                      [&](const double *a) { return fn(a[0], a[1]); });
}

Value divide(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  expectSameDtype(ctx, ctx.input(0), ctx.input(1));
  bool integer = !isFloat(ctx.input(0).dtype);
  return broadcastMap(ctx, ctx.input(0).dtype, [&](const double *a) {
    if (integer && a[1] == 0)
      ctx.error("integer division by zero");
    return integer ? std::trunc(a[0] / a[1]) : a[0] / a[1];
  });
}

Value compare(const OpContext &ctx,
              const std::function<bool(double, double)> &fn) {
  ctx.expectInputs(2, 2);
  expectSameDtype(ctx, ctx.input(0), ctx.input(1));
  return broadcastMap(ctx, g::DT_BOOL,
                      [&](const double *a) { return fn(a[0], a[1]) ? 1 : 0; });
}

Value logical(const OpContext &ctx, const std::function<bool(bool, bool)> &fn) {
  ctx.expectInputs(2, 2);
  ctx.expectBool(ctx.input(0), "lhs");
  ctx.expectBool(ctx.input(1), "rhs");
  return broadcastMap(ctx, g::DT_BOOL, [&](const double *a) {
    return fn(a[0] != 0, a[1] != 0) ? 1 : 0;
  });
}

Value select(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  ctx.expectBool(ctx.input(0), "cond");
  expectSameDtype(ctx, ctx.input(1), ctx.input(2));
  return broadcastMap(ctx, ctx.input(1).dtype,
                      [](const double *a) { return a[0] != 0 ? a[1] : a[2]; });
}

Value cast(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  g::DataType dtype = ctx.getType("dtype", g::DT_INVALID);
  if (dtype == g::DT_INVALID)
    ctx.error("requires attribute 'dtype' (a type)");
  const Value &x = ctx.input(0);
  Value out = makeValue(dtype, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.data[i];
    if (dtype == g::DT_FLOAT)
      v = static_cast<float>(v);
    out.data[i] = normalize(dtype, v);
  }
  return out;
}

// --- Linear algebra, convolution, pooling ----------------------------------

Value matmul(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &a = ctx.input(0), &b = ctx.input(1);
  expectSameDtype(ctx, a, b);
  bool ta = ctx.getBool("transpose_a", false);
  bool tb = ctx.getBool("transpose_b", false);
  Dims outShape = ctx.check(shape::matmul(a.shape, b.shape, ta, tb));
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = outShape.size();
  int64_t m = outShape[ro - 2], n = outShape[ro - 1];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  Dims aBatch(a.shape.begin(), a.shape.end() - 2);
  Dims bBatch(b.shape.begin(), b.shape.end() - 2);
  Dims outBatch(outShape.begin(), outShape.end() - 2);
  std::vector<int64_t> aOffsets = broadcastOffsets(aBatch, outBatch);
  std::vector<int64_t> bOffsets = broadcastOffsets(bBatch, outBatch);
  int64_t aRows = a.shape[ra - 2], aCols = a.shape[ra - 1];
  int64_t bRows = b.shape[rb - 2], bCols = b.shape[rb - 1];
  Value out = makeValue(a.dtype, outShape);
  for (size_t batch = 0; batch < aOffsets.size(); ++batch) {
    const double *pa = a.data.data() + aOffsets[batch] * aRows * aCols;
    const double *pb = b.data.data() + bOffsets[batch] * bRows * bCols;
    double *po = out.data.data() + batch * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = ta ? pa[p * aCols + i] : pa[i * aCols + p];
          double y = tb ? pb[j * bCols + p] : pb[p * bCols + j];
          sum += x * y;
        }
        po[i * n + j] = normalize(a.dtype, sum);
      }
  }
  return out;
}

shape::Padding getPadding(const OpContext &ctx) {
  std::string name = ctx.getString("padding");
  std::optional<shape::Padding> padding = shape::parsePadding(name);
  if (!padding)
    ctx.error("padding must be \"SAME\" or \"VALID\", got \"" + name + "\"");
  return *padding;
}

Value conv2d(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &in = ctx.input(0), &filter = ctx.input(1);
  expectSameDtype(ctx, in, filter);
  Dims strides = ctx.getInts("strides", {1, 1});
  Dims dilations = ctx.getInts("dilations", {1, 1});
  shape::Padding padding = getPadding(ctx);
  Dims outShape = ctx.check(
      shape::conv2d(in.shape, filter.shape, strides, dilations, padding));
  int64_t height = in.shape[1], width = in.shape[2], channels = in.shape[3];
  int64_t kh = filter.shape[0], kw = filter.shape[1];
  int64_t padTop =
      shape::convPadBefore(height, kh, strides[0], dilations[0], padding);
  int64_t padLeft =
      shape::convPadBefore(width, kw, strides[1], dilations[1], padding);
  Dims inStrides = stridesOf(in.shape), fStrides = stridesOf(filter.shape);
  Value out = makeValue(in.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    double sum = 0;
    for (int64_t y = 0; y < kh; ++y) {
      int64_t iy = o[1] * strides[0] - padTop + y * dilations[0];
      if (iy < 0 || iy >= height)
        continue;
      for (int64_t x = 0; x < kw; ++x) {
        int64_t ix = o[2] * strides[1] - padLeft + x * dilations[1];
        if (ix < 0 || ix >= width)
          continue;
        const double *pixel = in.data.data() + o[0] * inStrides[0] +
                              iy * inStrides[1] + ix * inStrides[2];
        const double *taps =
            filter.data.data() + y * fStrides[0] + x * fStrides[1] + o[3];
        for (int64_t c = 0; c < channels; ++c)
          sum += pixel[c] * taps[c * fStrides[2]];
      }
    }
    out.data[linear] = normalize(in.dtype, sum);
  });
  return out;
}

/// Max or average pooling; padded positions are excluded (SAME average
/// pooling divides by the number of valid elements, like TF).
Value pool(const OpContext &ctx, bool isMax) {
  ctx.expectInputs(1, 1);
  const Value &in = ctx.input(0);
  Dims ksize = ctx.getInts("ksize");
  Dims strides = ctx.getInts("strides");
  shape::Padding padding = getPadding(ctx);
  Dims outShape = ctx.check(shape::pool2d(in.shape, ksize, strides, padding));
  int64_t height = in.shape[1], width = in.shape[2];
  int64_t padTop =
      shape::convPadBefore(height, ksize[0], strides[0], 1, padding);
  int64_t padLeft =
      shape::convPadBefore(width, ksize[1], strides[1], 1, padding);
  Dims inStrides = stridesOf(in.shape);
  Value out = makeValue(in.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t count = 0;
    for (int64_t y = 0; y < ksize[0]; ++y) {
      int64_t iy = o[1] * strides[0] - padTop + y;
      if (iy < 0 || iy >= height)
        continue;
      for (int64_t x = 0; x < ksize[1]; ++x) {
        int64_t ix = o[2] * strides[1] - padLeft + x;
        if (ix < 0 || ix >= width)
          continue;
        double v = in.data[o[0] * inStrides[0] + iy * inStrides[1] +
                           ix * inStrides[2] + o[3]];
        acc = isMax ? nanMax(acc, v) : acc + v;
        ++count;
      }
    }
    if (!isMax)
      acc /= static_cast<double>(count);
    out.data[linear] = normalize(in.dtype, acc);
  });
  return out;
}

/// The window geometry shared by the gradients of conv2d and pooling.
struct Window {
  int64_t height, width, kh, kw, sh, sw, dh, dw, padTop, padLeft;
  Window(const Dims &inputSize, const Dims &window, const Dims &strides,
         const Dims &dilations, shape::Padding padding)
      : height(inputSize[0]), width(inputSize[1]), kh(window[0]), kw(window[1]),
        sh(strides[0]), sw(strides[1]), dh(dilations[0]), dw(dilations[1]),
        padTop(shape::convPadBefore(height, kh, sh, dh, padding)),
        padLeft(shape::convPadBefore(width, kw, sw, dw, padding)) {}
  /// Calls f(iy, ix, y, x) for each tap (y, x) of output pixel (oy, ox)
  /// that reads an input pixel (iy, ix), in row-major tap order.
  template <typename F> void forEachTap(int64_t oy, int64_t ox, F f) const {
    for (int64_t y = 0; y < kh; ++y) {
      int64_t iy = oy * sh - padTop + y * dh;
      if (iy < 0 || iy >= height)
        continue;
      for (int64_t x = 0; x < kw; ++x) {
        int64_t ix = ox * sw - padLeft + x * dw;
        if (ix >= 0 && ix < width)
          f(iy, ix, y, x);
      }
    }
  }
};

/// conv2d_backprop_input and conv2d_backprop_filter: the forward conv2d's
/// products, accumulated into the input or the filter gradient.
Value conv2dBackprop(const OpContext &ctx, bool wantInput) {
  ctx.expectInputs(2, 2);
  expectSameDtype(ctx, ctx.input(0), ctx.input(1));
  Dims strides = ctx.getInts("strides", {1, 1});
  Dims dilations = ctx.getInts("dilations", {1, 1});
  shape::Padding padding = getPadding(ctx);
  const Value &dy = wantInput ? ctx.input(0) : ctx.input(1);
  Dims inShape, fShape;
  if (wantInput) {
    fShape = ctx.input(1).shape;
    inShape = ctx.check(
        shape::conv2dBackpropInput(dy.shape, fShape, ctx.getInts("input_size"),
                                   strides, dilations, padding));
  } else {
    inShape = ctx.input(0).shape;
    fShape = ctx.check(shape::conv2dBackpropFilter(
        inShape, dy.shape, ctx.getInts("filter_size"), strides, dilations,
        padding));
  }
  const Value &other = ctx.input(wantInput ? 1 : 0);
  Window win({inShape[1], inShape[2]}, {fShape[0], fShape[1]}, strides,
             dilations, padding);
  Dims inStrides = stridesOf(inShape), fStrides = stridesOf(fShape);
  int64_t channels = inShape[3], outChannels = fShape[3];
  Value out = makeValue(dy.dtype, wantInput ? inShape : fShape);
  forEachIndex(dy.shape, [&](const Dims &o, int64_t linear) {
    double g = dy.data[linear];
    win.forEachTap(
        o[1], o[2], [&](int64_t iy, int64_t ix, int64_t y, int64_t x) {
          int64_t pixel =
              o[0] * inStrides[0] + iy * inStrides[1] + ix * inStrides[2];
          int64_t taps = y * fStrides[0] + x * fStrides[1] + o[3];
          for (int64_t c = 0; c < channels; ++c) {
            if (wantInput)
              out.data[pixel + c] += g * other.data[taps + c * outChannels];
            else
              out.data[taps + c * outChannels] += g * other.data[pixel + c];
          }
        });
  });
  for (double &v : out.data)
    v = normalize(out.dtype, v);
  return out;
}

/// depthwise_conv2d (`part` 0) and its input (1) and filter (2) gradients:
/// output channel c * M + m is input channel c times filter[., ., c, m],
/// summed over the taps, accumulated into whichever the part computes.
Value depthwiseConv2d(const OpContext &ctx, int part) {
  ctx.expectInputs(2, 2);
  expectSameDtype(ctx, ctx.input(0), ctx.input(1));
  Dims strides = ctx.getInts("strides", {1, 1});
  Dims dilations = ctx.getInts("dilations", {1, 1});
  shape::Padding padding = getPadding(ctx);
  Dims inShape, fShape, outShape;
  if (part == 0) {
    inShape = ctx.input(0).shape;
    fShape = ctx.input(1).shape;
    outShape = ctx.check(
        shape::depthwiseConv2d(inShape, fShape, strides, dilations, padding));
  } else if (part == 1) {
    outShape = ctx.input(0).shape;
    fShape = ctx.input(1).shape;
    inShape = ctx.check(shape::depthwiseConv2dBackpropInput(
        outShape, fShape, ctx.getInts("input_size"), strides, dilations,
        padding));
  } else {
    inShape = ctx.input(0).shape;
    outShape = ctx.input(1).shape;
    fShape = ctx.check(shape::depthwiseConv2dBackpropFilter(
        inShape, outShape, ctx.getInts("filter_size"), strides, dilations,
        padding));
  }
  Window win({inShape[1], inShape[2]}, {fShape[0], fShape[1]}, strides,
             dilations, padding);
  Dims inStrides = stridesOf(inShape), fStrides = stridesOf(fShape);
  int64_t mult = fShape[3];
  const Value &a = ctx.input(0), &b = ctx.input(1);
  Value out = makeValue(a.dtype, part == 0   ? outShape
                                 : part == 1 ? inShape
                                             : fShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    int64_t c = o[3] / mult, m = o[3] % mult;
    win.forEachTap(
        o[1], o[2], [&](int64_t iy, int64_t ix, int64_t y, int64_t x) {
          int64_t pixel =
              o[0] * inStrides[0] + iy * inStrides[1] + ix * inStrides[2] + c;
          int64_t tap = y * fStrides[0] + x * fStrides[1] + c * mult + m;
          if (part == 0)
            out.data[linear] += a.data[pixel] * b.data[tap];
          else if (part == 1)
            out.data[pixel] += a.data[linear] * b.data[tap];
          else
            out.data[tap] += a.data[pixel] * b.data[linear];
        });
  });
  for (double &v : out.data)
    v = normalize(out.dtype, v);
  return out;
}

/// max_pool_grad (each window's gradient to its first maximum) and
/// avg_pool_grad (shared by the window's valid elements).
Value poolGrad(const OpContext &ctx, bool isMax) {
  ctx.expectInputs(isMax ? 2 : 1, isMax ? 2 : 1);
  const Value &dy = ctx.input(isMax ? 1 : 0);
  Dims ksize = ctx.getInts("ksize");
  Dims strides = ctx.getInts("strides");
  shape::Padding padding = getPadding(ctx);
  Dims inShape;
  if (isMax) {
    expectSameDtype(ctx, ctx.input(0), dy);
    inShape = ctx.check(shape::maxPoolGrad(ctx.input(0).shape, dy.shape, ksize,
                                           strides, padding));
  } else {
    inShape = ctx.check(shape::avgPoolGrad(dy.shape, ctx.getInts("input_size"),
                                           ksize, strides, padding));
  }
  Window win({inShape[1], inShape[2]}, ksize, strides, {1, 1}, padding);
  Dims inStrides = stridesOf(inShape);
  Value out = makeValue(dy.dtype, inShape);
  forEachIndex(dy.shape, [&](const Dims &o, int64_t linear) {
    std::vector<int64_t> taps;
    win.forEachTap(o[1], o[2], [&](int64_t iy, int64_t ix, int64_t, int64_t) {
      taps.push_back(o[0] * inStrides[0] + iy * inStrides[1] +
                     ix * inStrides[2] + o[3]);
    });
    if (taps.empty())
      return;
    if (isMax) {
      const Value &x = ctx.input(0);
      int64_t best = taps[0];
      for (int64_t t : taps)
        if (x.data[t] > x.data[best])
          best = t;
      out.data[best] += dy.data[linear];
      return;
    }
    for (int64_t t : taps)
      out.data[t] += dy.data[linear] / static_cast<double>(taps.size());
  });
  for (double &v : out.data)
    v = normalize(out.dtype, v);
  return out;
}

// --- Reductions ------------------------------------------------------------

enum class Reduction { Sum, Mean, Max, Min, Prod };

Value reduce(const OpContext &ctx, Reduction kind) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  std::optional<Dims> axes = ctx.findInts("axes");
  bool keepDims = ctx.getBool("keep_dims", false);
  Dims outShape = ctx.check(shape::reduce(x.shape, axes, keepDims));
  // The shape with reduced axes kept as 1 broadcasts to the input: that maps
  // each input element to its output slot.
  Dims kept = ctx.check(shape::reduce(x.shape, axes, true));
  std::vector<int64_t> slot = broadcastOffsets(kept, x.shape);
  int64_t slots = product(kept);
  double init = 0;
  if (kind == Reduction::Prod)
    init = 1;
  else if (kind == Reduction::Max)
    init = -std::numeric_limits<double>::infinity();
  else if (kind == Reduction::Min)
    init = std::numeric_limits<double>::infinity();
  std::vector<double> acc(slots, init);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double &a = acc[slot[i]];
    double v = x.data[i];
    switch (kind) {
    case Reduction::Sum:
    case Reduction::Mean:
      a += v;
      break;
    case Reduction::Prod:
      a *= v;
      break;
    case Reduction::Max:
      a = nanMax(a, v);
      break;
    case Reduction::Min:
      a = nanMin(a, v);
      break;
    }
  }
  if (kind == Reduction::Mean) {
    double count = slots ? static_cast<double>(x.numElements()) / slots : 0;
    for (double &a : acc)
      a /= count;
  }
  Value out = makeValue(x.dtype, outShape);
  for (int64_t i = 0; i < slots; ++i)
    out.data[i] = normalize(x.dtype, acc[i]);
  return out;
}

/// argmax / argmin: the first index of the extreme value; a NaN counts as
/// the extreme (the first NaN wins), like NumPy.
/// cumsum / cumprod along `axis`, in the compiled code's order (each step
/// rounded to the dtype).
Value cumulative(const OpContext &ctx, bool isSum) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.axis(ctx.getInt("axis", 0), rank);
  bool exclusive = ctx.getBool("exclusive", false);
  bool reverse = ctx.getBool("reverse", false);
  Dims strides = stridesOf(x.shape);
  int64_t n = x.shape[axis], stride = strides[axis];
  double identity = isSum ? 0.0 : 1.0;
  Value out = makeValue(x.dtype, x.shape);
  forEachIndex(x.shape, [&](const Dims &o, int64_t linear) {
    if (o[axis] != 0)
      return;
    // One line along the axis, from its first element (`linear`).
    double acc = identity;
    for (int64_t k = 0; k < n; ++k) {
      int64_t at = linear + (reverse ? n - 1 - k : k) * stride;
      double v = x.data[at];
      if (exclusive) {
        out.data[at] = acc;
        acc = normalize(x.dtype, isSum ? acc + v : acc * v);
      } else {
        acc = normalize(x.dtype, isSum ? acc + v : acc * v);
        out.data[at] = acc;
      }
    }
  });
  return out;
}

Value argReduce(const OpContext &ctx, bool isMax) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.axis(ctx.getInt("axis"), rank);
  g::DataType outType = ctx.getType("output_type", g::DT_INT64);
  if (!isInteger(outType))
    ctx.error("output_type must be i32 or i64");
  Dims outShape = ctx.check(shape::argReduce(x.shape, axis));
  Dims kept = x.shape;
  kept[axis] = 1;
  std::vector<int64_t> slot = broadcastOffsets(kept, x.shape);
  int64_t stride = stridesOf(x.shape)[axis];
  Value out = makeValue(outType, outShape);
  std::vector<double> best(product(kept), 0);
  std::vector<char> seen(product(kept), 0);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t s = slot[i];
    double v = x.data[i];
    int64_t position = (i / stride) % x.shape[axis];
    bool better;
    if (!seen[s])
      better = true;
    else if (std::isnan(best[s]))
      better = false;
    else if (std::isnan(v))
      better = true;
    else
      better = isMax ? v > best[s] : v < best[s];
    if (better) {
      seen[s] = 1;
      best[s] = v;
      out.data[s] = static_cast<double>(position);
    }
  }
  return out;
}

// --- Shapes ----------------------------------------------------------------

Value withShape(const Value &x, Dims shape) {
  Value out = x;
  out.shape = std::move(shape);
  return out;
}

Value reshape(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims target = ctx.getInts("shape");
  Dims outShape = ctx.check(shape::reshape(x.shape, target));
  if (product(outShape) != x.numElements())
    ctx.error("cannot reshape " + shape::toString(x.shape) + " to " +
              shape::toString(target));
  return withShape(x, outShape);
}

Value transpose(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims perm = ctx.getInts("perm");
  Dims outShape = ctx.check(shape::transpose(x.shape, perm));
  Dims inStrides = stridesOf(x.shape);
  Value out = makeValue(x.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    int64_t source = 0;
    for (size_t d = 0; d < o.size(); ++d)
      source += o[d] * inStrides[perm[d]];
    out.data[linear] = x.data[source];
  });
  return out;
}

Value concat(const OpContext &ctx) {
  ctx.expectInputs(1, SIZE_MAX);
  std::vector<Dims> shapes;
  for (const Value *v : ctx.inputs) {
    expectSameDtype(ctx, ctx.input(0), *v);
    shapes.push_back(v->shape);
  }
  int64_t rank = static_cast<int64_t>(shapes.front().size());
  int64_t axis = ctx.getInt("axis");
  Dims outShape = ctx.check(shape::concat(shapes, axis));
  axis = ctx.axis(axis, rank);
  Dims outStrides = stridesOf(outShape);
  Value out = makeValue(ctx.input(0).dtype, outShape);
  int64_t offset = 0;
  for (const Value *v : ctx.inputs) {
    forEachIndex(v->shape, [&](const Dims &index, int64_t linear) {
      Dims target = index;
      target[axis] += offset;
      out.data[linearIndex(target, outStrides)] = v->data[linear];
    });
    offset += v->shape[axis];
  }
  return out;
}

Value slice(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims begin = ctx.getInts("begin");
  Dims size = ctx.getInts("size");
  Dims outShape = ctx.check(shape::slice(x.shape, begin, size));
  Dims inStrides = stridesOf(x.shape);
  Value out = makeValue(x.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    int64_t source = 0;
    for (size_t d = 0; d < o.size(); ++d)
      source += (o[d] + begin[d]) * inStrides[d];
    out.data[linear] = x.data[source];
  });
  return out;
}

Value pad(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims paddings = ctx.getInts("paddings");
  double value = ctx.getFloat("constant_value", 0.0);
  Dims outShape = ctx.check(shape::pad(x.shape, paddings));
  Dims outStrides = stridesOf(outShape);
  Value out = makeValue(x.dtype, outShape);
  std::fill(out.data.begin(), out.data.end(), normalize(x.dtype, value));
  forEachIndex(x.shape, [&](const Dims &index, int64_t linear) {
    int64_t target = 0;
    for (size_t d = 0; d < index.size(); ++d)
      target += (index[d] + paddings[2 * d]) * outStrides[d];
    out.data[target] = x.data[linear];
  });
  return out;
}

Value broadcastTo(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims target = ctx.getInts("shape");
  Dims outShape = ctx.check(shape::broadcastTo(x.shape, target));
  // A -1 is x's dimension there (a run-time one), as the lowering reads it.
  size_t offset = outShape.size() - x.shape.size();
  for (size_t i = 0; i < outShape.size(); ++i)
    if (outShape[i] < 0) {
      if (i < offset)
        ctx.error("shape " + shape::toString(target) + " has a -1 before " +
                  "x's dimensions");
      outShape[i] = x.shape[i - offset];
    }
  std::vector<int64_t> offsets = broadcastOffsets(x.shape, outShape);
  Value out = makeValue(x.dtype, outShape);
  for (int64_t i = 0; i < out.numElements(); ++i)
    out.data[i] = x.data[offsets[i]];
  return out;
}

Value squeeze(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  return withShape(x, ctx.check(shape::squeeze(x.shape, ctx.findInts("axes"))));
}

Value expandDims(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  return withShape(x,
                   ctx.check(shape::expandDims(x.shape, ctx.getInt("axis"))));
}

// --- Indexing --------------------------------------------------------------

Value gather(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &params = ctx.input(0), &indices = ctx.input(1);
  ctx.expectInteger(indices, "indices");
  int64_t rank = static_cast<int64_t>(params.shape.size());
  int64_t axis = ctx.getInt("axis", 0);
  Dims outShape = ctx.check(shape::gather(params.shape, indices.shape, axis));
  axis = ctx.axis(axis, rank);
  int64_t indexRank = static_cast<int64_t>(indices.shape.size());
  int64_t limit = params.shape[axis];
  Dims pStrides = stridesOf(params.shape), iStrides = stridesOf(indices.shape);
  Value out = makeValue(params.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    int64_t which = 0;
    for (int64_t d = 0; d < indexRank; ++d)
      which += o[axis + d] * iStrides[d];
    double index = indices.data[which];
    if (index < 0 || index >= static_cast<double>(limit)) {
      std::ostringstream os;
      os << "index " << static_cast<int64_t>(index) << " (indices element "
         << which << ") is out of range [0, " << limit << ") of axis " << axis
         << " of params " << shape::toString(params.shape);
      ctx.error(os.str());
    }
    int64_t source = static_cast<int64_t>(index) * pStrides[axis];
    for (int64_t d = 0; d < axis; ++d)
      source += o[d] * pStrides[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      source += o[d - 1 + indexRank] * pStrides[d];
    out.data[linear] = params.data[source];
  });
  return out;
}

Value scatter(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  const Value &ref = ctx.input(0), &indices = ctx.input(1),
              &updates = ctx.input(2);
  ctx.expectInteger(indices, "indices");
  if (ref.dtype != updates.dtype)
    ctx.error("ref and updates have different dtypes");
  ctx.check(shape::scatter(ref.shape, indices.shape, updates.shape));
  std::string mode = ctx.find("mode") ? ctx.getString("mode") : "add";
  if (mode != "add" && mode != "update" && mode != "min" && mode != "max")
    ctx.error("mode must be \"add\", \"update\", \"min\" or \"max\", got \"" +
              mode + "\"");
  int64_t rows = ref.shape[0];
  size_t rowSize = rows ? ref.data.size() / static_cast<size_t>(rows) : 0;
  Value out = ref;
  for (size_t i = 0; i < indices.data.size(); ++i) {
    double index = indices.data[i];
    if (index < 0 || index >= static_cast<double>(rows)) {
      std::ostringstream os;
      os << "index " << static_cast<int64_t>(index) << " (indices element " << i
         << ") is out of range [0, " << rows << ") of ref "
         << shape::toString(ref.shape);
      ctx.error(os.str());
    }
    size_t dst = static_cast<size_t>(index) * rowSize;
    for (size_t j = 0; j < rowSize; ++j) {
      double &o = out.data[dst + j];
      double u = updates.data[i * rowSize + j];
      if (mode == "add")
        o += u;
      else if (mode == "update")
        o = u;
      else if (std::isnan(o) || std::isnan(u))
        o = std::numeric_limits<double>::quiet_NaN();
      else
        o = mode == "min" ? std::min(o, u) : std::max(o, u);
    }
  }
  return out;
}

/// tf.reverse: element i along each axis in `axes` is element n - 1 - i.
Value reverse(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Dims axes = ctx.getInts("axes");
  ctx.check(shape::reverse(x.shape, axes));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reversed(rank, false);
  for (int64_t a : axes)
    reversed[ctx.axis(a, rank)] = true;
  Dims strides = stridesOf(x.shape);
  Value out = makeValue(x.dtype, x.shape);
  forEachIndex(x.shape, [&](const Dims &o, int64_t linear) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d)
      source += (reversed[d] ? x.shape[d] - 1 - o[d] : o[d]) * strides[d];
    out.data[linear] = x.data[source];
  });
  return out;
}

/// tf.shape: the dims as a rank-1 i32 (or `out_type`) tensor.
Value shapeOf(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  Value out = makeValue(ctx.getType("out_type", g::DT_INT32),
                        {static_cast<int64_t>(x.shape.size())});
  for (size_t d = 0; d < x.shape.size(); ++d)
    out.data[d] = static_cast<double>(x.shape[d]);
  return out;
}

/// Rows of data summed per segment in row order; ids outside [0, B) are
/// dropped (docs/ops.md).
Value unsortedSegmentSum(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  const Value &data = ctx.input(0), &ids = ctx.input(1), &like = ctx.input(2);
  ctx.expectInteger(ids, "segment_ids");
  if (data.dtype == g::DT_BOOL)
    ctx.error("data must be a float or integer tensor, got i1");
  Dims outShape =
      ctx.check(shape::unsortedSegmentSum(data.shape, ids.shape, like.shape));
  Value out = makeValue(data.dtype, outShape);
  int64_t segments = outShape[0];
  size_t rowSize =
      static_cast<size_t>(product(Dims(outShape.begin() + 1, outShape.end())));
  for (size_t i = 0; i < ids.data.size(); ++i) {
    double id = ids.data[i];
    if (id < 0 || id >= static_cast<double>(segments))
      continue;
    size_t dst = static_cast<size_t>(id) * rowSize;
    for (size_t j = 0; j < rowSize; ++j)
      out.data[dst + j] =
          normalize(data.dtype, out.data[dst + j] + data.data[i * rowSize + j]);
  }
  return out;
}

/// TF's Bucketize: the number of boundaries b with !(x < b), boundaries
/// rounded to float (TF's list(float)), x compared as float unless f64.
Value bucketize(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  if (x.dtype == g::DT_BOOL)
    ctx.error("x must be a float or integer tensor, got i1");
  const g::AttrValue &attr = ctx.require("boundaries");
  if (!attr.has_list() || attr.list().i_size() != 0 ||
      attr.list().s_size() != 0)
    ctx.error("attribute 'boundaries' must be a list of floats");
  std::vector<double> bounds;
  for (double b : attr.list().f()) {
    if (std::isnan(b))
      ctx.error("boundary " + std::to_string(bounds.size()) + " is NaN");
    if (!bounds.empty() && static_cast<float>(b) < bounds.back())
      ctx.error("boundaries must be sorted ascending");
    bounds.push_back(static_cast<float>(b));
  }
  Value out = makeValue(g::DT_INT64, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.dtype == g::DT_DOUBLE
                   ? x.data[i]
                   : static_cast<double>(static_cast<float>(x.data[i]));
    int64_t count = 0;
    for (double b : bounds)
      count += !(v < b);
    out.data[i] = static_cast<double>(count);
  }
  return out;
}

Value oneHot(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &indices = ctx.input(0);
  ctx.expectInteger(indices, "indices");
  int64_t depth = ctx.getInt("depth");
  int64_t axis = ctx.getInt("axis", -1);
  double on = ctx.getFloat("on_value", 1.0),
         off = ctx.getFloat("off_value", 0.0);
  g::DataType dtype = ctx.getType("dtype", g::DT_FLOAT);
  Dims outShape = ctx.check(shape::oneHot(indices.shape, depth, axis));
  axis = ctx.axis(axis, static_cast<int64_t>(outShape.size()));
  Dims iStrides = stridesOf(indices.shape);
  Value out = makeValue(dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    int64_t which = 0;
    for (size_t d = 0, k = 0; d < o.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        which += o[d] * iStrides[k++];
    bool hot = indices.data[which] == static_cast<double>(o[axis]);
    out.data[linear] = normalize(dtype, hot ? on : off);
  });
  return out;
}

Value sequenceMask(const OpContext &ctx) {
  ctx.expectInputs(1, 2);
  const Value &lengths = ctx.input(0);
  ctx.expectInteger(lengths, "lengths");
  int64_t maxlen;
  if (ctx.inputs.size() == 2) {
    const Value &like = ctx.input(1);
    int64_t axis = ctx.axis(ctx.getInt("axis", 1),
                            static_cast<int64_t>(like.shape.size()));
    maxlen = like.shape[axis];
  } else {
    maxlen = ctx.getInt("maxlen", -1);
    if (maxlen < 0)
      ctx.error("needs maxlen_like or maxlen >= 0");
  }
  Dims outShape = lengths.shape;
  outShape.push_back(maxlen);
  Value out = makeValue(g::DT_BOOL, outShape);
  for (int64_t i = 0; i < lengths.numElements(); ++i)
    for (int64_t j = 0; j < maxlen; ++j)
      out.data[i * maxlen + j] = j < lengths.data[i] ? 1.0 : 0.0;
  return out;
}

Value reverseSequence(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &x = ctx.input(0), &lengths = ctx.input(1);
  ctx.expectInteger(lengths, "lengths");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t seq = ctx.axis(ctx.getInt("seq_axis"), rank);
  int64_t batch = ctx.axis(ctx.getInt("batch_axis", 0), rank);
  Dims strides = stridesOf(x.shape);
  Value out = x;
  forEachIndex(x.shape, [&](const Dims &o, int64_t linear) {
    int64_t len = static_cast<int64_t>(lengths.data.at(o[batch]));
    len = std::clamp<int64_t>(len, 0, x.shape[seq]);
    int64_t s = o[seq] < len ? len - 1 - o[seq] : o[seq];
    out.data[linear] = x.data[linear + (s - o[seq]) * strides[seq]];
  });
  return out;
}

// --- Sorting ---------------------------------------------------------------

Value argsort(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.getInt("axis", -1), k = ctx.getInt("k", -1);
  std::string direction = ctx.find("direction") ? ctx.getString("direction")
                                                : std::string("ASCENDING");
  if (direction != "ASCENDING" && direction != "DESCENDING")
    ctx.error("direction must be ASCENDING or DESCENDING, got " + direction);
  bool descending = direction == "DESCENDING";
  Dims outShape = ctx.check(shape::argsort(x.shape, axis, k));
  axis = ctx.axis(axis, rank);
  Value out = makeValue(g::DT_INT32, outShape);
  Dims outStrides = stridesOf(outShape);
  Dims outer = x.shape;
  outer[axis] = 1;
  Dims xStrides = stridesOf(x.shape);
  forEachIndex(outer, [&](const Dims &o, int64_t) {
    int64_t base = linearIndex(o, xStrides),
            outBase = linearIndex(o, outStrides);
    auto at = [&](int64_t j) { return x.data[base + j * xStrides[axis]]; };
    // NaN ranks above every number; ties keep their order (stable).
    auto above = [&](double a, double b) {
      return std::isnan(a) ? !std::isnan(b) : a > b;
    };
    std::vector<int64_t> order(x.shape[axis]);
    for (size_t j = 0; j < order.size(); ++j)
      order[j] = static_cast<int64_t>(j);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return descending ? above(at(a), at(b)) : above(at(b), at(a));
    });
    for (int64_t j = 0; j < outShape[axis]; ++j)
      out.data[outBase + j * outStrides[axis]] = static_cast<double>(order[j]);
  });
  return out;
}

/// The position along `axis` that an index names, clamped into [0, n).
int64_t clampIndex(double index, int64_t n) {
  return std::clamp<int64_t>(static_cast<int64_t>(index), 0, n - 1);
}

Value takeAlongAxis(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &arr = ctx.input(0), &indices = ctx.input(1);
  ctx.expectInteger(indices, "indices");
  int64_t rank = static_cast<int64_t>(arr.shape.size());
  int64_t axis = ctx.getInt("axis", -1);
  Dims outShape =
      ctx.check(shape::takeAlongAxis(arr.shape, indices.shape, axis));
  axis = ctx.axis(axis, rank);
  Dims strides = stridesOf(arr.shape);
  Value out = makeValue(arr.dtype, outShape);
  forEachIndex(outShape, [&](const Dims &o, int64_t linear) {
    Dims from = o;
    from[axis] = clampIndex(indices.data[linear], arr.shape[axis]);
    out.data[linear] = arr.data[linearIndex(from, strides)];
  });
  return out;
}

Value scatterAlongAxis(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  const Value &ref = ctx.input(0), &indices = ctx.input(1),
              &updates = ctx.input(2);
  ctx.expectInteger(indices, "indices");
  int64_t rank = static_cast<int64_t>(ref.shape.size());
  int64_t axis = ctx.getInt("axis", -1);
  ctx.check(
      shape::scatterAlongAxis(ref.shape, indices.shape, updates.shape, axis));
  axis = ctx.axis(axis, rank);
  Dims strides = stridesOf(ref.shape);
  Value out = ref;
  forEachIndex(indices.shape, [&](const Dims &o, int64_t linear) {
    Dims to = o;
    to[axis] = clampIndex(indices.data[linear], ref.shape[axis]);
    double &slot = out.data[linearIndex(to, strides)];
    slot = normalize(ref.dtype, slot + updates.data[linear]);
  });
  return out;
}

// --- Images ----------------------------------------------------------------

/// TF's resize kernels (image_resizer_state.h, resize_bilinear_op.cc,
/// resize_nearest_neighbor_op.cc): where output position `o` of `out`
/// samples an input dimension of size `in`, computed in f32 as TF does.
struct ResizeSample {
  int64_t lower, upper;
  double lerp;
};
ResizeSample resizeSample(int64_t o, int64_t in, int64_t out, bool nearest,
                          bool alignCorners, bool halfPixel) {
  float scale = alignCorners && out > 1 ? (in - 1) / static_cast<float>(out - 1)
                                        : in / static_cast<float>(out);
  float fo = static_cast<float>(o);
  if (nearest) {
    float at = halfPixel ? (fo + 0.5f) * scale : fo * scale;
    int64_t i = std::min(
        static_cast<int64_t>(alignCorners ? std::round(at) : std::floor(at)),
        in - 1);
    if (halfPixel)
      i = std::max<int64_t>(0, i);
    return {i, i, 0.0};
  }
  float at = halfPixel ? (fo + 0.5f) * scale - 0.5f : fo * scale;
  float lo = std::floor(at);
  return {std::max<int64_t>(static_cast<int64_t>(lo), 0),
          std::min<int64_t>(static_cast<int64_t>(std::ceil(at)), in - 1),
          static_cast<double>(at - lo)};
}

/// resize_images (forward) or resize_images_grad (backward: `x` is the
/// output's gradient and `inSize` the images' [H, W]).
Value resize(const OpContext &ctx, bool grad) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  std::string method =
      ctx.find("method") ? ctx.getString("method") : std::string("bilinear");
  if (method != "bilinear" && method != "nearest")
    ctx.error("method must be bilinear or nearest, got " + method);
  bool nearest = method == "nearest";
  bool align = ctx.getBool("align_corners", false);
  bool half = ctx.getBool("half_pixel_centers", true);
  Dims size = ctx.getInts(grad ? "input_size" : "size");
  Dims outShape = ctx.check(grad ? shape::resizeImagesGrad(x.shape, size)
                                 : shape::resizeImages(x.shape, size));
  // The images' and the resized dims: (H, W) and (h, w).
  Dims small = grad ? outShape : x.shape, big = grad ? x.shape : outShape;
  Value out = makeValue(x.dtype, outShape);
  Dims xs = stridesOf(x.shape), os = stridesOf(outShape);
  Dims imgStrides = grad ? os : xs, resStrides = grad ? xs : os;
  std::vector<double> &img = out.data;
  for (int64_t n = 0; n < big[0]; ++n)
    for (int64_t y = 0; y < big[1]; ++y) {
      ResizeSample sy = resizeSample(y, small[1], big[1], nearest, align, half);
      for (int64_t xo = 0; xo < big[2]; ++xo) {
        ResizeSample sx =
            resizeSample(xo, small[2], big[2], nearest, align, half);
        for (int64_t c = 0; c < big[3]; ++c) {
          auto pixel = [&](int64_t i, int64_t j) {
            return n * imgStrides[0] + i * imgStrides[1] + j * imgStrides[2] +
                   c * imgStrides[3];
          };
          int64_t r = n * resStrides[0] + y * resStrides[1] +
                      xo * resStrides[2] + c * resStrides[3];
          double wy[2] = {1.0 - sy.lerp, sy.lerp};
          double wx[2] = {1.0 - sx.lerp, sx.lerp};
          int64_t iy[2] = {sy.lower, sy.upper}, ix[2] = {sx.lower, sx.upper};
          if (nearest) {
            if (grad)
              img[pixel(iy[0], ix[0])] += x.data[r];
            else
              img[r] = x.data[pixel(iy[0], ix[0])];
            continue;
          }
          double v = 0;
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
              if (grad)
                img[pixel(iy[a], ix[b])] += x.data[r] * wy[a] * wx[b];
              else
                v += x.data[pixel(iy[a], ix[b])] * wy[a] * wx[b];
            }
          if (!grad)
            img[r] = v;
        }
      }
    }
  return out;
}

// --- Neural-network ops and losses -----------------------------------------

/// log_softmax along `axis` (stable: the max is subtracted first).
Value logSoftmaxAlong(const Value &x, int64_t axis) {
  Dims kept = x.shape;
  kept[axis] = 1;
  std::vector<int64_t> slot = broadcastOffsets(kept, x.shape);
  int64_t slots = product(kept);
  std::vector<double> maxima(slots, -std::numeric_limits<double>::infinity());
  for (int64_t i = 0; i < x.numElements(); ++i)
    maxima[slot[i]] = nanMax(maxima[slot[i]], x.data[i]);
  std::vector<double> sums(slots, 0.0);
  for (int64_t i = 0; i < x.numElements(); ++i)
    sums[slot[i]] += std::exp(x.data[i] - maxima[slot[i]]);
  Value out = makeValue(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    out.data[i] = x.data[i] - maxima[slot[i]] - std::log(sums[slot[i]]);
  return out;
}

Value softmax(const OpContext &ctx, bool log) {
  ctx.expectInputs(1, 1);
  const Value &x = ctx.input(0);
  ctx.expectFloat(x, "logits");
  int64_t axis =
      ctx.axis(ctx.getInt("axis", -1), static_cast<int64_t>(x.shape.size()));
  Value out = logSoftmaxAlong(x, axis);
  if (!log)
    for (double &v : out.data)
      v = std::exp(v);
  return out;
}

/// layer_norm: TF's two-pass moments of each row over [begin_norm_axis,
/// rank), then the normalized row times gamma plus beta (broadcast from
/// begin_params_axis).
Value layerNorm(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  const Value &x = ctx.input(0), &gamma = ctx.input(1), &beta = ctx.input(2);
  ctx.expectFloat(x, "x");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t norm = ctx.axis(ctx.getInt("begin_norm_axis", -1), rank);
  int64_t params = ctx.axis(ctx.getInt("begin_params_axis", -1), rank);
  double epsilon = ctx.getFloat("epsilon", 1e-3);
  ctx.check(shape::layerNorm(x.shape, gamma.shape, beta.shape, norm, params));
  int64_t n = 1, p = 1;
  for (int64_t d = norm; d < rank; ++d)
    n *= x.shape[d];
  for (int64_t d = params; d < rank; ++d)
    p *= x.shape[d];
  Value out = makeValue(x.dtype, x.shape);
  for (int64_t row = 0; row * n < x.numElements(); ++row) {
    const double *v = x.data.data() + row * n;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i)
      mean += v[i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i)
      var += (v[i] - mean) * (v[i] - mean);
    var /= static_cast<double>(n);
    double rstd = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < n; ++i)
      out.data[row * n + i] = normalize(
          x.dtype, (v[i] - mean) * rstd * gamma.data[i % p] + beta.data[i % p]);
  }
  return out;
}

/// attention_softmax: softmax over the last axis of scale * logits plus the
/// mask's bias (bool: -1e9 where false; float: added) and the causal bias.
Value attentionSoftmax(const OpContext &ctx) {
  ctx.expectInputs(1, 2);
  const Value &logits = ctx.input(0);
  ctx.expectFloat(logits, "logits");
  double scale = ctx.getFloat("scale", 1.0);
  bool causal = ctx.getBool("causal", false);
  std::optional<Dims> maskShape;
  if (ctx.inputs.size() == 2)
    maskShape = ctx.input(1).shape;
  ctx.check(shape::attentionSoftmax(logits.shape, maskShape));
  double masked = logits.dtype == g::DT_HALF ? -65504.0 : -1e9;
  Value z = makeValue(logits.dtype, logits.shape);
  std::vector<int64_t> maskSlot;
  if (maskShape)
    maskSlot = broadcastOffsets(*maskShape, logits.shape);
  int64_t rank = static_cast<int64_t>(logits.shape.size());
  int64_t S = logits.shape[rank - 1], T = logits.shape[rank - 2];
  // f32 logits are biased in f32, as TF computes them: -1e9 + v is -1e9
  // for a small v, so a row masked everywhere is uniform (Keras's result).
  auto round = [&](double v) {
    return logits.dtype == g::DT_FLOAT
               ? static_cast<double>(static_cast<float>(v))
               : v;
  };
  for (int64_t i = 0; i < logits.numElements(); ++i) {
    double v = round(logits.data[i] * scale);
    bool off = causal && (i % S) > (i / S) % T;
    if (maskShape) {
      double m = ctx.input(1).data[maskSlot[i]];
      if (ctx.input(1).dtype == g::DT_BOOL)
        off = off || m == 0.0;
      else
        v = round(v + m);
    }
    z.data[i] = off ? round(v + masked) : round(v);
  }
  Value out = logSoftmaxAlong(z, rank - 1);
  for (double &v : out.data)
    v = normalize(logits.dtype, std::exp(v));
  return out;
}

Value softmaxCrossEntropy(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &logits = ctx.input(0), &labels = ctx.input(1);
  ctx.expectFloat(logits, "logits");
  expectSameDtype(ctx, logits, labels);
  Dims outShape =
      ctx.check(shape::softmaxCrossEntropy(logits.shape, labels.shape));
  int64_t classes = logits.shape.back();
  Value logp = logSoftmaxAlong(logits, logits.shape.size() - 1);
  Value out = makeValue(logits.dtype, outShape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double loss = 0;
    for (int64_t c = 0; c < classes; ++c)
      loss -= labels.data[i * classes + c] * logp.data[i * classes + c];
    out.data[i] = loss;
  }
  return out;
}

Value sparseSoftmaxCrossEntropy(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &logits = ctx.input(0), &labels = ctx.input(1);
  ctx.expectFloat(logits, "logits");
  ctx.expectInteger(labels, "labels");
  Dims outShape =
      ctx.check(shape::sparseSoftmaxCrossEntropy(logits.shape, labels.shape));
  int64_t classes = logits.shape.back();
  Value logp = logSoftmaxAlong(logits, logits.shape.size() - 1);
  Value out = makeValue(logits.dtype, outShape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double label = labels.data[i];
    if (label < 0 || label >= static_cast<double>(classes))
      ctx.error("label " + std::to_string(static_cast<int64_t>(label)) +
                " (element " + std::to_string(i) + ") is out of range [0, " +
                std::to_string(classes) + ")");
    out.data[i] = -logp.data[i * classes + static_cast<int64_t>(label)];
  }
  return out;
}

Value sigmoidCrossEntropy(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &logits = ctx.input(0), &labels = ctx.input(1);
  ctx.expectFloat(logits, "logits");
  expectSameDtype(ctx, logits, labels);
  if (logits.shape != labels.shape)
    ctx.error("labels " + shape::toString(labels.shape) +
              " must have the shape of logits " +
              shape::toString(logits.shape));
  Value out = makeValue(logits.dtype, logits.shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double x = logits.data[i], z = labels.data[i];
    out.data[i] = std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
    if (std::isnan(x))
      out.data[i] = x;
  }
  return out;
}

// --- Randomness ------------------------------------------------------------

/// fused_batch_norm: y, batch_mean, the unbiased batch_variance and
/// inv_std (rsqrt of the biased variance + epsilon), in double.
std::vector<Value> fusedBatchNorm(const OpContext &ctx) {
  ctx.expectInputs(3, 3);
  const Value &x = ctx.input(0), &scale = ctx.input(1), &offset = ctx.input(2);
  ctx.expectFloat(x, "x");
  expectSameDtype(ctx, x, scale);
  expectSameDtype(ctx, x, offset);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.axis(ctx.getInt("axis", -1), rank);
  Dims c =
      ctx.check(shape::batchNorm(x.shape, scale.shape, offset.shape, axis));
  double epsilon = ctx.getFloat("epsilon", 1e-3);
  int64_t channels = c[0], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= x.shape[d];
  int64_t n = channels ? product(x.shape) / channels : 0;
  std::vector<double> sum(channels, 0.0), sumSq(channels, 0.0);
  auto channelOf = [&](size_t i) {
    return static_cast<int64_t>(i / inner) % channels;
  };
  for (size_t i = 0; i < x.data.size(); ++i)
    sum[channelOf(i)] += x.data[i];
  Value mean = makeValue(x.dtype, c), var = makeValue(x.dtype, c),
        inv = makeValue(x.dtype, c);
  for (int64_t k = 0; k < channels; ++k)
    mean.data[k] = sum[k] / n;
  for (size_t i = 0; i < x.data.size(); ++i) {
    double d = x.data[i] - mean.data[channelOf(i)];
    sumSq[channelOf(i)] += d * d;
  }
  for (int64_t k = 0; k < channels; ++k) {
    double biased = sumSq[k] / n;
    inv.data[k] = normalize(x.dtype, 1.0 / std::sqrt(biased + epsilon));
    var.data[k] = normalize(x.dtype, biased * n / std::max<int64_t>(n - 1, 1));
    mean.data[k] = normalize(x.dtype, mean.data[k]);
  }
  Value y = makeValue(x.dtype, x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) {
    int64_t k = channelOf(i);
    y.data[i] = normalize(x.dtype, (x.data[i] - mean.data[k]) * inv.data[k] *
                                           scale.data[k] +
                                       offset.data[k]);
  }
  return {y, mean, var, inv};
}

int64_t counterOf(const OpContext &ctx, const Value &counter) {
  ctx.expectInteger(counter, "counter");
  if (counter.numElements() != 1 || !counter.shape.empty())
    ctx.error("counter must be a scalar, got " +
              shape::toString(counter.shape));
  return static_cast<int64_t>(counter.data[0]);
}

/// random_uniform / random_normal / truncated_normal, computed in T.
template <typename T> Value randomOp(const OpContext &ctx) {
  ctx.expectInputs(1, 1);
  int64_t counter = counterOf(ctx, ctx.input(0));
  int64_t seed = ctx.getInt("seed");
  g::DataType dtype = ctx.getType("dtype", g::DT_FLOAT);
  Dims outShape = ctx.getInts("shape");
  if (!shape::isFullyKnown(outShape))
    ctx.error("shape must be fully known, got " + shape::toString(outShape));
  Value out = makeValue(dtype, outShape);
  const std::string &op = ctx.node.op();
  T a, b;
  if (op == "random_uniform") {
    a = T(ctx.getFloat("minval", 0.0));
    b = T(ctx.getFloat("maxval", 1.0));
  } else {
    a = T(ctx.getFloat("mean", 0.0));
    b = T(ctx.getFloat("stddev", 1.0));
  }
  for (int64_t i = 0; i < out.numElements(); ++i) {
    random::Block r =
        random::randomBits(seed, counter, static_cast<uint64_t>(i));
    T v;
    if (op == "random_uniform")
      v = random::uniform<T>(r, a, b);
    else if (op == "random_normal")
      v = random::normal<T>(r, a, b);
    else
      v = random::truncatedNormal<T>(r, a, b);
    out.data[i] = static_cast<double>(v);
  }
  return out;
}

Value randomOp(const OpContext &ctx) {
  if (!isFloat(ctx.getType("dtype", g::DT_FLOAT)))
    ctx.error("dtype must be a float type");
  if (ctx.getType("dtype", g::DT_FLOAT) == g::DT_DOUBLE)
    return randomOp<double>(ctx);
  return randomOp<float>(ctx);
}

/// dropout: the keep decision is made in T (the op's compute type), the
/// scaling x / (1 - rate) in double.
Value dropout(const OpContext &ctx) {
  ctx.expectInputs(2, 2);
  const Value &x = ctx.input(0);
  ctx.expectFloat(x, "x");
  int64_t counter = counterOf(ctx, ctx.input(1));
  double rate = ctx.getFloat("rate");
  int64_t seed = ctx.getInt("seed");
  if (!(rate >= 0 && rate < 1))
    ctx.error("rate must be in [0, 1), got " + std::to_string(rate));
  Value out = makeValue(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    random::Block r =
        random::randomBits(seed, counter, static_cast<uint64_t>(i));
    bool keep = x.dtype == g::DT_DOUBLE
                    ? random::dropoutKeep<double>(r, rate)
                    : random::dropoutKeep<float>(r, static_cast<float>(rate));
    out.data[i] = keep ? x.data[i] / (1.0 - rate) : 0.0;
  }
  return out;
}

// --- The op table ----------------------------------------------------------

using Kernel = std::function<Value(const OpContext &)>;

const std::map<std::string, Kernel> &kernels() {
  static const std::map<std::string, Kernel> table = [] {
    std::map<std::string, Kernel> t;
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    t["constant"] = constant;
    // Binary arithmetic.
    t["add"] = [](const OpContext &c) {
      return binary(c, [](double a, double b) { return a + b; });
    };
    t["sub"] = [](const OpContext &c) {
      return binary(c, [](double a, double b) { return a - b; });
    };
    t["mul"] = [](const OpContext &c) {
      return binary(c, [](double a, double b) { return a * b; });
    };
    t["div"] = divide;
    t["pow"] = [](const OpContext &c) {
      return binary(c, [](double a, double b) { return std::pow(a, b); });
    };
    t["maximum"] = [](const OpContext &c) { return binary(c, nanMax); };
    t["minimum"] = [](const OpContext &c) { return binary(c, nanMin); };
    // Unary.
    t["neg"] = [](const OpContext &c) {
      return unary(c, [](double x) { return -x; });
    };
    t["abs"] = [](const OpContext &c) {
      return unary(c, [](double x) { return std::abs(x); });
    };
    t["square"] = [](const OpContext &c) {
      return unary(c, [](double x) { return x * x; });
    };
    t["exp"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::exp(x); });
    };
    t["log"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::log(x); });
    };
    t["sqrt"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::sqrt(x); });
    };
    t["rsqrt"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return 1.0 / std::sqrt(x); });
    };
    t["tanh"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::tanh(x); });
    };
    t["sin"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::sin(x); });
    };
    t["cos"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::cos(x); });
    };
    t["floor"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::floor(x); });
    };
    t["ceil"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::ceil(x); });
    };
    // Halves to even: nearbyint in the default rounding mode.
    t["round"] = [](const OpContext &c) {
      return unary(c, [](double x) { return std::nearbyint(x); });
    };
    t["sign"] = [](const OpContext &c) {
      return unary(c, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; });
    };
    t["erf"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::erf(x); });
    };
    t["log1p"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::log1p(x); });
    };
    t["expm1"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return std::expm1(x); });
    };
    t["sigmoid"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    };
    t["relu"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return nanMax(x, 0.0); });
    };
    t["relu6"] = [](const OpContext &c) {
      return floatUnary(c,
                        [](double x) { return nanMin(nanMax(x, 0.0), 6.0); });
    };
    t["elu"] = [](const OpContext &c) {
      return floatUnary(c, [](double x) { return x > 0 ? x : std::expm1(x); });
    };
    t["softplus"] = [kNaN](const OpContext &c) {
      return floatUnary(c, [kNaN](double x) {
        if (std::isnan(x))
          return kNaN;
        return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
      });
    };
    // Comparison and logic.
    t["equal"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a == b; });
    };
    t["not_equal"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a != b; });
    };
    t["less"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a < b; });
    };
    t["less_equal"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a <= b; });
    };
    t["greater"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a > b; });
    };
    t["greater_equal"] = [](const OpContext &c) {
      return compare(c, [](double a, double b) { return a >= b; });
    };
    t["logical_and"] = [](const OpContext &c) {
      return logical(c, [](bool a, bool b) { return a && b; });
    };
    t["logical_or"] = [](const OpContext &c) {
      return logical(c, [](bool a, bool b) { return a || b; });
    };
    t["logical_not"] = [](const OpContext &c) {
      c.expectInputs(1, 1);
      c.expectBool(c.input(0), "x");
      return unary(c, [](double x) { return x != 0 ? 0.0 : 1.0; });
    };
    t["select"] = select;
    t["cast"] = cast;
    // Linear algebra, convolution, pooling.
    t["matmul"] = matmul;
    t["conv2d"] = conv2d;
    t["max_pool"] = [](const OpContext &c) { return pool(c, true); };
    t["avg_pool"] = [](const OpContext &c) { return pool(c, false); };
    t["conv2d_backprop_input"] = [](const OpContext &c) {
      return conv2dBackprop(c, true);
    };
    t["conv2d_backprop_filter"] = [](const OpContext &c) {
      return conv2dBackprop(c, false);
    };
    t["depthwise_conv2d"] = [](const OpContext &c) {
      return depthwiseConv2d(c, 0);
    };
    t["depthwise_conv2d_backprop_input"] = [](const OpContext &c) {
      return depthwiseConv2d(c, 1);
    };
    t["depthwise_conv2d_backprop_filter"] = [](const OpContext &c) {
      return depthwiseConv2d(c, 2);
    };
    t["max_pool_grad"] = [](const OpContext &c) { return poolGrad(c, true); };
    t["avg_pool_grad"] = [](const OpContext &c) { return poolGrad(c, false); };
    // Reductions.
    t["reduce_sum"] = [](const OpContext &c) {
      return reduce(c, Reduction::Sum);
    };
    t["reduce_mean"] = [](const OpContext &c) {
      return reduce(c, Reduction::Mean);
    };
    t["reduce_max"] = [](const OpContext &c) {
      return reduce(c, Reduction::Max);
    };
    t["reduce_min"] = [](const OpContext &c) {
      return reduce(c, Reduction::Min);
    };
    t["reduce_prod"] = [](const OpContext &c) {
      return reduce(c, Reduction::Prod);
    };
    t["argmax"] = [](const OpContext &c) { return argReduce(c, true); };
    t["argmin"] = [](const OpContext &c) { return argReduce(c, false); };
    t["cumsum"] = [](const OpContext &c) { return cumulative(c, true); };
    t["cumprod"] = [](const OpContext &c) { return cumulative(c, false); };
    // Shapes.
    t["reshape"] = reshape;
    t["transpose"] = transpose;
    t["concat"] = concat;
    t["slice"] = slice;
    t["pad"] = pad;
    t["broadcast_to"] = broadcastTo;
    t["squeeze"] = squeeze;
    t["expand_dims"] = expandDims;
    t["reverse"] = reverse;
    t["shape"] = shapeOf;
    // Indexing.
    t["gather"] = gather;
    t["scatter"] = scatter;
    t["unsorted_segment_sum"] = unsortedSegmentSum;
    t["one_hot"] = oneHot;
    t["sequence_mask"] = sequenceMask;
    t["reverse_sequence"] = reverseSequence;
    t["bucketize"] = bucketize;
    t["argsort"] = argsort;
    t["take_along_axis"] = takeAlongAxis;
    t["scatter_along_axis"] = scatterAlongAxis;
    t["resize_images"] = [](const OpContext &c) { return resize(c, false); };
    t["resize_images_grad"] = [](const OpContext &c) {
      return resize(c, true);
    };
    // Neural-network ops and losses.
    t["softmax"] = [](const OpContext &c) { return softmax(c, false); };
    t["layer_norm"] = layerNorm;
    t["attention_softmax"] = attentionSoftmax;
    t["log_softmax"] = [](const OpContext &c) { return softmax(c, true); };
    t["softmax_cross_entropy"] = softmaxCrossEntropy;
    t["sparse_softmax_cross_entropy"] = sparseSoftmaxCrossEntropy;
    t["sigmoid_cross_entropy"] = sigmoidCrossEntropy;
    t["check_range"] = [](const OpContext &c) {
      c.expectInputs(1, 1);
      const Value &x = c.input(0);
      int64_t lower = c.getInt("lower"), upper = c.getInt("upper");
      for (size_t i = 0; i < x.data.size(); ++i)
        if (x.data[i] < double(lower) || x.data[i] >= double(upper))
          c.error(c.getString("what") + " " +
                  std::to_string(static_cast<int64_t>(x.data[i])) +
                  " at flat index " + std::to_string(i) + " is outside [" +
                  std::to_string(lower) + ", " + std::to_string(upper) + ")");
      return x;
    };
    t["stop_gradient"] = [](const OpContext &c) {
      c.expectInputs(1, 1);
      return c.input(0);
    };
    t["zeros_like"] = [](const OpContext &c) {
      c.expectInputs(1, 1);
      Value v = c.input(0);
      std::fill(v.data.begin(), v.data.end(), 0.0);
      return v;
    };
    t["ones_like"] = [](const OpContext &c) {
      c.expectInputs(1, 1);
      Value v = c.input(0);
      std::fill(v.data.begin(), v.data.end(), 1.0);
      return v;
    };
    // Randomness.
    t["dropout"] = dropout;
    t["random_uniform"] = static_cast<Value (*)(const OpContext &)>(randomOp);
    t["random_normal"] = static_cast<Value (*)(const OpContext &)>(randomOp);
    t["truncated_normal"] = static_cast<Value (*)(const OpContext &)>(randomOp);
    return t;
  }();
  return table;
}

/// Ops the evaluator handles itself (no kernel).
bool isSpecialOp(const std::string &op) {
  return op == "placeholder" || op == "read_variable" ||
         op == "assign_variable" || op == "minimize" || op == "group" ||
         op == "scan" || op == "if" || op == "while" || op == "output" ||
         op == "fused_batch_norm";
}

/// "node:0" -> "node"; other output indices are errors (one output per node).
std::string inputNodeName(const g::NodeDef &node, const std::string &input) {
  auto colon = input.rfind(':');
  if (colon == std::string::npos || colon + 1 == input.size())
    return input;
  std::string index = input.substr(colon + 1);
  if (!std::all_of(index.begin(), index.end(), ::isdigit))
    return input;
  if (index != "0")
    fail("node '" + node.name() + "' (" + node.op() + "): input '" + input +
         "' names an output other than 0; every node has one output");
  return input.substr(0, colon);
}

void checkAgainstDeclared(const std::string &what, const Value &value,
                          g::DataType dtype, const Dims &declared) {
  if (value.dtype != dtype)
    fail(what + " has dtype " + dtypeName(value.dtype) + " but is declared " +
         dtypeName(dtype));
  bool compatible = value.shape.size() == declared.size();
  for (size_t d = 0; compatible && d < declared.size(); ++d)
    compatible =
        declared[d] == shape::kUnknownDim || declared[d] == value.shape[d];
  if (!compatible)
    fail(what + " has shape " + shape::toString(value.shape) +
         " but is declared " + shape::toString(declared));
  if (static_cast<int64_t>(value.data.size()) != product(value.shape))
    fail(what + " holds " + std::to_string(value.data.size()) +
         " values but its shape " + shape::toString(value.shape) + " needs " +
         std::to_string(product(value.shape)));
}

} // namespace

// --- Value -----------------------------------------------------------------

Value::Value(g::DataType dtype, std::vector<int64_t> shape,
             std::vector<double> data)
    : dtype(dtype), shape(std::move(shape)), data(std::move(data)) {
  if (static_cast<int64_t>(this->data.size()) != product(this->shape))
    fail("value of shape " + shape::toString(this->shape) + " needs " +
         std::to_string(product(this->shape)) + " values, got " +
         std::to_string(this->data.size()));
}

Value Value::scalar(double value, g::DataType dtype) {
  return Value(dtype, {}, {value});
}

double Value::at(const std::vector<int64_t> &index) const {
  if (index.size() != shape.size())
    fail("index of rank " + std::to_string(index.size()) +
         " into a value of shape " + shape::toString(shape));
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] < 0 || index[d] >= shape[d])
      fail("index " + shape::toString(index) + " is out of range of shape " +
           shape::toString(shape));
  return data[linearIndex(index, stridesOf(shape))];
}

std::string toString(const Value &value) {
  std::ostringstream os;
  os.precision(9);
  os << dtypeName(value.dtype) << shape::toString(value.shape) << "{";
  for (size_t i = 0; i < value.data.size(); ++i) {
    if (i == 32) {
      os << ", ...";
      break;
    }
    os << (i ? ", " : "") << value.data[i];
  }
  os << "}";
  return os.str();
}

// --- Evaluator -------------------------------------------------------------

Evaluator::Evaluator(const g::GraphDef &graph) : graph_(graph) {
  for (int i = 0; i < graph_.variable_size(); ++i) {
    const g::VariableDef &var = graph_.variable(i);
    if (var.name().empty())
      fail("variable #" + std::to_string(i) + " has no name");
    if (!variableIndex_.emplace(var.name(), i).second)
      fail("variable '" + var.name() + "' is defined twice");
  }
  const int n = graph_.node_size();
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = graph_.node(i);
    if (node.name().empty())
      fail("node #" + std::to_string(i) + " (" + node.op() + ") has no name");
    if (!nodeIndex_.emplace(node.name(), i).second)
      fail("node '" + node.name() + "' is defined twice");
    if (!isSpecialOp(node.op()) && !kernels().count(node.op()))
      fail("node '" + node.name() + "': unknown op '" + node.op() +
           "' (see docs/ops.md)");
    if (node.op() == "read_variable" || node.op() == "assign_variable") {
      auto it = node.attr().find("variable");
      if (it == node.attr().end() || !it->second.has_s())
        fail("node '" + node.name() + "' (" + node.op() +
             "): requires attribute 'variable' (a string)");
      if (!variableIndex_.count(it->second.s()))
        fail("node '" + node.name() + "' (" + node.op() + "): variable '" +
             it->second.s() + "' is not declared in the graph");
    }
  }
  inputsOf_.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = graph_.node(i);
    for (const std::string &input : node.input()) {
      std::string name = inputNodeName(node, input);
      auto it = nodeIndex_.find(name);
      if (it == nodeIndex_.end())
        fail("node '" + node.name() + "' (" + node.op() + "): input '" + input +
             "' is not a node of the graph");
      inputsOf_[i].push_back(it->second);
    }
  }
  // The importer's order: topological, ties to the earlier node in the file.
  std::vector<int> cycle;
  topoOrder_ = g::topologicalOrder(inputsOf_, &cycle);
  if (topoOrder_.size() != inputsOf_.size())
    fail("node '" + graph_.node(cycle.front()).name() + "' is part of a cycle");
}

int Evaluator::nodeIndex(const std::string &name,
                         const std::string &what) const {
  auto it = nodeIndex_.find(name);
  if (it == nodeIndex_.end())
    fail(what + " '" + name + "' is not a node of the graph");
  return it->second;
}

const Value &Evaluator::readVariable(const g::NodeDef &node) {
  const std::string &name = node.attr().at("variable").s();
  const g::VariableDef &def = graph_.variable(variableIndex_.at(name));
  auto it = variables_.find(name);
  if (it == variables_.end())
    fail("node '" + node.name() + "' (read_variable): variable '" + name +
         "' has no value (set it in variables())");
  checkAgainstDeclared(
      "variable '" + name + "'", it->second, def.dtype(),
      Dims(def.shape().dim().begin(), def.shape().dim().end()));
  return it->second;
}

void Evaluator::assignVariable(const g::NodeDef &node, const Value &value) {
  const std::string &name = node.attr().at("variable").s();
  const g::VariableDef &def = graph_.variable(variableIndex_.at(name));
  checkAgainstDeclared(
      "node '" + node.name() + "' (assign_variable): value for variable '" +
          name + "'",
      value, def.dtype(),
      Dims(def.shape().dim().begin(), def.shape().dim().end()));
  variables_[name] = value;
}

Value Evaluator::evaluateNode(int index,
                              const std::vector<const Value *> &inputs) {
  const g::NodeDef &node = graph_.node(index);
  const std::string &op = node.op();
  if (op == "placeholder")
    fail("placeholder '" + node.name() + "' is not fed");
  if (op == "minimize")
    fail("minimize is not evaluated (node '" + node.name() +
         "'); gradients are not implemented in the reference");
  if (op == "read_variable") {
    if (!inputs.empty())
      fail("node '" + node.name() + "' (read_variable) takes no inputs");
    return readVariable(node);
  }
  if (op == "group") {
    // Its inputs ran before it (they are its inputs); it has no value.
    Value none;
    none.dtype = g::DT_INVALID;
    return none;
  }
  if (op == "assign_variable") {
    if (inputs.size() != 1)
      fail("node '" + node.name() + "' (assign_variable) takes one input");
    assignVariable(node, *inputs[0]);
    Value none;
    none.dtype = g::DT_INVALID;
    return none;
  }
  if (op == "scan" || op == "if" || op == "while") {
    std::vector<Value> args;
    for (const Value *v : inputs)
      args.push_back(*v);
    results_[node.name()] = runControlFlow(node, args);
    Value none;
    none.dtype = g::DT_INVALID;
    return none;
  }
  if (op == "output")
    return outputOf(node);
  OpContext ctx{node, inputs};
  if (op == "fused_batch_norm") {
    results_[node.name()] = fusedBatchNorm(ctx);
    Value none;
    none.dtype = g::DT_INVALID;
    return none;
  }
  return kernels().at(op)(ctx);
}

Value Evaluator::outputOf(const g::NodeDef &node) {
  auto it = node.input_size() == 1
                ? results_.find(inputNodeName(node, node.input(0)))
                : results_.end();
  if (it == results_.end())
    fail("node '" + node.name() +
         "' (output): its input is not a scan, if, while or "
         "fused_batch_norm node");
  int64_t index = node.attr().count("index") ? node.attr().at("index").i() : 0;
  if (index < 0 || index >= static_cast<int64_t>(it->second.size()))
    fail("node '" + node.name() + "' (output): index " + std::to_string(index) +
         " out of range");
  return it->second[index];
}

std::vector<Value> Evaluator::callFunction(const std::string &name,
                                           const std::vector<Value> &params) {
  const g::FunctionDef *fn = nullptr;
  for (const g::FunctionDef &f : graph_.function())
    if (f.name() == name)
      fn = &f;
  if (!fn)
    fail("function '" + name + "' is not defined");
  std::map<std::string, int> index;
  for (int i = 0; i < fn->node_size(); ++i)
    index[fn->node(i).name()] = i;
  std::vector<std::vector<int>> inputsOf(fn->node_size());
  for (int i = 0; i < fn->node_size(); ++i)
    for (const std::string &input : fn->node(i).input()) {
      auto it = index.find(inputNodeName(fn->node(i), input));
      if (it == index.end())
        fail("function '" + name + "': node '" + fn->node(i).name() +
             "': input '" + input + "' is not a node of the function");
      inputsOf[i].push_back(it->second);
    }
  std::vector<int> cycle;
  std::vector<int> order = g::topologicalOrder(inputsOf, &cycle);
  if (order.size() != inputsOf.size())
    fail("function '" + name + "' has a cycle");
  std::vector<Value> values(fn->node_size());
  for (int i : order) {
    const g::NodeDef &node = fn->node(i);
    if (node.op() == "arg") {
      int64_t k = node.attr().at("index").i();
      if (k < 0 || k >= static_cast<int64_t>(params.size()))
        fail("function '" + name + "': arg index " + std::to_string(k) +
             " out of range");
      values[i] = params[k];
      continue;
    }
    std::vector<const Value *> inputs;
    for (int input : inputsOf[i])
      inputs.push_back(&values[input]);
    if (node.op() == "scan" || node.op() == "if" || node.op() == "while") {
      std::vector<Value> args;
      for (const Value *v : inputs)
        args.push_back(*v);
      results_[node.name()] = runControlFlow(node, args);
      values[i].dtype = g::DT_INVALID;
      continue;
    }
    if (node.op() == "output") {
      values[i] = outputOf(node);
      continue;
    }
    if (node.op() == "fused_batch_norm") {
      OpContext ctx{node, inputs};
      results_[node.name()] = fusedBatchNorm(ctx);
      values[i].dtype = g::DT_INVALID;
      continue;
    }
    if (!kernels().count(node.op()))
      fail("function '" + name + "': node '" + node.name() + "': unknown op '" +
           node.op() + "'");
    OpContext ctx{node, inputs};
    values[i] = kernels().at(node.op())(ctx);
  }
  std::vector<Value> outputs;
  for (const std::string &out : fn->output())
    outputs.push_back(values.at(index.at(inputNodeName(fn->node(0), out))));
  return outputs;
}

namespace {
/// Row `t` of `v` (dimension 0 dropped).
Value rowOf(const Value &v, int64_t t) {
  Value r;
  r.dtype = v.dtype;
  r.shape.assign(v.shape.begin() + 1, v.shape.end());
  int64_t n = 1;
  for (int64_t d : r.shape)
    n *= d;
  r.data.assign(v.data.begin() + t * n, v.data.begin() + (t + 1) * n);
  return r;
}
} // namespace

std::vector<Value> Evaluator::runControlFlow(const g::NodeDef &node,
                                             const std::vector<Value> &args) {
  auto attrI = [&](const char *key, int64_t fallback) {
    auto it = node.attr().find(key);
    return it == node.attr().end() ? fallback : it->second.i();
  };
  auto attrS = [&](const char *key) {
    auto it = node.attr().find(key);
    if (it == node.attr().end())
      fail("node '" + node.name() + "' (" + node.op() +
           "): requires attribute '" + key + "'");
    return it->second.s();
  };
  if (node.op() == "scan") {
    size_t nc = attrI("num_carried", 0), ns = attrI("num_sequences", 1);
    bool reverse =
        node.attr().count("reverse") && node.attr().at("reverse").b();
    std::vector<Value> carried(args.begin(), args.begin() + nc);
    std::vector<Value> captures(args.begin() + nc + ns, args.end());
    int64_t length = args.at(nc).shape.at(0);
    for (size_t j = 1; j < ns; ++j)
      if (args[nc + j].shape.at(0) != length)
        fail("node '" + node.name() + "' (scan): sequences of " +
             std::to_string(length) + " and " +
             std::to_string(args[nc + j].shape[0]) + " steps");
    std::vector<std::vector<Value>> steps(length);
    for (int64_t i = 0; i < length; ++i) {
      int64_t t = reverse ? length - 1 - i : i;
      std::vector<Value> params = carried;
      for (size_t j = 0; j < ns; ++j)
        params.push_back(rowOf(args[nc + j], t));
      params.insert(params.end(), captures.begin(), captures.end());
      std::vector<Value> out = callFunction(attrS("body"), params);
      carried.assign(out.begin(), out.begin() + nc);
      steps[t].assign(out.begin() + nc, out.end());
    }
    std::vector<Value> results = carried;
    const g::FunctionDef *body = nullptr;
    for (const g::FunctionDef &f : graph_.function())
      if (f.name() == attrS("body"))
        body = &f;
    size_t ny = body ? body->output_size() - nc : 0;
    for (size_t j = 0; j < ny; ++j) {
      Value stacked;
      if (length > 0) {
        stacked = steps[0][j];
        stacked.shape.insert(stacked.shape.begin(), length);
        for (int64_t t = 1; t < length; ++t)
          stacked.data.insert(stacked.data.end(), steps[t][j].data.begin(),
                              steps[t][j].data.end());
      }
      results.push_back(stacked);
    }
    return results;
  }
  if (node.op() == "if") {
    size_t nt = attrI("num_then_captures", 0);
    bool cond = args.at(0).data.at(0) != 0;
    std::vector<Value> captures =
        cond ? std::vector<Value>(args.begin() + 1, args.begin() + 1 + nt)
             : std::vector<Value>(args.begin() + 1 + nt, args.end());
    return callFunction(attrS(cond ? "then_branch" : "else_branch"), captures);
  }
  // while
  size_t nc = attrI("num_carried", 0), ncc = attrI("num_cond_captures", 0);
  int64_t maxIterations = attrI("maximum_iterations", -1);
  std::vector<Value> vars(args.begin(), args.begin() + nc);
  std::vector<Value> condCaptures(args.begin() + nc, args.begin() + nc + ncc);
  std::vector<Value> bodyCaptures(args.begin() + nc + ncc, args.end());
  for (int64_t i = 0; maxIterations < 0 || i < maxIterations; ++i) {
    std::vector<Value> params = vars;
    params.insert(params.end(), condCaptures.begin(), condCaptures.end());
    if (callFunction(attrS("cond"), params).at(0).data.at(0) == 0)
      break;
    params = vars;
    params.insert(params.end(), bodyCaptures.begin(), bodyCaptures.end());
    vars = callFunction(attrS("body"), params);
  }
  return vars;
}

std::map<int, Value> Evaluator::execute(const std::vector<int> &targets,
                                        const std::map<int, Value> &feeds) {
  std::vector<char> needed(graph_.node_size(), 0);
  std::vector<int> stack(targets);
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (needed[i])
      continue;
    needed[i] = 1;
    if (feeds.count(i))
      continue;
    for (int input : inputsOf_[i])
      stack.push_back(input);
  }
  std::map<int, Value> values;
  for (int i : topoOrder_) {
    if (!needed[i])
      continue;
    auto fed = feeds.find(i);
    if (fed != feeds.end()) {
      values[i] = fed->second;
      continue;
    }
    std::vector<const Value *> inputs;
    for (int input : inputsOf_[i]) {
      const Value &v = values.at(input);
      if (v.dtype == g::DT_INVALID && graph_.node(i).op() != "group" &&
          graph_.node(i).op() != "output")
        fail("node '" + graph_.node(i).name() + "' uses node '" +
             graph_.node(input).name() + "', which has no value");
      inputs.push_back(&v);
    }
    values[i] = evaluateNode(i, inputs);
  }
  return values;
}

std::vector<Value>
Evaluator::evaluate(const std::vector<std::string> &nodes,
                    const std::map<std::string, Value> &feeds) {
  std::map<int, Value> fedByIndex;
  for (const auto &[name, value] : feeds) {
    int i = nodeIndex(name, "feed");
    const g::NodeDef &node = graph_.node(i);
    if (node.op() == "placeholder") {
      auto dtype = node.attr().find("dtype");
      auto shape = node.attr().find("shape");
      if (dtype != node.attr().end() && shape != node.attr().end())
        checkAgainstDeclared("feed for placeholder '" + name + "'", value,
                             dtype->second.type(),
                             Dims(shape->second.shape().dim().begin(),
                                  shape->second.shape().dim().end()));
    }
    checkAgainstDeclared("feed for node '" + name + "'", value, value.dtype,
                         value.shape);
    fedByIndex[i] = value;
  }
  std::vector<int> targets;
  for (const std::string &name : nodes)
    targets.push_back(nodeIndex(name, "requested node"));
  std::map<int, Value> values = execute(targets, fedByIndex);
  std::vector<Value> results;
  for (int i : targets)
    results.push_back(values.at(i));
  return results;
}

std::map<std::string, Value>
Evaluator::run(const std::string &mode,
               const std::map<std::string, Value> &features,
               const std::map<std::string, Value> &labels) {
  auto sigIt = graph_.signature().find(mode);
  if (sigIt == graph_.signature().end())
    fail("graph has no signature '" + mode + "'");
  const g::SignatureDef &sig = sigIt->second;
  const std::string where = "signature '" + mode + "'";

  std::map<std::string, Value> feeds;
  auto bind =
      [&](const google::protobuf::RepeatedPtrField<g::Binding> &bindings,
          const std::map<std::string, Value> &given, const char *kind) {
        std::set<std::string> keys;
        for (const g::Binding &b : bindings) {
          keys.insert(b.key());
          auto it = given.find(b.key());
          if (it == given.end())
            fail(where + ": " + kind + " '" + b.key() + "' is not fed");
          feeds[b.node()] = it->second;
        }
        for (const auto &entry : given)
          if (!keys.count(entry.first))
            fail(where + " has no " + kind + " '" + entry.first + "'");
      };
  bind(sig.features(), features, "feature");
  bind(sig.labels(), labels, "label");

  // Pass 1: loss, predictions and the effects (train_op, metric updates).
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!sig.loss().empty())
    outputs.push_back({"loss", sig.loss()});
  if (mode == "predict")
    for (const g::Binding &b : sig.predictions())
      outputs.push_back({"predictions/" + b.key(), b.node()});
  std::vector<std::string> nodes;
  for (const auto &out : outputs)
    nodes.push_back(out.second);
  if (!sig.train_op().empty())
    nodes.push_back(sig.train_op());
  for (const g::MetricBinding &m : sig.metrics())
    for (const std::string &update : m.update())
      nodes.push_back(update);
  std::vector<Value> values = evaluate(nodes, feeds);
  std::map<std::string, Value> results;
  for (size_t k = 0; k < outputs.size(); ++k)
    results[outputs[k].first] = values[k];

  // Pass 2: metric values, read after the updates (like @eval_metrics).
  std::vector<std::string> metricNodes;
  std::vector<std::string> metricKeys;
  for (const g::MetricBinding &m : sig.metrics())
    if (!m.value().empty()) {
      metricKeys.push_back("metrics/" + m.key());
      metricNodes.push_back(m.value());
    }
  if (!metricNodes.empty()) {
    std::vector<Value> metricValues = evaluate(metricNodes, {});
    for (size_t k = 0; k < metricKeys.size(); ++k)
      results[metricKeys[k]] = metricValues[k];
  }
  return results;
}

} // namespace reference
} // namespace estc
