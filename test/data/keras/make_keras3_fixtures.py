#!/usr/bin/env python3
"""Writes the Keras 3 files test/unit/KerasTest.cpp reads.

Run with a Python whose keras is 3.x (KERAS_BACKEND=jax; e.g. a venv:
`python3 -m venv /tmp/k3 && /tmp/k3/bin/pip install keras h5py "jax[cpu]"`):

  keras3_tiny.keras   Functional: Input(5, 3) -> DepthwiseConv1D(2, name="dw")
                      -> Bidirectional(SimpleRNN(2), name="bi")
                      -> Sequential([Dense(1, name="inner_dense")],
                      name="inner"); weights 0.5, 1.5, ... in order
  keras3_tiny.h5      the same, Keras 3's legacy HDF5 model

usage: KERAS_BACKEND=jax /tmp/k3/bin/python make_keras3_fixtures.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402


def main():
    assert keras.__version__.startswith("3."), keras.__version__
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    L = keras.layers
    x = keras.Input((5, 3), name="x")
    h = L.DepthwiseConv1D(2, name="dw")(x)
    h = L.Bidirectional(L.SimpleRNN(2), name="bi")(h)
    inner = keras.Sequential([keras.Input((4,)), L.Dense(1, name="inner_dense")], name="inner")
    model = keras.Model(x, inner(h), name="keras3_tiny")
    v = 0.5
    for w in model.weights:
        n = int(np.prod(w.shape))
        w.assign(np.arange(v, v + n, dtype=np.float32).reshape(w.shape))
        v += n
    model.save(os.path.join(out, "keras3_tiny.keras"))
    model.save(os.path.join(out, "keras3_tiny.h5"))
    for w in model.weights:
        print(w.path, tuple(w.shape))


if __name__ == "__main__":
    main()
