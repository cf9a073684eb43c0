//===- KerasGraphTest.cpp - Graphs from Keras configs (KerasGraph.h) -----===//
//
// Configs written in the test (tf.keras 2's and Keras 3's node forms) and
// the tiny fixture tf.keras wrote (test/data/keras/tiny.keras): inputs and
// output names, variable names and order, shared layers sharing
// variables, nested models' names, trainable=False, writing values back;
// and every refusal, one line naming the layer, its class and the file.
// test/e2e/tf_keras_graph_compat.py checks the graphs' predictions against
// Keras.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasGraph.h"

#include <gtest/gtest.h>

#include <set>

using namespace estc;
using namespace estc::keras;

namespace {

std::string fixture(const std::string &name) {
  return std::string(ESTC_KERAS_FIXTURES) + "/" + name;
}

/// A model from a config's JSON text, without weights.
KerasModel fromConfig(const std::string &json) {
  KerasModel m;
  m.file = "model.keras";
  m.keras_version = "2.15.0";
  m.config.Parse(json.c_str(), json.size());
  EXPECT_FALSE(m.config.HasParseError()) << json;
  return m;
}

std::string inputLayer(const std::string &name, const std::string &shape) {
  return R"({"class_name": "InputLayer", "name": ")" + name +
         R"(", "config": {"name": ")" + name + R"(", "batch_input_shape": )" +
         shape + R"(, "dtype": "float32"}, "inbound_nodes": []})";
}

/// A Functional model x [None, 4] -> one layer (its class and config
/// fields) -> output.
KerasModel oneLayer(const std::string &cls, const std::string &fields,
                    const std::string &shape = "[null, 4]") {
  return fromConfig(
      R"({"class_name": "Functional", "config": {"name": "m", "layers": [)" +
      inputLayer("x", shape) + R"(, {"class_name": ")" + cls +
      R"(", "name": "l", "config": {"name": "l")" + fields +
      R"(}, "inbound_nodes": [[["x", 0, 0, {}]]]}],
      "input_layers": [["x", 0, 0]], "output_layers": [["l", 0, 0]]}})");
}

std::string buildError(const KerasModel &m) {
  try {
    Graph g;
    auto mode = g.mode_scope(ModeKeys::PREDICT);
    build_model(g, m);
  } catch (const KerasError &e) {
    return e.what();
  } catch (const GraphError &e) {
    return std::string("GraphError: ") + e.what();
  }
  return "";
}

/// The refusal is one line naming the file, the layer and its class, and
/// says `what`.
void expectRefusal(const KerasModel &m, const std::string &cls,
                   const std::string &what) {
  std::string message = buildError(m);
  EXPECT_NE(message.find("model.keras: layer 'l' (" + cls + "): "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

std::vector<std::string> namesOf(const std::vector<Variable> &vars) {
  std::vector<std::string> out;
  for (const Variable &v : vars)
    out.push_back(v.name());
  return out;
}

// Two inputs, a layer shared by both, a nested Sequential (built on its
// own Input: the config's node indices skip its first node) called twice,
// two outputs; tf.keras 2's node form.
const char *kTwoInputs = R"({"class_name": "Functional", "config": {
  "name": "two", "layers": [
    {"class_name": "InputLayer", "name": "a", "config": {"name": "a",
     "batch_input_shape": [null, 5], "dtype": "float32"}, "inbound_nodes": []},
    {"class_name": "InputLayer", "name": "b", "config": {"name": "b",
     "batch_input_shape": [null, 5], "dtype": "float32"}, "inbound_nodes": []},
    {"class_name": "Dense", "name": "shared", "config": {"name": "shared",
     "units": 3, "activation": "relu"},
     "inbound_nodes": [[["a", 0, 0, {}]], [["b", 0, 0, {}]]]},
    {"class_name": "Sequential", "name": "inner", "config": {"name": "inner",
     "layers": [
       {"class_name": "InputLayer", "config": {"name": "inner_input",
        "batch_input_shape": [null, 3], "dtype": "float32"}},
       {"class_name": "Dense", "config": {"name": "inner_dense",
        "units": 2}}]},
     "inbound_nodes": [[["shared", 0, 0, {}]], [["shared", 1, 0, {}]]]},
    {"class_name": "Add", "name": "add", "config": {"name": "add"},
     "inbound_nodes": [[["inner", 1, 0, {}], ["inner", 2, 0, {}]]]}],
  "input_layers": [["a", 0, 0], ["b", 0, 0]],
  "output_layers": [["add", 0, 0], ["shared", 1, 0]]}})";

TEST(KerasGraphTest, InputsOutputsSharedLayersAndNestedModels) {
  KerasModel m = fromConfig(kTwoInputs);
  std::vector<keras::InputSpec> inputs = model_inputs(m);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].name, "a");
  EXPECT_EQ(inputs[1].name, "b");
  EXPECT_EQ(inputs[0].shape, (Dims{-1, 5}));
  EXPECT_EQ(model_output_names(m), (std::vector<std::string>{"add", "shared"}));

  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  KerasGraph kg = build_model(g, m);
  EXPECT_EQ(kg.input_names, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(kg.outputs.size(), 2u);
  EXPECT_EQ(kg.outputs[0].shape(), (Dims{-1, 2}));
  EXPECT_EQ(kg.outputs[1].shape(), (Dims{-1, 3}));
  // One set of variables per layer, however often it is called; a nested
  // model's layers by their own names.
  EXPECT_EQ(
      namesOf(kg.variables),
      (std::vector<std::string>{"shared/kernel", "shared/bias",
                                "inner_dense/kernel", "inner_dense/bias"}));
  EXPECT_EQ(g.trainable_variables().size(), 4u);
}

TEST(KerasGraphTest, Keras3NodeForm) {
  KerasModel m = fromConfig(R"({"class_name": "Functional", "config": {
    "name": "k3", "layers": [
      {"class_name": "InputLayer", "name": "x", "config": {"name": "x",
       "batch_shape": [null, 4], "dtype": "float32"}, "inbound_nodes": []},
      {"class_name": "Dense", "name": "d", "config": {"name": "d",
       "units": 2}, "inbound_nodes": [{"args": [{"class_name":
       "__keras_tensor__", "config": {"shape": [null, 4], "dtype":
       "float32", "keras_history": ["x", 0, 0]}}], "kwargs": {}}]},
      {"class_name": "Concatenate", "name": "c", "config": {"name": "c",
       "axis": -1}, "inbound_nodes": [{"args": [[
         {"class_name": "__keras_tensor__", "config": {"keras_history":
          ["d", 0, 0]}},
         {"class_name": "__keras_tensor__", "config": {"keras_history":
          ["x", 0, 0]}}]], "kwargs": {}}]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["c", 0, 0]]}})");
  m.keras_version = "3.5.0";
  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  KerasGraph kg = build_model(g, m);
  ASSERT_EQ(kg.outputs.size(), 1u);
  EXPECT_EQ(kg.outputs[0].shape(), (Dims{-1, 6}));
  EXPECT_EQ(kg.output_names, (std::vector<std::string>{"c"}));
}

TEST(KerasGraphTest, ASequenceOfAnyLengthIsASequenceDimPlaceholder) {
  KerasModel m = oneLayer("Embedding", R"(, "input_dim": 10, "output_dim": 3,
                          "mask_zero": true)",
                          "[null, null]");
  std::vector<keras::InputSpec> inputs = model_inputs(m);
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_TRUE(inputs[0].sequence_dim);
  EXPECT_EQ(inputs[0].shape, (Dims{-1, -1}));
  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  KerasGraph kg = build_model(g, m);
  EXPECT_EQ(kg.outputs[0].shape(), (Dims{-1, -1, 3}));
  EXPECT_FALSE(
      model_inputs(oneLayer("Dense", R"(, "units": 2)"))[0].sequence_dim);
}

TEST(KerasGraphTest, TrainableFalseLayersAndModels) {
  KerasModel m = oneLayer("Dense", R"(, "units": 2, "trainable": false)");
  Graph g;
  auto mode = g.mode_scope(ModeKeys::TRAIN);
  KerasGraph kg = build_model(g, m);
  ASSERT_EQ(kg.variables.size(), 2u);
  for (const Variable &v : kg.variables)
    EXPECT_FALSE(v.trainable()) << v.name();

  // The nested Sequential of kTwoInputs frozen: its layers' variables.
  std::string frozen = kTwoInputs;
  std::string key = R"("config": {"name": "inner",)";
  frozen.replace(frozen.find(key), key.size(),
                 R"("config": {"name": "inner", "trainable": false,)");
  KerasModel f = fromConfig(frozen);
  Graph g2;
  auto mode2 = g2.mode_scope(ModeKeys::TRAIN);
  KerasGraph kg2 = build_model(g2, f);
  EXPECT_EQ(namesOf(g2.trainable_variables()),
            (std::vector<std::string>{"shared/kernel", "shared/bias"}));
}

TEST(KerasGraphTest, TheFixtureItsWeightsAndWritingBack) {
  KerasModel m = load_model(fixture("tiny.keras"));
  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  KerasGraph kg = build_model(g, m);
  // Keras's order, the file's weights' names without ":0".
  std::vector<std::string> want;
  for (const Weight *w : m.weights())
    want.push_back(w->name.substr(0, w->name.size() - 2));
  EXPECT_EQ(namesOf(kg.variables), want);
  std::map<std::string, TensorValue> values = variable_values(m);
  ASSERT_EQ(values.size(), want.size());
  for (const Variable &v : kg.variables)
    EXPECT_EQ(values.at(v.name()).shape, v.shape()) << v.name();

  // Writing back: every value given is set; a wrong shape is one line.
  std::map<std::string, TensorValue> next = values;
  for (auto &[name, value] : next) {
    std::vector<float> f(static_cast<size_t>(value.num_elements()), 2.5f);
    value = TensorValue::of(value.shape, f);
  }
  EXPECT_EQ(set_variable_values(m, next), want.size());
  EXPECT_EQ(m.weights()[0]->value.element(0), 2.5);
  std::map<std::string, TensorValue> bad;
  bad[want[0]] = TensorValue::of<float>({1}, {1.0f});
  try {
    set_variable_values(m, bad);
    FAIL() << "no error";
  } catch (const KerasError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("tiny.keras: weight '" + want[0] + ":0' has shape"),
              std::string::npos)
        << message;
  }
}

// Keras's regularizers as regularization losses (Keras's formulas: L2 is
// l2 * sum(w^2), no half), one per weight, and the activity regularizer's
// per call of the layer.
TEST(KerasGraphTest, RegularizersAndConstraintsOfTheConfig) {
  KerasModel m = oneLayer("Dense", R"(, "units": 2,
      "kernel_regularizer": {"class_name": "L1L2",
                             "config": {"l1": 0.5, "l2": 0.25}},
      "bias_regularizer": {"class_name": "L2", "config": {"l2": 2.0}},
      "activity_regularizer": {"class_name": "L1", "config": {"l1": 1.0}},
      "kernel_constraint": {"class_name": "NonNeg", "config": {}})");
  Graph g;
  auto mode = g.mode_scope(ModeKeys::TRAIN);
  KerasGraph kg = build_model(g, m);
  std::vector<Tensor> terms = g.get_collection("regularization_losses");
  ASSERT_EQ(terms.size(), 3u); // kernel, bias, the output's activity
  ASSERT_EQ(kg.variables.size(), 2u);
  for (const Tensor &t : terms) {
    EXPECT_EQ(t.dtype(), DType::Float32);
    EXPECT_TRUE(t.shape().empty()) << shape::toString(t.shape());
  }
  // (Their values and the constraint's effect against tf.keras 2.15:
  // keras.tf_estimator_compat's "regularized" cases.)
}

TEST(KerasGraphTest, AWeightWhoseShapeDisagreesWithTheConfig) {
  KerasModel m = oneLayer("Dense", R"(, "units": 2)");
  LayerWeights l;
  l.layer = "l";
  l.class_name = "Dense";
  l.weights.push_back(
      Weight{"l/kernel:0", "",
             TensorValue::of<float>({3, 2}, std::vector<float>(6, 0.0f))});
  m.layers.push_back(l);
  expectRefusal(m, "Dense",
                "weight 'l/kernel:0' has shape [3,2] in the file, the layer "
                "needs [4,2]");
}

TEST(KerasGraphTest, RefusalsAreOneLineNamingLayerClassAndFile) {
  expectRefusal(oneLayer("Lambda", R"(, "function": "x")"), "Lambda",
                "a Lambda layer (Python code) cannot be built");
  expectRefusal(oneLayer("Frobnicate", ""), "Frobnicate",
                "not a layer class estc can build");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "activation": "swoosh")"),
                "Dense", "activation 'swoosh' is not supported");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "kernel_initializer":
                {"class_name": "Identity", "config": {}})"),
                "Dense", "initializer 'Identity' is not supported");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "kernel_regularizer":
                {"class_name": "OrthogonalRegularizer", "config": {}})"),
                "Dense",
                "'kernel_regularizer': regularizer 'OrthogonalRegularizer' is "
                "not supported (L1, L2, L1L2)");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "bias_constraint":
                {"class_name": "Clip", "config": {}})"),
                "Dense",
                "'bias_constraint': constraint 'Clip' is not supported");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "kernel_regularizer":
                {"class_name": "L2", "config": {"l2": -1}})"),
                "Dense", "'kernel_regularizer': a negative factor");
  // A Bidirectional's wrapped layer's regularizers: refused, naming it.
  std::string wrapped = buildError(oneLayer("Bidirectional", R"(, "layer":
      {"class_name": "LSTM", "config": {"name": "d", "units": 2,
       "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.01}}}})",
                                            "[null, 5, 3]"));
  EXPECT_NE(wrapped.find("layer 'd' (LSTM): 'kernel_regularizer' is not "
                         "supported (the regularizers and constraints of a "
                         "Bidirectional's layer are not built)"),
            std::string::npos)
      << wrapped;
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "dtype":
                "mixed_float16")"),
                "Dense", "dtype 'mixed_float16' is not supported");
  expectRefusal(oneLayer("Conv2D", R"(, "filters": 2, "kernel_size": 3,
                "data_format": "channels_first")",
                         "[null, 8, 8, 3]"),
                "Conv2D", "data_format 'channels_first' is not supported");
  expectRefusal(oneLayer("Conv2D", R"(, "filters": 2, "kernel_size": 3,
                "strides": 2, "dilation_rate": 2)",
                         "[null, 8, 8, 3]"),
                "Conv2D", "dilation_rate > 1 with strides > 1");
  expectRefusal(oneLayer("Conv2D", R"(, "filters": 2, "kernel_size": 3,
                "groups": 2)",
                         "[null, 8, 8, 4]"),
                "Conv2D", "groups other than 1");
  expectRefusal(oneLayer("Conv2D", R"(, "filters": 2, "kernel_size": 3)"),
                "Conv2D", "the input must have rank 4");
  expectRefusal(
      oneLayer("LSTM", R"(, "units": 2, "stateful": true)", "[null, 5, 3]"),
      "LSTM", "stateful is not supported");
  expectRefusal(oneLayer("Bidirectional", R"(, "layer": {"class_name":
                "Dense", "config": {"name": "d", "units": 2}})",
                         "[null, 5, 3]"),
                "Bidirectional", "wrapping a Dense is not supported");
  expectRefusal(
      oneLayer("BatchNormalization", R"(, "axis": [1, 2])", "[null, 5, 3]"),
      "BatchNormalization", "axis must be one axis");
  expectRefusal(oneLayer("Normalization", R"(, "invert": true)"),
                "Normalization", "invert is not supported");
  expectRefusal(oneLayer("Reshape", R"(, "target_shape": [3, -1])"), "Reshape",
                "cannot reshape [?,4] to [3, -1]");
  expectRefusal(oneLayer("Dense", R"(, "units": 0)"), "Dense",
                "units must be positive");
  expectRefusal(oneLayer("Dense", R"(, "units": 2, "lora_rank": 4)"), "Dense",
                "'lora_rank' is not supported");
  // A custom class names its registered name.
  KerasModel custom = oneLayer("MyLayer", "");
  std::string json = R"({"class_name": "Functional", "config": {"name": "m",
    "layers": [)" + inputLayer("x", "[null, 4]") +
                     R"(, {"class_name": "MyLayer", "name": "l",
    "registered_name": "Custom>MyLayer", "config": {"name": "l"},
    "inbound_nodes": [[["x", 0, 0, {}]]]}], "input_layers": [["x", 0, 0]],
    "output_layers": [["l", 0, 0]]}})";
  expectRefusal(fromConfig(json), "MyLayer",
                "a custom class ('Custom>MyLayer') cannot be built");
}

TEST(KerasGraphTest, AShapeMismatchIsOneLineNamingTheLayer) {
  // Add of [None, 3] and [None, 4].
  KerasModel m = fromConfig(R"({"class_name": "Functional", "config": {
    "name": "m", "layers": [
      {"class_name": "InputLayer", "name": "x", "config": {"name": "x",
       "batch_input_shape": [null, 4], "dtype": "float32"},
       "inbound_nodes": []},
      {"class_name": "Dense", "name": "d", "config": {"name": "d",
       "units": 3}, "inbound_nodes": [[["x", 0, 0, {}]]]},
      {"class_name": "Add", "name": "l", "config": {"name": "l"},
       "inbound_nodes": [[["d", 0, 0, {}], ["x", 0, 0, {}]]]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["l", 0, 0]]}})");
  std::string message = buildError(m);
  EXPECT_EQ(message.rfind("model.keras: layer 'l' (Add): ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;

  // Inputs that do not fit the model.
  KerasModel d = oneLayer("Dense", R"(, "units": 2)");
  Graph g;
  auto mode = g.mode_scope(ModeKeys::PREDICT);
  Tensor x = g.placeholder("x", DType::Float32, {-1, 5});
  try {
    build_model(g, d, {x});
    FAIL() << "no error";
  } catch (const KerasError &e) {
    EXPECT_STREQ(e.what(),
                 "model.keras: input 'x' must have shape [?,4], got [?,5]");
  }
}

TEST(KerasGraphTest, BrokenConfigs) {
  auto expectModelError = [](const std::string &json, const std::string &what) {
    KerasModel m = fromConfig(json);
    std::string message = buildError(m);
    EXPECT_NE(message.find(what), std::string::npos) << message;
    EXPECT_EQ(message.rfind("model.keras: ", 0), 0u) << message;
  };
  expectModelError(R"({"class_name": "Functional", "config": {"layers": [],
    "input_layers": [], "output_layers": [["nope", 0, 0]]}})",
                   "layer 'nope', which the model does not have");
  expectModelError(
      R"({"class_name": "Functional", "config": {"layers": [)" +
          inputLayer("x", "[null, 2]") +
          R"(, {"class_name": "Add", "name": "p", "config": {"name": "p"},
          "inbound_nodes": [[["q", 0, 0, {}], ["x", 0, 0, {}]]]},
          {"class_name": "Add", "name": "q", "config": {"name": "q"},
          "inbound_nodes": [[["p", 0, 0, {}], ["x", 0, 0, {}]]]}],
          "input_layers": [["x", 0, 0]], "output_layers": [["p", 0, 0]]}})",
      "(a cycle)");
  expectModelError(R"({"class_name": "Functional", "config": {"layers": [
    {"class_name": "InputLayer", "name": "x", "config": {"name": "x",
     "batch_input_shape": [null, 3], "sparse": true}, "inbound_nodes": []}],
    "input_layers": [["x", 0, 0]], "output_layers": [["x", 0, 0]]}})",
                   "layer 'x' (InputLayer): a sparse input is not supported");
  expectModelError(R"({"class_name": "Subclassed", "config": {}})",
                   "model class 'Subclassed' is neither Functional nor "
                   "Sequential");
  KerasModel none;
  none.file = "w.weights.h5";
  try {
    model_inputs(none);
    FAIL() << "no error";
  } catch (const KerasError &e) {
    EXPECT_STREQ(e.what(), "w.weights.h5: the file has no model config (a "
                           "weights-only file)");
  }
}

} // namespace
