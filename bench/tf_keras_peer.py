#!/usr/bin/env python3
"""tf.keras 2.15 and TF 2.15's model_to_estimator on MobileNetV2: keras_bench's peer.

Usage:
  python3 bench/tf_keras_peer.py [--part fit|estimator|predict]
      [--threads 1,2] [--warmup 3] [--steps 20] [--batch 32] [--size 96]
      [--calls 200] [--save FILE.keras] [--json FILE]

The model: keras.applications.MobileNetV2(input_shape=(size, size, 3),
alpha=1.0, include_top=True, weights=None, classes=10,
classifier_activation=None), compiled with Adam() and
SparseCategoricalCrossentropy(from_logits=True) -- layer for layer
bench/KerasModels.h's mobilenet_v2_logits, which keras_bench trains.
--save writes it (untrained) as a .keras file and exits.

fit: model.fit on 256 random images (uniform [0, 1)) and labels held in
  memory as a tf.data dataset of batches, repeated; steps_per_epoch =
  warmup + steps, one epoch; a callback records the end of each batch.
estimator: tf.keras.estimator.model_to_estimator(keras_model=model) and
  Estimator.train on the same data through an input_fn (features keyed by
  the model's input name); a hook records the end of each step.
predict: model.predict_on_batch of one image, `calls` timed calls after
  `warmup`; p50 and mean microseconds.

Each thread count runs in a process of its own pinned to `threads` cores,
with intra_op_parallelism_threads = threads and inter_op = 1 (as
bench/tf_toolbox_peer.py); steps/s between the end of step `warmup` and
the end of the last, the process's CPU time per step over the same steps,
peak RSS. One JSON line per run ({"peer": "tf_keras_fit" |
"tf_model_to_estimator" | "tf_keras_predict", ...}); `SKIP <reason>` and
exit 0 when tensorflow cannot be imported.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_runs import run_thread_counts  # noqa: E402

EXAMPLES = 256


def mobilenet_v2(tf, size):
    model = tf.keras.applications.MobileNetV2(
        input_shape=(size, size, 3), alpha=1.0, include_top=True,
        weights=None, classes=10, classifier_activation=None)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def run_one(part, threads, warmup, steps, batch, size, calls):
    if hasattr(os, "sched_setaffinity") and threads <= os.cpu_count():
        os.sched_setaffinity(0, set(range(threads)))
    import resource
    import tempfile
    import time

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    tf.keras.utils.set_random_seed(1)
    rng = np.random.default_rng(29)
    x = rng.uniform(0, 1, (EXAMPLES, size, size, 3)).astype(np.float32)
    y = rng.integers(0, 10, EXAMPLES).astype(np.int64)
    result = {"tensorflow": tf.__version__, "threads": threads,
              "size": size, "model": "mobilenet_v2"}

    if part == "predict":
        model = mobilenet_v2(tf, size)
        one = x[:1]
        for _ in range(warmup):
            model.predict_on_batch(one)
        us = []
        for _ in range(calls):
            start = time.perf_counter()
            model.predict_on_batch(one)
            us.append((time.perf_counter() - start) * 1e6)
        us.sort()
        result.update({"peer": "tf_keras_predict", "part": "predict",
                       "batch": 1, "calls": calls,
                       "p50_us": (us[len(us) // 2] + us[(len(us) - 1) // 2])
                       / 2, "mean_us": sum(us) / len(us)})
        return result

    times, cpu = [], []

    def tick():
        times.append(time.perf_counter())
        cpu.append(time.process_time())

    if part == "fit":
        model = mobilenet_v2(tf, size)
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(
            batch, drop_remainder=True).repeat()

        class Clock(tf.keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                tick()

        model.fit(data, epochs=1, steps_per_epoch=warmup + steps,
                  callbacks=[Clock()], verbose=0)
        peer = "tf_keras_fit"
    else:
        model = mobilenet_v2(tf, size)
        input_name = model.input_names[0]

        def input_fn():
            data = tf.data.Dataset.from_tensor_slices(({input_name: x}, y))
            return data.batch(batch, drop_remainder=True).repeat()

        class Clock(tf.estimator.SessionRunHook):
            def after_run(self, run_context, run_values):
                tick()

        session = tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=threads,
            inter_op_parallelism_threads=1)
        with tempfile.TemporaryDirectory() as model_dir:
            config = tf.estimator.RunConfig(
                model_dir=model_dir, tf_random_seed=1, session_config=session,
                save_checkpoints_steps=10**9, save_summary_steps=0,
                log_step_count_steps=10**9)
            estimator = tf.keras.estimator.model_to_estimator(
                keras_model=model, config=config)
            estimator.train(input_fn, hooks=[Clock()], steps=warmup + steps)
        peer = "tf_model_to_estimator"
    per_sec = steps / (times[-1] - times[warmup - 1])
    result.update({
        "peer": peer, "part": "train", "batch": batch,
        "steps_per_sec": per_sec, "us_per_step": 1e6 / per_sec,
        "cpu_ms_per_step": (cpu[-1] - cpu[warmup - 1]) / steps * 1e3,
        "peak_rss_mib":
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0})
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", default="fit",
                        choices=["fit", "estimator", "predict"])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--save")
    parser.add_argument("--json")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    def fail(message):
        print(f"tf_keras_peer.py: error: {message}", file=sys.stderr)
        return 2

    if args.warmup < 1 or args.steps < 1 or args.calls < 1:
        return fail("--warmup, --steps and --calls must be at least 1")
    if not 1 <= args.batch <= EXAMPLES:
        return fail(f"--batch={args.batch}: not in [1, {EXAMPLES}]")
    if args.size < 32 or args.size % 32:
        return fail(f"--size={args.size}: not a positive multiple of 32")
    if args.save:
        import tensorflow as tf
        mobilenet_v2(tf, args.size).save(args.save)
        return 0
    if args.one:
        print(json.dumps(run_one(args.part, args.one, args.warmup, args.steps,
                                 args.batch, args.size, args.calls)))
        return 0
    return run_thread_counts(
        "tf_keras_peer.py", __file__, args.threads,
        ["--part", args.part, "--warmup", str(args.warmup),
         "--steps", str(args.steps), "--batch", str(args.batch),
         "--size", str(args.size), "--calls", str(args.calls)],
        args.json)


if __name__ == "__main__":
    sys.exit(main())
