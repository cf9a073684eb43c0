#!/usr/bin/env python3
"""TF 2.15's own Estimator training the seed models: the peer of issue 15.

Usage:
  python3 bench/tf_estimator_peer.py [--models mlp,convnet,iris]
      [--threads 1,2] [--warmup 20] [--steps 200] [--json FILE]

Each (model, threads) runs in a process of its own (TensorFlow's thread
pools are fixed when it starts), as a tf.estimator.Estimator whose model_fn
builds the same network as examples/models (tf.compat.v1.layers, Glorot
uniform kernels, zero biases, softmax cross-entropy, Adam 0.002):

  mlp      x[784] -> dense 256 relu -> dense 256 relu -> dense 10, batch 128
  convnet  x[28,28,1] -> conv 20 5x5 valid relu -> max-pool 2 -> conv 40 5x5
           valid relu -> max-pool 2 -> dense 256 relu -> dropout 0.5 ->
           dense 256 relu -> dropout 0.5 -> dense 10, batch 128
  iris     x[4] -> dense 10 relu -> dense 10 relu -> dense 3, batch 32

on random in-memory data through tf.data (from_tensor_slices, repeat,
batch), with session_config's intra_op_parallelism_threads = threads and
inter_op_parallelism_threads = 1 and the process pinned to `threads` cores
(the session's setting alone does not hold TF to them), checkpoints and
summaries off (the one
checkpoint at the end of train() aside). Steps/s is measured by a hook
between the end of step `warmup` and the end of the last step, so graph
construction, initialization and the final checkpoint are left out; the
peak resident memory is the process's (getrusage). Prints one table line
per run and, with --json, writes them all. Prints `SKIP <reason>` and
exits 0 when tensorflow cannot be imported.
"""

import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

MODELS = {
    "mlp": {"shape": [784], "classes": 10, "batch": 128},
    "convnet": {"shape": [28, 28, 1], "classes": 10, "batch": 128},
    "iris": {"shape": [4], "classes": 3, "batch": 32},
}


def pin_to_cores(threads):
    """Holds this process to cores 0 .. threads - 1 (before TF starts its
    thread pools)."""
    # intra_op_parallelism_threads = 1 alone still let TF's ConvNet use both
    # cores of the 2-core machine (72.8 steps/s, 47.1 when pinned to one).
    if hasattr(os, "sched_setaffinity") and threads <= os.cpu_count():
        os.sched_setaffinity(0, set(range(threads)))


def convnet_logits(x, training, classes=10):
    """The seeds' MNIST ConvNet (examples/models, examples/fashion_mnist's
    ConvNetModel.cpp) on x [batch, 28, 28, 1]: its logits [batch, classes].
    tf.compat.v1.layers' defaults: Glorot uniform kernels, zero biases."""
    import tensorflow as tf

    layers = tf.compat.v1.layers
    net = layers.conv2d(x, 20, 5, activation=tf.nn.relu)
    net = layers.max_pooling2d(net, 2, 2)
    net = layers.conv2d(net, 40, 5, activation=tf.nn.relu)
    net = layers.max_pooling2d(net, 2, 2)
    net = layers.flatten(net)
    net = layers.dense(net, 256, activation=tf.nn.relu)
    net = layers.dropout(net, 0.5, training=training)
    net = layers.dense(net, 256, activation=tf.nn.relu)
    net = layers.dropout(net, 0.5, training=training)
    return layers.dense(net, classes)


def run_one(model, threads, warmup, steps):
    """Trains `model` in this process; returns its result as a dict."""
    pin_to_cores(threads)
    import resource
    import tempfile
    import time

    import numpy as np
    import tensorflow as tf

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    layers = tf.compat.v1.layers
    spec = MODELS[model]

    def model_fn(features, labels, mode):
        x = features["x"]
        training = mode == tf.estimator.ModeKeys.TRAIN
        if model == "convnet":
            logits = convnet_logits(x, training, spec["classes"])
        else:
            units = [256, 256] if model == "mlp" else [10, 10]
            net = x
            for n in units:
                net = layers.dense(net, n, activation=tf.nn.relu)
            logits = layers.dense(net, spec["classes"])
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.AdamOptimizer(0.002).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    rng = np.random.default_rng(1)
    n = 4096
    xs = rng.uniform(0, 1, size=[n] + spec["shape"]).astype(np.float32)
    ys = rng.integers(0, spec["classes"], size=n).astype(np.int64)

    def input_fn():
        data = tf.data.Dataset.from_tensor_slices(({"x": xs}, ys))
        return data.repeat().batch(spec["batch"], drop_remainder=True)

    class Clock(tf.estimator.SessionRunHook):
        def __init__(self):
            self.times = []

        def after_run(self, run_context, run_values):
            self.times.append(time.perf_counter())

    session = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1)
    with tempfile.TemporaryDirectory() as model_dir:
        config = tf.estimator.RunConfig(
            model_dir=model_dir, tf_random_seed=1, session_config=session,
            save_checkpoints_steps=10**9, save_summary_steps=0,
            log_step_count_steps=10**9)
        estimator = tf.estimator.Estimator(model_fn, config=config)
        clock = Clock()
        estimator.train(input_fn, hooks=[clock], steps=warmup + steps)
    times = clock.times
    per_sec = steps / (times[-1] - times[warmup - 1])
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"peer": "tf_estimator", "tensorflow": tf.__version__,
            "model": model, "batch": spec["batch"], "threads": threads,
            "steps_per_sec": per_sec, "us_per_step": 1e6 / per_sec,
            "peak_rss_mib": rss_mib}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mlp,convnet,iris")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # model:threads
    args = parser.parse_args()

    def fail(message):
        print(f"tf_estimator_peer.py: error: {message}", file=sys.stderr)
        return 2

    if args.warmup < 1 or args.steps < 1:
        return fail("--warmup and --steps must be at least 1")
    if args.one:
        model, threads = args.one.split(":")
        print(json.dumps(run_one(model, int(threads), args.warmup,
                                 args.steps)))
        return 0
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            return fail(f"--models: unknown model '{m}' (one of "
                        f"{', '.join(MODELS)})")
    try:
        thread_counts = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        return fail(f"--threads={args.threads}: not a list of integers")
    if not thread_counts or min(thread_counts) < 1:
        return fail(f"--threads={args.threads}: not a list of positive "
                    "integers")
    try:
        import tensorflow  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP tensorflow cannot be imported: {e}")
        return 0
    results = []
    print(f"{'model':8} {'batch':>5} {'threads':>7} {'steps/s':>10} "
          f"{'us/step':>10} {'peak RSS MiB':>13}")
    for model in models:
        for threads in thread_counts:
            out = subprocess.run(
                [sys.executable, __file__, "--one", f"{model}:{threads}",
                 "--warmup", str(args.warmup), "--steps", str(args.steps)],
                capture_output=True, text=True, check=False)
            if out.returncode != 0:
                tail = (out.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{model:8} threads {threads}: failed: {tail}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            results.append(r)
            print(f"{model:8} {r['batch']:5d} {threads:7d} "
                  f"{r['steps_per_sec']:10.1f} {r['us_per_step']:10.1f} "
                  f"{r['peak_rss_mib']:13.1f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0 if len(results) == len(models) * len(thread_counts) else 1


if __name__ == "__main__":
    sys.exit(main())
