//===- layers_nn.cpp - Op oracle cases: layer norm and attention ---------===//
//
// The fused row ops against TF 2.15 (test/e2e/op_cases/layers_nn.py holds
// TF's side, case by case): layer normalization with given gamma and beta
// (TF: tf.nn.moments + tf.nn.batch_normalization, as Keras's
// LayerNormalization), and the attention core with given Q, K, V and mask
// (TF: Keras's masked softmax of q k^T / sqrt(d), then the weighted values).
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

#include <cmath>

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(layer_norm_last, [](Graph &, const Inputs &in) {
  return Outputs{nn::layer_norm(in[0], in[1], in[2], -1, -1, 1e-3)};
});
ESTC_OP_CASE(layer_norm_trailing_two, [](Graph &, const Inputs &in) {
  return Outputs{nn::layer_norm(in[0], in[1], in[2], 1, 1, 1e-5)};
});
ESTC_OP_CASE(layer_norm_contrib, [](Graph &, const Inputs &in) {
  return Outputs{nn::layer_norm(in[0], in[1], in[2], 1, -1, 1e-12)};
});
ESTC_OP_CASE(attention_softmax_scaled, [](Graph &, const Inputs &in) {
  return Outputs{nn::attention_softmax(in[0], 0.25)};
});
ESTC_OP_CASE(attention_softmax_bool_mask, [](Graph &, const Inputs &in) {
  return Outputs{nn::attention_softmax(in[0], greater(in[1], 0.0), 0.5)};
});
ESTC_OP_CASE(attention_softmax_causal, [](Graph &, const Inputs &in) {
  return Outputs{nn::attention_softmax(in[0], 1.0, /*causal=*/true)};
});
ESTC_OP_CASE(attention_softmax_additive, [](Graph &, const Inputs &in) {
  return Outputs{nn::attention_softmax(in[0], in[1], 1.0)};
});
ESTC_OP_CASE(scaled_dot_product_attention, [](Graph &, const Inputs &in) {
  return Outputs{nn::scaled_dot_product_attention(
      in[0], in[1], in[2], expand_dims(greater(in[3], 0.0), 1))};
});
ESTC_OP_CASE(scaled_dot_product_attention_causal,
             [](Graph &, const Inputs &in) {
               return Outputs{nn::scaled_dot_product_attention(
                   in[0], in[1], in[2], std::nullopt, /*causal=*/true)};
             });
