//===- rnn_tool.cpp - estc's recurrent layers for the TF oracle ---------===//
//
// test/e2e/tf_rnn_compat.py writes a case (a Keras layer's configuration,
// its initial weights, a batch with ragged lengths and the loss weights);
// this tool builds the same layer with lib/Graph/Recurrent.h on a run-time
// sequence length, compiles it with the JIT and trains it with SGD:
//   loss = sum(output * c), one step per line
// and prints the first step's output, every step's loss and the final
// weights, which the script compares with TF's.
//
// usage: rnn_tool CASE_FILE
// CASE_FILE lines: `cell lstm|gru|simple_rnn`, `units N`, `batch B`,
// `time T`, `features F`, `flags NAME...` (return_sequences go_backwards
// reset_before bidirectional_<merge>; v1: tf.compat.v1.nn.dynamic_rnn with
// LSTMCell / GRUCell / BasicRNNCell, then multi2: a MultiRNNCell of two,
// bidirectional_dynamic), `steps N`, `lr X`,
// `lengths L...` (optional), `x V...`, `c V...`, `var NAME V...`.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Graph/Train.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

using namespace estc;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::cerr << "rnn_tool: " << message << "\n";
  std::exit(1);
}

struct Case {
  std::string cell;
  int64_t units = 0, batch = 0, time = 0, features = 0, steps = 1;
  double lr = 0.1;
  std::set<std::string> flags;
  std::vector<double> lengths, x, c;
  std::map<std::string, std::vector<double>> vars;
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
    if (key == "cell")
      words >> k.cell;
    else if (key == "units")
      words >> k.units;
    else if (key == "batch")
      words >> k.batch;
    else if (key == "time")
      words >> k.time;
    else if (key == "features")
      words >> k.features;
    else if (key == "steps")
      words >> k.steps;
    else if (key == "lr")
      words >> k.lr;
    else if (key == "flags") {
      std::string f;
      while (words >> f)
        k.flags.insert(f);
    } else if (key == "lengths")
      k.lengths = numbers();
    else if (key == "x")
      k.x = numbers();
    else if (key == "c")
      k.c = numbers();
    else if (key == "var") {
      std::string name;
      words >> name;
      k.vars[name] = numbers();
    } else
      die("unknown line '" + key + "'");
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
    die("usage: rnn_tool CASE_FILE");
  Case k = readCase(argv[1]);
  layers::CellType cell =
      k.cell == "lstm"  ? layers::CellType::LSTM
      : k.cell == "gru" ? layers::CellType::GRU
      : k.cell == "simple_rnn"
          ? layers::CellType::SimpleRNN
          : (die("unknown cell " + k.cell), layers::CellType::LSTM);
  std::string merge;
  bool bidirectional = false;
  for (const std::string &f : k.flags)
    if (f.rfind("bidirectional_", 0) == 0) {
      bidirectional = true;
      merge = f.substr(std::strlen("bidirectional_"));
    }
  bool ragged = !k.lengths.empty();

  InputSpec inputs;
  TensorSpec x{"x", DType::Float32, {-1, -1, k.features}};
  x.sequence_dim = true;
  inputs.features.push_back(x);
  if (ragged)
    inputs.features.push_back(TensorSpec{"lengths", DType::Int32, {-1}});
  int64_t outUnits = (bidirectional && merge == "concat") ||
                             k.flags.count("bidirectional_dynamic")
                         ? 2 * k.units
                         : k.units;
  bool sequences = k.flags.count("return_sequences") != 0;
  std::string lossNode;
  graph::GraphDef def = build_graph_def(
      inputs, [&](Graph &g, const TensorMap &f, const Tensor &, ModeKeys mode) {
        layers::RecurrentOptions o;
        o.return_sequences = sequences;
        o.go_backwards = k.flags.count("go_backwards") != 0;
        o.reset_after = k.flags.count("reset_before") == 0;
        Tensor lengths = ragged ? f["lengths"] : Tensor();
        if (k.flags.count("v1")) {
          auto one = [&] {
            return cell == layers::CellType::LSTM
                       ? nn::rnn_cell::LSTMCell(k.units)
                   : cell == layers::CellType::GRU
                       ? nn::rnn_cell::GRUCell(k.units)
                       : nn::rnn_cell::BasicRNNCell(k.units);
          };
          nn::rnn_cell::Cell c =
              k.flags.count("multi2")
                  ? nn::rnn_cell::MultiRNNCell({one(), one()})
                  : one();
          Tensor y;
          if (k.flags.count("bidirectional_dynamic")) {
            auto r = nn::bidirectional_dynamic_rnn(c, c, f["x"], lengths);
            y = sequences ? concat({r.output_fw, r.output_bw}, 2)
                          : concat({r.state_fw.back(), r.state_bw.back()}, 1);
          } else {
            auto r = nn::dynamic_rnn(c, f["x"], lengths);
            y = sequences ? r.outputs : r.state.back();
          }
          Signature s;
          s.predictions.set("y", y);
          if (mode != ModeKeys::PREDICT) {
            s.loss = reduce_sum(multiply(
                y, g.constant(k.c, sequences ? Dims{k.batch, k.time, outUnits}
                                             : Dims{k.batch, outUnits})));
            if (mode == ModeKeys::TRAIN)
              s.train_op =
                  train::GradientDescentOptimizer(k.lr).minimize(s.loss);
          }
          return s;
        }
        Tensor y = bidirectional
                       ? layers::bidirectional(cell, f["x"], k.units, o, merge,
                                               lengths)
                             .output
                       : (cell == layers::CellType::LSTM
                              ? layers::lstm(f["x"], k.units, o, lengths)
                          : cell == layers::CellType::GRU
                              ? layers::gru(f["x"], k.units, o, lengths)
                              : layers::simple_rnn(f["x"], k.units, o, lengths))
                             .output;
        Signature s;
        s.predictions.set("y", y);
        if (mode != ModeKeys::PREDICT) {
          Dims shape = sequences ? Dims{k.batch, k.time, outUnits}
                                 : Dims{k.batch, outUnits};
          Tensor c = g.constant(k.c, shape);
          // The batch is fed at its size: the product broadcasts.
          s.loss = reduce_sum(multiply(y, c));
          lossNode = s.loss.name();
          if (mode == ModeKeys::TRAIN)
            s.train_op = train::GradientDescentOptimizer(k.lr).minimize(s.loss);
        }
        return s;
      });

  // RNN_TOOL_GRAPH=FILE writes the graph (for estc --compile-to=...).
  if (const char *path = std::getenv("RNN_TOOL_GRAPH"); path && *path) {
    std::string error;
    if (!graph::writeGraph(path, def, error))
      die(error);
  }
  llvm::SmallString<128> cache;
  llvm::sys::fs::createUniqueDirectory("estc-rnn-tool", cache);
  JitOptions options;
  options.cacheDir = std::string(cache);
  JitCompiler jit(options);
  auto compiled = jitCompileGraph(jit, def, "Rnn", [](llvm::StringRef w) {
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
  model.set_sequence_length(k.time);
  auto feed = [&](int fn) {
    auto *xs = static_cast<float *>(
        model.input_data(fn, model.input_index(fn, "features/x")));
    for (size_t i = 0; i < k.x.size(); ++i)
      xs[i] = static_cast<float>(k.x[i]);
    if (ragged) {
      auto *ls = static_cast<int32_t *>(
          model.input_data(fn, model.input_index(fn, "features/lengths")));
      for (size_t i = 0; i < k.lengths.size(); ++i)
        ls[i] = static_cast<int32_t>(k.lengths[i]);
    }
  };
  int predict = model.function_index("predict");
  feed(predict);
  model.run(predict);
  int64_t outCount = k.batch * outUnits * (sequences ? k.time : 1);
  print("output",
        static_cast<const float *>(model.output_data(
            predict, model.output_index(predict, "predictions/y"))),
        outCount);
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
