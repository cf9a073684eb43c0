//===- Ops.h - The op library of the graph builder ----------------------===//
//
// One function per op of docs/ops.md, named as in TensorFlow (tf.matmul,
// tf.nn.relu, tf.reduce_mean, ...). Each infers its result's dtype and shape
// with lib/Shape/ShapeFunctions.h and throws estc::GraphError on a mismatch.
// There is no implicit dtype promotion between tensors.
//
// Every function takes an optional node `name` (the base name; it is placed
// in the current mode and name scope and made unique). The default base names
// are TensorFlow's ("MatMul", "Add", "Relu", ...).
//
// Binary elementwise ops, comparisons, logical_and / logical_or and `where`
// take Operands: a tensor or, as TF's Python scalars, a number on either
// side (`greater(prob, 0.5)`, `maximum(x, 0.0)`, `subtract(1.0, x)`; the
// operators `x * 2.0`, `2.0 - x` of GraphBuilder.h likewise).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_OPS_H
#define ESTC_LIB_GRAPH_OPS_H

#include "lib/Graph/GraphBuilder.h"

#include <optional>
#include <string>
#include <vector>

namespace estc {

/// An operand of a binary elementwise op: a Tensor (or a Variable, read in
/// the current mode), or a number. A number becomes a scalar constant (node
/// "Const") of the other operand's dtype and broadcasts, as TF converts a
/// Python scalar. A value that dtype cannot hold (0.5 for an integer tensor,
/// 2 for a bool) is a GraphError naming the op, as TF's "Cannot convert 0.5
/// to EagerTensor of dtype int32"; two numbers are a GraphError too.
class Operand {
public:
  Operand(const Tensor &tensor) : tensor_(tensor) {}
  Operand(const Variable &variable) : tensor_(variable.read()) {}
  Operand(double number) : number_(number) {}

  bool is_number() const { return number_.has_value(); }
  const Tensor &tensor() const { return tensor_; }
  double number() const { return *number_; }

private:
  Tensor tensor_;
  std::optional<double> number_;
};

// --- Elementwise binary (broadcasting, same dtype) --------------------------
Tensor add(const Operand &a, const Operand &b, const std::string &name = "");
Tensor subtract(const Operand &a, const Operand &b,
                const std::string &name = "");
Tensor multiply(const Operand &a, const Operand &b,
                const std::string &name = "");
Tensor divide(const Operand &a, const Operand &b, const std::string &name = "");
Tensor pow(const Operand &a, const Operand &b, const std::string &name = "");
Tensor maximum(const Operand &a, const Operand &b,
               const std::string &name = "");
Tensor minimum(const Operand &a, const Operand &b,
               const std::string &name = "");

// --- Elementwise unary -----------------------------------------------------
// neg / abs / square accept float or int; the rest float only.
Tensor negative(const Tensor &x, const std::string &name = "");
Tensor abs(const Tensor &x, const std::string &name = "");
Tensor square(const Tensor &x, const std::string &name = "");
Tensor exp(const Tensor &x, const std::string &name = "");
Tensor log(const Tensor &x, const std::string &name = "");
Tensor sqrt(const Tensor &x, const std::string &name = "");
Tensor rsqrt(const Tensor &x, const std::string &name = "");
Tensor tanh(const Tensor &x, const std::string &name = "");
Tensor sin(const Tensor &x, const std::string &name = "");
Tensor cos(const Tensor &x, const std::string &name = "");
Tensor floor(const Tensor &x, const std::string &name = "");
Tensor ceil(const Tensor &x, const std::string &name = "");
/// tf.math.round: the nearest integer, halves to even (0.5 -> 0, 1.5 -> 2,
/// -2.5 -> -2); an integer tensor is returned unchanged (float or int).
Tensor round(const Tensor &x, const std::string &name = "");
/// tf.math.sign: -1, 0 or 1 of x's dtype (float or int); NaN stays NaN.
Tensor sign(const Tensor &x, const std::string &name = "");
Tensor erf(const Tensor &x, const std::string &name = "");
/// log(1 + x) and e^x - 1, accurate near 0.
Tensor log1p(const Tensor &x, const std::string &name = "");
Tensor expm1(const Tensor &x, const std::string &name = "");
Tensor sigmoid(const Tensor &x, const std::string &name = "");
/// tf.clip_by_value: minimum(t, clip_value_max), then maximum with
/// clip_value_min (numbers or tensors that broadcast to t's shape). Two
/// numbers with min > max are a GraphError.
Tensor clip_by_value(const Tensor &t, const Operand &clip_value_min,
                     const Operand &clip_value_max,
                     const std::string &name = "");

// --- Comparison and logic (result i1) --------------------------------------
Tensor equal(const Operand &a, const Operand &b, const std::string &name = "");
Tensor not_equal(const Operand &a, const Operand &b,
                 const std::string &name = "");
Tensor less(const Operand &a, const Operand &b, const std::string &name = "");
Tensor less_equal(const Operand &a, const Operand &b,
                  const std::string &name = "");
Tensor greater(const Operand &a, const Operand &b,
               const std::string &name = "");
Tensor greater_equal(const Operand &a, const Operand &b,
                     const std::string &name = "");
/// A number operand of the logical ops is true (1) or false (0).
Tensor logical_and(const Operand &a, const Operand &b,
                   const std::string &name = "");
Tensor logical_or(const Operand &a, const Operand &b,
                  const std::string &name = "");
Tensor logical_not(const Tensor &x, const std::string &name = "");
/// tf.where(cond, x, y): op `select`; the three shapes broadcast. A number
/// branch takes the other branch's dtype.
Tensor where(const Tensor &cond, const Operand &on_true,
             const Operand &on_false, const std::string &name = "");
Tensor cast(const Tensor &x, DType dtype, const std::string &name = "");

// --- Linear algebra -------------------------------------------------------
Tensor matmul(const Tensor &a, const Tensor &b, bool transpose_a = false,
              bool transpose_b = false, const std::string &name = "");

// --- Reductions -----------------------------------------------------------
// `axes` absent reduces every axis.
Tensor reduce_sum(const Tensor &x, std::optional<Dims> axes = std::nullopt,
                  bool keep_dims = false, const std::string &name = "");
Tensor reduce_mean(const Tensor &x, std::optional<Dims> axes = std::nullopt,
                   bool keep_dims = false, const std::string &name = "");
Tensor reduce_max(const Tensor &x, std::optional<Dims> axes = std::nullopt,
                  bool keep_dims = false, const std::string &name = "");
Tensor reduce_min(const Tensor &x, std::optional<Dims> axes = std::nullopt,
                  bool keep_dims = false, const std::string &name = "");
Tensor reduce_prod(const Tensor &x, std::optional<Dims> axes = std::nullopt,
                   bool keep_dims = false, const std::string &name = "");
Tensor argmax(const Tensor &x, int64_t axis, DType output_type = DType::Int64,
              const std::string &name = "");
Tensor argmin(const Tensor &x, int64_t axis, DType output_type = DType::Int64,
              const std::string &name = "");
/// tf.math.cumsum / tf.math.cumprod: the running sum / product along
/// `axis` (float or int). `exclusive`: element i combines the elements
/// before i (the first is 0 / 1); `reverse`: runs from the end. Ops
/// `cumsum` / `cumprod`; cumprod's gradient divides by x, as TF's (inexact
/// where x has zeros).
Tensor cumsum(const Tensor &x, int64_t axis = 0, bool exclusive = false,
              bool reverse = false, const std::string &name = "");
Tensor cumprod(const Tensor &x, int64_t axis = 0, bool exclusive = false,
               bool reverse = false, const std::string &name = "");

// --- Shapes ---------------------------------------------------------------
Tensor reshape(const Tensor &x, const Dims &shape,
               const std::string &name = "");
Tensor transpose(const Tensor &x, const Dims &perm,
                 const std::string &name = "");
Tensor concat(const std::vector<Tensor> &values, int64_t axis,
              const std::string &name = "");
/// size[i] == -1: to the end of dimension i.
Tensor slice(const Tensor &x, const Dims &begin, const Dims &size,
             const std::string &name = "");
/// paddings = {lo0, hi0, lo1, hi1, ...}.
Tensor pad(const Tensor &x, const Dims &paddings, double constant_value = 0.0,
           const std::string &name = "");
Tensor broadcast_to(const Tensor &x, const Dims &shape,
                    const std::string &name = "");
Tensor squeeze(const Tensor &x, std::optional<Dims> axes = std::nullopt,
               const std::string &name = "");
Tensor expand_dims(const Tensor &x, int64_t axis, const std::string &name = "");
/// tf.reverse: the order of each axis in `axis` reversed (distinct axes,
/// may be negative; a run-time dimension too).
Tensor reverse(const Tensor &tensor, const Dims &axis,
               const std::string &name = "");
/// tf.shape: `input`'s dimensions as a rank-1 tensor of `out_type` (i32 or
/// i64); a dimension known at run time only (the batch) gives its run-time
/// size. Named shape_of in C++: `shape` is lib/Shape's namespace.
Tensor shape_of(const Tensor &input, DType out_type = DType::Int32,
                const std::string &name = "");

/// tf.sequence_mask: `result[i..., j] = j < lengths[i...]` (bool), the new
/// last dimension as long as dimension `axis` of `maxlen_like` (a padded
/// batch: its run-time length) or `maxlen`.
Tensor sequence_mask(const Tensor &lengths, const Tensor &maxlen_like,
                     int64_t axis = 1, const std::string &name = "");
Tensor sequence_mask(const Tensor &lengths, int64_t maxlen,
                     const std::string &name = "");
/// tf.reverse_sequence: reverses the first lengths[b] elements along
/// `seq_axis` of each batch entry b (along `batch_axis`); padding stays.
Tensor reverse_sequence(const Tensor &x, const Tensor &lengths,
                        int64_t seq_axis, int64_t batch_axis = 0,
                        const std::string &name = "");

// --- Indexing -------------------------------------------------------------
Tensor gather(const Tensor &params, const Tensor &indices, int64_t axis = 0,
              const std::string &name = "");
/// Rows of `ref` (axis 0) plus (scatter_add: duplicates summed) or replaced
/// by (scatter_update) `updates`, of shape indices + ref[1:]; the result has
/// ref's shape (tf.tensor_scatter_nd_add/update with row indices).
Tensor scatter_add(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name = "");
/// scatter_update: for duplicate indices the last update (in the order of
/// `indices`) wins, as TF's CPU kernel.
Tensor scatter_update(const Tensor &ref, const Tensor &indices,
                      const Tensor &updates, const std::string &name = "");
/// The minimum / maximum of each row of `ref` and the updates with its index.
Tensor scatter_min(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name = "");
Tensor scatter_max(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name = "");
/// A run-time check (tf.debugging.assert_greater_equal + assert_less on
/// class ids): forwards integer `x` when every element is in
/// [lower, upper); otherwise the compiled step stops before any variable
/// update and raises rt::InvalidArgumentError naming this node, `what`
/// ("label", "id", ...), the first offending value and its position:
/// `node 'mean_iou/labels' : label 4 at batch row 2 is outside [0, 3)`.
/// The compiler adds the same check itself to sparse softmax cross-entropy
/// labels and gather/scatter indices (est-insert-runtime-checks).
Tensor check_range(const Tensor &x, int64_t lower, int64_t upper,
                   const std::string &what = "value",
                   const std::string &name = "");
Tensor one_hot(const Tensor &indices, int64_t depth, double on_value = 1.0,
               double off_value = 0.0, int64_t axis = -1,
               DType dtype = DType::Float32, const std::string &name = "");

// --- Sorting -------------------------------------------------------------
// NaN ranks above +inf (first in DESCENDING order and top_k, last in
// ASCENDING); ties keep their index order (stable), as TF's argsort and
// top_k. TF's own placement of NaN follows no order (its sorts compare with
// `>`), so only NaN-free results are TF's bit for bit.

/// tf.argsort: the i32 indices that sort `values` along `axis`, direction
/// "ASCENDING" or "DESCENDING". `stable` is accepted for TF's signature;
/// the sort is always stable (TF's unstable sort is also not implemented).
Tensor argsort(const Tensor &values, int64_t axis = -1,
               const std::string &direction = "ASCENDING", bool stable = true,
               const std::string &name = "");
/// tf.sort: `values` sorted along `axis` (take_along_axis of argsort, so
/// the gradient flows back to each element's position).
Tensor sort(const Tensor &values, int64_t axis = -1,
            const std::string &direction = "ASCENDING",
            const std::string &name = "");
/// tf.math.top_k's two results.
struct TopK {
  Tensor values;  // input's dtype, [..., k]
  Tensor indices; // i32, [..., k]
};
/// tf.math.top_k: the k largest entries of the last axis and their indices,
/// largest first, equal values by lower index first. `sorted` = false
/// gives the same (sorted) order, which TF allows. k must be in [0, the
/// last axis's size], which must be static (GraphError otherwise). The
/// gradient goes to the selected positions.
TopK top_k(const Tensor &input, int64_t k = 1, bool sorted = true,
           const std::string &name = "");
/// np.take_along_axis / tf.gather(arr, indices, batch_dims = rank - 1) on
/// the last axis: `indices` (int) has arr's shape except along `axis`;
/// result[..., j, ...] = arr[..., indices[..., j, ...], ...]. Indices out
/// of range are clamped.
Tensor take_along_axis(const Tensor &arr, const Tensor &indices,
                       int64_t axis = -1, const std::string &name = "");
/// The transpose of take_along_axis (its gradient): `ref` with each of
/// `updates` (the shape of `indices`) added at the position along `axis`
/// its index names, duplicates summed (indices clamped).
Tensor scatter_along_axis(const Tensor &ref, const Tensor &indices,
                          const Tensor &updates, int64_t axis = -1,
                          const std::string &name = "");

// --- Segments, buckets and sparse ids (feature columns) ------------------
// The graph half of docs/design/feature-columns.md: categorical ids arrive
// as SparseIds, computed by the host half of the feature columns.

/// A batch of categorical ids as compiled code sees them: the COO rows of
/// TF's SparseTensor with invalid ids pruned (`<name>/ids`, `/rows`,
/// `/row_lengths`, `/weights` of docs/design/feature-columns.md).
struct SparseIds {
  Tensor ids;         // I64 [n]: ids in [0, num_buckets)
  Tensor rows;        // I64 [n]: the batch row of each id, non-decreasing
  Tensor row_lengths; // I64 [batch]: the number of ids of each row
  Tensor weights;     // F32 [n], or invalid (all weights 1)
};

/// tf.math.unsorted_segment_sum with num_segments = dim 0 of
/// `num_segments_like` (only its shape is used: the batch of a
/// row_lengths): data [N, ...] (float or int), segment_ids [N] (int) ->
/// [B] + data[1:]; row s sums the rows of data whose id is s, in order;
/// segments without rows are zero; ids outside [0, B) are dropped (TF's
/// CPU kernel fails instead). Op `unsorted_segment_sum`; gradient:
/// gather(output gradient, segment_ids).
Tensor unsorted_segment_sum(const Tensor &data, const Tensor &segment_ids,
                            const Tensor &num_segments_like,
                            const std::string &name = "");
/// tf.math.unsorted_segment_mean / unsorted_segment_sqrt_n, same operands
/// (data float): the segment sums divided by the number of ids of the
/// segment (mean) or its square root (sqrt_n); empty segments give zeros.
Tensor segment_mean(const Tensor &data, const Tensor &segment_ids,
                    const Tensor &num_segments_like,
                    const std::string &name = "");
Tensor segment_sqrt_n(const Tensor &data, const Tensor &segment_ids,
                      const Tensor &num_segments_like,
                      const std::string &name = "");
/// tf.raw_ops.Bucketize: the bucket of each element of `x` (float or int),
/// I64 (TF: int32; estc ids are I64) of x's shape: the number of boundaries
/// <= x (NaN: all of them). `boundaries` sorted ascending, not NaN; as in
/// TF (a list(float) attribute) they are rounded to f32 and x compared as
/// f32 (f64 x as f64). Op `bucketize`; not differentiable.
Tensor bucketize(const Tensor &x, const std::vector<double> &boundaries,
                 const std::string &name = "");
/// tf.nn.safe_embedding_lookup_sparse over SparseIds: params [vocab, dim]
/// (float) -> [batch, dim], each row the `combiner` of the embeddings of
/// its ids: "sum" sum(w e), "mean" sum(w e) / sum(w), "sqrtn"
/// sum(w e) / sqrt(sum(w^2)) (w = 1 without weights: the divisor is the
/// row's length); rows with no ids give zeros. As TF, mean and sqrtn prune
/// ids of weight <= 0. `max_norm` > 0 clips each embedding's L2 norm to it
/// before combining (embedding_lookup's max_norm, tf.clip_by_norm); <= 0:
/// none. Differentiable in params (a gather of a variable's read: a sparse
/// gradient, docs/autodiff.md).
Tensor safe_embedding_lookup_sparse(const Tensor &params, const SparseIds &ids,
                                    const std::string &combiner = "mean",
                                    double max_norm = 0,
                                    const std::string &name = "");
/// Multi-hot with counts (tf.sparse.to_indicator, tf.feature_column's
/// indicator_column): F32 [batch, depth], element (r, i) the number of ids
/// i in row r, or with weights their summed weights. Ids outside
/// [0, depth) count nowhere. Built as one_hot(ids, depth) (weighted) summed
/// per row: O(n x depth) work and memory.
Tensor sparse_to_indicator(const SparseIds &ids, int64_t depth,
                           const std::string &name = "");

// --- Misc -----------------------------------------------------------------
Tensor stop_gradient(const Tensor &x, const std::string &name = "");
/// Tensors of zeros / ones with x's shape (ops `zeros_like` / `ones_like`;
/// they work with unknown dimensions). `dtype` defaults to x's.
Tensor zeros_like(const Tensor &x, DType dtype = DType::Invalid,
                  const std::string &name = "");
Tensor ones_like(const Tensor &x, DType dtype = DType::Invalid,
                 const std::string &name = "");
/// tf.compat.v1.assign: op `assign_variable`; the value's dtype must match
/// and its shape must be compatible with the variable's.
Operation assign(const Variable &variable, const Tensor &value,
                 const std::string &name = "");
Operation assign_add(const Variable &variable, const Tensor &value,
                     const std::string &name = "");
/// tf.group: one operation that runs `ops` (minimize, assign, other
/// groups, ...), e.g. a train_op of two optimizers' minimizes and the
/// "update_ops" collection. Graph-only op `group` without a value: the
/// importer replaces a train_op or metric update that is a group by its
/// inputs (recursively). `ops` must not be empty (default name
/// "group_deps", TF's).
Operation group(const std::vector<Operation> &ops,
                const std::string &name = "");

// --- Random (counter = the current mode's global_step) ------------------
// `seed` absent: derived from the graph seed and the node name.
Tensor random_uniform(Graph &graph, const Dims &shape,
                      DType dtype = DType::Float32, double minval = 0.0,
                      double maxval = 1.0, std::optional<int64_t> seed = {},
                      const std::string &name = "");
Tensor random_normal(Graph &graph, const Dims &shape,
                     DType dtype = DType::Float32, double mean = 0.0,
                     double stddev = 1.0, std::optional<int64_t> seed = {},
                     const std::string &name = "");
Tensor truncated_normal(Graph &graph, const Dims &shape,
                        DType dtype = DType::Float32, double mean = 0.0,
                        double stddev = 1.0, std::optional<int64_t> seed = {},
                        const std::string &name = "");

/// What a candidate sampler returns (TF's sampled_values triple):
/// sampled_candidates [num_sampled] (i64 class ids), true_expected_count
/// [batch, num_true] and sampled_expected_count [num_sampled] (f32).
struct SampledValues {
  Tensor sampled_candidates;
  Tensor true_expected_count;
  Tensor sampled_expected_count;
};
/// tf.random.log_uniform_candidate_sampler: num_sampled classes from the
/// log-uniform (Zipfian) distribution over [0, range_max),
/// P(c) = log((c + 2) / (c + 1)) / log(range_max + 1), drawn as TF's
/// sampler draws them (floor(exp(u log(range_max + 1))) - 1, u uniform):
/// with `unique` the first num_sampled distinct classes of the draws, and
/// the expected counts TF reports for them and for `true_classes` [batch,
/// num_true] (int): P(c) num_sampled without repeats, else
/// -expm1(tries log1p(-P(c))) after `tries` draws. The uniforms are a
/// random_uniform of this step (seed: as random_uniform's): deterministic
/// per seed and step, not TF's numbers. With `unique`, a step draws at
/// most 4 num_sampled + 128 values; if they hold fewer than num_sampled
/// distinct classes (possible only when num_sampled is close to
/// range_max), the step stops with the run-time error of check_range
/// ("distinct sampled classes").
SampledValues log_uniform_candidate_sampler(const Tensor &true_classes,
                                            int64_t num_true,
                                            int64_t num_sampled, bool unique,
                                            int64_t range_max,
                                            std::optional<int64_t> seed = {},
                                            const std::string &name = "");

namespace nn {
Tensor relu(const Tensor &x, const std::string &name = "");
Tensor relu6(const Tensor &x, const std::string &name = "");
Tensor elu(const Tensor &x, const std::string &name = "");
Tensor softplus(const Tensor &x, const std::string &name = "");
Tensor sigmoid(const Tensor &x, const std::string &name = "");
Tensor tanh(const Tensor &x, const std::string &name = "");
Tensor softmax(const Tensor &logits, int64_t axis = -1,
               const std::string &name = "");
Tensor log_softmax(const Tensor &logits, int64_t axis = -1,
                   const std::string &name = "");

/// NHWC input, HWIO filter; strides and dilations are [h, w] (TF's
/// 4-value lists without the batch and channel 1s). data_format "NCHW"
/// takes and returns NCHW tensors (transposes around the NHWC op).
Tensor conv2d(const Tensor &input, const Tensor &filter, const Dims &strides,
              const std::string &padding,
              const std::string &data_format = "NHWC",
              const Dims &dilations = {1, 1}, const std::string &name = "");
Tensor max_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding,
                const std::string &data_format = "NHWC",
                const std::string &name = "");
Tensor avg_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding,
                const std::string &data_format = "NHWC",
                const std::string &name = "");

// The convolutions and poolings built from conv2d, the pools and
// conv2d_backprop_input (lib/Graph/Convolution.cpp). Every dimension of the
// input but the batch must be known.
/// tf.nn.conv1d: input NWC ("NCW"), filters [width, in, out].
Tensor conv1d(const Tensor &input, const Tensor &filters, int64_t stride,
              const std::string &padding,
              const std::string &data_format = "NWC", int64_t dilations = 1,
              const std::string &name = "");
/// tf.nn.conv3d: input NDHWC ("NCDHW"), filters [d, h, w, in, out];
/// strides and dilations [d, h, w].
Tensor conv3d(const Tensor &input, const Tensor &filters, const Dims &strides,
              const std::string &padding,
              const std::string &data_format = "NDHWC",
              const Dims &dilations = {1, 1, 1}, const std::string &name = "");
/// tf.nn.conv2d_transpose: input [N, h, w, in], filters [kh, kw, out, in],
/// output_shape [N, H, W, out] (NCHW: [N, out, H, W]; N is not used): the
/// gradient of conv2d(output, filters) with respect to its input.
Tensor conv2d_transpose(const Tensor &input, const Tensor &filters,
                        const Dims &output_shape, const Dims &strides,
                        const std::string &padding = "SAME",
                        const std::string &data_format = "NHWC",
                        const Dims &dilations = {1, 1},
                        const std::string &name = "");
/// tf.nn.conv3d_transpose: input [N, d, h, w, in], filters
/// [kd, kh, kw, out, in], output_shape [N, D, H, W, out] (NCDHW:
/// [N, out, D, H, W]; N is not used): the gradient of conv3d(output,
/// filters) with respect to its input.
Tensor conv3d_transpose(const Tensor &input, const Tensor &filters,
                        const Dims &output_shape, const Dims &strides,
                        const std::string &padding = "SAME",
                        const std::string &data_format = "NDHWC",
                        const Dims &dilations = {1, 1, 1},
                        const std::string &name = "");
/// tf.nn.depthwise_conv2d: input NHWC, filter [kh, kw, in, multiplier] ->
/// [N, OH, OW, in * multiplier], channel c * multiplier + m the
/// convolution of input channel c with filter[:, :, c, m].
Tensor depthwise_conv2d(const Tensor &input, const Tensor &filter,
                        const Dims &strides, const std::string &padding,
                        const std::string &data_format = "NHWC",
                        const Dims &dilations = {1, 1},
                        const std::string &name = "");
/// tf.nn.separable_conv2d: depthwise_conv2d with depthwise_filter
/// [kh, kw, in, multiplier], then a 1x1 conv2d with pointwise_filter
/// [1, 1, in * multiplier, out].
Tensor separable_conv2d(const Tensor &input, const Tensor &depthwise_filter,
                        const Tensor &pointwise_filter, const Dims &strides,
                        const std::string &padding,
                        const std::string &data_format = "NHWC",
                        const Dims &dilations = {1, 1},
                        const std::string &name = "");
/// tf.nn.max_pool1d / avg_pool1d: input NWC ("NCW").
Tensor max_pool1d(const Tensor &input, int64_t ksize, int64_t strides,
                  const std::string &padding,
                  const std::string &data_format = "NWC",
                  const std::string &name = "");
Tensor avg_pool1d(const Tensor &input, int64_t ksize, int64_t strides,
                  const std::string &padding,
                  const std::string &data_format = "NWC",
                  const std::string &name = "");
/// tf.nn.max_pool3d / avg_pool3d: input NDHWC ("NCDHW"); ksize and strides
/// [d, h, w]. avg_pool3d divides by the count of valid elements (SAME).
Tensor max_pool3d(const Tensor &input, const Dims &ksize, const Dims &strides,
                  const std::string &padding,
                  const std::string &data_format = "NDHWC",
                  const std::string &name = "");
Tensor avg_pool3d(const Tensor &input, const Dims &ksize, const Dims &strides,
                  const std::string &padding,
                  const std::string &data_format = "NDHWC",
                  const std::string &name = "");
Tensor bias_add(const Tensor &value, const Tensor &bias,
                const std::string &name = "");
/// The gradients of conv2d and pooling (TF's Conv2DBackpropInput,
/// Conv2DBackpropFilter, MaxPoolGrad, AvgPoolGrad); the autodiff pass emits
/// them, and graphs may use them directly. `input_size` / `filter_size` are
/// the forward operand's [H, W] / [KH, KW].
Tensor conv2d_backprop_input(const Tensor &grad_output, const Tensor &filter,
                             const Dims &input_size, const Dims &strides,
                             const std::string &padding,
                             const Dims &dilations = {1, 1},
                             const std::string &name = "");
Tensor conv2d_backprop_filter(const Tensor &input, const Tensor &grad_output,
                              const Dims &filter_size, const Dims &strides,
                              const std::string &padding,
                              const Dims &dilations = {1, 1},
                              const std::string &name = "");
/// tf.compat.v1.nn.depthwise_conv2d_native (TF's DepthwiseConv2dNative,
/// one est.depthwise_conv2d node): input NHWC [N, H, W, C], filter [kh, kw,
/// C, M] -> [N, OH, OW, C * M], channel c * M + m the convolution of input
/// channel c with filter[:, :, c, m]. nn::depthwise_conv2d is this for
/// NHWC (NCHW transposes around it).
Tensor depthwise_conv2d_native(const Tensor &input, const Tensor &filter,
                               const Dims &strides, const std::string &padding,
                               const Dims &dilations = {1, 1},
                               const std::string &name = "");
/// Its gradients, tf.nn.depthwise_conv2d_backprop_input / _filter (TF's
/// DepthwiseConv2dNativeBackpropInput / Filter; NHWC; the autodiff pass
/// emits them), in conv2d_backprop_input's argument order: `input_size` /
/// `filter_size` are the forward operand's [H, W] / [KH, KW].
Tensor depthwise_conv2d_backprop_input(
    const Tensor &grad_output, const Tensor &filter, const Dims &input_size,
    const Dims &strides, const std::string &padding,
    const Dims &dilations = {1, 1}, const std::string &name = "");
Tensor depthwise_conv2d_backprop_filter(
    const Tensor &input, const Tensor &grad_output, const Dims &filter_size,
    const Dims &strides, const std::string &padding,
    const Dims &dilations = {1, 1}, const std::string &name = "");
Tensor max_pool_grad(const Tensor &input, const Tensor &grad_output,
                     const Dims &ksize, const Dims &strides,
                     const std::string &padding, const std::string &name = "");
Tensor avg_pool_grad(const Tensor &grad_output, const Dims &input_size,
                     const Dims &ksize, const Dims &strides,
                     const std::string &padding, const std::string &name = "");

/// The results of fused_batch_norm.
struct FusedBatchNorm {
  Tensor y;              ///< x normalized, scaled and shifted
  Tensor batch_mean;     ///< [C]
  Tensor batch_variance; ///< [C], unbiased (times n / max(n - 1, 1))
};
/// tf.compat.v1.nn.fused_batch_norm with is_training=True
/// (est.fused_batch_norm, one node): x of rank 4 ("NHWC", "NCHW") or 5
/// ("NDHWC", "NCDHW") normalized per channel with the batch's mean and biased
/// variance, times `scale` plus `offset` (both [C]). batch_variance is TF's
/// unbiased one (what the moving average takes). The gradient of y is one fused
/// op; the statistics get none (as TF's). Inference with given statistics is
/// layers::batch_normalization(training=false) (a composition).
FusedBatchNorm fused_batch_norm(const Tensor &x, const Tensor &scale,
                                const Tensor &offset, double epsilon = 0.001,
                                const std::string &data_format = "NHWC",
                                const std::string &name = "");

/// Per-example losses. Argument order as TensorFlow's keyword order
/// (labels, logits); the node's operands are (logits, labels).
Tensor softmax_cross_entropy_with_logits(const Tensor &labels,
                                         const Tensor &logits,
                                         const std::string &name = "");
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor &labels,
                                                const Tensor &logits,
                                                const std::string &name = "");
Tensor sigmoid_cross_entropy_with_logits(const Tensor &labels,
                                         const Tensor &logits,
                                         const std::string &name = "");

/// Activations built from the elementwise ops (they fuse), float only.
/// tf.nn.leaky_relu: x > 0 ? x : alpha * x (integers: cast to f32 first,
/// as TF).
Tensor leaky_relu(const Tensor &features, double alpha = 0.2,
                  const std::string &name = "");
/// tf.nn.selu: scale * (x > 0 ? x : alpha * (e^x - 1)) with TF's alpha and
/// scale (1.6732632..., 1.0507009...).
Tensor selu(const Tensor &features, const std::string &name = "");
/// tf.nn.gelu: 0.5 x (1 + erf(x / sqrt(2))); `approximate`: the tanh form
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor &features, bool approximate = false,
            const std::string &name = "");
/// tf.nn.silu (tf.nn.swish): x * sigmoid(beta * x).
Tensor silu(const Tensor &features, double beta = 1.0,
            const std::string &name = "");
Tensor swish(const Tensor &features, double beta = 1.0,
             const std::string &name = "");
/// tf.nn.softsign: x / (1 + |x|).
Tensor softsign(const Tensor &features, const std::string &name = "");
/// tf.math.l2_normalize: x * rsqrt(max(sum(x^2 over axis), epsilon));
/// `axis` absent: over every axis; epsilon >= 0.
Tensor l2_normalize(const Tensor &x, std::optional<Dims> axis = std::nullopt,
                    double epsilon = 1e-12, const std::string &name = "");
/// tf.math.zero_fraction: the fraction of `value`'s elements that are zero,
/// a float32 scalar (NaN for an empty tensor, as TF's). Float or integer.
/// The canned estimators' "fraction_of_zero_values" summaries.
Tensor zero_fraction(const Tensor &value, const std::string &name = "");
/// tf.nn.moments: the mean and variance over `axes` (the variance's mean
/// through stop_gradient, as TF's); `keepdims` keeps the reduced axes.
/// Empty `axes`: x itself and zeros.
struct Moments {
  Tensor mean;
  Tensor variance;
};
Moments moments(const Tensor &x, const Dims &axes, bool keepdims = false,
                const std::string &name = "");
/// tf.nn.log_poisson_loss: exp(log_input) - targets * log_input, plus
/// with `compute_full_loss` Stirling's approximation of log(targets!)
/// where targets > 1. Shapes must be compatible.
Tensor log_poisson_loss(const Tensor &targets, const Tensor &log_input,
                        bool compute_full_loss = false,
                        const std::string &name = "");
/// tf.nn.weighted_cross_entropy_with_logits (TF 2's argument order):
/// (1 - labels) * logits + (1 + (pos_weight - 1) * labels) *
/// (log1p(exp(-|logits|)) + relu(-logits)). Shapes must be compatible.
Tensor weighted_cross_entropy_with_logits(const Tensor &labels,
                                          const Tensor &logits,
                                          const Operand &pos_weight,
                                          const std::string &name = "");

/// tf.nn.sampled_softmax_loss: per example [batch], the softmax
/// cross-entropy of the true classes (labels [batch, num_true], int; each
/// weighted 1 / num_true) against num_sampled sampled classes, logits
/// inputs [batch, dim] . weights[c] [num_classes, dim] + biases[c]
/// [num_classes] minus log(expected count) (TF's subtract_log_q). Without
/// `sampled_values`, log_uniform_candidate_sampler(labels, num_true,
/// num_sampled, unique = true, num_classes, seed). With
/// `remove_accidental_hits` a sampled class equal to one of the row's
/// labels gets -FLT_MAX added to its logit. Gradients reach weights and
/// biases (sparse: gathers), and inputs; none the sampled values.
Tensor sampled_softmax_loss(
    const Tensor &weights, const Tensor &biases, const Tensor &labels,
    const Tensor &inputs, int64_t num_sampled, int64_t num_classes,
    int64_t num_true = 1,
    const std::optional<SampledValues> &sampled_values = std::nullopt,
    bool remove_accidental_hits = true, std::optional<int64_t> seed = {},
    const std::string &name = "");

/// Drops elements with probability `rate` and scales the rest by
/// 1 / (1 - rate). Always applied; layers::dropout adds the training switch.
Tensor dropout(const Tensor &x, double rate, std::optional<int64_t> seed = {},
               const std::string &name = "");

/// tf.math.in_top_k (TF 2's argument order): for each row b, whether
/// predictions[b, targets[b]] is among the k largest of predictions[b]:
/// fewer than k predictions are strictly larger, so ties at the boundary
/// all count as in. False for a target outside [0, classes) and for a row
/// with a NaN or infinite prediction (TF's InTopK). targets [batch] (int),
/// predictions [batch, classes] (float, static classes) -> bool [batch].
Tensor in_top_k(const Tensor &targets, const Tensor &predictions, int64_t k,
                const std::string &name = "");
/// tf.nn.dropout's noise_shape: one keep/drop decision per element of
/// `noise_shape` (x's rank; each dim 1, x's or -1 for x's), broadcast over
/// x (e.g. {-1, 1, -1}: the same features dropped at every time step).
Tensor dropout(const Tensor &x, double rate, const Dims &noise_shape,
               std::optional<int64_t> seed = {}, const std::string &name = "");

/// Layer normalization (est.layer_norm, fused): `x` normalized over its dims
/// [begin_norm_axis, rank) (each row's mean and biased variance), times
/// `gamma` plus `beta`, both of shape x.shape[begin_params_axis:]:
///   y = (x - mean) * rsqrt(variance + epsilon) * gamma + beta.
/// The op under layers::layer_normalization (Keras) and layers::layer_norm
/// (tf.contrib); its gradient is one fused op too.
Tensor layer_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                  int64_t begin_norm_axis = -1, int64_t begin_params_axis = -1,
                  double epsilon = 1e-3, const std::string &name = "");

/// Attention weights (est.attention_softmax, fused): softmax over the last
/// axis of `scale * logits` ([..., T, S]) plus the mask's bias. `mask` has
/// logits' rank, each dim 1 (broadcast: e.g. [B, 1, T, S] over the heads)
/// or logits': bool (true = attend; false adds -1e9, as Keras's masked
/// Softmax) or an additive float mask of logits' dtype. `causal` masks
/// s > t (Keras's use_causal_mask).
Tensor attention_softmax(const Tensor &logits, double scale = 1.0,
                         bool causal = false, const std::string &name = "");
Tensor attention_softmax(const Tensor &logits, const Tensor &mask,
                         double scale = 1.0, bool causal = false,
                         const std::string &name = "");

/// softmax(query key^T * scale + mask) value, over the last two dims
/// (batched matmuls): query [..., T, d], key [..., S, d], value [..., S, dv]
/// -> [..., T, dv]. `scale` defaults to 1 / sqrt(d); `mask` and `causal` as
/// attention_softmax's. Nodes in the name scope `name` ("attention").
Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const std::optional<Tensor> &mask = {},
                                    bool causal = false,
                                    std::optional<double> scale = {},
                                    const std::string &name = "");
} // namespace nn

namespace activations {
/// tf.keras.activations.hard_sigmoid (Keras 2.15): clip(0.2 x + 0.5, 0, 1).
Tensor hard_sigmoid(const Tensor &x, const std::string &name = "");
} // namespace activations
namespace image {
/// tf.image.resize (TF 2): images [batch, height, width, channels] or
/// [height, width, channels] (static height and width) resized to `size`
/// [new_height, new_width] with half-pixel centers; method "bilinear"
/// (float32 result, as TF's) or "nearest" (images' dtype).
/// preserve_aspect_ratio scales both sides by the smaller factor (the
/// result fits in `size`). antialias (bilinear; ignored for nearest, as in
/// TF) is TF's ScaleAndTranslate with the triangle kernel, widened by the
/// downscale factor: two products with constant [in, out] weight matrices
/// (dense, O(in x out) per column).
Tensor resize(const Tensor &images, const Dims &size,
              const std::string &method = "bilinear",
              bool preserve_aspect_ratio = false, bool antialias = false,
              const std::string &name = "");
/// tf.compat.v1.image.resize_bilinear / resize_nearest_neighbor: NHWC
/// images with TF 1's defaults (corners aligned or not, no half-pixel
/// centers unless asked). resize_bilinear returns float32.
Tensor resize_bilinear(const Tensor &images, const Dims &size,
                       bool align_corners = false,
                       bool half_pixel_centers = false,
                       const std::string &name = "");
Tensor resize_nearest_neighbor(const Tensor &images, const Dims &size,
                               bool align_corners = false,
                               bool half_pixel_centers = false,
                               const std::string &name = "");
/// The gradient of a resize with respect to its images (TF's
/// ResizeBilinearGrad / ResizeNearestNeighborGrad): grad_output [N, h, w,
/// C] (float) -> [N, input_size[0], input_size[1], C]. The autodiff pass
/// emits it; graphs may use it directly.
Tensor resize_grad(const Tensor &grad_output, const Dims &input_size,
                   const std::string &method = "bilinear",
                   bool align_corners = false, bool half_pixel_centers = true,
                   const std::string &name = "");
} // namespace image

} // namespace estc

#endif // ESTC_LIB_GRAPH_OPS_H
