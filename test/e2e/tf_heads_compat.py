#!/usr/bin/env python3
"""estimator/Canned/Head.h against TensorFlow 2.15's heads on random batches.

For each case (random logits, labels and example weights): TF's head.loss,
head.metrics() + update_metrics(...).result() and head.predictions(), and
estc's through heads_tool (the JIT Estimator: evaluate's "loss" and metrics,
predict with the host's string predictions) must agree: every metric key,
every prediction key, numbers to float tolerance, ids and strings exactly.

Cases: binary (0/1 and fractional [0, 1] labels, thresholds, weights, a
vocabulary, SUM, a batch with one class only), multi-class with a
vocabulary, multi-label with thresholds and per-class metrics, regression
with label_dimension 2 (per-example and per-logit weights), poisson and
logistic regression.

usage: tf_heads_compat.py --tool=build/bin/heads_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from case_tool import import_tf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(args.seed)
    H = tf.estimator

    def f32(a):
        return np.asarray(a, dtype=np.float32)

    def fmt(values):
        return " ".join(repr(float(v)) if isinstance(v, (float, np.floating))
                        else str(v) for v in np.asarray(values).reshape(-1).tolist())

    def shape_words(a):
        a = np.asarray(a)
        return f"{a.shape[0]} {a.shape[1] if a.ndim > 1 else 0}"

    cases = []  # (request text, tf head, logits, labels, features)

    def add(kind, head, logits, labels, weights=None, options=(),
            label_type=None, weight_column=None):
        logits = f32(logits)
        lines = [f"head {kind}", *options,
                 f"logits {shape_words(logits)} {fmt(logits)}"]
        labels = np.asarray(labels)
        if label_type is None:
            label_type = ("str" if labels.dtype.kind in "US" else
                          "i64" if labels.dtype.kind == "i" else "f32")
        lines.append(f"labels {label_type} {shape_words(labels)} {fmt(labels)}")
        features = {}
        if weights is not None:
            weights = f32(weights)
            lines.append(f"weights {shape_words(weights)} {fmt(weights)}")
            features["w"] = weights
        lines.append("end")
        cases.append(("\n".join(lines) + "\n", head, logits, labels, features))

    def weights_for(n, zero=True):
        w = rng.uniform(0.0, 3.0, size=n).astype(np.float32)
        if zero:
            w[rng.integers(0, n)] = 0.0
        return w

    R = tf.losses.Reduction
    # Binary: 0/1 int labels, weights, thresholds.
    n = 37
    add("binary", H.BinaryClassHead(weight_column="w", thresholds=[0.3, 0.5, 0.75]),
        rng.normal(0, 2, (n, 1)), rng.integers(0, 2, (n, 1)), weights_for(n),
        ["thresholds 0.3 0.5 0.75"])
    # Binary: fractional labels in [0, 1], SUM, named.
    add("binary", H.BinaryClassHead(loss_reduction=R.SUM, name="bin"),
        rng.normal(0, 1.5, (n, 1)), rng.choice([0.0, 0.25, 0.5, 1.0], (n, 1)),
        None, ["reduction sum", "name bin"])
    # Binary: a vocabulary, labels of rank 1.
    vocab = ["no", "yes"]
    add("binary", H.BinaryClassHead(label_vocabulary=vocab, thresholds=[0.6]),
        rng.normal(0, 1, (n, 1)), rng.choice(vocab, n), None,
        ["vocabulary no yes", "thresholds 0.6"])
    # Binary: one class only (AUC's empty denominators).
    add("binary", H.BinaryClassHead(weight_column="w"),
        rng.normal(0, 1, (8, 1)), np.zeros((8, 1), np.int64), weights_for(8, False))
    # Multi-class with a vocabulary and weights.
    vocab = ["cat", "dog", "owl", "yak"]
    add("multiclass", H.MultiClassHead(4, weight_column="w", label_vocabulary=vocab),
        rng.normal(0, 2, (n, 4)), rng.choice(vocab, (n, 1)), weights_for(n),
        ["n_classes 4", "vocabulary cat dog owl yak"])
    # Multi-class: int ids, SUM, named.
    add("multiclass", H.MultiClassHead(3, loss_reduction=R.SUM, name="mc"),
        rng.normal(0, 1, (n, 3)), rng.integers(0, 3, (n,)), None,
        ["n_classes 3", "reduction sum", "name mc"])
    # Multi-label with thresholds and per-class metrics.
    add("multilabel", H.MultiLabelHead(4, weight_column="w", thresholds=[0.2, 0.5],
                                       classes_for_class_based_metrics=[1, 3]),
        rng.normal(0, 2, (n, 4)), rng.integers(0, 2, (n, 4)), weights_for(n),
        ["n_classes 4", "thresholds 0.2 0.5", "class_metrics 1 3"])
    # Multi-label with a vocabulary (per-class keys by name), float labels.
    add("multilabel", H.MultiLabelHead(3, label_vocabulary=["a", "b", "c"],
                                       classes_for_class_based_metrics=["b"]),
        rng.normal(0, 1, (n, 3)), rng.integers(0, 2, (n, 3)).astype(np.float32),
        None, ["n_classes 3", "vocabulary a b c", "class_metrics 1"])
    # Regression, label_dimension 2, per-example weights.
    add("regression", H.RegressionHead(label_dimension=2, weight_column="w"),
        rng.normal(0, 3, (n, 2)), rng.normal(0, 3, (n, 2)), weights_for(n),
        ["label_dimension 2"])
    # Regression, label_dimension 2, a weight per logit (TF: a numeric
    # column of shape (2,)), SUM.
    add("regression", H.RegressionHead(
        label_dimension=2, loss_reduction=R.SUM,
        weight_column=tf.feature_column.numeric_column("w", shape=(2,))),
        rng.normal(0, 3, (n, 2)), rng.normal(0, 3, (n, 2)),
        rng.uniform(0, 2, (n, 2)), ["label_dimension 2", "reduction sum"])
    # Poisson: counts, 0 and 1 included (no Stirling term there).
    add("poisson", H.PoissonRegressionHead(weight_column="w"),
        rng.normal(0.5, 1, (n, 1)), rng.integers(0, 7, (n, 1)).astype(np.float32),
        weights_for(n))
    # Logistic: labels in [0, 1], rank 1.
    add("logistic", H.LogisticRegressionHead(),
        rng.normal(0, 2, (n, 1)), rng.uniform(0, 1, n).astype(np.float32))

    request = "".join(c[0] for c in cases)
    cache = tempfile.mkdtemp(prefix="estc-heads-compat-cache-")
    try:
        env = dict(os.environ, ESTC_CACHE_DIR=cache)
        proc = subprocess.run([args.tool], input=request, capture_output=True,
                              text=True, env=env, timeout=1200)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        print(proc.stderr)
        print("FAIL: heads_tool exited with", proc.returncode)
        return 1
    answers, current = [], None
    for line in proc.stdout.splitlines():
        words = line.split(" ")
        if words[0] == "metric":
            current = current or ({}, {})
            current[0][words[1]] = float(words[2])
        elif words[0] == "pred":
            current = current or ({}, {})
            kind, count = words[2], int(words[3])
            values = words[4:4 + count]
            current[1][words[1]] = (kind, values)
        elif words[0] == "done":
            answers.append(current or ({}, {}))
            current = None
    if len(answers) != len(cases):
        print(proc.stdout[-2000:], proc.stderr[-2000:])
        print(f"FAIL: {len(answers)} answers for {len(cases)} cases")
        return 1

    failures, checks = [], 0

    def close(got, want, what):
        nonlocal checks
        checks += 1
        if not abs(got - want) <= 2e-5 * max(1.0, abs(want)):
            failures.append(f"{what}: estc {got!r}, TF {want!r}")

    for i, ((text, head, logits, labels, features), (metrics, preds)) in \
            enumerate(zip(cases, answers)):
        where = f"case {i} ({text.splitlines()[0]})"
        tf_loss = float(head.loss(labels, logits, features=features).numpy())
        close(metrics.get("loss", float("nan")), tf_loss, f"{where} loss")
        tf_metrics = head.update_metrics(head.metrics(), features, logits, labels)
        want_keys = set(tf_metrics) | {"loss", "global_step"}
        if set(metrics) != want_keys:
            failures.append(f"{where}: metric keys {sorted(metrics)}, TF "
                            f"{sorted(want_keys)}")
        for key, metric in tf_metrics.items():
            if key in metrics:
                close(metrics[key], float(metric.result().numpy()), f"{where} {key}")
        tf_preds = head.predictions(logits)
        if set(preds) != set(tf_preds):
            failures.append(f"{where}: prediction keys {sorted(preds)}, TF "
                            f"{sorted(tf_preds)}")
        for key, value in tf_preds.items():
            if key not in preds:
                continue
            kind, got = preds[key]
            want = value.numpy().reshape(-1)
            if len(got) != len(want):
                failures.append(f"{where} {key}: {len(got)} values, TF {len(want)}")
                continue
            checks += 1
            if kind == "s":
                want = [w.decode() for w in want]
                if got != want:
                    failures.append(f"{where} {key}: {got[:6]}..., TF {want[:6]}...")
            elif kind == "i":
                if [int(g) for g in got] != [int(w) for w in want]:
                    failures.append(f"{where} {key}: {got[:6]}..., TF {want[:6]}...")
            else:
                for j, (g, w) in enumerate(zip(got, want)):
                    close(float(g), float(w), f"{where} {key}[{j}]")

    for f in failures[:30]:
        print("FAIL:", f)
    if failures:
        print(f"FAIL: {len(failures)} of {checks} checks differ from TF")
        return 1
    print(f"OK: {len(cases)} heads, {checks} values equal to TF 2.15's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
