//===- LayerSupport.h - What the layer builders share -----------*- C++ -*-===//
//
// The default names and the error line of the layer builders (Layers.cpp,
// AttentionLayers.cpp): tf.compat.v1.layers' unique names, and one line
// naming the layer, its input and the input's shape.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_LAYERSUPPORT_H
#define ESTC_LIB_GRAPH_LAYERSUPPORT_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Shape/ShapeFunctions.h"

#include <string>

namespace estc {
namespace layers {
namespace detail {

/// `name`, or the graph's next unique name from `base` ("dense",
/// "dense_1", ...) when it is empty.
inline std::string layerName(Graph &g, const std::string &name,
                             const std::string &base) {
  return name.empty() ? g.unique_layer_name(base) : name;
}

/// Throws GraphError: `layer 'name': input 'x' [shape]: problem`.
[[noreturn]] inline void layerError(const std::string &layer,
                                    const std::string &name, const Tensor &x,
                                    const std::string &problem) {
  throw GraphError(
      layer + " '" + name + "': input '" + x.name() + "' " +
      (x.has_value() ? shape::toString(x.shape()) : std::string("(no value)")) +
      ": " + problem);
}

} // namespace detail
} // namespace layers
} // namespace estc

#endif // ESTC_LIB_GRAPH_LAYERSUPPORT_H
