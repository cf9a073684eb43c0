#!/usr/bin/env python3
"""A TF 2.15 Estimator and estc's take turns in one model_dir.

The same model in both (tf_estimator_tool is estc's side): a custom
model_fn (tf.compat.v1.layers.dense(8, relu), dense(3), sparse softmax
cross-entropy) with each TF 1 optimizer -- GradientDescent, Momentum (slots
<var>/Momentum), Adagrad (<var>/Adagrad), Adam (<var>/Adam, <var>/Adam_1
and the non-slot beta1_power / beta2_power) -- and the canned estimators
(3 classes over numeric_column("x", 4) and categorical_column_with_identity
("c", 5), the DNN's through embedding_column(c, 3)) with Keras' legacy
optimizers, whose slots and hyperparameters TF 2.15 names
"training/<Optimizer>/...": LinearClassifier (Ftrl), DNNClassifier
(Adagrad), DNNLinearCombinedClassifier with "Adam" for both parts
(training/Adam and training/Adam_1, the linear one with its own iter) and
BaselineClassifier (Ftrl). On 200 fixed batches, in order:

  tf_200        TF trains 100 steps, then TF 100 more (the reference)
  tf_then_estc  TF's first 100 steps, then estc continues the model_dir for
                100 (RunConfig checkpoint_format "auto": it stays in TF's
                format)
  estc_then_tf  from TF's step-0 checkpoint, estc trains 100 steps (TF's
                format, again by "auto"), then TF continues for 100
  estc_200      (the custom model_fns) from TF's step-0 checkpoint, estc
                trains 200 steps

Each ends with the reference's variables, optimizer slots and
hyperparameter variables included, under the same names (nothing missing
and nothing more: TF's Saver restores every variable of its graph; the one
tensor estc adds is _estc_input_pipeline_state, the input pipeline's
position, which TF's Saver ignores), within float32 noise; estc's step-100
checkpoint equals TF's. The model_dirs estc wrote hold TF checkpoints
(model.ckpt-N.index), an int64 global_step, and a state file that TF's
tf.train.get_checkpoint_state reads.

usage: tf_estimator_checkpoint_compat.py --tool=build/bin/tf_estimator_tool
           --work=DIR
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

from case_tool import import_tf
from model_dir_turns import Checks, compare, prepare_dirs, variables

BATCH = 16
STEPS = 100
CUSTOM = ("sgd", "momentum", "adagrad", "adam")
CANNED = ("linear", "dnn", "wd_adam", "baseline")
RTOL, ATOL = 1e-4, 1e-5

check = Checks()


def data(np):
    rng = np.random.RandomState(5)
    x = rng.uniform(-1, 1, (2 * STEPS * BATCH, 4)).astype(np.float32)
    c = np.clip(np.floor((x[:, 0] + 1) * 2.5), 0, 4).astype(np.int64)
    y = np.argmax(np.stack([x[:, 0] + x[:, 1], x[:, 2], x[:, 3]], 1),
                  1).astype(np.int64)
    return x, c, y


def tf_estimator(tf, model, model_dir):
    v1 = tf.compat.v1
    config = tf.estimator.RunConfig(save_checkpoints_steps=STEPS,
                                    save_summary_steps=None,
                                    log_step_count_steps=None,
                                    tf_random_seed=1)
    fc = tf.feature_column
    linear = [fc.numeric_column("x", shape=(4,)),
              fc.categorical_column_with_identity("c", 5)]
    dnn = [fc.numeric_column("x", shape=(4,)),
           fc.embedding_column(fc.categorical_column_with_identity("c", 5),
                               3)]
    common = dict(n_classes=3, model_dir=model_dir, config=config)
    if model == "linear":
        return tf.estimator.LinearClassifier(linear, **common)
    if model == "dnn":
        return tf.estimator.DNNClassifier([8], dnn, **common)
    if model == "wd_adam":
        return tf.estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=linear, linear_optimizer="Adam",
            dnn_feature_columns=dnn, dnn_optimizer="Adam",
            dnn_hidden_units=[8], **common)
    if model == "baseline":
        return tf.estimator.BaselineClassifier(**common)

    def model_fn(features, labels, mode):
        hidden = v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
        logits = v1.layers.dense(hidden, 3)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        opt = {"sgd": lambda: v1.train.GradientDescentOptimizer(0.1),
               "momentum": lambda: v1.train.MomentumOptimizer(0.05, 0.9),
               "adagrad": lambda: v1.train.AdagradOptimizer(
                   0.1, initial_accumulator_value=0.1),
               "adam": lambda: v1.train.AdamOptimizer(0.01)}[model]()
        train_op = opt.minimize(loss, global_step=v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return tf.estimator.Estimator(model_fn, model_dir=model_dir,
                                  config=config)


def tf_train(tf, model_dir, model, x, c, y):
    est = tf_estimator(tf, model, model_dir)
    # TF 2.15's BaselineClassifier fails ("the iterator has not been
    # initialized") when the features hold an int64 tensor it does not use:
    # x alone for it.
    features = {"x": x} if model == "baseline" else {"x": x, "c": c[:, None]}
    est.train(lambda: tf.data.Dataset.from_tensor_slices(
        (features, y)).batch(BATCH), steps=len(y) // BATCH)


def estc_train(tool, work, model_dir, model, x, c, y):
    path = os.path.join(work, "batches.bin")
    with open(path, "wb") as f:
        f.write(x.astype("<f4").tobytes() + c.astype("<i8").tobytes() +
                y.astype("<i8").tobytes())
    r = subprocess.run([tool, model_dir, path, model, str(BATCH),
                        str(len(y) // BATCH), "auto"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} {model_dir}: {r.stderr.strip()[-2000:]}")


def estc_wrote_tf(tf, label, model_dir, step):
    check(os.path.exists(os.path.join(model_dir, f"model.ckpt-{step}.index"))
          and not glob.glob(os.path.join(model_dir, "*.safetensors")),
          f"{label}: estc did not continue the model_dir in TF's format")
    state = tf.train.get_checkpoint_state(model_dir)
    check(state is not None and os.path.basename(
        state.model_checkpoint_path) == f"model.ckpt-{step}",
        f"{label}: TF reads the state file as {state}")
    reader = tf.train.load_checkpoint(os.path.join(model_dir,
                                                   f"model.ckpt-{step}"))
    check(reader.get_variable_to_dtype_map()["global_step"] == tf.int64 and
          int(reader.get_tensor("global_step")) == step,
          f"{label}: global_step is not the int64 {step}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.get_logger().setLevel("ERROR")  # the Estimator's deprecation warnings
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    x, c, y = data(np)
    n = STEPS * BATCH
    first, second = (x[:n], c[:n], y[:n]), (x[n:], c[n:], y[n:])
    for opt in CUSTOM + CANNED:
        work = os.path.join(args.work, opt)
        os.makedirs(work)
        d = lambda name: os.path.join(work, name)
        tf_train(tf, d("tf_100"), opt, *first)
        prepare_dirs(tf, d)

        tf_train(tf, d("tf_200"), opt, *second)
        reference = variables(tf, d("tf_200"))
        check(int(reference["global_step"]) == 2 * STEPS,
              f"{opt}: TF's reference ended at {reference['global_step']}")

        estc_train(args.tool, work, d("tf_then_estc"), opt, *second)
        estc_wrote_tf(tf, f"{opt} tf_then_estc", d("tf_then_estc"), 2 * STEPS)
        compare(np, check, f"{opt} tf_then_estc",
                variables(tf, d("tf_then_estc")), reference, RTOL, ATOL)

        estc_train(args.tool, work, d("estc_then_tf"), opt, *first)
        estc_wrote_tf(tf, f"{opt} estc_then_tf", d("estc_then_tf"), STEPS)
        compare(np, check, f"{opt} estc's first 100 steps",
                variables(tf, d("estc_then_tf")), variables(tf, d("tf_100")),
                RTOL, ATOL)
        tf_train(tf, d("estc_then_tf"), opt, *second)
        compare(np, check, f"{opt} estc_then_tf",
                variables(tf, d("estc_then_tf")), reference, RTOL, ATOL)

        if opt in CUSTOM:
            estc_train(args.tool, work, d("estc_200"), opt, x, c, y)
            compare(np, check, f"{opt} estc_200",
                    variables(tf, d("estc_200")), reference, RTOL, ATOL)
        print(f"{opt}: checked", flush=True)
    return check.exit_status(
        "OK: TF's and estc's Estimators continue each other's model_dirs "
        "(" + ", ".join(CUSTOM + CANNED) + "), equal to 200 steps in TF")


if __name__ == "__main__":
    sys.exit(main())
