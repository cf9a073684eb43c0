// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// est.depthwise_conv2d and its gradients are single linalg.generics over the
// result and the taps, reading the windowed operand with tensor.extract at
// bounds-checked coordinates, as the conv2d gradients (window-gradients.mlir).
// f32 ones name their runtime kernel (library_call; estc.conv holds [sh, sw,
// dh, dw, pad_top, pad_left]); f64 ones stay loops.

// The forward: loops (n, oh, ow, q | kh, kw), q = c * M + m; the filter
// streamed as [kh, kw, q floordiv M, q mod M], the input gathered at channel
// q floordiv M.
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5, d3 floordiv 2, d3 mod 2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<?x9x8x3xf32>, %[[W:.*]]: tensor<3x3x3x2xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x5x4x6xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FILTER]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_f32"}
// CHECK-SAME: ins(%[[W]] : tensor<3x3x3x2xf32>) outs(%[[Z]] : tensor<?x5x4x6xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>}
// CHECK: arith.divui
// CHECK: tensor.extract %[[X]]
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK: arith.addf
func.func @forward(%x: tensor<?x9x8x3xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<?x5x4x6xf32> {
  %0 = est.depthwise_conv2d %x, %w {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x9x8x3xf32>, tensor<3x3x3x2xf32> -> tensor<?x5x4x6xf32>
  return %0 : tensor<?x5x4x6xf32>
}

// -----

// The input gradient: loops (n, ih, iw, c | kh, kw, m), the filter streamed,
// grad_output gathered at channel c * M + m.
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
// CHECK-LABEL: func.func @backprop_input
// CHECK-SAME: (%[[DY:.*]]: tensor<?x5x4x6xf32>, %[[W:.*]]: tensor<3x3x3x2xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FILTER]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_backprop_input_f32"}
// CHECK-SAME: ins(%[[W]] : tensor<3x3x3x2xf32>) outs(%{{.*}} : tensor<?x9x8x3xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>}
// CHECK: arith.remsi
// CHECK: tensor.extract %[[DY]]
func.func @backprop_input(%dy: tensor<?x5x4x6xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<?x9x8x3xf32> {
  %0 = est.depthwise_conv2d_backprop_input %dy, %w {input_size = array<i64: 9, 8>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x5x4x6xf32>, tensor<3x3x3x2xf32> -> tensor<?x9x8x3xf32>
  return %0 : tensor<?x9x8x3xf32>
}

// -----

// The filter gradient in f64: loops (kh, kw, c, m | n, oh, ow), grad_output
// streamed at channel c * M + m, the input gathered; no kernel.
// CHECK-DAG: #[[DYMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d2 * 2 + d3)>
// CHECK-LABEL: func.func @backprop_filter_f64
// CHECK-SAME: (%[[X:.*]]: tensor<?x7x6x2xf64>, %[[DY:.*]]: tensor<?x3x5x4xf64>)
// CHECK: linalg.generic {indexing_maps = [#[[DYMAP]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[DY]] : tensor<?x3x5x4xf64>) outs(%{{.*}} : tensor<2x2x2x2xf64>) {
// CHECK: tensor.extract %[[X]]
// CHECK-NOT: library_call
func.func @backprop_filter_f64(%x: tensor<?x7x6x2xf64>, %dy: tensor<?x3x5x4xf64>) -> tensor<2x2x2x2xf64> {
  %0 = est.depthwise_conv2d_backprop_filter %x, %dy {dilations = array<i64: 2, 1>, filter_size = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 1>} : tensor<?x7x6x2xf64>, tensor<?x3x5x4xf64> -> tensor<2x2x2x2xf64>
  return %0 : tensor<2x2x2x2xf64>
}
