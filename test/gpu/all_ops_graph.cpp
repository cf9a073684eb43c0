//===- all_ops_graph.cpp - Writes the all-ops predict graph for GpuTest --===//
//
// all_ops_graph -o OUT.pb: one PREDICT graph that uses every op of
// docs/ops.md a model can contain (everything but the graph-only sources
// and the training ops, which the seed models' @train covers), each result
// a separate prediction, on the features of test/gpu/AllOps.h. GpuTest
// compiles it twice, for the CPU and for CUDA, and compares every
// prediction; the prediction's name says its tolerance (AllOps.h). Shapes
// are small and odd (17 columns, 9x9 images, 7 classes) so that partial
// tiles, asymmetric SAME padding and the batch sizes 1, 3 and 17 are
// exercised. A bad flag is one line and exit status 2; a graph that cannot
// be built or written, one line and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "test/gpu/AllOps.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Ops.h"
#include "lib/Support/Flags.h"

#include <exception>
#include <iostream>
#include <stdexcept>

namespace estc {
namespace {

using gpu_test::FeatureDef;
using gpu_test::FeatureType;

DType dtypeOf(FeatureType type) {
  switch (type) {
  case FeatureType::F32:
    return DType::Float32;
  case FeatureType::F64:
    return DType::Float64;
  case FeatureType::I32:
    return DType::Int32;
  case FeatureType::I64:
    return DType::Int64;
  }
  throw std::logic_error("unknown feature type");
}

InputSpec allOpsInputs() {
  InputSpec inputs;
  for (const FeatureDef &f : gpu_test::kAllOpsFeatures)
    inputs.features.push_back(
        TensorSpec{f.key, dtypeOf(f.type), Dims(f.shape, f.shape + f.rank)});
  return inputs;
}

/// The predictions, each checked for a known tolerance group.
class Outputs {
public:
  void add(const std::string &key, const Tensor &value) {
    if (gpu_test::allOpsTolerance(key) < 0)
      throw std::logic_error("prediction '" + key +
                             "' has no tolerance group (AllOps.h)");
    if (map_.contains(key))
      throw std::logic_error("prediction '" + key + "' is defined twice");
    map_.set(key, value);
  }
  const TensorMap &map() const { return map_; }

private:
  TensorMap map_;
};

Variable variable(Graph &g, const std::string &name, const Dims &shape,
                  DType dtype = DType::Float32) {
  return g.get_variable(name, dtype, shape,
                        dtype == DType::Float32 || dtype == DType::Float64
                            ? glorot_uniform_initializer()
                            : zeros_initializer());
}

void elementwise(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor x = f["x"], p = f["p"], a = f["a"], k = f["k"], ids = f["ids"];
  Tensor row = variable(g, "row17", {17}).read();
  Tensor col4 = variable(g, "col4", {1, 4}).read();
  // Binary arithmetic: same shape, a row, size-1 dims on both sides (a
  // [?,3,1] against [1,4]), a scalar.
  out.add("arith_add", x + p);
  out.add("arith_sub_row", x - row);
  out.add("arith_mul_bcast", a * col4);
  out.add("arith_div", x / p);
  out.add("arith_div_scalar", divide(2.0, p));
  out.add("arith_div_zero", x / zeros_like(x)); // +-inf
  out.add("transc_pow", estc::pow(p, row * 0.5));
  out.add("exact_max", maximum(x, row));
  out.add("exact_min_scalar", minimum(x, 0.25));
  // Unary.
  out.add("exact_neg", negative(x));
  out.add("exact_abs", estc::abs(x));
  out.add("arith_square", square(x));
  out.add("transc_exp", estc::exp(x));
  out.add("transc_log", estc::log(p));
  out.add("transc_log_nan", estc::log(x)); // NaN for x < 0
  out.add("arith_sqrt", estc::sqrt(p));
  out.add("transc_rsqrt", rsqrt(p));
  out.add("transc_tanh", estc::tanh(x));
  out.add("transc_sin", estc::sin(x * 3.0));
  out.add("transc_cos", estc::cos(x * 3.0));
  out.add("exact_floor", estc::floor(x * 2.0));
  out.add("transc_sigmoid", sigmoid(x));
  out.add("exact_relu", nn::relu(x));
  out.add("exact_relu6", nn::relu6(x * 4.0));
  out.add("transc_elu", nn::elu(x));
  out.add("transc_softplus", nn::softplus(x * 10.0));
  out.add("exact_ceil", estc::ceil(x * 2.0));
  out.add("exact_round", estc::round(estc::floor(x * 4.0) * 0.5)); // halves
  out.add("exact_sign", estc::sign(estc::floor(x)));
  out.add("exact_int_sign_round", estc::sign(k) + estc::round(k));
  out.add("transc_erf", estc::erf(x));
  out.add("transc_log1p", estc::log1p(p - 0.05));
  out.add("transc_expm1", estc::expm1(x));
  out.add("transc_gelu", nn::gelu(x));
  // Running sums and products along the columns, the batch and backwards.
  out.add("arith_cumsum", cumsum(x, 1));
  out.add("arith_cumsum_batch_exclusive", cumsum(x, 0, true));
  out.add("arith_cumprod_reverse", cumprod(p * 0.5 + 0.5, -1, false, true));
  out.add("exact_int_cumsum", cumsum(k, 1, false, true));
  // Integers (i32 and i64): arithmetic, division, neg/abs/square.
  out.add("exact_int_arith", maximum(k * k - k, k));
  out.add("exact_int_div", divide(estc::abs(k), 3.0));
  out.add("exact_int_neg_square", negative(square(k)) + estc::abs(k));
  out.add("exact_int64_arith", ids * ids + 3.0 - ids);
  // Comparisons, logic, select, cast.
  Tensor lt = less(x, row);
  out.add("exact_less", lt);
  out.add("exact_less_equal", less_equal(x, 0.5));
  out.add("exact_greater", greater(x, p));
  out.add("exact_greater_equal", greater_equal(x, row));
  out.add("exact_equal", equal(ids, 3.0));
  out.add("exact_not_equal", not_equal(k, 0.0));
  out.add("exact_logic", logical_or(logical_and(lt, greater(x, 0.0)),
                                    logical_not(greater(p, 1.0))));
  out.add("exact_select", where(lt, x, p));
  out.add("exact_select_bcast", where(greater(a, 0.0), a, col4));
  out.add("exact_cast_f32_i32", cast(x * 10.0, DType::Int32));
  out.add("exact_cast_i64_f32", cast(ids, DType::Float32));
  out.add("exact_cast_bool_f32", cast(lt, DType::Float32));
  out.add("exact_cast_f32_f64", cast(x, DType::Float64));
  out.add("exact_cast_i32_i64", cast(k, DType::Int64));
}

void linearAlgebra(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor x = f["x"], m = f["m"], d = f["d"];
  Tensor w = variable(g, "w", {17, 6}).read();
  Tensor wt = variable(g, "w_t", {6, 17}).read();
  Tensor w3 = variable(g, "w3", {1, 4, 5}).read();
  Tensor w64 = variable(g, "w64", {5, 3}, DType::Float64).read();
  out.add("arith_matmul", matmul(x, w));
  out.add("arith_matmul_tb", matmul(x, wt, false, true));
  // Transposed a: the reduction runs over the batch.
  out.add("arith_matmul_ta", matmul(x, x, true, false));
  // Batched: a batch of one broadcast, and both operands batched.
  out.add("arith_batch_matmul_bcast", matmul(m, w3));
  out.add("arith_batch_matmul", matmul(m, m, false, true));
  out.add("arith_matmul_f64", matmul(d, w64));
}

void convolution(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor img = f["img"];
  Tensor filter = variable(g, "filter", {3, 3, 3, 5}).read();
  Tensor filter2 = variable(g, "filter2", {2, 2, 3, 4}).read();
  Tensor valid = nn::conv2d(img, filter, {1, 1}, "VALID");
  out.add("arith_conv_valid", valid);
  out.add("arith_conv_same", nn::conv2d(img, filter, {1, 1}, "SAME"));
  out.add("arith_conv_same_s2", nn::conv2d(img, filter, {2, 2}, "SAME"));
  out.add("arith_conv_valid_s2", nn::conv2d(img, filter, {2, 2}, "VALID"));
  // A 2x2 filter under SAME pads one side only: a loop nest on CUDA.
  out.add("arith_conv_same_asym", nn::conv2d(img, filter2, {1, 1}, "SAME"));
  out.add("arith_conv_dilated",
          nn::conv2d(img, filter, {1, 1}, "VALID", "NHWC", {2, 2}));
  out.add("exact_max_pool_valid", nn::max_pool(img, {2, 2}, {2, 2}, "VALID"));
  out.add("exact_max_pool_same", nn::max_pool(img, {3, 3}, {2, 2}, "SAME"));
  out.add("arith_avg_pool_same", nn::avg_pool(img, {3, 3}, {1, 1}, "SAME"));
  out.add("arith_avg_pool_valid", nn::avg_pool(img, {2, 2}, {2, 2}, "VALID"));
  // The gradient ops, on an output gradient of the forward result's shape.
  Tensor dy = valid * 0.5 - 0.25;
  out.add("arith_conv_backprop_input",
          nn::conv2d_backprop_input(dy, filter, {9, 9}, {1, 1}, "VALID"));
  out.add("arith_conv_backprop_filter",
          nn::conv2d_backprop_filter(img, dy, {3, 3}, {1, 1}, "VALID"));
  Tensor dys2 = nn::conv2d(img, filter, {2, 2}, "SAME") - 0.5;
  out.add("arith_conv_backprop_input_s2",
          nn::conv2d_backprop_input(dys2, filter, {9, 9}, {2, 2}, "SAME"));
  out.add("arith_conv_backprop_filter_s2",
          nn::conv2d_backprop_filter(img, dys2, {3, 3}, {2, 2}, "SAME"));
  Tensor pooled = nn::max_pool(img, {3, 3}, {2, 2}, "SAME");
  out.add("arith_max_pool_grad",
          nn::max_pool_grad(img, pooled * 2.0 + 1.0, {3, 3}, {2, 2}, "SAME"));
  Tensor avg = nn::avg_pool(img, {3, 3}, {2, 2}, "SAME");
  out.add("arith_avg_pool_grad",
          nn::avg_pool_grad(avg + 1.0, {9, 9}, {3, 3}, {2, 2}, "SAME"));
  // The depthwise convolution and its gradients: loop nests on CUDA.
  Tensor dwFilter = variable(g, "dw_filter", {3, 3, 3, 2}).read();
  Tensor dw = nn::depthwise_conv2d_native(img, dwFilter, {2, 2}, "SAME");
  out.add("arith_depthwise_conv2d", dw);
  out.add("arith_depthwise_backprop_input",
          nn::depthwise_conv2d_backprop_input(dw - 0.5, dwFilter, {9, 9},
                                              {2, 2}, "SAME"));
  out.add("arith_depthwise_backprop_filter",
          nn::depthwise_conv2d_backprop_filter(img, dw - 0.5, {3, 3}, {2, 2},
                                               "SAME"));
}

void reductions(const TensorMap &f, Outputs &out) {
  Tensor x = f["x"], p = f["p"], img = f["img"], k = f["k"];
  out.add("arith_reduce_sum", reduce_sum(x, Dims{1}));
  out.add("arith_reduce_sum_batch", reduce_sum(x, Dims{0}, true));
  out.add("arith_reduce_mean", reduce_mean(img, Dims{1, 2}));
  out.add("arith_reduce_mean_all", reduce_mean(x));
  out.add("exact_reduce_max", reduce_max(img, Dims{1, 2}, true));
  out.add("exact_reduce_min_all", reduce_min(x));
  out.add("arith_reduce_prod", reduce_prod(slice(p, {0, 0}, {-1, 5}), Dims{1}));
  out.add("exact_reduce_sum_int", reduce_sum(k, Dims{1}));
  out.add("exact_argmax", argmax(x, 1));
  out.add("exact_argmin_batch", argmin(x, 0, DType::Int32));
}

void shapes(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor x = f["x"], p = f["p"], a = f["a"], img = f["img"];
  Tensor row4 = variable(g, "row4", {4}).read();
  Tensor row17 = variable(g, "row17x", {1, 17}).read();
  out.add("exact_reshape", reshape(img, {-1, 243}));
  out.add("exact_transpose", transpose(img, {0, 3, 1, 2}));
  out.add("exact_concat", concat({x, p, x}, 1));
  // Along axis 0 of batch-free tensors: a concat along the batch axis
  // would have 2 x batch rows, which the manifest cannot state (it says
  // [?, 17], and the runtime sizes the output for one batch).
  out.add("exact_concat_axis0",
          concat({reduce_max(x, Dims{0}, true), row17, row17}, 0));
  out.add("exact_slice", slice(x, {0, 2}, {-1, 5}));
  out.add("exact_pad", pad(x, {0, 0, 1, 2}, 0.5));
  out.add("exact_broadcast_to", broadcast_to(row4, {3, 4}));
  out.add("exact_squeeze", squeeze(a, Dims{2}));
  out.add("exact_expand_dims", expand_dims(x, 1));
}

void indexing(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor ids = f["ids"], ids32 = f["ids32"], q = f["q"], x = f["x"];
  Tensor table = variable(g, "table", {gpu_test::kIds, 4}).read(); // embeddings
  Tensor patch = variable(g, "patch", {1, 4}).read();
  out.add("exact_gather", gather(table, ids));
  out.add("exact_gather_2d_i32", gather(table, ids32));
  out.add("exact_gather_axis1", gather(x, ids32, 1));
  // Duplicate ids are summed in row order.
  out.add("arith_scatter_add", scatter_add(table, ids, q));
  out.add("exact_scatter_update",
          scatter_update(q, g.constant({0}, {1}, DType::Int64), patch));
  out.add("exact_one_hot", one_hot(ids, gpu_test::kIds));
  out.add("exact_one_hot_axis0_i32",
          one_hot(ids32, 5, 2.0, -1.0, 0, DType::Float32)); // 5, 6 off
  // Ids >= the batch are dropped.
  out.add("arith_segment_sum", unsorted_segment_sum(q, ids, q));
  out.add("arith_segment_mean", segment_mean(q, ids, q));
  out.add("transc_segment_sqrt_n", segment_sqrt_n(q, ids, q));
  out.add("exact_bucketize", bucketize(x, {-1.0, 0.0, 0.0, 0.7, 1.5}));
  out.add("exact_check_range", check_range(ids, 0, gpu_test::kIds, "id"));
}

void neuralNetwork(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor x = f["x"], m = f["m"], soft = f["soft"], ids = f["ids"];
  Tensor wc = variable(g, "classes", {17, gpu_test::kIds}).read();
  Tensor logits = matmul(x, wc) * 3.0;
  out.add("transc_softmax", nn::softmax(logits));
  out.add("transc_softmax_axis1", nn::softmax(m, 1));
  out.add("transc_log_softmax", nn::log_softmax(logits));
  out.add("transc_softmax_xent",
          nn::softmax_cross_entropy_with_logits(nn::softmax(soft), logits));
  out.add("transc_sparse_softmax_xent",
          nn::sparse_softmax_cross_entropy_with_logits(ids, logits));
  out.add("transc_sigmoid_xent",
          nn::sigmoid_cross_entropy_with_logits(soft, logits));
  out.add("exact_stop_gradient", stop_gradient(x));
  out.add("exact_zeros_like", zeros_like(x));
  out.add("exact_ones_like", ones_like(ids));
}

void randomness(Graph &g, const TensorMap &f, Outputs &out) {
  Tensor x = f["x"];
  // The counter is global_step: GpuTest sets it like every variable.
  out.add("exact_dropout", nn::dropout(x, 0.5, 11));
  out.add("exact_random_uniform", random_uniform(g, {4, 5}));
  out.add("exact_random_uniform_f64",
          random_uniform(g, {3}, DType::Float64, -2.0, 2.0));
  out.add("transc_random_normal",
          random_normal(g, {3, 4}, DType::Float32, 1.0, 2.0));
  out.add("transc_truncated_normal", truncated_normal(g, {6}));
}

graph::GraphDef buildAllOpsGraph() {
  Graph graph;
  graph.set_seed(17);
  build_mode(graph, ModeKeys::PREDICT, allOpsInputs(),
             [](Graph &g, const TensorMap &f, const Tensor &, ModeKeys) {
               Outputs out;
               elementwise(g, f, out);
               linearAlgebra(g, f, out);
               convolution(g, f, out);
               reductions(f, out);
               shapes(g, f, out);
               indexing(g, f, out);
               neuralNetwork(g, f, out);
               randomness(g, f, out);
               Signature spec;
               spec.predictions = out.map();
               return spec;
             });
  return graph.graph_def();
}

} // namespace
} // namespace estc

int main(int argc, char **argv) {
  using estc::flags::Flag;
  std::string output;
  estc::flags::FlagParser parser(
      "all_ops_graph",
      "Writes the all-ops PREDICT graph of GpuTest (text if FILE ends in "
      ".pbtxt).");
  parser.add(
      Flag("o", &output, "the graph file").value_name("FILE").required());
  parser.parse_or_exit(argc, argv);
  try {
    std::string error;
    if (!estc::graph::writeGraph(output, estc::buildAllOpsGraph(), error)) {
      std::cerr << "all_ops_graph: error: " << error << "\n";
      return 1;
    }
  } catch (const std::exception &e) {
    std::cerr << "all_ops_graph: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
