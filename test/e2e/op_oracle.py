"""The op oracle's case description (test/e2e/tf_ops_compat.py).

A case module, test/e2e/op_cases/<group>.py, lists its cases:

    from op_oracle import OpCase, Input
    CASES = [
        OpCase("erf", lambda tf, x: tf.math.erf(x),
               [Input("f32", [3, 4], low=-2, high=2)]),
    ]

and test/data/op_cases/<group>.cpp builds the estc case of the same name
(ESTC_OP_CASE, test/data/OpCases.h) from the same inputs, in order.
"""


class Input:
    """An input of a case: dtype "f32" | "f64" | "i32" | "i64" | "bool",
    drawn uniformly in [low, high) (integers too), or `values` (flattened,
    row major). `grad` (default: float inputs) makes the driver compare the
    gradient with respect to it."""

    def __init__(self, dtype, shape, low=-1.0, high=1.0, grad=None,
                 values=None):
        if dtype not in ("f32", "f64", "i32", "i64", "bool"):
            raise ValueError(f"unknown dtype {dtype!r}")
        self.dtype, self.shape = dtype, list(shape)
        self.low, self.high, self.values = low, high, values
        self.grad = dtype in ("f32", "f64") if grad is None else grad
        if self.grad and dtype not in ("f32", "f64"):
            raise ValueError("only float inputs have gradients")


class OpCase:
    """`fn(tf, *tensors)` returns a tensor or a list/tuple of tensors: TF's
    side of the estc case `name`. Outputs compare within rtol/atol (integers
    and bools exactly), gradients within grad_rtol/grad_atol; `grad=False`
    compares outputs only (ops TF does not differentiate)."""

    def __init__(self, name, fn, inputs, rtol=1e-5, atol=1e-6, grad_rtol=1e-4,
                 grad_atol=1e-5, grad=True, check_dtype=True):
        self.name, self.fn, self.inputs = name, fn, list(inputs)
        self.rtol, self.atol = rtol, atol
        self.grad_rtol, self.grad_atol = grad_rtol, grad_atol
        self.grad, self.check_dtype = grad, check_dtype
