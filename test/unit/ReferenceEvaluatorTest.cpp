//===- ReferenceEvaluatorTest.cpp - The test oracle, checked by hand ----===//
//
// Every expected value here is computed by hand (or by an obviously-equal
// loop) from small inputs.
//
//===----------------------------------------------------------------------===//

#include "test/reference/ReferenceEvaluator.h"

#include "lib/Models/Models.h"
#include "lib/Random/Philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

using estc::reference::Evaluator;
using estc::reference::Value;
namespace g = estc::graph;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Builds small GraphDefs directly with the protobuf API.
class GraphMaker {
public:
  g::NodeDef &node(const std::string &name, const std::string &op,
                   const std::vector<std::string> &inputs = {}) {
    g::NodeDef *n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const std::string &input : inputs)
      n->add_input(input);
    return *n;
  }
  g::NodeDef &placeholder(const std::string &name, g::DataType dtype,
                          const std::vector<int64_t> &shape) {
    g::NodeDef &n = node(name, "placeholder");
    setType(n, "dtype", dtype);
    setShape(n, "shape", shape);
    return n;
  }
  g::NodeDef &constant(const std::string &name, const Value &v) {
    g::NodeDef &n = node(name, "constant");
    g::TensorProto *t = (*n.mutable_attr())["value"].mutable_tensor();
    t->set_dtype(v.dtype);
    for (int64_t d : v.shape)
      t->mutable_shape()->add_dim(d);
    for (double x : v.data) {
      switch (v.dtype) {
      case g::DT_DOUBLE:
        t->add_double_val(x);
        break;
      case g::DT_INT32:
        t->add_int_val(static_cast<int32_t>(x));
        break;
      case g::DT_INT64:
        t->add_int64_val(static_cast<int64_t>(x));
        break;
      case g::DT_BOOL:
        t->add_bool_val(x != 0);
        break;
      default:
        t->add_float_val(static_cast<float>(x));
      }
    }
    return n;
  }
  void variable(const std::string &name, g::DataType dtype,
                const std::vector<int64_t> &shape) {
    g::VariableDef *v = def_.add_variable();
    v->set_name(name);
    v->set_dtype(dtype);
    for (int64_t d : shape)
      v->mutable_shape()->add_dim(d);
    v->mutable_initializer()->set_type("zeros");
  }
  g::NodeDef &read(const std::string &name, const std::string &variable) {
    g::NodeDef &n = node(name, "read_variable");
    setString(n, "variable", variable);
    return n;
  }
  g::NodeDef &assign(const std::string &name, const std::string &variable,
                     const std::string &value) {
    g::NodeDef &n = node(name, "assign_variable", {value});
    setString(n, "variable", variable);
    return n;
  }
  g::SignatureDef &signature(const std::string &mode) {
    return (*def_.mutable_signature())[mode];
  }

  static void setInt(g::NodeDef &n, const std::string &k, int64_t v) {
    (*n.mutable_attr())[k].set_i(v);
  }
  static void setFloat(g::NodeDef &n, const std::string &k, double v) {
    (*n.mutable_attr())[k].set_f(v);
  }
  static void setBool(g::NodeDef &n, const std::string &k, bool v) {
    (*n.mutable_attr())[k].set_b(v);
  }
  static void setString(g::NodeDef &n, const std::string &k,
                        const std::string &v) {
    (*n.mutable_attr())[k].set_s(v);
  }
  static void setType(g::NodeDef &n, const std::string &k, g::DataType v) {
    (*n.mutable_attr())[k].set_type(v);
  }
  static void setInts(g::NodeDef &n, const std::string &k,
                      const std::vector<int64_t> &v) {
    g::AttrValue::ListValue *list = (*n.mutable_attr())[k].mutable_list();
    for (int64_t x : v)
      list->add_i(x);
  }
  static void setShape(g::NodeDef &n, const std::string &k,
                       const std::vector<int64_t> &v) {
    g::TensorShape *shape = (*n.mutable_attr())[k].mutable_shape();
    for (int64_t x : v)
      shape->add_dim(x);
  }

  const g::GraphDef &def() const { return def_; }

private:
  g::GraphDef def_;
};

Value f32(std::vector<int64_t> shape, std::vector<double> data) {
  return Value(g::DT_FLOAT, std::move(shape), std::move(data));
}
Value f64(std::vector<int64_t> shape, std::vector<double> data) {
  return Value(g::DT_DOUBLE, std::move(shape), std::move(data));
}
Value i32(std::vector<int64_t> shape, std::vector<double> data) {
  return Value(g::DT_INT32, std::move(shape), std::move(data));
}
Value i64(std::vector<int64_t> shape, std::vector<double> data) {
  return Value(g::DT_INT64, std::move(shape), std::move(data));
}
Value i1(std::vector<int64_t> shape, std::vector<double> data) {
  return Value(g::DT_BOOL, std::move(shape), std::move(data));
}

/// Compares dtype, shape and data (NaN equals NaN; `tolerance` absolute).
::testing::AssertionResult same(const Value &actual, const Value &expected,
                                double tolerance = 1e-12) {
  bool ok = actual.dtype == expected.dtype && actual.shape == expected.shape &&
            actual.data.size() == expected.data.size();
  for (size_t i = 0; ok && i < actual.data.size(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    if (std::isnan(e))
      ok = std::isnan(a);
    else if (std::isinf(e))
      ok = a == e;
    else
      ok = std::abs(a - e) <= tolerance;
  }
  if (ok)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << estc::reference::toString(actual) << ", expected "
         << estc::reference::toString(expected);
}

/// Evaluates a one-op graph: inputs "a", "b", ... are placeholders fed with
/// `inputs`; `configure` sets the op's attributes.
Value evalOp(const std::string &op, const std::vector<Value> &inputs,
             const std::function<void(g::NodeDef &)> &configure = {}) {
  GraphMaker m;
  std::vector<std::string> names;
  std::map<std::string, Value> feeds;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::string name(1, static_cast<char>('a' + k));
    m.placeholder(name, inputs[k].dtype, inputs[k].shape);
    names.push_back(name);
    feeds[name] = inputs[k];
  }
  g::NodeDef &n = m.node("op", op, names);
  if (configure)
    configure(n);
  Evaluator evaluator(m.def());
  return evaluator.evaluate({"op"}, feeds).at(0);
}

/// The error message evalOp throws, or "" when it does not.
std::string
evalOpError(const std::string &op, const std::vector<Value> &inputs,
            const std::function<void(g::NodeDef &)> &configure = {}) {
  try {
    evalOp(op, inputs, configure);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

using M = GraphMaker;

// --- Elementwise -----------------------------------------------------------

TEST(ReferenceElementwise, Arithmetic) {
  Value a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {4, 3, 2, 1});
  EXPECT_TRUE(same(evalOp("add", {a, b}), f32({2, 2}, {5, 5, 5, 5})));
  EXPECT_TRUE(same(evalOp("sub", {a, b}), f32({2, 2}, {-3, -1, 1, 3})));
  EXPECT_TRUE(same(evalOp("mul", {a, b}), f32({2, 2}, {4, 6, 6, 4})));
  EXPECT_TRUE(
      same(evalOp("div", {a, b}), f32({2, 2}, {0.25, 2.0 / 3, 1.5, 4})));
  EXPECT_TRUE(same(evalOp("pow", {a, b}), f32({2, 2}, {1, 8, 9, 4})));
  EXPECT_TRUE(same(evalOp("maximum", {a, b}), f32({2, 2}, {4, 3, 3, 4})));
  EXPECT_TRUE(same(evalOp("minimum", {a, b}), f32({2, 2}, {1, 2, 2, 1})));
}

TEST(ReferenceElementwise, Broadcasting) {
  // [2,3] + [3]
  EXPECT_TRUE(same(
      evalOp("add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}),
      f32({2, 3}, {11, 22, 33, 14, 25, 36})));
  // [2,1] * [1,3] -> [2,3]
  EXPECT_TRUE(same(evalOp("mul", {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})}),
                   f32({2, 3}, {1, 2, 3, 2, 4, 6})));
  // scalar - [2]
  EXPECT_TRUE(
      same(evalOp("sub", {f32({}, {10}), f32({2}, {1, 2})}), f32({2}, {9, 8})));
  // [3,1,2] + [4,1] -> [3,4,2]
  Value x = f32({3, 1, 2}, {0, 1, 10, 11, 20, 21});
  Value y = f32({4, 1}, {100, 200, 300, 400});
  std::vector<double> sums;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k)
        sums.push_back(x.data[i * 2 + k] + y.data[j]);
  EXPECT_TRUE(same(evalOp("add", {x, y}), f32({3, 4, 2}, sums)));
  // Size-0 dimensions broadcast with 1.
  EXPECT_TRUE(same(evalOp("add", {f32({0, 2}, {}), f32({1, 2}, {1, 2})}),
                   f32({0, 2}, {})));
}

TEST(ReferenceElementwise, BroadcastErrorsNameTheNode) {
  std::string error =
      evalOpError("add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})});
  EXPECT_NE(error.find("reference: node 'op' (add)"), std::string::npos)
      << error;
  error = evalOpError("add", {f32({2}, {1, 2}), i32({2}, {1, 2})});
  EXPECT_NE(error.find("different dtypes"), std::string::npos) << error;
}

TEST(ReferenceElementwise, IntegerSemantics) {
  Value a = i32({4}, {7, -7, 7, -7}), b = i32({4}, {2, 2, -2, -2});
  EXPECT_TRUE(same(evalOp("div", {a, b}), i32({4}, {3, -3, -3, 3})));
  EXPECT_TRUE(same(evalOp("neg", {a}), i32({4}, {-7, 7, -7, 7})));
  EXPECT_TRUE(same(evalOp("abs", {a}), i32({4}, {7, 7, 7, 7})));
  EXPECT_TRUE(same(evalOp("square", {i64({2}, {-3, 4})}), i64({2}, {9, 16})));
  // i32 arithmetic wraps.
  EXPECT_TRUE(same(evalOp("add", {i32({1}, {2147483647}), i32({1}, {1})}),
                   i32({1}, {-2147483648.0})));
  EXPECT_NE(evalOpError("div", {i32({1}, {1}), i32({1}, {0})})
                .find("integer division by zero"),
            std::string::npos);
}

TEST(ReferenceElementwise, Unary) {
  Value x = f64({4}, {-2, -0.5, 0.5, 2});
  auto map = [&](double (*fn)(double)) {
    Value v = x;
    for (double &d : v.data)
      d = fn(d);
    return v;
  };
  EXPECT_TRUE(
      same(evalOp("exp", {x}), map([](double v) { return std::exp(v); })));
  EXPECT_TRUE(
      same(evalOp("tanh", {x}), map([](double v) { return std::tanh(v); })));
  EXPECT_TRUE(same(evalOp("sigmoid", {x}),
                   map([](double v) { return 1 / (1 + std::exp(-v)); })));
  EXPECT_TRUE(same(evalOp("relu", {x}), f64({4}, {0, 0, 0.5, 2})));
  EXPECT_TRUE(
      same(evalOp("relu6", {f64({3}, {-1, 3, 7})}), f64({3}, {0, 3, 6})));
  EXPECT_TRUE(same(evalOp("elu", {x}),
                   f64({4}, {std::exp(-2.0) - 1, std::exp(-0.5) - 1, 0.5, 2})));
  EXPECT_TRUE(same(evalOp("softplus", {x}),
                   map([](double v) { return std::log(1 + std::exp(v)); })));
  EXPECT_TRUE(same(evalOp("sqrt", {f64({2}, {4, 9})}), f64({2}, {2, 3})));
  EXPECT_TRUE(same(evalOp("rsqrt", {f64({2}, {4, 0.25})}), f64({2}, {0.5, 2})));
  EXPECT_TRUE(
      same(evalOp("log", {f64({2}, {1, std::exp(2.0)})}), f64({2}, {0, 2})));
  EXPECT_TRUE(same(evalOp("neg", {x}), f64({4}, {2, 0.5, -0.5, -2})));
  // Large magnitudes stay finite where the math is.
  EXPECT_TRUE(
      same(evalOp("softplus", {f64({2}, {1000, -1000})}), f64({2}, {1000, 0})));
  EXPECT_TRUE(
      same(evalOp("sigmoid", {f64({2}, {1000, -1000})}), f64({2}, {1, 0})));
  EXPECT_NE(evalOpError("exp", {i32({1}, {1})}).find("must be a float"),
            std::string::npos);
}

TEST(ReferenceElementwise, NanAndInfPropagate) {
  Value x = f32({4}, {kNaN, kInf, -kInf, 1});
  EXPECT_TRUE(same(evalOp("relu", {x}), f32({4}, {kNaN, kInf, 0, 1})));
  EXPECT_TRUE(same(evalOp("relu6", {x}), f32({4}, {kNaN, 6, 0, 1})));
  EXPECT_TRUE(
      same(evalOp("exp", {x}), f32({4}, {kNaN, kInf, 0, std::exp(1.0)})));
  EXPECT_TRUE(same(evalOp("sigmoid", {x}),
                   f32({4}, {kNaN, 1, 0, 1 / (1 + std::exp(-1.0))})));
  EXPECT_TRUE(same(evalOp("softplus", {x}),
                   f32({4}, {kNaN, kInf, 0, std::log1p(std::exp(1.0))})));
  Value y = f32({4}, {0, kNaN, 2, 0});
  EXPECT_TRUE(same(evalOp("maximum", {x, y}), f32({4}, {kNaN, kNaN, 2, 1})));
  EXPECT_TRUE(
      same(evalOp("minimum", {x, y}), f32({4}, {kNaN, kNaN, -kInf, 0})));
  EXPECT_TRUE(same(evalOp("add", {x, y}), f32({4}, {kNaN, kNaN, -kInf, 1})));
  EXPECT_TRUE(same(evalOp("div", {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})}),
                   f32({3}, {kInf, -kInf, kNaN})));
  EXPECT_TRUE(
      same(evalOp("log", {f32({2}, {0, -1})}), f32({2}, {-kInf, kNaN})));
  EXPECT_TRUE(same(evalOp("sub", {f32({1}, {kInf}), f32({1}, {kInf})}),
                   f32({1}, {kNaN})));
}

TEST(ReferenceElementwise, CompareLogicSelect) {
  Value a = f32({4}, {1, 2, 3, kNaN}), b = f32({4}, {2, 2, 2, kNaN});
  EXPECT_TRUE(same(evalOp("equal", {a, b}), i1({4}, {0, 1, 0, 0})));
  EXPECT_TRUE(same(evalOp("not_equal", {a, b}), i1({4}, {1, 0, 1, 1})));
  EXPECT_TRUE(same(evalOp("less", {a, b}), i1({4}, {1, 0, 0, 0})));
  EXPECT_TRUE(same(evalOp("less_equal", {a, b}), i1({4}, {1, 1, 0, 0})));
  EXPECT_TRUE(same(evalOp("greater", {a, b}), i1({4}, {0, 0, 1, 0})));
  EXPECT_TRUE(same(evalOp("greater_equal", {a, b}), i1({4}, {0, 1, 1, 0})));
  Value p = i1({4}, {0, 0, 1, 1}), q = i1({2, 1}, {0, 1});
  EXPECT_TRUE(same(evalOp("logical_and", {p, q}),
                   i1({2, 4}, {0, 0, 0, 0, 0, 0, 1, 1})));
  EXPECT_TRUE(
      same(evalOp("logical_or", {p, q}), i1({2, 4}, {0, 0, 1, 1, 1, 1, 1, 1})));
  EXPECT_TRUE(same(evalOp("logical_not", {p}), i1({4}, {1, 1, 0, 0})));
  // select broadcasts all three: cond [2,1], on_true [3], on_false [].
  EXPECT_TRUE(same(evalOp("select", {i1({2, 1}, {1, 0}), f32({3}, {1, 2, 3}),
                                     f32({}, {-1})}),
                   f32({2, 3}, {1, 2, 3, -1, -1, -1})));
  EXPECT_NE(evalOpError("logical_and", {a, b}).find("must be an i1"),
            std::string::npos);
}

TEST(ReferenceElementwise, Cast) {
  auto castTo = [](g::DataType t) {
    return [t](g::NodeDef &n) { M::setType(n, "dtype", t); };
  };
  Value x = f32({6}, {-2.7, -0.5, 0, 0.5, 2.7, kNaN});
  EXPECT_TRUE(same(evalOp("cast", {x}, castTo(g::DT_INT32)),
                   i32({6}, {-2, 0, 0, 0, 2, 0})));
  EXPECT_TRUE(same(evalOp("cast", {x}, castTo(g::DT_BOOL)),
                   i1({6}, {1, 1, 0, 1, 1, 1})));
  EXPECT_TRUE(same(evalOp("cast", {i1({2}, {1, 0})}, castTo(g::DT_FLOAT)),
                   f32({2}, {1, 0})));
  EXPECT_TRUE(
      same(evalOp("cast", {i64({1}, {5000000000.0})}, castTo(g::DT_INT32)),
           i32({1}, {705032704})));
  // Casting to f32 rounds to float.
  EXPECT_TRUE(same(evalOp("cast", {f64({1}, {0.1})}, castTo(g::DT_FLOAT)),
                   f32({1}, {static_cast<double>(0.1f)}), 0));
}

// --- Linear algebra --------------------------------------------------------

TEST(ReferenceLinalg, Matmul) {
  Value a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Value b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(same(evalOp("matmul", {a, b}), f32({2, 2}, {58, 64, 139, 154})));
  // a^T [3,2] x a [2,3] = [3,3].
  EXPECT_TRUE(
      same(evalOp("matmul", {a, a},
                  [](g::NodeDef &n) { M::setBool(n, "transpose_a", true); }),
           f32({3, 3}, {17, 22, 27, 22, 29, 36, 27, 36, 45})));
  // a [2,3] x a^T [3,2] = [2,2].
  EXPECT_TRUE(
      same(evalOp("matmul", {a, a},
                  [](g::NodeDef &n) { M::setBool(n, "transpose_b", true); }),
           f32({2, 2}, {14, 32, 32, 77})));
  // b^T [2,3] x a^T [3,2].
  EXPECT_TRUE(same(evalOp("matmul", {b, a},
                          [](g::NodeDef &n) {
                            M::setBool(n, "transpose_a", true);
                            M::setBool(n, "transpose_b", true);
                          }),
                   f32({2, 2}, {58, 139, 64, 154})));
}

TEST(ReferenceLinalg, BatchedMatmulBroadcastsBatchDims) {
  // [2,2,2] x [2,2]: the second operand is shared by both batches.
  Value a = f32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4});
  Value b = f32({2, 2}, {5, 6, 7, 8});
  EXPECT_TRUE(same(evalOp("matmul", {a, b}),
                   f32({2, 2, 2}, {5, 6, 7, 8, 19, 22, 43, 50})));
  // [2,1,1,2] x [3,2,1] -> [2,3,1,1].
  Value c = f32({2, 1, 1, 2}, {1, 2, 3, 4});
  Value d = f32({3, 2, 1}, {1, 1, 1, 0, 0, 1});
  EXPECT_TRUE(
      same(evalOp("matmul", {c, d}), f32({2, 3, 1, 1}, {3, 1, 2, 7, 3, 4})));
}

TEST(ReferenceLinalg, Conv2dValidAndSame) {
  Value in = f32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Value ones2 = f32({2, 2, 1, 1}, {1, 1, 1, 1});
  auto padding = [](const char *p) {
    return [p](g::NodeDef &n) { M::setString(n, "padding", p); };
  };
  EXPECT_TRUE(same(evalOp("conv2d", {in, ones2}, padding("VALID")),
                   f32({1, 2, 2, 1}, {12, 16, 24, 28})));
  // SAME, window 2: total padding 1, all of it after (TF: before = total/2).
  EXPECT_TRUE(same(evalOp("conv2d", {in, ones2}, padding("SAME")),
                   f32({1, 3, 3, 1}, {12, 16, 9, 24, 28, 15, 15, 17, 9})));
  // SAME, window 3: one on each side.
  Value ones3 = f32({3, 3, 1, 1}, std::vector<double>(9, 1));
  EXPECT_TRUE(same(evalOp("conv2d", {in, ones3}, padding("SAME")),
                   f32({1, 3, 3, 1}, {12, 21, 16, 27, 45, 33, 24, 39, 28})));
  // SAME with stride 2: out 2x2, total padding 2 -> 1 before.
  EXPECT_TRUE(same(evalOp("conv2d", {in, ones3},
                          [](g::NodeDef &n) {
                            M::setString(n, "padding", "SAME");
                            M::setInts(n, "strides", {2, 2});
                          }),
                   f32({1, 2, 2, 1}, {12, 16, 24, 28})));
  // Dilation 2, VALID: the four corners.
  EXPECT_TRUE(same(evalOp("conv2d", {in, ones2},
                          [](g::NodeDef &n) {
                            M::setString(n, "padding", "VALID");
                            M::setInts(n, "dilations", {2, 2});
                          }),
                   f32({1, 1, 1, 1}, {20})));
}

TEST(ReferenceLinalg, Conv2dChannelsAndBatch) {
  // 2 images of 1x2 pixels with 2 channels; a 1x1 filter mixing 2 -> 3.
  Value in = f32({2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Value filter = f32({1, 1, 2, 3}, {1, 0, 1, 0, 1, 1});
  // out[c_out] = x0 * f[0][c_out] + x1 * f[1][c_out] = {x0, x1, x0 + x1}.
  EXPECT_TRUE(
      same(evalOp("conv2d", {in, filter},
                  [](g::NodeDef &n) { M::setString(n, "padding", "VALID"); }),
           f32({2, 1, 2, 3}, {1, 2, 3, 3, 4, 7, 5, 6, 11, 7, 8, 15})));
}

TEST(ReferenceLinalg, Pooling) {
  Value in = f32({1, 4, 4, 1},
                 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  auto pool = [](const char *padding, int64_t k, int64_t s) {
    return [=](g::NodeDef &n) {
      M::setString(n, "padding", padding);
      M::setInts(n, "ksize", {k, k});
      M::setInts(n, "strides", {s, s});
    };
  };
  EXPECT_TRUE(same(evalOp("max_pool", {in}, pool("VALID", 2, 2)),
                   f32({1, 2, 2, 1}, {6, 8, 14, 16})));
  EXPECT_TRUE(same(evalOp("avg_pool", {in}, pool("VALID", 2, 2)),
                   f32({1, 2, 2, 1}, {3.5, 5.5, 11.5, 13.5})));
  // SAME 3x3 stride 2 on 4x4: out 2x2, total padding 1 -> 0 before, 1 after.
  EXPECT_TRUE(same(evalOp("max_pool", {in}, pool("SAME", 3, 2)),
                   f32({1, 2, 2, 1}, {11, 12, 15, 16})));
  // SAME average pooling divides by the valid elements only.
  Value small = f32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(same(evalOp("avg_pool", {small}, pool("SAME", 2, 1)),
                   f32({1, 3, 3, 1}, {3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9})));
  // Max pooling ignores padding even when every value is negative.
  Value negative = f32({1, 2, 2, 1}, {-1, -2, -3, -4});
  EXPECT_TRUE(same(evalOp("max_pool", {negative}, pool("SAME", 2, 1)),
                   f32({1, 2, 2, 1}, {-1, -2, -3, -4})));
  EXPECT_TRUE(same(
      evalOp("max_pool", {f32({1, 1, 2, 1}, {kNaN, 1})}, pool("VALID", 1, 1)),
      f32({1, 1, 2, 1}, {kNaN, 1})));
}

// --- Reductions ------------------------------------------------------------

TEST(ReferenceReduce, SumMeanMaxMinProd) {
  Value x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto axes = [](std::vector<int64_t> a, bool keep = false) {
    return [=](g::NodeDef &n) {
      M::setInts(n, "axes", a);
      if (keep)
        M::setBool(n, "keep_dims", true);
    };
  };
  EXPECT_TRUE(same(evalOp("reduce_sum", {x}), f32({}, {21})));
  EXPECT_TRUE(same(evalOp("reduce_sum", {x}, axes({0})), f32({3}, {5, 7, 9})));
  EXPECT_TRUE(
      same(evalOp("reduce_sum", {x}, axes({-1}, true)), f32({2, 1}, {6, 15})));
  EXPECT_TRUE(same(evalOp("reduce_mean", {x}, axes({1})), f32({2}, {2, 5})));
  EXPECT_TRUE(same(evalOp("reduce_max", {x}, axes({0})), f32({3}, {4, 5, 6})));
  EXPECT_TRUE(same(evalOp("reduce_min", {x}, axes({1})), f32({2}, {1, 4})));
  EXPECT_TRUE(same(evalOp("reduce_prod", {x}, axes({0, 1})), f32({}, {720})));
  EXPECT_TRUE(
      same(evalOp("reduce_max", {f32({3}, {1, kNaN, 2})}), f32({}, {kNaN})));
  // Integer mean truncates.
  EXPECT_TRUE(same(evalOp("reduce_mean", {i32({3}, {1, 2, 2})}), i32({}, {1})));
  EXPECT_TRUE(same(evalOp("reduce_mean", {i32({2}, {-1, -2})}), i32({}, {-1})));
  // Reducing a size-0 axis.
  EXPECT_TRUE(same(evalOp("reduce_sum", {f32({0, 2}, {})}, axes({0})),
                   f32({2}, {0, 0})));
}

// Hand-computed values: round's halves to even, sign's zeros, ceil, erf,
// log1p / expm1; cumsum / cumprod along each axis, exclusive, reversed.
TEST(ReferenceElementwise, RoundSignCeilErfLog1pExpm1) {
  Value h = f32({6}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.6});
  EXPECT_TRUE(same(evalOp("round", {h}), f32({6}, {-2, -2, -0, 0, 2, 3})));
  EXPECT_TRUE(same(evalOp("round", {i32({2}, {-3, 4})}), i32({2}, {-3, 4})));
  EXPECT_TRUE(same(evalOp("ceil", {h}), f32({6}, {-2, -1, -0, 1, 2, 3})));
  EXPECT_TRUE(same(evalOp("sign", {f32({4}, {-2, 0, 0.5, kNaN})}),
                   f32({4}, {-1, 0, 1, kNaN})));
  EXPECT_TRUE(
      same(evalOp("sign", {i64({3}, {-7, 0, 9})}), i64({3}, {-1, 0, 1})));
  EXPECT_TRUE(same(evalOp("erf", {f64({2}, {0, 1})}),
                   f64({2}, {0, 0.8427007929497149})));
  EXPECT_TRUE(
      same(evalOp("log1p", {f64({2}, {0, 1e-10})}), f64({2}, {0, 1e-10})));
  EXPECT_TRUE(
      same(evalOp("expm1", {f64({2}, {0, 1e-10})}), f64({2}, {0, 1e-10})));
  EXPECT_NE(evalOpError("erf", {i32({1}, {1})}).find("must be a float"),
            std::string::npos);
}

TEST(ReferenceReduce, CumsumCumprod) {
  Value x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto attrs = [](int64_t axis, bool exclusive, bool reverse) {
    return [=](g::NodeDef &n) {
      M::setInt(n, "axis", axis);
      M::setBool(n, "exclusive", exclusive);
      M::setBool(n, "reverse", reverse);
    };
  };
  EXPECT_TRUE(same(evalOp("cumsum", {x}), f32({2, 3}, {1, 2, 3, 5, 7, 9})));
  EXPECT_TRUE(same(evalOp("cumsum", {x}, attrs(1, false, false)),
                   f32({2, 3}, {1, 3, 6, 4, 9, 15})));
  EXPECT_TRUE(same(evalOp("cumsum", {x}, attrs(-1, true, false)),
                   f32({2, 3}, {0, 1, 3, 0, 4, 9})));
  EXPECT_TRUE(same(evalOp("cumsum", {x}, attrs(1, false, true)),
                   f32({2, 3}, {6, 5, 3, 15, 11, 6})));
  EXPECT_TRUE(same(evalOp("cumsum", {x}, attrs(1, true, true)),
                   f32({2, 3}, {5, 3, 0, 11, 6, 0})));
  EXPECT_TRUE(same(evalOp("cumprod", {x}, attrs(1, false, false)),
                   f32({2, 3}, {1, 2, 6, 4, 20, 120})));
  EXPECT_TRUE(same(evalOp("cumprod", {x}, attrs(0, true, true)),
                   f32({2, 3}, {4, 5, 6, 1, 1, 1})));
  EXPECT_TRUE(
      same(evalOp("cumprod", {i32({3}, {2, -3, 4})}, attrs(0, true, false)),
           i32({3}, {1, 2, -6})));
}

TEST(ReferenceReduce, ArgmaxArgmin) {
  Value x = f32({2, 4}, {1, 3, 3, 0, 2, 2, 1, 2});
  auto axis = [](int64_t a) {
    return [=](g::NodeDef &n) { M::setInt(n, "axis", a); };
  };
  // Ties go to the first index.
  EXPECT_TRUE(same(evalOp("argmax", {x}, axis(1)), i64({2}, {1, 0})));
  EXPECT_TRUE(same(evalOp("argmin", {x}, axis(-1)), i64({2}, {3, 2})));
  EXPECT_TRUE(same(evalOp("argmax", {x}, axis(0)), i64({4}, {1, 0, 0, 1})));
  EXPECT_TRUE(same(evalOp("argmin", {x},
                          [](g::NodeDef &n) {
                            M::setInt(n, "axis", 0);
                            M::setType(n, "output_type", g::DT_INT32);
                          }),
                   i32({4}, {0, 1, 1, 0})));
}

// --- Shapes ----------------------------------------------------------------

TEST(ReferenceShapes, ReshapeTransposeConcat) {
  Value x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      same(evalOp("reshape", {x},
                  [](g::NodeDef &n) { M::setInts(n, "shape", {3, -1}); }),
           f32({3, 2}, {1, 2, 3, 4, 5, 6})));
  EXPECT_TRUE(same(evalOp("reshape", {x},
                          [](g::NodeDef &n) { M::setShape(n, "shape", {-1}); }),
                   f32({6}, {1, 2, 3, 4, 5, 6})));
  EXPECT_TRUE(same(evalOp("transpose", {x},
                          [](g::NodeDef &n) { M::setInts(n, "perm", {1, 0}); }),
                   f32({3, 2}, {1, 4, 2, 5, 3, 6})));
  Value y = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TRUE(
      same(evalOp("transpose", {y},
                  [](g::NodeDef &n) { M::setInts(n, "perm", {2, 0, 1}); }),
           f32({2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7})));
  EXPECT_TRUE(same(evalOp("concat", {x, f32({2, 1}, {7, 8})},
                          [](g::NodeDef &n) { M::setInt(n, "axis", -1); }),
                   f32({2, 4}, {1, 2, 3, 7, 4, 5, 6, 8})));
  EXPECT_TRUE(same(evalOp("concat", {x, f32({1, 3}, {7, 8, 9}), x},
                          [](g::NodeDef &n) { M::setInt(n, "axis", 0); }),
                   f32({5, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6})));
}

TEST(ReferenceShapes, SlicePadBroadcastSqueezeExpand) {
  Value x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(same(evalOp("slice", {x},
                          [](g::NodeDef &n) {
                            M::setInts(n, "begin", {1, 0});
                            M::setInts(n, "size", {-1, 2});
                          }),
                   f32({2, 2}, {4, 5, 7, 8})));
  EXPECT_TRUE(same(evalOp("pad", {f32({1, 2}, {1, 2})},
                          [](g::NodeDef &n) {
                            M::setInts(n, "paddings", {1, 0, 0, 2});
                            M::setFloat(n, "constant_value", -1);
                          }),
                   f32({2, 4}, {-1, -1, -1, -1, 1, 2, -1, -1})));
  EXPECT_TRUE(
      same(evalOp("broadcast_to", {f32({2, 1}, {1, 2})},
                  [](g::NodeDef &n) { M::setInts(n, "shape", {2, 2, 3}); }),
           f32({2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2})));
  Value s = f32({1, 2, 1}, {1, 2});
  EXPECT_TRUE(same(evalOp("squeeze", {s}), f32({2}, {1, 2})));
  EXPECT_TRUE(same(evalOp("squeeze", {s},
                          [](g::NodeDef &n) { M::setInts(n, "axes", {-1}); }),
                   f32({1, 2}, {1, 2})));
  EXPECT_TRUE(same(evalOp("expand_dims", {f32({2}, {1, 2})},
                          [](g::NodeDef &n) { M::setInt(n, "axis", -1); }),
                   f32({2, 1}, {1, 2})));
  EXPECT_TRUE(same(evalOp("expand_dims", {f32({2}, {1, 2})},
                          [](g::NodeDef &n) { M::setInt(n, "axis", 0); }),
                   f32({1, 2}, {1, 2})));
}

// --- Indexing --------------------------------------------------------------

TEST(ReferenceIndexing, Gather) {
  Value params = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(same(evalOp("gather", {params, i32({2, 2}, {2, 0, 1, 1})}),
                   f32({2, 2, 2}, {5, 6, 1, 2, 3, 4, 3, 4})));
  EXPECT_TRUE(same(evalOp("gather", {params, i64({3}, {1, 1, 0})},
                          [](g::NodeDef &n) { M::setInt(n, "axis", 1); }),
                   f32({3, 3}, {2, 2, 1, 4, 4, 3, 6, 6, 5})));
  EXPECT_TRUE(same(evalOp("gather", {params, i64({}, {2})}), f32({2}, {5, 6})));
}

TEST(ReferenceIndexing, GatherOutOfRangeIsAnErrorNamingTheNode) {
  Value params = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  std::string error = evalOpError("gather", {params, i32({2}, {0, 3})});
  EXPECT_NE(error.find("node 'op' (gather)"), std::string::npos) << error;
  EXPECT_NE(error.find("index 3"), std::string::npos) << error;
  EXPECT_NE(error.find("[0, 3)"), std::string::npos) << error;
  error = evalOpError("gather", {params, i32({1}, {-1})});
  EXPECT_NE(error.find("index -1"), std::string::npos) << error;
  error = evalOpError("gather", {params, f32({1}, {0})});
  EXPECT_NE(error.find("indices must be an i32 or i64"), std::string::npos)
      << error;
}

TEST(ReferenceIndexing, Scatter) {
  Value ref = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Value rows = f32({3, 2}, {10, 20, 30, 40, 50, 60});
  // Duplicate indices add up.
  EXPECT_TRUE(same(evalOp("scatter", {ref, i64({3}, {2, 0, 2}), rows}),
                   f32({3, 2}, {31, 42, 3, 4, 65, 86})));
  std::string error = evalOpError("scatter", {ref, i64({3}, {2, 3, 0}), rows});
  EXPECT_NE(error.find("index 3 (indices element 1) is out of range [0, 3)"),
            std::string::npos)
      << error;
  error = evalOpError("scatter", {ref, i64({2}, {0, 1}), rows});
  EXPECT_NE(error.find("must have the shape indices + ref[1:] = [2,2]"),
            std::string::npos)
      << error;
}

TEST(ReferenceIndexing, OneHot) {
  Value indices = i64({3}, {0, 2, 5}); // 5 is out of range: all off
  EXPECT_TRUE(same(evalOp("one_hot", {indices},
                          [](g::NodeDef &n) { M::setInt(n, "depth", 3); }),
                   f32({3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0})));
  EXPECT_TRUE(same(evalOp("one_hot", {i32({2}, {1, -1})},
                          [](g::NodeDef &n) {
                            M::setInt(n, "depth", 2);
                            M::setInt(n, "axis", 0);
                            M::setFloat(n, "on_value", 5);
                            M::setFloat(n, "off_value", -1);
                            M::setType(n, "dtype", g::DT_INT32);
                          }),
                   i32({2, 2}, {-1, -1, 5, -1})));
}

TEST(ReferenceIndexing, UnsortedSegmentSum) {
  Value data = f32({6, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  // 5 segments from the third operand's dim 0 (not data's 6); segment 4 is
  // empty; -1 and 5 are dropped; duplicates add up.
  EXPECT_TRUE(
      same(evalOp("unsorted_segment_sum", {data, i64({6}, {0, 2, 2, 1, 0, 3}),
                                           i64({5, 1}, {9, 9, 9, 9, 9})}),
           f32({5, 2}, {8, 10, 6, 7, 6, 8, 10, 11, 0, 0})));
  EXPECT_TRUE(
      same(evalOp("unsorted_segment_sum",
                  {data, i32({6}, {-1, 1, 5, 1, 0, 1}), f32({2}, {0, 0})}),
           f32({2, 2}, {8, 9, 18, 21})));
  EXPECT_TRUE(
      same(evalOp("unsorted_segment_sum",
                  {i64({3}, {4, 5, 6}), i64({3}, {1, 1, 0}), i1({2}, {0, 1})}),
           i64({2}, {6, 9})));
  std::string error =
      evalOpError("unsorted_segment_sum",
                  {data, i64({5}, {0, 0, 0, 0, 0}), i64({2}, {0, 0})});
  EXPECT_NE(error.find("node 'op' (unsorted_segment_sum): segment_ids [5] "
                       "must have one id per row of data [6,2]"),
            std::string::npos)
      << error;
}

TEST(ReferenceIndexing, Bucketize) {
  auto boundaries = [](std::vector<double> bounds) {
    return [bounds](g::NodeDef &n) {
      g::AttrValue::ListValue *list =
          (*n.mutable_attr())["boundaries"].mutable_list();
      for (double b : bounds)
        list->add_f(b);
    };
  };
  // TF 2.15's tf.raw_ops.Bucketize on the same numbers: a boundary equal to
  // x counts; NaN counts them all; -0 equals 0.
  EXPECT_TRUE(
      same(evalOp("bucketize",
                  {f32({10}, {-kInf, -1, 0, 0.5, 1, 1.5, 2, kNaN, kInf, -0.0})},
                  boundaries({0, 1, 2})),
           i64({10}, {0, 0, 1, 1, 2, 2, 3, 3, 3, 1})));
  EXPECT_TRUE(
      same(evalOp("bucketize", {f32({2}, {1, 2})}, boundaries({1, 1, 2})),
           i64({2}, {2, 3})));
  EXPECT_TRUE(same(evalOp("bucketize", {f32({2}, {-5, 5})}, boundaries({})),
                   i64({2}, {0, 0})));
  // Boundaries are f32 (TF's list(float)): 0.7 becomes 0.699999988, which
  // f32 0.7 equals and f64 0.69999999 exceeds; integers compare as f32.
  EXPECT_TRUE(same(evalOp("bucketize", {f32({1}, {static_cast<float>(0.7)})},
                          boundaries({0.7})),
                   i64({1}, {1})));
  EXPECT_TRUE(same(evalOp("bucketize", {f64({2}, {0.69999999, 0.6999999})},
                          boundaries({0.7})),
                   i64({2}, {1, 0})));
  EXPECT_TRUE(
      same(evalOp("bucketize", {i64({3}, {16777217, 16777216, 16777215})},
                  boundaries({16777217.0})),
           i64({3}, {1, 1, 0})));
  std::string error =
      evalOpError("bucketize", {f32({1}, {0})}, boundaries({2, 1}));
  EXPECT_NE(error.find("node 'op' (bucketize): boundaries must be sorted"),
            std::string::npos)
      << error;
}

// --- Neural-network ops and losses -----------------------------------------

TEST(ReferenceNN, SoftmaxAndLogSoftmax) {
  Value logits = f64(
      {2, 3}, {std::log(1.0), std::log(2.0), std::log(3.0), 1000, 1000, -kInf});
  EXPECT_TRUE(same(evalOp("softmax", {logits}),
                   f64({2, 3}, {1.0 / 6, 2.0 / 6, 3.0 / 6, 0.5, 0.5, 0})));
  EXPECT_TRUE(
      same(evalOp("log_softmax", {logits}),
           f64({2, 3}, {std::log(1.0 / 6), std::log(2.0 / 6), std::log(3.0 / 6),
                        std::log(0.5), std::log(0.5), -kInf})));
  // axis 0.
  EXPECT_TRUE(same(evalOp("softmax", {f64({2, 1}, {0, 0})},
                          [](g::NodeDef &n) { M::setInt(n, "axis", 0); }),
                   f64({2, 1}, {0.5, 0.5})));
  EXPECT_TRUE(same(evalOp("softmax", {f64({1, 2}, {kNaN, 0})}),
                   f64({1, 2}, {kNaN, kNaN})));
}

TEST(ReferenceNN, CrossEntropies) {
  Value logits =
      f64({2, 3}, {std::log(1.0), std::log(2.0), std::log(3.0), 0, 0, 0});
  Value labels = f64({2, 3}, {0, 0, 1, 0.5, 0.5, 0});
  EXPECT_TRUE(same(evalOp("softmax_cross_entropy", {logits, labels}),
                   f64({2}, {-std::log(0.5), std::log(3.0)})));
  EXPECT_TRUE(
      same(evalOp("sparse_softmax_cross_entropy", {logits, i32({2}, {1, 0})}),
           f64({2}, {std::log(3.0), std::log(3.0)})));
  std::string error =
      evalOpError("sparse_softmax_cross_entropy", {logits, i32({2}, {1, 3})});
  EXPECT_NE(error.find("label 3"), std::string::npos) << error;
  // max(x, 0) - x z + log(1 + exp(-|x|)), finite for large |x|.
  Value x = f64({4}, {0, 2, 100, -100});
  Value z = f64({4}, {1, 0.25, 0, 1});
  EXPECT_TRUE(same(evalOp("sigmoid_cross_entropy", {x, z}),
                   f64({4}, {std::log(2.0),
                             2 - 0.5 + std::log1p(std::exp(-2.0)), 100, 100})));
}

TEST(ReferenceNN, StopGradientIsIdentity) {
  Value x = f32({2}, {1, kNaN});
  EXPECT_TRUE(same(evalOp("stop_gradient", {x}), x));
}

// --- Randomness ------------------------------------------------------------

TEST(ReferenceRandom, OpsFollowPhilox) {
  using namespace estc::random;
  auto attrs = [](g::DataType dtype) {
    return [=](g::NodeDef &n) {
      M::setInt(n, "seed", 42);
      M::setInts(n, "shape", {2, 3});
      M::setType(n, "dtype", dtype);
      M::setFloat(n, "minval", -1);
      M::setFloat(n, "maxval", 3);
      M::setFloat(n, "mean", 1);
      M::setFloat(n, "stddev", 2);
    };
  };
  Value counter = i64({}, {7});
  Value u = evalOp("random_uniform", {counter}, [&](g::NodeDef &n) {
    attrs(g::DT_FLOAT)(n);
    n.mutable_attr()->erase("mean");
    n.mutable_attr()->erase("stddev");
  });
  ASSERT_EQ(u.shape, (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(u.data[i], uniform<float>(randomBits(42, 7, i), -1.0f, 3.0f));

  auto normalAttrs = [&](g::DataType dtype) {
    return [&, dtype](g::NodeDef &n) {
      attrs(dtype)(n);
      n.mutable_attr()->erase("minval");
      n.mutable_attr()->erase("maxval");
    };
  };
  Value z = evalOp("random_normal", {counter}, normalAttrs(g::DT_FLOAT));
  Value z64 = evalOp("random_normal", {counter}, normalAttrs(g::DT_DOUBLE));
  Value t = evalOp("truncated_normal", {counter}, normalAttrs(g::DT_FLOAT));
  EXPECT_EQ(z64.dtype, g::DT_DOUBLE);
  for (int i = 0; i < 6; ++i) {
    Block r = randomBits(42, 7, i);
    EXPECT_EQ(z.data[i], normal<float>(r, 1.0f, 2.0f));
    EXPECT_EQ(z64.data[i], normal<double>(r, 1.0, 2.0));
    EXPECT_NEAR(z.data[i], z64.data[i], 1e-5);
    EXPECT_EQ(t.data[i], truncatedNormal<float>(r, 1.0f, 2.0f));
    EXPECT_GE(t.data[i], -3.0);
    EXPECT_LE(t.data[i], 5.0);
  }
  // A different counter draws different numbers.
  Value next = evalOp("random_uniform", {i64({}, {8})}, [&](g::NodeDef &n) {
    attrs(g::DT_FLOAT)(n);
    n.mutable_attr()->erase("mean");
    n.mutable_attr()->erase("stddev");
  });
  EXPECT_NE(next.data, u.data);
}

TEST(ReferenceRandom, Dropout) {
  using namespace estc::random;
  std::vector<double> ones(1000, 1.0);
  Value x = f32({10, 100}, ones);
  Value y = evalOp("dropout", {x, i64({}, {3})}, [](g::NodeDef &n) {
    M::setFloat(n, "rate", 0.25);
    M::setInt(n, "seed", 9);
  });
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    bool keep = dropoutKeep<float>(randomBits(9, 3, i), 0.25f);
    EXPECT_EQ(y.data[i], keep ? 1.0 / 0.75 : 0.0) << i;
    kept += keep;
  }
  EXPECT_GT(kept, 700);
  EXPECT_LT(kept, 800);
  // rate 0 keeps everything unchanged.
  Value same0 = evalOp("dropout", {x, i64({}, {3})}, [](g::NodeDef &n) {
    M::setFloat(n, "rate", 0);
    M::setInt(n, "seed", 9);
  });
  EXPECT_TRUE(same(same0, x));
}

// --- Graphs: partial shapes, signatures, variables, errors -----------------

/// dense: relu(x W + b) with W [3,2], b [2] as variables; loss = mean(y).
GraphMaker denseGraph() {
  GraphMaker m;
  m.variable("w", g::DT_FLOAT, {3, 2});
  m.variable("b", g::DT_FLOAT, {2});
  m.placeholder("x", g::DT_FLOAT, {-1, 3});
  m.read("w/read", "w");
  m.read("b/read", "b");
  m.node("matmul", "matmul", {"x", "w/read"});
  m.node("add", "add", {"matmul", "b/read:0"});
  m.node("relu", "relu", {"add"});
  m.node("loss", "reduce_mean", {"relu"});
  g::SignatureDef &predict = m.signature("predict");
  g::Binding *f = predict.add_features();
  f->set_key("x");
  f->set_node("x");
  g::Binding *p = predict.add_predictions();
  p->set_key("y");
  p->set_node("relu");
  return m;
}

TEST(ReferenceGraph, PartialBatchShapes) {
  GraphMaker m = denseGraph();
  Evaluator evaluator(m.def());
  std::vector<double> w = {1, -1, 0.5, 2, -2, 0}, b = {0.5, -1};
  evaluator.variables()["w"] = f32({3, 2}, w);
  evaluator.variables()["b"] = f32({2}, b);
  for (int64_t batch : {1, 3, 17}) {
    std::vector<double> xs, ys;
    for (int64_t i = 0; i < batch * 3; ++i)
      xs.push_back(static_cast<double>((i * 7) % 5) - 2);
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t c = 0; c < 2; ++c) {
        double sum = b[c];
        for (int64_t k = 0; k < 3; ++k)
          sum += xs[r * 3 + k] * w[k * 2 + c];
        ys.push_back(std::max(sum, 0.0));
      }
    Value x = f32({batch, 3}, xs), expected = f32({batch, 2}, ys);
    std::map<std::string, Value> out = evaluator.run("predict", {{"x", x}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(same(out.at("predictions/y"), expected)) << "batch " << batch;
  }
}

TEST(ReferenceGraph, FeedAndVariableErrors) {
  GraphMaker m = denseGraph();
  Evaluator evaluator(m.def());
  auto errorOf = [&](const std::function<void()> &fn) -> std::string {
    try {
      fn();
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "";
  };
  Value x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(errorOf([&] {
              evaluator.run("predict", {{"x", x}});
            }).find("variable 'w' has no value"),
            std::string::npos);
  evaluator.variables()["w"] = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  evaluator.variables()["b"] = f32({2}, {0, 0});
  EXPECT_NE(errorOf([&] {
              evaluator.run("predict", {{"x", x}});
            }).find("variable 'w' has shape [2,3] but is declared [3,2]"),
            std::string::npos);
  evaluator.variables()["w"] = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(errorOf([&] {
              evaluator.run("predict", {});
            }).find("feature 'x' is not fed"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluator.run("predict", {{"x", x}, {"z", x}});
            }).find("has no feature 'z'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluator.run("predict", {{"x", f32({2, 2}, {1, 2, 3, 4})}});
            }).find("shape [2,2] but is declared [?,3]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluator.run("eval", {{"x", x}});
            }).find("no signature 'eval'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluator.evaluate({"relu"}, {});
            }).find("placeholder 'x' is not fed"),
            std::string::npos);
}

/// eval: a streaming mean of x (metric state total/count) and loss = sum(x).
GraphMaker streamingMeanGraph() {
  GraphMaker m;
  m.variable("mean/total", g::DT_FLOAT, {});
  m.variable("mean/count", g::DT_FLOAT, {});
  m.placeholder("x", g::DT_FLOAT, {-1});
  m.placeholder("label", g::DT_FLOAT, {-1});
  m.node("diff", "sub", {"x", "label"});
  m.node("loss", "reduce_sum", {"diff"});
  m.read("total/read", "mean/total");
  m.read("count/read", "mean/count");
  m.node("batch_sum", "reduce_sum", {"x"});
  m.node("new_total", "add", {"total/read", "batch_sum"});
  m.assign("update_total", "mean/total", "new_total");
  m.constant("one", f32({}, {1}));
  m.node("batch_count", "reduce_sum", {"ones_like"});
  m.node("ones_like", "add", {"zeros", "one"});
  m.node("zeros", "mul", {"x", "zero"});
  m.constant("zero", f32({}, {0}));
  m.node("new_count", "add", {"count/read", "batch_count"});
  m.assign("update_count", "mean/count", "new_count");
  m.read("total/read2", "mean/total");
  m.read("count/read2", "mean/count");
  m.node("mean", "div", {"total/read2", "count/read2"});
  g::SignatureDef &eval = m.signature("eval");
  g::Binding *f = eval.add_features();
  f->set_key("x");
  f->set_node("x");
  g::Binding *l = eval.add_labels();
  l->set_node("label");
  eval.set_loss("loss");
  g::MetricBinding *metric = eval.add_metrics();
  metric->set_key("mean");
  metric->set_value("mean");
  metric->add_update("update_total");
  metric->add_update("update_count");
  return m;
}

TEST(ReferenceGraph, MetricAccumulatesAcrossEvalRuns) {
  GraphMaker m = streamingMeanGraph();
  Evaluator evaluator(m.def());
  evaluator.variables()["mean/total"] = f32({}, {0});
  evaluator.variables()["mean/count"] = f32({}, {0});

  auto out = evaluator.run("eval", {{"x", f32({2}, {1, 3})}},
                           {{"", f32({2}, {1, 1})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(same(out.at("loss"), f32({}, {2})));
  EXPECT_TRUE(same(out.at("metrics/mean"), f32({}, {2}))); // read after update
  EXPECT_TRUE(same(evaluator.variables().at("mean/total"), f32({}, {4})));
  EXPECT_TRUE(same(evaluator.variables().at("mean/count"), f32({}, {2})));

  out = evaluator.run("eval", {{"x", f32({3}, {5, 6, 7})}},
                      {{"", f32({3}, {0, 0, 0})}});
  EXPECT_TRUE(same(out.at("loss"), f32({}, {18})));
  EXPECT_TRUE(same(out.at("metrics/mean"), f32({}, {22.0 / 5})));
  EXPECT_TRUE(same(evaluator.variables().at("mean/count"), f32({}, {5})));
}

TEST(ReferenceGraph, AssignsRunInTopologicalFileOrder) {
  // v <- v + 1 (node "inc"), then a later read sees the new value while an
  // earlier read (computed before the assign) sees the old one.
  GraphMaker m;
  m.variable("v", g::DT_INT64, {});
  m.read("before", "v");
  m.constant("one", i64({}, {1}));
  m.node("plus", "add", {"before", "one"});
  m.assign("inc", "v", "plus");
  m.read("after", "v");
  Evaluator evaluator(m.def());
  evaluator.variables()["v"] = i64({}, {10});
  std::vector<Value> values =
      evaluator.evaluate({"before", "inc", "after"}, {});
  EXPECT_TRUE(same(values[0], i64({}, {10})));
  EXPECT_EQ(values[1].dtype, g::DT_INVALID);
  EXPECT_TRUE(same(values[2], i64({}, {11})));
  EXPECT_TRUE(same(evaluator.variables().at("v"), i64({}, {11})));
  // Assigning a value of the wrong dtype is an error naming the node.
  GraphMaker bad;
  bad.variable("v", g::DT_INT64, {});
  bad.constant("c", f32({}, {1}));
  bad.assign("set", "v", "c");
  Evaluator badEvaluator(bad.def());
  try {
    badEvaluator.evaluate({"set"}, {});
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("node 'set' (assign_variable)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ReferenceGraph, MinimizeIsNotEvaluated) {
  GraphMaker m;
  m.variable("w", g::DT_FLOAT, {});
  m.read("w/read", "w");
  m.node("loss", "square", {"w/read"});
  g::NodeDef &train = m.node("train", "minimize", {"loss"});
  M::setString(train, "optimizer", "sgd");
  g::SignatureDef &sig = m.signature("train");
  sig.set_loss("loss");
  sig.set_train_op("train");
  Evaluator evaluator(m.def());
  evaluator.variables()["w"] = f32({}, {3});
  try {
    evaluator.run("train", {});
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(
        std::string(e.what()).find("reference: minimize is not evaluated"),
        std::string::npos)
        << e.what();
  }
  // The loss alone can still be evaluated.
  EXPECT_TRUE(same(evaluator.evaluate({"loss"}).at(0), f32({}, {9})));
}

TEST(ReferenceGraph, GroupRunsItsInputs) {
  // tf.group of two assignments (one through a nested group) as a metric
  // update; a group has no value.
  GraphMaker m;
  m.variable("a", g::DT_INT64, {});
  m.variable("b", g::DT_INT64, {});
  m.constant("one", i64({}, {1}));
  m.constant("two", i64({}, {2}));
  m.assign("set_a", "a", "one");
  m.assign("set_b", "b", "two");
  m.node("inner", "group", {"set_b"});
  m.node("both", "group", {"set_a", "inner"});
  m.read("ra", "a");
  g::SignatureDef &sig = m.signature("eval");
  sig.set_loss("one");
  g::MetricBinding *metric = sig.add_metrics();
  metric->set_key("a");
  metric->set_value("ra");
  metric->add_update("both");
  Evaluator evaluator(m.def());
  evaluator.variables()["a"] = i64({}, {0});
  evaluator.variables()["b"] = i64({}, {0});
  std::map<std::string, Value> results = evaluator.run("eval", {});
  EXPECT_TRUE(same(results.at("metrics/a"), i64({}, {1})));
  EXPECT_TRUE(same(evaluator.variables().at("b"), i64({}, {2})));
  EXPECT_EQ(evaluator.evaluate({"both"}).at(0).dtype, g::DT_INVALID);
}

TEST(ReferenceGraph, InvalidGraphsAreRejected) {
  auto errorOf = [](const GraphMaker &m) -> std::string {
    try {
      Evaluator evaluator(m.def());
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "";
  };
  GraphMaker unknown;
  unknown.node("n", "frobnicate");
  EXPECT_NE(errorOf(unknown).find("node 'n': unknown op 'frobnicate'"),
            std::string::npos);
  GraphMaker cycle;
  cycle.node("a", "neg", {"b"});
  cycle.node("b", "neg", {"a"});
  EXPECT_NE(errorOf(cycle).find("cycle"), std::string::npos);
  GraphMaker dangling;
  dangling.node("a", "neg", {"missing"});
  EXPECT_NE(errorOf(dangling).find("input 'missing' is not a node"),
            std::string::npos);
  GraphMaker twice;
  twice.constant("c", f32({}, {1}));
  twice.constant("c", f32({}, {1}));
  EXPECT_NE(errorOf(twice).find("node 'c' is defined twice"),
            std::string::npos);
  GraphMaker undeclared;
  undeclared.read("r", "nowhere");
  EXPECT_NE(errorOf(undeclared).find("variable 'nowhere' is not declared"),
            std::string::npos);
  GraphMaker second;
  second.constant("c", f32({}, {1}));
  second.node("n", "neg", {"c:1"});
  EXPECT_NE(errorOf(second).find("names an output other than 0"),
            std::string::npos);
}

TEST(ReferenceGraph, ConstantsSplatAndCheckCounts) {
  GraphMaker m;
  g::NodeDef &c = m.constant("c", f32({2, 2}, {7, 7, 7, 7}));
  c.mutable_attr()->at("value").mutable_tensor()->mutable_float_val()->Truncate(
      1);
  m.constant("d", i32({3}, {1, 2, 3}));
  Evaluator evaluator(m.def());
  std::vector<Value> v = evaluator.evaluate({"c", "d"});
  EXPECT_TRUE(same(v[0], f32({2, 2}, {7, 7, 7, 7})));
  EXPECT_TRUE(same(v[1], i32({3}, {1, 2, 3})));

  GraphMaker bad;
  g::NodeDef &e = bad.constant("e", f32({3}, {1, 2, 3}));
  e.mutable_attr()->at("value").mutable_tensor()->mutable_float_val()->Truncate(
      2);
  Evaluator badEvaluator(bad.def());
  EXPECT_THROW(badEvaluator.evaluate({"e"}), std::runtime_error);
}

// --- Graphs from the graph builder (examples/models) -----------------------

/// Gives every variable of the graph a value: `chosen` by name, otherwise a
/// small deterministic pattern (zeros for non-trainable state).
void initializeVariables(Evaluator &evaluator,
                         const std::map<std::string, Value> &chosen = {}) {
  for (const g::VariableDef &var : evaluator.graph().variable()) {
    auto it = chosen.find(var.name());
    if (it != chosen.end()) {
      evaluator.variables()[var.name()] = it->second;
      continue;
    }
    std::vector<int64_t> shape(var.shape().dim().begin(),
                               var.shape().dim().end());
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<double> data(n, 0.0);
    if (var.trainable())
      for (int64_t i = 0; i < n; ++i)
        data[i] = 0.01 * static_cast<double>((i * 37) % 11 - 5);
    evaluator.variables()[var.name()] = Value(var.dtype(), shape, data);
  }
}

TEST(ReferenceModels, LinearPredictAndEvalByHand) {
  Evaluator evaluator(estc::models::build_linear(0));
  std::string kernel, bias;
  for (const g::VariableDef &var : evaluator.graph().variable())
    if (var.trainable())
      (var.shape().dim_size() == 2 ? kernel : bias) = var.name();
  ASSERT_FALSE(kernel.empty());
  ASSERT_FALSE(bias.empty());
  initializeVariables(evaluator, {{kernel, f32({3, 1}, {0.5, -1, 2})},
                                  {bias, f32({1}, {0.1})}});
  // logits = 0.5 age - fare + 2 pclass + 0.1
  std::map<std::string, Value> features = {{"age", f32({3, 1}, {2, 0, 4})},
                                           {"fare", f32({3, 1}, {1, 1, 10})},
                                           {"pclass", f32({3, 1}, {1, 0, 2})}};
  double logits[3] = {2.1, -0.9, -3.9};
  auto out = evaluator.run("predict", features);
  std::vector<double> probabilities, classes;
  for (double z : logits) {
    probabilities.push_back(1 / (1 + std::exp(-z)));
    classes.push_back(z > 0 ? 1 : 0);
  }
  EXPECT_TRUE(same(out.at("predictions/probabilities"),
                   f32({3, 1}, probabilities), 1e-9));
  EXPECT_TRUE(same(out.at("predictions/classes"), i64({3, 1}, classes)));

  // Labels 1, 1, 0: the first and last are right.
  out = evaluator.run("eval", features, {{"labels", i64({3, 1}, {1, 1, 0})}});
  double loss = 0;
  double labels[3] = {1, 1, 0};
  for (int i = 0; i < 3; ++i)
    loss += std::max(logits[i], 0.0) - logits[i] * labels[i] +
            std::log1p(std::exp(-std::abs(logits[i])));
  EXPECT_NEAR(out.at("loss").data.at(0), loss / 3, 1e-9);
  EXPECT_NEAR(out.at("metrics/accuracy").data.at(0), 2.0 / 3, 1e-9);
  // A second batch, all right: accuracy accumulates to 3 of 4.
  out = evaluator.run("eval",
                      {{"age", f32({1, 1}, {0})},
                       {"fare", f32({1, 1}, {0})},
                       {"pclass", f32({1, 1}, {0})}},
                      {{"labels", i64({1, 1}, {1})}});
  EXPECT_NEAR(out.at("metrics/accuracy").data.at(0), 3.0 / 4, 1e-9);
  // Training needs gradients.
  EXPECT_THROW(
      evaluator.run("train", features, {{"labels", i64({3, 1}, {1, 1, 0})}}),
      std::runtime_error);
}

/// Feeds for a signature's bindings: batch 3, floats in [0, 1), integers 0.
std::map<std::string, Value>
feedsFor(const g::GraphDef &graph,
         const google::protobuf::RepeatedPtrField<g::Binding> &bindings) {
  std::map<std::string, Value> feeds;
  for (const g::Binding &b : bindings)
    for (const g::NodeDef &node : graph.node()) {
      if (node.name() != b.node())
        continue;
      std::vector<int64_t> shape;
      for (int64_t d : node.attr().at("shape").shape().dim())
        shape.push_back(d < 0 ? 3 : d);
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      g::DataType dtype = node.attr().at("dtype").type();
      std::vector<double> data(n, 0.0);
      if (dtype == g::DT_FLOAT || dtype == g::DT_DOUBLE)
        for (int64_t i = 0; i < n; ++i)
          data[i] = static_cast<double>(i % 7) / 7;
      feeds[b.key()] = Value(dtype, shape, data);
    }
  return feeds;
}

TEST(ReferenceModels, EveryExampleModelPredictsAndEvaluates) {
  for (const auto &entry : estc::models::model_registry()) {
    SCOPED_TRACE(entry.name);
    Evaluator evaluator(entry.build(0));
    initializeVariables(evaluator);
    const g::GraphDef &graph = evaluator.graph();
    const g::SignatureDef &predict = graph.signature().at("predict");
    std::map<std::string, Value> out;
    ASSERT_NO_THROW(
        out = evaluator.run("predict", feedsFor(graph, predict.features())));
    EXPECT_EQ(out.size(), static_cast<size_t>(predict.predictions_size()));
    for (const auto &[key, value] : out) {
      ASSERT_FALSE(value.shape.empty()) << key;
      EXPECT_EQ(value.shape[0], 3) << key;
      for (double v : value.data)
        EXPECT_TRUE(std::isfinite(v)) << key;
    }
    const g::SignatureDef &eval = graph.signature().at("eval");
    ASSERT_NO_THROW(out =
                        evaluator.run("eval", feedsFor(graph, eval.features()),
                                      feedsFor(graph, eval.labels())));
    ASSERT_TRUE(out.count("loss"));
    EXPECT_TRUE(std::isfinite(out.at("loss").data.at(0)));
    EXPECT_EQ(out.size(), 1u + eval.metrics_size());
  }
}

} // namespace
