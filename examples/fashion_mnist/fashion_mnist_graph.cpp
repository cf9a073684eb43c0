//===- fashion_mnist_graph.cpp - Writes the example's graph for estc -----===//
//
// fashion_mnist_graph OUT.pb [SEED]: the graph convnet_model_fn builds, for
// estc_add_model (the AOT trainer).
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/ConvNetModel.h"
#include "lib/Graph/GraphIO.h"

#include <cstdlib>
#include <exception>
#include <iostream>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: fashion_mnist_graph OUT.pb [SEED]\n";
    return 2;
  }
  try {
    int64_t seed = argc == 3 ? std::atoll(argv[2]) : 1;
    std::string error;
    if (!estc::graph::writeGraph(
            argv[1], estc::examples::build_convnet_graph(seed), error)) {
      std::cerr << "fashion_mnist_graph: error: " << error << "\n";
      return 1;
    }
  } catch (const std::exception &e) {
    std::cerr << "fashion_mnist_graph: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
