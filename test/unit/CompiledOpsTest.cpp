//===- CompiledOpsTest.cpp - Compiled code against the reference --------===//
//
// Every op, compiled by the whole pipeline (import, est, decompose, linalg,
// fusion, bufferize, memplan, llvm) and run by the JIT, against the plain
// reference evaluator (test/reference) on random data: odd sizes (1, 3, 17,
// 1000), broadcasting corner cases, NaN/Inf, and partial batches (one
// compiled function run at several batch sizes). Relative error <= 1e-5.
//
// With ESTC_DUMP_GRAPHS=DIR every graph compiled here is also written to
// DIR (`<suite>.<test>.<n>.pbtxt`): test/cuda/ops_ptx.sh compiles each of
// them for CUDA.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/Gradients.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Graph/Train.h"
#include "lib/Models/Models.h"
#include "test/reference/ReferenceEvaluator.h"
#include "test/unit/FileTesting.h"
#include "test/unit/ModelTesting.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <set>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

using Body = std::function<TensorMap(Graph &, const TensorMap &)>;

/// A predict-only graph: the features, then `body`'s predictions.
g::GraphDef predictGraph(const std::vector<Feature> &features, const Body &body,
                         int64_t seed = 7) {
  Graph graph;
  graph.set_seed(seed);
  InputSpec inputs;
  for (const Feature &f : features)
    inputs.features.push_back(TensorSpec{f.key, f.dtype, f.shape});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &g, const TensorMap &x, const Tensor &, ModeKeys) {
               Signature spec;
               spec.predictions = body(g, x);
               return spec;
             });
  return graph.graph_def();
}

/// Writes `graph` into $ESTC_DUMP_GRAPHS, when set (see the file comment).
void dumpGraph(const g::GraphDef &graph) {
  const char *dir = std::getenv("ESTC_DUMP_GRAPHS");
  if (!dir || !*dir)
    return;
  static int count = 0;
  const ::testing::TestInfo *test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = std::string(dir) + "/" + test->test_suite_name() + "." +
                     test->name() + "." + std::to_string(count++) + ".pbtxt";
  std::string error;
  EXPECT_TRUE(g::writeGraph(path, graph, error)) << error;
}

/// Compiles `graph` once and checks its predict function against the
/// reference at every batch size, with `variables` set on both sides.
void expectMatchesReference(
    const g::GraphDef &graph, const std::vector<Feature> &features,
    std::vector<int64_t> batches = {1, 3, 17}, double tolerance = 1e-5,
    const std::map<std::string, Value> &variables = {},
    const std::function<void(std::map<std::string, Value> &)> &edit = {}) {
  dumpGraph(graph);
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Test");
  if (!model)
    return;
  reference::Evaluator evaluator(graph);
  for (const auto &[name, value] : variables) {
    evaluator.variables()[name] = value;
    store(value, model->variable_data(model->variable_index(name)));
  }
  int predict = model->function_index("predict");
  std::mt19937 rng(1234);
  for (int64_t batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::map<std::string, Value> feeds;
    for (const Feature &f : features)
      feeds.emplace(f.key, randomValue(f, batch, rng));
    if (edit)
      edit(feeds);
    std::map<std::string, Value> expected = evaluator.run("predict", feeds);

    model->set_batch(batch);
    for (const auto &[key, value] : feeds)
      store(value, model->input_data(predict, model->input_index(
                                                  predict, "features/" + key)));
    model->run(predict);

    for (const auto &[key, want] : expected) {
      SCOPED_TRACE(key);
      EXPECT_TRUE(outputMatches(
          want, model->output_data(predict, model->output_index(predict, key)),
          tolerance));
    }
  }
}

/// One op over features: `expectMatchesReference` of a one-output graph.
void checkOp(const std::vector<Feature> &features,
             const std::function<Tensor(Graph &, const TensorMap &)> &op,
             std::vector<int64_t> batches = {1, 3, 17},
             double tolerance = 1e-5) {
  g::GraphDef graph = predictGraph(features, [&](Graph &g, const TensorMap &x) {
    return TensorMap{{"y", op(g, x)}};
  });
  expectMatchesReference(graph, features, batches, tolerance);
}

Tensor constant(Graph &g, const Dims &shape, uint32_t seed,
                DType dtype = DType::Float32) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> values(n);
  for (double &v : values)
    v = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  return g.constant(values, shape, dtype);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

using BinaryFn = Tensor (*)(const Operand &, const Operand &,
                            const std::string &);

TEST(CompiledOps, BinaryArithmeticWithBroadcasting) {
  const std::pair<const char *, BinaryFn> ops[] = {
      {"add", add},       {"subtract", subtract}, {"multiply", multiply},
      {"divide", divide}, {"maximum", maximum},   {"minimum", minimum},
      {"pow", estc::pow}};
  // (x shape, y shape): same shape, row vector, size-1 dims both sides,
  // scalar, rank 3 against rank 1.
  const std::pair<Dims, Dims> shapes[] = {
      {{-1, 17}, {-1, 17}}, {{-1, 17}, {17}}, {{-1, 3, 1}, {1, 4}},
      {{-1, 1}, {1, 5}},    {{-1, 3}, {}},    {{-1, 2, 3}, {3}}};
  for (auto [name, fn] : ops)
    for (const auto &[xs, ys] : shapes) {
      SCOPED_TRACE(std::string(name) + " " + shape::toString(xs) + " " +
                   shape::toString(ys));
      bool positive =
          std::string(name) == "pow" || std::string(name) == "divide";
      checkOp({{"x", DType::Float32, xs, positive ? 0.5 : -2.0, 2.0},
               {"y", DType::Float32, ys, positive ? 0.5 : -2.0, 2.0}},
              [fn = fn](Graph &, const TensorMap &x) {
                return fn(x["x"], x["y"], "");
              });
    }
}

TEST(CompiledOps, IntegerArithmetic) {
  for (DType dtype : {DType::Int32, DType::Int64}) {
    checkOp({{"x", dtype, {-1, 5}, -50, 50}, {"y", dtype, {5}, -9, 9}},
            [](Graph &, const TensorMap &x) {
              return maximum(x["x"] * x["y"] - x["y"], x["x"]);
            });
    checkOp({{"x", dtype, {-1, 5}, -50, 50}, {"y", dtype, {5}, 1, 9}},
            [](Graph &, const TensorMap &x) {
              return divide(abs(x["x"]), x["y"]);
            });
  }
}

TEST(CompiledOps, Unary) {
  using UnaryFn = Tensor (*)(const Tensor &, const std::string &);
  const std::tuple<const char *, UnaryFn, double, double> ops[] = {
      {"negative", negative, -2, 2},
      {"abs", estc::abs, -2, 2},
      {"square", square, -2, 2},
      {"exp", estc::exp, -5, 5},
      {"log", estc::log, 0.01, 5},
      {"sqrt", estc::sqrt, 0, 5},
      {"rsqrt", rsqrt, 0.01, 5},
      {"tanh", estc::tanh, -5, 5},
      {"sin", estc::sin, -7, 7},
      {"cos", estc::cos, -7, 7},
      {"floor", estc::floor, -5, 5},
      {"sigmoid", sigmoid, -9, 9},
      {"relu", nn::relu, -2, 2},
      {"relu6", nn::relu6, -9, 9},
      {"elu", nn::elu, -5, 5},
      {"softplus", nn::softplus, -30, 30},
      {"ceil", estc::ceil, -5, 5},
      {"round", estc::round, -5, 5},
      {"sign", estc::sign, -2, 2},
      {"erf", estc::erf, -4, 4},
      {"log1p", estc::log1p, -0.9, 5},
      {"expm1", estc::expm1, -5, 5},
      {"selu", nn::selu, -5, 5},
      {"softsign", nn::softsign, -5, 5},
      {"hard_sigmoid", activations::hard_sigmoid, -4, 4}};
  for (auto [name, fn, lo, hi] : ops) {
    SCOPED_TRACE(name);
    checkOp({{"x", DType::Float32, {-1, 17}, lo, hi}},
            [fn = fn](Graph &, const TensorMap &x) { return fn(x["x"], ""); });
  }
}

// round's halves go to even (multiples of 0.5 hit every case), sign keeps
// zeros; both, and round's identity, on integers.
TEST(CompiledOps, RoundSignHalvesZerosIntegers) {
  checkOp({{"x", DType::Float32, {-1, 17}, -5, 5}},
          [](Graph &, const TensorMap &x) {
            Tensor halves = estc::floor(x["x"] * 2.0) * 0.5;
            return estc::round(halves) + estc::sign(estc::floor(x["x"])) * 10.0;
          });
  for (DType dtype : {DType::Int32, DType::Int64})
    checkOp({{"i", dtype, {-1, 5}, -3, 3}}, [](Graph &, const TensorMap &x) {
      return estc::sign(x["i"]) * 10 + estc::round(x["i"]);
    });
}

// The activations with arguments, built from elementwise ops, and
// clip_by_value with number and tensor bounds.
TEST(CompiledOps, CompositeActivations) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 17}, -6, 6}};
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &in) {
    Tensor x = in["x"];
    Tensor lo = constant(g, {17}, 3); // in [-1, 1]
    return TensorMap{{"leaky_relu", nn::leaky_relu(x)},
                     {"leaky_relu_2", nn::leaky_relu(x, 2.0)},
                     {"gelu", nn::gelu(x)},
                     {"gelu_tanh", nn::gelu(x, true)},
                     {"silu", nn::silu(x)},
                     {"swish_beta", nn::swish(x, 1.5)},
                     {"clip", clip_by_value(x, -1.0, 2.0)},
                     {"clip_tensor", clip_by_value(x, lo, 1.0)},
                     {"l2_normalize", nn::l2_normalize(x, Dims{1})},
                     {"l2_normalize_all", nn::l2_normalize(x)}};
  });
  expectMatchesReference(graph, f);
}

TEST(CompiledOps, MomentsAndLosses) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 3, 5}, -2, 2},
                            {"t", DType::Float32, {-1, 3, 5}, 0, 4}};
  g::GraphDef graph = predictGraph(f, [](Graph &, const TensorMap &in) {
    Tensor x = in["x"], t = in["t"];
    nn::Moments m = nn::moments(x, {0, 2});
    nn::Moments k = nn::moments(x, {1}, true);
    return TensorMap{{"mean", m.mean},
                     {"variance", m.variance},
                     {"mean_keep", k.mean},
                     {"variance_keep", k.variance},
                     {"log_poisson", nn::log_poisson_loss(t, x)},
                     {"log_poisson_full", nn::log_poisson_loss(t, x, true)},
                     {"weighted_ce",
                      nn::weighted_cross_entropy_with_logits(
                          cast(greater(t, 2.0), DType::Float32), x * 5.0, 3.0)},
                     {"weighted_ce_tensor",
                      nn::weighted_cross_entropy_with_logits(t * 0.25, x, t)}};
  });
  expectMatchesReference(graph, f, {1, 3, 17}, 1e-5);
}

// cumsum / cumprod on every axis, exclusive and reversed, float and int,
// with a long axis (1000) and a run-time one (the batch).
TEST(CompiledOps, CumsumCumprod) {
  for (int64_t axis : {0, 1, -1})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        SCOPED_TRACE("axis " + std::to_string(axis) +
                     (exclusive ? " exclusive" : "") +
                     (reverse ? " reverse" : ""));
        checkOp({{"x", DType::Float32, {-1, 3, 4}, -2, 2}},
                [=](Graph &, const TensorMap &x) {
                  return cumsum(x["x"], axis, exclusive, reverse);
                });
        checkOp({{"x", DType::Float32, {-1, 3, 4}, 0.5, 1.5}},
                [=](Graph &, const TensorMap &x) {
                  return cumprod(x["x"], axis, exclusive, reverse);
                });
        checkOp({{"i", DType::Int64, {-1, 5}, -3, 3}}, [=](Graph &,
                                                           const TensorMap &x) {
          return cumsum(x["i"], axis == 1 ? 1 : -1, exclusive, reverse) +
                 cumprod(x["i"], 0, exclusive, reverse);
        });
      }
  checkOp({{"x", DType::Float32, {-1, 1000}, -1, 1}},
          [](Graph &, const TensorMap &x) { return cumsum(x["x"], 1); });
  checkOp({{"x", DType::Float32, {7}, -1, 1}},
          [](Graph &, const TensorMap &x) { return cumprod(x["x"], 0, true); });
}

// The log-uniform sampler (unique and not) against the reference, which
// draws the same Philox numbers, at two steps; then properties of the
// compiled samples: distinct ids in range, expected counts TF's formula of
// one number of tries. sampled_softmax_loss with its own sampler and with
// given values.
TEST(CompiledOps, CandidateSamplerAndSampledSoftmax) {
  std::vector<Feature> f = {{"labels", DType::Int64, {-1, 2}, 0, 49},
                            {"x", DType::Float32, {-1, 6}, -1, 1}};
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &in) {
    SampledValues u =
        log_uniform_candidate_sampler(in["labels"], 2, 20, true, 50, 5);
    SampledValues r =
        log_uniform_candidate_sampler(in["labels"], 2, 6, false, 50, 6);
    Tensor w = constant(g, {50, 6}, 11), b = constant(g, {50}, 12);
    Tensor given = g.constant({3, 17, 0}, {3}, DType::Int64);
    Tensor ones = g.constant(0.5, DType::Float32);
    return TensorMap{
        {"unique", u.sampled_candidates},
        {"unique_true", u.true_expected_count},
        {"unique_sampled", u.sampled_expected_count},
        {"repeats", r.sampled_candidates},
        {"repeats_true", r.true_expected_count},
        {"repeats_sampled", r.sampled_expected_count},
        {"loss", nn::sampled_softmax_loss(w, b, in["labels"], in["x"], 20, 50,
                                          2, std::nullopt, true, 7)},
        {"loss_given",
         nn::sampled_softmax_loss(
             w, b, in["labels"], in["x"], 3, 50, 2,
             SampledValues{given, ones_like(in["labels"], DType::Float32) * 0.3,
                           broadcast_to(ones, {3})})}};
  });
  for (int64_t step : {0, 41}) {
    SCOPED_TRACE("global_step " + std::to_string(step));
    expectMatchesReference(graph, f, {1, 3, 17}, 1e-5,
                           {{"global_step", Value::scalar(step, g::DT_INT64)}});
  }
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Sampler");
  ASSERT_TRUE(model);
  store(Value::scalar(5, g::DT_INT64),
        model->variable_data(model->variable_index("global_step")));
  int predict = model->function_index("predict");
  model->set_batch(3);
  std::vector<int64_t> labels = {0, 1, 2, 3, 49, 10};
  std::memcpy(model->input_data(predict,
                                model->input_index(predict, "features/labels")),
              labels.data(), labels.size() * sizeof(int64_t));
  model->run(predict);
  auto out = [&](const char *key) {
    return model->output_data(
        predict,
        model->output_index(predict, std::string("predictions/") + key));
  };
  const auto *ids = static_cast<const int64_t *>(out("unique"));
  const auto *expected = static_cast<const float *>(out("unique_sampled"));
  const auto *trueExpected = static_cast<const float *>(out("unique_true"));
  std::set<int64_t> seen(ids, ids + 20);
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_GE(*seen.begin(), 0);
  EXPECT_LT(*seen.rbegin(), 50);
  auto p = [](double c) { return std::log1p(1.0 / (c + 1)) / std::log(51.0); };
  // The number of tries from class 0's count, or 20 when p * 20 fits.
  auto countOf = [&](double c, double tries) {
    return tries == 20 ? p(c) * 20 : -std::expm1(tries * std::log1p(-p(c)));
  };
  double tries = 20;
  while (tries < 20 * 4 + 128 &&
         std::abs(countOf(ids[0], tries) - expected[0]) > 1e-5 * expected[0])
    ++tries;
  for (int k = 0; k < 20; ++k)
    EXPECT_NEAR(expected[k], countOf(ids[k], tries), 1e-5) << "sample " << k;
  for (int k = 0; k < 6; ++k)
    EXPECT_NEAR(trueExpected[k], countOf(labels[k], tries), 1e-5)
        << "label " << k;
}

// All 200 classes of range 200 are not among the 928 draws a step makes
// (class 199 has P = 0.00094): the step stops with the check's one line
// rather than return fewer classes.
TEST(CompiledOps, CandidateSamplerTooFewDistinctDraws) {
  std::vector<Feature> f = {{"labels", DType::Int64, {-1, 1}, 0, 9}};
  g::GraphDef graph = predictGraph(f, [](Graph &, const TensorMap &in) {
    return TensorMap{{"sampled", log_uniform_candidate_sampler(
                                     in["labels"], 1, 200, true, 200, 1)
                                     .sampled_candidates}};
  });
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "TooFew");
  ASSERT_TRUE(model);
  store(Value::scalar(0, g::DT_INT64),
        model->variable_data(model->variable_index("global_step")));
  int predict = model->function_index("predict");
  model->set_batch(1);
  std::vector<int64_t> labels = {3};
  std::memcpy(model->input_data(predict,
                                model->input_index(predict, "features/labels")),
              labels.data(), sizeof(int64_t));
  try {
    model->run(predict);
    ADD_FAILURE() << "expected rt::InvalidArgumentError";
  } catch (const rt::InvalidArgumentError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("distinct sampled classes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside [200, 929)"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(CompiledOps, CompareLogicSelectCast) {
  std::vector<Feature> f = {{"a", DType::Float32, {-1, 4}},
                            {"b", DType::Float32, {4}}};
  checkOp(f, [](Graph &, const TensorMap &x) { return less(x["a"], x["b"]); });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return greater_equal(x["a"], x["b"]);
  });
  checkOp(f, [](Graph &g, const TensorMap &x) {
    return logical_or(
        logical_and(less(x["a"], x["b"]), greater(x["a"], g.constant(0.0))),
        logical_not(not_equal(x["a"], x["a"])));
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return where(less_equal(x["a"], x["b"]), x["a"], x["b"] * 2.0);
  });
  checkOp({{"i", DType::Int64, {-1, 3}, -5, 5}}, [](Graph &,
                                                    const TensorMap &x) {
    return cast(equal(x["i"], cast(cast(x["i"], DType::Float32), DType::Int64)),
                DType::Float32);
  });
  checkOp({{"a", DType::Float32, {-1, 6}, -9, 9}},
          [](Graph &, const TensorMap &x) {
            return cast(x["a"], DType::Int32); // truncates toward zero
          });
}

// Number operands (TF's Python scalars) become constants of the tensor's
// dtype: the compiled values, against values computed here by hand.
TEST(CompiledOps, ScalarOperandValues) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 4}},
                            {"i", DType::Int32, {-1, 3}}};
  g::GraphDef graph = predictGraph(f, [](Graph &, const TensorMap &in) {
    Tensor x = in["x"], i = in["i"];
    return TensorMap{{"greater", greater(x, 0.5)},
                     {"less_equal", less_equal(0.5, x)},
                     {"rsub", 2.0 - x},
                     {"scaled", x * 2.0},
                     {"relu", maximum(x, 0.0)},
                     {"clip", minimum(1.0, x)},
                     {"square", pow(x, 2.0)},
                     {"where", where(less(x, 0.0), -1.0, x)},
                     {"and", logical_and(greater(x, 0.0), true)},
                     {"imul", i * 3},
                     {"isub", subtract(10, i)},
                     {"ieq", equal(i, 2)}};
  });
  dumpGraph(graph);
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Scalars");
  if (!model)
    return;
  const std::vector<float> xs = {-1.5f, 0.0f,   0.5f, 0.75f,
                                 2.0f,  -0.25f, 1.0f, 3.0f};
  const std::vector<int32_t> is = {-4, 2, 7, 0, 2, -1};
  int predict = model->function_index("predict");
  model->set_batch(2);
  std::memcpy(
      model->input_data(predict, model->input_index(predict, "features/x")),
      xs.data(), xs.size() * sizeof(float));
  std::memcpy(
      model->input_data(predict, model->input_index(predict, "features/i")),
      is.data(), is.size() * sizeof(int32_t));
  model->run(predict);

  auto expectOutput = [&](const std::string &key, g::DataType dtype, size_t n,
                          const std::function<double(size_t)> &want) {
    SCOPED_TRACE(key);
    const void *got = model->output_data(
        predict, model->output_index(predict, "predictions/" + key));
    for (size_t k = 0; k < n; ++k)
      EXPECT_EQ(load(dtype, got, k), want(k)) << "element " << k;
  };
  auto fx = [&](size_t k) { return static_cast<double>(xs[k]); };
  size_t nx = xs.size(), ni = is.size();
  expectOutput("greater", g::DT_BOOL, nx,
               [&](size_t k) { return fx(k) > 0.5; });
  expectOutput("less_equal", g::DT_BOOL, nx,
               [&](size_t k) { return 0.5 <= fx(k); });
  expectOutput("rsub", g::DT_FLOAT, nx, [&](size_t k) { return 2 - fx(k); });
  expectOutput("scaled", g::DT_FLOAT, nx, [&](size_t k) { return fx(k) * 2; });
  expectOutput("relu", g::DT_FLOAT, nx,
               [&](size_t k) { return std::max(fx(k), 0.0); });
  expectOutput("clip", g::DT_FLOAT, nx,
               [&](size_t k) { return std::min(1.0, fx(k)); });
  expectOutput("square", g::DT_FLOAT, nx,
               [&](size_t k) { return fx(k) * fx(k); });
  expectOutput("where", g::DT_FLOAT, nx,
               [&](size_t k) { return fx(k) < 0 ? -1.0 : fx(k); });
  expectOutput("and", g::DT_BOOL, nx, [&](size_t k) { return fx(k) > 0; });
  expectOutput("imul", g::DT_INT32, ni, [&](size_t k) { return is[k] * 3; });
  expectOutput("isub", g::DT_INT32, ni, [&](size_t k) { return 10 - is[k]; });
  expectOutput("ieq", g::DT_BOOL, ni, [&](size_t k) { return is[k] == 2; });
}

TEST(CompiledOps, NanAndInfPropagate) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 5}}};
  auto poison = [](std::map<std::string, Value> &feeds) {
    std::vector<double> &d = feeds.at("x").data;
    d[0] = std::nan("");
    if (d.size() > 2) {
      d[1] = std::numeric_limits<double>::infinity();
      d[2] = -std::numeric_limits<double>::infinity();
    }
  };
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &x) {
    return TensorMap{{"relu", nn::relu(x["x"])},
                     {"max", maximum(x["x"], g.constant(0.5))},
                     {"sum", reduce_sum(x["x"], Dims{1})},
                     {"rmax", reduce_max(x["x"], Dims{1})},
                     {"exp", estc::exp(x["x"])},
                     {"mul", x["x"] * 2.0}};
  });
  expectMatchesReference(graph, f, {1, 3}, 1e-5, {}, poison);
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling
//===----------------------------------------------------------------------===//

TEST(CompiledOps, Matmul) {
  checkOp({{"x", DType::Float32, {-1, 17}}}, [](Graph &g, const TensorMap &x) {
    return matmul(x["x"], constant(g, {17, 3}, 1));
  });
  checkOp({{"x", DType::Float32, {-1, 17}}}, [](Graph &g, const TensorMap &x) {
    return matmul(x["x"], constant(g, {5, 17}, 2), false, true);
  });
  // A 1000-term dot product of mixed signs accumulated in f32: the error is
  // relative to the sum of |terms| (~250 here), not to the (cancelled)
  // result, so the bound is looser than for the other cases.
  checkOp(
      {{"x", DType::Float32, {-1, 1000}}},
      [](Graph &g, const TensorMap &x) {
        return matmul(x["x"], constant(g, {1000, 1}, 3));
      },
      {1, 3, 17}, 1e-4);
  // Batched: [?, 3, 17] x [17, 5] and [?, 2, 3] x [?, 3, 4].
  checkOp({{"x", DType::Float32, {-1, 3, 17}}},
          [](Graph &g, const TensorMap &x) {
            return matmul(x["x"], constant(g, {17, 5}, 4));
          });
  checkOp(
      {{"a", DType::Float32, {-1, 2, 3}}, {"b", DType::Float32, {-1, 3, 4}}},
      [](Graph &, const TensorMap &x) { return matmul(x["a"], x["b"]); });
  checkOp(
      {{"a", DType::Float32, {-1, 3, 2}}, {"b", DType::Float32, {-1, 4, 3}}},
      [](Graph &, const TensorMap &x) {
        return matmul(x["a"], x["b"], true, true);
      });
}

// Products small in their static dimensions are vector code in the step
// (est-inline-small-matmuls), not kernel calls: the rows form ([?, K] x
// [K, N], B transposed or not), the columns form
// (x^T y summed over a dynamic batch: a weight gradient), the fused
// epilogues (bias, relu, relu6) and widths of whole 8-lane vectors, an
// exact rest (1, 2) and a masked one (3, 7).
TEST(CompiledOps, SmallMatmulsInlined) {
  for (int64_t n : {1, 3, 7, 8, 10, 17}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    checkOp({{"x", DType::Float32, {-1, 4}}},
            [n](Graph &g, const TensorMap &x) {
              return matmul(x["x"], constant(g, {4, n}, 11));
            });
    checkOp({{"x", DType::Float32, {-1, 10}}},
            [n](Graph &g, const TensorMap &x) {
              return matmul(x["x"], constant(g, {n, 10}, 12), false, true);
            });
    // The columns form: [4, ?] x [?, n].
    checkOp({{"x", DType::Float32, {-1, 4}}, {"y", DType::Float32, {-1, n}}},
            [](Graph &, const TensorMap &x) {
              return matmul(x["x"], x["y"], true, false);
            });
  }
  // Fused epilogues: bias, then relu or relu6.
  checkOp({{"x", DType::Float32, {-1, 4}}}, [](Graph &g, const TensorMap &x) {
    return nn::relu(
        add(matmul(x["x"], constant(g, {4, 10}, 14)), constant(g, {10}, 15)));
  });
  checkOp({{"x", DType::Float32, {-1, 4}}}, [](Graph &g, const TensorMap &x) {
    return nn::relu6(multiply(
        add(matmul(x["x"], constant(g, {4, 9}, 16)), constant(g, {9}, 17)),
        8.0));
  });
  checkOp({{"x", DType::Float32, {-1, 3}}}, [](Graph &g, const TensorMap &x) {
    return nn::relu6(
        add(matmul(x["x"], constant(g, {3, 5}, 18)), constant(g, {5}, 19)));
  });
}

TEST(CompiledOps, Conv2D) {
  struct Case {
    Dims input, filter, strides, dilations;
    const char *padding;
  };
  const Case cases[] = {
      {{-1, 9, 9, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "SAME"},
      {{-1, 9, 9, 3}, {3, 3, 3, 4}, {2, 2}, {1, 1}, "SAME"},
      {{-1, 10, 7, 2}, {3, 2, 2, 5}, {2, 1}, {1, 1}, "VALID"},
      {{-1, 9, 9, 1}, {3, 3, 1, 2}, {1, 1}, {2, 2}, "VALID"},
      {{-1, 28, 28, 1}, {5, 5, 1, 20}, {1, 1}, {1, 1}, "VALID"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shape::toString(c.input) + " " + shape::toString(c.filter) +
                 " " + c.padding);
    checkOp({{"x", DType::Float32, c.input}},
            [&](Graph &g, const TensorMap &x) {
              return nn::conv2d(x["x"], constant(g, c.filter, 5), c.strides,
                                c.padding, "NHWC", c.dilations);
            },
            {1, 3});
  }
}

TEST(CompiledOps, Pooling) {
  for (const char *padding : {"SAME", "VALID"})
    for (Dims strides : {Dims{2, 2}, Dims{1, 1}}) {
      SCOPED_TRACE(std::string(padding) + " " + shape::toString(strides));
      checkOp({{"x", DType::Float32, {-1, 7, 5, 3}}},
              [&](Graph &, const TensorMap &x) {
                return nn::max_pool(x["x"], {2, 3}, strides, padding);
              },
              {1, 3});
      checkOp({{"x", DType::Float32, {-1, 7, 5, 3}}},
              [&](Graph &, const TensorMap &x) {
                return nn::avg_pool(x["x"], {3, 2}, strides, padding);
              },
              {1, 3});
    }
}

/// The gradients of conv2d: f32 runs the runtime kernels, f64 the linalg
/// loops; strides, dilations, SAME/VALID, odd sizes.
TEST(CompiledOps, Conv2DBackprop) {
  struct Case {
    Dims input, filter, strides, dilations;
    const char *padding;
  };
  const Case cases[] = {
      {{-1, 9, 9, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "SAME"},
      {{-1, 9, 8, 3}, {3, 3, 3, 4}, {2, 2}, {1, 1}, "SAME"},
      {{-1, 10, 7, 2}, {3, 2, 2, 5}, {2, 1}, {1, 1}, "VALID"},
      {{-1, 9, 9, 1}, {3, 3, 1, 2}, {1, 1}, {2, 2}, "VALID"},
      {{-1, 7, 6, 2}, {2, 3, 2, 3}, {3, 2}, {2, 1}, "SAME"},
  };
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const Case &c : cases) {
      SCOPED_TRACE(to_string(dtype) + " " + shape::toString(c.input) + " " +
                   shape::toString(c.filter) + " " + c.padding);
      Dims out = *shape::conv2d(c.input, c.filter, c.strides, c.dilations,
                                *shape::parsePadding(c.padding));
      Dims inputSize = {c.input[1], c.input[2]};
      Dims filterSize = {c.filter[0], c.filter[1]};
      checkOp({{"dy", dtype, out}},
              [&](Graph &g, const TensorMap &x) {
                return nn::conv2d_backprop_input(
                    x["dy"], constant(g, c.filter, 5, dtype), inputSize,
                    c.strides, c.padding, c.dilations);
              },
              {1, 3});
      checkOp(
          {{"x", dtype, c.input}, {"dy", dtype, out}},
          [&](Graph &, const TensorMap &x) {
            return nn::conv2d_backprop_filter(
                x["x"], x["dy"], filterSize, c.strides, c.padding, c.dilations);
          },
          {1, 3}, 1e-4);
    }
}

/// The gradients of pooling. max_pool_grad's inputs have ties (max(x, 0.5)),
/// which go to the first maximum of the window.
TEST(CompiledOps, PoolingGradients) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const char *padding : {"SAME", "VALID"})
      for (Dims strides : {Dims{2, 2}, Dims{1, 1}, Dims{3, 1}}) {
        SCOPED_TRACE(to_string(dtype) + " " + padding + " " +
                     shape::toString(strides));
        Dims input = {-1, 7, 5, 3};
        shape::Padding pad = *shape::parsePadding(padding);
        Dims maxOut = *shape::pool2d(input, {2, 3}, strides, pad);
        checkOp(
            {{"x", dtype, input}, {"dy", dtype, maxOut}},
            [&](Graph &, const TensorMap &x) {
              Tensor ties =
                  maximum(x["x"], x["x"].graph().constant({0.5}, {}, dtype));
              return nn::max_pool_grad(ties, x["dy"], {2, 3}, strides, padding);
            },
            {1, 3});
        Dims avgOut = *shape::pool2d(input, {3, 2}, strides, pad);
        checkOp({{"dy", dtype, avgOut}},
                [&](Graph &, const TensorMap &x) {
                  return nn::avg_pool_grad(x["dy"], {7, 5}, {3, 2}, strides,
                                           padding);
                },
                {1, 3});
      }
}

//===----------------------------------------------------------------------===//
// The convolutions and poolings built from conv2d (lib/Graph/Convolution.cpp)
//===----------------------------------------------------------------------===//

/// conv1d, conv3d, conv2d_transpose, depthwise and separable convolutions,
/// the 1-D and 3-D poolings and NCHW: compiled against the reference, with
/// strides, dilations, SAME and VALID, at two batch sizes.
TEST(CompiledOps, Convolutions) {
  for (const char *padding : {"SAME", "VALID"}) {
    SCOPED_TRACE(padding);
    checkOp({{"x", DType::Float32, {-1, 11, 3}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::conv1d(x["x"], constant(g, {3, 3, 4}, 5), 2, padding,
                                "NWC", 1) +
                     nn::conv1d(x["x"], constant(g, {2, 3, 4}, 6), 2, padding,
                                "NWC", 2);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 5, 6, 7, 2}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::conv3d(x["x"], constant(g, {2, 3, 2, 2, 3}, 5),
                                {2, 1, 2}, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 7, 5, 6, 2}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::conv3d(x["x"], constant(g, {2, 2, 2, 2, 3}, 5),
                                {1, 1, 1}, padding, "NDHWC", {2, 1, 2});
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 7, 6, 3}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d(x["x"], constant(g, {3, 2, 3, 2}, 5),
                                          {2, 1}, padding);
            },
            {1, 3});
    // MobileNet's depthwise convolutions: 16 channels, multiplier 1 (the
    // runtime kernels' unit-stride path), stride 1 and 2; and a multiplier.
    checkOp({{"x", DType::Float32, {-1, 9, 8, 16}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d_native(x["x"],
                                                 constant(g, {3, 3, 16, 1}, 7),
                                                 {1, 1}, padding) +
                     nn::depthwise_conv2d_native(x["x"],
                                                 constant(g, {3, 3, 16, 1}, 8),
                                                 {1, 1}, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 9, 8, 16}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d_native(
                  x["x"], constant(g, {3, 3, 16, 1}, 9), {2, 2}, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 6, 5, 4}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d_native(x["x"],
                                                 constant(g, {2, 3, 4, 3}, 10),
                                                 {2, 1}, padding, {1, 2});
            },
            {1, 3});
    // Its gradient ops as ops of their own (the f32 kernels against the
    // reference): the input gradient of a stride-2 forward, the filter
    // gradient (a constant grad_output of the forward's shape).
    bool same = std::string(padding) == "SAME";
    checkOp({{"x", DType::Float32, {-1, same ? 5 : 4, same ? 4 : 3, 32}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d_backprop_input(
                  x["x"], constant(g, {3, 3, 32, 1}, 11), {9, 8}, {2, 2},
                  padding);
            },
            {1, 3});
    // Stride 1 with few channels: the kernels' tap-by-tap rows (dilated).
    checkOp({{"x", DType::Float32, {-1, same ? 9 : 7, same ? 8 : 4, 16}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::depthwise_conv2d_backprop_input(
                  x["x"], constant(g, {3, 3, 16, 1}, 13), {9, 8}, {1, 1},
                  padding, {1, 2});
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 9, 8, 16}}},
            [&](Graph &g, const TensorMap &x) {
              Tensor y = nn::depthwise_conv2d_native(
                  x["x"], constant(g, {3, 3, 16, 2}, 12), {2, 2}, padding);
              Tensor dw = nn::depthwise_conv2d_backprop_filter(
                  x["x"], y, {3, 3}, {2, 2}, padding);
              // [3, 3, 16, 2] to a batch-major result: the filter gradient
              // times each example's mean of y.
              return multiply(reshape(dw, {1, 3 * 3 * 32}),
                              reshape(reduce_mean(y, Dims{1, 2, 3}), {-1, 1}));
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 7, 6, 3}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::separable_conv2d(x["x"], constant(g, {3, 3, 3, 1}, 5),
                                          constant(g, {1, 1, 3, 4}, 6), {1, 1},
                                          padding, "NHWC", {2, 1});
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 4, 3, 5}}},
            [&](Graph &g, const TensorMap &x) {
              Dims out = std::string(padding) == "SAME" ? Dims{-1, 8, 6, 2}
                                                        : Dims{-1, 9, 7, 2};
              return nn::conv2d_transpose(x["x"], constant(g, {3, 3, 2, 5}, 5),
                                          out, {2, 2}, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 3, 2, 3, 4}}},
            [&](Graph &g, const TensorMap &x) {
              Dims out = std::string(padding) == "SAME" ? Dims{-1, 6, 4, 5, 2}
                                                        : Dims{-1, 7, 4, 7, 2};
              return nn::conv3d_transpose(x["x"],
                                          constant(g, {3, 2, 3, 2, 4}, 5), out,
                                          {2, 2, 2}, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 3, 7, 6}}},
            [&](Graph &g, const TensorMap &x) {
              return nn::conv2d(x["x"], constant(g, {3, 2, 3, 4}, 5), {2, 1},
                                padding, "NCHW");
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 3, 7, 6}}},
            [&](Graph &, const TensorMap &x) {
              return nn::max_pool(x["x"], {2, 3}, {2, 1}, padding, "NCHW") +
                     nn::avg_pool(x["x"], {2, 3}, {2, 1}, padding, "NCHW");
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 9, 3}}},
            [&](Graph &, const TensorMap &x) {
              return nn::max_pool1d(x["x"], 3, 2, padding) -
                     nn::avg_pool1d(x["x"], 3, 2, padding);
            },
            {1, 3});
    checkOp({{"x", DType::Float32, {-1, 5, 6, 5, 2}}},
            [&](Graph &, const TensorMap &x) {
              return nn::max_pool3d(x["x"], {3, 2, 2}, {2, 2, 1}, padding) -
                     nn::avg_pool3d(x["x"], {3, 2, 2}, {2, 2, 1}, padding);
            },
            {1, 3});
  }
}

/// The convolution and pooling layers (random weights), channels-last and
/// channels-first, compiled against the reference.
TEST(CompiledOps, ConvolutionLayers) {
  std::vector<Feature> f = {{"x1", DType::Float32, {-1, 10, 3}},
                            {"x3", DType::Float32, {-1, 4, 6, 6, 2}},
                            {"img", DType::Float32, {-1, 5, 5, 3}},
                            {"imgT", DType::Float32, {-1, 3, 5, 5}}};
  g::GraphDef graph = predictGraph(f, [](Graph &, const TensorMap &x) {
    Tensor c1 = layers::conv1d(x["x1"], 4, 3, 1, "same", nn::relu);
    Tensor s1 = layers::separable_conv1d(x["x1"], 6, 3, 2, "valid", 2);
    Tensor c3 = layers::conv3d(x["x3"], 3, {2, 3, 3}, {1, 1, 1}, "same");
    Tensor t3 = layers::conv3d_transpose(c3, 2, {2, 3, 3}, {2, 1, 2});
    Tensor t2 = layers::conv2d_transpose(
        x["img"], 4, {3, 3}, {2, 2}, "same", nullptr, true,
        glorot_uniform_initializer(), zeros_initializer(), {1, 1});
    Tensor d = layers::depthwise_conv2d(x["img"], {3, 3}, {1, 1}, "valid", 2);
    Tensor s2 = layers::separable_conv2d(x["img"], 5, {3, 3}, {1, 1}, "same");
    Tensor cT = layers::conv2d(x["imgT"], 4, {3, 3}, {1, 1}, "same", nn::relu,
                               true, glorot_uniform_initializer(),
                               glorot_uniform_initializer(), {1, 1}, "",
                               "channels_first");
    Tensor dT = layers::depthwise_conv2d(
        x["imgT"], {2, 2}, {1, 1}, "same", 1, nullptr, true,
        glorot_uniform_initializer(), glorot_uniform_initializer(), {1, 1}, "",
        "channels_first");
    Tensor tT = layers::conv2d_transpose(
        x["imgT"], 2, {3, 3}, {2, 2}, "valid", nullptr, true,
        glorot_uniform_initializer(), glorot_uniform_initializer(), {}, {1, 1},
        "", "channels_first");
    return TensorMap{
        {"c1", layers::max_pooling1d(c1, 2, 2)},
        {"s1", layers::average_pooling1d(s1, 2, 1, "same")},
        {"c3", layers::max_pooling3d(c3, {2, 2, 2}, {2, 2, 2})},
        {"t3", layers::average_pooling3d(t3, {2, 2, 2}, {1, 2, 2}, "same")},
        {"t2", t2},
        {"d", d},
        {"s2", s2},
        {"cT",
         layers::max_pooling2d(cT, {2, 2}, {2, 2}, "same", "channels_first")},
        {"dT", layers::average_pooling2d(dT, {2, 2}, {1, 1}, "valid",
                                         "channels_first")},
        {"tT", tT}};
  });
  expectMatchesReference(graph, f, {1, 3}, 1e-5, randomVariables(graph));
}

/// Direct loops of TF's definitions, against the reference evaluator's
/// value of the composed graphs (an independent check of their meaning).
struct Window {
  Dims size, strides, dilations;
  bool same;
};

/// For every output position `o` (rank-3, [d, h, w]) of `window` over an
/// `in`-sized input and each tap `t`, calls f(o, t, i) with the input
/// position i, when it is inside the input.
template <typename F> Dims forEachTap(const Dims &in, const Window &w, F f) {
  Dims out(3), pad(3);
  for (int i = 0; i < 3; ++i) {
    out[i] = shape::convOutputSize(
        in[i], w.size[i], w.strides[i], w.dilations[i],
        w.same ? shape::Padding::Same : shape::Padding::Valid);
    pad[i] = shape::convPadBefore(
        in[i], w.size[i], w.strides[i], w.dilations[i],
        w.same ? shape::Padding::Same : shape::Padding::Valid);
  }
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t c = 0; c < out[2]; ++c)
        for (int64_t i = 0; i < w.size[0]; ++i)
          for (int64_t j = 0; j < w.size[1]; ++j)
            for (int64_t k = 0; k < w.size[2]; ++k) {
              Dims p = {a * w.strides[0] + i * w.dilations[0] - pad[0],
                        b * w.strides[1] + j * w.dilations[1] - pad[1],
                        c * w.strides[2] + k * w.dilations[2] - pad[2]};
              bool inside = true;
              for (int d = 0; d < 3; ++d)
                inside = inside && p[d] >= 0 && p[d] < in[d];
              if (inside)
                f(Dims{a, b, c}, Dims{i, j, k}, p);
            }
  return out;
}

int64_t flat(const Dims &shape, const Dims &index) {
  int64_t r = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    r = r * shape[i] + index[i];
  return r;
}

std::vector<double> randomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (double &x : v)
    x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  return v;
}

/// The reference's value of `op(x)` for x [2, D, H, W, C] (NDHWC: a rank-4
/// op gets [2, H, W, C], D == 1).
Value evaluate(const Dims &xShape, const std::vector<double> &x,
               const std::function<Tensor(Graph &, const Tensor &)> &op) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, xShape});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &, ModeKeys) {
               Signature spec;
               spec.predictions = {{"y", op(g, f["x"])}};
               return spec;
             });
  reference::Evaluator evaluator(graph.graph_def());
  Value xv(g::DT_FLOAT, xShape, x);
  return evaluator.run("predict", {{"x", xv}})["predictions/y"];
}

void expectValues(const Value &got, const Dims &shape,
                  const std::vector<double> &want) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data[i], want[i], 1e-5) << "element " << i;
}

TEST(CompiledOps, ConvolutionsMatchDirectLoops) {
  const int64_t n = 2, c = 2;
  for (bool same : {true, false}) {
    SCOPED_TRACE(same ? "SAME" : "VALID");
    const char *padding = same ? "SAME" : "VALID";
    // conv3d: [2, 5, 6, 4, 2] * [2, 3, 2, 2, 3], strides [2, 1, 2],
    // dilations [1, 2, 1].
    {
      Dims in = {5, 6, 4}, xs = {n, 5, 6, 4, c}, fs = {2, 3, 2, c, 3};
      Window w{{2, 3, 2}, {2, 1, 2}, {1, 2, 1}, same};
      auto x = randomValues(n * 5 * 6 * 4 * c, 1);
      auto f = randomValues(2 * 3 * 2 * c * 3, 2);
      Dims out =
          forEachTap(in, w, [](const Dims &, const Dims &, const Dims &) {});
      Dims ys = {n, out[0], out[1], out[2], 3};
      std::vector<double> y(n * out[0] * out[1] * out[2] * 3);
      for (int64_t b = 0; b < n; ++b)
        forEachTap(in, w, [&](const Dims &o, const Dims &t, const Dims &p) {
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t co = 0; co < 3; ++co)
              y[flat(ys, {b, o[0], o[1], o[2], co})] +=
                  x[flat(xs, {b, p[0], p[1], p[2], ci})] *
                  f[flat(fs, {t[0], t[1], t[2], ci, co})];
        });
      expectValues(evaluate(xs, x,
                            [&](Graph &g, const Tensor &t) {
                              return nn::conv3d(t, g.constant(f, fs), w.strides,
                                                padding, "NDHWC", w.dilations);
                            }),
                   ys, y);
    }
    // depthwise_conv2d with multiplier 2: [2, 7, 6, 2] * [3, 2, 2, 2].
    {
      Dims in = {1, 7, 6}, xs = {n, 7, 6, c}, fs = {3, 2, c, 2};
      Window w{{1, 3, 2}, {1, 2, 1}, {1, 1, 2}, same};
      auto x = randomValues(n * 7 * 6 * c, 3);
      auto f = randomValues(3 * 2 * c * 2, 4);
      Dims out =
          forEachTap(in, w, [](const Dims &, const Dims &, const Dims &) {});
      Dims ys = {n, out[1], out[2], c * 2};
      std::vector<double> y(n * out[1] * out[2] * c * 2);
      for (int64_t b = 0; b < n; ++b)
        forEachTap(in, w, [&](const Dims &o, const Dims &t, const Dims &p) {
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t m = 0; m < 2; ++m)
              y[flat(ys, {b, o[1], o[2], ci * 2 + m})] +=
                  x[flat(xs, {b, p[1], p[2], ci})] *
                  f[flat(fs, {t[1], t[2], ci, m})];
        });
      expectValues(evaluate(xs, x,
                            [&](Graph &g, const Tensor &t) {
                              return nn::depthwise_conv2d(t, g.constant(f, fs),
                                                          {2, 1}, padding,
                                                          "NHWC", {1, 2});
                            }),
                   ys, y);
    }
    // max_pool3d and avg_pool3d (TF's SAME divisor: valid elements only).
    for (bool max : {true, false}) {
      SCOPED_TRACE(max ? "max_pool3d" : "avg_pool3d");
      Dims in = {5, 4, 6}, xs = {n, 5, 4, 6, c};
      Window w{{3, 2, 3}, {2, 1, 2}, {1, 1, 1}, same};
      auto x = randomValues(n * 5 * 4 * 6 * c, 5);
      Dims out =
          forEachTap(in, w, [](const Dims &, const Dims &, const Dims &) {});
      Dims ys = {n, out[0], out[1], out[2], c};
      std::vector<double> y(n * out[0] * out[1] * out[2] * c,
                            max ? -1e30 : 0.0),
          count(y.size(), 0.0);
      for (int64_t b = 0; b < n; ++b)
        forEachTap(in, w, [&](const Dims &o, const Dims &, const Dims &p) {
          for (int64_t ci = 0; ci < c; ++ci) {
            int64_t i = flat(ys, {b, o[0], o[1], o[2], ci});
            double v = x[flat(xs, {b, p[0], p[1], p[2], ci})];
            y[i] = max ? std::max(y[i], v) : y[i] + v;
            count[i] += 1;
          }
        });
      if (!max)
        for (size_t i = 0; i < y.size(); ++i)
          y[i] /= count[i];
      expectValues(
          evaluate(xs, x,
                   [&](Graph &, const Tensor &t) {
                     return max ? nn::max_pool3d(t, w.size, w.strides, padding)
                                : nn::avg_pool3d(t, w.size, w.strides, padding);
                   }),
          ys, y);
    }
    // conv3d_transpose: each input voxel scattered through the filter.
    {
      Dims outDHW = same ? Dims{5, 4, 7} : Dims{6, 5, 7};
      Window w{{2, 3, 3}, {2, 1, 2}, {1, 1, 1}, same};
      Dims in = forEachTap(outDHW, w,
                           [](const Dims &, const Dims &, const Dims &) {});
      Dims xs = {n, in[0], in[1], in[2], 3}, fs = {2, 3, 3, c, 3};
      auto x = randomValues(n * in[0] * in[1] * in[2] * 3, 8);
      auto f = randomValues(2 * 3 * 3 * c * 3, 9);
      Dims ys = {n, outDHW[0], outDHW[1], outDHW[2], c};
      std::vector<double> y(n * outDHW[0] * outDHW[1] * outDHW[2] * c);
      for (int64_t b = 0; b < n; ++b)
        forEachTap(outDHW, w, [&](const Dims &o, const Dims &t, const Dims &p) {
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t co = 0; co < 3; ++co)
              y[flat(ys, {b, p[0], p[1], p[2], ci})] +=
                  x[flat(xs, {b, o[0], o[1], o[2], co})] *
                  f[flat(fs, {t[0], t[1], t[2], ci, co})];
        });
      expectValues(evaluate(xs, x,
                            [&](Graph &g, const Tensor &t) {
                              return nn::conv3d_transpose(
                                  t, g.constant(f, fs),
                                  {n, outDHW[0], outDHW[1], outDHW[2], c},
                                  w.strides, padding);
                            }),
                   ys, y);
    }
    // conv2d_transpose: each input pixel scattered through the filter.
    {
      Dims outHW = same ? Dims{1, 8, 7} : Dims{1, 9, 7};
      Window w{{1, 3, 3}, {1, 2, 2}, {1, 1, 1}, same};
      Dims dyShape =
          forEachTap(outHW, w, [](const Dims &, const Dims &, const Dims &) {});
      Dims xs = {n, dyShape[1], dyShape[2], 4}, fs = {3, 3, c, 4};
      auto x = randomValues(n * dyShape[1] * dyShape[2] * 4, 6);
      auto f = randomValues(3 * 3 * c * 4, 7);
      Dims ys = {n, outHW[1], outHW[2], c};
      std::vector<double> y(n * outHW[1] * outHW[2] * c);
      for (int64_t b = 0; b < n; ++b)
        forEachTap(outHW, w, [&](const Dims &o, const Dims &t, const Dims &p) {
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t co = 0; co < 4; ++co)
              y[flat(ys, {b, p[1], p[2], ci})] +=
                  x[flat(xs, {b, o[1], o[2], co})] *
                  f[flat(fs, {t[1], t[2], ci, co})];
        });
      expectValues(evaluate(xs, x,
                            [&](Graph &g, const Tensor &t) {
                              return nn::conv2d_transpose(
                                  t, g.constant(f, fs),
                                  {n, outHW[1], outHW[2], c}, {2, 2}, padding);
                            }),
                   ys, y);
    }
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(CompiledOps, Reductions) {
  using ReduceFn = Tensor (*)(const Tensor &, std::optional<Dims>, bool,
                              const std::string &);
  const std::pair<const char *, ReduceFn> ops[] = {{"sum", reduce_sum},
                                                   {"mean", reduce_mean},
                                                   {"max", reduce_max},
                                                   {"min", reduce_min},
                                                   {"prod", reduce_prod}};
  const std::optional<Dims> axes[] = {Dims{1}, Dims{-1}, Dims{0, 2},
                                      std::nullopt, Dims{}};
  for (auto [name, fn] : ops)
    for (const std::optional<Dims> &a : axes)
      for (bool keep : {false, true}) {
        SCOPED_TRACE(std::string(name) + " " +
                     (a ? shape::toString(*a) : std::string("all")) +
                     (keep ? " keep_dims" : ""));
        checkOp({{"x", DType::Float32, {-1, 3, 4}, 0.5, 1.5}},
                [&, fn = fn](Graph &, const TensorMap &x) {
                  return fn(x["x"], a, keep, "");
                });
      }
  checkOp({{"x", DType::Float32, {-1, 1000}}}, [](Graph &, const TensorMap &x) {
    return reduce_sum(x["x"], Dims{1});
  });
}

TEST(CompiledOps, ArgMaxArgMin) {
  for (int64_t axis : {0, 1, -1}) {
    checkOp({{"x", DType::Float32, {-1, 7}}},
            [=](Graph &, const TensorMap &x) { return argmax(x["x"], axis); });
    checkOp({{"x", DType::Int32, {-1, 7}, 0, 3}}, // ties: the first index
            [=](Graph &, const TensorMap &x) {
              return argmin(x["x"], axis, DType::Int32);
            });
  }
}

//===----------------------------------------------------------------------===//
// Shapes and indexing
//===----------------------------------------------------------------------===//

TEST(CompiledOps, ShapeOps) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 3, 4}}};
  checkOp(
      f, [](Graph &, const TensorMap &x) { return reshape(x["x"], {-1, 12}); });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return reshape(x["x"], {-1, 2, 6});
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return transpose(x["x"], {0, 2, 1});
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return concat({x["x"], x["x"] * 2.0, x["x"]}, 2);
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return slice(x["x"], {0, 1, 1}, {-1, 2, 3});
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return pad(x["x"], {0, 0, 1, 2, 0, 3}, 0.5);
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return expand_dims(x["x"], 1) + squeeze(expand_dims(x["x"], 1), Dims{1});
  });
  checkOp(
      {{"x", DType::Float32, {-1, 1, 4, 1}}},
      [](Graph &, const TensorMap &x) { return squeeze(x["x"], Dims{1, 3}); });
  checkOp({{"x", DType::Float32, {-1, 3}}}, [](Graph &g, const TensorMap &x) {
    return x["x"] + broadcast_to(constant(g, {3}, 9), {2, 1, 3});
  });
}

/// lib/Graph/ArrayOps.h over a run-time batch: tile and reverse along it,
/// shape_of / size giving its run-time value, strided_slice with each mask.
TEST(CompiledOps, ArrayOps) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 3, 4}}};
  g::GraphDef graph = predictGraph(f, [&](Graph &g, const TensorMap &in) {
    Tensor x = in["x"];
    return TensorMap{
        {"tile", tile(x, {1, 2, 3})},
        {"stack", stack({x, x * 2.0}, 1)},
        {"unstack", unstack(x, 2)[3]},
        {"split", split(x, Dims{1, -1}, 1)[1]},
        {"range",
         x * cast(range(g, 0, 2, 0.5, DType::Float64), DType::Float32)},
        {"shape", shape_of(x)},
        {"size", size(x, DType::Int64)},
        {"reverse", reverse(x, {0, 2})},
        // x[:, ::-2, 1:3], x[..., -1], x[:, tf.newaxis, 2, ::3],
        // x[::-1, -2:0:-1, 3:0:-2]
        {"ss_negative",
         strided_slice(x, {0, 0, 1}, {0, 0, 3}, {1, -2, 1}, 0b011, 0b011)},
        {"ss_ellipsis_shrink",
         strided_slice(x, {0, -1}, {0, 0}, {1, 1}, 0, 0, 0b01, 0, 0b10)},
        {"ss_new_axis",
         strided_slice(x, {0, 0, 2, 0}, {0, 0, 0, 0}, {1, 1, 1, 3}, 0b1011,
                       0b1011, 0, 0b0010, 0b0100)},
        {"ss_clamped",
         strided_slice(x, {0, -2, 3}, {0, 0, 0}, {-1, -1, -2}, 0b001, 0b001)}};
  });
  expectMatchesReference(graph, f);
}

/// gather_nd / scatter_nd / tensor_scatter_nd_* with duplicate indices
/// (summed; min / max combined; update: the last one), index depths 1 and
/// 2, batch_dims, and a run-time number of index tuples.
TEST(CompiledOps, NdIndexing) {
  std::vector<Feature> f = {{"p", DType::Float32, {4, 3, 2}},
                            {"u", DType::Float32, {3, 2}},
                            {"i", DType::Int64, {-1, 2}, 0, 2}};
  g::GraphDef graph = predictGraph(f, [&](Graph &g, const TensorMap &in) {
    Tensor p = in["p"], u = in["u"];
    Tensor idx = g.constant({1, 2, 3, 0, 1, 2}, {3, 2}, DType::Int64);
    Tensor rows = g.constant({3, 0, 3}, {3, 1}, DType::Int32);
    return TensorMap{
        {"gather_nd", gather_nd(p, idx)},
        {"gather_nd_rows", gather_nd(p, rows)},
        {"gather_nd_runtime", gather_nd(p, in["i"])},
        {"gather_nd_batch",
         gather_nd(p, g.constant({2, 0, 1, 2}, {4, 1}, DType::Int64), 1)},
        {"scatter_nd", scatter_nd(idx, u, {4, 3, 2})},
        {"update", tensor_scatter_nd_update(p, idx, u)},
        {"add", tensor_scatter_nd_add(p, idx, u)},
        {"sub", tensor_scatter_nd_sub(p, idx, u)},
        {"min", tensor_scatter_nd_min(p, idx, u)},
        {"max", tensor_scatter_nd_max(p, idx, u)},
        {"update_rows",
         tensor_scatter_nd_update(p, rows,
                                  g.constant({1.0, 2.0, 3.0}, {3, 1, 1}) *
                                      broadcast_to(u, {3, 3, 2}))}};
  });
  expectMatchesReference(graph, f, {1, 5});
}

/// einsum as one (batch) matmul between transposes and reshapes (attention
/// scores, batched products, a projection, implicit output, broadcast
/// ellipsis), as a reduction, an outer product and a chain of three.
TEST(CompiledOps, Einsum) {
  std::vector<Feature> f = {{"q", DType::Float32, {-1, 5, 2, 8}},
                            {"k", DType::Float32, {-1, 7, 2, 8}},
                            {"x", DType::Float32, {-1, 3, 4}},
                            {"e", DType::Float32, {2, 1, 3, 4}}};
  g::GraphDef graph = predictGraph(f, [&](Graph &g, const TensorMap &in) {
    Tensor x = in["x"];
    Tensor w = constant(g, {4, 6}, 11), v = constant(g, {6, 5}, 12);
    return TensorMap{
        {"attention", einsum("bqhd,bkhd->bhqk", {in["q"], in["k"]})},
        {"values",
         einsum("bhqk,bkhd->bqhd",
                {nn::softmax(einsum("bqhd,bkhd->bhqk", {in["q"], in["k"]})),
                 in["k"]})},
        {"batched", einsum("bij,bkj->bik", {x, x})},
        {"projection", einsum("abc,cd->abd", {x, w})},
        {"implicit", einsum("ij,jk", {w, v})},
        {"ellipsis", einsum("...ij,...jk->...ik", {in["e"], w})},
        {"broadcast_batch",
         einsum("...ij,...kj->...ik", {in["e"], constant(g, {3, 5, 4}, 13)})},
        {"sum", einsum("bij->j", {x})},
        {"transpose", einsum("bij->jib", {x})},
        {"outer",
         einsum("i,j->ij", {constant(g, {3}, 14), constant(g, {4}, 15)})},
        {"dot", einsum("bij,bij->b", {x, x})},
        {"chain", einsum("bi,ij,jk->bk",
                         {reshape(x, {-1, 12}), constant(g, {12, 4}, 16), w})},
        {"matmul_broadcast",
         linalg::matmul(in["e"], constant(g, {3, 4, 5}, 17))}};
  });
  expectMatchesReference(graph, f, {1, 3}, 1e-5);
}

/// einsum over a batch and a run-time sequence length (two run-time dims no
/// reshape can merge): the matmul whose extra free indices are broadcast
/// batch dims (`abc,cde->abde`, `bstc,bcd->bstd`: Keras's multi-head
/// projections), compiled, against the reference at several batches and
/// lengths.
TEST(CompiledOps, EinsumOverBatchAndSequence) {
  Graph graph;
  graph.set_seed(7);
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{.key = "x",
                                       .dtype = DType::Float32,
                                       .shape = {-1, -1, 4},
                                       .sequence_dim = true});
  inputs.features.push_back(
      TensorSpec{.key = "m", .dtype = DType::Float32, .shape = {-1, 4, 3}});
  build_mode(
      graph, ModeKeys::PREDICT, inputs,
      [&](Graph &g, const TensorMap &x, const Tensor &, ModeKeys) {
        Signature spec;
        spec.predictions.set(
            "heads",
            einsum("abc,cde->abde", {x["x"], constant(g, {4, 2, 3}, 21)}));
        spec.predictions.set(
            "per_example",
            einsum("bsc,bcd->bsd", {x["x"], x["m"]}) +
                reduce_sum(einsum("bsc,bcd->bscd", {x["x"], x["m"]}), Dims{2}));
        return spec;
      });
  g::GraphDef def = graph.graph_def();
  dumpGraph(def);
  std::unique_ptr<JitModel> model = jitCompileForTest(def, "Test");
  ASSERT_TRUE(model);
  reference::Evaluator evaluator(def);
  int predict = model->function_index("predict");
  std::mt19937 rng(3);
  for (auto [batch, length] :
       {std::pair<int64_t, int64_t>{1, 5}, {3, 2}, {2, 7}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", length " +
                 std::to_string(length));
    std::map<std::string, Value> feeds = {
        {"x", randomValue({"x", DType::Float32, {batch, length, 4}}, 1, rng)},
        {"m", randomValue({"m", DType::Float32, {batch, 4, 3}}, 1, rng)}};
    std::map<std::string, Value> expected = evaluator.run("predict", feeds);
    model->set_batch(batch);
    model->set_sequence_length(length);
    for (const auto &[key, value] : feeds)
      store(value, model->input_data(predict, model->input_index(
                                                  predict, "features/" + key)));
    model->run(predict);
    for (const auto &[key, want] : expected) {
      SCOPED_TRACE(key);
      EXPECT_TRUE(outputMatches(
          want, model->output_data(predict, model->output_index(predict, key)),
          1e-5));
    }
  }
}

TEST(CompiledOps, Scatter) {
  // Duplicate indices add up; a run-time number of updates.
  checkOp({{"r", DType::Float32, {6, 3}},
           {"i", DType::Int64, {-1}, 0, 5},
           {"u", DType::Float32, {-1, 3}}},
          [](Graph &, const TensorMap &x) {
            return scatter_add(x["r"], x["i"], x["u"]);
          });
  checkOp(
      {{"r", DType::Float32, {6, 2, 2}}, {"u", DType::Float32, {2, 2, 2, 2}}},
      [](Graph &g, const TensorMap &x) {
        return scatter_add(
            x["r"], g.constant({5, 0, 2, 4}, {2, 2}, DType::Int64), x["u"]);
      });
  checkOp({{"r", DType::Float32, {6, 3}}, {"u", DType::Float32, {3, 3}}},
          [](Graph &g, const TensorMap &x) {
            return scatter_update(
                x["r"], g.constant({4, 0, 2}, {3}, DType::Int64), x["u"]);
          });
}

TEST(CompiledOps, GatherOneHot) {
  checkOp({{"i", DType::Int64, {-1}, 0, 9}}, [](Graph &g, const TensorMap &x) {
    return gather(constant(g, {10, 4}, 6), x["i"]);
  });
  checkOp({{"i", DType::Int32, {-1, 2}, 0, 3}},
          [](Graph &g, const TensorMap &x) {
            return gather(constant(g, {5, 4}, 7), x["i"], 1);
          });
  checkOp({{"i", DType::Int64, {-1}, -1, 10}}, // out of range: all off
          [](Graph &, const TensorMap &x) {
            return one_hot(x["i"], 10, 2.0, -1.0);
          });
  checkOp({{"i", DType::Int64, {-1, 3}, 0, 4}},
          [](Graph &, const TensorMap &x) {
            return one_hot(x["i"], 5, 1.0, 0.0, 1);
          });
}

//===----------------------------------------------------------------------===//
// Segments, buckets and sparse ids (feature columns)
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Control flow: scan, cond, while_loop (est.scan / est.if / est.while)
//===----------------------------------------------------------------------===//

/// An RNN over x [batch, 5, 4] (time major inside), forward or reversed:
/// the final state and every step's output, at every batch.
TEST(CompiledOps, ScanRecurrence) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    checkOp(
        {{"x", DType::Float32, {-1, 5, 4}}}, [&](Graph &g, const TensorMap &x) {
          Tensor w = constant(g, {4, 4}, 7);
          Tensor steps = transpose(x["x"], {1, 0, 2});
          Tensor h0 = zeros_like(reduce_sum(x["x"], Dims{1}));
          ScanResult r = scan(
              [&](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
                Tensor h = tanh(add(matmul(c[0], w), in[0]));
                return ScanStep{{h}, {sigmoid(h)}};
              },
              {h0}, {steps}, reverse);
          // [5, batch, 4] -> [batch, 5 * 4], then the final state.
          Tensor ys = reshape(transpose(r.stacked[0], {1, 0, 2}), {-1, 20});
          return concat({ys, r.carried[0]}, 1);
        });
  }
}

/// est.if on a run-time predicate: each batch takes the branch its data
/// selects (the edit makes batch 3's sum negative, the others positive).
TEST(CompiledOps, CondOnData) {
  std::vector<Feature> features = {{"x", DType::Float32, {-1, 4}, 0.1, 2.0}};
  g::GraphDef graph = predictGraph(features, [&](Graph &g, const TensorMap &x) {
    Tensor w = constant(g, {4, 4}, 3);
    std::vector<Tensor> out = cond(
        greater(reduce_sum(x["x"]), 0.0),
        [&] { return std::vector<Tensor>{tanh(matmul(x["x"], w))}; },
        [&] { return std::vector<Tensor>{square(x["x"])}; });
    return TensorMap{{"y", out[0]}};
  });
  expectMatchesReference(graph, features, {1, 3, 17}, 1e-5, {},
                         [](std::map<std::string, Value> &feeds) {
                           Value &x = feeds.at("x");
                           if (x.shape[0] == 3)
                             for (double &v : x.data)
                               v = -v;
                         });
}

/// est.while with a data-dependent trip count (until the sum passes a
/// bound, at most 6 steps, or with maximum_iterations 2).
TEST(CompiledOps, WhileLoop) {
  for (std::optional<int64_t> max :
       {std::optional<int64_t>(), std::optional<int64_t>(2)}) {
    SCOPED_TRACE(max ? "maximum_iterations 2" : "unbounded");
    checkOp({{"x", DType::Float32, {-1, 4}, 0.0, 1.0}},
            [&](Graph &g, const TensorMap &x) {
              std::vector<Tensor> out = while_loop(
                  [&](const std::vector<Tensor> &v) {
                    return logical_and(less(v[0], g.constant(6, DType::Int32)),
                                       less(reduce_sum(v[1]), 40.0));
                  },
                  [&](const std::vector<Tensor> &v) {
                    return std::vector<Tensor>{
                        add(v[0], g.constant(1, DType::Int32)),
                        add(multiply(v[1], 1.5), 1.0)};
                  },
                  {g.constant(0, DType::Int32), x["x"]}, max);
              return add(out[1], cast(out[0], DType::Float32));
            });
  }
}

/// sequence_mask (from a run-time length's tensor and from maxlen) and
/// reverse_sequence, with lengths 0, 1, mid and full (and one past the
/// length, clamped).
TEST(CompiledOps, SequenceMaskAndReverseSequence) {
  std::vector<Feature> features = {{"x", DType::Float32, {-1, 5, 2}},
                                   {"len", DType::Int32, {-1}, 0, 7}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    Tensor mask = cast(sequence_mask(x["len"], x["x"], 1), DType::Float32);
    Tensor mask3 = cast(sequence_mask(x["len"], 3), DType::Float32);
    return TensorMap{
        {"mask", mask},
        {"mask3", mask3},
        {"reversed", reverse_sequence(x["x"], x["len"], 1, 0)},
        {"time_major",
         reverse_sequence(transpose(x["x"], {1, 0, 2}), x["len"], 0, 1)}};
  });
  expectMatchesReference(graph, features, {1, 3, 17}, 1e-6, {},
                         [](std::map<std::string, Value> &feeds) {
                           Value &len = feeds.at("len");
                           for (double &v : len.data)
                             v = std::floor(v);
                         });
}

/// top_k (the selection path, k <= 16, and the heapsort path), sort and
/// argsort in both directions over a static and a run-time axis, on rows
/// with ties, NaN, infinities and -0.0 (NaN ranks above +inf), integers,
/// and take_along_axis / scatter_along_axis with indices out of range
/// (clamped).
TEST(CompiledOps, SortingOps) {
  std::vector<Feature> features = {{"x", DType::Float32, {-1, 37}},
                                   {"i", DType::Int32, {-1, 9}, 0, 4},
                                   {"j", DType::Int64, {-1, 4}, -2, 11},
                                   {"u", DType::Float32, {-1, 4}}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    TopK small = top_k(x["x"], 5), large = top_k(x["x"], 20);
    TopK ints = top_k(x["i"], 9), none = top_k(x["x"], 0);
    return TensorMap{
        {"small_values", small.values},
        {"small_indices", small.indices},
        {"large_values", large.values},
        {"large_indices", large.indices},
        {"int_values", ints.values},
        {"int_indices", ints.indices},
        {"none", none.indices},
        {"ascending", sort(x["x"])},
        {"descending", sort(x["x"], -1, "DESCENDING")},
        {"int_ascending", argsort(x["i"])},
        {"int_descending", argsort(x["i"], 1, "DESCENDING")},
        {"batch_axis", argsort(x["x"], 0, "DESCENDING")},
        {"batch_sorted", sort(x["i"], 0)},
        {"taken", take_along_axis(x["x"], x["j"], 1)},
        {"scattered", scatter_along_axis(x["x"], x["j"], x["u"], 1)}};
  });
  expectMatchesReference(graph, features, {1, 3, 17}, 1e-6, {},
                         [](std::map<std::string, Value> &feeds) {
                           Value &x = feeds.at("x");
                           double nan = std::nan("");
                           double inf = std::numeric_limits<double>::infinity();
                           for (size_t i = 0; i < x.data.size(); ++i) {
                             if (i % 11 == 3)
                               x.data[i] = 0.5; // ties
                             if (i % 13 == 5)
                               x.data[i] = nan;
                             if (i % 17 == 7)
                               x.data[i] = i % 2 ? inf : -inf;
                             if (i % 19 == 2)
                               x.data[i] = -0.0;
                             if (i % 19 == 9)
                               x.data[i] = 0.0;
                           }
                         });
}

/// nn::in_top_k: ties at the boundary, non-finite rows, targets out of
/// range, k past the classes.
TEST(CompiledOps, InTopK) {
  std::vector<Feature> features = {{"t", DType::Int32, {-1}, -1, 7},
                                   {"p", DType::Float32, {-1, 6}, 0, 2}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    return TensorMap{
        {"k1", cast(nn::in_top_k(x["t"], x["p"], 1), DType::Float32)},
        {"k3", cast(nn::in_top_k(x["t"], x["p"], 3), DType::Float32)},
        {"k9", cast(nn::in_top_k(x["t"], x["p"], 9), DType::Float32)}};
  });
  expectMatchesReference(graph, features, {1, 3, 17}, 0, {},
                         [](std::map<std::string, Value> &feeds) {
                           for (double &v : feeds.at("t").data)
                             v = std::floor(v);
                           Value &p = feeds.at("p");
                           for (size_t i = 0; i < p.data.size(); ++i) {
                             p.data[i] = std::floor(p.data[i] * 2); // ties
                             if (i == 13)
                               p.data[i] = std::nan("");
                             if (i == 26)
                               p.data[i] =
                                   -std::numeric_limits<double>::infinity();
                           }
                         });
}

/// image::resize (bilinear and nearest, up and down, unbatched), the
/// compat forms with and without align_corners / half-pixel centers, and
/// the gradient op.
TEST(CompiledOps, ResizeImages) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(to_string(dtype));
    std::vector<Feature> features = {{"x", dtype, {-1, 5, 4, 3}},
                                     {"g", dtype, {-1, 7, 9, 3}}};
    g::GraphDef graph = predictGraph(features, [&](Graph &,
                                                   const TensorMap &x) {
      return TensorMap{
          {"up", image::resize(x["x"], {7, 9})},
          {"down", image::resize(x["x"], {3, 2})},
          {"antialias", image::resize(x["x"], {3, 2}, "bilinear", false, true)},
          {"nearest_up", image::resize(x["x"], {7, 9}, "nearest")},
          {"nearest_down", image::resize(x["x"], {2, 3}, "nearest")},
          {"align", image::resize_bilinear(x["x"], {7, 9}, true)},
          {"legacy", image::resize_bilinear(x["x"], {3, 6})},
          {"nearest_align",
           image::resize_nearest_neighbor(x["x"], {7, 3}, true)},
          {"nearest_legacy", image::resize_nearest_neighbor(x["x"], {7, 3})},
          {"grad", image::resize_grad(x["g"], {5, 4})},
          {"grad_down", image::resize_grad(x["x"], {7, 9})},
          {"grad_nearest", image::resize_grad(x["g"], {5, 4}, "nearest")},
          {"grad_align",
           image::resize_grad(x["g"], {5, 4}, "bilinear", true, false)}};
    });
    expectMatchesReference(graph, features, {1, 3}, 1e-5);
  }
  checkOp({{"x", DType::Int32, {5, 4, 2}, 0, 100}},
          [](Graph &, const TensorMap &x) {
            return image::resize(x["x"], {7, 3}, "nearest");
          },
          {1});
}

/// layer_norm: over the last dim and over the trailing two with parameters
/// of the last only, a large mean (the shifted moments), a run-time batch;
/// f64.
TEST(CompiledOps, LayerNorm) {
  checkOp({{"x", DType::Float32, {-1, 17}}}, [](Graph &g, const TensorMap &x) {
    return nn::layer_norm(x["x"], constant(g, {17}, 1), constant(g, {17}, 2));
  });
  checkOp(
      {{"x", DType::Float32, {-1, 3, 5}, 1000.0, 1004.0}},
      [](Graph &g, const TensorMap &x) {
        return nn::layer_norm(x["x"], constant(g, {5}, 3), constant(g, {5}, 4),
                              1, 2, 1e-12);
      },
      {1, 3, 17}, 1e-4);
  checkOp({{"x", DType::Float64, {-1, 4, 6}}}, [](Graph &g,
                                                  const TensorMap &x) {
    return nn::layer_norm(x["x"], constant(g, {4, 6}, 5, DType::Float64),
                          constant(g, {4, 6}, 6, DType::Float64), -2, -2, 1e-3);
  });
  // The whole tensor as one row (no row dims).
  checkOp({{"x", DType::Float32, {3, 7}}}, [](Graph &g, const TensorMap &x) {
    return nn::layer_norm(x["x"], constant(g, {3, 7}, 7),
                          constant(g, {3, 7}, 8), 0, 0);
  });
}

/// attention_softmax: scale, causal, bool masks broadcast over the heads
/// (with rows where every key is masked: Keras's uniform -1e9 rows), an
/// additive mask, a run-time batch.
TEST(CompiledOps, AttentionSoftmax) {
  checkOp({{"l", DType::Float32, {-1, 2, 3, 5}}},
          [](Graph &, const TensorMap &x) {
            return nn::attention_softmax(x["l"], 0.37, /*causal=*/true);
          });
  checkOp({{"l", DType::Float32, {-1, 2, 4, 4}},
           {"m", DType::Float32, {-1, 1, 4, 4}, -1.0, 1.0}},
          [](Graph &, const TensorMap &x) {
            return nn::attention_softmax(x["l"], x["m"], 2.0);
          });
  checkOp({{"l", DType::Float32, {-1, 2, 4, 4}},
           {"m", DType::Float32, {-1, 1, 4, 4}, -1.0, 1.0}},
          [](Graph &, const TensorMap &x) {
            return nn::attention_softmax(x["l"], greater(x["m"], 0.3), 2.0);
          });
  checkOp({{"l", DType::Float32, {-1, 2, 4, 4}},
           {"m", DType::Float32, {-1, 1, 4, 4}, -1.0, 1.0}},
          [](Graph &, const TensorMap &x) {
            return nn::attention_softmax(x["l"], greater(x["m"], 0.0), 1.0,
                                         /*causal=*/true);
          });
  checkOp({{"l", DType::Float32, {-1, 3, 6}},
           {"m", DType::Float32, {1, 3, 6}, -3.0, 0.0}},
          [](Graph &, const TensorMap &x) {
            return nn::attention_softmax(x["l"], x["m"], 0.5);
          });
}

TEST(CompiledOps, UnsortedSegmentSum) {
  auto sum = [](Graph &, const TensorMap &x) {
    return unsorted_segment_sum(x["d"], x["i"], x["l"]);
  };
  // N != B: 7 rows into 4 segments (the third operand's dim 0, not data's);
  // ids in [-1, 5]: duplicates, empty segments, and -1, 4, 5 dropped.
  checkOp({{"d", DType::Float32, {7, 3}},
           {"i", DType::Int64, {7}, -1, 5},
           {"l", DType::Int64, {4, 2}}},
          sum, {1});
  // A run-time number of rows (the batch) into 4 segments; i32 ids.
  checkOp({{"d", DType::Float32, {-1, 2, 3}},
           {"i", DType::Int32, {-1}, 0, 3},
           {"l", DType::Float32, {4}}},
          sum);
  // A run-time number of segments (the batch) from 7 rows: at batch 1 most
  // ids are dropped, at 17 most segments are empty.
  checkOp({{"d", DType::Float32, {7, 3}},
           {"i", DType::Int64, {7}, 0, 3},
           {"l", DType::Int64, {-1}}},
          sum);
  // Integer data, rank 1.
  checkOp({{"d", DType::Int32, {-1}, -5, 5},
           {"i", DType::Int64, {-1}, 0, 2},
           {"l", DType::Int64, {3}}},
          sum);
  // Mean and sqrt_n: divided by the count of ids (empty segments: zeros).
  std::vector<Feature> f = {{"d", DType::Float32, {-1, 3}},
                            {"i", DType::Int64, {-1}, 0, 5},
                            {"l", DType::Int64, {6, 1}}};
  checkOp(f, [](Graph &, const TensorMap &x) {
    return segment_mean(x["d"], x["i"], x["l"]);
  });
  checkOp(f, [](Graph &, const TensorMap &x) {
    return segment_sqrt_n(x["d"], x["i"], x["l"]);
  });
}

TEST(CompiledOps, Bucketize) {
  // Elements on a boundary, NaN, infinities, -0 and f32 0.7 (below the
  // double 0.7, equal to the f32 boundary), then random ones.
  auto edges = [](std::map<std::string, Value> &feeds) {
    std::vector<double> &d = feeds.at("x").data;
    const double special[] = {std::nan(""),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(),
                              -0.0,
                              static_cast<float>(0.7),
                              1.5,
                              -1.0};
    for (size_t i = 0; i < d.size() && i < std::size(special); ++i)
      d[i] = special[i];
  };
  std::vector<double> many;
  for (int i = 0; i < 40; ++i)
    many.push_back(-2.0 + 0.1 * i);
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 7}, -2.5, 2.5},
                            {"i", DType::Int64, {-1}, -3, 3}};
  g::GraphDef graph = predictGraph(f, [&](Graph &, const TensorMap &x) {
    return TensorMap{{"few", bucketize(x["x"], {-1.0, 0.0, 0.7, 1.5})},
                     {"ties", bucketize(x["x"], {0.0, 0.0, 1.5})},
                     {"none", bucketize(x["x"], {})},
                     {"many", bucketize(x["x"], many)},
                     {"f64", bucketize(cast(x["x"], DType::Float64), many)},
                     {"int", bucketize(x["i"], {-1.5, 0.0, 0.0, 2.0})}};
  });
  expectMatchesReference(graph, f, {1, 3, 17}, 0.0, {}, edges);
}

namespace {
/// 9 ids in 5 batch rows (row 2 has none), as the host half makes them.
SparseIds constantSparseIds(Graph &g, const TensorMap &x) {
  SparseIds sp;
  sp.ids = x["ids"];
  sp.rows = g.constant({0, 0, 0, 1, 3, 3, 4, 4, 4}, {9}, DType::Int64);
  sp.row_lengths = g.constant({3, 1, 0, 2, 3}, {5}, DType::Int64);
  return sp;
}
} // namespace

TEST(CompiledOps, SafeEmbeddingLookupSparse) {
  // Duplicate ids in a row, an empty row, negative and zero weights (pruned
  // by mean and sqrtn, not by sum), max_norm.
  std::vector<Feature> f = {{"params", DType::Float32, {10, 4}, -1.5, 1.5},
                            {"ids", DType::Int64, {9}, 0, 9},
                            {"w", DType::Float32, {9}, -0.5, 2.0}};
  auto zeroWeight = [](std::map<std::string, Value> &feeds) {
    feeds.at("w").data[1] = 0.0;
    feeds.at("ids").data[4] = feeds.at("ids").data[5]; // a duplicate
  };
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &x) {
    TensorMap out;
    SparseIds plain = constantSparseIds(g, x);
    SparseIds weighted = plain;
    weighted.weights = x["w"];
    for (const char *combiner : {"sum", "mean", "sqrtn"})
      for (double maxNorm : {0.0, 0.8}) {
        std::string key = std::string(combiner) + (maxNorm > 0 ? "_clip" : "");
        out.set(key, safe_embedding_lookup_sparse(x["params"], plain, combiner,
                                                  maxNorm));
        out.set(key + "_w", safe_embedding_lookup_sparse(x["params"], weighted,
                                                         combiner, maxNorm));
      }
    return out;
  });
  expectMatchesReference(graph, f, {1}, 1e-5, {}, zeroWeight);

  // Run-time sizes: n = the batch ids into 4 rows (rows unsorted).
  std::vector<Feature> g2 = {{"ids", DType::Int64, {-1}, 0, 9},
                             {"rows", DType::Int64, {-1}, 0, 3},
                             {"w", DType::Float32, {-1}, 0.1, 2.0}};
  g::GraphDef dynamic = predictGraph(g2, [](Graph &g, const TensorMap &x) {
    SparseIds sp{x["ids"], x["rows"],
                 g.constant({0, 0, 0, 0}, {4}, DType::Int64), x["w"]};
    return TensorMap{{"y", safe_embedding_lookup_sparse(
                               constant(g, {10, 3}, 11), sp, "sqrtn", 0.5)}};
  });
  expectMatchesReference(dynamic, g2);
}

TEST(CompiledOps, SparseToIndicator) {
  // Ids up to 11 with depth 10: 10 and 11 count nowhere.
  std::vector<Feature> f = {{"ids", DType::Int64, {9}, 0, 11},
                            {"w", DType::Float32, {9}, -1.0, 2.0}};
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &x) {
    SparseIds plain = constantSparseIds(g, x);
    SparseIds weighted = plain;
    weighted.weights = x["w"];
    return TensorMap{{"counts", sparse_to_indicator(plain, 10)},
                     {"weights", sparse_to_indicator(weighted, 10)}};
  });
  expectMatchesReference(graph, f, {1});
}

TEST(CompiledOps, BatchNormalization) {
  // Training: the batch's statistics (rank 2 and the fused rank-4 case);
  // not training: the moving statistics, set here.
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 3}, -3, 3},
                            {"img", DType::Float32, {-1, 2, 2, 3}, -3, 3}};
  g::GraphDef graph = predictGraph(f, [](Graph &, const TensorMap &x) {
    return TensorMap{
        {"train", layers::batch_normalization(x["x"], /*training=*/true)},
        {"infer", layers::batch_normalization(x["x"], /*training=*/false)},
        {"img", layers::batch_normalization(x["img"], /*training=*/true, 1)}};
  });
  std::map<std::string, Value> variables;
  std::mt19937 rng(5);
  for (const g::VariableDef &v : graph.variable()) {
    Dims shape(v.shape().dim().begin(), v.shape().dim().end());
    bool positive = v.name().find("variance") != std::string::npos ||
                    v.name().find("gamma") != std::string::npos;
    variables[v.name()] = randomValue(
        {v.name(), DType::Float32, shape, positive ? 0.5 : -1.0, 2.0}, 1, rng);
  }
  expectMatchesReference(graph, f, {2, 3, 17}, 1e-4, variables);
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

TEST(CompiledOps, SoftmaxAndLosses) {
  for (int64_t classes : {1, 3, 10, 1000}) {
    SCOPED_TRACE(classes);
    std::vector<Feature> f = {{"logits", DType::Float32, {-1, classes}, -9, 9}};
    checkOp(f, [](Graph &, const TensorMap &x) {
      return nn::softmax(x["logits"]);
    });
    checkOp(f, [](Graph &, const TensorMap &x) {
      return nn::log_softmax(x["logits"]);
    });
    checkOp(
        {{"logits", DType::Float32, {-1, classes}, -9, 9},
         {"labels", DType::Int64, {-1}, 0, static_cast<double>(classes - 1)}},
        [](Graph &, const TensorMap &x) {
          return nn::sparse_softmax_cross_entropy_with_logits(x["labels"],
                                                              x["logits"]);
        });
    checkOp({{"logits", DType::Float32, {-1, classes}, -9, 9},
             {"labels", DType::Float32, {-1, classes}, 0, 1}},
            [](Graph &, const TensorMap &x) {
              return nn::softmax_cross_entropy_with_logits(x["labels"],
                                                           x["logits"]);
            });
  }
  checkOp({{"logits", DType::Float32, {-1, 4}, -30, 30},
           {"labels", DType::Float32, {-1, 4}, 0, 1}},
          [](Graph &, const TensorMap &x) {
            return nn::sigmoid_cross_entropy_with_logits(x["labels"],
                                                         x["logits"]);
          });
  checkOp(
      {{"logits", DType::Float32, {-1, 3, 4}}},
      [](Graph &, const TensorMap &x) { return nn::softmax(x["logits"], 1); });
}

//===----------------------------------------------------------------------===//
// Randomness and fills
//===----------------------------------------------------------------------===//

TEST(CompiledOps, RandomOpsAndDropout) {
  std::vector<Feature> f = {{"x", DType::Float32, {-1, 64}}};
  g::GraphDef graph = predictGraph(f, [](Graph &g, const TensorMap &x) {
    return TensorMap{
        {"dropout", nn::dropout(x["x"], 0.3)},
        // noise_shape: one decision per column, the same in every row.
        {"dropout_columns", nn::dropout(x["x"], 0.5, Dims{1, -1})},
        {"uniform", random_uniform(g, {4, 5}, DType::Float32, -1.0, 3.0)},
        {"normal", random_normal(g, {4, 5}, DType::Float32, 1.0, 2.0)},
        {"truncated", truncated_normal(g, {7}, DType::Float32, 0.0, 0.5)},
        {"zeros", zeros_like(x["x"])},
        {"ones", ones_like(x["x"], DType::Int32)}};
  });
  for (int64_t step : {0, 41}) {
    SCOPED_TRACE("global_step " + std::to_string(step));
    expectMatchesReference(graph, f, {1, 3, 17}, 1e-5,
                           {{"global_step", Value::scalar(step, g::DT_INT64)}});
  }
}

//===----------------------------------------------------------------------===//
// The seed models
//===----------------------------------------------------------------------===//

/// The predict signature of a seed model, compiled, against the reference.
void checkSeedModel(const g::GraphDef &full, const std::vector<Feature> &f,
                    std::vector<int64_t> batches) {
  g::GraphDef predict = full;
  predict.mutable_signature()->erase("train");
  predict.mutable_signature()->erase("eval");
  expectMatchesReference(predict, f, batches, 1e-5, randomVariables(full));
}

TEST(CompiledModels, MlpPredict) {
  checkSeedModel(models::build_mlp(42),
                 {{"x", DType::Float32, {-1, 784}, 0, 1}}, {1, 3, 17, 128});
}

TEST(CompiledModels, ConvNetPredict) {
  checkSeedModel(models::build_convnet(42),
                 {{"x", DType::Float32, {-1, 28, 28, 1}, 0, 1}}, {1, 3});
}

TEST(CompiledModels, LinearPredict) {
  checkSeedModel(models::build_linear(42),
                 {{"age", DType::Float32, {-1, 1}, 0, 80},
                  {"fare", DType::Float32, {-1, 1}, 0, 100},
                  {"pclass", DType::Float32, {-1, 1}, 1, 3}},
                 {1, 3, 17});
}

/// fused_batch_norm (training): NHWC and NCHW, a large mean (the shifted
/// sums), a run-time batch (n per channel from 1 * H * W up), f64; y, the
/// batch mean and TF's unbiased batch variance against the reference.
TEST(CompiledOps, FusedBatchNorm) {
  struct Case {
    Dims shape;
    const char *format;
    double lo, hi;
    DType dtype;
    double tolerance;
  };
  const Case cases[] = {
      {{-1, 3, 5, 4}, "NHWC", -1.0, 1.0, DType::Float32, 1e-5},
      {{-1, 4, 3, 5}, "NCHW", -1.0, 1.0, DType::Float32, 1e-5},
      {{-1, 3, 2, 3}, "NHWC", 1000.0, 1004.0, DType::Float32, 1e-3},
      {{-1, 2, 3, 3}, "NHWC", -2.0, 2.0, DType::Float64, 1e-9},
      {{-1, 2, 2, 3, 4}, "NDHWC", -1.0, 1.0, DType::Float32, 1e-5},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.format) + " " + shape::toString(c.shape));
    std::vector<Feature> features = {{"x", c.dtype, c.shape, c.lo, c.hi}};
    int64_t channels =
        std::string(c.format).back() == 'C' ? c.shape.back() : c.shape[1];
    g::GraphDef graph =
        predictGraph(features, [&](Graph &g, const TensorMap &x) {
          nn::FusedBatchNorm bn = nn::fused_batch_norm(
              x["x"], constant(g, {channels}, 1, c.dtype),
              constant(g, {channels}, 2, c.dtype), 0.001, c.format);
          return TensorMap{{"y", bn.y},
                           {"mean", bn.batch_mean},
                           {"variance", bn.batch_variance}};
        });
    expectMatchesReference(graph, features, {1, 2, 5}, c.tolerance);
  }
}

/// fused_batch_norm's accuracy over a channel of 8192 elements whose mean is
/// up to 40 standard deviations (MobileNetV2's first layers at batch 32):
/// y, the statistics and the gradient of x against float64, within a few
/// float32 ulps of their magnitudes. The sums accumulate in f64; with float32
/// running sums (before) y erred by up to 4.2e-6 and dx by 2-3 times the
/// bound here.
TEST(CompiledOps, FusedBatchNormIsAccurateOverLargeChannels) {
  const int64_t N = 32, H = 16, W = 16, C = 4, n = N * H * W;
  const double centers[C] = {0.7, -1.3, 2.0, 0.05};
  const double spreads[C] = {0.05, 0.1, 0.06, 0.3};
  const double eps = 0.001;
  std::vector<Feature> features = {{"x", DType::Float32, {-1, H, W, C}},
                                   {"dy", DType::Float32, {-1, H, W, C}}};
  g::GraphDef graph = predictGraph(features, [&](Graph &g, const TensorMap &f) {
    nn::FusedBatchNorm bn = nn::fused_batch_norm(
        f["x"], g.constant(std::vector<double>(C, 1.0), {C}, DType::Float32),
        g.constant(std::vector<double>(C, 0.0), {C}, DType::Float32), eps);
    return TensorMap{{"y", bn.y},
                     {"mean", bn.batch_mean},
                     {"variance", bn.batch_variance},
                     {"dx", gradients({bn.y}, {f["x"]}, {f["dy"]})[0]}};
  });
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Test");
  ASSERT_TRUE(model);
  int predict = model->function_index("predict");
  model->set_batch(N);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto *x = static_cast<float *>(
      model->input_data(predict, model->input_index(predict, "features/x")));
  auto *dy = static_cast<float *>(
      model->input_data(predict, model->input_index(predict, "features/dy")));
  for (int64_t i = 0; i < n * C; ++i) {
    x[i] = static_cast<float>(centers[i % C] + spreads[i % C] * normal(rng));
    dy[i] = normal(rng);
  }
  model->run(predict);
  auto out = [&](const char *key) {
    return static_cast<const float *>(model->output_data(
        predict,
        model->output_index(predict, std::string("predictions/") + key)));
  };
  const float *y = out("y"), *mean = out("mean"), *variance = out("variance"),
              *dx = out("dx");
  for (int64_t c = 0; c < C; ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    double m = 0, v = 0, mdy = 0, mdyx = 0;
    for (int64_t i = c; i < n * C; i += C)
      m += x[i];
    m /= n;
    for (int64_t i = c; i < n * C; i += C)
      v += (x[i] - m) * (x[i] - m);
    v /= n;
    double inv = 1 / std::sqrt(v + eps);
    for (int64_t i = c; i < n * C; i += C) {
      mdy += dy[i];
      mdyx += dy[i] * (x[i] - m) * inv;
    }
    mdy /= n;
    mdyx /= n;
    EXPECT_NEAR(mean[c], m, 4e-7 * std::abs(m));
    EXPECT_NEAR(variance[c], v * n / (n - 1), 4e-7 * v);
    double yErr = 0, dxErr = 0, dxMax = 0;
    for (int64_t i = c; i < n * C; i += C) {
      double xhat = (x[i] - m) * inv;
      double want = inv * (dy[i] - mdy - xhat * mdyx);
      yErr = std::max(yErr, std::abs(y[i] - xhat));
      dxErr = std::max(dxErr, std::abs(dx[i] - want));
      dxMax = std::max(dxMax, std::abs(want));
    }
    // y is at most ~5 here, dx ~70: a float32 ulp is 4.8e-7 and 7.6e-6.
    EXPECT_LT(yErr, 2e-6);
    EXPECT_LT(dxErr, 3e-7 * dxMax);
  }
}

/// fused_batch_norm of an empty batch (N * H * W == 0: a 0 dim beside the
/// run-time batch): y is empty, the batch mean and variance NaN, as TF
/// 2.15's FusedBatchNormV3 gives (its kernel fills them with NaN); x is not
/// read (the shift is sliced to min(size, 1): the asan build checks it).
TEST(CompiledOps, FusedBatchNormOfAnEmptyBatch) {
  struct Case {
    Dims shape;
    const char *format;
    int64_t batch;
  };
  const Case cases[] = {{{-1, 0, 2, 4}, "NHWC", 3},
                        {{-1, 4, 3, 0}, "NCHW", 2},
                        {{-1, 2, 0, 4}, "NHWC", 1}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.format) + " " + shape::toString(c.shape) +
                 " batch " + std::to_string(c.batch));
    std::vector<Feature> features = {{"x", DType::Float32, c.shape}};
    g::GraphDef graph =
        predictGraph(features, [&](Graph &g, const TensorMap &x) {
          nn::FusedBatchNorm bn =
              nn::fused_batch_norm(x["x"], constant(g, {4}, 1),
                                   constant(g, {4}, 2), 0.001, c.format);
          return TensorMap{{"y", bn.y},
                           {"mean", bn.batch_mean},
                           {"variance", bn.batch_variance}};
        });
    dumpGraph(graph);
    std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Test");
    ASSERT_TRUE(model);
    int predict = model->function_index("predict");
    model->set_batch(c.batch);
    model->run(predict);
    for (const char *key : {"predictions/mean", "predictions/variance"}) {
      const auto *v = static_cast<const float *>(
          model->output_data(predict, model->output_index(predict, key)));
      for (int i = 0; i < 4; ++i)
        EXPECT_TRUE(std::isnan(v[i])) << key << "[" << i << "] = " << v[i];
    }
  }
}

/// Fixed pseudo-random values in [-scale, scale] (sin-based, no state).
std::vector<double> wavy(size_t n, double scale, double phase) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(1.7 * static_cast<double>(i) + phase);
  return v;
}

/// Embedding's mask_zero mask (Keras's not_equal(ids, 0)) consumed by the
/// layers that take a mask: an LSTM skips the masked steps wherever they
/// are (the same as the sequence without them), global average pooling
/// averages the unmasked steps, multi-head attention combines the query
/// and value masks as Keras's _compute_attention_mask.
TEST(CompiledOps, EmbeddingMaskZeroFeedsTheMaskedLayers) {
  const int64_t T = 5, D = 4, units = 3;
  std::vector<double> table = wavy(10 * D, 0.8, 0.3);
  std::vector<Feature> features = {{"ids", DType::Int64, {-1, T}, 0, 10},
                                   {"compact", DType::Int64, {-1, T}, 0, 10}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    auto embed = [&](const Tensor &ids) {
      return layers::embedding(
          ids, 10, D,
          {.embeddings_initializer = constant_initializer(table),
           .mask_zero = true});
    };
    layers::EmbeddingOutput e = embed(x["ids"]);
    layers::EmbeddingOutput c = embed(x["compact"]);
    auto lstm = [&](const Tensor &in, const Tensor &mask,
                    const Tensor &lengths) {
      return layers::lstm(in, units,
                          {.kernel_initializer = constant_initializer(
                               wavy(D * 4 * units, 0.6, 0.1)),
                           .recurrent_initializer = constant_initializer(
                               wavy(units * 4 * units, 0.5, 0.9)),
                           .bias_initializer = constant_initializer(0.1),
                           .mask = mask},
                          lengths)
          .output;
    };
    Tensor lengths = reduce_sum(cast(c.mask, DType::Int32), Dims{1});
    auto mha = [&](layers::MultiHeadAttentionOptions o) {
      o.kernel_initializer = constant_initializer(0.05);
      o.bias_initializer = constant_initializer(0.01);
      return layers::multi_head_attention(e.output, e.output, 2, 3, o);
    };
    Tensor pairs = logical_and(expand_dims(e.mask, 2), expand_dims(e.mask, 1));
    return TensorMap{
        {"mask", e.mask},
        {"lstm_masked", lstm(e.output, e.mask, Tensor())},
        {"lstm_compact", lstm(c.output, c.mask, Tensor())},
        {"lstm_lengths", lstm(c.output, Tensor(), lengths)},
        {"gap", layers::global_average_pooling1d(e.output, false, "", e.mask)},
        {"mha_masks", mha({.query_mask = e.mask, .value_mask = e.mask})},
        {"mha_explicit", mha({.attention_mask = pairs})},
        {"mha_plain", mha({})}};
  });
  dumpGraph(graph);
  std::unique_ptr<JitModel> model = jitCompileForTest(graph, "Test");
  ASSERT_TRUE(model);
  int predict = model->function_index("predict");
  model->run(model->function_index("init"));
  const std::vector<int64_t> ids = {3, 0, 5, 0, 0, 1, 2, 3,
                                    4, 0, 0, 7, 0, 0, 2};
  const std::vector<int64_t> compact = {3, 5, 0, 0, 0, 1, 2, 3,
                                        4, 0, 7, 2, 0, 0, 0};
  model->set_batch(3);
  for (const auto &[key, values] : {std::pair{"features/ids", &ids},
                                    std::pair{"features/compact", &compact}})
    std::memcpy(model->input_data(predict, model->input_index(predict, key)),
                values->data(), values->size() * sizeof(int64_t));
  model->run(predict);
  auto out = [&](const std::string &key) {
    return static_cast<const float *>(model->output_data(
        predict, model->output_index(predict, "predictions/" + key)));
  };
  const auto *mask = static_cast<const bool *>(model->output_data(
      predict, model->output_index(predict, "predictions/mask")));
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(mask[i], ids[i] != 0) << i;
  // The LSTM skips masked steps: as the sequence without them, given by its
  // mask or its lengths.
  for (int i = 0; i < 3 * units; ++i) {
    EXPECT_NEAR(out("lstm_masked")[i], out("lstm_compact")[i], 1e-6) << i;
    EXPECT_NEAR(out("lstm_compact")[i], out("lstm_lengths")[i], 1e-6) << i;
  }
  // Keras's GlobalAveragePooling1D with a mask: the mean of the unmasked
  // steps' rows.
  for (int b = 0; b < 3; ++b)
    for (int d = 0; d < D; ++d) {
      double sum = 0;
      int n = 0;
      for (int t = 0; t < T; ++t)
        if (int64_t id = ids[b * T + t]) {
          sum += static_cast<float>(table[id * D + d]);
          ++n;
        }
      EXPECT_NEAR(out("gap")[b * D + d], sum / n, 1e-6) << b << "," << d;
    }
  // The query and value masks are Keras's attention mask.
  double plainGap = 0;
  for (int i = 0; i < 3 * T * D; ++i) {
    EXPECT_EQ(out("mha_masks")[i], out("mha_explicit")[i]) << i;
    plainGap = std::max<double>(
        plainGap, std::abs(out("mha_masks")[i] - out("mha_plain")[i]));
  }
  EXPECT_GT(plainGap, 1e-4);
}

TEST(CompiledOps, MaskErrorsAreOneLine) {
  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  Tensor x = g.placeholder("x", DType::Float32, {2, 5, 4});
  Tensor ids = g.placeholder("ids", DType::Int64, {2, 5});
  Tensor wrong = g.placeholder("wrong", DType::Int64, {2, 4});
  auto message = [](const std::function<void()> &f) {
    return estc::testing::messageOf<GraphError>(f);
  };
  std::string rnn =
      message([&] { layers::lstm(x, 3, {.mask = not_equal(wrong, 0.0)}); });
  EXPECT_NE(rnn.find("must be a bool [batch, time] = [2,5] tensor, got i1 "
                     "[2,4]"),
            std::string::npos)
      << rnn;
  std::string gap =
      message([&] { layers::global_average_pooling1d(x, false, "", ids); });
  EXPECT_NE(gap.find("mask must be a bool [batch, steps] = [2,5] tensor"),
            std::string::npos)
      << gap;
  std::string mha = message([&] {
    layers::multi_head_attention(x, x, 2, 3,
                                 {.value_mask = not_equal(wrong, 0.0)});
  });
  EXPECT_NE(mha.find("value_mask must be a bool [batch, length] = [2,5] "
                     "tensor"),
            std::string::npos)
      << mha;
  EXPECT_EQ(
      layers::embedding(ids, 10, 4, layers::EmbeddingOptions{}).mask.valid(),
      false);
}

/// gradients() (op `gradient`) in a predict function, and apply_gradients
/// on hand-made gradients in a train function: d/dx sum(w x^2) = 2 w x,
/// and one SGD step of w by the clipped gradient of its loss.
TEST(CompiledOps, GradientsAndApplyGradients) {
  Graph graph;
  InputSpec inputs{{{"x", DType::Float32, {-1, 3}}}, std::nullopt};
  auto body = [](Graph &g, const TensorMap &f, const Tensor &, ModeKeys mode) {
    Variable w = g.get_variable("w", DType::Float32, {3},
                                constant_initializer({1.0, -2.0, 0.5}));
    Tensor loss = reduce_sum(multiply(square(f["x"]), w.read()));
    Signature s;
    if (mode == ModeKeys::PREDICT) {
      s.predictions.set("dx", gradients({loss}, {f["x"]})[0]);
      return s;
    }
    s.loss = loss;
    Tensor dw =
        clip_by_global_norm(gradients({loss}, std::vector<Variable>{w}), 1.0)
            .list_clipped[0];
    s.train_op = train::GradientDescentOptimizer(0.5).apply_gradients(
        {{dw, w}}, g.global_step_variable());
    return s;
  };
  build_mode(graph, ModeKeys::TRAIN, inputs, body);
  build_mode(graph, ModeKeys::PREDICT, inputs, body);
  g::GraphDef def = graph.graph_def();
  dumpGraph(def);
  std::unique_ptr<JitModel> model = jitCompileForTest(def, "Test");
  ASSERT_TRUE(model);
  model->run(model->function_index("init"));
  model->set_batch(2);
  std::vector<float> x = {1, 2, 3, -1, 0.5f, 2};
  for (const char *fn : {"predict", "train"}) {
    int f = model->function_index(fn);
    std::memcpy(model->input_data(f, model->input_index(f, "features/x")),
                x.data(), sizeof(float) * x.size());
  }
  int predict = model->function_index("predict");
  model->run(predict);
  const auto *dx = static_cast<const float *>(model->output_data(
      predict, model->output_index(predict, "predictions/dx")));
  std::vector<float> w = {1, -2, 0.5f};
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(dx[i], 2 * w[i % 3] * x[i]) << i;
  model->run("train");
  // dw = sum over the batch of x^2 = {2, 4.25, 13}, clipped to norm 1.
  std::vector<double> dw = {2, 4.25, 13};
  double norm = std::sqrt(2 * 2 + 4.25 * 4.25 + 13 * 13);
  const auto *updated = static_cast<const float *>(
      model->variable_data(model->variable_index("w")));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(updated[i], w[i] - 0.5 * dw[i] / norm, 1e-6) << i;
}

} // namespace
} // namespace estc
