//===- OptimizerTest.cpp - Compiled optimizer steps vs. textbook formulas --===//
//
// Each optimizer compiled (JIT) on
//   loss = reduce_sum(c * square(w - t))      (w a [2,3] variable, t a fed
//                                              feature, c a constant)
// so the gradient 2 c (w - t) is known. @init runs, w is set to fixed values,
// then @train runs several times with a different t each step; after every
// step each variable of the compiled model (w, its slots, global_step) is
// compared with a plain double implementation of TF 1.x's update rule
// (tf.train.*Optimizer, the kernels of training_ops.cc) written here.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace estc {
namespace {

using namespace estc::testing;
namespace g = graph;

const Dims kShape = {2, 3};
const std::vector<double> kW0 = {0.5, -1.25, 2.0, 0.0, 1.5, -0.75};
const std::vector<double> kC = {1.0, 0.5, 2.0, 1.5, 0.25, 3.0};
/// The target fed at step s: kTarget[s % 3].
const std::vector<std::vector<double>> kTargets = {
    {1.0, 0.5, -1.0, 2.0, -0.5, 0.25},
    {-0.5, 1.5, 0.75, 1.0, 2.5, -1.0},
    {0.25, -2.0, 1.25, -0.25, 0.5, 0.5}};
constexpr int kSteps = 5;

/// The reference state: every variable by name (w, slots), and global_step.
struct RefState {
  std::map<std::string, std::vector<double>> vars;
  int64_t step = 0;
  std::vector<double> &slot(const std::string &name, double init) {
    auto it = vars.find(name);
    if (it == vars.end())
      it = vars.emplace(name, std::vector<double>(kW0.size(), init)).first;
    return it->second;
  }
};

/// One optimizer step of the reference on gradient `g` with learning rate
/// `lr` (the learning rate of this step; schedules pass their value).
using RefStep =
    std::function<void(RefState &, const std::vector<double> &g, double lr)>;

/// Builds the test graph; `makeTrainOp` emits the train op for the loss.
using TrainOpFn = std::function<Operation(Graph &, const Tensor &loss)>;

g::GraphDef buildGraph(const TrainOpFn &makeTrainOp) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"t", DType::Float32, kShape});
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable w = gr.get_variable("w", DType::Float32, kShape,
                                            zeros_initializer());
               Tensor c = gr.constant(kC, kShape, DType::Float32);
               Signature spec;
               spec.loss = reduce_sum(
                   multiply(c, square(subtract(gr.read_variable(w), f["t"]))));
               spec.train_op = makeTrainOp(gr, spec.loss);
               return spec;
             });
  return graph.graph_def();
}

/// Runs @init, sets w, runs @train kSteps times and compares every variable
/// with the reference after each step. `lrAt(step)` is the reference
/// learning rate at global_step `step`.
void checkSteps(const TrainOpFn &makeTrainOp, const RefStep &refStep,
                const std::function<double(int64_t)> &lrAt,
                double tolerance = 1e-5,
                const std::function<void(const RefState &, JitModel &)> &extra = {}) {
  g::GraphDef def = buildGraph(makeTrainOp);
  std::unique_ptr<JitModel> model =
      jitCompileForTest(def, "Opt", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  JitModel &m = *model;
  m.run("init");
  int wIndex = m.variable_index("w");
  Value w0;
  w0.dtype = g::DT_FLOAT;
  w0.shape = kShape;
  w0.data = kW0;
  store(w0, m.variable_data(wIndex));
  int trainFn = m.function_index("train");
  int tIn = m.input_index(trainFn, "features/t");
  ASSERT_GE(tIn, 0);

  RefState ref;
  ref.vars["w"] = kW0;
  for (int s = 0; s < kSteps; ++s) {
    Value t;
    t.dtype = g::DT_FLOAT;
    t.shape = kShape;
    t.data = kTargets[s % kTargets.size()];
    store(t, m.input_data(trainFn, tIn));
    m.run(trainFn);

    std::vector<double> grad(kW0.size());
    const std::vector<double> &w = ref.vars["w"];
    for (size_t i = 0; i < w.size(); ++i)
      grad[i] = 2 * kC[i] * (w[i] - t.data[i]);
    refStep(ref, grad, lrAt(ref.step));
    ++ref.step;

    // Every variable of the compiled model is in the reference.
    const rt::ModelSpec &spec = m.spec();
    std::set<std::string> compiled;
    for (int v = 0; v < spec.numVariables; ++v)
      compiled.insert(spec.variables[v].name);
    for (const auto &kv : ref.vars)
      EXPECT_TRUE(compiled.count(kv.first)) << kv.first << " not compiled";
    for (const std::string &name : compiled) {
      int index = m.variable_index(name);
      if (name == "global_step") {
        EXPECT_EQ(load(g::DT_INT64, m.variable_data(index), 0),
                  static_cast<double>(ref.step));
        continue;
      }
      auto it = ref.vars.find(name);
      if (it == ref.vars.end()) {
        ADD_FAILURE() << "unexpected variable " << name;
        continue;
      }
      for (size_t i = 0; i < it->second.size(); ++i) {
        double want = it->second[i];
        double got = load(g::DT_FLOAT, m.variable_data(index), i);
        EXPECT_NEAR(got, want, tolerance * std::max(1.0, std::abs(want)))
            << name << "[" << i << "] after step " << s + 1;
      }
    }
  }
  if (extra)
    extra(ref, m);
}

std::function<double(int64_t)> constantLr(double lr) {
  return [lr](int64_t) { return lr; };
}

TrainOpFn minimizeWith(const train::Optimizer &opt) {
  return [opt](Graph &, const Tensor &loss) { return opt.minimize(loss); };
}

// --- Reference update rules (TF 1.x training_ops.cc) ------------------------

RefStep sgdRef() {
  return [](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i)
      w[i] -= lr * g[i];
  };
}

RefStep momentumRef(double momentum, bool nesterov) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &a = s.slot("w/Momentum", 0.0);
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      a[i] = momentum * a[i] + g[i];
      w[i] -= nesterov ? lr * g[i] + lr * momentum * a[i] : lr * a[i];
    }
  };
}

RefStep adagradRef(double init) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Adagrad", init);
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      acc[i] += g[i] * g[i];
      w[i] -= lr * g[i] / std::sqrt(acc[i]);
    }
  };
}

RefStep adamRef(double b1, double b2, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/Adam", 0.0);
    std::vector<double> &v = s.slot("w/Adam_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    double t = static_cast<double>(s.step + 1);
    double lrT = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lrT * m[i] / (std::sqrt(v[i]) + eps);
    }
  };
}

RefStep rmspropRef(double decay, double momentum, double eps, bool centered) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &ms = s.slot("w/RMSProp", 1.0);
    std::vector<double> *mg =
        centered ? &s.slot("w/RMSProp_1", 0.0) : nullptr;
    std::vector<double> &mom =
        s.slot(centered ? "w/RMSProp_2" : "w/RMSProp_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      ms[i] = decay * ms[i] + (1 - decay) * g[i] * g[i];
      double denom = ms[i];
      if (centered) {
        (*mg)[i] = decay * (*mg)[i] + (1 - decay) * g[i];
        denom -= (*mg)[i] * (*mg)[i];
      }
      mom[i] = momentum * mom[i] + lr * g[i] / std::sqrt(denom + eps);
      w[i] -= mom[i];
    }
  };
}

RefStep ftrlRef(double lrPower, double init, double l1, double l2) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Ftrl", init);
    std::vector<double> &lin = s.slot("w/Ftrl_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      double newAcc = acc[i] + g[i] * g[i];
      lin[i] += g[i] - (std::pow(newAcc, -lrPower) - std::pow(acc[i], -lrPower)) /
                           lr * w[i];
      double quad = std::pow(newAcc, -lrPower) / lr + 2 * l2;
      w[i] = std::abs(lin[i]) > l1
                 ? ((lin[i] > 0 ? l1 : -l1) - lin[i]) / quad
                 : 0.0;
      acc[i] = newAcc;
    }
  };
}

// --- Optimizers --------------------------------------------------------------

TEST(OptimizerTest, Sgd) {
  checkSteps(minimizeWith(train::GradientDescentOptimizer(0.05)), sgdRef(),
             constantLr(0.05));
}

TEST(OptimizerTest, Momentum) {
  checkSteps(minimizeWith(train::MomentumOptimizer(0.05, 0.9)),
             momentumRef(0.9, false), constantLr(0.05));
}

TEST(OptimizerTest, MomentumNesterov) {
  checkSteps(minimizeWith(train::MomentumOptimizer(0.05, 0.8, true)),
             momentumRef(0.8, true), constantLr(0.05));
}

TEST(OptimizerTest, Adagrad) {
  checkSteps(minimizeWith(train::AdagradOptimizer(0.3, 0.25)),
             adagradRef(0.25), constantLr(0.3));
}

TEST(OptimizerTest, AdamBiasCorrection) {
  // Large learning rate and beta2 close to 1: bias correction dominates the
  // first steps (lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)).
  checkSteps(minimizeWith(train::AdamOptimizer(0.1, 0.8, 0.99, 1e-6)),
             adamRef(0.8, 0.99, 1e-6), constantLr(0.1));
}

TEST(OptimizerTest, RmsProp) {
  checkSteps(minimizeWith(train::RMSPropOptimizer(0.01, 0.9, 0.0, 1e-6)),
             rmspropRef(0.9, 0.0, 1e-6, false), constantLr(0.01));
}

TEST(OptimizerTest, RmsPropMomentum) {
  checkSteps(minimizeWith(train::RMSPropOptimizer(0.01, 0.8, 0.7, 1e-6)),
             rmspropRef(0.8, 0.7, 1e-6, false), constantLr(0.01));
}

TEST(OptimizerTest, RmsPropCenteredMomentum) {
  checkSteps(
      minimizeWith(train::RMSPropOptimizer(0.01, 0.8, 0.5, 1e-6, true)),
      rmspropRef(0.8, 0.5, 1e-6, true), constantLr(0.01));
}

TEST(OptimizerTest, Ftrl) {
  checkSteps(minimizeWith(train::FtrlOptimizer(0.2, -0.5, 0.1)),
             ftrlRef(-0.5, 0.1, 0.0, 0.0), constantLr(0.2));
}

TEST(OptimizerTest, FtrlL1L2Sparsity) {
  // l1 = 2: weights whose |linear| <= l1 are exactly 0 (both sides); the
  // others are shrunk towards 0. Power -0.6 exercises the general pow path.
  checkSteps(minimizeWith(train::FtrlOptimizer(0.5, -0.6, 0.1, 2.0, 0.5)),
             ftrlRef(-0.6, 0.1, 2.0, 0.5), constantLr(0.5), 1e-5,
             [](const RefState &s, JitModel &m) {
               const std::vector<double> &w = s.vars.at("w");
               const std::vector<double> &lin = s.vars.at("w/Ftrl_1");
               void *compiled = m.variable_data(m.variable_index("w"));
               int zeros = 0;
               for (size_t i = 0; i < w.size(); ++i)
                 if (std::abs(lin[i]) <= 2.0) {
                   EXPECT_EQ(w[i], 0.0);
                   EXPECT_EQ(load(g::DT_FLOAT, compiled, i), 0.0)
                       << "w[" << i << "] is not exactly 0";
                   ++zeros;
                 }
               EXPECT_GT(zeros, 0) << "the case does not exercise l1";
               EXPECT_LT(zeros, static_cast<int>(w.size()));
             });
}

} // namespace
} // namespace estc
