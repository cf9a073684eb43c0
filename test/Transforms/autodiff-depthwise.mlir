// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// depthwise_conv2d's gradients are depthwise_conv2d_backprop_input and
// _filter with the forward attributes, at a run-time batch; the forward
// input's spatial size becomes input_size, the filter's filter_size.

est.variable @w : tensor<3x3x2x2xf32> {trainable}
est.variable @v : tensor<1x7x6x2xf32> {trainable}

// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x7x6x2xf32>)
func.func @train(%x: tensor<?x7x6x2xf32>) {
  %w = est.read_variable @w : tensor<3x3x2x2xf32>
  %v = est.read_variable @v : tensor<1x7x6x2xf32>
  // CHECK: %[[A:.*]] = est.mul
  %a = est.mul %x, %v : tensor<?x7x6x2xf32>, tensor<1x7x6x2xf32> -> tensor<?x7x6x2xf32>
  %y = est.depthwise_conv2d %a, %w {dilations = array<i64: 1, 2>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x7x6x2xf32>, tensor<3x3x2x2xf32> -> tensor<?x4x6x4xf32>
  %loss = est.reduce_sum %y : tensor<?x4x6x4xf32> -> tensor<f32>
  // CHECK: %[[G:.*]] = est.mul %{{.*}}, %{{.*}} : tensor<1x1x1x1xf32>, tensor<?x4x6x4xf32> -> tensor<?x4x6x4xf32>
  // CHECK-DAG: %[[DA:.*]] = est.depthwise_conv2d_backprop_input %[[G]], %{{.*}} {dilations = array<i64: 1, 2>, input_size = array<i64: 7, 6>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x4x6x4xf32>, tensor<3x3x2x2xf32> -> tensor<?x7x6x2xf32>
  // CHECK-DAG: %[[DW:.*]] = est.depthwise_conv2d_backprop_filter %[[A]], %[[G]] {dilations = array<i64: 1, 2>, filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x7x6x2xf32>, tensor<?x4x6x4xf32> -> tensor<3x3x2x2xf32>
  // CHECK: %[[DV:.*]] = est.mul %[[DA]], %[[X]] :
  // CHECK: est.apply_gradients "sgd" {{.*}} [@w, @v] %[[DW]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
