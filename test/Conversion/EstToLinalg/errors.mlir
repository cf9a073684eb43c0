// RUN: estc-opt %s --split-input-file --convert-est-to-linalg -verify-diagnostics

est.variable @w : tensor<2xf32> {trainable}
func.func @minimize(%x: tensor<2xf32>) {
  %w = est.read_variable @w : tensor<2xf32>
  %0 = est.mul %x, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %l = est.reduce_sum %0 : tensor<2xf32> -> tensor<f32>
  // expected-error @+1 {{'est.minimize' op est.minimize must be expanded by the training pass first}}
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

func.func @composite(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  // expected-error @+1 {{'est.softmax' op is a composite op: run est-decompose before convert-est-to-linalg}}
  %0 = est.softmax %x : tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// -----

func.func @dynamic_spatial(%x: tensor<?x?x?x1xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<?x?x?x4xf32> {
  // expected-error @+1 {{'est.conv2d' op needs static spatial input dimensions and a static filter}}
  %0 = est.conv2d %x, %w {padding = "SAME"} : tensor<?x?x?x1xf32>, tensor<3x3x1x4xf32> -> tensor<?x?x?x4xf32>
  return %0 : tensor<?x?x?x4xf32>
}

// -----

func.func @dynamic_reshape(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'est.reshape' op reshape to more than one dynamic dimension is not supported}}
  %0 = est.reshape %x {shape = array<i64: -1, 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Only the first op that cannot be lowered is reported, with its own reason.
func.func @first_error_reason(%x: tensor<?x?xf32>, %i: tensor<?x?x?x1xf32>, %w: tensor<3x3x1x4xf32>) -> (tensor<?x?xf32>, tensor<?x?x?x4xf32>) {
  %0 = est.relu %x : tensor<?x?xf32>
  // expected-error @+1 {{'est.reshape' op reshape to more than one dynamic dimension is not supported}}
  %1 = est.reshape %0 {shape = array<i64: -1, 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %2 = est.conv2d %i, %w {padding = "SAME"} : tensor<?x?x?x1xf32>, tensor<3x3x1x4xf32> -> tensor<?x?x?x4xf32>
  return %1, %2 : tensor<?x?xf32>, tensor<?x?x?x4xf32>
}

// -----

func.func @first_error_no_pattern(%x: tensor<?x10xf32>, %i: tensor<?x?x?x1xf32>, %w: tensor<3x3x1x4xf32>) -> (tensor<?x?x?x4xf32>, tensor<?x10xf32>) {
  // expected-error @+1 {{'est.softmax' op is a composite op: run est-decompose before convert-est-to-linalg}}
  %0 = est.softmax %x : tensor<?x10xf32>
  %1 = est.conv2d %i, %w {padding = "SAME"} : tensor<?x?x?x1xf32>, tensor<3x3x1x4xf32> -> tensor<?x?x?x4xf32>
  return %1, %0 : tensor<?x?x?x4xf32>, tensor<?x10xf32>
}
