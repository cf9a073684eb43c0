//===- keras_tool.cpp - Keras models built by estc, for the TF oracle ----===//
//
// test/e2e/tf_keras_graph_compat.py saves Keras models (.keras, .h5) and
// writes a case: the model file, a batch of inputs. This tool loads the
// file (lib/Keras), builds its graph (KerasGraph.h) in PREDICT, compiles it
// with the JIT, sets every variable from the file's weights
// (variable_values) and prints the model's outputs, which the script
// compares with Keras's predictions.
//
// usage: keras_tool CASE_FILE
// CASE_FILE lines: `model PATH` (several: one model's files in several
// forms), `batch B`, `length T` (the sequence length of inputs whose
// dimension 1 is None), `input NAME V...` (one per
// model input, flattened, row major), `training 0|1` (Keras's training
// argument: dropout, batch statistics; default 0).
// Output: `inputs NAME...`, `outputs NAME...`, then per output `output NAME
// V...`, and `variables N` (the number of variables the graph has).
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Keras/KerasGraph.h"

#include <google/protobuf/util/message_differencer.h>

#include <cstring>
#include <iostream>
#include <map>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::vector<std::string> models;
  int64_t batch = 1;
  int64_t length = 0;
  bool training = false;
  std::map<std::string, std::vector<double>> inputs;
};

Case readCase(const std::string &path) {
  Case k;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "model")
      k.models.push_back(line.next<std::string>());
    else if (key == "batch")
      k.batch = line.next<int64_t>();
    else if (key == "length")
      k.length = line.next<int64_t>();
    else if (key == "training")
      k.training = line.next<int>() != 0;
    else if (key == "input") {
      std::string name = line.next<std::string>();
      k.inputs[name] = line.numbers();
    } else
      line.unknown();
  });
  if (k.models.empty())
    die("the case names no model");
  return k;
}

/// One file's model: read, its graph built in PREDICT.
struct Built {
  keras::KerasModel model;
  std::vector<keras::InputSpec> specs;
  std::vector<std::string> outputNames;
  graph::GraphDef def;
  size_t variableCount = 0;
};

Built build(const std::string &path, bool training) {
  Built b;
  try {
    b.model = keras::load_model(path);
    b.specs = keras::model_inputs(b.model);
    b.outputNames = keras::model_output_names(b.model);
    InputSpec inputs;
    for (const keras::InputSpec &s : b.specs)
      inputs.features.push_back(TensorSpec{.key = s.name,
                                           .dtype = s.dtype,
                                           .shape = s.shape,
                                           .sequence_dim = s.sequence_dim});
    Graph g;
    build_mode(
        g, ModeKeys::PREDICT, inputs,
        [&](Graph &graph, const TensorMap &features, const Tensor &, ModeKeys) {
          std::vector<Tensor> in;
          for (const keras::InputSpec &s : b.specs)
            in.push_back(features[s.name]);
          keras::BuildOptions options;
          options.training = training;
          keras::KerasGraph kg =
              keras::build_model(graph, b.model, in, options);
          b.variableCount = kg.variables.size();
          Signature sig;
          for (size_t i = 0; i < kg.outputs.size(); ++i)
            sig.predictions.set(kg.output_names[i], kg.outputs[i]);
          return sig;
        });
    b.def = g.graph_def();
  } catch (const std::exception &e) {
    die(e.what());
  }
  return b;
}

/// Sets the variables from the file's weights, runs @predict on the case's
/// inputs and prints the outputs.
void predict(JitModel &jit, const Built &b, const Case &k) {
  jit.run(jit.function_index("init"));
  for (const auto &[name, value] : keras::variable_values(b.model)) {
    int v = jit.find_variable(name);
    if (v < 0)
      die("the graph has no variable '" + name + "' for the file's weight");
    if (static_cast<size_t>(jit.variable_bytes(v)) != value.data.size())
      die("variable '" + name + "' has " +
          std::to_string(jit.variable_bytes(v)) + " bytes, the weight " +
          std::to_string(value.data.size()));
    std::memcpy(jit.variable_data(v), value.data.data(), value.data.size());
  }
  jit.set_batch(k.batch);
  if (k.length > 0)
    jit.set_sequence_length(k.length);
  int fn = functionOrDie(jit, "predict");
  for (const keras::InputSpec &s : b.specs) {
    auto it = k.inputs.find(s.name);
    if (it == k.inputs.end())
      die("the case has no input '" + s.name + "'");
    feed(jit, fn, "features/" + s.name, it->second);
  }
  jit.run(fn);
  std::cout << "model " << b.model.file << "\ninputs";
  for (const keras::InputSpec &s : b.specs)
    std::cout << " " << s.name;
  std::cout << "\noutputs";
  for (const std::string &n : b.outputNames)
    std::cout << " " << n;
  std::cout << "\n";
  for (const std::string &n : b.outputNames) {
    int out = jit.find_output(fn, "predictions/" + n);
    if (out < 0)
      die("@predict has no output 'predictions/" + n + "'");
    const rt::TensorSpec &spec = jit.spec().functions[fn].outputs[out];
    if (spec.dtype != rt::DType::F32)
      die("output '" + n + "' is not float32");
    int64_t count = 1;
    for (int32_t d = 0; d < spec.rank; ++d)
      count *= spec.shape[d] >= 0 ? spec.shape[d] : d == 0 ? k.batch : k.length;
    printValues("output " + n, output(jit, fn, "predictions/" + n), count);
  }
  std::cout << "variables " << b.variableCount << "\n";
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(initTool("keras_tool", argc, argv, "keras_tool CASE_FILE"));
  // The files of one model in several forms give one graph: compiled once.
  graph::GraphDef compiledGraph;
  std::unique_ptr<JitModel> compiled;
  for (const std::string &path : k.models) {
    Built b = build(path, k.training);
    if (!compiled || !google::protobuf::util::MessageDifferencer::Equals(
                         b.def, compiledGraph)) {
      writeGraphIfAsked("ESTC_KERAS_TOOL_GRAPH", b.def);
      compiled = compileOrDie(b.def, "KerasModel");
      compiledGraph = b.def;
    }
    predict(*compiled, b, k);
  }
  return 0;
}
