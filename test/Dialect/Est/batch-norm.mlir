// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of est.fused_batch_norm and its gradient (epsilon's default
// 1e-3 is elided); the [C] results come from scale's channel count when x's
// is dynamic.

// CHECK-LABEL: func.func @fused_batch_norm
// CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]], %[[I:.*]] = est.fused_batch_norm %arg0, %arg1, %arg2 {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK: %[[DX:.*]], %[[DS:.*]], %[[DO:.*]] = est.fused_batch_norm_grad %arg3, %arg0, %arg1, %[[M]], %[[I]] {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK: return %[[DX]], %[[DS]]
func.func @fused_batch_norm(%x: tensor<?x8x8x16xf32>, %s: tensor<16xf32>, %o: tensor<16xf32>, %dy: tensor<?x8x8x16xf32>) -> (tensor<?x8x8x16xf32>, tensor<16xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 3 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %dx, %ds, %do = est.fused_batch_norm_grad %dy, %x, %s, %m, %inv {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %dx, %ds : tensor<?x8x8x16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @nchw_f64
// CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]], %[[I:.*]] = est.fused_batch_norm %arg0, %arg1, %arg1 {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64> -> tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64>, tensor<5xf64>
func.func @nchw_f64(%x: tensor<2x?x3x3xf64>, %s: tensor<5xf64>) -> tensor<5xf64> {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %s {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64> -> tensor<2x?x3x3xf64>, tensor<5xf64>, tensor<5xf64>, tensor<5xf64>
  // CHECK: return %[[V]] : tensor<5xf64>
  return %v : tensor<5xf64>
}
