// RUN: estc-opt --est-memory-planning --split-input-file --verify-diagnostics --allow-unregistered-dialect %s | FileCheck %s

// Three batch-sized buffers (16 bytes per example, 64 with alignment): %c
// is allocated after %a's last use, so it takes %a's place. Two static
// buffers live at the same time. Arena: S = 128 (two 64-byte static
// buffers), P = 128 (two 64-byte per-example slots), at offsets S + o*batch.

// CHECK: module attributes {estc.arena = {f = array<i64: 128, 128>}}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8>, %[[X:.*]]: memref<?x4xf32>, %[[OUT:.*]]: memref<?x4xf32>)
// CHECK-SAME: estc.arena_bytes_batch128 = 16512 : i64
// CHECK-NOT: memref.alloc
// CHECK: %[[BATCH:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[A_OFF:.*]] = arith.addi %{{.*}}, %c128
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[A_OFF]]][%{{.*}}] : memref<?xi8> to memref<?x4xf32>
// CHECK: %[[B_SCALED:.*]] = arith.muli %[[BATCH]], %c64
// CHECK: %[[B_OFF:.*]] = arith.addi %[[B_SCALED]], %c128
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[B_OFF]]][%{{.*}}] : memref<?xi8> to memref<?x4xf32>
// CHECK: %[[C_OFF:.*]] = arith.addi %{{.*}}, %c128
// CHECK: memref.view %[[ARENA]][%[[C_OFF]]][%{{.*}}] : memref<?xi8> to memref<?x4xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<10xf32>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<3xi64>
// CHECK-NOT: memref.alloc
func.func @f(%arena: memref<?xi8>, %x: memref<?x4xf32>, %out: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %a = memref.alloc(%n) : memref<?x4xf32>
  linalg.copy ins(%x : memref<?x4xf32>) outs(%a : memref<?x4xf32>)
  %b = memref.alloc(%n) : memref<?x4xf32>
  linalg.copy ins(%a : memref<?x4xf32>) outs(%b : memref<?x4xf32>)
  %c = memref.alloc(%n) : memref<?x4xf32>
  linalg.copy ins(%b : memref<?x4xf32>) outs(%c : memref<?x4xf32>)
  linalg.copy ins(%c : memref<?x4xf32>) outs(%out : memref<?x4xf32>)
  %s = memref.alloc() : memref<10xf32>
  %s2 = memref.alloc() : memref<3xi64>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : i64
  linalg.fill ins(%zero : f32) outs(%s : memref<10xf32>)
  linalg.fill ins(%one : i64) outs(%s2 : memref<3xi64>)
  "test.use"(%s, %s2) : (memref<10xf32>, memref<3xi64>) -> ()
  return
}

// -----

// CHECK: module attributes {estc.arena = {g = array<i64: 0, 0>}}
func.func @g(%arena: memref<?xi8>) {
  return
}

// -----

// Sizes read through views: the batch of a collapsed (flattened) buffer and
// of an expanded one, as a ConvNet's flatten + matmul produce them.
// CHECK: module attributes {estc.arena = {views = array<i64: 0, 2624>}}
// CHECK-LABEL: func.func @views(
// CHECK-NOT: memref.alloc
func.func @views(%arena: memref<?xi8>, %x: memref<?x4x4x40xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4x4x40xf32>
  %a = memref.alloc(%n) : memref<?x4x4x40xf32>
  linalg.copy ins(%x : memref<?x4x4x40xf32>) outs(%a : memref<?x4x4x40xf32>)
  %flat = memref.collapse_shape %a [[0], [1, 2, 3]] : memref<?x4x4x40xf32> into memref<?x640xf32>
  %m = memref.dim %flat, %c0 : memref<?x640xf32>
  %expanded = memref.expand_shape %flat [[0, 1], [2]] output_shape [1, %m, 640] : memref<?x640xf32> into memref<1x?x640xf32>
  %c1 = arith.constant 1 : index
  %k = memref.dim %expanded, %c1 : memref<1x?x640xf32>
  %b = memref.alloc(%k) : memref<?x16xf32>
  "test.use"(%expanded, %b) : (memref<1x?x640xf32>, memref<?x16xf32>) -> ()
  return
}

// -----

// A collapse of every dimension into one (the batch times the rest), then the
// division that recovers the batch: what a conv gradient's window views do.
// CHECK: module attributes {estc.arena = {flatten_all = array<i64: 0, 20480>}}
// CHECK-NOT: memref.alloc
func.func @flatten_all(%arena: memref<?xi8>, %x: memref<?x28x28x1xf32>) {
  %c0 = arith.constant 0 : index
  %c2560 = arith.constant 2560 : index
  %dim = memref.dim %x, %c0 : memref<?x28x28x1xf32>
  %a = memref.alloc(%dim) : memref<?x8x8x40xf32>
  %flat = memref.collapse_shape %a [[0, 1, 2, 3]] : memref<?x8x8x40xf32> into memref<?xf32>
  %n = memref.dim %flat, %c0 : memref<?xf32>
  %batch = arith.divui %n, %c2560 : index
  %b = memref.alloc(%batch) : memref<?x8x8x40xf32>
  "test.use"(%a, %b) : (memref<?x8x8x40xf32>, memref<?x8x8x40xf32>) -> ()
  return
}

// -----

func.func @quadratic(%arena: memref<?xi8>, %x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %nn = arith.muli %n, %n : index
  // expected-error @+1 {{the size of 'memref<?xf32>' is not linear in the batch size}}
  %a = memref.alloc(%nn) : memref<?xf32>
  "test.use"(%a) : (memref<?xf32>) -> ()
  return
}

// -----

func.func @unknown(%arena: memref<?xi8>, %x: memref<?xf32>, %i: index) {
  // expected-error @+1 {{the size of 'memref<?xf32>' is not a computation on the batch size}}
  %a = memref.alloc(%i) : memref<?xf32>
  "test.use"(%a) : (memref<?xf32>) -> ()
  return
}

// -----

// A function with run-time checks gets a 64-byte status slot after its
// static buffers: [S, P, status offset].
// CHECK-LABEL: module attributes {estc.arena = {checked = array<i64: 128, 0, 64>}}
// CHECK: func.func @checked({{.*}} attributes {estc.arena_bytes_batch128 = 128 : i64, estc.status_offset = 64 : i64}
module {
  func.func @checked(%arena: memref<?xi8>, %x: memref<4xf32>, %b: i1, %v: i64) {
    %a = memref.alloc() : memref<4xf32>
    memref.copy %x, %a : memref<4xf32> to memref<4xf32>
    est.check_fail_if %b, %v, %v {check = 0 : i64}
    memref.copy %a, %x : memref<4xf32> to memref<4xf32>
    return
  }
}

// -----

// Two run-time sizes: the batch (%x, %lengths) and the number of values of
// the sparse inputs (%ids, %ids2: est.values_dim). A buffer of %ids' size
// goes to the per-value region after the per-example one, at
// S + P * batch + o * values, `values` being the largest dimension 0 of
// the sparse inputs. Arena [S, P, status (-1: none), V] = [0, 64, -1, 128]:
// per value, an f32 x 4 slot (16 -> 64 bytes) and an f32 x 8 one (32 -> 64),
// both live at once.
// CHECK: module attributes {estc.arena = {sparse = array<i64: 0, 64, -1, 128>}}
// CHECK-LABEL: func.func @sparse(
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<?xi8>, %[[X:[^:]*]]: memref<?x4xf32>, %[[IDS:[^:]*]]: memref<?xi64> {est.values_dim}, %[[IDS2:[^:]*]]: memref<?xi64> {est.values_dim}
// CHECK-NOT: memref.alloc
// CHECK: %[[BATCH:.*]] = memref.dim %[[X]]
// CHECK: %[[N1:.*]] = memref.dim %[[IDS]]
// CHECK: %[[N2:.*]] = memref.dim %[[IDS2]]
// CHECK: %[[VALUES:.*]] = arith.maxui %[[N1]], %[[N2]]
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x4xf32>
// CHECK: %[[P:.*]] = arith.muli %[[BATCH]], %c64
// CHECK: %[[BASE:.*]] = arith.addi %{{.*}}, %[[P]]
// CHECK: %[[SCALED:.*]] = arith.muli %[[VALUES]], %{{.*}}
// CHECK: %[[OFF:.*]] = arith.addi %[[SCALED]], %[[BASE]]
// CHECK: memref.view %[[ARENA]][%[[OFF]]]{{.*}} to memref<?x4xf32>
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x8xf32>
// CHECK-NOT: memref.alloc
func.func @sparse(%arena: memref<?xi8>, %x: memref<?x4xf32>,
                  %ids: memref<?xi64> {est.values_dim},
                  %ids2: memref<?xi64> {est.values_dim}) {
  %c0 = arith.constant 0 : index
  %b = memref.dim %x, %c0 : memref<?x4xf32>
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %a = memref.alloc(%b) : memref<?x4xf32>
  %v = memref.alloc(%n) : memref<?x4xf32>
  %w = memref.alloc(%n) : memref<?x8xf32>
  "test.use"(%a, %v, %w) : (memref<?x4xf32>, memref<?x4xf32>, memref<?x8xf32>) -> ()
  return
}

// -----

// A buffer whose size is a product of the batch and a number of values has
// no place in the arena.
func.func @both(%arena: memref<?xi8>, %x: memref<?x4xf32>,
                %ids: memref<?xi64> {est.values_dim}) {
  %c0 = arith.constant 0 : index
  %b = memref.dim %x, %c0 : memref<?x4xf32>
  %n = memref.dim %ids, %c0 : memref<?xi64>
  // expected-error @+1 {{is not linear in the batch size}}
  %a = memref.alloc(%b, %n) : memref<?x?xf32>
  "test.use"(%a) : (memref<?x?xf32>) -> ()
  return
}

// -----

// A buffer as large as the batch plus the values (a concat) is neither.
func.func @sum(%arena: memref<?xi8>, %x: memref<?x4xf32>,
               %ids: memref<?xi64> {est.values_dim}) {
  %c0 = arith.constant 0 : index
  %b = memref.dim %x, %c0 : memref<?x4xf32>
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %s = arith.addi %b, %n : index
  // expected-error @+1 {{depends on both the batch and a number of sparse values}}
  %a = memref.alloc(%s) : memref<?xf32>
  "test.use"(%a) : (memref<?xf32>) -> ()
  return
}
