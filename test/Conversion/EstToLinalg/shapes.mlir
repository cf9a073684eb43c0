// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// reshape: collapse to 1-D, expand to the target (the dynamic dim is the
// element count over the static dims); canonicalization merges the pair.
// CHECK-LABEL: func.func @reshape
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<?x28x28xf32> into tensor<?x784xf32>
func.func @reshape(%x: tensor<?x28x28xf32>) -> tensor<?x784xf32> {
  %0 = est.reshape %x {shape = array<i64: -1, 784>} : tensor<?x28x28xf32> -> tensor<?x784xf32>
  return %0 : tensor<?x784xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_scalar
// CHECK-SAME: (%[[S:.*]]: tensor<f32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: return %[[E]], %[[S]]
func.func @reshape_scalar(%s: tensor<f32>) -> (tensor<1x1xf32>, tensor<f32>) {
  %0 = est.reshape %s {shape = array<i64: 1, 1>} : tensor<f32> -> tensor<1x1xf32>
  %1 = est.reshape %0 {shape = array<i64>} : tensor<1x1xf32> -> tensor<f32>
  return %0, %1 : tensor<1x1xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<28x?x28xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<?x28x28xf32>) outs(%[[E]] : tensor<28x?x28xf32>) permutation = [1, 0, 2]
func.func @transpose(%x: tensor<?x28x28xf32>) -> tensor<28x?x28xf32> {
  %0 = est.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<?x28x28xf32> -> tensor<28x?x28xf32>
  return %0 : tensor<28x?x28xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[Y:.*]]: tensor<?x3xf32>, %[[Z:.*]]: tensor<?x5xf32>)
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK: %[[I:.*]] = tensor.insert_slice %[[Y]] into %[[E]][0, 0] [%{{.*}}, 3] [1, 1]
// CHECK: tensor.insert_slice %[[Z]] into %[[I]][0, 3] [%{{.*}}, 5] [1, 1]
func.func @concat(%y: tensor<?x3xf32>, %z: tensor<?x5xf32>) -> tensor<?x8xf32> {
  %0 = est.concat %y, %z {axis = 1 : i64} : (tensor<?x3xf32>, tensor<?x5xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_pad
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: tensor.extract_slice %{{.*}}[0, 2] [%{{.*}}, 2] [1, 1] : tensor<?x5xf32> to tensor<?x2xf32>
// CHECK: tensor.extract_slice %{{.*}}[1, 1] [%{{.*}}, 4] [1, 1] : tensor<?x5xf32> to tensor<?x4xf32>
// CHECK: tensor.pad %{{.*}} low[0, 1] high[0, 1]
// CHECK: tensor.yield %[[TWO]]
// CHECK: tensor<?x5xf32> to tensor<?x7xf32>
func.func @slice_pad(%z: tensor<?x5xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>, tensor<?x7xf32>) {
  %0 = est.slice %z {begin = array<i64: 0, 2>, size = array<i64: -1, 2>} : tensor<?x5xf32> -> tensor<?x2xf32>
  %1 = est.slice %z {begin = array<i64: 1, 1>, size = array<i64: -1, -1>} : tensor<?x5xf32> -> tensor<?x4xf32>
  %2 = est.pad %z {paddings = array<i64: 0, 0, 1, 1>, constant_value = 2.0 : f64} : tensor<?x5xf32> -> tensor<?x7xf32>
  return %0, %1, %2 : tensor<?x2xf32>, tensor<?x4xf32>, tensor<?x7xf32>
}

// -----

// The squeeze of the expand_dims folds away.
// CHECK-LABEL: func.func @squeeze_expand
// CHECK-SAME: (%[[Y:.*]]: tensor<?x3xf32>,
// CHECK: %[[E:.*]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 3, 1] : tensor<?x3xf32> into tensor<?x3x1xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : tensor<1x4x1xf32> into tensor<4xf32>
func.func @squeeze_expand(%y: tensor<?x3xf32>, %w: tensor<1x4x1xf32>) -> (tensor<?x3x1xf32>, tensor<?x3xf32>, tensor<4xf32>) {
  %0 = est.expand_dims %y {axis = -1 : i64} : tensor<?x3xf32> -> tensor<?x3x1xf32>
  %1 = est.squeeze %0 {axes = array<i64: 2>} : tensor<?x3x1xf32> -> tensor<?x3xf32>
  %2 = est.squeeze %w : tensor<1x4x1xf32> -> tensor<4xf32>
  // CHECK: return %[[E]], %[[Y]],
  return %0, %1, %2 : tensor<?x3x1xf32>, tensor<?x3xf32>, tensor<4xf32>
}
