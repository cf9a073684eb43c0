//===- ShapeFunctionsTest.cpp - Tests of lib/Shape ----------------------===//

#include "lib/Shape/ShapeFunctions.h"

#include <gtest/gtest.h>

using namespace estc::shape;

namespace {
constexpr int64_t U = kUnknownDim;

void expectDims(const ShapeOr &r, const Dims &expected) {
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.dims(), expected);
}

void expectError(const ShapeOr &r, const std::string &fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment
                       << "', got " << toString(r.dims());
  EXPECT_NE(r.message().find(fragment), std::string::npos) << r.message();
}
} // namespace

TEST(ShapeFunctions, Helpers) {
  EXPECT_EQ(toString({U, 784}), "[?,784]");
  EXPECT_EQ(toString({}), "[]");
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({U, 3}), U);
  EXPECT_TRUE(isFullyKnown({1, 2}));
  EXPECT_FALSE(isFullyKnown({U, 2}));
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(2, 3), 2);
  EXPECT_FALSE(normalizeAxis(3, 3));
  EXPECT_FALSE(normalizeAxis(-4, 3));
}

TEST(ShapeFunctions, Broadcast) {
  expectDims(broadcast({U, 3}, {3}), {U, 3});
  expectDims(broadcast({2, 1}, {1, 5}), {2, 5});
  expectDims(broadcast({}, {4, 4}), {4, 4});
  expectDims(broadcast({U, 1}, {1}), {U, 1});
  expectDims(broadcast({U}, {5}), {5});
  expectDims(broadcast({5}, {U}), {5});
  expectError(broadcast({2, 3}, {4, 3}), "cannot be broadcast");
  expectDims(broadcast(std::vector<Dims>{{U, 1}, {1, 4}, {4}}), {U, 4});
  expectError(broadcast(std::vector<Dims>{{2}, {3}}), "[2] and [3]");
}

TEST(ShapeFunctions, BroadcastTo) {
  expectDims(broadcastTo({1, 3}, {5, 3}), {5, 3});
  expectDims(broadcastTo({3}, {U, 3}), {U, 3});
  expectError(broadcastTo({2, 3}, {3}), "lower rank");
  expectError(broadcastTo({2}, {4}), "cannot broadcast");
}

TEST(ShapeFunctions, Matmul) {
  expectDims(matmul({U, 784}, {784, 256}, false, false), {U, 256});
  expectDims(matmul({784, U}, {784, 256}, true, false), {U, 256});
  expectDims(matmul({3, 4}, {5, 4}, false, true), {3, 5});
  expectDims(matmul({7, 2, 3}, {3, 4}, false, false), {7, 2, 4});
  expectDims(matmul({U, 3}, {U, 4}, false, false), {U, 4});
  expectError(matmul({U, 784}, {100, 256}, false, false),
              "inner dimensions differ");
  expectError(matmul({3}, {3, 4}, false, false), "rank >= 2");
  expectError(matmul({2, 2, 3}, {4, 3, 4}, false, false), "batch dimensions");
  // Batch dims broadcast: [2,1,M,K] x [3,K,N] -> [2,3,M,N].
  expectDims(matmul({2, 1, 4, 5}, {3, 5, 6}, false, false), {2, 3, 4, 6});
  expectDims(matmul({U, 1, 4, 5}, {3, 6, 5}, false, true), {U, 3, 4, 6});
  expectDims(matmul({4, 5}, {2, 3, 5, 6}, false, false), {2, 3, 4, 6});
}

TEST(ShapeFunctions, Conv2dAndPool) {
  EXPECT_EQ(parsePadding("SAME"), Padding::Same);
  EXPECT_EQ(parsePadding("VALID"), Padding::Valid);
  EXPECT_FALSE(parsePadding("same"));
  expectDims(
      conv2d({U, 28, 28, 1}, {5, 5, 1, 20}, {1, 1}, {1, 1}, Padding::Valid),
      {U, 24, 24, 20});
  expectDims(
      conv2d({2, 28, 28, 3}, {3, 3, 3, 8}, {2, 2}, {1, 1}, Padding::Same),
      {2, 14, 14, 8});
  expectDims(
      conv2d({1, 10, 10, 1}, {3, 3, 1, 1}, {1, 1}, {2, 2}, Padding::Valid),
      {1, 6, 6, 1});
  expectDims(conv2d({U, U, U, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, Padding::Valid),
             {U, U, U, 4});
  expectError(
      conv2d({28, 28, 1}, {5, 5, 1, 20}, {1, 1}, {1, 1}, Padding::Valid),
      "NHWC");
  expectError(
      conv2d({1, 28, 28, 1}, {5, 5, 20}, {1, 1}, {1, 1}, Padding::Valid),
      "HWIO");
  expectError(
      conv2d({1, 28, 28, 3}, {5, 5, 1, 20}, {1, 1}, {1, 1}, Padding::Valid),
      "input channels 3");
  expectError(
      conv2d({1, 28, 28, 1}, {5, 5, 1, 20}, {1}, {1, 1}, Padding::Valid),
      "strides must have 2 values");
  expectError(
      conv2d({1, 28, 28, 1}, {5, 5, 1, 20}, {0, 1}, {1, 1}, Padding::Valid),
      "strides must be positive");
  expectError(
      conv2d({1, 28, 28, 1}, {5, 5, 1, 20}, {1, 1}, {1, 1, 1}, Padding::Valid),
      "dilations");
  expectError(
      conv2d({1, 3, 3, 1}, {5, 5, 1, 20}, {1, 1}, {1, 1}, Padding::Valid),
      "larger than input");
  expectError(
      conv2d({1, 8, 8, 1}, {U, 5, 1, 20}, {1, 1}, {1, 1}, Padding::Valid),
      "spatial size must be known");

  expectDims(pool2d({U, 24, 24, 20}, {2, 2}, {2, 2}, Padding::Valid),
             {U, 12, 12, 20});
  expectDims(pool2d({1, 5, 5, 1}, {2, 2}, {2, 2}, Padding::Same), {1, 3, 3, 1});
  expectError(pool2d({24, 24, 20}, {2, 2}, {2, 2}, Padding::Valid), "NHWC");
  expectError(pool2d({1, 4, 4, 1}, {2}, {2, 2}, Padding::Valid), "ksize");
  expectError(pool2d({1, 4, 4, 1}, {2, 2}, {2, -1}, Padding::Valid), "strides");
  expectError(pool2d({1, 1, 1, 1}, {2, 2}, {1, 1}, Padding::Valid),
              "larger than input");

  // The gradients recover the forward operand's shape and check the forward
  // result against the incoming gradient.
  expectDims(conv2dBackpropInput({U, 14, 14, 8}, {3, 3, 3, 8}, {28, 27}, {2, 2},
                                 {1, 1}, Padding::Same),
             {U, 28, 27, 3});
  expectDims(conv2dBackpropFilter({U, 10, 10, 1}, {U, 6, 6, 4}, {3, 3}, {1, 1},
                                  {2, 2}, Padding::Valid),
             {3, 3, 1, 4});
  expectDims(
      maxPoolGrad({U, 5, 5, 2}, {U, 3, 3, 2}, {2, 2}, {2, 2}, Padding::Same),
      {U, 5, 5, 2});
  expectDims(avgPoolGrad({7, 3, 3, 2}, {5, 6}, {2, 2}, {2, 2}, Padding::Same),
             {7, 5, 6, 2});
  expectError(conv2dBackpropInput({U, 13, 14, 8}, {3, 3, 3, 8}, {28, 28},
                                  {2, 2}, {1, 1}, Padding::Same),
              "grad_output [?,13,14,8] does not match the forward result "
              "[?,14,14,8]");
  expectError(conv2dBackpropInput({U, 14, 14, 8}, {3, 3, 3, 8}, {28}, {2, 2},
                                  {1, 1}, Padding::Same),
              "input_size must have 2 values");
  expectError(conv2dBackpropFilter({U, 10, 10, 1}, {U, 6, 6, 4}, {3, 3}, {1},
                                   {2, 2}, Padding::Valid),
              "conv2d_backprop_filter: strides must have 2 values");
  expectError(
      maxPoolGrad({U, 5, 5, 2}, {U, 3, 3, 3}, {2, 2}, {2, 2}, Padding::Same),
      "max_pool_grad grad_output");
  expectError(avgPoolGrad({3, 3, 2}, {5, 6}, {2, 2}, {2, 2}, Padding::Same),
              "NHWC");

  EXPECT_EQ(convOutputSize(28, 5, 1, 1, Padding::Valid), 24);
  EXPECT_EQ(convOutputSize(28, 5, 2, 1, Padding::Same), 14);
  EXPECT_EQ(convOutputSize(U, 5, 1, 1, Padding::Same), U);
  EXPECT_EQ(convPadBefore(28, 5, 1, 1, Padding::Same), 2);
  EXPECT_EQ(convPadBefore(28, 5, 1, 1, Padding::Valid), 0);
  EXPECT_EQ(convPadBefore(5, 2, 2, 1, Padding::Same), 0);
}

TEST(ShapeFunctions, DepthwiseConv2d) {
  // Output channels C * M; SAME / VALID sizes as conv2d's.
  expectDims(depthwiseConv2d({U, 9, 8, 3}, {3, 3, 3, 2}, {2, 2}, {1, 1},
                             Padding::Same),
             {U, 5, 4, 6});
  expectDims(depthwiseConv2d({2, 7, 6, 4}, {2, 3, 4, 1}, {1, 1}, {2, 1},
                             Padding::Valid),
             {2, 5, 4, 4});
  expectDims(depthwiseConv2d({U, 8, 8, U}, {3, 3, 4, 2}, {1, 1}, {1, 1},
                             Padding::Same),
             {U, 8, 8, 8});
  expectError(depthwiseConv2d({U, 8, 8, 4}, {3, 3, 3, 1}, {1, 1}, {1, 1},
                              Padding::Same),
              "depthwise_conv2d input channels 4 do not match filter input "
              "channels 3");
  expectError(
      depthwiseConv2d({U, 8, 8}, {3, 3, 3, 1}, {1, 1}, {1, 1}, Padding::Same),
      "depthwise_conv2d input must be NHWC (rank 4)");
  expectError(depthwiseConv2d({U, 2, 8, 4}, {3, 3, 4, 1}, {1, 1}, {1, 1},
                              Padding::Valid),
              "VALID window 3 is larger than input [?,2,8,4]");
  expectError(
      depthwiseConv2d({U, 8, 8, 4}, {3, 3, 4, 1}, {1}, {1, 1}, Padding::Same),
      "strides must have 2 values");
  // The gradients recover the forward operand and check the forward result.
  expectDims(depthwiseConv2dBackpropInput({U, 5, 4, 6}, {3, 3, 3, 2}, {9, 8},
                                          {2, 2}, {1, 1}, Padding::Same),
             {U, 9, 8, 3});
  expectDims(depthwiseConv2dBackpropFilter({U, 9, 8, 3}, {U, 5, 4, 6}, {3, 3},
                                           {2, 2}, {1, 1}, Padding::Same),
             {3, 3, 3, 2});
  expectError(depthwiseConv2dBackpropInput({U, 4, 4, 6}, {3, 3, 3, 2}, {9, 8},
                                           {2, 2}, {1, 1}, Padding::Same),
              "depthwise_conv2d_backprop_input grad_output [?,4,4,6] does not "
              "match the forward result [?,5,4,6]");
  expectError(depthwiseConv2dBackpropFilter({U, 9, 8, 4}, {U, 5, 4, 6}, {3, 3},
                                            {2, 2}, {1, 1}, Padding::Same),
              "grad_output channels 6 must be a known multiple of the "
              "input's 4");
  expectError(depthwiseConv2dBackpropFilter({U, 9, 8, 3}, {U, 5, 4, 6}, {3},
                                            {2, 2}, {1, 1}, Padding::Same),
              "filter_size must have 2 values");
}

TEST(ShapeFunctions, Reduce) {
  expectDims(reduce({U, 10}, std::nullopt, false), {});
  expectDims(reduce({U, 10}, std::nullopt, true), {1, 1});
  expectDims(estc::shape::reduce({U, 10}, Dims{1}, false), {U});
  expectDims(estc::shape::reduce({2, 3, 4}, Dims{-1, 0}, true), {1, 3, 1});
  expectError(estc::shape::reduce({2, 3}, Dims{2}, false), "out of range");
  expectError(estc::shape::reduce({2, 3}, Dims{1, -1}, false), "repeated");
  expectDims(argReduce({U, 10}, 1), {U});
  expectDims(argReduce({U, 10}, -1), {U});
  expectError(argReduce({U, 10}, 2), "out of range");
}

TEST(ShapeFunctions, ReshapeTranspose) {
  expectDims(reshape({U, 4, 4, 40}, {-1, 640}), {-1, 640});
  expectDims(reshape({2, 3, 4}, {-1, 4}), {6, 4});
  expectDims(reshape({2, 3}, {3, 2}), {3, 2});
  expectError(reshape({2, 3}, {-1, -1}), "more than one -1");
  expectError(reshape({2, 3}, {-2, 3}), "negative");
  expectError(reshape({2, 3}, {-1, 4}), "cannot reshape");
  expectError(reshape({2, 3}, {7}), "6 elements");
  expectDims(transpose({U, 3, 5}, {2, 0, 1}), {5, U, 3});
  expectError(transpose({2, 3}, {0}), "does not match rank");
  expectError(transpose({2, 3}, {0, 0}), "not a permutation");
}

TEST(ShapeFunctions, ConcatSlicePad) {
  expectDims(concat({{U, 1}, {U, 1}, {U, 2}}, 1), {U, 4});
  expectError(concat({{2, 3}, {U, 3}}, 0), "run-time size (the batch)");
  expectError(concat({{U, 3}, {U, 3}}, 0), "run-time size (the batch)");
  expectDims(concat({{U, 3}}, 0), {U, 3});
  expectDims(concat({{U, 3}, {4, 3}}, 1), {4, 6});
  expectError(concat({}, 0), "at least one");
  expectError(concat({{2, 3}}, 2), "out of range");
  expectError(concat({{2, 3}, {2}}, 0), "different ranks");
  expectError(concat({{2, 3}, {2, 4}}, 0), "differ outside axis");

  expectDims(slice({10, 20}, {2, 0}, {3, -1}), {3, 20});
  expectDims(slice({U, 20}, {0, 5}, {-1, 5}), {U, 5});
  expectError(slice({10, 20}, {0}, {1, 1}), "must both have rank");
  expectError(slice({10, 20}, {-1, 0}, {1, 1}), "negative");
  expectError(slice({10, 20}, {0, 0}, {-2, 1}), "invalid");
  expectError(slice({10, 20}, {8, 0}, {3, 1}), "out of bounds");

  expectDims(pad({U, 28, 28, 1}, {0, 0, 2, 2, 2, 2, 0, 0}), {U, 32, 32, 1});
  expectError(pad({2, 2}, {1, 1}), "2 * rank");
  expectError(pad({2, 2}, {1, -1, 0, 0}), "non-negative");
}

TEST(ShapeFunctions, SqueezeExpand) {
  expectDims(squeeze({U, 1, 3, 1}, std::nullopt), {U, 3});
  expectDims(squeeze({U, 1, 3, 1}, Dims{-1}), {U, 1, 3});
  expectError(squeeze({U, 1, 3}, Dims{2}), "size is not 1");
  expectError(squeeze({U, 1, 3}, Dims{0}), "size is not 1");
  expectError(squeeze({1}, Dims{3}), "out of range");
  expectDims(expandDims({U, 3}, 0), {1, U, 3});
  expectDims(expandDims({U, 3}, -1), {U, 3, 1});
  expectDims(expandDims({}, 0), {1});
  expectError(expandDims({U, 3}, 3), "out of range");
  expectDims(reverse({U, 3, 4}, {0, -1}), {U, 3, 4});
  expectDims(reverse({U, 3}, {}), {U, 3});
  expectError(reverse({U, 3}, {2}), "axis 2 is out of range for rank 2");
  expectError(reverse({U, 3}, {1, -1}), "axis -1 is repeated");
}

TEST(ShapeFunctions, Indexing) {
  expectDims(gather({1000, 64}, {U, 5}, 0), {U, 5, 64});
  expectDims(gather({4, 10, 3}, {7}, 1), {4, 7, 3});
  expectDims(gather({4, 10}, {}, -1), {4});
  expectError(gather({4, 10}, {3}, 2), "out of range");
  expectDims(oneHot({U}, 10, -1), {U, 10});
  expectDims(oneHot({U}, 10, 0), {10, U});
  expectError(oneHot({U}, 0, -1), "depth must be positive");
  expectError(oneHot({U}, 5, 2), "out of range");
  // unsorted_segment_sum: dim 0 comes from the third operand, not from data.
  expectDims(unsortedSegmentSum({7, 3}, {7}, {4, 2}), {4, 3});
  expectDims(unsortedSegmentSum({U, 3, 2}, {U}, {5}), {5, 3, 2});
  expectDims(unsortedSegmentSum({7}, {7}, {U, 9}), {U});
  expectError(unsortedSegmentSum({}, {1}, {4}), "data must have rank >= 1");
  expectError(unsortedSegmentSum({7, 3}, {7, 1}, {4}),
              "segment_ids must have rank 1");
  expectError(unsortedSegmentSum({7, 3}, {6}, {4}), "one id per row of data");
  expectError(unsortedSegmentSum({7, 3}, {7}, {}),
              "num_segments_like must have rank >= 1");
}

TEST(ShapeFunctions, Losses) {
  expectDims(softmaxCrossEntropy({U, 10}, {U, 10}), {U});
  expectDims(softmaxCrossEntropy({U, 10}, {32, 10}), {32});
  expectError(softmaxCrossEntropy({}, {}), "rank >= 1");
  expectError(softmaxCrossEntropy({U, 10}, {U}), "must have the shape");
  expectError(softmaxCrossEntropy({U, 10}, {U, 9}), "must have the shape");
  expectDims(sparseSoftmaxCrossEntropy({U, 10}, {U}), {U});
  expectDims(sparseSoftmaxCrossEntropy({U, 10}, {16}), {16});
  expectError(sparseSoftmaxCrossEntropy({}, {}), "rank >= 1");
  expectError(sparseSoftmaxCrossEntropy({U, 10}, {U, 10}),
              "without its last dimension");
  expectError(sparseSoftmaxCrossEntropy({8, 10}, {4}), "do not match");
}

TEST(ShapeFunctions, LayerNormAndAttentionSoftmax) {
  expectDims(layerNorm({U, 5, 8}, {8}, {8}, -1, -1), {U, 5, 8});
  expectDims(layerNorm({U, 5, 8}, {8}, {U}, 1, 2), {U, 5, 8});
  expectDims(layerNorm({U, 5, 8}, {5, 8}, {5, 8}, 1, 1), {U, 5, 8});
  expectDims(layerNorm({3, 4}, {3, 4}, {3, 4}, 0, 0), {3, 4});
  expectError(layerNorm({}, {}, {}, -1, -1), "rank >= 1");
  expectError(layerNorm({U, 8}, {8}, {8}, 2, -1),
              "begin_norm_axis 2 is out of range for rank 2");
  expectError(layerNorm({U, 8}, {8}, {8}, -1, -3),
              "begin_params_axis -3 is out of range");
  expectError(layerNorm({U, 5, 8}, {5, 8}, {5, 8}, 2, 1),
              "must not come before begin_norm_axis");
  expectError(layerNorm({U, 5, 8}, {8}, {7}, -1, -1),
              "beta [7] must have the shape [8]");
  expectError(layerNorm({U, 5, 8}, {5, 8}, {5, 8}, -1, -1),
              "gamma [5,8] must have the shape [8]");

  expectDims(attentionSoftmax({U, 4, 6, 7}, std::nullopt), {U, 4, 6, 7});
  expectDims(attentionSoftmax({U, 4, 6, 7}, Dims{U, 1, 6, 7}), {U, 4, 6, 7});
  expectDims(attentionSoftmax({U, 4, 6, 7}, Dims{1, 1, 1, 7}), {U, 4, 6, 7});
  expectError(attentionSoftmax({7}, std::nullopt), "rank >= 2");
  expectError(attentionSoftmax({U, 4, 6, 7}, Dims{U, 6, 7}),
              "must have the rank of logits");
  expectError(attentionSoftmax({U, 4, 6, 7}, Dims{U, 2, 6, 7}),
              "each dim 1 or logits'");
}
