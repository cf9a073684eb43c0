#!/usr/bin/env python3
"""lib/Graph/Recurrent.h against TensorFlow 2.15's Keras recurrent layers.

For each case: a Keras layer (LSTM, GRU with reset_after true and false,
SimpleRNN, Bidirectional with each merge mode) and estc's (rnn_tool: the
layer on a run-time sequence length, through the JIT) start from the same
weights and see the same batch of ragged sequences (a mask from lengths, as
Keras's sequence_mask / mask_zero gives). Both train 20 steps of SGD on
loss = sum(output * c). Checked: the output before training, the loss of
every step, and the final weights, to float32 tolerance.

usage: tf_rnn_compat.py --tool=build/bin/rnn_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import sys

from case_tool import check_sgd_case, import_tf, summary, words


class V1Layer:
    """tf.compat.v1.nn.dynamic_rnn (or bidirectional_dynamic_rnn) over
    LSTMCell / GRUCell / BasicRNNCell (two in a MultiRNNCell with multi2),
    called like a Keras layer: the outputs with return_sequences, else the
    top cell's final h (both directions concatenated)."""

    def __init__(self, tf, cell, units, flags, lengths):
        self.tf, self.flags, self.lengths = tf, flags, lengths
        v1 = tf.compat.v1.nn.rnn_cell
        make = {"lstm": v1.LSTMCell, "gru": v1.GRUCell,
                "simple_rnn": v1.BasicRNNCell}[cell]

        def one():
            if "multi2" in flags:
                return v1.MultiRNNCell([make(units), make(units)])
            return make(units)
        self.cells = [one(), one()] if "bidirectional_dynamic" in flags \
            else [one()]

    @staticmethod
    def _h(state):
        while isinstance(state, tuple) and not hasattr(state, "h"):
            state = state[-1]
        return state.h if hasattr(state, "h") else state

    def __call__(self, x, mask=None):  # pylint: disable=unused-argument
        tf = self.tf
        seqs = "return_sequences" in self.flags
        if "bidirectional_dynamic" in self.flags:
            (fw, bw), (sf, sb) = tf.compat.v1.nn.bidirectional_dynamic_rnn(
                self.cells[0], self.cells[1], x,
                sequence_length=self.lengths, dtype=tf.float32)
            return (tf.concat([fw, bw], 2) if seqs else
                    tf.concat([self._h(sf), self._h(sb)], 1))
        out, state = tf.compat.v1.nn.dynamic_rnn(
            self.cells[0], x, sequence_length=self.lengths, dtype=tf.float32)
        return out if seqs else self._h(state)

    @property
    def weights(self):
        return [w for c in self.cells for w in c.weights]

    trainable_weights = weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, values):
        for w, v in zip(self.weights, values):
            w.assign(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(args.seed)
    K = tf.keras.layers

    # (name, cell, units, flags, ragged)
    cases = [
        ("lstm_sequences_ragged", "lstm", 5, ["return_sequences"], True),
        ("lstm_last_full", "lstm", 4, [], False),
        ("lstm_backwards_ragged", "lstm", 4, ["go_backwards"], True),
        ("gru_sequences_ragged", "gru", 5, ["return_sequences"], True),
        ("gru_reset_before_ragged", "gru", 4, ["reset_before"], True),
        ("simple_rnn_backwards_sequences", "simple_rnn", 3,
         ["go_backwards", "return_sequences"], True),
        ("bidirectional_lstm_concat", "lstm", 3,
         ["bidirectional_concat", "return_sequences"], True),
        ("bidirectional_gru_sum", "gru", 3, ["bidirectional_sum"], True),
        ("bidirectional_simple_rnn_ave", "simple_rnn", 3,
         ["bidirectional_ave", "return_sequences"], True),
        ("bidirectional_lstm_mul", "lstm", 2, ["bidirectional_mul"], True),
        # tf.compat.v1.nn.dynamic_rnn and its cells.
        ("dynamic_rnn_lstm_cell", "lstm", 4, ["v1", "return_sequences"], True),
        ("dynamic_rnn_gru_cell_state", "gru", 3, ["v1"], True),
        ("dynamic_rnn_basic_rnn_cell", "simple_rnn", 3,
         ["v1", "return_sequences"], False),
        ("dynamic_rnn_multi_rnn_cell", "lstm", 3,
         ["v1", "multi2", "return_sequences"], True),
        ("bidirectional_dynamic_rnn", "gru", 3,
         ["v1", "bidirectional_dynamic", "return_sequences"], True),
    ]
    batch, time, features, lr = 4, 6, 3, 0.05
    failures = 0
    for name, cell, units, flags, ragged in cases:
        seqs = "return_sequences" in flags
        kwargs = dict(return_sequences=seqs,
                      go_backwards="go_backwards" in flags)
        if cell == "gru":
            kwargs["reset_after"] = "reset_before" not in flags
        make = {"lstm": K.LSTM, "gru": K.GRU, "simple_rnn": K.SimpleRNN}[cell]
        merge = next((f.split("_", 1)[1] for f in flags
                      if f.startswith("bidirectional_")
                      and f != "bidirectional_dynamic"), None)
        x = rng.uniform(-1, 1, (batch, time, features)).astype(np.float32)
        lengths = (np.array([time, time - 2, 1, time - 3], np.int32)
                   if ragged else np.full(batch, time, np.int32))
        mask = tf.sequence_mask(lengths, time) if ragged else None
        if "v1" in flags:
            layer = V1Layer(tf, cell, units, flags,
                            lengths if ragged else None)
        else:
            layer = make(units, **kwargs)
            if merge:
                layer = K.Bidirectional(layer, merge_mode=merge)
        layer(x, mask=mask)  # builds the weights
        weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                   for w in layer.get_weights()]
        layer.set_weights(weights)
        y0 = layer(x, mask=mask).numpy()
        c = rng.uniform(-1, 1, y0.shape).astype(np.float32)
        losses = []
        for _ in range(args.steps):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(layer(x, mask=mask) * c)
            grads = tape.gradient(loss, layer.trainable_weights)
            losses.append(float(loss))
            for w, g in zip(layer.trainable_weights, grads):
                w.assign_sub(lr * g)
        final = [w.numpy() for w in layer.trainable_weights]

        # estc's variable names for Keras's weights, in Keras's order.
        cell_name = {"lstm": "lstm_cell", "gru": "gru_cell",
                     "simple_rnn": "simple_rnn_cell"}[cell]
        parts = ["kernel", "recurrent_kernel", "bias"]
        if "v1" in flags:
            names = [w.name.split(":")[0] for w in layer.weights]
        elif merge:
            names = [f"bidirectional/{d}_{cell}/{cell_name}/{p}"
                     for d in ("forward", "backward") for p in parts]
        else:
            names = [f"{cell}/{cell_name}/{p}" for p in parts]

        lines = [f"cell {cell}", f"units {units}", f"batch {batch}",
                 f"time {time}", f"features {features}",
                 f"flags {' '.join(flags)}", f"steps {args.steps}",
                 f"lr {lr}", f"x {words(x)}", f"c {words(c)}"]
        if ragged:
            lines.append(f"lengths {words(lengths)}")
        lines += [f"var {n} {words(w)}" for n, w in zip(names, weights)]
        failures += check_sgd_case(args.tool, "rnn_tool", name, lines, y0,
                                   losses, names, final)
    return summary(failures, len(cases))


if __name__ == "__main__":
    sys.exit(main())
