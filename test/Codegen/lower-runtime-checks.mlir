// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-lower-runtime-checks))' --split-input-file --verify-diagnostics %s | FileCheck %s

// A failed check stores check + 1, the position and the value in the status
// slot (byte 64 of the arena) and returns before the rest of the step: the
// store into %x only runs when the check passes.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8>, %[[X:.*]]: memref<4xi64>)
// CHECK: %[[BAD:.*]] = arith.cmpi sge
// CHECK: cf.cond_br %[[BAD]], ^[[FAIL:.*]], ^[[REST:[a-z0-9]*]]
// CHECK: ^[[FAIL]]:
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[STATUS:.*]] = memref.view %[[ARENA]][%[[C64]]][] : memref<?xi8> to memref<3xi64>
// CHECK: %[[CODE:.*]] = arith.constant 2 : i64
// CHECK: memref.store %[[CODE]], %[[STATUS]]
// CHECK: memref.store %{{.*}}, %[[STATUS]]
// CHECK: memref.store %{{.*}}, %[[STATUS]]
// CHECK-NEXT: return
// CHECK: ^[[REST]]:
// CHECK-NEXT: memref.store %{{.*}}, %[[X]]
// CHECK-NEXT: return
// CHECK-NOT: est.check_fail_if
func.func @f(%arena: memref<?xi8>, %x: memref<4xi64>) attributes {estc.status_offset = 64 : i64} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xi64>
  %c5 = arith.constant 5 : i64
  %bad = arith.cmpi sge, %v, %c5 : i64
  %p = arith.constant 0 : i64
  est.check_fail_if %bad, %p, %v {check = 1 : i64}
  memref.store %c5, %x[%c0] : memref<4xi64>
  return
}

// -----

// expected-error @below {{est-lower-runtime-checks: 'g' has run-time checks but no status slot (run est-memory-planning first)}}
func.func @g(%arena: memref<?xi8>, %b: i1, %v: i64) {
  est.check_fail_if %b, %v, %v {check = 0 : i64}
  return
}
