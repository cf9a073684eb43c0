//===- Philox.h - The counter-based generator behind est random ops -----===//
//
// THE specification of the `est` random operations (dropout, random_uniform,
// random_normal, truncated_normal; docs/ops.md "Randomness"). The compiler
// emits exactly this arithmetic inline, and the test reference evaluator
// (test/reference) calls these functions, so any change here is a change of
// the op semantics: change both, and the known-answer tests, together.
//
// Every random value is a pure function of (seed, counter, index):
//   seed     the op's `seed` attribute (int64),
//   counter  the op's scalar `counter` operand (int64; the graph builder
//            passes global_step, so each step draws fresh numbers),
//   index    the element's linear row-major index in the result (for dropout,
//            in x) as an unsigned 64-bit integer.
// Nothing depends on thread count, evaluation order or tiling.
//
// Step 1, the Philox4x32-10 block (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11; Random123's philox4x32 with R = 10):
//   key   = {uint32(seed), uint32(uint64(seed) >> 32)}
//   ctr   = {uint32(index), uint32(index >> 32),
//            uint32(counter), uint32(uint64(counter) >> 32)}
//   r     = philox4x32_10(ctr, key)                 -> 4 x uint32
// where one round maps (c, k) to
//   p0 = uint64(0xD2511F53) * c[0];  p1 = uint64(0xCD9E8D57) * c[2]
//   c' = {hi(p1) ^ c[1] ^ k[0], lo(p1), hi(p0) ^ c[3] ^ k[1], lo(p0)}
// and the key is bumped between rounds (9 bumps for 10 rounds):
//   k' = {k[0] + 0x9E3779B9, k[1] + 0xBB67AE85}     (mod 2^32)
//
// Step 2, the transforms (T is the op's compute type: float for f32, f16 and
// bf16 results, double for f64; every operation below is done in T, in the
// order written, without fused multiply-adds):
//   uniform01(x)        = T(x >> 8) * 2^-24                   in [0, 1)
//   random_uniform      = minval + uniform01(r[0]) * (maxval - minval)
//   random_normal       = mean + stddev * z, Box-Muller on r[0], r[1]:
//                           u1 = (T(r[0] >> 8) + 1) * 2^-24   in (0, 1]
//                           u2 = T(r[1] >> 8) * 2^-24         in [0, 1)
//                           z  = sqrt(-2 * log(u1)) * cos(2*pi * u2)
//   truncated_normal    = mean + stddev * z, z the standard normal restricted
//                         to [-2, 2] (like TF), by inverse CDF, no rejection:
//                           u = uniform01(r[0])
//                           x = u * (2*erf(sqrt2)) - erf(sqrt2)
//                             ( = 2p - 1 for p = Phi(-2) + u*(Phi(2)-Phi(-2)) )
//                           z = clamp(sqrt2 * erfinv(x), -2, 2)
//                         erfinv is Giles' single-precision approximation
//                         (M. Giles, "Approximating the erfinv function",
//                         GPU Computing Gems, 2010), central branch only:
//                           w = -log((1 - x) * (1 + x)) - 2.5
//                           erfinv(x) = x * P(w), P the degree-8 polynomial
//                           below evaluated by Horner's rule.
//                         |x| <= erf(sqrt2) = 0.9545 gives w <= -0.08 < 2.5,
//                         well inside the branch (valid for w + 2.5 < 5).
//   dropout(x)          = keep ? x / (1 - rate) : 0,
//                           keep = uniform01(r[0]) >= rate
//
// Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_RANDOM_PHILOX_H
#define ESTC_LIB_RANDOM_PHILOX_H

#include <array>
#include <cmath>
#include <cstdint>

namespace estc {
namespace random {

using Block = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

constexpr uint32_t kPhiloxM0 = 0xD2511F53u; // multiplies ctr[0]
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u; // multiplies ctr[2]
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u; // bumps key[0] (golden ratio)
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u; // bumps key[1] (sqrt(3) - 1)
constexpr int kPhiloxRounds = 10;

/// One Philox4x32 round.
constexpr Block philoxRound(const Block &c, const Key &k) {
  uint64_t p0 = uint64_t(kPhiloxM0) * c[0];
  uint64_t p1 = uint64_t(kPhiloxM1) * c[2];
  return Block{uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1),
               uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
}

/// Philox4x32-10 of a counter block under a key.
constexpr Block philox4x32(Block ctr, Key key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    ctr = philoxRound(ctr, key);
  }
  return ctr;
}

/// key = {uint32(seed), uint32(uint64(seed) >> 32)}.
constexpr Key makeKey(int64_t seed) {
  uint64_t s = static_cast<uint64_t>(seed);
  return Key{uint32_t(s), uint32_t(s >> 32)};
}

/// ctr = {uint32(index), uint32(index >> 32), uint32(counter),
///        uint32(uint64(counter) >> 32)}.
constexpr Block makeCounter(uint64_t index, int64_t counter) {
  uint64_t c = static_cast<uint64_t>(counter);
  return Block{uint32_t(index), uint32_t(index >> 32), uint32_t(c),
               uint32_t(c >> 32)};
}

/// The four random words of element `index` of an op with `seed` drawing at
/// `counter`.
constexpr Block randomBits(int64_t seed, int64_t counter, uint64_t index) {
  return philox4x32(makeCounter(index, counter), makeKey(seed));
}

/// 2^-24: the spacing of the 24-bit uniforms (exact in float and double).
constexpr double kTwoPowMinus24 = 1.0 / 16777216.0;

/// uniform01(x) = T(x >> 8) * 2^-24, in [0, 1); exact in float and double.
template <typename T> constexpr T uniform01(uint32_t x) {
  return T(x >> 8) * T(kTwoPowMinus24);
}

/// uniform01 shifted to (0, 1]: (T(x >> 8) + 1) * 2^-24.
template <typename T> constexpr T uniform01OpenClosed(uint32_t x) {
  return (T(x >> 8) + T(1)) * T(kTwoPowMinus24);
}

/// random_uniform: minval + uniform01(r[0]) * (maxval - minval).
template <typename T> inline T uniform(const Block &r, T minval, T maxval) {
  return minval + uniform01<T>(r[0]) * (maxval - minval);
}

/// 2 * pi, rounded to T.
template <typename T> constexpr T kTwoPi = T(6.283185307179586476925286766559);

/// Standard normal by Box-Muller on r[0], r[1]:
///   z = sqrt(-2 * log(u1)) * cos(2*pi * u2).
template <typename T> inline T standardNormal(const Block &r) {
  T u1 = uniform01OpenClosed<T>(r[0]);
  T u2 = uniform01<T>(r[1]);
  T radius = std::sqrt(T(-2) * std::log(u1));
  T angle = kTwoPi<T> * u2;
  return radius * std::cos(angle);
}

/// random_normal: mean + stddev * z.
template <typename T> inline T normal(const Block &r, T mean, T stddev) {
  return mean + stddev * standardNormal<T>(r);
}

/// erf(sqrt(2)) = Phi(2) - Phi(-2): the probability mass within 2 stddev.
template <typename T> constexpr T kErfSqrt2 = T(0.95449973610364158560);
template <typename T> constexpr T kSqrt2 = T(1.41421356237309504880);

/// Giles' single-precision erfinv, central branch (valid for
/// -log((1-x)(1+x)) < 5, i.e. |x| < 0.99662):
///   w = -log((1 - x) * (1 + x)) - 2.5
///   p = 2.81022636e-08
///   p = 3.43273939e-07 + p * w      p = -3.5233877e-06 + p * w
///   p = -4.39150654e-06 + p * w     p = 0.00021858087 + p * w
///   p = -0.00125372503 + p * w      p = -0.00417768164 + p * w
///   p = 0.246640727 + p * w         p = 1.50140941 + p * w
///   erfinv(x) = p * x
/// The coefficients are float literals in both variants.
template <typename T> inline T erfinvCentral(T x) {
  T w = -std::log((T(1) - x) * (T(1) + x)) - T(2.5f);
  T p = T(2.81022636e-08f);
  p = T(3.43273939e-07f) + p * w;
  p = T(-3.5233877e-06f) + p * w;
  p = T(-4.39150654e-06f) + p * w;
  p = T(0.00021858087f) + p * w;
  p = T(-0.00125372503f) + p * w;
  p = T(-0.00417768164f) + p * w;
  p = T(0.246640727f) + p * w;
  p = T(1.50140941f) + p * w;
  return p * x;
}

/// Standard normal restricted to [-2, 2] by inverse CDF:
///   u = uniform01(r[0]); x = u * (2 * erf(sqrt2)) - erf(sqrt2)
///   z = clamp(sqrt2 * erfinv(x), -2, 2).
template <typename T> inline T standardTruncatedNormal(const Block &r) {
  T u = uniform01<T>(r[0]);
  T x = u * (T(2) * kErfSqrt2<T>)-kErfSqrt2<T>;
  T z = kSqrt2<T> * erfinvCentral<T>(x);
  if (z < T(-2))
    z = T(-2);
  if (z > T(2))
    z = T(2);
  return z;
}

/// truncated_normal: mean + stddev * z.
template <typename T>
inline T truncatedNormal(const Block &r, T mean, T stddev) {
  return mean + stddev * standardTruncatedNormal<T>(r);
}

/// dropout's mask: keep iff uniform01(r[0]) >= rate.
template <typename T> constexpr bool dropoutKeep(const Block &r, T rate) {
  return uniform01<T>(r[0]) >= rate;
}

/// dropout: keep ? x / (1 - rate) : 0.
template <typename T> inline T dropout(const Block &r, T x, T rate) {
  return dropoutKeep<T>(r, rate) ? x / (T(1) - rate) : T(0);
}

} // namespace random
} // namespace estc

#endif // ESTC_LIB_RANDOM_PHILOX_H
