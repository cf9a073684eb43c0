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
// CASE_FILE lines: `model PATH`, `batch B`, `input NAME V...` (one per
// model input, flattened, row major), `training 0|1` (Keras's training
// argument: dropout, batch statistics; default 0).
// Output: `inputs NAME...`, `outputs NAME...`, then per output `output NAME
// V...`, and `variables N` (the number of variables the graph has).
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Keras/KerasGraph.h"

#include <cstring>
#include <iostream>
#include <map>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::string model;
  int64_t batch = 1;
  bool training = false;
  std::map<std::string, std::vector<double>> inputs;
};

Case readCase(const std::string &path) {
  Case k;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "model")
      k.model = line.next<std::string>();
    else if (key == "batch")
      k.batch = line.next<int64_t>();
    else if (key == "training")
      k.training = line.next<int>() != 0;
    else if (key == "input") {
      std::string name = line.next<std::string>();
      k.inputs[name] = line.numbers();
    } else
      line.unknown();
  });
  if (k.model.empty())
    die("the case names no model");
  return k;
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(initTool("keras_tool", argc, argv, "keras_tool CASE_FILE"));
  keras::KerasModel model;
  std::vector<keras::InputSpec> specs;
  std::vector<std::string> outputNames;
  graph::GraphDef def;
  size_t variableCount = 0;
  try {
    model = keras::load_model(k.model);
    specs = keras::model_inputs(model);
    outputNames = keras::model_output_names(model);
    InputSpec inputs;
    for (const keras::InputSpec &s : specs)
      inputs.features.push_back(TensorSpec{s.name, s.dtype, s.shape});
    Graph g;
    build_mode(
        g, ModeKeys::PREDICT, inputs,
        [&](Graph &graph, const TensorMap &features, const Tensor &, ModeKeys) {
          std::vector<Tensor> in;
          for (const keras::InputSpec &s : specs)
            in.push_back(features[s.name]);
          keras::BuildOptions options;
          options.training = k.training;
          keras::KerasGraph kg = keras::build_model(graph, model, in, options);
          variableCount = kg.variables.size();
          Signature sig;
          for (size_t i = 0; i < kg.outputs.size(); ++i)
            sig.predictions.set(kg.output_names[i], kg.outputs[i]);
          return sig;
        });
    def = g.graph_def();
  } catch (const std::exception &e) {
    die(e.what());
  }
  writeGraphIfAsked("ESTC_KERAS_TOOL_GRAPH", def);
  std::unique_ptr<JitModel> compiled = compileOrDie(def, "KerasModel");
  JitModel &jit = *compiled;
  jit.run(jit.function_index("init"));
  for (const auto &[name, value] : keras::variable_values(model)) {
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
  int fn = functionOrDie(jit, "predict");
  for (const keras::InputSpec &s : specs) {
    auto it = k.inputs.find(s.name);
    if (it == k.inputs.end())
      die("the case has no input '" + s.name + "'");
    feed(jit, fn, "features/" + s.name, it->second);
  }
  jit.run(fn);
  std::cout << "inputs";
  for (const keras::InputSpec &s : specs)
    std::cout << " " << s.name;
  std::cout << "\noutputs";
  for (const std::string &n : outputNames)
    std::cout << " " << n;
  std::cout << "\n";
  for (const std::string &n : outputNames) {
    int out = jit.find_output(fn, "predictions/" + n);
    if (out < 0)
      die("@predict has no output 'predictions/" + n + "'");
    const rt::TensorSpec &spec = jit.spec().functions[fn].outputs[out];
    if (spec.dtype != rt::DType::F32)
      die("output '" + n + "' is not float32");
    int64_t count = 1;
    for (int32_t d = 0; d < spec.rank; ++d)
      count *= spec.shape[d] < 0 ? k.batch : spec.shape[d];
    printValues("output " + n, output(jit, fn, "predictions/" + n), count);
  }
  std::cout << "variables " << variableCount << "\n";
  return 0;
}
