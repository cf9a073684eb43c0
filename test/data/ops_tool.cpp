//===- ops_tool.cpp - estc's side of the op oracle ----------------------===//
//
// test/e2e/tf_ops_compat.py writes the cases it ran in TensorFlow (each
// case's inputs and, for every float output, the weights c of the loss);
// this tool builds the case of the same name (test/data/op_cases/*.cpp,
// OpCases.h) on fed inputs, compiles every case into one model with the JIT
// and prints each case's outputs and the gradient of
//   loss = sum_k sum(out_k * c_k)
// with respect to every input marked differentiable: the input plus a zero
// variable, trained one step of SGD with learning rate 1, leaves the
// variable at -gradient. When the whole model does not compile, each case is
// compiled on its own so that one failing case names itself.
//
// usage: ops_tool CASES_FILE   (ops_tool --list: the case names)
// CASES_FILE, per case:
//   case NAME
//   input DTYPE GRAD RANK D... VALUES...     (DTYPE f32|f64|i32|i64|bool)
//   weights K RANK D... VALUES...            (output K's loss weights)
//   end
// Output, per case: `case NAME`, then `error MESSAGE`, or
// `out K DTYPE RANK D... : VALUES...` per output and
// `grad I : VALUES...` per differentiable input; then `end`.
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"
#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

using namespace estc;
using namespace estc::tooling;

namespace estc::opcases {
std::map<std::string, Build> &registry() {
  static std::map<std::string, Build> cases;
  return cases;
}
Registrar::Registrar(const char *name, Build build) {
  if (!registry().emplace(name, std::move(build)).second) {
    std::cerr << "ops_tool: case '" << name << "' is defined twice\n";
    std::abort();
  }
}
} // namespace estc::opcases

namespace {

struct Array {
  DType dtype = DType::Float32;
  Dims shape;
  std::vector<double> values;
};

struct Case {
  std::string name;
  std::vector<Array> inputs;
  std::vector<bool> grad;
  std::map<int, Array> weights; // output index -> c
  // Filled while building (the same in every mode).
  std::string error;
  std::vector<std::pair<DType, Dims>> outputs;
  std::map<size_t, std::string> variables; // input -> its zero variable
};

DType parseDType(const std::string &s) {
  if (s == "f32")
    return DType::Float32;
  if (s == "f64")
    return DType::Float64;
  if (s == "i32")
    return DType::Int32;
  if (s == "i64")
    return DType::Int64;
  if (s == "bool")
    return DType::Bool;
  die("unknown dtype '" + s + "'");
}

Array readArray(CaseLine &line, DType dtype) {
  Array a;
  a.dtype = dtype;
  int64_t rank = line.next<int64_t>(), n = 1;
  for (int64_t i = 0; i < rank; ++i) {
    a.shape.push_back(line.next<int64_t>());
    n *= a.shape.back();
  }
  // numbers() reads the "nan", "inf" and "-inf" the driver prints for
  // non-finite inputs.
  a.values = line.numbers();
  if (static_cast<int64_t>(a.values.size()) != n)
    die("an array of " + std::to_string(n) + " elements has " +
        std::to_string(a.values.size()) + " values");
  return a;
}

std::vector<Case> readCases(const std::string &path) {
  std::vector<Case> cases;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "end")
      return;
    if (key == "case") {
      cases.emplace_back();
      cases.back().name = line.next<std::string>();
      return;
    }
    if (cases.empty())
      die("'" + key + "' before the first case");
    Case &c = cases.back();
    if (key == "input") {
      DType dtype = parseDType(line.next<std::string>());
      int grad = line.next<int>();
      c.inputs.push_back(readArray(line, dtype));
      c.grad.push_back(grad != 0);
    } else if (key == "weights") {
      int k = line.next<int>();
      c.weights[k] = readArray(line, DType::Float32);
    } else {
      line.unknown();
    }
  });
  return cases;
}

bool isFloat(DType d) { return d == DType::Float32 || d == DType::Float64; }

std::string prefix(size_t index) { return "k" + std::to_string(index); }

/// The model of `cases` (indices into `all`): TRAIN (when some input is
/// differentiable) and PREDICT.
graph::GraphDef buildModel(std::vector<Case> &all,
                           const std::vector<size_t> &which, bool &trains) {
  InputSpec spec;
  trains = false;
  for (size_t ci : which) {
    Case &c = all[ci];
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      spec.features.push_back({prefix(ci) + "_x" + std::to_string(i),
                               c.inputs[i].dtype, c.inputs[i].shape});
      trains = trains || c.grad[i];
    }
    for (const auto &[k, w] : c.weights)
      spec.features.push_back(
          {prefix(ci) + "_w" + std::to_string(k), DType::Float32, w.shape});
  }
  auto modelFn = [&](Graph &g, const TensorMap &features, const Tensor &,
                     ModeKeys mode) {
    Signature s;
    std::vector<Tensor> losses;
    std::vector<Variable> vars;
    for (size_t ci : which) {
      Case &c = all[ci];
      if (!c.error.empty())
        continue;
      auto scope = g.name_scope(prefix(ci));
      opcases::Inputs in;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        Tensor x = features[prefix(ci) + "_x" + std::to_string(i)];
        if (c.grad[i]) {
          Variable v =
              g.get_variable("g" + std::to_string(i), c.inputs[i].dtype,
                             c.inputs[i].shape, zeros_initializer(),
                             /*trainable=*/true, /*reuse=*/true);
          c.variables[i] = v.name();
          vars.push_back(v);
          x = add(x, v.read());
        }
        in.push_back(x);
      }
      opcases::Outputs out;
      try {
        out = opcases::registry().at(c.name)(g, in);
      } catch (const std::exception &e) {
        c.error = e.what();
        continue;
      }
      c.outputs.clear();
      for (size_t k = 0; k < out.size(); ++k) {
        c.outputs.emplace_back(out[k].dtype(), out[k].shape());
        s.predictions.set(prefix(ci) + "_o" + std::to_string(k), out[k]);
        auto w = c.weights.find(static_cast<int>(k));
        if (mode == ModeKeys::TRAIN && w != c.weights.end() &&
            isFloat(out[k].dtype())) {
          Tensor weights = features[prefix(ci) + "_w" + std::to_string(k)];
          Tensor y = out[k].dtype() == DType::Float32
                         ? out[k]
                         : cast(out[k], DType::Float32);
          losses.push_back(reduce_sum(multiply(y, weights)));
        }
      }
    }
    if (mode == ModeKeys::TRAIN) {
      Tensor loss = losses.empty() ? g.constant(0.0) : losses[0];
      for (size_t i = 1; i < losses.size(); ++i)
        loss = add(loss, losses[i]);
      s.loss = loss;
      s.train_op = train::GradientDescentOptimizer(1.0).minimize(loss, vars);
    }
    return s;
  };
  Graph g;
  if (trains)
    build_mode(g, ModeKeys::TRAIN, spec, modelFn);
  build_mode(g, ModeKeys::PREDICT, spec, modelFn);
  return g.graph_def();
}

/// Feeds `a` to input `features/<key>` of `fn` when `fn` uses it.
void feedArray(JitModel &model, int fn, const std::string &key,
               const Array &a) {
  feed(model, fn, "features/" + key, a.values, /*optional=*/true);
}

int64_t count(const Dims &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void printValues(std::ostream &os, DType dtype, const void *data, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    os << ' ';
    switch (dtype) {
    case DType::Float32:
      os << static_cast<const float *>(data)[i];
      break;
    case DType::Float64:
      os << static_cast<const double *>(data)[i];
      break;
    case DType::Int32:
      os << static_cast<const int32_t *>(data)[i];
      break;
    case DType::Int64:
      os << static_cast<const int64_t *>(data)[i];
      break;
    case DType::Bool:
      os << (static_cast<const bool *>(data)[i] ? 1 : 0);
      break;
    default:
      os << "?";
    }
  }
}

/// Compiles and runs `which`; false (and `error`) when the model does not
/// compile.
bool run(std::vector<Case> &all, const std::vector<size_t> &which,
         const std::string &cacheDir, std::string &error,
         std::ostringstream &os) {
  bool trains = false;
  graph::GraphDef def = buildModel(all, which, trains);
  auto compiled = compile(def, "Ops", cacheDir, /*quiet=*/true);
  if (!compiled) {
    error = llvm::toString(compiled.takeError());
    return false;
  }
  JitModel &model = **compiled;
  model.run(model.function_index("init"));
  int predict = model.function_index("predict");
  int train = trains ? model.function_index("train") : -1;
  for (int fn : {predict, train}) {
    if (fn < 0)
      continue;
    for (size_t ci : which) {
      const Case &c = all[ci];
      for (size_t i = 0; i < c.inputs.size(); ++i)
        feedArray(model, fn, prefix(ci) + "_x" + std::to_string(i),
                  c.inputs[i]);
      for (const auto &[k, w] : c.weights)
        feedArray(model, fn, prefix(ci) + "_w" + std::to_string(k), w);
    }
  }
  model.run(predict);
  if (train >= 0)
    model.run(train);
  os.precision(9);
  for (size_t ci : which) {
    const Case &c = all[ci];
    os << "case " << c.name << "\n";
    if (!c.error.empty()) {
      os << "error " << c.error << "\nend\n";
      continue;
    }
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      const auto &[dtype, shape] = c.outputs[k];
      os << "out " << k << ' ' << estc::to_string(dtype) << ' ' << shape.size();
      for (int64_t d : shape)
        os << ' ' << d;
      os << " :";
      int index = model.output_index(predict, "predictions/" + prefix(ci) +
                                                  "_o" + std::to_string(k));
      printValues(os, dtype, model.output_data(predict, index), count(shape));
      os << "\n";
    }
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.grad[i])
        continue;
      int v = model.variable_index(c.variables.at(i));
      int64_t n = count(c.inputs[i].shape);
      std::vector<double> g(n);
      for (int64_t j = 0; j < n; ++j)
        g[j] = c.inputs[i].dtype == DType::Float64
                   ? -static_cast<const double *>(model.variable_data(v))[j]
                   : -static_cast<const float *>(model.variable_data(v))[j];
      os << "grad " << i << " :";
      printValues(os, DType::Float64, g.data(), n);
      os << "\n";
    }
    os << "end\n";
  }
  return true;
}

/// Compiles and runs the cases `all` as one model and prints their results;
/// when it does not compile, each case alone.
void runChunk(std::vector<Case> &cases, const std::vector<size_t> &all,
              const std::string &cache);

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto &[name, build] : opcases::registry())
      std::cout << name << "\n";
    return 0;
  }
  std::vector<Case> cases = readCases(
      initTool("ops_tool", argc, argv, "ops_tool CASES_FILE | --list"));
  std::vector<size_t> all;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!opcases::registry().count(cases[i].name))
      cases[i].error = "no estc case named '" + cases[i].name +
                       "' (test/data/op_cases/*.cpp)";
    all.push_back(i);
  }
  std::string cache = temporaryCacheDir();
  // The cases in models of kChunk cases each: one model of all 183 spent
  // 165 s in LLVM's ScalarEvolution (isBasicBlockEntryGuardedByCond walks
  // the chain of blocks before each loop: quadratic in a function of
  // thousands of loops), a dozen models of 16 a fraction of it.
  constexpr size_t kChunk = 16;
  for (size_t begin = 0; begin < all.size(); begin += kChunk) {
    std::vector<size_t> chunk(
        all.begin() + static_cast<std::ptrdiff_t>(begin),
        all.begin() +
            static_cast<std::ptrdiff_t>(std::min(all.size(), begin + kChunk)));
    runChunk(cases, chunk, cache);
  }
  return 0;
}

namespace {
void runChunk(std::vector<Case> &cases, const std::vector<size_t> &all,
              const std::string &cache) {
  std::string error;
  std::ostringstream os;
  if (run(cases, all, cache, error, os)) {
    std::cout << os.str();
    return;
  }
  // Isolate: each case on its own, so that the failing ones name themselves.
  for (size_t i : all) {
    std::ostringstream one;
    std::string caseError;
    if (run(cases, {i}, cache, caseError, one)) {
      std::cout << one.str();
      continue;
    }
    std::string line = caseError.substr(0, caseError.find('\n'));
    std::cout << "case " << cases[i].name
              << "\nerror does not compile: " << line << "\nend\n";
  }
}
} // namespace
