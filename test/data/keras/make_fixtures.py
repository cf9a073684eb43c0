#!/usr/bin/env python3
"""Writes the small Keras files test/unit/KerasTest.cpp reads (tf.keras 2.15).

  tiny.keras                 Sequential: Input(3) -> Dense(2, name="dense")
                             -> BatchNormalization(name="bn"), compiled
                             (adam, mse); weights 0.5, 1.5, ... in order
  tiny.h5                    the same, legacy HDF5 model
  tiny.weights.h5            its weights, Keras 3's layout (save_weights)
  tiny_legacy_weights.h5     its weights, legacy layout
  no_model_config.h5         tiny.h5 without the model_config attribute
  missing_dataset.h5         tiny.h5 without dense/kernel:0 (still listed in
                             weight_names)
  kernel_shape.h5            tiny.h5 with dense/kernel:0 of shape [3, 5]
                             (its config's units is 2)
  complex_weight.h5          tiny.h5 with dense/bias:0 as complex64
  huge_dataset.h5            tiny.h5 with dense/kernel:0 of shape
                             [3, 2**30], never written (no storage)
  external_link.h5           tiny.h5 whose dense/kernel:0 is an external
                             link to another file
  external_data.h5           tiny.h5 whose dense/kernel:0 keeps its data in
                             an external file (kernel.bin)
  cycle.weights.h5           tiny.weights.h5 with a hard link from
                             layers/dense/loop to layers/dense (a cycle)

usage: python3 test/data/keras/make_fixtures.py [OUT_DIR]  (default: here)
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    keras = tf.keras
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense"),
                              keras.layers.BatchNormalization(name="bn")], name="tiny")
    model.compile(optimizer="adam", loss="mse")
    v = 0.5
    for w in model.weights:
        n = int(np.prod(w.shape))
        w.assign(np.arange(v, v + n, dtype=np.float32).reshape(w.shape))
        v += n
    p = lambda name: os.path.join(out, name)  # noqa: E731
    model.save(p("tiny.keras"))
    model.save(p("tiny.h5"))
    model.save_weights(p("tiny.weights.h5"))
    model.save_weights(p("tiny_legacy_weights.h5"))

    def variant(name, edit):
        with open(p("tiny.h5"), "rb") as f:
            data = f.read()
        with open(p(name), "wb") as f:
            f.write(data)
        with h5py.File(p(name), "r+") as f:
            edit(f)

    variant("no_model_config.h5", lambda f: f.attrs.__delitem__("model_config"))
    variant("missing_dataset.h5",
            lambda f: f["model_weights/dense/dense"].__delitem__("kernel:0"))

    def reshape(f):
        g = f["model_weights/dense/dense"]
        del g["kernel:0"]
        g["kernel:0"] = np.zeros((3, 5), np.float32)
    variant("kernel_shape.h5", reshape)

    def complex_bias(f):
        g = f["model_weights/dense/dense"]
        del g["bias:0"]
        g["bias:0"] = np.zeros((2,), np.complex64)
    variant("complex_weight.h5", complex_bias)

    def huge_kernel(f):
        g = f["model_weights/dense/dense"]
        del g["kernel:0"]
        g.create_dataset("kernel:0", shape=(3, 2**30), dtype="f4")
    variant("huge_dataset.h5", huge_kernel)

    def external_link(f):
        g = f["model_weights/dense/dense"]
        del g["kernel:0"]
        g["kernel:0"] = h5py.ExternalLink("tiny.h5", "/model_weights/dense/dense/bias:0")
    variant("external_link.h5", external_link)

    def external_data(f):
        g = f["model_weights/dense/dense"]
        del g["kernel:0"]
        g.create_dataset("kernel:0", shape=(3, 2), dtype="f4", external=[("kernel.bin", 0, 24)])
    variant("external_data.h5", external_data)
    with open(p("tiny.weights.h5"), "rb") as f:
        data = f.read()
    with open(p("cycle.weights.h5"), "wb") as f:
        f.write(data)
    with h5py.File(p("cycle.weights.h5"), "r+") as f:
        f["layers/dense/loop"] = f["layers/dense"]
    for name in sorted(os.listdir(out)):
        if not name.endswith(".py"):
            print(f"{name}: {os.path.getsize(p(name))} bytes")


if __name__ == "__main__":
    main()
