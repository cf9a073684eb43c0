// RUN: estc-opt %s --cse -split-input-file | FileCheck %s

// Counter-based random ops are pure functions of (seed, counter): two
// identical dropouts compute the same mask and are merged.
// CHECK-LABEL: func.func @same_seed
func.func @same_seed(%x: tensor<?x8xf32>, %step: tensor<i64>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[D:.*]] = est.dropout
  // CHECK-NOT: est.dropout
  // CHECK: return %[[D]], %[[D]]
  %0 = est.dropout %x, %step {rate = 0.5 : f64, seed = 7 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  %1 = est.dropout %x, %step {rate = 0.5 : f64, seed = 7 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Different seeds draw different masks.
// CHECK-LABEL: func.func @different_seeds
func.func @different_seeds(%x: tensor<?x8xf32>, %step: tensor<i64>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: %[[A:.*]] = est.dropout {{.*}}seed = 7
  // CHECK: %[[B:.*]] = est.dropout {{.*}}seed = 8
  // CHECK: return %[[A]], %[[B]]
  %0 = est.dropout %x, %step {rate = 0.5 : f64, seed = 7 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  %1 = est.dropout %x, %step {rate = 0.5 : f64, seed = 8 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Different counters (steps) draw different masks too.
// CHECK-LABEL: func.func @different_counters
func.func @different_counters(%x: tensor<?x8xf32>, %s0: tensor<i64>, %s1: tensor<i64>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK-COUNT-2: est.dropout
  %0 = est.dropout %x, %s0 {rate = 0.5 : f64, seed = 7 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  %1 = est.dropout %x, %s1 {rate = 0.5 : f64, seed = 7 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

est.variable @v : tensor<f32>

// Reads merge unless a write comes between them.
// CHECK-LABEL: func.func @reads
func.func @reads(%new: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[R0:.*]] = est.read_variable @v
  // CHECK-NEXT: est.assign_variable @v
  // CHECK-NEXT: %[[R1:.*]] = est.read_variable @v
  // CHECK-NEXT: return %[[R0]], %[[R0]], %[[R1]]
  %0 = est.read_variable @v : tensor<f32>
  %1 = est.read_variable @v : tensor<f32>
  est.assign_variable @v, %new : tensor<f32>
  %2 = est.read_variable @v : tensor<f32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<f32>
}
