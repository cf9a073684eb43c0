#!/usr/bin/env python3
"""The Keras example runs as the README says (issue 29; ctest keras.example).

  keras_example_check.py --example BIN --data_dir DIR --work DIR

make_mobilenet_v2.py writes a small MobileNetV2 (32 x 32 input, alpha
0.35, batch normalization momentum 0.9 and learning rate 0.005 for a short
run); the C++ example
fine-tunes it with model_to_estimator on the shared MNIST test set (its
last 2,000 images held out), exports and serves it, and writes the weights
back; Keras then loads the written-back file: its accuracy must equal the
one estc printed (within 0.002), and the classes it predicts for the first
8 held-out images must be those estc's served export predicted. The model
must learn (accuracy >= 0.6 after 200 steps; chance is 0.1). Exit 77 (ctest
SKIP) without TensorFlow or the data set.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "keras")


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout + out.stderr)
        sys.exit("FAIL: %s exited %d" % (os.path.basename(cmd[1] if
                 cmd[0] == sys.executable else cmd[0]), out.returncode))
    return out.stdout


def main():
    p = argparse.ArgumentParser()
    for flag in ("example", "data_dir", "work"):
        p.add_argument("--" + flag, required=True)
    a = p.parse_args()
    if not os.path.exists(os.path.join(a.data_dir, "t10k-images-idx3-ubyte.gz")):
        print("SKIP: shared data set not found: %s (set ESTC_DATA_DIR)" %
              a.data_dir)
        return 77
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        print("SKIP: TensorFlow is not installed (pip install "
              "tensorflow-cpu==2.15.1 \"numpy<2\")")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    model = os.path.join(a.work, "mobilenet_v2.keras")
    written = os.path.join(a.work, "fine_tuned.keras")
    run([sys.executable, os.path.join(EXAMPLE, "make_mobilenet_v2.py"),
         "--out", model, "--input_size", "32", "--bn_momentum", "0.9",
         "--learning_rate", "0.005"])
    out = run([a.example, "--model=" + model, "--data_dir=" + a.data_dir,
               "--eval_holdout=2000", "--train_steps=200",
               "--save_checkpoints_steps=200",
               "--model_dir=" + os.path.join(a.work, "model_dir"),
               "--write_back=" + written, "--threads=2"])
    print(out)
    accuracy = float(re.search(r"final evaluation: accuracy ([0-9.]+)",
                               out).group(1))
    served = re.search(r"served \S+: (predicted [0-9 ]+)", out).group(1)
    keras = run([sys.executable, os.path.join(EXAMPLE, "evaluate_in_keras.py"),
                 "--model=" + written, "--data_dir=" + a.data_dir,
                 "--eval_holdout=2000",
                 "--expect_accuracy=%.4f" % accuracy])
    print(keras)
    predicted = re.search(r"^(predicted [0-9 ]+)", keras, re.M).group(1)
    if predicted.strip() != served.strip():
        sys.exit("FAIL: Keras %s, estc's export %s" % (predicted, served))
    if accuracy < 0.6:
        sys.exit("FAIL: accuracy %.4f after 200 steps (chance: 0.1)" % accuracy)
    print("PASS: accuracy %.4f, Keras agrees on the written-back file" %
          accuracy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
