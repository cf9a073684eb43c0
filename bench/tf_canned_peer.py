#!/usr/bin/env python3
"""TF 2.15's canned estimators on the Titanic CSVs: what estc's must match.

Usage:
  python3 bench/tf_canned_peer.py --data_dir ../shared/data/titanic \
      [--models linear,dnn_linear_combined,dnn_linear_combined_lr]
      [--seeds 1,2,3] [--threads 1] [--epochs 40]

Reads <data_dir>/train.csv (712 rows) and <data_dir>/test.csv (179 rows),
never downloads anything; prints `SKIP <reason>` and exits 0 when tensorflow
cannot be imported or the files are missing.

Columns: TF's linear-model tutorial (tutorials/estimator/linear) adapted to
the Kaggle CSV. The input pipeline is tf.data.experimental.make_csv_dataset
over the file (RFC 4180 quoting; Name holds commas) with

  select_columns = Survived, Pclass, Sex, Age, SibSp, Parch, Fare, Cabin,
                   Embarked
  column_defaults (by name; file order is what make_csv_dataset uses):
      Survived int64 (required)   Pclass int64 (required)
      Sex string (required)       Age float32, 28.0 when empty
      SibSp int64 (required)      Parch int64 (required)
      Fare float32 (required)     Cabin string, "" when empty
      Embarked string, "unknown" when empty
  label_name = Survived

then one map over each batch that renames and derives the features (the
exact rules an equivalent C++ input pipeline applies):

  sex                 = Sex
  n_siblings_spouses  = SibSp
  parch               = Parch
  class               = Pclass
  age                 = Age           (missing -> 28.0, the median Age of
                                       train.csv, via the column default)
  fare                = Fare
  embark_town         = Embarked      ("C", "Q", "S"; missing -> "unknown")
  deck                = the first byte of Cabin, "unknown" when Cabin is
                        empty (Cabin "C85" -> "C", "B57 B59" -> "B")
  alone               = 1 if SibSp + Parch == 0 else 0  (int64)

Feature columns (tf.feature_column):

  sex           categorical_column_with_vocabulary_list("sex", ["male",
                "female"])
  n_siblings_spouses  categorical_column_with_identity(num_buckets=9)
                (SibSp is 0..8 in both files)
  parch         categorical_column_with_identity(num_buckets=7) (0..6)
  class         categorical_column_with_vocabulary_list("class", [1, 2, 3])
                (int64 vocabulary)
  deck          categorical_column_with_vocabulary_list("deck", ["A", "B",
                "C", "D", "E", "F", "G", "T", "unknown"])
  embark_town   categorical_column_with_vocabulary_list("embark_town", ["C",
                "Q", "S", "unknown"])
  alone         categorical_column_with_identity(num_buckets=2)
  age_buckets   bucketized_column(numeric_column("age"), boundaries=[18, 25,
                30, 35, 40, 45, 50, 55, 60, 65])  (11 buckets)
  fare          numeric_column("fare")
  age_buckets_X_sex  crossed_column([age_buckets, "sex"],
                hash_bucket_size=100)

Models (every other argument is TF's default; n_classes=2, so the head is
binary_classification_head with sigmoid cross-entropy, loss reduction
SUM_OVER_BATCH_SIZE):

  linear               LinearClassifier(feature_columns = the 10 columns
                       above), optimizer "Ftrl" (TF: Keras legacy Ftrl,
                       learning_rate = min(0.2, 1/sqrt(10)) = 0.2,
                       initial_accumulator_value 0.1, no l1/l2)
  dnn_linear_combined  DNNLinearCombinedClassifier(
                         linear_feature_columns = the 10 columns above,
                         dnn_feature_columns = indicator_column of sex,
                           n_siblings_spouses, parch, class, deck,
                           embark_town, alone, age_buckets, plus
                           numeric_column age and fare (raw, no
                           normalizer_fn),
                         dnn_hidden_units=[64, 32]),
                       TF's default optimizers: linear "Ftrl" with
                       lr min(0.005, 1/sqrt(10)) = 0.005, dnn "Adagrad" with
                       lr 0.001; activation relu, no dropout, no batch norm.
                       These rates are small: the model is still learning
                       after 890 steps (accuracy ~0.72, a wide spread over
                       seeds). It checks the default-rate rules.
  dnn_linear_combined_lr  the same with linear_optimizer =
                       tf.keras.optimizers.legacy.Ftrl(learning_rate=0.2)
                       and dnn_optimizer =
                       tf.keras.optimizers.legacy.Adagrad(learning_rate=0.05)
                       (the LinearClassifier's and DNNClassifier's default
                       rates): the trained model to compare accuracy with.

Training: make_csv_dataset(batch_size=32, num_epochs=40 (--epochs),
shuffle=True, shuffle_buffer_size=1000, shuffle_seed=seed,
num_parallel_reads=1) -> 712 * 40 / 32 = 890 steps (with 10 epochs: 222.5
-> 223, the last batch partial; no drop_remainder when num_epochs is
set). RunConfig(tf_random_seed=seed); TF gets `--threads` intra-op and
inter-op threads.
Evaluation: test.csv, batch_size=32, num_epochs=1, shuffle=False, the
head's metrics (accuracy at threshold 0.5, auc with 200 thresholds).

One test row is 0.56 accuracy points (179 rows), so compare the mean over
the seeds, with the spread beside it. A seed gives the same numbers on
every run (checked: seed 1 twice, identical to 4 digits).

Output, JSON lines:
  {"kind": "run", "model", "seed", "accuracy", "auc", "loss", "steps",
   "train_seconds", "eval_seconds"}   one per model and seed
  {"kind": "spread", "model", "seeds", "accuracy_min", "accuracy_max",
   "accuracy_mean", "auc_min", "auc_max", "auc_mean"}   one per model
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

AGE_DEFAULT = 28.0
AGE_BOUNDARIES = [18, 25, 30, 35, 40, 45, 50, 55, 60, 65]
SEX_VOCAB = ["male", "female"]
CLASS_VOCAB = [1, 2, 3]
DECK_VOCAB = ["A", "B", "C", "D", "E", "F", "G", "T", "unknown"]
EMBARK_VOCAB = ["C", "Q", "S", "unknown"]
SIBSP_BUCKETS = 9
PARCH_BUCKETS = 7
CROSS_BUCKETS = 100
DNN_HIDDEN_UNITS = [64, 32]
BATCH_SIZE = 32
NUM_EPOCHS = 40
SHUFFLE_BUFFER = 1000
MODELS = ["linear", "dnn_linear_combined", "dnn_linear_combined_lr"]


def input_fn(tf, path, training, seed, epochs):
    """make_csv_dataset over `path`, then the derivations of the header."""
    select = ["Survived", "Pclass", "Sex", "Age", "SibSp", "Parch", "Fare",
              "Cabin", "Embarked"]
    # make_csv_dataset takes the defaults in the file's column order.
    defaults = {
        "Survived": tf.int64, "Pclass": tf.int64, "Sex": tf.string,
        "Age": AGE_DEFAULT, "SibSp": tf.int64, "Parch": tf.int64,
        "Fare": tf.float32, "Cabin": "", "Embarked": "unknown",
    }
    with open(path, newline="") as f:
        header = f.readline().strip().split(",")
    ordered = [defaults[name] for name in header if name in defaults]
    dataset = tf.data.experimental.make_csv_dataset(
        path, batch_size=BATCH_SIZE, column_defaults=ordered,
        label_name="Survived", select_columns=select,
        num_epochs=epochs if training else 1, shuffle=training,
        shuffle_buffer_size=SHUFFLE_BUFFER, shuffle_seed=seed,
        num_parallel_reads=1)

    def derive(raw, label):
        cabin = raw["Cabin"]
        deck = tf.where(tf.equal(cabin, ""), tf.constant("unknown"),
                        tf.strings.substr(cabin, 0, 1))
        alone = tf.cast(tf.equal(raw["SibSp"] + raw["Parch"], 0), tf.int64)
        return {
            "sex": raw["Sex"],
            "n_siblings_spouses": raw["SibSp"],
            "parch": raw["Parch"],
            "class": raw["Pclass"],
            "age": raw["Age"],
            "fare": raw["Fare"],
            "embark_town": raw["Embarked"],
            "deck": deck,
            "alone": alone,
        }, label

    return dataset.map(derive)


def feature_columns(tf):
    fc = tf.feature_column
    sex = fc.categorical_column_with_vocabulary_list("sex", SEX_VOCAB)
    categorical = [
        sex,
        fc.categorical_column_with_identity("n_siblings_spouses",
                                            SIBSP_BUCKETS),
        fc.categorical_column_with_identity("parch", PARCH_BUCKETS),
        fc.categorical_column_with_vocabulary_list("class", CLASS_VOCAB,
                                                   dtype=tf.int64),
        fc.categorical_column_with_vocabulary_list("deck", DECK_VOCAB),
        fc.categorical_column_with_vocabulary_list("embark_town",
                                                   EMBARK_VOCAB),
        fc.categorical_column_with_identity("alone", 2),
    ]
    age = fc.numeric_column("age")
    fare = fc.numeric_column("fare")
    age_buckets = fc.bucketized_column(age, boundaries=AGE_BOUNDARIES)
    cross = fc.crossed_column([age_buckets, "sex"],
                              hash_bucket_size=CROSS_BUCKETS)
    linear = categorical + [age_buckets, fare, cross]
    dnn = ([fc.indicator_column(c) for c in categorical + [age_buckets]] +
           [age, fare])
    return linear, dnn


def make_estimator(tf, model, model_dir, seed, threads):
    session_config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads,
        inter_op_parallelism_threads=threads)
    config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=seed,
                                    session_config=session_config)
    linear, dnn = feature_columns(tf)
    if model == "linear":
        return tf.estimator.LinearClassifier(feature_columns=linear,
                                             config=config)
    optimizers = {}
    if model == "dnn_linear_combined_lr":
        optimizers = dict(
            linear_optimizer=tf.keras.optimizers.legacy.Ftrl(
                learning_rate=0.2),
            dnn_optimizer=tf.keras.optimizers.legacy.Adagrad(
                learning_rate=0.05))
    return tf.estimator.DNNLinearCombinedClassifier(
        linear_feature_columns=linear, dnn_feature_columns=dnn,
        dnn_hidden_units=DNN_HIDDEN_UNITS, config=config, **optimizers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data_dir", required=True,
                    help="folder with train.csv and test.csv")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=NUM_EPOCHS)
    args = ap.parse_args()

    train = os.path.join(args.data_dir, "train.csv")
    test = os.path.join(args.data_dir, "test.csv")
    for path in (train, test):
        if not os.path.isfile(path):
            print(f"SKIP {path} is missing")
            return 0
    models = args.models.split(",")
    for model in models:
        if model not in MODELS:
            print(f"tf_canned_peer: unknown model {model!r}", file=sys.stderr)
            return 2
    seeds = [int(s) for s in args.seeds.split(",")]

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except Exception as e:  # ImportError, or a broken installation
        print(f"SKIP tensorflow cannot be imported: {e}".splitlines()[0])
        return 0
    tf.get_logger().setLevel("ERROR")

    for model in models:
        results = []
        for seed in seeds:
            model_dir = tempfile.mkdtemp(prefix="tf_canned_peer_")
            try:
                est = make_estimator(tf, model, model_dir, seed, args.threads)
                start = time.perf_counter()
                est.train(
                    lambda: input_fn(tf, train, True, seed, args.epochs))
                train_seconds = time.perf_counter() - start
                start = time.perf_counter()
                metrics = est.evaluate(
                    lambda: input_fn(tf, test, False, seed, 1))
                eval_seconds = time.perf_counter() - start
            finally:
                shutil.rmtree(model_dir, ignore_errors=True)
            row = {
                "kind": "run", "model": model, "seed": seed,
                "accuracy": round(float(metrics["accuracy"]), 4),
                "auc": round(float(metrics["auc"]), 4),
                "loss": round(float(metrics["loss"]), 4),
                "steps": int(metrics["global_step"]),
                "train_seconds": round(train_seconds, 2),
                "eval_seconds": round(eval_seconds, 2),
            }
            results.append(row)
            print(json.dumps(row), flush=True)
        acc = [r["accuracy"] for r in results]
        auc = [r["auc"] for r in results]
        print(json.dumps({
            "kind": "spread", "model": model, "seeds": seeds,
            "accuracy_min": min(acc), "accuracy_max": max(acc),
            "accuracy_mean": round(sum(acc) / len(acc), 4),
            "auc_min": min(auc), "auc_max": max(auc),
            "auc_mean": round(sum(auc) / len(auc), 4),
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
