"""Op oracle cases of sorting, top_k, in_top_k and image resizing
(test/data/op_cases/sorting.cpp).

Inputs are NaN-free: TF's sorts compare with `>`, so where a NaN lands
depends on the algorithm (tf.math.top_k([[2, nan, -1, 5, nan, 0]], 1) is
0.0); estc ranks NaN above +inf (docs/ops.md, "Sorting")."""
from op_oracle import OpCase, Input

# Ties: equal values keep their index order in top_k, sort and argsort.
TIES = [0.5, -1.0, 0.5, 2.0, 0.5, -1.0,
        3.0, 3.0, 3.0, 3.0, 1.0, 3.0]
# in_top_k rows: a tie at the boundary, all equal, a NaN, an infinity, a
# plain row, and targets out of range (-1, 5).
IN_TOP_K = [0.1, 0.5, 0.5, 0.2, 0.0,
            1.0, 1.0, 1.0, 1.0, 1.0,
            0.1, float("nan"), 0.5, 0.2, 0.3,
            0.1, float("inf"), 0.5, 0.2, 0.3,
            0.9, 0.1, 0.4, 0.3, 0.2,
            0.9, 0.1, 0.4, 0.3, 0.2,
            0.9, 0.1, 0.4, 0.3, 0.2]

CASES = [
    OpCase("top_k_values_indices", lambda tf, x: tf.math.top_k(x, k=3),
           [Input("f32", [4, 7])]),
    OpCase("top_k_ties", lambda tf, x: tf.math.top_k(x, k=4),
           [Input("f32", [2, 6], values=TIES)]),
    OpCase("top_k_int_ties", lambda tf, x: tf.math.top_k(x, k=5),
           [Input("i32", [5, 9], low=0, high=4)]),
    OpCase("top_k_rank3_all", lambda tf, x: tf.math.top_k(x, k=6),
           [Input("f32", [2, 3, 6])]),
    # k > 16: the heapsort path.
    OpCase("top_k_large_k", lambda tf, x: tf.math.top_k(x, k=20),
           [Input("f32", [3, 41])]),
    OpCase("sort_ascending", lambda tf, x: tf.sort(x),
           [Input("f32", [4, 9])]),
    OpCase("sort_descending_axis0",
           lambda tf, x: tf.sort(x, axis=0, direction="DESCENDING"),
           [Input("f32", [6, 3])]),
    OpCase("sort_long", lambda tf, x: tf.sort(x, direction="DESCENDING"),
           [Input("f32", [2, 100], low=-3, high=3)]),
    OpCase("sort_ties", lambda tf, x: tf.sort(x),
           [Input("f32", [2, 6], values=TIES)]),
    OpCase("argsort_ascending_ties", lambda tf, x: tf.argsort(x, stable=True),
           [Input("i32", [4, 12], low=0, high=5)]),
    OpCase("argsort_descending_ties",
           lambda tf, x: tf.argsort(x, direction="DESCENDING", stable=True),
           [Input("i64", [4, 12], low=0, high=5)]),
    OpCase("argsort_axis1", lambda tf, x: tf.argsort(x, axis=1),
           [Input("f32", [2, 7, 3])]),
    OpCase("argsort_float_ties_both",
           lambda tf, x: (tf.argsort(x), tf.argsort(x, direction="DESCENDING")),
           [Input("f32", [2, 6], values=TIES)]),
    OpCase("in_top_k_2", lambda tf, t, p: tf.math.in_top_k(t, p, 2),
           [Input("i32", [7], values=[1, 2, 0, 1, 0, -1, 5]),
            Input("f32", [7, 5], values=IN_TOP_K)], grad=False),
    OpCase("in_top_k_1_and_k_past_classes",
           lambda tf, t, p: (tf.math.in_top_k(t, p, 1),
                             tf.math.in_top_k(t, p, 7)),
           [Input("i64", [7], values=[1, 2, 0, 1, 0, -1, 5]),
            Input("f32", [7, 5], values=IN_TOP_K)], grad=False),
    OpCase("in_top_k_random", lambda tf, t, p: tf.math.in_top_k(t, p, 3),
           [Input("i32", [16], low=0, high=10),
            Input("f32", [16, 10])], grad=False),
    OpCase("resize_bilinear_up", lambda tf, x: tf.image.resize(x, [7, 9]),
           [Input("f32", [2, 4, 5, 3])]),
    OpCase("resize_bilinear_down", lambda tf, x: tf.image.resize(x, [4, 3]),
           [Input("f32", [2, 9, 7, 2])]),
    OpCase("resize_nearest_up",
           lambda tf, x: tf.image.resize(x, [7, 9], method="nearest"),
           [Input("f32", [2, 4, 5, 3])]),
    OpCase("resize_nearest_down",
           lambda tf, x: tf.image.resize(x, [4, 3], method="nearest"),
           [Input("f32", [2, 9, 7, 2])]),
    OpCase("resize_unbatched_aspect",
           lambda tf, x: tf.image.resize(x, [6, 6],
                                         preserve_aspect_ratio=True),
           [Input("f32", [3, 5, 2])]),
    OpCase("resize_antialias_up",
           lambda tf, x: tf.image.resize(x, [8, 10], antialias=True),
           [Input("f32", [1, 4, 5, 2])], atol=2e-6),
    OpCase("resize_compat_bilinear_align",
           lambda tf, x: tf.compat.v1.image.resize_bilinear(
               x, [5, 8], align_corners=True),
           [Input("f32", [2, 3, 4, 2])]),
    OpCase("resize_compat_bilinear_legacy",
           lambda tf, x: tf.compat.v1.image.resize_bilinear(x, [5, 3]),
           [Input("f32", [2, 3, 4, 2])]),
    OpCase("resize_compat_nearest_align",
           lambda tf, x: tf.compat.v1.image.resize_nearest_neighbor(
               x, [7, 3], align_corners=True),
           [Input("f32", [2, 3, 4, 2])]),
    OpCase("resize_compat_nearest_legacy",
           lambda tf, x: tf.compat.v1.image.resize_nearest_neighbor(
               x, [7, 3]),
           [Input("f32", [2, 3, 4, 2])]),
    OpCase("resize_nearest_int",
           lambda tf, x: tf.image.resize(x, [5, 2], method="nearest"),
           [Input("i32", [1, 3, 4, 2], low=0, high=100)]),
]
