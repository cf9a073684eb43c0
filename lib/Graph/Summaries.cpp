//===- Summaries.cpp - In-graph summaries (tf.compat.v1.summary) --------===//

#include "lib/Graph/Summaries.h"

#include "lib/Shape/ShapeFunctions.h"

namespace estc {
namespace summary {

namespace {

std::string describe(const Tensor &t) {
  return "'" + t.name() + "' (" + to_string(t.dtype()) + " " +
         shape::toString(t.shape()) + ")";
}

/// TF's summary_scope: "<scope>/<family>/<name>" made unique among the
/// mode's summaries ("acc", then "acc_1", ...), without the mode prefix;
/// with a family, "<family>/" before it. (TF also steps past names of ops
/// and name scopes; an Estimator's model_fn rarely names a summary after
/// one, and its features are not placeholders named by their keys there.)
std::string uniqueTag(Graph &g, const char *kind, const std::string &name,
                      const std::string &family) {
  std::string where = std::string("summary.") + kind + " '" + name + "'";
  if (g.in_function())
    throw GraphError(where + ": a summary inside a control-flow body (scan, "
                             "cond, while_loop) is not supported; define it "
                             "on the body's result");
  std::string base = family.empty() ? name : family + "/" + name;
  try {
    (void)g.unique_node_name(base); // validates the name
  } catch (const GraphError &) {
    throw GraphError(where + ": invalid summary name (letters, digits, '_', "
                             "'-', '.', '/')");
  }
  std::string scope = g.current_scope();
  for (int i = 0;; ++i) {
    std::string candidate = i ? base + "_" + std::to_string(i) : base;
    std::string tag = scope.empty() ? candidate : scope + "/" + candidate;
    if (!family.empty())
      tag = family + "/" + tag;
    if (!g.has_summary(tag))
      return tag;
  }
}

graph::SummaryDef record(const std::string &tag, const char *kind,
                         const std::string &node) {
  graph::SummaryDef s;
  s.set_tag(tag);
  s.set_kind(kind);
  s.set_node(node);
  return s;
}

bool isReal(DType d) { return is_floating(d) || is_integer(d); }

} // namespace

graph::SummaryDef scalar(const std::string &name, const Tensor &tensor,
                         const std::string &family) {
  if (!tensor.valid())
    throw GraphError("summary.scalar '" + name + "': no tensor");
  Graph &g = tensor.graph();
  std::string tag = uniqueTag(g, "scalar", name, family);
  if (!isReal(tensor.dtype()) || !tensor.shape().empty())
    throw GraphError("summary.scalar '" + tag + "': tensor " +
                     describe(tensor) +
                     " is not a scalar of a float or integer type");
  graph::SummaryDef s = record(tag, "scalar", tensor.name());
  g.add_summary(s);
  return s;
}

graph::SummaryDef histogram(const std::string &name, const Tensor &values,
                            const std::string &family) {
  if (!values.valid())
    throw GraphError("summary.histogram '" + name + "': no tensor");
  Graph &g = values.graph();
  std::string tag = uniqueTag(g, "histogram", name, family);
  if (!isReal(values.dtype()))
    throw GraphError("summary.histogram '" + tag + "': values " +
                     describe(values) + " are not of a float or integer type");
  graph::SummaryDef s = record(tag, "histogram", values.name());
  g.add_summary(s);
  return s;
}

graph::SummaryDef image(const std::string &name, const Tensor &tensor,
                        int64_t max_outputs, const std::string &family) {
  if (!tensor.valid())
    throw GraphError("summary.image '" + name + "': no tensor");
  Graph &g = tensor.graph();
  std::string tag = uniqueTag(g, "image", name, family);
  Dims shape = tensor.shape();
  DType d = tensor.dtype();
  if (shape.size() != 4 || !(shape[3] == 1 || shape[3] == 3 || shape[3] == 4))
    throw GraphError("summary.image '" + tag + "': tensor " + describe(tensor) +
                     " is not [batch, height, width, channels] with 1, 3 or "
                     "4 channels");
  if (d != DType::Float32 && d != DType::Float64 && d != DType::Float16)
    throw GraphError("summary.image '" + tag + "': tensor " + describe(tensor) +
                     " is not f32, f64 or f16");
  if (max_outputs < 1)
    throw GraphError("summary.image '" + tag +
                     "': max_outputs must be >= 1, got " +
                     std::to_string(max_outputs));
  graph::SummaryDef s = record(tag, "image", tensor.name());
  s.set_max_outputs(max_outputs);
  g.add_summary(s);
  return s;
}

graph::SummaryDef text(Graph &graph, const std::string &name,
                       const std::string &data) {
  std::string tag = uniqueTag(graph, "text", name, "");
  graph::SummaryDef s = record(tag, "text", "");
  s.add_text(data);
  graph.add_summary(s);
  return s;
}

graph::SummaryDef text(Graph &graph, const std::string &name,
                       const std::vector<std::string> &data,
                       const Dims &shape) {
  std::string tag = uniqueTag(graph, "text", name, "");
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d < 0 ? -1 : d;
  if (shape.empty() || shape.size() > 2 || n < 0 ||
      n != static_cast<int64_t>(data.size()))
    throw GraphError("summary.text '" + tag + "': shape " +
                     shape::toString(shape) + " does not hold the " +
                     std::to_string(data.size()) +
                     " strings given (rank 1 or 2)");
  graph::SummaryDef s = record(tag, "text", "");
  for (const std::string &t : data)
    s.add_text(t);
  for (int64_t d : shape)
    s.add_text_shape(d);
  graph.add_summary(s);
  return s;
}

std::vector<graph::SummaryDef> merge_all(const Graph &graph) {
  return graph.summaries();
}

std::string output_key(const graph::SummaryDef &summary) {
  return "summaries/" + summary.tag();
}

} // namespace summary
} // namespace estc
