//===- runtime_kernels_bench.cpp - GFLOP/s of the runtime kernels --------===//
//
// sgemm at the sizes of the MNIST models (and 512^3, the roofline reference)
// and the ConvNet's two convolutions at batch 128, forward and both
// gradients, each at 1 and 2 threads. Run:
//   build-rt/bin/runtime_kernels_bench
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"

#include <benchmark/benchmark.h>

#include <random>
#include <tuple>
#include <vector>

using estc::rt::makeRowMajor;
using estc::rt::MemRef;

namespace {

std::vector<float> randomVector(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

void setFlops(benchmark::State &state, double flopsPerIteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flopsPerIteration * double(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

/// Args: M, K, N, threads. C[M,N] = A[M,K] x B[K,N], all row-major.
void BM_Sgemm(benchmark::State &state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  estc_runtime_set_num_threads(int(state.range(3)));
  std::vector<float> a = randomVector(m * k, 1), b = randomVector(k * n, 2),
                     c(size_t(m * n));
  auto ma = makeRowMajor<float, 3>(a.data(), {1, m, k});
  auto mb = makeRowMajor<float, 3>(b.data(), {1, k, n});
  auto mc = makeRowMajor<float, 3>(c.data(), {1, m, n});
  for (auto _ : state) {
    _mlir_ciface_estc_matmul_f32(&ma, &mb, &mc, 0, 0);
    benchmark::DoNotOptimize(c.data());
  }
  setFlops(state, 2.0 * m * n * k);
}

enum Kernel { Forward, BackpropInput, BackpropFilter };

/// Args: N, H, W, C, K (square filter), O, threads, kernel. VALID, stride 1.
void BM_Conv(benchmark::State &state) {
  int64_t n = state.range(0), h = state.range(1), w = state.range(2),
          c = state.range(3), k = state.range(4), o = state.range(5);
  estc_runtime_set_num_threads(int(state.range(6)));
  auto kernel = Kernel(state.range(7));
  int64_t oh = h - k + 1, ow = w - k + 1;
  std::vector<float> in = randomVector(n * h * w * c, 1),
                     filter = randomVector(k * k * c * o, 2),
                     out = randomVector(n * oh * ow * o, 3);
  auto mi = makeRowMajor<float, 4>(in.data(), {n, h, w, c});
  auto mf = makeRowMajor<float, 4>(filter.data(), {k, k, c, o});
  auto mo = makeRowMajor<float, 4>(out.data(), {n, oh, ow, o});
  for (auto _ : state) {
    switch (kernel) {
    case Forward:
      _mlir_ciface_estc_conv2d_nhwc_hwio_f32(&mi, &mf, &mo, 1, 1, 1, 1, 0, 0);
      break;
    case BackpropInput:
      _mlir_ciface_estc_conv2d_backprop_input_f32(&mf, &mo, &mi, 1, 1, 1, 1, 0,
                                                  0);
      break;
    case BackpropFilter:
      _mlir_ciface_estc_conv2d_backprop_filter_f32(&mi, &mo, &mf, 1, 1, 1, 1, 0,
                                                   0);
      break;
    }
    benchmark::ClobberMemory();
  }
  setFlops(state, 2.0 * n * oh * ow * o * k * k * c);
}

void sgemmArgs(benchmark::internal::Benchmark *b) {
  b->ArgNames({"M", "K", "N", "threads"});
  for (int threads : {1, 2})
    for (auto [m, k, n] : {std::tuple{128, 784, 256}, std::tuple{128, 256, 256},
                           std::tuple{512, 512, 512}})
      b->Args({m, k, n, threads});
}

void convArgs(benchmark::internal::Benchmark *b) {
  b->ArgNames({"N", "H", "W", "C", "K", "O", "threads", "kernel"});
  for (int kernel : {Forward, BackpropInput, BackpropFilter})
    for (int threads : {1, 2}) {
      b->Args({128, 28, 28, 1, 5, 20, threads,
               kernel}); // conv1: 28x28x1 -> 24x24x20
      b->Args({128, 12, 12, 20, 5, 40, threads,
               kernel}); // conv2: 12x12x20 -> 8x8x40
    }
}

} // namespace

BENCHMARK(BM_Sgemm)->Apply(sgemmArgs)->UseRealTime()->Unit(
    benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Apply(convArgs)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::AddCustomContext("kernel ISA", estc_runtime_kernel_isa());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
