//===- GraphFuzz.h - What both graph-file targets check ------------------===//
//
// A graph file (binary or text) is read with readGraph, as estc reads it.
// The documented failure is `false` with one line naming the file. A graph
// that reads must survive what every consumer does next: its deterministic
// binary bytes (the JIT cache key, what `estc` writes) read back to the
// same graph, and the node order the importer and the reference evaluator
// use (topologicalOrder) is a valid order, or a valid cycle.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_FUZZ_GRAPHFUZZ_H
#define ESTC_TEST_FUZZ_GRAPHFUZZ_H

#include "test/fuzz/FuzzSupport.h"

#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Topology.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <map>

namespace estc {
namespace fuzz {

inline void checkNodeOrder(const graph::GraphDef &graph) {
  // Inputs by name ("node" or "node:0"), as the importer resolves them;
  // unresolved ones are the importer's error, left out here.
  std::map<std::string, int> index;
  for (int i = 0; i < graph.node_size(); ++i)
    index.emplace(graph.node(i).name(), i);
  std::vector<std::vector<int>> inputsOf(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &input : graph.node(i).input()) {
      auto it = index.find(input.substr(0, input.rfind(':')));
      if (it != index.end())
        inputsOf[i].push_back(it->second);
    }
  std::vector<int> cycle;
  std::vector<int> order = graph::topologicalOrder(inputsOf, &cycle);
  const int n = graph.node_size();
  std::vector<int> position(n, -1);
  for (size_t k = 0; k < order.size(); ++k) {
    int node = order[k];
    if (node < 0 || node >= n || position[node] >= 0)
      die("topologicalOrder: node " + std::to_string(node) +
          " is out of range or repeated");
    position[node] = static_cast<int>(k);
  }
  for (int node : order)
    for (int input : inputsOf[node])
      if (position[input] < 0 || position[input] > position[node])
        die("topologicalOrder: a node comes before its input");
  if (static_cast<int>(order.size()) == n)
    return;
  if (cycle.size() < 2 || cycle.front() != cycle.back())
    die("topologicalOrder: no cycle reported for an unordered graph");
  for (size_t k = 0; k + 1 < cycle.size(); ++k) {
    const std::vector<int> &inputs = inputsOf.at(cycle[k]);
    if (std::find(inputs.begin(), inputs.end(), cycle[k + 1]) == inputs.end())
      die("topologicalOrder: the reported cycle is not a cycle");
  }
}

/// Reads `bytes` as the graph file `name` (its extension selects the
/// format) and checks what is described above.
inline void fuzzGraphFile(std::string_view bytes, const std::string &name) {
  // Protobuf logs (invalid UTF-8 in a string field) are not the reader's
  // output; silence them so that the fuzzer's log stays readable.
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  std::string path = scratch().write(name, bytes);
  graph::GraphDef graph;
  std::string error;
  if (!graph::readGraph(path, graph, error)) {
    checkFileError(error, path);
    return;
  }
  std::string serialized;
  if (!graph::serializeGraph(graph, serialized))
    die("a graph read from a small file does not serialize");
  graph::GraphDef again;
  if (!graph::parseGraph(serialized, /*text=*/false, "bytes", again, error))
    die("a graph does not read back from its own bytes: " + error);
  std::string reserialized;
  if (!graph::serializeGraph(again, reserialized) || reserialized != serialized)
    die("a graph's bytes change when read back and written again");
  checkNodeOrder(graph);
}

} // namespace fuzz
} // namespace estc

#endif // ESTC_TEST_FUZZ_GRAPHFUZZ_H
