#!/usr/bin/env python3
"""Writes the Keras files test/unit/KerasEstimatorTest.cpp reads (tf.keras
2.15), beside tiny.keras (make_fixtures.py):

  two_outputs.keras   Functional: Input "a" (4) and "b" (3), concatenated,
                      Dense(5, tanh, "trunk"), outputs Dense(3, "cls") and
                      Dense(1, "reg"); compiled (SGD 0.05, losses
                      {"cls": sparse categorical crossentropy from logits,
                      "reg": mse}, loss_weights {"cls": 1, "reg": 0.5},
                      metrics {"cls": accuracy, "reg": mae}); weights from
                      seed 1

usage: python3 test/data/keras/make_estimator_fixtures.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402


def main():
    out = (sys.argv[1] if len(sys.argv) > 1
           else os.path.dirname(os.path.abspath(__file__)))
    k = tf.keras
    k.utils.set_random_seed(1)
    a = k.Input((4,), name="a")
    b = k.Input((3,), name="b")
    h = k.layers.Concatenate(name="cat")([a, b])
    h = k.layers.Dense(5, activation="tanh", name="trunk")(h)
    m = k.Model([a, b], [k.layers.Dense(3, name="cls")(h),
                         k.layers.Dense(1, name="reg")(h)])
    m.compile(optimizer=k.optimizers.SGD(0.05),
              loss={"cls": k.losses.SparseCategoricalCrossentropy(
                  from_logits=True), "reg": "mse"},
              loss_weights={"cls": 1.0, "reg": 0.5},
              metrics={"cls": ["accuracy"], "reg": ["mae"]})
    m.save(os.path.join(out, "two_outputs.keras"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
