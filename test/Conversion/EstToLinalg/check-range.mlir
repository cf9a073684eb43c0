// RUN: estc-opt %s --convert-est-to-linalg | FileCheck %s

// est.check_range: a reduction to the first offending flat position
// (INT64_MAX: none), the value there read only when one was found, and
// est.check_fail_if. The gather it checks indexes without clamping.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[IDS:.*]]: tensor<?x2xi32>, %[[TABLE:.*]]: tensor<10x4xf32>)
// CHECK: %[[NONE:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[FIRST:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[IDS]] : tensor<?x2xi32>)
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sge
// CHECK: arith.minsi
// CHECK: %[[POS:.*]] = tensor.extract %[[FIRST]][] : tensor<i64>
// CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[POS]], %[[NONE]] : i64
// CHECK: %[[VALUE:.*]] = scf.if %[[FAILED]] -> (i64) {
// CHECK: tensor.extract %[[IDS]]
// CHECK: est.check_fail_if %[[FAILED]], %[[POS]], %[[VALUE]] {check = 3 : i64}
// CHECK: linalg.generic
// CHECK-NOT: arith.maxsi
// CHECK-NOT: arith.minsi
// CHECK: tensor.extract %[[TABLE]]
func.func @f(%ids: tensor<?x2xi32>, %table: tensor<10x4xf32>) -> tensor<?x2x4xf32> {
  %i = est.check_range %ids {check = 3 : i64, lower = 0 : i64, upper = 10 : i64, what = "id"} : tensor<?x2xi32>
  %e = est.gather %table, %i : tensor<10x4xf32>, tensor<?x2xi32> -> tensor<?x2x4xf32>
  return %e : tensor<?x2x4xf32>
}
