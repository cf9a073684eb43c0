// RUN: estc-opt %s --split-input-file --estc-decompose-stage --estc-linalg-stage --estc-fusion-stage | FileCheck %s

// Bias-add + relu after a matmul: one elementwise generic (the matmul stays
// a named op for the runtime kernel).
// CHECK-LABEL: func.func @dense_relu
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @dense_relu(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = est.matmul %x, %w : tensor<?x8xf32>, tensor<8x4xf32> -> tensor<?x4xf32>
  %1 = est.add %0, %b : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
  %2 = est.relu %1 : tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}

// -----

// Broadcasts fold into their consumer.
// CHECK-LABEL: func.func @broadcast_folded
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
func.func @broadcast_folded(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = est.broadcast_to %b {shape = array<i64: 2, 3>} : tensor<3xf32> -> tensor<2x3xf32>
  %1 = est.mul %x, %0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = est.tanh %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// Softmax: three loop nests. The row max; the row sum with exp(x - max)
// fused in; the division, recomputing exp(x - max) rather than storing it.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %[[MAX]] :
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%{{.*}}, %[[MAX]], %[[SUM]] :
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %0 = est.softmax %x : tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// -----

// Sparse softmax cross entropy + mean: the row max; the row sum of
// exp(x - max); log of the row sum stays a per-row loop (not recomputed per
// element through the broadcast); one reduction computing
// one_hot * (x - max - log(sum)) summed per row; negation and mean.
// CHECK-LABEL: func.func @sparse_xent
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: linalg.generic
func.func @sparse_xent(%x: tensor<?x10xf32>, %l: tensor<?xi64>) -> tensor<f32> {
  %0 = est.sparse_softmax_cross_entropy %x, %l : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
  %1 = est.reduce_mean %0 : tensor<?xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @sparse_xent_bodies
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: %[[LOG:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.log
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: %[[LOG]]
// CHECK: linalg.index 1
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.negf
func.func @sparse_xent_bodies(%x: tensor<?x10xf32>, %l: tensor<?xi64>) -> tensor<?xf32> {
  %0 = est.sparse_softmax_cross_entropy %x, %l : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A producer that must be materialized anyway (here: it is returned) is
// fused into its consumer as a second result of one loop, computed once.
// CHECK-LABEL: func.func @multi_result
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#{{.}}, %[[R]]#{{.}}
func.func @multi_result(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = est.exp %x : tensor<4x3xf32>
  %1 = est.add %0, %x : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// ... but not when a user of the producer comes before the consumer (the
// fused loop would take the consumer's place, after the matmul that reads
// the relu): the relu stays its own loop.
// CHECK-LABEL: func.func @used_before_consumer
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[H]],
// CHECK: linalg.generic {{.*}} ins(%[[H]], %[[Y]] :
// CHECK-NOT: arith.maximumf
// CHECK: return
func.func @used_before_consumer(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %h = est.relu %x : tensor<4x4xf32>
  %y = est.matmul %h, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %z = est.mul %h, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %z : tensor<4x4xf32>
}

// -----

// Nor into a consumer inside a loop: the producer would be recomputed every
// iteration (its other user, the tensor.extract, is in the loop too). It
// stays before the loop.
// CHECK-LABEL: func.func @consumer_in_loop
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: tensor.extract %[[P]]
#id = affine_map<(d0) -> (d0)>
func.func @consumer_in_loop(%x: tensor<8xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<8xf32> {
    %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %acc : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %y = arith.addf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    %t = tensor.extract %p[%c0] : tensor<8xf32>
    %u = tensor.insert %t into %s[%c0] : tensor<8xf32>
    scf.yield %u : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
