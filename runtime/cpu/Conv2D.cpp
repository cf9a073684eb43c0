//===- runtime/cpu/Conv2D.cpp - 2-D convolution and its two gradients
//--------===//
//
// NHWC activations, HWIO filters. With p counting output pixels (n, oh, ow)
// and r the filter taps (kh, kw, c), R = KH * KW * C of them:
//
//   forward          out[p][o] = sum over r of x[p + tap r] * w[r][o]
//   backprop input   dx[p + tap (kh, kw)][c] +=
//                        sum over o of dy[p][o] * w[kh][kw][c][o]
//   backprop filter  dw[r][o] = sum over p of x[p + tap r] * dy[p][o]
//
// All three are direct convolutions on register tiles
// (runtime/cpu/ConvTiles.h): the input is read where it lies, through a table
// of tap offsets, so there is no im2col matrix, no GEMM packing of it, and no
// col2im. Only the filter is repacked, once per call (its channel padded to
// whole vectors). Inputs that the taps cannot read in place -- padding, a
// strided channel -- are first copied into a zero-padded NHWC frame; backprop
// input then accumulates into such a frame and copies its interior out. Where
// stride and dilation along W are 1 (and the filter is 3 to 5 wide, the
// channels 8 or more), all three use Winograd's minimal filtering along W
// instead (section "Winograd along the rows"). A 1x1 convolution without stride
// or padding is a plain matrix product, left to the blocked GEMM
// (runtime/cpu/Gemm.h). Calls with both channel counts multiples of 16 go to
// oneDNN where the runtime has it (runtime/cpu/OneDnnConv.h).
//
// Determinism: every split below is a function of the shapes, never of the
// thread count, and every reduction runs in a fixed order within one task:
//   forward         one task per block of output pixels; each output is one
//                   FMA chain over the taps in order;
//   backprop input  one task per image; each input value receives its
//                   contributions in the order (segment, pixel tile), each
//                   a chain over the output channels in order;
//   backprop filter the pixels form G groups (G from the shapes); a task
//                   sums one group's pixels in order into its own partial
//                   grad_filter, and the G partials are then added in order;
//   Winograd        tasks over blocks of images (or output rows), filter
//                   gradient over G groups of images, likewise.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/ConvTiles.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelImpl.h"
#include "runtime/cpu/OneDnnConv.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace estc::rt {
namespace {

using Tensor4 = MemRef<float, 4>;
using conv::kVec;

/// Forward: output pixels per task (a multiple of every tile height 1-8
/// but 7, so that only the last block has a short tile).
constexpr int64_t kForwardBlock = 120;
/// Backprop filter: work per partial-sum group, and the most groups.
constexpr double kMinGroupFlops = 8e6;
constexpr int64_t kMaxGroups = 16;
/// Backprop filter: packed grad_output rows per chunk hold about this many
/// floats (16 KiB: half an L1, beside the input pixels they meet).
constexpr int64_t kChunkFloats = 4096;
/// 1x1 convolutions: pixels per GEMM tile.
constexpr int64_t kPointwiseTile = 256;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Whether dims [first, last] of x flatten into one index stepping by `step`
/// elements (dims of size 1 may have any stride).
bool flattens(const Tensor4 &x, int first, int last, int64_t &step) {
  step = 1;
  for (int d = last; d >= first; --d)
    if (x.sizes[d] > 1) {
      step = x.strides[d];
      break;
    }
  int64_t expect = step;
  for (int d = last; d >= first; --d) {
    if (x.sizes[d] > 1 && x.strides[d] != expect)
      return false;
    expect *= x.sizes[d];
  }
  return step >= 1;
}

struct Geometry {
  int64_t n, h, w, c; // input
  int64_t kh, kw, o;  // filter (kh, kw, c, o)
  int64_t oh, ow;     // output
  int64_t r;          // kh * kw * c: taps
  ConvParams p;

  int64_t pixels() const { return n * oh * ow; }
  /// Rows and columns of the input that the taps span, from padded row and
  /// column 0 (0 when there is nothing to read).
  int64_t spanH() const {
    return oh > 0 && kh > 0 ? (oh - 1) * p.strideH + (kh - 1) * p.dilationH + 1
                            : 0;
  }
  int64_t spanW() const {
    return ow > 0 && kw > 0 ? (ow - 1) * p.strideW + (kw - 1) * p.dilationW + 1
                            : 0;
  }
};

Geometry geometry(const char *kernel, const Tensor4 &input,
                  const Tensor4 &filter, const Tensor4 &output,
                  const ConvParams &p) {
  Geometry g{input.sizes[0],
             input.sizes[1],
             input.sizes[2],
             input.sizes[3],
             filter.sizes[0],
             filter.sizes[1],
             filter.sizes[3],
             output.sizes[1],
             output.sizes[2],
             0,
             p};
  g.r = g.kh * g.kw * g.c;
  if (filter.sizes[2] != g.c || output.sizes[0] != g.n ||
      output.sizes[3] != g.o)
    fatal("%s: input [%lld,%lld,%lld,%lld], filter [%lld,%lld,%lld,%lld] and "
          "output [%lld,%lld,%lld,%lld] do not agree",
          kernel, (long long)input.sizes[0], (long long)input.sizes[1],
          (long long)input.sizes[2], (long long)input.sizes[3],
          (long long)filter.sizes[0], (long long)filter.sizes[1],
          (long long)filter.sizes[2], (long long)filter.sizes[3],
          (long long)output.sizes[0], (long long)output.sizes[1],
          (long long)output.sizes[2], (long long)output.sizes[3]);
  if (p.strideH < 1 || p.strideW < 1 || p.dilationH < 1 || p.dilationW < 1)
    fatal("%s: strides (%lld, %lld) and dilations (%lld, %lld) must be >= 1",
          kernel, (long long)p.strideH, (long long)p.strideW,
          (long long)p.dilationH, (long long)p.dilationW);
  if (p.padTop < 0 || p.padLeft < 0)
    fatal("%s: padding (%lld, %lld) must be >= 0", kernel, (long long)p.padTop,
          (long long)p.padLeft);
  return g;
}

// --- Layouts the tiles read --------------------------------------------------

/// NHWC images with channel stride 1: pixel (n, y, x) of the padded frame
/// (input row y - pad_top, column x - pad_left) starts at
/// data + n * image + y * row + x * pixel.
struct Images {
  float *data;
  int64_t image, row, pixel;
  int64_t cols; // pixels in a row
  bool copy;    // a zero-padded copy in Scratch::SharedPadded
};

/// The padded frame: every row and column a tap reads, and all of the input.
int64_t frameH(const Geometry &g) {
  return std::max(g.spanH(), g.p.padTop + g.h);
}
int64_t frameW(const Geometry &g) {
  return std::max(g.spanW(), g.p.padLeft + g.w);
}

/// Whether the taps can read x (input or grad_input) in place: no padding,
/// every tap inside, channels contiguous.
bool inPlace(const Geometry &g, const Tensor4 &x) {
  return g.p.padTop == 0 && g.p.padLeft == 0 && g.spanH() <= g.h &&
         g.spanW() <= g.w && (g.c == 1 || x.strides[3] == 1);
}

/// x in place, or a zero frame for it in SharedPadded (filled by
/// copyIntoFrame / read back by copyFromFrame, one image at a time).
Images imagesOf(const Geometry &g, const Tensor4 &x) {
  if (inPlace(g, x))
    return {x.data(), x.strides[0], x.strides[1], x.strides[2], g.w, false};
  int64_t fh = frameH(g), fw = frameW(g);
  float *buf =
      scratch<float>(Scratch::SharedPadded, size_t(g.n * fh * fw * g.c));
  return {buf, fh * fw * g.c, fw * g.c, g.c, fw, true};
}

/// Image n of x into its zero-padded frame: the padding zeroed, the input
/// copied (a row at a time when x's pixels are contiguous NHWC rows).
void copyIntoFrame(const Geometry &g, const Tensor4 &x, const Images &f,
                   int64_t n) {
  float *dst = f.data + n * f.image;
  const float *src = x.data() + n * x.strides[0];
  int64_t frameRows = f.image / f.row;
  int64_t left = g.p.padLeft * f.pixel, inner = g.w * f.pixel;
  auto zero = [](float *p, int64_t count) {
    if (count > 0)
      std::memset(p, 0, sizeof(float) * size_t(count));
  };
  zero(dst, g.p.padTop * f.row);
  zero(dst + (g.p.padTop + g.h) * f.row,
       (frameRows - g.p.padTop - g.h) * f.row);
  bool rows = x.strides[3] == 1 && x.strides[2] == g.c && f.pixel == g.c;
  for (int64_t ih = 0; ih < g.h; ++ih) {
    float *row = dst + (ih + g.p.padTop) * f.row;
    zero(row, left);
    zero(row + left + inner, f.row - left - inner);
    const float *s = src + ih * x.strides[1];
    if (rows) {
      std::memcpy(row + left, s, sizeof(float) * size_t(inner));
      continue;
    }
    for (int64_t iw = 0; iw < g.w; ++iw) {
      float *d = row + left + iw * f.pixel;
      const float *sp = s + iw * x.strides[2];
      for (int64_t c = 0; c < g.c; ++c)
        d[c] = sp[c * x.strides[3]];
    }
  }
}

/// The input part of image n's frame into x.
void copyFromFrame(const Geometry &g, const Images &f, const Tensor4 &x,
                   int64_t n) {
  const float *src = f.data + n * f.image;
  float *dst = x.data() + n * x.strides[0];
  for (int64_t ih = 0; ih < g.h; ++ih)
    for (int64_t iw = 0; iw < g.w; ++iw) {
      const float *s =
          src + (ih + g.p.padTop) * f.row + (iw + g.p.padLeft) * f.pixel;
      float *d = dst + ih * x.strides[1] + iw * x.strides[2];
      for (int64_t c = 0; c < g.c; ++c)
        d[c * x.strides[3]] = s[c];
    }
}

/// Offsets in `x` of the R taps (kh, kw, c), in that order (c fastest).
int64_t *tapOffsets(const Geometry &g, const Images &x) {
  int64_t *tap = scratch<int64_t>(Scratch::SharedTaps, size_t(g.r));
  for (int64_t kh = 0, r = 0; kh < g.kh; ++kh)
    for (int64_t kw = 0; kw < g.kw; ++kw)
      for (int64_t c = 0; c < g.c; ++c, ++r)
        tap[r] = kh * g.p.dilationH * x.row + kw * g.p.dilationW * x.pixel + c;
  return tap;
}

/// ptr[i] = base + n * image + oh * row + ow * pixel for the `count`
/// output pixels (n, oh, ow) from flat index p0 on, in order (one division
/// per call, not per pixel).
template <typename T>
void walkPixels(const Geometry &g, int64_t p0, int64_t count, T *base,
                int64_t image, int64_t row, int64_t pixel, T **ptr) {
  int64_t n = p0 / (g.oh * g.ow), oh = p0 / g.ow % g.oh, ow = p0 % g.ow;
  T *rowStart = base + n * image + oh * row;
  for (int64_t i = 0; i < count; ++i) {
    ptr[i] = rowStart + ow * pixel;
    if (++ow == g.ow) {
      ow = 0;
      if (++oh == g.oh) {
        oh = 0;
        ++n;
      }
      rowStart = base + n * image + oh * row;
    }
  }
}
/// Where each output pixel reads tap 0 in x.
void tapBases(const Geometry &g, const Images &x, int64_t p0, int64_t count,
              const float **ptr) {
  walkPixels<const float>(g, p0, count, x.data, x.image, g.p.strideH * x.row,
                          g.p.strideW * x.pixel, ptr);
}
/// The output pixels of an output-shaped tensor y.
void outputPixels(const Geometry &g, const Tensor4 &y, int64_t p0,
                  int64_t count, float **ptr) {
  walkPixels<float>(g, p0, count, y.data(), y.strides[0], y.strides[1],
                    y.strides[2], ptr);
}

/// Address of pixel p (flattened over n, h, w) of x.
float *pixel(const Tensor4 &x, int64_t p) {
  int64_t hw = x.sizes[1] * x.sizes[2];
  int64_t n = p / hw, h = (p % hw) / x.sizes[2], w = p % x.sizes[2];
  return x.data() + n * x.strides[0] + h * x.strides[1] + w * x.strides[2];
}

/// Channel blocks of at most conv::kMaxVectors vectors, as even as
/// possible: `first` channel and vector count of each.
struct ChannelBlocks {
  int count = 0;
  int64_t first[64];
  int vectors[64];
};
ChannelBlocks channelBlocks(int64_t channels) {
  ChannelBlocks b;
  int64_t v = ceilDiv(channels, kVec);
  // Beyond 64 blocks (channels > 64 * 40) the blocks just grow; their
  // vector count is capped where the tiles are dispatched.
  int64_t count = std::clamp<int64_t>(ceilDiv(v, conv::kMaxVectors), 1, 64);
  b.count = int(count);
  for (int64_t i = 0, first = 0; i < count; ++i) {
    int64_t vectors = v / count + (i < v % count ? 1 : 0);
    b.first[i] = first;
    b.vectors[i] = int(vectors);
    first += vectors * kVec;
  }
  return b;
}

/// Calls f(std::integral_constant<int, VB>) for vb in [1, kMaxVectors].
template <typename F> void withVectors(int vb, F &&f) {
  switch (vb) {
  case 1:
    return f(std::integral_constant<int, 1>{});
  case 2:
    return f(std::integral_constant<int, 2>{});
  case 3:
    return f(std::integral_constant<int, 3>{});
#if defined(__AVX512VL__)
  case 4:
    return f(std::integral_constant<int, 4>{});
  case 5:
    return f(std::integral_constant<int, 5>{});
#endif
  default:
    fatal("conv: %d vectors per tile", vb);
  }
}

/// Splits a block of `vectors` (as channelBlocks gives, possibly more than
/// kMaxVectors for huge channel counts) into tiles the dispatcher takes.
template <typename F>
void forEachVectorTile(int64_t first, int vectors, F &&f) {
  while (vectors > 0) {
    int vb = std::min(vectors, conv::kMaxVectors);
    f(first, vb);
    first += int64_t(vb) * kVec;
    vectors -= vb;
  }
}

/// The filter as [R][stride] with stride = O rounded up to whole vectors,
/// zeros in the padding, in SharedFilter; the packed bias (or zeros) after
/// it.
struct PackedFilter {
  const float *w, *bias;
  int64_t stride;
};
PackedFilter packForward(const Tensor4 &f, const Geometry &g,
                         const Epilogue &e) {
  int64_t stride = roundUp(std::max<int64_t>(g.o, 1), kVec);
  float *w = scratch<float>(Scratch::SharedFilter, size_t((g.r + 1) * stride));
  const int64_t *s = f.strides;
  for (int64_t kh = 0, r = 0; kh < g.kh; ++kh)
    for (int64_t kw = 0; kw < g.kw; ++kw)
      for (int64_t c = 0; c < g.c; ++c, ++r) {
        const float *src = f.data() + kh * s[0] + kw * s[1] + c * s[2];
        float *dst = w + r * stride;
        for (int64_t o = 0; o < g.o; ++o)
          dst[o] = src[o * s[3]];
        std::fill(dst + g.o, dst + stride, 0.0f);
      }
  float *bias = w + g.r * stride;
  std::fill(bias, bias + stride, 0.0f);
  if (e.bias)
    for (int64_t o = 0; o < g.o; ++o)
      bias[o] = e.bias[o * e.biasStride];
  return {w, bias, stride};
}

/// The filter for the input gradient: for each segment of `segTaps`
/// adjacent taps (kh, kw0 .. kw0 + segTaps - 1), the O x (segTaps * C)
/// matrix that maps one output pixel's gradient to the segTaps * C input
/// values those taps touch, [segment][O][stride] with stride = segTaps * C
/// rounded up to whole vectors.
PackedFilter packTransposed(const Tensor4 &f, const Geometry &g,
                            int64_t segTaps) {
  int64_t len = segTaps * g.c,
          stride = roundUp(std::max<int64_t>(len, 1), kVec);
  int64_t segments = g.kh * (g.kw / segTaps);
  float *w =
      scratch<float>(Scratch::SharedFilter, size_t(segments * g.o * stride));
  const int64_t *s = f.strides;
  for (int64_t seg = 0; seg < segments; ++seg) {
    int64_t kh = seg / (g.kw / segTaps), kw0 = seg % (g.kw / segTaps) * segTaps;
    for (int64_t o = 0; o < g.o; ++o) {
      float *dst = w + (seg * g.o + o) * stride;
      for (int64_t k = 0; k < segTaps; ++k)
        for (int64_t c = 0; c < g.c; ++c)
          dst[k * g.c + c] =
              f.data()[kh * s[0] + (kw0 + k) * s[1] + c * s[2] + o * s[3]];
      std::fill(dst + len, dst + stride, 0.0f);
    }
  }
  return {w, nullptr, stride};
}

// --- 1x1 convolutions: the blocked GEMM --------------------------------------

/// A 1x1, stride-1, unpadded convolution whose input pixels flatten: the
/// input itself is the patch matrix.
bool isPointwise(const Geometry &g, const Tensor4 &input) {
  int64_t step;
  return g.kh == 1 && g.kw == 1 && g.p.strideH == 1 && g.p.strideW == 1 &&
         g.p.padTop == 0 && g.p.padLeft == 0 && g.oh == g.h && g.ow == g.w &&
         flattens(input, 0, 2, step);
}

/// Rows [p0, p0 + rows) of x viewed as a pixels x channels matrix: in place
/// when the pixel dims flatten, else gathered into PixelTile scratch.
View2D<const float> pixelRows(const Tensor4 &x, int64_t p0, int64_t rows) {
  int64_t ch = x.sizes[3], cs = x.strides[3], step;
  if (flattens(x, 0, 2, step))
    return {x.data() + p0 * step, rows, ch, step, cs};
  float *tile = scratch<float>(Scratch::PixelTile, size_t(rows * ch));
  for (int64_t i = 0; i < rows; ++i) {
    const float *src = pixel(x, p0 + i);
    for (int64_t c = 0; c < ch; ++c)
      tile[i * ch + c] = src[c * cs];
  }
  return {tile, rows, ch, ch, 1};
}

/// The filter of a 1x1 convolution as a C x O matrix.
View2D<const float> pointwiseFilter(const Tensor4 &f, const Geometry &g) {
  return {f.data(), g.c, g.o, f.strides[2], f.strides[3]};
}

/// out = rows of `a` times b, a tile of kPointwiseTile pixels per task, with
/// the epilogue.
void pointwiseProduct(const Tensor4 &a, View2D<const float> b,
                      const Tensor4 &out, const Epilogue &epilogue) {
  int64_t pixels = out.sizes[0] * out.sizes[1] * out.sizes[2], outStep;
  bool outFlat = flattens(out, 0, 2, outStep);
  int64_t n = out.sizes[3];
  parallelFor(ceilDiv(pixels, kPointwiseTile),
              2.0 * double(kPointwiseTile * b.rows * n), [&](int64_t t) {
                int64_t p0 = t * kPointwiseTile;
                int64_t rows = std::min(kPointwiseTile, pixels - p0);
                View2D<const float> lhs = pixelRows(a, p0, rows);
                if (outFlat) {
                  View2D<float> o{out.data() + p0 * outStep, rows, n, outStep,
                                  out.strides[3]};
                  gemm<float>(lhs, b, o, false);
                  applyEpilogue(o, epilogue, 0);
                  return;
                }
                // Not PixelTile (it may hold lhs) nor a Gemm* slot.
                float *res =
                    scratch<float>(Scratch::ConvPointers, size_t(rows * n));
                gemm<float>(lhs, b, {res, rows, n, n, 1}, false);
                applyEpilogue({res, rows, n, n, 1}, epilogue, 0);
                for (int64_t i = 0; i < rows; ++i) {
                  float *dst = pixel(out, p0 + i);
                  for (int64_t c = 0; c < n; ++c)
                    dst[c * out.strides[3]] = res[i * n + c];
                }
              });
}

// --- Winograd along the rows -------------------------------------------------
//
// A forward convolution with stride and dilation 1 along W computes each row
// of 4 outputs from 3 + KW inputs with Winograd's minimal filtering
// F(4, KW) (Toom-Cook at the points 0, 1, -1, 2, -2, 1/2, -1/2 and
// infinity): per output row, filter row and channel, alpha = 3 + KW
// products instead of 4 * KW (8 instead of 20 for KW = 5), direct along H.
// With V = B^T d (each input row segment, per channel) and U = G g (each
// filter row, per channel and output channel):
//
//   out[oh][4t + j][o] = sum over xi of A^T[j][xi] *
//                        (sum over (kh, c) of V[oh + kh][t][xi][c] *
//                        U[xi][kh][c][o])
//
// The inner sum is a direct convolution with R = KH * C taps for each of
// the alpha points, which forwardTile computes. The float rounding differs
// from the direct kernel's (the transforms add and scale before the
// products): measured on random data at the ConvNet's second layer, the
// error against an exact sum is about twice the direct kernel's.

constexpr int kWinoOut = 4; // outputs per row tile
constexpr int kWinoMaxAlpha = 8;

struct WinogradMatrices {
  float bt[kWinoMaxAlpha][kWinoMaxAlpha] = {};
  float g[kWinoMaxAlpha][5] = {};
  float at[5][kWinoMaxAlpha] = {};
};

/// B^T, G and A^T of F(outs, taps) (outs + taps - 1 <= 8, both <= 5),
/// computed in double at compile time.
constexpr WinogradMatrices makeWinogradMatrices(int outs, int taps) {
  WinogradMatrices m;
  const double points[] = {0, 1, -1, 2, -2, 0.5, -0.5};
  const int alpha = outs + taps - 1, finite = alpha - 1;
  // coef = prod over finite l != skip of (x - p_l), lowest power first.
  auto product = [&](int skip, double *coef) {
    int degree = 0;
    coef[0] = 1;
    for (int l = 0; l < finite; ++l) {
      if (l == skip)
        continue;
      coef[degree + 1] = 0;
      for (int d = degree + 1; d > 0; --d)
        coef[d] = coef[d - 1] - points[l] * coef[d];
      coef[0] *= -points[l];
      ++degree;
    }
  };
  for (int i = 0; i < finite; ++i) {
    double den = 1, power = 1;
    for (int l = 0; l < finite; ++l)
      if (l != i)
        den *= points[i] - points[l];
    for (int q = 0; q < taps; ++q, power *= points[i])
      m.g[i][q] = float(power / den);
    double coef[kWinoMaxAlpha + 1] = {};
    product(i, coef);
    for (int q = 0; q < alpha; ++q)
      m.bt[i][q] = float(coef[q]);
    power = 1;
    for (int j = 0; j < outs; ++j, power *= points[i])
      m.at[j][i] = float(power);
  }
  double coef[kWinoMaxAlpha + 1] = {};
  product(-1, coef);
  for (int q = 0; q < alpha; ++q)
    m.bt[finite][q] = float(coef[q]);
  m.g[finite][taps - 1] = 1;
  m.at[outs - 1][finite] = 1;
  return m;
}

/// The transforms of F(OUTS, TAPS), unrolled, with the matrices' zeros
/// skipped.
template <int OUTS, int TAPS> struct Winograd {
  static constexpr int alpha = OUTS + TAPS - 1;
  static constexpr WinogradMatrices m = makeWinogradMatrices(OUTS, TAPS);

  /// v[xi * stride] = sum over k of B^T[xi][k] * d[k], for `valid` lanes.
  static void input(const conv::Vec *d, float *v, int64_t stride, int valid) {
#pragma GCC unroll 8
    for (int xi = 0; xi < alpha; ++xi) {
      conv::Vec acc = conv::vzero();
#pragma GCC unroll 8
      for (int k = 0; k < alpha; ++k)
        if (m.bt[xi][k] != 0.0f)
          acc = conv::vfma(conv::vbroadcast(&m.bt[xi][k]), d[k], acc);
      if (valid == kVec)
        conv::vstore(v + xi * stride, acc);
      else
        conv::vstorePartial(v + xi * stride, acc, valid);
    }
  }
  /// u[xi * stride] = sum over q of G[xi][q] * d[q] (d: TAPS vectors).
  static void filter(const conv::Vec *d, float *u, int64_t stride) {
#pragma GCC unroll 8
    for (int xi = 0; xi < alpha; ++xi) {
      conv::Vec acc = conv::vzero();
#pragma GCC unroll 8
      for (int q = 0; q < TAPS; ++q)
        if (m.g[xi][q] != 0.0f)
          acc = conv::vfma(conv::vbroadcast(&m.g[xi][q]), d[q], acc);
      conv::vstore(u + xi * stride, acc);
    }
  }
  /// Output J of a tile from the alpha products mq[xi * stride].
  template <int J> static conv::Vec output(const float *mq, int64_t stride) {
    conv::Vec y = conv::vzero();
#pragma GCC unroll 8
    for (int xi = 0; xi < alpha; ++xi)
      if (m.at[J][xi] != 0.0f)
        y = conv::vfma(conv::vbroadcast(&m.at[J][xi]),
                       conv::vload(mq + xi * stride), y);
    return y;
  }
};

/// Whether the forward convolution takes the Winograd path: unit stride and
/// dilation along W, a filter 3 to 5 wide, and enough channels that the
/// transforms (per input and output value) are cheap beside the products
/// (per input value times output channel).
bool useWinograd(const Geometry &g) {
  return g.p.strideW == 1 && g.p.dilationW == 1 && g.kw >= 3 && g.kw <= 5 &&
         g.c >= 8 && g.o >= 8 && g.ow >= kWinoOut;
}

/// The input gradient as a Winograd correlation of grad_output with the
/// filter flipped along W: unit strides, unit dilation along W, and
/// grad_output's channels contiguous.
bool useWinogradInputGrad(const Geometry &g, const Tensor4 &gradOutput) {
  return g.p.strideH == 1 && g.p.strideW == 1 && g.p.dilationW == 1 &&
         g.kw >= 3 && g.kw <= 5 && g.c >= 8 && g.o >= 8 && g.w >= kWinoOut &&
         (gradOutput.strides[3] == 1 || g.o == 1);
}

/// A convolution computed row by row with F(4, KW) along W:
///
///   out[n][r][col][co] = epilogue(sum over kh valid for r, kw, ci of
///       in[n][r * rowStep + rowBase + kh * khStep][col + kw - colShift][ci]
///       * w[kh][kw][ci][co])
///
/// where an input row outside [0, inRows) has no taps (kh is not valid) and
/// an input column outside [0, inCols) reads 0. The forward convolution is
/// (rowStep, rowBase, khStep, colShift) = (stride_h, 0, dilation_h, 0) on
/// the input or its padded frame; the input gradient is (1, pad_top,
/// -dilation_h, KW - 1 - pad_left) on grad_output with the filter flipped
/// along W and its two channel dimensions swapped.
struct RowConv {
  const float *in;
  int64_t inImage, inRow, inPixel, inRows, inCols, ci;
  int64_t rowStep, rowBase, khStep, colShift;
  int64_t n, kh, co;
  const Tensor4 *out; // [n, outRows, outCols, co]
  /// u[xi][kh][ci][opad]: the filter rows transformed by G.
  const float *u;
  const float *bias; // opad floats (zeros without a bias)
  conv::VecEpilogue epilogue;
};

template <int KW> void rowWinograd(const RowConv &p) {
  using W = Winograd<kWinoOut, KW>;
  constexpr int alpha = W::alpha;
  const int64_t outRows = p.out->sizes[1], outCols = p.out->sizes[2];
  const int64_t tiles = ceilDiv(outCols, kWinoOut);
  const int64_t opad = roundUp(p.co, kVec);
  const int64_t vRow = tiles * alpha * p.ci;
  const int64_t cVecs = ceilDiv(p.ci, kVec);
  const int64_t *os = p.out->strides;

  // Taps of each point, relative to the first valid kh of an output row:
  // V[row of that kh + k * khStep][tile][xi][ci].
  int64_t *tap = scratch<int64_t>(Scratch::SharedTaps, size_t(p.kh * p.ci));
  for (int64_t k = 0; k < p.kh; ++k)
    for (int64_t c = 0; c < p.ci; ++c)
      tap[k * p.ci + c] = k * p.khStep * vRow + c;
  // The valid kh of output row r: [first, last).
  auto validTaps = [&](int64_t r, int64_t &first, int64_t &last) {
    first = p.kh;
    last = 0;
    for (int64_t k = 0; k < p.kh; ++k) {
      int64_t y = r * p.rowStep + p.rowBase + k * p.khStep;
      if (y >= 0 && y < p.inRows) {
        first = std::min(first, k);
        last = k + 1;
      }
    }
    if (first >= last)
      first = last = 0;
  };

  // A task: a block of output rows of a block of images, about 64 row
  // tiles (the pixels of the per-point convolutions) in all.
  ChannelBlocks blocks = channelBlocks(p.co);
  const int64_t perImage = outRows * tiles;
  int64_t imagesPer = 1, rowsPer = outRows;
  if (perImage >= 64) {
    rowsPer = std::max<int64_t>(1, ceilDiv(64, tiles));
  } else {
    // Small images: several per task. A row whose valid taps differ from
    // its neighbours' (the input gradient's top and bottom rows) is a
    // per-point convolution of images * tiles pixels on its own, so take
    // the image count, up to 8x the least, whose row of tiles fills whole
    // register tiles best.
    int64_t least = ceilDiv(64, perImage);
    int64_t rowsOfTile =
        conv::tileRows(std::min(blocks.vectors[0], conv::kMaxVectors));
    double bestWaste = 2;
    for (int64_t k = least; k <= 8 * least; ++k) {
      int64_t px = k * tiles;
      double waste = double(roundUp(px, rowsOfTile) - px) / double(px);
      if (waste < bestWaste - 1e-9) {
        bestWaste = waste;
        imagesPer = k;
      }
    }
  }
  imagesPer = std::min(imagesPer, std::max<int64_t>(p.n, 1));
  const int64_t imageBlocks = ceilDiv(p.n, imagesPer);
  // At least 32 tasks where the rows allow: the caller waits at the end of
  // the region for the last task a helper took (about half a task).
  if (imageBlocks * ceilDiv(outRows, rowsPer) < 32)
    rowsPer = std::min(
        rowsPer,
        std::max<int64_t>(1, ceilDiv(outRows, ceilDiv(32, imageBlocks))));
  const int64_t rowBlocks = ceilDiv(outRows, rowsPer);

  parallelFor(
      imageBlocks * rowBlocks,
      2.0 * double(imagesPer * rowsPer * tiles * alpha * p.kh * p.ci * p.co),
      [&](int64_t task) {
        int64_t n0 = task / rowBlocks * imagesPer;
        int64_t nb = std::min(imagesPer, p.n - n0);
        int64_t r0 = task % rowBlocks * rowsPer;
        int64_t rows = std::min(rowsPer, outRows - r0);
        // The input rows the task's output rows read: [y0, y1).
        int64_t y0 = p.inRows, y1 = 0;
        for (int64_t r = r0; r < r0 + rows; ++r) {
          int64_t first, last;
          validTaps(r, first, last);
          if (first < last) {
            int64_t a = r * p.rowStep + p.rowBase + first * p.khStep;
            int64_t b = r * p.rowStep + p.rowBase + (last - 1) * p.khStep;
            y0 = std::min({y0, a, b});
            y1 = std::max({y1, a + 1, b + 1});
          }
        }
        int64_t yRows = std::max<int64_t>(y1 - y0, 0);
        float *v = scratch<float>(Scratch::WinogradInput,
                                  size_t(nb * yRows * vRow + 1));
        int64_t pixels = nb * rows * tiles;
        float *mbuf = scratch<float>(Scratch::WinogradProducts,
                                     size_t(pixels * alpha * opad));

        // Input transform, a vector of channels at a time.
        for (int64_t i = 0; i < nb; ++i)
          for (int64_t y = 0; y < yRows; ++y) {
            const float *row = p.in + (n0 + i) * p.inImage + (y0 + y) * p.inRow;
            float *vr = v + (i * yRows + y) * vRow;
            for (int64_t t = 0; t < tiles; ++t)
              for (int64_t cv = 0; cv < cVecs; ++cv) {
                int valid = int(std::min<int64_t>(kVec, p.ci - cv * kVec));
                conv::Vec d[alpha];
#pragma GCC unroll 8
                for (int k = 0; k < alpha; ++k) {
                  int64_t col = t * kWinoOut + k - p.colShift;
                  const float *src = row + col * p.inPixel + cv * kVec;
                  d[k] = col < 0 || col >= p.inCols ? conv::vzero()
                         : valid == kVec ? conv::vload(src)
                                         : conv::vloadPartial(src, valid);
                }
                W::input(d, vr + t * alpha * p.ci + cv * kVec, p.ci, valid);
              }
          }

        // The products: for each point, a direct convolution over (kh, ci)
        // for each run of output rows with the same valid taps.
        auto **ptr =
            scratch<float *>(Scratch::ConvPointers, size_t(2 * pixels));
        const float **xs = const_cast<const float **>(ptr);
        float **outs = ptr + pixels;
        conv::VecEpilogue none;
        for (int64_t ra = 0; ra < rows;) {
          int64_t first, last;
          validTaps(r0 + ra, first, last);
          int64_t rb = ra + 1;
          for (int64_t f, l; rb < rows; ++rb) {
            validTaps(r0 + rb, f, l);
            if (f != first || l != last)
              break;
          }
          int64_t count = nb * (rb - ra) * tiles, taps = (last - first) * p.ci;
          for (int xi = 0; xi < alpha; ++xi) {
            int64_t q = 0;
            for (int64_t i = 0; i < nb; ++i)
              for (int64_t r = ra; r < rb; ++r)
                for (int64_t t = 0; t < tiles; ++t, ++q) {
                  int64_t y =
                      (r0 + r) * p.rowStep + p.rowBase + first * p.khStep - y0;
                  // Rows without taps point at row 0 and read nothing.
                  xs[q] = v + (i * yRows + (taps > 0 ? y : 0)) * vRow +
                          (t * alpha + xi) * p.ci;
                  outs[q] =
                      mbuf + (((i * rows + r) * tiles + t) * alpha + xi) * opad;
                }
            const float *uxi = p.u + (xi * p.kh + first) * p.ci * opad;
            for (int b = 0; b < blocks.count; ++b)
              forEachVectorTile(
                  blocks.first[b], blocks.vectors[b],
                  [&](int64_t firstLane, int vb) {
                    conv::Lanes lanes{firstLane, opad, 1};
                    withVectors(vb, [&](auto vbc) {
                      constexpr int VB = decltype(vbc)::value;
                      constexpr int P = conv::tileRows(VB);
                      for (int64_t j = 0; j < count; j += P)
                        conv::forwardTile<P, VB>(
                            xs + j, int(std::min<int64_t>(P, count - j)), tap,
                            taps, uxi + firstLane, opad, outs + j, lanes, none,
                            p.bias + firstLane);
                    });
                  });
          }
          ra = rb;
        }

        // Output transform and epilogue.
        auto store = [&](auto jc, const float *mq, float *out) {
          constexpr int J = decltype(jc)::value;
          conv::Lanes lanes{0, p.co, os[3]};
          for (int64_t ov = 0; ov < opad / kVec; ++ov)
            conv::storeLanes(
                out + ov * kVec * os[3],
                p.epilogue.apply(W::template output<J>(mq + ov * kVec, opad),
                                 p.bias + ov * kVec),
                lanes.valid(int(ov)), os[3]);
        };
        for (int64_t i = 0, q = 0; i < nb; ++i)
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t t = 0; t < tiles; ++t, ++q) {
              const float *mq = mbuf + q * alpha * opad;
              int64_t col = t * kWinoOut;
              float *out = p.out->data() + (n0 + i) * os[0] + (r0 + r) * os[1] +
                           col * os[2];
              store(std::integral_constant<int, 0>{}, mq, out);
              if (col + 1 < outCols)
                store(std::integral_constant<int, 1>{}, mq, out + os[2]);
              if (col + 2 < outCols)
                store(std::integral_constant<int, 2>{}, mq, out + 2 * os[2]);
              if (col + 3 < outCols)
                store(std::integral_constant<int, 3>{}, mq, out + 3 * os[2]);
            }
      });
}

void rowWinograd(int64_t kw, const RowConv &p) {
  if (kw == 3)
    return rowWinograd<3>(p);
  if (kw == 4)
    return rowWinograd<4>(p);
  return rowWinograd<5>(p);
}

/// A filter as the Winograd paths read it: element (h, w, ci, co) at
/// data + h * sh + w * sw + ci * sci + co * sco, with w counted from the
/// other end when `flipW` (the input gradient's correlation).
struct FilterView {
  const float *data;
  int64_t kh, kw, ci, co;
  int64_t sh, sw, sci, sco;
  bool flipW;
};

/// u[xi][kh][ci][opad] = sum over kw of G[xi][kw] * w(kh, kw, ci, co) (FMAs
/// in kw order), in SharedFilter, followed by opad floats for the bias
/// (zeros).
template <int KW> float *transformFilter(const FilterView &f) {
  using W = Winograd<kWinoOut, KW>;
  const int64_t opad = roundUp(f.co, kVec), uPoint = f.kh * f.ci * opad;
  float *u =
      scratch<float>(Scratch::SharedFilter, size_t(W::alpha * uPoint + opad));
  // On the pool: with 2 threads this serial part would otherwise be a few
  // percent of the ConvNet's step.
  parallelFor(f.kh, double(f.ci * opad * W::alpha * KW * 2), [&](int64_t h) {
    for (int64_t c = 0; c < f.ci; ++c)
      for (int64_t ov = 0; ov < opad / kVec; ++ov) {
        int valid = int(std::min<int64_t>(kVec, f.co - ov * kVec));
        conv::Vec d[KW];
        for (int w = 0; w < KW; ++w) {
          const float *src = f.data + h * f.sh +
                             (f.flipW ? KW - 1 - w : w) * f.sw + c * f.sci +
                             ov * kVec * f.sco;
          if (f.sco == 1) {
            d[w] = valid == kVec ? conv::vload(src)
                                 : conv::vloadPartial(src, valid);
          } else {
            alignas(32) float tmp[kVec] = {};
            for (int l = 0; l < valid; ++l)
              tmp[l] = src[l * f.sco];
            d[w] = conv::vload(tmp);
          }
        }
        W::filter(d, u + (h * f.ci + c) * opad + ov * kVec, uPoint);
      }
  });
  std::fill(u + W::alpha * uPoint, u + W::alpha * uPoint + opad, 0.0f);
  return u;
}

float *transformFilter(const FilterView &f) {
  if (f.kw == 3)
    return transformFilter<3>(f);
  if (f.kw == 4)
    return transformFilter<4>(f);
  return transformFilter<5>(f);
}

void winogradForward(const Geometry &g, const Tensor4 &input,
                     const Tensor4 &filter, const Tensor4 &output,
                     const Epilogue &epilogue) {
  const int64_t *fs = filter.strides;
  float *u = transformFilter(
      {filter.data(), g.kh, g.kw, g.c, g.o, fs[0], fs[1], fs[2], fs[3], false});
  int64_t opad = roundUp(g.o, kVec);
  float *bias = u + (kWinoOut + g.kw - 1) * g.kh * g.c * opad;
  if (epilogue.bias)
    for (int64_t o = 0; o < g.o; ++o)
      bias[o] = epilogue.bias[o * epilogue.biasStride];
  Images x = imagesOf(g, input);
  if (x.copy)
    parallelFor(g.n, double(x.image),
                [&](int64_t n) { copyIntoFrame(g, input, x, n); });
  RowConv p{x.data,
            x.image,
            x.row,
            x.pixel,
            x.copy ? frameH(g) : g.h,
            x.cols,
            g.c,
            g.p.strideH,
            0,
            g.p.dilationH,
            0,
            g.n,
            g.kh,
            g.o,
            &output,
            u,
            bias,
            {epilogue.bias ? bias : nullptr, epilogue.activation}};
  rowWinograd(g.kw, p);
}

void winogradInputGrad(const Geometry &g, const Tensor4 &filter,
                       const Tensor4 &gradOutput, const Tensor4 &gradInput) {
  const int64_t *fs = filter.strides;
  int64_t kw = g.kw;
  // The filter flipped along W, its channels swapped: w(h, w, o, c).
  float *u = transformFilter(
      {filter.data(), g.kh, g.kw, g.o, g.c, fs[0], fs[1], fs[3], fs[2], true});
  float *bias = u + (kWinoOut + kw - 1) * g.kh * g.o * roundUp(g.c, kVec);
  const int64_t *ds = gradOutput.strides;
  RowConv p{gradOutput.data(),
            ds[0],
            ds[1],
            ds[2],
            g.oh,
            g.ow,
            g.o,
            1,
            g.p.padTop,
            -g.p.dilationH,
            kw - 1 - g.p.padLeft,
            g.n,
            g.kh,
            g.c,
            &gradInput,
            u,
            bias,
            {}};
  rowWinograd(kw, p);
}

/// The filter gradient with F(KW, 4) along W: for each row of 4 output
/// pixels, the KW taps of a filter row get their sums over those pixels
/// from 3 + KW products instead of 4 * KW. With VX = B^T x (input row
/// segments of 3 + KW pixels, per channel) and UY = G dy (grad_output row
/// segments of 4 pixels, per output channel):
///
///   dw[kh][kw][c][o] = sum over xi of A^T[kw][xi] *
///       (sum over (n, oh, tile) of VX[n][oh + kh][tile][xi][c] *
///       UY[n][oh][tile][xi][o])
///
/// The inner sums run on filterGradTile over the (n, oh, tile) of G groups
/// of images, each into its own partial sums, which are added in group
/// order before A^T.
bool useWinogradFilterGrad(const Geometry &g) {
  return g.p.strideW == 1 && g.p.dilationW == 1 && g.kw >= 3 && g.kw <= 5 &&
         g.c >= 8 && g.o >= 8 && g.ow >= kWinoOut;
}

template <int KW>
void winogradFilterGrad(const Geometry &g, const Tensor4 &input,
                        const Tensor4 &gradOutput, const Tensor4 &gradFilter) {
  using W = Winograd<KW, kWinoOut>;
  constexpr int alpha = W::alpha;
  const int64_t tiles = ceilDiv(g.ow, kWinoOut);
  const int64_t opad = roundUp(g.o, kVec);
  const int64_t vRow = tiles * alpha * g.c;
  const int64_t cVecs = ceilDiv(g.c, kVec), oVecs = opad / kVec;
  const int64_t partialSize = g.kh * alpha * g.c * opad;

  Images x = imagesOf(g, input);
  if (x.copy)
    parallelFor(g.n, double(x.image),
                [&](int64_t n) { copyIntoFrame(g, input, x, n); });
  int64_t *tap = scratch<int64_t>(Scratch::SharedTaps, size_t(g.c));
  for (int64_t c = 0; c < g.c; ++c)
    tap[c] = c;

  // Groups of images, a multiple of 4 of them (as the direct kernel's), at
  // most 16: each holds a partial sum of KH * alpha * C * O floats.
  double flops = 2.0 * double(g.n * g.oh * tiles * g.kh * alpha * g.c * g.o);
  int64_t groups = int64_t(flops / kMinGroupFlops);
  groups = std::clamp<int64_t>(groups > 1 ? roundUp(groups, 4) : 1, 1,
                               std::min(kMaxGroups, std::max<int64_t>(g.n, 1)));
  float *partials =
      scratch<float>(Scratch::SharedPartials, size_t(groups * partialSize));
  // Chunks of about 64 row tiles: a block of rows of one image, or whole
  // images.
  const int64_t perImage = g.oh * tiles;
  const int64_t rowsPer =
      perImage >= 64 ? std::max<int64_t>(1, ceilDiv(64, tiles)) : g.oh;
  const int64_t imagesPer = perImage >= 64 ? 1 : ceilDiv(64, perImage);
  ChannelBlocks blocks = channelBlocks(g.o);
  const int64_t *ds = gradOutput.strides;

  parallelFor(groups, flops / double(groups), [&](int64_t group) {
    float *sum = partials + group * partialSize;
    std::fill(sum, sum + partialSize, 0.0f);
    int64_t nEnd = (group + 1) * g.n / groups;
    for (int64_t n0 = group * g.n / groups; n0 < nEnd; n0 += imagesPer)
      for (int64_t r0 = 0; r0 < g.oh; r0 += rowsPer) {
        int64_t nb = std::min(imagesPer, nEnd - n0);
        int64_t rows = std::min(rowsPer, g.oh - r0);
        int64_t y0 = r0 * g.p.strideH;
        int64_t yRows =
            (rows - 1) * g.p.strideH + (g.kh - 1) * g.p.dilationH + 1;
        int64_t pixels = nb * rows * tiles;
        float *v =
            scratch<float>(Scratch::WinogradInput, size_t(nb * yRows * vRow));
        float *uy = scratch<float>(Scratch::WinogradProducts,
                                   size_t(alpha * pixels * opad));

        // VX = B^T x, per input row.
        for (int64_t i = 0; i < nb; ++i)
          for (int64_t y = 0; y < yRows; ++y) {
            const float *row = x.data + (n0 + i) * x.image + (y0 + y) * x.row;
            float *vr = v + (i * yRows + y) * vRow;
            for (int64_t t = 0; t < tiles; ++t)
              for (int64_t cv = 0; cv < cVecs; ++cv) {
                int valid = int(std::min<int64_t>(kVec, g.c - cv * kVec));
                conv::Vec d[alpha];
#pragma GCC unroll 8
                for (int k = 0; k < alpha; ++k) {
                  int64_t col = t * kWinoOut + k;
                  const float *src = row + col * x.pixel + cv * kVec;
                  d[k] = col >= x.cols   ? conv::vzero()
                         : valid == kVec ? conv::vload(src)
                                         : conv::vloadPartial(src, valid);
                }
                W::input(d, vr + t * alpha * g.c + cv * kVec, g.c, valid);
              }
          }
        // UY = G dy, per grad_output row tile: [xi][pixel][opad].
        for (int64_t i = 0, q = 0; i < nb; ++i)
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t t = 0; t < tiles; ++t, ++q) {
              const float *row =
                  gradOutput.data() + (n0 + i) * ds[0] + (r0 + r) * ds[1];
              for (int64_t ov = 0; ov < oVecs; ++ov) {
                int valid = int(std::min<int64_t>(kVec, g.o - ov * kVec));
                conv::Vec d[kWinoOut];
#pragma GCC unroll 8
                for (int j = 0; j < kWinoOut; ++j) {
                  int64_t col = t * kWinoOut + j;
                  const float *src = row + col * ds[2] + ov * kVec * ds[3];
                  if (col >= g.ow) {
                    d[j] = conv::vzero();
                  } else if (ds[3] == 1) {
                    d[j] = valid == kVec ? conv::vload(src)
                                         : conv::vloadPartial(src, valid);
                  } else {
                    alignas(32) float tmp[kVec] = {};
                    for (int l = 0; l < valid; ++l)
                      tmp[l] = src[l * ds[3]];
                    d[j] = conv::vload(tmp);
                  }
                }
                W::filter(d, uy + q * opad + ov * kVec, pixels * opad);
              }
            }

        // The products, summed over the chunk's row tiles in order.
        auto **xs =
            scratch<const float *>(Scratch::ConvPointers, size_t(pixels));
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int xi = 0; xi < alpha; ++xi) {
            for (int64_t i = 0, q = 0; i < nb; ++i)
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t t = 0; t < tiles; ++t, ++q)
                  xs[q] = v +
                          (i * yRows + r * g.p.strideH + kh * g.p.dilationH) *
                              vRow +
                          (t * alpha + xi) * g.c;
            float *dw = sum + (kh * alpha + xi) * g.c * opad;
            const float *dy = uy + xi * pixels * opad;
            for (int b = 0; b < blocks.count; ++b)
              forEachVectorTile(blocks.first[b], blocks.vectors[b],
                                [&](int64_t first, int vb) {
                                  withVectors(vb, [&](auto vbc) {
                                    constexpr int VB = decltype(vbc)::value;
                                    constexpr int T = conv::tileRows(VB);
                                    int64_t tapTiles = ceilDiv(g.c, T);
                                    for (int64_t k = 0; k < tapTiles; ++k) {
                                      int64_t c0 = k * g.c / tapTiles,
                                              c1 = (k + 1) * g.c / tapTiles;
                                      conv::filterGradTile<T, VB>(
                                          xs, pixels, tap + c0, int(c1 - c0),
                                          dy + first, opad,
                                          dw + c0 * opad + first, opad);
                                    }
                                  });
                                });
          }
      }
  });

  // dw[kh][kw][c] = sum over xi of A^T[kw][xi] * (partial[0] + partial[1]
  // + ...)[kh][xi][c], the partials added in group order.
  const int64_t *fs = gradFilter.strides;
  parallelFor(g.kh * g.c, double(groups * alpha * opad), [&](int64_t task) {
    int64_t kh = task / g.c, c = task % g.c;
    float *total = partials + (kh * alpha * g.c + c) * opad; // group 0's
    for (int xi = 0; xi < alpha; ++xi) {
      float *t = total + xi * g.c * opad;
      for (int64_t j = 1; j < groups; ++j) {
        const float *part = t + j * partialSize;
        for (int64_t o = 0; o < g.o; ++o)
          t[o] += part[o];
      }
    }
    auto store = [&](auto kwc) {
      constexpr int J = decltype(kwc)::value;
      float *dst = gradFilter.data() + kh * fs[0] + J * fs[1] + c * fs[2];
      conv::Lanes lanes{0, g.o, fs[3]};
      for (int64_t ov = 0; ov < oVecs; ++ov)
        conv::storeLanes(dst + ov * kVec * fs[3],
                         W::template output<J>(total + ov * kVec, g.c * opad),
                         lanes.valid(int(ov)), fs[3]);
    };
    store(std::integral_constant<int, 0>{});
    store(std::integral_constant<int, 1>{});
    store(std::integral_constant<int, 2>{});
    if constexpr (KW > 3)
      store(std::integral_constant<int, 3>{});
    if constexpr (KW > 4)
      store(std::integral_constant<int, 4>{});
  });
}

} // namespace

// --- Forward -----------------------------------------------------------------

void conv2d(const Tensor4 &input, const Tensor4 &filter, const Tensor4 &output,
            const ConvParams &p, const Epilogue &epilogue) {
  Geometry g = geometry("estc_conv2d_nhwc_hwio", input, filter, output, p);
  if (isPointwise(g, input))
    return pointwiseProduct(input, pointwiseFilter(filter, g), output,
                            epilogue);
  int64_t pixels = g.pixels();
  if (pixels == 0 || g.o == 0)
    return;
  if (epilogue.empty() && oneDnnConv2d(input, filter, output, p))
    return;
  if (useWinograd(g))
    return winogradForward(g, input, filter, output, epilogue);
  PackedFilter w = packForward(filter, g, epilogue);
  Images x = imagesOf(g, input);
  if (x.copy)
    parallelFor(g.n, double(x.image),
                [&](int64_t n) { copyIntoFrame(g, input, x, n); });
  const int64_t *tap = tapOffsets(g, x);
  ChannelBlocks blocks = channelBlocks(g.o);
  conv::VecEpilogue e{epilogue.bias ? w.bias : nullptr, epilogue.activation};

  parallelFor(
      ceilDiv(pixels, kForwardBlock), 2.0 * double(kForwardBlock * g.r * g.o),
      [&](int64_t task) {
        int64_t p0 = task * kForwardBlock;
        int rows = int(std::min(kForwardBlock, pixels - p0));
        auto **ptr =
            scratch<float *>(Scratch::ConvPointers, size_t(2 * kForwardBlock));
        const float **xs = const_cast<const float **>(ptr);
        float **outs = ptr + kForwardBlock;
        tapBases(g, x, p0, rows, xs);
        outputPixels(g, output, p0, rows, outs);
        conv::Lanes lanes{0, g.o, output.strides[3]};
        for (int b = 0; b < blocks.count; ++b)
          forEachVectorTile(
              blocks.first[b], blocks.vectors[b], [&](int64_t first, int vb) {
                lanes.first = first;
                withVectors(vb, [&](auto vbc) {
                  constexpr int VB = decltype(vbc)::value;
                  constexpr int P = conv::tileRows(VB);
                  for (int i = 0; i < rows; i += P)
                    conv::forwardTile<P, VB>(
                        xs + i, std::min(P, rows - i), tap, g.r, w.w + first,
                        w.stride, outs + i, lanes, e, w.bias + first);
                });
              });
      });
}

// --- Backprop input ----------------------------------------------------------

void conv2dBackpropInput(const Tensor4 &filter, const Tensor4 &gradOutput,
                         const Tensor4 &gradInput, const ConvParams &p) {
  Geometry g =
      geometry("estc_conv2d_backprop_input", gradInput, filter, gradOutput, p);
  if (isPointwise(g, gradInput)) {
    // dx = dy * w^T, a matrix product over pixels.
    pointwiseProduct(gradOutput, pointwiseFilter(filter, g).transposed(),
                     gradInput, {});
    return;
  }
  if (g.n == 0 || g.h == 0 || g.w == 0 || g.c == 0)
    return;
  if (oneDnnConv2dBackpropInput(filter, gradOutput, gradInput, p))
    return;
  if (useWinogradInputGrad(g, gradOutput))
    return winogradInputGrad(g, filter, gradOutput, gradInput);
  Images dx = imagesOf(g, gradInput);
  // The taps of one filter row touch KW * C adjacent floats of a row of
  // grad_input when the pixels there are adjacent (dilation 1, channels
  // packed): one segment, vectorized whole, so the channel count need not
  // fill vectors (20 channels x 5 taps: 100 floats in 13 vectors, where 20
  // channels alone take 3 vectors for each tap). Else a segment per tap.
  int64_t segTaps = g.p.dilationW == 1 && dx.pixel == g.c ? g.kw : 1;
  int64_t segLen = segTaps * g.c, segments = g.kh * (g.kw / segTaps);
  PackedFilter wT = packTransposed(filter, g, segTaps);
  int64_t *segOffset = scratch<int64_t>(Scratch::SharedTaps, size_t(segments));
  for (int64_t seg = 0; seg < segments; ++seg) {
    int64_t kh = seg / (g.kw / segTaps), kw0 = seg % (g.kw / segTaps) * segTaps;
    segOffset[seg] =
        kh * g.p.dilationH * dx.row + kw0 * g.p.dilationW * dx.pixel;
  }
  ChannelBlocks blocks = channelBlocks(segLen);
  int64_t imagePixels = g.oh * g.ow;
  const int64_t *dys = gradOutput.strides;

  parallelFor(g.n, 2.0 * double(imagePixels * g.r * g.o), [&](int64_t n) {
    float *image = dx.data + n * dx.image;
    if (dx.copy) {
      std::memset(image, 0, sizeof(float) * size_t(dx.image));
    } else {
      for (int64_t ih = 0; ih < g.h; ++ih)
        for (int64_t iw = 0; iw < g.w; ++iw)
          std::memset(image + ih * dx.row + iw * dx.pixel, 0,
                      sizeof(float) * size_t(g.c));
    }
    // The image's pixels column by column: the P pixels of a tile then lie
    // in different rows (when OH >= P), so their segments do not overlap,
    // and no add reads memory that a pending store of the same tile wrote
    // (a load spanning two recent stores waits for both to retire).
    auto **ptr =
        scratch<float *>(Scratch::ConvPointers, size_t(2 * imagePixels + 8));
    const float **dy = const_cast<const float **>(ptr);
    float **base = ptr + imagePixels, **dst = ptr + 2 * imagePixels;
    for (int64_t ow = 0, i = 0; ow < g.ow; ++ow)
      for (int64_t oh = 0; oh < g.oh; ++oh, ++i) {
        dy[i] = gradOutput.data() + n * dys[0] + oh * dys[1] + ow * dys[2];
        base[i] =
            image + oh * g.p.strideH * dx.row + ow * g.p.strideW * dx.pixel;
      }
    // Segment by segment, so that its slice of the filter stays in L1.
    for (int b = 0; b < blocks.count; ++b)
      forEachVectorTile(
          blocks.first[b], blocks.vectors[b], [&](int64_t first, int vb) {
            conv::Lanes lanes{first, segLen, 1};
            withVectors(vb, [&](auto vbc) {
              constexpr int VB = decltype(vbc)::value;
              constexpr int P = conv::tileRows(VB);
              for (int64_t seg = 0; seg < segments; ++seg)
                for (int64_t i = 0; i < imagePixels; i += P) {
                  int rows = int(std::min<int64_t>(P, imagePixels - i));
                  for (int j = 0; j < rows; ++j)
                    dst[j] = base[i + j] + segOffset[seg];
                  conv::inputGradTile<P, VB>(dy + i, rows, dys[3], g.o,
                                             wT.w + seg * g.o * wT.stride +
                                                 first,
                                             wT.stride, dst, lanes);
                }
            });
          });
    if (dx.copy)
      copyFromFrame(g, dx, gradInput, n);
  });
}

// --- Backprop filter ---------------------------------------------------------

void conv2dBackpropFilter(const Tensor4 &input, const Tensor4 &gradOutput,
                          const Tensor4 &gradFilter, const ConvParams &p) {
  Geometry g =
      geometry("estc_conv2d_backprop_filter", input, gradFilter, gradOutput, p);
  bool pointwise = isPointwise(g, input);
  if (!pointwise &&
      oneDnnConv2dBackpropFilter(input, gradOutput, gradFilter, p))
    return;
  if (!pointwise && g.n > 0 && useWinogradFilterGrad(g)) {
    if (g.kw == 3)
      return winogradFilterGrad<3>(g, input, gradOutput, gradFilter);
    if (g.kw == 4)
      return winogradFilterGrad<4>(g, input, gradOutput, gradFilter);
    return winogradFilterGrad<5>(g, input, gradOutput, gradFilter);
  }
  int64_t pixels = g.pixels();
  double flops = 2.0 * double(pixels) * double(g.r) * double(g.o);
  // A multiple of 4 once there is more than one, so that 2 or 4 threads
  // get the same number of groups (9 would keep one of 2 threads 11% longer).
  int64_t groups = int64_t(flops / kMinGroupFlops);
  groups =
      std::clamp<int64_t>(groups > 1 ? roundUp(groups, 4) : 1, 1,
                          std::min(kMaxGroups, std::max<int64_t>(pixels, 1)));
  int64_t stride = roundUp(std::max<int64_t>(g.o, 1), kVec);
  int64_t filterSize = g.r * stride;
  float *partials =
      scratch<float>(Scratch::SharedPartials, size_t(groups * filterSize));
  Images x{};
  const int64_t *tap = nullptr;
  if (!pointwise) {
    x = imagesOf(g, input);
    if (x.copy)
      parallelFor(g.n, double(x.image),
                  [&](int64_t n) { copyIntoFrame(g, input, x, n); });
    tap = tapOffsets(g, x);
  }
  ChannelBlocks blocks = channelBlocks(g.o);
  int64_t chunk = std::clamp<int64_t>(kChunkFloats / stride, 16, 256);
  // grad_output read in place when its pixels are contiguous rows of O
  // floats. With O not a multiple of the vector, a tile's last vector of a
  // row also reads the next row's first channels: lanes past O, whose sums
  // land in the partials' padding and are never used. Only the chunk whose
  // last row would read past the tensor is packed.
  int64_t dyStep;
  bool dyRows = gradOutput.strides[3] == 1 &&
                flattens(gradOutput, 0, 2, dyStep) && dyStep == g.o;
  int64_t dyInPlaceEnd =
      dyRows ? pixels - ceilDiv(stride - g.o, std::max<int64_t>(g.o, 1)) : 0;

  parallelFor(groups, flops / double(groups), [&](int64_t group) {
    float *sum = partials + group * filterSize;
    std::fill(sum, sum + filterSize, 0.0f);
    int64_t q0 = group * pixels / groups, q1 = (group + 1) * pixels / groups;
    if (pointwise) {
      // dw += x^T dy over the group's pixels, a tile at a time.
      for (int64_t q = q0; q < q1; q += kPointwiseTile) {
        int64_t rows = std::min(kPointwiseTile, q1 - q);
        View2D<const float> a = pixelRows(input, q, rows);
        // pixelRows may gather into PixelTile: gather dy after a is used.
        float *d = scratch<float>(Scratch::ConvPointers, size_t(rows * stride));
        for (int64_t i = 0; i < rows; ++i) {
          const float *src = pixel(gradOutput, q + i);
          for (int64_t o = 0; o < g.o; ++o)
            d[i * stride + o] = src[o * gradOutput.strides[3]];
        }
        gemm<float>(a.transposed(), {d, rows, g.o, stride, 1},
                    {sum, g.r, g.o, stride, 1}, true);
      }
      return;
    }
    auto *dyPacked = scratch<float>(Scratch::PixelTile, size_t(chunk * stride));
    auto **xs =
        scratch<const float *>(Scratch::ConvPointers, size_t(2 * chunk));
    float **srcRows = const_cast<float **>(xs) + chunk;
    for (int64_t c0 = q0; c0 < q1; c0 += chunk) {
      int64_t rows = std::min(chunk, q1 - c0);
      tapBases(g, x, c0, rows, xs);
      const float *dy = dyPacked;
      int64_t dyStride = stride;
      if (c0 + rows <= dyInPlaceEnd) {
        dy = gradOutput.data() + c0 * g.o;
        dyStride = g.o;
      } else {
        float **src = srcRows;
        outputPixels(g, gradOutput, c0, rows, src);
        for (int64_t i = 0; i < rows; ++i) {
          float *dst = dyPacked + i * stride;
          if (gradOutput.strides[3] == 1) {
            conv::packRow(dst, src[i], g.o);
          } else {
            for (int64_t o = 0; o < g.o; ++o)
              dst[o] = src[i][o * gradOutput.strides[3]];
            std::fill(dst + g.o, dst + stride, 0.0f);
          }
        }
      }
      for (int b = 0; b < blocks.count; ++b)
        forEachVectorTile(
            blocks.first[b], blocks.vectors[b], [&](int64_t first, int vb) {
              withVectors(vb, [&](auto vbc) {
                constexpr int VB = decltype(vbc)::value;
                constexpr int T = conv::tileRows(VB);
                // Tap tiles of T or T - 1 taps: as few and as even as possible.
                int64_t tiles = ceilDiv(g.r, T);
                for (int64_t k = 0; k < tiles; ++k) {
                  int64_t r0 = k * g.r / tiles, r1 = (k + 1) * g.r / tiles;
                  conv::filterGradTile<T, VB>(
                      xs, rows, tap + r0, int(r1 - r0), dy + first, dyStride,
                      sum + r0 * stride + first, stride);
                }
              });
            });
    }
  });

  // grad_filter = partial[0] + partial[1] + ..., in that order, into
  // partial[0], then out.
  const int64_t *s = gradFilter.strides;
  int64_t rowsPerTask = std::max<int64_t>(1, 4096 / stride);
  parallelFor(ceilDiv(g.r, rowsPerTask), double(rowsPerTask * g.o * groups),
              [&](int64_t t) {
                int64_t r1 = std::min(g.r, (t + 1) * rowsPerTask);
                for (int64_t r = t * rowsPerTask; r < r1; ++r) {
                  float *sum = partials + r * stride;
                  for (int64_t j = 1; j < groups; ++j) {
                    const float *part = sum + j * filterSize;
                    for (int64_t o = 0; o < g.o; ++o)
                      sum[o] += part[o];
                  }
                  int64_t kh = r / (g.kw * g.c), kw = (r / g.c) % g.kw,
                          c = r % g.c;
                  float *dst =
                      gradFilter.data() + kh * s[0] + kw * s[1] + c * s[2];
                  for (int64_t o = 0; o < g.o; ++o)
                    dst[o * s[3]] = sum[o];
                }
              });
}

} // namespace estc::rt
