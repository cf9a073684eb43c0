//===- elementwise.cpp - Op oracle cases: math, activations, cumulative --===//
//
// The elementwise ops (erf, sign, round, ceil, log1p, expm1), the
// activations and losses built from them, and cumsum / cumprod, against
// TF 2.15 (test/e2e/op_cases/elementwise.py).
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

// Primitive elementwise ops.
ESTC_OP_CASE(erf, [](Graph &, const Inputs &in) {
  return Outputs{estc::erf(in[0])};
});
ESTC_OP_CASE(erf_f64, [](Graph &, const Inputs &in) {
  return Outputs{estc::erf(in[0])};
});
ESTC_OP_CASE(sign, [](Graph &, const Inputs &in) {
  return Outputs{estc::sign(in[0])};
});
ESTC_OP_CASE(sign_int, [](Graph &, const Inputs &in) {
  return Outputs{estc::sign(in[0])};
});
ESTC_OP_CASE(round_half_to_even, [](Graph &, const Inputs &in) {
  return Outputs{estc::round(in[0])};
});
ESTC_OP_CASE(round_int, [](Graph &, const Inputs &in) {
  return Outputs{estc::round(in[0])};
});
ESTC_OP_CASE(ceil, [](Graph &, const Inputs &in) {
  return Outputs{estc::ceil(in[0])};
});
ESTC_OP_CASE(log1p, [](Graph &, const Inputs &in) {
  return Outputs{estc::log1p(in[0])};
});
ESTC_OP_CASE(expm1, [](Graph &, const Inputs &in) {
  return Outputs{estc::expm1(in[0])};
});

// Composites.
ESTC_OP_CASE(clip_by_value_tensors, [](Graph &, const Inputs &in) {
  return Outputs{clip_by_value(in[0], in[1], in[2])};
});
ESTC_OP_CASE(clip_by_value_numbers, [](Graph &, const Inputs &in) {
  return Outputs{clip_by_value(in[0], -0.5, 0.75)};
});
ESTC_OP_CASE(leaky_relu, [](Graph &, const Inputs &in) {
  return Outputs{nn::leaky_relu(in[0])};
});
ESTC_OP_CASE(leaky_relu_alpha2, [](Graph &, const Inputs &in) {
  return Outputs{nn::leaky_relu(in[0], 2.0)};
});
ESTC_OP_CASE(leaky_relu_int, [](Graph &, const Inputs &in) {
  return Outputs{nn::leaky_relu(in[0], 0.25)};
});
ESTC_OP_CASE(selu, [](Graph &, const Inputs &in) {
  return Outputs{nn::selu(in[0])};
});
ESTC_OP_CASE(gelu, [](Graph &, const Inputs &in) {
  return Outputs{nn::gelu(in[0])};
});
ESTC_OP_CASE(gelu_approximate, [](Graph &, const Inputs &in) {
  return Outputs{nn::gelu(in[0], true)};
});
ESTC_OP_CASE(silu, [](Graph &, const Inputs &in) {
  return Outputs{nn::silu(in[0])};
});
ESTC_OP_CASE(swish_beta, [](Graph &, const Inputs &in) {
  return Outputs{nn::swish(in[0], 1.5)};
});
ESTC_OP_CASE(softsign, [](Graph &, const Inputs &in) {
  return Outputs{nn::softsign(in[0])};
});
ESTC_OP_CASE(hard_sigmoid, [](Graph &, const Inputs &in) {
  return Outputs{activations::hard_sigmoid(in[0])};
});
ESTC_OP_CASE(l2_normalize_axis1, [](Graph &, const Inputs &in) {
  return Outputs{nn::l2_normalize(in[0], Dims{1})};
});
ESTC_OP_CASE(l2_normalize_all, [](Graph &, const Inputs &in) {
  return Outputs{nn::l2_normalize(in[0])};
});
ESTC_OP_CASE(moments, [](Graph &, const Inputs &in) {
  nn::Moments m = nn::moments(in[0], {0, 2});
  return Outputs{m.mean, m.variance};
});
ESTC_OP_CASE(moments_keepdims, [](Graph &, const Inputs &in) {
  nn::Moments m = nn::moments(in[0], {1}, true);
  return Outputs{m.mean, m.variance};
});
ESTC_OP_CASE(moments_no_axes, [](Graph &, const Inputs &in) {
  nn::Moments m = nn::moments(in[0], {});
  return Outputs{m.mean, m.variance};
});
ESTC_OP_CASE(zero_fraction_relu, [](Graph &, const Inputs &in) {
  return Outputs{nn::zero_fraction(nn::relu(in[0]))};
});
ESTC_OP_CASE(zero_fraction_int, [](Graph &, const Inputs &in) {
  return Outputs{nn::zero_fraction(in[0])};
});
ESTC_OP_CASE(log_poisson_loss, [](Graph &, const Inputs &in) {
  return Outputs{nn::log_poisson_loss(in[0], in[1])};
});
ESTC_OP_CASE(log_poisson_loss_full, [](Graph &, const Inputs &in) {
  return Outputs{nn::log_poisson_loss(in[0], in[1], true)};
});
ESTC_OP_CASE(weighted_cross_entropy, [](Graph &, const Inputs &in) {
  return Outputs{nn::weighted_cross_entropy_with_logits(in[0], in[1], 3.0)};
});
ESTC_OP_CASE(weighted_cross_entropy_tensor_weight, [](Graph &,
                                                      const Inputs &in) {
  return Outputs{nn::weighted_cross_entropy_with_logits(in[0], in[1], in[2])};
});

// The same sampled values on both sides (TF's sampler draws other numbers).
ESTC_OP_CASE(sampled_softmax_loss, [](Graph &, const Inputs &in) {
  return Outputs{nn::sampled_softmax_loss(in[0], in[1], in[2], in[3], 4, 10, 2,
                                          SampledValues{in[4], in[5], in[6]})};
});
ESTC_OP_CASE(sampled_softmax_loss_keep_hits, [](Graph &, const Inputs &in) {
  return Outputs{nn::sampled_softmax_loss(in[0], in[1], in[2], in[3], 3, 8, 1,
                                          SampledValues{in[4], in[5], in[6]},
                                          false)};
});

// cumsum / cumprod.
ESTC_OP_CASE(cumsum_axis0, [](Graph &, const Inputs &in) {
  return Outputs{cumsum(in[0], 0)};
});
ESTC_OP_CASE(cumsum_axis1_exclusive, [](Graph &, const Inputs &in) {
  return Outputs{cumsum(in[0], 1, true)};
});
ESTC_OP_CASE(cumsum_last_reverse, [](Graph &, const Inputs &in) {
  return Outputs{cumsum(in[0], -1, false, true)};
});
ESTC_OP_CASE(cumsum_exclusive_reverse, [](Graph &, const Inputs &in) {
  return Outputs{cumsum(in[0], 2, true, true)};
});
ESTC_OP_CASE(cumsum_int, [](Graph &, const Inputs &in) {
  return Outputs{cumsum(in[0], 1)};
});
ESTC_OP_CASE(cumprod_axis0, [](Graph &, const Inputs &in) {
  return Outputs{cumprod(in[0], 0)};
});
ESTC_OP_CASE(cumprod_axis1_exclusive, [](Graph &, const Inputs &in) {
  return Outputs{cumprod(in[0], 1, true)};
});
ESTC_OP_CASE(cumprod_last_reverse, [](Graph &, const Inputs &in) {
  return Outputs{cumprod(in[0], -1, false, true)};
});
ESTC_OP_CASE(cumprod_exclusive_reverse, [](Graph &, const Inputs &in) {
  return Outputs{cumprod(in[0], 2, true, true)};
});
ESTC_OP_CASE(cumprod_int, [](Graph &, const Inputs &in) {
  return Outputs{cumprod(in[0], -1)};
});
