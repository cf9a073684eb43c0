//===- AllOps.h - The all-ops graph's features and tolerances -----------===//
//
// What the all-ops graph writer (all_ops_graph.cpp) and GpuTest agree on,
// without either linking the other's libraries (the writer links
// lib/Graph; GpuTest links no graph library, only the compiled models and
// the runtime): the graph's features with the range GpuTest draws their
// random values from, and the tolerance of each group of outputs.
//
// Every prediction of the graph is named `<group>_<what>`; the group says
// how closely the CUDA result must match the CPU one:
//   exact   integers, booleans, data movement, max/min, relu, floor, abs:
//           bit-identical (no rounding is involved)
//   arith   sums, products, quotients, matmul, convolution, pooling
//           averages and their gradients: |gpu - cpu| <= 1e-5 * max(1,
//           |cpu|) (the summation order and fused multiply-adds differ)
//   transc  transcendental functions (exp, log, tanh, sin, pow, softmax,
//           the cross-entropies, rsqrt, random_normal): 1e-4 (libdevice
//           and the CPU's polynomial approximations differ by a few ulp,
//           which later arithmetic can grow)
// NaN must be NaN and an infinity the same infinity on both sides.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_GPU_ALLOPS_H
#define ESTC_TEST_GPU_ALLOPS_H

#include <cstdint>
#include <cstring>
#include <string>

namespace estc {
namespace gpu_test {

/// The element type of a feature (the graph's f32, f64, i32, i64).
enum class FeatureType { F32, F64, I32, I64 };

/// A feature of the all-ops graph: key, element type, shape (-1: the
/// batch; at most 4 dimensions, `rank` of them) and the range its random
/// values come from (integers: [lo, hi], both included).
struct FeatureDef {
  const char *key;
  FeatureType type;
  int rank;
  int64_t shape[4];
  double lo, hi;
};

/// Rows of the embedding table and classes of the class-id features: ids
/// are drawn from [0, kIds).
constexpr int64_t kIds = 7;

inline constexpr FeatureDef kAllOpsFeatures[] = {
    {"x", FeatureType::F32, 2, {-1, 17}, -2.0, 2.0},
    // Positive values: log, sqrt, rsqrt, pow's base, divisors.
    {"p", FeatureType::F32, 2, {-1, 17}, 0.1, 3.0},
    {"a", FeatureType::F32, 3, {-1, 3, 1}, -2.0, 2.0},
    {"m", FeatureType::F32, 3, {-1, 3, 4}, -2.0, 2.0},
    {"q", FeatureType::F32, 2, {-1, 4}, -2.0, 2.0},
    {"img", FeatureType::F32, 4, {-1, 9, 9, 3}, -1.0, 1.0},
    {"soft", FeatureType::F32, 2, {-1, kIds}, 0.0, 1.0},
    {"d", FeatureType::F64, 2, {-1, 5}, -2.0, 2.0},
    {"k", FeatureType::I32, 2, {-1, 5}, -50, 50},
    {"ids", FeatureType::I64, 1, {-1}, 0, kIds - 1},
    {"ids32", FeatureType::I32, 2, {-1, 3}, 0, kIds - 1},
};

/// The tolerance of prediction `key` ("predictions/<group>_<what>" or
/// "<group>_<what>"): 0 for exact, 1e-5 for arith, 1e-4 for transc; -1 for
/// a key of no known group (a writer/test mismatch the test reports).
inline double allOpsTolerance(std::string key) {
  const std::string prefix = "predictions/";
  if (key.compare(0, prefix.size(), prefix) == 0)
    key = key.substr(prefix.size());
  std::string group = key.substr(0, key.find('_'));
  if (group == "exact")
    return 0.0;
  if (group == "arith")
    return 1e-5;
  if (group == "transc")
    return 1e-4;
  return -1.0;
}

} // namespace gpu_test
} // namespace estc

#endif // ESTC_TEST_GPU_ALLOPS_H
