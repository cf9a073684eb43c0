//===- keras_graph_fuzzer.cpp - Graphs from Keras configs -----------------===//
//
// The input is a model's config.json: parsed (parse_config_json), held as a
// KerasModel without weights, and built into a graph (keras::build_model in
// PREDICT, on placeholders of model_inputs' specs), as model_to_estimator
// builds a user's file. The documented errors are KerasError (one line
// starting with the file's name) and GraphError (one line); anything else
// escaping, or a crash, is a bug.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Keras/KerasGraph.h"

using namespace estc;
using namespace estc::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string file = "fuzz.keras";
  std::string_view text(reinterpret_cast<const char *>(data), size);
  try {
    keras::KerasModel m;
    m.file = file;
    m.config = keras::parse_config_json(text, file);
    Graph g;
    auto mode = g.mode_scope(ModeKeys::PREDICT);
    keras::KerasGraph kg = keras::build_model(g, m);
    if (kg.outputs.size() != kg.output_names.size())
      die("outputs and output names differ in number");
  } catch (const keras::KerasError &e) {
    checkFileError(e.what(), file);
  } catch (const GraphError &e) {
    std::string what = e.what();
    if (what.find_first_of("\n\r") != std::string::npos)
      die("GraphError is not one line: " + what);
  }
  return 0;
}
