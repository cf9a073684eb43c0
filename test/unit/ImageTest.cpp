//===- ImageTest.cpp - Host image preprocessing (lib/Data/Image.h) ------===//
//
// The expected values are TF 2.15's tf.image.resize of the same inputs
// (printed once by TF and kept here), so the host resize of an input
// pipeline and TF's agree.

#include "lib/Data/Image.h"

#include "lib/Data/Idx.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <cmath>

namespace estc {
namespace data {
namespace {

using testing::messageOf;

TensorValue floatImage() {
  // (i * 1.7 - 5)^2 / 10 for i in 0..23, shape [3, 4, 2].
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i)
    v[i] = (static_cast<float>(i) * 1.7f - 5.0f) *
           (static_cast<float>(i) * 1.7f - 5.0f) / 10.0f;
  return TensorValue::of<float>({3, 4, 2}, v);
}

TensorValue intImage() {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i)
    v[i] = i;
  return TensorValue::of<int32_t>({1, 3, 4, 2}, v);
}

void expectClose(const std::vector<float> &got,
                 const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "at " << i;
}

TEST(ImageResize, BilinearUpAndDownEqualTensorFlow) {
  TensorValue up = image::resize(floatImage(), {5, 7});
  EXPECT_EQ(up.shape, (std::vector<int64_t>{5, 7, 2}));
  expectClose(up.values<float>(), {2.5f,
                                   1.0889999866485596f,
                                   1.6985712051391602f,
                                   0.7004284858703613f,
                                   0.41628575325012207f,
                                   0.07871425151824951f,
                                   0.2900000214576721f,
                                   0.6129999756813049f,
                                   0.4940006136894226f,
                                   1.4775722026824951f,
                                   1.8540010452270508f,
                                   3.4981441497802734f,
                                   2.704000949859619f,
                                   4.761000633239746f,
                                   4.458400726318359f,
                                   4.897000312805176f,
                                   4.978115081787109f,
                                   5.829572677612305f,
                                   5.809658050537109f,
                                   7.321686744689941f,
                                   7.797201156616211f,
                                   9.96980094909668f,
                                   10.115032196044922f,
                                   12.948203086853027f,
                                   13.588860511779785f,
                                   17.082603454589844f,
                                   15.760002136230469f,
                                   19.666603088378906f,
                                   7.396000862121582f,
                                   10.609000205993652f,
                                   9.897429466247559f,
                                   13.523286819458008f,
                                   13.899714469909668f,
                                   18.18614387512207f,
                                   19.058002471923828f,
                                   24.005001068115234f,
                                   24.546579360961914f,
                                   30.154146194458008f,
                                   31.191146850585938f,
                                   37.45928955078125f,
                                   35.34400177001953f,
                                   42.025001525878906f,
                                   32.52880859375f,
                                   38.516212463378906f,
                                   37.0119514465332f,
                                   43.41221237182617f,
                                   44.18497848510742f,
                                   51.24580383300781f,
                                   52.514007568359375f,
                                   60.23541259765625f,
                                   61.17333221435547f,
                                   69.55530548095703f,
                                   70.9886474609375f,
                                   80.03118896484375f,
                                   77.12321472167969f,
                                   86.57862854003906f,
                                   49.28400421142578f,
                                   57.121009826660156f,
                                   55.08829116821289f,
                                   63.33815002441406f,
                                   64.3751449584961f,
                                   73.28556823730469f,
                                   74.81800079345703f,
                                   84.38900756835938f,
                                   85.59114837646484f,
                                   95.8227310180664f,
                                   97.52029418945312f,
                                   108.41244506835938f,
                                   104.97601318359375f,
                                   116.28102111816406f});
  TensorValue down = image::resize(floatImage(), {2, 3}, "bilinear");
  EXPECT_EQ(down.shape, (std::vector<int64_t>{2, 3, 2}));
  expectClose(down.values<float>(),
              {3.7353334426879883f, 3.6730003356933594f, 4.982000350952148f,
               6.460999965667725f, 10.082002639770508f, 13.102334976196289f,
               41.135337829589844f, 48.00900650024414f, 60.87800216674805f,
               69.29300689697266f, 84.47401428222656f, 94.43035888671875f});
}

TEST(ImageResize, BilinearOfIntegersIsFloat32) {
  TensorValue r = image::resize(intImage(), {4, 5});
  EXPECT_EQ(r.dtype, DType::Float32);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{1, 4, 5, 2}));
  expectClose(r.values<float>(), {0.0f,
                                  1.0f,
                                  1.4000000953674316f,
                                  2.4000000953674316f,
                                  3.0f,
                                  4.0f,
                                  4.599999904632568f,
                                  5.599999904632568f,
                                  6.0f,
                                  7.0f,
                                  5.0f,
                                  6.0f,
                                  6.399999618530273f,
                                  7.399999618530273f,
                                  8.0f,
                                  9.0f,
                                  9.600000381469727f,
                                  10.600000381469727f,
                                  11.0f,
                                  12.0f,
                                  11.0f,
                                  12.0f,
                                  12.399999618530273f,
                                  13.399999618530273f,
                                  14.0f,
                                  15.0f,
                                  15.600000381469727f,
                                  16.600000381469727f,
                                  17.0f,
                                  18.0f,
                                  16.0f,
                                  17.0f,
                                  17.399999618530273f,
                                  18.399999618530273f,
                                  19.0f,
                                  20.0f,
                                  20.600000381469727f,
                                  21.600000381469727f,
                                  22.0f,
                                  23.0f});
}

TEST(ImageResize, NearestKeepsTheDtype) {
  TensorValue up = image::resize(intImage(), {5, 7}, "nearest");
  EXPECT_EQ(up.dtype, DType::Int32);
  EXPECT_EQ(up.values<int32_t>(),
            (std::vector<int32_t>{
                0,  1,  0,  1,  2,  3,  4,  5,  4,  5,  6,  7,  6,  7,
                0,  1,  0,  1,  2,  3,  4,  5,  4,  5,  6,  7,  6,  7,
                8,  9,  8,  9,  10, 11, 12, 13, 12, 13, 14, 15, 14, 15,
                16, 17, 16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 22, 23,
                16, 17, 16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 22, 23}));
  TensorValue down = image::resize(intImage(), {2, 3}, "nearest");
  EXPECT_EQ(down.values<int32_t>(),
            (std::vector<int32_t>{0, 1, 4, 5, 6, 7, 16, 17, 20, 21, 22, 23}));
}

TEST(ImageResize, SameSizeIsTheIdentity) {
  TensorValue x = floatImage();
  EXPECT_EQ(image::resize(x, {3, 4}).values<float>(), x.values<float>());
  EXPECT_EQ(image::resize(x, {3, 4}, "nearest").data, x.data);
}

TEST(ImageResize, BadInputIsOneLine) {
  EXPECT_EQ(messageOf<DataError>([] {
              image::resize(
                  TensorValue::of<float>({4, 4}, std::vector<float>(16)),
                  {2, 2});
            }),
            "image::resize: images must be [height, width, channels] or "
            "[batch, height, width, channels], not [4,4]");
  EXPECT_EQ(messageOf<DataError>([] { image::resize(floatImage(), {0, 2}); }),
            "image::resize: size must be two positive numbers "
            "{new_height, new_width}, not [0,2]");
  EXPECT_EQ(messageOf<DataError>(
                [] { image::resize(floatImage(), {2, 2}, "bicubic"); }),
            "image::resize: method must be \"bilinear\" or \"nearest\", "
            "not \"bicubic\"");
  EXPECT_EQ(messageOf<DataError>([] {
              image::resize(TensorValue::of<float>({0, 4, 1}, {}), {2, 2});
            }),
            "image::resize: cannot resize empty images [0,4,1]");
  EXPECT_EQ(messageOf<DataError>([] {
              image::resize(TensorValue::of_strings({1, 1, 1}, {"a"}), {2, 2});
            }),
            "image::resize: images must be numeric, not STRING");
}

TEST(ImageGrayscaleToRgb, RepeatsTheChannel) {
  TensorValue g = TensorValue::of<float>({2, 1, 1}, {0.25f, 0.5f});
  TensorValue rgb = image::grayscale_to_rgb(g);
  EXPECT_EQ(rgb.shape, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(rgb.values<float>(),
            (std::vector<float>{0.25f, 0.25f, 0.25f, 0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(messageOf<DataError>([] {
              image::grayscale_to_rgb(
                  TensorValue::of<float>({2, 2}, std::vector<float>(4)));
            }),
            "image::grayscale_to_rgb: the last dimension must be 1 (one grey "
            "channel), not [2,2]");
}

} // namespace
} // namespace data
} // namespace estc
