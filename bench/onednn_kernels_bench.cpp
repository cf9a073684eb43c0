//===- onednn_kernels_bench.cpp - The runtime's kernels beside oneDNN ----===//
//
// Issue 28's kernel shapes on one thread, CPU time (best of 3 repetitions):
//
//   onednn_kernels_bench conv   the ResNet-style model's convolution layers
//                               (batch 64): forward, backprop input,
//                               backprop filter through the runtime's entry
//                               points, with its own kernels
//                               (estc_runtime_set_onednn(0)) and with oneDNN
//   onednn_kernels_bench gemm   the sgemm roofline: the runtime's matmul,
//                               oneDNN's dnnl_sgemm and Eigen's GEMM
//                               (built -march=native) on n^3; then
//                               BERT-mini's matmuls (4096 tokens, hidden
//                               256, feed-forward 1024, 4 heads of 64, T 128)
//                               through the runtime's matmul, own and oneDNN
//
// Built where the runtime has oneDNN (ESTC_ONEDNN). docs/results.md
// "ResNet-style step (issue 28)" and "BERT-mini training step (issue 28)".
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include <Eigen/Core>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

using estc::rt::makeRowMajor;

// libgomp (oneDNN's threading runtime): dnnl_sgemm below on this thread only.
extern "C" void omp_set_num_threads(int);

namespace {

double threadMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

/// CPU ms per call: best of 3 repetitions of about 1 GFLOP each.
double cpuMs(const std::function<void()> &f, double mflop) {
  f();
  int reps = std::max(2, int(1000 / mflop));
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    double t0 = threadMs();
    for (int i = 0; i < reps; ++i)
      f();
    best = std::min(best, (threadMs() - t0) / reps);
  }
  return best;
}

std::vector<float> random(int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = d(g);
  return v;
}

void conv() {
  struct Layer {
    const char *name;
    int64_t n, h, w, c, k, o, stride, oh, pad;
  } layers[] = {
      {"stem 28x28x1 -> 16", 64, 28, 28, 1, 3, 16, 1, 28, 1},
      {"stage 1 28x28x16 -> 16", 64, 28, 28, 16, 3, 16, 1, 28, 1},
      {"stage 2 first 28x28x16 -> 32, /2", 64, 28, 28, 16, 3, 32, 2, 14, 0},
      {"stage 2 shortcut 1x1 16 -> 32, /2", 64, 28, 28, 16, 1, 32, 2, 14, 0},
      {"stage 2 14x14x32 -> 32", 64, 14, 14, 32, 3, 32, 1, 14, 1},
      {"stage 3 first 14x14x32 -> 64, /2", 64, 14, 14, 32, 3, 64, 2, 7, 0},
      {"stage 3 shortcut 1x1 32 -> 64, /2", 64, 14, 14, 32, 1, 64, 2, 7, 0},
      {"stage 3 7x7x64 -> 64", 64, 7, 7, 64, 3, 64, 1, 7, 1},
  };
  std::printf("| layer (batch 64) | MFLOP | own kernels: forward / backprop "
              "input / backprop filter, ms | oneDNN, ms | oneDNN, GFLOP/s "
              "|\n|---|---|---|---|---|\n");
  for (const Layer &s : layers) {
    std::vector<float> x = random(s.n * s.h * s.w * s.c, 1),
                       f = random(s.k * s.k * s.c * s.o, 2),
                       y = random(s.n * s.oh * s.oh * s.o, 3), dx = x, dw = f;
    auto mx = makeRowMajor<float, 4>(x.data(), {s.n, s.h, s.w, s.c});
    auto mdx = makeRowMajor<float, 4>(dx.data(), {s.n, s.h, s.w, s.c});
    auto mf = makeRowMajor<float, 4>(f.data(), {s.k, s.k, s.c, s.o});
    auto mdw = makeRowMajor<float, 4>(dw.data(), {s.k, s.k, s.c, s.o});
    auto my = makeRowMajor<float, 4>(y.data(), {s.n, s.oh, s.oh, s.o});
    double mflop = 2e-6 * double(s.n * s.oh * s.oh * s.o * s.k * s.k * s.c);
    double ms[2][3];
    for (int on = 0; on < 2; ++on) {
      estc_runtime_set_onednn(on);
      ms[on][0] = cpuMs(
          [&] {
            _mlir_ciface_estc_conv2d_nhwc_hwio_f32(
                &mx, &mf, &my, s.stride, s.stride, 1, 1, s.pad, s.pad);
          },
          mflop);
      ms[on][1] = cpuMs(
          [&] {
            _mlir_ciface_estc_conv2d_backprop_input_f32(
                &mf, &my, &mdx, s.stride, s.stride, 1, 1, s.pad, s.pad);
          },
          mflop);
      ms[on][2] = cpuMs(
          [&] {
            _mlir_ciface_estc_conv2d_backprop_filter_f32(
                &mx, &my, &mdw, s.stride, s.stride, 1, 1, s.pad, s.pad);
          },
          mflop);
    }
    std::printf("| %s | %.0f | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | "
                "%.0f / %.0f / %.0f |\n",
                s.name, mflop, ms[0][0], ms[0][1], ms[0][2], ms[1][0], ms[1][1],
                ms[1][2], mflop / ms[1][0], mflop / ms[1][1], mflop / ms[1][2]);
  }
  estc_runtime_set_onednn(-1);
}

/// C[b] = op(A[b]) op(B[b]) through the runtime's matmul: CPU ms.
double runtimeMatmul(int64_t batch, int64_t m, int64_t k, int64_t n, bool ta,
                     bool tb) {
  std::vector<float> a = random(batch * m * k, 1), b = random(batch * k * n, 2),
                     c(size_t(batch * m * n));
  auto ma = ta ? makeRowMajor<float, 3>(a.data(), {batch, k, m})
               : makeRowMajor<float, 3>(a.data(), {batch, m, k});
  auto mb = tb ? makeRowMajor<float, 3>(b.data(), {batch, n, k})
               : makeRowMajor<float, 3>(b.data(), {batch, k, n});
  auto mc = makeRowMajor<float, 3>(c.data(), {batch, m, n});
  return cpuMs([&] { _mlir_ciface_estc_matmul_f32(&ma, &mb, &mc, ta, tb); },
               2e-6 * double(batch * m * n * k));
}

void gemm() {
  std::printf("| n^3, GFLOP/s | runtime, own (Eigen tiles) | runtime, oneDNN "
              "tiles | dnnl_sgemm | Eigen -march=native |\n|---|---|---|---|"
              "---|\n");
  for (int64_t s : {512, 1024, 2048}) {
    std::vector<float> a = random(s * s, 1), b = random(s * s, 2),
                       c(size_t(s * s));
    double mflop = 2e-6 * double(s * s * s);
    estc_runtime_set_onednn(0);
    double own = runtimeMatmul(1, s, s, s, false, false);
    estc_runtime_set_onednn(1);
    double tiles = runtimeMatmul(1, s, s, s, false, false);
    double dnnl = cpuMs(
        [&] {
          dnnl_sgemm('N', 'N', s, s, s, 1.0f, a.data(), s, b.data(), s, 0.0f,
                     c.data(), s);
        },
        mflop);
    Eigen::Map<Eigen::Matrix<float, -1, -1, Eigen::RowMajor>> ea(a.data(), s,
                                                                 s),
        eb(b.data(), s, s), ec(c.data(), s, s);
    double eigen = cpuMs([&] { ec.noalias() = ea * eb; }, mflop);
    std::printf("| %lld | %.1f | %.1f | %.1f | %.1f |\n", (long long)s,
                mflop / own, mflop / tiles, mflop / dnnl, mflop / eigen);
  }
  struct Product {
    const char *name;
    int64_t batch, m, k, n;
    bool ta, tb;
    int perLayer;
  } products[] = {
      {"q/k/v/output dense, X W [4096,256] x [256,256]", 1, 4096, 256, 256,
       false, false, 4},
      {"  dX = dY W^T", 1, 4096, 256, 256, false, true, 4},
      {"  dW = X^T dY", 1, 256, 4096, 256, true, false, 4},
      {"feed-forward in, [4096,256] x [256,1024]", 1, 4096, 256, 1024, false,
       false, 1},
      {"  dX = dY W^T", 1, 4096, 1024, 256, false, true, 1},
      {"  dW = X^T dY", 1, 256, 4096, 1024, true, false, 1},
      {"feed-forward out, [4096,1024] x [1024,256]", 1, 4096, 1024, 256, false,
       false, 1},
      {"  dX = dY W^T", 1, 4096, 256, 1024, false, true, 1},
      {"  dW = X^T dY", 1, 1024, 4096, 256, true, false, 1},
      {"scores Q K^T, 128 x [128,64] x [64,128]", 128, 128, 64, 128, false,
       true, 1},
      {"  dQ = dS K", 128, 128, 128, 64, false, false, 1},
      {"  dK = dS^T Q", 128, 128, 128, 64, true, false, 1},
      {"context P V, 128 x [128,128] x [128,64]", 128, 128, 128, 64, false,
       false, 1},
      {"  dP = dC V^T", 128, 128, 64, 128, false, true, 1},
      {"  dV = P^T dC", 128, 128, 128, 64, true, false, 1},
  };
  std::printf("\n| BERT-mini matmul (per layer) | MFLOP | own: ms, GFLOP/s | "
              "oneDNN tiles: ms, GFLOP/s |\n|---|---|---|---|\n");
  double flops = 0, own = 0, tiles = 0;
  for (const Product &p : products) {
    double mflop = 2e-6 * double(p.batch * p.m * p.n * p.k);
    estc_runtime_set_onednn(0);
    double o = runtimeMatmul(p.batch, p.m, p.k, p.n, p.ta, p.tb);
    estc_runtime_set_onednn(1);
    double t = runtimeMatmul(p.batch, p.m, p.k, p.n, p.ta, p.tb);
    std::printf("| %s%s | %.0f | %.2f, %.0f | %.2f, %.0f |\n", p.name,
                p.perLayer > 1 ? " (x4)" : "", mflop, o, mflop / o, t,
                mflop / t);
    flops += p.perLayer * mflop;
    own += p.perLayer * o;
    tiles += p.perLayer * t;
  }
  std::printf("| one layer's matmuls | %.0f | %.1f, %.0f | %.1f, %.0f |\n",
              flops, own, flops / own, tiles, flops / tiles);
  estc_runtime_set_onednn(-1);
}

} // namespace

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "";
  estc_runtime_set_num_threads(1);
  omp_set_num_threads(1);
  if (!estc_runtime_set_onednn(-1)) {
    std::fprintf(stderr, "onednn_kernels_bench: the runtime was built "
                         "without oneDNN (ESTC_ONEDNN=OFF)\n");
    return 1;
  }
  if (std::strcmp(part, "conv") == 0)
    conv();
  else if (std::strcmp(part, "gemm") == 0)
    gemm();
  else {
    std::fprintf(stderr, "usage: onednn_kernels_bench conv|gemm\n");
    return 2;
  }
  return 0;
}
