//===- SummaryValuesTest.cpp - Summary.Values as TensorFlow writes them --===//
//
// lib/Summary/SummaryValues.h against TensorFlow 2.15's own kernels: the
// expected values below are what tf.compat.v1.summary.histogram / image /
// text produced for the same inputs (printed by TF, copied here), and the
// default bucket limits are rebuilt from histogram.cc's rule.
//
//===----------------------------------------------------------------------===//

#include "lib/Summary/SummaryValues.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <csetjmp>
#include <png.h>

namespace estc {
namespace summary {
namespace {

TEST(SummaryValuesTest, DefaultBucketLimitsAreTensorFlows) {
  const std::vector<double> &limits = default_bucket_limits();
  // 1e-12 * 1.1^k below 1e20: 774 of them, mirrored, then 0 and +-DBL_MAX.
  ASSERT_EQ(limits.size(), 2u * 774u + 3u);
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits.back(), DBL_MAX);
  EXPECT_EQ(limits[limits.size() / 2], 0.0);
  EXPECT_EQ(limits[limits.size() / 2 + 1], 1e-12);
  EXPECT_EQ(limits[limits.size() / 2 - 1], -1e-12);
  EXPECT_NEAR(limits[limits.size() / 2 + 2], 1.1e-12, 1e-27);
  EXPECT_TRUE(std::is_sorted(limits.begin(), limits.end()));
  EXPECT_LT(limits[limits.size() - 2], 1e20);
  EXPECT_GE(limits[limits.size() - 2] * 1.1, 1e20);
}

TEST(SummaryValuesTest, HistogramMatchesTensorFlow) {
  // tf.compat.v1.summary.histogram("h", <these float32 values>).
  std::vector<float> xs = {-2.5f, -1, 0, 0, 1e-13f, 0.5f, 3, 3};
  SummaryValue v = histogram_value("h", TensorValue::of<float>({8}, xs));
  EXPECT_EQ(v.tag(), "h");
  const HistogramProto &h = v.histo();
  EXPECT_EQ(h.min(), -2.5);
  EXPECT_EQ(h.max(), 3.0);
  EXPECT_EQ(h.num(), 8.0);
  EXPECT_DOUBLE_EQ(h.sum(), 3.0000000000001);
  EXPECT_DOUBLE_EQ(h.sum_squares(), 25.5);
  std::vector<std::pair<double, double>> want = {{-2.6170109961884593, 0},
                                                 {-2.379100905625872, 1},
                                                 {-1.0089710279437536, 0},
                                                 {-0.917246389039776, 1},
                                                 {0.0, 0},
                                                 {1e-12, 3},
                                                 {0.47069243095356195, 0},
                                                 {0.5177616740489182, 1},
                                                 {2.8787120958073054, 0},
                                                 {3.1665833053880363, 2},
                                                 {DBL_MAX, 0}};
  ASSERT_EQ(h.bucket_limit_size(), static_cast<int>(want.size()));
  ASSERT_EQ(h.bucket_size(), static_cast<int>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(h.bucket_limit(static_cast<int>(i)), want[i].first,
                std::abs(want[i].first) * 1e-14)
        << "bucket " << i;
    EXPECT_EQ(h.bucket(static_cast<int>(i)), want[i].second) << "bucket " << i;
  }
}

TEST(SummaryValuesTest, EmptyAndPreservedHistograms) {
  Histogram empty;
  HistogramProto p = empty.to_proto();
  // One run of empty buckets, up to DBL_MAX.
  ASSERT_EQ(p.bucket_size(), 1);
  EXPECT_EQ(p.bucket_limit(0), DBL_MAX);
  EXPECT_EQ(p.num(), 0);
  Histogram one;
  one.add(1.0);
  EXPECT_EQ(one.to_proto(/*preserve_zero_buckets=*/true).bucket_size(),
            static_cast<int>(default_bucket_limits().size()));
}

TEST(SummaryValuesTest, HistogramOfNaNIsOneLineError) {
  std::vector<float> xs = {1, NAN};
  try {
    histogram_value("w", TensorValue::of<float>({2}, xs));
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(),
                 "summary.histogram 'w': NaN in summary histogram (element 1)");
  }
}

TEST(SummaryValuesTest, ScalarOfAVectorIsOneLineError) {
  try {
    scalar_value("acc", TensorValue::of<float>({2}, {1, 2}));
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "summary.scalar 'acc': value is F32[2], not a "
                           "scalar");
  }
  EXPECT_EQ(
      scalar_value("acc", TensorValue::of<double>({}, {0.25})).simple_value(),
      0.25f);
}

/// The pixels of a PNG, decoded with libpng.
struct Decoded {
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};
Decoded decodePng(const std::string &png) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Decoded d;
  if (!png_image_begin_read_from_memory(&image, png.data(), png.size()))
    return d;
  d.channels = PNG_IMAGE_SAMPLE_CHANNELS(image.format);
  d.height = static_cast<int>(image.height);
  d.width = static_cast<int>(image.width);
  d.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, d.pixels.data(), 0, nullptr))
    return {};
  return d;
}

TEST(SummaryValuesTest, ImagesMatchTensorFlow) {
  // tf.compat.v1.summary.image("im", x, max_outputs=3), x [2, 2, 2, 1]:
  // image 0 has a negative value (0 at 128), image 1 only non-negative
  // ones and a NaN (TF's bad color: red, so 255 in gray).
  std::vector<float> x = {-1, 0.5f, 0.25f, 2, 0, 1, 3, NAN};
  std::vector<SummaryValue> values =
      image_values("im", TensorValue::of<float>({2, 2, 2, 1}, x), 3);
  ASSERT_EQ(values.size(), 2u);
  std::vector<std::vector<uint8_t>> want = {{64, 159, 143, 255},
                                            {0, 85, 255, 255}};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(values[i].tag(), "im/image/" + std::to_string(i));
    const auto &image = values[i].image();
    EXPECT_EQ(image.height(), 2);
    EXPECT_EQ(image.width(), 2);
    EXPECT_EQ(image.colorspace(), 1);
    Decoded d = decodePng(image.encoded_image_string());
    EXPECT_EQ(d.height, 2);
    EXPECT_EQ(d.width, 2);
    EXPECT_EQ(d.channels, 1);
    EXPECT_EQ(d.pixels, want[i]) << "image " << i;
  }
  // max_outputs 1: one image, tagged "<tag>/image".
  values = image_values("im", TensorValue::of<float>({2, 2, 2, 1}, x), 1);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].tag(), "im/image");
}

TEST(SummaryValuesTest, RgbaPngRoundTrips) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < 3 * 5 * 4; ++i)
    pixels.push_back(static_cast<uint8_t>(i * 7));
  std::string png = encode_png(pixels.data(), 3, 5, 4);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  Decoded d = decodePng(png);
  EXPECT_EQ(d.height, 3);
  EXPECT_EQ(d.width, 5);
  EXPECT_EQ(d.channels, 4);
  EXPECT_EQ(d.pixels, pixels);
}

TEST(SummaryValuesTest, TextIsTheTextPluginsStringTensor) {
  SummaryValue v = text_value("tx", {"hello"}, {});
  EXPECT_EQ(v.tag(), "tx");
  EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(v.tensor().dtype(), 7); // DT_STRING
  EXPECT_EQ(v.tensor().tensor_shape().dim_size(), 0);
  ASSERT_EQ(v.tensor().string_val_size(), 1);
  EXPECT_EQ(v.tensor().string_val(0), "hello");
  ModelSummary table{"t", "text", "", 3, {"a", "b", "c", "d"}, {2, 2}};
  std::vector<SummaryValue> vs = summary_values(table, TensorValue());
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].tensor().tensor_shape().dim_size(), 2);
  EXPECT_EQ(vs[0].tensor().string_val(3), "d");
}

} // namespace
} // namespace summary
} // namespace estc
