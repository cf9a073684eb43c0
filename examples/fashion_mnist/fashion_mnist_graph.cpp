//===- fashion_mnist_graph.cpp - Writes the example's graph for estc -----===//
//
// fashion_mnist_graph -o OUT.pb [--seed=N]: the graph convnet_model_fn
// builds, for estc_add_model (the AOT trainer). A bad flag is one line and
// exit status 2 (lib/Support/Flags.h); a file that cannot be written, one
// line and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "estc/flags.h"
#include "estc/graph.h"
#include "examples/fashion_mnist/ConvNetModel.h"

#include <exception>

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string output;
  int64_t seed = 1;
  estc::flags::FlagParser parser(
      "fashion_mnist_graph",
      "Writes the graph of the example's model_fn (every mode) for estc "
      "(text if FILE ends in .pbtxt).");
  parser.add(
      Flag("o", &output, "the graph file").value_name("FILE").required());
  parser.add(Flag("seed", &seed, "the graph seed (initial weights)"));
  parser.parse_or_exit(argc, argv);
  try {
    std::string error;
    if (!estc::graph::writeGraph(
            output, estc::examples::build_convnet_graph(seed), error)) {
      estc::flags::print_error_line("fashion_mnist_graph", error);
      return 1;
    }
  } catch (const std::exception &e) {
    estc::flags::print_error_line("fashion_mnist_graph", e.what());
    return 1;
  }
  return 0;
}
