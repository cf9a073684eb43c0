#!/usr/bin/env python3
"""TF 2.15's canned estimators on the census-like table: steps/s and accuracy.

Usage:
  python3 bench/tf_canned_bench.py [--work_dir /tmp/estc-canned]
      [--train_rows 32768] [--eval_rows 8192] [--steps 2000] [--warmup 200]
      [--threads 1,2] [--models linear,dnn,dnn_linear_combined] [--seed 1]

The TF half of bench/canned.sh. Data: bench/make_census_table.py writes
<work_dir>/census_train_<train_rows>.csv (seed 1) and
<work_dir>/census_eval_<eval_rows>.csv (seed 2) unless they exist (same
names, same bytes for the C++ side). Prints `SKIP <reason>` and exits 0
when tensorflow cannot be imported.

Input (train): tf.data.experimental.make_csv_dataset(file,
batch_size=40, column_defaults=COLUMN_DEFAULTS (ints tf.int64, floats
tf.float32, strings tf.string, all required: none is empty),
label_name="label", num_epochs=None (repeat; full batches), shuffle=True,
shuffle_buffer_size=10000, shuffle_seed=seed, num_parallel_reads=1).
Eval: the same over the eval file with num_epochs=1, shuffle=False.
Both datasets run on a private tf.data threadpool of `threads` threads.

Feature columns (tf.feature_column; vocabularies are those of
make_census_table.py, in its order):

  workclass        categorical_column_with_vocabulary_list(WORKCLASS)   8
  education        categorical_column_with_vocabulary_list(EDUCATION)  16
  marital_status   categorical_column_with_vocabulary_list(MARITAL_STATUS) 7
  relationship     categorical_column_with_vocabulary_list(RELATIONSHIP) 6
  gender           categorical_column_with_vocabulary_list(GENDER)      2
  occupation       categorical_column_with_hash_bucket(hash_bucket_size=100)
  native_country   categorical_column_with_hash_bucket(hash_bucket_size=100)
  zip_code         categorical_column_with_hash_bucket(hash_bucket_size=1000)
  age, education_num, capital_gain, capital_loss, hours_per_week
                   numeric_column (float32, shape [1])
  age_buckets      bucketized_column(age, boundaries=[18, 25, 30, 35, 40,
                   45, 50, 55, 60, 65])                       11 buckets
  education_X_occupation  crossed_column(["education", "occupation"],
                   hash_bucket_size=1000)
  age_buckets_X_education_X_occupation  crossed_column([age_buckets,
                   "education", "occupation"], hash_bucket_size=1000)

  WIDE (15): workclass, education, marital_status, relationship, gender,
    occupation, native_country, zip_code, age_buckets,
    education_X_occupation, age_buckets_X_education_X_occupation,
    education_num, capital_gain, capital_loss, hours_per_week
  DEEP (13): age, education_num, capital_gain, capital_loss,
    hours_per_week (raw, no normalizer_fn); indicator_column of
    workclass, education, marital_status, relationship, gender;
    embedding_column(dimension=8, combiner "mean") of occupation,
    native_country, zip_code.  The first layer's input is 68 wide.

Models (n_classes 2: binary head, sigmoid cross-entropy,
SUM_OVER_BATCH_SIZE; everything not named is TF's default):
  linear               LinearClassifier(WIDE), optimizer "Ftrl" (lr
                       min(0.2, 1/sqrt(15)) = 0.2)
  dnn                  DNNClassifier(hidden_units=[100, 50], DEEP),
                       optimizer "Adagrad" (lr 0.05), relu, no dropout
  dnn_linear_combined  DNNLinearCombinedClassifier(WIDE, DEEP,
                       dnn_hidden_units=[100, 50]),
                       linear_optimizer Keras legacy Ftrl(learning_rate
                       0.2), dnn_optimizer Keras legacy Adagrad(
                       learning_rate 0.05): TF's own default rates for
                       this estimator (0.005, 0.001) leave it untrained in
                       a benchmark's steps (see tf_canned_peer.py).
RunConfig(tf_random_seed=seed, session_config: intra_op and inter_op
parallelism = threads); TF's defaults otherwise: checkpoints at step 0 and
at the end, summaries and the step counter every 100 steps.

Timing: each (threads, model) runs in a fresh process (TF builds its CPU
threadpools once per process). One Estimator.train(steps=N) call; a
SessionRunHook stamps the time after step `warmup` and after step N:
  steps_per_sec  = (N - warmup) / (t_N - t_warmup)   (graph building,
                   session start and the first steps excluded)
  wall_seconds   = the whole train() call
then Estimator.evaluate over the eval file: accuracy, auc, eval_seconds.
Output, JSON lines:
  {"data": stats of each file}   (when generated)
  {"peer": "tf", "model", "threads", "batch", "steps", "warmup",
   "steps_per_sec", "wall_seconds", "accuracy", "auc", "eval_seconds"}
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_census_table as census  # noqa: E402

BATCH_SIZE = 40
SHUFFLE_BUFFER = 10000
AGE_BOUNDARIES = [18, 25, 30, 35, 40, 45, 50, 55, 60, 65]
HASH_BUCKETS = {"occupation": 100, "native_country": 100, "zip_code": 1000}
CROSS_BUCKETS = 1000
EMBEDDING_DIM = 8
HIDDEN_UNITS = [100, 50]
MODELS = ["linear", "dnn", "dnn_linear_combined"]
TRAIN_SEED, EVAL_SEED = 1, 2


def column_defaults(tf):
    kinds = {"age": tf.int64, "education_num": tf.int64,
             "hours_per_week": tf.int64, "label": tf.int64,
             "capital_gain": tf.float32, "capital_loss": tf.float32}
    return [kinds.get(name, tf.string) for name in census.HEADER]


def input_fn(tf, path, training, seed, threads):
    dataset = tf.data.experimental.make_csv_dataset(
        path, batch_size=BATCH_SIZE, column_defaults=column_defaults(tf),
        label_name="label", num_epochs=None if training else 1,
        shuffle=training, shuffle_buffer_size=SHUFFLE_BUFFER,
        shuffle_seed=seed, num_parallel_reads=1)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return dataset.with_options(options)


def feature_columns(tf):
    fc = tf.feature_column
    vocab = [
        fc.categorical_column_with_vocabulary_list("workclass",
                                                   census.WORKCLASS),
        fc.categorical_column_with_vocabulary_list("education",
                                                   census.EDUCATION),
        fc.categorical_column_with_vocabulary_list("marital_status",
                                                   census.MARITAL_STATUS),
        fc.categorical_column_with_vocabulary_list("relationship",
                                                   census.RELATIONSHIP),
        fc.categorical_column_with_vocabulary_list("gender", census.GENDER),
    ]
    hashed = [fc.categorical_column_with_hash_bucket(key, size)
              for key, size in HASH_BUCKETS.items()]
    numeric = {key: fc.numeric_column(key) for key in
               ["age", "education_num", "capital_gain", "capital_loss",
                "hours_per_week"]}
    age_buckets = fc.bucketized_column(numeric["age"], AGE_BOUNDARIES)
    crosses = [
        fc.crossed_column(["education", "occupation"], CROSS_BUCKETS),
        fc.crossed_column([age_buckets, "education", "occupation"],
                          CROSS_BUCKETS),
    ]
    wide = (vocab + hashed + [age_buckets] + crosses +
            [numeric[k] for k in ["education_num", "capital_gain",
                                  "capital_loss", "hours_per_week"]])
    deep = (list(numeric.values()) +
            [fc.indicator_column(c) for c in vocab] +
            [fc.embedding_column(c, dimension=EMBEDDING_DIM)
             for c in hashed])
    return wide, deep


def run_one(args, model, threads, train_file, eval_file):
    """One (model, threads) measurement in this process: a JSON line."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")

    class StepTimer(tf.estimator.SessionRunHook):
        def __init__(self, warmup):
            self.warmup = warmup
            self.steps = 0
            self.t_warmup = None
            self.t_last = None

        def after_run(self, run_context, run_values):
            self.steps += 1
            self.t_last = time.perf_counter()
            if self.steps == self.warmup:
                self.t_warmup = self.t_last

    model_dir = tempfile.mkdtemp(prefix="tf_canned_bench_")
    try:
        config = tf.estimator.RunConfig(
            model_dir=model_dir, tf_random_seed=args.seed,
            session_config=tf.compat.v1.ConfigProto(
                intra_op_parallelism_threads=threads,
                inter_op_parallelism_threads=threads))
        wide, deep = feature_columns(tf)
        if model == "linear":
            est = tf.estimator.LinearClassifier(feature_columns=wide,
                                                config=config)
        elif model == "dnn":
            est = tf.estimator.DNNClassifier(hidden_units=HIDDEN_UNITS,
                                             feature_columns=deep,
                                             config=config)
        else:
            est = tf.estimator.DNNLinearCombinedClassifier(
                linear_feature_columns=wide, dnn_feature_columns=deep,
                dnn_hidden_units=HIDDEN_UNITS,
                linear_optimizer=tf.keras.optimizers.legacy.Ftrl(
                    learning_rate=0.2),
                dnn_optimizer=tf.keras.optimizers.legacy.Adagrad(
                    learning_rate=0.05),
                config=config)
        timer = StepTimer(args.warmup)
        start = time.perf_counter()
        est.train(lambda: input_fn(tf, train_file, True, args.seed, threads),
                  steps=args.steps, hooks=[timer])
        wall = time.perf_counter() - start
        start = time.perf_counter()
        metrics = est.evaluate(
            lambda: input_fn(tf, eval_file, False, args.seed, threads))
        eval_seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    timed = timer.steps - args.warmup
    print(json.dumps({
        "peer": "tf", "model": model, "threads": threads,
        "batch": BATCH_SIZE, "steps": timer.steps, "warmup": args.warmup,
        "steps_per_sec": round(timed / (timer.t_last - timer.t_warmup), 1),
        "wall_seconds": round(wall, 2),
        "accuracy": round(float(metrics["accuracy"]), 4),
        "auc": round(float(metrics["auc"]), 4),
        "eval_seconds": round(eval_seconds, 2),
    }), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work_dir", default="/tmp/estc-canned")
    ap.add_argument("--train_rows", type=int, default=32768)
    ap.add_argument("--eval_rows", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "THREADS"),
                    help=argparse.SUPPRESS)  # a child process's run
    args = ap.parse_args()
    if not 0 < args.warmup < args.steps:
        print(f"tf_canned_bench: --warmup ({args.warmup}) must be in "
              f"(0, --steps ({args.steps}))", file=sys.stderr)
        return 2
    models = args.models.split(",")
    for model in models:
        if model not in MODELS:
            print(f"tf_canned_bench: unknown model {model!r}",
                  file=sys.stderr)
            return 2

    train_file = os.path.join(args.work_dir,
                              f"census_train_{args.train_rows}.csv")
    eval_file = os.path.join(args.work_dir,
                             f"census_eval_{args.eval_rows}.csv")
    if args.one:
        run_one(args, args.one[0], int(args.one[1]), train_file, eval_file)
        return 0

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    probe = subprocess.run([sys.executable, "-c", "import tensorflow"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"SKIP tensorflow cannot be imported: {reason}")
        return 0
    os.makedirs(args.work_dir, exist_ok=True)
    for path, rows, seed in ((train_file, args.train_rows, TRAIN_SEED),
                             (eval_file, args.eval_rows, EVAL_SEED)):
        if not os.path.exists(path):
            print(json.dumps({"data": census.write_table(path, rows, seed)}),
                  flush=True)
    for threads in [int(t) for t in args.threads.split(",")]:
        for model in models:
            rc = subprocess.call(
                [sys.executable, os.path.abspath(__file__),
                 "--work_dir", args.work_dir,
                 "--train_rows", str(args.train_rows),
                 "--eval_rows", str(args.eval_rows),
                 "--steps", str(args.steps), "--warmup", str(args.warmup),
                 "--seed", str(args.seed), "--one", model, str(threads)])
            if rc != 0:
                return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
