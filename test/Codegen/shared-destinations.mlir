// RUN: estc-opt %s --estc-linalg-stage --estc-bufferize-stage | FileCheck %s

// Two reductions of one shape share their zero init after CSE (one
// tensor.empty, one linalg.fill). est-function-abi gives each use its own
// copy, so each result is computed in its own output buffer; before, empty
// tensor elimination put both in @m's first output and the second output
// received the first result.

est.variable @a : tensor<5xf32> {initializer = #est.init<"zeros">, local}
est.variable @b : tensor<4xf32> {initializer = #est.init<"zeros">, local}

// CHECK-LABEL: func.func @m(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<5xf32> {est.name = "a", est.variable}, %[[B:[a-z0-9]+]]: memref<4xf32> {est.name = "b", est.variable}, %[[OUTA:[a-z0-9]+]]: memref<f32> {est.name = "metrics/a", est.output}, %[[OUTB:[a-z0-9]+]]: memref<f32> {est.name = "metrics/b", est.output})
// CHECK-DAG: linalg.fill ins(%{{.*}} : f32) outs(%[[OUTA]] : memref<f32>)
// CHECK-DAG: linalg.fill ins(%{{.*}} : f32) outs(%[[OUTB]] : memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<5xf32>) outs(%[[OUTA]] : memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[B]] : memref<4xf32>) outs(%[[OUTB]] : memref<f32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @m() -> (tensor<f32> {est.name = "metrics/a"}, tensor<f32> {est.name = "metrics/b"}) {
  %0 = est.read_variable @a : tensor<5xf32>
  %1 = est.read_variable @b : tensor<4xf32>
  %2 = est.reduce_sum %0 {axes = array<i64: 0>, keep_dims = false} : tensor<5xf32> -> tensor<f32>
  %3 = est.reduce_sum %1 {axes = array<i64: 0>, keep_dims = false} : tensor<4xf32> -> tensor<f32>
  return %2, %3 : tensor<f32>, tensor<f32>
}
