//===- optimizer_tool.cpp - estc's optimizers for the TF oracle ---------===//
//
// test/e2e/tf_optimizer_compat.py writes a case (an optimizer, the initial
// weights of a small BERT-like classifier and a few batches); this tool
// builds the model with the graph builder, trains it for `steps` steps with
// the optimizer through the JIT, and prints every step's loss and the final
// value of every variable (slots included), which the script compares with
// TF 2.15's.
//
// The model: word embeddings [V, E] gathered by ids [B, S], a layer norm
// (bert/embeddings/LayerNorm/{gamma,beta}), the mean over S, a tanh dense
// layer (dense/{kernel,bias}) and BERT's classifier (output_weights [C, H],
// output_bias), mean sparse softmax cross entropy.
//
// usage: optimizer_tool CASE_FILE
// CASE_FILE lines: `optimizer bert|<kind>` (bert: test/data/
// AdamWeightDecay.h's create_optimizer; a kind: train::Optimizer of that
// kind), `path minimize|apply|minimize_ema` (apply: compute_gradients then
// apply_gradients with global_step; minimize_ema: minimize, then an
// ExponentialMovingAverage(0.99, global_step) of the trainable variables), `hp
// KEY VALUE` (a hyperparameter of a kind), `lr X`, `init_lr X`, `train_steps
// N`, `warmup N` (bert), `dims V S E H C B`, `steps N`, `ids V...` and `labels
// V...` (one line per batch, cycled), `var NAME V...`.
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "examples/sst2/AdamWeightDecay.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <iostream>
#include <map>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::string optimizer, path = "minimize";
  std::map<std::string, double> hp;
  double lr = 0.1, initLr = 0.1;
  int64_t trainSteps = 100, warmup = 0, steps = 1;
  int64_t V = 0, S = 0, E = 0, H = 0, C = 0, B = 0;
  std::vector<std::vector<double>> ids, labels;
  std::vector<std::pair<std::string, std::vector<double>>> vars;
};

Case readCase(const std::string &path) {
  Case k;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "optimizer")
      k.optimizer = line.next<std::string>();
    else if (key == "path")
      k.path = line.next<std::string>();
    else if (key == "hp") {
      std::string name = line.next<std::string>();
      k.hp[name] = line.next<double>();
    } else if (key == "lr")
      k.lr = line.next<double>();
    else if (key == "init_lr")
      k.initLr = line.next<double>();
    else if (key == "train_steps")
      k.trainSteps = line.next<int64_t>();
    else if (key == "warmup")
      k.warmup = line.next<int64_t>();
    else if (key == "steps")
      k.steps = line.next<int64_t>();
    else if (key == "dims") {
      for (int64_t *d : {&k.V, &k.S, &k.E, &k.H, &k.C, &k.B})
        *d = line.next<int64_t>();
    } else if (key == "ids")
      k.ids.push_back(line.numbers());
    else if (key == "labels")
      k.labels.push_back(line.numbers());
    else if (key == "var") {
      std::string name = line.next<std::string>();
      k.vars.emplace_back(name, line.numbers());
    } else
      line.unknown();
  });
  if (k.ids.empty() || k.ids.size() != k.labels.size())
    die("the case needs as many `ids` as `labels` lines (at least one)");
  return k;
}

/// The model's loss (see the file comment).
Tensor model(Graph &g, const Case &k, const Tensor &ids, const Tensor &labels) {
  Variable embeddings = g.get_variable("bert/embeddings/word_embeddings",
                                       DType::Float32, {k.V, k.E});
  Variable gamma = g.get_variable("bert/embeddings/LayerNorm/gamma",
                                  DType::Float32, {k.E}, ones_initializer());
  Variable beta = g.get_variable("bert/embeddings/LayerNorm/beta",
                                 DType::Float32, {k.E}, zeros_initializer());
  Variable kernel = g.get_variable("dense/kernel", DType::Float32, {k.E, k.H});
  Variable bias =
      g.get_variable("dense/bias", DType::Float32, {k.H}, zeros_initializer());
  Variable outputWeights =
      g.get_variable("output_weights", DType::Float32, {k.C, k.H});
  Variable outputBias =
      g.get_variable("output_bias", DType::Float32, {k.C}, zeros_initializer());
  Tensor emb = gather(embeddings, ids); // [B, S, E]
  // tf.nn.batch_normalization over the last axis, as layer_norm computes it.
  Tensor mean = reduce_mean(emb, Dims{-1}, true);
  Tensor variance = reduce_mean(square(subtract(emb, mean)), Dims{-1}, true);
  Tensor inv = multiply(rsqrt(add(variance, 1e-6)), gamma);
  Tensor normed =
      add(multiply(emb, inv), subtract(beta.read(), multiply(mean, inv)));
  Tensor pooled = reduce_mean(normed, Dims{1}); // [B, E]
  Tensor h = tanh(add(matmul(pooled, kernel), bias));
  Tensor logits =
      add(matmul(h, outputWeights, false, /*transpose_b=*/true), outputBias);
  return losses::sparse_softmax_cross_entropy(labels, logits);
}

Operation trainOp(Graph &g, const Case &k, const Tensor &loss) {
  if (k.optimizer == "bert")
    return bert::create_optimizer(loss, k.initLr, k.trainSteps, k.warmup);
  std::map<std::string, graph::AttrValue> hp;
  for (const auto &[name, value] : k.hp)
    hp[name] = attr_f(value);
  train::Optimizer opt(k.optimizer, k.optimizer, hp, k.lr);
  if (k.path == "apply")
    return opt.apply_gradients(opt.compute_gradients(loss),
                               train::get_or_create_global_step(g));
  if (k.path == "minimize_ema") {
    // tf.train.ExponentialMovingAverage(0.99, num_updates=global_step)
    // applied after the update.
    train::ExponentialMovingAverage ema(0.99, g.global_step());
    Operation update = opt.minimize(loss);
    return group({update, ema.apply(g.trainable_variables())});
  }
  if (k.path != "minimize")
    die("unknown path '" + k.path + "'");
  return opt.minimize(loss);
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(
      initTool("optimizer_tool", argc, argv, "optimizer_tool CASE_FILE"));
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"ids", DType::Int32, {k.B, k.S}});
  inputs.labels = TensorSpec{"labels", DType::Int32, {k.B}};
  Graph graph;
  try {
    build_mode(
        graph, ModeKeys::TRAIN, inputs,
        [&](Graph &g, const TensorMap &f, const Tensor &labels, ModeKeys) {
          Signature s;
          s.loss = model(g, k, f["ids"], labels);
          s.train_op = trainOp(g, k, s.loss);
          return s;
        });
  } catch (const GraphError &e) {
    die(e.what());
  }
  graph::GraphDef def = graph.graph_def();
  // OPTIMIZER_TOOL_GRAPH=FILE writes the graph (for estc --compile-to=...).
  writeGraphIfAsked("OPTIMIZER_TOOL_GRAPH", def);
  std::unique_ptr<JitModel> compiled = compileOrDie(def, "Opt");
  JitModel &m = *compiled;
  m.run(m.function_index("init"));
  setVariables(m, k.vars);
  int train = functionOrDie(m, "train");
  for (int64_t step = 0; step < k.steps; ++step) {
    feed(m, train, "features/ids", k.ids[step % k.ids.size()]);
    feed(m, train, "labels", k.labels[step % k.labels.size()]);
    m.run(train);
    printValues("loss", output(m, train, "loss"), 1);
  }
  const rt::ModelSpec &spec = m.spec();
  for (int v = 0; v < spec.numVariables; ++v) {
    std::string name = spec.variables[v].name;
    if (name == "global_step") {
      std::cout << "global_step "
                << *static_cast<const int64_t *>(m.variable_data(v)) << "\n";
      continue;
    }
    printValues("var " + name, static_cast<const float *>(m.variable_data(v)),
                m.variable_bytes(v) / 4);
  }
  return 0;
}
