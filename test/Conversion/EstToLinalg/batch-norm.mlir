// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// fused_batch_norm: one pass over x summing x - shift and its square along
// each row (W, the last non-channel dim) in f32, shift the channel's first
// element; the row sums summed per channel in f64; one one-loop generic over
// the channels in f64, rounded to f32 (mean, unbiased variance
// n / max(n - 1, 1), inv_std, the per-channel scale); one elementwise pass
// y = (x - mean) * a + offset. n is the run-time batch times H * W. The
// batch may be empty (n = 0): the shift is then the sum of a slice of
// min(batch, 1) rows (the first element, or 0 without reading x).
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RC:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @bn
// CHECK: %[[DIM:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[N:.*]] = arith.muli %[[DIM]], %c16 : index
// CHECK: %[[MIN:.*]] = arith.minsi %[[DIM]], %c1 : index
// CHECK: %[[FIRST:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [%[[MIN]], 1, 1, 8] [1, 1, 1, 1] : tensor<?x4x4x8xf32> to tensor<?x1x1x8xf32>
// CHECK: %[[SHIFT:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[C]]], iterator_types = ["reduction", "reduction", "reduction", "parallel"]} ins(%[[FIRST]] :
// CHECK: arith.addf
// CHECK: %[[ROWSUMS:.*]]:2 = linalg.generic {indexing_maps = [#[[X]], #[[C]], #[[ROWS]], #[[ROWS]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%arg0, %[[SHIFT]] : tensor<?x4x4x8xf32>, tensor<8xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x4x8xf32>, tensor<?x4x8xf32>)
// CHECK: arith.subf {{.*}} : f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: %[[SUMS:.*]]:2 = linalg.generic {indexing_maps = [#[[R]], #[[R]], #[[RC]], #[[RC]]], iterator_types = ["reduction", "reduction", "parallel"]} ins(%[[ROWSUMS]]#0, %[[ROWSUMS]]#1 : tensor<?x4x8xf32>, tensor<?x4x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<8xf64>, tensor<8xf64>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.addf {{.*}} : f64
// CHECK: arith.addf {{.*}} : f64
// CHECK: %[[STATS:.*]]:4 = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[SHIFT]], %[[SUMS]]#0, %[[SUMS]]#1, %arg1 :
// CHECK: math.sqrt {{.*}} : f64
// CHECK: arith.truncf
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[C]], #[[C]], #[[C]], #[[X]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %[[STATS]]#0, %[[STATS]]#3, %arg2 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: return %[[Y]], %[[STATS]]#0, %[[STATS]]#1
func.func @bn(%x: tensor<?x4x4x8xf32>, %s: tensor<8xf32>, %o: tensor<8xf32>) -> (tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 3 : i64} : tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y, %m, %v : tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Static sizes that are not 0: the shift is a slice of x's first element
// per channel.
// CHECK-LABEL: func.func @bn_static
// CHECK-NOT: arith.minsi
// CHECK: %[[SHIFT:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 1, 1, 8] [1, 1, 1, 1] : tensor<2x4x4x8xf32> to tensor<8xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[SHIFT]] :
func.func @bn_static(%x: tensor<2x4x4x8xf32>, %s: tensor<8xf32>, %o: tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 3 : i64} : tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y, %m, %v : tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Rank 2 (a dense layer's batch norm): no rows to sum first; one pass over
// x, its elements converted to f64, the terms computed and summed in f64.
// CHECK-LABEL: func.func @bn_dense
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0, %{{.*}} : tensor<?x8xf32>, tensor<8xf32>) outs(%{{.*}}, %{{.*}} : tensor<8xf64>, tensor<8xf64>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.subf {{.*}} : f64
// CHECK: arith.mulf {{.*}} : f64
func.func @bn_dense(%x: tensor<?x8xf32>, %s: tensor<8xf32>, %o: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 1 : i64} : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y, %m, %v : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A non-channel dim known to be 0: x is empty, the shift is 0 and x is not
// sliced (extract_slice's verifier refuses any offset into an empty dim).
// CHECK-LABEL: func.func @bn_statically_empty
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}} :
func.func @bn_statically_empty(%x: tensor<?x0x2x4xf32>, %s: tensor<4xf32>, %o: tensor<4xf32>) -> (tensor<?x0x2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %m, %v, %inv = est.fused_batch_norm %x, %s, %o {axis = 3 : i64} : tensor<?x0x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x0x2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return %y, %m, %v : tensor<?x0x2x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// fused_batch_norm_grad (NCHW: the channel loop is d1, the rows are W, d3):
// one pass over (dy, x) for the row sums of dy and dy * xhat in f32, the
// rows summed per channel in f64, the [C] coefficients and the sums rounded
// to f32, one elementwise pass for dx; dscale is sum(dy * xhat), doffset
// sum(dy).
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RC:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @bn_grad
// CHECK: %[[ROWSUMS:.*]]:2 = linalg.generic {indexing_maps = [#[[X]], #[[X]], #[[C]], #[[C]], #[[ROWS]], #[[ROWS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1, %arg3, %arg4 :
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<?x8x3xf32>, tensor<?x8x3xf32>)
// CHECK: %[[SUMS:.*]]:2 = linalg.generic {indexing_maps = [#[[R]], #[[R]], #[[RC]], #[[RC]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[ROWSUMS]]#0, %[[ROWSUMS]]#1 :
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<8xf64>, tensor<8xf64>)
// CHECK: %[[K:.*]]:5 = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%arg2, %arg4, %[[SUMS]]#0, %[[SUMS]]#1 :
// CHECK: %[[DX:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[X]], #[[C]], #[[C]], #[[C]], #[[C]], #[[C]], #[[X]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %arg1, %arg3, %arg4, %[[K]]#0, %[[K]]#1, %[[K]]#2 :
// CHECK: return %[[DX]], %[[K]]#3, %[[K]]#4
func.func @bn_grad(%dy: tensor<?x8x3x3xf32>, %x: tensor<?x8x3x3xf32>, %s: tensor<8xf32>, %m: tensor<8xf32>, %i: tensor<8xf32>) -> (tensor<?x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %ds, %do = est.fused_batch_norm_grad %dy, %x, %s, %m, %i {axis = 1 : i64} : tensor<?x8x3x3xf32>, tensor<?x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>
  return %dx, %ds, %do : tensor<?x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>
}
