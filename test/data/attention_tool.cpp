//===- attention_tool.cpp - estc's attention layers for the TF oracle ----===//
//
// test/e2e/tf_attention_compat.py writes a case (a Keras layer's
// configuration, its initial weights, a batch and the loss weights); this
// tool builds the same layer with lib/Graph/Layers.h on a run-time batch,
// compiles it with the JIT and trains it with SGD:
//   loss = sum(output * c), one step per line
// and prints the first output, every step's loss and the final weights,
// which the script compares with TF's.
//
// usage: attention_tool CASE_FILE
// CASE_FILE lines: `layer mha|layer_norm|block`, `batch B`, `tq T`,
// `tv S`, `dq D`, `dv D`, `heads H`, `key_dim K`, `value_dim V`,
// `output_shape O`, `flags NAME...` (causal mask no_bias key), `steps N`,
// `lr X`, `q V...`, `v V...`, `k V...`, `mask V...` (1 = attend), `c V...`,
// `var NAME V...`. layer_norm normalizes q over its last dim; block is
// layer_norm(q + mha(q, q)).
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <map>
#include <set>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::string layer;
  int64_t batch = 0, tq = 0, tv = 0, dq = 0, dv = 0, heads = 1, keyDim = 0,
          valueDim = 0, outputShape = 0, steps = 1;
  double lr = 0.1;
  std::set<std::string> flags;
  std::map<std::string, std::vector<double>> data; // q v k mask c
  std::vector<std::pair<std::string, std::vector<double>>> vars;
};

Case readCase(const std::string &path) {
  Case k;
  std::map<std::string, int64_t *> ints = {
      {"batch", &k.batch},    {"tq", &k.tq},
      {"tv", &k.tv},          {"dq", &k.dq},
      {"dv", &k.dv},          {"heads", &k.heads},
      {"key_dim", &k.keyDim}, {"value_dim", &k.valueDim},
      {"steps", &k.steps},    {"output_shape", &k.outputShape}};
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "layer") {
      k.layer = line.next<std::string>();
    } else if (ints.count(key)) {
      *ints[key] = line.next<int64_t>();
    } else if (key == "lr") {
      k.lr = line.next<double>();
    } else if (key == "flags") {
      for (const std::string &f : line.rest())
        k.flags.insert(f);
    } else if (key == "q" || key == "v" || key == "k" || key == "mask" ||
               key == "c") {
      k.data[key] = line.numbers();
    } else if (key == "var") {
      std::string name = line.next<std::string>();
      k.vars.emplace_back(name, line.numbers());
    } else {
      line.unknown();
    }
  });
  return k;
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(
      initTool("attention_tool", argc, argv, "attention_tool CASE_FILE"));
  bool hasKey = k.flags.count("key") != 0;
  bool hasMask = k.flags.count("mask") != 0;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"q", DType::Float32, {-1, k.tq, k.dq}});
  if (k.layer == "mha")
    inputs.features.push_back(
        TensorSpec{"v", DType::Float32, {-1, k.tv, k.dv}});
  if (hasKey)
    inputs.features.push_back(
        TensorSpec{"k", DType::Float32, {-1, k.tv, k.dv}});
  if (hasMask)
    inputs.features.push_back(
        TensorSpec{"mask", DType::Float32, {-1, k.tq, k.tv}});
  int64_t out = k.outputShape > 0 ? k.outputShape : k.dq;
  if (k.layer == "layer_norm")
    out = k.dq;
  graph::GraphDef def = build_graph_def(
      inputs, [&](Graph &g, const TensorMap &f, const Tensor &, ModeKeys mode) {
        layers::MultiHeadAttentionOptions o;
        o.value_dim = k.valueDim;
        o.output_shape = k.outputShape;
        o.use_bias = k.flags.count("no_bias") == 0;
        o.use_causal_mask = k.flags.count("causal") != 0;
        if (hasKey)
          o.key = f["k"];
        if (hasMask)
          o.attention_mask = greater(f["mask"], 0.5);
        Tensor y;
        if (k.layer == "mha") {
          y = layers::multi_head_attention(f["q"], f["v"], k.heads, k.keyDim,
                                           o);
        } else if (k.layer == "layer_norm") {
          y = layers::layer_normalization(f["q"]);
        } else if (k.layer == "block") {
          Tensor a = layers::multi_head_attention(f["q"], f["q"], k.heads,
                                                  k.keyDim, o);
          y = layers::layer_normalization(add(f["q"], a), -1, 1e-6);
        } else {
          die("unknown layer " + k.layer);
        }
        Signature s;
        s.predictions.set("y", y);
        if (mode != ModeKeys::PREDICT) {
          Tensor c = g.constant(k.data["c"], {k.batch, k.tq, out});
          s.loss = reduce_sum(multiply(y, c));
          if (mode == ModeKeys::TRAIN)
            s.train_op = train::GradientDescentOptimizer(k.lr).minimize(s.loss);
        }
        return s;
      });

  std::unique_ptr<JitModel> compiled = compileOrDie(def, "Attention");
  JitModel &model = *compiled;
  model.run(model.function_index("init"));
  setVariables(model, k.vars);
  model.set_batch(k.batch);
  auto feedCase = [&](int fn) {
    for (const TensorSpec &spec : inputs.features)
      feed(model, fn, "features/" + spec.key, k.data[spec.key]);
  };
  runSgdCase(model, feedCase, k.batch * k.tq * out, k.steps, k.vars);
  return 0;
}
