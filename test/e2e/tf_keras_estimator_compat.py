#!/usr/bin/env python3
"""model_to_estimator against tf.keras 2.15: training, metrics, writing back.

For each case tf.keras builds and compiles a model and saves it (.keras or
.h5); Keras then loads the file and trains it with train_on_batch on fixed
batches (no shuffling, dropout 0), evaluates it and predicts; estc's
model_to_estimator (keras_estimator_tool) does the same from the same file:

  - the weights after the steps, BatchNormalization's moving statistics
    included, equal Keras's within float32 noise;
  - evaluate's metrics equal Keras's evaluate (same names);
  - the file estc writes back loads in Keras (keras.models.load_model) and
    predicts what estc predicts;
  - TF's own model_to_estimator (checkpoint_format="saver") names the
    model's variables in its checkpoint as estc does (Keras's names), and
    its evaluate's metric names are estc's (TF's v1 graph prefixes a metric
    object of a several-output model more than once,
    "reg_reg_reg_root_mean_squared_error": those repeats are collapsed
    before comparing).

Then the refusals: an uncompiled model, an unknown optimizer, loss and
metric, an unsupported argument, and features missing or of the wrong
dtype or shape, each one line.

Keras 3: with --keras3-python (or $ESTC_KERAS3_PYTHON) naming a Python
whose `keras` is 3.x, two models compiled with Keras 3's spellings are
trained, evaluated and written back the same way against Keras 3
(KERAS_BACKEND jax unless set); without it, one SKIP line.

Then whole keras.applications networks trained with their base trainable
(MobileNetV2, EfficientNetB0; ResNet50 and InceptionV3, slower, when --only
names them): every weight and moving statistic after 10 steps as close to
float64 Keras as float32 Keras is (check_trained says why that and not a
fixed tolerance).

usage: tf_keras_estimator_compat.py --tool=build/bin/keras_estimator_tool
           --work=DIR [--only REGEX] [--skip REGEX] [--first-step] [--verbose]
           [--keras3-python=PY]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from case_tool import import_tf

STEPS = 10
BATCH = 8
# float32 arithmetic in another order, over 10 steps of adaptive
# optimizers: relative 1e-4 of a weight, or absolute 2e-5.
RTOL = 1e-4
ATOL = 2e-5


def tensor(np, a):
    a = np.asarray(a)
    dtype = {"float32": "float32", "float64": "float64", "int64": "int64",
             "int32": "int32"}[str(a.dtype)]
    return {"dtype": dtype, "shape": list(a.shape),
            "values": a.reshape(-1).tolist()}


# --- The models -------------------------------------------------------------

def classifier(tf):
    """Dense / BatchNormalization / Dropout classifier, Adam, sparse
    categorical crossentropy on softmax probabilities, accuracy."""
    k = tf.keras
    x = k.Input((6,), name="x")
    h = k.layers.Dense(16, activation="relu", name="hidden")(x)
    h = k.layers.BatchNormalization(name="bn")(h)
    h = k.layers.Dropout(0.0, name="drop")(h)
    p = k.layers.Dense(3, activation="softmax", name="probs")(h)
    m = k.Model(x, p)
    m.compile(optimizer=k.optimizers.Adam(0.01),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def dropout_classifier(tf):
    """The classifier with Dropout(0.5): evaluate and predict (no training
    steps) equal Keras's only if the dropout is off outside training."""
    k = tf.keras
    x = k.Input((6,), name="x")
    h = k.layers.Dense(16, activation="relu", name="hidden")(x)
    h = k.layers.Dropout(0.5, name="drop")(h)
    p = k.layers.Dense(3, name="logits")(h)
    m = k.Model(x, p)
    m.compile(optimizer="adam",
              loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy", k.metrics.SparseCategoricalCrossentropy(
                  from_logits=True, name="xent")])
    return m


def classifier_data(np, rng, n):
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = (np.argmax(x[:, :3], axis=1)).astype(np.int64)
    return {"x": x}, y


def regularized(tf):
    """Weight and activity regularizers (L1, L2, L1L2) and constraints
    (MaxNorm, NonNeg, UnitNorm, MinMaxNorm) of conv, batch-norm, PReLU,
    depthwise, separable and dense layers: the penalties in the loss of
    training and evaluation as Keras adds them, the constraints applied
    after each update."""
    k = tf.keras
    R, C = k.regularizers, k.constraints
    x = k.Input((8, 8, 2), name="image")
    h = k.layers.Conv2D(4, 3, padding="same", name="conv",
                        kernel_regularizer=R.L2(0.01),
                        bias_regularizer=R.L1(0.02),
                        kernel_constraint=C.MaxNorm(1.5, axis=[0, 1, 2]))(x)
    # PReLU before the batch norm: a bias right before one has no gradient
    # but rounding noise (the batch mean takes it out), which Adam would
    # turn into steps of either sign on either side.
    h = k.layers.PReLU(name="prelu", alpha_regularizer=R.L2(0.05))(h)
    h = k.layers.BatchNormalization(name="bn", gamma_regularizer=R.L1(0.01),
                                    beta_regularizer=R.L2(0.01),
                                    gamma_constraint=C.NonNeg())(h)
    h = k.layers.DepthwiseConv2D(
        3, name="dw", depthwise_regularizer=R.L1L2(0.01, 0.01),
        depthwise_constraint=C.UnitNorm(axis=[0, 1]))(h)
    h = k.layers.SeparableConv2D(
        4, 3, name="sep", depthwise_regularizer=R.L2(0.01),
        pointwise_regularizer=R.L1(0.01),
        pointwise_constraint=C.MinMaxNorm(0.5, 1.0, rate=0.5,
                                          axis=[0, 1, 2]),
        activity_regularizer=R.L2(0.001))(h)
    h = k.layers.Flatten(name="flat")(h)
    h = k.layers.Dense(6, activation="relu", name="dense",
                       kernel_regularizer=R.L1L2(l1=0.001, l2=0.01),
                       bias_regularizer=R.L2(0.01),
                       activity_regularizer=R.L1(0.01),
                       kernel_constraint=C.MaxNorm(2.0))(h)
    p = k.layers.Dense(3, activation="softmax", name="probs",
                       kernel_regularizer="l2")(h)
    m = k.Model(x, p)
    m.compile(optimizer=k.optimizers.Adam(0.01),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def regularized_text(tf):
    """The regularizers and constraints of Embedding, MultiHeadAttention
    (its four projections') and LSTM (kernel, recurrent kernel, bias, the
    output's activity); plain SGD: the key projection's bias has no
    gradient but rounding noise (softmax ignores a constant), which Adam
    would turn into steps."""
    k = tf.keras
    R, C = k.regularizers, k.constraints
    # Six tokens a row: the attention's scores of a run-time length are
    # [batch, heads, length, length], which the arena cannot lay out yet.
    ids = k.Input((6,), dtype="int32", name="tokens")
    e = k.layers.Embedding(20, 8, name="emb",
                           embeddings_regularizer=R.L2(0.01),
                           embeddings_constraint=C.MaxNorm(1.0, axis=1))(ids)
    h = k.layers.MultiHeadAttention(
        2, 4, name="mha", kernel_regularizer=R.L2(0.01),
        bias_regularizer=R.L1(0.01),
        kernel_constraint=C.MaxNorm(1.5, axis=[0, 1]))(e, e)
    h = k.layers.LSTM(3, name="lstm", kernel_regularizer=R.L2(0.01),
                      recurrent_regularizer=R.L1(0.01),
                      bias_regularizer=R.L2(0.01),
                      activity_regularizer=R.L2(0.01),
                      recurrent_constraint=C.MaxNorm(1.0))(h)
    logits = k.layers.Dense(2, name="head")(h)
    m = k.Model(ids, logits)
    m.compile(optimizer=k.optimizers.SGD(0.2),
              loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    return m


def tokens_data(np, rng, n):
    """Six token ids a row (0 included, no mask), a class from the first."""
    ids = rng.integers(0, 20, size=(n, 6)).astype(np.int32)
    return {"tokens": ids}, (ids[:, 0] > 10).astype(np.int64)


def regularized_data(np, rng, n):
    x = rng.normal(size=(n, 8, 8, 2)).astype(np.float32)
    y = ((x[:, :4, :4, 0].sum(axis=(1, 2)) > 0).astype(np.int64)
         + (x[:, 0, 0, 1] > 1).astype(np.int64))
    return {"image": x}, y


def two_outputs(tf):
    """Two inputs, a shared trunk, two outputs with two losses and
    loss_weights, RMSprop with momentum, per-output metrics."""
    k = tf.keras
    a = k.Input((4,), name="a")
    b = k.Input((3,), name="b")
    h = k.layers.Concatenate(name="cat")([a, b])
    h = k.layers.Dense(8, activation="tanh", name="trunk")(h)
    cls = k.layers.Dense(3, name="cls")(h)
    reg = k.layers.Dense(1, name="reg")(h)
    m = k.Model([a, b], [cls, reg])
    m.compile(optimizer=k.optimizers.RMSprop(0.01, momentum=0.5),
              loss={"cls": k.losses.SparseCategoricalCrossentropy(
                  from_logits=True), "reg": "mse"},
              loss_weights={"cls": 1.0, "reg": 0.5},
              metrics={"cls": ["accuracy"],
                       "reg": ["mae", k.metrics.RootMeanSquaredError()]})
    return m


def two_outputs_data(np, rng, n):
    a = rng.normal(size=(n, 4)).astype(np.float32)
    b = rng.normal(size=(n, 3)).astype(np.float32)
    cls = (np.argmax(a[:, :3] + b, axis=1)).astype(np.int64)
    reg = (a.sum(axis=1, keepdims=True) - b[:, :1]).astype(np.float32)
    return {"a": a, "b": b}, {"cls": cls, "reg": reg}


def sgd_schedule(tf):
    """SGD with Nesterov momentum on an ExponentialDecay schedule and
    clipnorm; binary crossentropy on a sigmoid; accuracy, AUC, precision."""
    k = tf.keras
    x = k.Input((5,), name="features")
    h = k.layers.Dense(8, activation="relu", name="d1")(x)
    h = k.layers.BatchNormalization(name="bn1", momentum=0.9)(h)
    p = k.layers.Dense(1, activation="sigmoid", name="p")(h)
    m = k.Model(x, p)
    sched = k.optimizers.schedules.ExponentialDecay(0.1, 3, 0.5)
    m.compile(optimizer=k.optimizers.SGD(sched, momentum=0.9, nesterov=True,
                                         clipnorm=1.0),
              loss="binary_crossentropy",
              metrics=["accuracy", k.metrics.AUC(name="auc"),
                       k.metrics.Precision(name="precision")])
    return m


def sgd_schedule_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32).reshape(n, 1)
    return {"features": x}, y


def mobilenet_frozen(tf):
    """The seeds' recipe, small: keras.applications.MobileNetV2 (weights
    None, 32x32, alpha 0.35) with its base frozen (trainable=False: its
    BatchNormalization in inference mode), global average pooling and a
    new dense head, Adam and sparse categorical crossentropy from logits."""
    k = tf.keras
    base = k.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35,
                                      include_top=False, weights=None)
    base.trainable = False
    x = k.Input((32, 32, 3), name="image")
    h = base(x, training=False)
    h = k.layers.GlobalAveragePooling2D(name="pool")(h)
    logits = k.layers.Dense(4, name="head")(h)
    m = k.Model(x, logits)
    m.compile(optimizer=k.optimizers.Adam(0.01),
              loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    return m


def text_bilstm(tf):
    """A text model: int32 token ids of any length (each batch its own),
    Embedding with mask_zero, a Bidirectional LSTM, a Dense head; Adam,
    sparse categorical crossentropy from logits."""
    k = tf.keras
    ids = k.Input((None,), dtype="int32", name="ids")
    e = k.layers.Embedding(20, 4, mask_zero=True, name="emb")(ids)
    h = k.layers.Bidirectional(k.layers.LSTM(3), name="bi")(e)
    logits = k.layers.Dense(2, name="head")(h)
    m = k.Model(ids, logits)
    m.compile(optimizer=k.optimizers.Adam(0.02),
              loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    return m


def text_data(np, rng, n):
    """Token ids padded with 0 to 6; batch b's longest sequence is
    2 + b % 5 long (so each batch, cut to it, has its own length)."""
    ids = rng.integers(1, 20, size=(n, 6)).astype(np.int32)
    for i in range(n):
        longest = 2 + (i // BATCH) % 5
        length = longest if i % BATCH == 0 else rng.integers(1, longest + 1)
        ids[i, length:] = 0
    y = (ids[:, 0] > 10).astype(np.int64)
    return {"ids": ids}, y


def mobilenet_data(np, rng, n):
    x = rng.uniform(-1, 1, size=(n, 32, 32, 3)).astype(np.float32)
    y = rng.integers(0, 4, n).astype(np.int64)
    return {"image": x}, y


# Every optimizer, schedule, clipping and loss of the mapping on a small
# regression / classification model (weights after the steps and the
# metrics only: the names and the written-back file are the cases' above).
def optimizer_case(opt_fn, loss="mse", out_units=2, activation=None,
                   metrics=("mae",)):
    def build(tf):
        k = tf.keras
        x = k.Input((5,), name="x")
        h = k.layers.Dense(6, activation="tanh", name="h")(x)
        y = k.layers.Dense(out_units, activation=activation, name="y")(h)
        m = k.Model(x, y)
        loss_obj = loss(k) if callable(loss) else loss
        # Nadam runs eagerly: in a tf.function, tf.keras 2.15's Nadam
        # compares a Python counter traced once (_u_product_counter), so
        # its _u_product moves once per variable and step, not once per
        # step; eagerly it computes Nadam.
        opt = opt_fn(k)
        m.compile(optimizer=opt, loss=loss_obj, metrics=list(metrics),
                  run_eagerly=type(opt).__name__ == "Nadam" or None)
        return m
    return build


def regression_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = np.stack([x[:, 0] * x[:, 1], np.abs(x[:, 2])], 1).astype(np.float32)
    return {"x": x}, y


def positive_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = np.stack([np.abs(x[:, 0]) + 0.5, x[:, 1] ** 2 + 0.1],
                 1).astype(np.float32)
    return {"x": x}, y


def distribution_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = rng.uniform(0.05, 1, size=(n, 3)).astype(np.float32)
    return {"x": x}, y / y.sum(1, keepdims=True)


def onehot_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.argmax(x[:, :3], 1)]
    return {"x": x}, y


def binary_data(np, rng, n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = (x[:, :2] > 0).astype(np.float32)
    return {"x": x}, y


def sched(name, **kw):
    return lambda k: getattr(k.optimizers.schedules, name)(**kw)


OPTIMIZER_CASES = [  # name, optimizer(keras), loss, units, activation, data
    ("opt_adam_amsgrad", lambda k: k.optimizers.Adam(0.02, amsgrad=True),
     "mse", 2, None, regression_data),
    ("opt_adamw", lambda k: k.optimizers.AdamW(0.02, weight_decay=0.1),
     "mse", 2, None, regression_data),
    ("opt_rmsprop_centered", lambda k: k.optimizers.RMSprop(
        0.01, rho=0.8, momentum=0.3, centered=True), "mse", 2, None,
     regression_data),
    ("opt_rmsprop", lambda k: k.optimizers.RMSprop(0.01), "mae", 2, None,
     regression_data),
    ("opt_adagrad", lambda k: k.optimizers.Adagrad(0.1, clipvalue=0.05),
     "mse", 2, None, regression_data),
    ("opt_adadelta", lambda k: k.optimizers.Adadelta(1.0), "mse", 2, None,
     regression_data),
    ("opt_adamax", lambda k: k.optimizers.Adamax(0.02), "mse", 2, None,
     regression_data),
    ("opt_nadam", lambda k: k.optimizers.Nadam(0.02), "mse", 2, None,
     regression_data),
    ("opt_ftrl", lambda k: k.optimizers.Ftrl(
        0.1, l1_regularization_strength=0.01,
        l2_regularization_strength=0.01), "mse", 2, None, regression_data),
    ("opt_sgd_global_clipnorm", lambda k: k.optimizers.SGD(
        0.05, momentum=0.5, global_clipnorm=0.5), "mse", 2, None,
     regression_data),
    ("sched_piecewise", lambda k: k.optimizers.SGD(sched(
        "PiecewiseConstantDecay", boundaries=[2, 5],
        values=[0.1, 0.05, 0.01])(k)), "mse", 2, None, regression_data),
    ("sched_polynomial", lambda k: k.optimizers.Adam(sched(
        "PolynomialDecay", initial_learning_rate=0.05, decay_steps=6,
        end_learning_rate=0.001, power=2.0)(k)), "mse", 2, None,
     regression_data),
    ("sched_inverse_time", lambda k: k.optimizers.SGD(sched(
        "InverseTimeDecay", initial_learning_rate=0.1, decay_steps=2,
        decay_rate=0.5, staircase=True)(k), momentum=0.9), "mse", 2, None,
     regression_data),
    ("sched_cosine", lambda k: k.optimizers.SGD(sched(
        "CosineDecay", initial_learning_rate=0.1, decay_steps=8,
        alpha=0.1)(k)), "mse", 2, None, regression_data),
    ("sched_cosine_restarts", lambda k: k.optimizers.SGD(sched(
        "CosineDecayRestarts", initial_learning_rate=0.1,
        first_decay_steps=3)(k)), "mse", 2, None, regression_data),
    ("loss_categorical_smoothing", lambda k: k.optimizers.Adam(0.01),
     lambda k: k.losses.CategoricalCrossentropy(label_smoothing=0.1), 3,
     "softmax", onehot_data),
    ("loss_categorical_logits", lambda k: k.optimizers.Adam(0.01),
     lambda k: k.losses.CategoricalCrossentropy(from_logits=True), 3, None,
     onehot_data),
    ("loss_binary_logits", lambda k: k.optimizers.Adam(0.01),
     lambda k: k.losses.BinaryCrossentropy(from_logits=True,
                                           label_smoothing=0.2), 2, None,
     binary_data),
    ("loss_mape", lambda k: k.optimizers.Adam(0.01), "mape", 2, None,
     positive_data),
    ("loss_msle", lambda k: k.optimizers.Adam(0.01), "msle", 2, "softplus",
     positive_data),
    ("loss_huber", lambda k: k.optimizers.Adam(0.01),
     lambda k: k.losses.Huber(delta=0.5), 2, None, regression_data),
    ("loss_hinge", lambda k: k.optimizers.Adam(0.01), "hinge", 2, None,
     binary_data),
    ("loss_squared_hinge", lambda k: k.optimizers.Adam(0.01),
     "squared_hinge", 2, None, binary_data),
    ("loss_kld", lambda k: k.optimizers.Adam(0.01), "kld", 3, "softmax",
     distribution_data),
    ("loss_poisson", lambda k: k.optimizers.Adam(0.01), "poisson", 2,
     "softplus", positive_data),
    ("loss_cosine", lambda k: k.optimizers.Adam(0.01), "cosine_similarity",
     2, None, regression_data),
    ("loss_log_cosh", lambda k: k.optimizers.Adam(0.01), "log_cosh", 2,
     None, regression_data),
]


CASES = [  # name, builder, data, file suffix, training steps
    ("classifier", classifier, classifier_data, ".keras", STEPS),
    ("classifier_h5", classifier, classifier_data, ".h5", STEPS),
    ("dropout_inference", dropout_classifier, classifier_data, ".keras", 0),
    ("two_outputs", two_outputs, two_outputs_data, ".keras", STEPS),
    ("sgd_schedule", sgd_schedule, sgd_schedule_data, ".keras", STEPS),
    ("text_bilstm", text_bilstm, text_data, ".keras", STEPS),
    ("mobilenet_v2_frozen", mobilenet_frozen, mobilenet_data, ".keras",
     STEPS),
    ("regularized", regularized, regularized_data, ".keras", STEPS),
    ("regularized_h5", regularized, regularized_data, ".h5", STEPS),
    ("regularized_text", regularized_text, tokens_data, ".keras", STEPS),
]


# --- One case ---------------------------------------------------------------

def as_keras_y(model, y):
    if isinstance(y, dict):
        return [y[n] for n in model.output_names]
    return y


# Token-id features of any length: each batch is cut to its longest
# sequence (trailing padding columns dropped), so batches differ in length;
# estc's batches mark them as sequence features (Batch::sequence_features).
SEQUENCES = {"ids"}


def estc_batch(np, x, y, several):
    b = {"features": {k: tensor(np, v) for k, v in x.items()}}
    seq = [k for k in x if k in SEQUENCES]
    if seq:
        b["sequence_features"] = seq
    if y is not None:
        if several:
            for k, v in y.items():
                b["features"]["labels/" + k] = tensor(np, v)
        else:
            b["labels"] = tensor(np, y)
    return b


def take(d, lo, hi):
    if isinstance(d, dict):
        out = {k: v[lo:hi] for k, v in d.items()}
        for k in SEQUENCES & set(out):
            used = (out[k] != 0).any(axis=0).nonzero()[0]
            out[k] = out[k][:, :max(1, int(used[-1]) + 1 if len(used) else 1)]
        return out
    return d[lo:hi]


def close(np, want, got, rtol=RTOL, atol=ATOL):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    err = np.abs(want - got) - (atol + rtol * np.abs(want))
    return float(np.max(err, initial=-1.0)) <= 0.0, float(
        np.max(np.abs(want - got), initial=0.0))


def run_tool(tool, work, case):
    path = os.path.join(work, "case.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(case, f)
    return subprocess.run([tool, path], capture_output=True, text=True,
                          check=False, timeout=600)


def compare_outputs(np, keras_eval, keras_pred, got):
    """evaluate's metrics and the predictions, estc's against Keras's."""
    problems = []
    for mname, value in got["eval"].items():
        if mname == "global_step":
            continue
        if mname not in keras_eval:
            problems.append(f"metric {mname}: Keras's evaluate has none "
                            f"({sorted(keras_eval)})")
            continue
        ok, _ = close(np, [keras_eval[mname]], [value], 2e-4, 2e-5)
        if not ok:
            problems.append(f"metric {mname}: Keras {keras_eval[mname]:.7g}"
                            f", estc {value:.7g}")
    for oname, want in keras_pred.items():
        ok, err = close(np, want, got["predictions"][oname]["values"],
                        2e-4, 2e-5)
        if not ok:
            problems.append(f"prediction {oname}: max |diff| {err:.3g}")
    return problems


def tf_estimator_names(tf, np, path, x, y, work):
    """TF's own model_to_estimator (saver checkpoints): its checkpoint's
    model variables (not training/..., not global_step) and its evaluate's
    metric names."""
    model_dir = os.path.join(work, "tf_estimator")
    est = tf.keras.estimator.model_to_estimator(
        keras_model_path=path, model_dir=model_dir,
        checkpoint_format="saver",
        config=tf.estimator.RunConfig(tf_random_seed=1))

    def input_fn():
        return tf.data.Dataset.from_tensors(
            (x, y if not isinstance(y, dict) else dict(y)))
    est.train(input_fn, steps=1)
    result = est.evaluate(input_fn, steps=1)
    names = sorted(n for n, _ in tf.train.list_variables(model_dir)
                   if not n.startswith("training/") and n != "global_step")
    metric_names = set()
    for k in result:
        if k in ("loss", "global_step"):
            continue
        # TF's repeated output prefix ("reg_reg_reg_rmse" -> "reg_rmse").
        m = re.match(r"^((\w+?)_)\1+(.*)$", k)
        metric_names.add(m.group(1) + m.group(3) if m else k)
    return names, metric_names


def check_case(tf, np, args, name, build, data, suffix, steps,
               light=False):
    k = tf.keras
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tf.keras.utils.set_random_seed(7)
    model = build(tf)
    path = os.path.join(work, "model" + suffix)
    model.save(path)
    rng = np.random.default_rng(11)
    n = BATCH * (STEPS + 3)
    x, y = data(np, rng, n)
    several = isinstance(y, dict)
    train = [(take(x, i * BATCH, (i + 1) * BATCH),
              take(y, i * BATCH, (i + 1) * BATCH)) for i in range(steps)]
    ex = take(x, STEPS * BATCH, (STEPS + 2) * BATCH)
    ey = take(y, STEPS * BATCH, (STEPS + 2) * BATCH)
    px = take(x, (STEPS + 2) * BATCH, n)

    # Keras from the file.
    keras_model = k.models.load_model(path)
    for bx, by in train:
        keras_model.train_on_batch(bx, as_keras_y(keras_model, by))
    weights = {w.name[:-2]: w.numpy() for w in keras_model.weights}
    keras_eval = keras_model.evaluate(ex, as_keras_y(keras_model, ey),
                                      batch_size=BATCH, verbose=0,
                                      return_dict=True)
    keras_pred = keras_model.predict_on_batch(px)
    if not isinstance(keras_pred, list):
        keras_pred = [keras_pred]
    keras_pred = dict(zip(keras_model.output_names, keras_pred))

    # estc from the file.
    out = os.path.join(work, "written" + suffix)
    case = {"model": path, "model_dir": os.path.join(work, "estc"),
            "seed": 1,
            "train": [estc_batch(np, bx, by, several) for bx, by in train],
            "eval": [estc_batch(np, take(ex, i * BATCH, (i + 1) * BATCH),
                                take(ey, i * BATCH, (i + 1) * BATCH),
                                several) for i in range(2)],
            "predict": estc_batch(np, px, None, several)}
    if steps:
        case["write_back"] = out
    run = run_tool(args.tool, work, case)
    if run.returncode != 0:
        print(f"FAIL {name}: keras_estimator_tool exited {run.returncode}: "
              f"{run.stderr.strip().splitlines()[-1:]}")
        return False
    got = json.loads(run.stdout)
    problems = []

    if not steps:
        # Evaluate and predict on the file's weights (no checkpoint yet).
        problems += compare_outputs(np, keras_eval, keras_pred, got)
        if problems:
            print(f"FAIL {name}: " + "; ".join(problems))
            return False
        print(f"ok   {name}: evaluate and predict from the file's weights "
              f"match tf.keras")
        return True
    # The weights after the steps.
    for wname, want in weights.items():
        if wname not in got["variables"]:
            problems.append(f"weight {wname} missing from estc's checkpoint")
            continue
        ok, err = close(np, want, got["variables"][wname]["values"])
        if not ok:
            problems.append(f"weight {wname}: max |diff| {err:.3g}")
    problems += compare_outputs(np, keras_eval, keras_pred, got)
    if light:
        if problems:
            print(f"FAIL {name}: " + "; ".join(problems))
            return False
        print(f"ok   {name}: {len(weights)} weights after {steps} steps and "
              f"the metrics match tf.keras")
        return True
    # The written-back file, in Keras.
    if got["written"] != len(keras_model.weights):
        problems.append(f"wrote {got['written']} weights of "
                        f"{len(keras_model.weights)}")
    written = k.models.load_model(out)
    back = written.predict_on_batch(px)
    if not isinstance(back, list):
        back = [back]
    for oname, want in zip(written.output_names, back):
        ok, err = close(np, want, got["predictions"][oname]["values"],
                        1e-5, 1e-6)
        if not ok:
            problems.append(f"written-back {oname}: Keras predicts max "
                            f"|diff| {err:.3g} from estc")
    # TF's model_to_estimator: variable and metric names.
    tf_names, tf_metrics = tf_estimator_names(
        tf, np, path, take(x, 0, BATCH), take(y, 0, BATCH), work)
    estc_names = set(got["checkpoint"])
    missing = [v for v in tf_names if v not in estc_names]
    if missing:
        problems.append(f"TF's checkpoint variables not in estc's: {missing}")
    if sorted(got["variables"]) != tf_names:
        problems.append(f"Keras variables {sorted(got['variables'])} != TF "
                        f"model_to_estimator's {tf_names}")
    estc_metrics = {m for m in got["eval"] if m not in ("loss", "global_step")}
    if estc_metrics != tf_metrics:
        problems.append(f"metric names {sorted(estc_metrics)} != TF "
                        f"model_to_estimator's {sorted(tf_metrics)}")
    if problems:
        print(f"FAIL {name}: " + "; ".join(problems))
        return False
    print(f"ok   {name}: {len(weights)} weights after {steps} steps, "
          f"{len(estc_metrics)} metrics, predictions and the written-back "
          f"file match tf.keras; variable and metric names match TF's "
          f"model_to_estimator")
    return True


# --- Whole networks trained (base trainable) -------------------------------

def application(name, lr, size=32):
    """keras.applications' `name` (weights None, size x size; MobileNetV2 at
    alpha 0.35), trainable, global average pooling and a dense head; SGD
    with momentum (not Adam: BatchNormalization makes the gradients of
    every beta before a convolution and a BatchNormalization exactly zero,
    which float32 leaves as rounding noise, and Adam turns noise into
    steps of lr), sparse categorical crossentropy from logits."""
    def build(tf):
        k = tf.keras
        kw = {"alpha": 0.35} if name == "MobileNetV2" else {}
        base = getattr(k.applications, name)(
            input_shape=(size, size, 3), include_top=False, weights=None,
            **kw)
        x = k.Input((size, size, 3), name="image")
        h = k.layers.GlobalAveragePooling2D(name="pool")(base(x))
        logits = k.layers.Dense(4, name="head")(h)
        m = k.Model(x, logits)
        m.compile(optimizer=k.optimizers.SGD(lr, momentum=0.9),
                  loss=k.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
        return m
    return build


# name, application, learning rate, batch size, image size; those marked
# slow run only when --only names them (ResNet50 about 4 minutes on 2
# cores, InceptionV3 (75x75 at least) longer): no ctest entry runs them.
TRAINED_CASES = [
    ("mobilenet_v2_trained", "MobileNetV2", 1e-4, 32, 32, False),
    ("efficientnet_b0_trained", "EfficientNetB0", 1e-4, 16, 32, False),
    ("resnet50_trained", "ResNet50", 1e-4, 8, 32, True),
    ("inception_v3_trained", "InceptionV3", 1e-4, 4, 75, True),
]
# estc's distance from exact arithmetic may be at most NOISE_FACTOR times
# the larger of two float32 Keras runs' (or NOISE_ATOL): see check_trained.
NOISE_FACTOR = 5.0
NOISE_ATOL = 1e-6


def relu_layers(k, model):
    """Every plain ReLU of `model` (nested models included): ReLU layers
    without negative slope or threshold (kinks 0 and max_value) and
    Activation("relu" / "relu6") layers."""
    out = []
    for layer in model.layers:
        if isinstance(layer, k.layers.ReLU):
            cfg = layer.get_config()
            if not cfg.get("negative_slope") and not cfg.get("threshold"):
                out.append(layer)
        elif isinstance(layer, k.layers.Activation):
            if layer.get_config().get("activation") in ("relu", "relu6"):
                out.append(layer)
        elif hasattr(layer, "layers"):
            out.extend(relu_layers(k, layer))
    return out


def relu_top(layer):
    """A ReLU's upper kink (infinity without one)."""
    if not hasattr(layer, "max_value"):
        return 6.0 if layer.get_config()["activation"] == "relu6" else \
            float("inf")
    return float("inf") if layer.max_value is None else float(layer.max_value)


def relu_inputs(tf, k, model, x):
    """The inputs of model's ReLU layers in one training-mode forward pass
    (which updates the model's moving statistics: use a throwaway model)."""
    seen = []
    for layer in relu_layers(k, model):
        def record(inputs, *_, _top=relu_top(layer), **__):
            seen.append(inputs.numpy())
            return tf.clip_by_value(inputs, 0, _top)
        layer.call = record
    model(x, training=True)
    return seen


def float64_twin(tf, np, build, model32):
    """`build`'s model in float64 (Keras's float64 policy) holding
    model32's weights."""
    k = tf.keras
    k.mixed_precision.set_global_policy("float64")
    try:
        model64 = build(tf)
    finally:
        k.mixed_precision.set_global_policy("float32")
    model64.set_weights([w.astype(np.float64) for w in model32.get_weights()])
    return model64


def near_kinks(tf, np, build, path, bx):
    """How many ReLU pre-activations of the first batch's training-mode
    forward pass float64 puts within float32's noise of a kink: within
    NOISE_FACTOR times Keras float32's largest error in that layer."""
    k = tf.keras
    keras32 = k.models.load_model(path)
    keras64 = float64_twin(tf, np, build, keras32)
    p32 = relu_inputs(tf, k, keras32, bx)
    p64 = relu_inputs(tf, k, keras64, bx.astype(np.float64))
    near = 0
    for a, b, layer in zip(p32, p64, relu_layers(k, keras64)):
        band = NOISE_FACTOR * float(np.max(np.abs(a - b), initial=0))
        near += int(np.sum(np.abs(b) < band) +
                    np.sum(np.abs(b - relu_top(layer)) < band))
    return near


def check_trained(tf, np, args, name, app, lr, batch,  # noqa: C901
                  size):
    """A whole network trained STEPS steps, every weight and every
    BatchNormalization moving statistic against Keras.

    A deep net trained from a random start is ill-conditioned: the
    convolutions before a BatchNormalization have gradients inversely
    proportional to their small weights, and float32 rounding grows, in 10
    steps, to a good part of what the steps moved some weights (Keras in
    float32 against Keras in float64 measures it: MobileNetV2 here, up to
    0.002 where the steps moved a BatchNormalization beta 0.0027; its
    moving statistics, which feed nothing back, 1e-3 of their movement).
    So no fixed tolerance separates noise from a bug. Instead Keras trains
    the file three times: in float64 (the exact answer, to float32's eyes)
    and twice in float32 (the second from initial weights moved by up to
    one ulp: another draw of the same noise). For every variable, estc's
    max |diff| from float64 may be at most NOISE_FACTOR times the larger
    of the two float32 runs' (plus NOISE_ATOL): estc is as close to exact
    arithmetic as Keras is. Measured: estc's ratio has median 1.4 and
    maximum 3.3 over MobileNetV2's 262 variables (a third draw of the
    noise; 5 leaves room for another machine's float32 order). A moving
    statistic updated with the wrong momentum or variance, a slot or a
    step missed, shows as a ratio in the hundreds.

    The one difference from Keras: the float64 model's BatchNormalization
    takes TF's unfused path, whose moving variance lacks the fused path's
    n / (n - 1); estc's follows float32 Keras's (fused) one, so those
    variables' distance from "exact" is that factor, the same for both.

    With --first-step, the weights after the first step are compared too
    (the tool's "train_first"): one step is well conditioned (Keras float32
    within ~1e-7 of float64) except at ReLU kinks. A network of ReLU6
    after batch norms (MobileNetV2: beta = 0 at the start, so the
    pre-activations' density is largest at the kink 0) has, in every
    batch, pre-activations that float64 puts within float32's rounding of
    a kink; which side float32 picks is chance (Keras float32 picks the
    other side for some of them too), and one such element of a late
    block (a channel of 32 elements at 1x1) moves its beta's step by 10%.
    So where the first batch has such pre-activations (near_kinks) the
    first step is not compared, with a note; the 10 steps are, against a
    floor that two float32 runs' own flips are part of. Found with seed 12
    of the data: all of the difference was block_16_depthwise_BN/beta's
    channel 323, whose float64 pre-activation is -3.1e-6 where float32's
    forward, Keras's and estc's alike, errs by 2.5e-6 on average and up to
    6e-5 in that layer (measured with every batch norm's moving statistics
    set to the batch's: estc's and TF's float32 inference forward passes
    are equally far from float64 in every layer of MobileNetV2). Before
    the statistics accumulated in f64 (compiler/Conversion/EstToLinalg/
    BatchNorm.cpp), estc's training forward was less accurate than
    Keras's; now its batch norm is more accurate than TF's.
    EfficientNetB0 (swish) has no ReLU and its first step is compared.
    """
    k = tf.keras
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    build = application(app, lr, size)
    tf.keras.utils.set_random_seed(7)
    model = build(tf)
    path = os.path.join(work, "model.keras")
    model.save(path)
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, size=(batch * STEPS, size, size, 3)).astype(
        np.float32)
    y = rng.integers(0, 4, batch * STEPS).astype(np.int64)
    train = [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
             for i in range(STEPS)]

    first_step = args.first_step
    if first_step:
        near = near_kinks(tf, np, build, path, train[0][0])
        if near:
            first_step = False
            print(f"note {name}: the first step is not compared: {near} "
                  f"pre-activations within float32's noise of a ReLU kink "
                  f"(check_trained)")
    keras32 = k.models.load_model(path)
    keras64 = float64_twin(tf, np, build, keras32)
    # Keras float32 again, each initial weight moved one ulp up or down: a
    # second draw of float32's noise (the larger of the two is the floor).
    keras32b = k.models.load_model(path)
    ulp = np.random.default_rng(5)
    keras32b.set_weights([
        np.nextafter(w, np.where(ulp.random(w.shape) < 0.5, -np.inf,
                                 np.inf)).astype(np.float32)
        for w in keras32.get_weights()])
    start = [w.numpy() for w in keras32.weights]
    snapshots = []
    for i, (bx, by) in enumerate(train):
        keras32.train_on_batch(bx, by)
        keras32b.train_on_batch(bx, by)
        keras64.train_on_batch(bx.astype(np.float64), by)
        if i + 1 == STEPS or (i == 0 and first_step):
            snapshots.append((i + 1, [[w.numpy() for w in m.weights] for m in
                                      (keras32, keras32b, keras64)]))

    case = {"model": path, "model_dir": os.path.join(work, "estc"),
            "seed": 1, "train_first": 1 if first_step else 0,
            "train": [estc_batch(np, {"image": bx}, by, False)
                      for bx, by in train]}
    run = run_tool(args.tool, work, case)
    if run.returncode != 0:
        print(f"FAIL {name}: keras_estimator_tool exited {run.returncode}: "
              f"{run.stderr.strip().splitlines()[-1:]}")
        return False
    got = json.loads(run.stdout)
    problems = []
    worst = {}
    names = [w.name[:-2] for w in keras32.weights]
    for step, (w32, w32b, w64) in snapshots:
        variables = got["variables_first" if step == 1 else "variables"]
        worst[step] = (0.0, "")
        for i, wname in enumerate(names):
            if wname not in variables:
                problems.append(f"weight {wname} missing from estc's "
                                f"checkpoint")
                continue
            exact = w64[i]
            est = np.asarray(variables[wname]["values"],
                             np.float64).reshape(exact.shape)
            keras_err = max(float(np.max(np.abs(w32[i] - exact), initial=0)),
                            float(np.max(np.abs(w32b[i] - exact), initial=0)))
            estc_err = float(np.max(np.abs(est - exact), initial=0))
            moved = float(np.max(np.abs(exact - start[i]), initial=0))
            ratio = estc_err / (keras_err + NOISE_ATOL)
            if args.verbose:
                e32 = float(np.max(np.abs(w32[i] - exact), initial=0))
                e32b = float(np.max(np.abs(w32b[i] - exact), initial=0))
                print(f"DBG{step} {ratio:8.3f} estc {estc_err:.3g} keras "
                      f"{e32:.3g} {e32b:.3g} moved {moved:.3g} {wname}")
            if estc_err > NOISE_FACTOR * keras_err + NOISE_ATOL:
                problems.append(f"{wname} after {step} step(s): max |estc - "
                                f"exact| {estc_err:.3g}, Keras float32's "
                                f"{keras_err:.3g} (moved {moved:.3g})")
            worst[step] = max(worst[step], (ratio, wname))
    if problems:
        print(f"FAIL {name}: {len(problems)} of "
              f"{len(snapshots) * len(names)} comparisons: " + "; ".join(problems[:12]))
        return False
    steps = " and ".join(str(st) for st in sorted(worst))
    ratios = "; ".join(f"{worst[st][0]:.2f}, {worst[st][1]}"
                       for st in sorted(worst))
    print(f"ok   {name}: {len(names)} weights and moving statistics after "
          f"{steps} steps (batch {batch}) as close to float64 Keras as "
          f"float32 Keras is (worst ratio {ratios})")
    return True


# --- Refusals ---------------------------------------------------------------

def check_refusals(tf, np, args):
    k = tf.keras
    work = os.path.join(args.work, "refusals")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ok = True

    def model(compile_args):
        x = k.Input((3,), name="x")
        m = k.Model(x, k.layers.Dense(2, name="d")(x))
        if compile_args is not None:
            m.compile(**compile_args)
        return m

    x = {"x": np.ones((2, 3), np.float32)}
    y = np.ones((2, 2), np.float32)
    cases = [
        ("uncompiled", None, None, "compile config: the model was not "
         "compiled"),
        ("optimizer", {"optimizer": k.optimizers.Lion(), "loss": "mse"},
         None, "compile config: unknown optimizer \"Lion\""),
        ("loss", {"optimizer": "adam",
                  "loss": k.losses.BinaryFocalCrossentropy()}, None,
         "compile config: loss of output \"d\": unknown loss "
         "\"BinaryFocalCrossentropy\""),
        ("metric", {"optimizer": "adam", "loss": "mse",
                    "metrics": [k.metrics.TopKCategoricalAccuracy()]}, None,
         "compile config: metric of output \"d\": unknown metric "
         "\"TopKCategoricalAccuracy\""),
        ("argument", {"optimizer": k.optimizers.SGD(weight_decay=0.01),
                      "loss": "mse"}, None,
         "compile config: optimizer SGD: weight_decay = 0.01 is not "
         "supported"),
        ("feature_missing", {"optimizer": "adam", "loss": "mse"},
         {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3), np.float32)},
         "model_to_estimator: the features lack the model's input \"x\""),
        ("feature_dtype", {"optimizer": "adam", "loss": "mse"},
         {"x": np.ones((2, 3), np.int64)},
         "model_to_estimator: feature \"x\" is I64, the model's input takes "
         "F32"),
        ("feature_shape", {"optimizer": "adam", "loss": "mse"},
         {"x": np.ones((2, 4), np.float32)},
         "model_to_estimator: feature \"x\" has shape [?, 4], the model's "
         "input takes [?, 3]"),
    ]
    for name, compile_args, features, want in cases:
        path = os.path.join(work, name + ".keras")
        model(compile_args).save(path)
        case = {"model": path, "model_dir": os.path.join(work, name),
                "train": [estc_batch(np, features or x, y, False)]}
        run = run_tool(args.tool, work, case)
        lines = run.stderr.strip().splitlines()
        last = lines[-1] if lines else ""
        if run.returncode != 1 or want not in last:
            print(f"FAIL refusal {name}: exit {run.returncode}, last line "
                  f"{last!r}, expected one containing {want!r}")
            ok = False
    if ok:
        print(f"ok   refusals: {len(cases)} one-line errors")
    return ok


# --- Keras 3, in its own Python ------------------------------------------

def keras3_models(keras):
    """Keras 3's spellings of the compile config: a classifier (Adam, a loss
    object, accuracy) and SGD with momentum on a schedule, binary
    crossentropy, AUC."""
    L = keras.layers
    x = keras.Input((6,), name="x")
    h = L.Dense(16, activation="relu", name="hidden")(x)
    h = L.BatchNormalization(name="bn")(h)
    p = L.Dense(3, name="logits")(h)
    a = keras.Model(x, p)
    a.compile(optimizer=keras.optimizers.Adam(0.01),
              loss=keras.losses.SparseCategoricalCrossentropy(
                  from_logits=True),
              metrics=["accuracy"])
    x = keras.Input((5,), name="features")
    h = L.Dense(8, activation="tanh", name="d1")(x)
    p = L.Dense(1, activation="sigmoid", name="p")(h)
    b = keras.Model(x, p)
    b.compile(optimizer=keras.optimizers.SGD(
        keras.optimizers.schedules.ExponentialDecay(0.1, 3, 0.5),
        momentum=0.9, clipnorm=1.0),
              loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.AUC(name="auc")])
    return {"k3_classifier": (a, "sparse"), "k3_sgd": (b, "binary")}


def keras3_side(mode, work):
    """Runs under Keras 3: `train` saves the models, trains them from their
    files with train_on_batch and writes what Keras computed; `check`
    loads the files estc wrote back and writes their predictions."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import keras  # pylint: disable=import-outside-toplevel
    if not keras.__version__.startswith("3."):
        raise SystemExit(f"not Keras 3: {keras.__version__}")
    keras.utils.set_random_seed(3)
    out = {"version": keras.__version__, "models": {}}
    for name, (model, kind) in keras3_models(keras).items():
        path = os.path.join(work, name + ".keras")
        in_name = model.inputs[0].name
        rng = np.random.default_rng(13)
        n = BATCH * (STEPS + 3)
        x = rng.normal(size=(n,) + tuple(model.inputs[0].shape[1:]))
        x = x.astype(np.float32)
        if kind == "sparse":
            y = np.argmax(x[:, :3], axis=1).astype(np.int64)
        else:
            y = (x[:, :1] > 0).astype(np.float32)
        if mode == "train":
            model.save(path)
            m = keras.models.load_model(path)
            for i in range(STEPS):
                m.train_on_batch(x[i * BATCH:(i + 1) * BATCH],
                                 y[i * BATCH:(i + 1) * BATCH])
            ev = m.evaluate(x[STEPS * BATCH:(STEPS + 2) * BATCH],
                            y[STEPS * BATCH:(STEPS + 2) * BATCH],
                            batch_size=BATCH, verbose=0, return_dict=True)
            out["models"][name] = {
                "input": in_name, "x": x.tolist(), "y": y.tolist(),
                "weights": {w.path: np.asarray(w.numpy()).tolist()
                            for w in m.weights},
                "eval": {k: float(v) for k, v in ev.items()},
                "predict": np.asarray(m.predict_on_batch(
                    x[(STEPS + 2) * BATCH:])).tolist()}
        else:
            m = keras.models.load_model(os.path.join(work,
                                                     name + "_written.keras"))
            out["models"][name] = {"predict": np.asarray(m.predict_on_batch(
                x[(STEPS + 2) * BATCH:])).tolist()}
    with open(os.path.join(work, f"keras3_{mode}.json"), "w",
              encoding="utf-8") as f:
        json.dump(out, f)
    return 0


def check_keras3(np, args, python):
    """The Keras 3 models: estc's training, metrics and written-back file
    against Keras 3's (KERAS_BACKEND jax unless set)."""
    env = dict(os.environ)
    env.setdefault("KERAS_BACKEND", "jax")
    work = os.path.join(args.work, "keras3")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def side(mode):
        r = subprocess.run([python, __file__, f"--keras3-side={mode}",
                            f"--work={work}", "--tool=-"], env=env,
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"FAIL Keras 3 ({python}) {mode}: {r.stderr[-1500:]}")
            return None
        with open(os.path.join(work, f"keras3_{mode}.json"),
                  encoding="utf-8") as f:
            return json.load(f)
    want = side("train")
    if want is None:
        return False
    ok = True
    estc_pred = {}
    for name, m in want["models"].items():
        x = np.asarray(m["x"], np.float32)
        y = np.asarray(m["y"])
        y = y.astype(np.int64 if y.dtype.kind == "i" else np.float32)
        feats = lambda lo, hi: {m["input"]: x[lo:hi]}  # noqa: E731
        case = {"model": os.path.join(work, name + ".keras"),
                "model_dir": os.path.join(work, name + "_estc"), "seed": 1,
                "train": [estc_batch(np, feats(i * BATCH, (i + 1) * BATCH),
                                     y[i * BATCH:(i + 1) * BATCH], False)
                          for i in range(STEPS)],
                "eval": [estc_batch(np, feats((STEPS + i) * BATCH,
                                              (STEPS + i + 1) * BATCH),
                                    y[(STEPS + i) * BATCH:
                                      (STEPS + i + 1) * BATCH], False)
                         for i in range(2)],
                "predict": estc_batch(np, feats((STEPS + 2) * BATCH,
                                                len(x)), None, False),
                "write_back": os.path.join(work, name + "_written.keras")}
        run = run_tool(args.tool, work, case)
        if run.returncode != 0:
            print(f"FAIL Keras 3 {name}: keras_estimator_tool exited "
                  f"{run.returncode}: {run.stderr.strip().splitlines()[-1:]}")
            ok = False
            continue
        got = json.loads(run.stdout)
        problems = []
        for wname, value in m["weights"].items():
            if wname not in got["variables"]:
                problems.append(f"weight {wname} missing")
                continue
            good, err = close(np, value, got["variables"][wname]["values"])
            if not good:
                problems.append(f"weight {wname}: max |diff| {err:.3g}")
        problems += compare_outputs(
            np, m["eval"], {list(got["predictions"])[0]: m["predict"]}, got)
        estc_pred[name] = list(got["predictions"].values())[0]["values"]
        if problems:
            print(f"FAIL Keras {want['version']} {name}: " +
                  "; ".join(problems))
            ok = False
        else:
            print(f"ok   Keras {want['version']} {name}: weights after "
                  f"{STEPS} steps, metrics and predictions match")
    back = side("check")
    if back is None:
        return False
    for name, m in back["models"].items():
        if name not in estc_pred:
            continue
        good, err = close(np, m["predict"], estc_pred[name], 1e-5, 1e-6)
        if not good:
            print(f"FAIL Keras 3 {name}: the written-back file predicts "
                  f"max |diff| {err:.3g} from estc")
            ok = False
    if ok:
        print(f"ok   Keras {want['version']} loads the files written back "
              f"and predicts what estc predicts")
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--work", default="")
    p.add_argument("--only", default="")
    p.add_argument("--skip", default="", help="cases whose name matches "
                   "this regex are not run")
    p.add_argument("--keras3-python",
                   default=os.environ.get("ESTC_KERAS3_PYTHON", ""))
    p.add_argument("--keras3-side", default="")
    p.add_argument("--verbose", action="store_true",
                   help="check_trained: one line per variable (ratio, "
                        "estc's and both Keras float32 runs' distance "
                        "from float64, movement)")
    p.add_argument("--first-step", action="store_true",
                   help="the trained applications' weights after step 1 "
                        "too (check_trained)")
    args = p.parse_args()
    if args.keras3_side:
        return keras3_side(args.keras3_side, args.work)
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    if not args.work:
        args.work = tempfile.mkdtemp(prefix="keras_estimator_compat")
    os.makedirs(args.work, exist_ok=True)
    only = re.compile(args.only) if args.only else None
    skip = re.compile(args.skip) if args.skip else None
    ok = True
    for name, build, data, suffix, steps in CASES:
        if only and not only.search(name):
            continue
        ok = check_case(tf, np, args, name, build, data, suffix,
                        steps) and ok
    for name, opt, loss, units, act, data in OPTIMIZER_CASES:
        if only and not only.search(name):
            continue
        build = optimizer_case(opt, loss, units, act)
        ok = check_case(tf, np, args, name, build, data, ".keras", STEPS,
                        light=True) and ok
    for name, app, lr, batch, size, slow in TRAINED_CASES:
        if slow and not only:
            continue
        if (only and not only.search(name)) or (skip and skip.search(name)):
            continue
        ok = check_trained(tf, np, args, name, app, lr, batch, size) and ok
    if not only or only.search("refusals"):
        ok = check_refusals(tf, np, args) and ok
    if not only or only.search("keras3"):
        if args.keras3_python:
            ok = check_keras3(np, args, args.keras3_python) and ok
        else:
            print("SKIP Keras 3: no --keras3-python / $ESTC_KERAS3_PYTHON")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
