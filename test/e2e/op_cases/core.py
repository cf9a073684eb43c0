"""Op oracle cases of the seed ops (test/data/op_cases/core.cpp)."""
from op_oracle import OpCase, Input

CASES = [
    OpCase("relu", lambda tf, x: tf.nn.relu(x), [Input("f32", [3, 5])]),
    OpCase("matmul_transpose_b",
           lambda tf, a, b: tf.linalg.matmul(a, b, transpose_b=True),
           [Input("f32", [4, 6]), Input("f32", [3, 6])]),
    OpCase("softmax_axis1", lambda tf, x: tf.nn.softmax(x, axis=1),
           [Input("f32", [2, 5, 3], low=-3, high=3)]),
    OpCase("where_broadcast", lambda tf, c, x, y: tf.where(c, x, y),
           [Input("bool", [4, 1]), Input("f32", [4, 3]), Input("f32", [3])]),
    OpCase("gather_axis1", lambda tf, p, i: tf.gather(p, i, axis=1),
           [Input("f32", [3, 6, 2]), Input("i64", [4], low=0, high=6)]),
    OpCase("reduce_max_keepdims",
           lambda tf, x: tf.reduce_max(x, axis=1, keepdims=True),
           [Input("f32", [3, 7, 2])]),
    OpCase("argmax_and_equal",
           lambda tf, x, a, b: (tf.math.argmax(x, axis=1), tf.equal(a, b)),
           [Input("f32", [5, 4]), Input("i32", [6], low=0, high=3),
            Input("i32", [6], low=0, high=3)]),
    OpCase("sigmoid_cross_entropy",
           lambda tf, z, x: tf.nn.sigmoid_cross_entropy_with_logits(
               labels=z, logits=x),
           [Input("f32", [4, 3], low=0, high=1, grad=False),
            Input("f32", [4, 3], low=-4, high=4)]),
]
