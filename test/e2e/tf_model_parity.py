#!/usr/bin/env python3
"""Whole models against TensorFlow 2.15: the same initial weights, the same
batches, 20 training steps, the losses and the final weights.

resnet: examples/fashion_mnist/ResNetModel.h (conv + batch norm residual
  blocks, global average pooling, momentum with weight decay on a piecewise
  schedule, the batch norm moving averages updated by the train_op).
bert: examples/sst2/Bert.h, a small BERT-style encoder (embeddings, self-
  attention with the padding bias, gelu feed-forward, LayerNorm, pooler,
  classifier) trained with BERT's AdamWeightDecay (examples/sst2/
  AdamWeightDecay.h: gradients(), clip_by_global_norm, warmup + polynomial
  decay), dropout off.
TF's side of both is bench/tf_toolbox_models.py (tf.compat.v1, the layers
in the same order, so the same variable names; the benchmark's TF peer runs
the same definitions); model_parity_tool (test/data/model_parity_tool.cpp)
trains estc's.

"Float32 noise" is measured, not assumed: TF is run a second time with its
initial weights and every float batch jittered by 1e-6 relative (the size
of two summation orders' rounding differences). Training amplifies such
differences step by step; estc must stay within 10x TF's own band (or 1e-6
relative) at every step, and so must every final variable.

usage: tf_model_parity.py --tool=build/bin/model_parity_tool [--steps=N]
    [--models=resnet,bert]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import sys

from case_tool import failed_run, import_tf, run_case, words

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
from tf_toolbox_models import BERT_DEFAULTS, bert_tf, resnet_tf  # noqa: E402


def resnet_case(np, rng, steps):
    batch = 16
    opts = {"width": 8, "blocks_per_stage": 1, "weight_decay": 5e-4,
            "momentum": 0.9, "batch_norm_momentum": 0.99}
    boundaries, values = [10], [0.02, 0.01]
    feeds = [{"x": rng.uniform(0, 1, (batch, 28, 28, 1)).astype(np.float32),
              "y": rng.integers(0, 10, batch).astype(np.int64)}
             for _ in range(steps)]

    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
        y = tf.compat.v1.placeholder(tf.int64, [None])
        loss, train_op = resnet_tf(tf, x, y, opts, boundaries, values)
        return loss, train_op, {"x": x, "y": y}

    lines = [f"boundaries {' '.join(map(str, boundaries))}",
             f"values {' '.join(map(str, values))}"]
    lines += [f"option {k} {v}" for k, v in opts.items()]
    return batch, build, feeds, lines


def bert_case(np, rng, steps):
    batch = 8
    opts = dict(BERT_DEFAULTS, vocab_size=50, hidden_size=32, num_layers=2,
                num_heads=4, intermediate_size=64, max_position_embeddings=32,
                seq_length=16, hidden_dropout=0.0, attention_dropout=0.0,
                learning_rate=1e-3, num_train_steps=40, num_warmup_steps=5)
    seq = opts["seq_length"]

    def batch_feed():
        lengths = rng.integers(2, seq + 1, batch).astype(np.int64)
        ids = rng.integers(3, opts["vocab_size"], (batch, seq)).astype(np.int64)
        ids[:, 0] = 2  # [CLS]
        ids[np.arange(seq)[None, :] >= lengths[:, None]] = 0
        return {"x": ids, "lengths": lengths,
                "y": rng.integers(0, 2, batch).astype(np.int64)}

    feeds = [batch_feed() for _ in range(steps)]

    def build(tf):
        ids = tf.compat.v1.placeholder(tf.int64, [None, seq])
        lengths = tf.compat.v1.placeholder(tf.int64, [None])
        y = tf.compat.v1.placeholder(tf.int64, [None])
        loss, train_op, _ = bert_tf(tf, ids, lengths, y, opts)
        return loss, train_op, {"x": ids, "lengths": lengths, "y": y}

    lines = [f"option {k} {v}" for k, v in opts.items()]
    return batch, build, feeds, lines


def train_tf(tf, np, build, feeds, seed, initial=None, jitter=0.0):
    """TF's run: variable names, initial values, losses, final values.
    With `jitter`, the initial weights and every float batch are scaled by
    1 + jitter * N(0, 1) elementwise."""
    noise = np.random.default_rng(seed + 1)

    def jittered(a):
        if not jitter or a.dtype.kind != "f":
            return a
        return (a * (1 + jitter * noise.standard_normal(a.shape))).astype(
            a.dtype)

    with tf.Graph().as_default():
        # The initial weights from a fixed seed: the same test every run.
        # The graph-level seed covers the tf.compat.v1 initializers; the
        # legacy layers' Keras initializers without a seed (the logits'
        # glorot_uniform) draw theirs from Python's `random`, which
        # keras.utils.set_random_seed seeds.
        tf.keras.utils.set_random_seed(seed)
        tf.compat.v1.set_random_seed(seed)
        loss, train_op, placeholders = build(tf)
        variables = [v for v in tf.compat.v1.global_variables()
                     if v.dtype.base_dtype == tf.float32
                     and "Momentum" not in v.name]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            if initial is None:
                initial = sess.run(variables)
            for v, value in zip(variables, initial):
                v.load(jittered(value), sess)
            losses = []
            for feed in feeds:
                value, _ = sess.run([loss, train_op], {
                    placeholders[k]: jittered(v) for k, v in feed.items()})
                losses.append(float(value))
            final = sess.run(variables)
    return [v.name.split(":")[0] for v in variables], initial, losses, final


def compare(np, model, got_losses, got_vars, names, losses, final,
            noisy_losses, noisy_final):
    failures, band, worst = 0, 0.0, 0.0
    print(f"{model} losses: estc, TF, |estc - TF|, TF's noise band")
    if len(got_losses) != len(losses):
        print(f"FAIL {model}: {len(got_losses)} losses, TF {len(losses)}")
        return 1, float("inf")
    for step, (a, b, c) in enumerate(zip(got_losses, losses, noisy_losses)):
        band = max(band, abs(c - b))
        allowed = 10 * band + 1e-6 * abs(b)
        worst = max(worst, abs(a - b) / allowed)
        flag = "" if abs(a - b) <= allowed else "  <- outside"
        print(f"  step {step:2d}  {a:.7f}  {b:.7f}  {abs(a - b):.1e}  "
              f"{band:.1e}{flag}")
        failures += abs(a - b) > allowed
    for name, want, noisy in zip(names, final, noisy_final):
        have = got_vars.get(name)
        want = np.asarray(want, np.float64).reshape(-1)
        noisy = np.asarray(noisy, np.float64).reshape(-1)
        if have is None or have.shape != want.shape:
            print(f"FAIL {model}: no final {name} of {want.size} elements")
            failures += 1
            continue
        diff = np.max(np.abs(have - want))
        allowed = (10 * np.max(np.abs(noisy - want))
                   + 1e-6 * max(np.max(np.abs(want)), 1e-3))
        if diff > allowed:
            print(f"FAIL {model}: final {name} differs by {diff:.2e}, TF's "
                  f"band allows {allowed:.2e}")
            failures += 1
    return failures, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--models", default="resnet,bert")
    ap.add_argument("--noise_runs", type=int, default=3,
                    help="jittered TF runs whose widest band is TF's noise")
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    cases = {"resnet": resnet_case, "bert": bert_case}
    total = 0
    for model in args.models.split(","):
        if model not in cases:
            sys.exit(f"tf_model_parity: unknown model {model!r} "
                     f"({', '.join(cases)})")
        rng = np.random.default_rng(args.seed)
        batch, build, feeds, option_lines = cases[model](np, rng, args.steps)
        names, initial, losses, final = train_tf(tf, np, build, feeds,
                                                 args.seed)
        # TF's own band: the widest of --noise_runs jittered runs (one run
        # is one sample of a chaotic process: whether a ReLU or a max-pool
        # choice flips at a given step is luck, so one sample's band can be
        # 10x narrower than the next one's at the same step).
        noisy = [train_tf(tf, np, build, feeds, args.seed + 7 * r, initial,
                          jitter=1e-6)
                 for r in range(args.noise_runs)]
        noisy_losses = [max((n[2][i] for n in noisy),
                            key=lambda v, i=i: abs(v - losses[i]))
                        for i in range(len(losses))]
        noisy_final = [max((n[3][i] for n in noisy),
                           key=lambda v, i=i: np.max(np.abs(
                               np.asarray(v, np.float64)
                               - np.asarray(final[i], np.float64))))
                       for i in range(len(final))]

        lines = [f"model {model}", f"batch {batch}", f"steps {args.steps}"]
        lines += option_lines
        lines += [f"var {n} {words(w)}" for n, w in zip(names, initial)]
        for step, feed in enumerate(feeds):
            lines += [f"{k} {step} {words(v)}" for k, v in feed.items()]
        run = run_case(args.tool, lines)
        if failed_run(model, "model_parity_tool", run):
            total += 1
            continue
        got_losses, got_vars = [], {}
        for line in run.stdout.splitlines():
            head, *rest = line.split()
            if head == "loss":
                got_losses.append(float(rest[1]))
            elif head == "var":
                got_vars[rest[0]] = np.array(rest[1:], np.float64)
        failures, worst = compare(np, model, got_losses, got_vars, names,
                                  losses, final, noisy_losses, noisy_final)
        total += failures
        print(f"tf_model_parity: {model} "
              f"{'FAILED' if failures else 'equal to TF 2.15'} over "
              f"{args.steps} steps (worst difference {worst:.2f} of what TF's "
              "noise band allows)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
