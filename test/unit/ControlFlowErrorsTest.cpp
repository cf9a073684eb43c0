//===- ControlFlowErrorsTest.cpp - One line per control-flow mistake -----===//
//
// Every error the control-flow builders (lib/Graph/ControlFlow.h) and the
// importer's function bodies (compiler/Import/GraphImporter.cpp) report:
// one line naming the node or function at fault.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipelines/Registration.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/Ops.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace estc {
namespace {

/// The message `f` throws ("" when it throws none).
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

std::string importError(const graph::GraphDef &def) {
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  std::string error;
  auto module = importGraph(def, context, "model.pb", error);
  return module ? "" : error;
}

/// A predict graph y = scan(running sum over x's rows).
graph::GraphDef scanGraph() {
  Graph g;
  auto m = g.mode_scope(ModeKeys::PREDICT);
  Tensor x = g.placeholder("x", DType::Float32, {4, 3});
  ScanResult r = scan(
      [](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
        return ScanStep{{add(c[0], in[0])}, {}};
      },
      {g.constant(std::vector<double>(3, 0.0), {3})}, {x});
  Signature s;
  s.features.set("x", x);
  s.predictions.set("y", r.carried[0]);
  g.set_signature(ModeKeys::PREDICT, s);
  return g.graph_def();
}

TEST(ControlFlowErrors, BuildersNameTheNodeAndTheMistake) {
  Graph g;
  auto m = g.mode_scope(ModeKeys::PREDICT);
  Tensor x = g.placeholder("x", DType::Float32, {4, 3});
  Tensor zero = g.constant(std::vector<double>(3, 0.0), {3});
  auto sum = [](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
    return ScanStep{{add(c[0], in[0])}, {}};
  };
  EXPECT_EQ(errorOf([&] { scan(sum, {zero}, {}); }),
            "scan: no input tensor to find the graph from");
  EXPECT_EQ(errorOf([&] { scan(sum, {zero}, {g.constant(1.0)}); }),
            "scan 'predict/scan': sequence 'predict/Const_1' is a scalar; a "
            "sequence has its steps in dimension 0");
  EXPECT_EQ(
      errorOf([&] {
        scan(sum, {zero}, {x, g.placeholder("z", DType::Float32, {5, 3})});
      }),
      "scan 'predict/scan': sequences have 4 and 5 steps ('predict/z' [5,3]); "
      "all need the same");
  EXPECT_EQ(errorOf([&] {
              scan([](const std::vector<Tensor> &,
                      const std::vector<Tensor> &) { return ScanStep{}; },
                   {zero}, {x});
            }),
            "scan 'predict/scan': the body returns 0 carried values for 1 "
            "initial ones");
  EXPECT_EQ(
      errorOf([&] {
        scan(
            [](const std::vector<Tensor> &c, const std::vector<Tensor> &) {
              return ScanStep{{reduce_sum(c[0])}, {}};
            },
            {zero}, {x});
      }),
      "scan body's carried 'predict/scan': value #0 is f32 [] but must be f32 "
      "[3]");
  EXPECT_EQ(
      errorOf([&] {
        g.placeholder("inner", DType::Float32, {3});
        scan(
            [&](const std::vector<Tensor> &c, const std::vector<Tensor> &) {
              g.placeholder("p", DType::Float32, {3});
              return ScanStep{c, {}};
            },
            {zero}, {x});
      }),
      "placeholder 'predict/scan/p': a model input cannot be created "
      "inside a loop body or branch");
  // A failed builder leaves the graph as it was: the next scan gets the
  // name (and body function) the failed ones would have had. A tensor of a
  // finished body cannot be used outside it.
  Tensor inside;
  scan(
      [&](const std::vector<Tensor> &c, const std::vector<Tensor> &in) {
        inside = add(c[0], in[0]);
        return ScanStep{{inside}, {}};
      },
      {zero}, {x});
  EXPECT_NE(errorOf([&] { add(inside, zero); })
                .find("was built inside the body of 'predict/scan/body' and "
                      "cannot be used outside it"),
            std::string::npos);
  Signature bad;
  bad.predictions.set("y", inside);
  EXPECT_NE(errorOf([&] { g.set_signature(ModeKeys::PREDICT, bad); })
                .find("is inside a loop body or branch; bind what the "
                      "control-flow op returns"),
            std::string::npos);

  auto one = [&] { return std::vector<Tensor>{zero}; };
  EXPECT_EQ(errorOf([&] { cond(x, one, one); }),
            "cond 'predict/cond': the predicate 'predict/x' must be a bool "
            "scalar, got f32 [4,3]");
  EXPECT_EQ(errorOf([&] {
              cond(less(g.constant(1.0), 2.0), one,
                   [] { return std::vector<Tensor>{}; });
            }),
            "cond 'predict/cond': the true branch returns 1 values, the "
            "false branch 0");
  auto loopCond = [](const std::vector<Tensor> &v) {
    return less(reduce_sum(v[0]), 1.0);
  };
  auto loopBody = [](const std::vector<Tensor> &v) { return v; };
  EXPECT_EQ(errorOf([&] { while_loop(loopCond, loopBody, {zero}, -1); }),
            "while_loop 'predict/while': maximum_iterations must be >= 0, got "
            "-1");
  EXPECT_EQ(
      errorOf([&] {
        while_loop([](const std::vector<Tensor> &v) { return v[0]; }, loopBody,
                   {zero});
      }),
      "while_loop 'predict/while': the condition must be a bool scalar, got "
      "f32 [3]");
}

TEST(ControlFlowErrors, ImporterNamesTheFunctionAndTheNode) {
  graph::GraphDef good = scanGraph();
  ASSERT_EQ(importError(good), "");

  graph::GraphDef def = good;
  (*def.mutable_node(def.node_size() - 2)->mutable_attr())["body"].set_s(
      "nowhere");
  EXPECT_EQ(importError(def),
            "model.pb: node 'predict/scan' (scan): calls function 'nowhere', "
            "which the graph does not define");

  def = good;
  *def.add_function() = def.function(0);
  EXPECT_EQ(importError(def),
            "model.pb: function 'predict/scan/body' is defined twice");

  def = good;
  graph::FunctionDef *body = def.mutable_function(0);
  for (graph::NodeDef &n : *body->mutable_node())
    if (n.op() == "add")
      n.set_input(0, "predict/x");
  EXPECT_NE(importError(def).find(
                "is not a node of function 'predict/scan/body' (a value from "
                "outside is passed in as a capture)"),
            std::string::npos);

  def = good;
  body = def.mutable_function(0);
  for (graph::NodeDef &n : *body->mutable_node())
    if (n.op() == "arg")
      (*n.mutable_attr())["index"].set_i(7);
  EXPECT_NE(importError(def).find("attribute 'index' must be an int in [0, "),
            std::string::npos);

  def = good;
  graph::NodeDef *read = def.mutable_function(0)->add_node();
  read->set_name("predict/scan/read");
  read->set_op("read_variable");
  EXPECT_NE(importError(def).find("cannot be inside function "
                                  "'predict/scan/body' (a loop body or "
                                  "branch)"),
            std::string::npos);
}

} // namespace
} // namespace estc
