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

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

using namespace estc;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::cerr << "attention_tool: " << message << "\n";
  std::exit(1);
}

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
  std::ifstream in(path);
  if (!in)
    die("cannot read " + path);
  Case k;
  std::map<std::string, int64_t *> ints = {
      {"batch", &k.batch},    {"tq", &k.tq},
      {"tv", &k.tv},          {"dq", &k.dq},
      {"dv", &k.dv},          {"heads", &k.heads},
      {"key_dim", &k.keyDim}, {"value_dim", &k.valueDim},
      {"steps", &k.steps},    {"output_shape", &k.outputShape}};
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
    if (key == "layer") {
      words >> k.layer;
    } else if (ints.count(key)) {
      words >> *ints[key];
    } else if (key == "lr") {
      words >> k.lr;
    } else if (key == "flags") {
      std::string f;
      while (words >> f)
        k.flags.insert(f);
    } else if (key == "q" || key == "v" || key == "k" || key == "mask" ||
               key == "c") {
      k.data[key] = numbers();
    } else if (key == "var") {
      std::string name;
      words >> name;
      k.vars.emplace_back(name, numbers());
    } else {
      die("unknown line '" + key + "'");
    }
  }
  return k;
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
    die("usage: attention_tool CASE_FILE");
  Case k = readCase(argv[1]);
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

  llvm::SmallString<128> cache;
  llvm::sys::fs::createUniqueDirectory("estc-attention-tool", cache);
  JitOptions options;
  options.cacheDir = std::string(cache);
  JitCompiler jit(options);
  auto compiled = jitCompileGraph(jit, def, "Attention", [](llvm::StringRef w) {
    std::cerr << "warning: " << w.str() << "\n";
  });
  if (!compiled)
    die(llvm::toString(compiled.takeError()));
  JitModel &model = **compiled;
  model.run(model.function_index("init"));
  for (const auto &[name, values] : k.vars) {
    int v = model.variable_index(name);
    if (v < 0)
      die("the model has no variable '" + name + "'");
    int64_t n = model.variable_bytes(v) / 4;
    if (n != static_cast<int64_t>(values.size()))
      die("variable '" + name + "' has " + std::to_string(n) +
          " elements, the case " + std::to_string(values.size()));
    auto *data = static_cast<float *>(model.variable_data(v));
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(values[i]);
  }
  model.set_batch(k.batch);
  auto feed = [&](int fn) {
    for (const TensorSpec &spec : inputs.features) {
      const std::string &name = spec.key;
      int index = model.input_index(fn, "features/" + name);
      auto *xs = static_cast<float *>(model.input_data(fn, index));
      const std::vector<double> &values = k.data[name];
      for (size_t i = 0; i < values.size(); ++i)
        xs[i] = static_cast<float>(values[i]);
    }
  };
  int predict = model.function_index("predict");
  feed(predict);
  model.run(predict);
  print("output",
        static_cast<const float *>(model.output_data(
            predict, model.output_index(predict, "predictions/y"))),
        k.batch * k.tq * out);
  int train = model.function_index("train");
  if (train < 0)
    die("@train was not compiled");
  for (int64_t step = 0; step < k.steps; ++step) {
    feed(train);
    model.run(train);
    print("loss",
          static_cast<const float *>(
              model.output_data(train, model.output_index(train, "loss"))),
          1);
  }
  for (const auto &[name, values] : k.vars) {
    int v = model.variable_index(name);
    print("var " + name, static_cast<const float *>(model.variable_data(v)),
          static_cast<int64_t>(values.size()));
  }
  return 0;
}
