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

#include "test/data/ToolSupport.h"

#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Graph/Train.h"

#include <cstring>
#include <iostream>
#include <set>

using namespace estc;
using namespace estc::tooling;

namespace {

struct Case {
  std::string cell;
  int64_t units = 0, batch = 0, time = 0, features = 0, steps = 1;
  double lr = 0.1;
  std::set<std::string> flags;
  std::vector<double> lengths, x, c;
  std::vector<std::pair<std::string, std::vector<double>>> vars;
};

Case readCase(const std::string &path) {
  Case k;
  readCaseFile(path, [&](CaseLine &line) {
    const std::string &key = line.key();
    if (key == "cell")
      k.cell = line.next<std::string>();
    else if (key == "units")
      k.units = line.next<int64_t>();
    else if (key == "batch")
      k.batch = line.next<int64_t>();
    else if (key == "time")
      k.time = line.next<int64_t>();
    else if (key == "features")
      k.features = line.next<int64_t>();
    else if (key == "steps")
      k.steps = line.next<int64_t>();
    else if (key == "lr")
      k.lr = line.next<double>();
    else if (key == "flags") {
      for (const std::string &f : line.rest())
        k.flags.insert(f);
    } else if (key == "lengths")
      k.lengths = line.numbers();
    else if (key == "x")
      k.x = line.numbers();
    else if (key == "c")
      k.c = line.numbers();
    else if (key == "var") {
      std::string name = line.next<std::string>();
      k.vars.emplace_back(name, line.numbers());
    } else
      line.unknown();
  });
  return k;
}

} // namespace

int main(int argc, char **argv) {
  Case k = readCase(initTool("rnn_tool", argc, argv, "rnn_tool CASE_FILE"));
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
  writeGraphIfAsked("RNN_TOOL_GRAPH", def);
  std::unique_ptr<JitModel> compiled = compileOrDie(def, "Rnn");
  JitModel &model = *compiled;
  model.run(model.function_index("init"));
  setVariables(model, k.vars);
  model.set_batch(k.batch);
  model.set_sequence_length(k.time);
  auto feedCase = [&](int fn) {
    feed(model, fn, "features/x", k.x);
    if (ragged)
      feed(model, fn, "features/lengths", k.lengths);
  };
  int64_t outCount = k.batch * outUnits * (sequences ? k.time : 1);
  runSgdCase(model, feedCase, outCount, k.steps, k.vars);
  return 0;
}
