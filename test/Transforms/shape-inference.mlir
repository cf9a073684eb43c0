// RUN: estc-opt %s --est-shape-inference -split-input-file | FileCheck %s

// A batch size made static flows through the whole function and into its
// result types.
est.variable @w : tensor<784x10xf32>

// CHECK-LABEL: func.func @mlp(%{{.*}}: tensor<32x784xf32>, %{{.*}}: tensor<32xi64>) -> (tensor<f32>, tensor<32xi64>)
func.func @mlp(%x: tensor<32x784xf32>, %labels: tensor<32xi64>) -> (tensor<f32>, tensor<?xi64>) {
  %w = est.read_variable @w : tensor<784x10xf32>
  // CHECK: est.matmul {{.*}} -> tensor<32x10xf32>
  %0 = est.matmul %x, %w : tensor<32x784xf32>, tensor<784x10xf32> -> tensor<?x10xf32>
  // CHECK: est.relu %{{.*}} : tensor<32x10xf32>{{$}}
  %1 = est.relu %0 : tensor<?x10xf32>
  // CHECK: est.sparse_softmax_cross_entropy {{.*}} -> tensor<32xf32>
  %2 = est.sparse_softmax_cross_entropy %1, %labels : tensor<?x10xf32>, tensor<32xi64> -> tensor<?xf32>
  // CHECK: est.reduce_mean {{.*}} : tensor<32xf32> -> tensor<f32>
  %3 = est.reduce_mean %2 : tensor<?xf32> -> tensor<f32>
  // CHECK: est.argmax {{.*}} : tensor<32x10xf32> -> tensor<32xi64>
  %4 = est.argmax %1 {axis = 1 : i64} : tensor<?x10xf32> -> tensor<?xi64>
  // CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<32xi64>
  return %3, %4 : tensor<f32>, tensor<?xi64>
}

// -----

// Dimensions unknown at compile time stay dynamic.
// CHECK-LABEL: func.func @still_dynamic(%{{.*}}: tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @still_dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: est.reshape {{.*}} -> tensor<?x4xf32>
  %0 = est.reshape %x {shape = array<i64: -1, 4>} : tensor<?x4xf32> -> tensor<?x4xf32>
  // CHECK: est.add {{.*}} -> tensor<?x4xf32>
  %1 = est.add %0, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Declared dynamic, inferable: refined even with a dynamic batch.
// CHECK-LABEL: func.func @partially_known
func.func @partially_known(%x: tensor<?x28x28x1xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<?x?x?x?xf32> {
  // CHECK: est.conv2d {{.*}} -> tensor<?x26x26x8xf32>
  %0 = est.conv2d %x, %w {padding = "VALID"} : tensor<?x28x28x1xf32>, tensor<3x3x1x8xf32> -> tensor<?x?x?x?xf32>
  // CHECK: est.max_pool {{.*}} : tensor<?x26x26x8xf32> -> tensor<?x13x13x8xf32>
  %1 = est.max_pool %0 {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  // CHECK: est.reshape {{.*}} : tensor<?x13x13x8xf32> -> tensor<?x1352xf32>
  %2 = est.reshape %1 {shape = array<i64: -1, 1352>} : tensor<?x?x?x?xf32> -> tensor<?x1352xf32>
  // CHECK: est.reshape {{.*}} : tensor<?x1352xf32> -> tensor<?x13x13x8xf32>
  %3 = est.reshape %2 {shape = array<i64: -1, 13, 13, 8>} : tensor<?x1352xf32> -> tensor<?x?x?x?xf32>
  // CHECK: return {{.*}} : tensor<?x13x13x8xf32>
  return %3 : tensor<?x?x?x?xf32>
}
