//===- make_recurrent_graph.cpp - Writes the recurrent model's graph ----===//
//
// Build-time helper: `make_recurrent_graph OUT.pb` writes RecurrentModelTest's
// graph (test/unit/RecurrentTestModel.h), which estc_add_model compiles
// ahead of time.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/GraphIO.h"
#include "test/unit/RecurrentTestModel.h"

#include <iostream>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "make_recurrent_graph: error: usage: make_recurrent_graph "
                 "OUT.pb\n";
    return 2;
  }
  std::string error;
  if (!estc::graph::writeGraph(argv[1], estc::recurrent_model::graph_def(),
                               error)) {
    std::cerr << "make_recurrent_graph: error: " << error << "\n";
    return 1;
  }
  return 0;
}
