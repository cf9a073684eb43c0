// RUN: estc-opt --est-expand-shape-to-reinterpret-cast %s | FileCheck %s
// RUN: estc-opt --est-expand-shape-to-reinterpret-cast --expand-strided-metadata %s | FileCheck %s --check-prefix=ESM

// [batch * T, 5] back to [batch, T, 5] (a matmul over a sequence's steps):
// two run-time dimensions in one group become a reinterpret_cast with
// row-major strides [T * 5, 5, 1], which expand-strided-metadata lowers.
// CHECK-LABEL: func.func @steps(
// CHECK-SAME: %[[V:[^:]*]]: memref<?x5xf32>, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index
// CHECK: %[[C5:.*]] = arith.constant 5 : index
// CHECK: %[[S0:.*]] = arith.muli %[[C5]], %[[T]] : index
// CHECK: memref.reinterpret_cast %[[V]] to offset: [0], sizes: [%[[B]], %[[T]], 5], strides: [%[[S0]], 5, 1] : memref<?x5xf32> to memref<?x?x5xf32>
// CHECK-NOT: memref.expand_shape
// ESM-LABEL: func.func @steps(
// ESM-NOT: memref.expand_shape
// ESM: memref.reinterpret_cast
func.func private @use(memref<?x?x5xf32>)
func.func @steps(%v: memref<?x5xf32>, %b: index, %t: index) {
  %e = memref.expand_shape %v [[0, 1], [2]] output_shape [%b, %t, 5] : memref<?x5xf32> into memref<?x?x5xf32>
  call @use(%e) : (memref<?x?x5xf32>) -> ()
  return
}

// One run-time dimension per group: left to expand-strided-metadata.
// CHECK-LABEL: func.func @batch(
// CHECK: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
func.func private @use1(memref<1x?x5xf32>)
func.func @batch(%v: memref<?x5xf32>, %n: index) {
  %e = memref.expand_shape %v [[0, 1], [2]] output_shape [1, %n, 5] : memref<?x5xf32> into memref<1x?x5xf32>
  call @use1(%e) : (memref<1x?x5xf32>) -> ()
  return
}
