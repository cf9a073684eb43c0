// RUN: estc-opt %s --split-input-file --est-decompose | FileCheck %s

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
// CHECK: %[[M:.*]] = est.reduce_max %[[X]] {axes = array<i64: 1>, keep_dims = true} : tensor<?x10xf32> -> tensor<?x1xf32>
// CHECK: %[[S:.*]] = est.sub %[[X]], %[[M]]
// CHECK: %[[E:.*]] = est.exp %[[S]]
// CHECK: %[[Z:.*]] = est.reduce_sum %[[E]] {axes = array<i64: 1>, keep_dims = true}
// CHECK: %[[P:.*]] = est.div %[[E]], %[[Z]]
// CHECK: return %[[P]]
func.func @softmax(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %0 = est.softmax %x : tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax_axis0
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf32>)
// CHECK: %[[M:.*]] = est.reduce_max %[[X]] {axes = array<i64: 0>, keep_dims = true}
// CHECK: %[[S:.*]] = est.sub %[[X]], %[[M]]
// CHECK: %[[E:.*]] = est.exp %[[S]]
// CHECK: %[[Z:.*]] = est.reduce_sum %[[E]] {axes = array<i64: 0>, keep_dims = true}
// CHECK: %[[L:.*]] = est.log %[[Z]]
// CHECK: %[[R:.*]] = est.sub %[[S]], %[[L]]
// CHECK: return %[[R]]
func.func @log_softmax_axis0(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = est.log_softmax %x {axis = 0 : i64} : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>, %[[Y:.*]]: tensor<?x10xf32>)
// CHECK: est.reduce_max %[[X]]
// CHECK: %[[S:.*]] = est.sub %[[X]]
// CHECK: est.log
// CHECK: %[[LOGP:.*]] = est.sub %[[S]]
// CHECK: %[[P:.*]] = est.mul %[[Y]], %[[LOGP]]
// CHECK: %[[SUM:.*]] = est.reduce_sum %[[P]] {axes = array<i64: 1>} : tensor<?x10xf32> -> tensor<?xf32>
// CHECK: %[[L:.*]] = est.neg %[[SUM]]
// CHECK: return %[[L]]
func.func @softmax_cross_entropy(%x: tensor<?x10xf32>, %y: tensor<?x10xf32>) -> tensor<?xf32> {
  %0 = est.softmax_cross_entropy %x, %y : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @sparse_softmax_cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>, %[[L:.*]]: tensor<?xi64>)
// CHECK: %[[OH:.*]] = est.one_hot %[[L]] {depth = 10 : i64, dtype = f32} : tensor<?xi64> -> tensor<?x10xf32>
// CHECK: est.reduce_max %[[X]]
// CHECK: %[[P:.*]] = est.mul %[[OH]], %{{.*}}
// CHECK: est.reduce_sum %[[P]] {axes = array<i64: 1>}
// CHECK: est.neg
func.func @sparse_softmax_cross_entropy(%x: tensor<?x10xf32>, %l: tensor<?xi64>) -> tensor<?xf32> {
  %0 = est.sparse_softmax_cross_entropy %x, %l : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// max(x, 0) - x z + log1p(exp(-|x|)) = softplus(x) - x z.
// CHECK-LABEL: func.func @sigmoid_cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<?x1xf32>, %[[Z:.*]]: tensor<?x1xf32>)
// CHECK: %[[SP:.*]] = est.softplus %[[X]]
// CHECK: %[[XZ:.*]] = est.mul %[[X]], %[[Z]]
// CHECK: %[[R:.*]] = est.sub %[[SP]], %[[XZ]]
// CHECK: return %[[R]]
func.func @sigmoid_cross_entropy(%x: tensor<?x1xf32>, %z: tensor<?x1xf32>) -> tensor<?x1xf32> {
  %0 = est.sigmoid_cross_entropy %x, %z : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// Static reduced dims: sum / count. A dynamic reduced dim keeps the op (the
// linalg lowering divides by the runtime count).
// CHECK-LABEL: func.func @reduce_mean
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
// CHECK: %[[C:.*]] = est.constant dense<1.000000e+01> : tensor<f32>
// CHECK: %[[S:.*]] = est.reduce_sum %[[X]] {axes = array<i64: -1>, keep_dims = true}
// CHECK: est.div %[[S]], %[[C]] : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
// CHECK: est.reduce_mean %[[X]] : tensor<?x10xf32> -> tensor<f32>
func.func @reduce_mean(%x: tensor<?x10xf32>) -> (tensor<?x1xf32>, tensor<f32>) {
  %0 = est.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : tensor<?x10xf32> -> tensor<?x1xf32>
  %1 = est.reduce_mean %x : tensor<?x10xf32> -> tensor<f32>
  return %0, %1 : tensor<?x1xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-DAG: %[[ZERO:.*]] = est.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[SIX:.*]] = est.constant dense<6.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = est.maximum %[[X]], %[[ZERO]]
// CHECK: %[[R6:.*]] = est.minimum %[[R]], %[[SIX]]
// stop_gradient goes; elu, softplus and sigmoid stay primitives.
// CHECK-NOT: est.stop_gradient
// CHECK: est.elu %[[R6]]
// CHECK: est.softplus
// CHECK: est.sigmoid
func.func @activations(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = est.relu6 %x : tensor<?x4xf32>
  %1 = est.stop_gradient %0 : tensor<?x4xf32>
  %2 = est.elu %1 : tensor<?x4xf32>
  %3 = est.softplus %2 : tensor<?x4xf32>
  %4 = est.sigmoid %3 : tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}
