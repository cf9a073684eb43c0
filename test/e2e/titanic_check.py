#!/usr/bin/env python3
"""The Titanic example (examples/titanic) against TF 2.15's numbers, and its
ahead-of-time form against its JIT form.

usage:
  titanic_check.py accuracy --titanic=BIN --data_dir=DIR [--seeds=1,2,3]
      Trains each model (linear, dnn_linear_combined) once per seed and
      checks the mean test accuracy and AUC over the seeds against TF's
      (bench/tf_canned_peer.py, the same seeds, measured once: TF_MEANS):
      no more than one point (0.01) below.
  titanic_check.py aot_matches_jit --jit=BIN --aot=BIN --data_dir=DIR
      --work=DIR
      Trains each model with both forms, seed 1 (the AOT graphs' seed):
      the JSON lines (but train_seconds) and the final checkpoints must be
      identical, byte for byte.

Exits 77 (ctest: skipped) with a SKIP line when DIR/train.csv is missing.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

MODELS = ["linear", "dnn_linear_combined"]
# bench/tf_canned_peer.py --models linear,dnn_linear_combined_lr
# --seeds 1,2,3 (TF 2.15.1, tensorflow-estimator 2.15.0): the mean over the
# seeds. dnn_linear_combined_lr is estc's dnn_linear_combined (rates 0.2 /
# 0.05).
TF_MEANS = {"linear": {"accuracy": 0.8193, "auc": 0.8898},
            "dnn_linear_combined": {"accuracy": 0.8063, "auc": 0.8805}}
TOLERANCE = 0.01


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def train(binary, data_dir, model, seed, model_dir=None):
    """Runs one training; returns its JSON line as a dict."""
    argv = [binary, "--data_dir=" + data_dir, "--model=" + model,
            "--seed=%d" % seed, "--predictions=0"]
    if model_dir:
        argv.append("--model_dir=" + model_dir)
    run = subprocess.run(argv, capture_output=True, text=True)
    if run.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(argv), run.returncode,
                                   run.stderr.strip().splitlines()[-1:]))
    lines = [l for l in run.stdout.splitlines() if l.startswith("{")]
    if len(lines) != 1:
        fail("%s printed %d JSON lines" % (" ".join(argv), len(lines)))
    result = json.loads(lines[0])
    print(json.dumps(result), flush=True)
    return result


def check_accuracy(args):
    seeds = [int(s) for s in args.seeds.split(",")]
    failed = []
    for model in MODELS:
        runs = [train(args.titanic, args.data_dir, model, s) for s in seeds]
        for metric in ("accuracy", "auc"):
            mean = sum(r[metric] for r in runs) / len(runs)
            tf = TF_MEANS[model][metric]
            line = "%s %s: estc mean %.4f, TF mean %.4f" % (model, metric,
                                                            mean, tf)
            print(line, flush=True)
            if mean < tf - TOLERANCE:
                failed.append(line)
    if failed:
        fail("more than %.2f below TF: %s" % (TOLERANCE, "; ".join(failed)))


def check_aot_matches_jit(args):
    for model in MODELS:
        results, checkpoints = {}, {}
        for form, binary in (("jit", args.jit), ("aot", args.aot)):
            model_dir = os.path.join(args.work, model + "-" + form)
            shutil.rmtree(model_dir, ignore_errors=True)
            r = train(binary, args.data_dir, model, 1, model_dir)
            r.pop("train_seconds")
            results[form] = r
            final = "model.ckpt-%d.safetensors" % r["steps"]
            with open(os.path.join(model_dir, final), "rb") as f:
                checkpoints[form] = f.read()
        if results["jit"] != results["aot"]:
            fail("%s: the JIT and AOT forms differ: %s vs %s"
                 % (model, results["jit"], results["aot"]))
        if checkpoints["jit"] != checkpoints["aot"]:
            fail("%s: the final checkpoints differ" % model)
        print("%s: JIT and AOT identical (final loss %s, checkpoint %d "
              "bytes)" % (model, results["aot"]["final_loss"],
                          len(checkpoints["aot"])), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["accuracy", "aot_matches_jit"])
    ap.add_argument("--data_dir", required=True)
    ap.add_argument("--titanic")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--jit")
    ap.add_argument("--aot")
    ap.add_argument("--work")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.data_dir, "train.csv")):
        print("SKIP: the Titanic CSVs are not in %s (set ESTC_DATA_DIR)"
              % args.data_dir)
        return 77
    if args.mode == "accuracy":
        if not args.titanic:
            ap.error("accuracy needs --titanic")
        check_accuracy(args)
    else:
        if not (args.jit and args.aot and args.work):
            ap.error("aot_matches_jit needs --jit, --aot and --work")
        check_aot_matches_jit(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
