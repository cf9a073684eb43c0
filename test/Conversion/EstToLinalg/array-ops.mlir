// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// reverse: each element reads the input at n - 1 - i along the reversed
// axes (a run-time one included), in place along the others.
// CHECK-LABEL: func.func @reverse
// CHECK-SAME: (%[[X:.*]]: tensor<?x7xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[X]], %c0 : tensor<?x7xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[B]]) : tensor<?x7xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<?x7xf32>)
// CHECK: %[[I0:.*]] = linalg.index 0 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[B]], %c1 : index
// CHECK: %[[R0:.*]] = arith.subi %[[LAST]], %[[I0]] : index
// CHECK: %[[I1:.*]] = linalg.index 1 : index
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[R0]], %[[I1]]] : tensor<?x7xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @reverse(%x: tensor<?x7xf32>) -> tensor<?x7xf32> {
  %r = est.reverse %x {axes = array<i64: 0>} : tensor<?x7xf32> -> tensor<?x7xf32>
  return %r : tensor<?x7xf32>
}

// -----

// shape: one generic over the [rank] result, element i the run-time
// tensor.dim i (a select over the dims), as the CUDA target maps it.
// CHECK-LABEL: func.func @shape
// CHECK-SAME: (%[[X:.*]]: tensor<?x7xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[X]], %c0 : tensor<?x7xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[I]], %c0 : index
// CHECK: %[[D:.*]] = arith.select %[[IS0]], %[[B]], %c7 : index
// CHECK: %[[V:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK: linalg.yield %[[V]] : i64
func.func @shape(%x: tensor<?x7xf32>) -> tensor<2xi64> {
  %s = est.shape %x {out_type = i64} : tensor<?x7xf32> -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// -----

// scatter min / max: the loop over the updates combines each with the
// element it lands on.
// CHECK-LABEL: func.func @scatter_max
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: arith.maximumf
// CHECK: tensor.insert
// CHECK-LABEL: func.func @scatter_min_int
// CHECK: arith.minsi
func.func @scatter_max(%r: tensor<6x3xf32>, %i: tensor<?xi64>, %u: tensor<?x3xf32>) -> tensor<6x3xf32> {
  %s = est.scatter %r, %i, %u {mode = "max"} : tensor<6x3xf32>, tensor<?xi64>, tensor<?x3xf32> -> tensor<6x3xf32>
  return %s : tensor<6x3xf32>
}
func.func @scatter_min_int(%r: tensor<6xi32>, %i: tensor<2xi64>, %u: tensor<2xi32>) -> tensor<6xi32> {
  %s = est.scatter %r, %i, %u {mode = "min"} : tensor<6xi32>, tensor<2xi64>, tensor<2xi32> -> tensor<6xi32>
  return %s : tensor<6xi32>
}
