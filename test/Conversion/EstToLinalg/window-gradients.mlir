// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// The gradients of conv2d and pooling are single linalg.generics (two for
// max_pool_grad) over the result and the window taps, reading the windowed
// operand with tensor.extract at bounds-checked coordinates. The pooling
// gradients' channel loop is innermost (contiguous in NHWC).

// An f32 input gradient: loops (n, ih, iw, c | kh, kw, o), the filter an
// operand, grad_output read in the body; library_call names the runtime
// kernel and estc.conv holds [sh, sw, dh, dw, pad_top, pad_left].
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @backprop_input
// CHECK-SAME: (%[[DY:.*]]: tensor<?x3x3x4xf32>, %[[W:.*]]: tensor<3x3x2x4xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[DY]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x5x6x2xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x5x6x2xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FILTER]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_input_f32"}
// CHECK-SAME: ins(%[[W]] : tensor<3x3x2x4xf32>) outs(%[[Z]] : tensor<?x5x6x2xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>}
// CHECK: arith.remsi
// CHECK: tensor.extract %[[DY]]
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK: arith.addf
func.func @backprop_input(%dy: tensor<?x3x3x4xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<?x5x6x2xf32> {
  %0 = est.conv2d_backprop_input %dy, %w {input_size = array<i64: 5, 6>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x4xf32>, tensor<3x3x2x4xf32> -> tensor<?x5x6x2xf32>
  return %0 : tensor<?x5x6x2xf32>
}

// -----

// A filter gradient: loops (kh, kw, c, o | n, oh, ow), grad_output an
// operand, the input read in the body. f64 has no kernel: no library_call.
// CHECK-DAG: #[[DYMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
// CHECK-LABEL: func.func @backprop_filter
// CHECK-SAME: (%[[X:.*]]: tensor<?x7x6x2xf64>, %[[DY:.*]]: tensor<?x3x5x3xf64>)
// CHECK: linalg.generic {indexing_maps = [#[[DYMAP]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[DY]] : tensor<?x3x5x3xf64>) outs(%{{.*}} : tensor<2x2x2x3xf64>) {
// CHECK: tensor.extract %[[X]]
// CHECK-NOT: library_call
func.func @backprop_filter(%x: tensor<?x7x6x2xf64>, %dy: tensor<?x3x5x3xf64>) -> tensor<2x2x2x3xf64> {
  %0 = est.conv2d_backprop_filter %x, %dy {dilations = array<i64: 2, 1>, filter_size = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 1>} : tensor<?x7x6x2xf64>, tensor<?x3x5x3xf64> -> tensor<2x2x2x3xf64>
  return %0 : tensor<2x2x2x3xf64>
}

// -----

// max_pool_grad: the first maximum of each window (value and tap index, -1
// before the first valid element) over loops (n, oh, ow, kh, kw, c), the
// channels innermost; then each input element sums the gradients of the
// windows it wins, loops (n, ih, iw, kh, kw, c). 3x3 windows at stride 2
// overlap.
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
// CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func @max_pool_grad
// CHECK-SAME: (%[[X:.*]]: tensor<?x5x4x2xf32>, %[[DY:.*]]: tensor<?x3x2x2xf32>)
// CHECK-DAG: %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[WINDOW:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: %[[ARG0:.*]] = linalg.fill ins(%[[NONE]] : i32) outs(%{{.*}} : tensor<?x3x2x2xi32>)
// CHECK: %[[ARG:.*]]:2 = linalg.generic {indexing_maps = [#[[WIN]], #[[NHWC]], #[[NHWC]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[WINDOW]] : tensor<3x3xf32>) outs(%{{.*}}, %[[ARG0]] : tensor<?x3x2x2xf32>, tensor<?x3x2x2xi32>)
// CHECK: tensor.extract %[[X]]
// CHECK: arith.cmpf ogt
// CHECK: linalg.generic {indexing_maps = [#[[WIN]], #[[NHWC]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[WINDOW]] : tensor<3x3xf32>) outs(%{{.*}} : tensor<?x5x4x2xf32>)
// CHECK: tensor.extract %[[ARG]]#1
// CHECK: tensor.extract %[[DY]]
// CHECK: arith.addf
func.func @max_pool_grad(%x: tensor<?x5x4x2xf32>, %dy: tensor<?x3x2x2xf32>) -> tensor<?x5x4x2xf32> {
  %0 = est.max_pool_grad %x, %dy {ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x5x4x2xf32>, tensor<?x3x2x2xf32> -> tensor<?x5x4x2xf32>
  return %0 : tensor<?x5x4x2xf32>
}

// -----

// Windows that do not overlap (2x2 at stride 2, the ConvNet's): every input
// element is in at most one window, so the second loop nest is all
// parallel, (n, ih, iw, c), with no zero-filled init: the window and tap
// come from a division and remainder by the stride. The value is
// `0 + (hit ? dy : 0)`, as in the summing form.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool_grad_disjoint
// CHECK-SAME: (%[[X:.*]]: tensor<?x6x5x3xf32>, %[[DY:.*]]: tensor<?x3x3x3xf32>)
// CHECK: %[[ARG:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x6x5x3xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%[[E]] : tensor<?x6x5x3xf32>)
// CHECK: arith.divui
// CHECK: arith.remui
// CHECK: tensor.extract %[[ARG]]#1
// CHECK: arith.cmpi eq
// CHECK: tensor.extract %[[DY]]
// CHECK: arith.select
// CHECK: arith.addf
func.func @max_pool_grad_disjoint(%x: tensor<?x6x5x3xf32>, %dy: tensor<?x3x3x3xf32>) -> tensor<?x6x5x3xf32> {
  %0 = est.max_pool_grad %x, %dy {ksize = array<i64: 2, 2>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x6x5x3xf32>, tensor<?x3x3x3xf32> -> tensor<?x6x5x3xf32>
  return %0 : tensor<?x6x5x3xf32>
}

// -----

// avg_pool_grad divides each window's gradient by its count of valid
// elements, computed from the window's position; loops (n, ih, iw, kh, kw,
// c).
// CHECK-LABEL: func.func @avg_pool_grad
// CHECK-SAME: (%[[DY:.*]]: tensor<?x3x4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%{{.*}} : tensor<3x3xf32>) outs(%{{.*}} : tensor<?x5x4x8xf32>)
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: arith.sitofp
// CHECK: tensor.extract %[[DY]]
// CHECK: arith.divf
func.func @avg_pool_grad(%dy: tensor<?x3x4x8xf32>) -> tensor<?x5x4x8xf32> {
  %0 = est.avg_pool_grad %dy {input_size = array<i64: 5, 4>, ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 1>} : tensor<?x3x4x8xf32> -> tensor<?x5x4x8xf32>
  return %0 : tensor<?x5x4x8xf32>
}
