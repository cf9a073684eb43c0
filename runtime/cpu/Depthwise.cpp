//===- runtime/cpu/Depthwise.cpp - Depthwise convolution kernels ----------===//
//
// est.depthwise_conv2d and its two gradients (NHWC activations, filter
// [KH, KW, C, M], output channel q = c * M + m). A depthwise convolution does
// 2 * KH * KW flops per output element and reads each input element KH * KW
// times from cache, so it is bound by memory, not by arithmetic: each kernel
// makes one pass over its operands, with the channels innermost (contiguous
// in NHWC, vectorized) and a row of output pixels per task. At stride 1
// with few channels (at most 64, multiplier 1) the forward and the input
// gradient instead go tap by tap over whole rows of pixels, each tap one
// contiguous loop against the tap's filter row tiled over the row's pixels.
//
//   forward          task (n, oh): out[n, oh, :, :] accumulated over the
//                    taps (kh, kw) in order
//   backprop input   task (n, ih): dx[n, ih, :, :] gathered from the output
//                    pixels and taps that read it, taps in order (kh, kw, m)
//   backprop filter  task n: the image's partial filter gradient over its
//                    (oh, ow) in order; the partials summed in image order
//
// Which thread runs a task never changes what it computes, so the results
// are bit-identical for any thread count. Operands with a channel stride
// other than 1 take the same loops through their strides.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/KernelImpl.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <vector>

namespace estc::rt {

namespace {

/// Element (i0, i1, i2, i3) of `m`.
template <typename T>
inline T *at(const MemRef<T, 4> &m, int64_t i0, int64_t i1, int64_t i2,
             int64_t i3) {
  return m.data() + i0 * m.strides[0] + i1 * m.strides[1] + i2 * m.strides[2] +
         i3 * m.strides[3];
}

/// o[q] += x[q / mult] * w[q] for q < channels * mult, unit strides.
inline void multiplyAdd(float *__restrict o, const float *__restrict x,
                        const float *__restrict w, int64_t channels,
                        int64_t mult) {
  if (mult == 1) {
    for (int64_t c = 0; c < channels; ++c)
      o[c] += x[c] * w[c];
    return;
  }
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t m = 0; m < mult; ++m)
      o[c * mult + m] += x[c] * w[c * mult + m];
}

bool unitChannels(const MemRef<float, 4> &a, const MemRef<float, 4> &b,
                  const MemRef<float, 4> &c) {
  return (a.sizes[3] == 1 || a.strides[3] == 1) &&
         (b.sizes[3] == 1 || b.strides[3] == 1) &&
         (c.sizes[3] == 1 || c.strides[3] == 1);
}

/// Whether the filter [KH, KW, C, M] steps by 1 over q = c * M + m.
bool filterContiguous(const MemRef<float, 4> &f) {
  return (f.sizes[2] == 1 || f.strides[2] == f.sizes[3]) &&
         (f.sizes[3] == 1 || f.strides[3] == 1);
}

/// The most channels for which stride-1 rows go tap by tap over a tiled
/// filter row (rowsByTaps): with few channels a pixel's inner loop is a
/// vector or two and its loop control dominates (MobileNetV2's first
/// depthwise conv, 32 channels: 3.4 -> 2.3 ms); with many, streaming the
/// tiled rows costs more than it saves (144 channels: 1.8 -> 2.7 ms).
constexpr int64_t kMaxTiledChannels = 64;

/// Whether `m`'s pixels (dims 2, 3) are one dense run per row.
bool denseRows(const MemRef<float, 4> &m) {
  return (m.sizes[3] == 1 || m.strides[3] == 1) &&
         (m.sizes[2] == 1 || m.strides[2] == m.sizes[3]);
}

/// Each tap's filter row repeated over `pixels` pixels: taps x (pixels * c)
/// floats, so that a row of pixels times a tap is one contiguous loop.
std::vector<float> tiledTaps(const MemRef<float, 4> &filter, int64_t pixels) {
  const int64_t kh = filter.sizes[0], kw = filter.sizes[1], c = filter.sizes[2];
  std::vector<float> tiles(static_cast<size_t>(kh * kw * pixels * c));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      float *t = tiles.data() + (i * kw + j) * pixels * c;
      for (int64_t x = 0; x < pixels; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          t[x * c + ch] = *at(filter, i, j, ch, 0);
    }
  return tiles;
}

/// dst[k] += src[k] * tile[k], k < len.
inline void multiplyAddRun(float *__restrict dst, const float *__restrict src,
                           const float *__restrict tile, int64_t len) {
  for (int64_t k = 0; k < len; ++k)
    dst[k] += src[k] * tile[k];
}

/// Stride 1 along W, multiplier 1, dense rows: output row (b, y) of
/// `out` [.., ow, c] is the sum over the taps (i, j) in order of the
/// input rows `rowOf(i)` shifted by `shift(j)` pixels times the tap's
/// tiled filter row, each one contiguous loop over the valid pixels.
template <typename RowOf>
void rowsByTaps(const MemRef<float, 4> &in, const MemRef<float, 4> &out,
                int64_t kh, int64_t kw, const std::vector<float> &tiles,
                int64_t dilationW, int64_t padLeft, bool gather, RowOf rowOf) {
  const int64_t n = out.sizes[0], rows = out.sizes[1], ow = out.sizes[2],
                c = out.sizes[3], iw = in.sizes[2];
  parallelFor(
      n * rows, 2.0 * static_cast<double>(ow * c * kh * kw), [&](int64_t task) {
        int64_t b = task / rows, y = task % rows;
        float *o = at(out, b, y, 0, 0);
        for (int64_t k = 0; k < ow * c; ++k)
          o[k] = 0.0f;
        for (int64_t i = 0; i < kh; ++i) {
          int64_t r = rowOf(y, i);
          if (r < 0)
            continue;
          const float *src = at(in, b, r, 0, 0);
          for (int64_t j = 0; j < kw; ++j) {
            // Forward: input pixel x + j*d - pad; input gradient
            // (gather): output pixel x + pad - j*d.
            int64_t shift =
                gather ? padLeft - j * dilationW : j * dilationW - padLeft;
            int64_t x0 = std::max<int64_t>(0, -shift);
            int64_t x1 = std::min<int64_t>(ow, iw - shift);
            if (x1 <= x0)
              continue;
            multiplyAddRun(o + x0 * c, src + (x0 + shift) * c,
                           tiles.data() + (i * kw + j) * ow * c, (x1 - x0) * c);
          }
        }
      });
}

} // namespace

void depthwiseConv2d(const MemRef<float, 4> &input,
                     const MemRef<float, 4> &filter,
                     const MemRef<float, 4> &output, const ConvParams &p) {
  const int64_t n = output.sizes[0], oh = output.sizes[1], ow = output.sizes[2],
                q = output.sizes[3];
  const int64_t h = input.sizes[1], w = input.sizes[2], c = input.sizes[3];
  const int64_t kh = filter.sizes[0], kw = filter.sizes[1],
                mult = filter.sizes[3];
  const bool contiguous =
      unitChannels(input, input, output) && filterContiguous(filter);
  const int64_t so = output.strides[3];
  if (p.strideW == 1 && mult == 1 && c <= kMaxTiledChannels &&
      filterContiguous(filter) && denseRows(input) && denseRows(output)) {
    rowsByTaps(input, output, kh, kw, tiledTaps(filter, ow), p.dilationW,
               p.padLeft, /*gather=*/false, [&](int64_t y, int64_t i) {
                 int64_t iy = y * p.strideH + i * p.dilationH - p.padTop;
                 return iy >= 0 && iy < h ? iy : int64_t{-1};
               });
    return;
  }
  parallelFor(n * oh, 2.0 * static_cast<double>(ow * q * kh * kw),
              [&](int64_t task) {
                int64_t b = task / oh, y = task % oh;
                for (int64_t x = 0; x < ow; ++x) {
                  float *o = at(output, b, y, x, 0);
                  for (int64_t i = 0; i < q; ++i)
                    o[i * so] = 0.0f;
                  for (int64_t i = 0; i < kh; ++i) {
                    int64_t iy = y * p.strideH + i * p.dilationH - p.padTop;
                    if (iy < 0 || iy >= h)
                      continue;
                    for (int64_t j = 0; j < kw; ++j) {
                      int64_t ix = x * p.strideW + j * p.dilationW - p.padLeft;
                      if (ix < 0 || ix >= w)
                        continue;
                      const float *wt = at(filter, i, j, 0, 0);
                      if (contiguous) {
                        multiplyAdd(o, at(input, b, iy, ix, 0), wt, c, mult);
                        continue;
                      }
                      for (int64_t ch = 0; ch < c; ++ch)
                        for (int64_t m = 0; m < mult; ++m)
                          o[(ch * mult + m) * so] += *at(input, b, iy, ix, ch) *
                                                     *at(filter, i, j, ch, m);
                    }
                  }
                }
              });
}

void depthwiseConv2dBackpropInput(const MemRef<float, 4> &filter,
                                  const MemRef<float, 4> &gradOutput,
                                  const MemRef<float, 4> &gradInput,
                                  const ConvParams &p) {
  const int64_t n = gradInput.sizes[0], h = gradInput.sizes[1],
                w = gradInput.sizes[2], c = gradInput.sizes[3];
  const int64_t oh = gradOutput.sizes[1], ow = gradOutput.sizes[2];
  const int64_t kh = filter.sizes[0], kw = filter.sizes[1],
                mult = filter.sizes[3];
  const bool fast = mult == 1 && filterContiguous(filter) &&
                    unitChannels(gradOutput, gradOutput, gradInput);
  if (fast && p.strideW == 1 && c <= kMaxTiledChannels &&
      denseRows(gradOutput) && denseRows(gradInput)) {
    rowsByTaps(gradOutput, gradInput, kh, kw, tiledTaps(filter, w), p.dilationW,
               p.padLeft, /*gather=*/true, [&](int64_t iy, int64_t i) {
                 int64_t ty = iy + p.padTop - i * p.dilationH;
                 return ty >= 0 && ty % p.strideH == 0 && ty / p.strideH < oh
                            ? ty / p.strideH
                            : int64_t{-1};
               });
    return;
  }
  parallelFor(n * h, 2.0 * static_cast<double>(w * c * mult * kh * kw),
              [&](int64_t task) {
                int64_t b = task / h, iy = task % h;
                for (int64_t ix = 0; ix < w; ++ix) {
                  float *__restrict dx = at(gradInput, b, iy, ix, 0);
                  const int64_t sdx = gradInput.strides[3];
                  for (int64_t ch = 0; ch < c; ++ch)
                    dx[ch * sdx] = 0.0f;
                  for (int64_t i = 0; i < kh; ++i) {
                    int64_t ty = iy + p.padTop - i * p.dilationH;
                    if (ty < 0 || ty % p.strideH != 0 || ty / p.strideH >= oh)
                      continue;
                    int64_t y = ty / p.strideH;
                    for (int64_t j = 0; j < kw; ++j) {
                      int64_t tx = ix + p.padLeft - j * p.dilationW;
                      if (tx < 0 || tx % p.strideW != 0 || tx / p.strideW >= ow)
                        continue;
                      int64_t x = tx / p.strideW;
                      if (fast) {
                        const float *__restrict dy = at(gradOutput, b, y, x, 0);
                        const float *__restrict wt = at(filter, i, j, 0, 0);
                        for (int64_t ch = 0; ch < c; ++ch)
                          dx[ch] += dy[ch] * wt[ch];
                        continue;
                      }
                      for (int64_t ch = 0; ch < c; ++ch)
                        for (int64_t m = 0; m < mult; ++m)
                          dx[ch * sdx] +=
                              *at(gradOutput, b, y, x, ch * mult + m) *
                              *at(filter, i, j, ch, m);
                    }
                  }
                }
              });
}

void depthwiseConv2dBackpropFilter(const MemRef<float, 4> &input,
                                   const MemRef<float, 4> &gradOutput,
                                   const MemRef<float, 4> &gradFilter,
                                   const ConvParams &p) {
  const int64_t n = input.sizes[0], h = input.sizes[1], w = input.sizes[2],
                c = input.sizes[3];
  const int64_t oh = gradOutput.sizes[1], ow = gradOutput.sizes[2];
  const int64_t kh = gradFilter.sizes[0], kw = gradFilter.sizes[1],
                mult = gradFilter.sizes[3];
  const int64_t q = c * mult, taps = kh * kw;
  const bool fast = mult == 1 && unitChannels(input, gradOutput, gradOutput);
  // One partial [KH, KW, Q] per image, summed in image order below.
  std::vector<float> partial(static_cast<size_t>(n * taps * q), 0.0f);
  parallelFor(n, 2.0 * static_cast<double>(oh * ow * q * taps), [&](int64_t b) {
    float *part = partial.data() + b * taps * q;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t i = 0; i < kh; ++i) {
          int64_t iy = y * p.strideH + i * p.dilationH - p.padTop;
          if (iy < 0 || iy >= h)
            continue;
          for (int64_t j = 0; j < kw; ++j) {
            int64_t ix = x * p.strideW + j * p.dilationW - p.padLeft;
            if (ix < 0 || ix >= w)
              continue;
            float *__restrict acc = part + (i * kw + j) * q;
            if (fast) {
              const float *__restrict xs = at(input, b, iy, ix, 0);
              const float *__restrict dy = at(gradOutput, b, y, x, 0);
              for (int64_t ch = 0; ch < c; ++ch)
                acc[ch] += xs[ch] * dy[ch];
              continue;
            }
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t m = 0; m < mult; ++m)
                acc[ch * mult + m] += *at(input, b, iy, ix, ch) *
                                      *at(gradOutput, b, y, x, ch * mult + m);
          }
        }
  });
  // The sum over images, split over the filter's taps (each tap's order of
  // images fixed).
  parallelFor(taps, static_cast<double>(n * q), [&](int64_t t) {
    int64_t i = t / kw, j = t % kw;
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t m = 0; m < mult; ++m) {
        int64_t k = ch * mult + m;
        float s = 0.0f;
        for (int64_t b = 0; b < n; ++b)
          s += partial[static_cast<size_t>((b * taps + t) * q + k)];
        *at(gradFilter, i, j, ch, m) = s;
      }
  });
}

} // namespace estc::rt
