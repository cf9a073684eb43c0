#!/usr/bin/env python3
"""A partitioned embedding: TF 2.15's Estimator and estc's take turns.

The same custom model_fn in both (tf_partitioned_tool is estc's side):
emb = tf.compat.v1.get_variable("emb", [10, 3],
partitioner=tf.compat.v1.fixed_size_partitioner(3)) (parts emb/part_0 [4, 3],
part_1 [3, 3], part_2 [3, 3]), the ids c [B, 2] looked up with
tf.compat.v1.nn.embedding_lookup(emb, c, partition_strategy=S) for S in mod
and div, reshaped to [B, 6] and concatenated with x [B, 4], then
tf.compat.v1.layers.dense(3) and sparse softmax cross-entropy, trained with
GradientDescent 0.1 or Adagrad 0.1 (sparse updates of the parts; the
Adagrad slots emb/part_<i>/Adagrad). On 2 x STEPS fixed batches, in order:

  tf_200        TF trains STEPS steps, then TF STEPS more (the reference)
  tf_then_estc  TF's first STEPS, then estc continues the model_dir (its
                parts restored from TF's slices of "emb") and exports a
                SavedModel (the parts cut from the checkpoint's "emb")
  estc_then_tf  from TF's step-0 checkpoint, estc trains STEPS steps (in
                TF's format: the parts as slices of "emb" and the slots of
                "emb/Adagrad"), then TF continues (restoring them)
  estc_200      from TF's step-0 checkpoint, estc trains 2 x STEPS steps

Each ends with the reference's variables under the same names (TF's
checkpoints list "emb" [10, 3], not its parts), within float32 noise.

usage: tf_partitioned_compat.py --tool=build/test/tf_partitioned_tool
           --work=DIR
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import shutil
import subprocess
import sys

from case_tool import import_tf
from model_dir_turns import Checks, compare, prepare_dirs, variables

BATCH = 8
STEPS = 40
RTOL, ATOL = 1e-4, 1e-5
check = Checks()

def data(np):
    rng = np.random.RandomState(7)
    n = 2 * STEPS * BATCH
    x = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    c = rng.randint(0, 10, (n, 2)).astype(np.int64)
    y = ((c[:, 0] + c[:, 1] + (x[:, 0] > 0)) % 3).astype(np.int64)
    return x, c, y


def tf_train(tf, model_dir, strategy, opt, x, c, y):
    v1 = tf.compat.v1

    def model_fn(features, labels, mode):
        emb = v1.get_variable("emb", [10, 3],
                              partitioner=v1.fixed_size_partitioner(3))
        rows = v1.nn.embedding_lookup(emb, features["c"],
                                      partition_strategy=strategy)
        net = tf.concat([tf.reshape(rows, [-1, 6]), features["x"]], 1)
        logits = v1.layers.dense(net, 3)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = (v1.train.GradientDescentOptimizer(0.1) if opt == "sgd"
                     else v1.train.AdagradOptimizer(
                         0.1, initial_accumulator_value=0.1))
        train_op = optimizer.minimize(loss,
                                      global_step=v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = tf.estimator.RunConfig(save_checkpoints_steps=STEPS,
                                    save_summary_steps=None,
                                    log_step_count_steps=None,
                                    tf_random_seed=1)
    est = tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(
        ({"x": x, "c": c}, y)).batch(BATCH), steps=len(y) // BATCH)


def estc_train(tool, work, model_dir, strategy, opt, x, c, y, export=None):
    path = os.path.join(work, "batches.bin")
    with open(path, "wb") as f:
        f.write(x.astype("<f4").tobytes() + c.astype("<i8").tobytes() +
                y.astype("<i8").tobytes())
    r = subprocess.run([tool, model_dir, path, strategy, opt, str(BATCH),
                        str(len(y) // BATCH)] + ([export] if export else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {tool} {model_dir}: {r.stderr.strip()[-2000:]}")


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
    tf.get_logger().setLevel("ERROR")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    x, c, y = data(np)
    n = STEPS * BATCH
    first, second = (x[:n], c[:n], y[:n]), (x[n:], c[n:], y[n:])
    for strategy in ("mod", "div"):
        for opt in ("sgd", "adagrad"):
            label = f"{strategy} {opt}"
            work = os.path.join(args.work, f"{strategy}_{opt}")
            os.makedirs(work)
            d = lambda name, work=work: os.path.join(work, name)
            tf_train(tf, d("tf_100"), strategy, opt, *first)
            prepare_dirs(tf, d)

            tf_train(tf, d("tf_200"), strategy, opt, *second)
            reference = variables(tf, d("tf_200"))
            check(list(reference["emb"].shape) == [10, 3] and
                  "emb/part_0" not in reference,
                  f"{label}: TF's checkpoint lists {sorted(reference)}")

            # ... and exports the model: the tool checks that the exported
            # parts are the rows of TF's "emb".
            estc_train(args.tool, work, d("tf_then_estc"), strategy, opt,
                       *second, export=d("export"))
            compare(np, check, f"{label} tf_then_estc",
                    variables(tf, d("tf_then_estc")), reference, RTOL, ATOL)

            estc_train(args.tool, work, d("estc_then_tf"), strategy, opt,
                       *first)
            check(os.path.exists(os.path.join(
                d("estc_then_tf"), f"model.ckpt-{STEPS}.index")),
                f"{label}: estc did not write TF's format")
            compare(np, check, f"{label} estc's first steps",
                    variables(tf, d("estc_then_tf")),
                    variables(tf, d("tf_100")), RTOL, ATOL)
            tf_train(tf, d("estc_then_tf"), strategy, opt, *second)
            compare(np, check, f"{label} estc_then_tf",
                    variables(tf, d("estc_then_tf")), reference, RTOL, ATOL)

            estc_train(args.tool, work, d("estc_200"), strategy, opt, x, c, y)
            compare(np, check, f"{label} estc_200",
                    variables(tf, d("estc_200")), reference, RTOL, ATOL)
            print(f"{label}: checked", flush=True)
    return check.exit_status(
        "OK: a partitioned embedding (mod, div; sgd, adagrad) trains to "
        "TF's values, and TF's and estc's Estimators continue each "
        "other's model_dirs")

if __name__ == "__main__":
    sys.exit(main())
