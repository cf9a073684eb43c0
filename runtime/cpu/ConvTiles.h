//===- runtime/cpu/ConvTiles.h - Register tiles of the direct convolutions
//---===//
//
// Internal to runtime/cpu/Conv2D.cpp (built for ESTC_KERNEL_ISA). The three
// convolution kernels are direct: no im2col matrix and no GEMM packing. Each
// keeps a tile of results in vector registers, vectorized along the channel
// that is contiguous in memory and in the (repacked) filter, and broadcasts
// the other operand straight from the NHWC tensor:
//
//   forwardTile     out[P pixels][VB vectors of O] += x[pixel + tap] * w[tap]
//   inputGradTile   part[P pixels][VB vectors of a segment]
//                                                  += dy[pixel][o] * wT[o]
//   filterGradTile  dw[T taps][VB vectors of O] += x[pixel + tap] * dy[pixel]
//
// Vectors are 8 floats (256 bits) in every build. On Zen 4 a 512-bit FMA
// costs two 256-bit ones, so the narrower vector loses nothing there and
// wastes fewer lanes on the small channel counts of real models (20 and 40
// output channels fill 3 and 5 vectors of 8 exactly or nearly, but 2 and 3
// vectors of 16 only 62% and 83%). With AVX-512VL the 32 vector registers
// hold tiles of up to 25 accumulators; AVX2 has 16 registers, 12
// accumulators; the portable build uses the same code on 8-float arrays.
//
// Every result element is one chain of FMAs in a fixed order (the taps, the
// output channels, or the pixels, in order), so it does not depend on the
// tile it falls in, on the tile sizes, or on the thread that runs it.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_CONVTILES_H
#define ESTC_RUNTIME_CPU_CONVTILES_H

#include "runtime/cpu/KernelImpl.h"

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace estc::rt::conv {

// Every loop over a tile's rows or vectors is marked `#pragma GCC unroll 8`:
// fully unrolled, the accumulators stay in registers. (GCC 12 unrolls only
// some of them by itself and then keeps the whole tile in memory, storing
// it on every step.)

/// Floats per vector.
constexpr int kVec = 8;

#if defined(__AVX2__) && defined(__FMA__)

#if defined(__AVX512VL__)
constexpr int kAccumulators = 25; // of 32 registers: the rest hold operands
constexpr int kMaxVectors = 5;
#else
constexpr int kAccumulators = 12; // of 16
constexpr int kMaxVectors = 3;
#endif

using Vec = __m256;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float *p) { return _mm256_loadu_ps(p); }
inline void vstore(float *p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vbroadcast(const float *p) { return _mm256_broadcast_ss(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
/// Two floats at p into lanes 0 and 1, the others 0. p need only be
/// float-aligned: _mm_loadu_si64 is the unaligned 64-bit load (_mm_load_sd
/// through a double* would claim 8-byte alignment, which UBSan reports).
inline __m128 loadPair(const float *p) {
  return _mm_castsi128_ps(_mm_loadu_si64(p));
}
/// Lanes [0, n) of p (n in [0, 4]), the others 0; no other memory is read.
inline __m128 loadPartial4(const float *p, int n) {
  switch (n) {
  case 0:
    return _mm_setzero_ps();
  case 1:
    return _mm_load_ss(p);
  case 2:
    return loadPair(p);
  case 3:
    return _mm_movelh_ps(loadPair(p), _mm_load_ss(p + 2));
  default:
    return _mm_loadu_ps(p);
  }
}
/// Lanes [0, n) of p (n in [0, 8]), the others 0. Plain 128/64/32-bit
/// moves: vmaskmov stores are slow on Zen 4 (microcoded) and these run in
/// the tiles' inner loops for channel counts like 20.
inline Vec vloadPartial(const float *p, int n) {
  if (n >= 4)
    return _mm256_set_m128(loadPartial4(p + 4, n - 4), _mm_loadu_ps(p));
  return _mm256_set_m128(_mm_setzero_ps(), loadPartial4(p, n));
}
/// Stores lanes [0, n) of v (n in [0, 8]); no other memory is written.
inline void vstorePartial(float *p, Vec v, int n) {
  if (n >= kVec) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(v, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storeu_si64(p, _mm_castps_si128(part)); // unaligned, as loadPair
    part = _mm_movehl_ps(part, part);
    p += 2;
    n -= 2;
  }
  if (n >= 1)
    _mm_store_ss(p, part);
}
/// x <= 0 ? +0 : x, lane by lane (NaN stays NaN, -0 becomes +0), as
/// applyEpilogue's relu.
inline Vec vrelu(Vec x) {
  Vec zero = _mm256_setzero_ps();
  return _mm256_blendv_ps(x, zero, _mm256_cmp_ps(x, zero, _CMP_LE_OQ));
}
/// x >= 6 ? 6 : x (NaN stays NaN), as applyEpilogue's relu6 after relu.
inline Vec vmin6(Vec x) {
  Vec six = _mm256_set1_ps(6.0f);
  return _mm256_blendv_ps(x, six, _mm256_cmp_ps(x, six, _CMP_GE_OQ));
}

#else // portable: the compiler vectorizes what it can

constexpr int kAccumulators = 12;
constexpr int kMaxVectors = 3;

struct Vec {
  float v[kVec];
};
inline Vec vzero() { return Vec{}; }
inline Vec vload(const float *p) {
  Vec r;
  for (int i = 0; i < kVec; ++i)
    r.v[i] = p[i];
  return r;
}
inline void vstore(float *p, Vec v) {
  for (int i = 0; i < kVec; ++i)
    p[i] = v.v[i];
}
inline Vec vbroadcast(const float *p) {
  Vec r;
  for (int i = 0; i < kVec; ++i)
    r.v[i] = *p;
  return r;
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  for (int i = 0; i < kVec; ++i)
    c.v[i] = __builtin_fmaf(a.v[i], b.v[i], c.v[i]);
  return c;
}
inline Vec vadd(Vec a, Vec b) {
  for (int i = 0; i < kVec; ++i)
    a.v[i] += b.v[i];
  return a;
}
inline Vec vloadPartial(const float *p, int n) {
  Vec r{};
  for (int i = 0; i < n; ++i)
    r.v[i] = p[i];
  return r;
}
inline void vstorePartial(float *p, Vec v, int n) {
  for (int i = 0; i < n; ++i)
    p[i] = v.v[i];
}
inline Vec vrelu(Vec x) {
  for (float &e : x.v)
    e = e <= 0.0f ? 0.0f : e;
  return x;
}
inline Vec vmin6(Vec x) {
  for (float &e : x.v)
    e = e >= 6.0f ? 6.0f : e;
  return x;
}

#endif

/// dst[0, roundUp(n, kVec)) = src[0, n) followed by zeros.
inline void packRow(float *dst, const float *src, int64_t n) {
  for (; n >= kVec; n -= kVec, src += kVec, dst += kVec)
    vstore(dst, vload(src));
  if (n > 0)
    vstore(dst, vloadPartial(src, int(n)));
}

/// Pixels (or taps) per tile for tiles VB vectors wide.
constexpr int tileRows(int vb) {
  int rows = kAccumulators / vb;
  return rows < 1 ? 1 : rows > 8 ? 8 : rows;
}

/// Where a tile's results go: `count` channels starting at channel `first`
/// of the tensor's last dimension (stride `stride`, 1 for the fast path).
struct Lanes {
  int64_t first, count, stride;
  /// Valid lanes of vector v of the tile.
  int valid(int v) const {
    int64_t n = count - first - int64_t(v) * kVec;
    return n >= kVec ? kVec : n <= 0 ? 0 : int(n);
  }
};

/// The forward epilogue on packed vectors: bias (padded with zeros to whole
/// vectors) and activation, the same float operations as applyEpilogue.
struct VecEpilogue {
  const float *bias = nullptr; // null: no bias
  Epilogue::Activation activation = Epilogue::None;

  Vec apply(Vec x, const float *biasAt) const {
    if (bias)
      x = vadd(x, vload(biasAt));
    if (activation != Epilogue::None)
      x = vrelu(x);
    if (activation == Epilogue::Relu6)
      x = vmin6(x);
    return x;
  }
};

/// Writes vector v of a tile row (`lanes.valid(v)` floats) to dst[i *
/// stride], i counting channels from the tile's first.
inline void storeLanes(float *dst, Vec x, int valid, int64_t stride) {
  if (stride == 1) {
    if (valid == kVec)
      vstore(dst, x);
    else
      vstorePartial(dst, x, valid);
    return;
  }
  alignas(32) float tmp[kVec];
  vstore(tmp, x);
  for (int i = 0; i < valid; ++i)
    dst[i * stride] = tmp[i];
}

/// One forward tile: for P pixels whose first input element (tap (0, 0),
/// channel 0) is at x[j], and VB vectors of output channels,
///   out[j] = epilogue(sum over taps r in order of x[j][tap[r]] * w[r])
/// with w the packed filter [R][wStride] advanced to the tile's first
/// channel. Rows j >= rows repeat row rows - 1 and are not stored.
template <int P, int VB>
void forwardTile(const float *const *x, int rows, const int64_t *tap,
                 int64_t taps, const float *w, int64_t wStride,
                 float *const *out, const Lanes &lanes, const VecEpilogue &e,
                 const float *bias) {
  const float *px[P];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
    px[j] = x[j < rows ? j : rows - 1];
  Vec acc[P][VB];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      acc[j][v] = vzero();
  for (int64_t r = 0; r < taps; ++r) {
    const float *wr = w + r * wStride;
    Vec wv[VB];
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      wv[v] = vload(wr + v * kVec);
    const int64_t t = tap[r];
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
      Vec xj = vbroadcast(px[j] + t);
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v)
        acc[j][v] = vfma(xj, wv[v], acc[j][v]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      if (j < rows)
        storeLanes(out[j] + (lanes.first + v * kVec) * lanes.stride,
                   e.apply(acc[j][v], bias + v * kVec), lanes.valid(v),
                   lanes.stride);
}

/// One input-gradient tile: for P output pixels with gradients dy[j]
/// (channel stride dyStride) and VB vectors of a segment of grad_input (the
/// channels one tap, or one row of taps, reaches from a pixel),
///   part[j] = sum over o in order of dy[j][o] * wT[o]
/// (wT: the filter for that segment, [O][wStride], advanced to the tile's
/// first vector), then dx[j] += part[j], for j in order: the segments of
/// neighbouring pixels may overlap. Rows j >= rows are not added.
template <int P, int VB>
void inputGradTile(const float *const *dy, int rows, int64_t dyStride,
                   int64_t outChannels, const float *wT, int64_t wStride,
                   float *const *dx, const Lanes &lanes) {
  const float *pdy[P];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
    pdy[j] = dy[j < rows ? j : rows - 1];
  Vec acc[P][VB];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      acc[j][v] = vzero();
  for (int64_t o = 0; o < outChannels; ++o) {
    const float *wo = wT + o * wStride;
    Vec wv[VB];
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      wv[v] = vload(wo + v * kVec);
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
      Vec g = vbroadcast(pdy[j] + o * dyStride);
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v)
        acc[j][v] = vfma(g, wv[v], acc[j][v]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v) {
      if (j >= rows)
        continue;
      float *d = dx[j] + lanes.first + v * kVec;
      int valid = lanes.valid(v);
      if (valid == kVec)
        vstore(d, vadd(vload(d), acc[j][v]));
      else
        vstorePartial(d, vadd(vloadPartial(d, valid), acc[j][v]), valid);
    }
}

/// One filter-gradient tile: for T taps at offsets tap[t] and VB vectors of
/// output channels, over `pixels` pixels whose first input element is at
/// x[q] and whose gradient row is dy + q * dyStride (packed, advanced to the
/// tile's first channel):
///   dw[t] = dw[t] + sum over q in order of x[q][tap[t]] * dy[q]
/// dw: [T][dwStride], read and written whole (rows t >= taps repeat the
/// last tap and are not written).
template <int T, int VB>
void filterGradTile(const float *const *x, int64_t pixels, const int64_t *tap,
                    int taps, const float *dy, int64_t dyStride, float *dw,
                    int64_t dwStride) {
  int64_t off[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
    off[t] = tap[t < taps ? t : taps - 1];
  Vec acc[T][VB];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      acc[t][v] = vload(dw + (t < taps ? t : 0) * dwStride + v * kVec);
  for (int64_t q = 0; q < pixels; ++q) {
    const float *xq = x[q];
    const float *dq = dy + q * dyStride;
    Vec d[VB];
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      d[v] = vload(dq + v * kVec);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      Vec xt = vbroadcast(xq + off[t]);
#pragma GCC unroll 8
      for (int v = 0; v < VB; ++v)
        acc[t][v] = vfma(xt, d[v], acc[t][v]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int v = 0; v < VB; ++v)
      if (t < taps)
        vstore(dw + t * dwStride + v * kVec, acc[t][v]);
}

} // namespace estc::rt::conv

#endif // ESTC_RUNTIME_CPU_CONVTILES_H
