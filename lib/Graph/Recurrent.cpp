//===- Recurrent.cpp - Keras recurrent layers for the graph builder -----===//

#include "lib/Graph/Recurrent.h"

#include "lib/Graph/ControlFlow.h"

namespace estc {
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
    fail(base, layer, x, "units must be positive, got " + std::to_string(units));
  if (lengths.valid() &&
      (lengths.rank() != 1 ||
       (lengths.dtype() != DType::Int32 && lengths.dtype() != DType::Int64)))
    fail(base, layer, x,
         "lengths '" + lengths.name() + "' must be [batch] int32 or int64, "
         "got " + to_string(lengths.dtype()) + " " +
         shape::toString(lengths.shape()));
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
                            o.kernel_initializer);
    recurrentKernel =
        g.get_variable("recurrent_kernel", dtype, {units, gates * units},
                       o.recurrent_initializer);
    if (o.use_bias) {
      bool twoBiases = cell == CellType::GRU && o.reset_after;
      Initializer init = cell == CellType::LSTM && o.unit_forget_bias
                             ? forgetBias(o.bias_initializer, units, layer)
                             : o.bias_initializer;
      Tensor b = g.get_variable(
          "bias", dtype,
          twoBiases ? Dims{2, gates * units} : Dims{gates * units}, init);
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
    Tensor keep = nn::dropout(ones_like(reduce_sum(x, Dims{1})), o.dropout,
                              o.seed);
    xs = multiply(xs, keep);
  }
  Tensor projected = matmul(xs, kernel);
  if (bias.valid())
    projected = add(projected, bias);
  std::vector<Tensor> sequences = {projected};
  if (lengths.valid())
    sequences.push_back(expand_dims(
        transpose(sequence_mask(lengths, x, 1), {1, 0}), 2));

  std::vector<Tensor> init = initial_state;
  if (init.empty()) {
    Tensor zeros =
        zeros_like(reshape(slice(projected, {0, 0, 0}, {1, -1, units}),
                           {-1, units}));
    init.assign(numStates, zeros);
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
          Tensor z = add(xz, matmul(hIn, recurrentKernel));
          Tensor i = o.recurrent_activation(gate(z, 0, units));
          Tensor f = o.recurrent_activation(gate(z, 1, units));
          Tensor c = add(multiply(f, carried[1]),
                         multiply(i, o.activation(gate(z, 2, units))));
          Tensor out = o.recurrent_activation(gate(z, 3, units));
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
            Tensor inner = matmul(
                hIn, slice(recurrentKernel, {0, 0}, {units, 2 * units}));
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
      Tensor full = reduce_sum(
          cast(ones_like(reduce_sum(x, Dims{2})), DType::Int32), Dims{1});
      out.output = reverse_sequence(out.output, full, 1, 0);
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
    throw GraphError(std::string(baseName(cell)) + ": input is an empty Tensor");
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
  std::string wrapped =
      layerNameOf(g, options.name, baseName(cell));
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
