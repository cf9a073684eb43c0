#!/usr/bin/env python3
"""estc's TFRecord files and tf.train.Example parsing against TensorFlow's.

  1. TF writes TFRecord files of Examples (plain, GZIP, ZLIB) with bytes,
     int64 and float features, varying counts, empty lists and missing
     features; estc (records_tool --mode=read) parses them with a spec of
     every kind, and TF's tf.io.parse_example parses them with the same
     spec: the values must be identical (floats bit for bit).
  2. estc (records_tool --mode=write) writes Examples (plain, GZIP, ZLIB);
     TF's TFRecordDataset + parse_example read the values estc was given,
     and tf.train.Example.FromString the same features. The plain file is
     byte for byte what tf.io.TFRecordWriter writes for the same records.
  3. Records TF refuses (a feature of the wrong kind, a required feature
     missing, a wrong count) are errors in estc too, naming the record and
     the feature.

usage: tf_records_compat.py --tool=records_tool --work=DIR [--bench]
Exits 77 (ctest: skipped), printing SKIP, when tensorflow cannot be
imported. --bench also times estc's parse_example against TF's on the same
records (not part of the test).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

COMPRESSIONS = ["", "GZIP", "ZLIB"]


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def f32(x):
    """x rounded to float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def random_examples(rng, n):
    """Feature dicts: {name: (kind, values)}, kind 'int64' | 'float' |
    'bytes'; a missing feature is absent."""
    out = []
    for i in range(n):
        ex = {"id": ("int64", [rng.choice([i, -i, (1 << 62) + i, -(1 << 40)])])}
        if rng.random() < 0.7:
            ex["score"] = ("float", [f32(rng.uniform(-5, 5)) for _ in range(2)])
        if rng.random() < 0.8:
            ex["tags"] = ("bytes", [bytes(rng.randrange(256) for _ in
                                          range(rng.randrange(4)))
                                    for _ in range(rng.randrange(5))])
        if rng.random() < 0.8:
            ex["weights"] = ("float", [f32(rng.uniform(-1e6, 1e6))
                                       for _ in range(rng.randrange(4))])
        if rng.random() < 0.8:
            ex["ids"] = ("int64", [rng.randrange(-(1 << 63), 1 << 63)
                                   for _ in range(rng.randrange(4))])
        if rng.random() < 0.8:
            ex["emb"] = ("float", [f32(rng.uniform(-1, 1))
                                   for _ in range(3 * rng.randrange(4))])
        if rng.random() < 0.6:
            ex["label"] = ("bytes", [rng.choice([b"cat", b"dog", b"\xff\x00"])])
        if rng.random() < 0.5:
            ex["extra"] = ("int64", [1, 2, 3])
        out.append(ex)
    return out


# The spec, for estc (records_tool's JSON) and for TF.
SPEC_JSON = {
    "id": {"kind": "fixed", "dtype": "int64", "shape": []},
    "score": {"kind": "fixed", "dtype": "float", "shape": [2],
              "default": [0.5, -1.0]},
    "tags": {"kind": "var", "dtype": "string"},
    "weights": {"kind": "var", "dtype": "float"},
    "ids": {"kind": "var", "dtype": "int64"},
    "emb": {"kind": "seq", "dtype": "float", "shape": [3],
            "allow_missing": True, "default": -1.0},
    "label": {"kind": "fixed", "dtype": "string", "shape": [],
              "default": "none"},
}


def tf_spec(tf):
    return {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.5, -1.0]),
        "tags": tf.io.VarLenFeature(tf.string),
        "weights": tf.io.VarLenFeature(tf.float32),
        "ids": tf.io.VarLenFeature(tf.int64),
        "emb": tf.io.FixedLenSequenceFeature([3], tf.float32, allow_missing=True,
                                             default_value=-1.0),
        "label": tf.io.FixedLenFeature([], tf.string, default_value="none"),
    }


def to_tf_example(tf, ex):
    feature = {}
    for name, (kind, values) in ex.items():
        if kind == "int64":
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        elif kind == "float":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def tf_write(tf, path, compression, serialized):
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(
            compression_type=compression)) as w:
        for s in serialized:
            w.write(s)


def tf_read(tf, path, compression):
    return [r.numpy() for r in tf.data.TFRecordDataset(
        path, compression_type=compression)]


def run_tool(tool, *args, expect_rc=0):
    p = subprocess.run([tool] + list(args), capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail("%s exited %d (expected %d):\n%s%s" % (
            " ".join([tool] + list(args))[:300], p.returncode, expect_rc,
            p.stdout[-2000:], p.stderr[-2000:]))
    return p


def canonical_tf(parsed):
    """TF's parse_example output as records_tool's JSON has it."""
    def values(array):
        flat = array.reshape(-1).tolist()
        if array.dtype.kind == "O" or array.dtype.kind == "S":
            return [v.hex() for v in flat]
        if array.dtype.kind == "f":
            return [f32(v) for v in flat]
        return [int(v) for v in flat]

    out = {}
    for name, t in parsed.items():
        if hasattr(t, "indices"):
            out[name] = {"indices": t.indices.numpy().tolist(),
                         "values": values(t.values.numpy()),
                         "dense_shape": t.dense_shape.numpy().tolist()}
        else:
            a = t.numpy()
            out[name] = {"shape": list(a.shape), "values": values(a)}
    return out


def canonical_estc(doc):
    out = {}
    for name, v in doc.items():
        vals = v["values"]
        if v["dtype"] == "F32":
            vals = [f32(float(x)) for x in vals]
        if "indices" in v:
            out[name] = {"indices": v["indices"], "values": vals,
                         "dense_shape": v["dense_shape"]}
        else:
            out[name] = {"shape": v["shape"], "values": vals}
    return out


def compare(where, want, got):
    if set(want) != set(got):
        fail("%s: features %s vs %s" % (where, sorted(want), sorted(got)))
    for name in sorted(want):
        if want[name] != got[name]:
            fail("%s: feature '%s' differs:\n  TF:   %s\n  estc: %s" % (
                where, name, json.dumps(want[name])[:1500],
                json.dumps(got[name])[:1500]))


def tf_writes_estc_reads(tf, args, rng):
    examples = random_examples(rng, 60)
    # Make sure every corner appears at least once.
    examples[0].pop("score", None)
    examples[1]["tags"] = ("bytes", [])
    examples[2].pop("tags", None)
    examples[3]["emb"] = ("float", [])
    examples[4].pop("emb", None)
    serialized = [to_tf_example(tf, ex).SerializeToString() for ex in examples]
    want = canonical_tf(tf.io.parse_example(tf.constant(serialized), tf_spec(tf)))
    spec = json.dumps(SPEC_JSON)
    for c in COMPRESSIONS:
        path = os.path.join(args.work, "tf-written-%s.tfrecord" % (c or "plain"))
        tf_write(tf, path, c, serialized)
        got = canonical_estc(json.loads(run_tool(
            args.tool, "--mode=read", "--compression=" + (c or "NONE"), "--spec=" + spec,
            path).stdout))
        compare("TF-written %s file" % (c or "plain"), want, got)
        print("ok: TF wrote %d Examples (%s), estc parses TF's values"
              % (len(serialized), c or "plain"), flush=True)
    return serialized


def estc_writes_tf_reads(tf, args, rng):
    examples = random_examples(rng, 40)
    examples[0] = {"id": ("int64", [7])}  # every optional feature missing
    doc_text = examples_json(examples)
    expected = [to_tf_example(tf, ex) for ex in examples]
    want = canonical_tf(tf.io.parse_example(
        tf.constant([e.SerializeToString() for e in expected]), tf_spec(tf)))
    for c in COMPRESSIONS:
        path = os.path.join(args.work, "estc-written-%s.tfrecord" % (c or "plain"))
        run_tool(args.tool, "--mode=write", "--compression=" + (c or "NONE"),
                 "--examples=" + doc_text, path)
        records = tf_read(tf, path, c)
        if len(records) != len(examples):
            fail("TF reads %d records from estc's %s file, not %d"
                 % (len(records), c or "plain", len(examples)))
        for i, (r, e) in enumerate(zip(records, expected)):
            if tf.train.Example.FromString(r) != e:
                fail("record %d of estc's %s file: TF's Example differs"
                     % (i, c or "plain"))
        compare("estc-written %s file" % (c or "plain"), want,
                canonical_tf(tf.io.parse_example(tf.constant(records),
                                                  tf_spec(tf))))
        if c == "":
            again = os.path.join(args.work, "tf-rewritten.tfrecord")
            tf_write(tf, again, "", records)
            with open(path, "rb") as a, open(again, "rb") as b:
                if a.read() != b.read():
                    fail("estc's plain TFRecord file is not what TF writes")
        print("ok: estc wrote %d Examples (%s), TF reads the same values"
              % (len(examples), c or "plain"), flush=True)


def examples_json(examples):
    """records_tool's --examples: numbers as JSON number literals (floats
    with 9 digits: exact for float32), bytes in hex."""
    docs = []
    for ex in examples:
        fields = []
        for name, (kind, values) in ex.items():
            if kind == "bytes":
                key, body = "bytes_hex", [json.dumps(v.hex()) for v in values]
            elif kind == "float":
                key, body = "float", ["%.9g" % v for v in values]
            else:
                key, body = "int64", [str(v) for v in values]
            fields.append("%s: {%s: [%s]}" % (json.dumps(name), json.dumps(key),
                                               ", ".join(body)))
        docs.append("{" + ", ".join(fields) + "}")
    return "[" + ", ".join(docs) + "]"


def errors_agree(tf, args):
    good = {"id": ("int64", [1])}
    cases = [
        ({"id": ("float", [1.5])},
         "record 2: feature 'id' is a float_list, expected int64_list"),
        ({"score": ("float", [1.0])},
         "record 2: feature 'id' is required but missing (no default_value)"),
        ({"id": ("int64", [1]), "score": ("float", [1.0, 2.0, 3.0])},
         "record 2: feature 'score' has 3 values, expected 2 for shape [2]"),
        ({"id": ("int64", [1]), "emb": ("float", [1.0, 2.0])},
         "record 2: feature 'emb' has 2 values, not a multiple of 3 (steps of "
         "shape [3])"),
    ]
    for bad, message in cases:
        serialized = [to_tf_example(tf, e).SerializeToString()
                      for e in (good, good, bad, good)]
        try:
            tf.io.parse_example(tf.constant(serialized), tf_spec(tf))
            fail("TF parses a record estc must refuse: %s" % message)
        except tf.errors.InvalidArgumentError:
            pass
        path = os.path.join(args.work, "bad.tfrecord")
        tf_write(tf, path, "", serialized)
        p = run_tool(args.tool, "--mode=read", "--spec=" + json.dumps(SPEC_JSON),
                     path, expect_rc=1)
        if p.stderr.strip() != "records_tool: error: " + message:
            fail("estc's error: %r, expected %r" % (p.stderr.strip(), message))
    print("ok: %d kinds of bad records are errors in both" % len(cases),
          flush=True)


def criteo_like(rng, n):
    """Examples like Criteo's: a label, 13 int64 and 26 bytes scalars, a
    few of them missing (defaults)."""
    out = []
    for _ in range(n):
        ex = {"label": ("int64", [rng.randrange(2)])}
        for i in range(1, 14):
            if rng.random() < 0.9:
                ex["I%d" % i] = ("int64", [rng.randrange(1000)])
        for i in range(1, 27):
            if rng.random() < 0.9:
                ex["C%d" % i] = ("bytes", [b"%08x" % rng.randrange(1 << 32)])
        out.append(ex)
    spec_json = {"label": {"kind": "fixed", "dtype": "int64", "shape": []}}
    for i in range(1, 14):
        spec_json["I%d" % i] = {"kind": "fixed", "dtype": "int64",
                                "shape": [], "default": 0}
    for i in range(1, 27):
        spec_json["C%d" % i] = {"kind": "fixed", "dtype": "string",
                                "shape": [], "default": ""}
    return out, spec_json


def criteo_tf_spec(tf):
    spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
    for i in range(1, 14):
        spec["I%d" % i] = tf.io.FixedLenFeature([], tf.int64, default_value=0)
    for i in range(1, 27):
        spec["C%d" % i] = tf.io.FixedLenFeature([], tf.string, default_value="")
    return spec


def bench(tf, args, rng):
    """records/s of estc's parse_example and TF's (tf.data, batched; and
    the op alone), one thread each, on two kinds of Examples."""
    mixed = random_examples(rng, 2048)
    criteo, criteo_spec = criteo_like(rng, 2048)
    cases = [("mixed (every spec kind)", mixed, SPEC_JSON, tf_spec(tf)),
             ("Criteo-like (40 scalars)", criteo, criteo_spec,
              criteo_tf_spec(tf))]
    batch = 256
    for title, examples, spec_json, spec in cases:
        serialized = [to_tf_example(tf, ex).SerializeToString()
                      for ex in examples]
        path = os.path.join(args.work, "bench-%d.tfrecord" % len(spec_json))
        tf_write(tf, path, "", serialized)
        out = json.loads(run_tool(
            args.tool, "--mode=bench", "--batch_size=%d" % batch,
            "--seconds=3", "--spec=" + json.dumps(spec_json), path).stdout)
        ds = tf.data.TFRecordDataset(path).batch(batch).cache()
        ds = ds.map(lambda s: tf.io.parse_example(s, spec),
                    num_parallel_calls=1, deterministic=True)
        options = tf.data.Options()
        options.threading.private_threadpool_size = 1
        ds = ds.with_options(options)
        for _ in ds:  # warm the cache and the graph
            pass
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 3:
            for _ in ds:
                n += batch
        tf_rate = n / (time.perf_counter() - start)
        parse = tf.function(lambda s: tf.io.parse_example(s, spec))
        batches = [tf.constant(serialized[i:i + batch])
                   for i in range(0, len(serialized), batch)]
        for b in batches:
            parse(b)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < 3:
            for b in batches:
                parse(b)
                n += int(b.shape[0])
        op_rate = n / (time.perf_counter() - start)
        print("bench: %s: %d Examples of %d bytes on average, batches of %d"
              % (title, len(serialized),
                 sum(map(len, serialized)) // len(serialized), batch))
        print("bench:   estc parse_example      %9.0f records/s"
              % out["records_per_s"])
        print("bench:   TF tf.data map(parse)   %9.0f records/s  (estc %.1fx)"
              % (tf_rate, out["records_per_s"] / tf_rate))
        print("bench:   TF parse_example op     %9.0f records/s  (estc %.1fx)"
              % (op_rate, out["records_per_s"] / op_rate), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--bench", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except Exception as e:  # ImportError, or a broken installation
        print("SKIP: tensorflow cannot be imported (%s)" % e)
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = random.Random(args.seed)
    tf_writes_estc_reads(tf, args, rng)
    estc_writes_tf_reads(tf, args, rng)
    errors_agree(tf, args)
    if args.bench:
        bench(tf, args, rng)
    print("PASS: estc's TFRecord files and Example parsing agree with "
          "TensorFlow %s" % tf.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
