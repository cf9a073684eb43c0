// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// sequence_mask from a padded batch: the new last dimension is dimension 1
// of maxlen_like (a run-time length), each element `index < lengths[b]`.
// CHECK-LABEL: func.func @mask_like
// CHECK-SAME: (%[[L:.*]]: tensor<?xi32>, %[[X:.*]]: tensor<?x?x8xf32>)
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[L]], %c0 : tensor<?xi32>
// CHECK-DAG: %[[T:.*]] = tensor.dim %[[X]], %c1 : tensor<?x?x8xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[B]], %[[T]]) : tensor<?x?xi1>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[L]] : tensor<?xi32>) outs(%[[E]] : tensor<?x?xi1>)
// CHECK: ^bb0(%[[LEN:.*]]: i32, %{{.*}}: i1):
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[JI:.*]] = arith.index_cast %[[J]] : index to i32
// CHECK: %[[V:.*]] = arith.cmpi slt, %[[JI]], %[[LEN]] : i32
// CHECK: linalg.yield %[[V]] : i1
func.func @mask_like(%len: tensor<?xi32>, %x: tensor<?x?x8xf32>) -> tensor<?x?xi1> {
  %m = est.sequence_mask %len, %x {axis = 1 : i64} : tensor<?xi32>, tensor<?x?x8xf32> -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}

// -----

// A static maxlen.
// CHECK-LABEL: func.func @mask_maxlen
// CHECK: tensor.empty(%{{.*}}) : tensor<?x5xi1>
// CHECK: linalg.index 1 : index
func.func @mask_maxlen(%len: tensor<?xi64>) -> tensor<?x5xi1> {
  %m = est.sequence_mask %len {maxlen = 5 : i64} : tensor<?xi64> -> tensor<?x5xi1>
  return %m : tensor<?x5xi1>
}

// -----

// reverse_sequence: each element reads the input at the mirrored position
// along seq_axis inside the clamped length, in place outside it.
// CHECK-LABEL: func.func @reverse
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[L:.*]]: tensor<?xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[L]] : tensor<?xi64>)
// CHECK: ^bb0(%[[LEN:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[N:.*]] = arith.index_cast %[[LEN]] : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[N]], %c0 : index
// CHECK: %[[CL:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK-DAG: %[[I0:.*]] = linalg.index 0 : index
// CHECK-DAG: %[[I1:.*]] = linalg.index 1 : index
// CHECK-DAG: %[[I2:.*]] = linalg.index 2 : index
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[I1]], %[[CL]] : index
// CHECK: %[[LAST:.*]] = arith.subi %[[CL]], %c1 : index
// CHECK: %[[M:.*]] = arith.subi %[[LAST]], %[[I1]] : index
// CHECK: %[[S:.*]] = arith.select %[[IN]], %[[M]], %[[I1]] : index
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[I0]], %[[S]], %[[I2]]] : tensor<?x?x8xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @reverse(%x: tensor<?x?x8xf32>, %len: tensor<?xi64>) -> tensor<?x?x8xf32> {
  %r = est.reverse_sequence %x, %len {seq_axis = 1 : i64, batch_axis = 0 : i64} : tensor<?x?x8xf32>, tensor<?xi64> -> tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}
