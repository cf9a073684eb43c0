#!/usr/bin/env python3
"""TF 2.15's SignatureDefs of exported Estimators, as JSON (the oracle of
docs/design/saved-model.md's "Signatures" rules).

Exports, with tf.estimator, each model below after one training step, with
each receiver below, and writes what TF put in the SavedModel:

  models:    linear_binary    LinearClassifier(n_classes=2)
             linear_vocab3    LinearClassifier(n_classes=3,
                                               label_vocabulary=[a, b, c])
             linear_regressor LinearRegressor
             custom_predict   a model_fn with export_outputs
                              {"predict": PredictOutput({"score", "id"})}
  receivers: parsing          build_parsing_serving_input_receiver_fn(
                                  make_parse_example_spec(columns))
             raw              build_raw_serving_input_receiver_fn(
                                  age float [None, 1], color string [None, 1])
             parsing_alt      a parsing receiver with
                              receiver_tensors_alternatives {"raw": the
                              parsed features}
             raw_string       (classifiers) a raw receiver with one string
                              feature: TF's classify/regress rule is about
                              the receiver, not about its kind

Columns: numeric_column("age"), categorical_column_with_vocabulary_list(
"color", [red, green, blue]) (indicator_column of it for the custom
model_fn); raw_string uses "color" alone.

Output (--out FILE), per "<model>/<receiver>":
  {"signatures": {name: {"method_name": ...,
                          "inputs":  {alias: {"dtype", "shape", "tensor"}},
                          "outputs": {alias: {"dtype", "shape", "tensor"}}}},
   "excluded":   {name: TF's message}}
dtypes are lib/Tensor's names (F32, I64, I32, STRING), shapes lists with
-1 for an unknown dimension (null: unknown rank); "tensor" is TF's tensor
name, for reading only (estc names receiver tensors by their key).

The script also checks the rules the design doc states against what TF did
(--check, default on) and prints every difference; it exits 1 when a rule
is broken, 77 (ctest: skipped) when TensorFlow cannot be imported.

usage: tf_signatures_oracle.py --out signatures.json [--work DIR]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

DTYPES = {1: "F32", 2: "F64", 3: "I32", 7: "STRING", 9: "I64", 10: "BOOL"}

FEATURES = {"age": [[25.0], [40.0], [61.0], [33.0]],
            "color": [["red"], ["green"], ["blue"], ["red"]]}


def tensor_json(info):
    shape = (None if info.tensor_shape.unknown_rank else
             [d.size for d in info.tensor_shape.dim])
    return {"dtype": DTYPES.get(info.dtype, "DT_%d" % info.dtype),
            "shape": shape, "tensor": info.name}


def build_cases(tf):
    fc = tf.feature_column
    age = fc.numeric_column("age")
    color = fc.categorical_column_with_vocabulary_list(
        "color", ["red", "green", "blue"])
    columns = [age, color]

    def input_fn(labels):
        def fn():
            ds = tf.data.Dataset.from_tensor_slices(
                ({k: tf.constant(v) for k, v in FEATURES.items()},
                 tf.constant(labels)))
            return ds.batch(4).repeat()
        return fn

    def custom_model_fn(features, labels, mode):
        net = tf.compat.v1.feature_column.input_layer(
            features, [age, fc.indicator_column(color)])
        score = tf.compat.v1.layers.dense(net, 1)
        ident = tf.argmax(score, axis=1)
        predictions = {"score": score, "id": ident}
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(
                mode, predictions=predictions,
                export_outputs={
                    "predict": tf.estimator.export.PredictOutput(predictions)})
        loss = tf.reduce_mean(tf.square(score - labels))
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.01)
        train_op = opt.minimize(loss, tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def parsing():
        return tf.estimator.export.build_parsing_serving_input_receiver_fn(
            fc.make_parse_example_spec(columns))

    def raw():
        return tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"age": tf.constant([[1.0]]), "color": tf.constant([["red"]])})

    def raw_string():
        return tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"color": tf.constant([["red"]])})

    def parsing_alt():
        # Dense parsing, so that the parsed features are plain tensors a
        # client can feed instead (the "raw" alternative).
        spec = {"age": tf.io.FixedLenFeature([1], tf.float32),
                "color": tf.io.FixedLenFeature([1], tf.string)}

        def fn():
            serialized = tf.compat.v1.placeholder(
                tf.string, [None], name="input_example_tensor")
            features = tf.io.parse_example(serialized, spec)
            return tf.estimator.export.ServingInputReceiver(
                features, {"examples": serialized},
                receiver_tensors_alternatives={"raw": dict(features)})
        return fn

    models = {
        "linear_binary": (
            lambda d: tf.estimator.LinearClassifier(columns, model_dir=d),
            [[0], [1], [1], [0]], True),
        "linear_vocab3": (
            lambda d: tf.estimator.LinearClassifier(
                columns, model_dir=d, n_classes=3,
                label_vocabulary=["a", "b", "c"]),
            [["a"], ["b"], ["c"], ["a"]], True),
        "linear_regressor": (
            lambda d: tf.estimator.LinearRegressor(columns, model_dir=d),
            [[1.0], [2.0], [3.0], [4.0]], False),
        "custom_predict": (
            lambda d: tf.estimator.Estimator(custom_model_fn, model_dir=d),
            [[1.0], [2.0], [3.0], [4.0]], False),
    }
    receivers = {"parsing": parsing, "raw": raw, "parsing_alt": parsing_alt,
                 "raw_string": raw_string}
    return models, receivers, input_fn


def export_case(tf, make, labels, receiver_fn, input_fn, work):
    from tensorflow.python.saved_model.model_utils import export_utils
    from tensorflow.python.saved_model import loader_impl

    excluded = {}
    report = export_utils._log_signature_report

    def capture(signature_def_map, excluded_signatures):
        excluded.update(excluded_signatures)
        return report(signature_def_map, excluded_signatures)

    export_utils._log_signature_report = capture
    try:
        est = make(os.path.join(work, "model"))
        est.train(input_fn(labels), steps=1)
        path = est.export_saved_model(os.path.join(work, "export"),
                                      receiver_fn)
    finally:
        export_utils._log_signature_report = report
    saved = loader_impl.parse_saved_model(path.decode()
                                          if isinstance(path, bytes) else path)
    meta = saved.meta_graphs[0]
    signatures = {}
    for name, sig in meta.signature_def.items():
        signatures[name] = {
            "method_name": sig.method_name,
            "inputs": {k: tensor_json(v) for k, v in sig.inputs.items()},
            "outputs": {k: tensor_json(v) for k, v in sig.outputs.items()}}
    return {"signatures": signatures, "excluded": excluded}


def check_design_rules(results):
    """The design doc's table against TF: returns the differences."""
    problems = []
    for case, r in sorted(results.items()):
        model, receiver = case.split("/")
        for name, sig in r["signatures"].items():
            method = sig["method_name"]
            ins = list(sig["inputs"].values())
            one_string = len(ins) == 1 and ins[0]["dtype"] == "STRING"
            if method.endswith("/classify") or method.endswith("/regress"):
                if not one_string or list(sig["inputs"]) != ["inputs"]:
                    problems.append(f"{case} {name}: {method} with inputs "
                                    f"{sig['inputs']}")
            if method.endswith("/classify"):
                outs = sig["outputs"]
                if set(outs) - {"classes", "scores"}:
                    problems.append(f"{case} {name}: classify outputs "
                                    f"{sorted(outs)}")
                if "classes" in outs and outs["classes"]["dtype"] != "STRING":
                    problems.append(f"{case} {name}: classes dtype "
                                    f"{outs['classes']['dtype']}")
            if method.endswith("/regress") and set(sig["outputs"]) != {
                    "outputs"}:
                problems.append(f"{case} {name}: regress outputs "
                                f"{sorted(sig['outputs'])}")
            if ":" in name and not name.startswith("raw:"):
                problems.append(f"{case} {name}: alternative name")
        for name in r["excluded"]:
            if name in r["signatures"]:
                problems.append(f"{case} {name}: excluded and present")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--only", default=None,
                    help="comma-separated <model>/<receiver> cases")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # No stale output for signatures_compat when this run skips or fails.
    if os.path.exists(args.out):
        os.remove(args.out)
    try:
        import tensorflow as tf
        import tensorflow_estimator  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow (with tensorflow-estimator) is not "
              f"installed ({e})")
        return 77
    tf.get_logger().setLevel("ERROR")
    models, receivers, input_fn = build_cases(tf)
    only = set(args.only.split(",")) if args.only else None
    work = args.work or tempfile.mkdtemp(prefix="tf-signatures-")
    results = {}
    for model, (make, labels, is_classifier) in models.items():
        for receiver, receiver_fn in receivers.items():
            if receiver == "raw_string" and not is_classifier:
                continue
            case = f"{model}/{receiver}"
            if only and case not in only:
                continue
            d = os.path.join(work, model, receiver)
            shutil.rmtree(d, ignore_errors=True)
            if receiver == "raw_string":
                # The estimator must only need "color".
                fc = tf.feature_column
                color = fc.categorical_column_with_vocabulary_list(
                    "color", ["red", "green", "blue"])
                n = 3 if model == "linear_vocab3" else 2
                vocab = ["a", "b", "c"] if n == 3 else None

                def make_one(dd, n=n, vocab=vocab, color=color):
                    return tf.estimator.LinearClassifier(
                        [color], model_dir=dd, n_classes=n,
                        label_vocabulary=vocab)
                results[case] = export_case(tf, make_one, labels,
                                            receiver_fn(), input_fn, d)
            else:
                results[case] = export_case(tf, make, labels, receiver_fn(),
                                            input_fn, d)
            print(f"{case}: {sorted(results[case]['signatures'])} excluded "
                  f"{sorted(results[case]['excluded'])}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    problems = check_design_rules(results)
    for p in problems:
        print("DIFFERENCE:", p)
    print(f"wrote {args.out}: {len(results)} exports, "
          f"{len(problems)} differences from the design's rules")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
