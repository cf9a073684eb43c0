#!/usr/bin/env python3
"""lib/Keras (the Keras file reader and writer) against Keras itself.

Writes models with tf.keras 2.15 in every file form Keras has: the .keras
archive, the legacy .h5 model, the .weights.h5 file (Keras 3's layout) and
the legacy .h5 weights file. The models: a Sequential MLP with
BatchNormalization (trained a step, so its moving statistics and the
optimizer's slots are not their initial values), a Functional CNN (Conv2D,
BatchNormalization, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose,
Dense), a text model (Embedding, LSTM, Bidirectional GRU, Dense), a
Functional model with two inputs, two outputs, adapted and fixed
Normalization, a shared layer and a nested Sequential model, one with
MultiHeadAttention, LayerNormalization, Conv1D and PReLU,
keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3)) and
EfficientNetB0(weights=None, input_shape=(64, 64, 3)).

For each file keras_io_tool (lib/Keras) prints every weight's name, shape,
dtype and CRC-32: they must equal Keras's model.weights (names, order,
shapes, values exactly). Then keras_io_tool writes the file back with every
weight + 1; Keras loads what it wrote (load_model, load_weights) and its
weights must equal the originals + 1 exactly.

Keras 3: with --keras3-python (or $ESTC_KERAS3_PYTHON) naming a Python whose
`keras` is 3.x (e.g. `python3 -m venv /tmp/k3 && /tmp/k3/bin/pip install
keras h5py "jax[cpu]"`), the same is done with the .keras, .weights.h5 and
legacy .h5 files Keras 3 writes (its backend: $KERAS_BACKEND, default jax);
without one that part is skipped with a SKIP line.

usage: keras_io_compat.py --tool=build/bin/keras_io_tool --work=DIR
Exits 77 (ctest: skipped) when TensorFlow is not installed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import zlib


def crc(a):
    import numpy as np
    return zlib.crc32(np.ascontiguousarray(a).tobytes())


def dump(tool, path, config_from=None):
    cmd = [tool, "dump", path] + ([f"--config-from={config_from}"] if config_from else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def plus_one(tool, src, dst, config_from=None):
    cmd = [tool, "plus-one", src, dst] + ([f"--config-from={config_from}"] if config_from else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: {r.stderr.strip()}")


def expected_weights(model):
    """(name, shape, crc) of model.weights, in order."""
    import numpy as np
    out = []
    for w in model.weights:
        v = np.asarray(w.numpy())
        out.append((w.name, list(v.shape), crc(v)))
    return out


def got_weights(d):
    return [(w["name"], w["shape"], w["crc32"]) for l in d["layers"] for w in l["weights"]]


def tf_keras_name_match(g, w):
    # tf.keras names the variables of a Normalization adapted before it was
    # called without the layer's name ("mean:0"); lib/Keras gives them the
    # layer's name ("norm/mean:0"), as its other layers' (docs/design/keras.md).
    return g == w or ("/" not in w and g.endswith("/" + w))


def compare(label, got, want, names=True, name_match=tf_keras_name_match):
    if len(got) != len(want):
        raise SystemExit(f"FAIL {label}: {len(got)} weights read, Keras has {len(want)}:\n"
                         f"  read  {[g[0] for g in got]}\n  keras {[w[0] for w in want]}")
    for i, (g, w) in enumerate(zip(got, want)):
        if names:
            ok = name_match(g[0], w[0]) if name_match else g[0] == w[0]
            if not ok:
                raise SystemExit(f"FAIL {label}: weight {i} is '{g[0]}', Keras's '{w[0]}'")
        if g[1] != w[1]:
            raise SystemExit(f"FAIL {label}: weight {i} '{g[0]}' has shape {g[1]}, Keras's {w[1]}")
        if g[2] != w[2]:
            raise SystemExit(f"FAIL {label}: weight {i} '{g[0]}' values differ (CRC-32 {g[2]} vs {w[2]})")


def check_plus_one(label, model_before, model_after):
    import numpy as np
    before = model_before.weights
    after = model_after.weights
    if len(before) != len(after):
        raise SystemExit(f"FAIL {label}: {len(after)} weights loaded, {len(before)} written")
    for b, a in zip(before, after):
        bv = np.asarray(b.numpy())
        av = np.asarray(a.numpy())
        want = bv + np.asarray(1, dtype=bv.dtype) if bv.dtype.kind == "f" else bv
        if av.shape != want.shape or not np.array_equal(av, want):
            raise SystemExit(f"FAIL {label}: '{b.name}' loaded back is not the original + 1 "
                             f"(max diff {np.max(np.abs(av.astype(np.float64) - want)) if av.shape == want.shape else 'shape'})")


# --- the models -------------------------------------------------------------

def build_models(keras, np):
    L = keras.layers
    rng = np.random.default_rng(3)
    models = {}

    seq = keras.Sequential([keras.Input((8,)), L.Dense(16, activation="relu", name="hidden"),
                            L.BatchNormalization(name="bn"), L.Dense(3, name="logits")], name="mlp")
    seq.compile(optimizer="adam", loss="mse", metrics=["mae"])
    seq.fit(rng.normal(size=(32, 8)).astype("float32"), rng.normal(size=(32, 3)).astype("float32"),
            epochs=1, batch_size=16, verbose=0)
    models["mlp"] = seq

    x = keras.Input((16, 16, 3), name="image")
    h = L.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="stem")(x)
    h = L.BatchNormalization(name="stem_bn", center=False)(h)
    h = L.ReLU(6.0)(h)
    h = L.DepthwiseConv2D(3, padding="same", name="dw")(h)
    h = L.SeparableConv2D(12, 3, name="sep")(h)
    h = L.Conv2DTranspose(6, 2, strides=2, name="up")(h)
    h = L.GlobalAveragePooling2D()(h)
    cnn = keras.Model(x, L.Dense(5, activation="softmax", name="head")(h), name="cnn")
    cnn.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="categorical_crossentropy")
    models["cnn"] = cnn

    ids = keras.Input((12,), dtype="int32", name="ids")
    e = L.Embedding(50, 8, name="emb")(ids)
    s = L.LSTM(6, return_sequences=True, name="lstm")(e)
    s = L.Bidirectional(L.GRU(4), name="bigru")(s)
    text = keras.Model(ids, L.Dense(1, activation="sigmoid", name="out")(s), name="text")
    text.compile(optimizer="rmsprop", loss="binary_crossentropy", metrics=["accuracy"])
    models["text"] = text

    a = keras.Input((6,), name="a")
    b = keras.Input((6,), name="b")
    norm = L.Normalization(name="norm")
    norm.adapt(rng.normal(3.0, 2.0, size=(64, 6)).astype("float32"))
    fixed = L.Normalization(mean=1.0, variance=4.0, name="fixed_norm")
    shared = L.Dense(5, activation="tanh", name="shared")
    inner = keras.Sequential([keras.Input((10,)), L.Dense(4, name="inner_dense"),
                              L.BatchNormalization(name="inner_bn")], name="inner")
    merged = L.Concatenate()([shared(norm(a)), shared(fixed(b))])
    t = inner(merged)
    two = keras.Model([a, b], [L.Dense(1, name="score")(t), L.Dense(3, name="klass")(t)],
                      name="two_heads")
    two.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy"],
                loss_weights=[1.0, 0.5])
    models["two_heads"] = two

    q = keras.Input((7, 4), name="seq")
    att = L.MultiHeadAttention(2, 3, name="mha")(q, q)
    att = L.LayerNormalization(name="ln")(att + q)
    c = L.Conv1D(6, 3, name="conv")(att)
    c = L.PReLU(name="prelu")(c)
    models["attention"] = keras.Model(q, L.Flatten()(c), name="attention")

    models["mobilenet_v2"] = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3))
    # Rescaling, an in-model Normalization, squeeze-and-excitation blocks.
    models["efficientnet_b0"] = keras.applications.EfficientNetB0(weights=None,
                                                                  input_shape=(64, 64, 3))

    # Weights that are not their initializers' (zeros, ones) everywhere.
    for m in models.values():
        if m.name == "mlp":
            continue
        for w in m.weights:
            w.assign(rng.normal(size=w.shape).astype(w.dtype.as_numpy_dtype))
    return models


def run_tf_keras(tool, work):
    import numpy as np
    import tensorflow as tf
    import keras as keras_package
    keras = tf.keras
    keras_version = keras_package.__version__
    tf.random.set_seed(1)
    models = build_models(keras, np)
    checks = 0
    for name, model in models.items():
        want = expected_weights(model)
        files = {
            "keras": os.path.join(work, f"{name}.keras"),
            "h5": os.path.join(work, f"{name}.h5"),
            "weights.h5": os.path.join(work, f"{name}.weights.h5"),
            "legacy_weights.h5": os.path.join(work, f"{name}_legacy_weights.h5"),
        }
        model.save(files["keras"])
        model.save(files["h5"])
        model.save_weights(files["weights.h5"])
        model.save_weights(files["legacy_weights.h5"])

        for form, path in files.items():
            config_from = files["keras"] if form == "weights.h5" else None
            d = dump(tool, path, config_from)
            if d["format"] != form:
                raise SystemExit(f"FAIL {path}: read as {d['format']}, written as {form}")
            label = f"tf.keras {name} {form}"
            compare(label, got_weights(d), want)
            if form in ("keras", "h5"):
                classes = [l["class_name"] for l in d["layers"]]
                want_classes = [l.__class__.__name__ for l in model.layers]
                want_classes = ["Functional" if c == "Functional" else c for c in want_classes]
                if classes != want_classes:
                    raise SystemExit(f"FAIL {label}: layer classes {classes}, Keras's {want_classes}")
                if d["keras_version"] != keras_version:
                    raise SystemExit(f"FAIL {label}: keras_version {d['keras_version']}")
                if d["has_training_config"] != (model.optimizer is not None):
                    raise SystemExit(f"FAIL {label}: has_training_config {d['has_training_config']}")
            if form == "weights.h5":
                # Without a config: the same values, named by their paths.
                bare = dump(tool, path)
                if sorted((w[1], w[2]) for w in got_weights(bare)) != sorted((w[1], w[2]) for w in want):
                    raise SystemExit(f"FAIL {label} without a config: other values")

            out = os.path.join(work, f"plus1_{name}_{os.path.basename(path)}")
            if form == "keras":
                out = os.path.join(work, f"plus1_{name}.keras")
            plus_one(tool, path, out, config_from)
            if form in ("keras", "h5"):
                loaded = keras.models.load_model(out)
            else:
                loaded = keras.models.load_model(files["keras"])
                loaded.load_weights(out)
            check_plus_one(f"{label} written back", model, loaded)
            checks += 1
            print(f"ok  tf.keras {name:15s} {form:18s} {len(want):4d} weights, written back +1")
    return checks


# --- Keras 3, in its own Python ----------------------------------------------

def keras3_side(mode, work):
    """Runs under Keras 3: `save` writes the files and what Keras holds,
    `check` loads the +1 files and compares."""
    import numpy as np
    import keras
    if not keras.__version__.startswith("3."):
        raise SystemExit(f"not Keras 3: {keras.__version__}")
    models = {}
    L = keras.layers
    rng = np.random.default_rng(5)
    ids = keras.Input((9,), dtype="int32", name="ids")
    e = L.Embedding(30, 6, name="emb")(ids)
    s = L.Bidirectional(L.LSTM(4), name="bilstm")(e)
    inner = keras.Sequential([keras.Input((8,)), L.Dense(5, name="inner_dense"),
                              L.BatchNormalization(name="inner_bn")], name="inner")
    att = L.MultiHeadAttention(2, 3, name="mha")(e, e)
    g = L.GRU(3, name="gru")(L.LayerNormalization(name="ln")(att))
    out = L.Dense(2, name="out")(L.Concatenate()([inner(s), g]))
    m = keras.Model(ids, out, name="k3_text")
    m.compile(optimizer="adam", loss="mse")
    models["k3_text"] = m
    x = keras.Input((12, 12, 3))
    norm = L.Normalization(name="norm")
    norm.adapt(rng.normal(2.0, 3.0, size=(16, 12, 12, 3)).astype("float32"))
    h = L.Conv2D(4, 3, name="conv")(norm(x))
    h = L.BatchNormalization(name="bn")(h)
    h = L.DepthwiseConv2D(3, name="dw")(h)
    models["k3_cnn"] = keras.Model(x, L.Dense(2, name="head")(L.Flatten()(h)), name="k3_cnn")
    for mm in models.values():
        for w in mm.weights:
            w.assign(rng.normal(size=w.shape).astype(w.dtype))
    if mode == "save":
        want = {}
        for name, mm in models.items():
            mm.save(os.path.join(work, f"{name}.keras"))
            mm.save_weights(os.path.join(work, f"{name}.weights.h5"))
            mm.save(os.path.join(work, f"{name}.h5"))  # Keras 3's legacy HDF5
            want[name] = [(w.path, list(w.shape), crc(np.asarray(w.numpy()))) for w in mm.weights]
        with open(os.path.join(work, "keras3_expected.json"), "w") as f:
            json.dump({"version": keras.__version__, "weights": want}, f)
        return 0
    for name, mm in models.items():
        ref = keras.models.load_model(os.path.join(work, f"{name}.keras"))
        for form in ("keras", "weights.h5", "h5"):
            path = os.path.join(work, f"plus1_{name}.{form}")
            if form in ("keras", "h5"):
                # compile=False: Keras 3.15 cannot deserialize the "mse" loss of its
                # own legacy .h5 files (its error, with the file as Keras wrote it too).
                loaded = keras.models.load_model(path, compile=form == "keras")
            else:
                loaded = keras.models.load_model(os.path.join(work, f"{name}.keras"))
                loaded.load_weights(path)
            for b, a in zip(ref.weights, loaded.weights):
                bv, av = np.asarray(b.numpy()), np.asarray(a.numpy())
                want = bv + np.asarray(1, dtype=bv.dtype) if bv.dtype.kind == "f" else bv
                if not np.array_equal(av, want):
                    raise SystemExit(f"FAIL Keras 3 {name} {form}: '{b.path}' is not the original + 1")
    return 0


def run_keras3(tool, work, python):
    env = dict(os.environ)
    env.setdefault("KERAS_BACKEND", "jax")
    k3 = os.path.join(work, "keras3")
    os.makedirs(k3, exist_ok=True)
    r = subprocess.run([python, __file__, "--keras3-side=save", f"--work={k3}"], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL Keras 3 ({python}) could not write its files: {r.stderr[-2000:]}")
    with open(os.path.join(k3, "keras3_expected.json")) as f:
        expected = json.load(f)
    checks = 0
    for name, want in expected["weights"].items():
        want = [(p, s, c) for p, s, c in want]
        for form in ("keras", "weights.h5", "h5"):
            path = os.path.join(k3, f"{name}.{form}")
            config_from = os.path.join(k3, f"{name}.keras") if form == "weights.h5" else None
            d = dump(tool, path, config_from)
            # Keras 3 names a variable by its path ("inner/inner_dense/kernel");
            # lib/Keras as tf.keras does ("inner_dense/kernel:0").
            compare(f"Keras {expected['version']} {name} {form}", got_weights(d), want,
                    name_match=lambda g, w: g.endswith(":0") and ("/" + w).endswith("/" + g[:-2]))
            plus_one(tool, path, os.path.join(k3, f"plus1_{name}.{form}"), config_from)
            checks += 1
            print(f"ok  Keras {expected['version']} {name:9s} {form:10s} {len(want):3d} weights")
    r = subprocess.run([python, __file__, "--keras3-side=check", f"--work={k3}"], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL Keras 3 loading the files written back: {r.stderr[-2000:]}{r.stdout[-2000:]}")
    print(f"ok  Keras {expected['version']} loads every file written back, weights + 1")
    return checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool")
    ap.add_argument("--work", required=True)
    ap.add_argument("--keras3-python", default=os.environ.get("ESTC_KERAS3_PYTHON", ""))
    ap.add_argument("--keras3-side", default="")
    args = ap.parse_args()
    if args.keras3_side:
        return keras3_side(args.keras3_side, args.work)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow  # noqa: F401
    except Exception as e:  # pylint: disable=broad-except
        print(f"SKIP: TensorFlow is not installed ({e})")
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    checks = run_tf_keras(args.tool, args.work)
    if args.keras3_python:
        checks += run_keras3(args.tool, args.work, args.keras3_python)
    else:
        print("SKIP Keras 3: no --keras3-python / $ESTC_KERAS3_PYTHON (a Python with keras 3, "
              "h5py and a backend, e.g. jax[cpu])")
    print(f"keras_io_compat: {checks} files read and written back as Keras reads them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
