#!/usr/bin/env python3
"""lib/FeatureColumn against TensorFlow 2.15's feature columns.

Random batches (dense and sparse string and int64 features with TF's
missing values "" and -1, numbers for numeric and bucketized columns,
weights) through random columns: hash buckets (string, int64), vocabulary
lists and files (strings, ints; num_oov_buckets, default_value,
vocabulary_size), identity (with and without default_value), crosses of 2
and 3 keys (raw keys dense and sparse, bucketized, vocabulary and identity
columns, nested crosses, hash_key), weighted columns. The ids (and
weights) of every categorical model input must equal TF's
get_sparse_tensors ids less the negative ones; numeric inputs TF's float32
values. With --layers (needs the graph half), input_layer and linear_model
(indicator and embedding columns, every sparse_combiner) must give TF's
outputs for the same random variable values, which the tool finds under
TF's variable names.

usage: tf_feature_column_compat.py --tool=build/bin/feature_column_tool
           --work=DIR [--seed=S] [--requests=N] [--layers]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import json
import os
import random
import subprocess
import sys

WORDS = ["a", "b", "c", "apple", "kiwi", "", "zz", "\u00dcber", "x y"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--layers", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import warnings
        warnings.filterwarnings("ignore")
        import tensorflow as tf
        tf.get_logger().setLevel("ERROR")
        from tensorflow.python.feature_column import feature_column_v2 as fcv2
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    tf.compat.v1.disable_eager_execution()
    fc = tf.feature_column
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)

    words_file = os.path.join(args.work, "words.txt")
    file_words = ["apple", "b", "zz", "kiwi", "\u00dcber", "c"]
    with open(words_file, "w", encoding="utf-8") as f:
        f.write("\n".join(file_words) + "\n")
    ints_file = os.path.join(args.work, "ints.txt")
    with open(ints_file, "w", encoding="utf-8") as f:
        f.write("\n".join(str(i) for i in [4, 0, 7, -2, 2]) + "\n")

    # --- Features ---------------------------------------------------------
    def feature(batch, width, kind, sparse):
        """(spec for the tool, TF tensor) of a [batch, width] feature."""
        def value():
            if kind == "string":
                return rng.choice(WORDS)
            if kind == "int64":
                return rng.choice([-1, -1, -2, 0, 1, 2, 3, 4, 7, 8])
            return round(rng.uniform(-10, 70), 3)
        dtype = {"string": tf.string, "int64": tf.int64, "float32": tf.float32}[kind]
        if not sparse:
            vals = [value() for _ in range(batch * width)]
            spec = {"dtype": kind, "shape": [batch, width], "values": vals}
            nested = [vals[r * width:(r + 1) * width] for r in range(batch)]
            return spec, tf.constant(nested, dtype=dtype)
        indices, vals = [], []
        for r in range(batch):
            for c in range(width):
                if rng.random() < 0.6:
                    indices.append([r, c])
                    vals.append(value())
        spec = {"dtype": kind, "shape": [batch, width], "values": vals,
                "indices": indices}
        return spec, tf.SparseTensor(
            tf.constant(indices, dtype=tf.int64, shape=[len(indices), 2]),
            tf.constant(vals, dtype=dtype, shape=[len(vals)]), [batch, width])

    def features(batch):
        specs, tensors = {}, {}
        for key, kind, width in [("s1", "string", rng.choice([1, 2, 3])),
                                 ("s2", "string", rng.choice([1, 2])),
                                 ("n1", "int64", rng.choice([1, 2, 3])),
                                 ("n2", "int64", 1)]:
            specs[key], tensors[key] = feature(batch, width, kind,
                                               rng.random() < 0.5)
        specs["x"], tensors["x"] = feature(batch, 1, "float32", False)
        specs["x2"], tensors["x2"] = feature(batch, 2, "float32", False)
        # Weights where n1 has ids (TF needs them to line up).
        n1 = specs["n1"]
        if "indices" in n1:
            w = [round(rng.uniform(0.1, 3), 3) for _ in n1["values"]]
            specs["w"] = dict(n1, dtype="float32", values=w)
            tensors["w"] = tf.SparseTensor(
                tf.constant(n1["indices"], dtype=tf.int64,
                            shape=[len(n1["indices"]), 2]),
                tf.constant(w, dtype=tf.float32, shape=[len(w)]), n1["shape"])
        else:
            w = [0.0 if v == -1 else round(rng.uniform(0.1, 3), 3)
                 for v in n1["values"]]
            specs["w"] = dict(n1, dtype="float32", values=w)
            width = n1["shape"][1]
            tensors["w"] = tf.constant(
                [w[r * width:(r + 1) * width] for r in range(batch)])
        return specs, tensors

    # --- Columns (spec for the tool, TF column) ----------------------------
    def s1_column():
        k = rng.randrange(5)
        if k == 0:
            n = rng.choice([1, 7, 100])
            return ({"type": "hash", "key": "s1", "hash_bucket_size": n,
                     "dtype": "string"},
                    fc.categorical_column_with_hash_bucket("s1", n))
        if k in (1, 2):
            vocab = rng.sample(WORDS, rng.randrange(1, 5))
            oov = rng.choice([0, 0, 3])
            default = -1 if oov or rng.random() < 0.5 else len(vocab) - 1
            return ({"type": "vocab_list", "key": "s1", "vocabulary_list": vocab,
                     "default_value": default, "num_oov_buckets": oov},
                    fc.categorical_column_with_vocabulary_list(
                        "s1", vocab, default_value=default, num_oov_buckets=oov))
        size = rng.choice([None, 3])
        oov = rng.choice([0, 2])
        default = None if oov or rng.random() < 0.5 else 0
        spec = {"type": "vocab_file", "key": "s1", "vocabulary_file": words_file,
                "dtype": "string", "num_oov_buckets": oov}
        if size is not None:
            spec["vocabulary_size"] = size
        if default is not None:
            spec["default_value"] = default
        return spec, fc.categorical_column_with_vocabulary_file(
            "s1", words_file, vocabulary_size=size, num_oov_buckets=oov,
            default_value=default)

    def identity(key, with_default):
        if with_default:
            n = rng.choice([3, 5])
            return ({"type": "identity", "key": key, "num_buckets": n,
                     "default_value": n - 1},
                    fc.categorical_column_with_identity(key, n, n - 1))
        return ({"type": "identity", "key": key, "num_buckets": 10},
                fc.categorical_column_with_identity(key, 10))

    def n1_column():
        k = rng.randrange(6)
        if k == 0:
            return ({"type": "hash", "key": "n1", "hash_bucket_size": 13,
                     "dtype": "int64"},
                    fc.categorical_column_with_hash_bucket("n1", 13, tf.int64))
        if k == 1:
            vocab = rng.sample([0, 1, 2, 3, 7, 100], 3)
            return ({"type": "vocab_list", "key": "n1", "vocabulary_list": vocab,
                     "default_value": -1, "num_oov_buckets": 2},
                    fc.categorical_column_with_vocabulary_list(
                        "n1", vocab, num_oov_buckets=2))
        if k == 2:
            return ({"type": "vocab_file", "key": "n1", "vocabulary_file": ints_file,
                     "dtype": "int64", "num_oov_buckets": 1},
                    fc.categorical_column_with_vocabulary_file(
                        "n1", ints_file, dtype=tf.int64, num_oov_buckets=1))
        if k == 3:
            spec, col = identity("n1", False)
            return ({"type": "weighted", "categorical": spec,
                     "weight_feature_key": "w"},
                    fc.weighted_categorical_column(col, "w"))
        return identity("n1", rng.random() < 0.5)

    def cross_part():
        k = rng.randrange(7)
        if k == 0:
            return "s1", "s1"
        if k == 1:
            return "s2", "s2"
        if k == 2:
            return "n2", "n2"
        if k == 3:
            b = [0.0, 18.5, 40.0]
            return ({"type": "bucketized",
                     "source": {"type": "numeric", "key": "x", "shape": [1]},
                     "boundaries": b},
                    fc.bucketized_column(fc.numeric_column("x"), b))
        if k == 4:
            b = [10.0, 30.0]
            return ({"type": "bucketized",
                     "source": {"type": "numeric", "key": "x2", "shape": [2]},
                     "boundaries": b},
                    fc.bucketized_column(fc.numeric_column("x2", shape=2), b))
        if k == 5:
            vocab = ["a", "b", ""]
            return ({"type": "vocab_list", "key": "s2", "vocabulary_list": vocab,
                     "default_value": -1, "num_oov_buckets": 0},
                    fc.categorical_column_with_vocabulary_list("s2", vocab))
        return identity("n2", True)

    def crossed(small=False):
        parts, names = [], set()
        while len(parts) < rng.choice([2, 3]):
            spec, col = cross_part()
            name = spec if isinstance(spec, str) else col.name
            if name in names:
                continue
            names.add(name)
            parts.append((spec, col))
        if rng.random() < 0.2:  # nested
            inner = ({"type": "crossed", "keys": [p[0] for p in parts[:2]],
                      "hash_bucket_size": 10},
                     fc.crossed_column([p[1] for p in parts[:2]], 10))
            parts = [inner] + parts[2:]
            if len(parts) < 2:
                parts.append(("s2", "s2") if "s2" not in names else ("n2", "n2"))
        # A layer's variables have a row per bucket: keep them small there.
        n = rng.choice([7, 1000] if small else [7, 1000, 2**40])
        key = rng.choice([None, 5])
        spec = {"type": "crossed", "keys": [p[0] for p in parts],
                "hash_bucket_size": n}
        if key is not None:
            spec["hash_key"] = key
        return spec, fc.crossed_column([p[1] for p in parts], n, hash_key=key)

    # --- TF's values ---------------------------------------------------------
    def tf_ids(column, tensors, sess):
        cache = fcv2.FeatureTransformationCache(tensors)
        pair = column.get_sparse_tensors(cache, None)
        sess.run(tf.compat.v1.tables_initializer())
        ids = sess.run(pair.id_tensor)
        weights = None if pair.weight_tensor is None else sess.run(pair.weight_tensor)
        rows = [[] for _ in range(ids.dense_shape[0])]
        for i, (index, v) in enumerate(zip(ids.indices.tolist(), ids.values.tolist())):
            if v < 0:
                continue
            w = None if weights is None else float(weights.values[i])
            rows[index[0]].append((int(v), w))
        return rows

    def our_ids(inputs, name):
        ids = inputs[name + "/ids"]["values"]
        rows = inputs[name + "/rows"]["values"]
        lengths = inputs[name + "/row_lengths"]["values"]
        weights = inputs.get(name + "/weights", {}).get("values")
        out = [[] for _ in lengths]
        for i, (v, r) in enumerate(zip(ids, rows)):
            out[r].append((v, None if weights is None else weights[i]))
        return out

    checks = failures = 0

    def fail(msg):
        nonlocal failures
        failures += 1
        print("FAIL:", msg)

    def close(a, b, tol=1e-5):
        return abs(a - b) <= tol * max(1.0, abs(b))

    requests = []
    for index in range(args.requests):
        batch = rng.randrange(1, 6)
        g = tf.Graph()
        with g.as_default():
            fspecs, tensors = features(batch)
            cols = [s1_column(), n1_column(), crossed()]
            request = {"columns": [c[0] for c in cols], "features": fspecs}
            with tf.compat.v1.Session() as sess:
                expected = {c[1].name: tf_ids(c[1], tensors, sess) for c in cols}
        requests.append((index, request, expected, None))

    if args.layers:
        for index in range(args.requests, args.requests + args.requests // 2):
            batch = rng.randrange(1, 6)
            g = tf.Graph()
            with g.as_default():
                fspecs, tensors = features(batch)
                s1, n1, cr = s1_column(), n1_column(), crossed(small=True)
                x = ({"type": "numeric", "key": "x", "shape": [1]},
                     fc.numeric_column("x"))
                xb = ({"type": "bucketized", "source": x[0],
                       "boundaries": [5.0, 25.5]},
                      fc.bucketized_column(x[1], [5.0, 25.5]))
                layer = rng.choice(["input_layer", "linear_model"])
                combiner = rng.choice(["sum", "mean", "sqrtn"])
                if layer == "input_layer":
                    def emb(c):
                        return ({"type": "embedding", "categorical": c[0],
                                 "dimension": 3, "combiner": combiner},
                                fc.embedding_column(c[1], 3, combiner=combiner))
                    def ind(c):
                        return ({"type": "indicator", "categorical": c[0]},
                                fc.indicator_column(c[1]))
                    cols = [x, xb, rng.choice([emb, ind])(s1), emb(cr), ind(xb)]
                    tf_cols = [c[1] for c in cols]
                    if rng.random() < 0.3:
                        # One table for n2 and n1 (identity columns of 10).
                        n2 = ({"type": "identity", "key": "n2",
                               "num_buckets": 10, "default_value": 9},
                              fc.categorical_column_with_identity("n2", 10, 9))
                        n1 = identity("n1", False)
                        cols.append(({"type": "shared",
                                      "categoricals": [n2[0], n1[0]],
                                      "dimension": 3, "combiner": combiner},
                                     None))
                        tf_cols += tf.compat.v1.feature_column.\
                            shared_embedding_columns([n2[1], n1[1]], 3,
                                                     combiner=combiner)
                    else:
                        cols.append(rng.choice([emb, ind])(n1))
                        tf_cols.append(cols[-1][1])
                    out = tf.compat.v1.feature_column.input_layer(tensors,
                                                                  tf_cols)
                else:
                    cols = [x, xb, s1, n1, cr]
                    out = tf.compat.v1.feature_column.linear_model(
                        tensors, [c[1] for c in cols], units=2,
                        sparse_combiner=combiner)
                variables = {}
                with tf.compat.v1.Session() as sess:
                    sess.run(tf.compat.v1.global_variables_initializer())
                    sess.run(tf.compat.v1.tables_initializer())
                    for v in tf.compat.v1.global_variables():
                        vals = [round(rng.uniform(-1, 1), 4)
                                for _ in range(v.shape.num_elements())]
                        v.load([vals[i] for i in range(len(vals))]
                               if v.shape.rank == 1 else
                               [vals[r * v.shape[1]:(r + 1) * v.shape[1]]
                                for r in range(v.shape[0])], sess)
                        variables[v.name.split(":")[0]] = vals
                    result = sess.run(out)
                request = {"columns": [c[0] for c in cols], "features": fspecs,
                           "layer": layer, "units": 2,
                           "sparse_combiner": combiner, "variables": variables}
                requests.append((index, request, None,
                                 [float(v) for v in result.flatten()]))

    text = "".join(json.dumps(r[1]) + "\n" for r in requests)
    res = subprocess.run([args.tool], input=text.encode(), capture_output=True,
                         check=False)
    if res.returncode != 0:
        print("FAIL: feature_column_tool:", res.stderr.decode().strip())
        return 1
    answers = res.stdout.decode().strip().split("\n")
    if len(answers) != len(requests):
        print(f"FAIL: {len(answers)} answers to {len(requests)} requests")
        return 1
    for (index, request, expected, output), line in zip(requests, answers):
        got = json.loads(line)
        if "error" in got:
            fail(f"request {index}: {got['error']}\n  {json.dumps(request)}")
            continue
        inputs = got["inputs"]
        if expected is not None:
            for name, want in expected.items():
                mine = our_ids(inputs, name)
                checks += 1
                same = len(mine) == len(want) and all(
                    len(a) == len(b) and all(
                        x[0] == y[0] and (x[1] is None) == (y[1] is None) and
                        (x[1] is None or close(x[1], y[1])) for x, y in zip(a, b))
                    for a, b in zip(mine, want))
                if not same:
                    fail(f"request {index} column {name}: {mine} != TF {want}\n"
                         f"  {json.dumps(request)}")
        if output is not None:
            mine = got["output"]["values"]
            checks += 1
            if len(mine) != len(output) or not all(
                    close(a, b, 1e-4) for a, b in zip(mine, output)):
                fail(f"request {index} {request['layer']}: {mine} != TF {output}\n"
                     f"  {json.dumps(request)}")
    if failures:
        print(f"FAIL: {failures} of {checks} checks")
        return 1
    print(f"PASS: {checks} checks equal TF {tf.__version__}'s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
