//===- estc-models.cpp - Write the GraphDef of a seed model -------------===//
//
//   estc-models --model=mlp|convnet|linear -o FILE [--seed=N]
//   estc-models --list
//
// FILE ending in .pbtxt gets the text format, anything else binary.
//
//===----------------------------------------------------------------------===//

#include "examples/models/Models.h"
#include "lib/Graph/GraphIO.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {
int fail(const std::string &message) {
  std::cerr << "estc-models: error: " << message << "\n";
  return 1;
}

void usage() {
  std::cout << "usage: estc-models --model=NAME -o FILE [--seed=N]\n"
               "       estc-models --list\n"
               "Writes the GraphDef of a seed model (text if FILE ends in "
               ".pbtxt).\n";
}
} // namespace

int main(int argc, char **argv) {
  std::string model, output, seedText;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (arg.rfind(flag + "=", 0) == 0) {
        out = arg.substr(flag.size() + 1);
        return true;
      }
      if (arg == flag) {
        if (i + 1 >= argc)
          return false;
        out = argv[++i];
        return true;
      }
      return false;
    };
    if (arg == "--list") {
      list = true;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "-o" || arg.rfind("-o=", 0) == 0 ||
               arg.rfind("--output", 0) == 0) {
      std::string flag = arg.rfind("--output", 0) == 0 ? "--output" : "-o";
      if (!value(flag, output) || output.empty())
        return fail("flag '" + flag + "' needs a file name");
    } else if (arg.rfind("--model", 0) == 0) {
      if (!value("--model", model) || model.empty())
        return fail("flag '--model' needs a model name (see --list)");
    } else if (arg.rfind("--seed", 0) == 0) {
      if (!value("--seed", seedText) || seedText.empty())
        return fail("flag '--seed' needs an integer");
    } else {
      return fail("unknown argument '" + arg + "' (see --help)");
    }
  }

  if (list) {
    for (const auto &m : estc::models::model_registry())
      std::cout << m.name << "\t" << m.description << "\n";
    return 0;
  }
  if (model.empty())
    return fail("no model given (use --model=NAME; see --list)");
  const estc::models::ModelEntry *entry = estc::models::find_model(model);
  if (!entry) {
    std::string names;
    for (const auto &m : estc::models::model_registry())
      names += (names.empty() ? "" : ", ") + m.name;
    return fail("unknown model '" + model + "' (known: " + names + ")");
  }
  if (output.empty())
    return fail("no output file given (use -o FILE)");
  int64_t seed = 0;
  if (!seedText.empty()) {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(seedText.c_str(), &end, 10);
    if (*end != '\0' || errno != 0)
      return fail("flag '--seed' needs an integer, got '" + seedText + "'");
    seed = v;
  }

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
