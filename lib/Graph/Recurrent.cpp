//===- Recurrent.cpp - Keras recurrent layers for the graph builder -----===//

#include "lib/Graph/Recurrent.h"

#include "lib/Graph/ControlFlow.h"

namespace estc {

namespace {

/// Whether `lengths` is a valid sequence-length vector: [batch] int32/int64.
bool isLengthVector(const Tensor &lengths) {
  return lengths.rank() == 1 &&
         (lengths.dtype() == DType::Int32 || lengths.dtype() == DType::Int64);
}

/// The time-major [T, batch, 1] mask of `lengths` over batch-major
/// `inputs` [batch, T, ...]: a scan's per-step mask sequence.
Tensor stepMask(const Tensor &inputs, const Tensor &lengths) {
  return expand_dims(transpose(sequence_mask(lengths, inputs, 1), {1, 0}), 2);
}

/// [batch] int32 lengths of T for every sequence of `x` [batch, T, ...]
/// (reverse_sequence over whole sequences, with T known at run time only).
Tensor fullLengths(const Tensor &x) {
  return reduce_sum(cast(ones_like(reduce_sum(x, Dims{2})), DType::Int32),
                    Dims{1});
}

/// A zero state [batch, units], its batch taken from the time-major
/// projection [T, batch, n] of the inputs.
Tensor zeroState(const Tensor &projected, int64_t units) {
  return zeros_like(
      reshape(slice(projected, {0, 0, 0}, {1, -1, units}), {-1, units}));
}

} // namespace

namespace layers {

namespace {

const char *baseName(CellType cell) {
  switch (cell) {
  case CellType::SimpleRNN:
    return "simple_rnn";
  case CellType::LSTM:
    return "lstm";
  case CellType::GRU:
    return "gru";
  }
  return "rnn";
}

int64_t gatesOf(CellType cell) {
  return cell == CellType::LSTM ? 4 : cell == CellType::GRU ? 3 : 1;
}

[[noreturn]] void fail(const std::string &layer, const std::string &name,
                       const Tensor &x, const std::string &problem) {
  throw GraphError(layer + " '" + name + "': input '" + x.name() + "' " +
                   shape::toString(x.shape()) + ": " + problem);
}

/// Columns [k * units, (k + 1) * units) of a [batch, n] tensor.
Tensor gate(const Tensor &z, int64_t k, int64_t units) {
  return slice(z, {0, k * units}, {-1, units});
}

/// The bias of an LSTM with unit_forget_bias: the initializer's value for
/// i, c, o and ones for f (Keras); a constant initializer is needed to
/// write it as one.
Initializer forgetBias(const Initializer &bias, int64_t units,
                       const std::string &layer) {
  double value;
  if (bias.type == "zeros")
    value = 0.0;
  else if (bias.type == "ones")
    value = 1.0;
  else if (bias.type == "constant" && bias.values.empty())
    value = bias.floats.count("value") ? bias.floats.at("value") : 0.0;
  else
    throw GraphError("lstm '" + layer +
                     "': unit_forget_bias needs a zeros, ones or scalar "
                     "constant bias_initializer, got '" +
                     bias.type + "'");
  std::vector<double> values(4 * units, value);
  std::fill(values.begin() + units, values.begin() + 2 * units, 1.0);
  return constant_initializer(values);
}

/// One recurrent layer in the current scope under `layer` (its variables
/// under `layer`/`cell`). Bidirectional's halves (`wrapped`) give their
/// outputs in time order even when going backwards, and zeros at masked
/// steps (Keras's Bidirectional sets zero_output_for_mask with
/// return_sequences).
RecurrentOutput recurrent(CellType cell, const Tensor &x, int64_t units,
                          const RecurrentOptions &o, const Tensor &lengths,
                          const std::vector<Tensor> &initial_state,
                          const std::string &layer, bool wrapped) {
  Graph &g = x.graph();
  const char *base = baseName(cell);
  if (x.rank() != 3)
    fail(base, layer, x, "input must be [batch, time, features]");
  int64_t features = x.shape()[2];
  if (features < 0)
    fail(base, layer, x, "the feature dimension must be known");
  if (!is_floating(x.dtype()))
    fail(base, layer, x, "input must be a float tensor");
  if (units < 1)
    fail(base, layer, x,
         "units must be positive, got " + std::to_string(units));
  if (lengths.valid() && !isLengthVector(lengths))
    fail(base, layer, x,
         "lengths '" + lengths.name() +
             "' must be [batch] int32 or int64, "
             "got " +
             to_string(lengths.dtype()) + " " +
             shape::toString(lengths.shape()));
  if (o.mask.valid()) {
    const Tensor &m = o.mask;
    auto differ = [](int64_t a, int64_t b) {
      return a >= 0 && b >= 0 && a != b;
    };
    if (!m.has_value() || m.dtype() != DType::Bool || m.rank() != 2 ||
        differ(m.shape()[0], x.shape()[0]) ||
        differ(m.shape()[1], x.shape()[1]))
      fail(base, layer, x,
           "mask '" + m.name() + "' must be a bool [batch, time] = " +
               shape::toString({x.shape()[0], x.shape()[1]}) + " tensor, got " +
               (m.has_value()
                    ? to_string(m.dtype()) + " " + shape::toString(m.shape())
                    : std::string("no value")));
  }
  size_t numStates = cell == CellType::LSTM ? 2 : 1;
  if (!initial_state.empty() && initial_state.size() != numStates)
    fail(base, layer, x,
         "initial_state has " + std::to_string(initial_state.size()) +
             " tensors, the layer " + std::to_string(numStates));
  if (o.dropout < 0 || o.dropout >= 1 || o.recurrent_dropout < 0 ||
      o.recurrent_dropout >= 1)
    fail(base, layer, x, "dropout and recurrent_dropout must be in [0, 1)");

  auto layerScope = g.name_scope(layer);
  const int64_t gates = gatesOf(cell);
  DType dtype = x.dtype();
  Tensor kernel, recurrentKernel, bias, recurrentBias;
  {
    auto cellScope = g.name_scope(
        o.cell_name.empty() ? std::string(base) + "_cell" : o.cell_name);
    kernel = g.get_variable("kernel", dtype, {features, gates * units},
                            o.kernel_initializer, o.trainable, o.reuse);
    recurrentKernel =
        g.get_variable("recurrent_kernel", dtype, {units, gates * units},
                       o.recurrent_initializer, o.trainable, o.reuse);
    if (o.use_bias) {
      bool twoBiases = cell == CellType::GRU && o.reset_after;
      Initializer init = cell == CellType::LSTM && o.unit_forget_bias
                             ? forgetBias(o.bias_initializer, units, layer)
                             : o.bias_initializer;
      Tensor b = g.get_variable("bias", dtype,
                                twoBiases ? Dims{2, gates * units}
                                          : Dims{gates * units},
                                init, o.trainable, o.reuse);
      if (twoBiases) {
        bias = reshape(slice(b, {0, 0}, {1, -1}), {gates * units});
        recurrentBias = reshape(slice(b, {1, 0}, {1, -1}), {gates * units});
      } else {
        bias = b;
      }
    }
  }

  // Time major, the input projection of every step in one GEMM.
  Tensor xs = transpose(x, {1, 0, 2});
  if (o.training && o.dropout > 0) {
    Tensor keep =
        nn::dropout(ones_like(reduce_sum(x, Dims{1})), o.dropout, o.seed);
    xs = multiply(xs, keep);
  }
  Tensor projected = matmul(xs, kernel);
  if (bias.valid())
    projected = add(projected, bias);
  std::vector<Tensor> sequences = {projected};
  // The steps' mask, time major [T, batch, 1]: lengths' and/or the mask.
  Tensor steps;
  if (lengths.valid())
    steps = stepMask(x, lengths);
  if (o.mask.valid()) {
    Tensor m = expand_dims(transpose(o.mask, {1, 0}), 2);
    steps = steps.valid() ? logical_and(steps, m) : m;
  }
  if (steps.valid())
    sequences.push_back(steps);

  std::vector<Tensor> init = initial_state;
  if (init.empty()) {
    init.assign(numStates, zeroState(projected, units));
  }
  Tensor recurrentKeep;
  if (o.training && o.recurrent_dropout > 0)
    recurrentKeep =
        nn::dropout(ones_like(init[0]), o.recurrent_dropout,
                    o.seed ? std::optional<int64_t>(*o.seed + 1) : o.seed);

  ScanResult r = scan(
      [&](const std::vector<Tensor> &carried, const std::vector<Tensor> &in) {
        Tensor h = carried[0];
        Tensor hIn = recurrentKeep.valid() ? multiply(h, recurrentKeep) : h;
        const Tensor &xz = in[0];
        std::vector<Tensor> next;
        switch (cell) {
        case CellType::SimpleRNN:
          next = {o.activation(add(xz, matmul(hIn, recurrentKernel)))};
          break;
        case CellType::LSTM: {
          // Each gate adds its slices of x W + b and h U, so the adds fuse
          // into the one elementwise loop of the gates (after the step's
          // one GEMM) instead of a loop of their own over [batch, 4 units].
          Tensor hu = matmul(hIn, recurrentKernel);
          auto z = [&](int64_t k) {
            return add(gate(xz, k, units), gate(hu, k, units));
          };
          Tensor i = o.recurrent_activation(z(0));
          Tensor f = o.recurrent_activation(z(1));
          Tensor c =
              add(multiply(f, carried[1]), multiply(i, o.activation(z(2))));
          Tensor out = o.recurrent_activation(z(3));
          next = {multiply(out, o.activation(c)), c};
          break;
        }
        case CellType::GRU: {
          Tensor hh;
          Tensor zGate, rGate;
          if (o.reset_after) {
            Tensor inner = matmul(hIn, recurrentKernel);
            if (recurrentBias.valid())
              inner = add(inner, recurrentBias);
            zGate = o.recurrent_activation(
                add(gate(xz, 0, units), gate(inner, 0, units)));
            rGate = o.recurrent_activation(
                add(gate(xz, 1, units), gate(inner, 1, units)));
            hh = o.activation(add(gate(xz, 2, units),
                                  multiply(rGate, gate(inner, 2, units))));
          } else {
            Tensor inner =
                matmul(hIn, slice(recurrentKernel, {0, 0}, {units, 2 * units}));
            zGate = o.recurrent_activation(
                add(gate(xz, 0, units), gate(inner, 0, units)));
            rGate = o.recurrent_activation(
                add(gate(xz, 1, units), gate(inner, 1, units)));
            Tensor candidate =
                matmul(multiply(rGate, hIn),
                       slice(recurrentKernel, {0, 2 * units}, {units, units}));
            hh = o.activation(add(gate(xz, 2, units), candidate));
          }
          // z * h + (1 - z) * hh, on the state before recurrent dropout.
          next = {add(multiply(zGate, h), multiply(subtract(1.0, zGate), hh))};
          break;
        }
        }
        if (in.size() > 1)
          for (size_t k = 0; k < next.size(); ++k)
            next[k] = where(in[1], next[k], carried[k]);
        ScanStep step;
        step.carried = next;
        if (o.return_sequences)
          step.outputs = {wrapped && in.size() > 1
                              ? where(in[1], next[0], zeros_like(next[0]))
                              : next[0]};
        return step;
      },
      init, sequences, o.go_backwards, "scan");

  RecurrentOutput out;
  if (o.return_sequences) {
    out.output = transpose(r.stacked[0], {1, 0, 2});
    if (o.go_backwards && !wrapped) {
      // Keras returns a backward layer's outputs in processing order.
      out.output = reverse_sequence(out.output, fullLengths(x), 1, 0);
    }
  } else {
    out.output = r.carried[0];
  }
  if (o.return_state)
    out.states = r.carried;
  return out;
}

std::string layerNameOf(Graph &g, const std::string &name,
                        const std::string &base) {
  return name.empty() ? g.unique_layer_name(base) : name;
}

RecurrentOutput layer(CellType cell, const Tensor &x, int64_t units,
                      const RecurrentOptions &options, const Tensor &lengths,
                      const std::vector<Tensor> &initial_state) {
  if (!x.valid())
    throw GraphError(std::string(baseName(cell)) +
                     ": input is an empty Tensor");
  std::string name = layerNameOf(x.graph(), options.name, baseName(cell));
  return recurrent(cell, x, units, options, lengths, initial_state, name,
                   false);
}

} // namespace

RecurrentOutput simple_rnn(const Tensor &x, int64_t units,
                           const RecurrentOptions &options,
                           const Tensor &lengths,
                           const std::vector<Tensor> &initial_state) {
  return layer(CellType::SimpleRNN, x, units, options, lengths, initial_state);
}

RecurrentOutput lstm(const Tensor &x, int64_t units,
                     const RecurrentOptions &options, const Tensor &lengths,
                     const std::vector<Tensor> &initial_state) {
  return layer(CellType::LSTM, x, units, options, lengths, initial_state);
}

RecurrentOutput gru(const Tensor &x, int64_t units,
                    const RecurrentOptions &options, const Tensor &lengths,
                    const std::vector<Tensor> &initial_state) {
  return layer(CellType::GRU, x, units, options, lengths, initial_state);
}

RecurrentOutput bidirectional(CellType cell, const Tensor &x, int64_t units,
                              const RecurrentOptions &options,
                              const std::string &merge_mode,
                              const Tensor &lengths, const std::string &name) {
  if (!x.valid())
    throw GraphError("bidirectional: input is an empty Tensor");
  Graph &g = x.graph();
  if (merge_mode != "concat" && merge_mode != "sum" && merge_mode != "mul" &&
      merge_mode != "ave" && !merge_mode.empty())
    throw GraphError("bidirectional: merge_mode '" + merge_mode +
                     "' (expected concat, sum, mul, ave or \"\")");
  // The wrapped layer's own name ("lstm", "lstm_1") names both halves.
  std::string wrapped = layerNameOf(g, options.name, baseName(cell));
  std::string layer = layerNameOf(g, name, "bidirectional");
  auto scope = g.name_scope(layer);
  RecurrentOptions forward = options, backward = options;
  backward.go_backwards = !options.go_backwards;
  if (backward.seed)
    backward.seed = *backward.seed + 2;
  RecurrentOutput fw = recurrent(cell, x, units, forward, lengths, {},
                                 "forward_" + wrapped, true);
  RecurrentOutput bw = recurrent(cell, x, units, backward, lengths, {},
                                 "backward_" + wrapped, true);
  RecurrentOutput out;
  int64_t axis = fw.output.rank() - 1;
  if (merge_mode == "concat")
    out.output = concat({fw.output, bw.output}, axis);
  else if (merge_mode == "sum")
    out.output = add(fw.output, bw.output);
  else if (merge_mode == "mul")
    out.output = multiply(fw.output, bw.output);
  else if (merge_mode == "ave")
    out.output = multiply(add(fw.output, bw.output), 0.5);
  else {
    out.output = fw.output;
    out.backward_output = bw.output;
  }
  out.states = fw.states;
  out.states.insert(out.states.end(), bw.states.begin(), bw.states.end());
  return out;
}

} // namespace layers
} // namespace estc

namespace estc {
namespace nn {
namespace rnn_cell {

Cell BasicRNNCell(int64_t num_units, Activation activation) {
  Cell c;
  c.kind = Cell::BasicRNN;
  c.num_units = num_units;
  c.activation = std::move(activation);
  return c;
}

Cell LSTMCell(int64_t num_units, double forget_bias, Activation activation) {
  Cell c;
  c.kind = Cell::LSTM;
  c.num_units = num_units;
  c.forget_bias = forget_bias;
  c.activation = std::move(activation);
  return c;
}

Cell GRUCell(int64_t num_units, Activation activation) {
  Cell c;
  c.kind = Cell::GRU;
  c.num_units = num_units;
  c.activation = std::move(activation);
  return c;
}

Cell MultiRNNCell(std::vector<Cell> cells) {
  Cell c;
  c.kind = Cell::Multi;
  c.cells = std::move(cells);
  return c;
}

} // namespace rnn_cell

namespace {

using rnn_cell::Cell;

size_t stateCount(const Cell &cell) {
  if (cell.kind != Cell::Multi)
    return cell.kind == Cell::LSTM ? 2 : 1;
  size_t n = 0;
  for (const Cell &c : cell.cells)
    n += stateCount(c);
  return n;
}

/// Columns [k * units, (k + 1) * units) of a [batch, n] tensor.
Tensor part(const Tensor &z, int64_t k, int64_t units) {
  return slice(z, {0, k * units}, {-1, units});
}

/// The [in + units, n] kernel of a TF 1 cell split into its input rows and
/// its state rows: [x, h] W = x W_x + h W_h, so x W_x is computed for every
/// step at once, before the loop.
std::pair<Tensor, Tensor> splitKernel(Graph &g, int64_t in, int64_t units,
                                      int64_t n, DType dtype) {
  Tensor kernel = g.get_variable("kernel", dtype, {in + units, n});
  return {slice(kernel, {0, 0}, {in, n}), slice(kernel, {in, 0}, {units, n})};
}

/// One (non-stacked) cell over time-major `xs` [T, batch, in] in the
/// current variable scope; appends its final state(s) to `state` and
/// returns its outputs [T, batch, units].
Tensor runCell(Graph &g, const Cell &cell, const Tensor &xs, const Tensor &mask,
               std::vector<Tensor> initial, std::vector<Tensor> &state) {
  const int64_t units = cell.num_units;
  const int64_t depth = xs.shape()[2];
  DType dtype = xs.dtype();
  if (units < 1)
    throw GraphError("dynamic_rnn: a cell has num_units " +
                     std::to_string(units) + "; it must be positive");
  std::vector<Tensor> sequences;
  Tensor wh, gateWh, candidateWh;
  const char *scopeName = cell.kind == Cell::LSTM  ? "lstm_cell"
                          : cell.kind == Cell::GRU ? "gru_cell"
                                                   : "basic_rnn_cell";
  {
    auto s = g.name_scope(scopeName);
    if (cell.kind == Cell::GRU) {
      {
        auto gs = g.name_scope("gates");
        auto [wx, h] = splitKernel(g, depth, units, 2 * units, dtype);
        Tensor bias = g.get_variable("bias", dtype, {2 * units},
                                     constant_initializer(1.0));
        gateWh = h;
        sequences.push_back(add(matmul(xs, wx), bias));
      }
      auto cs = g.name_scope("candidate");
      auto [wx, h] = splitKernel(g, depth, units, units, dtype);
      Tensor bias = g.get_variable("bias", dtype, {units}, zeros_initializer());
      candidateWh = h;
      sequences.push_back(add(matmul(xs, wx), bias));
    } else {
      int64_t n = cell.kind == Cell::LSTM ? 4 * units : units;
      auto [wx, h] = splitKernel(g, depth, units, n, dtype);
      Tensor bias = g.get_variable("bias", dtype, {n}, zeros_initializer());
      wh = h;
      sequences.push_back(add(matmul(xs, wx), bias));
    }
  }
  bool masked = mask.valid();
  if (masked)
    sequences.push_back(mask);
  size_t numStates = cell.kind == Cell::LSTM ? 2 : 1;
  if (initial.empty()) {
    initial.assign(numStates, zeroState(sequences[0], units));
  }
  ScanResult r = scan(
      [&](const std::vector<Tensor> &carried, const std::vector<Tensor> &in) {
        std::vector<Tensor> next;
        Tensor h = carried.back();
        switch (cell.kind) {
        case Cell::BasicRNN:
          next = {cell.activation(add(in[0], matmul(h, wh)))};
          break;
        case Cell::LSTM: {
          // LSTMStateTuple (c, h); gates i, j, f, o, each the sum of its
          // slices (fused into the gates' loop, as in layers::lstm).
          Tensor hw = matmul(h, wh);
          auto z = [&](int64_t k) {
            return add(part(in[0], k, units), part(hw, k, units));
          };
          Tensor c = add(
              multiply(carried[0], estc::sigmoid(add(z(2), cell.forget_bias))),
              multiply(estc::sigmoid(z(0)), cell.activation(z(1))));
          next = {c, multiply(cell.activation(c), estc::sigmoid(z(3)))};
          break;
        }
        case Cell::GRU: {
          Tensor value = estc::sigmoid(add(in[0], matmul(h, gateWh)));
          Tensor r = part(value, 0, units), u = part(value, 1, units);
          Tensor candidate =
              cell.activation(add(in[1], matmul(multiply(r, h), candidateWh)));
          next = {add(multiply(u, h), multiply(subtract(1.0, u), candidate))};
          break;
        }
        case Cell::Multi:
          break;
        }
        Tensor output = next.back();
        if (masked) {
          const Tensor &m = in.back();
          for (size_t k = 0; k < next.size(); ++k)
            next[k] = where(m, next[k], carried[k]);
          output = where(m, output, zeros_like(output));
        }
        return ScanStep{next, {output}};
      },
      initial, sequences, false, "while");
  state.insert(state.end(), r.carried.begin(), r.carried.end());
  return r.stacked[0];
}

/// dynamic_rnn in the current variable scope; returns time-major outputs.
Tensor dynamicRnn(Graph &g, const Cell &cell, const Tensor &xs,
                  const Tensor &mask, const std::vector<Tensor> &initial,
                  std::vector<Tensor> &state) {
  if (cell.kind != Cell::Multi)
    return runCell(g, cell, xs, mask, initial, state);
  if (cell.cells.empty())
    throw GraphError("dynamic_rnn: MultiRNNCell has no cells");
  auto s = g.name_scope("multi_rnn_cell");
  Tensor ys = xs;
  size_t next = 0;
  for (size_t k = 0; k < cell.cells.size(); ++k) {
    auto cs = g.name_scope("cell_" + std::to_string(k));
    size_t n = stateCount(cell.cells[k]);
    std::vector<Tensor> init;
    if (!initial.empty())
      init.assign(initial.begin() + next, initial.begin() + next + n);
    next += n;
    ys = dynamicRnn(g, cell.cells[k], ys, mask, init, state);
  }
  return ys;
}

void checkInputs(const std::string &op, const Tensor &inputs,
                 const Tensor &lengths) {
  if (!inputs.valid())
    throw GraphError(op + ": inputs is an empty Tensor");
  if (inputs.rank() != 3 || inputs.shape()[2] < 0 ||
      !is_floating(inputs.dtype()))
    throw GraphError(op + ": inputs '" + inputs.name() + "' " +
                     shape::toString(inputs.shape()) +
                     " must be float [batch, time, features] with known "
                     "features");
  if (lengths.valid() && !isLengthVector(lengths))
    throw GraphError(op + ": sequence_length '" + lengths.name() +
                     "' must be [batch] int32 or int64");
}

} // namespace

DynamicRNNOutput dynamic_rnn(const Cell &cell, const Tensor &inputs,
                             const Tensor &sequence_length,
                             const std::vector<Tensor> &initial_state,
                             const std::string &scope) {
  checkInputs("dynamic_rnn", inputs, sequence_length);
  if (!initial_state.empty() && initial_state.size() != stateCount(cell))
    throw GraphError("dynamic_rnn: initial_state has " +
                     std::to_string(initial_state.size()) +
                     " tensors, the cell " + std::to_string(stateCount(cell)));
  Graph &g = inputs.graph();
  auto s = g.name_scope(scope);
  Tensor mask =
      sequence_length.valid() ? stepMask(inputs, sequence_length) : Tensor();
  DynamicRNNOutput out;
  Tensor ys = dynamicRnn(g, cell, transpose(inputs, {1, 0, 2}), mask,
                         initial_state, out.state);
  out.outputs = transpose(ys, {1, 0, 2});
  return out;
}

BidirectionalDynamicRNNOutput
bidirectional_dynamic_rnn(const Cell &cell_fw, const Cell &cell_bw,
                          const Tensor &inputs, const Tensor &sequence_length,
                          const std::string &scope) {
  checkInputs("bidirectional_dynamic_rnn", inputs, sequence_length);
  Graph &g = inputs.graph();
  auto s = g.name_scope(scope);
  Tensor lengths =
      sequence_length.valid() ? sequence_length : fullLengths(inputs);
  Tensor mask =
      sequence_length.valid() ? stepMask(inputs, sequence_length) : Tensor();
  BidirectionalDynamicRNNOutput out;
  {
    auto fw = g.name_scope("fw");
    out.output_fw =
        transpose(dynamicRnn(g, cell_fw, transpose(inputs, {1, 0, 2}), mask, {},
                             out.state_fw),
                  {1, 0, 2});
  }
  auto bw = g.name_scope("bw");
  Tensor reversed = reverse_sequence(inputs, lengths, 1, 0);
  Tensor ys = dynamicRnn(g, cell_bw, transpose(reversed, {1, 0, 2}), mask, {},
                         out.state_bw);
  out.output_bw = reverse_sequence(transpose(ys, {1, 0, 2}), lengths, 1, 0);
  return out;
}

} // namespace nn
} // namespace estc
