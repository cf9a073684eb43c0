//===- runtime/Conv2D.cpp - 2-D convolution and its two gradients --------===//
//
// All three are GEMMs over im2col patches (NHWC input, HWIO filter):
//
//   forward         out[P x O]   = patches[P x R] * filter[R x O]
//   backprop input  patches[P x R] = grad_out[P x O] * filter^T, then each
//                   patch is added back into grad_input (col2im)
//   backprop filter grad_filter[R x O] = patches^T[R x P] * grad_out[P x O]
//
// where P counts output pixels (n, oh, ow) and R = KH * KW * C counts filter
// taps (kh, kw, c). Patches are built a tile of output pixels at a time in a
// per-thread scratch buffer; the tile size depends on R only.
//
// Determinism: every split below is a function of the shapes, never of the
// thread count, and every reduction runs in a fixed order within one task:
//   forward         one task per pixel tile (tiles may span images);
//   backprop input  one task per image; its pixel tiles are added in order;
//   backprop filter the pixel tiles form G groups (G from the shapes); a task
//                   sums one group's tiles in order into its own partial
//                   grad_filter, and the G partials are then added in order.
//
//===----------------------------------------------------------------------===//
#include "runtime/Gemm.h"
#include "runtime/KernelImpl.h"
#include "runtime/Parallel.h"

#include <algorithm>
#include <cstring>

namespace estc::rt {
namespace {

using Tensor4 = MemRef<float, 4>;

/// Patch tiles hold about this many floats (512 KiB, half an L2 of a recent
/// x86 core; measured faster than 128 KiB on the ConvNet's convolutions).
constexpr int64_t kPatchTileFloats = 128 * 1024;
/// Backprop filter: work per partial-sum group, and the most groups.
constexpr double kMinGroupFlops = 8e6;
constexpr int64_t kMaxGroups = 16;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Output pixels per patch tile for patches of r floats.
int64_t pixelTile(int64_t r) {
  return std::clamp<int64_t>(
      kPatchTileFloats / std::max<int64_t>(r, 1) / 16 * 16, 16, 1024);
}

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
  int64_t r;          // kh * kw * c: patch length
  ConvParams p;
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
  return g;
}

/// The filter as an R x O matrix, in place when (kh, kw, c) flatten, else
/// copied into the calling thread's scratch.
View2D<const float> filterMatrix(const Tensor4 &f, const Geometry &g) {
  int64_t step;
  if (flattens(f, 0, 2, step))
    return {f.data(), g.r, g.o, step, f.strides[3]};
  float *copy = scratch<float>(Scratch::SharedFilter, size_t(g.r * g.o));
  for (int64_t kh = 0, row = 0; kh < g.kh; ++kh)
    for (int64_t kw = 0; kw < g.kw; ++kw)
      for (int64_t c = 0; c < g.c; ++c, ++row)
        for (int64_t o = 0; o < g.o; ++o)
          copy[row * g.o + o] = f.data()[kh * f.strides[0] + kw * f.strides[1] +
                                         c * f.strides[2] + o * f.strides[3]];
  return {copy, g.r, g.o, g.o, 1};
}

/// Address of pixel p (flattened over n, h, w) of x.
float *pixel(const Tensor4 &x, int64_t p) {
  int64_t hw = x.sizes[1] * x.sizes[2];
  int64_t n = p / hw, h = (p % hw) / x.sizes[2], w = p % x.sizes[2];
  return x.data() + n * x.strides[0] + h * x.strides[1] + w * x.strides[2];
}

/// Rows [p0, p0 + rows) of x viewed as a pixels x channels matrix: in place
/// when the pixel dims [first, 2] flatten, else gathered into PixelTile
/// scratch. With first == 1, p0 counts pixels within image `image`.
View2D<const float> pixelRows(const Tensor4 &x, int first, int64_t image,
                              int64_t p0, int64_t rows) {
  int64_t ch = x.sizes[3], cs = x.strides[3], step;
  float *base = x.data() + image * x.strides[0];
  if (flattens(x, first, 2, step))
    return {base + p0 * step, rows, ch, step, cs};
  float *tile = scratch<float>(Scratch::PixelTile, size_t(rows * ch));
  int64_t offset = image * x.sizes[1] * x.sizes[2];
  for (int64_t i = 0; i < rows; ++i) {
    const float *src = pixel(x, offset + p0 + i);
    for (int64_t c = 0; c < ch; ++c)
      tile[i * ch + c] = src[c * cs];
  }
  return {tile, rows, ch, ch, 1};
}

/// Patches of output pixels [p0, p0 + rows) (flattened over n, oh, ow) into
/// dst, one row of g.r floats per pixel, zeros where taps fall outside.
void im2col(const Geometry &g, const Tensor4 &input, int64_t p0, int64_t rows,
            float *dst) {
  const int64_t s0 = input.strides[0], s1 = input.strides[1],
                s2 = input.strides[2], s3 = input.strides[3];
  const int64_t c = g.c, kwc = g.kw * g.c;
  const bool contiguousTaps = (s3 == 1 || c == 1) &&
                              (g.p.dilationW == 1 || g.kw == 1) &&
                              (s2 == c || g.kw == 1);
  int64_t n = p0 / (g.oh * g.ow), oh = (p0 / g.ow) % g.oh, ow = p0 % g.ow;
  for (int64_t i = 0; i < rows; ++i) {
    float *row = dst + i * g.r;
    int64_t ih0 = oh * g.p.strideH - g.p.padTop;
    int64_t iw0 = ow * g.p.strideW - g.p.padLeft;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      float *seg = row + kh * kwc;
      int64_t ih = ih0 + kh * g.p.dilationH;
      if (ih < 0 || ih >= g.h) {
        std::memset(seg, 0, sizeof(float) * size_t(kwc));
        continue;
      }
      const float *inRow = input.data() + n * s0 + ih * s1;
      // Taps of one filter row that are all inside and adjacent in memory
      // (dilation 1, contiguous pixels): one copy of KW * C floats.
      if (contiguousTaps && iw0 >= 0 && iw0 + g.kw <= g.w) {
        const float *src = inRow + iw0 * s2;
        for (int64_t k = 0; k < kwc; ++k)
          seg[k] = src[k];
        continue;
      }
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        float *d = seg + kw * c;
        int64_t iw = iw0 + kw * g.p.dilationW;
        if (iw < 0 || iw >= g.w) {
          std::fill(d, d + c, 0.0f);
        } else {
          const float *src = inRow + iw * s2;
          if (s3 == 1 && c >= 16)
            std::memcpy(d, src, sizeof(float) * size_t(c));
          else if (s3 == 1)
            for (int64_t k = 0; k < c; ++k)
              d[k] = src[k];
          else
            for (int64_t k = 0; k < c; ++k)
              d[k] = src[k * s3];
        }
      }
    }
    if (++ow == g.ow) {
      ow = 0;
      if (++oh == g.oh) {
        oh = 0;
        ++n;
      }
    }
  }
}

/// Adds patches of output pixels [p0, p0 + rows) of image n back into
/// gradInput: the transpose of im2col.
void col2imAdd(const Geometry &g, const Tensor4 &gradInput, int64_t n,
               int64_t p0, int64_t rows, const float *col) {
  const int64_t s1 = gradInput.strides[1], s2 = gradInput.strides[2],
                s3 = gradInput.strides[3];
  float *image = gradInput.data() + n * gradInput.strides[0];
  int64_t oh = p0 / g.ow, ow = p0 % g.ow;
  for (int64_t i = 0; i < rows; ++i) {
    const float *row = col + i * g.r;
    int64_t ih0 = oh * g.p.strideH - g.p.padTop;
    int64_t iw0 = ow * g.p.strideW - g.p.padLeft;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      int64_t ih = ih0 + kh * g.p.dilationH;
      if (ih < 0 || ih >= g.h)
        continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        int64_t iw = iw0 + kw * g.p.dilationW;
        if (iw < 0 || iw >= g.w)
          continue;
        const float *src = row + (kh * g.kw + kw) * g.c;
        float *dst = image + ih * s1 + iw * s2;
        if (s3 == 1)
          for (int64_t c = 0; c < g.c; ++c)
            dst[c] += src[c];
        else
          for (int64_t c = 0; c < g.c; ++c)
            dst[c * s3] += src[c];
      }
    }
    if (++ow == g.ow) {
      ow = 0;
      ++oh;
    }
  }
}

/// A 1x1, stride-1, unpadded convolution whose input pixels flatten: the
/// input itself is the patch matrix.
bool isPointwise(const Geometry &g, const Tensor4 &input) {
  int64_t step;
  return g.kh == 1 && g.kw == 1 && g.p.strideH == 1 && g.p.strideW == 1 &&
         g.p.padTop == 0 && g.p.padLeft == 0 && g.oh == g.h && g.ow == g.w &&
         flattens(input, 0, 2, step);
}

/// Patch rows for output pixels [p0, p0 + rows).
View2D<const float> patches(const Geometry &g, const Tensor4 &input,
                            bool pointwise, int64_t p0, int64_t rows) {
  if (pointwise)
    return pixelRows(input, 0, 0, p0, rows);
  float *col = scratch<float>(Scratch::Im2col, size_t(rows * g.r));
  im2col(g, input, p0, rows, col);
  return {col, rows, g.r, g.r, 1};
}

} // namespace

void conv2d(const Tensor4 &input, const Tensor4 &filter, const Tensor4 &output,
            const ConvParams &p, const Epilogue &epilogue) {
  Geometry g = geometry("estc_conv2d_nhwc_hwio", input, filter, output, p);
  View2D<const float> f = filterMatrix(filter, g);
  bool pointwise = isPointwise(g, input);
  int64_t pixels = g.n * g.oh * g.ow, tile = pixelTile(g.r), outStep;
  bool outFlat = flattens(output, 0, 2, outStep);
  parallelFor(ceilDiv(pixels, tile), 2.0 * tile * g.r * g.o, [&](int64_t t) {
    int64_t p0 = t * tile, rows = std::min(tile, pixels - p0);
    View2D<const float> a = patches(g, input, pointwise, p0, rows);
    if (outFlat) {
      View2D<float> out{output.data() + p0 * outStep, rows, g.o, outStep,
                        output.strides[3]};
      gemm<float>(a, f, out, false);
      applyEpilogue(out, epilogue, 0);
      return;
    }
    float *out = scratch<float>(Scratch::PixelTile, size_t(rows * g.o));
    gemm<float>(a, f, {out, rows, g.o, g.o, 1}, false);
    applyEpilogue({out, rows, g.o, g.o, 1}, epilogue, 0);
    for (int64_t i = 0; i < rows; ++i) {
      float *dst = pixel(output, p0 + i);
      for (int64_t o = 0; o < g.o; ++o)
        dst[o * output.strides[3]] = out[i * g.o + o];
    }
  });
}

void conv2dBackpropInput(const Tensor4 &filter, const Tensor4 &gradOutput,
                         const Tensor4 &gradInput, const ConvParams &p) {
  Geometry g =
      geometry("estc_conv2d_backprop_input", gradInput, filter, gradOutput, p);
  View2D<const float> fT = filterMatrix(filter, g).transposed();
  int64_t pixels = g.oh * g.ow;
  int64_t tile = std::min(pixelTile(g.r), std::max<int64_t>(pixels, 1));
  const int64_t *s = gradInput.strides;
  parallelFor(g.n, 2.0 * pixels * g.r * g.o, [&](int64_t n) {
    float *image = gradInput.data() + n * s[0];
    for (int64_t h = 0; h < g.h; ++h)
      for (int64_t w = 0; w < g.w; ++w)
        for (int64_t c = 0; c < g.c; ++c)
          image[h * s[1] + w * s[2] + c * s[3]] = 0.0f;
    for (int64_t p0 = 0; p0 < pixels; p0 += tile) {
      int64_t rows = std::min(tile, pixels - p0);
      View2D<const float> dy = pixelRows(gradOutput, 1, n, p0, rows);
      float *col = scratch<float>(Scratch::Im2col, size_t(rows * g.r));
      gemm<float>(dy, fT, {col, rows, g.r, g.r, 1}, false);
      col2imAdd(g, gradInput, n, p0, rows, col);
    }
  });
}

void conv2dBackpropFilter(const Tensor4 &input, const Tensor4 &gradOutput,
                          const Tensor4 &gradFilter, const ConvParams &p) {
  Geometry g =
      geometry("estc_conv2d_backprop_filter", input, gradFilter, gradOutput, p);
  bool pointwise = isPointwise(g, input);
  int64_t pixels = g.n * g.oh * g.ow, tile = pixelTile(g.r);
  int64_t tiles = ceilDiv(pixels, tile);
  double flops = 2.0 * double(pixels) * double(g.r) * double(g.o);
  int64_t groups =
      std::clamp<int64_t>(int64_t(flops / kMinGroupFlops), 1,
                          std::min(kMaxGroups, std::max<int64_t>(tiles, 1)));
  int64_t filterSize = g.r * g.o;
  float *partials =
      scratch<float>(Scratch::SharedPartials, size_t(groups * filterSize));

  parallelFor(groups, flops / double(groups), [&](int64_t group) {
    View2D<float> sum{partials + group * filterSize, g.r, g.o, g.o, 1};
    std::fill(sum.data, sum.data + filterSize, 0.0f);
    for (int64_t t = group * tiles / groups; t < (group + 1) * tiles / groups;
         ++t) {
      int64_t p0 = t * tile, rows = std::min(tile, pixels - p0);
      View2D<const float> a = patches(g, input, pointwise, p0, rows);
      View2D<const float> dy = pixelRows(gradOutput, 0, 0, p0, rows);
      gemm<float>(a.transposed(), dy, sum, true);
    }
  });

  // grad_filter = partial[0] + partial[1] + ..., in that order.
  const int64_t *s = gradFilter.strides;
  int64_t rowsPerTask = std::max<int64_t>(1, 4096 / std::max<int64_t>(g.o, 1));
  parallelFor(ceilDiv(g.r, rowsPerTask), double(rowsPerTask * g.o * groups),
              [&](int64_t t) {
                int64_t r1 = std::min(g.r, (t + 1) * rowsPerTask);
                for (int64_t r = t * rowsPerTask; r < r1; ++r) {
                  int64_t kh = r / (g.kw * g.c), kw = (r / g.c) % g.kw,
                          c = r % g.c;
                  float *dst =
                      gradFilter.data() + kh * s[0] + kw * s[1] + c * s[2];
                  for (int64_t o = 0; o < g.o; ++o) {
                    float v = partials[r * g.o + o];
                    for (int64_t j = 1; j < groups; ++j)
                      v += partials[j * filterSize + r * g.o + o];
                    dst[o * s[3]] = v;
                  }
                }
              });
}

} // namespace estc::rt
