// RUN: estc-opt %s --cse --canonicalize --est-dce | FileCheck %s

// Collectives communicate: every replica must run the same ones in the same
// order. Two identical all-reduces are not merged, one whose result is
// unused is not removed, and none is folded away.
// CHECK-LABEL: func.func @kept
// CHECK: %[[A:.*]] = est.all_reduce "mean" %arg0
// CHECK: %[[B:.*]] = est.all_reduce "mean" %arg0
// CHECK: est.all_reduce "mean" %arg0
// CHECK: est.all_gather %arg1, %arg2
// CHECK: return %[[A]], %[[B]]
func.func @kept(%x: tensor<4xf32>, %ids: tensor<?xi64>, %rows: tensor<?x2xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = est.all_reduce "mean" %x : tensor<4xf32>
  %b = est.all_reduce "mean" %x : tensor<4xf32>
  %unused = est.all_reduce "mean" %x : tensor<4xf32>
  %i, %r = est.all_gather %ids, %rows {mean, replicas = 2 : i64} : tensor<?xi64>, tensor<?x2xf32> -> tensor<?xi64>, tensor<?x2xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
