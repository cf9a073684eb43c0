//===- GradientsTest.cpp - gradients(), clipping, their errors ----------===//
//
// lib/Graph/Gradients.h compiled (JIT): the gradient nodes resolved by
// est-autodiff as outputs of a predict function, checked against the
// derivatives written out in double; the clipping functions against TF's
// formulas; and the one-line errors of bad arguments.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Gradients.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

const Dims kShape = {2, 3};
const std::vector<double> kX = {0.5, -1.25, 2.0, 0.0, 1.5, -0.75};
const std::vector<double> kW = {1.0, 0.5, -2.0, 1.5, 0.25, 3.0};
const std::vector<double> kC = {0.25, -1.0, 2.0, 0.5, 1.5, -0.5};

using Outputs = std::map<std::string, Tensor>;

/// Compiles a predict function of features x and u ([2, 3] each) and a
/// variable w (kW) whose predictions `build` returns; runs it on x = kX,
/// u = kC and returns each prediction's values.
std::map<std::string, std::vector<double>> runPredict(
    const std::function<Outputs(Graph &, const Tensor &x, const Tensor &u,
                                const Variable &w)> &build) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, kShape});
  inputs.features.push_back(TensorSpec{"u", DType::Float32, kShape});
  std::vector<std::string> keys;
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable w = gr.get_variable("w", DType::Float32, kShape,
                                            constant_initializer(kW));
               Signature s;
               for (const auto &[key, t] : build(gr, f["x"], f["u"], w)) {
                 s.predictions.set(key, t);
                 keys.push_back(key);
               }
               return s;
             });
  std::unique_ptr<JitModel> model =
      jitCompileForTest(graph.graph_def(), "Grads", {}, /*warningsFail=*/true);
  if (!model)
    return {};
  model->run("init");
  int fn = model->function_index("predict");
  for (auto [key, values] : {std::pair{"features/x", kX}, {"features/u", kC}}) {
    Value v;
    v.dtype = g::DT_FLOAT;
    v.shape = kShape;
    v.data = values;
    store(v, model->input_data(fn, model->input_index(fn, key)));
  }
  model->run(fn);
  std::map<std::string, std::vector<double>> out;
  for (const std::string &key : keys) {
    int index = model->output_index(fn, "predictions/" + key);
    EXPECT_GE(index, 0) << key;
    std::vector<double> &values = out[key];
    for (size_t i = 0; i < kX.size(); ++i)
      values.push_back(load(g::DT_FLOAT, model->output_data(fn, index), i));
  }
  return out;
}

void expectValues(const std::vector<double> &got,
                  const std::function<double(size_t)> &want,
                  const std::string &what, double tolerance = 1e-5) {
  ASSERT_EQ(got.size(), kX.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want(i), tolerance * std::max(1.0, std::abs(want(i))))
        << what << "[" << i << "]";
}

TEST(GradientsTest, TensorsVariablesGradYsAndUnconnected) {
  auto out = runPredict([](Graph &, const Tensor &x, const Tensor &u,
                           const Variable &w) {
    Tensor y = reduce_sum(multiply(sin(x), w));
    std::vector<Tensor> d = gradients({y}, std::vector<Tensor>{x, u});
    std::vector<Tensor> dw = gradients({y}, std::vector<Variable>{w});
    // Non-scalar y weighted by grad_ys (here the feature u).
    Tensor z = multiply(x, w);
    Tensor dz = gradients({z}, std::vector<Tensor>{x}, {u})[0];
    // Two ys: the sum of their gradients.
    Tensor both =
        gradients({y, square(x)}, std::vector<Tensor>{x}, {}, "both")[0];
    return Outputs{
        {"dx", d[0]}, {"du", d[1]}, {"dw", dw[0]}, {"dz", dz}, {"both", both}};
  });
  ASSERT_FALSE(out.empty());
  expectValues(
      out["dx"], [](size_t i) { return std::cos(kX[i]) * kW[i]; }, "dx");
  expectValues(out["du"], [](size_t) { return 0.0; }, "du (unconnected)");
  expectValues(out["dw"], [](size_t i) { return std::sin(kX[i]); }, "dw");
  expectValues(out["dz"], [](size_t i) { return kC[i] * kW[i]; }, "dz");
  expectValues(
      out["both"],
      [](size_t i) { return std::cos(kX[i]) * kW[i] + 2.0 * kX[i]; }, "both");
}

TEST(GradientsTest, IntermediateTensorAndTotalDerivative) {
  // y = sum(z^2), z = 2 x: dy/dz = 2 z = 4 x, dy/dx (through z) = 8 x.
  auto out = runPredict(
      [](Graph &, const Tensor &x, const Tensor &, const Variable &) {
        Tensor z = multiply(x, 2.0);
        Tensor y = reduce_sum(square(z));
        std::vector<Tensor> d = gradients({y}, std::vector<Tensor>{x, z});
        return Outputs{{"dx", d[0]}, {"dz", d[1]}};
      });
  ASSERT_FALSE(out.empty());
  expectValues(out["dx"], [](size_t i) { return 8.0 * kX[i]; }, "dx");
  expectValues(out["dz"], [](size_t i) { return 4.0 * kX[i]; }, "dz");
}

TEST(GradientsTest, SecondOrder) {
  // y = sum(x^3): dy/dx = 3 x^2, and the gradient of sum(3 x^2) is 6 x.
  auto out = runPredict(
      [](Graph &, const Tensor &x, const Tensor &, const Variable &) {
        Tensor y = reduce_sum(multiply(square(x), x));
        Tensor d = gradients({y}, std::vector<Tensor>{x})[0];
        Tensor dd = gradients({reduce_sum(d)}, std::vector<Tensor>{x})[0];
        return Outputs{{"d", d}, {"dd", dd}};
      });
  ASSERT_FALSE(out.empty());
  expectValues(out["d"], [](size_t i) { return 3.0 * kX[i] * kX[i]; }, "d");
  expectValues(out["dd"], [](size_t i) { return 6.0 * kX[i]; }, "dd");
}

TEST(GradientsTest, DenseGradientOfAGather) {
  // The rows 1, 0, 1 of w (as [3, 2] after a reshape... w itself is
  // [2, 3]): dy/dw sums each row's gathered gradient densely.
  auto out = runPredict(
      [](Graph &gr, const Tensor &, const Tensor &, const Variable &w) {
        Tensor rows =
            gather(w, gr.constant({1, 0, 1}, {3}, DType::Int32)); // [3, 3]
        Tensor y = reduce_sum(square(rows));
        return Outputs{{"dw", gradients({y}, std::vector<Variable>{w})[0]}};
      });
  ASSERT_FALSE(out.empty());
  // Row 0 once (2 w), row 1 twice (4 w).
  expectValues(
      out["dw"], [](size_t i) { return (i < 3 ? 2.0 : 4.0) * kW[i]; }, "dw");
}

TEST(ClipTest, GlobalNormAndClipping) {
  auto out = runPredict(
      [](Graph &, const Tensor &x, const Tensor &u, const Variable &) {
        Tensor norm = global_norm({x, u});
        ClippedTensors c = clip_by_global_norm({x, u}, 2.0);
        ClippedTensors big = clip_by_global_norm({x, u}, 100.0);
        Tensor rows = clip_by_norm(x, 1.0, Dims{1});
        Tensor all = clip_by_norm(u, 1.0);
        auto fill = [&](const Tensor &s) { return add(zeros_like(x), s); };
        return Outputs{{"norm", fill(norm)},
                       {"x_clipped", c.list_clipped[0]},
                       {"u_clipped", c.list_clipped[1]},
                       {"x_kept", big.list_clipped[0]},
                       {"rows", rows},
                       {"all", all}};
      });
  ASSERT_FALSE(out.empty());
  double sq = 0, sqU = 0, rowSq[2] = {0, 0};
  for (size_t i = 0; i < kX.size(); ++i) {
    sq += kX[i] * kX[i] + kC[i] * kC[i];
    sqU += kC[i] * kC[i];
    rowSq[i / 3] += kX[i] * kX[i];
  }
  double norm = std::sqrt(sq);
  expectValues(out["norm"], [&](size_t) { return norm; }, "norm");
  double scale = 2.0 / std::max(norm, 2.0);
  expectValues(
      out["x_clipped"], [&](size_t i) { return kX[i] * scale; }, "x_clipped");
  expectValues(
      out["u_clipped"], [&](size_t i) { return kC[i] * scale; }, "u_clipped");
  expectValues(out["x_kept"], [&](size_t i) { return kX[i]; }, "x_kept");
  expectValues(
      out["rows"],
      [&](size_t i) {
        return kX[i] * 1.0 / std::max(std::sqrt(rowSq[i / 3]), 1.0);
      },
      "rows");
  expectValues(
      out["all"],
      [&](size_t i) { return kC[i] / std::max(std::sqrt(sqU), 1.0); }, "all");
}

// --- Errors ------------------------------------------------------------------

/// Runs `body` inside a TRAIN mode of a graph with a [2,3] f32 feature x,
/// an i32 one n and a variable w, and returns the GraphError's message
/// (empty when none was thrown).
std::string
errorOf(const std::function<void(Graph &, const Tensor &x, const Tensor &n,
                                 Variable &w)> &body) {
  Graph graph;
  auto mode = graph.mode_scope(ModeKeys::TRAIN);
  Tensor x = graph.placeholder("x", DType::Float32, kShape);
  Tensor n = graph.placeholder("n", DType::Int32, kShape);
  Variable w = graph.get_variable("w", DType::Float32, kShape);
  try {
    body(graph, x, n, w);
  } catch (const GraphError &e) {
    return e.what();
  }
  return "";
}

TEST(GradientsErrorsTest, OneLineEach) {
  EXPECT_EQ(errorOf([](Graph &, const Tensor &, const Tensor &n, Variable &w) {
              gradients({reduce_sum(n)}, std::vector<Variable>{w});
            }),
            "gradients: ys[0] 'train/Sum' i32 [] must be a float tensor");
  EXPECT_EQ(errorOf([](Graph &, const Tensor &x, const Tensor &n, Variable &) {
              gradients({reduce_sum(x)}, std::vector<Tensor>{x, n});
            }),
            "gradients: xs[1] 'train/n' i32 [2,3] must be a float tensor");
  EXPECT_EQ(errorOf([](Graph &gr, const Tensor &x, const Tensor &, Variable &) {
              gradients({x}, std::vector<Tensor>{x},
                        {gr.constant({1, 2}, {2})});
            }),
            "gradients: grad_ys[0] 'train/Const' f32 [2] does not match "
            "ys[0] 'train/x' f32 [2,3]");
  EXPECT_EQ(errorOf([](Graph &, const Tensor &x, const Tensor &, Variable &) {
              gradients({x}, std::vector<Tensor>{});
            }),
            "gradients: xs is empty");
  EXPECT_EQ(errorOf([](Graph &, const Tensor &x, const Tensor &, Variable &) {
              clip_by_norm(x, 0.0);
            }),
            "clip_by_norm: clip_norm must be a finite number > 0, got "
            "0.000000");
  EXPECT_EQ(errorOf([](Graph &gr, const Tensor &x, const Tensor &, Variable &) {
              clip_by_global_norm({x, gr.constant(1.0, DType::Float64)}, 1.0);
            }),
            "clip_by_global_norm: t_list[1] 'train/Const' f64 [] has "
            "another dtype than t_list[0] 'train/x' f32 [2,3]");
  EXPECT_EQ(errorOf([](Graph &, const Tensor &, const Tensor &n, Variable &) {
              global_norm({n});
            }),
            "global_norm: t_list[0] 'train/n' i32 [2,3] must be a float "
            "tensor");
}

TEST(ApplyGradientsErrorsTest, OneLineEach) {
  auto opt = train::GradientDescentOptimizer(0.1);
  EXPECT_EQ(
      errorOf([&](Graph &gr, const Tensor &, const Tensor &, Variable &w) {
        opt.apply_gradients({{gr.constant({1, 2, 3}, {3}), w}});
      }),
      "apply_gradients 'train/GradientDescent': the gradient 'train/Const' "
      "f32 [3] does not match variable 'w' f32 [2,3]");
  EXPECT_EQ(
      errorOf([&](Graph &gr, const Tensor &x, const Tensor &, Variable &) {
        opt.apply_gradients({{x, Variable(&gr, "nope")}});
      }),
      "apply_gradients 'train/GradientDescent': unknown variable 'nope' (not "
      "a variable of this graph)");
  EXPECT_EQ(
      errorOf([&](Graph &, const Tensor &, const Tensor &n, Variable &w) {
        opt.apply_gradients({{n, w}});
      }),
      "apply_gradients 'train/GradientDescent': the gradient 'train/n' i32 "
      "[2,3] does not match variable 'w' f32 [2,3]");
  EXPECT_EQ(errorOf([&](Graph &, const Tensor &x, const Tensor &, Variable &w) {
              opt.apply_gradients({{x, w}, {x, w}});
            }),
            "apply_gradients 'train/GradientDescent': variable 'w' has two "
            "gradients");
  EXPECT_EQ(
      errorOf([&](Graph &, const Tensor &x, const Tensor &, Variable &w) {
        opt.apply_gradients({{x, w}}, w);
      }),
      "apply_gradients 'train/GradientDescent': global_step 'w' must be the "
      "graph's global_step variable (train::get_or_create_global_step)");
  EXPECT_EQ(errorOf([&](Graph &, const Tensor &, const Tensor &n, Variable &) {
              opt.compute_gradients(reduce_sum(n));
            }),
            "compute_gradients: the loss 'train/Sum' must be a float scalar, "
            "got i32 []");
  EXPECT_EQ(
      errorOf([&](Graph &gr, const Tensor &x, const Tensor &, Variable &w) {
        Graph other;
        auto m = other.mode_scope(ModeKeys::TRAIN);
        Variable v = other.get_variable("w", DType::Float32, kShape);
        (void)gr;
        (void)w;
        opt.apply_gradients({{x, v}});
      }),
      "apply_gradients 'train/GradientDescent': unknown variable 'w' (not a "
      "variable of this graph)");
}

} // namespace
} // namespace estc
