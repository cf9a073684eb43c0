// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK-SAME: (%[[A:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<4x8xf32>)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[W]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>) permutation = [1, 0]
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK: linalg.matmul ins(%[[A]], %[[T]] : tensor<?x8xf32>, tensor<8x4xf32>) outs(%[[Z]] : tensor<?x4xf32>)
func.func @matmul_transpose_b(%a: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32> {
  %0 = est.matmul %a, %w {transpose_b = true} : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// [B, T, K] x [K, N]: the rows are collapsed into one matmul.
// CHECK-LABEL: func.func @matmul_rank3_rank2
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<?x5x8xf32> into tensor<?x8xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[C]], %{{.*}} : tensor<?x8xf32>, tensor<8x4xf32>)
// CHECK: tensor.expand_shape %[[M]] {{\[}}[0, 1], [2]] output_shape [%{{.*}}, 5, 4] : tensor<?x4xf32> into tensor<?x5x4xf32>
func.func @matmul_rank3_rank2(%x: tensor<?x5x8xf32>, %y: tensor<8x4xf32>) -> tensor<?x5x4xf32> {
  %0 = est.matmul %x, %y : tensor<?x5x8xf32>, tensor<8x4xf32> -> tensor<?x5x4xf32>
  return %0 : tensor<?x5x4xf32>
}

// -----

// Broadcast batch dims: both operands broadcast to [2, 3], collapsed to 6.
// CHECK-LABEL: func.func @batch_matmul_broadcast
// CHECK: linalg.transpose {{.*}} permutation = [0, 2, 1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x5x8xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x8x4xf32>)
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<6x5x8xf32>, tensor<6x8x4xf32>) outs(%{{.*}} : tensor<6x5x4xf32>)
// CHECK: tensor.expand_shape {{.*}} : tensor<6x5x4xf32> into tensor<2x3x5x4xf32>
func.func @batch_matmul_broadcast(%p: tensor<2x1x5x8xf32>, %q: tensor<3x4x8xf32>) -> tensor<2x3x5x4xf32> {
  %0 = est.matmul %p, %q {transpose_b = true} : tensor<2x1x5x8xf32>, tensor<3x4x8xf32> -> tensor<2x3x5x4xf32>
  return %0 : tensor<2x3x5x4xf32>
}

// -----

// TF SAME: 28 -> 14 with a 5x5 window and stride 2 needs 3 rows of padding,
// 1 before and 2 after.
// CHECK-LABEL: func.func @conv_same
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 2, 2, 0]
// CHECK: tensor<?x28x28x1xf32> to tensor<?x31x31x1xf32>
// CHECK: linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %{{.*}} : tensor<?x31x31x1xf32>, tensor<5x5x1x8xf32>)
func.func @conv_same(%x: tensor<?x28x28x1xf32>, %w: tensor<5x5x1x8xf32>) -> tensor<?x14x14x8xf32> {
  %0 = est.conv2d %x, %w {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<5x5x1x8xf32> -> tensor<?x14x14x8xf32>
  return %0 : tensor<?x14x14x8xf32>
}

// -----

// CHECK-LABEL: func.func @conv_valid_dilated
// CHECK-NOT: tensor.pad
// CHECK: linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
func.func @conv_valid_dilated(%x: tensor<?x10x10x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<?x6x6x4xf32> {
  %0 = est.conv2d %x, %w {padding = "VALID", dilations = array<i64: 2, 2>} : tensor<?x10x10x2xf32>, tensor<3x3x2x4xf32> -> tensor<?x6x6x4xf32>
  return %0 : tensor<?x6x6x4xf32>
}

// -----

// Max pooling pads with -inf; average pooling sums zero-padded windows and
// divides by the number of valid elements of each window (9 inside, 6 on
// the padded edge, 4 in the corner). Both are generics over (n, oh, ow, kh,
// kw, c), the channels innermost, reading the padded input at
// (n, oh * 2 + kh, ow * 2 + kw, c).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func @pools
// CHECK-DAG: %[[COUNTS:.*]] = arith.constant dense<{{\[}}[9.000000e+00, {{.*}}, 6.000000e+00], {{.*}}, [6.000000e+00, {{.*}}, 4.000000e+00]]> : tensor<7x7xf32>
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 1, 1, 0]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.yield %[[NINF]]
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[WIN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<?x15x15x8xf32>, tensor<3x3xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[WIN]], #[[OUT]]]
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[SUM]], %[[COUNTS]] : tensor<?x7x7x8xf32>, tensor<7x7xf32>)
// CHECK: arith.divf
func.func @pools(%x: tensor<?x14x14x8xf32>) -> (tensor<?x7x7x8xf32>, tensor<?x7x7x8xf32>) {
  %0 = est.max_pool %x {ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x8xf32> -> tensor<?x7x7x8xf32>
  %1 = est.avg_pool %x {ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x8xf32> -> tensor<?x7x7x8xf32>
  return %0, %1 : tensor<?x7x7x8xf32>, tensor<?x7x7x8xf32>
}

// -----

// VALID average pooling divides by a scalar.
// CHECK-LABEL: func.func @avg_pool_valid
// CHECK: %[[FOUR:.*]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[FOUR]] : tensor<?x2x2x1xf32>, tensor<f32>)
func.func @avg_pool_valid(%x: tensor<?x4x4x1xf32>) -> tensor<?x2x2x1xf32> {
  %0 = est.avg_pool %x {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x4x4x1xf32> -> tensor<?x2x2x1xf32>
  return %0 : tensor<?x2x2x1xf32>
}
