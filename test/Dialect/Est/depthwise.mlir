// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of est.depthwise_conv2d and its two gradients (strides and
// dilations default to 1 and are elided): the output has C * M channels,
// the filter gradient M = grad_output's channels / C.

// CHECK-LABEL: func.func @depthwise
// CHECK: %[[Y:.*]] = est.depthwise_conv2d %arg0, %arg1 {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x9x8x3xf32>, tensor<3x3x3x2xf32> -> tensor<?x5x4x6xf32>
// CHECK: %[[DX:.*]] = est.depthwise_conv2d_backprop_input %[[Y]], %arg1 {input_size = array<i64: 9, 8>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x5x4x6xf32>, tensor<3x3x3x2xf32> -> tensor<?x9x8x3xf32>
// CHECK: %[[DW:.*]] = est.depthwise_conv2d_backprop_filter %arg0, %[[Y]] {filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x9x8x3xf32>, tensor<?x5x4x6xf32> -> tensor<3x3x3x2xf32>
// CHECK: return %[[DX]], %[[DW]]
func.func @depthwise(%x: tensor<?x9x8x3xf32>, %w: tensor<3x3x3x2xf32>) -> (tensor<?x9x8x3xf32>, tensor<3x3x3x2xf32>) {
  %y = est.depthwise_conv2d %x, %w {dilations = array<i64: 1, 1>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x9x8x3xf32>, tensor<3x3x3x2xf32> -> tensor<?x5x4x6xf32>
  %dx = est.depthwise_conv2d_backprop_input %y, %w {input_size = array<i64: 9, 8>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x5x4x6xf32>, tensor<3x3x3x2xf32> -> tensor<?x9x8x3xf32>
  %dw = est.depthwise_conv2d_backprop_filter %x, %y {filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x9x8x3xf32>, tensor<?x5x4x6xf32> -> tensor<3x3x3x2xf32>
  return %dx, %dw : tensor<?x9x8x3xf32>, tensor<3x3x3x2xf32>
}

// CHECK-LABEL: func.func @valid_dilated_f64
// CHECK: est.depthwise_conv2d %arg0, %arg1 {dilations = array<i64: 2, 1>, padding = "VALID"} : tensor<2x7x6x4xf64>, tensor<2x3x4x1xf64> -> tensor<2x5x4x4xf64>
func.func @valid_dilated_f64(%x: tensor<2x7x6x4xf64>, %w: tensor<2x3x4x1xf64>) -> tensor<2x5x4x4xf64> {
  %y = est.depthwise_conv2d %x, %w {dilations = array<i64: 2, 1>, padding = "VALID"} : tensor<2x7x6x4xf64>, tensor<2x3x4x1xf64> -> tensor<2x5x4x4xf64>
  return %y : tensor<2x5x4x4xf64>
}
