#!/usr/bin/env python3
"""The graph-side feature-column ops against TensorFlow 2.15.

feature_ops_tool (test/unit) builds estc's bucketize,
safe_embedding_lookup_sparse (sum / mean / sqrtn, with and without weights,
with and without max_norm), sparse_to_indicator and
layers::batch_normalization on random inputs, evaluates them with the
reference evaluator and the JIT-compiled model, and prints inputs and
results as JSON. This script runs TensorFlow on the same inputs:
tf.raw_ops.Bucketize, tf.nn.safe_embedding_lookup_sparse, an
indicator_column (of an identity / weighted categorical column) through
tf.keras.layers.DenseFeatures, and tf.compat.v1.layers.batch_normalization
(output in training and inference, the moving statistics after the
update_ops, the variable names); both of estc's results must match
(bucket ids exactly, floats within 1e-5 relative).

usage: tf_feature_ops_compat.py --tool=build/bin/feature_ops_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import json
import os
import subprocess
import sys
import warnings

RTOL = 1e-5
ATOL = 1e-6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore")  # TF's deprecation notices
    try:
        import numpy as np
        import tensorflow as tf
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    tf.get_logger().setLevel("ERROR")

    run = subprocess.run([args.tool, f"--seed={args.seed}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if run.returncode != 0:
        print(f"FAIL: {args.tool} exited {run.returncode}: "
              f"{run.stderr.strip()}")
        return 1
    cases = json.loads(run.stdout)
    failures = []
    checks = 0

    def compare(where, got, want, exact=False):
        nonlocal checks
        got = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
        want = np.asarray(want, dtype=np.float64)
        checks += 1
        if exact:
            ok = np.array_equal(got, want)
        else:
            ok = np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok:
            failures.append(f"{where}: got {got.ravel().tolist()}, "
                            f"TF {want.ravel().tolist()}")

    def check_results(where, results, want_by_key, exact=False):
        for key, want in want_by_key.items():
            r = results[key]
            want = np.asarray(want)
            if list(want.shape) != r["shape"]:
                failures.append(f"{where}/{key}: shape {r['shape']}, TF "
                                f"{list(want.shape)}")
                continue
            for side in ("reference", "compiled"):
                compare(f"{where}/{key} ({side})", r[side], want, exact)

    def sparse(case, values, dtype):
        # COO rows -> tf.SparseTensor [batch, longest row].
        batch = len(case["row_lengths"])
        width = max([int(n) for n in case["row_lengths"]] + [1])
        indices, position = [], {}
        for r in case["rows"]:
            k = position.get(r, 0)
            position[r] = k + 1
            indices.append([int(r), k])
        return tf.sparse.SparseTensor(
            indices=np.array(indices, dtype=np.int64).reshape(-1, 2),
            values=tf.constant(values, dtype=dtype),
            dense_shape=[batch, width])

    for n, case in enumerate(cases):
        kind = case["kind"]
        where = f"case {n} ({kind})"
        if kind == "lookup":
            p = case["params"]
            params = tf.constant(np.array(p["data"], dtype=np.float32)
                                 .reshape(p["shape"]))
            ids = sparse(case, [int(i) for i in case["ids"]], tf.int64)
            weights = sparse(case, case["weights"], tf.float32)
            want = {}
            for key in case["results"]:
                combiner, weighted, clipped = key.split("/")
                want[key] = tf.nn.safe_embedding_lookup_sparse(
                    params, ids, weights if weighted == "weighted" else None,
                    combiner=combiner,
                    max_norm=case["max_norm"] if clipped == "clipped" else None
                ).numpy()
            check_results(where, case["results"], want)
        elif kind == "indicator":
            depth = int(case["depth"])
            ids = sparse(case, [int(i) for i in case["ids"]], tf.int64)
            weights = sparse(case, case["weights"], tf.float32)
            identity = tf.feature_column.categorical_column_with_identity(
                "ids", depth)
            plain = tf.feature_column.indicator_column(identity)
            weighted = tf.feature_column.indicator_column(
                tf.feature_column.weighted_categorical_column(identity,
                                                              "weights"))
            features = {"ids": ids, "weights": weights}
            want = {
                "plain": tf.keras.layers.DenseFeatures([plain])(features)
                .numpy(),
                "weighted": tf.keras.layers.DenseFeatures([weighted])(
                    features).numpy(),
            }
            check_results(where, case["results"], want)
        elif kind == "bucketize":
            want = {}
            for key, bounds in case["boundaries"].items():
                if key == "int":
                    x = tf.constant(case["ints"], dtype=tf.int64)
                elif key == "many64":
                    x = tf.constant(case["x"], dtype=tf.float64)
                else:
                    x = tf.constant(case["x"], dtype=tf.float32)
                want[key] = tf.raw_ops.Bucketize(input=x,
                                                 boundaries=bounds).numpy()
            check_results(where, case["results"], want, exact=True)
        elif kind == "batch_norm":
            check_batch_norm(tf, np, where, case, compare, check_results,
                             failures)
        else:
            failures.append(f"{where}: unknown kind")

    if failures:
        for f in failures[:40]:
            print("FAIL:", f)
        print(f"{len(failures)} of {checks} checks failed")
        return 1
    print(f"OK: {checks} checks of {len(cases)} cases match TensorFlow "
          f"{tf.__version__}")
    return 0


def check_batch_norm(tf, np, where, case, compare, check_results, failures):
    """Two tf.compat.v1.layers.batch_normalization layers (training, then
    inference) on x, from the same initial variables; then the update_ops."""
    x = np.array(case["x"]["data"], dtype=np.float32).reshape(
        case["x"]["shape"])
    axis = int(case["axis"])
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.compat.v1.placeholder(tf.float32, x.shape)
        y_train = tf.compat.v1.layers.batch_normalization(xp, axis=axis,
                                                          training=True)
        y_infer = tf.compat.v1.layers.batch_normalization(xp, axis=axis,
                                                          training=False)
        variables = tf.compat.v1.global_variables()
        names = [v.op.name for v in variables]
        if names != case["variable_names"]:
            failures.append(f"{where}: variables {case['variable_names']}, "
                            f"TF {names}")
            return
        updates = tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.UPDATE_OPS)
        init = [v.assign(np.array(case["variables"][v.op.name]["initial"],
                                  dtype=np.float32)) for v in variables]
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(init)
            a, b = sess.run([y_train, y_infer], {xp: x})
            sess.run(updates, {xp: x})
            after = sess.run(variables)
    check_results(where, case["results"], {"y_train": a, "y_infer": b})
    for v, value in zip(variables, after):
        got = case["variables"][v.op.name]
        for side in ("reference", "compiled"):
            compare(f"{where}/{v.op.name} after the update ({side})",
                    got[side], value)


if __name__ == "__main__":
    sys.exit(main())
