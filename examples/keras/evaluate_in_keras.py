#!/usr/bin/env python3
"""Evaluates a Keras model file on Fashion-MNIST's test set in Keras.

The last step of the example: the model fine-tuned in C++
(keras_fashion_mnist --write_back=FILE) loads in Keras and is evaluated on
the same images, resized and rescaled as the C++ input pipeline does
(tf.image.resize of the grey image as RGB, then x * 2 - 1 of [0, 1]).
--expect_accuracy=X exits 1 unless Keras's accuracy is within 0.002 of X
(the accuracy estc printed). It also prints the classes Keras predicts
for the first 8 images, which the C++ example's served export printed.

Needs TensorFlow 2.15 (pip install tensorflow-cpu==2.15.1 "numpy<2").
"""
import argparse
import gzip
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def read_idx(path, offset):
    import numpy as np
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def find(data_dir, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    sys.exit(f"evaluate_in_keras: {data_dir}: no {name}[.gz]")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help=".keras or .h5 file")
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--eval_holdout", type=int, default=0,
                   help="evaluate on t10k's last N examples (as the C++ "
                        "example's --eval_holdout); 0: all of t10k")
    p.add_argument("--expect_accuracy", type=float)
    args = p.parse_args()

    import tensorflow as tf
    model = tf.keras.models.load_model(args.model)
    size = model.input_shape[1:3]
    images = read_idx(find(args.data_dir, "t10k-images-idx3-ubyte"), 16)
    labels = read_idx(find(args.data_dir, "t10k-labels-idx1-ubyte"), 8)
    images = images.reshape(-1, 28, 28, 1).astype("float32") / 255.0
    if args.eval_holdout:
        images, labels = images[-args.eval_holdout:], labels[-args.eval_holdout:]

    def prep(x):
        return tf.image.resize(tf.image.grayscale_to_rgb(x), size) * 2.0 - 1.0

    ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(100)
    ds = ds.map(lambda x, y: (prep(x), y))
    results = model.evaluate(ds, verbose=0, return_dict=True)
    accuracy = results["accuracy"]
    print(f"Keras ({tf.__version__}) on {args.model}: accuracy "
          f"{accuracy:.4f}, loss {results['loss']:.4f}")
    # The classes of the first 8 images, as the C++ example prints those
    # its export served.
    logits = model.predict_on_batch(prep(tf.constant(images[:8])))
    print("predicted " + " ".join(str(int(c)) for c in logits.argmax(-1)) +
          " (labels " + " ".join(str(int(c)) for c in labels[:8]) + ")")
    if args.expect_accuracy is not None and \
            abs(accuracy - args.expect_accuracy) > 0.002:
        sys.exit(f"evaluate_in_keras: Keras's accuracy {accuracy:.4f} is not "
                 f"estc's {args.expect_accuracy:.4f}")


if __name__ == "__main__":
    main()
