//===- titanic_graph.cpp - Writes a Titanic canned model's graph ---------===//
//
// The graph of every mode of the example's LinearClassifier or
// DNNLinearCombinedClassifier (Titanic.h), for estc: the ahead-of-time form
// (titanic_aot) compiles it at build time and links no LLVM.
//
//===----------------------------------------------------------------------===//

#include "estc/flags.h"
#include "estc/graph.h"
#include "examples/titanic/Titanic.h"

#include <exception>

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string output, model = "linear";
  int64_t seed = 1;
  bool defaultRates = false;
  estc::flags::FlagParser parser(
      "titanic_graph", "Writes the graph of a Titanic canned estimator (every "
                       "mode) for estc (text if FILE ends in .pbtxt).");
  parser.add(
      Flag("o", &output, "the graph file").value_name("FILE").required());
  parser.add(Flag("model", &model, "the canned estimator")
                 .choices({"linear", "dnn_linear_combined"}));
  parser.add(Flag("seed", &seed, "the graph seed (initial weights)"));
  parser.add(Flag("default_rates", &defaultRates,
                  "dnn_linear_combined with TF's default learning rates "
                  "(linear 0.005, dnn 0.001) instead of 0.2 / 0.05"));
  parser.parse_or_exit(argc, argv);
  try {
    std::string error;
    if (!estc::graph::writeGraph(
            output,
            estc::examples::titanic_model(model, !defaultRates).graph_def(seed),
            error)) {
      estc::flags::print_error_line("titanic_graph", error);
      return 1;
    }
  } catch (const std::exception &e) {
    estc::flags::print_error_line("titanic_graph", e.what());
    return 1;
  }
  return 0;
}
