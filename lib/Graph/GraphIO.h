//===- GraphIO.h - Reading and writing model-graph files ----------------===//
//
// A graph file is a serialized estc.graph.GraphDef: binary protobuf (any
// extension, conventionally .pb) or protobuf text format (.pbtxt).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_GRAPHIO_H
#define ESTC_LIB_GRAPH_GRAPHIO_H

#include "lib/Graph/graph.pb.h"

#include <string>

namespace estc {
namespace graph {

/// Current GraphDef.version written by the builder and accepted by readers.
constexpr int kGraphVersion = 1;

/// True when `path` names a text-format graph (".pbtxt" or ".txtpb").
bool isTextGraphPath(const std::string &path);

/// Reads a graph file. On failure returns false and sets `error` to one line
/// naming the file and the problem (missing, unreadable, not a GraphDef,
/// truncated, unsupported version).
bool readGraph(const std::string &path, GraphDef &graph, std::string &error);

/// Parses graph bytes; `text` selects the text format. `what` names the
/// source in error messages.
bool parseGraph(const std::string &bytes, bool text, const std::string &what,
                GraphDef &graph, std::string &error);

/// The graph's binary bytes, deterministic (map fields in key order): the
/// same graph always gives the same bytes, and so the same cache key.
/// False when protobuf cannot serialize it (over 2 GiB).
bool serializeGraph(const GraphDef &graph, std::string &bytes);

/// Writes a graph file in the format its extension selects. The file is
/// written to a temporary name and renamed, so a reader never sees half of it.
bool writeGraph(const std::string &path, const GraphDef &graph,
                std::string &error);

} // namespace graph
} // namespace estc

#endif // ESTC_LIB_GRAPH_GRAPHIO_H
