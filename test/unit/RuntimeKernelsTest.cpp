//===- RuntimeKernelsTest.cpp - runtime kernels against naive loops ------===//
//
// Every kernel is checked against a naive loop in double on random data: odd
// shapes, transposes, batch broadcast, strided (non-contiguous) descriptors,
// SAME- and VALID-style padding, strides and dilations 2; and results must be
// bit-identical for 1, 2 and 4 threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using estc::rt::MemRef;

namespace {

/// How a test buffer is laid out in memory.
enum class Layout {
  RowMajor, // contiguous, last dim fastest
  SwapLast, // the last two dims swapped in memory (a column-major matrix)
  Padded,   // innermost stride 2, every outer stride padded, offset 5
};

const char *name(Layout l) {
  switch (l) {
  case Layout::RowMajor:
    return "row-major";
  case Layout::SwapLast:
    return "swap-last";
  case Layout::Padded:
    return "padded";
  }
  return "?";
}

/// A buffer of random values seen through a MemRef with the given layout.
template <typename T, int N> struct Buffer {
  std::vector<T> storage;
  MemRef<T, N> ref;

  Buffer(std::array<int64_t, N> sizes, Layout layout, unsigned seed) {
    std::array<int, N> order; // dims from fastest to slowest
    for (int i = 0; i < N; ++i)
      order[i] = N - 1 - i;
    if (layout == Layout::SwapLast && N >= 2)
      std::swap(order[0], order[1]);
    int64_t stride = layout == Layout::Padded ? 2 : 1;
    for (int i = 0; i < N; ++i) {
      ref.strides[order[i]] = stride;
      stride = stride * sizes[order[i]] + (layout == Layout::Padded ? 3 : 0);
    }
    int64_t offset = layout == Layout::Padded ? 5 : 0;
    storage.assign(size_t(stride + offset + 1), T(-999));
    ref.allocated = ref.aligned = storage.data();
    ref.offset = offset;
    for (int i = 0; i < N; ++i)
      ref.sizes[i] = sizes[i];
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    forEach([&](const std::array<int64_t, N> &idx) { at(idx) = T(dist(rng)); });
  }

  T &at(const std::array<int64_t, N> &idx) const {
    int64_t p = ref.offset;
    for (int i = 0; i < N; ++i)
      p += idx[i] * ref.strides[i];
    return ref.aligned[p];
  }

  template <typename F> void forEach(F f) const {
    int64_t count = 1;
    for (int i = 0; i < N; ++i)
      count *= ref.sizes[i];
    std::array<int64_t, N> idx{};
    for (int64_t e = 0; e < count; ++e) {
      int64_t rest = e;
      for (int i = N - 1; i >= 0; --i) {
        idx[i] = rest % ref.sizes[i];
        rest /= ref.sizes[i];
      }
      f(idx);
    }
  }

  std::vector<T> values() const {
    std::vector<T> v;
    forEach([&](const std::array<int64_t, N> &idx) { v.push_back(at(idx)); });
    return v;
  }
};

/// Expected value and the sum of |terms| that bounds its rounding error.
struct Ref {
  double value = 0, magnitude = 0;
  void add(double x) {
    value += x;
    magnitude += std::fabs(x);
  }
};

template <typename T> double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

template <typename T, int N>
void expectClose(const Buffer<T, N> &got, const std::vector<Ref> &want,
                 const std::string &what) {
  std::vector<T> v = got.values();
  ASSERT_EQ(v.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < v.size() && bad < 5; ++i) {
    double err = std::fabs(double(v[i]) - want[i].value);
    if (err > tolerance<T>() * (want[i].magnitude + 1.0)) {
      ADD_FAILURE() << what << ": element " << i << " is " << v[i] << ", want "
                    << want[i].value;
      ++bad;
    }
  }
}

class ThreadsGuard {
public:
  explicit ThreadsGuard(int n) : saved(estc_runtime_get_num_threads()) {
    estc_runtime_set_num_threads(n);
  }
  ~ThreadsGuard() { estc_runtime_set_num_threads(saved); }

private:
  int saved;
};

// --- Matmul ------------------------------------------------------------------

struct MatmulCase {
  int64_t batch, m, n, k;
  bool ta, tb;
  int64_t batchA, batchB; // batch or 1
  Layout la, lb, lc;
};

std::string describe(const MatmulCase &c) {
  return "batch " + std::to_string(c.batch) + " (" + std::to_string(c.batchA) +
         "," + std::to_string(c.batchB) + ") m" + std::to_string(c.m) + " n" +
         std::to_string(c.n) + " k" + std::to_string(c.k) +
         (c.ta ? " ta" : "") + (c.tb ? " tb" : "") + " " + name(c.la) + "/" +
         name(c.lb) + "/" + name(c.lc);
}

template <typename T> struct MatmulRun {
  Buffer<T, 3> a, b, c;
  explicit MatmulRun(const MatmulCase &t)
      : a({t.batchA, t.ta ? t.k : t.m, t.ta ? t.m : t.k}, t.la, 1),
        b({t.batchB, t.tb ? t.n : t.k, t.tb ? t.k : t.n}, t.lb, 2),
        c({t.batch, t.m, t.n}, t.lc, 3) {}

  std::vector<Ref> reference(const MatmulCase &t) const {
    std::vector<Ref> out;
    for (int64_t i = 0; i < t.batch; ++i)
      for (int64_t r = 0; r < t.m; ++r)
        for (int64_t col = 0; col < t.n; ++col) {
          Ref s;
          int64_t ia = t.batchA == 1 ? 0 : i, ib = t.batchB == 1 ? 0 : i;
          for (int64_t k = 0; k < t.k; ++k) {
            double x = t.ta ? a.at({ia, k, r}) : a.at({ia, r, k});
            double y = t.tb ? b.at({ib, col, k}) : b.at({ib, k, col});
            s.add(x * y);
          }
          out.push_back(s);
        }
    return out;
  }
};

void call(MatmulRun<float> &r, const MatmulCase &t) {
  _mlir_ciface_estc_matmul_f32(&r.a.ref, &r.b.ref, &r.c.ref, t.ta, t.tb);
}
void call(MatmulRun<double> &r, const MatmulCase &t) {
  _mlir_ciface_estc_matmul_f64(&r.a.ref, &r.b.ref, &r.c.ref, t.ta, t.tb);
}

std::vector<MatmulCase> matmulCases() {
  std::vector<MatmulCase> cases;
  const int64_t dims[] = {1, 3, 17, 100};
  const Layout R = Layout::RowMajor;
  // Every size combination, plain and transposed.
  for (int64_t m : dims)
    for (int64_t n : dims)
      for (int64_t k : dims)
        for (int flags = 0; flags < 4; ++flags)
          cases.push_back(
              {1, m, n, k, bool(flags & 1), bool(flags & 2), 1, 1, R, R, R});
  // Batches, broadcast on either side, and strided layouts on every operand.
  const Layout layouts[] = {Layout::RowMajor, Layout::SwapLast, Layout::Padded};
  for (Layout la : layouts)
    for (Layout lb : layouts)
      for (Layout lc : layouts) {
        cases.push_back({3, 17, 100, 33, false, false, 3, 3, la, lb, lc});
        cases.push_back({3, 17, 100, 33, true, false, 1, 3, la, lb, lc});
        cases.push_back({4, 100, 3, 17, false, true, 4, 1, la, lb, lc});
      }
  // Small products (gemm's direct loop) whose columns are whole blocks of
  // 8: b's rows read in place, no gathered panel; transposed, all gathered.
  cases.push_back({1, 24, 16, 32, false, false, 1, 1, R, R, R});
  cases.push_back({1, 24, 16, 32, true, true, 1, 1, R, R, R});
  // The iris-sized net's small products, whose last block of columns is
  // narrower than 8 (gathered into the padded panel): 32x4 * 4x10,
  // 32x10 * 10x3, and dW = h^T * dy (10x32 * 32x3).
  cases.push_back({1, 32, 10, 4, false, false, 1, 1, R, R, R});
  cases.push_back({1, 32, 3, 10, false, false, 1, 1, R, R, R});
  cases.push_back({1, 10, 3, 32, true, false, 1, 1, R, R, R});
  // Rows in blocks of 4, 2 and 1 after none of 8.
  cases.push_back({1, 7, 16, 32, false, false, 1, 1, R, R, R});
  cases.push_back({2, 15, 10, 9, true, false, 2, 2, R, Layout::Padded, R});
  // Large enough to be split into tiles and run on the pool.
  cases.push_back({1, 128, 256, 784, false, false, 1, 1, R, R, R});
  // One row (a dense layer at batch 1: the row-times-matrix path), batched.
  cases.push_back({1, 1, 256, 784, false, false, 1, 1, R, R, R});
  cases.push_back({2, 1, 100, 33, false, false, 2, 1, R, Layout::Padded, R});
  cases.push_back({2, 300, 200, 100, true, true, 2, 1, R, Layout::Padded, R});
  cases.push_back({1, 0, 5, 7, false, false, 1, 1, R, R, R});
  cases.push_back({1, 5, 7, 0, false, false, 1, 1, R, R, R});
  return cases;
}

template <typename T> void checkMatmul() {
  ThreadsGuard threads(2);
  for (const MatmulCase &t : matmulCases()) {
    MatmulRun<T> run(t);
    call(run, t);
    expectClose(run.c, run.reference(t), describe(t));
  }
}

TEST(RuntimeMatmul, F32MatchesNaiveLoops) { checkMatmul<float>(); }
TEST(RuntimeMatmul, F64MatchesNaiveLoops) { checkMatmul<double>(); }

// The f32 GEMM tiles with unit-stride operands go to oneDNN's sgemm when the
// runtime has it (runtime/cpu/OneDnnConv.h); the others, and every tile when
// it is turned off, to Eigen. Both must match the naive loops.
TEST(RuntimeMatmul, F32OnOneDnnAndOffMatchNaiveLoops) {
  bool built = estc_runtime_set_onednn(1) != 0;
  size_t before = estc_runtime_onednn_gemm_calls();
  checkMatmul<float>();
  if (built) {
    EXPECT_GT(estc_runtime_onednn_gemm_calls(), before);
  }
  estc_runtime_set_onednn(0);
  before = estc_runtime_onednn_gemm_calls();
  checkMatmul<float>();
  EXPECT_EQ(estc_runtime_onednn_gemm_calls(), before);
  estc_runtime_set_onednn(-1);
}

TEST(RuntimeMatmul, BitIdenticalForAnyThreadCount) {
  const Layout R = Layout::RowMajor;
  const MatmulCase cases[] = {
      {1, 128, 256, 784, false, false, 1, 1, R, R, R},
      {1, 512, 512, 512, false, true, 1, 1, R, R, R},
      {5, 100, 300, 200, true, false, 5, 1, R, Layout::Padded, R},
  };
  for (const MatmulCase &t : cases) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 4}) {
      ThreadsGuard guard(threads);
      MatmulRun<float> run(t);
      call(run, t);
      results.push_back(run.c.values());
    }
    EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(),
                             results[0].size() * sizeof(float)))
        << describe(t) << ": 1 vs 2 threads";
    EXPECT_EQ(0, std::memcmp(results[0].data(), results[2].data(),
                             results[0].size() * sizeof(float)))
        << describe(t) << ": 1 vs 4 threads";
  }
}

TEST(RuntimeMatmulDeathTest, ShapeMismatchIsOneLine) {
  Buffer<float, 3> a({1, 3, 4}, Layout::RowMajor, 1);
  Buffer<float, 3> b({1, 5, 6}, Layout::RowMajor, 2);
  Buffer<float, 3> c({1, 3, 6}, Layout::RowMajor, 3);
  EXPECT_DEATH(_mlir_ciface_estc_matmul_f32(&a.ref, &b.ref, &c.ref, 0, 0),
               "estc runtime: estc_matmul: shapes \\[1,3,4\\] x \\[1,5,6\\] "
               "-> \\[1,3,6\\] do not agree");
}

// --- Convolutions ------------------------------------------------------------

struct ConvCase {
  int64_t n, h, w, c, kh, kw, o;
  int64_t sh, sw, dh, dw;
  bool same; // TF SAME padding, else VALID
  Layout lin, lfilter, lout;
};

struct ConvGeometry {
  int64_t oh, ow, padTop, padLeft;
};

// TF's rules (lib/Shape convOutputSize / convPadBefore).
ConvGeometry geometryOf(const ConvCase &t) {
  auto dim = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t &pad) {
    int64_t span = (k - 1) * d + 1;
    if (!t.same) {
      pad = 0;
      return (in - span) / s + 1;
    }
    int64_t out = (in + s - 1) / s;
    pad = std::max<int64_t>((out - 1) * s + span - in, 0) / 2;
    return out;
  };
  ConvGeometry g;
  g.oh = dim(t.h, t.kh, t.sh, t.dh, g.padTop);
  g.ow = dim(t.w, t.kw, t.sw, t.dw, g.padLeft);
  return g;
}

std::string describe(const ConvCase &t) {
  return std::to_string(t.n) + "x" + std::to_string(t.h) + "x" +
         std::to_string(t.w) + "x" + std::to_string(t.c) + " * " +
         std::to_string(t.kh) + "x" + std::to_string(t.kw) + "x" +
         std::to_string(t.o) + " s" + std::to_string(t.sh) +
         std::to_string(t.sw) + " d" + std::to_string(t.dh) +
         std::to_string(t.dw) + (t.same ? " SAME " : " VALID ") + name(t.lin) +
         "/" + name(t.lfilter) + "/" + name(t.lout);
}

struct ConvRun {
  ConvCase t;
  ConvGeometry g;
  Buffer<float, 4> input, filter, output;
  explicit ConvRun(const ConvCase &t)
      : t(t), g(geometryOf(t)), input({t.n, t.h, t.w, t.c}, t.lin, 11),
        filter({t.kh, t.kw, t.c, t.o}, t.lfilter, 12),
        output({t.n, g.oh, g.ow, t.o}, t.lout, 13) {}

  /// Calls f(n, oh, ow, kh, kw, ih, iw) for every tap that reads the input.
  template <typename F> void forEachTap(F f) const {
    for (int64_t n = 0; n < t.n; ++n)
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow)
          for (int64_t kh = 0; kh < t.kh; ++kh)
            for (int64_t kw = 0; kw < t.kw; ++kw) {
              int64_t ih = oh * t.sh + kh * t.dh - g.padTop;
              int64_t iw = ow * t.sw + kw * t.dw - g.padLeft;
              if (ih >= 0 && ih < t.h && iw >= 0 && iw < t.w)
                f(n, oh, ow, kh, kw, ih, iw);
            }
  }

  void forward() {
    _mlir_ciface_estc_conv2d_nhwc_hwio_f32(&input.ref, &filter.ref, &output.ref,
                                           t.sh, t.sw, t.dh, t.dw, g.padTop,
                                           g.padLeft);
  }
  // The gradients reuse the buffers: `output` holds grad_output, and
  // input / filter receive grad_input / grad_filter.
  void backpropInput() {
    _mlir_ciface_estc_conv2d_backprop_input_f32(&filter.ref, &output.ref,
                                                &input.ref, t.sh, t.sw, t.dh,
                                                t.dw, g.padTop, g.padLeft);
  }
  void backpropFilter() {
    _mlir_ciface_estc_conv2d_backprop_filter_f32(&input.ref, &output.ref,
                                                 &filter.ref, t.sh, t.sw, t.dh,
                                                 t.dw, g.padTop, g.padLeft);
  }

  /// Index of (a, b, c, d) in a row-major [n0, n1, n2, n3] array.
  static size_t flat(std::array<int64_t, 4> dims, int64_t a, int64_t b,
                     int64_t c, int64_t d) {
    return size_t(((a * dims[1] + b) * dims[2] + c) * dims[3] + d);
  }

  std::vector<Ref> forwardReference() const {
    std::vector<Ref> out(size_t(t.n * g.oh * g.ow * t.o));
    forEachTap([&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                   int64_t ih, int64_t iw) {
      for (int64_t o = 0; o < t.o; ++o)
        for (int64_t c = 0; c < t.c; ++c)
          out[flat({t.n, g.oh, g.ow, t.o}, n, oh, ow, o)].add(
              double(input.at({n, ih, iw, c})) * filter.at({kh, kw, c, o}));
    });
    return out;
  }
  std::vector<Ref> backpropInputReference() const {
    std::vector<Ref> out(size_t(t.n * t.h * t.w * t.c));
    forEachTap([&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                   int64_t ih, int64_t iw) {
      for (int64_t c = 0; c < t.c; ++c)
        for (int64_t o = 0; o < t.o; ++o)
          out[flat({t.n, t.h, t.w, t.c}, n, ih, iw, c)].add(
              double(output.at({n, oh, ow, o})) * filter.at({kh, kw, c, o}));
    });
    return out;
  }
  std::vector<Ref> backpropFilterReference() const {
    std::vector<Ref> out(size_t(t.kh * t.kw * t.c * t.o));
    forEachTap([&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                   int64_t ih, int64_t iw) {
      for (int64_t c = 0; c < t.c; ++c)
        for (int64_t o = 0; o < t.o; ++o)
          out[flat({t.kh, t.kw, t.c, t.o}, kh, kw, c, o)].add(
              double(input.at({n, ih, iw, c})) * output.at({n, oh, ow, o}));
    });
    return out;
  }
};

std::vector<ConvCase> convCases() {
  const Layout R = Layout::RowMajor, P = Layout::Padded, S = Layout::SwapLast;
  std::vector<ConvCase> cases = {
      // The ConvNet's two layers, on a small batch.
      {2, 28, 28, 1, 5, 5, 20, 1, 1, 1, 1, false, R, R, R},
      {2, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, false, R, R, R},
      // Odd sizes, SAME and VALID, strides and dilations 2.
      {1, 17, 17, 3, 3, 3, 17, 1, 1, 1, 1, true, R, R, R},
      {3, 17, 13, 3, 3, 3, 5, 2, 2, 1, 1, true, R, R, R},
      {3, 17, 13, 3, 3, 3, 5, 2, 2, 1, 1, false, R, R, R},
      {2, 17, 17, 3, 3, 3, 4, 1, 1, 2, 2, true, R, R, R},
      {2, 17, 17, 3, 3, 2, 4, 2, 1, 2, 1, false, R, R, R},
      {1, 3, 3, 1, 3, 3, 1, 1, 1, 1, 1, true, R, R, R},
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, R, R, R},
      {2, 4, 5, 3, 5, 5, 2, 2, 2, 1, 1, true, R, R, R}, // filter > input
      {1, 100, 3, 2, 3, 1, 3, 2, 1, 1, 1, true, R, R, R},
      // 1x1 (the direct GEMM path), with and without stride.
      {2, 9, 7, 17, 1, 1, 100, 1, 1, 1, 1, false, R, R, R},
      // More input than output channels: the filter gradient's x^T dy
      // tiles (accumulated) take oneDNN's transposed form C^T = B^T A.
      {2, 9, 7, 100, 1, 1, 17, 1, 1, 1, 1, false, R, R, R},
      {2, 9, 7, 17, 1, 1, 3, 2, 2, 1, 1, true, R, R, R},
      {2, 9, 7, 17, 1, 1, 3, 1, 1, 1, 1, false, P, R, P},
      // Winograd along W (stride and dilation 1 along W, 3 to 5 taps wide,
      // 8 or more channels): widths not multiples of 4, SAME, strides and
      // dilations along H (the input gradient then goes direct).
      {2, 13, 11, 9, 3, 3, 12, 1, 1, 1, 1, true, R, R, R},
      {2, 10, 14, 16, 5, 4, 9, 2, 1, 2, 1, false, R, R, R},
      {2, 9, 10, 8, 4, 5, 8, 1, 1, 3, 1, true, P, P, P},
      {1, 6, 7, 10, 3, 5, 11, 1, 1, 1, 1, true, S, R, S},
      {3, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, true, R, R, R},
      // Strided descriptors everywhere.
      {2, 11, 10, 3, 3, 3, 5, 1, 1, 1, 1, true, P, R, R},
      {2, 11, 10, 3, 3, 3, 5, 1, 1, 1, 1, true, R, P, R},
      {2, 11, 10, 3, 3, 3, 5, 1, 1, 1, 1, true, R, R, P},
      {2, 11, 10, 3, 3, 3, 5, 2, 2, 1, 1, true, S, S, S},
      {2, 11, 10, 3, 3, 3, 5, 1, 2, 2, 1, false, P, P, P},
  };
  return cases;
}

TEST(RuntimeConv2D, ForwardMatchesNaiveLoops) {
  ThreadsGuard threads(2);
  for (const ConvCase &t : convCases()) {
    ConvRun run(t);
    run.forward();
    expectClose(run.output, run.forwardReference(), "forward " + describe(t));
  }
}

TEST(RuntimeConv2D, BackpropInputMatchesNaiveLoops) {
  ThreadsGuard threads(2);
  for (const ConvCase &t : convCases()) {
    ConvRun run(t);
    std::vector<Ref> want = run.backpropInputReference();
    run.backpropInput();
    expectClose(run.input, want, "backprop input " + describe(t));
  }
}

TEST(RuntimeConv2D, BackpropFilterMatchesNaiveLoops) {
  ThreadsGuard threads(2);
  for (const ConvCase &t : convCases()) {
    ConvRun run(t);
    std::vector<Ref> want = run.backpropFilterReference();
    run.backpropFilter();
    expectClose(run.filter, want, "backprop filter " + describe(t));
  }
}

TEST(RuntimeConv2D, BitIdenticalForAnyThreadCount) {
  const Layout R = Layout::RowMajor;
  const ConvCase cases[] = {
      {16, 28, 28, 1, 5, 5, 20, 1, 1, 1, 1, false, R, R, R},
      {16, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, false, R, R, R},
      {4, 17, 17, 8, 3, 3, 16, 2, 2, 1, 1, true, R, R, R},
      {6, 30, 29, 9, 3, 4, 10, 1, 1, 1, 1, true, R, R, R},
      {8, 16, 16, 32, 1, 1, 64, 1, 1, 1, 1, false, R, R, R},
      // oneDNN's path (4 chunks of 2 and 3 images; 4 of 16).
      {9, 28, 28, 32, 3, 3, 32, 1, 1, 1, 1, true, R, R, R},
      {64, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, true, R, R, R},
  };
  for (const ConvCase &t : cases) {
    for (int kernel = 0; kernel < 3; ++kernel) {
      std::vector<std::vector<float>> results;
      for (int threads : {1, 2, 4}) {
        ThreadsGuard guard(threads);
        ConvRun run(t);
        if (kernel == 0) {
          run.forward();
          results.push_back(run.output.values());
        } else if (kernel == 1) {
          run.backpropInput();
          results.push_back(run.input.values());
        } else {
          run.backpropFilter();
          results.push_back(run.filter.values());
        }
      }
      const char *names[] = {"forward", "backprop input", "backprop filter"};
      for (int i : {1, 2})
        EXPECT_EQ(0, std::memcmp(results[0].data(), results[i].data(),
                                 results[0].size() * sizeof(float)))
            << names[kernel] << " " << describe(t) << ": 1 vs "
            << (i == 1 ? 2 : 4) << " threads";
    }
  }
}

/// Calls that take oneDNN's path (runtime/cpu/OneDnnConv.h): both channel
/// counts multiples of 16, dense NHWC / HWIO. Odd batches (chunks of unequal
/// size), SAME with the extra padding after, VALID that leaves the last rows
/// unread, strides, dilations, 1x1 strided, a 5x3 filter.
std::vector<ConvCase> oneDnnCases() {
  const Layout R = Layout::RowMajor;
  return {
      {9, 28, 28, 32, 3, 3, 32, 1, 1, 1, 1, true, R, R, R}, // 4 chunks
      {7, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, true, R, R, R},
      {4, 15, 15, 16, 3, 3, 32, 2, 2, 1, 1, true, R, R, R},
      {3, 10, 10, 32, 1, 1, 16, 2, 2, 1, 1, false, R, R, R},
      {2, 12, 12, 16, 3, 3, 16, 1, 1, 2, 2, true, R, R, R},
      {2, 10, 10, 16, 3, 3, 16, 2, 2, 1, 1, false, R, R, R},
      {2, 11, 9, 16, 5, 3, 32, 1, 2, 1, 1, true, R, R, R},
      {5, 7, 7, 64, 3, 3, 64, 1, 1, 1, 1, true, R, R, R},
  };
}

TEST(RuntimeConv2D, OneDnnPathMatchesNaiveLoops) {
  ThreadsGuard threads(2);
  if (!estc_runtime_set_onednn(1))
    GTEST_SKIP() << "the runtime was built without oneDNN (ESTC_ONEDNN=OFF)";
  bool first = true;
  for (const ConvCase &t : oneDnnCases()) {
    size_t before = estc_runtime_onednn_conv_calls();
    size_t declinedBefore = estc_runtime_onednn_conv_declined();
    ConvRun run(t);
    run.forward();
    expectClose(run.output, run.forwardReference(), "forward " + describe(t));
    std::vector<Ref> wantInput = run.backpropInputReference();
    run.backpropInput();
    expectClose(run.input, wantInput, "backprop input " + describe(t));
    ConvRun grads(t);
    std::vector<Ref> wantFilter = grads.backpropFilterReference();
    grads.backpropFilter();
    expectClose(grads.filter, wantFilter, "backprop filter " + describe(t));
    // Each kernel ran on oneDNN, unless oneDNN has only a slow primitive
    // for it on this CPU (an AVX2 machine's dilated gradients): then on
    // estc's loops, and counted as declined. A plain 3x3 convolution has a
    // fast one on every ISA.
    size_t ran = estc_runtime_onednn_conv_calls() - before;
    size_t declined = estc_runtime_onednn_conv_declined() - declinedBefore;
    EXPECT_EQ(ran + declined, 3u)
        << describe(t) << ": each kernel either runs on oneDNN or is declined";
    if (first) {
      EXPECT_EQ(ran, 3u) << describe(t)
                         << ": all three kernels should have run on oneDNN";
    }
    first = false;
  }
  estc_runtime_set_onednn(-1);
}

TEST(RuntimeConv2D, OneDnnPathOnlyWhereItApplies) {
  ThreadsGuard threads(1);
  if (!estc_runtime_set_onednn(1))
    GTEST_SKIP() << "the runtime was built without oneDNN (ESTC_ONEDNN=OFF)";
  const Layout R = Layout::RowMajor, P = Layout::Padded;
  // Channels not multiples of 16, strided descriptors: the own kernels.
  for (const ConvCase &t :
       {ConvCase{2, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, true, R, R, R},
        ConvCase{2, 12, 12, 16, 3, 3, 16, 1, 1, 1, 1, true, P, R, R}}) {
    size_t before = estc_runtime_onednn_conv_calls();
    ConvRun run(t);
    run.forward();
    run.backpropInput();
    run.backpropFilter();
    EXPECT_EQ(before, estc_runtime_onednn_conv_calls()) << describe(t);
  }
  // Turned off: the own kernels, the same results up to float32 rounding.
  ConvCase t = oneDnnCases()[0];
  ConvRun on(t);
  on.forward();
  estc_runtime_set_onednn(0);
  size_t before = estc_runtime_onednn_conv_calls();
  ConvRun off(t);
  off.forward();
  EXPECT_EQ(before, estc_runtime_onednn_conv_calls());
  expectClose(off.output, on.forwardReference(), "forward, oneDNN off");
  estc_runtime_set_onednn(-1);
}

#if ESTC_TEST_OPENMP
extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_max_threads(void);

// oneDNN runs one thread per call (OpenMP's team size of the calling thread
// set to 1 around it); a caller's own OpenMP setting survives the call.
TEST(RuntimeConv2D, OneDnnPathKeepsTheCallersOpenMpSetting) {
  ThreadsGuard threads(1);
  ASSERT_EQ(1, estc_runtime_set_onednn(1));
  omp_set_num_threads(3);
  size_t before = estc_runtime_onednn_conv_calls();
  ConvRun run(oneDnnCases()[1]);
  run.forward();
  EXPECT_EQ(before + 1, estc_runtime_onednn_conv_calls());
  EXPECT_EQ(3, omp_get_max_threads());
  estc_runtime_set_onednn(-1);
}
#endif

TEST(RuntimeConv2D, NoAllocationAfterWarmUp) {
  ThreadsGuard threads(1);
  const Layout R = Layout::RowMajor;
  ConvRun run({8, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, true, R, R, R});
  run.forward();
  run.backpropInput();
  run.backpropFilter();
  size_t warm = estc_runtime_scratch_bytes();
  EXPECT_GT(warm, 0u);
  for (int i = 0; i < 3; ++i) {
    run.forward();
    run.backpropInput();
    run.backpropFilter();
  }
  EXPECT_EQ(warm, estc_runtime_scratch_bytes());
}

TEST(RuntimeConv2DDeathTest, ShapeMismatchIsOneLine) {
  Buffer<float, 4> input({1, 5, 5, 3}, Layout::RowMajor, 1);
  Buffer<float, 4> filter({3, 3, 4, 2}, Layout::RowMajor, 2);
  Buffer<float, 4> output({1, 3, 3, 2}, Layout::RowMajor, 3);
  EXPECT_DEATH(_mlir_ciface_estc_conv2d_nhwc_hwio_f32(
                   &input.ref, &filter.ref, &output.ref, 1, 1, 1, 1, 0, 0),
               "estc runtime: estc_conv2d_nhwc_hwio: input \\[1,5,5,3\\], "
               "filter \\[3,3,4,2\\] and output \\[1,3,3,2\\] do not agree");
}

TEST(RuntimeThreads, SetAndGet) {
  ThreadsGuard guard(3);
  EXPECT_EQ(3, estc_runtime_get_num_threads());
  estc_runtime_set_num_threads(1);
  EXPECT_EQ(1, estc_runtime_get_num_threads());
  estc_runtime_set_num_threads(0); // default
  EXPECT_GE(estc_runtime_get_num_threads(), 1);
}

// --- Fused bias + activation epilogues ---------------------------------------

/// act(x + b) in float, the way the unfused linalg.generic computes it
/// (arith.addf, arith.maximumf with 0, arith.minimumf with 6).
float epilogueRef(float x, float b, int act) {
  float y = x + b;
  if (act >= 1)
    y = std::isnan(y) ? y : (y > 0.0f ? y : 0.0f); // maximumf(y, +0)
  if (act == 2)
    y = std::isnan(y) ? y : (y < 6.0f ? y : 6.0f);
  return y;
}

/// A bias with values large enough for relu6 to clip, a NaN at column 1 (when
/// there is one) and, for `strided`, stride 3.
struct Bias {
  std::vector<float> storage;
  MemRef<float, 1> ref;
  Bias(int64_t n, bool strided, unsigned seed) {
    int64_t stride = strided ? 3 : 1;
    storage.assign(size_t(n * stride + 1), -999.0f);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
    for (int64_t i = 0; i < n; ++i)
      storage[size_t(i * stride)] = dist(rng);
    if (n > 1)
      storage[size_t(stride)] = std::nanf("");
    ref.allocated = ref.aligned = storage.data();
    ref.offset = 0;
    ref.sizes[0] = n;
    ref.strides[0] = stride;
  }
  float at(int64_t i) const { return storage[size_t(i * ref.strides[0])]; }
};

/// Bitwise equality that treats every NaN as equal.
bool sameBits(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

/// Whether got (values in index order) is act(plain + bias[last index]).
void expectEpilogue(const std::vector<float> &got,
                    const std::vector<float> &plain, const Bias &bias,
                    int64_t last, int act, const std::string &what) {
  ASSERT_EQ(got.size(), plain.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    float want = epilogueRef(plain[i], bias.at(int64_t(i) % last), act);
    if (!sameBits(got[i], want)) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i]
                    << ", want " << want;
      ++bad;
    }
  }
}

TEST(RuntimeMatmulBiasAct, MatchesMatmulThenEpilogue) {
  // The plain kernel is checked against naive loops above; the fused one
  // must give exactly act(plain + bias), as the unfused generic does.
  ThreadsGuard threads(2);
  std::vector<MatmulCase> cases = matmulCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatmulCase &t = cases[i];
    int act = int(i % 3);
    Bias bias(t.n, i % 2 == 1, unsigned(i));
    MatmulRun<float> plain(t), fused(t);
    call(plain, t);
    _mlir_ciface_estc_matmul_bias_act_f32(
        &fused.a.ref, &fused.b.ref, &fused.c.ref, &bias.ref, t.ta, t.tb, act);
    expectEpilogue(fused.c.values(), plain.c.values(), bias, t.n, act,
                   describe(t) + " act " + std::to_string(act));
  }
}

TEST(RuntimeMatmulBiasAct, MatchesNaiveLoops) {
  ThreadsGuard threads(2);
  const Layout R = Layout::RowMajor;
  MatmulCase t{1, 128, 256, 784, false, false, 1, 1, R, R, R};
  MatmulRun<float> run(t);
  Bias bias(t.n, false, 7);
  _mlir_ciface_estc_matmul_bias_act_f32(&run.a.ref, &run.b.ref, &run.c.ref,
                                        &bias.ref, 0, 0, 2);
  std::vector<Ref> want = run.reference(t);
  std::vector<float> got = run.c.values();
  for (size_t i = 0; i < want.size(); ++i) {
    double b = bias.at(int64_t(i) % t.n);
    double y =
        std::isnan(b) ? b : std::min(std::max(want[i].value + b, 0.0), 6.0);
    if (std::isnan(y)) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      continue;
    }
    ASSERT_NEAR(got[i], y, 1e-5 * (want[i].magnitude + 1.0)) << i;
  }
}

TEST(RuntimeMatmulBiasAct, BitIdenticalForAnyThreadCount) {
  const Layout R = Layout::RowMajor;
  MatmulCase t{2, 300, 200, 100, false, false, 2, 1, R, R, R};
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 4}) {
    ThreadsGuard guard(threads);
    MatmulRun<float> run(t);
    Bias bias(t.n, false, 3);
    _mlir_ciface_estc_matmul_bias_act_f32(&run.a.ref, &run.b.ref, &run.c.ref,
                                          &bias.ref, 0, 0, 1);
    results.push_back(run.c.values());
  }
  for (int i : {1, 2})
    EXPECT_EQ(0, std::memcmp(results[0].data(), results[i].data(),
                             results[0].size() * sizeof(float)));
}

TEST(RuntimeConv2DBiasAct, MatchesConvThenEpilogue) {
  ThreadsGuard threads(2);
  std::vector<ConvCase> cases = convCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase &t = cases[i];
    int act = int(i % 3);
    Bias bias(t.o, i % 2 == 0, unsigned(i));
    ConvRun plain(t), fused(t);
    plain.forward();
    _mlir_ciface_estc_conv2d_nhwc_hwio_bias_act_f32(
        &fused.input.ref, &fused.filter.ref, &fused.output.ref, &bias.ref, t.sh,
        t.sw, t.dh, t.dw, fused.g.padTop, fused.g.padLeft, act);
    expectEpilogue(fused.output.values(), plain.output.values(), bias, t.o, act,
                   describe(t) + " act " + std::to_string(act));
  }
}

TEST(RuntimeConv2DBiasAct, BitIdenticalForAnyThreadCount) {
  const Layout R = Layout::RowMajor;
  ConvCase t{16, 12, 12, 20, 5, 5, 40, 1, 1, 1, 1, false, R, R, R};
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 4}) {
    ThreadsGuard guard(threads);
    ConvRun run(t);
    Bias bias(t.o, false, 5);
    _mlir_ciface_estc_conv2d_nhwc_hwio_bias_act_f32(
        &run.input.ref, &run.filter.ref, &run.output.ref, &bias.ref, 1, 1, 1, 1,
        0, 0, 1);
    results.push_back(run.output.values());
  }
  for (int i : {1, 2})
    EXPECT_EQ(0, std::memcmp(results[0].data(), results[i].data(),
                             results[0].size() * sizeof(float)));
}

TEST(RuntimeBiasActDeathTest, WrongBiasSizeIsOneLine) {
  Buffer<float, 3> a({1, 3, 4}, Layout::RowMajor, 1);
  Buffer<float, 3> b({1, 4, 6}, Layout::RowMajor, 2);
  Buffer<float, 3> c({1, 3, 6}, Layout::RowMajor, 3);
  Bias bias(5, false, 1);
  EXPECT_DEATH(_mlir_ciface_estc_matmul_bias_act_f32(&a.ref, &b.ref, &c.ref,
                                                     &bias.ref, 0, 0, 1),
               "estc runtime: estc_matmul_bias_act: bias of 5 elements for an "
               "output dimension of 6");
}

} // namespace

// --- estc_parallel_for -------------------------------------------------------

namespace {

/// What estc_parallel_for ran: every chunk [lo, hi), the thread it ran on,
/// and how often each index was covered.
struct ChunkLog {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
  std::vector<int> hits;
};

void logChunk(void *ctx, int64_t lo, int64_t hi) {
  auto *log = static_cast<ChunkLog *>(ctx);
  std::lock_guard<std::mutex> lock(log->mutex);
  log->chunks.push_back({lo, hi});
  log->threads.push_back(std::this_thread::get_id());
  for (int64_t i = lo; i < hi; ++i)
    ++log->hits[i];
}

} // namespace

/// Chunks cover [0, n) once each and depend on (n, cost) only: the same
/// chunks for 1, 2 and 4 threads; one thread runs them in order on the
/// caller.
TEST(RuntimeParallelFor, ChunksDependOnTheShapeOnly) {
  struct Case {
    int64_t n, cost;
  };
  for (Case c : {Case{0, 1}, Case{1, 1000000}, Case{7, 1}, Case{1000, 3},
                 Case{100000, 100}, Case{64, 50000}}) {
    SCOPED_TRACE("n " + std::to_string(c.n) + " cost " +
                 std::to_string(c.cost));
    std::vector<std::pair<int64_t, int64_t>> reference;
    size_t splitBefore = estc_runtime_parallel_loops_split();
    for (int threads : {1, 2, 4}) {
      ThreadsGuard guard(threads);
      ChunkLog log;
      log.hits.assign(size_t(c.n), 0);
      estc_parallel_for(logChunk, &log, c.n, c.cost);
      for (int64_t i = 0; i < c.n; ++i)
        ASSERT_EQ(log.hits[size_t(i)], 1) << "index " << i;
      if (threads == 1) {
        for (std::thread::id id : log.threads)
          EXPECT_EQ(id, std::this_thread::get_id());
        for (size_t k = 1; k < log.chunks.size(); ++k)
          EXPECT_EQ(log.chunks[k - 1].second, log.chunks[k].first);
      }
      std::sort(log.chunks.begin(), log.chunks.end());
      if (threads == 1)
        reference = log.chunks;
      else
        EXPECT_EQ(log.chunks, reference) << threads << " threads";
    }
    // The split is the same decision for every thread count.
    size_t split = estc_runtime_parallel_loops_split() - splitBefore;
    EXPECT_EQ(split, reference.size() > 1 ? 3u : 0u);
  }
}

/// Enough work runs on more than one thread when there are two.
TEST(RuntimeParallelFor, LargeLoopsUseThePool) {
  ThreadsGuard guard(2);
  ChunkLog log;
  int64_t n = 256;
  log.hits.assign(size_t(n), 0);
  // Each chunk takes a while, so the helper thread gets some.
  auto slow = [](void *ctx, int64_t lo, int64_t hi) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    logChunk(ctx, lo, hi);
  };
  estc_parallel_for(slow, &log, n, 1 << 20);
  std::sort(log.threads.begin(), log.threads.end());
  EXPECT_GT(std::unique(log.threads.begin(), log.threads.end()) -
                log.threads.begin(),
            1);
}

//===----------------------------------------------------------------------===//
// Depthwise convolution kernels (runtime/cpu/Depthwise.cpp)
//===----------------------------------------------------------------------===//

/// The three depthwise kernels against naive loops (double sums) and bit for
/// bit across 1, 2 and 4 threads: the tap-by-tap rows (stride 1, at most 64
/// channels, dilated), the per-pixel loops (stride 2, 144 channels), a
/// multiplier (the generic loops), and strided operands (Layout::Padded:
/// channel stride 2, padded rows).
TEST(RuntimeDepthwise, MatchesNaiveLoopsAndBitIdenticalForAnyThreadCount) {
  struct Case {
    int64_t n, h, w, c, kh, kw, mult, sh, sw, dh, dw;
    bool same;
  };
  const Case cases[] = {
      {4, 12, 11, 32, 3, 3, 1, 1, 1, 1, 1, true},
      {3, 12, 11, 16, 3, 3, 1, 1, 1, 1, 2, true},
      {3, 13, 13, 96, 3, 3, 1, 2, 2, 1, 1, false},
      {2, 9, 8, 144, 3, 3, 1, 1, 1, 1, 1, true},
      {2, 7, 6, 4, 2, 3, 3, 2, 1, 1, 2, true},
  };
  auto outSize = [](int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
    int64_t eff = (k - 1) * d + 1;
    return same ? (in + s - 1) / s : (in - eff) / s + 1;
  };
  auto padBefore = [](int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
                      bool same) {
    int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
    return same ? total / 2 : int64_t{0};
  };
  for (const Case &t : cases)
    for (Layout layout : {Layout::RowMajor, Layout::Padded}) {
      int64_t oh = outSize(t.h, t.kh, t.sh, t.dh, t.same);
      int64_t ow = outSize(t.w, t.kw, t.sw, t.dw, t.same);
      int64_t pt = padBefore(t.h, oh, t.kh, t.sh, t.dh, t.same);
      int64_t pl = padBefore(t.w, ow, t.kw, t.sw, t.dw, t.same);
      int64_t q = t.c * t.mult;
      std::string what = "case " + std::to_string(t.c) + " channels, mult " +
                         std::to_string(t.mult) + ", stride " +
                         std::to_string(t.sh) +
                         (layout == Layout::Padded ? ", padded" : "");
      std::vector<std::vector<float>> got[3];
      std::vector<double> want[3];
      for (int threads : {1, 2, 4}) {
        ThreadsGuard guard(threads);
        Buffer<float, 4> x({t.n, t.h, t.w, t.c}, layout, 21),
            f({t.kh, t.kw, t.c, t.mult}, layout, 22),
            y({t.n, oh, ow, q}, layout, 23),
            dx({t.n, t.h, t.w, t.c}, layout, 24),
            dw({t.kh, t.kw, t.c, t.mult}, layout, 25);
        if (threads == 1) {
          want[0].assign(size_t(t.n * oh * ow * q), 0.0);
          want[1].assign(size_t(t.n * t.h * t.w * t.c), 0.0);
          want[2].assign(size_t(t.kh * t.kw * t.c * t.mult), 0.0);
          // y (random) doubles as grad_output for the two gradients.
          for (int64_t b = 0; b < t.n; ++b)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j)
                for (int64_t a = 0; a < t.kh; ++a)
                  for (int64_t e = 0; e < t.kw; ++e) {
                    int64_t ih = i * t.sh + a * t.dh - pt;
                    int64_t iw = j * t.sw + e * t.dw - pl;
                    if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w)
                      continue;
                    for (int64_t c = 0; c < t.c; ++c)
                      for (int64_t m = 0; m < t.mult; ++m) {
                        int64_t o = c * t.mult + m;
                        double xv = x.at({b, ih, iw, c}),
                               fv = f.at({a, e, c, m}), gv = y.at({b, i, j, o});
                        want[0][size_t(((b * oh + i) * ow + j) * q + o)] +=
                            xv * fv;
                        want[1]
                            [size_t(((b * t.h + ih) * t.w + iw) * t.c + c)] +=
                            gv * fv;
                        want[2]
                            [size_t(((a * t.kw + e) * t.c + c) * t.mult + m)] +=
                            xv * gv;
                      }
                  }
        }
        Buffer<float, 4> out({t.n, oh, ow, q}, layout, 26);
        _mlir_ciface_estc_depthwise_conv2d_f32(&x.ref, &f.ref, &out.ref, t.sh,
                                               t.sw, t.dh, t.dw, pt, pl);
        _mlir_ciface_estc_depthwise_conv2d_backprop_input_f32(
            &f.ref, &y.ref, &dx.ref, t.sh, t.sw, t.dh, t.dw, pt, pl);
        _mlir_ciface_estc_depthwise_conv2d_backprop_filter_f32(
            &x.ref, &y.ref, &dw.ref, t.sh, t.sw, t.dh, t.dw, pt, pl);
        got[0].push_back(out.values());
        got[1].push_back(dx.values());
        got[2].push_back(dw.values());
      }
      const char *names[] = {"forward", "backprop input", "backprop filter"};
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(got[k][0].size(), want[k].size()) << names[k];
        for (size_t i = 0; i < want[k].size(); ++i)
          ASSERT_NEAR(got[k][0][i], want[k][i],
                      1e-4 * (1 + std::abs(want[k][i])))
              << names[k] << " " << what << " element " << i;
        for (int r : {1, 2})
          EXPECT_EQ(0, std::memcmp(got[k][0].data(), got[k][r].data(),
                                   got[k][0].size() * sizeof(float)))
              << names[k] << " " << what << ": 1 vs " << (r == 1 ? 2 : 4)
              << " threads";
      }
    }
}
