// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-memref-copy-to-linalg))' %s | FileCheck %s
// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-memref-copy-to-linalg,convert-linalg-to-loops))' %s | FileCheck %s --check-prefix=LOOPS

// A copy out of a strided view (a slice of a row) would lower to a call of
// MLIR's memrefCopy runtime function; as linalg.copy it becomes loops.
// CHECK-LABEL: func.func @copy_slice(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x3xf32, strided<[6, 1], offset: 2>>, %[[B:[^:]*]]: memref<4x3xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<4x3xf32, strided<[6, 1], offset: 2>>) outs(%[[B]] : memref<4x3xf32>)
// CHECK-NEXT: return
// LOOPS-LABEL: func.func @copy_slice(
// LOOPS-NOT: memref.copy
// LOOPS: scf.for
// LOOPS: scf.for
// LOOPS: memref.load
// LOOPS: memref.store
// LOOPS-NOT: call
func.func @copy_slice(%a: memref<4x3xf32, strided<[6, 1], offset: 2>>, %b: memref<4x3xf32>) {
  memref.copy %a, %b : memref<4x3xf32, strided<[6, 1], offset: 2>> to memref<4x3xf32>
  return
}

// Every copy of a function is rewritten, dynamic shapes included.
// CHECK-LABEL: func.func @two_copies(
// CHECK: linalg.copy ins(%{{.*}} : memref<?xf32>) outs(%{{.*}} : memref<?xf32>)
// CHECK: linalg.copy ins(%{{.*}} : memref<?xf32>) outs(%{{.*}} : memref<?xf32>)
// CHECK-NOT: memref.copy
func.func @two_copies(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) {
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  memref.copy %b, %c : memref<?xf32> to memref<?xf32>
  return
}

// A copy of a buffer onto itself (a scan's stack slot that bufferization
// wrote in place) is dropped.
// CHECK-LABEL: func.func @self_copy(
// CHECK-NOT: copy
// CHECK: return
func.func @self_copy(%a: memref<5x?x4xf32>, %t: index, %n: index) {
  %s = memref.subview %a[%t, 0, 0] [1, %n, 4] [1, 1, 1] : memref<5x?x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
  memref.copy %s, %s : memref<?x4xf32, strided<[4, 1], offset: ?>> to memref<?x4xf32, strided<[4, 1], offset: ?>>
  return
}
