"""Op oracle cases of the Keras weight constraints (lib/Graph/Layers.h's
constraints::, test/data/op_cases/constraints.cpp): TF 2.15's
tf.keras.constraints applied to the same weights. Values only (grad=False):
a constraint is assigned after the optimizer's update, never
differentiated."""
from op_oracle import OpCase, Input


def _keras(name, *args, **kwargs):
    def fn(tf, w):
        return getattr(tf.keras.constraints, name)(*args, **kwargs)(w)
    return fn


CASES = [
    OpCase("constraint_max_norm", _keras("max_norm"),
           [Input("f32", [5, 3], low=-2, high=2)], grad=False),
    OpCase("constraint_max_norm_conv", _keras("max_norm", 1.5, axis=[0, 1, 2]),
           [Input("f32", [3, 3, 2, 4], low=-1, high=1)], grad=False),
    OpCase("constraint_non_neg", _keras("non_neg"),
           [Input("f32", [4, 6])], grad=False),
    OpCase("constraint_unit_norm", _keras("unit_norm"),
           [Input("f32", [6, 4], low=-3, high=3)], grad=False),
    OpCase("constraint_unit_norm_last", _keras("unit_norm", axis=-1),
           [Input("f32", [2, 3, 5])], grad=False),
    OpCase("constraint_min_max_norm",
           _keras("min_max_norm", min_value=0.8, max_value=1.2, rate=0.7),
           [Input("f32", [4, 5], low=-1, high=1)], grad=False),
    OpCase("constraint_min_max_norm_default", _keras("min_max_norm"),
           [Input("f32", [3, 4], low=-1.5, high=1.5)], grad=False),
    OpCase("constraint_radial_odd", _keras("radial_constraint"),
           [Input("f32", [3, 3, 2, 4])], grad=False),
    OpCase("constraint_radial_even", _keras("radial_constraint"),
           [Input("f32", [4, 4, 3, 2])], grad=False),
    OpCase("constraint_radial_five", _keras("radial_constraint"),
           [Input("f32", [5, 5, 1, 2])], grad=False),
]
