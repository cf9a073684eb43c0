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
text models are saved by Keras 3 too (.keras) and checked the same way;
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


# --- The models (built by the Keras of the running Python) -----------------

def zoo_dense(keras):
    L = keras.layers
    x = keras.Input((6,), name="x")
    h = L.Dense(8, activation="relu", name="d1")(x)
    h = L.BatchNormalization(name="bn")(h)
    h = L.Dropout(0.3, name="drop")(h)
    h = L.Dense(5, activation="tanh", name="d2")(h)
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


MODELS = {
    "zoo_dense": (zoo_dense, True),
    "two_io": (two_io, True),
    "sequential_mlp": (sequential_mlp, True),
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


def input_arrays(model, np, rng, name):
    """A batch for each input: token ids for integer inputs, else floats."""
    out = {}
    for t in model.inputs:
        shape = [BATCH] + [int(d) for d in t.shape[1:]]
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
        want = model(feed if len(feed) > 1 else feed[0], training=False)
        if not isinstance(want, (list, tuple)):
            want = [want]
        forms = ["keras"] if keras3 else ["keras", "h5"]
        for form in forms:
            path = os.path.join(work, f"{name}.{form}")
            model.save(path)
        expected[name] = {
            "forms": forms,
            "inputs": {k: v.tolist() for k, v in inputs.items()},
            "outputs": [np.asarray(w).tolist() for w in want],
            "output_names": output_names(model),
        }
    with open(os.path.join(work, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f)


def check(tool, work, tag):
    import numpy as np
    with open(os.path.join(work, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    failures = count = 0
    for name, e in expected.items():
        for form in e["forms"]:
            count += 1
            case = f"{tag}{name}.{form}"
            lines = [f"model {os.path.join(work, name + '.' + form)}",
                     f"batch {BATCH}"]
            for k, v in e["inputs"].items():
                lines.append(f"input {k} {words(np.asarray(v, np.float64))}")
            run = run_case(tool, lines)
            if run.returncode != 0:
                print(f"FAIL {case}: keras_tool exited {run.returncode}: "
                      f"{run.stderr.strip()}")
                failures += 1
                continue
            got = {}
            names = []
            for line in run.stdout.splitlines():
                head, *rest = line.split()
                if head == "output":
                    got[rest[0]] = np.array(rest[1:], np.float64)
                elif head == "outputs":
                    names = rest
            problems = []
            if names != e["output_names"]:
                problems.append(f"output names {names}, Keras "
                                f"{e['output_names']}")
            for n, want in zip(e["output_names"], e["outputs"]):
                want = np.asarray(want, np.float64).reshape(-1)
                have = got.get(n, np.zeros(0))
                if have.shape != want.shape:
                    problems.append(f"{n}: {have.size} values, Keras "
                                    f"{want.size}")
                    continue
                err = np.abs(have - want) - (ATOL + RTOL * np.abs(want))
                if err.max() > 0:
                    i = int(err.argmax())
                    problems.append(f"{n}: element {i} is {have[i]!r}, Keras "
                                    f"{want[i]!r}")
            if problems:
                print(f"FAIL {case}: " + "; ".join(problems))
                failures += 1
            else:
                print(f"ok   {case}: {len(e['outputs'])} outputs match Keras")
    return failures, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
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
    env = dict(os.environ)
    r = subprocess.run([sys.executable, __file__, f"--work={args.work}",
                        f"--save-side={','.join(names)}"], env=env,
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        print(f"FAIL: saving the tf.keras models: {r.stderr.strip()[-2000:]}")
        return 1
    failures, count = check(args.tool, args.work, "")
    k3names = [n for n in names if MODELS[n][1]]
    if args.keras3_python and k3names:
        k3 = os.path.join(args.work, "keras3")
        os.makedirs(k3, exist_ok=True)
        env["ESTC_KERAS_GRAPH_K3"] = "1"
        env.setdefault("KERAS_BACKEND", "jax")
        r = subprocess.run([args.keras3_python, __file__, f"--work={k3}",
                            f"--save-side={','.join(k3names)}"], env=env,
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"FAIL: saving the Keras 3 models: {r.stderr.strip()[-2000:]}")
            failures += 1
        else:
            f, c = check(args.tool, k3, "keras3/")
            failures += f
            count += c
    else:
        print("SKIP Keras 3: no --keras3-python / $ESTC_KERAS3_PYTHON")
    return summary(failures, count)


if __name__ == "__main__":
    sys.exit(main())
