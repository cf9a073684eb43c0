//===- SummaryValues.h - Summary.Values as TensorFlow writes them --------===//
//
// The Summary.Value protos of tf.compat.v1.summary's ops, made on the host
// from a fetched tensor, byte for byte as TensorFlow 2.15's kernels make
// them:
//
//   scalar     simple_value (the value as a float).
//   histogram  HistogramProto over TF's default bucket limits
//              (tensorflow/core/lib/histogram/histogram.cc: 0, +-1e-12 *
//              1.1^k below 1e20, +-DBL_MAX), runs of empty buckets merged
//              into one (HistogramSummaryOp); a NaN or infinity is an error,
//              as in TF.
//   image      Summary.Image: the first max_outputs images, each normalized
//              to 8 bits as ImageSummaryOp does (all >= 0: scaled so the
//              largest is 255; any < 0: 0 at 128, the largest magnitude at
//              127 from it; truncated; a pixel with a non-finite channel
//              red), PNG-encoded with libpng (zlib's default compression).
//              Tags "<tag>/image/<i>", or "<tag>/image" for max_outputs 1.
//   text       a DT_STRING TensorProto with metadata plugin_name "text"
//              (TensorBoard's text plugin).
//
// Errors (a NaN in a histogram, an image tensor of the wrong shape) throw
// std::invalid_argument with one line naming the summary's tag.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUMMARY_SUMMARYVALUES_H
#define ESTC_LIB_SUMMARY_SUMMARYVALUES_H

#include "lib/Summary/event.pb.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <string>
#include <vector>

namespace estc {
namespace summary {

using tensorboard::HistogramProto;
using SummaryValue = tensorboard::Summary::Value;

/// TF's default bucket limits, ascending: -DBL_MAX, -1e20.., ..,
/// -1e-12, 0, 1e-12, .., DBL_MAX.
const std::vector<double> &default_bucket_limits();

/// TF's Histogram over default_bucket_limits(): a value v is counted in the
/// first bucket whose limit is > v.
class Histogram {
public:
  Histogram();
  void add(double value);
  /// HistogramProto as Histogram::EncodeToProto writes it; runs of empty
  /// buckets are merged unless `preserve_zero_buckets`.
  HistogramProto to_proto(bool preserve_zero_buckets = false) const;

private:
  double min_, max_, num_ = 0, sum_ = 0, sumSquares_ = 0;
  std::vector<double> buckets_;
};

/// One summary a model defines (a graph::SummaryDef, lib/Graph/
/// Summaries.h, as the hooks see it without the graph library).
struct ModelSummary {
  std::string tag{};
  /// "scalar", "histogram", "image" or "text".
  std::string kind{};
  /// The fetch with its value ("summaries/<tag>"); empty for text.
  std::string fetch{};
  int64_t max_outputs = 3;
  std::vector<std::string> text{};
  std::vector<int64_t> text_shape{};
};

/// The Summary.Values of `summary`, whose fetched value is `value` (unused
/// for text).
std::vector<SummaryValue> summary_values(const ModelSummary &summary,
                                         const TensorValue &value);

SummaryValue scalar_value(const std::string &tag, const TensorValue &value);
SummaryValue histogram_value(const std::string &tag, const TensorValue &values);
/// `images` is [batch, height, width, channels] of a float dtype.
std::vector<SummaryValue> image_values(const std::string &tag,
                                       const TensorValue &images,
                                       int64_t max_outputs);
SummaryValue text_value(const std::string &tag,
                        const std::vector<std::string> &strings,
                        const std::vector<int64_t> &shape);

/// ImageSummaryOp's normalization of one image's `hw` pixels of `depth`
/// channels (row major) to 8 bits.
std::vector<uint8_t> normalize_float_image(const std::vector<double> &pixels,
                                           int64_t hw, int depth,
                                           bool single_precision);

/// An 8-bit PNG of `height` x `width` pixels of `channels` (1: gray, 3:
/// RGB, 4: RGBA) channels, row major.
std::string encode_png(const uint8_t *pixels, int64_t height, int64_t width,
                       int channels);

} // namespace summary
} // namespace estc

#endif // ESTC_LIB_SUMMARY_SUMMARYVALUES_H
