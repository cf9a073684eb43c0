//===- Recurrent.h - Keras recurrent layers for the graph builder -------===//
//
// tf.keras.layers.SimpleRNN, LSTM, GRU and Bidirectional with Keras's
// semantics and TF's variable names, built on `scan` (lib/Graph/
// ControlFlow.h), so the graph does not grow with the sequence length and
// the length may be known at run time only (a padded batch's longest).
//
//   x [batch, T, features] (batch major, as Keras)
//     -> x W + b for every step at once: one GEMM over [T, batch, features]
//     -> scan over T: z_t + h U (one GEMM per step) and the gates (one
//        fused elementwise loop), carried h (and c)
//
// Masking: `lengths` ([batch] integers) masks steps t >= lengths[b] as
// Keras's mask does, and RecurrentOptions::mask ([batch, T] bool, Keras's
// mask: an embedding's with mask_zero) any steps: the state is carried
// through them unchanged and the output repeats the last valid one
// (zero_output_for_mask is false for Keras's LSTM, GRU and SimpleRNN).
//
// Variables, as Keras creates them in a TF graph:
//   <layer>/<cell>/kernel            [features, gates * units]
//   <layer>/<cell>/recurrent_kernel  [units, gates * units]
//   <layer>/<cell>/bias              [gates * units] ([2, 3 * units] for GRU
//                                    with reset_after)
// with <layer> "simple_rnn", "lstm", "gru" (then "_1", ...) and <cell>
// "simple_rnn_cell", "lstm_cell", "gru_cell"; Bidirectional puts
// "forward_<layer>" and "backward_<layer>" under "bidirectional". Gate
// order: LSTM i, f, c, o; GRU z, r, h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_RECURRENT_H
#define ESTC_LIB_GRAPH_RECURRENT_H

#include "lib/Graph/Layers.h"

#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace layers {

/// The arguments Keras's recurrent layers share (their defaults).
struct RecurrentOptions {
  Activation activation = Activation(tanh);
  /// LSTM and GRU gates.
  Activation recurrent_activation = Activation(sigmoid);
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer recurrent_initializer = orthogonal_initializer();
  Initializer bias_initializer = zeros_initializer();
  /// LSTM: the forget gate's bias starts at 1.
  bool unit_forget_bias = true;
  /// GRU: the reset gate applied after the recurrent matmul (TF 2's
  /// default, cuDNN's) or before it (TF 1's).
  bool reset_after = true;
  /// Fraction of the inputs / of the recurrent state dropped while
  /// training; one mask per sequence, the same at every step (Keras).
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool return_sequences = false;
  bool return_state = false;
  /// Processes the sequence from its end (Keras: the padded sequence
  /// reversed; with return_sequences the outputs are in that order).
  bool go_backwards = false;
  /// Whether dropout applies (the mode is TRAIN).
  bool training = false;
  /// Keras's call(mask=...): [batch, T] bool (e.g. an embedding's with
  /// mask_zero); a false step carries the state through unchanged and
  /// repeats the last output, wherever it is in the sequence. With
  /// `lengths` too, both apply.
  Tensor mask = Tensor();
  std::optional<int64_t> seed{};
  std::string name{};
  /// The variables' scope under the layer's: "<kind>_cell" when empty
  /// ("lstm_cell"); Keras's RNN over StackedRNNCells has
  /// "stacked_rnn_cells/lstm_cell", "stacked_rnn_cells/lstm_cell_1", ...
  std::string cell_name{};
  /// Keras's trainable (false: the variables are not trainable) and
  /// sharing: `reuse` gets the variables of an earlier call of the same
  /// layer name in the mode (a Keras layer called twice).
  bool trainable = true;
  bool reuse = false;
};

/// A recurrent layer's result: `output` ([batch, units], or
/// [batch, T, units] with return_sequences) and, with return_state, the
/// final states (h; for LSTM h and c, Keras's order). Bidirectional with
/// merge_mode "" leaves the outputs unmerged: `output` is the forward one,
/// `backward_output` the backward one.
struct RecurrentOutput {
  Tensor output;
  std::vector<Tensor> states;
  Tensor backward_output;
};

/// `lengths` ([batch] i32/i64, optional): the valid steps of each sequence.
/// `initial_state`: h (and c for LSTM), [batch, units]; zeros when empty.
RecurrentOutput simple_rnn(const Tensor &x, int64_t units,
                           const RecurrentOptions &options = {},
                           const Tensor &lengths = Tensor(),
                           const std::vector<Tensor> &initial_state = {});
RecurrentOutput lstm(const Tensor &x, int64_t units,
                     const RecurrentOptions &options = {},
                     const Tensor &lengths = Tensor(),
                     const std::vector<Tensor> &initial_state = {});
RecurrentOutput gru(const Tensor &x, int64_t units,
                    const RecurrentOptions &options = {},
                    const Tensor &lengths = Tensor(),
                    const std::vector<Tensor> &initial_state = {});

/// One of the layers above, by kind.
enum class CellType { SimpleRNN, LSTM, GRU };

/// tf.keras.layers.Bidirectional(layer(units, options)): a forward and a
/// backward (go_backwards) copy under "bidirectional", the backward
/// outputs put back in time order, merged by `merge_mode`: "concat",
/// "sum", "mul", "ave" (or "" for both: output is the forward one and
/// states hold the backward output first, then each direction's states).
RecurrentOutput bidirectional(CellType cell, const Tensor &x, int64_t units,
                              const RecurrentOptions &options = {},
                              const std::string &merge_mode = "concat",
                              const Tensor &lengths = Tensor(),
                              const std::string &name = "");

} // namespace layers

// --- tf.compat.v1.nn: dynamic_rnn and its cells ---------------------------
//
// TF 1's RNN API, as tf.compat.v1 keeps it: cells whose kernel acts on
// [input, h] concatenated, under the variable scope of the call
// ("rnn/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_0/gru_cell/gates/
// kernel", "bidirectional_rnn/fw/lstm_cell/bias"). With sequence_length,
// steps past a sequence's length output zeros and carry the state through
// (so the final state is the one at its last valid step), as dynamic_rnn.
namespace nn {
namespace rnn_cell {

/// A cell description (tf.compat.v1.nn.rnn_cell.*).
struct Cell {
  enum Kind { BasicRNN, LSTM, GRU, Multi } kind = BasicRNN;
  int64_t num_units = 0;
  /// LSTMCell: added to the forget gate's pre-activation.
  double forget_bias = 1.0;
  Activation activation = Activation(estc::tanh);
  /// MultiRNNCell: the stacked cells, bottom first.
  std::vector<Cell> cells;
};

Cell BasicRNNCell(int64_t num_units,
                  Activation activation = Activation(estc::tanh));
/// LSTMCell / BasicLSTMCell (no peepholes or projection): gates i, j, f, o.
Cell LSTMCell(int64_t num_units, double forget_bias = 1.0,
              Activation activation = Activation(estc::tanh));
/// GRUCell: gates/ (r, u; bias initialized to 1) and candidate/.
Cell GRUCell(int64_t num_units, Activation activation = Activation(estc::tanh));
Cell MultiRNNCell(std::vector<Cell> cells);

} // namespace rnn_cell

/// dynamic_rnn's outputs ([batch, T, units] of the top cell) and final
/// state, flattened: per cell, LSTM's (c, h) (LSTMStateTuple order), h
/// for the others.
struct DynamicRNNOutput {
  Tensor outputs;
  std::vector<Tensor> state;
};

/// tf.compat.v1.nn.dynamic_rnn(cell, inputs, sequence_length, initial_state,
/// scope) for batch-major `inputs` [batch, T, features].
DynamicRNNOutput dynamic_rnn(const rnn_cell::Cell &cell, const Tensor &inputs,
                             const Tensor &sequence_length = Tensor(),
                             const std::vector<Tensor> &initial_state = {},
                             const std::string &scope = "rnn");

struct BidirectionalDynamicRNNOutput {
  Tensor output_fw, output_bw;
  std::vector<Tensor> state_fw, state_bw;
};

/// tf.compat.v1.nn.bidirectional_dynamic_rnn: the backward cell runs on
/// each sequence reversed within its length (reverse_sequence) under
/// "<scope>/bw", its outputs reversed back.
BidirectionalDynamicRNNOutput
bidirectional_dynamic_rnn(const rnn_cell::Cell &cell_fw,
                          const rnn_cell::Cell &cell_bw, const Tensor &inputs,
                          const Tensor &sequence_length = Tensor(),
                          const std::string &scope = "bidirectional_rnn");

} // namespace nn
} // namespace estc

#endif // ESTC_LIB_GRAPH_RECURRENT_H
