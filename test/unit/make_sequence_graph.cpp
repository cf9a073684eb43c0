//===- make_sequence_graph.cpp - Writes the sequence tests' graph ------===//
//
// Build-time helper: `make_sequence_graph OUT.pb` writes the sequence-length
// tests' graph (test/unit/SequenceTestModel.h), which estc_add_model compiles
// ahead of time for SequenceInputsTest.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/GraphIO.h"
#include "test/unit/SequenceTestModel.h"

#include <iostream>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "make_sequence_graph: error: usage: make_sequence_graph "
                 "OUT.pb\n";
    return 2;
  }
  std::string error;
  if (!estc::graph::writeGraph(argv[1], estc::sequence_model::graph_def(),
                               error)) {
    std::cerr << "make_sequence_graph: error: " << error << "\n";
    return 1;
  }
  return 0;
}
