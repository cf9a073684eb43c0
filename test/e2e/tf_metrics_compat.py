#!/usr/bin/env python3
"""lib/Graph/Metrics.h against TensorFlow 2.15's tf.compat.v1.metrics.

For each case (sizes and a seed): random batches of class ids (with
duplicates, -1 and ids >= num_classes), scores with ties, given top-k ids
(with repeats and unknown ids), the same with two examples per row
([batch, 2, ...]), binary labels, probabilities on a grid
(ties, exactly 0 and 1), regression values with zero normalizers, and
example weights (0 included). metrics_tool (the JIT) runs every metric of
its list, unweighted and weighted, over the batches in turn (streaming,
batches of different sizes); TF builds the same metrics in a v1 graph and
runs their update ops on the same batches. After every batch each value
must agree: NaN where NaN, else to float tolerance.

usage: tf_metrics_compat.py --tool=build/bin/metrics_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import math
import sys

from case_tool import import_tf, run_case as run_tool


def tf_metrics(tf, f, labels, K):
    """The metrics of metrics_tool.cpp's buildMetrics, keyed alike."""
    m = tf.compat.v1.metrics
    out = []
    for weighted in (False, True):
        w = f["w"] if weighted else None
        sfx = "_w" if weighted else ""

        def add(key, metric):
            out.append((key + sfx, metric))

        multi, scores, idx = f["multi"], f["scores"], f["idx"]
        first = multi[:, :1]
        add("sparse_precision_at_1",
            m.sparse_precision_at_k(labels, scores, 1, weights=w))
        add("sparse_precision_at_3_multi",
            m.sparse_precision_at_k(multi, scores, 3, weights=w))
        add("sparse_precision_at_2_class2",
            m.sparse_precision_at_k(multi, scores, 2, class_id=2, weights=w))
        add("recall_at_1", m.recall_at_k(labels, scores, 1, weights=w))
        add("recall_at_3_multi", m.recall_at_k(multi, scores, 3, weights=w))
        add("recall_at_2_class1",
            m.recall_at_k(multi, scores, 2, class_id=1, weights=w))
        add("precision_at_top_k", m.precision_at_top_k(multi, idx, weights=w))
        add("precision_at_top_k_single",
            m.precision_at_top_k(labels, idx, k=K, weights=w))
        add("precision_at_top_k_class1",
            m.precision_at_top_k(multi, idx, k=K, class_id=1, weights=w))
        add("recall_at_top_k", m.recall_at_top_k(multi, idx, weights=w))
        add("recall_at_top_k_single",
            m.recall_at_top_k(labels, idx, k=K, weights=w))
        add("recall_at_top_k_class1",
            m.recall_at_top_k(multi, idx, k=K, class_id=1, weights=w))
        add("average_precision_at_1",
            m.average_precision_at_k(first, scores, 1, weights=w))
        add("average_precision_at_3_multi",
            m.average_precision_at_k(multi, scores, 3, weights=w))
        add("sparse_average_precision_at_2",
            m.sparse_average_precision_at_k(multi, scores, 2, weights=w))
        w3 = f["w3"] if weighted else None
        add("precision_at_2_3d",
            m.precision_at_k(f["multi3"], f["scores3"], 2, weights=w3))
        add("recall_at_top_k_3d",
            m.recall_at_top_k(f["multi3"], f["idx3"], weights=w3))
        add("precision_at_top_k_3d_class0",
            m.precision_at_top_k(f["multi3"], f["idx3"], k=K, class_id=0,
                                 weights=w3))
        add("average_precision_at_2_3d",
            m.average_precision_at_k(f["multi3"], f["scores3"], 2,
                                     weights=w3))
        add("mean_cosine_distance",
            m.mean_cosine_distance(f["y"], f["yhat"], 1,
                                   weights=None if w is None
                                   else tf.expand_dims(w, 1)))
        add("mean_relative_error",
            m.mean_relative_error(f["y"], f["yhat"], f["norm"], weights=w))
        column_weights = (tf.reduce_mean(tf.abs(f["norm"]), axis=0)
                          if weighted else None)
        add("mean_tensor", m.mean_tensor(tf.reduce_sum(f["yhat"], axis=0),
                                         weights=column_weights))
        add("percentage_below", m.percentage_below(f["p"], 0.5, weights=w))
        add("percentage_below_y",
            m.percentage_below(f["y"], -0.25, weights=w))
        add("sensitivity_at_specificity",
            m.sensitivity_at_specificity(f["bin"], f["p"], 0.7, weights=w))
        add("sensitivity_at_specificity_7",
            m.sensitivity_at_specificity(f["bin"], f["p"], 0.5, weights=w,
                                         num_thresholds=7))
        add("specificity_at_sensitivity",
            m.specificity_at_sensitivity(f["bin"], f["p"], 0.4, weights=w))
        add("specificity_at_sensitivity_7",
            m.specificity_at_sensitivity(f["bin"], f["p"], 0.6, weights=w,
                                         num_thresholds=7))
    return out


def make_batch(np, rng, n, C, L, K, D, rows=None):
    """One batch of every feature (numpy arrays)."""
    # Mostly class ids, sometimes -1 or an id >= C; the first label of
    # `multi` is always a class (average precision divides by the labels).
    def ids(shape):
        v = rng.integers(0, C, size=shape)
        odd = rng.random(shape) < 0.15
        return np.where(odd, rng.choice([-1, C, C + 2], size=shape), v)

    multi = ids((n, L))
    multi[:, 0] = rng.integers(0, C, size=n)
    if L > 1:  # repeated labels
        rep = rng.random(n) < 0.3
        multi[rep, 1] = multi[rep, 0]
    scores = rng.integers(0, 5, size=(n, C)).astype(np.float32) * 0.25
    hit = rng.random(n) < 0.5  # the first label often scores best
    scores[hit, multi[hit, 0]] = 1.0
    idx = rng.integers(0, C, size=(n, K))
    if K > 1:
        rep = rng.random(n) < 0.3
        idx[rep, 1] = idx[rep, 0]
    idx = np.where(rng.random((n, K)) < 0.1, C + 1, idx)
    norm = rng.integers(-4, 5, size=(n, D)).astype(np.float32) * 0.5
    batch = {
        "labels": ids((n,)),
        "multi": multi,
        "scores": scores,
        "idx": idx,
        "bin": rng.integers(0, 2, size=n),
        "p": rng.integers(0, 21, size=n).astype(np.float32) / np.float32(20),
        "y": rng.uniform(-1, 1, size=(n, D)).astype(np.float32),
        "yhat": rng.uniform(-1, 1, size=(n, D)).astype(np.float32),
        "norm": norm,
        "w": rng.choice([0.0, 0.5, 1.0, 2.0, 0.3], size=n).astype(np.float32),
    }
    if rows is not None:
        return batch
    two = make_batch(np, rng, 2 * n, C, L, K, D, rows=2)
    for key in ("multi", "scores", "idx", "w"):  # [n, 2, ...]
        batch[key + "3"] = two[key].reshape((n, 2) + two[key].shape[1:])
    return batch


def fmt(a):
    return " ".join(repr(float(x)) if a.dtype.kind == "f" else str(int(x))
                    for x in a.reshape(-1))


def run_case(np, tf, tool, seed, C, L, K, D, sizes):
    rng = np.random.default_rng(seed)
    batches = [make_batch(np, rng, n, C, L, K, D) for n in sizes]

    # estc
    lines = [f"sizes {C} {L} {K} {D}"]
    for b in batches:
        lines.append(f"batch {len(b['labels'])}")
        lines += [f"{k} {fmt(v)}" for k, v in b.items()]
        lines.append("end")
    proc = run_tool(tool, lines, timeout=600)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-4000:])
        raise SystemExit(f"metrics_tool failed (exit {proc.returncode})")
    got = []  # per step: {key: [values]}
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[0] == "step":
            got.append({})
        elif words[0] == "metric":
            got[-1][words[1]] = [float(x) for x in words[2:]]

    # TF
    g = tf.Graph()
    with g.as_default():
        dtypes = {"labels": tf.int64, "multi": tf.int64, "idx": tf.int64,
                  "bin": tf.int64}
        dtypes.update({"multi3": tf.int64, "idx3": tf.int64})
        shapes = {"multi": [L], "scores": [C], "idx": [K], "y": [D],
                  "yhat": [D], "norm": [D], "multi3": [2, L],
                  "scores3": [2, C], "idx3": [2, K], "w3": [2]}
        ph = {k: tf.compat.v1.placeholder(
            dtypes.get(k, tf.float32), [None] + shapes.get(k, []), name=k)
            for k in batches[0]}
        metrics = tf_metrics(tf, ph, ph["labels"], K)
        updates = [u for _, (_, u) in metrics]
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            want = []
            for b in batches:
                sess.run(updates, {ph[k]: v for k, v in b.items()})
                want.append(dict(zip([k for k, _ in metrics],
                                     sess.run([v for _, (v, _) in metrics]))))

    failures = 0
    if len(got) != len(want):
        print(f"seed {seed}: estc ran {len(got)} steps, TF {len(want)}")
        return 1
    for step, (gs, ws) in enumerate(zip(got, want)):
        for key, value in ws.items():
            w = np.asarray(value, dtype=np.float64).reshape(-1)
            e = np.asarray(gs.get(key, []), dtype=np.float64)
            ok = e.shape == w.shape and all(
                (math.isnan(a) and math.isnan(b)) or
                (not math.isnan(a) and not math.isnan(b) and
                 abs(a - b) <= 1e-6 + 1e-5 * abs(b))
                for a, b in zip(e, w))
            if not ok:
                failures += 1
                print(f"MISMATCH seed {seed} C={C} L={L} K={K} step {step} "
                      f"{key}: estc {e.tolist()} TF {w.tolist()}")
    print(f"seed {seed} C={C} L={L} K={K} D={D}: {len(want)} steps x "
          f"{len(want[0])} metrics, {failures} mismatches")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf.compat.v1.disable_eager_execution()
    failures = 0
    for i, (C, L, K, D, sizes) in enumerate([
            (5, 3, 3, 4, [16, 5, 29, 1]),
            (7, 1, 2, 3, [24, 3, 18]),
            (4, 2, 4, 2, [1, 17, 36, 2]),
    ]):
        failures += run_case(np, tf, args.tool, args.seed + i, C, L, K, D,
                             sizes)
    if failures:
        print(f"FAIL: {failures} mismatches")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
