//===- GraphBuilderTest.cpp - Tests of the graph builder ----------------===//

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace estc;

namespace {
constexpr int64_t U = shape::kUnknownDim;

// Runs `body`, expects a GraphError whose message contains every fragment.
template <typename F>
void expectGraphError(F body, const std::vector<std::string> &fragments) {
  try {
    body();
    ADD_FAILURE() << "expected a GraphError";
  } catch (const GraphError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const std::string &f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos)
          << "missing '" << f << "' in: " << msg;
  }
}

const graph::AttrValue &attr(const Tensor &t, const std::string &name) {
  const auto &attrs = t.graph().node(t.name()).attr();
  auto it = attrs.find(name);
  if (it == attrs.end())
    throw std::runtime_error("no attribute " + name + " on " + t.name());
  return it->second;
}

Dims listAttr(const Tensor &t, const std::string &name) {
  const auto &l = attr(t, name).list().i();
  return Dims(l.begin(), l.end());
}

const graph::VariableDef *findVar(const graph::GraphDef &def,
                                  const std::string &name) {
  for (const auto &v : def.variable())
    if (v.name() == name)
      return &v;
  return nullptr;
}
} // namespace

// --- Basics ------------------------------------------------------------------

TEST(GraphBuilder, PlaceholderAndConstant) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 784});
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(x.op(), "placeholder");
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.shape(), (Dims{U, 784}));
  EXPECT_EQ(x.rank(), 2);
  EXPECT_EQ(attr(x, "dtype").type(), graph::DT_FLOAT);
  EXPECT_EQ(std::vector<int64_t>(attr(x, "shape").shape().dim().begin(),
                                 attr(x, "shape").shape().dim().end()),
            (Dims{U, 784}));
  const graph::NodeDef &n = g.node("x");
  EXPECT_EQ(n.dtype(), graph::DT_FLOAT);
  EXPECT_EQ(n.shape().dim_size(), 2);

  Tensor c = g.constant(2.5);
  EXPECT_EQ(c.name(), "Const");
  EXPECT_EQ(c.shape(), Dims{});
  EXPECT_EQ(attr(c, "value").tensor().float_val(0), 2.5f);
  Tensor c2 = g.constant({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Int64, "table");
  EXPECT_EQ(c2.name(), "table");
  EXPECT_EQ(attr(c2, "value").tensor().int64_val_size(), 6);
  EXPECT_EQ(g.constant(1.0).name(), "Const_1");
  EXPECT_EQ(g.constant(1.0, DType::Bool).dtype(), DType::Bool);
  EXPECT_EQ(attr(g.constant(3, DType::Int32), "value").tensor().int_val(0), 3);
  EXPECT_EQ(
      attr(g.constant(0.5, DType::Float64), "value").tensor().double_val(0),
      0.5);

  expectGraphError([&] { g.constant({1, 2}, {3}); },
                   {"constant 'Const", "2 values", "[3]"});
  expectGraphError([&] { g.constant(0.5, DType::Int64); },
                   {"0.5", "not representable as i64"});
  expectGraphError([&] { g.constant({1}, {U}); }, {"fully known"});
  expectGraphError([&] { g.placeholder("p", DType::Invalid, {1}); },
                   {"placeholder 'p'", "invalid dtype"});
  expectGraphError([&] { g.placeholder("bad name", DType::Float32, {1}); },
                   {"invalid node name 'bad name'"});
}

TEST(GraphBuilder, DTypeNames) {
  EXPECT_EQ(to_string(DType::Float32), "f32");
  EXPECT_EQ(to_string(DType::Int64), "i64");
  EXPECT_EQ(to_string(DType::Bool), "i1");
  EXPECT_EQ(to_proto(DType::BFloat16), graph::DT_BFLOAT16);
  EXPECT_EQ(from_proto(graph::DT_INT32), DType::Int32);
  EXPECT_TRUE(is_floating(DType::Float16));
  EXPECT_FALSE(is_floating(DType::Int32));
  EXPECT_TRUE(is_integer(DType::Int64));
  EXPECT_STREQ(mode_key(ModeKeys::TRAIN), "train");
  EXPECT_STREQ(mode_key(ModeKeys::EVAL), "eval");
  EXPECT_STREQ(mode_key(ModeKeys::PREDICT), "predict");
}

// --- Op families -------------------------------------------------------------

TEST(GraphBuilder, ElementwiseBroadcastAndOperators) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 3});
  Tensor b = g.placeholder("b", DType::Float32, {3});
  Tensor s = add(x, b);
  EXPECT_EQ(s.op(), "add");
  EXPECT_EQ(s.name(), "Add");
  EXPECT_EQ(s.shape(), (Dims{U, 3}));
  EXPECT_EQ(g.node(s.name()).input(0), "x");
  EXPECT_EQ(g.node(s.name()).input(1), "b");
  EXPECT_EQ((x - b).op(), "sub");
  EXPECT_EQ((x * b).op(), "mul");
  EXPECT_EQ((x / b).op(), "div");
  EXPECT_EQ((-x).op(), "neg");
  EXPECT_EQ(pow(x, b).op(), "pow");
  EXPECT_EQ(maximum(x, b).shape(), (Dims{U, 3}));
  EXPECT_EQ(minimum(x, b).op(), "minimum");

  Tensor scaled = x * 2;
  EXPECT_EQ(scaled.dtype(), DType::Float32);
  Tensor two = Tensor(&g, g.node(scaled.name()).input(1));
  EXPECT_EQ(two.op(), "constant");
  EXPECT_EQ(two.dtype(), DType::Float32);
  EXPECT_EQ((1.0 - x).op(), "sub");
  EXPECT_EQ((3.0 / x).shape(), (Dims{U, 3}));

  Tensor i = g.placeholder("i", DType::Int64, {U});
  Tensor i2 = i + 1;
  EXPECT_EQ(i2.dtype(), DType::Int64);
  expectGraphError([&] { (void)(i * 0.5); }, {"0.5", "i64"});

  Tensor c = g.placeholder("c", DType::Float32, {4, 3});
  expectGraphError(
      [&] { add(c, g.placeholder("d", DType::Float32, {5, 3})); },
      {"add 'Add_", "inputs 'c' [4,3] and 'd' [5,3]", "cannot be broadcast"});
  expectGraphError([&] { add(x, i); }, {"add 'Add_", "'x' [?,3] and 'i' [?]",
                                        "different element types f32 and i64",
                                        "no implicit promotion"});

  for (auto f : {&exp, &log, &sqrt, &rsqrt, &tanh, &sigmoid, &nn::relu,
                 &nn::relu6, &nn::elu, &nn::softplus}) {
    Tensor y = f(x, "");
    EXPECT_EQ(y.shape(), (Dims{U, 3}));
    EXPECT_EQ(y.dtype(), DType::Float32);
  }
  EXPECT_EQ(nn::relu(x).op(), "relu");
  EXPECT_EQ(abs(i).dtype(), DType::Int64);
  EXPECT_EQ(square(i).op(), "square");
  EXPECT_EQ(negative(i).op(), "neg");
  expectGraphError([&] { exp(i); }, {"exp 'Exp", "input 'i' [?]",
                                     "must be a float tensor", "i64"});
  Tensor flag = g.placeholder("flag", DType::Bool, {U, 3});
  expectGraphError([&] { abs(flag); }, {"abs", "float or integer", "i1"});
}

TEST(GraphBuilder, CompareLogicSelectCast) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 3});
  Tensor y = g.placeholder("y", DType::Float32, {1, 3});
  for (auto f :
       {&equal, &not_equal, &less, &less_equal, &greater, &greater_equal}) {
    Tensor c = f(x, y, "");
    EXPECT_EQ(c.dtype(), DType::Bool);
    EXPECT_EQ(c.shape(), (Dims{U, 3}));
  }
  EXPECT_EQ(greater_equal(x, y).op(), "greater_equal");
  Tensor c = less(x, y);
  Tensor d = logical_and(c, logical_not(c));
  EXPECT_EQ(d.op(), "logical_and");
  EXPECT_EQ(logical_or(c, d).dtype(), DType::Bool);
  expectGraphError([&] { logical_and(c, x); },
                   {"logical_and", "'x' must be an i1"});
  expectGraphError([&] { logical_not(x); }, {"logical_not", "i1"});

  Tensor s = where(c, x, y);
  EXPECT_EQ(s.op(), "select");
  EXPECT_EQ(s.shape(), (Dims{U, 3}));
  EXPECT_EQ(s.dtype(), DType::Float32);
  expectGraphError([&] { where(x, x, y); }, {"select 'Select", "i1"});
  Tensor i = g.placeholder("i", DType::Int32, {3});
  expectGraphError(
      [&] { where(c, x, i); },
      {"select", "'i' [3]", "different element types f32 and i32"});
  expectGraphError([&] { equal(x, i); }, {"equal", "different element types"});

  Tensor k = cast(x, DType::Int32);
  EXPECT_EQ(k.dtype(), DType::Int32);
  EXPECT_EQ(k.shape(), (Dims{U, 3}));
  EXPECT_EQ(attr(k, "dtype").type(), graph::DT_INT32);
}

// A number operand (TF's Python scalar): a scalar constant of the other
// operand's dtype, on either side, for every binary op.
TEST(GraphBuilder, ScalarOperands) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 3});
  Tensor i = g.placeholder("i", DType::Int32, {U});
  Tensor flag = g.placeholder("flag", DType::Bool, {U});

  // The constant operand: its node, dtype, shape and value.
  auto constantOf = [&](const Tensor &t, int input) {
    return Tensor(&g, g.node(t.name()).input(input));
  };
  auto expectScalar = [&](const Tensor &c, DType dtype, double value) {
    EXPECT_EQ(c.op(), "constant");
    EXPECT_EQ(c.dtype(), dtype);
    EXPECT_EQ(c.shape(), Dims{});
    const graph::TensorProto &t = attr(c, "value").tensor();
    switch (dtype) {
    case DType::Float32:
      EXPECT_EQ(t.float_val(0), static_cast<float>(value));
      break;
    case DType::Int32:
      EXPECT_EQ(t.int_val(0), static_cast<int32_t>(value));
      break;
    case DType::Bool:
      EXPECT_EQ(t.bool_val(0), value != 0);
      break;
    default:
      FAIL() << "unexpected dtype";
    }
  };

  using BinaryFn =
      Tensor (*)(const Operand &, const Operand &, const std::string &);
  struct Case {
    BinaryFn fn;
    const char *op;
    DType result;
  };
  for (const Case &c :
       std::vector<Case>{{&add, "add", DType::Float32},
                         {&subtract, "sub", DType::Float32},
                         {&multiply, "mul", DType::Float32},
                         {&divide, "div", DType::Float32},
                         {&pow, "pow", DType::Float32},
                         {&maximum, "maximum", DType::Float32},
                         {&minimum, "minimum", DType::Float32},
                         {&equal, "equal", DType::Bool},
                         {&not_equal, "not_equal", DType::Bool},
                         {&less, "less", DType::Bool},
                         {&less_equal, "less_equal", DType::Bool},
                         {&greater, "greater", DType::Bool},
                         {&greater_equal, "greater_equal", DType::Bool}}) {
    Tensor right = c.fn(x, 0.5, "");
    EXPECT_EQ(right.op(), c.op);
    EXPECT_EQ(right.dtype(), c.result) << c.op;
    EXPECT_EQ(right.shape(), (Dims{U, 3})) << c.op;
    EXPECT_EQ(g.node(right.name()).input(0), "x");
    expectScalar(constantOf(right, 1), DType::Float32, 0.5);
    Tensor left = c.fn(2.0, x, "");
    EXPECT_EQ(left.op(), c.op);
    EXPECT_EQ(g.node(left.name()).input(1), "x");
    expectScalar(constantOf(left, 0), DType::Float32, 2.0);
    // Integer tensors take integral numbers.
    Tensor onInt = c.fn(i, 3, "");
    expectScalar(constantOf(onInt, 1), DType::Int32, 3);
    EXPECT_EQ(onInt.dtype(),
              c.result == DType::Bool ? DType::Bool : DType::Int32);
  }

  // The spellings of a model_fn: names, Variables, operators.
  Tensor prob = nn::sigmoid(x);
  Tensor positive = greater(prob, 0.5, "positive");
  EXPECT_EQ(positive.name(), "positive");
  EXPECT_EQ(positive.dtype(), DType::Bool);
  Variable v = g.get_variable("v", DType::Float32, {3});
  EXPECT_EQ(maximum(v, 0.0).shape(), Dims{3});
  EXPECT_EQ(g.node(maximum(v, 0.0).name()).input(0), "v/read");
  EXPECT_EQ((x * 2.0).op(), "mul");
  expectScalar(constantOf(2.0 - x, 0), DType::Float32, 2.0);
  expectScalar(constantOf(i / 2, 1), DType::Int32, 2);

  // Logical ops take true / false; where's number branch takes the other's
  // dtype.
  Tensor both = logical_and(flag, true);
  expectScalar(constantOf(both, 1), DType::Bool, 1);
  expectScalar(constantOf(logical_or(false, flag), 0), DType::Bool, 0);
  Tensor clipped = where(positive, x, 0.0);
  EXPECT_EQ(clipped.op(), "select");
  EXPECT_EQ(clipped.dtype(), DType::Float32);
  EXPECT_EQ(clipped.shape(), (Dims{U, 3}));
  expectScalar(constantOf(clipped, 2), DType::Float32, 0);
  expectScalar(constantOf(where(flag, -1, i), 1), DType::Int32, -1);

  // What the dtype cannot hold is one line naming the op (TF: "Cannot
  // convert 0.5 to EagerTensor of dtype int32").
  expectGraphError([&] { greater(i, 0.5); },
                   {"greater 'Greater", "input 'i' [?]",
                    "the number 0.5 is not representable as i32",
                    "the dtype of 'i'", "cast the tensor"});
  expectGraphError([&] { (void)(1.5 * i); },
                   {"mul 'Mul", "the number 1.5", "as i32"});
  expectGraphError([&] { add(i, 3e9); },
                   {"add 'Add", "the number 3e+09", "as i32"});
  expectGraphError([&] { equal(flag, 2); },
                   {"equal 'Equal", "the number 2", "as i1"});
  expectGraphError([&] { where(positive, i, 0.25); },
                   {"select 'Select", "the number 0.25", "as i32"});
  expectGraphError([&] { add(2.0, 3.0); },
                   {"add: needs a tensor operand, got the numbers 2 and 3"});
  expectGraphError([&] { add(Tensor(), 1.0); }, {"add: input 0 is an empty"});
  // A failed conversion adds no node.
  size_t nodes = g.graph_def().node_size();
  expectGraphError([&] { less(i, 0.5); }, {"less"});
  EXPECT_EQ(g.graph_def().node_size(), nodes);
}

TEST(GraphBuilder, MatmulConvPool) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 784});
  Tensor w = g.placeholder("w", DType::Float32, {784, 10});
  Tensor y = matmul(x, w);
  EXPECT_EQ(y.shape(), (Dims{U, 10}));
  EXPECT_FALSE(attr(y, "transpose_a").b());
  EXPECT_FALSE(attr(y, "transpose_b").b());
  EXPECT_EQ(matmul(w, w, true, false).shape(), (Dims{10, 10}));
  EXPECT_TRUE(attr(matmul(w, w, false, true), "transpose_b").b());

  Tensor img = g.placeholder("img", DType::Float32, {U, 28, 28, 1});
  Tensor f = g.placeholder("f", DType::Float32, {5, 5, 1, 20});
  Tensor c = nn::conv2d(img, f, {1, 1}, "VALID");
  EXPECT_EQ(c.op(), "conv2d");
  EXPECT_EQ(c.shape(), (Dims{U, 24, 24, 20}));
  EXPECT_EQ(listAttr(c, "strides"), (Dims{1, 1}));
  EXPECT_EQ(listAttr(c, "dilations"), (Dims{1, 1}));
  EXPECT_EQ(attr(c, "padding").s(), "VALID");
  EXPECT_EQ(nn::conv2d(img, f, {2, 2}, "SAME").shape(), (Dims{U, 14, 14, 20}));
  Tensor p = nn::max_pool(c, {2, 2}, {2, 2}, "VALID");
  EXPECT_EQ(p.shape(), (Dims{U, 12, 12, 20}));
  EXPECT_EQ(listAttr(p, "ksize"), (Dims{2, 2}));
  Tensor a = nn::avg_pool(c, {3, 3}, {1, 1}, "SAME");
  EXPECT_EQ(a.op(), "avg_pool");
  EXPECT_EQ(a.shape(), (Dims{U, 24, 24, 20}));

  expectGraphError([&] { nn::conv2d(img, f, {1, 1}, "same"); },
                   {"conv2d 'Conv2D", "padding must be \"SAME\" or \"VALID\""});
  Tensor f3 = g.placeholder("f3", DType::Float32, {5, 5, 3, 20});
  expectGraphError([&] { nn::conv2d(img, f3, {1, 1}, "VALID"); },
                   {"conv2d 'Conv2D", "'img' [?,28,28,1] and 'f3' [5,5,3,20]",
                    "input channels"});
  expectGraphError([&] { nn::max_pool(x, {2, 2}, {2, 2}, "VALID"); },
                   {"max_pool 'MaxPool_1'", "input 'x' [?,784]", "NHWC"});

  // The gradient ops recover the forward operand's shape.
  Tensor dx = nn::conv2d_backprop_input(c, f, {28, 28}, {1, 1}, "VALID");
  EXPECT_EQ(dx.op(), "conv2d_backprop_input");
  EXPECT_EQ(dx.shape(), (Dims{U, 28, 28, 1}));
  EXPECT_EQ(listAttr(dx, "input_size"), (Dims{28, 28}));
  Tensor dw = nn::conv2d_backprop_filter(img, c, {5, 5}, {1, 1}, "VALID");
  EXPECT_EQ(dw.shape(), (Dims{5, 5, 1, 20}));
  EXPECT_EQ(listAttr(dw, "filter_size"), (Dims{5, 5}));
  EXPECT_EQ(nn::max_pool_grad(c, p, {2, 2}, {2, 2}, "VALID").shape(),
            (Dims{U, 24, 24, 20}));
  EXPECT_EQ(nn::avg_pool_grad(a, {24, 24}, {3, 3}, {1, 1}, "SAME").shape(),
            (Dims{U, 24, 24, 20}));
  expectGraphError(
      [&] { nn::conv2d_backprop_input(c, f, {27, 28}, {1, 1}, "VALID"); },
      {"conv2d_backprop_input 'Conv2DBackpropInput_1'",
       "grad_output [?,24,24,20] does not match the forward result "
       "[?,23,24,20]"});
  expectGraphError([&] { nn::max_pool_grad(c, c, {2, 2}, {2, 2}, "VALID"); },
                   {"max_pool_grad 'MaxPoolGrad_1'", "does not match"});
}

TEST(GraphBuilder, DepthwiseConv2dNative) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 9, 8, 3});
  Tensor f = g.placeholder("f", DType::Float32, {3, 3, 3, 2});
  Tensor y = nn::depthwise_conv2d_native(x, f, {2, 2}, "SAME");
  EXPECT_EQ(y.op(), "depthwise_conv2d");
  EXPECT_EQ(y.shape(), (Dims{U, 5, 4, 6}));
  EXPECT_EQ(listAttr(y, "strides"), (Dims{2, 2}));
  EXPECT_EQ(attr(y, "padding").s(), "SAME");
  // nn::depthwise_conv2d is one such node (NHWC), under its own scope.
  Tensor d = nn::depthwise_conv2d(x, f, {1, 1}, "VALID");
  EXPECT_EQ(d.op(), "depthwise_conv2d");
  EXPECT_EQ(d.shape(), (Dims{U, 7, 6, 6}));
  Tensor dx = nn::depthwise_conv2d_backprop_input(y, f, {9, 8}, {2, 2}, "SAME");
  EXPECT_EQ(dx.op(), "depthwise_conv2d_backprop_input");
  EXPECT_EQ(dx.shape(), (Dims{U, 9, 8, 3}));
  EXPECT_EQ(listAttr(dx, "input_size"), (Dims{9, 8}));
  Tensor dw =
      nn::depthwise_conv2d_backprop_filter(x, y, {3, 3}, {2, 2}, "SAME");
  EXPECT_EQ(dw.shape(), (Dims{3, 3, 3, 2}));
  EXPECT_EQ(listAttr(dw, "filter_size"), (Dims{3, 3}));

  Tensor f4 = g.placeholder("f4", DType::Float32, {3, 3, 4, 1});
  expectGraphError([&] { nn::depthwise_conv2d_native(x, f4, {1, 1}, "SAME"); },
                   {"depthwise_conv2d 'DepthwiseConv2dNative_1'",
                    "'x' [?,9,8,3] and 'f4' [3,3,4,1]",
                    "input channels 3 do not match filter input channels 4"});
  expectGraphError([&] { nn::depthwise_conv2d_native(x, f, {1, 1}, "FULL"); },
                   {"depthwise_conv2d 'DepthwiseConv2dNative_1'",
                    "padding must be \"SAME\" or \"VALID\""});
  Tensor xi = g.placeholder("xi", DType::Int32, {U, 9, 8, 3});
  expectGraphError([&] { nn::depthwise_conv2d_native(xi, f, {1, 1}, "SAME"); },
                   {"depthwise_conv2d 'DepthwiseConv2dNative_1'",
                    "'xi' must be a float tensor, got i32"});
  expectGraphError(
      [&] {
        nn::depthwise_conv2d_backprop_input(y, f, {7, 8}, {2, 2}, "SAME");
      },
      {"depthwise_conv2d_backprop_input "
       "'DepthwiseConv2dNativeBackpropInput_1'",
       "grad_output [?,5,4,6] does not match the forward result "
       "[?,4,4,6]"});
  Tensor x4 = g.placeholder("x4", DType::Float32, {U, 9, 8, 4});
  expectGraphError(
      [&] {
        nn::depthwise_conv2d_backprop_filter(x4, y, {3, 3}, {2, 2}, "SAME");
      },
      {"depthwise_conv2d_backprop_filter "
       "'DepthwiseConv2dNativeBackpropFilter_1'",
       "grad_output channels 6 must be a known multiple of the input's 4"});
}

TEST(GraphBuilder, MatmulErrorNamesEverything) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 784});
  expectGraphError(
      [&] {
        auto s = g.name_scope("dense");
        Variable k = g.get_variable("kernel", DType::Float32, {100, 256});
        matmul(x, k);
      },
      {"matmul 'dense/MatMul': inputs 'x' [?,784] and 'dense/kernel/read' "
       "[100,256]: matmul inner dimensions differ"});
}

TEST(GraphBuilder, ReductionsAndArgmax) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 10});
  Tensor all = reduce_sum(x);
  EXPECT_EQ(all.shape(), Dims{});
  EXPECT_EQ(attr(all, "keep_dims").b(), false);
  EXPECT_EQ(g.node(all.name()).attr().count("axes"), 0u);
  Tensor m = reduce_mean(x, Dims{1}, true);
  EXPECT_EQ(m.shape(), (Dims{U, 1}));
  EXPECT_EQ(listAttr(m, "axes"), Dims{1});
  EXPECT_EQ(reduce_max(x, Dims{0}).shape(), Dims{10});
  EXPECT_EQ(reduce_min(x, Dims{-1}).op(), "reduce_min");
  EXPECT_EQ(reduce_prod(x).op(), "reduce_prod");
  Tensor am = argmax(x, 1);
  EXPECT_EQ(am.dtype(), DType::Int64);
  EXPECT_EQ(am.shape(), Dims{U});
  EXPECT_EQ(attr(am, "axis").i(), 1);
  EXPECT_EQ(attr(am, "output_type").type(), graph::DT_INT64);
  EXPECT_EQ(argmin(x, 0, DType::Int32).dtype(), DType::Int32);
  expectGraphError([&] { reduce_sum(x, Dims{2}); },
                   {"reduce_sum 'Sum", "input 'x' [?,10]", "out of range"});
  expectGraphError([&] { argmax(x, 5); }, {"argmax 'ArgMax", "out of range"});
  expectGraphError([&] { argmax(x, 1, DType::Float32); }, {"output_type"});
}

// The elementwise ops of issue 28 and cumsum / cumprod: ops, attributes,
// TF's default names, and every argument error as one line.
TEST(GraphBuilder, MathActivationsAndCumulative) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 4});
  Tensor i = g.placeholder("i", DType::Int32, {U, 4});
  Tensor flag = g.placeholder("flag", DType::Bool, {U});
  EXPECT_EQ(estc::erf(x).name(), "Erf");
  EXPECT_EQ(ceil(x).op(), "ceil");
  EXPECT_EQ(log1p(x).op(), "log1p");
  EXPECT_EQ(expm1(x).op(), "expm1");
  EXPECT_EQ(sign(i).dtype(), DType::Int32);
  EXPECT_EQ(estc::round(i).op(), "round");
  expectGraphError([&] { estc::erf(i); },
                   {"erf 'Erf", "input 'i' [?,4]", "must be a float tensor"});
  expectGraphError([&] { ceil(i); }, {"ceil 'Ceil", "float"});
  expectGraphError([&] { sign(flag); },
                   {"sign 'Sign", "float or integer", "i1"});

  Tensor c = cumsum(x, 1, true, false);
  EXPECT_EQ(c.op(), "cumsum");
  EXPECT_EQ(c.name(), "Cumsum");
  EXPECT_EQ(c.shape(), (Dims{U, 4}));
  EXPECT_EQ(attr(c, "axis").i(), 1);
  EXPECT_TRUE(attr(c, "exclusive").b());
  EXPECT_FALSE(attr(c, "reverse").b());
  EXPECT_EQ(cumprod(i, -1, false, true).dtype(), DType::Int32);
  expectGraphError([&] { cumsum(x, 2); },
                   {"cumsum 'Cumsum", "input 'x' [?,4]",
                    "axis 2 is out of range for rank 2"});
  expectGraphError([&] { cumprod(flag); }, {"cumprod 'Cumprod", "i1"});

  // Composites: a name scope with TF's name, ops inside it.
  Tensor l = nn::leaky_relu(x);
  EXPECT_EQ(l.name().rfind("LeakyRelu/", 0), 0u) << l.name();
  EXPECT_EQ(nn::gelu(x).shape(), (Dims{U, 4}));
  EXPECT_EQ(nn::l2_normalize(x, Dims{1}).shape(), (Dims{U, 4}));
  nn::Moments m = nn::moments(x, {0});
  EXPECT_EQ(m.mean.shape(), Dims{4});
  EXPECT_EQ(m.variance.shape(), Dims{4});
  EXPECT_EQ(nn::moments(x, {1}, true).variance.shape(), (Dims{U, 1}));
  EXPECT_EQ(nn::leaky_relu(i).dtype(), DType::Float32); // TF casts ints
  expectGraphError([&] { nn::leaky_relu(flag); },
                   {"leaky_relu: features 'flag'",
                    "must be a float or integer tensor", "i1"});
  expectGraphError([&] { nn::selu(i); }, {"selu: features 'i'"});
  expectGraphError([&] { nn::gelu(i, true); }, {"gelu: features 'i'"});
  expectGraphError([&] { nn::silu(i); }, {"silu: features 'i'"});
  expectGraphError([&] { nn::softsign(i); }, {"softsign: features 'i'"});
  expectGraphError([&] { activations::hard_sigmoid(i); },
                   {"hard_sigmoid: x 'i'"});
  expectGraphError([&] { nn::l2_normalize(i); }, {"l2_normalize: x 'i'"});
  expectGraphError([&] { nn::l2_normalize(x, Dims{1}, -1.0); },
                   {"l2_normalize: epsilon must be >= 0, got -1"});
  expectGraphError([&] { nn::l2_normalize(x, Dims{3}); },
                   {"reduce_sum", "out of range"});
  EXPECT_EQ(nn::moments(x, {}).variance.shape(), (Dims{U, 4}));
  EXPECT_EQ(nn::zero_fraction(x).shape(), Dims{});
  EXPECT_EQ(nn::zero_fraction(i).dtype(), DType::Float32);
  expectGraphError([&] { nn::zero_fraction(flag); },
                   {"zero_fraction: value 'flag'",
                    "must be a float or integer tensor", "i1"});
  expectGraphError([&] { nn::moments(x, {2}); },
                   {"reduce_mean", "out of range"});
  expectGraphError([&] { clip_by_value(x, 1.0, -1.0); },
                   {"clip_by_value: clip_value_min 1 is greater than "
                    "clip_value_max -1"});
  expectGraphError([&] { clip_by_value(flag, 0.0, 1.0); },
                   {"clip_by_value: t 'flag'", "float or integer"});
  Tensor big = g.placeholder("big", DType::Float32, {U, 3, 4});
  expectGraphError(
      [&] { clip_by_value(x, big, 1.0); },
      {"clip_by_value", "'x' [?,4] to [?,3,4]", "must broadcast to t's shape"});
  Tensor y = g.placeholder("y", DType::Float32, {U, 5});
  Tensor d = g.placeholder("d", DType::Float64, {U, 4});
  expectGraphError([&] { nn::log_poisson_loss(x, y); },
                   {"log_poisson_loss: targets 'x' [?,4] and log_input 'y' "
                    "[?,5] must have the same shape"});
  expectGraphError([&] { nn::log_poisson_loss(x, d); },
                   {"log_poisson_loss: targets 'x' is f32 but log_input 'd' "
                    "is f64"});
  expectGraphError(
      [&] { nn::weighted_cross_entropy_with_logits(x, y, 2.0); },
      {"weighted_cross_entropy_with_logits: labels 'x' [?,4] and logits "
       "'y' [?,5]"});
  expectGraphError([&] { nn::weighted_cross_entropy_with_logits(i, x, 2.0); },
                   {"weighted_cross_entropy_with_logits: labels 'i'", "float"});
}

TEST(GraphBuilder, CandidateSamplerAndSampledSoftmaxErrors) {
  Graph g;
  Tensor labels = g.placeholder("labels", DType::Int64, {U, 2});
  Tensor flat = g.placeholder("flat", DType::Int64, {U});
  Tensor x = g.placeholder("x", DType::Float32, {U, 4});
  Tensor w = g.placeholder("w", DType::Float32, {10, 4});
  Tensor b = g.placeholder("b", DType::Float32, {10});
  SampledValues s = log_uniform_candidate_sampler(labels, 2, 5, true, 10, 3);
  EXPECT_EQ(s.sampled_candidates.shape(), Dims{5});
  EXPECT_EQ(s.sampled_candidates.dtype(), DType::Int64);
  EXPECT_EQ(s.true_expected_count.shape(), (Dims{U, 2}));
  EXPECT_EQ(s.sampled_expected_count.dtype(), DType::Float32);
  Tensor loss = nn::sampled_softmax_loss(w, b, labels, x, 5, 10, 2);
  EXPECT_EQ(loss.shape(), Dims{U});
  expectGraphError([&] { log_uniform_candidate_sampler(flat, 1, 5, true, 10); },
                   {"log_uniform_candidate_sampler: true_classes 'flat'",
                    "rank-2 i32 or i64", "i64 [?]"});
  expectGraphError(
      [&] { log_uniform_candidate_sampler(labels, 1, 5, true, 10); },
      {"true_classes 'labels' [?,2] has 2 classes per row, num_true is 1"});
  expectGraphError(
      [&] { log_uniform_candidate_sampler(labels, 2, 11, true, 10); },
      {"cannot sample 11 unique candidates from range_max 10"});
  expectGraphError(
      [&] { log_uniform_candidate_sampler(labels, 2, 0, false, 10); },
      {"num_true, num_sampled and range_max must be >= 1, got 2, 0 and 10"});
  expectGraphError([&] { nn::sampled_softmax_loss(w, b, labels, x, 5, 10); },
                   {"sampled_softmax_loss: labels 'labels' [?,2] has 2 "
                    "classes per row, num_true is 1"});
  expectGraphError(
      [&] { nn::sampled_softmax_loss(w, b, flat, x, 5, 10); },
      {"sampled_softmax_loss: labels must be a rank-2 i32 or i64 tensor"});
  expectGraphError(
      [&] { nn::sampled_softmax_loss(w, x, labels, x, 5, 10, 2); },
      {"sampled_softmax_loss: weights 'w' [10,4], biases 'x' [?,4] and "
       "inputs 'x' [?,4] must be [num_classes, dim], [num_classes] and "
       "[batch, dim]"});
  Tensor x3 = g.placeholder("x3", DType::Float32, {U, 3});
  expectGraphError(
      [&] { nn::sampled_softmax_loss(w, b, labels, x3, 5, 10, 2); },
      {"weights 'w' [10,4] and inputs 'x3' [?,3] differ in dim"});
  expectGraphError(
      [&] { nn::sampled_softmax_loss(w, b, labels, labels, 5, 10, 2); },
      {"sampled_softmax_loss: inputs 'labels'", "must be a float tensor"});
  expectGraphError(
      [&] { nn::sampled_softmax_loss(w, b, labels, x, 11, 10, 2); },
      {"cannot sample 11 unique candidates from range_max 10"});
  expectGraphError(
      [&] {
        nn::sampled_softmax_loss(
            w, b, labels, x, 5, 10, 2,
            SampledValues{x, s.true_expected_count, s.sampled_expected_count});
      },
      {"sampled_values.sampled_candidates must be a rank-1 i32 or i64 "
       "tensor"});
}

TEST(GraphBuilder, ShapeOps) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 4, 4, 40});
  Tensor r = reshape(x, {-1, 640});
  EXPECT_EQ(r.shape(), (Dims{U, 640}));
  EXPECT_EQ(listAttr(r, "shape"), (Dims{-1, 640}));
  expectGraphError(
      [&] { reshape(g.constant({1, 2, 3, 4, 5, 6}, {6}), {4, -1}); },
      {"reshape 'Reshape", "cannot reshape"});
  EXPECT_EQ(transpose(x, {0, 3, 1, 2}).shape(), (Dims{U, 40, 4, 4}));
  expectGraphError([&] { transpose(x, {0, 1}); }, {"transpose", "rank"});

  Tensor a = g.placeholder("a", DType::Float32, {U, 1});
  Tensor b = g.placeholder("b", DType::Float32, {U, 2});
  Tensor c = concat({a, b, a}, 1);
  EXPECT_EQ(c.shape(), (Dims{U, 4}));
  EXPECT_EQ(g.node(c.name()).input_size(), 3);
  EXPECT_EQ(attr(c, "axis").i(), 1);
  expectGraphError([&] { concat({a, b}, 0); },
                   {"concat 'Concat", "inputs 'a' [?,1] and 'b' [?,2]",
                    "differ outside axis"});
  expectGraphError(
      [&] { concat({a, g.placeholder("i", DType::Int32, {U, 1})}, 1); },
      {"concat", "different element types"});
  expectGraphError([&] { concat({}, 0); }, {"concat", "at least one"});

  Tensor s = slice(b, {0, 1}, {-1, 1});
  EXPECT_EQ(s.shape(), (Dims{U, 1}));
  EXPECT_EQ(listAttr(s, "begin"), (Dims{0, 1}));
  expectGraphError([&] { slice(b, {0, 2}, {-1, 1}); },
                   {"slice", "out of bounds"});
  Tensor p = pad(x, {0, 0, 1, 1, 1, 1, 0, 0}, 0.5);
  EXPECT_EQ(p.shape(), (Dims{U, 6, 6, 40}));
  EXPECT_EQ(attr(p, "constant_value").f(), 0.5);
  Tensor bt = broadcast_to(g.placeholder("v", DType::Float32, {3}), {2, 3});
  EXPECT_EQ(bt.shape(), (Dims{2, 3}));
  expectGraphError([&] { broadcast_to(b, {3, 3}); },
                   {"broadcast_to", "cannot broadcast"});
  EXPECT_EQ(squeeze(a).shape(), Dims{U});
  EXPECT_EQ(squeeze(a, Dims{1}).shape(), Dims{U});
  expectGraphError([&] { squeeze(b, Dims{1}); }, {"squeeze", "size is not 1"});
  Tensor e = expand_dims(a, 0);
  EXPECT_EQ(e.shape(), (Dims{1, U, 1}));
  EXPECT_EQ(attr(e, "axis").i(), 0);
}

TEST(GraphBuilder, IndexingAndNN) {
  Graph g;
  Tensor table = g.placeholder("table", DType::Float32, {1000, 64});
  Tensor ids = g.placeholder("ids", DType::Int64, {U, 5});
  Tensor e = gather(table, ids);
  EXPECT_EQ(e.shape(), (Dims{U, 5, 64}));
  EXPECT_EQ(attr(e, "axis").i(), 0);
  expectGraphError([&] { gather(table, table); }, {"gather", "i32 or i64"});

  Tensor labels = g.placeholder("labels", DType::Int64, {U});
  Tensor oh = one_hot(labels, 10);
  EXPECT_EQ(oh.shape(), (Dims{U, 10}));
  EXPECT_EQ(oh.dtype(), DType::Float32);
  EXPECT_EQ(attr(oh, "depth").i(), 10);
  EXPECT_EQ(attr(oh, "on_value").f(), 1.0);
  EXPECT_EQ(attr(oh, "dtype").type(), graph::DT_FLOAT);
  expectGraphError([&] { one_hot(labels, 0); }, {"one_hot", "depth"});

  Tensor logits = g.placeholder("logits", DType::Float32, {U, 10});
  Tensor sm = nn::softmax(logits);
  EXPECT_EQ(sm.shape(), (Dims{U, 10}));
  EXPECT_EQ(attr(sm, "axis").i(), -1);
  EXPECT_EQ(nn::log_softmax(logits).op(), "log_softmax");
  expectGraphError([&] { nn::softmax(logits, 2); },
                   {"softmax", "out of range"});

  Tensor sce = nn::sparse_softmax_cross_entropy_with_logits(labels, logits);
  EXPECT_EQ(sce.op(), "sparse_softmax_cross_entropy");
  EXPECT_EQ(sce.shape(), Dims{U});
  EXPECT_EQ(g.node(sce.name()).input(0), "logits"); // operands: logits, labels
  EXPECT_EQ(g.node(sce.name()).input(1), "labels");
  expectGraphError(
      [&] { nn::sparse_softmax_cross_entropy_with_logits(logits, logits); },
      {"sparse_softmax_cross_entropy", "i32 or i64"});
  Tensor ce = nn::softmax_cross_entropy_with_logits(oh, logits);
  EXPECT_EQ(ce.shape(), Dims{U});
  Tensor y = g.placeholder("y", DType::Float32, {U, 1});
  Tensor z = g.placeholder("z", DType::Float32, {U, 1});
  Tensor sig = nn::sigmoid_cross_entropy_with_logits(y, z);
  EXPECT_EQ(sig.shape(), (Dims{U, 1}));
  expectGraphError([&] { nn::sigmoid_cross_entropy_with_logits(labels, z); },
                   {"sigmoid_cross_entropy", "different element types"});
  EXPECT_EQ(stop_gradient(z).op(), "stop_gradient");
  expectGraphError([&] { nn::bias_add(logits, logits); },
                   {"bias_add", "rank 1"});
}

TEST(GraphBuilder, SortingAndImages) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 8});
  TopK t = top_k(x, 3);
  EXPECT_EQ(t.values.shape(), (Dims{U, 3}));
  EXPECT_EQ(t.values.dtype(), DType::Float32);
  EXPECT_EQ(t.indices.shape(), (Dims{U, 3}));
  EXPECT_EQ(t.indices.dtype(), DType::Int32);
  EXPECT_EQ(t.indices.op(), "argsort");
  EXPECT_EQ(attr(t.indices, "k").i(), 3);
  EXPECT_EQ(attr(t.indices, "direction").s(), "DESCENDING");
  EXPECT_EQ(t.values.op(), "take_along_axis");
  Tensor s = sort(x, 0, "DESCENDING");
  EXPECT_EQ(s.shape(), (Dims{U, 8}));
  Tensor a = argsort(x);
  EXPECT_EQ(a.dtype(), DType::Int32);
  EXPECT_EQ(attr(a, "k").i(), -1);
  // k past the axis: one line with the node, k and the axis size.
  expectGraphError([&] { top_k(x, 9, true, "best"); },
                   {"argsort 'best/indices'", "'x' [?,8]",
                    "k = 9 is larger than the size 8 of axis 1"});
  Tensor r = g.placeholder("r", DType::Float32, {4, U});
  expectGraphError([&] { top_k(r, 2); }, {"k = 2 needs a static size of axis 1",
                                          "only known at run time"});
  expectGraphError([&] { top_k(x, -2); }, {"k must be >= 0"});
  expectGraphError([&] { sort(x, -1, "UP"); },
                   {"argsort", "direction", "\"UP\""});
  expectGraphError([&] { argsort(x, 2); }, {"axis 2 is out of range"});
  Tensor bools = g.placeholder("b", DType::Bool, {4});
  expectGraphError([&] { argsort(bools); }, {"argsort", "float or integer"});
  Tensor idx = g.placeholder("idx", DType::Int32, {3});
  expectGraphError([&] { take_along_axis(x, idx); },
                   {"take_along_axis", "[3] must have the shape of [?,8]"});
  Tensor wide = g.placeholder("wide", DType::Float32, {4, 8});
  Tensor idx2 = g.placeholder("idx2", DType::Int32, {3, 2});
  expectGraphError([&] { take_along_axis(wide, idx2); },
                   {"[3,2] must have the shape of [4,8] except along axis 1"});

  Tensor targets = g.placeholder("targets", DType::Int64, {U});
  Tensor in = nn::in_top_k(targets, x, 2);
  EXPECT_EQ(in.dtype(), DType::Bool);
  EXPECT_EQ(in.shape(), Dims{U});
  expectGraphError([&] { nn::in_top_k(x, x, 2); }, {"in_top_k", "i32 or i64"});
  expectGraphError([&] { nn::in_top_k(targets, targets, 2); },
                   {"in_top_k", "float"});
  expectGraphError([&] { nn::in_top_k(targets, r, 1); },
                   {"in_top_k", "static number of classes"});
  Tensor three = g.placeholder("three", DType::Int32, {3});
  Tensor four = g.placeholder("four", DType::Float32, {4, 5});
  expectGraphError([&] { nn::in_top_k(three, four, 1); },
                   {"in_top_k", "3 entries for a batch of 4"});

  Tensor img = g.placeholder("img", DType::Float32, {U, 6, 4, 3});
  Tensor up = image::resize(img, {12, 5});
  EXPECT_EQ(up.shape(), (Dims{U, 12, 5, 3}));
  EXPECT_EQ(up.op(), "resize_images");
  EXPECT_EQ(attr(up, "half_pixel_centers").b(), true);
  EXPECT_EQ(image::resize(img, {3, 3}, "bilinear", true).shape(),
            (Dims{U, 3, 2, 3}));
  Tensor ints = g.placeholder("ints", DType::Int32, {6, 4, 1});
  EXPECT_EQ(image::resize(ints, {2, 2}, "nearest").dtype(), DType::Int32);
  EXPECT_EQ(image::resize(ints, {2, 2}).dtype(), DType::Float32);
  EXPECT_EQ(image::resize(ints, {2, 2}).shape(), (Dims{2, 2, 1}));
  Tensor legacy = image::resize_bilinear(img, {3, 3}, true);
  EXPECT_EQ(attr(legacy, "align_corners").b(), true);
  EXPECT_EQ(attr(legacy, "half_pixel_centers").b(), false);
  EXPECT_EQ(image::resize_grad(up, {6, 4}).shape(), (Dims{U, 6, 4, 3}));
  expectGraphError([&] { image::resize(img, {0, 3}); },
                   {"resize", "size must be [new_height, new_width]"});
  expectGraphError([&] { image::resize(img, {3, 3}, "bicubic"); },
                   {"resize", "\"bicubic\""});
  expectGraphError([&] { image::resize(x, {3, 3}); },
                   {"resize", "[batch, height, width, channels]"});
  // antialias: products with the triangle kernel's weight matrices.
  Tensor smooth = image::resize(img, {3, 3}, "bilinear", false, true);
  EXPECT_EQ(smooth.shape(), (Dims{U, 3, 3, 3}));
  EXPECT_EQ(smooth.op(), "transpose");
  Tensor tall = g.placeholder("tall", DType::Float32, {1, U, 4, 3});
  expectGraphError([&] { image::resize(tall, {3, 3}); },
                   {"resize", "static height and width"});
  expectGraphError(
      [&] { image::resize_nearest_neighbor(img, {3, 3}, true, true); },
      {"resize_images", "align_corners and half_pixel_centers"});
  expectGraphError([&] { image::resize_grad(ints, {3, 3}); },
                   {"resize_images_grad", "float"});
}

TEST(GraphBuilder, SegmentsAndBuckets) {
  Graph g;
  Tensor data = g.placeholder("data", DType::Float32, {7, 3});
  Tensor ids = g.placeholder("ids", DType::Int64, {7});
  Tensor like = g.placeholder("like", DType::Int64, {4, 2});
  // The number of segments is dim 0 of the third operand.
  Tensor s = unsorted_segment_sum(data, ids, like);
  EXPECT_EQ(s.op(), "unsorted_segment_sum");
  EXPECT_EQ(s.name(), "UnsortedSegmentSum");
  EXPECT_EQ(s.shape(), (Dims{4, 3}));
  EXPECT_EQ(s.dtype(), DType::Float32);
  Tensor batch = g.placeholder("batch", DType::Int64, {U});
  EXPECT_EQ(unsorted_segment_sum(data, ids, batch).shape(), (Dims{U, 3}));
  expectGraphError([&] { unsorted_segment_sum(data, data, like); },
                   {"unsorted_segment_sum", "'data'", "i32 or i64"});
  expectGraphError(
      [&] {
        unsorted_segment_sum(data, g.placeholder("six", DType::Int64, {6}),
                             like);
      },
      {"unsorted_segment_sum", "one id per row of data [7,3]"});
  Tensor mean = segment_mean(data, ids, like);
  EXPECT_EQ(mean.shape(), (Dims{4, 3}));
  EXPECT_EQ(mean.name().rfind("UnsortedSegmentMean/", 0), 0u) << mean.name();
  EXPECT_EQ(segment_sqrt_n(data, ids, batch).shape(), (Dims{U, 3}));
  expectGraphError([&] { segment_mean(ids, ids, like); },
                   {"segment_mean", "'ids'", "must be a float tensor"});

  Tensor x = g.placeholder("x", DType::Float32, {U, 2});
  Tensor b = bucketize(x, {0.0, 1.0, 1.0, 2.5});
  EXPECT_EQ(b.op(), "bucketize");
  EXPECT_EQ(b.dtype(), DType::Int64);
  EXPECT_EQ(b.shape(), (Dims{U, 2}));
  const auto &f = attr(b, "boundaries").list().f();
  EXPECT_EQ(std::vector<double>(f.begin(), f.end()),
            (std::vector<double>{0.0, 1.0, 1.0, 2.5}));
  EXPECT_EQ(bucketize(ids, {}).shape(), Dims{7});
  expectGraphError([&] { bucketize(x, {0.0, 2.0, 1.0}); },
                   {"bucketize", "sorted ascending", "boundary 2 (1)"});
  expectGraphError([&] { bucketize(x, {0.0, std::nan("")}); },
                   {"bucketize", "boundary 1 is NaN"});
  expectGraphError(
      [&] { bucketize(g.placeholder("flag", DType::Bool, {U}), {0.0}); },
      {"bucketize", "float or integer"});
}

TEST(GraphBuilder, SparseIdsLookupsAndIndicator) {
  Graph g;
  SparseIds sp{g.placeholder("sex/ids", DType::Int64, {U}),
               g.placeholder("sex/rows", DType::Int64, {U}),
               g.placeholder("sex/row_lengths", DType::Int64, {U}), Tensor()};
  Tensor params = g.placeholder("params", DType::Float32, {10, 4});
  for (const char *combiner : {"sum", "mean", "sqrtn"}) {
    SCOPED_TRACE(combiner);
    Tensor e = safe_embedding_lookup_sparse(params, sp, combiner);
    EXPECT_EQ(e.shape(), (Dims{U, 4}));
    EXPECT_EQ(e.dtype(), DType::Float32);
  }
  Tensor clipped = safe_embedding_lookup_sparse(params, sp, "mean", 1.5);
  EXPECT_EQ(clipped.name().rfind("embedding_lookup_3/", 0), 0u)
      << clipped.name();
  SparseIds weighted = sp;
  weighted.weights = g.placeholder("sex/weights", DType::Float32, {U});
  EXPECT_EQ(safe_embedding_lookup_sparse(params, weighted, "sqrtn").shape(),
            (Dims{U, 4}));
  expectGraphError([&] { safe_embedding_lookup_sparse(params, sp, "max"); },
                   {"safe_embedding_lookup_sparse", "combiner", "\"max\""});
  expectGraphError([&] { safe_embedding_lookup_sparse(sp.ids, sp); },
                   {"safe_embedding_lookup_sparse", "params 'sex/ids'",
                    "float matrix [vocab, dim]"});
  SparseIds noRows = sp;
  noRows.rows = Tensor();
  expectGraphError(
      [&] { safe_embedding_lookup_sparse(params, noRows); },
      {"safe_embedding_lookup_sparse", "SparseIds.rows", "empty Tensor"});
  SparseIds intWeights = sp;
  intWeights.weights = sp.ids;
  expectGraphError(
      [&] { sparse_to_indicator(intWeights, 3); },
      {"sparse_to_indicator", "SparseIds.weights 'sex/ids'", "rank-1 float"});
  Graph other;
  SparseIds foreign = sp;
  foreign.row_lengths = other.placeholder("n", DType::Int64, {U});
  expectGraphError([&] { safe_embedding_lookup_sparse(params, foreign); },
                   {"SparseIds.row_lengths 'n'", "another graph"});

  Tensor hot = sparse_to_indicator(weighted, 5);
  EXPECT_EQ(hot.shape(), (Dims{U, 5}));
  EXPECT_EQ(hot.dtype(), DType::Float32);
  expectGraphError([&] { sparse_to_indicator(sp, 0); },
                   {"sparse_to_indicator", "depth must be positive"});
}

TEST(GraphBuilder, GroupAndBatchNormalization) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 3});
  Operation none;
  expectGraphError([&] { group({}); }, {"group", "at least one"});
  expectGraphError([&] { group({none}); }, {"group", "empty Operation"});

  // tf.compat.v1.layers.batch_normalization's variables, names and updates.
  Tensor y = layers::batch_normalization(x, /*training=*/true);
  EXPECT_EQ(y.shape(), (Dims{U, 3}));
  layers::batch_normalization(x, /*training=*/false);
  graph::GraphDef def = g.graph_def();
  std::vector<std::string> names;
  for (const auto &v : def.variable())
    names.push_back(v.name() + (v.trainable() ? "" : " (not trainable)"));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "batch_normalization/gamma",
                       "batch_normalization/beta",
                       "batch_normalization/moving_mean (not trainable)",
                       "batch_normalization/moving_variance (not trainable)",
                       "batch_normalization_1/gamma",
                       "batch_normalization_1/beta",
                       "batch_normalization_1/moving_mean (not trainable)",
                       "batch_normalization_1/moving_variance (not trainable)",
                   }));
  EXPECT_EQ(findVar(def, "batch_normalization/gamma")->initializer().type(),
            "ones");
  EXPECT_EQ(
      findVar(def, "batch_normalization/moving_variance")->initializer().type(),
      "ones");
  // Only training adds the moving-average updates, two per layer.
  std::vector<Tensor> updates = g.get_collection("update_ops");
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].op(), "assign_variable");
  EXPECT_EQ(attr(updates[0], "variable").s(),
            "batch_normalization/moving_mean");
  EXPECT_EQ(attr(updates[1], "variable").s(),
            "batch_normalization/moving_variance");
  EXPECT_EQ(updates[0].name().rfind("batch_normalization/AssignMovingAvg/", 0),
            0u)
      << updates[0].name();

  Operation train = group(updates, "train_op");
  EXPECT_EQ(train.op(), "group");
  EXPECT_FALSE(train.has_value());
  EXPECT_EQ(g.node(train.name()).input_size(), 2);
  EXPECT_EQ(group({train}).name(), "group_deps");
  // A group has no value: it cannot be an input of a value op.
  expectGraphError([&] { estc::negative(train); }, {"no value"});

  Tensor img = g.placeholder("img", DType::Float32, {U, 4, 4, 2});
  EXPECT_EQ(layers::batch_normalization(img, true, 1, 0.9, 1e-3, false, false)
                .shape(),
            (Dims{U, 4, 4, 2}));
  EXPECT_TRUE(g.find_variable("batch_normalization_2/moving_mean"));
  EXPECT_EQ(g.find_variable("batch_normalization_2/moving_mean")->shape(),
            Dims{4});
  EXPECT_FALSE(g.find_variable("batch_normalization_2/gamma"));
  expectGraphError(
      [&] {
        layers::batch_normalization(g.placeholder("u", DType::Float32, {U, U}));
      },
      {"batch_normalization", "must be known"});
  expectGraphError([&] { layers::batch_normalization(x, true, 2); },
                   {"batch_normalization", "axis 2 is out of range"});
}

/// Keras's LayerNormalization, tf.contrib's layer_norm, MultiHeadAttention,
/// Embedding and global pooling: variables (names, order, shapes,
/// initializers), result shapes, and one error line each.
TEST(GraphBuilder, AttentionAndNormalizationLayers) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 5, 8});
  EXPECT_EQ(layers::layer_normalization(x).shape(), (Dims{U, 5, 8}));
  layers::layer_normalization(x, -2, 1e-5, /*center=*/false);
  Tensor ln = layers::layer_norm(x);
  EXPECT_EQ(ln.op(), "layer_norm");
  EXPECT_EQ(attr(ln, "begin_norm_axis").i(), 1);
  EXPECT_EQ(attr(ln, "begin_params_axis").i(), -1 + 3);
  EXPECT_DOUBLE_EQ(attr(ln, "epsilon").f(), 1e-12);

  Tensor q = g.placeholder("q", DType::Float32, {U, 4, 6});
  Tensor v = g.placeholder("v", DType::Float32, {U, 7, 3});
  Tensor mask = g.placeholder("mask", DType::Bool, {U, 4, 7});
  Tensor y = layers::multi_head_attention(
      q, v, 2, 5,
      {.value_dim = 3, .attention_mask = mask, .use_causal_mask = true});
  EXPECT_EQ(y.shape(), (Dims{U, 4, 6}));
  Tensor y2 = layers::multi_head_attention(
      q, q, 3, 4, {.use_bias = false, .output_shape = 10});
  EXPECT_EQ(y2.shape(), (Dims{U, 4, 10}));

  Tensor ids = g.placeholder("ids", DType::Int64, {U, 5});
  EXPECT_EQ(layers::embedding(ids, 100, 16).shape(), (Dims{U, 5, 16}));
  EXPECT_EQ(layers::global_average_pooling1d(x).shape(), (Dims{U, 8}));
  EXPECT_EQ(layers::global_max_pooling1d(x, true).shape(), (Dims{U, 1, 8}));
  Tensor img = g.placeholder("img", DType::Float32, {U, 4, 4, 3});
  EXPECT_EQ(layers::global_average_pooling2d(img).shape(), (Dims{U, 3}));
  EXPECT_EQ(layers::global_max_pooling2d(img, true).shape(),
            (Dims{U, 1, 1, 3}));

  graph::GraphDef def = g.graph_def();
  std::vector<std::string> names;
  for (const auto &var : def.variable())
    names.push_back(var.name() + " " +
                    shape::toString(Dims(var.shape().dim().begin(),
                                         var.shape().dim().end())));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "layer_normalization/gamma [8]",
                       "layer_normalization/beta [8]",
                       "layer_normalization_1/gamma [5,8]",
                       "LayerNorm/beta [8]",
                       "LayerNorm/gamma [8]",
                       "multi_head_attention/query/kernel [6,2,5]",
                       "multi_head_attention/query/bias [2,5]",
                       "multi_head_attention/key/kernel [3,2,5]",
                       "multi_head_attention/key/bias [2,5]",
                       "multi_head_attention/value/kernel [3,2,3]",
                       "multi_head_attention/value/bias [2,3]",
                       "multi_head_attention/attention_output/kernel [2,3,6]",
                       "multi_head_attention/attention_output/bias [6]",
                       "multi_head_attention_1/query/kernel [6,3,4]",
                       "multi_head_attention_1/key/kernel [6,3,4]",
                       "multi_head_attention_1/value/kernel [6,3,4]",
                       "multi_head_attention_1/attention_output/kernel "
                       "[3,4,10]",
                       "embedding/embeddings [100,16]",
                   }));
  EXPECT_EQ(findVar(def, "layer_normalization/gamma")->initializer().type(),
            "ones");
  EXPECT_EQ(findVar(def, "embedding/embeddings")->initializer().type(),
            "random_uniform");

  // Errors: one line naming the layer or op.
  Tensor u = g.placeholder("u", DType::Float32, {U, U});
  expectGraphError(
      [&] { layers::layer_normalization(u); },
      {"layer_normalization 'layer_normalization_2'", "must be known"});
  expectGraphError([&] { layers::layer_normalization(x, 3); },
                   {"layer_normalization", "axis 3 is out of range"});
  expectGraphError([&] { layers::layer_norm(x, true, true, nullptr, 2, 1); },
                   {"layer_norm", "begin_params_axis 1 comes before"});
  expectGraphError(
      [&] {
        nn::layer_norm(x, g.constant({1.0}, {5}), g.constant({0.0}, {8}));
      },
      {"layer_norm 'LayerNorm", "gamma [5] must have the shape [8]"});
  expectGraphError(
      [&] {
        nn::layer_norm(x, g.constant({1.0}, {8}), g.constant({0.0}, {8}), -1,
                       -1, -1.0);
      },
      {"layer_norm", "epsilon must be >= 0"});
  Tensor logits = g.placeholder("logits", DType::Float32, {U, 2, 4, 7});
  expectGraphError([&] { nn::attention_softmax(logits, mask); },
                   {"attention_softmax", "mask [?,4,7] must have the rank"});
  expectGraphError(
      [&] { nn::attention_softmax(logits, cast(mask, DType::Int32)); },
      {"attention_softmax", "must be bool (true = attend)"});
  expectGraphError(
      [&] {
        layers::multi_head_attention(q, v, 2, 5, {.attention_mask = ids});
      },
      {"multi_head_attention 'multi_head_attention_2'",
       "attention_mask must be a bool [batch, T, S] = [?,4,7]"});
  expectGraphError([&] { layers::multi_head_attention(u, v, 2, 5); },
                   {"multi_head_attention", "[batch, length, dim]"});
  expectGraphError(
      [&] {
        layers::multi_head_attention(
            q, v, 2, 5, {.key = g.placeholder("k", DType::Float32, {U, 6, 3})});
      },
      {"multi_head_attention", "must share batch and length"});
  expectGraphError([&] { layers::multi_head_attention(q, v, 0, 5); },
                   {"multi_head_attention", "must be positive"});
  expectGraphError([&] { layers::embedding(x, 10, 4); },
                   {"embedding 'embedding_1'", "integer tensor"});
  expectGraphError([&] { layers::global_average_pooling2d(x); },
                   {"global_average_pooling2d", "rank-4"});
  Tensor ql = g.placeholder("ql", DType::Float32, {U, 2, 4, U});
  expectGraphError(
      [&] { nn::scaled_dot_product_attention(ql, ql, ql); },
      {"scaled_dot_product_attention", "the last dimension must be known"});
  EXPECT_EQ(
      nn::scaled_dot_product_attention(ql, ql, ql, std::nullopt, true, 0.5)
          .shape(),
      (Dims{U, 2, 4, U}));

  // dropout's noise_shape: the mask at [?, 1, 8], broadcast over dim 1.
  Tensor d = nn::dropout(x, 0.5, Dims{-1, 1, 8});
  EXPECT_EQ(d.shape(), (Dims{U, 5, 8}));
  EXPECT_EQ(d.op(), "mul");
  EXPECT_EQ(nn::dropout(x, 0.5, Dims{-1, 5, 8}).op(), "dropout");
  EXPECT_EQ(layers::dropout(x, 0.5, Dims{-1, 1, -1}, /*training=*/false).name(),
            x.name());
  expectGraphError([&] { nn::dropout(x, 0.5, Dims{-1, 1}); },
                   {"dropout", "noise_shape [?,1] must have the input's rank"});
  expectGraphError([&] { nn::dropout(x, 0.5, Dims{-1, 2, 8}); },
                   {"dropout", "must have 1 or the input's size"});
}

/// dense and conv2d's options: regularizers of kernel, bias and activity
/// in the mode's collection, trainable=false variables.
TEST(GraphBuilder, DenseAndConv2DOptions) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::TRAIN);
  Tensor x = g.placeholder("x", DType::Float32, {U, 4});
  Tensor y = layers::dense(x, 3,
                           {.activation = nn::relu,
                            .kernel_regularizer = losses::l2_regularizer(0.1),
                            .bias_regularizer = losses::l1_regularizer(0.2),
                            .activity_regularizer = losses::l2_regularizer(1),
                            .trainable = false});
  EXPECT_EQ(y.shape(), (Dims{U, 3}));
  EXPECT_EQ(y.op(), "relu");
  Tensor img = g.placeholder("img", DType::Float32, {U, 6, 6, 2});
  Tensor c = layers::conv2d(img, 4, {3, 3},
                            {.strides = {2, 2},
                             .padding = "same",
                             .bias_regularizer = losses::l2_regularizer(1)});
  EXPECT_EQ(c.shape(), (Dims{U, 3, 3, 4}));
  EXPECT_EQ(g.get_collection("regularization_losses").size(), 4u);
  EXPECT_FALSE(g.find_variable("dense/kernel")->trainable());
  EXPECT_FALSE(g.find_variable("dense/bias")->trainable());
  EXPECT_TRUE(g.find_variable("conv2d/kernel")->trainable());
  expectGraphError([&] { layers::dense(x, 0, {.trainable = false}); },
                   {"dense 'dense_1'", "units must be positive"});
  expectGraphError([&] { layers::conv2d(x, 4, {3, 3}, {.padding = "same"}); },
                   {"conv2d 'conv2d_1'", "NHWC"});
}

TEST(GraphBuilder, FusedBatchNorm) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 4, 4, 3});
  Tensor c = g.constant(std::vector<double>{1, 2, 3}, {3});
  nn::FusedBatchNorm bn = nn::fused_batch_norm(x, c, c);
  // One fused_batch_norm node; its "output" nodes stand for the results.
  EXPECT_EQ(bn.y.op(), "output");
  EXPECT_EQ(bn.y.shape(), (Dims{U, 4, 4, 3}));
  EXPECT_EQ(bn.batch_mean.shape(), Dims{3});
  EXPECT_EQ(bn.batch_variance.shape(), Dims{3});
  EXPECT_EQ(attr(bn.batch_variance, "index").i(), 2);
  const graph::NodeDef &node = g.node(g.node(bn.y.name()).input(0));
  EXPECT_EQ(node.op(), "fused_batch_norm");
  EXPECT_EQ(node.attr().at("axis").i(), 3);
  EXPECT_EQ(node.attr().at("epsilon").f(), 0.001);
  Tensor nchw = g.placeholder("nchw", DType::Float32, {U, 3, 5, 5});
  EXPECT_EQ(nn::fused_batch_norm(nchw, c, c, 1e-5, "NCHW").y.shape(),
            (Dims{U, 3, 5, 5}));

  // The layer's training path on a rank-4 input is the fused op; TF's
  // variables and update_ops.
  Tensor y = layers::batch_normalization(x, /*training=*/true);
  EXPECT_EQ(g.node(g.node(y.name()).input(0)).op(), "fused_batch_norm");
  ASSERT_EQ(g.get_collection("update_ops").size(), 2u);
  EXPECT_TRUE(g.find_variable("batch_normalization/moving_variance"));
  // Without scale and center: constant ones and zeros.
  Tensor y2 =
      layers::batch_normalization(nchw, true, 1, 0.9, 1e-3, false, false);
  EXPECT_EQ(g.node(g.node(y2.name()).input(0)).op(), "fused_batch_norm");
  EXPECT_FALSE(g.find_variable("batch_normalization_1/gamma"));

  expectGraphError([&] { nn::fused_batch_norm(x, c, c, 1e-3, "NWHC"); },
                   {"fused_batch_norm", "data_format must be", "\"NWHC\""});
  expectGraphError(
      [&] {
        nn::fused_batch_norm(g.placeholder("r3", DType::Float32, {U, 4, 3}), c,
                             c);
      },
      {"fused_batch_norm", "must have rank 4 for data_format \"NHWC\""});
  expectGraphError([&] { nn::fused_batch_norm(x, c, c, 1e-3, "NCDHW"); },
                   {"fused_batch_norm", "must have rank 5"});
  Tensor c4 = g.constant(std::vector<double>{1, 2, 3, 4}, {4});
  expectGraphError([&] { nn::fused_batch_norm(x, c4, c); },
                   {"fused_batch_norm", "scale [4] must have the shape [3]"});
  expectGraphError([&] { nn::fused_batch_norm(x, c, c4); },
                   {"fused_batch_norm", "offset [4] must have the shape [3]"});
  expectGraphError([&] { nn::fused_batch_norm(x, c, c, -1.0); },
                   {"fused_batch_norm", "epsilon must be >= 0, got -1"});
  Tensor c64 = g.constant(std::vector<double>{1, 2, 3}, {3}, DType::Float64);
  expectGraphError([&] { nn::fused_batch_norm(x, c64, c); },
                   {"fused_batch_norm", "different element types"});
  Tensor xi = g.placeholder("xi", DType::Int32, {U, 4, 4, 3});
  expectGraphError([&] { nn::fused_batch_norm(xi, c, c); },
                   {"fused_batch_norm", "must be a float tensor"});
}

TEST(GraphBuilder, RandomOpsAndSeeds) {
  auto build = [](int64_t seed) {
    Graph g;
    g.set_seed(seed);
    auto m = g.mode_scope(ModeKeys::TRAIN);
    Tensor x = g.placeholder("x", DType::Float32, {U, 8});
    Tensor d1 = nn::dropout(x, 0.5);
    Tensor d2 = nn::dropout(x, 0.5);
    Tensor r = random_uniform(g, {2, 3});
    Tensor n = random_normal(g, {4}, DType::Float64, 1.0, 2.0);
    Tensor t = truncated_normal(g, {4});
    Tensor fixed = random_uniform(g, {1}, DType::Float32, 0, 1, 7);
    return std::vector<int64_t>{attr(d1, "seed").i(), attr(d2, "seed").i(),
                                attr(r, "seed").i(),  attr(n, "seed").i(),
                                attr(t, "seed").i(),  attr(fixed, "seed").i()};
  };
  std::vector<int64_t> a = build(1), b = build(1), c = build(2);
  EXPECT_EQ(a, b); // deterministic
  EXPECT_NE(a, c); // graph seed matters
  std::set<int64_t> distinct(a.begin(), a.end());
  EXPECT_EQ(distinct.size(), a.size()); // distinct per op
  for (int64_t s : a)
    EXPECT_GE(s, 0);

  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 8});
  Tensor d = nn::dropout(x, 0.25);
  EXPECT_EQ(d.op(), "dropout");
  EXPECT_EQ(attr(d, "rate").f(), 0.25);
  EXPECT_EQ(g.node(d.name()).input(1), "global_step/read");
  Tensor r = random_normal(g, {2, 2}, DType::Float32, 0.0, 3.0);
  EXPECT_EQ(r.shape(), (Dims{2, 2}));
  EXPECT_EQ(attr(r, "stddev").f(), 3.0);
  EXPECT_EQ(listAttr(r, "shape"), (Dims{2, 2}));
  EXPECT_EQ(g.node(r.name()).input(0), "global_step/read");
  EXPECT_EQ(g.derive_seed("a"), g.derive_seed("a"));
  EXPECT_NE(g.derive_seed("a"), g.derive_seed("b"));
  expectGraphError([&] { nn::dropout(x, 1.0); }, {"dropout 'Dropout", "rate"});
  expectGraphError([&] { random_uniform(g, {U, 2}); },
                   {"random_uniform", "fully known"});
  expectGraphError([&] { random_uniform(g, {2}, DType::Int32); },
                   {"float type"});
  expectGraphError([&] { g.set_seed(3); },
                   {"set_seed", "before the first node"});
}

// --- Naming, scopes, modes, variables ----------------------------------------

TEST(GraphBuilder, NameScopesAndUniqueNames) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 2});
  {
    auto s = g.name_scope("block");
    EXPECT_EQ(g.current_scope(), "block");
    EXPECT_EQ(nn::relu(x).name(), "block/Relu");
    EXPECT_EQ(nn::relu(x).name(), "block/Relu_1");
    {
      auto inner = g.name_scope("inner");
      EXPECT_EQ(nn::relu(x, "act").name(), "block/inner/act");
    }
    EXPECT_EQ(g.unique_layer_name("dense"), "dense");
    EXPECT_EQ(g.unique_layer_name("dense"), "dense_1");
  }
  EXPECT_EQ(g.current_scope(), "");
  EXPECT_EQ(nn::relu(x).name(), "Relu");
  EXPECT_EQ(g.unique_layer_name("dense"), "dense");
  expectGraphError([&] { auto s = g.name_scope("a//b"); }, {"invalid scope"});
}

TEST(GraphBuilder, LayerNamesAndVariables) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 784});
  Tensor h = layers::dense(x, 256, nn::relu);
  EXPECT_EQ(h.name(), "dense/Relu");
  EXPECT_EQ(h.shape(), (Dims{U, 256}));
  Tensor y = layers::dense(h, 10);
  EXPECT_EQ(y.name(), "dense_1/BiasAdd");
  EXPECT_EQ(y.shape(), (Dims{U, 10}));
  EXPECT_EQ(g.node("dense_1/MatMul").input(1), "dense_1/kernel/read");
  Tensor nb = layers::dense(h, 3, nullptr, false, zeros_initializer(),
                            zeros_initializer(), "logits");
  EXPECT_EQ(nb.name(), "logits/MatMul");
  Tensor lam = layers::dense(h, 3, [](const Tensor &t) { return nn::elu(t); });
  EXPECT_EQ(lam.op(), "elu");

  graph::GraphDef def = g.graph_def();
  const graph::VariableDef *k = findVar(def, "dense_1/kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape().dim(0), 256);
  EXPECT_EQ(k->shape().dim(1), 10);
  EXPECT_TRUE(k->trainable());
  EXPECT_EQ(k->initializer().type(), "glorot_uniform");
  ASSERT_TRUE(k->initializer().attr().count("seed"));
  EXPECT_EQ(k->initializer().attr().at("seed").i(),
            g.derive_seed("dense_1/kernel"));
  const graph::VariableDef *bias = findVar(def, "dense_1/bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->initializer().type(), "zeros");
  EXPECT_EQ(bias->initializer().attr().count("seed"), 0u);
  EXPECT_EQ(findVar(def, "logits/bias"), nullptr);
  EXPECT_EQ(def.version(), graph::kGraphVersion);

  expectGraphError(
      [&] { layers::dense(g.placeholder("v", DType::Float32, {5}), 3); },
      {"dense 'dense_3'", "input 'v' [5]", "rank >= 2"});
  expectGraphError(
      [&] { layers::dense(g.placeholder("w", DType::Float32, {2, U}), 3); },
      {"dense", "last dimension must be known"});
}

TEST(GraphBuilder, ConvLayersFlattenDropout) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::TRAIN);
  Tensor x = g.placeholder("x", DType::Float32, {U, 28, 28, 1});
  Tensor c = layers::conv2d(x, 20, {5, 5}, {1, 1}, "valid", nn::relu);
  EXPECT_EQ(c.name(), "train/conv2d/Relu");
  EXPECT_EQ(c.shape(), (Dims{U, 24, 24, 20}));
  EXPECT_EQ(g.variable_def("conv2d/kernel").shape().dim(3), 20);
  Tensor p = layers::max_pooling2d(c, {2, 2}, {2, 2});
  EXPECT_EQ(p.name(), "train/max_pooling2d/MaxPool");
  EXPECT_EQ(p.shape(), (Dims{U, 12, 12, 20}));
  Tensor a = layers::average_pooling2d(c, {2, 2}, {2, 2}, "same");
  EXPECT_EQ(a.op(), "avg_pool");
  Tensor f = layers::flatten(p);
  EXPECT_EQ(f.shape(), (Dims{U, 2880}));
  EXPECT_EQ(f.op(), "reshape");
  Tensor d = layers::dropout(f, 0.5, true);
  EXPECT_EQ(d.op(), "dropout");
  EXPECT_EQ(d.name(), "train/dropout/Dropout");
  EXPECT_EQ(layers::dropout(f, 0.5, false).name(), f.name());
  expectGraphError([&] { layers::conv2d(f, 3, {3, 3}); },
                   {"conv2d 'conv2d_1'", "NHWC"});
  expectGraphError(
      [&] { layers::flatten(g.placeholder("q", DType::Float32, {U, U, 3})); },
      {"flatten", "non-batch dimensions must be known"});
}

/// The variable `name`'s shape.
Dims variableShape(const Graph &g, const std::string &name) {
  Dims d;
  for (const auto &dim : g.variable_def(name).shape().dim())
    d.push_back(dim);
  return d;
}

TEST(GraphBuilder, ConvolutionsAndPooling) {
  Graph g;
  Tensor x1 = g.placeholder("x1", DType::Float32, {U, 10, 3});
  Tensor f1 = g.placeholder("f1", DType::Float32, {3, 3, 4});
  EXPECT_EQ(nn::conv1d(x1, f1, 1, "VALID").shape(), (Dims{U, 8, 4}));
  EXPECT_EQ(nn::conv1d(x1, f1, 2, "SAME").shape(), (Dims{U, 5, 4}));
  EXPECT_EQ(nn::conv1d(x1, f1, 1, "VALID", "NWC", 2).shape(), (Dims{U, 6, 4}));
  Tensor x1t = g.placeholder("x1t", DType::Float32, {U, 3, 10});
  EXPECT_EQ(nn::conv1d(x1t, f1, 1, "SAME", "NCW").shape(), (Dims{U, 4, 10}));
  EXPECT_EQ(nn::max_pool1d(x1, 2, 2, "VALID").shape(), (Dims{U, 5, 3}));
  EXPECT_EQ(nn::avg_pool1d(x1t, 3, 2, "SAME", "NCW").shape(), (Dims{U, 3, 5}));

  Tensor x3 = g.placeholder("x3", DType::Float32, {U, 5, 6, 7, 2});
  Tensor f3 = g.placeholder("f3", DType::Float32, {2, 3, 3, 2, 4});
  EXPECT_EQ(nn::conv3d(x3, f3, {1, 1, 1}, "VALID").shape(),
            (Dims{U, 4, 4, 5, 4}));
  EXPECT_EQ(nn::conv3d(x3, f3, {2, 2, 2}, "SAME").shape(),
            (Dims{U, 3, 3, 4, 4}));
  EXPECT_EQ(nn::max_pool3d(x3, {2, 2, 2}, {2, 2, 2}, "VALID").shape(),
            (Dims{U, 2, 3, 3, 2}));
  EXPECT_EQ(nn::avg_pool3d(x3, {3, 3, 3}, {1, 2, 2}, "SAME").shape(),
            (Dims{U, 5, 3, 4, 2}));
  Tensor x3t = g.placeholder("x3t", DType::Float32, {U, 2, 5, 6, 7});
  EXPECT_EQ(nn::conv3d(x3t, f3, {1, 1, 1}, "SAME", "NCDHW").shape(),
            (Dims{U, 4, 5, 6, 7}));

  Tensor img = g.placeholder("img", DType::Float32, {U, 8, 8, 3});
  Tensor imgT = g.placeholder("imgT", DType::Float32, {U, 3, 8, 8});
  Tensor dw = g.placeholder("dw", DType::Float32, {3, 3, 3, 2});
  EXPECT_EQ(nn::depthwise_conv2d(img, dw, {1, 1}, "SAME").shape(),
            (Dims{U, 8, 8, 6}));
  EXPECT_EQ(nn::depthwise_conv2d(imgT, dw, {2, 2}, "VALID", "NCHW").shape(),
            (Dims{U, 6, 3, 3}));
  Tensor pw = g.placeholder("pw", DType::Float32, {1, 1, 6, 5});
  EXPECT_EQ(nn::separable_conv2d(img, dw, pw, {1, 1}, "VALID").shape(),
            (Dims{U, 6, 6, 5}));
  Tensor f = g.placeholder("f", DType::Float32, {3, 3, 3, 4});
  EXPECT_EQ(nn::conv2d(imgT, f, {1, 1}, "VALID", "NCHW").shape(),
            (Dims{U, 4, 6, 6}));
  EXPECT_EQ(nn::max_pool(imgT, {2, 2}, {2, 2}, "VALID", "NCHW").shape(),
            (Dims{U, 3, 4, 4}));
  Tensor small = g.placeholder("small", DType::Float32, {U, 4, 4, 4});
  Tensor t = nn::conv2d_transpose(small, f, {-1, 8, 8, 3}, {2, 2}, "SAME");
  EXPECT_EQ(t.op(), "conv2d_backprop_input");
  EXPECT_EQ(t.shape(), (Dims{U, 8, 8, 3}));

  Tensor vol = g.placeholder("vol", DType::Float32, {U, 3, 4, 4, 4});
  Tensor f3t = g.placeholder("f3t", DType::Float32, {2, 3, 3, 2, 4});
  EXPECT_EQ(nn::conv3d_transpose(vol, f3t, {-1, 6, 8, 7, 2}, {2, 2, 2}).shape(),
            (Dims{U, 6, 8, 7, 2}));
  expectGraphError(
      [&] { nn::conv3d_transpose(vol, f3t, {-1, 6, 8, 9, 2}, {2, 2, 2}); },
      {"conv3d_transpose 'conv3d_transpose'", "input 'vol' [?,3,4,4,4]",
       "conv3d of output_shape [?,6,8,9,2] would have spatial size [3,4,5], "
       "not the input's [3,4,4]"});
  expectGraphError(
      [&] { nn::conv3d_transpose(vol, f3t, {-1, 6, 8, 7, 3}, {2, 2, 2}); },
      {"conv3d_transpose", "must be [kd, kh, kw, 3, 4]"});

  // One line each: bad padding, channel mismatch, bad data_format, ...
  expectGraphError([&] { nn::conv3d(x3, f3, {1, 1, 1}, "same"); },
                   {"conv3d 'Conv3D'", "input 'x3' [?,5,6,7,2]",
                    "padding must be \"SAME\" or \"VALID\""});
  Tensor f3c = g.placeholder("f3c", DType::Float32, {2, 3, 3, 5, 4});
  expectGraphError([&] { nn::conv3d(x3, f3c, {1, 1, 1}, "SAME"); },
                   {"conv3d 'Conv3D'", "input channels 2 do not match",
                    "'f3c' [2,3,3,5,4]"});
  expectGraphError(
      [&] { nn::conv3d(x3, f3, {1, 1, 1}, "SAME", "NHWC"); },
      {"conv3d", "data_format must be \"NDHWC\" or \"NCDHW\"", "got \"NHWC\""});
  expectGraphError([&] { nn::conv3d(x3, f3, {1, 1}, "SAME"); },
                   {"conv3d", "strides must have 3 values"});
  expectGraphError(
      [&] { nn::conv3d(x3, f3, {1, 1, 1}, "VALID", "NDHWC", {1, 4, 4}); },
      {"conv3d", "VALID window [2,3,3] is larger"});
  expectGraphError([&] { nn::conv1d(x1, f1, 1, "SAME", "NCHW"); },
                   {"conv1d 'conv1d'", "data_format must be \"NWC\" or"});
  expectGraphError([&] { nn::conv1d(x1t, f1, 1, "SAME"); },
                   {"conv1d", "input channels 10 do not match filters 'f1'"});
  expectGraphError([&] { nn::conv1d(x1, f1, 1, "valid"); },
                   {"conv1d", "padding must be"});
  // The filters' layout; conv3d and depthwise_conv2d need them known, conv1d
  // (conv2d on an inserted axis) takes unknown channels as conv2d does.
  Tensor f1r = g.placeholder("f1r", DType::Float32, {3, 3, 4, 1});
  expectGraphError([&] { nn::conv1d(x1, f1r, 1, "SAME"); },
                   {"conv1d 'conv1d'", "filters 'f1r' must be [width, in, "
                                       "out], got [3,3,4,1]"});
  Tensor f3u = g.placeholder("f3u", DType::Float32, {2, 3, 3, U, 4});
  expectGraphError([&] { nn::conv3d(x3, f3u, {1, 1, 1}, "SAME"); },
                   {"conv3d 'Conv3D'", "filters 'f3u' must be [depth, height, "
                                       "width, in, out] and known, got "
                                       "[2,3,3,?,4]"});
  Tensor dwu = g.placeholder("dwu", DType::Float32, {3, U, 3, 2});
  expectGraphError([&] { nn::depthwise_conv2d(img, dwu, {1, 1}, "SAME"); },
                   {"depthwise_conv2d 'depthwise'",
                    "filter 'dwu' must be [height, width, in, multiplier] and "
                    "known, got [3,?,3,2]"});
  Tensor x1u = g.placeholder("x1u", DType::Float32, {U, 10, U});
  EXPECT_EQ(nn::conv1d(x1u, f1, 1, "VALID").shape(), (Dims{U, 8, 4}));
  Tensor f1u = g.placeholder("f1u", DType::Float32, {3, U, 4});
  EXPECT_EQ(nn::conv1d(x1, f1u, 1, "VALID").shape(), (Dims{U, 8, 4}));
  expectGraphError([&] { nn::depthwise_conv2d(imgT, dw, {1, 1}, "SAME"); },
                   {"depthwise_conv2d 'depthwise'", "input 'imgT' [?,3,8,8]",
                    "input channels 8 do not match filter 'dw'"});
  expectGraphError(
      [&] { nn::depthwise_conv2d(img, dw, {1, 1}, "SAME", "channels_last"); },
      {"depthwise_conv2d", "data_format must be \"NHWC\" or \"NCHW\""});
  expectGraphError([&] { nn::depthwise_conv2d(img, dw, {1, 1}, "FULL"); },
                   {"depthwise_conv2d", "padding must be"});
  Tensor pwBad = g.placeholder("pwBad", DType::Float32, {1, 1, 3, 5});
  expectGraphError(
      [&] { nn::separable_conv2d(img, dw, pwBad, {1, 1}, "SAME"); },
      {"separable_conv2d", "must take the depthwise output's 6 channels"});
  expectGraphError([&] { nn::conv2d(img, f, {1, 1}, "SAME", "NWHC"); },
                   {"conv2d 'Conv2D", "data_format must be \"NHWC\" or "
                                      "\"NCHW\", got \"NWHC\""});
  expectGraphError([&] { nn::max_pool(img, {2, 2}, {2, 2}, "SAME", "nchw"); },
                   {"max_pool", "data_format"});
  expectGraphError(
      [&] { nn::conv2d_transpose(small, f, {-1, 8, 8, 5}, {2, 2}, "SAME"); },
      {"conv2d_transpose", "output_shape [?,8,8,5] has channels 5"});
  expectGraphError(
      [&] { nn::conv2d_transpose(small, f, {-1, 9, 9, 3}, {1, 1}, "SAME"); },
      {"conv2d_backprop_input"});
  expectGraphError([&] { nn::max_pool3d(x3, {2, 2}, {1, 1, 1}, "SAME"); },
                   {"max_pool3d 'MaxPool3D'", "ksize must have 3 values"});
  expectGraphError([&] { nn::avg_pool3d(img, {2, 2, 2}, {1, 1, 1}, "SAME"); },
                   {"avg_pool3d", "input must be NDHWC (rank 5)"});
  expectGraphError([&] { nn::max_pool1d(x1, 2, 2, "SAME", "NHWC"); },
                   {"max_pool1d", "data_format must be \"NWC\" or \"NCW\""});
}

TEST(GraphBuilder, ConvolutionLayers) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::TRAIN);
  Tensor x1 = g.placeholder("x1", DType::Float32, {U, 10, 3});
  Tensor c1 = layers::conv1d(x1, 4, 3, 1, "same", nn::relu);
  EXPECT_EQ(c1.shape(), (Dims{U, 10, 4}));
  EXPECT_EQ(variableShape(g, "conv1d/kernel"), (Dims{3, 3, 4}));
  EXPECT_EQ(variableShape(g, "conv1d/bias"), (Dims{4}));
  EXPECT_EQ(layers::max_pooling1d(c1, 2, 2).shape(), (Dims{U, 5, 4}));
  EXPECT_EQ(layers::average_pooling1d(c1, 3, 1, "same").shape(),
            (Dims{U, 10, 4}));

  Tensor x3 = g.placeholder("x3", DType::Float32, {U, 4, 6, 6, 2});
  Tensor c3 = layers::conv3d(x3, 5, {2, 3, 3});
  EXPECT_EQ(c3.shape(), (Dims{U, 3, 4, 4, 5}));
  EXPECT_EQ(variableShape(g, "conv3d/kernel"), (Dims{2, 3, 3, 2, 5}));
  EXPECT_EQ(layers::max_pooling3d(c3, {1, 2, 2}, {1, 2, 2}).shape(),
            (Dims{U, 3, 2, 2, 5}));
  EXPECT_EQ(layers::average_pooling3d(c3, {2, 2, 2}, {2, 2, 2}, "same").shape(),
            (Dims{U, 2, 2, 2, 5}));

  Tensor img = g.placeholder("img", DType::Float32, {U, 5, 5, 3});
  Tensor t = layers::conv2d_transpose(img, 4, {3, 3}, {2, 2});
  EXPECT_EQ(t.shape(), (Dims{U, 11, 11, 4})); // 5 * 2 + max(3 - 2, 0)
  EXPECT_EQ(variableShape(g, "conv2d_transpose/kernel"), (Dims{3, 3, 4, 3}));
  EXPECT_EQ(variableShape(g, "conv2d_transpose/bias"), (Dims{4}));
  EXPECT_EQ(layers::conv2d_transpose(img, 4, {3, 3}, {2, 2}, "same").shape(),
            (Dims{U, 10, 10, 4}));
  EXPECT_EQ(layers::conv2d_transpose(img, 4, {3, 3}, {2, 2}, "same", nullptr,
                                     true, glorot_uniform_initializer(),
                                     zeros_initializer(), {1, 1})
                .shape(),
            (Dims{U, 10, 10, 4})); // (5 - 1) * 2 + 3 - 2 + 1

  Tensor x3t = g.placeholder("x3t", DType::Float32, {U, 2, 3, 3, 2});
  Tensor t3 = layers::conv3d_transpose(x3t, 4, {2, 3, 3}, {2, 1, 2}, "same");
  EXPECT_EQ(t3.shape(), (Dims{U, 4, 3, 6, 4}));
  EXPECT_EQ(variableShape(g, "conv3d_transpose/kernel"), (Dims{2, 3, 3, 4, 2}));
  EXPECT_EQ(layers::conv3d_transpose(x3t, 4, {2, 3, 3}, {2, 1, 2}).shape(),
            (Dims{U, 4, 5, 7, 4})); // valid: 2 * 2 + 0, 3 + 2, 3 * 2 + 1

  Tensor d = layers::depthwise_conv2d(img, {3, 3}, {1, 1}, "valid", 2);
  EXPECT_EQ(d.shape(), (Dims{U, 3, 3, 6}));
  EXPECT_EQ(variableShape(g, "depthwise_conv2d/depthwise_kernel"),
            (Dims{3, 3, 3, 2}));
  EXPECT_EQ(variableShape(g, "depthwise_conv2d/bias"), (Dims{6}));

  Tensor s = layers::separable_conv2d(img, 7, {3, 3}, {1, 1}, "same", 2);
  EXPECT_EQ(s.shape(), (Dims{U, 5, 5, 7}));
  EXPECT_EQ(variableShape(g, "separable_conv2d/depthwise_kernel"),
            (Dims{3, 3, 3, 2}));
  EXPECT_EQ(variableShape(g, "separable_conv2d/pointwise_kernel"),
            (Dims{1, 1, 6, 7}));
  EXPECT_EQ(variableShape(g, "separable_conv2d/bias"), (Dims{7}));
  Tensor s1 = layers::separable_conv1d(x1, 6, 3, 2, "valid");
  EXPECT_EQ(s1.shape(), (Dims{U, 4, 6}));
  EXPECT_EQ(variableShape(g, "separable_conv1d/depthwise_kernel"),
            (Dims{3, 3, 1}));
  EXPECT_EQ(variableShape(g, "separable_conv1d/pointwise_kernel"),
            (Dims{1, 3, 6}));

  // channels_first: NCHW in and out, the same kernel layout.
  Tensor imgT = g.placeholder("imgT", DType::Float32, {U, 3, 5, 5});
  Tensor ct = layers::conv2d(imgT, 8, {3, 3}, {1, 1}, "valid", nullptr, true,
                             glorot_uniform_initializer(), zeros_initializer(),
                             {1, 1}, "", "channels_first");
  EXPECT_EQ(ct.shape(), (Dims{U, 8, 3, 3}));
  EXPECT_EQ(variableShape(g, "conv2d/kernel"), (Dims{3, 3, 3, 8}));
  EXPECT_EQ(layers::max_pooling2d(ct, {2, 2}, {1, 1}, "valid", "channels_first")
                .shape(),
            (Dims{U, 8, 2, 2}));

  expectGraphError(
      [&] {
        layers::conv2d(img, 8, {3, 3}, {1, 1}, "valid", nullptr, true,
                       glorot_uniform_initializer(), zeros_initializer(),
                       {1, 1}, "", "NCHW");
      },
      {"conv2d 'conv2d_1'", "input 'train/img' [?,5,5,3]",
       "data_format must be \"channels_last\" or \"channels_first\", got "
       "\"NCHW\""});
  expectGraphError([&] { layers::conv3d(img, 2, {2, 2, 2}); },
                   {"conv3d 'conv3d_1'", "input must be NDHWC (rank 5)"});
  expectGraphError([&] { layers::conv1d(x1, 2, 0); },
                   {"conv1d 'conv1d_1'", "kernel_size must be positive"});
  expectGraphError(
      [&] {
        layers::conv2d_transpose(img, 4, {3, 3}, {2, 2}, "same", nullptr, true,
                                 glorot_uniform_initializer(),
                                 zeros_initializer(), {2, 1});
      },
      {"conv2d_transpose", "output_padding must be 2 values each below"});
  expectGraphError([&] { layers::max_pooling3d(img, {2, 2, 2}, {2, 2, 2}); },
                   {"max_pooling3d", "input must have rank 5"});
  expectGraphError(
      [&] { layers::average_pooling1d(x1, 2, 2, "valid", "channels"); },
      {"average_pooling1d", "data_format must be"});
}

TEST(GraphBuilder, ModesShareVariables) {
  Graph g;
  auto body = [&] {
    Tensor x = g.placeholder("x", DType::Float32, {U, 4});
    Tensor h = layers::dense(x, 8, nn::relu);
    return layers::dense(h, 2);
  };
  Tensor train, eval;
  {
    auto m = g.mode_scope(ModeKeys::TRAIN);
    EXPECT_TRUE(g.is_training());
    train = body();
  }
  {
    auto m = g.mode_scope(ModeKeys::EVAL);
    EXPECT_FALSE(g.is_training());
    EXPECT_EQ(g.mode(), ModeKeys::EVAL);
    eval = body();
  }
  EXPECT_FALSE(g.mode());
  EXPECT_EQ(train.name(), "train/dense_1/BiasAdd");
  EXPECT_EQ(eval.name(), "eval/dense_1/BiasAdd");
  EXPECT_TRUE(g.has_node("train/x"));
  EXPECT_TRUE(g.has_node("eval/dense/kernel/read"));
  EXPECT_EQ(g.node("eval/dense/kernel/read").attr().at("variable").s(),
            "dense/kernel");
  graph::GraphDef def = g.graph_def();
  EXPECT_EQ(def.variable_size(), 4); // shared, not duplicated
  {
    auto m = g.mode_scope(ModeKeys::PREDICT);
    expectGraphError([&] { auto n = g.mode_scope(ModeKeys::EVAL); },
                     {"mode scopes do not nest"});
    expectGraphError(
        [&] { g.get_variable("dense/kernel", DType::Float32, {4, 9}); },
        {"get_variable 'dense/kernel'", "[4,9]", "[4,8]"});
  }
}

TEST(GraphBuilder, VariableErrorsAndReuse) {
  Graph g;
  Variable v = g.get_variable("w", DType::Float32, {2, 2});
  EXPECT_EQ(v.name(), "w");
  EXPECT_EQ(v.shape(), (Dims{2, 2}));
  EXPECT_TRUE(v.trainable());
  expectGraphError([&] { g.get_variable("w", DType::Float32, {2, 2}); },
                   {"get_variable 'w'", "already exists in this mode"});
  Variable same = g.get_variable("w", DType::Float32, {2, 2},
                                 zeros_initializer(), true, /*reuse=*/true);
  EXPECT_EQ(same.name(), "w");
  expectGraphError(
      [&] {
        g.get_variable("w", DType::Int32, {2, 2}, zeros_initializer(), true,
                       true);
      },
      {"requested i32 [2,2]", "existing variable is f32 [2,2]"});
  expectGraphError([&] { g.get_variable("u", DType::Float32, {U}); },
                   {"get_variable 'u'", "fully known"});
  {
    auto s = g.name_scope("outer");
    EXPECT_EQ(g.get_variable("w", DType::Float32, {1}).name(), "outer/w");
  }
  // Reads are cached per mode.
  Tensor r1 = v, r2 = v.read();
  EXPECT_EQ(r1.name(), "w/read");
  EXPECT_EQ(r1.name(), r2.name());
  EXPECT_EQ(r1.op(), "read_variable");

  Operation a = assign(v, v * 2.0);
  EXPECT_EQ(a.op(), "assign_variable");
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(g.node(a.name()).attr().at("variable").s(), "w");
  expectGraphError([&] { assign(v, g.constant({1, 2, 3}, {3})); },
                   {"assign_variable 'Assign", "does not match variable 'w'"});
  expectGraphError([&] { assign(v, g.constant(1.0, DType::Int64)); },
                   {"assign_variable", "i64", "f32"});
  expectGraphError([&] { nn::relu(a); }, {"relu", "has no value"});
  EXPECT_EQ(assign_add(v, g.constant({1}, {2, 2})).op(), "assign_variable");

  Variable gs = train::get_or_create_global_step(g);
  EXPECT_EQ(gs.name(), "global_step");
  EXPECT_EQ(gs.dtype(), DType::Int64);
  EXPECT_EQ(gs.shape(), Dims{});
  EXPECT_FALSE(gs.trainable());
  EXPECT_EQ(g.variable_def("global_step").initializer().type(), "zeros");
  EXPECT_EQ(g.global_step().name(), "global_step/read");
  EXPECT_FALSE(g.find_variable("nope"));
  EXPECT_TRUE(g.find_variable("outer/w"));
}

TEST(GraphBuilder, InitializersDescribed) {
  Graph g;
  g.set_seed(9);
  auto init = [&](const char *name, const Initializer &i) {
    g.get_variable(name, DType::Float32, {3}, i);
    return g.variable_def(name).initializer();
  };
  auto c = init("c", constant_initializer(0.5));
  EXPECT_EQ(c.type(), "constant");
  EXPECT_EQ(c.attr().at("value").f(), 0.5);
  auto ru = init("ru", random_uniform_initializer(-1, 1));
  EXPECT_EQ(ru.attr().at("minval").f(), -1);
  EXPECT_EQ(ru.attr().at("seed").i(), g.derive_seed("ru"));
  auto tn = init("tn", truncated_normal_initializer(0, 0.1, 5));
  EXPECT_EQ(tn.attr().at("seed").i(), g.derive_seed("tn", 5));
  auto vs = init("vs", variance_scaling_initializer(2.0, "fan_avg", "uniform"));
  EXPECT_EQ(vs.attr().at("mode").s(), "fan_avg");
  EXPECT_EQ(vs.attr().at("distribution").s(), "uniform");
  EXPECT_EQ(init("o", ones_initializer()).type(), "ones");
  EXPECT_EQ(init("rn", random_normal_initializer()).type(), "random_normal");
  EXPECT_EQ(init("gn", glorot_normal_initializer()).type(), "glorot_normal");
}

// --- Losses, optimizers, metrics, signatures ---------------------------------

TEST(GraphBuilder, LossesOptimizersMetrics) {
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 4});
  Tensor labels = g.placeholder("labels", DType::Int64, {U});
  Tensor logits = layers::dense(x, 3);
  Tensor loss = losses::sparse_softmax_cross_entropy(labels, logits);
  EXPECT_EQ(loss.name(), "sparse_softmax_cross_entropy_loss/value");
  EXPECT_EQ(loss.shape(), Dims{});
  EXPECT_EQ(loss.op(), "reduce_mean");
  Tensor oh = one_hot(labels, 3);
  EXPECT_EQ(losses::softmax_cross_entropy(oh, logits).shape(), Dims{});
  Tensor y = g.placeholder("y", DType::Int64, {U, 3});
  EXPECT_EQ(losses::sigmoid_cross_entropy(y, logits).shape(), Dims{});
  EXPECT_EQ(losses::mean_squared_error(y, logits).shape(), Dims{});
  expectGraphError(
      [&] { losses::sparse_softmax_cross_entropy(y, logits); },
      {"sparse_softmax_cross_entropy", "'dense/BiasAdd' [?,3] and 'y' [?,3]"});

  Operation op = train::AdamOptimizer(0.002).minimize(loss);
  EXPECT_EQ(op.name(), "Adam");
  EXPECT_EQ(op.op(), "minimize");
  const graph::NodeDef &n = g.node(op.name());
  EXPECT_EQ(n.input(0), loss.name());
  EXPECT_EQ(n.attr().at("optimizer").s(), "adam");
  const auto &hp = n.attr().at("hyperparameters").dict().entry();
  EXPECT_DOUBLE_EQ(hp.at("learning_rate").f(), 0.002);
  EXPECT_DOUBLE_EQ(hp.at("beta1").f(), 0.9);
  EXPECT_DOUBLE_EQ(hp.at("beta2").f(), 0.999);
  EXPECT_DOUBLE_EQ(hp.at("epsilon").f(), 1e-8);
  EXPECT_EQ(n.attr().count("var_list"), 0u);
  Variable kernel = *g.find_variable("dense/kernel");
  Operation sgd = train::GradientDescentOptimizer(0.1).minimize(loss, {kernel});
  EXPECT_EQ(g.node(sgd.name()).attr().at("optimizer").s(), "sgd");
  EXPECT_EQ(g.node(sgd.name()).attr().at("var_list").list().s(0),
            "dense/kernel");
  EXPECT_EQ(train::MomentumOptimizer(0.1, 0.9).kind(), "momentum");
  EXPECT_EQ(train::AdagradOptimizer(0.1).kind(), "adagrad");
  EXPECT_EQ(train::RMSPropOptimizer(0.1).kind(), "rmsprop");
  auto ftrl = train::FtrlOptimizer(0.1);
  EXPECT_EQ(ftrl.kind(), "ftrl");
  EXPECT_DOUBLE_EQ(ftrl.hyperparameters().at("learning_rate_power").f(), -0.5);
  expectGraphError(
      [&] { train::AdamOptimizer().minimize(logits); },
      {"minimize 'Adam_1'", "'dense/BiasAdd' [?,3]", "float scalar"});

  Metric acc = metrics::accuracy(labels, argmax(logits, 1));
  EXPECT_EQ(acc.value.name(), "accuracy/value");
  EXPECT_EQ(acc.value.shape(), Dims{});
  EXPECT_EQ(acc.value.dtype(), DType::Float32);
  ASSERT_EQ(acc.update_ops.size(), 2u);
  EXPECT_EQ(acc.update_ops[0].op(), "assign_variable");
  EXPECT_EQ(g.node(acc.update_ops[0].name()).attr().at("variable").s(),
            "accuracy/total");
  EXPECT_EQ(g.node(acc.update_ops[1].name()).attr().at("variable").s(),
            "accuracy/count");
  EXPECT_FALSE(g.find_variable("accuracy/total")->trainable());
  // Metric state is local (TF's LOCAL_VARIABLES): zeros, not trainable.
  EXPECT_TRUE(g.find_variable("accuracy/total")->local());
  EXPECT_TRUE(g.find_variable("accuracy/count")->local());
  EXPECT_EQ(g.variable_def("accuracy/total").initializer().type(), "zeros");
  EXPECT_FALSE(kernel.local());
  Metric acc2 =
      metrics::accuracy(labels, cast(argmax(logits, 1), DType::Int32));
  EXPECT_EQ(acc2.value.name(), "accuracy_1/value");
  Metric mean = metrics::mean(loss);
  EXPECT_EQ(g.node(mean.update_ops[1].name()).attr().at("variable").s(),
            "mean/count");
  expectGraphError(
      [&] {
        metrics::mean(logits, g.constant(std::vector<double>{1}, {1, 4}));
      },
      {"metrics::mean 'mean_1'", "weights", "broadcastable"});
}

TEST(GraphBuilder, LocalVariables) {
  Graph g;
  Variable w = g.get_variable("w", DType::Float32, {2});
  Variable t;
  {
    auto m = g.mode_scope(ModeKeys::EVAL);
    auto s = g.name_scope("auc");
    t = g.get_local_variable("true_positives", DType::Float32, {200});
  }
  EXPECT_EQ(t.name(), "auc/true_positives");
  EXPECT_TRUE(t.local());
  EXPECT_FALSE(t.trainable());
  EXPECT_FALSE(w.local());
  const graph::VariableDef &def = g.variable_def("auc/true_positives");
  EXPECT_TRUE(def.local());
  EXPECT_EQ(def.initializer().type(), "zeros");
  ASSERT_EQ(g.local_variables().size(), 1u);
  EXPECT_EQ(g.local_variables()[0].name(), "auc/true_positives");
  EXPECT_EQ(g.trainable_variables().size(), 1u);
  // Shared across modes like get_variable; a non-local one of the same name
  // cannot be asked for as local.
  {
    auto m = g.mode_scope(ModeKeys::TRAIN);
    EXPECT_EQ(g.get_local_variable("auc/true_positives", DType::Float32, {200})
                  .name(),
              "auc/true_positives");
    expectGraphError([&] { g.get_local_variable("w", DType::Float32, {2}); },
                     {"get_local_variable 'w'", "exists and is not local"});
    expectGraphError(
        [&] {
          g.get_local_variable("auc/true_positives", DType::Float32, {3},
                               /*reuse=*/true);
        },
        {"auc/true_positives", "[3]", "[200]"});
  }
  EXPECT_TRUE(g.graph_def().variable(1).local());
}

TEST(GraphBuilder, Signatures) {
  InputSpec inputs{{{"x", DType::Float32, {U, 4}}},
                   TensorSpec{"labels", DType::Int64, {U}}};
  auto model_fn = [](Graph &g, const TensorMap &features, const Tensor &labels,
                     ModeKeys mode) {
    Tensor logits = layers::dense(features["x"], 3);
    Signature s;
    s.predictions.set("classes", argmax(logits, 1));
    if (mode == ModeKeys::PREDICT) {
      EXPECT_FALSE(labels.valid());
      return s;
    }
    s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    if (mode == ModeKeys::TRAIN)
      s.train_op = train::GradientDescentOptimizer(0.5).minimize(s.loss);
    else
      s.metrics.push_back(
          {"accuracy", metrics::accuracy(labels, s.predictions["classes"])});
    (void)g;
    return s;
  };
  graph::GraphDef def = build_graph_def(inputs, model_fn, 17);
  EXPECT_EQ(def.seed(), 17);
  ASSERT_EQ(def.signature_size(), 3);
  const auto &train = def.signature().at("train");
  ASSERT_EQ(train.features_size(), 1);
  EXPECT_EQ(train.features(0).key(), "x");
  EXPECT_EQ(train.features(0).node(), "train/x");
  EXPECT_EQ(train.labels(0).key(), "labels");
  EXPECT_EQ(train.labels(0).node(), "train/labels");
  EXPECT_EQ(train.loss(), "train/sparse_softmax_cross_entropy_loss/value");
  EXPECT_EQ(train.train_op(), "train/GradientDescent");
  const auto &eval = def.signature().at("eval");
  ASSERT_EQ(eval.metrics_size(), 1);
  EXPECT_EQ(eval.metrics(0).key(), "accuracy");
  EXPECT_EQ(eval.metrics(0).value(), "eval/accuracy/value");
  EXPECT_EQ(eval.metrics(0).update_size(), 2);
  const auto &predict = def.signature().at("predict");
  EXPECT_EQ(predict.labels_size(), 0);
  EXPECT_EQ(predict.predictions(0).node(), "predict/ArgMax");
  EXPECT_TRUE(predict.loss().empty());
  // Two builds are identical.
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      def, build_graph_def(inputs, model_fn, 17)));

  // Signature errors.
  Graph g;
  Tensor x = g.placeholder("x", DType::Float32, {U, 4});
  Signature bad;
  bad.loss = x;
  expectGraphError([&] { g.set_signature(ModeKeys::EVAL, bad); },
                   {"signature 'eval'", "loss 'x'", "float scalar"});
  Signature notrain;
  expectGraphError([&] { g.set_signature(ModeKeys::TRAIN, notrain); },
                   {"signature 'train'", "loss and a train_op"});
  Signature ok;
  ok.predictions.set("y", x);
  g.set_signature(ModeKeys::PREDICT, ok);
  EXPECT_TRUE(g.has_signature(ModeKeys::PREDICT));
  expectGraphError([&] { g.set_signature(ModeKeys::PREDICT, ok); },
                   {"signature 'predict'", "already set"});
  Signature empty;
  empty.predictions.set("y", Tensor());
  expectGraphError([&] { g.set_signature(ModeKeys::EVAL, empty); },
                   {"prediction 'y'", "empty Tensor"});
  expectGraphError([&] { ok.predictions.at("nope"); },
                   {"no tensor with key 'nope'", "'y'"});
}
