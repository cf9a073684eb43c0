//===- SequenceTestModel.h - A model over padded batches of sequences ---===//
//
// The sequence-length tests' model (SequenceInputsTest, compiled by the JIT
// and, through make_sequence_graph, by estc ahead of time): two sequence
// inputs of a padded batch, `tokens` F32 [batch, T, 4] (at most 64 steps)
// and `weights` F32 [batch, T], and a host reference of its PREDICT outputs:
//
//   logits   [batch, 3]     dense(mean over T of tokens * weights)
//   centered [batch, 4]     sum over T of (tokens - the batch mean of each
//                           step): a [T, 4] temporary, the per-step arena
//   steps    [batch, T, 5]  softmax(dense_1(tokens)) per step: keeps T, and
//                           its [batch, T] temporaries are the
//                           per-example-step arena
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_SEQUENCETESTMODEL_H
#define ESTC_TEST_UNIT_SEQUENCETESTMODEL_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace estc {
namespace sequence_model {

constexpr int64_t kFeatures = 4, kClasses = 3, kUnits = 5, kMaxLength = 64;

inline InputSpec inputs() {
  InputSpec in;
  in.features.push_back({"tokens",
                         DType::Float32,
                         {-1, -1, kFeatures},
                         false,
                         /*sequence_dim=*/true,
                         kMaxLength});
  in.features.push_back(
      {"weights", DType::Float32, {-1, -1}, false, /*sequence_dim=*/true});
  return in;
}

/// The PREDICT outputs of the inputs (any mode builds them).
inline TensorMap predictions(const TensorMap &f) {
  Tensor tokens = f["tokens"], weights = f["weights"];
  Tensor pooled = reduce_mean(tokens * expand_dims(weights, -1), Dims{1});
  Tensor logits = layers::dense(pooled, kClasses);
  Tensor stepMean = reduce_mean(tokens, Dims{0});
  Tensor centered = reduce_sum(tokens - stepMean, Dims{1});
  Tensor steps = nn::softmax(layers::dense(tokens, kUnits));
  return {{"logits", logits}, {"centered", centered}, {"steps", steps}};
}

inline graph::GraphDef graph_def() {
  Graph g;
  build_mode(g, ModeKeys::PREDICT, inputs(),
             [](Graph &, const TensorMap &f, const Tensor &, ModeKeys) {
               Signature s;
               s.predictions = predictions(f);
               return s;
             });
  return g.graph_def();
}

/// The weights the tests set: dense (logits) and dense_1 (steps).
struct Weights {
  std::vector<float> kernel, bias, kernel1, bias1;
  Weights() {
    for (int64_t i = 0; i < kFeatures * kClasses; ++i)
      kernel.push_back(0.1f * static_cast<float>(i % 7) - 0.3f);
    for (int64_t i = 0; i < kClasses; ++i)
      bias.push_back(0.05f * static_cast<float>(i));
    for (int64_t i = 0; i < kFeatures * kUnits; ++i)
      kernel1.push_back(0.07f * static_cast<float>(i % 5) - 0.1f);
    for (int64_t i = 0; i < kUnits; ++i)
      bias1.push_back(-0.02f * static_cast<float>(i));
  }
};

/// The outputs computed on the host, in double.
struct Reference {
  std::vector<double> logits, centered, steps;
};
inline Reference host_reference(const Weights &w, int64_t batch, int64_t length,
                                const std::vector<float> &tokens,
                                const std::vector<float> &weights) {
  Reference r;
  auto at = [&](int64_t b, int64_t t, int64_t f) {
    return static_cast<double>(tokens[(b * length + t) * kFeatures + f]);
  };
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> pooled(kFeatures, 0.0);
    for (int64_t t = 0; t < length; ++t)
      for (int64_t f = 0; f < kFeatures; ++f)
        pooled[f] += at(b, t, f) * weights[b * length + t] / length;
    for (int64_t c = 0; c < kClasses; ++c) {
      double v = w.bias[c];
      for (int64_t f = 0; f < kFeatures; ++f)
        v += pooled[f] * w.kernel[f * kClasses + c];
      r.logits.push_back(v);
    }
    for (int64_t f = 0; f < kFeatures; ++f) {
      double v = 0;
      for (int64_t t = 0; t < length; ++t) {
        double mean = 0;
        for (int64_t b2 = 0; b2 < batch; ++b2)
          mean += at(b2, t, f) / batch;
        v += at(b, t, f) - mean;
      }
      r.centered.push_back(v);
    }
    for (int64_t t = 0; t < length; ++t) {
      std::vector<double> z(kUnits);
      double max = -1e300, sum = 0;
      for (int64_t u = 0; u < kUnits; ++u) {
        z[u] = w.bias1[u];
        for (int64_t f = 0; f < kFeatures; ++f)
          z[u] += at(b, t, f) * w.kernel1[f * kUnits + u];
        max = std::max(max, z[u]);
      }
      for (double &v : z)
        sum += (v = std::exp(v - max));
      for (double v : z)
        r.steps.push_back(v / sum);
    }
  }
  return r;
}

} // namespace sequence_model
} // namespace estc

#endif // ESTC_TEST_UNIT_SEQUENCETESTMODEL_H
