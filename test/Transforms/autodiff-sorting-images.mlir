// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// top_k's values (take_along_axis of argsort's indices) send their gradient
// to the selected positions: scatter_along_axis into zeros; the indices get
// none.

est.variable @x : tensor<4x10xf32> {trainable}

// CHECK-LABEL: func.func @train
func.func @train() {
  // CHECK: %[[X:.*]] = est.read_variable @x
  %x = est.read_variable @x : tensor<4x10xf32>
  // CHECK: %[[I:.*]] = est.argsort %[[X]] {direction = "DESCENDING", k = 3 : i64}
  %i = est.argsort %x {direction = "DESCENDING", k = 3 : i64} : tensor<4x10xf32> -> tensor<4x3xi32>
  %v = est.take_along_axis %x, %i : tensor<4x10xf32>, tensor<4x3xi32> -> tensor<4x3xf32>
  %loss = est.reduce_sum %v : tensor<4x3xf32> -> tensor<f32>
  // CHECK: %[[Z:.*]] = est.zeros_like %[[X]] : tensor<4x10xf32>
  // CHECK: %[[DX:.*]] = est.scatter_along_axis %[[Z]], %[[I]], %{{.*}} : tensor<4x10xf32>, tensor<4x3xi32>, tensor<4x3xf32> -> tensor<4x10xf32>
  // CHECK: est.apply_gradients "sgd" {{.*}} [@x] %[[DX]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// resize_images' gradient is resize_images_grad with the same attributes
// and the images' [H, W] as input_size.

est.variable @img : tensor<2x4x3x1xf32> {trainable}

// CHECK-LABEL: func.func @train
func.func @train() {
  %x = est.read_variable @img : tensor<2x4x3x1xf32>
  %y = est.resize_images %x {method = "nearest", size = array<i64: 8, 5>} : tensor<2x4x3x1xf32> -> tensor<2x8x5x1xf32>
  %loss = est.reduce_sum %y : tensor<2x8x5x1xf32> -> tensor<f32>
  // CHECK: %[[DX:.*]] = est.resize_images_grad %{{.*}} {input_size = array<i64: 4, 3>, method = "nearest"} : tensor<2x8x5x1xf32> -> tensor<2x4x3x1xf32>
  // CHECK: est.apply_gradients "sgd" {{.*}} [@img] %[[DX]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
