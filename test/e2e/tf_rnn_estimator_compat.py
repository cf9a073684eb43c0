#!/usr/bin/env python3
"""estc's RNNClassifier against TensorFlow 2.15's: the first steps.

tf.estimator.experimental.RNNClassifier and estc's (canned_tool's "rnn"
model, the JIT Estimator) train on the same fixed sequence of small
batches of ragged sequences, both from TF's initial weights (its
model.ckpt-0, warm-started into estc's variables by their TF names):
sequence columns embedding_column(sequence_categorical_column_with_identity(
"tok", 7), 3) (dense ids, -1 where a step has none, gaps included) and
sequence_numeric_column("x") (a SparseTensor), context column
numeric_column("age"), every cell type, one layer and stacked layers
(StackedRNNCells), 2 and 3 classes; TF's default optimizer: Keras' legacy
Adagrad at the rnn estimator's learning rate 0.05 with clipnorm 5.0 (estc's
Adagrad has no epsilon: a relative 3e-7 at most). The loss of every step
and the final variables, Adagrad's accumulators included, must agree to
float32 tolerance. Variable names are TF's ("rnn_model/rnn/lstm_cell/
kernel", "rnn_model/rnn/stacked_rnn_cells/gru_cell_1/bias",
"sequence_features/tok_embedding/embedding_weights", "rnn_model/logits/
kernel"), the optimizer's slots and hyperparameters included
("training/Adagrad/<var>/accumulator", "training/Adagrad/learning_rate").

usage: tf_rnn_estimator_compat.py --tool=build/bin/canned_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from case_tool import import_tf

STEPS = 6
TOKENS = 7
# float32 arithmetic in another order over a few steps of recurrences.
RTOL = 2e-5
ATOL = 2e-6
CASES = [  # name, cell, units, n_classes
    ("simple_rnn", "simple_rnn", [4], 2),
    ("lstm_stacked", "lstm", [5, 3], 3),
    ("gru", "gru", [4], 2),
    ("gru_stacked", "gru", [3, 2], 3),
]


def make_batches(np, seed, n_classes):
    """STEPS batches: sizes 3..5, T 2..5, lengths 1..T (one sequence of
    length T), a step without a token now and then."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(STEPS):
        b = int(rng.integers(3, 6))
        t = int(rng.integers(2, 6))
        lengths = rng.integers(1, t + 1, b)
        lengths[rng.integers(0, b)] = t
        tok = np.full((b, t), -1, np.int64)
        x = np.full((b, t), np.nan, np.float32)
        for i, n in enumerate(lengths):
            tok[i, :n] = rng.integers(0, TOKENS, n)
            x[i, :n] = np.round(rng.uniform(-1, 1, n), 3)
            if n > 2 and rng.random() < 0.3:
                tok[i, int(rng.integers(0, n - 1))] = -1
        batches.append({
            "tok": tok, "x": x,
            "age": np.round(rng.uniform(0, 1, (b, 1)), 3).astype(np.float32),
            "labels": rng.integers(0, n_classes, (b, 1)).astype(np.int64)})
    return batches


def run_tf(tf, np, name, cell, units, n_classes, batches, work):
    fc = tf.feature_column
    model_dir = os.path.join(work, "tf_" + name)
    config = tf.estimator.RunConfig(tf_random_seed=1, save_summary_steps=1,
                                    save_checkpoints_steps=1000,
                                    log_step_count_steps=1000)
    est = tf.estimator.experimental.RNNClassifier(
        sequence_feature_columns=[
            fc.embedding_column(
                fc.sequence_categorical_column_with_identity("tok", TOKENS),
                3),
            fc.sequence_numeric_column("x")],
        context_feature_columns=[fc.numeric_column("age")],
        units=units, cell_type=cell, n_classes=n_classes,
        model_dir=model_dir, config=config)

    def element(batch):
        x = batch["x"]
        idx = np.argwhere(~np.isnan(x)).astype(np.int64)
        features = {
            "tok": tf.constant(batch["tok"]),
            "x": tf.sparse.SparseTensor(idx, x[~np.isnan(x)], x.shape),
            "age": tf.constant(batch["age"])}
        return tf.data.Dataset.from_tensors(
            (features, tf.constant(batch["labels"])))

    def input_fn():
        ds = element(batches[0])
        for batch in batches[1:]:
            ds = ds.concatenate(element(batch))
        return ds

    est.train(input_fn, steps=STEPS)
    losses = {}
    for path in glob.glob(os.path.join(model_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = (
                        value.simple_value if value.HasField("simple_value")
                        else float(tf.make_ndarray(value.tensor)))
    final = {n: est.get_variable_value(n) for n in est.get_variable_names()}
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-0"))
    initial = {n: reader.get_tensor(n)
               for n in reader.get_variable_to_shape_map()}
    return [losses[s] for s in sorted(losses)], final, initial


def run_estc(np, tool, cell, units, n_classes, batches, initial):
    lines = ["model rnn", f"cell {cell}",
             "units " + " ".join(map(str, units)), f"n_classes {n_classes}",
             f"steps {STEPS}"]
    for name, value in sorted(initial.items()):
        if name.startswith(("rnn_model/", "sequence_features/")):
            value = np.asarray(value, dtype=np.float32)
            lines.append(f"init {name} " + ",".join(map(str, value.shape)) +
                         " " + " ".join(repr(float(v)) for v in value.ravel()))
    for batch in batches:
        b, t = batch["tok"].shape
        lines.append(f"batch {b} {t}")
        lines.append("tok " + " ".join(str(int(v))
                                       for v in batch["tok"].ravel()))
        lines.append("x " + " ".join("nan" if np.isnan(v) else repr(float(v))
                                     for v in batch["x"].ravel()))
        lines.append("age " + " ".join(repr(float(v))
                                       for v in batch["age"].ravel()))
        lines.append("labels " + " ".join(str(int(v))
                                          for v in batch["labels"].ravel()))
    proc = subprocess.run([tool], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"canned_tool failed: {proc.stderr.strip()}")
    losses, variables = [], {}
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[0] == "loss":
            losses.append(float(words[2]))
        elif words[0] == "var":
            variables[words[1]] = np.array([float(w) for w in words[2:]])
    return losses, variables


def compare(np, name, tf_losses, tf_vars, estc_losses, estc_vars):
    failures = []
    if len(tf_losses) != STEPS or len(estc_losses) != STEPS:
        return [f"{name}: {len(tf_losses)} TF losses, {len(estc_losses)} "
                f"estc losses, want {STEPS}"]
    for step, (a, b) in enumerate(zip(estc_losses, tf_losses), 1):
        if abs(a - b) > ATOL + RTOL * abs(b):
            failures.append(f"{name}: step {step} loss estc {a!r} TF {b!r}")
    print(f"{name}: losses " + " ".join(f"{v:.7g}" for v in tf_losses))
    compared, worst = 0, 0.0
    for tf_name, value in sorted(tf_vars.items()):
        mine = tf_name
        if mine not in estc_vars:
            failures.append(f"{name}: TF's variable {tf_name} is not estc's")
            continue
        want = np.asarray(value, dtype=np.float64).ravel()
        got = estc_vars[mine]
        if want.shape != got.shape:
            failures.append(f"{name}: {mine}: {got.size} values, TF "
                            f"{want.size}")
            continue
        err = np.abs(got - want)
        bad = err > ATOL + RTOL * np.abs(want)
        worst = max(worst, float(np.max(err / (ATOL + RTOL * np.abs(want)),
                                        initial=0.0)))
        if bad.any():
            i = int(np.argmax(bad))
            failures.append(f"{name}: {mine}[{i}] estc {got[i]!r} TF "
                            f"{want[i]!r}")
        compared += 1
    print(f"{name}: {compared} variables compared (worst at {worst:.2f} of "
          "the tolerance)")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    import warnings  # pylint: disable=import-outside-toplevel
    warnings.filterwarnings("ignore")
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.get_logger().setLevel("ERROR")
    work = tempfile.mkdtemp(prefix="estc-tf-rnn-estimator-")
    failures = []
    try:
        for k, (name, cell, units, n_classes) in enumerate(CASES):
            batches = make_batches(np, args.seed + k, n_classes)
            tf_losses, tf_vars, initial = run_tf(tf, np, name, cell, units,
                                                 n_classes, batches, work)
            estc_losses, estc_vars = run_estc(np, args.tool, cell, units,
                                              n_classes, batches, initial)
            failures += compare(np, name, tf_losses, tf_vars, estc_losses,
                                estc_vars)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in failures:
        print("FAIL " + line)
    if failures:
        return 1
    print("RNNClassifier agrees with TF 2.15")
    return 0


if __name__ == "__main__":
    sys.exit(main())
