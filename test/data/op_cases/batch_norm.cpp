//===- batch_norm.cpp - Op oracle cases of fused_batch_norm -------------===//
//
// nn::fused_batch_norm (est.fused_batch_norm and its fused gradient) against
// tf.compat.v1.nn.fused_batch_norm with is_training=True
// (test/e2e/op_cases/batch_norm.py): y with the gradients of x, scale and
// offset; the batch statistics (TF's unbiased variance) without gradients,
// as TF defines none through them.
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(fused_batch_norm_nhwc, [](Graph &, const Inputs &in) {
  return Outputs{nn::fused_batch_norm(in[0], in[1], in[2]).y};
});
ESTC_OP_CASE(fused_batch_norm_nchw, [](Graph &, const Inputs &in) {
  return Outputs{nn::fused_batch_norm(in[0], in[1], in[2], 1e-4, "NCHW").y};
});
ESTC_OP_CASE(fused_batch_norm_large_mean, [](Graph &, const Inputs &in) {
  return Outputs{nn::fused_batch_norm(in[0], in[1], in[2]).y};
});
ESTC_OP_CASE(fused_batch_norm_statistics, [](Graph &, const Inputs &in) {
  nn::FusedBatchNorm bn = nn::fused_batch_norm(in[0], in[1], in[2], 0.01);
  return Outputs{bn.y, bn.batch_mean, bn.batch_variance};
});
