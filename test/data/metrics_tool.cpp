//===- metrics_tool.cpp - lib/Graph/Metrics.h for tf_metrics_compat.py ---===//
//
// test/e2e/tf_metrics_compat.py writes a case: the sizes, then batches of
// random data; this tool builds one EVAL graph with the metrics below (each
// unweighted and weighted, key suffix "_w"), compiles it with the JIT, runs
// @eval on each batch in turn (streaming) and after each prints every
// metric's value; the script builds the same metrics with
// tf.compat.v1.metrics and compares them step by step.
//
// usage: metrics_tool CASE_FILE
// CASE_FILE lines:
//   sizes C L K D        classes, labels per example, top-k ids per
//                        example, regression width
//   batch N              then one line per feature, N rows each:
//   labels V...  multi V...  scores V...  idx V...  bin V...  p V...
//   y V...  yhat V...  norm V...  w V...
//   multi3 V...  scores3 V...  idx3 V...  w3 V...   ([N, 2, ...]: two
//                        examples per row)
//   end                  runs the batch
// Output, per batch: "step I", then "metric KEY V..." lines (%.17g; nan).
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Sizes {
  int64_t C = 0, L = 0, K = 0, D = 0;
};

/// The metrics of the case, keyed as the script keys TF's.
std::vector<std::pair<std::string, Metric>> buildMetrics(Graph &g,
                                                         const TensorMap &f,
                                                         const Tensor &labels,
                                                         const Sizes &s) {
  std::vector<std::pair<std::string, Metric>> out;
  for (bool weighted : {false, true}) {
    Tensor w = weighted ? f["w"] : Tensor();
    std::string sfx = weighted ? "_w" : "";
    auto add = [&](const std::string &key, Metric m) {
      out.push_back({key + sfx, m});
    };
    Tensor multi = f["multi"], scores = f["scores"], idx = f["idx"];
    Tensor first = slice(multi, {0, 0}, {-1, 1}); // always a class id
    add("sparse_precision_at_1",
        metrics::sparse_precision_at_k(labels, scores, 1, std::nullopt, w));
    add("sparse_precision_at_3_multi",
        metrics::sparse_precision_at_k(multi, scores, 3, std::nullopt, w));
    add("sparse_precision_at_2_class2",
        metrics::sparse_precision_at_k(multi, scores, 2, 2, w));
    add("recall_at_1",
        metrics::recall_at_k(labels, scores, 1, std::nullopt, w));
    add("recall_at_3_multi",
        metrics::recall_at_k(multi, scores, 3, std::nullopt, w));
    add("recall_at_2_class1", metrics::recall_at_k(multi, scores, 2, 1, w));
    add("precision_at_top_k",
        metrics::precision_at_top_k(multi, idx, std::nullopt, std::nullopt, w));
    add("precision_at_top_k_single",
        metrics::precision_at_top_k(labels, idx, s.K, std::nullopt, w));
    add("precision_at_top_k_class1",
        metrics::precision_at_top_k(multi, idx, s.K, 1, w));
    add("recall_at_top_k",
        metrics::recall_at_top_k(multi, idx, std::nullopt, std::nullopt, w));
    add("recall_at_top_k_single",
        metrics::recall_at_top_k(labels, idx, s.K, std::nullopt, w));
    add("recall_at_top_k_class1",
        metrics::recall_at_top_k(multi, idx, s.K, 1, w));
    add("average_precision_at_1",
        metrics::average_precision_at_k(first, scores, 1, w));
    add("average_precision_at_3_multi",
        metrics::average_precision_at_k(multi, scores, 3, w));
    add("sparse_average_precision_at_2",
        metrics::sparse_average_precision_at_k(multi, scores, 2, w));
    // Two examples per row: [B, 2, ...] (weights [B, 2]).
    Tensor w3 = weighted ? f["w3"] : Tensor();
    add("precision_at_2_3d", metrics::precision_at_k(f["multi3"], f["scores3"],
                                                     2, std::nullopt, w3));
    add("recall_at_top_k_3d",
        metrics::recall_at_top_k(f["multi3"], f["idx3"], std::nullopt,
                                 std::nullopt, w3));
    add("precision_at_top_k_3d_class0",
        metrics::precision_at_top_k(f["multi3"], f["idx3"], s.K, 0, w3));
    add("average_precision_at_2_3d",
        metrics::average_precision_at_k(f["multi3"], f["scores3"], 2, w3));
    add("mean_cosine_distance",
        metrics::mean_cosine_distance(f["y"], f["yhat"], 1,
                                      weighted ? expand_dims(w, 1) : w));
    add("mean_relative_error",
        metrics::mean_relative_error(f["y"], f["yhat"], f["norm"], w));
    // A static shape: the batch summed away. Its weights: one per column.
    Tensor columnWeights =
        weighted ? reduce_mean(abs(f["norm"]), Dims{0}) : Tensor();
    add("mean_tensor",
        metrics::mean_tensor(reduce_sum(f["yhat"], Dims{0}), columnWeights));
    add("percentage_below", metrics::percentage_below(f["p"], 0.5, w));
    add("percentage_below_y", metrics::percentage_below(f["y"], -0.25, w));
    add("sensitivity_at_specificity",
        metrics::sensitivity_at_specificity(f["bin"], f["p"], 0.7, w));
    add("sensitivity_at_specificity_7",
        metrics::sensitivity_at_specificity(f["bin"], f["p"], 0.5, w, 7));
    add("specificity_at_sensitivity",
        metrics::specificity_at_sensitivity(f["bin"], f["p"], 0.4, w));
    add("specificity_at_sensitivity_7",
        metrics::specificity_at_sensitivity(f["bin"], f["p"], 0.6, w, 7));
  }
  (void)g;
  return out;
}

graph::GraphDef buildGraph(const Sizes &s, std::vector<std::string> &keys) {
  Graph graph;
  InputSpec inputs;
  const int64_t B = -1;
  inputs.features = {{"multi", DType::Int64, {B, s.L}},
                     {"scores", DType::Float32, {B, s.C}},
                     {"idx", DType::Int64, {B, s.K}},
                     {"bin", DType::Int64, {B}},
                     {"p", DType::Float32, {B}},
                     {"y", DType::Float32, {B, s.D}},
                     {"yhat", DType::Float32, {B, s.D}},
                     {"norm", DType::Float32, {B, s.D}},
                     {"w", DType::Float32, {B}},
                     {"multi3", DType::Int64, {B, 2, s.L}},
                     {"scores3", DType::Float32, {B, 2, s.C}},
                     {"idx3", DType::Int64, {B, 2, s.K}},
                     {"w3", DType::Float32, {B, 2}}};
  inputs.labels = TensorSpec{"labels", DType::Int64, {B}};
  build_mode(graph, ModeKeys::EVAL, inputs,
             [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
               Signature sig;
               sig.loss = reduce_mean(f["p"]);
               for (auto &[key, m] : buildMetrics(g, f, labels, s)) {
                 keys.push_back(key);
                 sig.metrics.push_back({key, m});
               }
               return sig;
             });
  return graph.graph_def();
}

/// Copies `values` into input `key` of @eval as its dtype.
void feedExactly(JitModel &model, int fn, const std::string &key,
                 const std::vector<double> &values, int64_t expected) {
  if (static_cast<int64_t>(values.size()) != expected)
    die("feature '" + key + "' has " + std::to_string(values.size()) +
        " values, expected " + std::to_string(expected));
  feed(model, fn, key, values);
}

void printMetric(JitModel &model, int fn, const std::string &key) {
  int out = model.output_index(fn, "metrics/" + key);
  if (out < 0)
    die("@eval_metrics has no output 'metrics/" + key + "'");
  const rt::TensorSpec &t = model.spec().functions[fn].outputs[out];
  int64_t count = rt::numElements(t.rank, t.shape, 0);
  const void *data = model.output_data(fn, out);
  std::cout << "metric " << key;
  char buffer[40];
  for (int64_t i = 0; i < count; ++i) {
    double v = t.dtype == rt::DType::F64 ? static_cast<const double *>(data)[i]
                                         : static_cast<const float *>(data)[i];
    std::snprintf(buffer, sizeof(buffer), " %.17g", v);
    std::cout << (std::isnan(v) ? std::string(" nan") : std::string(buffer));
  }
  std::cout << "\n";
}

} // namespace

int main(int argc, char **argv) {
  std::string path =
      initTool("metrics_tool", argc, argv, "metrics_tool CASE_FILE");
  Sizes s;
  std::unique_ptr<JitModel> model;
  std::vector<std::string> keys;
  std::map<std::string, std::vector<double>> batch;
  int64_t n = 0, step = 0;
  int eval = -1, values = -1;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "sizes") {
      for (int64_t *d : {&s.C, &s.L, &s.K, &s.D})
        *d = line.next<int64_t>();
      model = compileOrDie(buildGraph(s, keys), "Metrics");
      model->reset_local_variables();
      eval = model->function_index("eval");
      values = model->function_index("eval_metrics");
    } else if (key == "batch") {
      n = line.next<int64_t>();
      batch.clear();
    } else if (key == "end") {
      if (!model)
        die("'end' before 'sizes'");
      model->set_batch(n);
      const std::map<std::string, int64_t> widths = {
          {"labels", 1},
          {"features/multi", s.L},
          {"features/scores", s.C},
          {"features/idx", s.K},
          {"features/bin", 1},
          {"features/p", 1},
          {"features/y", s.D},
          {"features/yhat", s.D},
          {"features/norm", s.D},
          {"features/w", 1},
          {"features/multi3", 2 * s.L},
          {"features/scores3", 2 * s.C},
          {"features/idx3", 2 * s.K},
          {"features/w3", 2}};
      for (const auto &[input, width] : widths) {
        std::string name =
            input == "labels" ? input : input.substr(std::strlen("features/"));
        feedExactly(*model, eval, input, batch[name], n * width);
      }
      model->run(eval);
      model->run(values);
      std::cout << "step " << step++ << "\n";
      for (const std::string &k : keys)
        printMetric(*model, values, k);
    } else {
      batch[key] = line.numbers();
    }
  });
  return 0;
}
