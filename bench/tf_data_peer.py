#!/usr/bin/env python3
"""The tf.data half of bench/input_pipeline.sh.

The same pipelines as bench/input_pipeline_bench.cpp, in TensorFlow 2.15,
over the files that `input_pipeline_bench --mode=prepare` wrote:

  tfrecord  TFRecordDataset -> batch -> map(tf.io.parse_example of the 15
            FixedLenFeatures, num_parallel_calls=threads)
  csv       TextLineDataset -> skip(1) -> batch -> map(tf.io.decode_csv,
            num_parallel_calls=threads)
  csv_dataset  tf.data.experimental.CsvDataset(header=True) -> batch
  memory    big.tfrecord through TFRecordDataset -> prefetch(4): peak RSS

TF gets `threads` inter-op and intra-op threads. One warm-up pass, then
`passes` timed passes, each over a fresh iterator; prints the median pass's
rate in the same lines as the C++ bench:
  RESULT <mode> <threads> <records/s> <records per pass>
  MEMORY <file bytes> <peak RSS bytes before> <peak RSS bytes after>
         <records> <seconds>
or `SKIP <reason>` (exit 0) when tensorflow cannot be imported.
"""

import argparse
import os
import resource
import sys
import time

STRING_COLUMNS = ["workclass", "education", "occupation", "relationship",
                  "native_country"]
INT_COLUMNS = ["age", "fnlwgt", "education_num", "capital_gain",
               "hours_per_week"]
FLOAT_COLUMNS = ["capital_loss", "income_ratio", "tenure_years",
                 "credit_score", "commute_km"]


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work_dir", required=True)
    ap.add_argument("--mode", required=True,
                    choices=["tfrecord", "csv", "csv_dataset", "memory"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except Exception as e:  # ImportError, or a broken installation
        print(f"SKIP tensorflow cannot be imported: {e}".splitlines()[0])
        return 0
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)

    if args.mode == "memory":
        big = os.path.join(args.work_dir, "big.tfrecord")
        before = peak_rss_bytes()
        start = time.perf_counter()
        # Counted by reduce, inside TF: a Python loop over 256k records
        # would time the interpreter, not the reader.
        records = int(tf.data.TFRecordDataset([big]).prefetch(4).reduce(
            tf.constant(0, tf.int64), lambda n, _: n + 1))
        seconds = time.perf_counter() - start
        print(f"MEMORY {os.path.getsize(big)} {before} {peak_rss_bytes()} "
              f"{records} {seconds:.2f}")
        return 0

    if args.mode == "tfrecord":
        spec = {}
        for name in STRING_COLUMNS:
            spec[name] = tf.io.FixedLenFeature([], tf.string)
        for name in INT_COLUMNS:
            spec[name] = tf.io.FixedLenFeature([], tf.int64)
        for name in FLOAT_COLUMNS:
            spec[name] = tf.io.FixedLenFeature([], tf.float32)
        dataset = (tf.data.TFRecordDataset(
            [os.path.join(args.work_dir, "census.tfrecord")])
                   .batch(args.batch)
                   .map(lambda records: tf.io.parse_example(records, spec),
                        num_parallel_calls=args.threads))
    elif args.mode == "csv_dataset":
        # Required columns (a dtype as the default) of the file's types.
        dtypes = ([tf.string] * len(STRING_COLUMNS) +
                  [tf.int64] * len(INT_COLUMNS) +
                  [tf.float32] * len(FLOAT_COLUMNS))
        dataset = tf.data.experimental.CsvDataset(
            [os.path.join(args.work_dir, "census.csv")], dtypes,
            header=True).batch(args.batch)
    else:
        # Required columns (an empty default) of the file's types, in file
        # order.
        defaults = ([tf.constant([], tf.string)] * len(STRING_COLUMNS) +
                    [tf.constant([], tf.int64)] * len(INT_COLUMNS) +
                    [tf.constant([], tf.float32)] * len(FLOAT_COLUMNS))
        dataset = (tf.data.TextLineDataset(
            [os.path.join(args.work_dir, "census.csv")])
                   .skip(1)
                   .batch(args.batch)
                   .map(lambda lines: tf.io.decode_csv(lines, defaults),
                        num_parallel_calls=args.threads))

    def run_pass():
        rows = 0
        for batch in dataset:
            first = batch[0] if isinstance(batch, (list, tuple)) else next(
                iter(batch.values()))
            rows += int(first.shape[0])
        return rows

    rows = run_pass()  # warm-up (and the page cache)
    seconds = []
    for p in range(args.passes):
        start = time.perf_counter()
        got = run_pass()
        seconds.append(time.perf_counter() - start)
        if got != rows:
            print(f"tf_data_peer: pass {p} read {got} rows, the warm-up "
                  f"read {rows}", file=sys.stderr)
            return 1
    # The median pass, as the C++ bench reports.
    median = sorted(seconds)[len(seconds) // 2]
    print(f"RESULT {args.mode} {args.threads} {rows / median:.0f} {rows}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
