//===- ExampleModelsTest.cpp - The seed models and graph files ----------===//

#include "lib/Graph/GraphIO.h"
#include "lib/Models/Models.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

using namespace estc;
using google::protobuf::util::MessageDifferencer;

namespace {
std::map<std::string, std::vector<int64_t>>
variables(const graph::GraphDef &def) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto &v : def.variable())
    out[v.name()] = {v.shape().dim().begin(), v.shape().dim().end()};
  return out;
}

const graph::NodeDef *findNode(const graph::GraphDef &def,
                               const std::string &name) {
  for (const auto &n : def.node())
    if (n.name() == name)
      return &n;
  return nullptr;
}

// Every input names an earlier node; every signature node exists.
void checkWellFormed(const graph::GraphDef &def) {
  std::set<std::string> seen;
  for (const auto &n : def.node()) {
    for (const auto &in : n.input())
      EXPECT_TRUE(seen.count(in)) << n.name() << " reads unknown " << in;
    EXPECT_TRUE(seen.insert(n.name()).second) << "duplicate " << n.name();
  }
  for (const auto &kv : def.signature()) {
    const auto &s = kv.second;
    for (const auto &b : s.features())
      EXPECT_TRUE(seen.count(b.node())) << b.node();
    for (const auto &b : s.labels())
      EXPECT_TRUE(seen.count(b.node())) << b.node();
    for (const auto &b : s.predictions())
      EXPECT_TRUE(seen.count(b.node())) << b.node();
    for (const auto &m : s.metrics()) {
      EXPECT_TRUE(seen.count(m.value()));
      for (const auto &u : m.update())
        EXPECT_TRUE(seen.count(u));
    }
    if (!s.loss().empty()) {
      EXPECT_TRUE(seen.count(s.loss()));
    }
    if (!s.train_op().empty()) {
      EXPECT_TRUE(seen.count(s.train_op()));
    }
  }
}

std::string tempPath(const std::string &suffix) {
  return testing::TempDir() + "estc_models_test_" + std::to_string(::getpid()) +
         suffix;
}
} // namespace

TEST(ExampleModels, Registry) {
  ASSERT_EQ(models::model_registry().size(), 4u);
  EXPECT_NE(models::find_model("mlp"), nullptr);
  EXPECT_NE(models::find_model("iris"), nullptr);
  EXPECT_NE(models::find_model("convnet"), nullptr);
  EXPECT_NE(models::find_model("linear"), nullptr);
  EXPECT_EQ(models::find_model("resnet"), nullptr);
}

TEST(ExampleModels, Mlp) {
  graph::GraphDef def = models::build_mlp(42);
  checkWellFormed(def);
  EXPECT_EQ(def.version(), graph::kGraphVersion);
  EXPECT_EQ(def.seed(), 42);
  auto vars = variables(def);
  EXPECT_EQ(vars["dense/kernel"], (std::vector<int64_t>{784, 256}));
  EXPECT_EQ(vars["dense/bias"], (std::vector<int64_t>{256}));
  EXPECT_EQ(vars["dense_1/kernel"], (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(vars["dense_2/kernel"], (std::vector<int64_t>{256, 10}));
  EXPECT_EQ(vars["global_step"], (std::vector<int64_t>{}));
  EXPECT_TRUE(vars.count("accuracy/total"));
  EXPECT_TRUE(vars.count("accuracy/count"));
  EXPECT_EQ(vars.size(), 9u);

  ASSERT_EQ(def.signature_size(), 3);
  const auto &train = def.signature().at("train");
  EXPECT_EQ(train.features(0).key(), "x");
  EXPECT_EQ(train.features(0).node(), "train/x");
  EXPECT_EQ(train.labels(0).node(), "train/labels");
  const graph::NodeDef *op = findNode(def, train.train_op());
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->op(), "minimize");
  EXPECT_EQ(op->attr().at("optimizer").s(), "adam");
  EXPECT_DOUBLE_EQ(
      op->attr().at("hyperparameters").dict().entry().at("learning_rate").f(),
      0.002);
  const graph::NodeDef *x = findNode(def, "train/x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->shape().dim(0), -1);
  EXPECT_EQ(x->shape().dim(1), 784);
  const graph::NodeDef *labels = findNode(def, "train/labels");
  EXPECT_EQ(labels->dtype(), graph::DT_INT64);

  const auto &predict = def.signature().at("predict");
  ASSERT_EQ(predict.predictions_size(), 2);
  EXPECT_EQ(predict.predictions(0).key(), "classes");
  EXPECT_EQ(findNode(def, predict.predictions(0).node())->op(), "argmax");
  EXPECT_EQ(predict.predictions(1).key(), "probabilities");
  EXPECT_EQ(findNode(def, predict.predictions(1).node())->op(), "softmax");
  EXPECT_EQ(predict.labels_size(), 0);

  const auto &eval = def.signature().at("eval");
  ASSERT_EQ(eval.metrics_size(), 1);
  EXPECT_EQ(eval.metrics(0).key(), "accuracy");
  EXPECT_FALSE(eval.loss().empty());
  EXPECT_TRUE(eval.train_op().empty());
}

TEST(ExampleModels, ConvNet) {
  graph::GraphDef def = models::build_convnet(7);
  checkWellFormed(def);
  auto vars = variables(def);
  EXPECT_EQ(vars["conv2d/kernel"], (std::vector<int64_t>{5, 5, 1, 20}));
  EXPECT_EQ(vars["conv2d/bias"], (std::vector<int64_t>{20}));
  EXPECT_EQ(vars["conv2d_1/kernel"], (std::vector<int64_t>{5, 5, 20, 40}));
  EXPECT_EQ(vars["dense/kernel"], (std::vector<int64_t>{640, 256}));
  EXPECT_EQ(vars["dense_1/kernel"], (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(vars["dense_2/kernel"], (std::vector<int64_t>{256, 10}));
  EXPECT_EQ(vars["dense_2/bias"], (std::vector<int64_t>{10}));
  // Dropout only in training.
  int trainDropouts = 0, otherDropouts = 0;
  for (const auto &n : def.node())
    if (n.op() == "dropout")
      (n.name().rfind("train/", 0) == 0 ? trainDropouts : otherDropouts)++;
  EXPECT_EQ(trainDropouts, 2);
  EXPECT_EQ(otherDropouts, 0);
  const graph::NodeDef *flat = findNode(def, "predict/flatten/Reshape");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->shape().dim(1), 640);
  const auto &predict = def.signature().at("predict");
  EXPECT_EQ(predict.features(0).node(), "predict/x");
  const graph::NodeDef *x = findNode(def, "predict/x");
  EXPECT_EQ(x->shape().dim_size(), 4);
}

TEST(ExampleModels, Linear) {
  graph::GraphDef def = models::build_linear();
  checkWellFormed(def);
  auto vars = variables(def);
  EXPECT_EQ(vars["linear/kernel"], (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(vars["linear/bias"], (std::vector<int64_t>{1}));
  const auto &train = def.signature().at("train");
  ASSERT_EQ(train.features_size(), 3);
  EXPECT_EQ(train.features(0).key(), "age");
  EXPECT_EQ(train.features(1).key(), "fare");
  EXPECT_EQ(train.features(2).key(), "pclass");
  EXPECT_EQ(findNode(def, train.train_op())->attr().at("optimizer").s(),
            "ftrl");
  bool sigmoidCE = false;
  for (const auto &n : def.node())
    sigmoidCE |= n.op() == "sigmoid_cross_entropy";
  EXPECT_TRUE(sigmoidCE);
  const auto &predict = def.signature().at("predict");
  ASSERT_EQ(predict.predictions_size(), 2);
  EXPECT_EQ(predict.predictions(0).key(), "probabilities");
  EXPECT_EQ(predict.predictions(1).key(), "classes");
  EXPECT_EQ(findNode(def, predict.predictions(1).node())->dtype(),
            graph::DT_INT64);
  EXPECT_EQ(def.signature().at("eval").metrics(0).key(), "accuracy");
}

TEST(ExampleModels, Deterministic) {
  EXPECT_TRUE(MessageDifferencer::Equals(models::build_convnet(3),
                                         models::build_convnet(3)));
  EXPECT_FALSE(MessageDifferencer::Equals(models::build_convnet(3),
                                          models::build_convnet(4)));
}

TEST(ExampleModelsGraphIO, RoundTripBinaryAndText) {
  graph::GraphDef def = models::build_convnet(11);
  for (const char *suffix : {".pb", ".pbtxt"}) {
    std::string path = tempPath(suffix);
    std::string error;
    ASSERT_TRUE(graph::writeGraph(path, def, error)) << error;
    graph::GraphDef back;
    ASSERT_TRUE(graph::readGraph(path, back, error)) << error;
    EXPECT_TRUE(MessageDifferencer::Equals(def, back)) << suffix;
    std::remove(path.c_str());
  }
  EXPECT_TRUE(graph::isTextGraphPath("a.pbtxt"));
  EXPECT_FALSE(graph::isTextGraphPath("a.pb"));
}

TEST(ExampleModelsGraphIO, Errors) {
  graph::GraphDef g;
  std::string error;
  std::string missing = tempPath("_missing.pb");
  EXPECT_FALSE(graph::readGraph(missing, g, error));
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;

  std::string garbage = tempPath("_garbage.pb");
  {
    std::ofstream out(garbage, std::ios::binary);
    out << "\xff\xff\xff\xff this is not a protobuf";
  }
  EXPECT_FALSE(graph::readGraph(garbage, g, error));
  EXPECT_NE(error.find(garbage), std::string::npos) << error;
  EXPECT_NE(error.find("not a valid binary GraphDef"), std::string::npos)
      << error;
  std::remove(garbage.c_str());

  std::string bytes = models::build_mlp().SerializeAsString();
  std::string truncated = tempPath("_truncated.pb");
  {
    std::ofstream out(truncated, std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  EXPECT_FALSE(graph::readGraph(truncated, g, error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  std::remove(truncated.c_str());

  std::string text = tempPath("_bad.pbtxt");
  {
    std::ofstream out(text);
    out << "node { name: \"x\" bogus: 1 }\n";
  }
  EXPECT_FALSE(graph::readGraph(text, g, error));
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
  std::remove(text.c_str());

  // Found by fuzzing (test/fuzz/regressions/graph_text): a text graph
  // with a string that is not UTF-8 was accepted, though its binary form
  // is not (proto3 strings); a carriage return in the text at fault made
  // the error two lines.
  EXPECT_FALSE(graph::parseGraph("version: 1 node { name: \"\\377\" }", true,
                                 "u.pbtxt", g, error));
  EXPECT_EQ(error, "u.pbtxt: not a valid text-format GraphDef: node.name "
                   "holds a string that is not UTF-8");
  EXPECT_FALSE(graph::parseGraph("version: 1\nnode \"a\rb\"\n", true,
                                 "cr.pbtxt", g, error));
  EXPECT_EQ(error, "cr.pbtxt: not a valid text-format GraphDef: line 2:6: "
                   "Expected \"{\", found \"\"a\\x0db\"\".");

  EXPECT_FALSE(graph::parseGraph("", false, "empty.pb", g, error));
  EXPECT_NE(error.find("empty"), std::string::npos) << error;
  EXPECT_FALSE(graph::parseGraph("version: 99", true, "v.pbtxt", g, error));
  EXPECT_NE(error.find("unsupported graph version 99"), std::string::npos)
      << error;
}
