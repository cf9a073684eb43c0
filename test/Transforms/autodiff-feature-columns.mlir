// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s
// RUN: estc-opt %s --split-input-file --est-autodiff 2>&1 >/dev/null | count 0

// est-autodiff of the ops feature columns train through: a train_op
// grouping two optimizers, segment sums and buckets. No warnings.

// Two minimizes over disjoint var_lists (a train_op grouping two
// optimizers): each becomes an apply_gradients of its own variables, both
// gradients computed from the forward pass (the values before the step).
// CHECK-LABEL: func.func @two_minimizes
// CHECK: %[[A:.*]] = est.read_variable @a
// CHECK: %[[B:.*]] = est.read_variable @b
// CHECK: %[[AB:.*]] = est.mul %[[A]], %[[B]]
// CHECK: %[[GA:.*]] = est.mul %{{.*}}, %[[B]]
// CHECK: est.apply_gradients "ftrl" {learning_rate = 1.000000e-01 : f64} [@a] %[[GA]] : tensor<3xf32>
// CHECK: %[[GB:.*]] = est.mul %{{.*}}, %[[A]]
// CHECK: est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@b] %[[GB]] : tensor<3xf32>
est.variable @a : tensor<3xf32> {trainable}
est.variable @b : tensor<3xf32> {trainable}

func.func @two_minimizes() {
  %a = est.read_variable @a : tensor<3xf32>
  %b = est.read_variable @b : tensor<3xf32>
  %ab = est.mul %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %loss = est.reduce_sum %ab : tensor<3xf32> -> tensor<f32>
  est.minimize %loss optimizer "ftrl" {learning_rate = 1.000000e-01 : f64} var_list [@a] : tensor<f32>
  est.minimize %loss optimizer "adagrad" {learning_rate = 1.000000e-01 : f64} var_list [@b] : tensor<f32>
  return
}

// -----

// Integer results (bucketize, argmax) are never active: a loss that also
// depends on a variable through them differentiates without a warning, the
// gradient flowing through the float path only. unsorted_segment_sum's
// data gets gather(g, segment_ids).
// CHECK-LABEL: func.func @segments_and_buckets
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[ROWS:.*]] = est.mul %[[W]], %{{.*}} : tensor<4x2xf32>
// CHECK: %[[G:.*]] = est.gather %{{.*}}, %[[IDS:.*]] : tensor<3x2xf32>, tensor<4xi64> -> tensor<4x2xf32>
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w]
est.variable @w : tensor<4x2xf32> {trainable}

func.func @segments_and_buckets(%ids: tensor<4xi64>, %like: tensor<3xi64>) {
  %w = est.read_variable @w : tensor<4x2xf32>
  %two = est.constant dense<2.0> : tensor<f32>
  %rows = est.mul %w, %two : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
  %sums = est.unsorted_segment_sum %rows, %ids, %like : tensor<4x2xf32>, tensor<4xi64>, tensor<3xi64> -> tensor<3x2xf32>
  %b = est.bucketize %w {boundaries = array<f64: 0.0, 1.0>} : tensor<4x2xf32> -> tensor<4x2xi64>
  %hot = est.one_hot %b {depth = 3 : i64} : tensor<4x2xi64> -> tensor<4x2x3xf32>
  %s1 = est.reduce_sum %sums : tensor<3x2xf32> -> tensor<f32>
  %s2 = est.reduce_sum %hot : tensor<4x2x3xf32> -> tensor<f32>
  %loss = est.add %s1, %s2 : tensor<f32>, tensor<f32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
