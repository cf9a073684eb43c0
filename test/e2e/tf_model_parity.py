#!/usr/bin/env python3
"""Whole models against TensorFlow 2.15: the same initial weights, the same
batches, 20 training steps, the losses and the final weights.

resnet: examples/fashion_mnist/ResNetModel.h (conv + batch norm residual
blocks, global average pooling, momentum with weight decay on a piecewise
schedule, the batch norm moving averages updated by the train_op), written
with tf.compat.v1.layers in bench/tf_toolbox_models.py (the benchmark's TF
peer runs the same definition), variables named as estc names them. model_parity_tool (test/data/model_parity_tool.cpp) trains estc's.

usage: tf_model_parity.py --tool=build/bin/model_parity_tool [--steps=N]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
from tf_toolbox_models import resnet_tf  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import numpy as np
        import tensorflow as tf
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    rng = np.random.default_rng(args.seed)
    batch = 16
    opts = {"width": 8, "blocks_per_stage": 1, "weight_decay": 5e-4,
            "momentum": 0.9, "batch_norm_momentum": 0.99}
    boundaries, values = [10], [0.02, 0.01]
    xs = [rng.uniform(0, 1, (batch, 28, 28, 1)).astype(np.float32)
          for _ in range(args.steps)]
    ys = [rng.integers(0, 10, batch).astype(np.int64)
          for _ in range(args.steps)]

    def train_tf(initial=None, jitter=0.0):
        """TF's run: the losses, the variables before and after. With
        `jitter`, the initial weights and every batch are scaled by
        1 + jitter * N(0, 1) elementwise: TF's own float32 noise band."""
        graph = tf.Graph()
        noise = np.random.default_rng(args.seed + 1)

        def jittered(a):
            if not jitter:
                return a
            return (a * (1 + jitter * noise.standard_normal(a.shape))).astype(a.dtype)

        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
            labels = tf.compat.v1.placeholder(tf.int64, [None])
            loss, train_op = resnet_tf(tf, x, labels, opts, boundaries, values)
            variables = [v for v in tf.compat.v1.global_variables()
                         if "Momentum" not in v.name
                         and "global_step" not in v.name]
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                if initial is None:
                    initial = sess.run(variables)
                for v, value in zip(variables, initial):
                    v.load(jittered(value), sess)
                losses = []
                for step in range(args.steps):
                    value, _ = sess.run([loss, train_op],
                                        {x: jittered(xs[step]),
                                         labels: ys[step]})
                    losses.append(float(value))
                final = sess.run(variables)
        return [v.name.split(":")[0] for v in variables], initial, losses, final

    names, initial, losses, final = train_tf()
    _, _, noisy_losses, noisy_final = train_tf(initial, jitter=1e-6)

    def words(a):
        return " ".join(repr(float(v)) for v in np.asarray(a).reshape(-1))

    lines = ["model resnet", f"batch {batch}", f"steps {args.steps}",
             f"boundaries {words(boundaries)}", f"values {words(values)}"]
    lines += [f"option {k} {v}" for k, v in opts.items()]
    lines += [f"var {n} {words(w)}" for n, w in zip(names, initial)]
    for step in range(args.steps):
        lines += [f"x {step} {words(xs[step])}", f"y {step} {words(ys[step])}"]
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "resnet.case")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        run = subprocess.run([args.tool, path], capture_output=True,
                             text=True, check=False)
    if run.returncode != 0:
        print(f"FAIL resnet: model_parity_tool exited {run.returncode}: "
              f"{run.stderr.strip()}")
        return 1
    got_losses, got_vars = [], {}
    for line in run.stdout.splitlines():
        head, *rest = line.split()
        if head == "loss":
            got_losses.append(float(rest[1]))
        elif head == "var":
            got_vars[rest[0]] = np.array(rest[1:], np.float64)
    # "Float32 noise" is measured, not assumed: TF against itself with its
    # initial weights and every batch jittered by 1e-6 relative (the size
    # of the rounding differences of two summation orders). Training
    # amplifies such differences step by step; estc's run must stay within
    # 10x TF's own band (or 1e-6 relative) at every step, and so must every
    # final variable.
    failures = 0
    band, worst = 0.0, 0.0
    print("resnet losses: estc, TF, |estc - TF|, TF's noise band")
    if len(got_losses) != len(losses):
        print(f"FAIL resnet: {len(got_losses)} losses, TF {len(losses)}")
        return 1
    for step, (a, b, c) in enumerate(zip(got_losses, losses, noisy_losses)):
        band = max(band, abs(c - b))
        allowed = 10 * band + 1e-6 * abs(b)
        worst = max(worst, abs(a - b) / allowed)
        flag = "" if abs(a - b) <= allowed else "  <- outside"
        print(f"  step {step:2d}  {a:.7f}  {b:.7f}  {abs(a - b):.1e}  "
              f"{band:.1e}{flag}")
        if abs(a - b) > allowed:
            failures += 1
    for name, want, noisy in zip(names, final, noisy_final):
        have = got_vars.get(name)
        want = np.asarray(want, np.float64).reshape(-1)
        noisy = np.asarray(noisy, np.float64).reshape(-1)
        if have is None or have.shape != want.shape:
            print(f"FAIL resnet: no final {name} of {want.size} elements")
            failures += 1
            continue
        diff = np.max(np.abs(have - want))
        allowed = 10 * np.max(np.abs(noisy - want)) + 1e-6 * np.max(np.abs(want))
        if diff > allowed:
            print(f"FAIL resnet: final {name} differs by {diff:.2e}, "
                  f"TF's band allows {allowed:.2e}")
            failures += 1
    print(f"tf_model_parity: resnet {'FAILED' if failures else 'equal to TF 2.15'}"
          f" over {args.steps} steps (worst difference {worst:.2f} of what "
          "TF's noise band allows)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
