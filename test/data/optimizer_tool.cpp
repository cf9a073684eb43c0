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

#include "compiler/Driver/GraphCompiler.h"
#include "examples/sst2/AdamWeightDecay.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace estc;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::cerr << "optimizer_tool: " << message << "\n";
  std::exit(1);
}

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
  std::ifstream in(path);
  if (!in)
    die("cannot read " + path);
  Case k;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    if (!(words >> key))
      continue;
    auto numbers = [&] {
      std::vector<double> v;
      double d;
      while (words >> d)
        v.push_back(d);
      return v;
    };
    if (key == "optimizer")
      words >> k.optimizer;
    else if (key == "path")
      words >> k.path;
    else if (key == "hp") {
      std::string name;
      double value;
      words >> name >> value;
      k.hp[name] = value;
    } else if (key == "lr")
      words >> k.lr;
    else if (key == "init_lr")
      words >> k.initLr;
    else if (key == "train_steps")
      words >> k.trainSteps;
    else if (key == "warmup")
      words >> k.warmup;
    else if (key == "steps")
      words >> k.steps;
    else if (key == "dims")
      words >> k.V >> k.S >> k.E >> k.H >> k.C >> k.B;
    else if (key == "ids")
      k.ids.push_back(numbers());
    else if (key == "labels")
      k.labels.push_back(numbers());
    else if (key == "var") {
      std::string name;
      words >> name;
      k.vars.push_back({name, numbers()});
    } else
      die("unknown line '" + key + "'");
  }
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

void print(const std::string &what, const float *data, int64_t n) {
  std::cout << what;
  std::cout.precision(9);
  for (int64_t i = 0; i < n; ++i)
    std::cout << " " << data[i];
  std::cout << "\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    die("usage: optimizer_tool CASE_FILE");
  Case k = readCase(argv[1]);
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
  if (const char *path = std::getenv("OPTIMIZER_TOOL_GRAPH"); path && *path) {
    std::string error;
    if (!graph::writeGraph(path, def, error))
      die(error);
  }
  llvm::SmallString<128> cache;
  llvm::sys::fs::createUniqueDirectory("estc-optimizer-tool", cache);
  JitOptions options;
  options.cacheDir = std::string(cache);
  JitCompiler jit(options);
  auto compiled = jitCompileGraph(jit, def, "Opt", [](llvm::StringRef w) {
    std::cerr << "warning: " << w.str() << "\n";
  });
  if (!compiled)
    die(llvm::toString(compiled.takeError()));
  JitModel &m = **compiled;
  m.run(m.function_index("init"));
  for (const auto &[name, values] : k.vars) {
    int v = m.variable_index(name);
    if (v < 0)
      die("the model has no variable '" + name + "'");
    int64_t n = m.variable_bytes(v) / 4;
    if (n != static_cast<int64_t>(values.size()))
      die("variable '" + name + "' has " + std::to_string(n) +
          " elements, the case " + std::to_string(values.size()));
    auto *data = static_cast<float *>(m.variable_data(v));
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(values[i]);
  }
  int train = m.function_index("train");
  if (train < 0)
    die("@train was not compiled");
  auto *ids = static_cast<int32_t *>(
      m.input_data(train, m.input_index(train, "features/ids")));
  auto *labels = static_cast<int32_t *>(
      m.input_data(train, m.input_index(train, "labels")));
  for (int64_t step = 0; step < k.steps; ++step) {
    const auto &batchIds = k.ids[step % k.ids.size()];
    const auto &batchLabels = k.labels[step % k.labels.size()];
    for (size_t i = 0; i < batchIds.size(); ++i)
      ids[i] = static_cast<int32_t>(batchIds[i]);
    for (size_t i = 0; i < batchLabels.size(); ++i)
      labels[i] = static_cast<int32_t>(batchLabels[i]);
    m.run(train);
    print("loss",
          static_cast<const float *>(
              m.output_data(train, m.output_index(train, "loss"))),
          1);
  }
  const rt::ModelSpec &spec = m.spec();
  for (int v = 0; v < spec.numVariables; ++v) {
    std::string name = spec.variables[v].name;
    if (name == "global_step") {
      std::cout << "global_step "
                << *static_cast<const int64_t *>(m.variable_data(v)) << "\n";
      continue;
    }
    print("var " + name, static_cast<const float *>(m.variable_data(v)),
          m.variable_bytes(v) / 4);
  }
  return 0;
}
