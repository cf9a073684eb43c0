//===- PhiloxTest.cpp - Philox4x32-10 and the random-op transforms ------===//

#include "lib/Random/Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace estc::random;

namespace {

// Random123's known-answer tests for philox4x32_10 (kat_vectors).
TEST(PhiloxTest, KnownAnswerZeros) {
  Block r = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r, (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(PhiloxTest, KnownAnswerAllOnes) {
  Block r = philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff});
  EXPECT_EQ(r, (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(PhiloxTest, KnownAnswerPiDigits) {
  Block r = philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0});
  EXPECT_EQ(r, (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, IsConstexpr) {
  static_assert(philox4x32({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
}

TEST(PhiloxTest, KeyAndCounterLayout) {
  EXPECT_EQ(makeKey(0x0000000500000007LL), (Key{7, 5}));
  EXPECT_EQ(makeKey(-1), (Key{0xffffffff, 0xffffffff}));
  EXPECT_EQ(makeCounter(0x0000000300000002ULL, 0x0000000900000004LL),
            (Block{2, 3, 4, 9}));
  EXPECT_EQ(makeCounter(1, -2), (Block{1, 0, 0xfffffffe, 0xffffffff}));
  // randomBits is philox4x32 of exactly that layout.
  EXPECT_EQ(randomBits(0xa4093822 | (int64_t(0x299f31d0) << 32),
                       0x13198a2e | (int64_t(0x03707344) << 32),
                       0x243f6a88 | (uint64_t(0x85a308d3) << 32)),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, Uniform01Range) {
  EXPECT_EQ(uniform01<float>(0), 0.0f);
  EXPECT_EQ(uniform01<float>(0xff), 0.0f); // the low 8 bits are dropped
  EXPECT_EQ(uniform01<float>(0x100), std::ldexp(1.0f, -24));
  EXPECT_EQ(uniform01<float>(0xffffffff), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_EQ(uniform01<double>(0xffffffff), 1.0 - std::ldexp(1.0, -24));
  EXPECT_EQ(uniform01OpenClosed<float>(0), std::ldexp(1.0f, -24));
  EXPECT_EQ(uniform01OpenClosed<float>(0xffffffff), 1.0f);
}

TEST(PhiloxTest, TransformsOfFixedBits) {
  Block r{0x80000000, 0, 0, 0}; // u = 0.5, u2 = 0
  EXPECT_FLOAT_EQ(uniform<float>(r, -1.0f, 3.0f), 1.0f);
  // u1 = 0.5 + 2^-24, u2 = 0: z = sqrt(-2 ln u1).
  EXPECT_NEAR(standardNormal<double>(r), std::sqrt(-2 * std::log(0.5)), 1e-6);
  EXPECT_NEAR(normal<float>(r, 1.0f, 2.0f),
              1.0f + 2.0f * std::sqrt(-2.0f * std::log(0.5f)), 1e-5);
  // The median of the truncated normal is 0.
  EXPECT_NEAR(standardTruncatedNormal<float>(r), 0.0f, 1e-6);
  EXPECT_NEAR(truncatedNormal<double>(r, 3.0, 2.0), 3.0, 1e-6);
  // The extremes reach (close to) +-2 and never beyond.
  EXPECT_NEAR(standardTruncatedNormal<float>(Block{0, 0, 0, 0}), -2.0f, 1e-3);
  EXPECT_NEAR(standardTruncatedNormal<float>(Block{0xffffffff, 0, 0, 0}), 2.0f,
              1e-3);
  EXPECT_LE(standardTruncatedNormal<float>(Block{0xffffffff, 0, 0, 0}), 2.0f);
  // dropout keeps iff u >= rate.
  EXPECT_TRUE(dropoutKeep<float>(r, 0.5f));
  EXPECT_FALSE(dropoutKeep<float>(r, 0.50001f));
  EXPECT_FLOAT_EQ(dropout<float>(r, 3.0f, 0.25f), 4.0f);
  EXPECT_EQ(dropout<float>(r, 3.0f, 0.75f), 0.0f);
}

TEST(PhiloxTest, ErfinvMatchesErf) {
  for (double x = -0.95; x <= 0.95; x += 0.05) {
    double y = erfinvCentral<double>(x);
    EXPECT_NEAR(std::erf(y), x, 2e-6) << "x = " << x;
    float yf = erfinvCentral<float>(static_cast<float>(x));
    EXPECT_NEAR(std::erf(static_cast<double>(yf)), x, 2e-6) << "x = " << x;
  }
}

struct Moments {
  double mean = 0, variance = 0, min = 1e300, max = -1e300;
};

template <typename Fn> Moments moments(int n, Fn draw) {
  Moments m;
  std::vector<double> xs(n);
  for (int i = 0; i < n; ++i) {
    xs[i] = draw(randomBits(/*seed=*/1234, /*counter=*/7, i));
    m.mean += xs[i];
    m.min = std::min(m.min, xs[i]);
    m.max = std::max(m.max, xs[i]);
  }
  m.mean /= n;
  for (double x : xs)
    m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= n;
  return m;
}

constexpr int kDraws = 100000;

TEST(PhiloxTest, UniformStatistics) {
  Moments m = moments(
      kDraws, [](const Block &r) { return uniform<float>(r, 0.0f, 1.0f); });
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_NEAR(m.variance, 1.0 / 12, 0.002);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
}

TEST(PhiloxTest, NormalStatistics) {
  Moments m = moments(
      kDraws, [](const Block &r) { return normal<float>(r, 0.0f, 1.0f); });
  EXPECT_NEAR(m.mean, 0.0, 0.015);
  EXPECT_NEAR(m.variance, 1.0, 0.02);
  EXPECT_LT(m.min, -3.5); // tails exist
  EXPECT_GT(m.max, 3.5);
}

TEST(PhiloxTest, TruncatedNormalStatistics) {
  Moments m = moments(kDraws, [](const Block &r) {
    return truncatedNormal<float>(r, 0.0f, 1.0f);
  });
  // The variance of a standard normal truncated to [-2, 2] is
  // 1 - 4 phi(2) / (Phi(2) - Phi(-2)) = 0.773741.
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.variance, 0.773741, 0.01);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 2.0);
  EXPECT_LT(m.min, -1.99);
  EXPECT_GT(m.max, 1.99);
}

TEST(PhiloxTest, DropoutKeepRate) {
  int kept = 0;
  for (int i = 0; i < kDraws; ++i)
    kept += dropoutKeep<float>(randomBits(5, 0, i), 0.3f);
  EXPECT_NEAR(static_cast<double>(kept) / kDraws, 0.7, 0.005);
}

TEST(PhiloxTest, StreamsDifferBySeedCounterAndIndex) {
  Block base = randomBits(1, 1, 1);
  EXPECT_NE(base, randomBits(2, 1, 1));
  EXPECT_NE(base, randomBits(1, 2, 1));
  EXPECT_NE(base, randomBits(1, 1, 2));
  EXPECT_NE(base, randomBits(1, 1, 1 + (uint64_t(1) << 32)));
}

} // namespace
