// RUN: estc-opt --est-insert-runtime-checks --split-input-file %s | FileCheck %s
// Running the pass again changes nothing (same order, same numbers):
// RUN: estc-opt --est-insert-runtime-checks --split-input-file %s --mlir-print-debuginfo -o %t.once.mlir
// RUN: estc-opt --est-insert-runtime-checks --split-input-file %t.once.mlir --mlir-print-debuginfo | diff %t.once.mlir -

// Labels of the sparse cross-entropy, ids of a gather from a 1000-row table
// and of a scatter into it: each checked right after its definition (the
// arguments: at the start of the body), numbered in order, with the node
// names in the module's table. The gather over a dynamic dim keeps its
// clamping: no check.
// CHECK: module attributes {estc.runtime_checks = [
// CHECK-SAME: {lower = 0 : i64, node = "xent", shape = array<i64: -1>, upper = 10 : i64, what = "label"},
// CHECK-SAME: {lower = 0 : i64, node = "lookup", shape = array<i64: -1>, upper = 1000 : i64, what = "id"},
// CHECK-SAME: {lower = 0 : i64, node = "update", shape = array<i64: 3>, upper = 1000 : i64, what = "id"}]}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[LOGITS:[^:]*]]: tensor<?x10xf32>, %[[LABELS:[^:]*]]: tensor<?xi64>, %[[IDS:[^:]*]]: tensor<?xi32>, %[[TABLE:[^:]*]]: tensor<1000x4xf32>, %[[ROWS:[^:]*]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[L:.*]] = est.check_range %[[LABELS]] {check = 0 : i64, lower = 0 : i64, upper = 10 : i64, what = "label"} : tensor<?xi64>
// CHECK-NEXT: %[[I:.*]] = est.check_range %[[IDS]] {check = 1 : i64, lower = 0 : i64, upper = 1000 : i64, what = "id"} : tensor<?xi32>
// CHECK-NEXT: est.sparse_softmax_cross_entropy %[[LOGITS]], %[[L]]
// CHECK-NEXT: est.gather %[[TABLE]], %[[I]]
// CHECK-NEXT: est.gather %[[ROWS]], %[[IDS]] :
// CHECK-NEXT: %[[C:.*]] = est.constant
// CHECK-NEXT: %[[CC:.*]] = est.check_range %[[C]] {check = 2 : i64, lower = 0 : i64, upper = 1000 : i64, what = "id"} : tensor<3xi64>
// CHECK: est.scatter %[[TABLE]], %[[CC]]
func.func @f(%logits: tensor<?x10xf32>, %labels: tensor<?xi64>,
             %ids: tensor<?xi32>, %table: tensor<1000x4xf32>,
             %rows: tensor<?x4xf32>)
    -> (tensor<?xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<1000x4xf32>) {
  %loss = est.sparse_softmax_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32> loc("xent")
  %e = est.gather %table, %ids : tensor<1000x4xf32>, tensor<?xi32> -> tensor<?x4xf32> loc("lookup")
  %d = est.gather %rows, %ids {axis = 0 : i64} : tensor<?x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %c = est.constant dense<[1, 2, 3]> : tensor<3xi64>
  %u = est.constant dense<1.0> : tensor<3x4xf32>
  %t = est.scatter %table, %c, %u : tensor<1000x4xf32>, tensor<3xi64>, tensor<3x4xf32> -> tensor<1000x4xf32> loc("update")
  return %loss, %e, %d, %t : tensor<?xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<1000x4xf32>
}

// -----

// estc --runtime-checks=false: no checks, existing ones erased.
// CHECK-LABEL: module attributes {estc.runtime_checks_disabled}
// CHECK-NOT: est.check_range
// CHECK: est.sparse_softmax_cross_entropy %{{.*}}, %arg1
module attributes {estc.runtime_checks_disabled} {
  func.func @g(%logits: tensor<?x10xf32>, %labels: tensor<?xi64>) -> tensor<?xf32> {
    %l = est.check_range %labels {lower = 0 : i64, upper = 10 : i64, what = "label"} : tensor<?xi64>
    %loss = est.sparse_softmax_cross_entropy %logits, %l : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
    return %loss : tensor<?xf32>
  }
}

// -----

// A check computed after a variable update (one metric's update before
// another metric's check of its predictions) moves above the first update,
// with the ops it depends on; the update stays after it.
// CHECK-LABEL: func.func @h(
// CHECK: est.read_variable @total
// CHECK: %[[P:.*]] = est.argmax
// CHECK-NEXT: est.check_range %[[P]] {check = 0 : i64
// CHECK-NEXT: est.assign_variable @total
module {
  est.variable @total : tensor<f32> {initializer = #est.init<"zeros">, local}
  func.func @h(%logits: tensor<?x3xf32>) -> tensor<?xi64> {
    %t = est.read_variable @total : tensor<f32>
    %one = est.constant dense<1.0> : tensor<f32>
    %n = est.add %t, %one : tensor<f32>, tensor<f32> -> tensor<f32>
    est.assign_variable @total, %n : tensor<f32>
    %p = est.argmax %logits {axis = 1 : i64, output_type = i64} : tensor<?x3xf32> -> tensor<?xi64>
    %c = est.check_range %p {lower = 0 : i64, upper = 3 : i64, what = "prediction"} : tensor<?xi64>
    return %c : tensor<?xi64>
  }
}
