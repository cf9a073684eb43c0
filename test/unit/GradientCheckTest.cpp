//===- GradientCheckTest.cpp - Compiled gradients and training ----------===//
//
// Gradient checks: for each differentiable op, a @train of
//   loss = reduce_sum(op(x, a) * c)   (x a [2,3] variable, c random)
// with SGD at learning rate 1 is compiled and run once; x_before - x_after is
// the analytic gradient, checked against central finite differences of the
// loss computed in double by the reference evaluator. conv2d and pooling are
// checked at a run-time batch: feature `a` has a dynamic batch and one
// compiled @train runs at two batch sizes.
//
// Learning: the seed MLP (examples/models) reaches near-zero loss on a small
// separable synthetic problem.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Models/Models.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

using UnaryFn =
    std::function<Tensor(Graph &, const Tensor &x, const Tensor &a)>;

Value random(const std::vector<int64_t> &shape, std::mt19937 &rng, double lo,
             double hi) {
  Value v;
  v.dtype = g::DT_FLOAT;
  v.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    v.data.push_back(static_cast<float>(
        std::uniform_real_distribution<double>(lo, hi)(rng)));
  return v;
}

/// A constant of `shape` with values in [-1.5, 1.5].
Tensor randomConstant(Graph &g, const Dims &shape, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> values(n);
  for (double &v : values)
    v = static_cast<float>(
        std::uniform_real_distribution<double>(-1.5, 1.5)(rng));
  return g.constant(values, shape, DType::Float32);
}

/// After one compiled SGD(1.0) step from `x` (fed `a`), `xAfter` holds
/// x - dloss/dx: checks x - xAfter against central differences of the loss
/// computed by the reference evaluator, element by element.
void expectCentralDifferences(reference::Evaluator &evaluator,
                              const std::string &lossName,
                              const std::string &featureName, const Value &a,
                              const Value &x, const void *xAfter,
                              double tolerance) {
  auto lossAt = [&](const Value &xv) {
    evaluator.variables()["x"] = xv;
    return evaluator.evaluate({lossName}, {{featureName, a}})[0].data[0];
  };
  for (size_t i = 0; i < x.data.size(); ++i) {
    double got = x.data[i] - load(g::DT_FLOAT, xAfter, i);
    double h = 1e-4 * std::max(1.0, std::abs(x.data[i]));
    Value plus = x, minus = x;
    plus.data[i] += h;
    minus.data[i] -= h;
    double want = (lossAt(plus) - lossAt(minus)) / (2 * h);
    EXPECT_NEAR(got, want, tolerance * std::max(1.0, std::abs(want)))
        << "element " << i;
  }
}

/// Compiles loss = reduce_sum(fn(x, a) * c), runs one SGD(1.0) step and
/// compares x_before - x_after with central differences of the reference.
void checkGradient(const UnaryFn &fn, double lo = -2.0, double hi = 2.0,
                   double tolerance = 2e-3, std::vector<int64_t> shape = {2, 3},
                   const std::function<void(Value &x)> &adjustX = {}) {
  Graph graph;
  graph.set_seed(3);
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"a", DType::Float32, shape});
  std::string lossName, featureName;
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable xv = gr.get_variable("x", DType::Float32, shape);
               Tensor x = gr.read_variable(xv);
               Tensor y = fn(gr, x, f["a"]);
               Tensor c = randomConstant(gr, y.shape(), 99);
               Signature spec;
               spec.loss = reduce_sum(multiply(y, c));
               spec.train_op =
                   train::GradientDescentOptimizer(1.0).minimize(spec.loss);
               lossName = spec.loss.name();
               featureName = f["a"].name();
               return spec;
             });
  g::GraphDef def = graph.graph_def();
  // ESTC_DUMP_GRAPHS=DIR writes the graph for estc (debugging).
  if (const char *dir = std::getenv("ESTC_DUMP_GRAPHS"); dir && *dir) {
    std::string error;
    EXPECT_TRUE(g::writeGraph(
        std::string(dir) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
            ".pbtxt",
        def, error))
        << error;
  }
  std::unique_ptr<JitModel> model =
      jitCompileForTest(def, "Grad", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);

  std::mt19937 rng(42);
  Value x = random(shape, rng, lo, hi);
  Value a = random(shape, rng, lo, hi);
  if (adjustX)
    adjustX(x);
  int trainFn = model->function_index("train");
  ASSERT_GE(trainFn, 0);
  int xIndex = model->variable_index("x");
  store(x, model->variable_data(xIndex));
  int aIndex = model->input_index(trainFn, "features/a");
  ASSERT_GE(aIndex, 0);
  store(a, model->input_data(trainFn, aIndex));
  reference::Evaluator evaluator(def);
  // Every other variable (global_step) is zero on both sides.
  for (const g::VariableDef &var : def.variable()) {
    if (var.name() == "x")
      continue;
    Value zero;
    zero.dtype = var.dtype();
    int64_t n = 1;
    for (int64_t d : var.shape().dim()) {
      zero.shape.push_back(d);
      n *= d;
    }
    zero.data.assign(n, 0.0);
    evaluator.variables()[var.name()] = zero;
    int index = model->variable_index(var.name());
    if (index >= 0)
      store(zero, model->variable_data(index));
  }
  model->run(trainFn);

  expectCentralDifferences(evaluator, lossName, featureName, a, x,
                           model->variable_data(xIndex), tolerance);
}

#define GRADIENT_TEST_SHAPED(name, lo, hi, shape, expr)                        \
  TEST(GradientCheckTest, name) {                                              \
    checkGradient(                                                             \
        [](Graph &, const Tensor &x, const Tensor &a) {                        \
          (void)a;                                                             \
          return expr;                                                         \
        },                                                                     \
        lo, hi, 2e-3, shape);                                                  \
  }

#define GRADIENT_TEST(name, lo, hi, expr)                                      \
  TEST(GradientCheckTest, name) {                                              \
    checkGradient(                                                             \
        [](Graph &, const Tensor &x, const Tensor &a) {                        \
          (void)a;                                                             \
          return expr;                                                         \
        },                                                                     \
        lo, hi);                                                               \
  }

// --- Through loops (est.scan): the reverse scan over stored values --------
//
// x and a are [3, 3]. An RNN over a's rows (3 steps of [3]) with x as the
// recurrent weight, captured by the body: h' = tanh(h x + a_t), from zeros;
// the loss reads every step's output (stacked) and the final state.
Tensor rnn(const Tensor &x, const Tensor &a, bool reverse) {
  Graph &g = x.graph();
  Tensor h0 = g.constant(std::vector<double>(3, 0.0), {1, 3});
  ScanResult r = scan(
      [&](const std::vector<Tensor> &carried, const std::vector<Tensor> &in) {
        Tensor h = tanh(add(matmul(carried[0], x), in[0]));
        return ScanStep{{h}, {multiply(h, h)}};
      },
      {h0}, {a}, reverse);
  return add(reshape(r.stacked[0], {3, 3}), r.carried[0]);
}
GRADIENT_TEST_SHAPED(ScanRnnCapturedWeight, -1, 1, (std::vector<int64_t>{3, 3}),
                     rnn(x, a, false))
GRADIENT_TEST_SHAPED(ScanRnnReverse, -1, 1, (std::vector<int64_t>{3, 3}),
                     rnn(x, a, true))
// The gradient into the scanned sequence (x's rows) and the initial carried
// value (a's first row), through two carried values.
GRADIENT_TEST_SHAPED(ScanSequenceAndInit, -1, 1, (std::vector<int64_t>{3, 3}),
                     ([&] {
                       Tensor init = slice(a, {0, 0}, {1, 3});
                       ScanResult r = scan(
                           [&](const std::vector<Tensor> &c,
                               const std::vector<Tensor> &in) {
                             Tensor h = add(multiply(c[0], in[0]), sin(c[1]));
                             Tensor s = add(c[1], square(in[0]));
                             return ScanStep{{h, s}, {multiply(h, s)}};
                           },
                           {init, init}, {x});
                       return add(reshape(r.stacked[0], {3, 3}), r.carried[0]);
                     }()))
// A scan inside a scan: the inner loop's gradients inside the outer
// reverse body.
GRADIENT_TEST_SHAPED(NestedScan, -1, 1, (std::vector<int64_t>{3, 3}), ([&] {
                       Tensor h0 =
                           x.graph().constant(std::vector<double>(3, 0.0), {3});
                       ScanResult r = scan(
                           [&](const std::vector<Tensor> &c,
                               const std::vector<Tensor> &in) {
                             ScanResult inner = scan(
                                 [&](const std::vector<Tensor> &ci,
                                     const std::vector<Tensor> &xi) {
                                   Tensor h =
                                       tanh(add(multiply(ci[0], xi[0]), in[0]));
                                   return ScanStep{{h}, {}};
                                 },
                                 {c[0]}, {x});
                             return ScanStep{inner.carried, {inner.carried[0]}};
                           },
                           {h0}, {a});
                       return r.stacked[0];
                     }()))

// --- Through conditionals and bounded while loops -------------------------
// est.if: the gradient flows through the branch that ran (both are tried).
GRADIENT_TEST(CondTrueBranch, -2, 2,
              cond(
                  greater(reduce_sum(square(a)), 0.0),
                  [&] { return std::vector<Tensor>{multiply(x, x)}; },
                  [&] { return std::vector<Tensor>{sin(x)}; })[0])
GRADIENT_TEST(CondFalseBranch, -2, 2,
              cond(
                  less(reduce_sum(square(a)), 0.0),
                  [&] { return std::vector<Tensor>{multiply(x, x)}; },
                  [&] { return std::vector<Tensor>{multiply(sin(x), a)}; })[0])
// A conditional inside a scan: per step, on the step's slice.
GRADIENT_TEST_SHAPED(
    CondInScan, -1, 1, (std::vector<int64_t>{3, 3}), ([&] {
      Tensor h0 = x.graph().constant(std::vector<double>(3, 0.5), {3});
      ScanResult r = scan(
          [&](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
            Tensor h = cond(
                greater(reduce_sum(in[0]), 0.0),
                [&] {
                  return std::vector<Tensor>{tanh(multiply(c[0], in[0]))};
                },
                [&] { return std::vector<Tensor>{add(c[0], in[0])}; })[0];
            return ScanStep{{h}, {h}};
          },
          {h0}, {x});
      return multiply(r.stacked[0], a);
    }()))
// A while loop with a run-time trip count (3 here: 2 + [sum(a^2) > 0]),
// bounded by maximum_iterations = 6, through its carried values.
GRADIENT_TEST(WhileRuntimeTripCount, -1, 1, ([&] {
                Graph &g = x.graph();
                Tensor n =
                    add(cast(greater(reduce_sum(square(a)), 0.0), DType::Int32),
                        g.constant(2, DType::Int32));
                std::vector<Tensor> out = while_loop(
                    [&](const std::vector<Tensor> &v) { return less(v[0], n); },
                    [&](const std::vector<Tensor> &v) {
                      return std::vector<Tensor>{
                          add(v[0], g.constant(1, DType::Int32)),
                          tanh(add(multiply(v[1], x), a))};
                    },
                    {g.constant(0, DType::Int32), a}, 6);
                return out[1];
              }()))

GRADIENT_TEST(Add, -2, 2, add(x, a))
GRADIENT_TEST(Sub, -2, 2, subtract(a, x))
GRADIENT_TEST(Mul, -2, 2, multiply(x, a))
GRADIENT_TEST(Div, 0.5, 2, divide(a, x))
GRADIENT_TEST(Pow, 0.5, 2, pow(x, a))
GRADIENT_TEST(Maximum, -2, 2, maximum(x, a))
GRADIENT_TEST(Minimum, -2, 2, minimum(x, a))
GRADIENT_TEST(Neg, -2, 2, negative(x))
GRADIENT_TEST(Abs, -2, 2, abs(x))
GRADIENT_TEST(Square, -2, 2, square(x))
GRADIENT_TEST(Exp, -2, 2, exp(x))
GRADIENT_TEST(Log, 0.5, 2, log(x))
GRADIENT_TEST(Sqrt, 0.5, 2, sqrt(x))
GRADIENT_TEST(Rsqrt, 0.5, 2, rsqrt(x))
GRADIENT_TEST(Tanh, -2, 2, tanh(x))
GRADIENT_TEST(Sin, -4, 4, sin(x))
GRADIENT_TEST(Cos, -4, 4, cos(x))
GRADIENT_TEST(Floor, -4, 4, add(floor(x), square(x)))
GRADIENT_TEST(CeilRoundSign, -4, 4,
              add(add(ceil(x), estc::round(x)), multiply(sign(x), square(x))))
GRADIENT_TEST(Erf, -2, 2, erf(x))
GRADIENT_TEST(Log1p, -0.5, 2, log1p(x))
GRADIENT_TEST(Expm1, -2, 2, expm1(x))
GRADIENT_TEST(LeakyRelu, -2, 2, nn::leaky_relu(x))
GRADIENT_TEST(Selu, -2, 2, nn::selu(x))
GRADIENT_TEST(Gelu, -3, 3, nn::gelu(x))
GRADIENT_TEST(GeluApproximate, -3, 3, nn::gelu(x, true))
GRADIENT_TEST(Silu, -3, 3, nn::silu(x))
GRADIENT_TEST(Softsign, -3, 3, nn::softsign(x))
GRADIENT_TEST(HardSigmoid, -4, 4, activations::hard_sigmoid(x))
GRADIENT_TEST(ClipByValue, -2, 2, clip_by_value(x, -1.0, a))
GRADIENT_TEST(L2Normalize, -2, 2, nn::l2_normalize(x, Dims{1}))
GRADIENT_TEST(MomentsMean, -2, 2, nn::moments(x, {1}, true).mean *x)
GRADIENT_TEST(MomentsVariance, -2, 2, nn::moments(x, {0, 1}).variance)
GRADIENT_TEST(LogPoissonLoss, -2, 2,
              nn::log_poisson_loss(abs(a) * 3.0, x, true))
GRADIENT_TEST(WeightedCrossEntropy, -2, 2,
              nn::weighted_cross_entropy_with_logits(sigmoid(a), x, 2.5))
GRADIENT_TEST(WeightedCrossEntropyLabels, -2, 2,
              nn::weighted_cross_entropy_with_logits(sigmoid(x), a, 0.5))
// weights x [4 classes, dim 3], inputs a [4 examples, 3]; a sampled class
// (1) is row 3's label: an accidental hit.
GRADIENT_TEST_SHAPED(
    SampledSoftmaxLoss, -1, 1, (std::vector<int64_t>{4, 3}), ([&] {
      Graph &g = x.graph();
      Tensor labels = g.constant({0, 2, 3, 1}, {4, 1}, DType::Int64);
      Tensor sampled = g.constant({1, 3}, {2}, DType::Int64);
      return nn::sampled_softmax_loss(
          x, g.constant({0.1, -0.2, 0.3, 0.0}, {4}), labels, a, 2, 4, 1,
          SampledValues{sampled, g.constant({0.5, 0.2, 0.7, 0.9}, {4, 1}),
                        g.constant({0.4, 0.6}, {2})});
    }()))
GRADIENT_TEST(Cumsum, -2, 2, cumsum(x, 1))
GRADIENT_TEST(CumsumExclusiveReverse, -2, 2, cumsum(x, 0, true, true))
GRADIENT_TEST(Cumprod, 0.5, 1.5, cumprod(x, 1))
GRADIENT_TEST(CumprodExclusive, 0.5, 1.5, cumprod(x, -1, true))
GRADIENT_TEST(CumprodReverse, -1.5, -0.5, cumprod(x, 0, false, true))
GRADIENT_TEST(Sigmoid, -2, 2, sigmoid(x))
GRADIENT_TEST(Relu, -2, 2, nn::relu(x))
GRADIENT_TEST(Elu, -2, 2, nn::elu(x))
GRADIENT_TEST(Softplus, -2, 2, nn::softplus(x))
GRADIENT_TEST(MatmulTransposeB, -2, 2, matmul(matmul(x, a, false, true), x))
GRADIENT_TEST(MatmulTransposeA, -2, 2, matmul(a, matmul(x, a, true, false)))
GRADIENT_TEST(ReduceMeanBroadcast, -2, 2,
              multiply(x, reduce_mean(x, Dims{1}, true)))
GRADIENT_TEST(ReduceMax, -2, 2, multiply(x, reduce_max(x, Dims{0}, true)))
GRADIENT_TEST(Transpose, -2, 2, matmul(transpose(x, {1, 0}), a))
GRADIENT_TEST(Reshape, -2, 2, reshape(square(reshape(x, {3, 2})), {2, 3}))
GRADIENT_TEST(Softmax, -2, 2, nn::softmax(x))
GRADIENT_TEST(LogSoftmax, -2, 2, nn::log_softmax(x))
GRADIENT_TEST(Relu6, -8, 8, nn::relu6(x))
GRADIENT_TEST(ReduceMin, -2, 2, multiply(x, reduce_min(x, Dims{0}, false)))
GRADIENT_TEST(ReduceSum, -2, 2, multiply(x, reduce_sum(x)))
GRADIENT_TEST(Select, -2, 2, where(greater(a, x), square(x), negative(x)))
GRADIENT_TEST(Cast, -2, 2,
              cast(square(cast(x, DType::Float64)), DType::Float32))
GRADIENT_TEST(Concat, -2, 2, concat({square(x), x, a}, -1))
GRADIENT_TEST(Slice, -2, 2, slice(square(x), {0, 1}, {-1, 2}))
GRADIENT_TEST(Pad, -2, 2, pad(square(x), {1, 0, 0, 2}))
GRADIENT_TEST(BroadcastTo, -2, 2,
              broadcast_to(reduce_sum(x, Dims{0}, true), {4, 3}))
GRADIENT_TEST(SqueezeExpandDims, -2, 2,
              squeeze(expand_dims(square(x), 1), Dims{1}))
GRADIENT_TEST(Gather, -2, 2,
              gather(x, a.graph().constant({1, 0, 1}, {3}, DType::Int64)))
GRADIENT_TEST(SoftmaxCrossEntropy, -2, 2,
              nn::softmax_cross_entropy_with_logits(nn::softmax(a), x))
GRADIENT_TEST(SparseSoftmaxCrossEntropy, -2, 2,
              nn::sparse_softmax_cross_entropy_with_logits(
                  a.graph().constant({2, 0}, {2}, DType::Int64), x))
// The fused row ops (layer_norm_grad, attention_softmax_grad).
GRADIENT_TEST_SHAPED(LayerNormX, -2, 2, (std::vector<int64_t>{3, 4}),
                     nn::layer_norm(multiply(x, x),
                                    x.graph().constant({0.5, -1, 2, 1.5}, {4}),
                                    x.graph().constant({0.1, 0, -0.3, 1}, {4}),
                                    -1, -1, 1e-3))
// gamma and beta from x too: every gradient of the op at once.
GRADIENT_TEST_SHAPED(LayerNormGammaBeta, -2, 2, (std::vector<int64_t>{4, 4}),
                     nn::layer_norm(add(a, x), reduce_sum(x, Dims{0}),
                                    reduce_mean(square(x), Dims{0}), 1, 1,
                                    1e-2))
// Normalized over [1, 3) with [3] parameters broadcast along dim 1.
GRADIENT_TEST_SHAPED(LayerNormBroadcastParams, -2, 2,
                     (std::vector<int64_t>{2, 2, 3}),
                     nn::layer_norm(x, reduce_sum(x, Dims{0, 1}),
                                    reduce_max(x, Dims{0, 1}), 1, 2, 1e-3))
GRADIENT_TEST(AttentionSoftmaxCausal, -2, 2,
              nn::attention_softmax(x, 0.7, /*causal=*/true))
GRADIENT_TEST(AttentionSoftmaxBoolMask, -2, 2,
              nn::attention_softmax(x, less(a, 1.0), 1.3))
// An additive mask [1, 3, 3] broadcast over logits [3, 3, 3]: its gradient
// is summed over dim 0.
GRADIENT_TEST_SHAPED(AttentionSoftmaxAdditiveMask, -2, 2,
                     (std::vector<int64_t>{3, 3}),
                     nn::attention_softmax(add(expand_dims(a, 0),
                                               expand_dims(a, 1)),
                                           expand_dims(x, 0), 0.5))
GRADIENT_TEST(SigmoidCrossEntropy, -2, 2,
              nn::sigmoid_cross_entropy_with_logits(sigmoid(a), x))
GRADIENT_TEST(ReduceProd, -2, 2, multiply(x, reduce_prod(x, Dims{1}, true)))
GRADIENT_TEST(ReduceProdAll, 0.5, 1.5, reduce_prod(x))
GRADIENT_TEST(GatherAxis1, -2, 2,
              gather(x, a.graph().constant({2, 0, 2, 1}, {2, 2}, DType::Int64),
                     1))

// Exact zeros: row 0 has one (its gradient is the product of the others,
// the others get 0), row 1 has two (all 0).
TEST(GradientCheckTest, ReduceProdZeros) {
  checkGradient([](Graph &, const Tensor &x,
                   const Tensor &) { return reduce_prod(x, Dims{1}, false); },
                -2, 2, 2e-3, {2, 3},
                [](Value &x) {
                  x.data[1] = 0.0;
                  x.data[3] = 0.0;
                  x.data[5] = 0.0;
                });
}

// Sorting: the values' gradient goes back to the selected positions
// (take_along_axis -> scatter_along_axis); x is [2, 3] or [3, 7] (the
// heapsort path needs k > 16 or the whole axis).
GRADIENT_TEST(TopK, -2, 2, top_k(multiply(x, a), 2).values)
GRADIENT_TEST(SortDescending, -2, 2, sort(square(x), -1, "DESCENDING"))
GRADIENT_TEST(SortAxis0, -2, 2, multiply(sort(x, 0), a))
GRADIENT_TEST_SHAPED(TopKAllOfLongRows, -2, 2, (Dims{2, 19}),
                     top_k(x, 18).values)
GRADIENT_TEST(ScatterAlongAxis, -2, 2,
              scatter_along_axis(square(x),
                                 a.graph().constant({2, 2, 0, 1, 0, 0}, {2, 3},
                                                    DType::Int32),
                                 multiply(x, a)))

// Resizing: bilinear and nearest, up and down, and the gradient op's own
// gradient (resize_images again).
GRADIENT_TEST_SHAPED(ResizeBilinearUp, -2, 2, (Dims{2, 3, 4, 1}),
                     image::resize(x, {5, 7}))
GRADIENT_TEST_SHAPED(ResizeBilinearDown, -2, 2, (Dims{1, 5, 4, 2}),
                     image::resize(x, {3, 2}))
GRADIENT_TEST_SHAPED(ResizeNearest, -2, 2, (Dims{2, 3, 4, 1}),
                     image::resize(x, {5, 3}, "nearest"))
GRADIENT_TEST_SHAPED(ResizeBilinearAlignCorners, -2, 2, (Dims{1, 3, 4, 2}),
                     image::resize_bilinear(x, {4, 6}, true))
GRADIENT_TEST_SHAPED(ResizeGrad, -2, 2, (Dims{1, 5, 7, 2}),
                     image::resize_grad(x, {3, 4}))

TEST(GradientCheckTest, GatherAxis2Of3) {
  checkGradient(
      [](Graph &g, const Tensor &x, const Tensor &) {
        return gather(x, g.constant({1, 1, 0}, {3}, DType::Int64), -1);
      },
      -2, 2, 2e-3, {2, 3, 2});
}

GRADIENT_TEST(ScatterAdd, -2, 2,
              scatter_add(square(x),
                          a.graph().constant({1, 0, 1}, {3}, DType::Int64),
                          concat({x, slice(x, {0, 0}, {1, 3})}, 0)))
GRADIENT_TEST(ScatterUpdate, -2, 2,
              scatter_update(square(x),
                             a.graph().constant({1}, {1}, DType::Int64),
                             multiply(slice(x, {0, 0}, {1, 3}),
                                      slice(a, {1, 0}, {1, 3}))))
// --- lib/Graph/ArrayOps.h (compositions) and est.reverse ------------------
GRADIENT_TEST(Tile, -2, 2, multiply(tile(square(x), {2, 3}), tile(a, {2, 3})))
GRADIENT_TEST(Stack, -2, 2, stack({x, square(x), a}, 1))
GRADIENT_TEST(Unstack, -2, 2, multiply(unstack(x, 1)[0], unstack(x, 1)[2]))
GRADIENT_TEST(Split, -2, 2, ([&] {
                std::vector<Tensor> p = split(x, Dims{1, -1}, 1);
                return multiply(p[0], reduce_sum(square(p[1]), Dims{1}, true));
              }()))
GRADIENT_TEST(Reverse, -2, 2, multiply(reverse(square(x), {0, -1}), a))
// x[::-1, ::-2] and x[-1, 1:]
GRADIENT_TEST(StridedSlice, -2, 2,
              concat({reshape(strided_slice(square(x), {0, 0}, {0, 0}, {-1, -2},
                                            0b11, 0b11),
                              {4}),
                      strided_slice(x, {-1, 1}, {0, 0}, {1, 1}, 0, 0b10, 0, 0,
                                    0b01)},
                     0))
GRADIENT_TEST(GatherNd, -2, 2,
              gather_nd(x, a.graph().constant({1, 2, 0, 0, 1, 2}, {3, 2},
                                              DType::Int64)))
GRADIENT_TEST(GatherNdBatchDims, -2, 2,
              gather_nd(x, a.graph().constant({2, 0}, {2, 1}, DType::Int32), 1))
GRADIENT_TEST(ScatterNd, -2, 2,
              scatter_nd(a.graph().constant({1, 2, 0, 0, 1, 2, 0, 1, 1, 1, 0,
                                             2},
                                            {6, 2}, DType::Int64),
                         reshape(square(x), {6}), {2, 3}))
Tensor ndIndices(Graph &g) {
  return g.constant({1, 2, 0, 0, 1, 2}, {3, 2}, DType::Int64);
}
Tensor ndUpdates(const Tensor &x) {
  return multiply(reshape(slice(x, {0, 0}, {1, 3}), {3}), 1.5);
}
// Without duplicates: an overwritten update gets g all the same, as in TF,
// where finite differences see none.
GRADIENT_TEST(TensorScatterNdUpdate, -2, 2,
              tensor_scatter_nd_update(square(x),
                                       a.graph().constant({1, 2, 0, 0, 1, 0},
                                                          {3, 2}, DType::Int64),
                                       ndUpdates(x)))
GRADIENT_TEST(TensorScatterNdAdd, -2, 2,
              tensor_scatter_nd_add(multiply(x, a), ndIndices(a.graph()),
                                    ndUpdates(x)))
GRADIENT_TEST(TensorScatterNdSub, -2, 2,
              tensor_scatter_nd_sub(multiply(x, a), ndIndices(a.graph()),
                                    ndUpdates(x)))
GRADIENT_TEST(TensorScatterNdMin, -2, 2,
              tensor_scatter_nd_min(multiply(x, a), ndIndices(a.graph()),
                                    ndUpdates(x)))
GRADIENT_TEST(TensorScatterNdMax, -2, 2,
              tensor_scatter_nd_max(multiply(x, a), ndIndices(a.graph()),
                                    ndUpdates(x)))
GRADIENT_TEST(EinsumMatmul, -2, 2, einsum("ij,kj->ik", {x, square(a)}))
GRADIENT_TEST(EinsumOuterAndSum, -2, 2,
              einsum("ij,k->ik", {x, reshape(a, {6})}))
GRADIENT_TEST(EinsumChain, -2, 2,
              einsum("ij,jk,kl->il",
                     {x, transpose(a, {1, 0}), multiply(x, 0.5)}))
GRADIENT_TEST_SHAPED(EinsumAttention, -1, 1, (std::vector<int64_t>{2, 3, 4}),
                     einsum("bqd,bkd->bqk", {x, square(a)}))
// The gradient of a broadcast batch dimension is summed over it: a
// [2,1,1,3] x [3,3,2] and [2,1,4,2] x b [3,2,1].
GRADIENT_TEST(MatmulBroadcastBatchA, -2, 2,
              matmul(reshape(x, {2, 1, 1, 3}),
                     reshape(concat({a, square(a), a}, 0), {3, 3, 2})))
GRADIENT_TEST(MatmulBroadcastBatchB, -2, 2,
              matmul(a.graph().constant({0.5, -1.0, 2.0, 1.5, 0.25, -0.75, 1.0,
                                         0.5, -0.5, 2.0, 1.0, -1.5, 0.75, 0.25,
                                         -2.0, 1.25},
                                        {2, 1, 4, 2}),
                     reshape(x, {3, 2, 1})))

// A gather of the trained variable on axis 0 gets a sparse gradient (rows);
// SGD scatters them.
GRADIENT_TEST(GatherSparse, -2, 2,
              gather(x, a.graph().constant({1, 0, 1, 1}, {2, 2}, DType::Int64)))
GRADIENT_TEST(GatherSparseAndDense, -2, 2,
              multiply(gather(x, a.graph().constant({1, 1}, {2}, DType::Int64)),
                       x))

GRADIENT_TEST(Dropout, -2, 2, nn::dropout(square(x), 0.5, 5))

// Segments: x [4, 3] rows into 3 segments (segment 1 empty, duplicates in
// 0 and 2); the gradient of data is gather(g, ids).
Tensor segmentIds(Graph &g) {
  return g.constant({2, 0, 2, 0}, {4}, DType::Int64);
}
Tensor threeSegments(Graph &g) {
  return g.constant({0, 0, 0}, {3}, DType::Int64);
}
#define SEGMENT_TEST(name, expr)                                               \
  TEST(GradientCheckTest, name) {                                              \
    checkGradient(                                                             \
        [](Graph &g, const Tensor &x, const Tensor &a) {                       \
          (void)a;                                                             \
          return expr;                                                         \
        },                                                                     \
        -2, 2, 2e-3, {4, 3});                                                  \
  }
SEGMENT_TEST(UnsortedSegmentSum,
             unsorted_segment_sum(multiply(x, a), segmentIds(g),
                                  threeSegments(g)))
SEGMENT_TEST(SegmentMean,
             segment_mean(square(x), segmentIds(g), threeSegments(g)))
SEGMENT_TEST(SegmentSqrtN,
             segment_sqrt_n(multiply(x, a), segmentIds(g), threeSegments(g)))

// safe_embedding_lookup_sparse: 7 ids in 4 rows (row 2 empty), duplicates,
// weights (one negative: pruned by mean and sqrtn); params the trained
// variable (a gather of its read: a sparse gradient) or a dense function
// of it (the dense gather gradient).
SparseIds lookupIds(Graph &g, bool weighted) {
  SparseIds sp{g.constant({1, 3, 1, 0, 2, 3, 3}, {7}, DType::Int64),
               g.constant({0, 0, 0, 1, 3, 3, 3}, {7}, DType::Int64),
               g.constant({3, 1, 0, 3}, {4}, DType::Int64), Tensor()};
  if (weighted)
    sp.weights =
        g.constant({0.5, 2.0, 1.0, 1.5, -1.0, 0.25, 3.0}, {7}, DType::Float32);
  return sp;
}
#define LOOKUP_TEST(name, params, weighted, combiner, maxNorm)                 \
  TEST(GradientCheckTest, name) {                                              \
    checkGradient(                                                             \
        [](Graph &g, const Tensor &x, const Tensor &a) {                       \
          (void)a;                                                             \
          return safe_embedding_lookup_sparse(params, lookupIds(g, weighted),  \
                                              combiner, maxNorm);              \
        },                                                                     \
        -2, 2, 2e-3, {4, 3});                                                  \
  }
LOOKUP_TEST(EmbeddingLookupSum, x, false, "sum", 0.0)
LOOKUP_TEST(EmbeddingLookupMean, x, false, "mean", 0.0)
LOOKUP_TEST(EmbeddingLookupSqrtn, x, false, "sqrtn", 0.0)
LOOKUP_TEST(EmbeddingLookupWeightedSum, x, true, "sum", 0.0)
LOOKUP_TEST(EmbeddingLookupWeightedMean, x, true, "mean", 0.0)
LOOKUP_TEST(EmbeddingLookupWeightedSqrtn, x, true, "sqrtn", 0.0)
LOOKUP_TEST(EmbeddingLookupMaxNorm, x, true, "mean", 1.5)
LOOKUP_TEST(EmbeddingLookupDenseParams, multiply(x, a), true, "sqrtn", 0.0)
LOOKUP_TEST(EmbeddingLookupDenseParamsMaxNorm, square(x), false, "sum", 1.0)

// Batch normalization in training: x [4, 3] normalized with the batch's
// statistics (gamma left out: the other variables are zero here).
TEST(GradientCheckTest, BatchNormalizationTraining) {
  checkGradient(
      [](Graph &, const Tensor &x, const Tensor &a) {
        return layers::batch_normalization(multiply(x, a), /*training=*/true,
                                           -1, 0.99, 1e-3, /*center=*/true,
                                           /*scale=*/false);
      },
      -2, 2, 5e-3, {4, 3});
}

// fused_batch_norm's fused gradient: dx in NHWC and (through the layer's
// fused path) NCHW; dscale and doffset with x as the parameters.
TEST(GradientCheckTest, FusedBatchNormInput) {
  checkGradient(
      [](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::fused_batch_norm(multiply(x, a), randomConstant(g, {3}, 5),
                                    randomConstant(g, {3}, 6))
            .y;
      },
      -2, 2, 5e-3, {2, 2, 3, 3});
  checkGradient(
      [](Graph &, const Tensor &x, const Tensor &a) {
        return layers::batch_normalization(multiply(x, a), /*training=*/true, 1,
                                           0.99, 1e-3);
      },
      -2, 2, 5e-3, {2, 3, 2, 2});
}

TEST(GradientCheckTest, FusedBatchNormScaleOffset) {
  checkGradient(
      [](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::fused_batch_norm(randomConstant(g, {3, 2, 2, 4}, 7),
                                    multiply(x, a), square(x), 1e-3, "NCHW")
            .y;
      },
      -2, 2, 5e-3, {2});
}

/// The gradient check of a window op at a run-time batch: the feature `a`
/// has a dynamic batch (`aShape[0] == -1`), the variable x a static shape,
/// and loss = reduce_sum(fn(x, a) * c), c of fn's shape without the batch.
/// One compiled @train is run at each of `batches` (x reset before each),
/// and x_before - x_after is checked against central differences of the
/// reference at that batch.
void checkBatchedGradient(const UnaryFn &fn, const Dims &xShape,
                          const Dims &aShape, std::vector<int64_t> batches,
                          double tolerance = 2e-3) {
  Graph graph;
  graph.set_seed(3);
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"a", DType::Float32, aShape});
  std::string lossName, featureName;
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable xv = gr.get_variable("x", DType::Float32, xShape);
               Tensor y = fn(gr, gr.read_variable(xv), f["a"]);
               EXPECT_EQ(y.shape()[0], -1) << "fn must keep the batch";
               Dims cShape = y.shape();
               cShape[0] = 1;
               Signature spec;
               spec.loss =
                   reduce_sum(multiply(y, randomConstant(gr, cShape, 99)));
               spec.train_op =
                   train::GradientDescentOptimizer(1.0).minimize(spec.loss);
               lossName = spec.loss.name();
               featureName = f["a"].name();
               return spec;
             });
  g::GraphDef def = graph.graph_def();
  // ESTC_DUMP_GRAPHS=DIR writes the graph for estc (debugging).
  if (const char *dir = std::getenv("ESTC_DUMP_GRAPHS"); dir && *dir) {
    std::string error;
    EXPECT_TRUE(g::writeGraph(
        std::string(dir) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
            ".pbtxt",
        def, error))
        << error;
  }
  std::unique_ptr<JitModel> model =
      jitCompileForTest(def, "Grad", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  int trainFn = model->function_index("train");
  ASSERT_GE(trainFn, 0);
  int xIndex = model->variable_index("x");
  int aIndex = model->input_index(trainFn, "features/a");
  ASSERT_GE(aIndex, 0);
  reference::Evaluator evaluator(def);
  std::mt19937 rng(42);
  Value x = random(xShape, rng, -2, 2);
  for (int64_t batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    Value a = random(concrete(aShape, batch), rng, -2, 2);
    model->set_batch(batch);
    store(x, model->variable_data(xIndex));
    store(a, model->input_data(trainFn, aIndex));
    model->run(trainFn);
    expectCentralDifferences(evaluator, lossName, featureName, a, x,
                             model->variable_data(xIndex), tolerance);
  }
}

/// fused_batch_norm's gradient at batches 1 and 3 of one compiled function
/// (n, the elements per channel, is a run-time value).
TEST(GradientCheckTest, FusedBatchNormAtAnyBatch) {
  checkBatchedGradient(
      [](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::fused_batch_norm(multiply(a, x), randomConstant(g, {2}, 8),
                                    randomConstant(g, {2}, 9))
            .y;
      },
      {1, 2, 3, 2}, {-1, 2, 3, 2}, {1, 3}, 5e-3);
}

/// conv2d's input gradient (x scales each example's input) and filter
/// gradient: strides 1 and 2, dilation 2, SAME and VALID, odd sizes, at
/// batches 1 and 3 of one compiled function.
TEST(GradientCheckTest, Conv2DInput) {
  struct Case {
    Dims input, filter, strides, dilations;
    const char *padding;
  };
  const Case cases[] = {
      {{-1, 5, 6, 2}, {3, 3, 2, 3}, {2, 2}, {1, 1}, "SAME"},
      {{-1, 5, 5, 2}, {3, 2, 2, 2}, {1, 1}, {1, 1}, "VALID"},
      {{-1, 7, 6, 1}, {2, 2, 1, 2}, {1, 2}, {2, 2}, "SAME"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shape::toString(c.input) + " " + c.padding);
    Dims xShape = c.input;
    xShape[0] = 1;
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          return nn::conv2d(multiply(a, x), randomConstant(g, c.filter, 5),
                            c.strides, c.padding, "NHWC", c.dilations);
        },
        xShape, c.input, {1, 3});
  }
}

TEST(GradientCheckTest, Conv2DFilter) {
  struct Case {
    Dims input, filter, strides, dilations;
    const char *padding;
  };
  const Case cases[] = {
      {{-1, 7, 6, 2}, {2, 2, 2, 3}, {1, 1}, {2, 1}, "VALID"},
      {{-1, 5, 6, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "SAME"},
      {{-1, 6, 5, 1}, {3, 2, 1, 2}, {2, 1}, {2, 2}, "SAME"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shape::toString(c.input) + " " + c.padding);
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::conv2d(a, x, c.strides, c.padding, "NHWC", c.dilations);
        },
        c.filter, c.input, {1, 3});
  }
}

TEST(GradientCheckTest, MaxPool) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::max_pool(multiply(a, x), {2, 3}, {2, 1}, padding);
        },
        {1, 5, 4, 2}, {-1, 5, 4, 2}, {1, 3});
  }
}

TEST(GradientCheckTest, AvgPool) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::avg_pool(multiply(a, x), {3, 3}, {2, 1}, padding);
        },
        {1, 5, 4, 2}, {-1, 5, 4, 2}, {1, 3});
  }
}

/// The composed convolutions and poolings (lib/Graph/Convolution.cpp): the
/// gradients of their inputs (x scales each example's input) and filters,
/// through the slices, pads and reshapes they are made of, at batches 1 and
/// 3.
TEST(GradientCheckTest, ConvolutionsInput) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          return nn::conv1d(multiply(a, x), randomConstant(g, {3, 2, 3}, 5), 2,
                            padding, "NWC", 1);
        },
        {1, 7, 2}, {-1, 7, 2}, {1, 3});
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          return nn::conv3d(multiply(a, x),
                            randomConstant(g, {2, 2, 3, 2, 2}, 5), {2, 1, 2},
                            padding, "NDHWC", {1, 1, 1});
        },
        {1, 4, 3, 5, 2}, {-1, 4, 3, 5, 2}, {1, 3});
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          return nn::depthwise_conv2d(multiply(a, x),
                                      randomConstant(g, {3, 2, 2, 2}, 5),
                                      {2, 1}, padding, "NHWC", {1, 1});
        },
        {1, 5, 4, 2}, {-1, 5, 4, 2}, {1, 3});
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          Dims out = std::string(padding) == "SAME" ? Dims{-1, 6, 5, 2}
                                                    : Dims{-1, 7, 6, 2};
          return nn::conv2d_transpose(multiply(a, x),
                                      randomConstant(g, {3, 2, 2, 3}, 5), out,
                                      {2, 2}, padding);
        },
        {1, 3, 3, 3}, {-1, 3, 3, 3}, {1, 3});
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          Dims out = std::string(padding) == "SAME" ? Dims{-1, 5, 2, 4, 2}
                                                    : Dims{-1, 6, 3, 5, 2};
          return nn::conv3d_transpose(multiply(a, x),
                                      randomConstant(g, {2, 2, 2, 2, 3}, 5),
                                      out, {2, 1, 2}, padding);
        },
        {1, 3, 2, 2, 3}, {-1, 3, 2, 2, 3}, {1, 3});
  }
}

TEST(GradientCheckTest, PoolingInput) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::max_pool3d(multiply(a, x), {2, 2, 3}, {2, 1, 2}, padding);
        },
        {1, 3, 4, 5, 2}, {-1, 3, 4, 5, 2}, {1, 3});
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::avg_pool3d(multiply(a, x), {3, 2, 2}, {2, 1, 2}, padding,
                                "NCDHW");
        },
        {1, 2, 4, 3, 5}, {-1, 2, 4, 3, 5}, {1, 3});
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::max_pool1d(multiply(a, x), 3, 2, padding, "NCW") +
                 nn::avg_pool1d(multiply(a, x), 3, 2, padding, "NCW");
        },
        {1, 2, 6}, {-1, 2, 6}, {1, 3});
  }
}

/// est.depthwise_conv2d's gradient ops, MobileNet's shapes (8 channels,
/// multiplier 1, stride 1 SAME and stride 2 VALID) and a multiplier with
/// dilations: the input and the filter gradients, at batches 1 and 3; and
/// the gradients of the two gradient ops themselves (each linear in both
/// operands).
TEST(GradientCheckTest, DepthwiseConv2dNative) {
  checkBatchedGradient(
      [&](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_native(
            multiply(a, x), randomConstant(g, {3, 3, 8, 1}, 5), {1, 1}, "SAME");
      },
      {1, 6, 5, 8}, {-1, 6, 5, 8}, {1, 3});
  checkBatchedGradient(
      [&](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_native(multiply(a, x),
                                           randomConstant(g, {3, 3, 8, 1}, 6),
                                           {2, 2}, "VALID");
      },
      {1, 7, 7, 8}, {-1, 7, 7, 8}, {1, 3});
  checkBatchedGradient(
      [&](Graph &, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_native(a, x, {2, 1}, "SAME", {1, 2});
      },
      {2, 3, 2, 3}, {-1, 5, 6, 2}, {1, 3});
  checkBatchedGradient(
      [&](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_backprop_input(
            multiply(a, x), randomConstant(g, {3, 3, 2, 2}, 7), {5, 6}, {2, 2},
            "SAME");
      },
      {1, 3, 3, 4}, {-1, 3, 3, 4}, {1, 3});
  // The filter gradient's input (x) and grad_output (x) operands.
  checkGradient(
      [&](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_backprop_filter(
            multiply(a, x), randomConstant(g, {2, 3, 3, 4}, 8), {3, 3}, {2, 2},
            "SAME");
      },
      -2.0, 2.0, 2e-3, {2, 5, 6, 2});
  checkGradient(
      [&](Graph &g, const Tensor &x, const Tensor &a) {
        return nn::depthwise_conv2d_backprop_filter(
            randomConstant(g, {2, 5, 6, 2}, 9), multiply(a, x), {3, 3}, {2, 2},
            "SAME");
      },
      -2.0, 2.0, 2e-3, {2, 3, 3, 4});
}

TEST(GradientCheckTest, ConvolutionsFilter) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::conv3d(a, x, {1, 2, 1}, padding, "NDHWC", {2, 1, 1});
        },
        {2, 2, 2, 2, 3}, {-1, 4, 4, 3, 2}, {1, 3});
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          return nn::depthwise_conv2d(a, x, {1, 1}, padding, "NCHW", {2, 1});
        },
        {2, 2, 2, 2}, {-1, 2, 5, 4}, {1, 3});
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          Dims out = std::string(padding) == "SAME" ? Dims{-1, 6, 5, 2}
                                                    : Dims{-1, 7, 6, 2};
          return nn::conv2d_transpose(a, x, out, {2, 2}, padding);
        },
        {3, 2, 2, 3}, {-1, 3, 3, 3}, {1, 3});
    checkBatchedGradient(
        [&](Graph &, const Tensor &x, const Tensor &a) {
          Dims out = std::string(padding) == "SAME" ? Dims{-1, 5, 2, 4, 2}
                                                    : Dims{-1, 6, 3, 5, 2};
          return nn::conv3d_transpose(a, x, out, {2, 1, 2}, padding);
        },
        {2, 2, 2, 2, 3}, {-1, 3, 2, 2, 3}, {1, 3});
    checkBatchedGradient(
        [&](Graph &g, const Tensor &x, const Tensor &a) {
          return nn::separable_conv2d(a, x, randomConstant(g, {1, 1, 4, 3}, 6),
                                      {1, 1}, padding);
        },
        {2, 2, 2, 2}, {-1, 4, 3, 2}, {1, 3});
  }
}

/// The seed MLP learns a separable 10-class problem: class c has the
/// features [78c, 78c + 10) raised. Weights from a seeded RNG (Glorot-like).
void expectMlpLearns(const models::MlpParams &params) {
  g::GraphDef def = models::build_mlp(1, params);
  std::unique_ptr<JitModel> model = jitCompileForTest(def, "Mlp");
  ASSERT_TRUE(model);
  JitModel &m = *model;
  int trainFn = m.function_index("train");
  ASSERT_GE(trainFn, 0) << "@train was not compiled";

  std::mt19937 rng(7);
  for (const g::VariableDef &var : def.variable()) {
    Value v;
    v.dtype = var.dtype();
    int64_t n = 1;
    for (int64_t d : var.shape().dim()) {
      v.shape.push_back(d);
      n *= d;
    }
    double scale =
        v.shape.size() == 2
            ? std::sqrt(6.0 / static_cast<double>(v.shape[0] + v.shape[1]))
            : 0.0;
    for (int64_t i = 0; i < n; ++i)
      v.data.push_back(static_cast<float>(
          std::uniform_real_distribution<double>(-scale, scale)(rng)));
    int index = m.variable_index(var.name());
    if (index >= 0)
      store(v, m.variable_data(index));
  }

  const int64_t batch = 20;
  m.set_batch(batch);
  int xIn = m.input_index(trainFn, "features/x");
  int yIn = m.input_index(trainFn, "labels");
  int lossOut = m.output_index(trainFn, "loss");
  ASSERT_GE(xIn, 0);
  ASSERT_GE(yIn, 0);
  ASSERT_GE(lossOut, 0);
  double loss = 0, first = -1;
  for (int step = 0; step < 300; ++step) {
    Value x, y;
    x.dtype = g::DT_FLOAT;
    x.shape = {batch, 784};
    y.dtype = g::DT_INT64;
    y.shape = {batch};
    for (int64_t b = 0; b < batch; ++b) {
      int64_t c = std::uniform_int_distribution<int64_t>(0, 9)(rng);
      y.data.push_back(static_cast<double>(c));
      for (int64_t j = 0; j < 784; ++j)
        x.data.push_back(
            (j >= 78 * c && j < 78 * c + 10 ? 1.0 : 0.0) +
            static_cast<float>(0.05 * std::normal_distribution<double>()(rng)));
    }
    store(x, m.input_data(trainFn, xIn));
    store(y, m.input_data(trainFn, yIn));
    m.run(trainFn);
    loss = load(g::DT_FLOAT, m.output_data(trainFn, lossOut), 0);
    if (first < 0)
      first = loss;
  }
  EXPECT_GT(first, 1.0);
  EXPECT_LT(loss, 0.05) << "first loss " << first;
}

TEST(GradientCheckTest, MlpLearns) {
  models::MlpParams params;
  params.hidden_units = {32};
  params.learning_rate = 0.01;
  expectMlpLearns(params);
}

/// The seed MLP as examples/models builds it: 784-256-256-10, Adam at 0.002.
TEST(GradientCheckTest, SeedMlpLearns) { expectMlpLearns({}); }

/// The seed ConvNet's @train (conv2d and max_pool gradients at a run-time
/// batch, dropout, Adam) compiles without a warning and runs at batches 1, 7
/// and 128 of one compiled model: a few steps on one random batch lower
/// @eval's loss (no dropout) on that batch.
TEST(GradientCheckTest, ConvNetTrainsAtAnyBatch) {
  g::GraphDef def = models::build_convnet();
  std::unique_ptr<JitModel> model =
      jitCompileForTest(def, "ConvNet", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  JitModel &m = *model;
  int trainFn = m.function_index("train");
  int evalFn = m.function_index("eval");
  int initFn = m.function_index("init");
  ASSERT_GE(trainFn, 0) << "@train was not compiled";
  ASSERT_GE(evalFn, 0);
  ASSERT_GE(initFn, 0);
  std::mt19937 rng(11);
  for (int64_t batch : {1, 7, 128}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    m.run(initFn);
    m.set_batch(batch);
    Value x, y;
    x.dtype = g::DT_FLOAT;
    x.shape = {batch, 28, 28, 1};
    y.dtype = g::DT_INT64;
    y.shape = {batch};
    for (int64_t i = 0; i < batch * 28 * 28; ++i)
      x.data.push_back(static_cast<float>(
          std::uniform_real_distribution<double>(0, 1)(rng)));
    for (int64_t i = 0; i < batch; ++i)
      y.data.push_back(static_cast<double>(
          std::uniform_int_distribution<int64_t>(0, 9)(rng)));
    auto run = [&](int fn) {
      store(x, m.input_data(fn, m.input_index(fn, "features/x")));
      store(y, m.input_data(fn, m.input_index(fn, "labels")));
      m.run(fn);
      return load(g::DT_FLOAT, m.output_data(fn, m.output_index(fn, "loss")),
                  0);
    };
    double before = run(evalFn);
    for (int step = 0; step < 5; ++step) {
      double loss = run(trainFn);
      ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    }
    double after = run(evalFn);
    EXPECT_TRUE(std::isfinite(before));
    EXPECT_LT(after, 0.97 * before) << "before " << before;
  }
}

} // namespace
} // namespace estc
