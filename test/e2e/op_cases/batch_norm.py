"""Op oracle cases of fused_batch_norm (test/data/op_cases/batch_norm.cpp)."""
from op_oracle import OpCase, Input


def _fused(epsilon=0.001, data_format="NHWC", outputs=1):
    def fn(tf, x, scale, offset):
        y, mean, variance = tf.compat.v1.nn.fused_batch_norm(
            x, scale, offset, epsilon=epsilon, data_format=data_format,
            is_training=True)
        return y if outputs == 1 else (y, mean, variance)
    return fn


CASES = [
    OpCase("fused_batch_norm_nhwc", _fused(),
           [Input("f32", [3, 4, 5, 6], low=-2, high=2), Input("f32", [6]),
            Input("f32", [6])], rtol=1e-4, atol=1e-5),
    OpCase("fused_batch_norm_nchw", _fused(1e-4, "NCHW"),
           [Input("f32", [2, 5, 3, 4], low=-3, high=1), Input("f32", [5]),
            Input("f32", [5])], rtol=1e-4, atol=1e-5),
    OpCase("fused_batch_norm_large_mean", _fused(),
           [Input("f32", [2, 3, 3, 4], low=500, high=502), Input("f32", [4]),
            Input("f32", [4])], rtol=1e-3, atol=1e-3, grad_rtol=1e-3,
           grad_atol=1e-3),
    OpCase("fused_batch_norm_statistics", _fused(0.01, outputs=3),
           [Input("f32", [4, 2, 3, 3], low=-1, high=3), Input("f32", [3]),
            Input("f32", [3])], rtol=1e-4, atol=1e-5, grad=False),
]
