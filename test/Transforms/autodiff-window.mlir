// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// The gradients of conv2d, max_pool and avg_pool are the dedicated gradient
// ops, at a run-time batch: the forward attributes carry over, the forward
// operand's spatial size becomes input_size / filter_size.

est.variable @w : tensor<3x3x2x4xf32> {trainable}

// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x5x6x2xf32>)
func.func @train(%x: tensor<?x5x6x2xf32>) {
  // CHECK: %[[W:.*]] = est.read_variable @w
  %w = est.read_variable @w : tensor<3x3x2x4xf32>
  %y = est.conv2d %x, %w {dilations = array<i64: 1, 2>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x5x6x2xf32>, tensor<3x3x2x4xf32> -> tensor<?x3x6x4xf32>
  %loss = est.reduce_sum %y : tensor<?x3x6x4xf32> -> tensor<f32>
  // The input is not a variable: only the filter gradient is left.
  // CHECK-NOT: est.conv2d_backprop_input
  // CHECK: %[[G:.*]] = est.mul %{{.*}}, %{{.*}} : tensor<1x1x1x1xf32>, tensor<?x3x6x4xf32> -> tensor<?x3x6x4xf32>
  // CHECK: %[[DW:.*]] = est.conv2d_backprop_filter %[[X]], %[[G]] {dilations = array<i64: 1, 2>, filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x5x6x2xf32>, tensor<?x3x6x4xf32> -> tensor<3x3x2x4xf32>
  // CHECK: est.apply_gradients "sgd" {{.*}} [@w] %[[DW]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

est.variable @w : tensor<3x3x2x4xf32> {trainable}
est.variable @v : tensor<1x5x6x2xf32> {trainable}

// Both conv2d gradients; max_pool and avg_pool before and after it.
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x5x6x2xf32>)
func.func @train(%x: tensor<?x5x6x2xf32>) {
  %w = est.read_variable @w : tensor<3x3x2x4xf32>
  %v = est.read_variable @v : tensor<1x5x6x2xf32>
  // CHECK: %[[A:.*]] = est.mul
  %a = est.mul %x, %v : tensor<?x5x6x2xf32>, tensor<1x5x6x2xf32> -> tensor<?x5x6x2xf32>
  // CHECK: %[[P:.*]] = est.max_pool %[[A]]
  %p = est.max_pool %a {ksize = array<i64: 2, 2>, padding = "SAME", strides = array<i64: 1, 1>} : tensor<?x5x6x2xf32> -> tensor<?x5x6x2xf32>
  %y = est.conv2d %p, %w {padding = "VALID"} : tensor<?x5x6x2xf32>, tensor<3x3x2x4xf32> -> tensor<?x3x4x4xf32>
  %q = est.avg_pool %y {ksize = array<i64: 2, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x4x4xf32> -> tensor<?x2x2x4xf32>
  %loss = est.reduce_sum %q : tensor<?x2x2x4xf32> -> tensor<f32>
  // CHECK: %[[DQ:.*]] = est.avg_pool_grad %{{.*}} {input_size = array<i64: 3, 4>, ksize = array<i64: 2, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x2x2x4xf32> -> tensor<?x3x4x4xf32>
  // CHECK-DAG: %[[DP:.*]] = est.conv2d_backprop_input %[[DQ]], %{{.*}} {input_size = array<i64: 5, 6>, padding = "VALID"} : tensor<?x3x4x4xf32>, tensor<3x3x2x4xf32> -> tensor<?x5x6x2xf32>
  // CHECK-DAG: %[[DW:.*]] = est.conv2d_backprop_filter %[[P]], %[[DQ]] {filter_size = array<i64: 3, 3>, padding = "VALID"} : tensor<?x5x6x2xf32>, tensor<?x3x4x4xf32> -> tensor<3x3x2x4xf32>
  // CHECK: %[[DA:.*]] = est.max_pool_grad %[[A]], %[[DP]] {ksize = array<i64: 2, 2>, padding = "SAME", strides = array<i64: 1, 1>} : tensor<?x5x6x2xf32>, tensor<?x5x6x2xf32> -> tensor<?x5x6x2xf32>
  // CHECK: %[[DV:.*]] = est.mul %[[DA]], %[[X]] :
  // CHECK: %[[RV:.*]] = est.reduce_sum %[[DV]] {axes = array<i64: 0>, keep_dims = true}
  // CHECK: est.apply_gradients "sgd" {{.*}} [@w, @v] %[[DW]], %[[RV]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

est.variable @w : tensor<3x3x2x4xf32> {trainable}
est.variable @v : tensor<1x3x3x4xf32> {trainable}

// conv2d_backprop_input as a forward op (tf.nn.conv2d_transpose): its
// grad_output gets conv2d of the gradient, its filter
// conv2d_backprop_filter(gradient, grad_output), with the op's attributes.
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x3x4xf32>)
func.func @train(%x: tensor<?x3x3x4xf32>) {
  %w = est.read_variable @w : tensor<3x3x2x4xf32>
  %v = est.read_variable @v : tensor<1x3x3x4xf32>
  // CHECK: %[[A:.*]] = est.mul
  %a = est.mul %x, %v : tensor<?x3x3x4xf32>, tensor<1x3x3x4xf32> -> tensor<?x3x3x4xf32>
  %y = est.conv2d_backprop_input %a, %w {input_size = array<i64: 6, 5>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x4xf32>, tensor<3x3x2x4xf32> -> tensor<?x6x5x2xf32>
  %loss = est.reduce_sum %y : tensor<?x6x5x2xf32> -> tensor<f32>
  // CHECK: %[[G:.*]] = est.mul %{{.*}}, %{{.*}} : tensor<1x1x1x1xf32>, tensor<?x6x5x2xf32> -> tensor<?x6x5x2xf32>
  // CHECK-DAG: %[[DA:.*]] = est.conv2d %[[G]], %{{.*}} {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x6x5x2xf32>, tensor<3x3x2x4xf32> -> tensor<?x3x3x4xf32>
  // CHECK-DAG: %[[DW:.*]] = est.conv2d_backprop_filter %[[G]], %[[A]] {filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x6x5x2xf32>, tensor<?x3x3x4xf32> -> tensor<3x3x2x4xf32>
  // CHECK: %[[DV:.*]] = est.mul %[[DA]], %[[X]] :
  // CHECK: est.apply_gradients "sgd" {{.*}} [@w, @v] %[[DW]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
