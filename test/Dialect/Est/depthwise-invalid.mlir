// RUN: estc-opt %s --split-input-file --verify-diagnostics

// est.depthwise_conv2d and its gradients refuse operands their shape rules
// (lib/Shape: depthwiseConv2d, ...BackpropInput, ...BackpropFilter) reject.

func.func @channels(%x: tensor<?x8x8x4xf32>, %w: tensor<3x3x3x1xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d' op depthwise_conv2d input channels 4 do not match filter input channels 3 (input [?,8,8,4], filter [3,3,3,1])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d %x, %w {padding = "SAME"} : tensor<?x8x8x4xf32>, tensor<3x3x3x1xf32> -> tensor<?x8x8x4xf32>
  return
}

// -----

func.func @result(%x: tensor<?x8x8x4xf32>, %w: tensor<3x3x4x2xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d' op inferred type(s) 'tensor<?x8x8x8xf32>' are incompatible with return type(s) of operation 'tensor<?x8x8x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d %x, %w {padding = "SAME"} : tensor<?x8x8x4xf32>, tensor<3x3x4x2xf32> -> tensor<?x8x8x4xf32>
  return
}

// -----

func.func @window(%x: tensor<?x2x8x4xf32>, %w: tensor<3x3x4x1xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d' op depthwise_conv2d VALID window 3 is larger than input [?,2,8,4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d %x, %w {padding = "VALID"} : tensor<?x2x8x4xf32>, tensor<3x3x4x1xf32> -> tensor<?x0x6x4xf32>
  return
}

// -----

func.func @padding(%x: tensor<?x8x8x4xf32>, %w: tensor<3x3x4x1xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d' op padding must be "SAME" or "VALID", got "FULL"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d %x, %w {padding = "FULL"} : tensor<?x8x8x4xf32>, tensor<3x3x4x1xf32> -> tensor<?x8x8x4xf32>
  return
}

// -----

func.func @backprop_input_mismatch(%dy: tensor<?x4x4x4xf32>, %w: tensor<3x3x4x1xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d_backprop_input' op depthwise_conv2d_backprop_input grad_output [?,4,4,4] does not match the forward result [?,8,8,4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d_backprop_input %dy, %w {input_size = array<i64: 8, 8>, padding = "SAME"} : tensor<?x4x4x4xf32>, tensor<3x3x4x1xf32> -> tensor<?x8x8x4xf32>
  return
}

// -----

func.func @backprop_filter_channels(%x: tensor<?x8x8x4xf32>, %dy: tensor<?x8x8x6xf32>) {
  // expected-error @+2 {{'est.depthwise_conv2d_backprop_filter' op depthwise_conv2d_backprop_filter grad_output channels 6 must be a known multiple of the input's 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.depthwise_conv2d_backprop_filter %x, %dy {filter_size = array<i64: 3, 3>, padding = "SAME"} : tensor<?x8x8x4xf32>, tensor<?x8x8x6xf32> -> tensor<3x3x4x1xf32>
  return
}

// -----

func.func @backprop_filter_missing_size(%x: tensor<?x8x8x4xf32>, %dy: tensor<?x8x8x4xf32>) {
  // expected-error @+1 {{'est.depthwise_conv2d_backprop_filter' op requires attribute 'filter_size'}}
  %0 = "est.depthwise_conv2d_backprop_filter"(%x, %dy) {padding = "SAME"} : (tensor<?x8x8x4xf32>, tensor<?x8x8x4xf32>) -> tensor<3x3x4x1xf32>
  return
}
