//===- classifier_graph.cpp - Writes the classifier's graph for estc -----===//
//
// classifier_graph OUT.pb: the graph of classifier::model_fn (TRAIN, EVAL,
// PREDICT) with the example's seed, for estc_add_model.
//
//===----------------------------------------------------------------------===//

#include "TinyModel.h"

#include "estc/graph.h"

#include <iostream>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: classifier_graph OUT.pb\n";
    return 2;
  }
  std::string error;
  if (!estc::graph::writeGraph(
          argv[1], classifier::build_graph(classifier::kSeed), error)) {
    std::cerr << "classifier_graph: error: " << error << "\n";
    return 1;
  }
  return 0;
}
