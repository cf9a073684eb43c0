#!/usr/bin/env python3
"""TF 2.15's own Estimator training the SST-2-shaped LSTM: issue 27's peer.

Usage:
  python3 bench/tf_rnn_peer.py --data FILE [--threads 1,2] [--warmup 20]
      [--steps 200] [--json FILE]

The model of bench/RnnModels.h as a tf.estimator model_fn in graph mode:
ids [64, T] -> tf.keras.layers.Embedding(16384, 128) (uniform +-0.05) ->
tf.keras.layers.LSTM(128) masked by tf.sequence_mask(lengths, T) ->
tf.keras.layers.Dense(2); sparse softmax cross-entropy, Adam 0.002
(tf.compat.v1.train.AdamOptimizer, as bench/tf_estimator_peer.py). The
data is bench/make_sst2_like.py's FILE, the examples in file order 64 at
a time, each batch cut to its longest sentence (the same batches as
rnn_bench's), repeated, through tf.data only (no Python per step).

Each thread count runs in a process of its own pinned to `threads` cores,
with intra_op_parallelism_threads = threads and inter_op = 1 (as
bench/tf_estimator_peer.py); steps/s between the end of step `warmup` and
the end of the last step (graph building, initialization and the final
checkpoint left out), the process's CPU time per step over the same steps
(tf.data's threads included), peak RSS from getrusage. Prints one JSON line per
run ({"peer": "tf_estimator", ...}); `SKIP <reason>` and exit 0 when
tensorflow cannot be imported.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_runs import run_thread_counts  # noqa: E402

BATCH = 64


def read_data(path):
    import numpy as np

    with open(path, "rb") as f:
        if f.read(8) != b"SST2LIKE":
            raise ValueError(f"{path}: not a make_sst2_like.py file")
        n, max_length, vocab = (int(v) for v in np.fromfile(f, np.int64, 3))
        lengths = np.fromfile(f, np.int64, n)
        labels = np.fromfile(f, np.int64, n)
        ids = np.fromfile(f, np.int32, n * max_length).reshape(n, max_length)
    return ids.astype(np.int64), lengths, labels, vocab


def run_one(data, threads, warmup, steps):
    if hasattr(os, "sched_setaffinity") and threads <= os.cpu_count():
        os.sched_setaffinity(0, set(range(threads)))
    import resource
    import tempfile
    import time

    import tensorflow as tf

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    ids, lengths, labels, vocab = read_data(data)
    n = (len(lengths) // BATCH) * BATCH
    padded = (lengths[:n].reshape(-1, BATCH).max(axis=1)).mean()

    def model_fn(features, labels, mode):
        tokens = features["ids"]
        x = tf.keras.layers.Embedding(
            vocab, 128,
            embeddings_initializer=tf.keras.initializers.RandomUniform(
                -0.05, 0.05))(tokens)
        mask = tf.sequence_mask(features["lengths"], tf.shape(tokens)[1])
        h = tf.keras.layers.LSTM(128)(x, mask=mask)
        logits = tf.keras.layers.Dense(2)(h)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.AdamOptimizer(0.002).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        def cut(ids, lengths, labels):
            longest = tf.reduce_max(lengths)
            return {"ids": ids[:, :longest], "lengths": lengths}, labels

        data = tf.data.Dataset.from_tensor_slices(
            (ids[:n], lengths[:n], labels[:n]))
        return data.batch(BATCH, drop_remainder=True).map(cut).repeat()

    class Clock(tf.estimator.SessionRunHook):
        def __init__(self):
            self.times = []
            self.cpu = []

        def after_run(self, run_context, run_values):
            self.times.append(time.perf_counter())
            self.cpu.append(time.process_time())

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
            "part": "sst2", "threads": threads, "batch": BATCH,
            "mean_padded_length": float(padded), "steps_per_sec": per_sec,
            "us_per_step": 1e6 / per_sec,
            "cpu_ms_per_step": (clock.cpu[-1] - clock.cpu[warmup - 1])
            / steps * 1e3,
            "peak_rss_mib": rss_mib}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    def fail(message):
        print(f"tf_rnn_peer.py: error: {message}", file=sys.stderr)
        return 2

    if args.warmup < 1 or args.steps < 1:
        return fail("--warmup and --steps must be at least 1")
    if not os.path.exists(args.data):
        return fail(f"--data {args.data}: no such file "
                    "(bench/make_sst2_like.py --out writes it)")
    if args.one:
        print(json.dumps(run_one(args.data, args.one, args.warmup,
                                 args.steps)))
        return 0
    return run_thread_counts(
        "tf_rnn_peer.py", __file__, args.threads,
        ["--data", args.data, "--warmup", str(args.warmup),
         "--steps", str(args.steps)],
        args.json)


if __name__ == "__main__":
    sys.exit(main())
