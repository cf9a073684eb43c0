#!/usr/bin/env python3
"""estc's SequenceExample parsing and bucket_by_sequence_length against TF's.

  1. Random tf.train.SequenceExamples made with TF's own proto classes
     (context features of every kind and dtype, some missing; feature lists
     with varying step counts, empty steps, steps without a list, missing
     lists), written by tf.io.TFRecordWriter, parsed by estc (records_tool
     --mode=read_sequence) and by tf.io.parse_sequence_example /
     parse_single_sequence_example with the same specs: values, dtypes,
     shapes, lengths and sparse indices must be identical (floats bit for
     bit).
  2. One record per kind of error TF raises (a context feature or a step of
     the wrong kind, a missing required context feature or feature list, a
     step of the wrong size, a context Feature without a list, a record that
     is not a SequenceExample): TF raises, estc exits 1 with one line naming
     the record and the feature.
  3. bucket_by_sequence_length on random length distributions, with and
     without padded_shapes, padding values, pad_to_bucket_boundary,
     no_padding, drop_remainder: the same batches in the same order, the
     same padding; where TF raises (a length in the last bucket with
     pad_to_bucket_boundary), estc raises after the same batches.

usage: tf_sequence_compat.py --tool=records_tool --work=DIR
Exits 77 (ctest: skipped), printing SKIP, when tensorflow cannot be
imported.
"""
import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_records_compat import (canonical_estc, compare, f32, fail,  # noqa: E402
                               run_tool, tf_write)

CONTEXT_SPEC = {
    "id": {"kind": "fixed", "dtype": "int64", "shape": []},
    "score": {"kind": "fixed", "dtype": "float", "shape": [2],
              "default": [0.5, -1.0]},
    "label": {"kind": "fixed", "dtype": "string", "shape": [],
              "default": "none"},
    "tags": {"kind": "var", "dtype": "string"},
    "weights": {"kind": "var", "dtype": "float"},
    "ids": {"kind": "var", "dtype": "int64"},
}
SEQUENCE_SPEC = {
    "tok": {"kind": "seq", "dtype": "int64", "shape": [], "allow_missing": True},
    "emb": {"kind": "seq", "dtype": "float", "shape": [3],
            "allow_missing": True},
    "words": {"kind": "seq", "dtype": "string", "shape": [2]},
    "grid": {"kind": "seq", "dtype": "float", "shape": [2, 2],
             "allow_missing": True},
    "sp": {"kind": "var", "dtype": "float"},
    "sb": {"kind": "var", "dtype": "string"},
    "si": {"kind": "var", "dtype": "int64"},
    # The same name as a context feature: separate maps.
    "ids": {"kind": "var", "dtype": "int64"},
}
DTYPES = {"int64": "I64", "float": "F32", "string": "STRING"}


def tf_specs(tf, spec):
    dt = {"int64": tf.int64, "float": tf.float32, "string": tf.string}
    out = {}
    for name, s in spec.items():
        if s["kind"] == "fixed":
            out[name] = tf.io.FixedLenFeature(s["shape"], dt[s["dtype"]],
                                              default_value=s.get("default"))
        elif s["kind"] == "var":
            out[name] = tf.io.VarLenFeature(dt[s["dtype"]])
        else:
            out[name] = tf.io.FixedLenSequenceFeature(
                s["shape"], dt[s["dtype"]],
                allow_missing=s.get("allow_missing", False))
    return out


def feature(tf, kind, values):
    if kind is None:
        return tf.train.Feature()
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def random_values(rng, kind, n):
    if kind == "int64":
        return [rng.choice([rng.randrange(-(1 << 63), 1 << 63),
                            rng.randrange(-5, 5)]) for _ in range(n)]
    if kind == "float":
        return [f32(rng.uniform(-1e3, 1e3)) for _ in range(n)]
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
            for _ in range(n)]


def random_sequence_example(tf, rng):
    ctx = {"id": feature(tf, "int64", random_values(rng, "int64", 1))}
    if rng.random() < 0.6:
        ctx["score"] = feature(tf, "float", random_values(rng, "float", 2))
    if rng.random() < 0.5:
        ctx["label"] = feature(tf, "string", random_values(rng, "string", 1))
    for name, kind in (("tags", "string"), ("weights", "float"),
                       ("ids", "int64")):
        r = rng.random()
        if r < 0.6:
            ctx[name] = feature(tf, kind, random_values(rng, kind,
                                                        rng.randrange(5)))
        elif r < 0.7:
            ctx[name] = feature(tf, None, [])  # no list: no values
    lists = {}

    def dense_list(name, kind, stride, allow_missing=True):
        if allow_missing and rng.random() < 0.2:
            return
        steps = rng.randrange(6)
        lists[name] = tf.train.FeatureList(feature=[
            feature(tf, kind, random_values(rng, kind, stride))
            for _ in range(steps)])

    dense_list("tok", "int64", 1)
    dense_list("emb", "float", 3)
    dense_list("words", "string", 2, allow_missing=False)
    dense_list("grid", "float", 4)
    for name, kind in (("sp", "float"), ("sb", "string"), ("si", "int64"),
                       ("ids", "int64")):
        if rng.random() < 0.25:
            continue
        steps = []
        for _ in range(rng.randrange(5)):
            r = rng.random()
            steps.append(feature(tf, None, []) if r < 0.15 else
                         feature(tf, kind, random_values(rng, kind,
                                                         rng.randrange(4))))
        lists[name] = tf.train.FeatureList(feature=steps)
    return tf.train.SequenceExample(
        context=tf.train.Features(feature=ctx),
        feature_lists=tf.train.FeatureLists(feature_list=lists))


def canonical(tf, parsed):
    """A dict of TF outputs as records_tool's JSON has them, with dtypes."""
    names = {tf.int64: "I64", tf.float32: "F32", tf.string: "STRING"}

    def values(array):
        flat = array.reshape(-1).tolist()
        if array.dtype.kind in "OS":
            return [v.hex() for v in flat]
        if array.dtype.kind == "f":
            return [f32(v) for v in flat]
        return [int(v) for v in flat]

    out = {}
    for name, t in parsed.items():
        if hasattr(t, "indices"):
            out[name] = {"dtype": names[t.values.dtype],
                         "indices": t.indices.numpy().tolist(),
                         "values": values(t.values.numpy()),
                         "dense_shape": t.dense_shape.numpy().tolist()}
        else:
            a = t.numpy()
            if isinstance(a, bytes):  # a string scalar, its NULs kept
                a = np.array(a, dtype=object)
            out[name] = {"dtype": names[t.dtype], "shape": list(a.shape),
                         "values": values(a)}
    return out


def canonical_with_dtype(doc):
    out = canonical_estc(doc)
    for name, v in doc.items():
        out[name]["dtype"] = v["dtype"]
    return out


def parse_part(tf, args, rng):
    ctx_spec, seq_spec = tf_specs(tf, CONTEXT_SPEC), tf_specs(tf, SEQUENCE_SPEC)
    flags = ["--spec=" + json.dumps(CONTEXT_SPEC),
             "--sequence_spec=" + json.dumps(SEQUENCE_SPEC)]
    total = 0
    for trial in range(12):
        batch = rng.choice([1, 2, 5, 17, 40])
        serialized = [random_sequence_example(tf, rng).SerializeToString()
                      for _ in range(batch)]
        path = os.path.join(args.work, "seq-%d.tfrecord" % trial)
        tf_write(tf, path, "", serialized)
        c, f, lengths = tf.io.parse_sequence_example(
            tf.constant(serialized), context_features=ctx_spec,
            sequence_features=seq_spec)
        got = json.loads(run_tool(args.tool, "--mode=read_sequence",
                                  *flags, path).stdout)
        where = "trial %d (batch of %d)" % (trial, batch)
        compare(where + " context", canonical(tf, c),
                canonical_with_dtype(got["context"]))
        compare(where + " feature_lists", canonical(tf, f),
                canonical_with_dtype(got["feature_lists"]))
        compare(where + " lengths", canonical(tf, lengths),
                canonical_with_dtype(got["lengths"]))
        lines = run_tool(args.tool, "--mode=read_sequence", "--single",
                         *flags, path).stdout.splitlines()
        if len(lines) != batch:
            fail("%s: %d single parses for %d records" % (where, len(lines),
                                                          batch))
        for i, s in enumerate(serialized):
            c1, f1 = tf.io.parse_single_sequence_example(
                tf.constant(s), context_features=ctx_spec,
                sequence_features=seq_spec)
            one = json.loads(lines[i])
            compare("%s record %d single context" % (where, i),
                    canonical(tf, c1), canonical_with_dtype(one["context"]))
            compare("%s record %d single feature_lists" % (where, i),
                    canonical(tf, f1),
                    canonical_with_dtype(one["feature_lists"]))
        total += batch
    print("ok: %d random SequenceExamples parse as TF's (batched and single)"
          % total, flush=True)


def error_part(tf, args):
    F = lambda kind, values: feature(tf, kind, values)  # noqa: E731
    FL = lambda *steps: tf.train.FeatureList(feature=list(steps))  # noqa

    def record(ctx=None, lists=None):
        return tf.train.SequenceExample(
            context=tf.train.Features(feature=ctx or {}),
            feature_lists=tf.train.FeatureLists(
                feature_list=lists or {})).SerializeToString()

    good = record({"c": F("int64", [1])}, {"s": FL(F("int64", [1, 2]))})
    ctx = {"c": {"kind": "fixed", "dtype": "int64", "shape": []}}
    seq = {"s": {"kind": "seq", "dtype": "int64", "shape": [2]}}
    var = {"s": {"kind": "var", "dtype": "int64"}}
    cases = [
        ("context feature of the wrong kind", ctx, seq,
         record({"c": F("float", [1.0])}, {"s": FL(F("int64", [1, 2]))}),
         "record 1: context feature 'c' is a float_list, expected int64_list"),
        ("context feature missing", ctx, seq,
         record({}, {"s": FL(F("int64", [1, 2]))}),
         "record 1: context feature 'c' is required but missing"),
        ("context feature without a list", ctx, seq,
         record({"c": F(None, [])}, {"s": FL(F("int64", [1, 2]))}),
         "record 1: context feature 'c' has 0 values, expected 1"),
        ("context feature of the wrong size", ctx, seq,
         record({"c": F("int64", [1, 2])}, {"s": FL(F("int64", [1, 2]))}),
         "record 1: context feature 'c' has 2 values, expected 1"),
        ("feature list missing", ctx, seq, record({"c": F("int64", [1])}),
         "record 1: feature list 's' is required but missing"),
        ("step of the wrong kind", ctx, seq,
         record({"c": F("int64", [1])},
                {"s": FL(F("int64", [1, 2]), F("float", []))}),
         "record 1: feature list 's' step 1 is a float_list, expected "
         "int64_list"),
        ("step of the wrong size", ctx, seq,
         record({"c": F("int64", [1])},
                {"s": FL(F("int64", [1, 2]), F("int64", [3]))}),
         "record 1: feature list 's' step 1 has 1 values, expected 2"),
        ("step without a list", ctx, seq,
         record({"c": F("int64", [1])}, {"s": FL(F(None, []))}),
         "record 1: feature list 's' step 0 has 0 values, expected 2"),
        ("VarLen step of the wrong kind", ctx, var,
         record({"c": F("int64", [1])}, {"s": FL(F(None, []),
                                                 F("bytes", [b"x"]))}),
         "record 1: feature list 's' step 1 is a bytes_list, expected "
         "int64_list"),
        ("not a SequenceExample", ctx, seq, b"\x0a\x05ab",
         "record 1: not a valid tf.train.SequenceExample"),
    ]
    for name, c, s, bad, message in cases:
        serialized = [good, bad]
        try:
            tf.io.parse_sequence_example(
                tf.constant(serialized), context_features=tf_specs(tf, c),
                sequence_features=tf_specs(tf, s))
            fail("TF parsed the record with %s" % name)
        except tf.errors.InvalidArgumentError:
            pass
        path = os.path.join(args.work, "error.tfrecord")
        tf_write(tf, path, "", serialized)
        p = run_tool(args.tool, "--mode=read_sequence",
                     "--spec=" + json.dumps(c), "--sequence_spec=" +
                     json.dumps(s), path, expect_rc=1)
        err = p.stderr.strip()
        if "\n" in err or message not in err:
            fail("%s: estc said %r, expected %r" % (name, err, message))
    print("ok: %d kinds of bad records: TF and estc both refuse, estc naming "
          "the record and the feature" % len(cases), flush=True)


def tf_bucket(tf, config):
    lengths = config["lengths"]

    def gen():
        for i, n in enumerate(lengths):
            m = max(0, min(n, 64))
            yield {"length": n,
                   "tokens": [1000 * i + k for k in range(m)],
                   "feats": np.array([[i + k / 4, -k] for k in range(m)],
                                     dtype=np.float32).reshape(m, 2),
                   "name": ("e%d" % i).encode()}

    ds = tf.data.Dataset.from_generator(gen, output_signature={
        "length": tf.TensorSpec([], tf.int64),
        "tokens": tf.TensorSpec([None], tf.int64),
        "feats": tf.TensorSpec([None, 2], tf.float32),
        "name": tf.TensorSpec([], tf.string)})
    kwargs = {}
    if config.get("padding"):
        kwargs["padded_shapes"] = {"length": [], "tokens": [None],
                                   "feats": [None, 2], "name": []}
        kwargs["padding_values"] = {
            "length": np.int64(0), "tokens": np.int64(-1),
            "feats": np.float32(0.5), "name": b"pad"}
    ds = ds.bucket_by_sequence_length(
        lambda e: tf.cast(e["length"], tf.int32), config["boundaries"], config["batch_sizes"],
        pad_to_bucket_boundary=config.get("pad_to_bucket_boundary", False),
        no_padding=config.get("no_padding", False),
        drop_remainder=config.get("drop_remainder", False), **kwargs)
    batches, error = [], None
    it = iter(ds)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            break
        except tf.errors.InvalidArgumentError as e:
            error = str(e).splitlines()[0]
            break
        batches.append(canonical(tf, batch))
    return batches, error


def bucket_part(tf, args, rng):
    configs = []
    for trial in range(14):
        boundaries = sorted(rng.sample(range(1, 30), rng.randrange(0, 4)))
        sizes = [rng.randrange(1, 6) for _ in range(len(boundaries) + 1)]
        top = (boundaries[-1] if boundaries else 10) + 5
        config = {"lengths": [rng.randrange(0, top) for _ in
                              range(rng.randrange(0, 60))],
                  "boundaries": boundaries, "batch_sizes": sizes,
                  "padding": trial % 2 == 1,
                  "drop_remainder": trial % 3 == 2}
        configs.append(config)
    # The corners: lengths within the boundaries, padded to them; the same
    # and a length of the last bucket (TF raises when it is batched, after
    # the batches before it); no_padding on equal lengths; a boundary that
    # does not increase; a remainder of the last bucket dropped.
    configs.append({"lengths": [rng.randrange(0, 20) for _ in range(50)],
                    "boundaries": [5, 10, 20], "batch_sizes": [3, 2, 4, 1],
                    "padding": True, "pad_to_bucket_boundary": True})
    configs.append({"lengths": [1, 2, 7, 3, 4, 25, 6, 8, 9, 2, 3],
                    "boundaries": [5, 10, 20], "batch_sizes": [2, 2, 2, 1],
                    "padding": True, "pad_to_bucket_boundary": True})
    configs.append({"lengths": [1, 2, 25, 3], "boundaries": [5, 10, 20],
                    "batch_sizes": [2, 2, 2, 2], "padding": True,
                    "pad_to_bucket_boundary": True, "drop_remainder": True})
    configs.append({"lengths": [4] * 9, "boundaries": [3, 8],
                    "batch_sizes": [2, 4, 2], "no_padding": True})
    configs.append({"lengths": [rng.randrange(0, 12) for _ in range(40)],
                    "boundaries": [6, 3, 9], "batch_sizes": [2, 3, 4, 2],
                    "padding": True})
    configs.append({"lengths": [-3, 0, 1, 2, 1 << 20], "boundaries": [1],
                    "batch_sizes": [2, 2]})
    # A length in no bucket (2^31 - 1 and above): TF fails to look up its
    # batch size as the element arrives.
    configs.append({"lengths": [1, 2, 3, (1 << 31) - 1, 4],
                    "boundaries": [2], "batch_sizes": [1, 5]})
    batches_total = 0
    for n, config in enumerate(configs):
        want, tf_error = tf_bucket(tf, config)
        p = subprocess.run([args.tool, "--mode=bucket",
                            "--bucket=" + json.dumps(config)],
                           capture_output=True, text=True)
        got = [canonical_with_dtype(json.loads(line))
               for line in p.stdout.splitlines()]
        where = "bucket config %d %s" % (n, json.dumps(config)[:300])
        if (p.returncode != 0) != (tf_error is not None):
            fail("%s: TF %s, estc exit %d: %s" % (
                where, "raised " + tf_error if tf_error else "did not raise",
                p.returncode, p.stderr.strip()))
        if p.returncode not in (0, 1) or "\n" in p.stderr.strip():
            fail("%s: estc exit %d: %r" % (where, p.returncode, p.stderr))
        if len(want) != len(got):
            fail("%s: TF made %d batches, estc %d" % (where, len(want),
                                                     len(got)))
        for i, (w, g) in enumerate(zip(want, got)):
            compare("%s batch %d" % (where, i), w, g)
        batches_total += len(want)
    print("ok: bucket_by_sequence_length: %d configurations, %d batches as "
          "TF's" % (len(configs), batches_total), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seed", type=int, default=20150)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf
    except ImportError:
        print("SKIP: tensorflow cannot be imported")
        sys.exit(77)
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)
    parse_part(tf, args, rng)
    error_part(tf, args)
    bucket_part(tf, args, rng)
    print("PASS")


if __name__ == "__main__":
    main()
