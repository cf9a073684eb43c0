// The bufferize, memplan and llvm stages on a dense layer with a ReLU:
// the result is LLVM dialect with the C interface, translates to LLVM IR,
// calls the runtime matmul with the bias + ReLU fused (300 x 3 is past
// est-inline-small-matmuls' limit) and allocates nothing.
// RUN: estc-opt %s --estc-bufferize-stage --estc-memplan-stage --estc-llvm-stage -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=IR

// CHECK: module attributes {estc.arena = {predict = array<i64: 0, 0>}, estc.variables = [{local = false, name = "dense/kernel", trainable = true, type = tensor<300x3xf32>}, {local = false, name = "dense/bias", trainable = true, type = tensor<3xf32>}]}
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
// CHECK: llvm.func @_mlir_ciface_predict(
// IR: define void @_mlir_ciface_predict(ptr %0, ptr %1, ptr %2, ptr %3, ptr %4)
// IR: call void @_mlir_ciface_estc_matmul_bias_act_f32(
// IR-NOT: @malloc
// IR: declare void @_mlir_ciface_estc_matmul_bias_act_f32(ptr, ptr, ptr, ptr, i64, i64, i64)
// IR-NOT: @malloc
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
module {
  est.variable @"dense/kernel" : tensor<300x3xf32> {trainable}
  est.variable @"dense/bias" : tensor<3xf32> {trainable}
  func.func @predict(%x: tensor<?x300xf32> {est.name = "features/x"}) -> (tensor<?x3xf32> {est.name = "logits"}) {
    %w = est.read_variable @"dense/kernel" : tensor<300x3xf32>
    %b = est.read_variable @"dense/bias" : tensor<3xf32>
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x300xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%n) : tensor<?x3xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x3xf32>) -> tensor<?x3xf32>
    %m = linalg.matmul ins(%x, %w : tensor<?x300xf32>, tensor<300x3xf32>) outs(%f : tensor<?x3xf32>) -> tensor<?x3xf32>
    %e2 = tensor.empty(%n) : tensor<?x3xf32>
    %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<?x3xf32>, tensor<3xf32>) outs(%e2 : tensor<?x3xf32>) {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %s = arith.addf %a, %bb : f32
      %q = arith.maximumf %s, %zero : f32
      linalg.yield %q : f32
    } -> tensor<?x3xf32>
    return %r : tensor<?x3xf32>
  }
}
