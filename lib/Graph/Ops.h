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
Tensor sigmoid(const Tensor &x, const std::string &name = "");

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
Tensor scatter_update(const Tensor &ref, const Tensor &indices,
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

/// NHWC input, HWIO filter; strides and dilations are [h, w].
Tensor conv2d(const Tensor &input, const Tensor &filter, const Dims &strides,
              const std::string &padding, const Dims &dilations = {1, 1},
              const std::string &name = "");
Tensor max_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding, const std::string &name = "");
Tensor avg_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding, const std::string &name = "");
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

/// Drops elements with probability `rate` and scales the rest by
/// 1 / (1 - rate). Always applied; layers::dropout adds the training switch.
Tensor dropout(const Tensor &x, double rate, std::optional<int64_t> seed = {},
               const std::string &name = "");
} // namespace nn

} // namespace estc

#endif // ESTC_LIB_GRAPH_OPS_H
