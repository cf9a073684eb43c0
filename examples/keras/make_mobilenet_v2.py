#!/usr/bin/env python3
"""Writes the Keras model the example fine-tunes in C++ (issue 29's recipe).

TF's guide to the Estimator converts a compiled keras.applications
MobileNetV2 (its base frozen, global average pooling and a new dense head)
with model_to_estimator and fine-tunes it on resized, rescaled images. This
script writes that model as a .keras file (or .h5) for estc's
model_to_estimator:

  image [96, 96, 3] -> MobileNetV2 base (include_top=False, alpha)
        -> GlobalAveragePooling2D -> Dropout(0.2) -> Dense(10) "logits"

compiled with Adam, SparseCategoricalCrossentropy(from_logits=True) and
accuracy. The base's ImageNet weights cannot be downloaded here: with
--weights=PATH (Keras's mobilenet_v2_weights_..._no_top.h5, when you have
it) the base is loaded and frozen, as in TF's guide; without, the base
starts from Keras's initializers and is trained with the head (a frozen
random base gives a head nothing to learn from), with Keras's default
batch normalization momentum 0.99 instead of MobileNetV2's 0.999 (whose
moving statistics would lag the trained weights for thousands of steps).

Needs TensorFlow 2.15 (pip install tensorflow-cpu==2.15.1 "numpy<2").
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def build(args):
    import tensorflow as tf

    tf.keras.utils.set_random_seed(args.seed)
    size = (args.input_size, args.input_size, 3)
    base = tf.keras.applications.MobileNetV2(
        input_shape=size, include_top=False, alpha=args.alpha,
        weights=args.weights or None)
    momentum = args.bn_momentum or (0.999 if args.weights else 0.99)
    for layer in base.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.momentum = momentum
    image = tf.keras.Input(size, name="image")
    if args.weights:
        base.trainable = False
        # The frozen base keeps its batch normalization in inference mode.
        h = base(image, training=False)
    else:
        h = base(image)
    h = tf.keras.layers.GlobalAveragePooling2D()(h)
    h = tf.keras.layers.Dropout(0.2)(h)
    logits = tf.keras.layers.Dense(10, name="logits")(h)
    model = tf.keras.Model(image, logits)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(args.learning_rate),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"])
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="/tmp/mobilenet_v2.keras",
                   help="the model file: .keras or .h5")
    p.add_argument("--input_size", type=int, default=96)
    p.add_argument("--alpha", type=float, default=0.35,
                   help="MobileNetV2's width multiplier")
    p.add_argument("--weights", default="",
                   help="ImageNet weights of the base (.h5): freeze it")
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--bn_momentum", type=float,
                   help="the base's BatchNormalization momentum (default: "
                        "MobileNetV2's 0.999 for a frozen base, Keras's "
                        "0.99 for a base trained from scratch, whose moving "
                        "statistics must follow within a few hundred steps; "
                        "0.9 for short runs)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    model = build(args)
    model.save(args.out)
    print(f"wrote {args.out}: {model.count_params()} parameters, "
          f"input {model.input_names[0]} {model.input_shape}, "
          f"output {model.output_names[0]}")


if __name__ == "__main__":
    main()
