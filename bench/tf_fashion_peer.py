#!/usr/bin/env python3
"""TF 2.15's Estimator trained to a target accuracy on Fashion-MNIST.

Usage:
  python3 bench/tf_fashion_peer.py [--data-dir DIR] [--eval-holdout N]
      [--threads 2] [--target-accuracy 0.90] [--max-epochs 30]
      [--save-checkpoints-steps K] [--batch-size 128] [--seed 1]
      [--model-dir DIR] [--json FILE] [--raw-images]

The peer of `fashion_mnist_aot --target_accuracy` (issue 15, time to
accuracy): the same ConvNet (bench/tf_estimator_peer.py's convnet_logits,
examples/fashion_mnist/ConvNetModel.cpp: Glorot uniform kernels, zero
biases, dropout 0.5, softmax cross-entropy, Adam 0.002) as a
tf.estimator.Estimator model_fn, trained on the 60,000 training images
(pixels / 255 in float32, as estc's load_mnist scales them) in batches of
128, shuffled every epoch (a full shuffle, the last batch of an epoch
partial, as estc's numpy_input_fn), and evaluated on the 10,000 test
images (batches of 500) after every checkpoint (every K steps, one epoch
by default) but the first: train_and_evaluate's local schedule with
throttle_secs = 0, written as one train() call with a
CheckpointSaverListener that evaluates, so that training stops at the
first evaluation whose accuracy reaches the target (after --max-epochs
epochs at most).

With --eval-holdout N it trains on the first images of DIR's t10k split
and evaluates on its last N (the shared mnist-t10k set; for tests).

The arrays reach tf.data through placeholders fed when the iterator is
initialized (TF's guide for large NumPy arrays), not as graph constants.
With --raw-images the images stay the files' bytes (u8, a quarter of the
memory) and each batch is scaled in the pipeline through a table of the
256 values: the same floats, as fashion_mnist_aot keeps and scales them
(bench/fashion_tta.sh passes it, so both sides hold the same data).
The process is pinned to `threads` cores with intra_op_parallelism_threads
= threads and inter_op_parallelism_threads = 1, as tf_estimator_peer.py
runs. Reports: seconds from constructing the Estimator to the end of the
evaluation that reached the target (training, checkpoints, summaries and
evaluations; data loading and importing TF are reported apart), the
process's CPU seconds over the same span (all threads; less moved by other
load on a shared machine), the global step, epochs and evaluations, the accuracy, seconds spent in
evaluations, and the process's peak resident memory (getrusage). One line
on stdout, and with --json the same fields as a JSON object. Prints
`SKIP <reason>` and exits 0 when tensorflow cannot be imported; a bad flag
or missing data is one line on stderr and exit status 2.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import warnings

from tf_estimator_peer import convnet_logits, pin_to_cores

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

PROGRAM = "tf_fashion_peer.py"


class DataError(Exception):
    pass


def read_idx(path):
    """An IDX file of u8 (gzip when it has gzip's magic) as a numpy array."""
    import numpy as np

    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise DataError(f"{path}: not an IDX file of u8")
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big")
            for i in range(rank)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank)
    if data.size != int(np.prod(dims)):
        raise DataError(f"{path}: {data.size} values for dimensions {dims}")
    return data.reshape(dims)


# p / 255 in double, rounded to float, as estc's load_mnist computes it
# (data::scale_pixels): the 256 values as a table.
def pixel_table():
    import numpy as np

    return (np.arange(256, dtype=np.float64) / 255.0).astype(np.float32)


def load_split(data_dir, split, raw=False):
    """(images f32 [n, 28, 28, 1] in [0, 1], labels i64 [n]) of
    `split` ("train" or "t10k"), as estc's data::load_mnist reads them;
    with `raw`, the images as the file's u8 [n, 28, 28, 1] (scaled per
    batch in the input_fn, as estc's example keeps and scales them)."""
    import numpy as np

    arrays = []
    for kind in ("images-idx3", "labels-idx1"):
        base = os.path.join(data_dir, f"{split}-{kind}-ubyte")
        path = next((p for p in (base, base + ".gz") if os.path.exists(p)),
                    None)
        if path is None:
            raise DataError(f"{base}[.gz]: no such file")
        arrays.append(read_idx(path))
    images, labels = arrays
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{data_dir}: images are not 28x28")
    if labels.shape != images.shape[:1]:
        raise DataError(f"{data_dir}: {labels.shape[0]} labels for "
                        f"{images.shape[0]} {split} images")
    if raw:
        return (np.ascontiguousarray(images).reshape(-1, 28, 28, 1),
                labels.astype(np.int64))
    # Through the table, so that no float64 copy of the images adds to the
    # peak memory.
    return (pixel_table()[images].reshape(-1, 28, 28, 1),
            labels.astype(np.int64))


def array_input(tf, images, labels, batch_size, shuffle_seed=None):
    """An input_fn over in-memory arrays and the hook that feeds them to the
    iterator's placeholders. With a seed: shuffled every epoch, repeated."""

    class FeedHook(tf.estimator.SessionRunHook):
        init_op, feed = None, None

        def after_create_session(self, session, coord):
            session.run(self.init_op, feed_dict=self.feed)

    hook = FeedHook()

    def input_fn():
        raw = images.dtype != "float32"
        x = tf.compat.v1.placeholder(tf.uint8 if raw else tf.float32,
                                     images.shape)
        y = tf.compat.v1.placeholder(tf.int64, labels.shape)
        data = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if shuffle_seed is not None:
            data = data.shuffle(len(labels), seed=shuffle_seed,
                                reshuffle_each_iteration=True)
        data = data.batch(batch_size)
        if raw:
            # Each batch's bytes scaled through the table (estc's example
            # does the same in a Dataset::map).
            table = tf.constant(pixel_table())
            data = data.map(lambda f, y: (
                {"x": tf.gather(table, tf.cast(f["x"], tf.int32))}, y))
        if shuffle_seed is not None:
            data = data.repeat()
        iterator = tf.compat.v1.data.make_initializable_iterator(data)
        hook.init_op, hook.feed = iterator.initializer, {x: images, y: labels}
        return iterator.get_next()

    return input_fn, hook


def model_fn(features, labels, mode, params):
    import tensorflow as tf

    training = mode == tf.estimator.ModeKeys.TRAIN
    logits = convnet_logits(features["x"], training)
    classes = tf.argmax(logits, 1)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if training:
        train_op = tf.compat.v1.train.AdamOptimizer(
            params["learning_rate"]).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss,
        eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})


def load(args):
    """((train images, labels), (test images, labels)) as --data-dir and
    --eval-holdout say."""
    if args.eval_holdout > 0:
        images, labels = load_split(args.data_dir, "t10k", args.raw_images)
        if args.eval_holdout >= len(labels):
            raise DataError(f"--eval-holdout={args.eval_holdout} leaves no "
                            f"training examples of {len(labels)}")
        cut = len(labels) - args.eval_holdout
        train = (images[:cut], labels[:cut])
        test = (images[cut:], labels[cut:])
    else:
        train = load_split(args.data_dir, "train", args.raw_images)
        test = load_split(args.data_dir, "t10k", args.raw_images)
    return train, test


def run(args, train, test):
    """Trains to the target in this process; returns the result as a dict
    (less load_seconds and import_seconds)."""
    import resource

    import tensorflow as tf

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    # tf.compat.v1.layers' deprecation notes, one per layer.
    warnings.filterwarnings("ignore", message=".* is deprecated")
    steps_per_epoch = -(-len(train[1]) // args.batch_size)
    every = args.save_checkpoints_steps or steps_per_epoch
    train_fn, train_hook = array_input(tf, *train, args.batch_size, args.seed)
    eval_fn, eval_hook = array_input(tf, *test, 500)

    class EvaluateUntilTarget(tf.estimator.CheckpointSaverListener):
        """Evaluates each checkpoint but the initial one; asks training to
        stop once the accuracy reaches the target."""

        def __init__(self):
            self.evaluations, self.eval_seconds = 0, 0.0
            self.metrics, self.reached_at, self.reached_cpu = {}, None, None

        def after_save(self, session, global_step_value):
            if global_step_value == 0:
                return False
            t = time.perf_counter()
            self.metrics = estimator.evaluate(eval_fn, hooks=[eval_hook])
            now = time.perf_counter()
            self.eval_seconds += now - t
            self.evaluations += 1
            if self.metrics["accuracy"] >= args.target_accuracy:
                self.reached_at = now
                self.reached_cpu = time.process_time()
                return True
            return False

    session = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=args.threads,
        inter_op_parallelism_threads=1)
    listener = EvaluateUntilTarget()
    with tempfile.TemporaryDirectory() as scratch:
        start, start_cpu = time.perf_counter(), time.process_time()
        config = tf.estimator.RunConfig(
            model_dir=args.model_dir or scratch, tf_random_seed=args.seed,
            session_config=session,
            save_checkpoints_steps=every, save_summary_steps=100,
            log_step_count_steps=100)
        estimator = tf.estimator.Estimator(
            model_fn, config=config, params={"learning_rate": 0.002})
        estimator.train(train_fn, hooks=[train_hook],
                        max_steps=args.max_epochs * steps_per_epoch,
                        saving_listeners=[listener])
        end = listener.reached_at or time.perf_counter()
        end_cpu = listener.reached_cpu or time.process_time()
    seconds = end - start
    step = int(listener.metrics.get("global_step", 0))
    return {
        "peer": "tf_estimator", "tensorflow": tf.__version__,
        "threads": args.threads, "batch": args.batch_size,
        "target_accuracy": args.target_accuracy,
        "reached": listener.reached_at is not None,
        "accuracy": float(listener.metrics.get("accuracy", 0.0)),
        "global_step": step, "epochs": step / steps_per_epoch,
        "evaluations": listener.evaluations,
        "seconds": seconds, "cpu_seconds": end_cpu - start_cpu,
        "eval_seconds": listener.eval_seconds,
        "peak_rss_mib":
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def describe(r):
    """The one line both sides print (fashion_mnist's --target_accuracy)."""
    what = "reached" if r["reached"] else "did not reach"
    return (f"{what} accuracy {r['target_accuracy']:g}: accuracy "
            f"{r['accuracy']:.4f} at step {r['global_step']} "
            f"({r['epochs']:.2f} epochs, {r['evaluations']} evaluations) in "
            f"{r['seconds']:.1f} s (evaluations {r['eval_seconds']:.1f} s); "
            f"data loading {r['load_seconds']:.1f} s; threads {r['threads']}; "
            f"peak RSS {r['peak_rss_mib']:.1f} MiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir",
                        default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--eval-holdout", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--target-accuracy", type=float, default=0.90)
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--save-checkpoints-steps", type=int, default=0,
                        help="evaluate every K steps (default: one epoch)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--raw-images", action="store_true",
                        help="keep the images as bytes and scale each batch "
                        "in the input_fn (as fashion_mnist_aot does)")
    parser.add_argument("--model-dir",
                        help="checkpoints (default: a temporary directory)")
    parser.add_argument("--json")

    def fail(message):
        print(f"{PROGRAM}: error: {message}", file=sys.stderr)
        return 2

    # argparse's own errors are a usage line and the error: two lines.
    parser.error = lambda message: sys.exit(fail(message))
    args = parser.parse_args()
    for name in ("threads", "max_epochs", "batch_size"):
        if getattr(args, name) < 1:
            return fail(f"--{name.replace('_', '-')}={getattr(args, name)}: "
                        "must be at least 1")
    if args.eval_holdout < 0 or args.save_checkpoints_steps < 0:
        return fail("--eval-holdout and --save-checkpoints-steps must not "
                    "be negative")
    if not 0 < args.target_accuracy <= 1:
        return fail(f"--target-accuracy={args.target_accuracy}: must be in "
                    "(0, 1]")
    if args.model_dir and os.path.exists(args.model_dir) and \
            os.listdir(args.model_dir):
        return fail(f"--model-dir={args.model_dir}: not empty (time to "
                    "accuracy starts from an untrained model)")
    # Pinned before numpy or TF start a thread: later threads inherit the
    # mask.
    pin_to_cores(args.threads)
    try:
        import numpy  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP numpy cannot be imported: {e}")
        return 0
    # The data first: a missing file is one line before TF's long import.
    start = time.perf_counter()
    try:
        train, test = load(args)
    except (DataError, OSError) as e:
        return fail(str(e))
    load_seconds = time.perf_counter() - start
    try:
        import tensorflow  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP tensorflow cannot be imported: {e}")
        return 0
    import_seconds = time.perf_counter() - start - load_seconds
    result = run(args, train, test)
    result.update(load_seconds=load_seconds, import_seconds=import_seconds)
    print(describe(result), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
