#!/usr/bin/env python3
"""estc's canned estimators against TensorFlow 2.15's: the first steps.

The same fixed, unshuffled sequence of small batches (string, integer and
float features) trains TF's estimator and estc's (canned_tool, the JIT
Estimator), both from the same initial weights; the loss of every step and
the final variables, optimizer slots included, and every step's summaries
(TF's canned models write each hidden layer's and the logits' activation
histogram and fraction of zero values, the linear model's bias and fraction
of zero weights) must agree to float32 tolerance.

  linear  LinearClassifier over numeric, bucketized, vocabulary-list, hash
          bucket, identity and crossed columns; both start from zeros (TF's
          linear model initializes every weight to zero); TF's default
          optimizer: the name "Ftrl" is Keras' legacy Ftrl
          (tf.keras.optimizers.legacy.Ftrl: learning_rate min(0.2,
          1/sqrt(6 columns)) = 0.2, learning_rate_power -0.5,
          initial_accumulator_value 0.1, no l1/l2/beta), applied by the
          raw ops ResourceApplyFtrl (dense weights: numeric column, bias)
          and ResourceSparseApplyFtrl (the rows a batch touches, duplicate
          ids summed first).
  dnn     DNNClassifier(hidden_units=[8, 4]) over a numeric column, two
          indicator columns and an embedding column, with batch norm;
          TF's default optimizer: Keras' legacy Adagrad at its own default
          rate 0.001 (TF 2.15's _dnn_model_fn_v2 passes no learning rate;
          the DNN's _LEARNING_RATE 0.05 is the v1 estimator's),
          initial_accumulator_value 0.1, epsilon 1e-7 (estc's Adagrad has
          none: a relative 3e-7 at most). TF's
          initial variables (its model.ckpt-0: glorot-uniform kernels,
          truncated-normal embedding) go to canned_tool, which
          warm-starts estc's model from them.
  dnn_adam  the same DNN without batch norm, optimizer "Adam" (Keras'
          legacy Adam at its default rate 0.001, epsilon 1e-7). (With batch
          norm, a hidden layer's bias has a zero gradient up to rounding,
          which Adam's m / sqrt(v) turns into full-size steps of noise in
          TF and estc alike: no comparison there.)

The columns are fixed in canned_tool.cpp and here (keep them equal).
Variable names are TF's, the optimizers' slots and hyperparameter variables
included ("training/Ftrl/<var>/accumulator", "training/Adagrad/decay"):
every variable of TF's checkpoint is estc's, with TF's value.

usage: tf_canned_compat.py --tool=build/bin/canned_tool [--seed=S]
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

STEPS = 10
BATCH = 8
AGE_BOUNDARIES = [25.0, 40.0, 60.0]
SEX_VOCAB = ["m", "f"]
CITIES = ["paris", "rome", "oslo", "lima", "kyiv", "baku"]
CITY_BUCKETS = 10
N_BUCKETS = 4
CROSS_BUCKETS = 20
# The summaries of variables (not of the step's activations).
VARIABLE_SUMMARIES = ("bias", "fraction_of_zero_weights")
DNN_HIDDEN_UNITS = [8, 4]
EMBEDDING_DIMENSION = 3
# float32 arithmetic in another order (sums over a batch, fused kernels):
# a few ulps per step, grown over ten steps.
RTOL = 1e-5
ATOL = 1e-6


def columns(tf, kind):
    fc = tf.feature_column
    age = fc.numeric_column("age")
    sex = fc.categorical_column_with_vocabulary_list("sex", SEX_VOCAB)
    city = fc.categorical_column_with_hash_bucket("city", CITY_BUCKETS)
    n = fc.categorical_column_with_identity("n", N_BUCKETS)
    if kind == "linear":
        age_buckets = fc.bucketized_column(age, AGE_BOUNDARIES)
        return [age, age_buckets, sex, city, n,
                fc.crossed_column([age_buckets, "sex"], CROSS_BUCKETS)]
    return [age, fc.indicator_column(sex),
            fc.embedding_column(city, EMBEDDING_DIMENSION),
            fc.indicator_column(n)]


def make_data(np, seed):
    """STEPS batches of BATCH examples: sex includes an out-of-vocabulary
    value (no id), n an id of -1 (missing), some cities repeat in a batch
    (duplicate sparse rows)."""
    rng = np.random.default_rng(seed)
    count = STEPS * BATCH
    return {
        "age": rng.uniform(10, 80, count).astype(np.float32),
        "sex": rng.choice(SEX_VOCAB + ["x"], count),
        "city": rng.choice(CITIES, count),
        "n": rng.integers(-1, N_BUCKETS, count).astype(np.int64),
    }, rng.integers(0, 2, count).astype(np.int64)


def run_tf(tf, case, kind, features, labels, optimizer, batch_norm, work):
    """TF's losses per step, final variables, and initial variables."""
    # One folder per case: TF keeps each folder's summary writer open.
    model_dir = os.path.join(work, "tf_" + case)
    config = tf.estimator.RunConfig(tf_random_seed=1, save_summary_steps=1,
                                    save_checkpoints_steps=1000,
                                    log_step_count_steps=1000)
    if kind == "linear":
        est = tf.estimator.LinearClassifier(columns(tf, "linear"),
                                            model_dir=model_dir, config=config)
    else:
        est = tf.estimator.DNNClassifier(
            DNN_HIDDEN_UNITS, columns(tf, "dnn"), model_dir=model_dir,
            batch_norm=batch_norm, optimizer=optimizer or "Adagrad",
            config=config)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(
            (features, labels)).batch(BATCH)

    est.train(input_fn, steps=STEPS)
    losses, summaries = {}, {}
    for path in glob.glob(os.path.join(model_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField("histo"):
                    h = value.histo
                    summaries[(event.step, value.tag)] = (
                        "histo", [h.min, h.max, h.num, h.sum, h.sum_squares])
                    continue
                v = (value.simple_value if value.HasField("simple_value")
                     else float(tf.make_ndarray(value.tensor)))
                summaries[(event.step, value.tag)] = ("scalar", [v])
                if value.tag == "loss":
                    losses[event.step] = v
    final = {name: est.get_variable_value(name)
             for name in est.get_variable_names()}
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-0"))
    initial = {name: reader.get_tensor(name)
               for name in reader.get_variable_to_shape_map()}
    return [losses[s] for s in sorted(losses)], final, initial, summaries


def run_estc(tool, kind, features, labels, optimizer, batch_norm, initial, np):
    lines = [f"model {kind}", f"batch_size {BATCH}", f"steps {STEPS}"]
    if kind != "linear":
        lines.append("hidden " + " ".join(map(str, DNN_HIDDEN_UNITS)))
        if batch_norm:
            lines.append("batch_norm")
        for name, value in sorted(initial.items()):
            # Trainable variables (TF warm-starts those): the moving
            # statistics start at 0 and 1 in both.
            if name.startswith("dnn/") and "moving_" not in name:
                value = np.asarray(value, dtype=np.float32)
                lines.append(f"init {name} " + ",".join(map(str, value.shape)) +
                             " " + " ".join(repr(float(v)) for v in value.ravel()))
    if optimizer:
        lines.append(f"optimizer {optimizer}")
    lines.append("f age " + " ".join(repr(float(v)) for v in features["age"]))
    lines.append("s sex " + " ".join(features["sex"]))
    lines.append("s city " + " ".join(features["city"]))
    lines.append("i n " + " ".join(str(int(v)) for v in features["n"]))
    lines.append("labels " + " ".join(str(int(v)) for v in labels))
    proc = subprocess.run([tool], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"canned_tool failed: {proc.stderr.strip()}")
    losses, variables, summaries = [], {}, {}
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[0] == "loss":
            losses.append(float(words[2]))
        elif words[0] == "var":
            variables[words[1]] = np.array([float(w) for w in words[2:]])
        elif words[0] == "summary":
            summaries[(int(words[1]), words[2])] = (
                words[3], [float(w) for w in words[4:]])
    return losses, variables, summaries


def variable_summaries_after(estc_vars):
    """The linear model's variable summaries (VARIABLE_SUMMARIES) as they
    read after estc's last step: from its final variables, as Linear.cpp
    computes them (the bias; the zeros of every other linear weight over
    their total size)."""
    bias, zeros, size = None, 0, 0
    for name, value in estc_vars.items():
        if not name.startswith("linear/"):
            continue
        if name.endswith("/bias_weights"):
            bias = value
            continue
        zeros += int((value == 0.0).sum())
        size += value.size
    after = {}
    if bias is not None and bias.size == 1:
        after["bias"] = ("scalar", [float(bias[0])])
    if size:
        after["fraction_of_zero_weights"] = ("scalar", [zeros / size])
    return after


def compare_summaries(kind, tf_summaries, estc_summaries, estc_vars):
    """The summaries of every step: the same tags as TF's (the canned
    models' hidden-layer activations and zero fractions, the linear bias and
    zero-weight fraction, the loss), each scalar and each histogram's
    min, max, count, sum and sum of squares equal to float32 tolerance."""
    failures = []
    after_last = variable_summaries_after(estc_vars)
    tf_tags = sorted({tag for _, tag in tf_summaries})
    estc_tags = sorted({tag for _, tag in estc_summaries})
    if tf_tags != estc_tags:
        return [f"{kind}: summary tags: estc {estc_tags}, TF {tf_tags}"]
    for key in sorted(tf_summaries):
        if key not in estc_summaries:
            failures.append(f"{kind}: no estc summary {key[1]} at step "
                            f"{key[0]}")
            continue
        (tf_kind, want), (got_kind, got) = tf_summaries[key], estc_summaries[key]
        if tf_kind != got_kind:
            failures.append(f"{kind}: {key[1]} at step {key[0]} is a "
                            f"{got_kind}, TF's a {tf_kind}")
            continue
        # A histogram's sum of squares and sum accumulate in float64 on TF's
        # side over float32 values: compare them at the values' tolerance
        # times the count.
        scale = max(1.0, want[2]) if tf_kind == "histo" else 1.0

        def close(mine):
            return all(abs(a - b) <= scale * (ATOL + RTOL * abs(b))
                       for a, b in zip(mine, want))
        if close(got):
            continue
        # The linear model's summaries read its variables, which TF's graph
        # does not order against the step's update: TF's value is the
        # variables' before the update (estc's, always) or, in some runs,
        # after it, which is estc's at the next step (after the last step:
        # estc's final variables).
        later = (after_last.get(key[1]) if key[0] == STEPS
                 else estc_summaries.get((key[0] + 1, key[1])))
        if key[1] in VARIABLE_SUMMARIES and later and close(later[1]):
            continue
        failures.append(f"{kind}: summary {key[1]} at step {key[0]}: "
                        f"estc {got!r} TF {want!r}")
    print(f"{kind}: {len(tf_summaries)} summaries compared "
          f"({len(tf_tags)} tags: {' '.join(tf_tags)})")
    return failures


def compare(np, kind, tf_losses, tf_vars, estc_losses, estc_vars):
    """The failures, one line each."""
    failures = []
    if len(tf_losses) != STEPS or len(estc_losses) != STEPS:
        return [f"{kind}: {len(tf_losses)} TF losses, {len(estc_losses)} "
                f"estc losses, want {STEPS}"]
    for step, (a, b) in enumerate(zip(estc_losses, tf_losses), 1):
        if abs(a - b) > ATOL + RTOL * abs(b):
            failures.append(f"{kind}: step {step} loss estc {a!r} TF {b!r}")
    print(f"{kind}: losses " + " ".join(f"{v:.6g}" for v in tf_losses))
    compared = 0
    worst = 0.0
    for name, value in sorted(tf_vars.items()):
        mine = name
        if mine not in estc_vars:
            failures.append(f"{kind}: TF's variable {name} is not estc's")
            continue
        want = np.asarray(value, dtype=np.float64).ravel()
        got = estc_vars[mine]
        if want.shape != got.shape:
            failures.append(f"{kind}: {mine}: {got.size} values, TF {want.size}")
            continue
        err = np.abs(got - want)
        bad = err > ATOL + RTOL * np.abs(want)
        worst = max(worst, float(np.max(err / (ATOL + RTOL * np.abs(want)),
                                        initial=0.0)))
        if bad.any():
            i = int(np.argmax(bad))
            failures.append(f"{kind}: {mine}[{i}] estc {got[i]!r} TF "
                            f"{want[i]!r}")
        compared += 1
    print(f"{kind}: {compared} variables compared (worst at "
          f"{worst:.2f} of the tolerance)")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.get_logger().setLevel("ERROR")
    features, labels = make_data(np, args.seed)
    work = tempfile.mkdtemp(prefix="estc-tf-canned-")
    failures = []
    try:
        for kind, model, optimizer, batch_norm in (
                ("linear", "linear", None, False),
                ("dnn", "dnn", None, True),
                ("dnn_adam", "dnn", "Adam", False)):
            tf_losses, tf_vars, initial, tf_summaries = run_tf(
                tf, kind, model, features, labels, optimizer, batch_norm,
                work)
            estc_losses, estc_vars, estc_summaries = run_estc(
                args.tool, model, features, labels, optimizer, batch_norm,
                initial, np)
            failures += compare(np, kind, tf_losses, tf_vars, estc_losses,
                                estc_vars)
            failures += compare_summaries(kind, tf_summaries, estc_summaries,
                                          estc_vars)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in failures:
        print("FAIL " + line)
    if failures:
        return 1
    print("canned estimators agree with TF 2.15")
    return 0


if __name__ == "__main__":
    sys.exit(main())
