#!/usr/bin/env python3
"""Training-mode batch norm: estc as close to exact arithmetic as TF.

est.fused_batch_norm (forward) and its gradient, through ops_tool's
fused_batch_norm_nhwc case, on MobileNetV2-sized channels (n = 8192
elements each, batch 32 of 16x16) whose means are up to 40 standard
deviations; TF 2.15's tf.compat.v1.nn.fused_batch_norm (FusedBatchNormV3,
float32) on the same input. Both against float64 (numpy): for y and for
dx, the gradient of sum(y * dy), estc's largest error must not exceed
TF's. Sums of 8192 float32 terms err by about sqrt(8192) ulps when run one
after the other; estc sums rows in f32 and the rows in f64 (compiler/
Conversion/EstToLinalg/BatchNorm.cpp), with errors about a tenth of TF's
for y. Prints the errors of each side.

usage: tf_batch_norm_accuracy.py --tool=build/bin/ops_tool [--seeds=N]
Exits 77 (ctest: skipped) when TensorFlow is not installed.
"""
import argparse
import sys

from case_tool import (failed_run, import_tf, parse_ops_tool, run_case,
                       words)

N, H, W, C = 32, 16, 16, 16
EPSILON = 1e-3


def exact(np, x, dy):
    """y and dx in float64 (scale 1, offset 0)."""
    x = x.astype(np.float64)
    dy = dy.astype(np.float64)
    mean = x.mean((0, 1, 2))
    var = ((x - mean) ** 2).mean((0, 1, 2))
    inv = 1 / np.sqrt(var + EPSILON)
    xhat = (x - mean) * inv
    dx = inv * (dy - dy.mean((0, 1, 2)) - xhat * (dy * xhat).mean((0, 1, 2)))
    return xhat, dx


def tf_side(tf, x, dy):
    ones = tf.ones([C], tf.float32)
    zeros = tf.zeros([C], tf.float32)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            xt, ones, zeros, epsilon=EPSILON, is_training=True)
        loss = tf.reduce_sum(y * dy)
    return y.numpy(), tape.gradient(loss, xt).numpy()


def estc_side(np, tool, x, dy):
    shape = f"4 {N} {H} {W} {C}"
    lines = ["case fused_batch_norm_nhwc",
             f"input f32 1 {shape} {words(x)}",
             f"input f32 0 1 {C} {words(np.ones(C))}",
             f"input f32 0 1 {C} {words(np.zeros(C))}",
             f"weights 0 {shape} {words(dy)}",
             "end"]
    run = run_case(tool, lines)
    if failed_run("batch_norm_accuracy", "ops_tool", run):
        return None, None
    got = parse_ops_tool(np, run.stdout).get("fused_batch_norm_nhwc")
    if got is None or got["error"] or 0 not in got["out"] or \
            0 not in got["grad"]:
        print(f"FAIL batch_norm_accuracy: ops_tool printed no y or dx: "
              f"{got and got['error']}")
        return None, None
    y, dx = got["out"][0][1], got["grad"][0]
    return y.reshape(N, H, W, C), dx.reshape(N, H, W, C)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--seeds", type=int, default=2)
    args = p.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    ok = True
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        center = rng.normal(0, 1, size=C)
        spread = rng.uniform(0.05, 0.5, size=C)
        x = (rng.normal(size=(N, H, W, C)) * spread + center).astype(
            np.float32)
        dy = rng.normal(size=(N, H, W, C)).astype(np.float32)
        want_y, want_dx = exact(np, x, dy)
        tf_y, tf_dx = tf_side(tf, x, dy)
        est_y, est_dx = estc_side(np, args.tool, x, dy)
        if est_y is None:
            return 1
        errors = {name: (float(np.abs(t - w).max()),
                         float(np.abs(e - w).max()))
                  for name, w, t, e in (("y", want_y, tf_y, est_y),
                                        ("dx", want_dx, tf_dx, est_dx))}
        text = ", ".join(f"{name} {est:.3g} (TF {tfe:.3g})"
                         for name, (tfe, est) in errors.items())
        worse = [name for name, (tfe, est) in errors.items() if est > tfe]
        if worse:
            ok = False
            print(f"FAIL seed {seed}: estc's largest error from float64 "
                  f"exceeds TF's for {', '.join(worse)}: {text}")
        else:
            print(f"ok   seed {seed}: largest errors from float64: {text}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
