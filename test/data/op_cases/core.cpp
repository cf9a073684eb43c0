//===- core.cpp - Op oracle cases of the seed ops -----------------------===//
//
// A few of the ops estc had before the oracle, so that the oracle itself is
// checked on ops whose semantics are settled (test/e2e/op_cases/core.py).
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(relu, [](Graph &, const Inputs &in) {
  return Outputs{nn::relu(in[0])};
});
ESTC_OP_CASE(matmul_transpose_b, [](Graph &, const Inputs &in) {
  return Outputs{matmul(in[0], in[1], false, true)};
});
ESTC_OP_CASE(softmax_axis1, [](Graph &, const Inputs &in) {
  return Outputs{nn::softmax(in[0], 1)};
});
ESTC_OP_CASE(where_broadcast, [](Graph &, const Inputs &in) {
  return Outputs{where(in[0], in[1], in[2])};
});
ESTC_OP_CASE(gather_axis1, [](Graph &, const Inputs &in) {
  return Outputs{gather(in[0], in[1], 1)};
});
ESTC_OP_CASE(reduce_max_keepdims, [](Graph &, const Inputs &in) {
  return Outputs{reduce_max(in[0], Dims{1}, true)};
});
ESTC_OP_CASE(argmax_and_equal, [](Graph &, const Inputs &in) {
  return Outputs{argmax(in[0], 1), equal(in[1], in[2])};
});
ESTC_OP_CASE(sigmoid_cross_entropy, [](Graph &, const Inputs &in) {
  return Outputs{nn::sigmoid_cross_entropy_with_logits(in[0], in[1])};
});
