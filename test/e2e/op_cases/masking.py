"""Op oracle cases of Keras masks (test/data/op_cases/masking.cpp): TF 2.15's
GlobalAveragePooling1D called with the mask an Embedding(mask_zero=True)
gives, tf.not_equal(ids, 0)."""
from op_oracle import OpCase, Input

IDS = [3, 0, 5, 0, 0, 1, 2, 3, 4, 0, 0, 7, 0, 0, 2]


def _gap(keepdims):
    def fn(tf, x, ids):
        layer = tf.keras.layers.GlobalAveragePooling1D(keepdims=keepdims)
        return layer(x, mask=tf.not_equal(ids, 0))
    return fn


CASES = [
    OpCase("global_average_pooling1d_masked", _gap(False),
           [Input("f32", [3, 5, 4]), Input("i64", [3, 5], values=IDS)]),
    OpCase("global_average_pooling1d_masked_keepdims", _gap(True),
           [Input("f32", [3, 5, 4]), Input("i64", [3, 5], values=IDS)]),
]
