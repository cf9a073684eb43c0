//===- ArrayOps.h - tf's array ops, einsum and batch matmul -------------===//
//
// TensorFlow's shape and indexing ops that are compositions of the est ops
// of Ops.h (so their gradients and lowerings are those of the parts): tile,
// stack, unstack, split, range, size, strided_slice, gather_nd, scatter_nd,
// tensor_scatter_nd_*, einsum. Names, arguments, defaults and semantics are
// TF 2.15's; what differs is said at each function (docs/ops.md,
// "Compositions"). Each builds its nodes in a name scope (`name`, else TF's
// op name) and throws GraphError with one line naming the op, the scope and
// the problem:
//   einsum 'Einsum': equation 'ij,jk->ik': index 'j' is 3 in operand 0 and
//   4 in operand 1
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_ARRAYOPS_H
#define ESTC_LIB_GRAPH_ARRAYOPS_H

#include "lib/Graph/GraphBuilder.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace estc {

/// tf.tile: `input` repeated multiples[i] (>= 1) times along dimension i. At
/// most one dimension may be known at run time only.
Tensor tile(const Tensor &input, const Dims &multiples,
            const std::string &name = "");
/// tf.stack: the values (one dtype, one shape) stacked along a new `axis`.
Tensor stack(const std::vector<Tensor> &values, int64_t axis = 0,
             const std::string &name = "");
/// tf.unstack: the slices of `value` along `axis` (a static dimension),
/// each without that axis.
std::vector<Tensor> unstack(const Tensor &value, int64_t axis = 0,
                            const std::string &name = "");
/// tf.split with a number: `num_or_size_splits` equal parts along `axis`
/// (its static size must divide evenly).
std::vector<Tensor> split(const Tensor &value, int64_t num_or_size_splits,
                          int64_t axis = 0, const std::string &name = "");
/// tf.split with sizes: parts of those sizes along `axis`; one size may be
/// -1 (the rest). The sizes must add up to the dimension.
std::vector<Tensor> split(const Tensor &value, const Dims &size_splits,
                          int64_t axis = 0, const std::string &name = "");
/// tf.range(start, limit, delta): a constant [ceil((limit - start) /
/// delta)] of `dtype` (TF infers it from the Python numbers; here i32 unless
/// given). delta must not be 0.
Tensor range(Graph &graph, double start, double limit, double delta = 1.0,
             DType dtype = DType::Int32, const std::string &name = "");
/// tf.range(limit): 0, 1, ..., limit - 1.
Tensor range(Graph &graph, double limit, DType dtype = DType::Int32,
             const std::string &name = "");
/// tf.size: the number of elements of `input` as a scalar of `out_type`;
/// a constant for a static shape, else the product of shape_of(input).
Tensor size(const Tensor &input, DType out_type = DType::Int32,
            const std::string &name = "");
/// tf.strided_slice with TF's exact semantics: negative indices count from
/// the end, out-of-range ones are clamped, negative strides walk backwards,
/// and the five masks (bit i for entry i of begin / end / strides) are
/// tf's: begin_mask / end_mask ignore begin[i] / end[i] (the whole range),
/// ellipsis_mask (one bit at most) stands for as many full dimensions as
/// needed, new_axis_mask inserts a dimension of 1, shrink_axis_mask takes
/// the single index begin[i] and removes the dimension. `strides` empty: all
/// 1. A dimension known only at run time takes a full range (or a stride-1
/// range from begin >= 0 to the end, or an index >= 0), since the others
/// need its size.
Tensor strided_slice(const Tensor &input, const Dims &begin, const Dims &end,
                     const Dims &strides = {}, int64_t begin_mask = 0,
                     int64_t end_mask = 0, int64_t ellipsis_mask = 0,
                     int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0,
                     const std::string &name = "");

/// One entry of a Python-style slice spec for getitem below:
/// `Slice{.start = 1}` is `1:`, `Slice{.step = -1}` is `::-1`, an integer
/// `i` is an index (the dimension is removed), `newaxis` and `ellipsis`
/// are tf.newaxis and `...`.
struct Slice {
  std::optional<int64_t> start = std::nullopt;
  std::optional<int64_t> stop = std::nullopt;
  int64_t step = 1;
};
struct NewAxis {};
struct Ellipsis {};
inline constexpr NewAxis newaxis{};
inline constexpr Ellipsis ellipsis{};
using SliceIndex = std::variant<int64_t, Slice, NewAxis, Ellipsis>;
/// `input[spec...]`: the strided_slice TF's Python indexing builds
/// (tf.Tensor.__getitem__): getitem(x, {Slice{.start = 1},
/// Slice{.step = -1}, newaxis, ellipsis, 0}) is x[1:, ::-1, tf.newaxis,
/// ..., 0].
Tensor getitem(const Tensor &input, const std::vector<SliceIndex> &spec,
               const std::string &name = "");

/// tf.gather_nd: `indices` [..., K] picks params[batch..., i0, ..., iK-1]
/// (the first `batch_dims` dimensions shared); the result is
/// indices[:-1] + params[batch_dims + K:]. An index outside its dimension is
/// a run-time error (est.check_range), as TF's CPU kernel. The indexed
/// dimensions (and the batch ones) must be static, except with K = 1 and no
/// batch dims. Gradient: scatter_nd (duplicates summed), as TF.
Tensor gather_nd(const Tensor &params, const Tensor &indices,
                 int64_t batch_dims = 0, const std::string &name = "");
/// tf.scatter_nd: zeros of `shape` with `updates` (indices[:-1] + shape[K:])
/// added at `indices` [..., K]; duplicates are summed.
Tensor scatter_nd(const Tensor &indices, const Tensor &updates,
                  const Dims &shape, const std::string &name = "");
/// tf.tensor_scatter_nd_update / _add / _sub / _min / _max: `tensor` with
/// the slices at `indices` [..., K] replaced by, plus, minus, the minimum or
/// the maximum with `updates` (indices[:-1] + tensor[K:]). Duplicate
/// indices: add and sub sum them, min and max combine them, update keeps the
/// last one in the order of `indices` (TF's CPU kernel; TF leaves it
/// undefined). Gradients as TF's: update masks the overwritten slices,
/// min / max share the gradient among the elements equal to the result.
Tensor tensor_scatter_nd_update(const Tensor &tensor, const Tensor &indices,
                                const Tensor &updates,
                                const std::string &name = "");
Tensor tensor_scatter_nd_add(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates,
                             const std::string &name = "");
Tensor tensor_scatter_nd_sub(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates,
                             const std::string &name = "");
Tensor tensor_scatter_nd_min(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates,
                             const std::string &name = "");
Tensor tensor_scatter_nd_max(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates,
                             const std::string &name = "");

/// tf.einsum: `equation` over `inputs` (one or more; more than two are
/// contracted left to right). Explicit (`ij,jk->ik`) or implicit (`ij,jk`:
/// the indices that appear once, sorted) output, `...` for broadcast
/// dimensions. An index repeated within one operand (`ii->i`, `ii->`,
/// `bii->bi`, `iij->ij`: a diagonal, summed when the output leaves it out:
/// a trace) takes that operand's diagonal first (its size must be known).
/// Two operands become transposes, reshapes and one (batch) matmul;
/// docs/design/einsum.md.
Tensor einsum(const std::string &equation, const std::vector<Tensor> &inputs,
              const std::string &name = "");

namespace linalg {
/// tf.linalg.matmul: est.matmul ([..., M, K] x [..., K, N], the batch
/// dimensions broadcast: [2,1,M,K] x [3,K,N] -> [2,3,M,N]).
Tensor matmul(const Tensor &a, const Tensor &b, bool transpose_a = false,
              bool transpose_b = false, const std::string &name = "");
/// tf.linalg.einsum: einsum above.
Tensor einsum(const std::string &equation, const std::vector<Tensor> &inputs,
              const std::string &name = "");
} // namespace linalg

} // namespace estc

#endif // ESTC_LIB_GRAPH_ARRAYOPS_H
