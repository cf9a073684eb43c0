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
// CASE_FILE lines: `model resnet`, `batch B`, `steps N`,
// `option KEY VALUE` (resnet: width, blocks_per_stage, weight_decay,
// momentum, batch_norm_momentum), `boundaries V...`, `values V...`,
// `var NAME V...`, `x STEP V...` (the step's images [B, 28, 28, 1]),
// `y STEP V...` (its labels).
// Output: `loss STEP VALUE` per step, then `var NAME V...`.
//
//===----------------------------------------------------------------------===//

#include "examples/fashion_mnist/ResNetModel.h"

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"

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
  std::map<int64_t, std::vector<double>> x, y;
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
    } else if (key == "x" || key == "y") {
      int64_t step = 0;
      words >> step;
      (key == "x" ? k.x : k.y)[step] = numbers();
    } else {
      die("unknown line '" + key + "'");
    }
  }
  return k;
}

graph::GraphDef resnetGraph(const Case &k) {
  examples::ResNetOptions o;
  auto option = [&](const char *name, double fallback) {
    auto it = k.options.find(name);
    return it == k.options.end() ? fallback : it->second;
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

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    die("usage: model_parity_tool CASE_FILE");
  Case k = readCase(argv[1]);
  if (k.model != "resnet")
    die("unknown model '" + k.model + "' (resnet)");
  graph::GraphDef def = resnetGraph(k);

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
    auto *x = static_cast<float *>(
        model.input_data(train, model.input_index(train, "features/x")));
    auto *y = static_cast<int64_t *>(
        model.input_data(train, model.input_index(train, "labels")));
    const std::vector<double> &xs = k.x.at(step), &ys = k.y.at(step);
    for (size_t i = 0; i < xs.size(); ++i)
      x[i] = static_cast<float>(xs[i]);
    for (size_t i = 0; i < ys.size(); ++i)
      y[i] = static_cast<int64_t>(ys[i]);
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
