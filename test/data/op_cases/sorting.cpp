//===- sorting.cpp - Op oracle cases of sorting and image resizing -------===//
//
// top_k (values and indices, ties, integers, the selection and heapsort
// paths), sort, argsort (both directions, ties, other axes), in_top_k
// (ties, non-finite rows, targets out of range, k past the classes) and
// tf.image.resize / the compat resizes (bilinear and nearest, up and down,
// with gradients): test/e2e/op_cases/sorting.py.
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

namespace {
Outputs topK(const Tensor &x, int64_t k) {
  TopK r = top_k(x, k);
  return Outputs{r.values, r.indices};
}
} // namespace

ESTC_OP_CASE(top_k_values_indices,
             [](Graph &, const Inputs &in) { return topK(in[0], 3); });
ESTC_OP_CASE(top_k_ties,
             [](Graph &, const Inputs &in) { return topK(in[0], 4); });
ESTC_OP_CASE(top_k_int_ties,
             [](Graph &, const Inputs &in) { return topK(in[0], 5); });
ESTC_OP_CASE(top_k_rank3_all,
             [](Graph &, const Inputs &in) { return topK(in[0], 6); });
ESTC_OP_CASE(top_k_large_k,
             [](Graph &, const Inputs &in) { return topK(in[0], 20); });
ESTC_OP_CASE(sort_ascending,
             [](Graph &, const Inputs &in) { return Outputs{sort(in[0])}; });
ESTC_OP_CASE(sort_descending_axis0, [](Graph &, const Inputs &in) {
  return Outputs{sort(in[0], 0, "DESCENDING")};
});
ESTC_OP_CASE(sort_long, [](Graph &, const Inputs &in) {
  return Outputs{sort(in[0], -1, "DESCENDING")};
});
ESTC_OP_CASE(sort_ties,
             [](Graph &, const Inputs &in) { return Outputs{sort(in[0])}; });
ESTC_OP_CASE(argsort_ascending_ties,
             [](Graph &, const Inputs &in) { return Outputs{argsort(in[0])}; });
ESTC_OP_CASE(argsort_descending_ties, [](Graph &, const Inputs &in) {
  return Outputs{argsort(in[0], -1, "DESCENDING", true)};
});
ESTC_OP_CASE(argsort_axis1, [](Graph &, const Inputs &in) {
  return Outputs{argsort(in[0], 1)};
});
ESTC_OP_CASE(argsort_float_ties_both, [](Graph &, const Inputs &in) {
  return Outputs{argsort(in[0]), argsort(in[0], -1, "DESCENDING")};
});
ESTC_OP_CASE(in_top_k_2, [](Graph &, const Inputs &in) {
  return Outputs{nn::in_top_k(in[0], in[1], 2)};
});
ESTC_OP_CASE(in_top_k_1_and_k_past_classes, [](Graph &, const Inputs &in) {
  return Outputs{nn::in_top_k(in[0], in[1], 1), nn::in_top_k(in[0], in[1], 7)};
});
ESTC_OP_CASE(in_top_k_random, [](Graph &, const Inputs &in) {
  return Outputs{nn::in_top_k(in[0], in[1], 3)};
});
ESTC_OP_CASE(resize_bilinear_up, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {7, 9})};
});
ESTC_OP_CASE(resize_bilinear_down, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {4, 3})};
});
ESTC_OP_CASE(resize_nearest_up, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {7, 9}, "nearest")};
});
ESTC_OP_CASE(resize_nearest_down, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {4, 3}, "nearest")};
});
ESTC_OP_CASE(resize_unbatched_aspect, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {6, 6}, "bilinear",
                               /*preserve_aspect_ratio=*/true)};
});
ESTC_OP_CASE(resize_antialias_up, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {8, 10}, "bilinear", false,
                               /*antialias=*/true)};
});
ESTC_OP_CASE(resize_antialias_down, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {4, 3}, "bilinear", false, true)};
});
ESTC_OP_CASE(resize_antialias_mixed, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {9, 2}, "bilinear", false, true)};
});
ESTC_OP_CASE(resize_compat_bilinear_align, [](Graph &, const Inputs &in) {
  return Outputs{image::resize_bilinear(in[0], {5, 8}, true)};
});
ESTC_OP_CASE(resize_compat_bilinear_legacy, [](Graph &, const Inputs &in) {
  return Outputs{image::resize_bilinear(in[0], {5, 3})};
});
ESTC_OP_CASE(resize_compat_nearest_align, [](Graph &, const Inputs &in) {
  return Outputs{image::resize_nearest_neighbor(in[0], {7, 3}, true)};
});
ESTC_OP_CASE(resize_compat_nearest_legacy, [](Graph &, const Inputs &in) {
  return Outputs{image::resize_nearest_neighbor(in[0], {7, 3})};
});
ESTC_OP_CASE(resize_nearest_int, [](Graph &, const Inputs &in) {
  return Outputs{image::resize(in[0], {5, 2}, "nearest")};
});
