#!/usr/bin/env python3
"""The SST-2 example trains, exports and is served (issue 27).

  sst2_serve.py --sst2 BIN --serve BIN --data_dir DIR --work DIR
                [--model bilstm|rnn_classifier] [--steps N]

Trains examples/sst2's model for a few hundred steps (--train_steps), which
must learn: the mean loss of its last 50 steps below that of its first 50,
test accuracy well above chance. Its export (a parsing receiver) is served
by estc-serve on a free loopback port; the first two test sentences (10 and
25 tokens) go to :classify in one request as JSON tf.Examples with a
"tokens" list, as a TF Serving client sends them: the served probability of
"1" must equal what the trainer's Estimator.predict printed for them (to its
4 decimals), and numbers for tokens must be a 400 with one "error"
line. Exit 77 (ctest SKIP) without the data set.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def request(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data),
                                    timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    p = argparse.ArgumentParser()
    for flag in ("sst2", "serve", "data_dir", "work"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--model", default="bilstm")
    p.add_argument("--steps", type=int, default=300)
    a = p.parse_args()
    test_tsv = os.path.join(a.data_dir, "test.tsv")
    if not os.path.exists(test_tsv):
        print("SKIP: shared data set not found: %s (set ESTC_DATA_DIR)" %
              a.data_dir)
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    rows = 2
    out = subprocess.run(
        [a.sst2, "--data_dir=" + a.data_dir, "--model=" + a.model,
         "--train_steps=%d" % a.steps, "--predictions=%d" % rows,
         "--model_dir=" + a.work + "/model_dir",
         "--export_dir=" + a.work + "/models"],
        capture_output=True, text=True)
    print(out.stdout)
    if out.returncode != 0:
        fail("sst2: " + out.stderr[-800:])
    result = json.loads(out.stdout.splitlines()[0])
    if result["steps"] != a.steps:
        fail("trained %d steps, not %d" % (result["steps"], a.steps))
    if not result["final_loss"] < result["first_loss"] - 0.05:
        fail("the loss did not decrease: first %.4f, final %.4f" %
             (result["first_loss"], result["final_loss"]))
    if not result["test_accuracy"] > 0.65:
        fail("test accuracy %.4f is not above 0.65" % result["test_accuracy"])
    expected = [float(m) for m in re.findall(r"positive ([0-9.]+)",
                                             out.stdout)]
    if len(expected) != rows or "exported: " not in out.stdout:
        fail("sst2 printed no predictions or export")

    port_file = a.work + "/port"
    server = subprocess.Popen(
        [a.serve, "--rest_api_port=0", "--rest_api_host=127.0.0.1",
         "--port_file=" + port_file, "--model_name=sst2",
         "--model_base_path=" + a.work + "/models"],
        stderr=open(a.work + "/serve.log", "w"))
    try:
        for _ in range(400):
            if os.path.exists(port_file) and os.path.getsize(port_file):
                break
            time.sleep(0.05)
        else:
            fail("estc-serve wrote no port")
        url = "http://127.0.0.1:%s/v1/models/sst2" % open(
            port_file).read().strip()
        with open(test_tsv) as f:
            sentences = [next(f).split("\t")[0].split() for _ in range(rows)]
        if len(sentences[0]) == len(sentences[1]):
            fail("the two sentences have the same length")
        examples = [{"tokens": s} for s in sentences]
        for _ in range(100):  # the first version may still be loading
            status, body = request(url + ":classify", {"examples": examples})
            if status != 503:
                break
            time.sleep(0.1)
        if status != 200:
            fail(":classify: HTTP %d %s" % (status, body))
        for i, (want, got) in enumerate(zip(expected, body["results"])):
            scores = dict(got)
            if sorted(scores) != ["0", "1"]:
                fail("sentence %d: classes %s" % (i, sorted(scores)))
            if abs(scores["1"] - want) > 0.00005 + 1e-6:
                fail("sentence %d: served %.6f, Estimator.predict %.4f" %
                     (i, scores["1"], want))
            print("served sentence %d (%d tokens): positive %.4f" %
                  (i, len(sentences[i]), scores["1"]))
        status, body = request(url + ":classify",
                               {"examples": [{"tokens": [1, 2]}]})
        if status != 400 or "\n" in body.get("error", "\n"):
            fail("numbers as tokens: HTTP %d %s" % (status, body))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
