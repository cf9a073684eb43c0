#!/usr/bin/env python3
"""How far estc's and TF's float32 forward passes are from float64, layer by
layer, on the whole MobileNetV2 of test/e2e/tf_keras_estimator_compat.py's
check_trained (alpha 0.35, 32x32 inputs, the same seed-7 weights, a batch of
32 drawn with --seed).

Each batch norm's input is taken from Keras's training-mode float64 forward
pass; every BatchNormalization's moving statistics are then set to that
batch's (mean, biased variance), so the inference forward pass computes
what the training one does. A model whose outputs are the batch norms that
feed a ReLU (the pre-activations) is saved as .keras; tf.keras predicts it
in float32 and estc through model_to_estimator (keras_estimator_tool).
Per layer: the largest and the mean |error| of each against float64.
ReLU6's kinks make float32 noise of this size decide single elements'
gradients (check_trained's docstring).

usage: python3 bench/keras_forward_error.py
           --tool=build/bin/keras_estimator_tool [--seed=12] [--work=DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "e2e"))
import tf_keras_estimator_compat as compat  # noqa: E402
from case_tool import import_tf  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--work", default="")
    args = p.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    k = tf.keras
    work = args.work or tempfile.mkdtemp(prefix="keras_forward_error")
    os.makedirs(work, exist_ok=True)
    build = compat.application("MobileNetV2", 1e-4)
    tf.keras.utils.set_random_seed(7)
    model32 = build(tf)
    rng = np.random.default_rng(args.seed)
    x = rng.uniform(-1, 1, size=(32, 32, 32, 3)).astype(np.float32)
    model64 = compat.float64_twin(tf, np, build, model32)

    def base(model):
        return [layer for layer in model.layers if hasattr(layer, "layers")][0]

    base32, base64 = base(model32), base(model64)
    norms = [layer for layer in base32.layers
             if isinstance(layer, k.layers.BatchNormalization)]
    feeding = [relu._inbound_nodes[0].inbound_layers
               for relu in compat.relu_layers(k, base32)]
    taps = [base64.get_layer(n.name) for n in norms]
    probe = k.Model(base64.input, [t.input for t in taps] +
                    [base64.get_layer(f.name).output for f in feeding])
    values = [v.numpy() for v in probe(x.astype(np.float64), training=True)]
    inputs64, exact = values[:len(norms)], values[len(norms):]
    for norm, xin in zip(norms, inputs64):
        gamma, beta, _, _ = norm.get_weights()
        norm.set_weights([gamma, beta,
                          xin.mean((0, 1, 2)).astype(np.float32),
                          xin.var((0, 1, 2)).astype(np.float32)])
    sub = k.Model(base32.input, [f.output for f in feeding])
    sub.compile(optimizer="sgd", loss="mse")
    path = os.path.join(work, "preactivations.keras")
    sub.save(path)
    keras32 = sub.predict(x, verbose=0)

    model_dir = os.path.join(work, "estc")
    shutil.rmtree(model_dir, ignore_errors=True)
    case = {"model": path, "model_dir": model_dir, "seed": 1, "train": [],
            "predict": compat.estc_batch(np, {sub.input_names[0]: x}, None,
                                         False)}
    case_path = os.path.join(work, "case.json")
    with open(case_path, "w", encoding="utf-8") as f:
        json.dump(case, f)
    run = subprocess.run([args.tool, case_path], capture_output=True,
                         text=True, check=False)
    if run.returncode != 0:
        print(f"keras_estimator_tool exited {run.returncode}: "
              f"{run.stderr.strip().splitlines()[-1:]}")
        return 1
    predictions = json.loads(run.stdout)["predictions"]
    print(f"{'layer':28} {'TF max':>8} {'estc max':>8} {'TF mean':>8} "
          f"{'estc mean':>9}")
    for layer, want, tf32 in zip(feeding, exact, keras32):
        got = np.asarray(predictions[layer.name]["values"]).reshape(want.shape)
        print(f"{layer.name:28} {np.abs(tf32 - want).max():8.2g} "
              f"{np.abs(got - want).max():8.2g} "
              f"{np.abs(tf32 - want).mean():8.2g} "
              f"{np.abs(got - want).mean():9.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
