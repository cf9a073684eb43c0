// RUN: estc-opt --est-memory-planning --split-input-file --verify-diagnostics --allow-unregistered-dialect %s | FileCheck %s

// The sequence length T is dimension 1 of an input marked est.sequence_dim
// and the dimensions an output lists in est.sequence_dims. Buffers grow
// with the batch (%a: 16 -> 64 bytes per example), with T alone (%s: f32 x
// 4 per step, 64; %o: f32 x 8 per step of the output's T, 64) or with
// batch * T (%bt: 4 -> 64 bytes per example and step). Two regions follow
// the per-example one: per-step at S + P * batch + o * T, per-example-step
// at S + P * batch + Q * T + o * batch * T. Arena [S, P, status (-1: none),
// V, Q, R] = [0, 64, -1, 0, 128, 64].
// CHECK: module attributes {estc.arena = {seq = array<i64: 0, 64, -1, 0, 128, 64>}}
// CHECK-LABEL: func.func @seq(
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<?xi8>, %[[X:[^:]*]]: memref<?x?x4xf32> {est.sequence_dim}
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[T:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[BATCH:.*]] = memref.dim %[[X]], %c0
// Per example: o * batch.
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x4xf32>
// Per step: 0 + 64 * batch + 0 * T, then 64 * batch + 64 * T.
// CHECK: %[[PB:.*]] = arith.muli %[[BATCH]], %c64
// CHECK: %[[BASE:.*]] = arith.addi %{{.*}}, %[[PB]]
// CHECK: %[[ST:.*]] = arith.muli %[[T]], %{{.*}}
// CHECK: %[[OFF:.*]] = arith.addi %[[ST]], %[[BASE]]
// CHECK: memref.view %[[ARENA]][%[[OFF]]]{{.*}} to memref<?x4xf32>
// Per example and step: 64 * batch + 128 * T + o * batch * T.
// CHECK: arith.muli %[[BATCH]], %c64
// CHECK: arith.muli %[[T]], %c128
// CHECK: %[[BT:.*]] = arith.muli %[[BATCH]], %[[T]]
// CHECK: arith.muli %[[BT]], %{{.*}}
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x?xf32>
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x8xf32>
// CHECK-NOT: memref.alloc
func.func @seq(%arena: memref<?xi8>,
               %x: memref<?x?x4xf32> {est.sequence_dim},
               %out: memref<?x?x5xf32> {est.output, est.sequence_dims = array<i64: 1>}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.dim %x, %c0 : memref<?x?x4xf32>
  %t = memref.dim %x, %c1 : memref<?x?x4xf32>
  %a = memref.alloc(%b) : memref<?x4xf32>
  %s = memref.alloc(%t) : memref<?x4xf32>
  %bt = memref.alloc(%b, %t) : memref<?x?xf32>
  %t2 = memref.dim %out, %c1 : memref<?x?x5xf32>
  %o = memref.alloc(%t2) : memref<?x8xf32>
  "test.use"(%a, %s, %bt, %o) : (memref<?x4xf32>, memref<?x4xf32>, memref<?x?xf32>, memref<?x8xf32>) -> ()
  return
}

// -----

// A function with sequence inputs whose temporaries do not grow with T
// keeps the short arena entry.
// CHECK: module attributes {estc.arena = {pooled = array<i64: 0, 64>}}
func.func @pooled(%arena: memref<?xi8>, %x: memref<?x?x4xf32> {est.sequence_dim}) {
  %c0 = arith.constant 0 : index
  %b = memref.dim %x, %c0 : memref<?x?x4xf32>
  %a = memref.alloc(%b) : memref<?x4xf32>
  "test.use"(%a) : (memref<?x4xf32>) -> ()
  return
}

// -----

// Quadratic in T (an attention matrix per example would be batch * T * T):
// not a size the arena formula has.
func.func @quadratic(%arena: memref<?xi8>, %x: memref<?x?x4xf32> {est.sequence_dim}) {
  %c1 = arith.constant 1 : index
  %t = memref.dim %x, %c1 : memref<?x?x4xf32>
  // expected-error @+1 {{is not linear in the batch size}}
  %a = memref.alloc(%t, %t) : memref<?x?xf32>
  "test.use"(%a) : (memref<?x?xf32>) -> ()
  return
}

// -----

// A buffer sized by both the sequence length and a number of sparse values.
func.func @valuesAndLength(%arena: memref<?xi8>,
                           %x: memref<?x?x4xf32> {est.sequence_dim},
                           %ids: memref<?xi64> {est.values_dim}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.dim %x, %c1 : memref<?x?x4xf32>
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %s = arith.addi %t, %n : index
  // expected-error @+1 {{depends on both the sequence length and a number of sparse values}}
  %a = memref.alloc(%s) : memref<?xf32>
  "test.use"(%a) : (memref<?xf32>) -> ()
  return
}

// -----

// Allocations inside a loop body: live for the whole top-level op that
// holds them (the scf.for), so %inner never shares %outer's bytes (used
// after the loop), while %after, allocated after the loop, reuses %inner's.
// Static arena: 128 bytes.
// CHECK: module attributes {estc.arena = {loop = array<i64: 128, 0>}}
// CHECK-LABEL: func.func @loop(
// CHECK: memref.view %{{.*}}[%c0{{.*}}] : memref<?xi8> to memref<16xf32>
// CHECK: scf.for
// CHECK: memref.view %{{.*}}[%c64{{.*}}] : memref<?xi8> to memref<16xf32>
// CHECK: memref.view %{{.*}}[%c64{{.*}}] : memref<?xi8> to memref<16xf32>
func.func @loop(%arena: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %outer = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %inner = memref.alloc() : memref<16xf32>
    "test.use"(%inner, %outer) : (memref<16xf32>, memref<16xf32>) -> ()
  }
  %after = memref.alloc() : memref<16xf32>
  "test.use"(%after, %outer) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}
