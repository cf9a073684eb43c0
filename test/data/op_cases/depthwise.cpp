//===- depthwise.cpp - Oracle cases of the depthwise convolution ops -----===//
//
// estc's halves of test/e2e/op_cases/depthwise.py (TF 2.15's):
// depthwise_conv2d_native (est.depthwise_conv2d: MobileNet's strides and
// paddings, a multiplier, dilations) and its two gradients as ops of their
// own (tf.nn.depthwise_conv2d_backprop_input / _filter), each also
// differentiated (their gradients are the other two ops).
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(depthwise_native_same_s1, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_native(in[0], in[1], {1, 1}, "SAME")};
});
ESTC_OP_CASE(depthwise_native_valid_s2, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_native(in[0], in[1], {2, 2}, "VALID")};
});
ESTC_OP_CASE(depthwise_native_same_s2_odd, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_native(in[0], in[1], {2, 1}, "SAME")};
});
ESTC_OP_CASE(depthwise_native_multiplier3, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_native(in[0], in[1], {1, 2}, "SAME")};
});
ESTC_OP_CASE(depthwise_native_dilated, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::depthwise_conv2d_native(in[0], in[1], {1, 1}, "SAME", {2, 2})};
});
ESTC_OP_CASE(depthwise_backprop_input, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_backprop_input(in[0], in[1], {7, 6},
                                                     {2, 2}, "SAME")};
});
ESTC_OP_CASE(depthwise_backprop_filter, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d_backprop_filter(in[0], in[1], {3, 3},
                                                      {2, 2}, "SAME")};
});
