//===- Summaries.h - In-graph summaries (tf.compat.v1.summary) ----------===//
//
// What a model_fn shows in TensorBoard besides the loss, with
// tf.compat.v1.summary's names and tags:
//
//   summary::scalar("accuracy", acc);              // tag "accuracy"
//   summary::histogram("logits", logits);          // tag "logits"
//   summary::image("input", images, 2);            // "input/image/0", "/1"
//   summary::text(graph, "config", "lr=0.1");      // tag "config"
//
// Each call records a graph::SummaryDef in the current mode's summaries
// (TF's SUMMARIES collection; merge_all() lists them). The tag is TF's: the
// name in the current name scope (without the mode prefix), made unique
// among the mode's summaries as TF's name scopes make it ("accuracy", then
// "accuracy_1"); with `family`, "<family>/<family>/<name>" as
// tf.compat.v1.summary writes it. Graph::set_signature records the mode's
// summaries in its signature.
//
// Where the values are computed (docs/design/summaries.md): a train
// signature with summaries also compiles to `train_summaries`, the train
// step plus one output "summaries/<tag>" per scalar, histogram and image;
// the Estimator runs it instead of `train` on the steps its
// SummarySaverHook writes (RunConfig.save_summary_steps), so `train` itself
// computes no summary and other steps cost nothing. Histograms (TF's
// default buckets) and PNG images are made on the host from the fetched
// tensors (lib/Summary/SummaryValues.h). Text is a host-side value: estc's
// compiled code has no strings, so summary::text takes the strings
// themselves. As TF's Estimator, only TRAIN's summaries are written; EVAL
// writes its metrics and PREDICT nothing.
//
// Errors (a non-scalar for scalar, an image that is not [B, H, W, 1|3|4]
// of floats, max_outputs < 1, a name that is not a valid node name, a
// summary inside a control-flow body) throw GraphError with one line naming
// the summary and the tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_SUMMARIES_H
#define ESTC_LIB_GRAPH_SUMMARIES_H

#include "lib/Graph/GraphBuilder.h"

#include <string>
#include <vector>

namespace estc {
namespace summary {

/// tf.compat.v1.summary.scalar: a real-valued scalar tensor (any float or
/// integer dtype, shape []).
graph::SummaryDef scalar(const std::string &name, const Tensor &tensor,
                         const std::string &family = "");

/// tf.compat.v1.summary.histogram: every element of `values` (any float or
/// integer dtype, any shape) in TF's default buckets.
graph::SummaryDef histogram(const std::string &name, const Tensor &values,
                            const std::string &family = "");

/// tf.compat.v1.summary.image: the first `max_outputs` images of `tensor`
/// [batch, height, width, channels] (channels 1: grayscale, 3: RGB, 4:
/// RGBA; f32, f64 or f16), each normalized to [0, 255] as TF does, as
/// PNGs tagged "<tag>/image/<i>" ("<tag>/image" when max_outputs is 1).
graph::SummaryDef image(const std::string &name, const Tensor &tensor,
                        int64_t max_outputs = 3,
                        const std::string &family = "");

/// tf.compat.v1.summary.text of a constant: `data` written as a string
/// tensor summary for TensorBoard's text plugin (markdown) on every summary
/// step of the mode `graph` is building.
graph::SummaryDef text(Graph &graph, const std::string &name,
                       const std::string &data);
/// A rank-1 or rank-2 table of strings (`shape` [n] or [rows, cols], row
/// major), as TF's text plugin shows a string tensor.
graph::SummaryDef text(Graph &graph, const std::string &name,
                       const std::vector<std::string> &data, const Dims &shape);

/// tf.compat.v1.summary.merge_all: the summaries of the mode `graph` is
/// building, in the order they were defined.
std::vector<graph::SummaryDef> merge_all(const Graph &graph);

/// The output key of a summary's value in `train_summaries`.
std::string output_key(const graph::SummaryDef &summary);

} // namespace summary
} // namespace estc

#endif // ESTC_LIB_GRAPH_SUMMARIES_H
