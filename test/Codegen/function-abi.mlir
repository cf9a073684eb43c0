// RUN: estc-opt --est-function-abi --split-input-file --verify-diagnostics %s | FileCheck %s

// Arena, every variable in declaration order, inputs, outputs; no results.
// A read after an assignment sees the assigned value; the last value of an
// assigned variable is written back, results go to the output buffers.

// CHECK: module attributes {estc.variables = [{local = false, name = "w", trainable = true, type = tensor<2x3xf32>}, {local = false, name = "count", trainable = false, type = tensor<i64>}, {local = false, name = "flag", trainable = false, type = tensor<2xi1>}]}
// CHECK-NOT: est.variable
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8> {est.name = "arena"},
// CHECK-SAME: %[[W:.*]]: memref<2x3xf32> {est.name = "w", est.variable},
// CHECK-SAME: %[[COUNT:.*]]: memref<i64> {est.name = "count", est.variable},
// CHECK-SAME: %[[FLAG:.*]]: memref<2xi8> {est.name = "flag", est.variable},
// CHECK-SAME: %[[X:.*]]: memref<?x2xf32> {est.name = "features/x"},
// CHECK-SAME: %[[OUT0:.*]]: memref<i64> {est.name = "count_out", est.output},
// CHECK-SAME: %[[OUT1:.*]]: memref<?x2xf32> {est.name = "y", est.output})
// CHECK-SAME: attributes {llvm.emit_c_interface} {
// CHECK-DAG: %[[C:.*]] = bufferization.to_tensor %[[COUNT]] restrict writable : memref<i64> to tensor<i64>
// CHECK-DAG: %[[XT:.*]] = bufferization.to_tensor %[[X]] restrict : memref<?x2xf32> to tensor<?x2xf32>
// CHECK: %[[INC:.*]] = linalg.generic {{.*}} ins(%[[C]], %{{.*}} : tensor<i64>, tensor<i64>)
// The second increment reads the first one's result.
// CHECK: %[[INC2:.*]] = linalg.generic {{.*}} ins(%[[INC]], %{{.*}} : tensor<i64>, tensor<i64>)
// CHECK: bufferization.materialize_in_destination %[[INC2]] in restrict writable %[[OUT0]]
// CHECK: bufferization.materialize_in_destination %[[XT]] in restrict writable %[[OUT1]]
// CHECK: bufferization.materialize_in_destination %[[INC2]] in writable %[[COUNT]]
// CHECK-NEXT: return
// CHECK-NOT: est.
#s = affine_map<() -> ()>
module {
  est.variable @w : tensor<2x3xf32> {trainable}
  est.variable @count : tensor<i64>
  est.variable @flag : tensor<2xi1>
  func.func @step(%x: tensor<?x2xf32> {est.name = "features/x"}) -> (tensor<i64> {est.name = "count_out"}, tensor<?x2xf32> {est.name = "y"}) {
    %one = arith.constant dense<1> : tensor<i64>
    %c = est.read_variable @count : tensor<i64>
    %e = tensor.empty() : tensor<i64>
    %inc = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%c, %one : tensor<i64>, tensor<i64>) outs(%e : tensor<i64>) {
    ^bb0(%a: i64, %b: i64, %o: i64):
      %s = arith.addi %a, %b : i64
      linalg.yield %s : i64
    } -> tensor<i64>
    est.assign_variable @count, %inc : tensor<i64>
    %c2 = est.read_variable @count : tensor<i64>
    %inc2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%c2, %one : tensor<i64>, tensor<i64>) outs(%e : tensor<i64>) {
    ^bb0(%a: i64, %b: i64, %o: i64):
      %s = arith.addi %a, %b : i64
      linalg.yield %s : i64
    } -> tensor<i64>
    est.assign_variable @count, %inc2 : tensor<i64>
    return %inc2, %x : tensor<i64>, tensor<?x2xf32>
  }
}

// -----

// i1 variables are i8 buffers: converted on read and on write-back. A
// variable assigned the unmodified value of another assigned variable (a
// swap) is copied first.

// CHECK-LABEL: func.func @swap(
// CHECK-SAME: %{{.*}}: memref<?xi8> {est.name = "arena"}, %[[A:.*]]: memref<2xi8> {est.name = "a", est.variable}, %[[B:.*]]: memref<2xi8> {est.name = "b", est.variable})
// CHECK-DAG: %[[AT:.*]] = bufferization.to_tensor %[[A]] restrict writable : memref<2xi8> to tensor<2xi8>
// CHECK-DAG: %[[BT:.*]] = bufferization.to_tensor %[[B]] restrict writable : memref<2xi8> to tensor<2xi8>
// CHECK-DAG: arith.trunci %{{.*}} : i8 to i1
// CHECK: bufferization.alloc_tensor() copy(
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %[[A]]
// CHECK: bufferization.alloc_tensor() copy(
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %[[B]]
module {
  est.variable @a : tensor<2xi1>
  est.variable @b : tensor<2xi1>
  func.func @swap() {
    %a = est.read_variable @a : tensor<2xi1>
    %b = est.read_variable @b : tensor<2xi1>
    est.assign_variable @a, %b : tensor<2xi1>
    est.assign_variable @b, %a : tensor<2xi1>
    return
  }
}

// -----

module {
  est.variable @w : tensor<f32> {trainable}
  func.func @train(%loss: tensor<f32>) {
    // expected-error @+1 {{est.minimize must be expanded before code generation}}
    est.minimize %loss optimizer "sgd" {learning_rate = 1.0e-01 : f64} : tensor<f32>
    return
  }
}
