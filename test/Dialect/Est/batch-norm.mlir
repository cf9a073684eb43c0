// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of est.fused_batch_norm and its gradient; the [C] results come
// from scale's channel count when x's is dynamic.

// CHECK-LABEL: func.func @fused_batch_norm
// CHECK: %{{.*}}:4 = est.fused_batch_norm %arg0, %arg1, %arg2 {axis = 3 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK: %{{.*}}:3 = est.fused_batch_norm_grad %arg3, %arg0, %arg1, %{{.*}}#1, %{{.*}}#3 {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>
func.func @fused_batch_norm(%x: tensor<?x8x8x16xf32>, %s: tensor<16xf32>, %o: tensor<16xf32>, %dy: tensor<?x8x8x16xf32>) -> (tensor<?x8x8x16xf32>, tensor<16xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 3 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %dx, %ds, %do = est.fused_batch_norm_grad %dy, %x, %s, %m, %inv {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %dx, %ds : tensor<?x8x8x16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @nchw_f64
// CHECK: est.fused_batch_norm %arg0, %arg1, %arg1 {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64> -> tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64>, tensor<5xf64>
func.func @nchw_f64(%x: tensor<2x?x3x3xf64>, %s: tensor<5xf64>) -> tensor<5xf64> {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %s {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64> -> tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64>, tensor<5xf64>
  return %v : tensor<5xf64>
}
