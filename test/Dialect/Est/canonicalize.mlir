// RUN: estc-opt %s --canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @double_neg
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
func.func @double_neg(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = est.neg %x : tensor<?x4xf32>
  %1 = est.neg %0 : tensor<?x4xf32>
  // CHECK-NOT: est.neg
  // CHECK: return %[[X]]
  return %1 : tensor<?x4xf32>
}

// -----

// neg(neg(x)) stays when x does not have the result's type.
// CHECK-LABEL: func.func @double_neg_refined
func.func @double_neg_refined(%x: tensor<2x4xf32>) -> tensor<?x4xf32> {
  // CHECK: est.neg
  // CHECK: est.neg
  %0 = est.neg %x : tensor<2x4xf32> -> tensor<?x4xf32>
  %1 = est.neg %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// A single neg stays.
// CHECK-LABEL: func.func @single_neg
func.func @single_neg(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: est.neg
  %0 = est.neg %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @double_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x784xf32>)
func.func @double_reshape(%x: tensor<?x784xf32>) -> tensor<?x28x28xf32> {
  // CHECK: %[[R:.*]] = est.reshape %[[X]] {shape = array<i64: -1, 28, 28>} : tensor<?x784xf32> -> tensor<?x28x28xf32>
  // CHECK-NOT: est.reshape
  // CHECK: return %[[R]]
  %0 = est.reshape %x {shape = array<i64: -1, 28, 28, 1>} : tensor<?x784xf32> -> tensor<?x28x28x1xf32>
  %1 = est.reshape %0 {shape = array<i64: -1, 28, 28>} : tensor<?x28x28x1xf32> -> tensor<?x28x28xf32>
  return %1 : tensor<?x28x28xf32>
}

// -----

// CHECK-LABEL: func.func @double_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @double_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // CHECK: %[[T:.*]] = est.transpose %[[X]] {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  // CHECK-NOT: est.transpose
  // CHECK: return %[[T]]
  %0 = est.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = est.transpose %0 {perm = array<i64: 0, 2, 1>} : tensor<3x4x2xf32> -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// -----

// Two transposes that cancel fold away entirely.
// CHECK-LABEL: func.func @inverse_transposes
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
func.func @inverse_transposes(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %0 = est.transpose %x {perm = array<i64: 1, 0>} : tensor<?x10xf32> -> tensor<10x?xf32>
  %1 = est.transpose %0 {perm = array<i64: 1, 0>} : tensor<10x?xf32> -> tensor<?x10xf32>
  // CHECK-NOT: est.transpose
  // CHECK: return %[[X]]
  return %1 : tensor<?x10xf32>
}

// -----

// CHECK-LABEL: func.func @static_squeeze_expand
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<4xf32>)
func.func @static_squeeze_expand(%x: tensor<4x1xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<1x4xf32>) {
  // CHECK-DAG: est.reshape %[[X]] {shape = array<i64: 4>} : tensor<4x1xf32> -> tensor<4xf32>
  // CHECK-DAG: est.reshape %[[Y]] {shape = array<i64: 1, 4>} : tensor<4xf32> -> tensor<1x4xf32>
  // CHECK-NOT: est.squeeze
  // CHECK-NOT: est.expand_dims
  %0 = est.squeeze %x : tensor<4x1xf32> -> tensor<4xf32>
  %1 = est.expand_dims %y {axis = 0 : i64} : tensor<4xf32> -> tensor<1x4xf32>
  return %0, %1 : tensor<4xf32>, tensor<1x4xf32>
}

// -----

// With a dynamic dimension they stay.
// CHECK-LABEL: func.func @dynamic_squeeze_expand
func.func @dynamic_squeeze_expand(%x: tensor<?x1xf32>) -> (tensor<?xf32>, tensor<?x1x1xf32>) {
  // CHECK: est.squeeze
  // CHECK: est.expand_dims
  %0 = est.squeeze %x {axes = array<i64: 1>} : tensor<?x1xf32> -> tensor<?xf32>
  %1 = est.expand_dims %x {axis = 1 : i64} : tensor<?x1xf32> -> tensor<?x1x1xf32>
  return %0, %1 : tensor<?xf32>, tensor<?x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @select_constant_condition
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
func.func @select_constant_condition(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = est.constant dense<true> : tensor<4xi1>
  %f = est.constant dense<false> : tensor<i1>
  %0 = est.select %t, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = est.select %f, %a, %b : tensor<i1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  // CHECK-NOT: est.select
  // CHECK: return %[[A]], %[[B]]
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The chosen side would need a broadcast: the select stays.
// CHECK-LABEL: func.func @select_needs_broadcast
func.func @select_needs_broadcast(%a: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %t = est.constant dense<true> : tensor<4xi1>
  // CHECK: est.select
  %0 = est.select %t, %a, %b : tensor<4xi1>, tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// stop_gradient is kept: autodiff needs it.
// CHECK-LABEL: func.func @stop_gradient_kept
func.func @stop_gradient_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: est.stop_gradient
  %0 = est.stop_gradient %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
