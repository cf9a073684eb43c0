#!/usr/bin/env python3
"""Accuracy baselines on sklearn's CSV tables (iris, wine, breast_cancer).

Usage:
  python3 bench/sklearn_baseline.py [--data_dir DIR] [--tf] [--seeds 1,2,3]

Tables: iris.csv, wine_data.csv, breast_cancer.csv of Debian's
python3-sklearn (scripts/install-deps.sh --data), in
/usr/lib/python3/dist-packages/sklearn/datasets/data/ (--data_dir).

File format (all three): line 1 is a header of COUNTS, not names:
  <n_samples>,<n_features>,<class name 0>,<class name 1>[,...]
  (iris: "150,4,setosa,versicolor,virginica"; wine_data: "178,13,class_0,
  class_1,class_2"; breast_cancer: "569,30,malignant,benign")
then n_samples lines of n_features decimal numbers and the integer class
label (0-based) last. No quoting, no missing values. The rows are sorted by
class in iris and wine.

Split (reproducible without any RNG): data row i (0-based, the header not
counted) is a TEST row when i % 4 == 3, else a TRAIN row.
  iris 113 train / 37 test, wine 134 / 44, breast_cancer 427 / 142.
Standardization: per feature, mean and standard deviation (population,
ddof=0) over the TRAIN rows only; every row becomes (x - mean) / std (a
std of 0 would be taken as 1, as StandardScaler does; none of the three
tables has one). Done in float64.

Models:
  sklearn   LogisticRegression(penalty="l2", C=1.0, solver="lbfgs",
            max_iter=1000, multi_class="auto" -> multinomial for 3 classes,
            fit_intercept=True, tol=1e-4) on the standardized features.
            Deterministic: repeated runs give the same accuracy.
  tf (--tf) TF 2.15 canned estimators on the same standardized features
            (float32), one numeric_column("x", shape=[n_features]),
            n_classes = the number of classes; input
            tf.data.Dataset.from_tensor_slices(({"x": X}, y))
            .shuffle(n_train, seed=seed).repeat(epochs).batch(32),
            epochs = 100; RunConfig(tf_random_seed=seed), 1 thread:
              linear  LinearClassifier, default optimizer (Ftrl, lr
                      min(0.2, 1/sqrt(1 column)) = 0.2)
              dnn     DNNClassifier(hidden_units=[32, 16],
                      optimizer="Adam"): TF makes the name Keras legacy
                      Adam at the DNN's default rate 0.05; relu. (With the
                      default Adagrad at 0.05 the DNN is still learning
                      after 100 epochs: iris 0.54 / 0.84 / 0.70 over seeds
                      1, 2, 3, train loss 0.78..0.88.)
            evaluated on the test rows (batch 32); one line per seed.

sklearn runs in this interpreter when it imports sklearn, else (Debian's
package is for Debian's python) in /usr/bin/python3 as a child process.
Output: JSON lines
  {"table", "model", "seed" (tf only), "train_rows", "test_rows",
   "features", "classes", "accuracy", "n_iter" (sklearn) | "steps" (tf)}
or {"table", "model", "skip": reason}.
"""

import argparse
import json
import os
import subprocess
import sys

DEFAULT_DIR = "/usr/lib/python3/dist-packages/sklearn/datasets/data"
TABLES = {"iris": "iris.csv", "wine": "wine_data.csv",
          "breast_cancer": "breast_cancer.csv"}
TF_EPOCHS = 100
TF_BATCH = 32
DNN_HIDDEN_UNITS = [32, 16]


def load(path):
    """(features as lists of floats, labels, n_classes) of one table."""
    with open(path) as f:
        header = f.readline().strip().split(",")
        n_samples, n_features = int(header[0]), int(header[1])
        n_classes = len(header) - 2
        features, labels = [], []
        for line in f:
            if not line.strip():
                continue
            fields = line.strip().split(",")
            if len(fields) != n_features + 1:
                raise ValueError(f"{path}: a row has {len(fields)} fields, "
                                 f"the header says {n_features} + label")
            features.append([float(v) for v in fields[:-1]])
            labels.append(int(fields[-1]))
    if len(labels) != n_samples:
        raise ValueError(f"{path}: {len(labels)} rows, the header says "
                         f"{n_samples}")
    return features, labels, n_classes


def split_standardized(np, features, labels):
    """The header's split and standardization: (x_train, y_train, x_test,
    y_test), float64."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    test = np.arange(len(y)) % 4 == 3
    mean = x[~test].mean(axis=0)
    std = x[~test].std(axis=0)
    std[std == 0] = 1.0
    x = (x - mean) / std
    return x[~test], y[~test], x[test], y[test]


def run_sklearn(data_dir):
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    for table, file in TABLES.items():
        features, labels, n_classes = load(os.path.join(data_dir, file))
        x_train, y_train, x_test, y_test = split_standardized(
            np, features, labels)
        model = LogisticRegression(penalty="l2", C=1.0, solver="lbfgs",
                                   max_iter=1000, tol=1e-4)
        model.fit(x_train, y_train)
        accuracy = float((model.predict(x_test) == y_test).mean())
        print(json.dumps({
            "table": table, "model": "sklearn_logistic_regression",
            "train_rows": len(y_train), "test_rows": len(y_test),
            "features": x_train.shape[1], "classes": n_classes,
            "accuracy": round(accuracy, 4),
            "n_iter": int(np.max(model.n_iter_)),
        }), flush=True)


def run_tf(data_dir, seeds):
    import shutil
    import tempfile
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import numpy as np
        import tensorflow as tf
    except Exception as e:  # ImportError, or a broken installation
        reason = f"tensorflow cannot be imported: {e}".splitlines()[0]
        for table in TABLES:
            for model in ("tf_linear", "tf_dnn"):
                print(json.dumps({"table": table, "model": model,
                                  "skip": reason}))
        return
    tf.get_logger().setLevel("ERROR")
    for table, file in TABLES.items():
        features, labels, n_classes = load(os.path.join(data_dir, file))
        x_train, y_train, x_test, y_test = split_standardized(
            np, features, labels)
        x_train = x_train.astype(np.float32)
        x_test = x_test.astype(np.float32)
        columns = [tf.feature_column.numeric_column(
            "x", shape=[x_train.shape[1]])]
        for model in ("tf_linear", "tf_dnn"):
            for seed in seeds:
                model_dir = tempfile.mkdtemp(prefix="sklearn_baseline_")
                config = tf.estimator.RunConfig(
                    model_dir=model_dir, tf_random_seed=seed,
                    session_config=tf.compat.v1.ConfigProto(
                        intra_op_parallelism_threads=1,
                        inter_op_parallelism_threads=1))
                if model == "tf_linear":
                    est = tf.estimator.LinearClassifier(
                        feature_columns=columns, n_classes=n_classes,
                        config=config)
                else:
                    est = tf.estimator.DNNClassifier(
                        hidden_units=DNN_HIDDEN_UNITS,
                        feature_columns=columns, n_classes=n_classes,
                        optimizer="Adam",
                        config=config)

                def train_input(seed=seed):
                    return (tf.data.Dataset.from_tensor_slices(
                        ({"x": x_train}, y_train))
                            .shuffle(len(y_train), seed=seed)
                            .repeat(TF_EPOCHS).batch(TF_BATCH))

                def eval_input():
                    return tf.data.Dataset.from_tensor_slices(
                        ({"x": x_test}, y_test)).batch(TF_BATCH)

                try:
                    est.train(train_input)
                    metrics = est.evaluate(eval_input)
                finally:
                    shutil.rmtree(model_dir, ignore_errors=True)
                print(json.dumps({
                    "table": table, "model": model, "seed": seed,
                    "train_rows": len(y_train), "test_rows": len(y_test),
                    "features": x_train.shape[1], "classes": n_classes,
                    "accuracy": round(float(metrics["accuracy"]), 4),
                    "steps": int(metrics["global_step"]),
                }), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data_dir", default=DEFAULT_DIR)
    ap.add_argument("--tf", action="store_true",
                    help="also TF's LinearClassifier and DNNClassifier")
    ap.add_argument("--seeds", default="1,2,3", help="seeds of the TF runs")
    ap.add_argument("--sklearn_only", action="store_true",
                    help=argparse.SUPPRESS)  # the child process's part
    args = ap.parse_args()

    for file in TABLES.values():
        if not os.path.isfile(os.path.join(args.data_dir, file)):
            print(f"SKIP {os.path.join(args.data_dir, file)} is missing "
                  "(install python3-sklearn: scripts/install-deps.sh --data)")
            return 0
    try:
        import sklearn  # noqa: F401
        have_sklearn = True
    except ImportError:
        have_sklearn = False
    if have_sklearn:
        run_sklearn(args.data_dir)
    elif (not args.sklearn_only and os.path.exists("/usr/bin/python3") and
          os.path.realpath(sys.executable) !=
          os.path.realpath("/usr/bin/python3")):
        sys.stdout.flush()
        rc = subprocess.call(["/usr/bin/python3", os.path.abspath(__file__),
                              "--data_dir", args.data_dir, "--sklearn_only"])
        if rc != 0:
            return rc
    else:
        for table in TABLES:
            print(json.dumps({"table": table,
                              "model": "sklearn_logistic_regression",
                              "skip": "sklearn cannot be imported"}))
    if args.tf and not args.sklearn_only:
        run_tf(args.data_dir, [int(s) for s in args.seeds.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
