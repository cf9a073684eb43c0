#!/usr/bin/env python3
"""estc's graphs of Keras models (lib/Keras/KerasGraph.h) against Keras.

Builds models with tf.keras 2.15 -- small keras.applications (MobileNetV2,
ResNet50, InceptionV3, EfficientNetB0 with weights=None at small inputs), a
text model (Embedding with mask_zero, Bidirectional LSTM, Dense), a
Functional model with two inputs, two outputs and a shared layer, a nested
Sequential inside a Functional model, and "zoo" models that use every layer
class the builder supports -- gives their weights random values (batch
normalization's statistics and biases too, so that nothing is trivially
zero or one), saves each as .keras and .h5, and runs keras_tool on each
file with a random batch: estc's predictions must equal Keras's
(|estc - keras| <= 1e-4 + 1e-5 |keras|).

Keras 3: with --keras3-python (or $ESTC_KERAS3_PYTHON, default /tmp/k3/bin/
python when it exists) naming a Python whose `keras` is 3.x, the zoo and
text models are saved by Keras 3 too (.keras and .h5) and checked the same
way;
without one that part is skipped with a SKIP line.

usage: tf_keras_graph_compat.py --tool=build/bin/keras_tool --work=DIR
       [--only REGEX]
Exits 77 (ctest: skipped) when TensorFlow is not installed.
"""
import argparse
import json
import os
import re
import subprocess
import zlib
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from case_tool import import_tf, run_case, summary, words  # noqa: E402

RTOL, ATOL = 1e-5, 1e-4
BATCH = 2
LENGTH = 6  # the steps of an input whose dimension 1 is None


# --- The models (built by the Keras of the running Python) -----------------

import numpy as np  # noqa: E402  (the models use it; both Pythons have it)


def zoo_dense(keras):
    L = keras.layers
    x = keras.Input((6,), name="x")
    h = L.Dense(8, activation="relu", name="d1")(x)
    h = L.BatchNormalization(name="bn")(h)
    h = L.Dropout(0.3, name="drop")(h)
    h = L.Dense(5, activation="tanh", name="d2")(h)
    # A nested Functional model (its own first node), called twice.
    block_in = keras.Input((5,), name="block_in")
    block = keras.Model(block_in, L.Dense(5, activation="tanh",
                                          name="block_dense")(block_in),
                        name="block")
    h = block(block(h))
    a = L.Activation("sigmoid", name="act")(h)
    h = L.Add(name="add")([h, a])
    h = L.Concatenate(name="cat")([h, a, x])
    out = L.Dense(3, activation="softmax", name="out")(h)
    return keras.Model(x, out, name="zoo_dense")


def two_io(keras):
    """Two inputs, two outputs, a shared layer, a nested Sequential."""
    L = keras.layers
    a = keras.Input((5,), name="a")
    b = keras.Input((5,), name="b")
    shared = L.Dense(4, activation="elu", name="shared")
    inner = keras.Sequential([L.Dense(6, activation="relu", name="inner_d"),
                              L.BatchNormalization(name="inner_bn"),
                              L.Dense(4, name="inner_out")], name="inner")
    ha = shared(a)
    hb = shared(b)
    m = L.Multiply(name="mul")([ha, hb])
    s = L.Subtract(name="sub")([ha, hb])
    o1 = L.Dense(2, name="o1")(inner(L.Concatenate(name="cat")([m, s])))
    o2 = L.Dense(3, activation="softmax", name="o2")(
        L.Average(name="avg")([ha, hb, inner(L.Concatenate(name="cat2")([hb, ha]))]))
    return keras.Model([a, b], [o1, o2], name="two_io")


def sequential_mlp(keras):
    L = keras.layers
    return keras.Sequential([keras.Input((7,), name="feats"),
                             L.Dense(6, activation="selu", name="s1"),
                             L.BatchNormalization(name="s_bn"),
                             L.Dense(2, activation="softplus", name="s2")],
                            name="seq_mlp")


ACTIVATIONS = ["relu", "sigmoid", "softmax", "tanh", "elu", "selu",
               "softplus", "softsign", "swish", "gelu", "hard_sigmoid",
               "exponential", "linear", "relu6", "silu", "mish"]


def zoo_activations(keras):
    """Every Keras activation by name, and the activation layers."""
    L = keras.layers
    x = keras.Input((12,), name="x")
    h = L.Dense(12, name="pre")(x)
    outs = []
    for a in ACTIVATIONS:
        try:
            outs.append(L.Activation(a, name=f"act_{a}")(h))
        except ValueError:  # relu6 / mish: not every Keras has them
            pass
    outs.append(L.ReLU(name="relu_plain")(h))
    outs.append(L.ReLU(max_value=0.5, negative_slope=0.1, threshold=0.2,
                       name="relu_all")(h))
    outs.append(L.ReLU(max_value=6.0, name="relu_six")(h))
    outs.append(L.ReLU(negative_slope=0.2, name="relu_leaky")(h))
    outs.append(L.LeakyReLU(name="leaky")(h))
    outs.append(L.PReLU(name="prelu")(h))
    outs.append(L.Softmax(name="softmax_layer")(h))
    return keras.Model(x, L.Concatenate(name="all")(outs), name="zoo_act")


def zoo_conv(keras):
    """Convolutions, pooling, padding and reshaping layers (2D and 3D)."""
    L = keras.layers
    img = keras.Input((12, 12, 3), name="img")
    h = L.Rescaling(1.0 / 2.0, offset=0.25, name="rescale")(img)
    h = L.Conv2D(6, 3, padding="same", activation="relu", name="c1")(h)
    h = L.ZeroPadding2D(((1, 2), (2, 1)), name="zpad")(h)
    h = L.Conv2D(6, 3, dilation_rate=2, name="c_dil", use_bias=False)(h)
    h = L.Cropping2D(((1, 0), (0, 1)), name="crop")(h)
    h = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2,
                          name="dw")(h)
    h = L.BatchNormalization(name="bn")(h)
    h = L.PReLU(shared_axes=[1, 2], name="prelu_shared")(h)
    h = L.SeparableConv2D(8, 3, padding="same", name="sep")(h)
    h = L.UpSampling2D(2, name="up")(h)
    h = L.Conv2DTranspose(4, 3, strides=2, padding="same", name="tconv")(h)
    h = L.Conv2DTranspose(4, 3, strides=1, padding="valid", name="tconv_v")(h)
    h = L.SpatialDropout2D(0.3, name="sdrop")(h)
    m = L.MaxPooling2D(2, name="mpool")(h)
    a = L.AveragePooling2D(3, strides=2, padding="same", name="apool")(h)
    h = L.Maximum(name="max")([m, a])
    g1 = L.GlobalAveragePooling2D(name="gap")(h)
    g2 = L.GlobalMaxPooling2D(keepdims=True, name="gmp")(h)
    g2 = L.Reshape((-1,), name="reshape")(g2)
    h = L.Minimum(name="min")([g1, g2])
    v = L.Reshape((12, 12, 1, 3), name="to3d")(img)
    v = L.Conv3D(2, (3, 3, 1), padding="same", name="c3d")(v)
    v = L.MaxPooling3D((2, 2, 1), name="mp3")(v)
    v = L.AveragePooling3D((2, 2, 1), name="ap3")(v)
    v = L.SpatialDropout3D(0.2, name="sdrop3")(v)
    v = L.ZeroPadding3D(((1, 0), (0, 1), (1, 1)), name="zpad3")(v)
    v = L.Cropping3D(((0, 1), (1, 0), (1, 1)), name="crop3")(v)
    v = L.UpSampling3D((1, 2, 1), name="up3")(v)
    v = L.GlobalAveragePooling3D(name="gap3")(v)
    out = L.Dense(3, name="out")(L.Concatenate(name="cat")([h, v]))
    return keras.Model(img, out, name="zoo_conv")


def zoo_seq(keras):
    """1D layers, Permute, RepeatVector, Dot, Normalization,
    LayerNormalization."""
    L = keras.layers
    x = keras.Input((10, 4), name="seq")
    norm = L.Normalization(name="norm")
    norm.adapt(np.random.default_rng(3).normal(1.0, 2.0, (20, 10, 4)))
    h = norm(x)
    h = L.Normalization(mean=[0.5, -0.5, 0.0, 1.0],
                        variance=[1.0, 4.0, 0.25, 2.0], name="norm_fixed")(h)
    c = L.Conv1D(5, 3, padding="causal", dilation_rate=2, name="c1d")(h)
    c = L.Conv1D(5, 3, strides=2, padding="same", name="c1d_s")(c)
    s = L.SeparableConv1D(5, 3, padding="same", depth_multiplier=2,
                          name="sep1d")(h)
    s = L.MaxPooling1D(2, name="mp1")(s)
    s = L.AveragePooling1D(3, strides=1, padding="same", name="ap1")(s)
    s = L.SpatialDropout1D(0.2, name="sdrop1")(s)
    s = L.ZeroPadding1D((1, 2), name="zpad1")(s)
    s = L.Cropping1D((2, 1), name="crop1")(s)
    s = L.UpSampling1D(2, name="up1")(s)
    s = L.Cropping1D((3, 2), name="crop1b")(s)
    h2 = L.Add(name="add")([c, s])
    h2 = L.LayerNormalization(name="ln")(h2)
    p = L.Permute((2, 1), name="perm")(h2)
    p = L.Dense(3, name="pd")(p)
    d = L.Dot(axes=(1, 1), name="dot")([h2, p])
    d = L.Flatten(name="flat")(d)
    g = L.GlobalMaxPooling1D(name="gmp1")(h2)
    e = L.Dot(axes=1, normalize=True, name="dotn")([g, L.Dense(5, name="gd")(g)])
    r = L.RepeatVector(3, name="rep")(e)
    r = L.Flatten(name="flat2")(r)
    a = L.GlobalAveragePooling1D(name="gap1")(h2)
    out = L.Concatenate(name="cat")([d, r, a])
    return keras.Model(x, out, name="zoo_seq")


def text_bilstm(keras):
    """The issue's text model: Embedding (mask_zero) + Bidirectional LSTM +
    Dense, on padded token ids."""
    L = keras.layers
    ids = keras.Input((8,), dtype="int32", name="ids")
    h = L.Embedding(20, 6, mask_zero=True, name="emb")(ids)
    h = L.Bidirectional(L.LSTM(5, name="lstm"), name="bi")(h)
    out = L.Dense(3, activation="softmax", name="out")(h)
    return keras.Model(ids, out, name="text_bilstm")


def text_varlen(keras):
    """Token ids of any length (Input((None,))): the run-time sequence
    length; Embedding mask_zero, GRU with return_sequences, LSTM."""
    L = keras.layers
    ids = keras.Input((None,), dtype="int32", name="ids")
    h = L.Embedding(20, 5, mask_zero=True, name="emb")(ids)
    h = L.GRU(4, return_sequences=True, name="gru")(h)
    h = L.LSTM(3, name="lstm")(h)
    return keras.Model(ids, L.Dense(2, name="out")(h), name="text_varlen")


def text_rnn_zoo(keras):
    """GRU (reset_after both ways), SimpleRNN, return_sequences,
    return_state, go_backwards, Bidirectional merge modes, masks through
    the sequence layers, MultiHeadAttention (query/value/key as called) and
    trainable=False layers."""
    L = keras.layers
    ids = keras.Input((7,), dtype="int32", name="tokens")
    ctx = keras.Input((5, 4), name="ctx")
    e = L.Embedding(20, 6, mask_zero=True, name="emb")(ids)
    g = L.GRU(5, return_sequences=True, name="gru")(e)
    g1 = L.GRU(4, reset_after=False, go_backwards=True, return_sequences=True,
               name="gru_v1")(g)
    s, sh = L.SimpleRNN(3, return_state=True, activation="relu",
                        name="srnn")(g1)
    l, lh, lc = L.LSTM(4, return_state=True, go_backwards=True,
                       name="lstm")(e)
    bs = L.Bidirectional(L.GRU(3, return_sequences=True, name="bgru"),
                         merge_mode="sum", name="bi_sum")(e)
    ba = L.Bidirectional(L.SimpleRNN(3, name="bsrnn"), merge_mode="ave",
                         name="bi_ave")(bs)
    frozen = L.Dense(6, name="frozen", trainable=False)
    q = frozen(e)
    att = L.MultiHeadAttention(2, 3, name="mha")(q, ctx)
    # Keras 3.x's MultiHeadAttention fails on a value_dim other than
    # key_dim with a key of its own (a reshape error of its own).
    value_dim = 3 if getattr(keras, "__version__", "2").startswith("3") else 2
    att2 = L.MultiHeadAttention(2, 3, value_dim=value_dim, output_shape=5,
                                name="mha_kv")(ctx, e, key=q)
    pooled = L.GlobalAveragePooling1D(name="gap")(att)
    pooled2 = L.GlobalAveragePooling1D(name="gap2")(att2)
    out = L.Concatenate(name="cat")([s, sh, l, lh, lc, ba, pooled, pooled2])
    return keras.Model([ids, ctx], out, name="text_rnn_zoo")


def bn_training(keras):
    """Called with training=True (Keras's call argument, keras_tool's
    `training 1`): batch normalization from the batch's statistics, fused
    (rank 4) and not (rank 2), except a frozen one (trainable=False: the
    moving statistics, as TF 2's Keras)."""
    L = keras.layers
    img = keras.Input((6, 6, 3), name="img")
    h = L.Conv2D(4, 3, name="conv")(img)
    h = L.BatchNormalization(name="bn4")(h)
    h = L.BatchNormalization(name="bn_frozen", trainable=False)(h)
    h = L.Flatten(name="flat")(h)
    h = L.Dense(5, name="dense")(h)
    h = L.BatchNormalization(center=False, name="bn2")(h)
    return keras.Model(img, h, name="bn_training")


def mobilenet_v2(keras):
    return keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3),
                                          classes=10, alpha=0.35)


def resnet50(keras):
    return keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3),
                                       classes=10)


def inception_v3(keras):
    return keras.applications.InceptionV3(weights=None,
                                          input_shape=(75, 75, 3), classes=10)


def efficientnet_b0(keras):
    return keras.applications.EfficientNetB0(weights=None,
                                             input_shape=(32, 32, 3),
                                             classes=10)


# name: (builder, also saved by Keras 3, the tf.keras forms[, called with
# training=True]). The
# applications take one form each (both forms give one graph; the reader's
# forms are keras.tf_io_compat's), so that the test stays near a minute.
BOTH = ("keras", "h5")
MODELS = {
    "zoo_act": (zoo_activations, True, BOTH),
    "zoo_conv": (zoo_conv, True, BOTH),
    "zoo_seq": (zoo_seq, True, BOTH),
    "text_bilstm": (text_bilstm, True, BOTH),
    "text_rnn_zoo": (text_rnn_zoo, True, BOTH),
    "text_varlen": (text_varlen, True, ("keras",)),
    "mobilenet_v2": (mobilenet_v2, False, ("keras",)),
    "resnet50": (resnet50, False, ("h5",)),
    "inception_v3": (inception_v3, False, ("keras",)),
    "efficientnet_b0": (efficientnet_b0, False, ("h5",)),
    "zoo_dense": (zoo_dense, True, BOTH),
    "bn_training": (bn_training, True, ("keras",), True),
    "two_io": (two_io, True, BOTH),
    "sequential_mlp": (sequential_mlp, True, BOTH),
}


def randomize(model, np, rng):
    """Random values for every weight: variances and scales in [0.5, 1.5),
    everything else initialized zero (biases, means, PReLU's alpha) normal
    with stddev 0.2; kernels keep their random initial values."""
    values = []
    for w in model.weights:
        v = np.asarray(w.numpy())
        name = w.name.split(":")[0]
        if not np.issubdtype(v.dtype, np.floating):
            values.append(v)
            continue
        base = name.split("/")[-1]
        if "variance" in base or base == "gamma":
            v = rng.uniform(0.5, 1.5, v.shape).astype(v.dtype)
        elif not v.any() or base in ("beta", "moving_mean", "mean", "bias"):
            v = rng.normal(0.0, 0.2, v.shape).astype(v.dtype)
        values.append(v)
    model.set_weights(values)
    # Keras 3's adapted Normalization computes from its variables once
    # (finalize_state), as loading does: again with the new values.
    for layer in model.layers:
        if hasattr(layer, "finalize_state") and getattr(layer, "built", False):
            layer.finalize_state()


def input_arrays(model, np, rng, name):
    """A batch for each input: token ids for integer inputs, else floats."""
    out = {}
    for t in model.inputs:
        shape = [BATCH] + [LENGTH if d is None else int(d)
                           for d in t.shape[1:]]
        iname = t.name.split(":")[0]
        iname = getattr(t, "_keras_history", None) and t._keras_history[0].name or iname
        if "int" in str(t.dtype):
            a = rng.integers(1, 20, shape).astype(np.int32)
            if len(shape) == 2 and shape[1] > 3:  # padded sequences
                for r in range(shape[0]):
                    a[r, shape[1] - 1 - r:] = 0
            out[iname] = a
        else:
            out[iname] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    return out


def output_names(model):
    """tf.keras's model.output_names; Keras 3's Sequential has none: the
    layers of its outputs (what estc names them)."""
    names = getattr(model, "output_names", None)
    if names:
        return list(names)
    return [t._keras_history[0].name for t in model.outputs]


def save_side(work, names, keras3):
    """Builds, randomizes, saves each model and its inputs and Keras's
    predictions (expected.json); run by this Python or Keras 3's."""
    import numpy as np
    if keras3:
        import keras  # pylint: disable=import-outside-toplevel
    else:
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        keras = tf.keras
    expected = {}
    for name in names:
        build = MODELS[name][0]
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        keras.utils.set_random_seed(1)
        model = build(keras)
        randomize(model, np, rng)
        inputs = input_arrays(model, np, rng, name)
        feed = [inputs[n] for n in inputs]
        training = len(MODELS[name]) > 3 and MODELS[name][3]
        want = model(feed if len(feed) > 1 else feed[0], training=training)
        if not isinstance(want, (list, tuple)):
            want = [want]
        forms = ["keras", "h5"] if keras3 else list(MODELS[name][2])
        for form in forms:
            path = os.path.join(work, f"{name}.{form}")
            model.save(path)
        expected[name] = {
            "forms": forms,
            "training": training,
            "inputs": {k: v.tolist() for k, v in inputs.items()},
            "outputs": [np.asarray(w).tolist() for w in want],
            "output_names": output_names(model),
        }
    with open(os.path.join(work, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


def check_model(tool, work, name, e, tag):
    """Runs keras_tool on the saved files of one model (one compilation for
    its forms); the report lines and how many failed."""
    import numpy as np
    lines = [f"model {os.path.join(work, name + '.' + form)}"
             for form in e["forms"]]
    lines.append(f"batch {BATCH}")
    lines.append(f"length {LENGTH}")
    if e.get("training"):
        lines.append("training 1")
    for k, v in e["inputs"].items():
        lines.append(f"input {k} {words(np.asarray(v, np.float64))}")
    run = run_case(tool, lines)
    if run.returncode != 0:
        return [f"FAIL {tag}{name}: keras_tool exited {run.returncode}: "
                f"{run.stderr.strip()}"], len(e["forms"])
    per_file = {}
    current = None
    for line in run.stdout.splitlines():
        head, *rest = line.split()
        if head == "model":
            current = per_file.setdefault(rest[0], {"names": [], "got": {}})
        elif head == "output":
            current["got"][rest[0]] = np.array(rest[1:], np.float64)
        elif head == "outputs":
            current["names"] = rest
    report, failures = [], 0
    for form in e["forms"]:
        case = f"{tag}{name}.{form}"
        got = per_file.get(os.path.join(work, name + "." + form))
        if got is None:
            report.append(f"FAIL {case}: keras_tool printed nothing for it")
            failures += 1
            continue
        problems = []
        if got["names"] != e["output_names"]:
            problems.append(f"output names {got['names']}, Keras "
                            f"{e['output_names']}")
        for n, want in zip(e["output_names"], e["outputs"]):
            want = np.asarray(want, np.float64).reshape(-1)
            have = got["got"].get(n, np.zeros(0))
            if have.shape != want.shape:
                problems.append(f"{n}: {have.size} values, Keras {want.size}")
                continue
            err = np.abs(have - want) - (ATOL + RTOL * np.abs(want))
            if err.max() > 0:
                i = int(err.argmax())
                problems.append(f"{n}: element {i} is {have[i]!r}, Keras "
                                f"{want[i]!r}")
        if problems:
            report.append(f"FAIL {case}: " + "; ".join(problems))
            failures += 1
        else:
            report.append(f"ok   {case}: {len(e['outputs'])} outputs match "
                          "Keras")
    return report, failures


def check(tool, work, tag, jobs):
    """Every saved file of `work` (two tool runs at a time: compiling is
    most of the time)."""
    from concurrent.futures import ThreadPoolExecutor
    with open(os.path.join(work, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(
            lambda item: check_model(tool, work, item[0], item[1], tag),
            expected.items()))
    failures = count = 0
    for lines, failed in results:
        for line in lines:
            print(line)
        failures += failed
    count = sum(len(e["forms"]) for e in expected.values())
    return failures, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--save-side", default="")
    default_k3 = "/tmp/k3/bin/python" if os.path.exists("/tmp/k3/bin/python") else ""
    ap.add_argument("--keras3-python",
                    default=os.environ.get("ESTC_KERAS3_PYTHON", default_k3))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.save_side:
        save_side(args.work, args.save_side.split(","),
                  keras3=os.environ.get("ESTC_KERAS_GRAPH_K3") == "1")
        return 0
    if import_tf() is None:
        return 77
    names = [n for n in MODELS if re.search(args.only, n)]
    if not names:
        print(f"FAIL: no model matches --only {args.only!r}")
        return 1
    env = dict(os.environ)
    r = subprocess.run([sys.executable, __file__, f"--work={args.work}",
                        f"--save-side={','.join(names)}"], env=env,
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        print(f"FAIL: saving the tf.keras models: {r.stderr.strip()[-2000:]}")
        return 1
    failures, count = check(args.tool, args.work, "", args.jobs)
    k3names = [n for n in names if MODELS[n][1]]
    if args.keras3_python and k3names:
        k3 = os.path.join(args.work, "keras3")
        os.makedirs(k3, exist_ok=True)
        env["ESTC_KERAS_GRAPH_K3"] = "1"
        # numpy: no tracing, the inference the files need in seconds.
        env.setdefault("KERAS_BACKEND", "numpy")
        r = subprocess.run([args.keras3_python, __file__, f"--work={k3}",
                            f"--save-side={','.join(k3names)}"], env=env,
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"FAIL: saving the Keras 3 models: {r.stderr.strip()[-2000:]}")
            failures += 1
        else:
            f, c = check(args.tool, k3, "keras3/", args.jobs)
            failures += f
            count += c
    else:
        print("SKIP Keras 3: no --keras3-python / $ESTC_KERAS3_PYTHON")
    return summary(failures, count)


if __name__ == "__main__":
    sys.exit(main())
