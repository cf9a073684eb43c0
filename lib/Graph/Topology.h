//===- Topology.h - Node order of a model graph -------------------------===//
//
// The one order in which every consumer of a graph runs its nodes: a
// topological order in which ties go to the node that comes first in the
// file. A graph written in a valid order is run in exactly that order, so
// reads and assigns of a variable happen in the order the model_fn built
// them. Used by the importer and the reference evaluator.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_TOPOLOGY_H
#define ESTC_LIB_GRAPH_TOPOLOGY_H

#include <vector>

namespace estc {
namespace graph {

/// `inputsOf[i]` lists the indices of node i's inputs. Returns the nodes in
/// order. When the graph has a cycle the result is shorter than the graph,
/// and `cycle` (if given) receives one cycle: node indices, each using the
/// next as an input, the first repeated at the end.
std::vector<int> topologicalOrder(const std::vector<std::vector<int>> &inputsOf,
                                  std::vector<int> *cycle = nullptr);

} // namespace graph
} // namespace estc

#endif // ESTC_LIB_GRAPH_TOPOLOGY_H
