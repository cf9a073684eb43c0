//===- estc-models.cpp - Write the GraphDef of a seed model -------------===//
//
//   estc-models --model=mlp|convnet|iris|linear -o FILE [--seed=N]
//   estc-models --list
//
// FILE ending in .pbtxt gets the text format, anything else binary. A bad
// flag is one line and exit status 2 (lib/Support/Flags.h); a model that
// cannot be built or written, one line and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/GraphIO.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"

#include <iostream>
#include <string>
#include <vector>

namespace {
int fail(const std::string &message) {
  estc::flags::print_error_line("estc-models", message);
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string model, output;
  int64_t seed = 0;
  bool list = false;
  std::vector<std::string> names;
  std::string known; // "mlp, convnet, iris, linear"
  for (const auto &m : estc::models::model_registry()) {
    names.push_back(m.name);
    known += (known.empty() ? "" : ", ") + m.name;
  }
  estc::flags::FlagParser parser(
      "estc-models", "Writes the GraphDef of a seed model (text if FILE ends "
                     "in .pbtxt).");
  parser.add(Flag("model", &model, "the seed model").choices(names));
  parser.add(Flag("o", &output, "the graph file").value_name("FILE"));
  parser.add(Flag("seed", &seed, "the graph seed (initial weights)"));
  parser.add(Flag("list", &list, "list the seed models and exit"));
  parser.parse_or_exit(argc, argv);

  if (list) {
    for (const auto &m : estc::models::model_registry())
      std::cout << m.name << "\t" << m.description << "\n";
    return 0;
  }
  if (model.empty())
    parser.fail("missing --model=NAME (one of " + known + ")");
  if (output.empty())
    parser.fail("missing -o FILE (see --help)");
  const estc::models::ModelEntry *entry = estc::models::find_model(model);

  estc::graph::GraphDef graph;
  try {
    graph = entry->build(seed);
  } catch (const std::exception &e) {
    return fail("building model '" + model + "': " + e.what());
  }
  std::string error;
  if (!estc::graph::writeGraph(output, graph, error))
    return fail(error);
  return 0;
}
