#!/usr/bin/env python3
"""TF 2.15's SavedModel signature call at batch 1: the peer of estc's
serving::SavedModel::run in bench/serving.sh.

Usage:
  python3 bench/tf_serving_peer.py --mlp_export DIR --out DIR
      [--census FILE.csv] [--calls 5000] [--warmup 500]

mlp: the same MLP as serving_bench's (dense 784-256 relu, 256-256 relu,
  256-10, softmax) with the SAME WEIGHTS, read from estc's export
  (DIR/variables.safetensors: "dense/kernel", "dense/bias", "dense_1/...",
  "dense_2/..."; read with numpy: an 8-byte little-endian header length, a
  JSON header of name -> dtype, shape, data_offsets, then the data). A
  tf.Module whose tf.function takes x float32 [None, 784] and returns
  probabilities and classes is saved with tf.saved_model.save as the
  serving_default signature, loaded back with tf.saved_model.load, and its
  signature is checked against estc's probabilities of the same 8 inputs
  (OUT/mlp_check.json, written by serving_bench) within 1e-5.
wide_deep (with --census): TF's own DNNLinearCombinedClassifier over the
  columns of tf_canned_bench.py, trained 200 steps of batch 40 on the
  census CSV, exported with export_saved_model and a parsing receiver
  (make_parse_example_spec of its columns), loaded with
  tf.saved_model.load; its serving_default (classify) signature gets the
  one example of OUT/wide_deep_classify.json, serialized. Its weights are
  TF's own (not estc's): compare latency only.

Timing: the signature call with a prebuilt input tensor (no conversion of
the input or output inside the timed call), `warmup` calls, then `calls`
calls timed one by one: p50, p99, mean in microseconds. TF's default
threading (intra- and inter-op pools of the machine's cores).
Output: one JSON line per model,
  {"peer": "tf", "model", "p50_us", "p99_us", "mean_us", "calls",
   "max_abs_diff" (mlp), "weights": "estc's" | "TF's own"}
Prints `SKIP <reason>` and exits 0 when tensorflow cannot be imported.
"""

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SAFETENSORS_DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path):
    """name -> numpy array, from a safetensors file."""
    import numpy as np
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(
            data[begin:end], dtype=SAFETENSORS_DTYPES[info["dtype"]]).reshape(
                info["shape"])
    return out


def time_calls(f, calls, warmup):
    for _ in range(warmup):
        f()
    us = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        f()
        us.append((time.perf_counter_ns() - start) / 1000.0)
    mean = sum(us) / len(us)
    us.sort()
    return {"p50_us": round(us[len(us) // 2], 2),
            "p99_us": round(us[min(len(us) - 1, int(0.99 * len(us)))], 2),
            "mean_us": round(mean, 2), "calls": calls}


def mlp(tf, args, tmp):
    import numpy as np
    w = read_safetensors(os.path.join(args.mlp_export,
                                      "variables.safetensors"))

    class Mlp(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [(tf.Variable(w[f"{n}/kernel"]),
                            tf.Variable(w[f"{n}/bias"]))
                           for n in ("dense", "dense_1", "dense_2")]

        @tf.function(input_signature=[
            tf.TensorSpec([None, 784], tf.float32, name="x")])
        def serve(self, x):
            h = x
            for i, (kernel, bias) in enumerate(self.layers):
                h = tf.matmul(h, kernel) + bias
                if i < 2:
                    h = tf.nn.relu(h)
            return {"probabilities": tf.nn.softmax(h),
                    "classes": tf.argmax(h, axis=1)}

    module = Mlp()
    path = os.path.join(tmp, "mlp")
    tf.saved_model.save(module, path,
                        signatures={"serving_default": module.serve})
    loaded = tf.saved_model.load(path)
    sig = loaded.signatures["serving_default"]

    check = json.load(open(os.path.join(args.out, "mlp_check.json")))
    got = sig(x=tf.constant(np.array(check["x"], np.float32)))
    diff = float(np.max(np.abs(got["probabilities"].numpy() -
                               np.array(check["probabilities"], np.float32))))
    x = tf.constant(np.array(check["x"][:1], np.float32))
    result = {"peer": "tf", "model": "mlp"}
    result.update(time_calls(lambda: sig(x=x), args.calls, args.warmup))
    result.update({"max_abs_diff": diff, "equal_1e-5": diff <= 1e-5,
                   "weights": "estc's"})
    return result


def example_proto(tf, features):
    """A tf.train.Example of a JSON example (floats, strings)."""
    feature = {}
    for key, value in features.items():
        if isinstance(value, str):
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[value.encode()]))
        else:
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(
                value=[float(value)]))
    return tf.train.Example(features=tf.train.Features(
        feature=feature)).SerializeToString()


def wide_deep(tf, args, tmp):
    import tf_canned_bench as canned
    wide, deep = canned.feature_columns(tf)
    est = tf.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=wide, dnn_feature_columns=deep,
        dnn_hidden_units=canned.HIDDEN_UNITS,
        linear_optimizer=tf.keras.optimizers.legacy.Ftrl(learning_rate=0.2),
        dnn_optimizer=tf.keras.optimizers.legacy.Adagrad(learning_rate=0.05),
        config=tf.estimator.RunConfig(model_dir=os.path.join(tmp, "wd"),
                                      tf_random_seed=1))
    est.train(lambda: canned.input_fn(tf, args.census, True, 1, os.cpu_count()),
              steps=200)
    spec = tf.feature_column.make_parse_example_spec(wide + deep)
    export = est.export_saved_model(
        os.path.join(tmp, "wd_export"),
        tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
    loaded = tf.saved_model.load(export)
    sig = loaded.signatures["serving_default"]
    request = json.load(open(os.path.join(args.out,
                                          "wide_deep_classify.json")))
    inputs = tf.constant([example_proto(tf, request["examples"][0])])
    sig(inputs=inputs)  # a bad input fails here, untimed
    result = {"peer": "tf", "model": "wide_deep"}
    result.update(time_calls(lambda: sig(inputs=inputs), args.calls,
                             args.warmup))
    result["weights"] = "TF's own"
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlp_export", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--census")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--warmup", type=int, default=500)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError as e:
        print(f"SKIP tensorflow cannot be imported: {e}")
        return 0
    tf.get_logger().setLevel("ERROR")
    tmp = tempfile.mkdtemp(prefix="tf_serving_peer_")
    try:
        print(json.dumps(mlp(tf, args, tmp)), flush=True)
        if args.census:
            print(json.dumps(wide_deep(tf, args, tmp)), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
