// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// unsorted_segment_sum: zeros of [B] + data[1:] with B the third operand's
// dim 0 (4 here, not data's 7), then one scf.for over data's rows in order;
// a row whose id is in [0, 4) is added into its segment, the others are
// dropped.
// CHECK-LABEL: func.func @segment_sum_static
// CHECK-SAME: (%[[D:.*]]: tensor<7x3xf32>, %[[I:.*]]: tensor<7xi64>, %[[L:.*]]: tensor<4x2xi64>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: scf.for %[[R:.*]] = %c0 to %c7 step %c1 iter_args(%[[ACC:.*]] = %[[Z]]) -> (tensor<4x3xf32>)
// CHECK: %[[ID:.*]] = tensor.extract %[[I]][%[[R]]] : tensor<7xi64>
// CHECK: %[[S:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-DAG: arith.cmpi slt, %[[S]], %c4 : index
// CHECK-DAG: arith.cmpi sge, %[[S]], %c0 : index
// CHECK: scf.if %{{.*}} -> (tensor<4x3xf32>)
// CHECK: scf.for %[[J:.*]] = %c0 to %c3 step %c1 iter_args(%[[A:.*]] = %[[ACC]])
// CHECK: %[[V:.*]] = tensor.extract %[[D]][%[[R]], %[[J]]] : tensor<7x3xf32>
// CHECK: %[[OLD:.*]] = tensor.extract %[[A]][%[[S]], %[[J]]] : tensor<4x3xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[V]] : f32
// CHECK: tensor.insert %[[SUM]] into %[[A]][%[[S]], %[[J]]] : tensor<4x3xf32>
// CHECK: } else {
// CHECK: scf.yield %[[ACC]] : tensor<4x3xf32>
func.func @segment_sum_static(%d: tensor<7x3xf32>, %i: tensor<7xi64>, %l: tensor<4x2xi64>) -> tensor<4x3xf32> {
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<7x3xf32>, tensor<7xi64>, tensor<4x2xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Run-time sizes: the rows loop runs to the ids' dim 0, the result's dim 0
// is the third operand's (a batch), integer data adds with addi.
// CHECK-LABEL: func.func @segment_sum_dynamic
// CHECK-SAME: (%[[D:.*]]: tensor<?xi32>, %[[I:.*]]: tensor<?xi32>, %[[L:.*]]: tensor<?xf32>)
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[L]], %c0 : tensor<?xf32>
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[I]], %c0 : tensor<?xi32>
// CHECK-DAG: tensor.empty(%[[B]]) : tensor<?xi32>
// CHECK: scf.for %{{.*}} = %c0 to %[[N]] step %c1
// CHECK: arith.cmpi slt, %{{.*}}, %[[B]] : index
// CHECK: scf.if
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
func.func @segment_sum_dynamic(%d: tensor<?xi32>, %i: tensor<?xi32>, %l: tensor<?xf32>) -> tensor<?xi32> {
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<?xi32>, tensor<?xi32>, tensor<?xf32> -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

// bucketize with few boundaries: one comparison each (uge: !(x < b), true
// for NaN), summed as i64; boundaries rounded to f32 (0.7 -> 0.699999988).
// CHECK-LABEL: func.func @bucketize_linear
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: i64):
// CHECK: arith.cmpf uge, %[[X]], %cst{{.*}} : f32
// CHECK: arith.extui %{{.*}} : i1 to i64
// CHECK: arith.cmpf uge, %[[X]], %cst{{.*}} : f32
// CHECK: arith.addi
// CHECK-NOT: arith.cmpf
// CHECK: linalg.yield
func.func @bucketize_linear(%x: tensor<?x2xf32>) -> tensor<?x2xi64> {
  %0 = est.bucketize %x {boundaries = array<f64: 0.0, 0.7>} : tensor<?x2xf32> -> tensor<?x2xi64>
  return %0 : tensor<?x2xi64>
}

// -----

// An integer x is compared as f32 (TF compares T with float).
// CHECK-LABEL: func.func @bucketize_int
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.cmpf uge
func.func @bucketize_int(%x: tensor<?xi64>) -> tensor<?xi64> {
  %0 = est.bucketize %x {boundaries = array<f64: 16777217.0>} : tensor<?xi64> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// More than 16 boundaries: a branchless binary search over a constant
// table, log2 steps (16, 8, 4, 2, 1 for 17 boundaries; the first reads a
// constant index, folded); f64 x compares in f64 against the f32-rounded
// boundaries.
// CHECK-LABEL: func.func @bucketize_search
// CHECK: %[[T:.*]] = arith.constant dense<{{.*}}> : tensor<17xf64>
// CHECK: linalg.generic
// CHECK-COUNT-4: tensor.extract %[[T]]
// CHECK-NOT: tensor.extract
// CHECK: arith.index_cast %{{.*}} : index to i64
func.func @bucketize_search(%x: tensor<5xf64>) -> tensor<5xi64> {
  %0 = est.bucketize %x {boundaries = array<f64: 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0>} : tensor<5xf64> -> tensor<5xi64>
  return %0 : tensor<5xi64>
}
