//===- shapes.cpp - Op oracle cases of the shape and indexing ops -------===//
//
// lib/Graph/ArrayOps.h, est.reverse / est.shape, einsum and the
// broadcasting batch matmul against TF 2.15 (test/e2e/op_cases/shapes.py).
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/ArrayOps.h"
#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(tile, [](Graph &, const Inputs &in) {
  return Outputs{tile(in[0], {2, 1, 3})};
});
ESTC_OP_CASE(stack_axis1, [](Graph &, const Inputs &in) {
  return Outputs{stack({in[0], in[1], in[0]}, 1)};
});
ESTC_OP_CASE(unstack_axis1,
             [](Graph &, const Inputs &in) { return unstack(in[0], 1); });
ESTC_OP_CASE(split_num,
             [](Graph &, const Inputs &in) { return split(in[0], 2, 2); });
ESTC_OP_CASE(split_sizes, [](Graph &, const Inputs &in) {
  return split(in[0], Dims{1, -1, 2}, -1);
});
ESTC_OP_CASE(range_float, [](Graph &g, const Inputs &in) {
  return Outputs{multiply(in[0], range(g, 0.0, 2.0, 0.5, DType::Float32))};
});
ESTC_OP_CASE(range_int, [](Graph &g, const Inputs &in) {
  return Outputs{range(g, 10, 1, -3), multiply(in[0], 2.0)};
});
ESTC_OP_CASE(shape_and_size, [](Graph &, const Inputs &in) {
  return Outputs{shape_of(in[0]), shape_of(in[0], DType::Int64), size(in[0])};
});
ESTC_OP_CASE(reverse, [](Graph &, const Inputs &in) {
  return Outputs{reverse(in[0], {0, -1})};
});

ESTC_OP_CASE(strided_slice_plain, [](Graph &, const Inputs &in) {
  return Outputs{strided_slice(in[0], {0, 1, 0}, {2, 3, 4}, {1, 1, 2})};
});
ESTC_OP_CASE(strided_slice_negative, [](Graph &, const Inputs &in) {
  return Outputs{
      strided_slice(in[0], {0, 2, 0}, {0, 0, 0}, {-1, -1, -3}, 0b101, 0b101)};
});
ESTC_OP_CASE(strided_slice_begin_end_mask, [](Graph &, const Inputs &in) {
  return Outputs{
      strided_slice(in[0], {1, 1, 3}, {0, 2, 1}, {1, 1, -1}, 0b010, 0b101)};
});
ESTC_OP_CASE(strided_slice_ellipsis, [](Graph &, const Inputs &in) {
  return Outputs{strided_slice(in[0], {0, 1}, {0, 3}, {1, 1}, 0, 0, 0b01)};
});
ESTC_OP_CASE(strided_slice_new_axis, [](Graph &, const Inputs &in) {
  return Outputs{strided_slice(in[0], {0, 0, 1}, {0, 0, 3}, {1, 1, 1}, 0b001,
                               0b001, 0, 0b010)};
});
ESTC_OP_CASE(strided_slice_shrink, [](Graph &, const Inputs &in) {
  return Outputs{strided_slice(in[0], {1, 0, -1}, {2, 0, 0}, {1, 1, 1}, 0b010,
                               0b010, 0, 0, 0b101)};
});
ESTC_OP_CASE(strided_slice_clamped, [](Graph &, const Inputs &in) {
  return Outputs{strided_slice(in[0], {-10, 1, 7}, {10, 100, -10}, {1, 2, -2})};
});

ESTC_OP_CASE(strided_slice_spec, [](Graph &, const Inputs &in) {
  return Outputs{getitem(
      in[0], {Slice{.start = 1}, Slice{.step = -1}, newaxis, ellipsis, 0})};
});
ESTC_OP_CASE(strided_slice_spec_negative_index, [](Graph &, const Inputs &in) {
  return Outputs{
      getitem(in[0], {-1, ellipsis, Slice{.start = 1, .stop = 4, .step = 2}})};
});

ESTC_OP_CASE(gather_nd, [](Graph &, const Inputs &in) {
  return Outputs{gather_nd(in[0], in[1])};
});
ESTC_OP_CASE(gather_nd_rows, [](Graph &, const Inputs &in) {
  return Outputs{gather_nd(in[0], in[1])};
});
ESTC_OP_CASE(gather_nd_batch_dims, [](Graph &, const Inputs &in) {
  return Outputs{gather_nd(in[0], in[1], 1)};
});
ESTC_OP_CASE(scatter_nd, [](Graph &, const Inputs &in) {
  return Outputs{scatter_nd(in[0], in[1], {4, 3, 2})};
});
ESTC_OP_CASE(tensor_scatter_nd_update, [](Graph &, const Inputs &in) {
  return Outputs{tensor_scatter_nd_update(in[0], in[1], in[2])};
});
ESTC_OP_CASE(tensor_scatter_nd_add, [](Graph &, const Inputs &in) {
  return Outputs{tensor_scatter_nd_add(in[0], in[1], in[2])};
});
ESTC_OP_CASE(tensor_scatter_nd_sub, [](Graph &, const Inputs &in) {
  return Outputs{tensor_scatter_nd_sub(in[0], in[1], in[2])};
});
ESTC_OP_CASE(tensor_scatter_nd_min, [](Graph &, const Inputs &in) {
  return Outputs{tensor_scatter_nd_min(in[0], in[1], in[2])};
});
ESTC_OP_CASE(tensor_scatter_nd_max, [](Graph &, const Inputs &in) {
  return Outputs{tensor_scatter_nd_max(in[0], in[1], in[2])};
});

#define EINSUM_CASE(NAME, EQUATION)                                            \
  ESTC_OP_CASE(NAME, [](Graph &, const Inputs &in) {                           \
    return Outputs{einsum(EQUATION, in)};                                      \
  })
EINSUM_CASE(einsum_matmul, "ij,jk->ik");
EINSUM_CASE(einsum_batch_matmul, "bij,bjk->bik");
EINSUM_CASE(einsum_attention_scores, "bqhd,bkhd->bhqk");
EINSUM_CASE(einsum_attention_values, "bhqk,bkhd->bqhd");
EINSUM_CASE(einsum_projection, "abc,cd->abd");
EINSUM_CASE(einsum_implicit, "ij,jk");
EINSUM_CASE(einsum_ellipsis_broadcast, "...ij,...jk->...ik");
EINSUM_CASE(einsum_sum, "bij->j");
EINSUM_CASE(einsum_transpose, "bij->jib");
EINSUM_CASE(einsum_outer, "i,j->ij");
EINSUM_CASE(einsum_dot, "bij,bij->b");
EINSUM_CASE(einsum_sum_one_side, "ij,jk->k");
EINSUM_CASE(einsum_chain, "ij,jk,kl->il");
// Repeated indices: diagonals and traces.
EINSUM_CASE(einsum_diagonal, "ii->i");
EINSUM_CASE(einsum_trace, "ii->");
EINSUM_CASE(einsum_trace_implicit, "ii");
EINSUM_CASE(einsum_batch_diagonal, "bii->bi");
EINSUM_CASE(einsum_diagonal_leading, "iij->ij");
EINSUM_CASE(einsum_diagonal_apart, "ijki->jk");
EINSUM_CASE(einsum_triple_diagonal, "iii->i");
EINSUM_CASE(einsum_diagonal_ellipsis, "...ii->...i");
EINSUM_CASE(einsum_diagonal_times_vector, "ii,i->i");
EINSUM_CASE(einsum_trace_of_product, "ij,jj,ki->k");

ESTC_OP_CASE(batch_matmul_broadcast, [](Graph &, const Inputs &in) {
  return Outputs{linalg::matmul(in[0], in[1])};
});
ESTC_OP_CASE(batch_matmul_broadcast_transposed, [](Graph &, const Inputs &in) {
  return Outputs{linalg::matmul(in[0], in[1], true, true)};
});
