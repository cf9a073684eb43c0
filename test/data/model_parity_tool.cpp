//===- model_parity_tool.cpp - Whole models against TF, estc's side -----===//
//
// test/e2e/tf_model_parity.py builds a model in TF 2.15 (tf.compat.v1
// layers, the same variable names), draws its initial weights and the
// batches, trains it and writes a case: the model and its options, every
// variable's initial value, the batches. This tool builds the same model
// with estc's graph builder (the examples' model code), sets the
// variables, trains on the same batches with the JIT and prints the loss of
// every step and every given variable's final value.
//
// usage: model_parity_tool CASE_FILE
// CASE_FILE lines: `model resnet|bert`, `batch B`, `steps N`,
// `option KEY VALUE` (resnet: width, blocks_per_stage, weight_decay,
// momentum, batch_norm_momentum; bert: BertOptions' fields),
// `boundaries V...`, `values V...` (resnet's schedule), `var NAME V...`,
// `x STEP V...` (the step's images [B, 28, 28, 1], or input_ids [B, S]),
// `lengths STEP V...` (bert), `y STEP V...` (the labels).
// Output: `loss STEP VALUE` per step, then `var NAME V...`.
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/ResNetModel.h"
#include "examples/sst2/Bert.h"

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Train.h"

#include <iostream>
#include <map>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::string model;
  int64_t batch = 0, steps = 0;
  std::map<std::string, double> options;
  std::vector<double> boundaries, values;
  std::vector<std::pair<std::string, std::vector<double>>> vars;
  std::map<int64_t, std::vector<double>> x, y, lengths;
  double option(const char *name, double fallback) const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

Case readCase(const std::string &path) {
  Case k;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "model") {
      k.model = line.next<std::string>();
    } else if (key == "batch") {
      k.batch = line.next<int64_t>();
    } else if (key == "steps") {
      k.steps = line.next<int64_t>();
    } else if (key == "option") {
      std::string name = line.next<std::string>();
      k.options[name] = line.next<double>();
    } else if (key == "boundaries") {
      k.boundaries = line.numbers();
    } else if (key == "values") {
      k.values = line.numbers();
    } else if (key == "var") {
      std::string name = line.next<std::string>();
      k.vars.emplace_back(name, line.numbers());
    } else if (key == "x" || key == "y" || key == "lengths") {
      int64_t step = line.next<int64_t>();
      (key == "x" ? k.x : key == "y" ? k.y : k.lengths)[step] = line.numbers();
    } else {
      line.unknown();
    }
  });
  return k;
}

graph::GraphDef resnetGraph(const Case &k) {
  examples::ResNetOptions o;
  auto option = [&](const char *name, double fallback) {
    return k.option(name, fallback);
  };
  o.width = static_cast<int64_t>(option("width", 16));
  o.blocks_per_stage = static_cast<int64_t>(option("blocks_per_stage", 2));
  o.weight_decay = option("weight_decay", o.weight_decay);
  o.momentum = option("momentum", o.momentum);
  o.batch_norm_momentum = option("batch_norm_momentum", 0.99);
  o.lr_boundaries = k.boundaries;
  o.lr_values = k.values;
  InputSpec inputs{{{"x", DType::Float32, {-1, 28, 28, 1}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
  Graph g;
  build_mode(g, ModeKeys::TRAIN, inputs,
             [&](Graph &graph, const TensorMap &features, const Tensor &labels,
                 ModeKeys) {
               Tensor logits = examples::resnet_logits(features["x"], true, o);
               Signature s;
               s.loss = examples::resnet_loss(graph, labels, logits, o);
               s.train_op = examples::resnet_train_op(graph, s.loss, o);
               return s;
             });
  return g.graph_def();
}

graph::GraphDef bertGraph(const Case &k) {
  examples::BertOptions o;
  auto i64 = [&](const char *name, int64_t fallback) {
    return static_cast<int64_t>(k.option(name, static_cast<double>(fallback)));
  };
  o.vocab_size = i64("vocab_size", 0);
  o.hidden_size = i64("hidden_size", o.hidden_size);
  o.num_layers = i64("num_layers", o.num_layers);
  o.num_heads = i64("num_heads", o.num_heads);
  o.intermediate_size = i64("intermediate_size", o.intermediate_size);
  o.max_position_embeddings =
      i64("max_position_embeddings", o.max_position_embeddings);
  o.type_vocab_size = i64("type_vocab_size", o.type_vocab_size);
  o.seq_length = i64("seq_length", o.seq_length);
  o.hidden_dropout = k.option("hidden_dropout", 0.0);
  o.attention_dropout = k.option("attention_dropout", 0.0);
  o.num_classes = i64("num_classes", o.num_classes);
  o.learning_rate = k.option("learning_rate", o.learning_rate);
  o.num_train_steps = i64("num_train_steps", o.num_train_steps);
  o.num_warmup_steps = i64("num_warmup_steps", o.num_warmup_steps);
  InputSpec inputs{{{"input_ids", DType::Int64, {-1, o.seq_length}},
                    {"lengths", DType::Int64, {-1}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
  Graph g;
  build_mode(g, ModeKeys::TRAIN, inputs,
             [&](Graph &graph, const TensorMap &features, const Tensor &labels,
                 ModeKeys) {
               Tensor logits = examples::bert_logits(
                   features["input_ids"], features["lengths"], true, o);
               Signature s;
               s.loss = losses::sparse_softmax_cross_entropy(labels, logits);
               s.train_op = examples::bert_train_op(graph, s.loss, o);
               return s;
             });
  return g.graph_def();
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(
      initTool("model_parity_tool", argc, argv, "model_parity_tool CASE_FILE"));
  if (k.model != "resnet" && k.model != "bert")
    die("unknown model '" + k.model + "' (resnet, bert)");
  graph::GraphDef def = k.model == "resnet" ? resnetGraph(k) : bertGraph(k);

  std::unique_ptr<JitModel> compiled = compileOrDie(def, "Parity");
  JitModel &model = *compiled;
  model.run(model.function_index("init"));
  setVariables(model, k.vars);
  int train = functionOrDie(model, "train");
  model.set_batch(k.batch);
  std::cout.precision(9);
  for (int64_t step = 0; step < k.steps; ++step) {
    if (k.model == "resnet") {
      feed(model, train, "features/x", k.x.at(step));
    } else {
      feed(model, train, "features/input_ids", k.x.at(step));
      feed(model, train, "features/lengths", k.lengths.at(step));
    }
    feed(model, train, "labels", k.y.at(step));
    model.run(train);
    std::cout << "loss " << step << " " << *output(model, train, "loss")
              << "\n";
  }
  printVariables(model, k.vars);
  return 0;
}
