#!/usr/bin/env python3
"""TF 2.15's own Estimator training issue 28's models: toolbox_bench's peer.

Usage:
  python3 bench/tf_toolbox_peer.py [--part resnet|bert] [--threads 1,2]
      [--warmup 5] [--steps 30] [--batch 128|32] [--json FILE]

resnet: the ResNet-style Fashion-MNIST model (bench/tf_toolbox_models.py,
layer for layer examples/fashion_mnist/ResNetModel.h at its defaults) as a
tf.estimator model_fn in graph mode, on 4096 random 28x28x1 images and
labels cycled through tf.data (no Python per step).
bert: BERT-mini (bench/tf_toolbox_models.py's bert_tf: modeling.py's
layers, BERT's AdamWeightDecay) at sequence 128 on 4096 random sentences of
32 to 128 tokens, as toolbox_bench --part=bert.

Each thread count runs in a process of its own pinned to `threads` cores,
with intra_op_parallelism_threads = threads and inter_op = 1 (as
bench/tf_estimator_peer.py); steps/s between the end of step `warmup` and
the end of the last, the process's CPU time per step over the same steps,
peak RSS. One JSON line per run ({"peer": "tf_estimator", ...}); `SKIP
<reason>` and exit 0 when tensorflow cannot be imported.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_runs import run_thread_counts  # noqa: E402

EXAMPLES = 4096
BERT_BENCH = {"vocab_size": 8192, "seq_length": 128,
              "num_train_steps": 100000, "num_warmup_steps": 1000}


def run_one(part, threads, warmup, steps, batch):
    if hasattr(os, "sched_setaffinity") and threads <= os.cpu_count():
        os.sched_setaffinity(0, set(range(threads)))
    import resource
    import tempfile
    import time

    import numpy as np
    import tensorflow as tf
    from tf_toolbox_models import (BERT_DEFAULTS, RESNET_DEFAULTS,
                                   RESNET_SCHEDULE, bert_tf, resnet_tf)

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    rng = np.random.default_rng(28)
    if part == "resnet":
        features = {"x": rng.uniform(0, 1, (EXAMPLES, 28, 28, 1)).astype(
            np.float32)}
        labels = rng.integers(0, 10, EXAMPLES).astype(np.int64)

        def model_fn(features, labels, mode):
            loss, train_op = resnet_tf(tf, features["x"], labels,
                                       RESNET_DEFAULTS, *RESNET_SCHEDULE)
            return tf.estimator.EstimatorSpec(mode, loss=loss,
                                              train_op=train_op)
    else:
        o = dict(BERT_DEFAULTS, **BERT_BENCH)
        seq = o["seq_length"]
        lengths = rng.integers(32, seq + 1, EXAMPLES).astype(np.int64)
        ids = rng.integers(3, o["vocab_size"], (EXAMPLES, seq)).astype(
            np.int64)
        ids[:, 0] = 2
        ids[np.arange(seq)[None, :] >= lengths[:, None]] = 0
        features = {"input_ids": ids, "lengths": lengths}
        labels = rng.integers(0, 2, EXAMPLES).astype(np.int64)

        def model_fn(features, labels, mode):
            loss, train_op, _ = bert_tf(tf, features["input_ids"],
                                        features["lengths"], labels, o)
            return tf.estimator.EstimatorSpec(mode, loss=loss,
                                              train_op=train_op)

    def input_fn():
        data = tf.data.Dataset.from_tensor_slices((features, labels))
        return data.batch(batch, drop_remainder=True).repeat()

    class Clock(tf.estimator.SessionRunHook):
        def __init__(self):
            self.times, self.cpu = [], []

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
            "part": part, "threads": threads, "batch": batch,
            "steps_per_sec": per_sec, "us_per_step": 1e6 / per_sec,
            "cpu_ms_per_step": (clock.cpu[-1] - clock.cpu[warmup - 1])
            / steps * 1e3,
            "peak_rss_mib": rss_mib}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", default="resnet", choices=["resnet", "bert"])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--json")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    def fail(message):
        print(f"tf_toolbox_peer.py: error: {message}", file=sys.stderr)
        return 2

    if args.batch is None:
        args.batch = 128 if args.part == "resnet" else 32
    if args.warmup < 1 or args.steps < 1:
        return fail("--warmup and --steps must be at least 1")
    if not 1 <= args.batch <= EXAMPLES:
        return fail(f"--batch={args.batch}: not in [1, {EXAMPLES}]")
    if args.one:
        print(json.dumps(run_one(args.part, args.one, args.warmup, args.steps,
                                 args.batch)))
        return 0
    return run_thread_counts(
        "tf_toolbox_peer.py", __file__, args.threads,
        ["--part", args.part, "--warmup", str(args.warmup),
         "--steps", str(args.steps), "--batch", str(args.batch)],
        args.json)


if __name__ == "__main__":
    sys.exit(main())
