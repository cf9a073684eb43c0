//===- conv.cpp - Oracle cases of the convolutions and poolings ----------===//
//
// estc's halves of test/e2e/op_cases/conv.py (TF 2.15's): conv1d, conv3d,
// conv2d_transpose, conv3d_transpose, depthwise and separable convolutions, the
// 1-D and 3-D poolings, and channels-first data formats.
//
//===----------------------------------------------------------------------===//

#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(conv1d_same_s2, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv1d(in[0], in[1], 2, "SAME")};
});
ESTC_OP_CASE(conv1d_valid_dilated, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv1d(in[0], in[1], 1, "VALID", "NWC", 2)};
});
ESTC_OP_CASE(conv1d_ncw, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv1d(in[0], in[1], 1, "SAME", "NCW")};
});
ESTC_OP_CASE(conv3d_same_strided, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv3d(in[0], in[1], {2, 1, 2}, "SAME")};
});
ESTC_OP_CASE(conv3d_valid, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv3d(in[0], in[1], {1, 2, 1}, "VALID")};
});
ESTC_OP_CASE(conv3d_dilated, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::conv3d(in[0], in[1], {1, 1, 1}, "SAME", "NDHWC", {2, 1, 2})};
});
ESTC_OP_CASE(conv3d_ncdhw, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv3d(in[0], in[1], {1, 1, 1}, "SAME", "NCDHW")};
});
ESTC_OP_CASE(conv2d_transpose_same, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::conv2d_transpose(in[0], in[1], {2, 8, 6, 2}, {2, 2}, "SAME")};
});
ESTC_OP_CASE(conv2d_transpose_valid, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::conv2d_transpose(in[0], in[1], {2, 9, 7, 2}, {2, 2}, "VALID")};
});
ESTC_OP_CASE(conv3d_transpose_same, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::conv3d_transpose(in[0], in[1], {2, 6, 4, 5, 2}, {2, 2, 2}, "SAME")};
});
ESTC_OP_CASE(conv3d_transpose_valid, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::conv3d_transpose(in[0], in[1], {2, 7, 4, 7, 2}, {2, 2, 2}, "VALID")};
});
ESTC_OP_CASE(depthwise_conv2d_multiplier2, [](Graph &, const Inputs &in) {
  return Outputs{nn::depthwise_conv2d(in[0], in[1], {2, 2}, "SAME")};
});
ESTC_OP_CASE(depthwise_conv2d_valid_dilated, [](Graph &, const Inputs &in) {
  return Outputs{
      nn::depthwise_conv2d(in[0], in[1], {1, 1}, "VALID", "NHWC", {2, 2})};
});
ESTC_OP_CASE(separable_conv2d, [](Graph &, const Inputs &in) {
  return Outputs{nn::separable_conv2d(in[0], in[1], in[2], {1, 1}, "SAME")};
});
ESTC_OP_CASE(conv2d_nchw, [](Graph &, const Inputs &in) {
  return Outputs{nn::conv2d(in[0], in[1], {2, 1}, "SAME", "NCHW")};
});
ESTC_OP_CASE(pool2d_nchw, [](Graph &, const Inputs &in) {
  return Outputs{nn::max_pool(in[0], {2, 3}, {2, 1}, "SAME", "NCHW"),
                 nn::avg_pool(in[0], {2, 3}, {2, 1}, "VALID", "NCHW")};
});
ESTC_OP_CASE(pool1d, [](Graph &, const Inputs &in) {
  return Outputs{nn::max_pool1d(in[0], 3, 2, "SAME"),
                 nn::avg_pool1d(in[0], 3, 2, "SAME"),
                 nn::max_pool1d(in[0], 2, 1, "VALID"),
                 nn::avg_pool1d(in[0], 2, 1, "VALID")};
});
ESTC_OP_CASE(pool3d, [](Graph &, const Inputs &in) {
  return Outputs{nn::max_pool3d(in[0], {3, 2, 2}, {2, 2, 1}, "SAME"),
                 nn::avg_pool3d(in[0], {3, 2, 2}, {2, 2, 1}, "SAME"),
                 nn::max_pool3d(in[0], {2, 2, 3}, {1, 2, 2}, "VALID"),
                 nn::avg_pool3d(in[0], {2, 2, 3}, {1, 2, 2}, "VALID")};
});
