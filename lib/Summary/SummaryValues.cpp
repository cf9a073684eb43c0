//===- SummaryValues.cpp - Summary.Values as TensorFlow writes them ------===//

#include "lib/Summary/SummaryValues.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <limits>
#include <png.h>
#include <stdexcept>

namespace estc {
namespace summary {

//===----------------------------------------------------------------------===//
// Histograms (tensorflow/core/lib/histogram/histogram.cc)
//===----------------------------------------------------------------------===//

const std::vector<double> &default_bucket_limits() {
  static const std::vector<double> limits = [] {
    std::vector<double> pos, neg;
    // Buckets whose range grows by 10% from 1e-12 up to 1e20.
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) {
      pos.push_back(v);
      neg.push_back(-v);
    }
    pos.push_back(DBL_MAX);
    neg.push_back(-DBL_MAX);
    std::reverse(neg.begin(), neg.end());
    std::vector<double> all = neg;
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return limits;
}

Histogram::Histogram()
    : min_(default_bucket_limits().back()), max_(-DBL_MAX),
      buckets_(default_bucket_limits().size(), 0.0) {}

void Histogram::add(double value) {
  const std::vector<double> &limits = default_bucket_limits();
  size_t b = static_cast<size_t>(
      std::upper_bound(limits.begin(), limits.end(), value) - limits.begin());
  buckets_[std::min(b, buckets_.size() - 1)] += 1.0;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  num_ += 1;
  sum_ += value;
  sumSquares_ += value * value;
}

HistogramProto Histogram::to_proto(bool preserve_zero_buckets) const {
  const std::vector<double> &limits = default_bucket_limits();
  HistogramProto proto;
  proto.set_min(min_);
  proto.set_max(max_);
  proto.set_num(num_);
  proto.set_sum(sum_);
  proto.set_sum_squares(sumSquares_);
  for (size_t i = 0; i < buckets_.size();) {
    double end = limits[i];
    double count = buckets_[i];
    ++i;
    if (!preserve_zero_buckets && count <= 0.0) {
      // A run of empty buckets is one bucket.
      while (i < buckets_.size() && buckets_[i] <= 0.0) {
        end = limits[i];
        count = buckets_[i];
        ++i;
      }
    }
    proto.add_bucket_limit(end);
    proto.add_bucket(count);
  }
  if (proto.bucket_size() == 0) {
    proto.add_bucket_limit(DBL_MAX);
    proto.add_bucket(0.0);
  }
  return proto;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

SummaryValue scalar_value(const std::string &tag, const TensorValue &value) {
  if (value.num_elements() != 1 || value.dtype == DType::String)
    throw std::invalid_argument("summary.scalar '" + tag + "': value is " +
                                value.spec().str() + ", not a scalar");
  SummaryValue v;
  v.set_tag(tag);
  v.set_simple_value(static_cast<float>(value.element(0)));
  return v;
}

SummaryValue histogram_value(const std::string &tag,
                             const TensorValue &values) {
  if (values.dtype == DType::String || values.dtype == DType::Bool)
    throw std::invalid_argument("summary.histogram '" + tag + "': values are " +
                                values.spec().str() + ", not numbers");
  Histogram h;
  int64_t n = values.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double x = values.element(i);
    if (!std::isfinite(x))
      throw std::invalid_argument("summary.histogram '" + tag +
                                  "': " + (std::isnan(x) ? "NaN" : "infinity") +
                                  " in summary histogram (element " +
                                  std::to_string(i) + ")");
    h.add(x);
  }
  SummaryValue v;
  v.set_tag(tag);
  *v.mutable_histo() = h.to_proto();
  return v;
}

namespace {
template <typename T>
std::vector<uint8_t> normalize(const std::vector<double> &pixels, int64_t hw,
                               int depth) {
  std::vector<uint8_t> out(static_cast<size_t>(hw * depth));
  auto finite = [&](int64_t i) {
    for (int j = 0; j < depth; ++j)
      if (!std::isfinite(static_cast<T>(pixels[i * depth + j])))
        return false;
    return true;
  };
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t i = 0; i < hw; ++i)
    if (finite(i))
      for (int j = 0; j < depth; ++j) {
        float x = static_cast<float>(static_cast<T>(pixels[i * depth + j]));
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
  // ImageSummaryOp's affine map into uint8, its constants in float.
  const float kZeroThreshold = 1e-6f;
  T scale, offset;
  if (lo < 0) {
    float maxVal = std::max(std::abs(lo), std::abs(hi));
    scale = static_cast<T>(maxVal < kZeroThreshold ? 0.0f : 127.0f / maxVal);
    offset = static_cast<T>(128.0f);
  } else {
    scale = static_cast<T>(hi < kZeroThreshold ? 0.0f : 255.0f / hi);
    offset = static_cast<T>(0.0f);
  }
  // A pixel with a non-finite channel gets TF's bad_color: opaque red.
  const uint8_t bad[4] = {255, 0, 0, 255};
  for (int64_t i = 0; i < hw; ++i) {
    bool ok = finite(i);
    for (int j = 0; j < depth; ++j) {
      uint8_t &p = out[static_cast<size_t>(i * depth + j)];
      if (!ok) {
        p = bad[j];
        continue;
      }
      T y = static_cast<T>(pixels[i * depth + j]) * scale + offset;
      // Eigen's cast<uint8>: a C++ conversion (truncation toward zero).
      p = static_cast<uint8_t>(static_cast<int>(y));
    }
  }
  return out;
}
} // namespace

std::vector<uint8_t> normalize_float_image(const std::vector<double> &pixels,
                                           int64_t hw, int depth,
                                           bool single_precision) {
  return single_precision ? normalize<float>(pixels, hw, depth)
                          : normalize<double>(pixels, hw, depth);
}

namespace {
void pngWrite(png_structp png, png_bytep data, png_size_t length) {
  auto *out = static_cast<std::string *>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char *>(data), length);
}
void pngFlush(png_structp) {}
// libpng's errors return to encode_png's setjmp (no C++ exception crosses
// libpng's C frames).
void pngError(png_structp png, png_const_charp message) {
  auto *why = static_cast<std::string *>(png_get_error_ptr(png));
  *why = message;
  png_longjmp(png, 1);
}
void pngWarning(png_structp, png_const_charp) {}

/// Writes the PNG into `out`; false (and `why`) when libpng fails.
bool writePng(std::string &out, std::string &why, const uint8_t *pixels,
              png_uint_32 height, png_uint_32 width, int channels,
              int colorType) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &why,
                                            pngError, pngWarning);
  if (!png) {
    why = "out of memory";
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    if (why.empty())
      why = "out of memory";
    return false;
  }
  png_set_write_fn(png, &out, pngWrite, pngFlush);
  png_set_IHDR(png, info, width, height, 8, colorType, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  size_t rowBytes = static_cast<size_t>(width) * channels;
  for (png_uint_32 r = 0; r < height; ++r)
    png_write_row(png, const_cast<png_bytep>(pixels + r * rowBytes));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}
} // namespace

std::string encode_png(const uint8_t *pixels, int64_t height, int64_t width,
                       int channels) {
  int colorType = channels == 1   ? PNG_COLOR_TYPE_GRAY
                  : channels == 2 ? PNG_COLOR_TYPE_GRAY_ALPHA
                  : channels == 3 ? PNG_COLOR_TYPE_RGB
                  : channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA
                                  : -1;
  if (colorType < 0 || height <= 0 || width <= 0 || height > INT32_MAX ||
      width > INT32_MAX)
    throw std::invalid_argument("encode_png: cannot encode " +
                                std::to_string(height) + "x" +
                                std::to_string(width) + " pixels of " +
                                std::to_string(channels) + " channels");
  std::string out, why;
  if (!writePng(out, why, pixels, static_cast<png_uint_32>(height),
                static_cast<png_uint_32>(width), channels, colorType))
    throw std::runtime_error("encode_png: libpng: " + why);
  return out;
}

std::vector<SummaryValue> image_values(const std::string &tag,
                                       const TensorValue &images,
                                       int64_t max_outputs) {
  const std::vector<int64_t> &s = images.shape;
  if (s.size() != 4 || !(s[3] == 1 || s[3] == 3 || s[3] == 4) ||
      !is_floating(images.dtype))
    throw std::invalid_argument("summary.image '" + tag + "': value is " +
                                images.spec().str() +
                                ", not float [batch, height, width, 1|3|4]");
  int64_t n = std::min(s[0], max_outputs);
  int64_t hw = s[1] * s[2];
  int depth = static_cast<int>(s[3]);
  std::vector<SummaryValue> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> pixels(static_cast<size_t>(hw * depth));
    for (int64_t k = 0; k < hw * depth; ++k)
      pixels[static_cast<size_t>(k)] = images.element(i * hw * depth + k);
    std::vector<uint8_t> bytes = normalize_float_image(
        pixels, hw, depth, images.dtype != DType::Float64);
    SummaryValue v;
    v.set_tag(max_outputs > 1 ? tag + "/image/" + std::to_string(i)
                              : tag + "/image");
    tensorboard::Summary::Image *image = v.mutable_image();
    image->set_height(static_cast<int32_t>(s[1]));
    image->set_width(static_cast<int32_t>(s[2]));
    image->set_colorspace(depth);
    if (hw > 0)
      image->set_encoded_image_string(
          encode_png(bytes.data(), s[1], s[2], depth));
    out.push_back(std::move(v));
  }
  return out;
}

SummaryValue text_value(const std::string &tag,
                        const std::vector<std::string> &strings,
                        const std::vector<int64_t> &shape) {
  SummaryValue v;
  v.set_tag(tag);
  v.mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tensorboard::TensorProto *t = v.mutable_tensor();
  t->set_dtype(7); // DT_STRING
  t->mutable_tensor_shape();
  for (int64_t d : shape)
    t->mutable_tensor_shape()->add_dim()->set_size(d);
  for (const std::string &s : strings)
    t->add_string_val(s);
  return v;
}

std::vector<SummaryValue> summary_values(const ModelSummary &summary,
                                         const TensorValue &value) {
  if (summary.kind == "scalar")
    return {scalar_value(summary.tag, value)};
  if (summary.kind == "histogram")
    return {histogram_value(summary.tag, value)};
  if (summary.kind == "image")
    return image_values(summary.tag, value, summary.max_outputs);
  if (summary.kind == "text")
    return {text_value(summary.tag, summary.text, summary.text_shape)};
  throw std::invalid_argument("summary '" + summary.tag + "': unknown kind '" +
                              summary.kind + "'");
}

} // namespace summary
} // namespace estc
