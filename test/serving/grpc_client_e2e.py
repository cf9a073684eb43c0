"""estc-serve's gRPC API with TF Serving's official Python client (issue 32).

    grpc_client_e2e.py ESTC_SERVE SERVE_TEST_EXPORTS WORK_DIR

serve_test_exports trains and exports test/serving/TestExports.h's models
(tiny: a custom model_fn, a raw receiver; linear: a LinearClassifier with a
parsing receiver and a version label); estc-serve serves them with its REST
API and, with --port, its gRPC API on free loopback ports. Every gRPC call
of tensorflow-serving-api (PredictionService: Predict row and columnar,
Classify, Regress, MultiInference, GetModelMetadata; ModelService:
GetModelStatus) must answer what the REST API answers to the same request
(by version and by label too), and bad requests get TF Serving's gRPC
status codes: NOT_FOUND for an unknown model or version, INVALID_ARGUMENT
for an unknown label, a bad input name, a wrong dtype or shape. Last,
ModelService's HandleReloadConfigRequest drops a model (both APIs then
answer NOT_FOUND for it) and refuses a config without a base path.

Exit 77 (ctest SKIP) when tensorflow-serving-api (with grpcio and TF) is
not importable: `python3 -m pip install --no-deps
tensorflow-serving-api==2.15.1` next to TF 2.15.1.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

try:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.example import example_pb2
    from tensorflow.core.framework import types_pb2
    from tensorflow_serving.apis import (classification_pb2,
                                         get_model_metadata_pb2,
                                         get_model_status_pb2, inference_pb2,
                                         model_service_pb2_grpc, predict_pb2,
                                         prediction_service_pb2_grpc,
                                         regression_pb2)
except ImportError as e:
    print("SKIP: tensorflow-serving-api is not importable (%s)" % e)
    sys.exit(77)


def fail(message):
    print("FAIL: " + message)
    log = os.path.join(WORK, "serve.log")
    if os.path.exists(log):
        print(open(log).read())
    sys.exit(1)


def rest(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data),
                                    timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def rest_ok(url, body=None):
    status, answer = rest(url, body)
    if status != 200:
        fail("REST %s: HTTP %d %s" % (url, status, answer))
    return answer


def spec(message, name, version=None, label=None, signature=None):
    message.model_spec.name = name
    if version is not None:
        message.model_spec.version.value = version
    if label is not None:
        message.model_spec.version_label = label
    if signature is not None:
        message.model_spec.signature_name = signature
    return message


def tf_example(features):
    e = example_pb2.Example()
    for key, value in features.items():
        f = e.features.feature[key]
        if isinstance(value, str):
            f.bytes_list.value.append(value.encode())
        elif isinstance(value, int):
            f.int64_list.value.append(value)
        else:
            f.float_list.value.append(value)
    return e


def expect_error(what, code, call, request, needle=""):
    try:
        call(request, timeout=30)
    except grpc.RpcError as e:
        if e.code() != code or needle not in e.details() or \
                "\n" in e.details():
            fail("%s: %s %r, expected %s with %r" %
                 (what, e.code(), e.details(), code, needle))
        return e.details()
    fail("%s: no error, expected %s" % (what, code))


def text(value):
    """A DT_STRING output's bytes as REST's JSON strings."""
    if value.dtype != object:
        return value
    return np.vectorize(lambda b: b.decode(), otypes=[object])(value)


def same(what, got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != object:
        want = want.astype(got.dtype)
    if got.shape != want.shape or not np.array_equal(got, want):
        fail("%s: gRPC %s != REST %s" % (what, got.tolist(), want.tolist()))


def signatures_of(sig_map):
    """A SignatureDefMap (gRPC) as REST's metadata JSON reads."""
    out = {}
    for name, sig in sig_map.signature_def.items():
        def infos(m):
            return {k: (v.name, v.dtype, [d.size for d in v.tensor_shape.dim])
                    for k, v in m.items()}
        out[name] = (sig.method_name, infos(sig.inputs), infos(sig.outputs))
    return out


def rest_signatures(meta):
    """REST's metadata JSON as signatures_of reads a SignatureDefMap."""
    out = {}
    for name, sig in meta["metadata"]["signature_def"]["signature_def"].items():
        def infos(m):
            return {k: (v["name"], types_pb2.DataType.Value(v["dtype"]),
                        [int(d["size"]) for d in v["tensor_shape"]["dim"]])
                    for k, v in m.items()}
        out[name] = (sig["method_name"], infos(sig["inputs"]),
                     infos(sig["outputs"]))
    return out


def main():
    global WORK
    serve, exports, WORK = sys.argv[1:4]
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    subprocess.run([exports, WORK], check=True, stdout=subprocess.DEVNULL)
    tiny_v = int(os.listdir(WORK + "/tiny")[0])
    linear_v = int(os.listdir(WORK + "/linear")[0])
    with open(WORK + "/models.config", "w") as f:
        f.write('model_config_list {\n'
                '  config { name: "tiny" base_path: "%s/tiny" }\n'
                '  config { name: "linear" base_path: "%s/linear"\n'
                '           version_labels { key: "stable" value: %d } }\n'
                '}\n' % (WORK, WORK, linear_v))
    server = subprocess.Popen(
        [serve, "--model_config_file=" + WORK + "/models.config",
         "--rest_api_port=0", "--rest_api_host=127.0.0.1", "--port=0",
         "--port_file=" + WORK + "/port",
         "--grpc_port_file=" + WORK + "/grpc_port"],
        stderr=open(WORK + "/serve.log", "w"))
    try:
        for _ in range(400):
            if all(os.path.exists(WORK + p) and os.path.getsize(WORK + p)
                   for p in ("/port", "/grpc_port")):
                break
            time.sleep(0.05)
        else:
            fail("estc-serve wrote no ports")
        url = "http://127.0.0.1:%s/v1/models/" % open(
            WORK + "/port").read().strip()
        channel = grpc.insecure_channel(
            "127.0.0.1:" + open(WORK + "/grpc_port").read().strip())
        predict = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        checks = check(url, predict, models, tiny_v, linear_v)
        print("gRPC answers equal REST's: " + ", ".join(checks))
    finally:
        server.send_signal(signal.SIGTERM)
        if server.wait(timeout=30) != 0:
            fail("estc-serve exited %d on SIGTERM" % server.returncode)
    return 0


def check(url, predict, models, tiny_v, linear_v):
    done = []
    # GetModelMetadata: the signatures REST's metadata lists.
    req = spec(get_model_metadata_pb2.GetModelMetadataRequest(), "tiny")
    req.metadata_field.append("signature_def")
    meta = predict.GetModelMetadata(req, timeout=30)
    sig_map = get_model_metadata_pb2.SignatureDefMap()
    meta.metadata["signature_def"].Unpack(sig_map)
    rest_meta = rest_ok(url + "tiny/metadata")
    if signatures_of(sig_map) != rest_signatures(rest_meta) or \
            meta.model_spec.version.value != tiny_v:
        fail("metadata: %s != %s" % (signatures_of(sig_map),
                                     rest_signatures(rest_meta)))
    tiny_sig = sig_map.signature_def["serving_default"]
    (x_name, x_info), = tiny_sig.inputs.items()
    req = spec(get_model_metadata_pb2.GetModelMetadataRequest(), "linear",
               label="stable")
    req.metadata_field.append("signature_def")
    linear_map = get_model_metadata_pb2.SignatureDefMap()
    predict.GetModelMetadata(req, timeout=30).metadata[
        "signature_def"].Unpack(linear_map)
    if signatures_of(linear_map) != rest_signatures(
            rest_ok(url + "linear/labels/stable/metadata")):
        fail("linear metadata differs")
    done.append("GetModelMetadata")

    # Predict, row and columnar, newest and by version.
    rows = [[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, -3.0, 0.0],
            [0.0, 0.0, 0.0, 1.0]]
    for version, path in ((None, "tiny"),
                          (tiny_v, "tiny/versions/%d" % tiny_v)):
        req = spec(predict_pb2.PredictRequest(), "tiny", version=version)
        req.inputs[x_name].CopyFrom(
            tf.make_tensor_proto(np.array(rows, np.float32)))
        got = predict.Predict(req, timeout=30)
        if got.model_spec.version.value != tiny_v or \
                got.model_spec.signature_name != "serving_default":
            fail("Predict model_spec: %s" % got.model_spec)
        outputs = {k: tf.make_ndarray(v) for k, v in got.outputs.items()}
        row = rest_ok(url + path + ":predict", {"instances": rows})
        preds = row["predictions"]
        for name, value in outputs.items():
            want = [p[name] for p in preds] if len(outputs) > 1 else preds
            same("Predict row " + name, text(value), want)
        col = rest_ok(url + path + ":predict", {"inputs": {x_name: rows}})
        for name, value in outputs.items():
            want = col["outputs"][name] if len(outputs) > 1 else \
                col["outputs"]
            same("Predict columnar " + name, text(value), want)
    done.append("Predict (row, columnar, version)")

    # Classify and Regress on linear's signatures, by label.
    context = {"x2": 0.5}
    rest_examples = [{"x1": 0.9, "color": "red"},
                     {"x1": -0.8, "color": "blue"}]
    by_method = {}
    for name, sig in linear_map.signature_def.items():
        by_method.setdefault(sig.method_name, name)
    cls_sig = by_method["tensorflow/serving/classify"]
    req = spec(classification_pb2.ClassificationRequest(), "linear",
               label="stable", signature=cls_sig)
    lwc = req.input.example_list_with_context
    lwc.context.CopyFrom(tf_example(context))
    for e in rest_examples:
        lwc.examples.add().CopyFrom(tf_example(e))
    got = predict.Classify(req, timeout=30)
    want = rest_ok(url + "linear/labels/stable:classify",
                   {"signature_name": cls_sig, "context": context,
                    "examples": rest_examples})["results"]
    got_cls = [[[c.label, c.score] for c in r.classes]
               for r in got.result.classifications]
    if [[c[0] for c in r] for r in got_cls] != \
            [[c[0] for c in r] for r in want]:
        fail("Classify labels: %s != %s" % (got_cls, want))
    same("Classify scores", np.array([[c[1] for c in r] for r in got_cls],
                                     np.float32),
         [[c[1] for c in r] for r in want])
    if got.model_spec.version.value != linear_v:
        fail("Classify model_spec: %s" % got.model_spec)
    done.append("Classify (label)")

    tasks = [("tensorflow/serving/classify", cls_sig)]
    reg_sig = by_method.get("tensorflow/serving/regress")
    if reg_sig:
        req = spec(regression_pb2.RegressionRequest(), "linear",
                   version=linear_v, signature=reg_sig)
        req.input.CopyFrom(lwc_input(context, rest_examples))
        got_reg = predict.Regress(req, timeout=30)
        want = rest_ok(url + "linear/versions/%d:regress" % linear_v,
                       {"signature_name": reg_sig, "context": context,
                        "examples": rest_examples})["results"]
        same("Regress", np.array([r.value for r in
                                  got_reg.result.regressions], np.float32),
             want)
        tasks.append(("tensorflow/serving/regress", reg_sig))
        done.append("Regress (version)")
    else:
        print("note: linear has no regress signature; Regress not compared")

    # MultiInference: each task's result is the single call's.
    req = inference_pb2.MultiInferenceRequest()
    for method, sig in tasks:
        t = req.tasks.add()
        t.model_spec.name = "linear"
        t.model_spec.signature_name = sig
        t.method_name = method
    req.input.CopyFrom(lwc_input(context, rest_examples))
    multi = predict.MultiInference(req, timeout=30)
    if multi.results[0].classification_result != got.result:
        fail("MultiInference classify: %s != %s" %
             (multi.results[0].classification_result, got.result))
    if reg_sig and multi.results[1].regression_result != got_reg.result:
        fail("MultiInference regress differs")
    done.append("MultiInference")

    # GetModelStatus, as REST's GET /v1/models/NAME.
    for name, label in (("tiny", None), ("linear", "stable")):
        req = spec(get_model_status_pb2.GetModelStatusRequest(), name,
                   label=label)
        got = models.GetModelStatus(req, timeout=30)
        want = rest_ok(url + name + ("/labels/stable" if label else ""))
        code_names = {c.value[0]: c.name for c in grpc.StatusCode}
        mine = [(str(s.version),
                 get_model_status_pb2.ModelVersionStatus.State.Name(s.state),
                 code_names[s.status.error_code], s.status.error_message)
                for s in got.model_version_status]
        theirs = [(s["version"], s["state"], s["status"]["error_code"],
                   s["status"]["error_message"])
                  for s in want["model_version_status"]]
        if mine != theirs:
            fail("GetModelStatus %s: %s != %s" % (name, mine, theirs))
    done.append("GetModelStatus")

    # Errors and their codes.
    C = grpc.StatusCode

    def tiny_request(name="tiny", version=None, label=None, tensor=None,
                     alias=None):
        req = spec(predict_pb2.PredictRequest(), name, version=version,
                   label=label)
        req.inputs[alias or x_name].CopyFrom(
            tensor if tensor is not None else
            tf.make_tensor_proto(np.array(rows, np.float32)))
        return req
    errors = [
        expect_error("unknown model", C.NOT_FOUND, predict.Predict,
                     tiny_request("nope"), "Latest(nope)"),
        expect_error("unknown version", C.NOT_FOUND, predict.Predict,
                     tiny_request(version=1), "Specific(tiny, 1)"),
        expect_error("unknown label", C.INVALID_ARGUMENT, predict.Predict,
                     tiny_request(label="beta"), "label: beta"),
        expect_error("bad input name", C.INVALID_ARGUMENT, predict.Predict,
                     tiny_request(alias="nope"), "Sent extra: {nope}"),
        expect_error("wrong dtype", C.INVALID_ARGUMENT, predict.Predict,
                     tiny_request(tensor=tf.make_tensor_proto(
                         np.array(rows, np.int64))), "DT_INT64"),
        expect_error("wrong shape", C.INVALID_ARGUMENT, predict.Predict,
                     tiny_request(tensor=tf.make_tensor_proto(
                         np.array([[1.0, 2.0]], np.float32))), "shape"),
        expect_error("status of an unknown model", C.NOT_FOUND,
                     models.GetModelStatus,
                     spec(get_model_status_pb2.GetModelStatusRequest(),
                          "nope")),
    ]
    rest_status, _ = rest(url + "nope:predict", {"instances": rows})
    if rest_status != 404:
        fail("REST unknown model: HTTP %d" % rest_status)
    done.append("errors (%s)" % "; ".join(errors))

    # HandleReloadConfigRequest: tiny alone from now on, still serving.
    from tensorflow_serving.apis import model_management_pb2
    req = model_management_pb2.ReloadConfigRequest()
    c = req.config.model_config_list.config.add()
    c.name = "tiny"
    c.base_path = WORK + "/tiny"
    c.model_platform = "tensorflow"
    got = models.HandleReloadConfigRequest(req, timeout=60)
    if got.status.error_code != 0:
        fail("HandleReloadConfigRequest: %s" % got.status)
    expect_error("a model no longer configured", C.NOT_FOUND,
                 models.GetModelStatus,
                 spec(get_model_status_pb2.GetModelStatusRequest(), "linear"))
    rest_status, _ = rest(url + "linear")
    if rest_status != 404:
        fail("REST after the reload: linear is HTTP %d" % rest_status)
    predict.Predict(tiny_request(), timeout=30)
    c.base_path = ""
    expect_error("a reload without base_path", C.INVALID_ARGUMENT,
                 models.HandleReloadConfigRequest, req, "no base_path")
    done.append("HandleReloadConfigRequest")
    return done


def lwc_input(context, examples):
    from tensorflow_serving.apis import input_pb2
    i = input_pb2.Input()
    i.example_list_with_context.context.CopyFrom(tf_example(context))
    for e in examples:
        i.example_list_with_context.examples.add().CopyFrom(tf_example(e))
    return i


WORK = "."
if __name__ == "__main__":
    sys.exit(main())
