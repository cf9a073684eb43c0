// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// top_k's indices (argsort DESCENDING with a static k <= 16): a loop over
// the rows, k selection passes, each a scan of the row for the best
// position after the previous pass's (value greater, or equal at a higher
// position; NaN above every number).
// CHECK-LABEL: func.func @top_k
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>)
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x3xi32>
// CHECK: scf.for %[[ROW:.*]] = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %[[E]]) -> (tensor<?x3xi32>)
// CHECK: scf.for %[[J:.*]] = %c0 to %c3 step %c1 iter_args(%{{.*}}, %[[PREV:.*]] = %c0) -> (tensor<?x3xi32>, index)
// CHECK: scf.for %[[I:.*]] = %c0 to %c10 step %c1 iter_args(%{{.*}} = %c0, %{{.*}} = %false) -> (index, i1)
// CHECK-DAG: tensor.extract %[[X]][%[[ROW]], %[[PREV]]] : tensor<?x10xf32>
// CHECK-DAG: tensor.extract %[[X]][%[[ROW]], %[[I]]] : tensor<?x10xf32>
// CHECK: arith.cmpf uno
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[ROW]], %[[J]]] : tensor<?x3xi32>
func.func @top_k(%x: tensor<?x10xf32>) -> tensor<?x3xi32> {
  %i = est.argsort %x {direction = "DESCENDING", k = 3 : i64} : tensor<?x10xf32> -> tensor<?x3xi32>
  return %i : tensor<?x3xi32>
}

// -----

// A whole axis: a heapsort of the positions in an [n] scratch (heapify,
// then n - 1 swaps of the root with the heap's end, each sifted down by an
// scf.while), then the positions copied out.
// CHECK-LABEL: func.func @argsort
// CHECK-SAME: (%[[X:.*]]: tensor<?xi64>)
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0 : tensor<?xi64>
// CHECK: %[[OUT:.*]] = tensor.empty(%[[N]]) : tensor<?xi32>
// CHECK: %[[SCRATCH:.*]] = tensor.empty(%[[N]]) : tensor<?xi32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[SCRATCH]])
// CHECK: %[[HALF:.*]] = arith.divui %[[N]], %c2 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[HALF]]
// CHECK: scf.while
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: scf.condition
// CHECK: scf.for
// CHECK: scf.while
// CHECK: scf.for %{{.*}} = %c0 to %[[N]] step %c1 iter_args(%{{.*}} = %[[OUT]])
func.func @argsort(%x: tensor<?xi64>) -> tensor<?xi32> {
  %i = est.argsort %x : tensor<?xi64> -> tensor<?xi32>
  return %i : tensor<?xi32>
}

// -----

// take_along_axis: one linalg.generic over the indices, the index clamped.
// CHECK-LABEL: func.func @take
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>, %[[I:.*]]: tensor<?x3xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<?x3xi64>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[P:.*]] = arith.index_cast %[[IN]] : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[P]], %c0 : index
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %c9 : index
// CHECK: tensor.extract %[[X]][%[[R]], %[[C]]] : tensor<?x10xf32>
func.func @take(%x: tensor<?x10xf32>, %i: tensor<?x3xi64>) -> tensor<?x3xf32> {
  %v = est.take_along_axis %x, %i : tensor<?x10xf32>, tensor<?x3xi64> -> tensor<?x3xf32>
  return %v : tensor<?x3xf32>
}

// -----

// scatter_along_axis: a loop nest over the updates adding into ref.
// CHECK-LABEL: func.func @scatter
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32>, %[[I:.*]]: tensor<?x3xi32>, %[[U:.*]]: tensor<?x3xf32>)
// CHECK: scf.for %[[A:.*]] = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %[[X]])
// CHECK: scf.for %[[B:.*]] = %c0 to %c3 step %c1 iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[RAW:.*]] = tensor.extract %[[I]][%[[A]], %[[B]]]
// CHECK: %[[C:.*]] = arith.minsi %{{.*}}, %c9 : index
// CHECK: %[[V:.*]] = tensor.extract %[[U]][%[[A]], %[[B]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%[[A]], %[[C]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[V]] : f32
// CHECK: tensor.insert %[[SUM]] into %[[ACC]][%[[A]], %[[C]]]
func.func @scatter(%x: tensor<?x10xf32>, %i: tensor<?x3xi32>, %u: tensor<?x3xf32>) -> tensor<?x10xf32> {
  %v = est.scatter_along_axis %x, %i, %u : tensor<?x10xf32>, tensor<?x3xi32>, tensor<?x3xf32> -> tensor<?x10xf32>
  return %v : tensor<?x10xf32>
}

// -----

// Bilinear with half-pixel centers, 2x3 -> 4x2: the tables are TF's
// (rows sample -0.25, 0.25, 0.75, 1.25: lower 0 0 0 1, upper 0 1 1 1,
// lerp 0.75 0.25 0.75 0.25; columns sample 0.25, 1.75).
// CHECK-LABEL: func.func @bilinear
// CHECK-DAG: %[[YLO:.*]] = arith.constant dense<[0, 0, 0, 1]> : tensor<4xi32>
// CHECK-DAG: %[[YHI:.*]] = arith.constant dense<[0, 1, 1, 1]> : tensor<4xi32>
// CHECK-DAG: %[[YL:.*]] = arith.constant dense<[7.500000e-01, 2.500000e-01, 7.500000e-01, 2.500000e-01]> : tensor<4xf32>
// CHECK-DAG: %[[XLO:.*]] = arith.constant dense<[0, 1]> : tensor<2xi32>
// CHECK-DAG: %[[XHI:.*]] = arith.constant dense<[1, 2]> : tensor<2xi32>
// CHECK-DAG: %[[XL:.*]] = arith.constant dense<[2.500000e-01, 7.500000e-01]> : tensor<2xf32>
// CHECK: linalg.generic {{.*}} ins(%[[YLO]], %[[XLO]], %[[YHI]], %[[YL]], %[[XHI]], %[[XL]] : {{.*}}) outs(%{{.*}} : tensor<?x4x2x2xf32>)
// CHECK-COUNT-4: tensor.extract
// CHECK: linalg.yield
func.func @bilinear(%x: tensor<?x2x3x2xf32>) -> tensor<?x4x2x2xf32> {
  %y = est.resize_images %x {size = array<i64: 4, 2>} : tensor<?x2x3x2xf32> -> tensor<?x4x2x2xf32>
  return %y : tensor<?x4x2x2xf32>
}

// -----

// Nearest: one table per dimension, floor((o + 0.5) * scale).
// CHECK-LABEL: func.func @nearest
// CHECK-DAG: %[[Y:.*]] = arith.constant dense<[0, 0, 1, 1]> : tensor<4xi32>
// CHECK-DAG: %[[X:.*]] = arith.constant dense<[0, 2]> : tensor<2xi32>
// CHECK: linalg.generic {{.*}} ins(%[[Y]], %[[X]] : tensor<4xi32>, tensor<2xi32>)
// CHECK-COUNT-1: tensor.extract
// CHECK-NEXT: linalg.yield
func.func @nearest(%x: tensor<?x2x3x2xf32>) -> tensor<?x4x2x2xf32> {
  %y = est.resize_images %x {method = "nearest", size = array<i64: 4, 2>} : tensor<?x2x3x2xf32> -> tensor<?x4x2x2xf32>
  return %y : tensor<?x4x2x2xf32>
}

// -----

// The gradient: zeros, then a loop nest over grad_output adding each
// element, times its weights, into the four pixels it was read from.
// CHECK-LABEL: func.func @grad
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x2x3x2xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]])
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-4: tensor.insert
// CHECK: scf.yield
func.func @grad(%g: tensor<?x4x2x2xf32>) -> tensor<?x2x3x2xf32> {
  %y = est.resize_images_grad %g {input_size = array<i64: 2, 3>} : tensor<?x4x2x2xf32> -> tensor<?x2x3x2xf32>
  return %y : tensor<?x2x3x2xf32>
}
