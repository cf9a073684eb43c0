#!/usr/bin/env python3
"""layers::multi_head_attention and layers::layer_normalization against
TensorFlow 2.15's Keras MultiHeadAttention and LayerNormalization.

For each case: the Keras layer (or a post-norm transformer block,
LayerNormalization(q + MultiHeadAttention(q, q))) and estc's
(attention_tool: the same layers on a run-time batch, through the JIT)
start from the same weights and see the same batch (and attention mask).
Both train a few steps of SGD on loss = sum(output * c). Checked: the
output before training, the loss of every step and the final weights, to
float32 tolerance.

usage: tf_attention_compat.py --tool=build/bin/attention_tool [--seed=S]
Exits 77 (ctest: skipped) with a message when TensorFlow is not installed.
"""
import argparse
import sys

from case_tool import check_sgd_case, import_tf, summary, words


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    tf = import_tf()
    if tf is None:
        return 77
    import numpy as np  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(args.seed)
    K = tf.keras.layers

    # (name, layer, config, flags); config: tq, tv, dq, dv, heads, key_dim,
    # value_dim, output_shape.
    base = dict(tq=5, tv=6, dq=8, dv=7, heads=2, key_dim=4, value_dim=0,
                output_shape=0)
    cases = [
        ("mha_cross", "mha", {}, []),
        ("mha_mask", "mha", {}, ["mask"]),
        ("mha_self_causal", "mha", dict(tv=5, dv=8), ["causal"]),
        ("mha_key_value_dim_output", "mha",
         dict(value_dim=3, output_shape=6, heads=3), ["key", "mask"]),
        ("mha_no_bias_causal_mask", "mha", dict(tv=5), ["no_bias", "causal",
                                                        "mask"]),
        ("layer_norm", "layer_norm", dict(dq=16), []),
        ("transformer_block", "block", dict(tv=5, dv=8), ["causal"]),
    ]
    batch, lr = 3, 0.05
    failures = 0
    for name, kind, override, flags in cases:
        cfg = dict(base, **override)
        q = rng.uniform(-1, 1, (batch, cfg["tq"], cfg["dq"])).astype(
            np.float32)
        v = rng.uniform(-1, 1, (batch, cfg["tv"], cfg["dv"])).astype(
            np.float32)
        k = rng.uniform(-1, 1, (batch, cfg["tv"], cfg["dv"])).astype(
            np.float32)
        mask = (rng.uniform(0, 1, (batch, cfg["tq"], cfg["tv"])) > 0.3
                ).astype(np.float32)
        mask[0, 1, :] = 0.0  # a query that may attend to nothing
        mha_kwargs = dict(num_heads=cfg["heads"], key_dim=cfg["key_dim"],
                          use_bias="no_bias" not in flags)
        if cfg["value_dim"]:
            mha_kwargs["value_dim"] = cfg["value_dim"]
        if cfg["output_shape"]:
            mha_kwargs["output_shape"] = cfg["output_shape"]

        if kind == "mha":
            mha = K.MultiHeadAttention(**mha_kwargs)
            layers = [mha]

            def call(mha=mha):
                return mha(q, v, key=k if "key" in flags else None,
                           attention_mask=(mask > 0.5) if "mask" in flags
                           else None,
                           use_causal_mask="causal" in flags)
        elif kind == "layer_norm":
            norm = K.LayerNormalization()
            layers = [norm]

            def call(norm=norm):
                return norm(q)
        else:
            mha = K.MultiHeadAttention(**mha_kwargs)
            norm = K.LayerNormalization(epsilon=1e-6)
            layers = [mha, norm]

            def call(mha=mha, norm=norm):
                return norm(q + mha(q, q, use_causal_mask="causal" in flags))
        call()  # builds the weights
        variables = [w for layer in layers for w in layer.trainable_weights]
        weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                   for w in variables]
        for w, value in zip(variables, weights):
            w.assign(value)
        y0 = call().numpy()
        c = rng.uniform(-1, 1, y0.shape).astype(np.float32)
        losses = []
        for _ in range(args.steps):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(call() * c)
            grads = tape.gradient(loss, variables)
            losses.append(float(loss))
            for w, g in zip(variables, grads):
                w.assign_sub(lr * g)
        final = [w.numpy() for w in variables]
        # Keras's names ("multi_head_attention_3/query/kernel:0") with the
        # layer's own name as estc's first layer gets it.
        names = []
        for w in variables:
            parts = w.name.split(":")[0].split("/")
            if parts[0].startswith("multi_head_attention"):
                parts[0] = "multi_head_attention"
            elif parts[0].startswith("layer_normalization"):
                parts[0] = "layer_normalization"
            names.append("/".join(parts))

        lines = [f"layer {kind}", f"batch {batch}", f"steps {args.steps}",
                 f"lr {lr}", f"flags {' '.join(flags)}", f"q {words(q)}",
                 f"c {words(c)}"]
        lines += [f"{key} {cfg[key]}" for key in
                  ("tq", "tv", "dq", "dv", "heads", "key_dim", "value_dim",
                   "output_shape")]
        if kind == "mha":
            lines.append(f"v {words(v)}")
        if "key" in flags:
            lines.append(f"k {words(k)}")
        if "mask" in flags:
            lines.append(f"mask {words(mask)}")
        lines += [f"var {n} {words(w)}" for n, w in zip(names, weights)]
        failures += check_sgd_case(args.tool, "attention_tool", name, lines,
                                   y0, losses, names, final)
    return summary(failures, len(cases))


if __name__ == "__main__":
    sys.exit(main())
