#!/usr/bin/env python3
"""lib/Data/Hashing.h against TensorFlow 2.15 on random inputs.

tf.strings.to_hash_bucket_fast on random byte strings (ASCII, arbitrary
bytes, long) and tf.sparse.cross_hashed on random ragged batches
of string and int64 columns (empty rows, several values per row, negative
and extreme int64s, num_buckets 0 and > 0, default and other hash keys):
every id must equal TF's.

usage: tf_hashing_compat.py --tool=build/bin/hashing_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import os
import random
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    rng = random.Random(args.seed)

    def rand_bytes():
        kind = rng.randrange(4)
        if kind == 0:
            return b""
        if kind == 1:
            return "".join(rng.choice("abcxyz_-") for _ in range(rng.randrange(1, 12))).encode()
        if kind == 2:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        return bytes(rng.randrange(32, 127) for _ in range(rng.randrange(60, 300)))

    def rand_int():
        return rng.choice([0, 1, -1, 2**63 - 1, -(2**63), rng.randrange(-10**6, 10**6),
                           rng.randrange(-(2**63), 2**63)])

    # (The empty string cannot travel as a hex word: HashingTest has it.)
    checks = 0
    bucket_lines, bucket_expected = [], []
    for _ in range(50):
        strs = [rand_bytes() or b"\x00" for _ in range(rng.randrange(1, 20))]
        n = rng.choice([1, 2, 7, 1000, 2**31, 2**62])
        bucket_lines.append(f"bucket {n} " + " ".join(s.hex() for s in strs))
        bucket_expected.append(
            [int(x) for x in tf.strings.to_hash_bucket_fast(strs, n).numpy()])

    cross_lines, cross_expected = [], []
    for _ in range(60):
        batch = rng.randrange(1, 6)
        ncols = rng.randrange(1, 4)
        cols_tf, col_lines = [], []
        for _ in range(ncols):
            is_str = rng.random() < 0.5
            rows = []
            for _ in range(batch):
                k = rng.choice([0, 1, 1, 2, 3])
                rows.append([rand_bytes() or b"x" for _ in range(k)] if is_str
                            else [rand_int() for _ in range(k)])
            if is_str:
                col_lines.append("s " + ";".join(",".join(v.hex() for v in r) for r in rows))
                rt = tf.ragged.constant(rows, dtype=tf.string, ragged_rank=1)
            else:
                col_lines.append("i " + ";".join(",".join(str(v) for v in r) for r in rows))
                rt = tf.ragged.constant(rows, dtype=tf.int64, ragged_rank=1)
            cols_tf.append(rt.to_sparse())
        n = rng.choice([0, 0, 10, 1000, 2**40])
        key = rng.choice([None, None, 1, 2**40 + 7])
        out = tf.sparse.cross_hashed(cols_tf, num_buckets=n, hash_key=key)
        per_row = [[] for _ in range(batch)]
        for (r, _), v in zip(out.indices.numpy().tolist(), out.values.numpy().tolist()):
            per_row[r].append(int(v))
        key_value = 0xDECAFCAFFE if key is None else key
        cross_lines.append(f"cross {n} {key_value} {ncols}\n" + "\n".join(col_lines))
        cross_expected.append(per_row)

    text = "\n".join(bucket_lines + cross_lines) + "\n"
    res = subprocess.run([args.tool], input=text.encode(), capture_output=True, check=False)
    if res.returncode != 0:
        print("FAIL: hashing_tool:", res.stderr.decode().strip())
        return 1
    lines = res.stdout.decode().split("\n")
    failures = 0
    pos = 0
    for i, want in enumerate(bucket_expected):
        got = [int(x) for x in lines[pos].split()]
        pos += 1
        checks += len(want)
        if got != want:
            failures += 1
            print(f"FAIL: bucket request {i}: {got} != TF {want}")
    for i, want in enumerate(cross_expected):
        for r, row in enumerate(want):
            got = [int(x) for x in lines[pos].split()]
            pos += 1
            checks += max(len(row), 1)
            if got != row:
                failures += 1
                print(f"FAIL: cross request {i} row {r}: {got} != TF {row}")
    if failures:
        print(f"FAIL: {failures} mismatches")
        return 1
    print(f"PASS: {checks} ids equal TF {tf.__version__}'s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
