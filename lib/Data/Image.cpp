//===- Image.cpp - Image preprocessing for input pipelines ----------------===//

#include "lib/Data/Image.h"

#include "lib/Data/Idx.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace estc {
namespace data {
namespace image {
namespace {

[[noreturn]] void fail(const std::string &fn, const std::string &what) {
  throw DataError(fn + ": " + what);
}

/// The images' batch, height, width and channels; DataError unless rank 3
/// or 4 with a real or integer dtype.
struct Layout {
  int64_t batch, height, width, channels;
};

Layout layoutOf(const std::string &fn, const TensorValue &images) {
  if (images.dtype == DType::String || images.dtype == DType::Bool)
    fail(fn, std::string("images must be numeric, not ") +
                 dtype_name(images.dtype));
  const std::vector<int64_t> &s = images.shape;
  if (s.size() == 3)
    return {1, s[0], s[1], s[2]};
  if (s.size() == 4)
    return {s[0], s[1], s[2], s[3]};
  fail(fn, "images must be [height, width, channels] or [batch, height, "
           "width, channels], not " +
               shape_string(s));
}

/// The source coordinate of output pixel `out` along an axis of `in_size`
/// pixels resized to `out_size`, with half-pixel centers, and the two
/// neighbours and weight of the upper one (TF's compute_interpolation_
/// weights with HalfPixelScaler).
struct Interp {
  int64_t lower, upper;
  float lerp;
};

std::vector<Interp> bilinearWeights(int64_t in_size, int64_t out_size) {
  float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<Interp> w(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    float in = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    float floor_in = std::floor(in);
    w[o].lower = std::max<int64_t>(static_cast<int64_t>(floor_in), 0);
    w[o].upper =
        std::min<int64_t>(static_cast<int64_t>(std::ceil(in)), in_size - 1);
    w[o].lerp = in - floor_in;
  }
  return w;
}

std::vector<int64_t> nearestIndices(int64_t in_size, int64_t out_size) {
  float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<int64_t> idx(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    float in = (static_cast<float>(o) + 0.5f) * scale;
    idx[o] = std::min<int64_t>(
        std::max<int64_t>(static_cast<int64_t>(std::floor(in)), 0),
        in_size - 1);
  }
  return idx;
}

std::vector<int64_t> resizedShape(const TensorValue &images, int64_t h,
                                  int64_t w) {
  std::vector<int64_t> shape = images.shape;
  size_t r = shape.size();
  shape[r - 3] = h;
  shape[r - 2] = w;
  return shape;
}

} // namespace

TensorValue resize(const TensorValue &images, const std::vector<int64_t> &size,
                   const std::string &method) {
  const std::string fn = "image::resize";
  Layout l = layoutOf(fn, images);
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    fail(fn, "size must be two positive numbers {new_height, new_width}, "
             "not " +
                 shape_string(size));
  if (method != "bilinear" && method != "nearest")
    fail(fn,
         "method must be \"bilinear\" or \"nearest\", not \"" + method + "\"");
  if (l.height == 0 || l.width == 0)
    fail(fn, "cannot resize empty images " + shape_string(images.shape));
  const int64_t oh = size[0], ow = size[1], c = l.channels;
  const size_t elem = dtype_size(images.dtype);

  if (method == "nearest") {
    std::vector<int64_t> ys = nearestIndices(l.height, oh);
    std::vector<int64_t> xs = nearestIndices(l.width, ow);
    TensorValue out;
    out.dtype = images.dtype;
    out.shape = resizedShape(images, oh, ow);
    out.data.resize(static_cast<size_t>(out.num_elements()) * elem);
    const size_t pixel = static_cast<size_t>(c) * elem;
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          std::memcpy(
              &out.data[static_cast<size_t>((b * oh + y) * ow + x) * pixel],
              &images.data[static_cast<size_t>(
                               (b * l.height + ys[y]) * l.width + xs[x]) *
                           pixel],
              pixel);
    return out;
  }

  // Bilinear: every element as float (TF computes in float for any input
  // dtype and returns float32).
  std::vector<float> in(static_cast<size_t>(images.num_elements()));
  if (images.dtype == DType::Float32)
    std::memcpy(in.data(), images.data.data(), in.size() * sizeof(float));
  else
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<float>(images.element(static_cast<int64_t>(i)));
  std::vector<Interp> ys = bilinearWeights(l.height, oh);
  std::vector<Interp> xs = bilinearWeights(l.width, ow);
  std::vector<float> out(static_cast<size_t>(l.batch * oh * ow * c));
  auto at = [&](int64_t b, int64_t y, int64_t x, int64_t ch) {
    return in[static_cast<size_t>(((b * l.height + y) * l.width + x) * c + ch)];
  };
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t y = 0; y < oh; ++y) {
      const Interp &wy = ys[y];
      for (int64_t x = 0; x < ow; ++x) {
        const Interp &wx = xs[x];
        float *o = &out[static_cast<size_t>(((b * oh + y) * ow + x) * c)];
        for (int64_t ch = 0; ch < c; ++ch) {
          float tl = at(b, wy.lower, wx.lower, ch);
          float tr = at(b, wy.lower, wx.upper, ch);
          float bl = at(b, wy.upper, wx.lower, ch);
          float br = at(b, wy.upper, wx.upper, ch);
          float top = tl + (tr - tl) * wx.lerp;
          float bottom = bl + (br - bl) * wx.lerp;
          o[ch] = top + (bottom - top) * wy.lerp;
        }
      }
    }
  return TensorValue::of(resizedShape(images, oh, ow), out);
}

TensorValue grayscale_to_rgb(const TensorValue &images) {
  const std::string fn = "image::grayscale_to_rgb";
  if (images.shape.empty() || images.shape.back() != 1)
    fail(fn, "the last dimension must be 1 (one grey channel), not " +
                 shape_string(images.shape));
  if (images.dtype == DType::String)
    fail(fn, "images must be numeric, not String");
  const size_t elem = dtype_size(images.dtype);
  TensorValue out;
  out.dtype = images.dtype;
  out.shape = images.shape;
  out.shape.back() = 3;
  const size_t n = static_cast<size_t>(images.num_elements());
  out.data.resize(n * 3 * elem);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < 3; ++k)
      std::memcpy(&out.data[(i * 3 + k) * elem], &images.data[i * elem], elem);
  return out;
}

} // namespace image
} // namespace data
} // namespace estc
