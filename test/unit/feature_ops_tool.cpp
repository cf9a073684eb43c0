//===- feature_ops_tool.cpp - Feature-column ops for tf_feature_ops_compat
//-===//
//
// Builds the graph-side feature-column ops of lib/Graph (Ops.h: bucketize,
// safe_embedding_lookup_sparse, sparse_to_indicator; Layers.h:
// batch_normalization) on random inputs from a fixed seed, evaluates each
// graph with the reference evaluator and with the JIT-compiled model, and
// prints one JSON document: every case's inputs and both results.
// test/e2e/tf_feature_ops_compat.py runs TensorFlow 2.15 on the same inputs
// and compares.
//
//   feature_ops_tool [--seed=N] > cases.json
//
// Errors (a graph that does not compile, a reference failure): one line on
// stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "test/reference/ReferenceEvaluator.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace estc;
using reference::Value;
namespace g = graph;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::cerr << "feature_ops_tool: " << message << "\n";
  std::exit(1);
}

// --- JSON output ---------------------------------------------------------

std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "Infinity" : "-Infinity";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string list(const std::vector<double> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + number(values[i]);
  return s + "]";
}

std::string list(const std::vector<int64_t> &values) {
  return list(std::vector<double>(values.begin(), values.end()));
}

std::string quoted(const std::string &s) { return "\"" + s + "\""; }

/// {"shape": [...], "data": [...]}
std::string tensor(const Value &v) {
  return "{\"shape\": " + list(v.shape) + ", \"data\": " + list(v.data) + "}";
}

// --- Values ----------------------------------------------------------------

Value randomValue(g::DataType dtype, const Dims &shape, double lo, double hi,
                  std::mt19937 &rng) {
  Value v;
  v.dtype = dtype;
  v.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i) {
    double x = std::uniform_real_distribution<double>(lo, hi)(rng);
    if (dtype == g::DT_INT64 || dtype == g::DT_INT32)
      x = std::floor(x);
    else if (dtype == g::DT_FLOAT)
      x = static_cast<float>(x);
    v.data.push_back(x);
  }
  return v;
}

Value values(g::DataType dtype, const Dims &shape, std::vector<double> data) {
  return Value(dtype, shape, std::move(data));
}

void store(const Value &v, void *buffer) {
  for (size_t i = 0; i < v.data.size(); ++i) {
    switch (v.dtype) {
    case g::DT_FLOAT:
      static_cast<float *>(buffer)[i] = static_cast<float>(v.data[i]);
      break;
    case g::DT_DOUBLE:
      static_cast<double *>(buffer)[i] = v.data[i];
      break;
    case g::DT_INT64:
      static_cast<int64_t *>(buffer)[i] = static_cast<int64_t>(v.data[i]);
      break;
    case g::DT_INT32:
      static_cast<int32_t *>(buffer)[i] = static_cast<int32_t>(v.data[i]);
      break;
    default:
      die("unsupported dtype");
    }
  }
}

std::vector<double> load(g::DataType dtype, const void *buffer, size_t n) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
    case g::DT_FLOAT:
      out[i] = static_cast<const float *>(buffer)[i];
      break;
    case g::DT_DOUBLE:
      out[i] = static_cast<const double *>(buffer)[i];
      break;
    case g::DT_INT64:
      out[i] = static_cast<double>(static_cast<const int64_t *>(buffer)[i]);
      break;
    case g::DT_INT32:
      out[i] = static_cast<const int32_t *>(buffer)[i];
      break;
    default:
      die("unsupported dtype");
    }
  }
  return out;
}

// --- Compiling and running ---------------------------------------------------

JitCompiler &jit() {
  static JitCompiler compiler = [] {
    llvm::SmallString<128> dir;
    if (llvm::sys::fs::createUniqueDirectory("estc-feature-ops", dir))
      die("cannot create a cache directory");
    JitOptions options;
    options.cacheDir = std::string(dir);
    return JitCompiler(options);
  }();
  return compiler;
}

std::unique_ptr<JitModel> compile(const g::GraphDef &graph) {
  auto model =
      jitCompileGraph(jit(), graph, "FeatureOps", [](llvm::StringRef warning) {
        die("warning: " + warning.str());
      });
  if (!model)
    die(llvm::toString(model.takeError()));
  return std::move(*model);
}

/// Runs `function` of `model` on `inputs` (keyed as the function's inputs,
/// "features/x"); returns the outputs named in `outputs`, of `shapes`.
std::map<std::string, std::vector<double>> runCompiled(
    JitModel &model, const std::string &function,
    const std::map<std::string, Value> &inputs,
    const std::map<std::string, std::pair<g::DataType, size_t>> &outputs) {
  int fn = model.function_index(function);
  if (fn < 0)
    die("no function " + function);
  model.set_batch(1);
  for (const auto &[key, value] : inputs) {
    int index = model.input_index(fn, key);
    if (index < 0)
      die("no input " + key);
    store(value, model.input_data(fn, index));
  }
  model.run(fn);
  std::map<std::string, std::vector<double>> result;
  for (const auto &[key, typeAndSize] : outputs) {
    int index = model.output_index(fn, key);
    if (index < 0)
      die("no output " + key);
    result[key] = load(typeAndSize.first, model.output_data(fn, index),
                       typeAndSize.second);
  }
  return result;
}

/// A PREDICT graph over `features` (static shapes) with `body`'s outputs.
g::GraphDef
predictGraph(const std::vector<std::pair<std::string, Value>> &features,
             const std::function<TensorMap(Graph &, const TensorMap &)> &body) {
  Graph graph;
  InputSpec inputs;
  for (const auto &[key, value] : features)
    inputs.features.push_back(
        TensorSpec{key, from_proto(value.dtype), value.shape});
  build_mode(graph, ModeKeys::PREDICT, inputs,
             [&](Graph &gr, const TensorMap &x, const Tensor &, ModeKeys) {
               Signature spec;
               spec.predictions = body(gr, x);
               return spec;
             });
  return graph.graph_def();
}

/// The predictions of `graph` from the reference and the compiled model,
/// as JSON members "<key>": {"shape", "reference", "compiled"}.
std::string
predictBoth(const g::GraphDef &graph,
            const std::vector<std::pair<std::string, Value>> &features) {
  std::map<std::string, Value> feeds, inputs;
  for (const auto &[key, value] : features) {
    feeds[key] = value;
    inputs["features/" + key] = value;
  }
  reference::Evaluator evaluator(graph);
  std::map<std::string, Value> expected = evaluator.run("predict", feeds);
  std::map<std::string, std::pair<g::DataType, size_t>> outputs;
  for (const auto &[key, value] : expected)
    outputs[key] = {value.dtype, value.data.size()};
  std::unique_ptr<JitModel> model = compile(graph);
  auto compiled = runCompiled(*model, "predict", inputs, outputs);
  std::string s;
  for (const auto &[key, value] : expected) {
    std::string name = key.substr(std::strlen("predictions/"));
    s += (s.empty() ? "" : ", ") + quoted(name) +
         ": {\"shape\": " + list(value.shape) +
         ", \"reference\": " + list(value.data) +
         ", \"compiled\": " + list(compiled.at(key)) + "}";
  }
  return "{" + s + "}";
}

// --- Cases -------------------------------------------------------------------

/// Sparse ids of `batch` rows, each with 0 to 4 ids in [0, vocab) (the
/// first row always has some, one row none when batch > 2).
struct SparseCase {
  std::vector<double> ids, rows, rowLengths, weights;
};

SparseCase randomSparse(int64_t batch, int64_t vocab, std::mt19937 &rng) {
  SparseCase c;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t n = std::uniform_int_distribution<int64_t>(0, 4)(rng);
    if (r == 0)
      n = 3;
    if (r == 2)
      n = 0;
    c.rowLengths.push_back(static_cast<double>(n));
    for (int64_t k = 0; k < n; ++k) {
      c.ids.push_back(static_cast<double>(
          std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng)));
      c.rows.push_back(static_cast<double>(r));
      // Some zero and negative weights (pruned by mean and sqrtn).
      double w = std::uniform_real_distribution<double>(-0.5, 2.0)(rng);
      if (k == 1)
        w = 0.0;
      c.weights.push_back(static_cast<float>(w));
    }
  }
  // A duplicate id in row 0.
  c.ids[1] = c.ids[0];
  return c;
}

std::string lookupCase(const Dims &paramsShape, int64_t batch, double maxNorm,
                       std::mt19937 &rng) {
  SparseCase sp = randomSparse(batch, paramsShape[0], rng);
  int64_t n = static_cast<int64_t>(sp.ids.size());
  Value params = randomValue(g::DT_FLOAT, paramsShape, -1.5, 1.5, rng);
  std::vector<std::pair<std::string, Value>> features = {
      {"params", params},
      {"ids", values(g::DT_INT64, {n}, sp.ids)},
      {"rows", values(g::DT_INT64, {n}, sp.rows)},
      {"row_lengths", values(g::DT_INT64, {batch}, sp.rowLengths)},
      {"weights", values(g::DT_FLOAT, {n}, sp.weights)}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    SparseIds plain{x["ids"], x["rows"], x["row_lengths"], Tensor()};
    SparseIds weighted = plain;
    weighted.weights = x["weights"];
    TensorMap out;
    for (const char *combiner : {"sum", "mean", "sqrtn"})
      for (bool w : {false, true})
        for (double m : {0.0, maxNorm})
          out.set(std::string(combiner) + (w ? "/weighted" : "/plain") +
                      (m > 0 ? "/clipped" : "/unclipped"),
                  safe_embedding_lookup_sparse(
                      x["params"], w ? weighted : plain, combiner, m));
    return out;
  });
  return "{\"kind\": \"lookup\", \"params\": " + tensor(params) +
         ", \"ids\": " + list(sp.ids) + ", \"rows\": " + list(sp.rows) +
         ", \"row_lengths\": " + list(sp.rowLengths) +
         ", \"weights\": " + list(sp.weights) +
         ", \"max_norm\": " + number(maxNorm) +
         ", \"results\": " + predictBoth(graph, features) + "}";
}

std::string indicatorCase(int64_t batch, int64_t depth, std::mt19937 &rng) {
  SparseCase sp = randomSparse(batch, depth, rng);
  int64_t n = static_cast<int64_t>(sp.ids.size());
  std::vector<std::pair<std::string, Value>> features = {
      {"ids", values(g::DT_INT64, {n}, sp.ids)},
      {"rows", values(g::DT_INT64, {n}, sp.rows)},
      {"row_lengths", values(g::DT_INT64, {batch}, sp.rowLengths)},
      {"weights", values(g::DT_FLOAT, {n}, sp.weights)}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &x) {
    SparseIds plain{x["ids"], x["rows"], x["row_lengths"], Tensor()};
    SparseIds weighted = plain;
    weighted.weights = x["weights"];
    return TensorMap{{"plain", sparse_to_indicator(plain, depth)},
                     {"weighted", sparse_to_indicator(weighted, depth)}};
  });
  return "{\"kind\": \"indicator\", \"depth\": " + number(double(depth)) +
         ", \"ids\": " + list(sp.ids) + ", \"rows\": " + list(sp.rows) +
         ", \"row_lengths\": " + list(sp.rowLengths) +
         ", \"weights\": " + list(sp.weights) +
         ", \"results\": " + predictBoth(graph, features) + "}";
}

std::string bucketizeCase(std::mt19937 &rng) {
  // Elements on boundaries, just beside them (in f32), NaN, infinities,
  // -0, f32 0.7 against the boundary 0.7, then random ones.
  std::vector<double> x = {std::nan(""),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           -0.0,
                           0.0,
                           static_cast<float>(0.7),
                           1.5,
                           std::nextafter(1.5f, 2.0f),
                           std::nextafter(1.5f, 0.0f),
                           -1.0};
  for (int i = 0; i < 30; ++i)
    x.push_back(static_cast<float>(
        std::uniform_real_distribution<double>(-2.5, 2.5)(rng)));
  std::vector<double> ints = {-3, -2, -1,       0,        1,
                              2,  3,  16777215, 16777216, 16777217};
  std::vector<double> few = {-1.0, 0.0, 0.7, 1.5};
  std::vector<double> ties = {0.0, 0.0, 1.5, 1.5};
  std::vector<double> many;
  for (int i = 0; i < 41; ++i)
    many.push_back(-2.0 + 0.1 * i);
  std::vector<double> intBounds = {-1.5, 0.0, 0.0, 2.0, 16777217.0};
  int64_t nx = static_cast<int64_t>(x.size());
  int64_t ni = static_cast<int64_t>(ints.size());
  std::vector<std::pair<std::string, Value>> features = {
      {"x", values(g::DT_FLOAT, {nx}, x)},
      {"x64", values(g::DT_DOUBLE, {nx}, x)},
      {"i", values(g::DT_INT64, {ni}, ints)}};
  g::GraphDef graph = predictGraph(features, [&](Graph &, const TensorMap &in) {
    return TensorMap{{"few", bucketize(in["x"], few)},
                     {"ties", bucketize(in["x"], ties)},
                     {"none", bucketize(in["x"], {})},
                     {"many", bucketize(in["x"], many)},
                     {"many64", bucketize(in["x64"], many)},
                     {"int", bucketize(in["i"], intBounds)}};
  });
  return "{\"kind\": \"bucketize\", \"x\": " + list(x) +
         ", \"ints\": " + list(ints) +
         ", \"boundaries\": {\"few\": " + list(few) +
         ", \"ties\": " + list(ties) +
         ", \"none\": [], \"many\": " + list(many) +
         ", \"many64\": " + list(many) + ", \"int\": " + list(intBounds) +
         "}, \"results\": " + predictBoth(graph, features) + "}";
}

/// Two layers on x: batch_normalization(training) and, with its own
/// variables, batch_normalization(not training); a TRAIN signature runs the
/// first's moving-statistics updates (train_op = group(update_ops)). The
/// initial variables are random (variances positive); the results are both
/// outputs and every variable after the step.
std::string batchNormCase(const Dims &shape, int64_t axis, std::mt19937 &rng) {
  Value x = randomValue(g::DT_FLOAT, shape, -3, 3, rng);
  Graph graph;
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, shape});
  std::string yTrain, yInfer;
  build_mode(graph, ModeKeys::TRAIN, inputs,
             [&](Graph &gr, const TensorMap &f, const Tensor &, ModeKeys) {
               Tensor a = layers::batch_normalization(f["x"], true, axis);
               Tensor b = layers::batch_normalization(f["x"], false, axis);
               yTrain = a.name();
               yInfer = b.name();
               Signature spec;
               spec.loss = add(reduce_sum(a), reduce_sum(b));
               spec.train_op = group(gr.get_collection("update_ops"));
               return spec;
             });
  g::GraphDef def = graph.graph_def();
  g::SignatureDef &sig = (*def.mutable_signature())["train"];
  g::Binding *t = sig.add_tensors();
  t->set_key("y_train");
  t->set_node(yTrain);
  t = sig.add_tensors();
  t->set_key("y_infer");
  t->set_node(yInfer);

  std::map<std::string, Value> initial;
  std::string names;
  for (const g::VariableDef &v : def.variable()) {
    Dims s(v.shape().dim().begin(), v.shape().dim().end());
    bool positive = v.name().find("variance") != std::string::npos ||
                    v.name().find("gamma") != std::string::npos;
    initial[v.name()] =
        randomValue(g::DT_FLOAT, s, positive ? 0.5 : -1.0, 2.0, rng);
    names += (names.empty() ? "" : ", ") + quoted(v.name());
  }

  reference::Evaluator evaluator(def);
  evaluator.variables() = initial;
  std::vector<std::string> nodes = {yTrain, yInfer, sig.train_op()};
  std::vector<Value> ref =
      evaluator.evaluate(nodes, {{sig.features(0).node(), x}});

  std::unique_ptr<JitModel> model = compile(def);
  for (const auto &[name, value] : initial) {
    int index = model->variable_index(name);
    if (index < 0)
      die("no variable " + name);
    store(value, model->variable_data(index));
  }
  size_t n = x.data.size();
  auto out = runCompiled(*model, "train", {{"features/x", x}},
                         {{"tensors/y_train", {g::DT_FLOAT, n}},
                          {"tensors/y_infer", {g::DT_FLOAT, n}}});

  std::string vars;
  for (const auto &[name, value] : initial) {
    int index = model->variable_index(name);
    std::vector<double> compiled =
        load(g::DT_FLOAT, model->variable_data(index), value.data.size());
    vars += (vars.empty() ? "" : ", ") + quoted(name) +
            ": {\"initial\": " + list(value.data) +
            ", \"reference\": " + list(evaluator.variables().at(name).data) +
            ", \"compiled\": " + list(compiled) + "}";
  }
  return "{\"kind\": \"batch_norm\", \"axis\": " + number(double(axis)) +
         ", \"x\": " + tensor(x) + ", \"variable_names\": [" + names +
         "], \"variables\": {" + vars +
         "}, \"results\": {\"y_train\": " + "{\"shape\": " + list(x.shape) +
         ", \"reference\": " + list(ref[0].data) +
         ", \"compiled\": " + list(out.at("tensors/y_train")) +
         "}, \"y_infer\": {\"shape\": " + list(x.shape) +
         ", \"reference\": " + list(ref[1].data) +
         ", \"compiled\": " + list(out.at("tensors/y_infer")) + "}}}";
}

} // namespace

int main(int argc, char **argv) {
  unsigned seed = 13;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--seed=", 0) == 0)
      seed = static_cast<unsigned>(std::stoul(arg.substr(7)));
    else
      die("unknown argument '" + arg +
          "' (usage: feature_ops_tool "
          "[--seed=N])");
  }
  std::mt19937 rng(seed);
  std::vector<std::string> cases;
  try {
    cases.push_back(lookupCase({9, 4}, 5, 1.0, rng));
    cases.push_back(lookupCase({20, 3}, 7, 0.6, rng));
    cases.push_back(lookupCase({6, 1}, 3, 0.3, rng));
    cases.push_back(lookupCase({8, 5}, 4, 1.2, rng));
    cases.push_back(indicatorCase(5, 7, rng));
    cases.push_back(indicatorCase(3, 2, rng));
    cases.push_back(bucketizeCase(rng));
    cases.push_back(batchNormCase({6, 3}, -1, rng));
    cases.push_back(batchNormCase({2, 3, 2, 4}, -1, rng));
    cases.push_back(batchNormCase({2, 3, 2, 2}, 1, rng));
  } catch (const std::exception &e) {
    die(e.what());
  }
  std::cout << "[\n";
  for (size_t i = 0; i < cases.size(); ++i)
    std::cout << cases[i] << (i + 1 < cases.size() ? ",\n" : "\n");
  std::cout << "]\n";
  return 0;
}
