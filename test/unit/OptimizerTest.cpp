//===- OptimizerTest.cpp - Compiled optimizer steps vs. formulas ---------===//
//
// Each optimizer compiled (JIT) on
//   loss = reduce_sum(c * square(w - t))      (w a [2,3] variable, t a fed
//                                              feature, c a constant)
// so the gradient 2 c (w - t) is known. @init runs, w is set to fixed values,
// then @train runs several times with a different t each step; after every
// step each variable of the compiled model (w, its slots, global_step) is
// compared with TF 1.x's update rule (tf.train.*Optimizer) written here as
// the kernels of training_ops.cc compute it: in float32, in their order,
// with the hyperparameters float32 tensors (so 1 - beta2 is 1.0f - 0.999f,
// not the double 1 - 0.999 rounded). The *FollowTfFloat32 tests compare
// the slots bit for bit.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Gradients.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "test/unit/FileTesting.h"
#include "test/unit/ModelTesting.h"

#include <gtest/gtest.h>

#include <algorithm>
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
/// `lr` (the learning rate of this step; schedules pass their value). The
/// state holds float values; the rules compute in float.
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
/// learning rate at global_step `step`. `extra` runs at the end,
/// `afterStep` after each step (its index, from 0).
void checkSteps(
    const TrainOpFn &makeTrainOp, const RefStep &refStep,
    const std::function<double(int64_t)> &lrAt, double tolerance = 1e-5,
    const std::function<void(const RefState &, JitModel &)> &extra = {},
    const std::function<void(std::vector<double> &grad,
                             const std::vector<double> &w)> &adjustGrad = {},
    const std::function<void(int, const RefState &, JitModel &)> &afterStep =
        {}) {
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

    // The gradient as the graph computes it, in float: c * 2 (w - t) (the
    // factor 2 is exact, so any order gives these bits).
    std::vector<double> grad(kW0.size());
    const std::vector<double> &w = ref.vars["w"];
    for (size_t i = 0; i < w.size(); ++i)
      grad[i] =
          2.0f * (static_cast<float>(kC[i]) *
                  (static_cast<float>(w[i]) - static_cast<float>(t.data[i])));
    if (adjustGrad)
      adjustGrad(grad, w);
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
    if (afterStep)
      afterStep(s, ref, m);
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
// In float, as the kernels compute in T = float; a hyperparameter is the
// float of the Python value (TF's float32 tensor).

float f(double x) { return static_cast<float>(x); }

RefStep sgdRef() {
  return [](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = f(w[i]) - f(g[i]) * f(lr); // var -= grad * lr
  };
}

RefStep momentumRef(double momentum, bool nesterov) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &a = s.slot("w/Momentum", 0.0);
    std::vector<double> &w = s.vars["w"];
    float m = f(momentum), r = f(lr);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float accum = f(a[i]) * m + gi; // accum = accum * momentum + grad
      a[i] = accum;
      // var -= accum * lr, or var -= grad * lr + accum * momentum * lr
      w[i] =
          nesterov ? f(w[i]) - (gi * r + accum * m * r) : f(w[i]) - accum * r;
    }
  };
}

RefStep adagradRef(double init) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Adagrad", f(init));
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float accum = f(acc[i]) + gi * gi; // accum += grad.square()
      acc[i] = accum;
      // var -= grad * lr * accum.rsqrt()
      w[i] = f(w[i]) - gi * f(lr) * (1.0f / std::sqrt(accum));
    }
  };
}

/// TF 1.x's beta1_power / beta2_power variables: beta, multiplied by beta
/// after every step, in float.
float betaPower(double beta, int64_t t) {
  float power = f(beta);
  for (int64_t i = 1; i < t; ++i)
    power = power * f(beta);
  return power;
}

RefStep adamRef(double b1, double b2, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/Adam", 0.0);
    std::vector<double> &v = s.slot("w/Adam_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    int64_t t = s.step + 1;
    // alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    float alpha =
        f(lr) * std::sqrt(1.0f - betaPower(b2, t)) / (1.0f - betaPower(b1, t));
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float mi = f(m[i]) + (gi - f(m[i])) * (1.0f - f(b1)); // m += (g-m)(1-b1)
      float vi = f(v[i]) + (gi * gi - f(v[i])) * (1.0f - f(b2));
      m[i] = mi;
      v[i] = vi;
      w[i] = f(w[i]) - (mi * alpha) / (std::sqrt(vi) + f(eps));
    }
    // _finish: the powers times the betas, for the next step.
    s.vars["beta1_power"] = {betaPower(b1, t + 1)};
    s.vars["beta2_power"] = {betaPower(b2, t + 1)};
  };
}

RefStep rmspropRef(double decay, double momentum, double eps, bool centered) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &ms = s.slot("w/RMSProp", 1.0);
    std::vector<double> *mg = centered ? &s.slot("w/RMSProp_1", 0.0) : nullptr;
    std::vector<double> &mom =
        s.slot(centered ? "w/RMSProp_2" : "w/RMSProp_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float c = 1.0f - f(decay);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float msi = f(ms[i]) + (gi * gi - f(ms[i])) * c; // ms += (g^2-ms)(1-rho)
      ms[i] = msi;
      float denom = msi;
      if (centered) {
        float mgi = f((*mg)[i]) + (gi - f((*mg)[i])) * c;
        (*mg)[i] = mgi;
        denom = msi - mgi * mgi;
      }
      // mom = mom * momentum + grad * lr / sqrt(denom + epsilon)
      float momi =
          f(mom[i]) * f(momentum) + (gi * f(lr)) / std::sqrt(denom + f(eps));
      mom[i] = momi;
      w[i] = f(w[i]) - momi;
    }
  };
}

RefStep ftrlRef(double lrPower, double init, double l1, double l2) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Ftrl", f(init));
    std::vector<double> &lin = s.slot("w/Ftrl_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float p = -f(lrPower), r = f(lr), fl1 = f(l1), fl2 = f(l2);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]), a = f(acc[i]);
      float newAcc = a + gi * gi;
      float linear = f(lin[i]) + (gi - (std::pow(newAcc, p) - std::pow(a, p)) /
                                           r * f(w[i]));
      float quad = std::pow(newAcc, p) / r + 2.0f * fl2;
      lin[i] = linear;
      w[i] = std::abs(linear) > fl1
                 ? ((linear > 0 ? fl1 : -fl1) - linear) / quad
                 : 0.0f;
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
  checkSteps(minimizeWith(train::AdagradOptimizer(0.3, 0.25)), adagradRef(0.25),
             constantLr(0.3));
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
  checkSteps(minimizeWith(train::RMSPropOptimizer(0.01, 0.8, 0.5, 1e-6, true)),
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

// --- TF's float32 constants, bit for bit -------------------------------------
// TF's kernels compute `T(1) - beta()` in float from the float32 tensor of
// beta: 1 - beta2 = 1.0f - 0.999f = 0.00099998713, where the float of the
// double 1 - 0.999 is 0.0010000000475 (1.3e-5 larger). From zero slots the
// first step's slots are products with those constants only, so they must
// equal the reference bit for bit; later steps stay within float32 noise
// (2e-6), well below the 1.3e-5 of the double rounding.

/// After the first step `exact` slots equal the reference's bits; after
/// every step `close` slots are within 2e-6 of it, relatively.
std::function<void(int, const RefState &, JitModel &)>
slotsFollowTf(std::vector<std::string> exact, std::vector<std::string> close) {
  return [=](int s, const RefState &ref, JitModel &m) {
    auto compare = [&](const std::string &name, bool bits) {
      const std::vector<double> &want = ref.vars.at(name);
      void *data = m.variable_data(m.variable_index(name));
      for (size_t i = 0; i < want.size(); ++i) {
        float got = static_cast<float>(load(g::DT_FLOAT, data, i));
        if (bits)
          EXPECT_EQ(got, static_cast<float>(want[i]))
              << name << "[" << i << "] after step " << s + 1;
        else
          EXPECT_NEAR(got, want[i], 2e-6 * std::abs(want[i]))
              << name << "[" << i << "] after step " << s + 1;
      }
    };
    if (s == 0)
      for (const std::string &name : exact)
        compare(name, true);
    for (const std::string &name : close)
      compare(name, false);
  };
}

TEST(OptimizerTest, AdamSlotsFollowTfFloat32) {
  // TF's defaults: beta1 0.9, beta2 0.999, epsilon 1e-8.
  checkSteps(minimizeWith(train::AdamOptimizer(0.001)),
             adamRef(0.9, 0.999, 1e-8), constantLr(0.001), 1e-5, {}, {},
             slotsFollowTf({"w/Adam", "w/Adam_1"}, {"w/Adam_1"}));
}

TEST(OptimizerTest, RmsPropSlotsFollowTfFloat32) {
  // ms starts at 1: ms += (g^2 - ms) (1.0f - 0.9f).
  checkSteps(minimizeWith(train::RMSPropOptimizer(0.01, 0.9, 0.5, 1e-6, true)),
             rmspropRef(0.9, 0.5, 1e-6, true), constantLr(0.01), 1e-5, {}, {},
             slotsFollowTf({"w/RMSProp", "w/RMSProp_1"},
                           {"w/RMSProp", "w/RMSProp_1"}));
}

// --- Keras 2.15's rules (tf.keras.optimizers: keras/src/optimizers/*.py) ---

RefStep kerasSgdRef(double momentum, bool nesterov) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/momentum", 0.0);
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      float step = -f(g[i]) * f(lr);
      float mi = step + f(m[i]) * f(momentum); // m = -g lr + m momentum
      m[i] = mi;
      w[i] = f(w[i]) + (nesterov ? step + mi * f(momentum) : mi);
    }
  };
}

RefStep kerasRmspropRef(double rho, double momentum, double eps,
                        bool centered) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &vel = s.slot("w/velocity", 0.0);
    std::vector<double> *ag =
        centered ? &s.slot("w/average_gradient", 0.0) : nullptr;
    std::vector<double> *mom =
        momentum > 0 ? &s.slot("w/momentum", 0.0) : nullptr;
    std::vector<double> &w = s.vars["w"];
    float c = f(1.0 - rho);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float v = f(rho) * f(vel[i]) + c * gi * gi;
      vel[i] = v;
      float denom = v;
      if (centered) {
        float a = f(rho) * f((*ag)[i]) + c * gi;
        (*ag)[i] = a;
        denom = v - a * a;
      }
      float inc = f(lr) * gi / std::sqrt(denom + f(eps));
      if (mom) {
        float mi = f(momentum) * f((*mom)[i]) + inc;
        (*mom)[i] = mi;
        w[i] = f(w[i]) - mi;
      } else {
        w[i] = f(w[i]) - inc;
      }
    }
  };
}

RefStep kerasAdagradRef(double init, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/accumulator", f(init));
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float a = f(acc[i]) + gi * gi;
      acc[i] = a;
      w[i] = f(w[i]) - f(lr) * gi / std::sqrt(a + f(eps));
    }
  };
}

RefStep kerasAdamRef(double b1, double b2, double eps, bool amsgrad) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/m", 0.0);
    std::vector<double> &v = s.slot("w/v", 0.0);
    std::vector<double> *vhat =
        amsgrad ? &s.slot("w/velocity_hat", 0.0) : nullptr;
    std::vector<double> &w = s.vars["w"];
    float t = static_cast<float>(s.step + 1);
    float alpha = f(lr) * std::sqrt(1.0f - std::pow(f(b2), t)) /
                  (1.0f - std::pow(f(b1), t));
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float mi = f(m[i]) + (gi - f(m[i])) * f(1.0 - b1);
      float vi = f(v[i]) + (gi * gi - f(v[i])) * f(1.0 - b2);
      m[i] = mi;
      v[i] = vi;
      if (vhat) {
        vi = std::max(f((*vhat)[i]), vi);
        (*vhat)[i] = vi;
      }
      w[i] = f(w[i]) - (mi * alpha) / (std::sqrt(vi) + f(eps));
    }
  };
}

TEST(KerasOptimizerTest, SgdMomentumOnASchedule) {
  // lr inside the accumulator: with a decaying rate Keras's momentum and TF
  // 1.x's differ.
  auto lr = [](int64_t s) { return 0.1 * std::pow(0.5, s / 2.0); };
  checkSteps(
      [](Graph &g, const Tensor &loss) {
        return train::KerasSGDOptimizer(
                   train::exponential_decay(0.1, g.global_step(), 2.0, 0.5),
                   0.9)
            .minimize(loss);
      },
      kerasSgdRef(0.9, false), lr);
}

TEST(KerasOptimizerTest, SgdNesterov) {
  checkSteps(minimizeWith(train::KerasSGDOptimizer(0.05, 0.8, true)),
             kerasSgdRef(0.8, true), constantLr(0.05));
}

TEST(KerasOptimizerTest, SgdWithoutMomentumHasNoSlot) {
  checkSteps(minimizeWith(train::KerasSGDOptimizer(0.05)), sgdRef(),
             constantLr(0.05));
}

TEST(KerasOptimizerTest, RmsProp) {
  checkSteps(minimizeWith(train::KerasRMSpropOptimizer(0.01, 0.9, 0.0, 1e-6)),
             kerasRmspropRef(0.9, 0.0, 1e-6, false), constantLr(0.01));
}

TEST(KerasOptimizerTest, RmsPropCenteredMomentum) {
  checkSteps(
      minimizeWith(train::KerasRMSpropOptimizer(0.01, 0.8, 0.5, 1e-6, true)),
      kerasRmspropRef(0.8, 0.5, 1e-6, true), constantLr(0.01));
}

TEST(KerasOptimizerTest, AdagradEpsilonInsideTheRoot) {
  checkSteps(minimizeWith(train::KerasAdagradOptimizer(0.3, 0.25, 1e-3)),
             kerasAdagradRef(0.25, 1e-3), constantLr(0.3));
}

TEST(KerasOptimizerTest, Adam) {
  checkSteps(minimizeWith(train::KerasAdamOptimizer(0.1, 0.8, 0.99, 1e-6)),
             kerasAdamRef(0.8, 0.99, 1e-6, false), constantLr(0.1));
}

TEST(KerasOptimizerTest, AdamAmsgrad) {
  checkSteps(
      minimizeWith(train::KerasAdamOptimizer(0.1, 0.8, 0.99, 1e-6, true)),
      kerasAdamRef(0.8, 0.99, 1e-6, true), constantLr(0.1));
}

TEST(ClipGradientsTest, ClipsByValue) {
  // Keras's clipvalue: each gradient element into [-0.5, 0.5].
  checkSteps(
      minimizeWith(
          train::KerasSGDOptimizer(0.05, 0.9).clip_gradients_by_value(0.5)),
      kerasSgdRef(0.9, false), constantLr(0.05), 1e-5, {},
      [](std::vector<double> &g, const std::vector<double> &) {
        bool clipped = false;
        for (double &v : g) {
          clipped |= std::abs(v) > 0.5;
          v = std::clamp(v, -0.5, 0.5);
        }
        EXPECT_TRUE(clipped) << "the case does not clip";
      });
}

// --- Learning-rate schedules (tf.compat.v1.train.*) -------------------------
// SGD (and Adam) with the learning rate a Tensor computed from global_step;
// the reference learning rate is the formula at the step before the update.

TrainOpFn scheduled(const std::function<Tensor(Graph &)> &lr,
                    const std::string &kind = "sgd") {
  return [=](Graph &g, const Tensor &loss) {
    Tensor rate = lr(g);
    train::Optimizer opt = kind == "adam"
                               ? train::AdamOptimizer(rate, 0.8, 0.99, 1e-6)
                               : train::GradientDescentOptimizer(rate);
    return opt.minimize(loss);
  };
}

TEST(LearningRateScheduleTest, ExponentialDecay) {
  checkSteps(scheduled([](Graph &g) {
               return train::exponential_decay(0.1, g.global_step(), 2.0, 0.5);
             }),
             sgdRef(), [](int64_t s) { return 0.1 * std::pow(0.5, s / 2.0); });
}

TEST(LearningRateScheduleTest, ExponentialDecayStaircase) {
  checkSteps(
      scheduled([](Graph &g) {
        return train::exponential_decay(0.1, g.global_step(), 2.0, 0.5, true);
      }),
      sgdRef(),
      [](int64_t s) { return 0.1 * std::pow(0.5, std::floor(s / 2.0)); });
}

TEST(LearningRateScheduleTest, ExponentialDecayAdam) {
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::exponential_decay(0.1, g.global_step(), 3.0,
                                                   0.7);
                 },
                 "adam"),
             adamRef(0.8, 0.99, 1e-6),
             [](int64_t s) { return 0.1 * std::pow(0.7, s / 3.0); });
}

TEST(LearningRateScheduleTest, PiecewiseConstant) {
  checkSteps(scheduled([](Graph &g) {
               return train::piecewise_constant(g.global_step(), {1, 3},
                                                {0.1, 0.05, 0.01});
             }),
             sgdRef(), [](int64_t s) {
               return s <= 1 ? 0.1 : s <= 3 ? 0.05 : 0.01;
             });
}

double polynomial(int64_t step, double lr, double decaySteps, double end,
                  double power, bool cycle) {
  double s = static_cast<double>(step), d = decaySteps;
  if (cycle)
    d = decaySteps * (s == 0 ? 1.0 : std::ceil(s / decaySteps));
  else
    s = std::min(s, d);
  return (lr - end) * std::pow(1 - s / d, power) + end;
}

TEST(LearningRateScheduleTest, PolynomialDecay) {
  checkSteps(
      scheduled([](Graph &g) {
        return train::polynomial_decay(0.1, g.global_step(), 3.0, 0.01, 2.0);
      }),
      sgdRef(),
      [](int64_t s) { return polynomial(s, 0.1, 3.0, 0.01, 2.0, false); });
}

TEST(LearningRateScheduleTest, PolynomialDecayCycle) {
  checkSteps(scheduled([](Graph &g) {
               return train::polynomial_decay(0.1, g.global_step(), 3.0, 0.01,
                                              0.5, true);
             }),
             sgdRef(), [](int64_t s) {
               return polynomial(s, 0.1, 3.0, 0.01, 0.5, true);
             });
}

TEST(LearningRateScheduleTest, CosineDecay) {
  checkSteps(scheduled([](Graph &g) {
               return train::cosine_decay(0.1, g.global_step(), 3.0, 0.2);
             }),
             sgdRef(), [](int64_t s) {
               double p = std::min(static_cast<double>(s), 3.0) / 3.0;
               return 0.1 * (0.8 * 0.5 * (1 + std::cos(M_PI * p)) + 0.2);
             });
}

TEST(LearningRateScheduleTest, BadArguments) {
  Graph g;
  g.get_variable("v", DType::Float32, {2});
  Tensor step = g.global_step();
  auto throwsWith = [](const std::function<void()> &fn,
                       const std::string &text) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const GraphError &e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos)
          << e.what();
    }
  };
  throwsWith([&] { train::exponential_decay(0.1, step, 0.0, 0.5); },
             "exponential_decay: decay_steps must be > 0");
  throwsWith(
      [&] { train::noisy_linear_cosine_decay(0.1, step, 4.0, -0.5); },
      "noisy_linear_cosine_decay: initial_variance must be >= 0, got -0.5");
  throwsWith([&] { train::noisy_linear_cosine_decay(0.1, step, 0.0); },
             "noisy_linear_cosine_decay: decay_steps must be > 0");
  throwsWith([&] { train::piecewise_constant(step, {1, 3}, {0.1, 0.2}); },
             "piecewise_constant: 2 values for 2 boundaries");
  throwsWith([&] { train::piecewise_constant(step, {3, 1}, {1, 2, 3}); },
             "piecewise_constant: boundaries must increase");
  throwsWith(
      [&] {
        train::cosine_decay(0.1, g.constant({1, 2}, {2}, DType::Int64), 3.0);
      },
      "cosine_decay: global_step");
  throwsWith(
      [&] {
        train::GradientDescentOptimizer(g.constant({1, 2}, {2}))
            .minimize(g.constant(1.0));
      },
      "must be a float scalar");
  throwsWith(
      [&] { train::AdamOptimizer(0.1).clip_gradients_by_global_norm(0); },
      "clip_norm must be a finite number > 0");
  throwsWith(
      [&] { train::KerasAdamOptimizer(0.1).clip_gradients_by_value(-1); },
      "clip_gradients_by_value: clip_value must be a finite number > 0");
  throwsWith([&] { losses::l2_regularizer(-1.0); },
             "l2_regularizer: scale must be a finite number >= 0");
  Tensor table = g.constant({1, 2, 3, 4}, {2, 2});
  throwsWith(
      [&] {
        scatter_add(table, g.constant({0, 1}, {2}, DType::Int64),
                    g.constant({1, 2, 3}, {1, 3}));
      },
      "must have the shape indices + ref[1:] = [2,2]");
  throwsWith(
      [&] {
        scatter_update(table, g.constant({0}, {1}, DType::Int64),
                       g.constant({1, 2}, {1, 2}, DType::Float64));
      },
      "ref and updates must have one dtype");
}

// --- Gradient clipping and regularization ------------------------------------

/// tf.clip_by_global_norm of the reference gradient (one variable).
void clipRef(std::vector<double> &g, double clip) {
  double sum = 0;
  for (double v : g)
    sum += v * v;
  double scale = clip / std::max(std::sqrt(sum), clip);
  for (double &v : g)
    v *= scale;
}

TEST(ClipGradientsTest, ClipsByGlobalNorm) {
  // The gradients' global norm is > 10 at first, so clipping is active.
  checkSteps(minimizeWith(train::MomentumOptimizer(0.05, 0.9)
                              .clip_gradients_by_global_norm(2.0)),
             momentumRef(0.9, false), constantLr(0.05), 1e-5, {},
             [](std::vector<double> &g, const std::vector<double> &) {
               double sum = 0;
               for (double v : g)
                 sum += v * v;
               EXPECT_GT(std::sqrt(sum), 2.0) << "the case does not clip";
               clipRef(g, 2.0);
             });
}

TEST(ClipGradientsTest, NoChangeBelowTheNorm) {
  checkSteps(minimizeWith(train::GradientDescentOptimizer(0.05)
                              .clip_gradients_by_global_norm(1e6)),
             sgdRef(), constantLr(0.05));
}

TrainOpFn regularized(const losses::Regularizer &regularizer,
                      const train::Optimizer &opt) {
  return [=](Graph &g, const Tensor &loss) {
    losses::add_regularization_loss(regularizer,
                                    g.read_variable(*g.find_variable("w")));
    return opt.minimize(add(loss, losses::get_regularization_loss(g)));
  };
}

TEST(RegularizationTest, L2) {
  checkSteps(regularized(losses::l2_regularizer(0.3),
                         train::GradientDescentOptimizer(0.05)),
             sgdRef(), constantLr(0.05), 1e-5, {},
             [](std::vector<double> &g, const std::vector<double> &w) {
               for (size_t i = 0; i < g.size(); ++i)
                 g[i] += 0.3 * w[i];
             });
}

TEST(RegularizationTest, L1) {
  checkSteps(regularized(losses::l1_regularizer(0.2),
                         train::GradientDescentOptimizer(0.05)),
             sgdRef(), constantLr(0.05), 1e-5, {},
             [](std::vector<double> &g, const std::vector<double> &w) {
               for (size_t i = 0; i < g.size(); ++i)
                 g[i] += 0.2 * (w[i] > 0 ? 1.0 : w[i] < 0 ? -1.0 : 0.0);
             });
}

TEST(RegularizationTest, DenseKernelRegularizerAndTotalLoss) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {2, 3}});
  std::string lossName, featureName;
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               EXPECT_THROW(losses::get_total_loss(gr), GraphError);
               Tensor y = layers::dense(
                   f["x"], 2, nullptr, false, constant_initializer(0.5),
                   zeros_initializer(), "", losses::l2_regularizer(0.1));
               EXPECT_EQ(gr.get_collection("regularization_losses").size(), 1u);
               losses::mean_squared_error(
                   gr.constant({0, 0, 0, 0}, {2, 2}, DType::Float32), y);
               EXPECT_EQ(gr.get_collection("losses").size(), 1u);
               Signature spec;
               spec.loss = losses::get_total_loss(gr);
               lossName = spec.loss.name();
               featureName = f["x"].name();
               spec.train_op =
                   train::GradientDescentOptimizer(0.1).minimize(spec.loss);
               return spec;
             });
  // Collections are per mode.
  build_mode(graph, ModeKeys::EVAL, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               EXPECT_TRUE(gr.get_collection("losses").empty());
               Signature spec;
               spec.loss = reduce_sum(f["x"]);
               return spec;
             });
  g::GraphDef def = graph.graph_def();
  reference::Evaluator evaluator(def);
  Value k;
  k.dtype = g::DT_FLOAT;
  k.shape = {3, 2};
  k.data.assign(6, 0.5);
  evaluator.variables()["dense/kernel"] = k;
  Value x;
  x.dtype = g::DT_FLOAT;
  x.shape = {2, 3};
  x.data = {1, 2, 3, -1, 0.5, 2};
  double got = evaluator.evaluate({lossName}, {{featureName, x}})[0].data[0];
  // x . K: every column of row 0 is 3, of row 1 0.75; mse over 4 elements;
  // l2: 0.1 * sum(K^2) / 2 = 0.075.
  double want = (2 * 9.0 + 2 * 0.5625) / 4 + 0.075;
  EXPECT_NEAR(got, want, 1e-6);
}

// --- Variables the loss does not depend on -----------------------------------

TEST(UnusedVariablesTest, GetNoUpdateAndNoSlots) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"t", DType::Float32, kShape});
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable w = gr.get_variable("w", DType::Float32, kShape,
                                            ones_initializer());
               Variable u = gr.get_variable("u", DType::Float32, {4},
                                            constant_initializer(2.5));
               (void)gr.read_variable(u); // read, but not part of the loss
               Signature spec;
               spec.loss =
                   reduce_sum(square(subtract(gr.read_variable(w), f["t"])));
               spec.train_op = train::AdamOptimizer(0.1).minimize(spec.loss);
               return spec;
             });
  std::unique_ptr<JitModel> model =
      jitCompileForTest(graph.graph_def(), "Unused", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  JitModel &m = *model;
  m.run("init");
  int trainFn = m.function_index("train");
  Value t;
  t.dtype = g::DT_FLOAT;
  t.shape = kShape;
  t.data = kTargets[0];
  store(t, m.input_data(trainFn, m.input_index(trainFn, "features/t")));
  for (int s = 0; s < 3; ++s)
    m.run(trainFn);
  std::set<std::string> names;
  for (int v = 0; v < m.spec().numVariables; ++v)
    names.insert(m.spec().variables[v].name);
  EXPECT_TRUE(names.count("w/Adam"));
  EXPECT_FALSE(names.count("u/Adam")) << "a slot for an unused variable";
  EXPECT_FALSE(names.count("u/Adam_1"));
  void *u = m.variable_data(m.variable_index("u"));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(load(g::DT_FLOAT, u, i), 2.5);
  void *w = m.variable_data(m.variable_index("w"));
  EXPECT_NE(load(g::DT_FLOAT, w, 1), 1.0) << "the used variable is trained";
  EXPECT_EQ(
      load(g::DT_INT64, m.variable_data(m.variable_index("global_step")), 0),
      3.0);
}

// --- Several optimizers in one train_op --------------------------------------
// train_op = group(Ftrl.minimize(loss, {w}), group(Adagrad.minimize(loss,
// {v}), Adam.minimize(loss, {u})), assign_add(calls, 1)), loss the sum of
// c * (var - t)^2 over w, v and u: each variable follows its optimizer with
// the gradient of the values before the step (as TF's group of minimizes
// over disjoint var_lists, how DNNLinearCombined trains), the assignment
// runs, and global_step goes up once per step (adam's t too).

TEST(GroupedOptimizersTest, EachVarListFollowsItsOptimizer) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"t", DType::Float32, kShape});
  build_mode(
      graph, ModeKeys::TRAIN, inputs,
      [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
        Tensor c = gr.constant(kC, kShape, DType::Float32);
        std::vector<Variable> vars;
        Tensor loss;
        for (const char *name : {"w", "v", "u"}) {
          vars.push_back(gr.get_variable(name, DType::Float32, kShape,
                                         zeros_initializer()));
          Tensor term = reduce_sum(multiply(
              c, square(subtract(gr.read_variable(vars.back()), f["t"]))));
          loss = loss.valid() ? add(loss, term) : term;
        }
        Variable calls = gr.get_variable("calls", DType::Float32, {},
                                         zeros_initializer(), false);
        Signature spec;
        spec.loss = loss;
        spec.train_op = group(
            {train::FtrlOptimizer(0.2).minimize(loss, {vars[0]}),
             group({train::AdagradOptimizer(0.1).minimize(loss, {vars[1]}),
                    train::AdamOptimizer(0.05).minimize(loss, {vars[2]})}),
             assign_add(calls, gr.constant(1.0))});
        return spec;
      });
  std::unique_ptr<JitModel> model = jitCompileForTest(
      graph.graph_def(), "Grouped", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  JitModel &m = *model;
  m.run("init");
  Value start;
  start.dtype = g::DT_FLOAT;
  start.shape = kShape;
  start.data = kW0;
  for (const char *name : {"w", "v", "u"})
    store(start, m.variable_data(m.variable_index(name)));
  int trainFn = m.function_index("train");
  int tIn = m.input_index(trainFn, "features/t");
  ASSERT_GE(tIn, 0);

  // One reference per variable, each naming its variable "w".
  struct Ref {
    const char *name;
    RefStep step;
    double lr;
    RefState state;
  };
  std::vector<Ref> refs = {{"w", ftrlRef(-0.5, 0.1, 0.0, 0.0), 0.2, {}},
                           {"v", adagradRef(0.1), 0.1, {}},
                           {"u", adamRef(0.9, 0.999, 1e-8), 0.05, {}}};
  for (Ref &r : refs)
    r.state.vars["w"] = kW0;
  for (int s = 0; s < kSteps; ++s) {
    Value t;
    t.dtype = g::DT_FLOAT;
    t.shape = kShape;
    t.data = kTargets[s % kTargets.size()];
    store(t, m.input_data(trainFn, tIn));
    m.run(trainFn);
    for (Ref &r : refs) {
      const std::vector<double> &w = r.state.vars["w"];
      std::vector<double> grad(w.size());
      for (size_t i = 0; i < w.size(); ++i)
        grad[i] =
            2.0f * (static_cast<float>(kC[i]) *
                    (static_cast<float>(w[i]) - static_cast<float>(t.data[i])));
      r.step(r.state, grad, r.lr);
      ++r.state.step;
      for (const auto &[refName, values] : r.state.vars) {
        // w/Adam -> u/Adam; Adam's beta powers are not per variable.
        std::string name =
            refName.rfind("w", 0) == 0 ? r.name + refName.substr(1) : refName;
        int index = m.variable_index(name);
        ASSERT_GE(index, 0) << name;
        for (size_t i = 0; i < values.size(); ++i)
          EXPECT_NEAR(load(g::DT_FLOAT, m.variable_data(index), i), values[i],
                      1e-5 * std::max(1.0, std::abs(values[i])))
              << name << "[" << i << "] after step " << s + 1;
      }
    }
    EXPECT_EQ(
        load(g::DT_INT64, m.variable_data(m.variable_index("global_step")), 0),
        s + 1.0);
    EXPECT_EQ(load(g::DT_FLOAT, m.variable_data(m.variable_index("calls")), 0),
              s + 1.0);
  }
}

// --- Sparse (gathered) gradients ---------------------------------------------
// loss = sum(c * (gather(E, ids) - t)^2) with duplicate ids: E's gradient is
// rows. The ids are the same every step, so on the gathered rows the sparse
// update must equal the dense one, obtained by also reading E densely with
// weight 0 (which makes est-autodiff scatter the rows into a dense
// gradient). Rows never gathered: TF's sparse kernels (every optimizer but
// adam) leave them and their slots untouched; adam, densified as in TF 1.x,
// must equal the dense update everywhere.

const Dims kTable = {7, 3};
const std::vector<double> kIds = {1, 4, 1, 0, 4, 6};

g::GraphDef embeddingGraph(const train::Optimizer &opt, bool dense,
                           const std::vector<double> &ids) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"t", DType::Float32, {6, 3}});
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable e = gr.get_variable("E", DType::Float32, kTable,
                                            zeros_initializer());
               Tensor table = gr.read_variable(e);
               Tensor rows = gather(table, gr.constant(ids, {6}, DType::Int64));
               Tensor c = gr.constant({1.0, 0.5, 2.0}, {3}, DType::Float32);
               Signature spec;
               spec.loss =
                   reduce_sum(multiply(c, square(subtract(rows, f["t"]))));
               if (dense)
                 spec.loss =
                     add(spec.loss, multiply(reduce_sum(table),
                                             gr.constant(0.0, DType::Float32)));
               spec.train_op = opt.minimize(spec.loss);
               return spec;
             });
  return graph.graph_def();
}

/// Runs 4 steps of both and compares every variable after each.
void checkSparseEqualsDense(const train::Optimizer &opt, bool zeroStart,
                            const std::vector<double> &ids = kIds) {
  std::unique_ptr<JitModel> sparse = jitCompileForTest(
      embeddingGraph(opt, false, ids), "Sparse", {}, /*warningsFail=*/true);
  std::unique_ptr<JitModel> dense = jitCompileForTest(
      embeddingGraph(opt, true, ids), "Dense", {}, /*warningsFail=*/true);
  ASSERT_TRUE(sparse && dense);
  Value e0;
  e0.dtype = g::DT_FLOAT;
  e0.shape = kTable;
  for (int i = 0; i < 21; ++i)
    e0.data.push_back(zeroStart ? 0.0 : 0.25 * (i % 5) - 0.5);
  for (JitModel *m : {sparse.get(), dense.get()}) {
    m->run("init");
    store(e0, m->variable_data(m->variable_index("E")));
  }
  const rt::ModelSpec &spec = sparse->spec();
  auto gathered = [&](int row) {
    return std::find(ids.begin(), ids.end(), row) != ids.end();
  };
  // Adam and Keras's rules apply their dense rule to the densified
  // gradient (every row's slots decay), as Keras's sparse updates do.
  bool rowsOnly = opt.kind() != "adam" && opt.kind().rfind("keras_", 0) != 0;
  // Every variable's elements before the first step.
  // Adam's beta powers are scalars (one element), the rest [7, 3].
  auto elements = [&](int v) {
    std::string name = spec.variables[v].name;
    return name == "beta1_power" || name == "beta2_power" ? 1 : 21;
  };
  std::vector<std::vector<double>> initial(spec.numVariables);
  for (int v = 0; v < spec.numVariables; ++v)
    if (std::string(spec.variables[v].name) != "global_step")
      for (int i = 0; i < elements(v); ++i)
        initial[v].push_back(load(g::DT_FLOAT, sparse->variable_data(v), i));
  for (int s = 0; s < 4; ++s) {
    Value t;
    t.dtype = g::DT_FLOAT;
    t.shape = {6, 3};
    for (int i = 0; i < 18; ++i)
      t.data.push_back(0.3 * ((i * 7 + s * 3) % 11) - 1.2);
    for (JitModel *m : {sparse.get(), dense.get()}) {
      int fn = m->function_index("train");
      store(t, m->input_data(fn, m->input_index(fn, "features/t")));
      m->run(fn);
    }
    ASSERT_EQ(spec.numVariables, dense->spec().numVariables);
    for (int v = 0; v < spec.numVariables; ++v) {
      std::string name = spec.variables[v].name;
      int di = dense->variable_index(name);
      if (name == "global_step") {
        EXPECT_EQ(load(g::DT_INT64, sparse->variable_data(v), 0), s + 1);
        continue;
      }
      for (int i = 0; i < elements(v); ++i) {
        double got = load(g::DT_FLOAT, sparse->variable_data(v), i);
        if (rowsOnly && !gathered(i / 3)) {
          EXPECT_EQ(got, initial[v][i])
              << name << "[" << i << "] (row never gathered) after step "
              << s + 1;
          continue;
        }
        double want = load(g::DT_FLOAT, dense->variable_data(di), i);
        EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want)))
            << name << "[" << i << "] after step " << s + 1;
      }
    }
  }
}

TEST(SparseGradientTest, SgdEqualsDense) {
  checkSparseEqualsDense(train::GradientDescentOptimizer(0.05), false);
}
TEST(SparseGradientTest, AdagradEqualsDense) {
  checkSparseEqualsDense(train::AdagradOptimizer(0.3, 0.2), false);
}
TEST(SparseGradientTest, FtrlEqualsDense) {
  // FTRL's dense rule recomputes untouched weights from `linear`: equal to
  // the sparse (untouched) ones from a zero start, as for TF's linear models.
  checkSparseEqualsDense(train::FtrlOptimizer(0.5, -0.5, 0.1, 0.2, 0.1), true);
}
TEST(SparseGradientTest, AdamDensifiedEqualsDense) {
  checkSparseEqualsDense(train::AdamOptimizer(0.1), false);
}
TEST(SparseGradientTest, MomentumEqualsDenseOnGatheredRows) {
  checkSparseEqualsDense(train::MomentumOptimizer(0.05, 0.9), false);
}
TEST(SparseGradientTest, NesterovMomentumEqualsDenseOnGatheredRows) {
  checkSparseEqualsDense(train::MomentumOptimizer(0.05, 0.9, true), false);
}
TEST(SparseGradientTest, RmsPropEqualsDenseOnGatheredRows) {
  // ms starts at 1: the dense rule decays it on every row, the sparse one
  // only on the gathered rows.
  checkSparseEqualsDense(train::RMSPropOptimizer(0.05, 0.9, 0.5), false);
}
TEST(SparseGradientTest, CenteredRmsPropEqualsDenseOnGatheredRows) {
  checkSparseEqualsDense(train::RMSPropOptimizer(0.05, 0.9, 0.5, 1e-10, true),
                         false);
}
TEST(SparseGradientTest, KerasRulesDensifiedEqualDense) {
  checkSparseEqualsDense(train::KerasSGDOptimizer(0.05, 0.9, true), false);
  checkSparseEqualsDense(train::KerasRMSpropOptimizer(0.05, 0.9, 0.5), false);
  checkSparseEqualsDense(train::KerasAdagradOptimizer(0.3), false);
  checkSparseEqualsDense(train::KerasAdamOptimizer(0.1, 0.9, 0.999, 1e-7, true),
                         false);
}
TEST(SparseGradientTest, ClippedSgdEqualsDense) {
  // Distinct ids: the sparse rows' norm is that of their values (TF's
  // IndexedSlices), equal to the dense gradient's only without duplicates.
  checkSparseEqualsDense(
      train::GradientDescentOptimizer(0.05).clip_gradients_by_global_norm(1.0),
      false, {1, 4, 0, 6, 2, 5});
}

/// A 1,000,000 x 16 embedding: one step touches the gathered rows only;
/// every other row keeps its value (checked for all rows).
void checkBigVocab(const train::Optimizer &opt) {
  const int64_t vocab = 1000000, width = 16;
  const std::vector<double> ids = {5, 999999, 5, 123456};
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"t", DType::Float32, {4, width}});
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable e = gr.get_variable("E", DType::Float32, {vocab, width},
                                            zeros_initializer());
               Tensor rows = gather(gr.read_variable(e),
                                    gr.constant(ids, {4}, DType::Int64));
               Signature spec;
               spec.loss = reduce_sum(square(subtract(rows, f["t"])));
               spec.train_op = opt.minimize(spec.loss);
               return spec;
             });
  std::unique_ptr<JitModel> model = jitCompileForTest(
      graph.graph_def(), "BigVocab", {}, /*warningsFail=*/true);
  ASSERT_TRUE(model);
  JitModel &m = *model;
  m.run("init");
  auto *table = static_cast<float *>(m.variable_data(m.variable_index("E")));
  for (int64_t i = 0; i < vocab * width; ++i)
    table[i] = static_cast<float>((i % 1009) * 0.001);
  int fn = m.function_index("train");
  auto *t =
      static_cast<float *>(m.input_data(fn, m.input_index(fn, "features/t")));
  for (int i = 0; i < 4 * width; ++i)
    t[i] = 2.0f;
  m.run(fn);
  int64_t changedElsewhere = 0;
  for (int64_t r = 0; r < vocab; ++r) {
    bool gathered = r == 5 || r == 999999 || r == 123456;
    for (int64_t j = 0; j < width; ++j) {
      float before = static_cast<float>(((r * width + j) % 1009) * 0.001);
      float after = table[r * width + j];
      if (gathered)
        EXPECT_NE(after, before) << "row " << r << " was not updated";
      else if (after != before)
        ++changedElsewhere;
    }
  }
  EXPECT_EQ(changedElsewhere, 0);
}

TEST(SparseGradientTest, BigVocabSgdTouchesGatheredRowsOnly) {
  checkBigVocab(train::GradientDescentOptimizer(0.1));
}
TEST(SparseGradientTest, BigVocabAdagradTouchesGatheredRowsOnly) {
  checkBigVocab(train::AdagradOptimizer(0.1));
}
TEST(SparseGradientTest, BigVocabFtrlTouchesGatheredRowsOnly) {
  checkBigVocab(train::FtrlOptimizer(0.1));
}
TEST(SparseGradientTest, BigVocabMomentumTouchesGatheredRowsOnly) {
  checkBigVocab(train::MomentumOptimizer(0.1, 0.9));
}
TEST(SparseGradientTest, BigVocabRmsPropTouchesGatheredRowsOnly) {
  checkBigVocab(train::RMSPropOptimizer(0.1, 0.9, 0.5));
}
TEST(SparseGradientTest, BigVocabLazyAdamTouchesGatheredRowsOnly) {
  checkBigVocab(train::LazyAdamOptimizer(0.1));
}
TEST(SparseGradientTest, BigVocabAdagradDATouchesGatheredRowsOnly) {
  checkBigVocab(train::AdagradDAOptimizer(0.1));
}

// --- compute_gradients + apply_gradients -------------------------------------

/// opt.apply_gradients(opt.compute_gradients(loss), global_step), with each
/// gradient passed through `transform` first.
TrainOpFn
computeApply(const train::Optimizer &opt,
             std::function<std::vector<Tensor>(const std::vector<Tensor> &)>
                 transform = {}) {
  return [opt, transform](Graph &g, const Tensor &loss) {
    train::Optimizer::GradsAndVars gv = opt.compute_gradients(loss);
    if (transform) {
      std::vector<Tensor> grads;
      for (const auto &[grad, var] : gv)
        grads.push_back(grad);
      grads = transform(grads);
      for (size_t i = 0; i < gv.size(); ++i)
        gv[i].first = grads[i];
    }
    return opt.apply_gradients(gv, train::get_or_create_global_step(g));
  };
}

TEST(ApplyGradientsTest, SgdEqualsMinimize) {
  checkSteps(computeApply(train::GradientDescentOptimizer(0.05)), sgdRef(),
             constantLr(0.05));
}

TEST(ApplyGradientsTest, MomentumNesterovEqualsMinimize) {
  checkSteps(computeApply(train::MomentumOptimizer(0.05, 0.8, true)),
             momentumRef(0.8, true), constantLr(0.05));
}

TEST(ApplyGradientsTest, AdamEqualsMinimize) {
  checkSteps(computeApply(train::AdamOptimizer(0.1, 0.8, 0.99, 1e-6)),
             adamRef(0.8, 0.99, 1e-6), constantLr(0.1));
}

TEST(ApplyGradientsTest, RmsPropCenteredEqualsMinimize) {
  checkSteps(computeApply(train::RMSPropOptimizer(0.01, 0.8, 0.5, 1e-6, true)),
             rmspropRef(0.8, 0.5, 1e-6, true), constantLr(0.01));
}

TEST(ApplyGradientsTest, FtrlEqualsMinimize) {
  checkSteps(computeApply(train::FtrlOptimizer(0.2, -0.5, 0.1)),
             ftrlRef(-0.5, 0.1, 0.0, 0.0), constantLr(0.2));
}

TEST(ApplyGradientsTest, TransformedGradients) {
  // The gradients halved by the model, then clipped by clip_by_global_norm
  // (lib/Graph/Gradients.h): the update sees exactly those.
  checkSteps(computeApply(train::MomentumOptimizer(0.05, 0.9),
                          [](const std::vector<Tensor> &grads) {
                            std::vector<Tensor> half;
                            for (const Tensor &g : grads)
                              half.push_back(multiply(g, 0.5));
                            return clip_by_global_norm(half, 2.0).list_clipped;
                          }),
             momentumRef(0.9, false), constantLr(0.05), 1e-5, {},
             [](std::vector<double> &g, const std::vector<double> &) {
               for (double &v : g)
                 v *= 0.5;
               clipRef(g, 2.0);
             });
}

TEST(ApplyGradientsTest, WithoutGlobalStepTheTrainOpIncrementsIt) {
  // apply_gradients without a global_step leaves it alone; the train_op
  // increments it (BERT's pattern). Adam's t still counts the steps.
  auto opt = train::AdamOptimizer(0.1, 0.8, 0.99, 1e-6);
  checkSteps(
      [opt](Graph &g, const Tensor &loss) {
        Variable step = train::get_or_create_global_step(g);
        return group({opt.apply_gradients(opt.compute_gradients(loss)),
                      assign_add(step, g.constant(1.0, DType::Int64))});
      },
      adamRef(0.8, 0.99, 1e-6), constantLr(0.1));
}

TEST(ApplyGradientsTest, HandWrittenUpdateWithASlot) {
  // A rule written with gradients(), create_slot and assignments: momentum
  // (a = 0.9 a + g; w -= 0.05 a), as TF's kernel computes it.
  checkSteps(
      [](Graph &g, const Tensor &loss) {
        Variable w = *g.find_variable("w");
        Variable a = train::create_slot(w, "Momentum");
        Tensor grad = gradients({loss}, std::vector<Variable>{w})[0];
        Tensor next = add(multiply(a, 0.9), grad);
        Variable step = train::get_or_create_global_step(g);
        return group({assign(w, subtract(w, multiply(next, 0.05))),
                      assign(a, next),
                      assign_add(step, g.constant(1.0, DType::Int64))});
      },
      momentumRef(0.9, false), constantLr(0.05));
}

// --- Weight constraints ------------------------------------------------------

const std::vector<double> kConstraintX = {0.5,  -1.0, 2.0,  0.25, 1.5, 0.5,
                                          -0.5, 1.0,  -1.0, 2.0,  0.5, -0.75};
const std::vector<double> kConstraintT = {1.0, -2.0, 0.5, 0.0, 1.0,
                                          2.0, -1.0, 0.5, 1.5};
const std::vector<double> kConstraintKernel = {0.3,  -0.6, 0.9, 0.8, 0.2,  -0.4,
                                               -0.5, 0.7,  0.1, 0.6, -0.3, 0.5};
const std::vector<double> kConstraintBias = {0.1, -0.2, 0.3};

/// One step of `makeTrainOp` on a dense layer [4 -> 3] (kernel_constraint
/// max_norm(0.5), bias_constraint non_neg, the weights above), loss
/// mean(square(y - t)) on the fixed batch above: every variable after it.
std::map<std::string, std::vector<double>>
constrainedDenseStep(const TrainOpFn &makeTrainOp) {
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {3, 4}});
  build_mode(
      graph, ModeKeys::TRAIN, inputs,
      [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
        Tensor y = layers::dense(
            f["x"], 3,
            {.kernel_initializer = constant_initializer(kConstraintKernel),
             .bias_initializer = constant_initializer(kConstraintBias),
             .kernel_constraint = constraints::max_norm(0.5),
             .bias_constraint = constraints::non_neg()});
        Tensor t = gr.constant(kConstraintT, {3, 3}, DType::Float32);
        Signature spec;
        spec.loss = reduce_mean(square(subtract(y, t)));
        spec.train_op = makeTrainOp(gr, spec.loss);
        return spec;
      });
  std::unique_ptr<JitModel> m = jitCompileForTest(
      graph.graph_def(), "Constrained", {}, /*warningsFail=*/true);
  if (!m)
    return {};
  m->run("init");
  int fn = m->function_index("train");
  Value x;
  x.dtype = g::DT_FLOAT;
  x.shape = {3, 4};
  x.data = kConstraintX;
  store(x, m->input_data(fn, m->input_index(fn, "features/x")));
  m->run(fn);
  std::map<std::string, std::vector<double>> out;
  const rt::ModelSpec &spec = m->spec();
  for (int v = 0; v < spec.numVariables; ++v) {
    std::string name = spec.variables[v].name;
    if (name == "global_step")
      continue;
    int64_t n = 1;
    for (int d = 0; d < spec.variables[v].rank; ++d)
      n *= spec.variables[v].shape[d];
    for (int64_t i = 0; i < n; ++i)
      out[name].push_back(load(g::DT_FLOAT, m->variable_data(v), i));
  }
  return out;
}

// TF 2.15 on the same step:
//   y = tf.compat.v1.layers.dense(x, 3, kernel_initializer=..., bias_...,
//       kernel_constraint=tf.keras.constraints.max_norm(0.5),
//       bias_constraint=tf.keras.constraints.non_neg())
//   tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
//       tf.reduce_mean(tf.square(y - t)))
// (the optimizer assigns var.constraint(var) after each update).
const std::vector<double> kTfConstrainedKernel = {
    0.232909128, -0.206944376, 0.360431969,    0.040156763,
    0.444444388, 0.307806998,  0.0281097516,   -0.0791666359,
    0.040709924, 0.439716369,  -0.00555553939, 0.153903484};
const std::vector<double> kTfConstrainedBias = {0.0, 0.0, 0.561111152};

void expectTfConstrainedStep(
    const std::map<std::string, std::vector<double>> &vars) {
  ASSERT_TRUE(vars.count("dense/kernel") && vars.count("dense/bias"));
  for (size_t i = 0; i < kTfConstrainedKernel.size(); ++i)
    EXPECT_NEAR(vars.at("dense/kernel")[i], kTfConstrainedKernel[i], 1e-6)
        << "kernel[" << i << "]";
  for (size_t i = 0; i < kTfConstrainedBias.size(); ++i)
    EXPECT_NEAR(vars.at("dense/bias")[i], kTfConstrainedBias[i], 1e-6)
        << "bias[" << i << "]";
}

TEST(ConstraintsTest, OneSgdStepOfMinimizeEqualsTf) {
  expectTfConstrainedStep(constrainedDenseStep([](Graph &, const Tensor &l) {
    return train::GradientDescentOptimizer(0.5).minimize(l);
  }));
}

TEST(ConstraintsTest, ApplyGradientsAndAMovingAverageSeeTheProjection) {
  // compute_gradients + apply_gradients constrain too; a moving average
  // (decay 0: the shadow is the new value) grouped after the update averages
  // the constrained value (TF: control_dependencies([opt_op]) over the
  // constraint's assignment).
  auto vars = constrainedDenseStep([](Graph &g, const Tensor &l) {
    train::Optimizer opt = train::GradientDescentOptimizer(0.5);
    train::ExponentialMovingAverage ema(0.0);
    Operation update = opt.apply_gradients(opt.compute_gradients(l));
    return group({update, ema.apply(g.trainable_variables())});
  });
  expectTfConstrainedStep(vars);
  ASSERT_TRUE(vars.count("dense/kernel/ExponentialMovingAverage"));
  for (size_t i = 0; i < kTfConstrainedKernel.size(); ++i)
    EXPECT_NEAR(vars.at("dense/kernel/ExponentialMovingAverage")[i],
                kTfConstrainedKernel[i], 1e-6);
}

TEST(ConstraintsTest, RadialConstraintOfAConvKernelAfterAStep) {
  // conv2d's kernel_constraint: after an Adam step each 3 x 3 slice of the
  // kernel is Keras's rings (the centre takes the updated w[0, 0], the ring
  // w[1, 1]): one value around a different centre.
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {2, 5, 5, 2}});
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &, const TensorMap &f, const Tensor &, ModeKeys) {
               Tensor y = layers::conv2d(
                   f["x"], 3, {3, 3},
                   {.kernel_constraint = constraints::radial_constraint()});
               Signature spec;
               spec.loss = reduce_mean(square(y));
               spec.train_op = train::AdamOptimizer(0.1).minimize(spec.loss);
               return spec;
             });
  std::unique_ptr<JitModel> m =
      jitCompileForTest(graph.graph_def(), "Radial", {}, /*warningsFail=*/true);
  ASSERT_TRUE(m);
  m->run("init");
  int fn = m->function_index("train");
  Value x;
  x.dtype = g::DT_FLOAT;
  x.shape = {2, 5, 5, 2};
  for (int i = 0; i < 100; ++i)
    x.data.push_back(std::sin(0.7 * i));
  store(x, m->input_data(fn, m->input_index(fn, "features/x")));
  m->run(fn);
  int k = m->variable_index("conv2d/kernel");
  auto at = [&](int i, int j, int c) {
    return load(g::DT_FLOAT, m->variable_data(k), (i * 3 + j) * 6 + c);
  };
  for (int c = 0; c < 6; ++c) {
    double ring = at(0, 0, c);
    EXPECT_NE(at(1, 1, c), ring);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        if (i != 1 || j != 1) {
          EXPECT_EQ(at(i, j, c), ring) << i << "," << j << " " << c;
        }
      }
  }
}

TEST(ConstraintsTest, BadConstraintsAreOneLine) {
  Graph g;
  Variable w = g.get_variable("w", DType::Float32, {4, 3});
  auto message = [](const std::function<void()> &f) {
    return estc::testing::messageOf<GraphError>(f);
  };
  EXPECT_EQ(message([&] {
              train::set_variable_constraint(
                  w, [](const Tensor &t) { return reduce_sum(t, Dims{0}); });
            }),
            "set_variable_constraint: the constraint of variable 'w' f32 "
            "[4,3] gives f32 [3]; it must keep the variable's dtype and "
            "shape");
  std::string axis = message([&] { constraints::max_norm(2, {2})(w.read()); });
  EXPECT_NE(axis.find("constraints::max_norm of '"), std::string::npos) << axis;
  EXPECT_NE(axis.find("' [4,3]: axis 2 is out of range"), std::string::npos)
      << axis;
  std::string rank =
      message([&] { constraints::radial_constraint()(w.read()); });
  EXPECT_NE(rank.find("[4,3]: the weight must have rank 4 (a conv2d kernel)"),
            std::string::npos)
      << rank;
  Variable oblong = g.get_variable("oblong", DType::Float32, {3, 2, 1, 1});
  std::string square =
      message([&] { constraints::radial_constraint()(oblong.read()); });
  EXPECT_NE(square.find("[3,2,1,1]: needs a square kernel [k, k, in, out] "
                        "of known sizes, k >= 2"),
            std::string::npos)
      << square;
  EXPECT_NE(message([&] {
              constraints::unit_norm({})(w.read());
            }).find(": axis is empty"),
            std::string::npos);
}

TEST(ExponentialMovingAverageTest, FollowsTheUpdatedVariable) {
  // group(minimize, ema.apply): the shadow moves toward w after the step's
  // update, with decay min(0.9, (1 + n) / (10 + n)), n the incremented
  // global_step (TF's control_dependencies([opt_op]) pattern).
  checkSteps(
      [](Graph &g, const Tensor &loss) {
        train::ExponentialMovingAverage ema(0.9, g.global_step());
        Operation opt = train::GradientDescentOptimizer(0.05).minimize(loss);
        Operation avg = ema.apply({*g.find_variable("w")});
        EXPECT_EQ(ema.average_name(*g.find_variable("w")),
                  "w/ExponentialMovingAverage");
        EXPECT_EQ(ema.variables_to_restore().at("w/ExponentialMovingAverage"),
                  "w");
        return group({opt, avg});
      },
      [](RefState &s, const std::vector<double> &g, double lr) {
        sgdRef()(s, g, lr);
        std::vector<double> &shadow = s.slot("w/ExponentialMovingAverage", 0.0);
        const std::vector<double> &w = s.vars["w"];
        float n = static_cast<float>(s.step + 1);
        float decay = std::min(0.9f, (1.0f + n) / (10.0f + n));
        for (size_t i = 0; i < w.size(); ++i)
          shadow[i] = f(shadow[i]) - (f(shadow[i]) - f(w[i])) * (1.0f - decay);
      },
      constantLr(0.05));
}

/// `inner` on the mean of every `n` gradients (accumulated in
/// w/GradientAccumulator), at rule step (global_step + 1) / n - 1. `slots`:
/// inner's (zeros), which exist from the first step.
RefStep accumulated(RefStep inner, int n, std::vector<std::string> slots = {}) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    for (const std::string &slot : slots)
      s.slot(slot, 0.0);
    std::vector<double> &acc = s.slot("w/GradientAccumulator", 0.0);
    for (size_t i = 0; i < g.size(); ++i)
      acc[i] = f(acc[i]) + f(g[i]);
    if ((s.step + 1) % n != 0)
      return;
    std::vector<double> mean(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      mean[i] = f(acc[i]) / static_cast<float>(n);
    std::fill(acc.begin(), acc.end(), 0.0);
    int64_t step = s.step;
    s.step = (step + 1) / n - 1;
    inner(s, mean, lr);
    s.step = step;
  };
}

TEST(GradientAccumulationTest, SgdEveryTwoSteps) {
  checkSteps(minimizeWith(train::GradientAccumulationOptimizer(
                 train::GradientDescentOptimizer(0.05), 2)),
             accumulated(sgdRef(), 2), constantLr(0.05));
}

TEST(GradientAccumulationTest, AdamCountsTheUpdates) {
  checkSteps(
      minimizeWith(train::GradientAccumulationOptimizer(
          train::AdamOptimizer(0.1, 0.8, 0.99, 1e-6), 2)),
      [inner =
           accumulated(adamRef(0.8, 0.99, 1e-6), 2, {"w/Adam", "w/Adam_1"})](
          RefState &s, const std::vector<double> &g, double lr) {
        // The beta powers exist before the first update, at the
        // betas.
        s.vars.try_emplace("beta1_power", std::vector<double>{f(0.8)});
        s.vars.try_emplace("beta2_power", std::vector<double>{f(0.99)});
        inner(s, g, lr);
      },
      constantLr(0.1));
  EXPECT_THROW(train::GradientAccumulationOptimizer(
                   train::GradientDescentOptimizer(0.1), 0),
               GraphError);
}

TEST(OptimizerTest, KerasLegacyNamesNeedAScope) {
  EXPECT_EQ(estc::testing::messageOf<GraphError>(
                [] { train::FtrlOptimizer(0.1).with_keras_legacy_names(""); }),
            "with_keras_legacy_names: the scope is empty");
}

// --- More optimizers (TF's kernels; Keras 2.15's update steps) --------------

RefStep adadeltaRef(double rho, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Adadelta", 0.0);
    std::vector<double> &accUpdate = s.slot("w/Adadelta_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float r = f(rho), c = 1.0f - f(rho), e = f(eps);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float a = f(acc[i]) * r + gi * gi * c;
      float update =
          std::sqrt(f(accUpdate[i]) + e) * (1.0f / std::sqrt(a + e)) * gi;
      acc[i] = a;
      w[i] = f(w[i]) - update * f(lr);
      accUpdate[i] = f(accUpdate[i]) * r + update * update * c;
    }
  };
}

TEST(OptimizerTest, Adadelta) {
  checkSteps(minimizeWith(train::AdadeltaOptimizer(1.0, 0.9, 1e-6)),
             adadeltaRef(0.9, 1e-6), constantLr(1.0));
}

/// sign(x) max(|x| - shrink, 0) / denom, or x / denom without l1.
float proximal(float x, float shrink, float denom, bool l1) {
  if (!l1)
    return x / denom;
  float m = std::max(std::abs(x) - shrink, 0.0f);
  return (x < 0 ? -m : m) / denom;
}

RefStep proximalSgdRef(double l1, double l2) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &w = s.vars["w"];
    float r = f(lr);
    for (size_t i = 0; i < w.size(); ++i) {
      float prox = f(w[i]) - f(g[i]) * r;
      w[i] = proximal(prox, r * f(l1), 1.0f + f(l2) * r, l1 > 0);
    }
  };
}

TEST(OptimizerTest, ProximalGradientDescent) {
  checkSteps(
      minimizeWith(train::ProximalGradientDescentOptimizer(0.05, 0.3, 0.2)),
      proximalSgdRef(0.3, 0.2), constantLr(0.05));
  checkSteps(
      minimizeWith(train::ProximalGradientDescentOptimizer(0.05, 0.0, 0.2)),
      proximalSgdRef(0.0, 0.2), constantLr(0.05));
}

RefStep proximalAdagradRef(double init, double l1, double l2) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/ProximalAdagrad", f(init));
    std::vector<double> &w = s.vars["w"];
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float a = f(acc[i]) + gi * gi;
      acc[i] = a;
      float rate = f(lr) * (1.0f / std::sqrt(a));
      float prox = f(w[i]) - gi * rate;
      w[i] = proximal(prox, rate * f(l1), 1.0f + f(l2) * rate, l1 > 0);
    }
  };
}

TEST(OptimizerTest, ProximalAdagrad) {
  checkSteps(minimizeWith(train::ProximalAdagradOptimizer(0.3, 0.1, 0.05, 0.1)),
             proximalAdagradRef(0.1, 0.05, 0.1), constantLr(0.3));
}

RefStep adagradDaRef(double init, double l1, double l2) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &ga = s.slot("w/AdagradDA", 0.0);
    std::vector<double> &gg = s.slot("w/AdagradDA_1", f(init));
    std::vector<double> &w = s.vars["w"];
    float t = static_cast<float>(s.step + 1);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float a = f(ga[i]) + gi;
      float aa = f(gg[i]) + gi * gi;
      ga[i] = a;
      gg[i] = aa;
      float denom = t * f(l2) + std::sqrt(aa) / f(lr);
      w[i] = l1 > 0 ? -proximal(a, t * f(l1), 1.0f, true) / denom : -a / denom;
    }
  };
}

TEST(OptimizerTest, AdagradDA) {
  checkSteps(minimizeWith(train::AdagradDAOptimizer(0.5, 0.1, 0.2, 0.05)),
             adagradDaRef(0.1, 0.2, 0.05), constantLr(0.5));
  checkSteps(minimizeWith(train::AdagradDAOptimizer(0.5, 0.1, 0.0, 0.05)),
             adagradDaRef(0.1, 0.0, 0.05), constantLr(0.5));
}

/// Keras 2.15's AdamW update step (decay, then Adam with `1 - beta` from the
/// Python floats).
RefStep adamwRef(double wd, double b1, double b2, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/AdamW", 0.0);
    std::vector<double> &v = s.slot("w/AdamW_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float t = static_cast<float>(s.step + 1);
    float r = f(lr);
    float alpha =
        r * std::sqrt(1.0f - std::pow(f(b2), t)) / (1.0f - std::pow(f(b1), t));
    for (size_t i = 0; i < w.size(); ++i) {
      float wi = f(w[i]) - f(w[i]) * f(wd) * r;
      float gi = f(g[i]);
      float mi = f(m[i]) + (gi - f(m[i])) * f(1.0 - b1);
      float vi = f(v[i]) + (gi * gi - f(v[i])) * f(1.0 - b2);
      m[i] = mi;
      v[i] = vi;
      w[i] = wi - (mi * alpha) / (std::sqrt(vi) + f(eps));
    }
  };
}

TEST(OptimizerTest, AdamW) {
  checkSteps(minimizeWith(train::AdamWOptimizer(0.1, 0.05, 0.8, 0.99, 1e-6)),
             adamwRef(0.05, 0.8, 0.99, 1e-6), constantLr(0.1));
  // An excluded variable is not decayed.
  checkSteps(
      minimizeWith(train::AdamWOptimizer(0.1, 0.05, 0.8, 0.99, 1e-6, {"^w$"})),
      adamwRef(0.0, 0.8, 0.99, 1e-6), constantLr(0.1));
}

RefStep adamaxRef(double b1, double b2, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/Adamax", 0.0);
    std::vector<double> &u = s.slot("w/Adamax_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float t = static_cast<float>(s.step + 1);
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float mi = f(m[i]) + (gi - f(m[i])) * f(1.0 - b1);
      float ui = std::max(f(b2) * f(u[i]), std::abs(gi));
      m[i] = mi;
      u[i] = ui;
      w[i] = f(w[i]) -
             (f(lr) * mi) / ((1.0f - std::pow(f(b1), t)) * (ui + f(eps)));
    }
  };
}

TEST(OptimizerTest, Adamax) {
  checkSteps(minimizeWith(train::AdamaxOptimizer(0.1, 0.8, 0.99, 1e-6)),
             adamaxRef(0.8, 0.99, 1e-6), constantLr(0.1));
}

RefStep nadamRef(double b1, double b2, double eps) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &m = s.slot("w/Nadam", 0.0);
    std::vector<double> &v = s.slot("w/Nadam_1", 0.0);
    std::vector<double> &product = s.vars["w/Nadam_2"];
    if (product.empty())
      product = {1.0};
    std::vector<double> &w = s.vars["w"];
    float t = static_cast<float>(s.step + 1), t1 = t + 1.0f;
    float beta1 = f(b1), beta2 = f(b2);
    float uT = beta1 * (1.0f - 0.5f * std::pow(0.96f, t));
    float uT1 = beta1 * (1.0f - 0.5f * std::pow(0.96f, t1));
    float uProduct = f(product[0]) * uT;
    float uProduct1 = uProduct * uT1;
    product[0] = uProduct;
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]);
      float mi = f(m[i]) + (gi - f(m[i])) * (1.0f - beta1);
      float vi = f(v[i]) + (gi * gi - f(v[i])) * (1.0f - beta2);
      m[i] = mi;
      v[i] = vi;
      float mHat =
          uT1 * mi / (1.0f - uProduct1) + (1.0f - uT) * gi / (1.0f - uProduct);
      float vHat = vi / (1.0f - std::pow(beta2, t));
      w[i] = f(w[i]) - (mHat * f(lr)) / (std::sqrt(vHat) + f(eps));
    }
  };
}

TEST(OptimizerTest, Nadam) {
  checkSteps(minimizeWith(train::NadamOptimizer(0.1, 0.8, 0.99, 1e-6)),
             nadamRef(0.8, 0.99, 1e-6), constantLr(0.1), 2e-5);
}

TEST(OptimizerTest, LazyAdamDenseIsAdam) {
  checkSteps(
      minimizeWith(train::LazyAdamOptimizer(0.1, 0.8, 0.99, 1e-6)),
      [](RefState &s, const std::vector<double> &g, double lr) {
        RefState adam;
        adam.step = s.step;
        adam.vars["w"] = s.vars["w"];
        adam.vars["w/Adam"] = s.slot("w/LazyAdam", 0.0);
        adam.vars["w/Adam_1"] = s.slot("w/LazyAdam_1", 0.0);
        adamRef(0.8, 0.99, 1e-6)(adam, g, lr);
        s.vars["w"] = adam.vars["w"];
        s.vars["w/LazyAdam"] = adam.vars["w/Adam"];
        s.vars["w/LazyAdam_1"] = adam.vars["w/Adam_1"];
      },
      constantLr(0.1));
}

RefStep ftrlV2Ref(double init, double l1, double l2, double shrinkage,
                  double beta, double lrValue) {
  return [=](RefState &s, const std::vector<double> &g, double lr) {
    std::vector<double> &acc = s.slot("w/Ftrl", f(init));
    std::vector<double> &lin = s.slot("w/Ftrl_1", 0.0);
    std::vector<double> &w = s.vars["w"];
    float l2Adjusted = f(l2 + beta / (2.0 * lrValue));
    for (size_t i = 0; i < w.size(); ++i) {
      float gi = f(g[i]), wi = f(w[i]);
      float shrunk = gi + f(2.0 * shrinkage) * wi;
      float newAcc = f(acc[i]) + gi * gi;
      float linear =
          f(lin[i]) +
          (shrunk - (std::sqrt(newAcc) - std::sqrt(f(acc[i]))) / f(lr) * wi);
      float quad = std::sqrt(newAcc) / f(lr) + 2.0f * l2Adjusted;
      acc[i] = newAcc;
      lin[i] = linear;
      w[i] = std::abs(linear) > f(l1)
                 ? ((linear > 0 ? f(l1) : -f(l1)) - linear) / quad
                 : 0.0;
    }
  };
}

TEST(OptimizerTest, FtrlShrinkageAndBeta) {
  checkSteps(
      minimizeWith(train::FtrlOptimizer(0.2, -0.5, 0.1, 0.01, 0.05, 0.3, 0.5)),
      ftrlV2Ref(0.1, 0.01, 0.05, 0.3, 0.5, 0.2), constantLr(0.2));
}

// --- Learning-rate schedules added with the optimizer API -------------------

TEST(LearningRateScheduleTest, NaturalExpAndInverseTime) {
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::natural_exp_decay(0.1, g.global_step(), 2.0,
                                                   0.5);
                 },
                 "sgd"),
             sgdRef(), [](int64_t step) {
               return 0.1 * std::pow(std::exp(-0.5f), step / 2.0f);
             });
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::inverse_time_decay(0.1, g.global_step(), 2.0,
                                                    0.5, /*staircase=*/true);
                 },
                 "sgd"),
             sgdRef(), [](int64_t step) {
               return 0.1 / (1.0 + 0.5 * std::floor(step / 2.0));
             });
}

TEST(LearningRateScheduleTest, CosineRestartsAndLinearCosine) {
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::cosine_decay_restarts(0.1, g.global_step(),
                                                       2.0, 2.0, 0.5, 0.1);
                 },
                 "sgd"),
             sgdRef(), [](int64_t step) {
               // Periods 2, 4, 8: restart i at 0, 2, 6.
               double fraction = step / 2.0;
               double i = std::floor(std::log(1.0 - fraction * (1.0 - 2.0)) /
                                     std::log(2.0));
               double sum = (1.0 - std::pow(2.0, i)) / (1.0 - 2.0);
               double within = (fraction - sum) / std::pow(2.0, i);
               double cosine =
                   0.5 * std::pow(0.5, i) * (1.0 + std::cos(M_PI * within));
               return 0.1 * ((1.0 - 0.1) * cosine + 0.1);
             });
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::linear_cosine_decay(0.1, g.global_step(), 4.0,
                                                     0.5, 0.0, 0.001);
                 },
                 "sgd"),
             sgdRef(), [](int64_t step) {
               double s = std::min<double>(step, 4.0);
               double cosine =
                   0.5 * (1.0 + std::cos(M_PI * 2.0 * 0.5 * s / 4.0));
               return 0.1 * (((4.0 - s) / 4.0) * cosine + 0.001);
             });
}

/// The values of `schedule(g, step)` (a predict function of the fed step)
/// at each (step, global_step) of `at`: the random ops' counter is the
/// global_step variable, set before each run.
std::vector<double>
scheduleValues(const std::function<Tensor(Graph &, const Tensor &)> &schedule,
               const std::vector<std::pair<double, int64_t>> &at) {
  Graph graph;
  graph.set_seed(11);
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"step", DType::Float32, {1}});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Signature spec;
               spec.predictions.set("lr",
                                    schedule(gr, reshape(f["step"], Dims{})));
               return spec;
             });
  std::unique_ptr<JitModel> m = jitCompileForTest(graph.graph_def(), "Schedule",
                                                  {}, /*warningsFail=*/true);
  if (!m)
    return {};
  m->run("init");
  int fn = m->function_index("predict");
  int globalStep = m->variable_index("global_step");
  std::vector<double> out;
  for (const auto &[step, counter] : at) {
    Value v;
    v.dtype = g::DT_FLOAT;
    v.shape = {1};
    v.data = {step};
    store(v, m->input_data(fn, m->input_index(fn, "features/step")));
    if (globalStep >= 0)
      store(Value::scalar(counter, g::DT_INT64), m->variable_data(globalStep));
    m->run(fn);
    out.push_back(
        load(g::DT_FLOAT,
             m->output_data(fn, m->output_index(fn, "predictions/lr")), 0));
  }
  return out;
}

TEST(LearningRateScheduleTest, NoisyLinearCosineWithoutNoiseEqualsTf) {
  // TF 2.15, tf.compat.v1.train.noisy_linear_cosine_decay with
  // initial_variance=0 at global steps 0, 1, ...:
  //   A: (0.1, step, 4, 0.0, 0.55, num_periods=0.5, alpha=0.1, beta=0.001)
  //   B: (0.05, step, 3, 0.0, 0.3, num_periods=1.5, alpha=0.0, beta=0.01)
  const std::vector<float> tfA = {
      0.110100009f,    0.0726520419f,   0.0300999973f,  0.00522563141f,
      0.000100000005f, 0.000100000005f, 0.000100000005f};
  const std::vector<float> tfB = {0.0505000018f,   0.000500000024f,
                                  0.0171666667f,   0.000500000024f,
                                  0.000500000024f, 0.000500000024f};
  std::vector<std::pair<double, int64_t>> stepsA, stepsB;
  for (size_t i = 0; i < tfA.size(); ++i)
    stepsA.push_back({double(i), int64_t(i)});
  for (size_t i = 0; i < tfB.size(); ++i)
    stepsB.push_back({double(i), int64_t(i)});
  std::vector<double> a = scheduleValues(
      [](Graph &, const Tensor &step) {
        return train::noisy_linear_cosine_decay(0.1, step, 4, 0.0, 0.55, 0.5,
                                                0.1, 0.001);
      },
      stepsA);
  std::vector<double> b = scheduleValues(
      [](Graph &, const Tensor &step) {
        return train::noisy_linear_cosine_decay(0.05, step, 3, 0.0, 0.3, 1.5,
                                                0.0, 0.01);
      },
      stepsB);
  ASSERT_EQ(a.size(), tfA.size());
  ASSERT_EQ(b.size(), tfB.size());
  // To the float32 bit (TF's order of operations).
  for (size_t i = 0; i < tfA.size(); ++i)
    EXPECT_EQ(static_cast<float>(a[i]), tfA[i]) << "A step " << i;
  for (size_t i = 0; i < tfB.size(); ++i)
    EXPECT_EQ(static_cast<float>(b[i]), tfB[i]) << "B step " << i;
}

TEST(LearningRateScheduleTest, NoisyLinearCosineNoiseVariance) {
  // eps = (lr / 0.5 - beta) / cosine - alpha - linear at step s, drawn anew
  // for each global_step (the counter): mean 0 and variance
  // initial_variance / (1 + min(s, decay_steps))^variance_decay, over
  // 3000 draws each at s = 0 (cosine 1, linear 1) and s = 9 (clipped to
  // decay_steps 4: cosine 1 with num_periods 1, linear 0).
  const double v0 = 0.8, decay = 0.55, alpha = 0.1, beta = 0.01;
  const int n = 3000;
  for (double s : {0.0, 9.0}) {
    SCOPED_TRACE("step " + std::to_string(s));
    std::vector<std::pair<double, int64_t>> at;
    for (int k = 0; k < n; ++k)
      at.push_back({s, k});
    std::vector<double> lr = scheduleValues(
        [&](Graph &, const Tensor &step) {
          return train::noisy_linear_cosine_decay(0.5, step, 4, v0, decay, 1.0,
                                                  alpha, beta);
        },
        at);
    ASSERT_EQ(lr.size(), static_cast<size_t>(n));
    double linear = s == 0 ? 1.0 : 0.0;
    double mean = 0, sq = 0;
    for (double x : lr) {
      double eps = (x / 0.5 - beta) - alpha - linear;
      mean += eps;
      sq += eps * eps;
    }
    mean /= n;
    double variance = sq / n - mean * mean;
    double want = v0 / std::pow(1.0 + std::min(s, 4.0), decay);
    // Five standard errors: of the mean sqrt(want / n), of the variance
    // want sqrt(2 / n).
    EXPECT_LT(std::abs(mean), 5 * std::sqrt(want / n));
    EXPECT_NEAR(variance / want, 1.0, 5 * std::sqrt(2.0 / n));
  }
}

TEST(LearningRateScheduleTest, CallableSchedule) {
  // A Keras-style schedule: called with global_step when minimize builds
  // the update.
  checkSteps(
      minimizeWith(train::GradientDescentOptimizer([](const Tensor &step) {
        return train::exponential_decay(0.1, step, 2.0, 0.5);
      })),
      sgdRef(), [](int64_t s) { return 0.1 * std::pow(0.5, s / 2.0); });
}

TEST(LearningRateScheduleTest, LinearWarmup) {
  checkSteps(scheduled(
                 [](Graph &g) {
                   return train::linear_warmup(
                       train::polynomial_decay(0.1, g.global_step(), 10.0, 0.0),
                       g.global_step(), 3, 0.1);
                 },
                 "sgd"),
             sgdRef(), [](int64_t step) {
               return step < 3 ? 0.1 * step / 3.0 : 0.1 * (1.0 - step / 10.0);
             });
  EXPECT_THROW(
      {
        Graph g;
        auto m = g.mode_scope(ModeKeys::TRAIN);
        train::linear_warmup(g.constant(0.1), g.global_step(), 0, 0.1);
      },
      GraphError);
}

} // namespace
} // namespace estc
