//===- MathAccuracyTest.cpp - Compiled f32 math against exact results ----===//
//
// The transcendental ops as the CPU pipeline compiles them (est-approximate-
// math's polynomials for the ops it rewrites, libm for the rest), over the
// float range: every float of a dense sample of bit patterns and a dense
// grid where the op changes fastest, against the result computed in double
// and rounded to float. Each op's worst error in units in the last place
// (ulp) must stay within its bound (docs/conventions.md, "Floating point");
// special values (0, -0, +-inf, NaN, the overflow and underflow edges) must
// be exactly what IEEE and libm give.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace estc {
namespace {

using namespace estc::testing;

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Distance in representable floats between `got` and `want` (same sign
/// and finite, else 0 when identical by IEEE rules and a huge number not).
double ulpDistance(float got, float want) {
  // Below the normal range a float has no more precision than its absolute
  // step: a result within FLT_MIN of a subnormal (or zero) one counts as
  // exact, as with flushing to zero.
  if (std::fabs(want) < std::numeric_limits<float>::min() &&
      std::fabs(static_cast<double>(got) - want) <
          std::numeric_limits<float>::min())
    return 0;
  if (std::isnan(want))
    return std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want) || std::isinf(got))
    return got == want ? 0 : 1e30;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : int64_t{i};
  };
  return static_cast<double>(std::llabs(ordered(got) - ordered(want)));
}

struct MathOp {
  const char *name;
  std::function<Tensor(const Tensor &)> op;
  double (*exact)(double);
  float lo, hi;  // the domain sampled
  double maxUlp; // the bound this op's compiled code must keep
};

/// Every float in [lo, hi] whose bit pattern is a multiple of kBitStride
/// (about 2,000 points per binade and sign), the grid
/// lo..hi in `grid` even steps, and the edges.
std::vector<float> samples(float lo, float hi) {
  constexpr uint64_t kBitStride = 4099;
  std::vector<float> xs;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += kBitStride) {
    float f = bitsToFloat(static_cast<uint32_t>(bits));
    if (f >= lo && f <= hi)
      xs.push_back(f);
  }
  const int grid = 1 << 18;
  for (int i = 0; i <= grid; ++i)
    xs.push_back(lo + (hi - lo) * (static_cast<double>(i) / grid));
  for (float f :
       {lo, hi, 0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::min(),
        std::numeric_limits<float>::denorm_min()})
    if (f >= lo && f <= hi)
      xs.push_back(f);
  return xs;
}

/// Compiles y = op(x) for a [-1] float feature and returns y for `xs`.
std::vector<float> runCompiled(const MathOp &m, const std::vector<float> &xs) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1}});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &, const TensorMap &x, const Tensor &, ModeKeys) {
               Signature spec;
               spec.predictions = {{"y", m.op(x["x"])}};
               return spec;
             });
  std::unique_ptr<JitModel> model =
      jitCompileForTest(graph.graph_def(), "MathAccuracy");
  if (!model)
    return {};
  int predict = model->function_index("predict");
  model->set_batch(static_cast<int64_t>(xs.size()));
  std::memcpy(
      model->input_data(predict, model->input_index(predict, "features/x")),
      xs.data(), xs.size() * sizeof(float));
  model->run(predict);
  const auto *y = static_cast<const float *>(model->output_data(
      predict, model->output_index(predict, "predictions/y")));
  return std::vector<float>(y, y + xs.size());
}

double sigmoidExact(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The bounds: the worst error measured on an AVX2 machine plus one ulp (the
// worst float may lie between the points sampled). The expansions use no
// FMA, so every target computes the same bits.
const MathOp kOps[] = {
    {"exp", [](const Tensor &x) { return estc::exp(x); },
     [](double x) { return std::exp(x); }, -110.0f, 90.0f, 2},
    {"log", [](const Tensor &x) { return estc::log(x); },
     [](double x) { return std::log(x); }, 0.0f,
     std::numeric_limits<float>::max(), 2},
    {"log1p", [](const Tensor &x) { return estc::log1p(x); },
     [](double x) { return std::log1p(x); }, -1.0f, 1e30f, 3},
    {"expm1", [](const Tensor &x) { return estc::expm1(x); },
     [](double x) { return std::expm1(x); }, -90.0f, 88.0f, 4},
    {"tanh", [](const Tensor &x) { return estc::tanh(x); },
     [](double x) { return std::tanh(x); }, -20.0f, 20.0f, 7},
    {"sigmoid", [](const Tensor &x) { return sigmoid(x); }, sigmoidExact,
     -100.0f, 100.0f, 3},
    {"erf", [](const Tensor &x) { return estc::erf(x); },
     [](double x) { return std::erf(x); }, -6.0f, 6.0f, 6},
};

/// Values every op must map exactly as IEEE arithmetic and libm do.
std::vector<float> specials() {
  const float inf = std::numeric_limits<float>::infinity();
  return {std::numeric_limits<float>::quiet_NaN(),
          inf,
          -inf,
          0.0f,
          -0.0f,
          1.0f,
          -1.0f,
          std::numeric_limits<float>::max(),
          -std::numeric_limits<float>::max(),
          std::numeric_limits<float>::denorm_min(),
          -std::numeric_limits<float>::denorm_min(),
          88.72283f, // exp's largest finite result
          88.72284f, // and its first overflow
          -103.97208f,
          -87.33655f};
}

TEST(MathAccuracy, WorstErrorWithinBound) {
  for (const MathOp &m : kOps) {
    SCOPED_TRACE(m.name);
    std::vector<float> xs = samples(m.lo, m.hi);
    std::vector<float> ys = runCompiled(m, xs);
    ASSERT_EQ(ys.size(), xs.size());
    double worst = 0;
    float worstX = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = static_cast<float>(m.exact(xs[i]));
      double d = ulpDistance(ys[i], want);
      if (d > worst) {
        worst = d;
        worstX = xs[i];
      }
    }
    std::printf("%-8s worst %.0f ulp at x = %.9g (%zu points)\n", m.name, worst,
                worstX, xs.size());
    EXPECT_LE(worst, m.maxUlp) << "at x = " << worstX;
  }
}

// NaN in, NaN out; results that are infinities, zeros or +-1 (tanh's and
// erf's saturation) exactly as libm's rounded to float, the others (the
// range's edges) within the op's bound.
TEST(MathAccuracy, SpecialValuesExact) {
  std::vector<float> xs = specials();
  for (const MathOp &m : kOps) {
    SCOPED_TRACE(m.name);
    std::vector<float> ys = runCompiled(m, xs);
    ASSERT_EQ(ys.size(), xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = static_cast<float>(m.exact(xs[i]));
      bool special = std::isnan(want) || std::isinf(want) || want == 0 ||
                     std::fabs(want) == 1;
      EXPECT_LE(ulpDistance(ys[i], want), special ? 0 : m.maxUlp)
          << m.name << "(" << xs[i] << ") = " << ys[i] << ", want " << want;
    }
  }
}

} // namespace
} // namespace estc
