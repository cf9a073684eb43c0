#!/usr/bin/env python3
"""The Titanic canned estimator exported and served (issue 14).

  titanic_serve.py --titanic BIN --serve BIN --data_dir DIR --work DIR

Trains examples/titanic's LinearClassifier, exports it with a parsing
receiver (--export_dir), serves the export with estc-serve on a free
loopback port and sends the first test.csv rows as JSON tf.Examples to
:classify (TF Serving's request format), as a TF Serving client would. The
served probabilities of survival must equal what the trainer's own
Estimator.predict printed for those rows (to its 3 decimals), the metadata
must list the classify signature, and a malformed example must be a 400
with one "error" line. Exit 77 (ctest SKIP) without the data set.
"""
import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def example(row):
    """A test.csv row as the JSON tf.Example of the trainer's features
    (examples/titanic/Titanic.cpp's mapping, its CSV defaults)."""
    sibsp, parch = int(row["SibSp"]), int(row["Parch"])
    return {
        "sex": [row["Sex"]],
        "n_siblings_spouses": [sibsp],
        "parch": [parch],
        "class": [int(row["Pclass"])],
        "age": [float(row["Age"]) if row["Age"] else 28.0],
        "fare": [float(row["Fare"])],
        "embark_town": [row["Embarked"] or "unknown"],
        "deck": [row["Cabin"][0] if row["Cabin"] else "unknown"],
        "alone": [1 if sibsp + parch == 0 else 0],
    }


def request(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data),
                                    timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    p = argparse.ArgumentParser()
    for flag in ("titanic", "serve", "data_dir", "work"):
        p.add_argument("--" + flag, required=True)
    a = p.parse_args()
    test_csv = os.path.join(a.data_dir, "test.csv")
    if not os.path.exists(test_csv):
        print("SKIP: shared data set not found: %s (set ESTC_DATA_DIR)" %
              a.data_dir)
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    rows = 5
    out = subprocess.run(
        [a.titanic, "--data_dir=" + a.data_dir, "--epochs=10",
         "--predictions=%d" % rows, "--model_dir=" + a.work + "/model_dir",
         "--export_dir=" + a.work + "/models"],
        capture_output=True, text=True)
    if out.returncode != 0:
        fail("titanic: " + out.stderr[-500:])
    expected = [float(m) for m in re.findall(
        r"probability of survival ([0-9.]+)", out.stdout)]
    if len(expected) != rows or "exported: " not in out.stdout:
        fail("titanic printed no predictions or export: " + out.stdout)

    port_file = a.work + "/port"
    server = subprocess.Popen(
        [a.serve, "--rest_api_port=0", "--rest_api_host=127.0.0.1",
         "--port_file=" + port_file, "--model_name=titanic",
         "--model_base_path=" + a.work + "/models"],
        stderr=open(a.work + "/serve.log", "w"))
    try:
        for _ in range(200):
            if os.path.exists(port_file) and os.path.getsize(port_file):
                break
            time.sleep(0.05)
        else:
            fail("estc-serve wrote no port")
        url = "http://127.0.0.1:%s/v1/models/titanic" % open(
            port_file).read().strip()
        with open(test_csv) as f:
            examples = [example(r) for _, r in zip(range(rows),
                                                   csv.DictReader(f))]
        status, body = request(url + ":classify", {"examples": examples})
        if status != 200:
            fail(":classify: HTTP %d %s" % (status, body))
        results = body["results"]
        for i, (want, got) in enumerate(zip(expected, results)):
            scores = dict(got)
            if sorted(scores) != ["0", "1"]:
                fail("row %d: classes %s" % (i, sorted(scores)))
            if abs(scores["1"] - want) > 0.0005 + 1e-6:
                fail("row %d: served %.6f, Estimator.predict %.3f" %
                     (i, scores["1"], want))
        status, meta = request(url + "/metadata")
        sigs = meta["metadata"]["signature_def"]["signature_def"]
        if status != 200 or sigs["serving_default"]["method_name"] != \
                "tensorflow/serving/classify":
            fail("metadata: %s" % meta)
        bad = dict(examples[0], age=["old"])
        status, body = request(url + ":classify", {"examples": [bad]})
        if status != 400 or "\n" in body.get("error", "\n"):
            fail("a bad example: HTTP %d %s" % (status, body))
        print("titanic served: %d rows equal to Estimator.predict; %s" %
              (rows, body["error"]))
    finally:
        server.send_signal(signal.SIGTERM)
        if server.wait(timeout=10) != 0:
            fail("estc-serve exited %d on SIGTERM" % server.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
