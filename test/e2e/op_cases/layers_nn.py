"""Op oracle cases: layer normalization and the attention core (TF's side).

The C++ side is test/data/op_cases/layers_nn.cpp. Layer norm is
tf.nn.moments + tf.nn.batch_normalization with given gamma and beta (what
Keras's LayerNormalization and tf.contrib's layer_norm compute); the
attention softmax is Keras 2.15's masked Softmax: logits * scale, plus
(1 - mask) * -1e9, then tf.nn.softmax.
"""
import math

from op_oracle import OpCase, Input


def layer_norm(tf, x, gamma, beta, begin_norm, epsilon):
    axes = list(range(begin_norm, len(x.shape)))
    mean, var = tf.nn.moments(x, axes, keepdims=True)
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def masked_softmax(tf, logits, scale, mask=None, causal=False, additive=None):
    z = logits * scale
    keep = None
    if mask is not None:
        keep = tf.cast(mask, z.dtype)
    if causal:
        t, s = logits.shape[-2], logits.shape[-1]
        band = tf.linalg.band_part(tf.ones([t, s], z.dtype), -1, 0)
        keep = band if keep is None else keep * band
    if keep is not None:
        z += (1.0 - keep) * -1e9
    if additive is not None:
        z += additive
    return tf.nn.softmax(z, axis=-1)


def attention(tf, q, k, v, mask=None, causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    w = masked_softmax(tf, tf.matmul(q, k, transpose_b=True), scale, mask,
                       causal)
    return tf.matmul(w, v)


CASES = [
    OpCase("layer_norm_last",
           lambda tf, x, g, b: layer_norm(tf, x, g, b, 1, 1e-3),
           [Input("f32", [4, 16]), Input("f32", [16]), Input("f32", [16])]),
    OpCase("layer_norm_trailing_two",
           lambda tf, x, g, b: layer_norm(tf, x, g, b, 1, 1e-5),
           [Input("f32", [3, 5, 6], low=-3, high=5), Input("f32", [5, 6]),
            Input("f32", [5, 6])], atol=1e-5),
    OpCase("layer_norm_contrib",
           lambda tf, x, g, b: layer_norm(tf, x, g, b, 1, 1e-12),
           [Input("f32", [2, 3, 8]), Input("f32", [8]), Input("f32", [8])],
           atol=1e-5),
    OpCase("attention_softmax_scaled",
           lambda tf, l: masked_softmax(tf, l, 0.25),
           [Input("f32", [2, 3, 4, 5], low=-4, high=4)]),
    OpCase("attention_softmax_bool_mask",
           lambda tf, l, m: masked_softmax(tf, l, 0.5, mask=m > 0.0),
           [Input("f32", [2, 2, 4, 5], low=-4, high=4),
            Input("f32", [2, 1, 4, 5], grad=False)]),
    OpCase("attention_softmax_causal",
           lambda tf, l: masked_softmax(tf, l, 1.0, causal=True),
           [Input("f32", [2, 3, 6, 6], low=-3, high=3)]),
    OpCase("attention_softmax_additive",
           lambda tf, l, a: masked_softmax(tf, l, 1.0, additive=a),
           [Input("f32", [2, 3, 4, 4]), Input("f32", [1, 3, 4, 4])]),
    OpCase("scaled_dot_product_attention",
           lambda tf, q, k, v, m: attention(
               tf, q, k, v, mask=tf.expand_dims(m > 0.0, 1)),
           [Input("f32", [2, 2, 5, 4]), Input("f32", [2, 2, 6, 4]),
            Input("f32", [2, 2, 6, 3]), Input("f32", [2, 5, 6], grad=False)],
           atol=1e-5),
    OpCase("scaled_dot_product_attention_causal",
           lambda tf, q, k, v: attention(tf, q, k, v, causal=True),
           [Input("f32", [2, 2, 5, 4]), Input("f32", [2, 2, 5, 4]),
            Input("f32", [2, 2, 5, 3])], atol=1e-5),
]
