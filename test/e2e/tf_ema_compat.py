#!/usr/bin/env python3
"""ExponentialMovingAverage's shadows at evaluation and prediction: estc's
Estimator against TensorFlow 2.15's.

Both sides build the same model_fn (a dense layer from the same initial
weights, mean sparse softmax cross entropy, GradientDescentOptimizer and
an ExponentialMovingAverage(decay, num_updates=global_step) of the
trainable variables applied after the update), train it on the same
batches in order, then evaluate and predict twice from the checkpoint: with
the raw variables, and with the EVAL / PREDICT specs restoring the shadows
(TF: EstimatorSpec(scaffold=tf.compat.v1.train.Scaffold(saver=
tf.compat.v1.train.Saver(ema.variables_to_restore()))); estc:
EstimatorSpec::scaffold.saver_var_list = ema.variables_to_restore(),
test/data/ema_tool.cpp). Checked, to float32 noise: the checkpoint's
variables (the shadows included), both evaluation losses and both
predictions; and that the shadows' evaluation differs from the raw one.

usage: tf_ema_compat.py --tool=build/bin/ema_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

from case_tool import import_tf

F, C, N, EN, BATCH, STEPS = 4, 3, 48, 20, 8, 12
DECAY, LR = 0.9, 0.5
RTOL, ATOL = 2e-5, 2e-6


def tf_side(tf, np, data, model_dir):
    """TF's Estimator: the variables after training; loss and logits of
    the raw and the averaged evaluation and prediction."""
    v1 = tf.compat.v1

    def model_fn(features, labels, mode, params):
        logits = v1.layers.dense(
            features["x"], C,
            kernel_initializer=v1.constant_initializer(data["kernel"]),
            bias_initializer=v1.constant_initializer(data["bias"]))
        ema = v1.train.ExponentialMovingAverage(
            DECAY, num_updates=v1.train.get_global_step())
        predictions = {"logits": logits}
        if mode == tf.estimator.ModeKeys.PREDICT:
            scaffold = None
            if params["shadows"]:
                scaffold = v1.train.Scaffold(
                    saver=v1.train.Saver(ema.variables_to_restore()))
            return tf.estimator.EstimatorSpec(mode, predictions=predictions,
                                              scaffold=scaffold)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.TRAIN:
            opt = v1.train.GradientDescentOptimizer(LR).minimize(
                loss, global_step=v1.train.get_global_step())
            with tf.control_dependencies([opt]):
                train_op = ema.apply(v1.trainable_variables())
            return tf.estimator.EstimatorSpec(mode, loss=loss,
                                              train_op=train_op)
        scaffold = None
        if params["shadows"]:
            scaffold = v1.train.Scaffold(
                saver=v1.train.Saver(ema.variables_to_restore()))
        return tf.estimator.EstimatorSpec(mode, loss=loss, scaffold=scaffold)

    config = tf.estimator.RunConfig(model_dir=model_dir,
                                    save_checkpoints_steps=1000000,
                                    log_step_count_steps=1000000)
    inputs = v1.estimator.inputs
    train_input = inputs.numpy_input_fn(
        {"x": data["x"]}, data["y"], batch_size=BATCH, num_epochs=None,
        shuffle=False)
    eval_input = inputs.numpy_input_fn(
        {"x": data["ex"]}, data["ey"], batch_size=BATCH, num_epochs=1,
        shuffle=False)
    predict_input = inputs.numpy_input_fn(
        {"x": data["ex"]}, batch_size=BATCH, num_epochs=1, shuffle=False)
    raw = tf.estimator.Estimator(model_fn, config=config,
                                 params={"shadows": False})
    raw.train(train_input, steps=STEPS)
    out = {"var": {}}
    for name in raw.get_variable_names():
        if name != "global_step":
            out["var"][name] = raw.get_variable_value(name).ravel()
    avg = tf.estimator.Estimator(model_fn, config=config,
                                 params={"shadows": True})
    for which, est in (("raw", raw), ("avg", avg)):
        out["loss " + which] = np.array([est.evaluate(eval_input)["loss"]])
        out["logits " + which] = np.concatenate(
            [p["logits"] for p in est.predict(predict_input)])
    return out


def estc_side(tool, np, data, work):
    case = os.path.join(work, "case.txt")
    with open(case, "w") as f:
        f.write(f"dims {F} {C}\nsteps {STEPS}\nbatch {BATCH}\n")
        f.write(f"decay {DECAY}\nlr {LR}\n")
        for key in ("kernel", "bias", "x", "y", "ex", "ey"):
            values = data[key].ravel()
            f.write(key + " " + " ".join(repr(float(v)) for v in values) + "\n")
    run = subprocess.run([tool, case, os.path.join(work, "estc_model")],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"ema_tool failed: {run.stderr.strip()}")
    out = {"var": {}}
    for line in run.stdout.splitlines():
        parts = line.split()
        if parts[0] == "var":
            out["var"][parts[1]] = np.array(parts[2:], dtype=np.float64)
        elif parts[0] in ("loss", "logits"):
            out[parts[0] + " " + parts[1]] = np.array(parts[2:],
                                                      dtype=np.float64)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.get_logger().setLevel("ERROR")
    rng = np.random.default_rng(args.seed)
    data = {
        "kernel": rng.uniform(-0.5, 0.5, (F, C)).astype(np.float32),
        "bias": rng.uniform(-0.1, 0.1, C).astype(np.float32),
        "x": rng.uniform(-1, 1, (N, F)).astype(np.float32),
        "y": rng.integers(0, C, N).astype(np.int64),
        "ex": rng.uniform(-1, 1, (EN, F)).astype(np.float32),
        "ey": rng.integers(0, C, EN).astype(np.int64),
    }
    with tempfile.TemporaryDirectory(prefix="tf-ema-compat-") as work:
        want = tf_side(tf, np, data, os.path.join(work, "tf_model"))
        got = estc_side(args.tool, np, data, work)
    failures = []
    if set(want["var"]) != set(got["var"]):
        failures.append(f"variables: TF {sorted(want['var'])}, estc "
                        f"{sorted(got['var'])}")
    for name in sorted(set(want["var"]) & set(got["var"])):
        if not np.allclose(got["var"][name], want["var"][name], rtol=RTOL,
                           atol=ATOL):
            failures.append(f"variable {name}: TF {want['var'][name]}, estc "
                            f"{got['var'][name]}")
    for key in ("loss raw", "loss avg", "logits raw", "logits avg"):
        if key not in got or got[key].shape != want[key].shape or \
                not np.allclose(got[key], want[key], rtol=RTOL, atol=ATOL):
            failures.append(f"{key}: TF {want[key]}, estc {got.get(key)}")
    if abs(want["loss avg"][0] - want["loss raw"][0]) < 1e-3:
        failures.append("the shadows' evaluation is the raw one's: the case "
                        "checks nothing")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"tf_ema_compat: equal to TF 2.15 (loss raw "
          f"{want['loss raw'][0]:.6f}, with the shadows "
          f"{want['loss avg'][0]:.6f}; {len(want['var'])} variables, "
          f"predictions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
