#!/usr/bin/env python3
"""CSV reading speed: lib/Data (csv_tool's bench mode) against TF 2.15.

Writes a CSV file (--rows rows of 8 float32, 1 int64 and 1 string column,
a header), then times, best of --repeat:

  TF  CsvDataset(...).batch(B)                       consumed in eager mode
  TF  TextLineDataset(...).skip(1).batch(B).map(decode_csv)
  estc CsvReader::read row by row, and read_batch(B)
  estc TextLineReader + decode_csv on B lines at a time

  python3 test/data/csv_bench.py --tool=build/bin/csv_tool --work=/tmp/w
"""

import argparse
import json
import os
import random
import subprocess
import time


def write_csv(path, rows, seed=1):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(",".join(["f%d" % i for i in range(8)] + ["id", "name"]) + "\n")
        for r in range(rows):
            floats = ",".join("%.6g" % rng.uniform(-100, 100) for _ in range(8))
            name = rng.choice(["alpha", "beta", '"gamma, delta"', "epsilon"])
            f.write("%s,%d,%s\n" % (floats, r * 7919, name))


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tool", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--rows", type=int, default=500000)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = os.path.join(args.work, "bench.csv")
    write_csv(path, args.rows)
    mb = os.path.getsize(path) / 1e6
    defaults = [("float32", "0")] * 8 + [("int64", "0"), ("string", "")]
    results = {}

    def estc(reader, batch):
        spec = {"mode": "bench", "reader": reader, "file": path,
                "header": reader == "dataset", "batch": batch,
                "defaults": [{"type": t, "value": v} for t, v in defaults]}
        spec_path = os.path.join(args.work, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        runs = []
        for _ in range(args.repeat):
            out = json.loads(subprocess.check_output([args.tool, spec_path]))
            runs.append(out["seconds"])
        return min(runs)

    results["estc CsvReader::read (row by row)"] = estc("dataset", 0)
    results["estc CsvReader::read_batch(%d)" % args.batch] = estc(
        "dataset", args.batch)
    # decode mode reads every line first (TextLineReader), header included:
    # decode_csv of the header line would fail, so the string column is
    # what the header's "name" becomes and floats... use a headerless copy.
    headerless = path + ".noheader"
    with open(path) as f, open(headerless, "w") as g:
        next(f)
        g.writelines(f)
    saved = path
    path = headerless
    results["estc TextLineReader + decode_csv(%d lines)" % args.batch] = estc(
        "decode", args.batch)
    path = saved

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    tf_defaults = [tf.constant([float(v)], tf.float32) if t == "float32" else
                   tf.constant([int(v)], tf.int64) if t == "int64" else
                   tf.constant([v], tf.string) for t, v in defaults]

    def tf_csv_dataset():
        ds = tf.data.experimental.CsvDataset(path, tf_defaults, header=True)
        for _ in ds.batch(args.batch).prefetch(2):
            pass

    def tf_decode():
        ds = tf.data.TextLineDataset(path).skip(1).batch(args.batch)
        ds = ds.map(lambda lines: tf.io.decode_csv(lines, tf_defaults))
        for _ in ds.prefetch(2):
            pass

    results["TF CsvDataset.batch(%d)" % args.batch] = best(tf_csv_dataset,
                                                         args.repeat)
    results["TF TextLineDataset.batch(%d).map(decode_csv)" % args.batch] = \
        best(tf_decode, args.repeat)
    print("%d rows, %.1f MB, best of %d" % (args.rows, mb, args.repeat))
    for name, seconds in results.items():
        print("  %-48s %7.3f s  %6.1f MB/s  %5.2f M rows/s" % (
            name, seconds, mb / seconds, args.rows / seconds / 1e6))


if __name__ == "__main__":
    main()
