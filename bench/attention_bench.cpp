//===- attention_bench.cpp - Fused normalizations against compositions ---===//
//
// Google Benchmark of the fused layer normalization and attention softmax
// (est.layer_norm, est.attention_softmax and their fused gradients) against
// the compositions of plain ops a model would otherwise write:
//
//   layer norm  Keras's unfused path: mean, variance of (x - mean), then
//               (x - mean) * rsqrt(var + eps) * gamma + beta
//   attention   softmax(logits * scale + (1 - mask) * -1e9) with a bool
//               mask broadcast over the heads (Keras's masked Softmax)
//
// each as @predict (forward) and @train (forward, backward and an SGD step
// of gamma / beta, or of a per-key weight the logits are scaled by), JIT
// compiled once per benchmark, on the runtime's threads (ESTC_NUM_THREADS).
// And the training-mode batch norm (est.fused_batch_norm and its gradient)
// alone at MobileNetV2's shapes (keras_bench's model at 96x96, batch 32):
// @train is its forward pass and its backward pass with an SGD step of
// gamma and beta.
//
//   bench/attention_bench [--benchmark_filter=...]
//
// Arguments: layer norm rows x width; attention batch, heads, T (= S);
// batch norm N, H, W, C (NHWC).
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>

namespace {

using namespace estc;

std::unique_ptr<JitModel> compile(const graph::GraphDef &def) {
  JitOptions options;
  options.useCache = false;
  JitCompiler jit(options);
  auto model = jitCompileGraph(jit, def, "Bench", [](llvm::StringRef) {});
  if (!model) {
    std::cerr << "attention_bench: error: " << llvm::toString(model.takeError())
              << "\n";
    std::exit(1);
  }
  return std::move(*model);
}

void fill(JitModel &model, int fn, const char *input, int64_t n, double lo,
          double hi) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(lo, hi);
  auto *data =
      static_cast<float *>(model.input_data(fn, model.input_index(fn, input)));
  for (int64_t i = 0; i < n; ++i)
    data[i] = u(rng);
}

/// Layer norm over the last dim of x [rows, width].
graph::GraphDef layerNormGraph(int64_t width, bool fused) {
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1, width}});
  return build_graph_def(inputs, [&](Graph &g, const TensorMap &f,
                                     const Tensor &, ModeKeys mode) {
    Tensor x = f["x"];
    Tensor gamma =
        g.get_variable("gamma", DType::Float32, {width}, ones_initializer())
            .read();
    Tensor beta =
        g.get_variable("beta", DType::Float32, {width}, zeros_initializer())
            .read();
    Tensor y;
    if (fused) {
      y = nn::layer_norm(x, gamma, beta, -1, -1, 1e-3);
    } else {
      Tensor mean = reduce_mean(x, Dims{-1}, true);
      Tensor centered = subtract(x, mean);
      Tensor var = reduce_mean(square(centered), Dims{-1}, true);
      y = add(multiply(multiply(centered, rsqrt(add(var, 1e-3))), gamma), beta);
    }
    Signature s;
    s.predictions.set("y", y);
    if (mode != ModeKeys::PREDICT) {
      s.loss = reduce_sum(multiply(y, y));
      if (mode == ModeKeys::TRAIN)
        s.train_op = train::GradientDescentOptimizer(0.01).minimize(s.loss);
    }
    return s;
  });
}

/// Attention weights over logits [B, H, T, T] with a mask [B, T, T].
graph::GraphDef attentionGraph(int64_t heads, int64_t t, bool fused) {
  InputSpec inputs;
  inputs.features.push_back(
      TensorSpec{"logits", DType::Float32, {-1, heads, t, t}});
  inputs.features.push_back(TensorSpec{"mask", DType::Float32, {-1, t, t}});
  double scale = 0.125;
  return build_graph_def(inputs, [&](Graph &g, const TensorMap &f,
                                     const Tensor &, ModeKeys mode) {
    Tensor w =
        g.get_variable("w", DType::Float32, {t}, ones_initializer()).read();
    Tensor logits = multiply(f["logits"], w);
    Tensor keep = expand_dims(greater(f["mask"], 0.0), 1);
    Tensor y;
    if (fused) {
      y = nn::attention_softmax(logits, keep, scale);
    } else {
      Tensor bias = multiply(subtract(1.0, cast(keep, DType::Float32)), -1e9);
      y = nn::softmax(add(multiply(logits, scale), bias));
    }
    Signature s;
    s.predictions.set("y", y);
    if (mode != ModeKeys::PREDICT) {
      s.loss = reduce_sum(multiply(y, logits));
      if (mode == ModeKeys::TRAIN)
        s.train_op = train::GradientDescentOptimizer(0.01).minimize(s.loss);
    }
    return s;
  });
}

/// Training-mode batch norm of x [N, H, W, C] (NHWC).
graph::GraphDef batchNormGraph(int64_t h, int64_t w, int64_t c) {
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1, h, w, c}});
  return build_graph_def(inputs, [&](Graph &g, const TensorMap &f,
                                     const Tensor &, ModeKeys mode) {
    Tensor gamma =
        g.get_variable("gamma", DType::Float32, {c}, ones_initializer()).read();
    Tensor beta =
        g.get_variable("beta", DType::Float32, {c}, zeros_initializer()).read();
    Tensor y = nn::fused_batch_norm(f["x"], gamma, beta).y;
    Signature s;
    s.predictions.set("y", y);
    if (mode != ModeKeys::PREDICT) {
      s.loss = reduce_sum(multiply(y, f["x"]));
      if (mode == ModeKeys::TRAIN)
        s.train_op = train::GradientDescentOptimizer(0.01).minimize(s.loss);
    }
    return s;
  });
}

void run(benchmark::State &state, JitModel &model, int fn, int64_t bytes) {
  for (auto _ : state)
    model.run(fn);
  state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_LayerNorm(benchmark::State &state, bool fused, bool train) {
  int64_t rows = state.range(0), width = state.range(1);
  auto model = compile(layerNormGraph(width, fused));
  model->run(model->function_index("init"));
  model->set_batch(rows);
  int fn = model->function_index(train ? "train" : "predict");
  fill(*model, fn, "features/x", rows * width, -2.0, 2.0);
  run(state, *model, fn, rows * width * 4);
}

void BM_AttentionSoftmax(benchmark::State &state, bool fused, bool train) {
  int64_t batch = state.range(0), heads = state.range(1), t = state.range(2);
  auto model = compile(attentionGraph(heads, t, fused));
  model->run(model->function_index("init"));
  model->set_batch(batch);
  int fn = model->function_index(train ? "train" : "predict");
  fill(*model, fn, "features/logits", batch * heads * t * t, -4.0, 4.0);
  fill(*model, fn, "features/mask", batch * t * t, -0.3, 1.0);
  run(state, *model, fn, batch * heads * t * t * 4);
}

/// The predict function of a batch-norm graph is inference (the moving
/// statistics): @train alone measures the training-mode op.
void BM_BatchNormTrain(benchmark::State &state) {
  int64_t n = state.range(0), h = state.range(1), w = state.range(2),
          c = state.range(3);
  auto model = compile(batchNormGraph(h, w, c));
  model->run(model->function_index("init"));
  model->set_batch(n);
  int fn = model->function_index("train");
  fill(*model, fn, "features/x", n * h * w * c, -1.0, 3.0);
  run(state, *model, fn, n * h * w * c * 4);
}

void layerNormArgs(benchmark::internal::Benchmark *b) {
  // BERT-base's, a wide and a tall one; BERT-mini's (4096 tokens x 256, the
  // shape of bench/toolbox_bench --part=bert).
  b->Args({4096, 768})
      ->Args({16384, 256})
      ->Args({1024, 4096})
      ->Args({4096, 256});
}
void attentionArgs(benchmark::internal::Benchmark *b) {
  // and BERT-mini's at batch 32 (bench/toolbox_bench --part=bert).
  b->Args({8, 12, 128})->Args({2, 8, 512})->Args({32, 4, 128});
}

void batchNormArgs(benchmark::internal::Benchmark *b) {
  // MobileNetV2 at 96x96, batch 32: Conv1's, block 1's expansion, block 2's,
  // block 7's and block 16's.
  b->Args({32, 48, 48, 32})
      ->Args({32, 48, 48, 96})
      ->Args({32, 24, 24, 144})
      ->Args({32, 6, 6, 384})
      ->Args({32, 3, 3, 960});
}

} // namespace

BENCHMARK(BM_BatchNormTrain)
    ->Apply(batchNormArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LayerNorm, fused_forward, true, false)
    ->Apply(layerNormArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LayerNorm, composed_forward, false, false)
    ->Apply(layerNormArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LayerNorm, fused_train, true, true)
    ->Apply(layerNormArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LayerNorm, composed_train, false, true)
    ->Apply(layerNormArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionSoftmax, fused_forward, true, false)
    ->Apply(attentionArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionSoftmax, composed_forward, false, false)
    ->Apply(attentionArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionSoftmax, fused_train, true, true)
    ->Apply(attentionArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AttentionSoftmax, composed_train, false, true)
    ->Apply(attentionArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
