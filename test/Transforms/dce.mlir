// RUN: estc-opt %s --est-dce | FileCheck %s

// CHECK: est.variable @w
// CHECK: est.variable @total
est.variable @w : tensor<4x4xf32> {trainable}
est.variable @total : tensor<f32>

// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[STEP:.*]]: tensor<i64>)
func.func @train(%x: tensor<?x4xf32>, %step: tensor<i64>) -> tensor<?x4xf32> {
  // CHECK-NEXT: %[[W:.*]] = est.read_variable @w
  %w = est.read_variable @w : tensor<4x4xf32>
  // A chain of unused pure ops goes, whatever its length.
  // CHECK-NOT: est.exp
  // CHECK-NOT: est.tanh
  // CHECK-NOT: est.dropout
  %0 = est.exp %x : tensor<?x4xf32>
  %1 = est.tanh %0 : tensor<?x4xf32>
  %2 = est.dropout %1, %step {rate = 0.5 : f64, seed = 1 : i64} : tensor<?x4xf32>, tensor<i64> -> tensor<?x4xf32>
  // An unused read goes too.
  %unused = est.read_variable @total : tensor<f32>
  // CHECK-NEXT: %[[Y:.*]] = est.matmul %[[X]], %[[W]]
  %y = est.matmul %x, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
  // CHECK-NEXT: %[[L:.*]] = est.reduce_mean %[[Y]]
  %loss = est.reduce_mean %y : tensor<?x4xf32> -> tensor<f32>
  // Writes stay.
  // CHECK-NEXT: est.assign_variable @total, %[[L]]
  est.assign_variable @total, %loss : tensor<f32>
  // CHECK-NEXT: est.minimize %[[L]] optimizer "sgd"
  est.minimize %loss optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  // CHECK-NEXT: return %[[Y]]
  return %y : tensor<?x4xf32>
}

// Every function is cleaned.
// CHECK-LABEL: func.func @eval
func.func @eval(%x: tensor<?x4xf32>) {
  // CHECK-NEXT: return
  %0 = est.relu %x : tensor<?x4xf32>
  %1 = est.reduce_sum %0 : tensor<?x4xf32> -> tensor<f32>
  return
}
