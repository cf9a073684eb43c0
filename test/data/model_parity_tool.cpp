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

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
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
  std::cerr << "model_parity_tool: " << message << "\n";
  std::exit(1);
}

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
    if (key == "model") {
      words >> k.model;
    } else if (key == "batch") {
      words >> k.batch;
    } else if (key == "steps") {
      words >> k.steps;
    } else if (key == "option") {
      std::string name;
      double v = 0;
      words >> name >> v;
      k.options[name] = v;
    } else if (key == "boundaries") {
      k.boundaries = numbers();
    } else if (key == "values") {
      k.values = numbers();
    } else if (key == "var") {
      std::string name;
      words >> name;
      k.vars.emplace_back(name, numbers());
    } else if (key == "x" || key == "y" || key == "lengths") {
      int64_t step = 0;
      words >> step;
      (key == "x" ? k.x : key == "y" ? k.y : k.lengths)[step] = numbers();
    } else {
      die("unknown line '" + key + "'");
    }
  }
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

template <typename T>
void feed(JitModel &model, int fn, const std::string &key,
          const std::vector<double> &values) {
  auto *data =
      static_cast<T *>(model.input_data(fn, model.input_index(fn, key)));
  for (size_t i = 0; i < values.size(); ++i)
    data[i] = static_cast<T>(values[i]);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    die("usage: model_parity_tool CASE_FILE");
  Case k = readCase(argv[1]);
  if (k.model != "resnet" && k.model != "bert")
    die("unknown model '" + k.model + "' (resnet, bert)");
  graph::GraphDef def = k.model == "resnet" ? resnetGraph(k) : bertGraph(k);

  llvm::SmallString<128> cache;
  if (llvm::sys::fs::createUniqueDirectory("estc-parity-tool", cache))
    die("cannot create a cache directory");
  JitOptions options;
  options.cacheDir = std::string(cache);
  JitCompiler jit(options);
  auto compiled = jitCompileGraph(jit, def, "Parity", [](llvm::StringRef w) {
    std::cerr << "warning: " << w.str() << "\n";
  });
  if (!compiled)
    die(llvm::toString(compiled.takeError()));
  JitModel &model = **compiled;
  model.run(model.function_index("init"));
  for (const auto &[name, values] : k.vars) {
    int v = model.variable_index(name);
    int64_t n = model.variable_bytes(v) / 4;
    if (n != static_cast<int64_t>(values.size()))
      die("variable '" + name + "' has " + std::to_string(n) +
          " elements, the case " + std::to_string(values.size()));
    auto *data = static_cast<float *>(model.variable_data(v));
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(values[i]);
  }
  int train = model.function_index("train");
  model.set_batch(k.batch);
  std::cout.precision(9);
  for (int64_t step = 0; step < k.steps; ++step) {
    if (k.model == "resnet") {
      feed<float>(model, train, "features/x", k.x.at(step));
    } else {
      feed<int64_t>(model, train, "features/input_ids", k.x.at(step));
      feed<int64_t>(model, train, "features/lengths", k.lengths.at(step));
    }
    feed<int64_t>(model, train, "labels", k.y.at(step));
    model.run(train);
    std::cout << "loss " << step << " "
              << *static_cast<const float *>(model.output_data(
                     train, model.output_index(train, "loss")))
              << "\n";
  }
  for (const auto &[name, values] : k.vars) {
    int v = model.variable_index(name);
    const auto *data = static_cast<const float *>(model.variable_data(v));
    std::cout << "var " << name;
    for (size_t i = 0; i < values.size(); ++i)
      std::cout << " " << data[i];
    std::cout << "\n";
  }
  return 0;
}
