#!/usr/bin/env python3
"""Sequence feature columns (lib/FeatureColumn) against TensorFlow 2.15's.

Random batches of sequences with ragged lengths (SparseTensors [batch, T]
with gaps inside a sequence, empty sequences, and dense [batch, T] tensors
with TF's missing values "" and -1) through random sets of sequence
columns: sequence_categorical_column_with_identity (with and without
default_value), _hash_bucket (strings, int64), _vocabulary_list (strings,
ints; default_value, num_oov_buckets), _vocabulary_file, each under an
embedding_column (with and without max_norm) or an indicator_column, and
sequence_numeric_column (shapes [1] and [2], default_value, a
normalizer_fn). For each request:

  - the ids of every sequence categorical column ([batch, T], -1 where a
    step has none) must equal TF's get_sparse_tensors ids, and its lengths
    TF's;
  - SequenceFeatures' output [batch, T, dim] and sequence lengths must
    equal tf.keras.experimental.SequenceFeatures' for the same random
    embedding tables (found under TF's variable names,
    sequence_features/<column>/embedding_weights);
  - batches whose columns' lengths differ fail on both sides.

The tool is feature_column_tool (test/data), the reference evaluator runs
the graph half.

usage: tf_sequence_feature_column_compat.py --tool=build/bin/feature_column_tool
           --work=DIR [--seed=S] [--requests=N]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import json
import os
import random
import subprocess
import sys

WORDS = ["a", "b", "c", "apple", "kiwi", "zz", "\u00dcber", "x y"]
FILE_WORDS = ["apple", "b", "zz", "kiwi", "c"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--requests", type=int, default=80)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import warnings
        warnings.filterwarnings("ignore")
        import numpy as np
        import tensorflow as tf
        tf.get_logger().setLevel("ERROR")
        from tensorflow.python.feature_column import feature_column_v2 as fcv2
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    fc = tf.feature_column
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)
    words_file = os.path.join(args.work, "seq_words.txt")
    with open(words_file, "w", encoding="utf-8") as f:
        f.write("\n".join(FILE_WORDS) + "\n")

    tool = subprocess.Popen([args.tool], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            encoding="utf-8")

    def ask(request):
        tool.stdin.write(json.dumps(request) + "\n")
        tool.stdin.flush()
        return json.loads(tool.stdout.readline())

    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL:", msg)

    # --- random columns: (our spec, TF column, raw value kind) -------------
    def categorical(key):
        kind = rng.choice(["identity", "identity_default", "hash_s",
                           "hash_i", "vocab_s", "vocab_i", "vocab_file"])
        if kind.startswith("identity"):
            default = 0 if kind == "identity_default" else None
            spec = {"type": "seq_identity", "key": key, "num_buckets": 6}
            if default is not None:
                spec["default_value"] = default
            col = fc.sequence_categorical_column_with_identity(
                key, 6, default_value=default)
            return spec, col, ("int", 9 if default is not None else 6)
        if kind.startswith("hash"):
            dtype = "string" if kind == "hash_s" else "int64"
            spec = {"type": "seq_hash", "key": key, "hash_bucket_size": 7,
                    "dtype": dtype}
            col = fc.sequence_categorical_column_with_hash_bucket(
                key, 7, dtype=tf.string if dtype == "string" else tf.int64)
            return spec, col, ("str", None) if dtype == "string" else (
                "int", 40)
        if kind == "vocab_s":
            oov = rng.choice([0, 2])
            default = -1 if oov else rng.choice([-1, 1])
            spec = {"type": "seq_vocab_list", "key": key,
                    "vocabulary_list": WORDS[:5], "default_value": default,
                    "num_oov_buckets": oov}
            col = fc.sequence_categorical_column_with_vocabulary_list(
                key, WORDS[:5], default_value=default, num_oov_buckets=oov)
            return spec, col, ("str", None)
        if kind == "vocab_i":
            vocab = [3, 7, 11, 20]
            oov = rng.choice([0, 1])
            spec = {"type": "seq_vocab_list", "key": key,
                    "vocabulary_list": vocab, "dtype": "int64",
                    "default_value": -1, "num_oov_buckets": oov}
            col = fc.sequence_categorical_column_with_vocabulary_list(
                key, vocab, dtype=tf.int64, num_oov_buckets=oov)
            return spec, col, ("pick", vocab + [5, 0])
        oov = rng.choice([0, 1])
        spec = {"type": "seq_vocab_file", "key": key,
                "vocabulary_file": words_file, "dtype": "string",
                "num_oov_buckets": oov}
        col = fc.sequence_categorical_column_with_vocabulary_file(
            key, words_file, num_oov_buckets=oov)
        return spec, col, ("str", None)

    def dense_column(key):
        r = rng.random()
        if r < 0.3:
            shape = rng.choice([[1], [2]])
            default = rng.choice([0.0, -1.5])
            spec = {"type": "seq_numeric", "key": key, "shape": shape,
                    "default_value": default}
            normalizer = None
            if rng.random() < 0.5:
                spec["normalizer"] = "times3"
                normalizer = lambda x: x * 3.0  # noqa: E731
            col = fc.sequence_numeric_column(key, shape=shape,
                                             default_value=default,
                                             normalizer_fn=normalizer)
            return spec, col, ("float", shape[0]), None
        cspec, ccol, raw = categorical(key)
        if r < 0.55:
            return ({"type": "indicator", "categorical": cspec},
                    fc.indicator_column(ccol), raw, None)
        dim = rng.choice([2, 3])
        spec = {"type": "embedding", "categorical": cspec, "dimension": dim,
                "combiner": rng.choice(["mean", "sum", "sqrtn"])}
        max_norm = None
        if rng.random() < 0.3:
            max_norm = 0.7
            spec["max_norm"] = max_norm
        col = fc.embedding_column(ccol, dim, combiner=spec["combiner"],
                                  max_norm=max_norm)
        return spec, col, raw, (ccol.num_buckets, dim)

    def value(raw):
        kind, arg = raw
        if kind == "int":
            return rng.randrange(arg)
        if kind == "pick":
            return rng.choice(arg)
        if kind == "str":
            return rng.choice(WORDS + FILE_WORDS)
        return round(rng.uniform(-2, 2), 3)

    def feature(raw, lengths, steps, gaps, dense):
        """(our JSON feature, TF tensor): one sequence per row."""
        batch = len(lengths)
        kind, arg = raw
        per = arg if kind == "float" else 1
        dtype = {"str": "string", "float": "float32"}.get(kind, "int64")
        if dense:
            missing = "" if kind == "str" else -1
            values = []
            for b in range(batch):
                for t in range(steps):
                    present = t < lengths[b] and (t, b) not in gaps
                    values.append(value(raw) if present else missing)
            ours = {"dtype": dtype, "shape": [batch, steps],
                    "values": values}
            tfv = tf.constant(np.array(
                values, dtype=object if kind == "str" else np.int64
            ).reshape(batch, steps))
            return ours, tfv
        indices, values = [], []
        for b in range(batch):
            for t in range(lengths[b]):
                if (t, b) in gaps:
                    continue
                for j in range(per):
                    indices.append([b, t * per + j])
                    values.append(value(raw))
        ours = {"dtype": dtype, "shape": [batch, steps * per],
                "values": values, "indices": indices}
        np_dtype = {"string": object, "float32": np.float32,
                    "int64": np.int64}[dtype]
        tfv = tf.sparse.SparseTensor(
            indices=np.array(indices, dtype=np.int64).reshape(-1, 2),
            values=np.array(values, dtype=np_dtype),
            dense_shape=[batch, steps * per])
        return ours, tfv

    checked = 0
    for request in range(args.requests):
        batch = rng.randint(1, 5)
        steps = rng.randint(1, 6)
        lengths = [rng.randint(0, steps) for _ in range(batch)]
        # Gaps inside a sequence (not its last step): zeros there, same
        # length.
        gaps = set()
        for b in range(batch):
            for t in range(lengths[b] - 1):
                if rng.random() < 0.15:
                    gaps.add((t, b))
        mismatch = request % 10 == 9
        specs, tf_cols, our_features, tf_features, tables = [], [], {}, {}, {}
        for i in range(rng.randint(1, 3)):
            key = f"k{i}"
            spec, col, raw, table = dense_column(key)
            dense = raw[0] != "float" and rng.random() < 0.3
            lens = list(lengths)
            if mismatch and i == 1:
                lens[0] = (lens[0] + 1) % (steps + 1)
            ours, tfv = feature(raw, lens, steps,
                                gaps if raw[0] != "float" else set(), dense)
            specs.append(spec)
            tf_cols.append(col)
            our_features[key] = ours
            tf_features[key] = tfv
            if table:
                tables[col.name] = table
        if mismatch and len(specs) < 2:
            continue
        variables = {}
        tf_values = {}
        for name, (rows, dim) in tables.items():
            v = [round(rng.uniform(-1, 1), 4) for _ in range(rows * dim)]
            variables[f"sequence_features/{name}/embedding_weights"] = v
            tf_values[name] = np.array(v, np.float32).reshape(rows, dim)
        answer = ask({"columns": specs, "features": our_features,
                      "layer": "sequence_features", "variables": variables})
        layer = tf.keras.experimental.SequenceFeatures(tf_cols)
        try:
            layer.build(None)
        except Exception:  # pylint: disable=broad-except
            pass
        try:
            for var in layer.variables:
                name = var.name.split("/")[1]
                var.assign(tf_values[name])
            tf_out, tf_len = layer(tf_features)
            tf_out, tf_len = tf_out.numpy(), tf_len.numpy()
            tf_error = None
        except Exception as e:  # pylint: disable=broad-except
            tf_error = str(e).splitlines()[0]
        where = f"request {request} ({json.dumps(specs)})"
        if tf_error or "error" in answer:
            if not (tf_error and "error" in answer):
                fail(f"{where}: TF error {tf_error!r}, estc "
                     f"{answer.get('error')!r}")
            elif not mismatch:
                print(f"both refuse {where}: TF {tf_error!r}; estc "
                      f"{answer['error']!r}")
            continue
        if mismatch:
            fail(f"{where}: lengths differ but both accepted it")
            continue
        # Ids of every categorical column.
        cache = fcv2.FeatureTransformationCache(tf_features)
        for col, spec in zip(tf_cols, specs):
            if spec["type"] == "seq_numeric":
                continue
            cat = col.categorical_column
            ids = cat.get_sparse_tensors(cache, None).id_tensor
            dense_ids = tf.sparse.to_dense(
                tf.sparse.reshape(ids, [ids.dense_shape[0],
                                        ids.dense_shape[1]]),
                default_value=-1).numpy()
            ours = answer["inputs"].get(f"{cat.name}/ids")
            if ours is None:
                fail(f"{where}: no input {cat.name}/ids")
                continue
            got = np.array(ours["values"], np.int64).reshape(ours["shape"])
            if got.shape != dense_ids.shape or (got != dense_ids).any():
                fail(f"{where}: {cat.name}/ids {got.tolist()} != TF's "
                     f"{dense_ids.tolist()}")
        got_len = np.array(answer["sequence_length"]["values"], np.int64)
        if got_len.tolist() != tf_len.tolist():
            fail(f"{where}: sequence_length {got_len.tolist()} != TF's "
                 f"{tf_len.tolist()}")
        out = np.array(answer["output"]["values"],
                       np.float32).reshape(answer["output"]["shape"])
        if out.shape != tf_out.shape or not np.allclose(out, tf_out,
                                                        rtol=1e-5, atol=1e-6):
            fail(f"{where}: output {out.tolist()} != TF's {tf_out.tolist()}")
        checked += 1
    tool.stdin.close()
    tool.wait()
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"OK: {checked} batches of sequence columns equal TF's (ids, "
          f"lengths, SequenceFeatures outputs), mismatched lengths refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
