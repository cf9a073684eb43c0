// RUN: estc-opt %s --canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @fold_float_binary
func.func @fold_float_binary() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f64>) {
  %a = est.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %b = est.constant dense<2.0> : tensor<2xf32>
  %c = est.constant dense<3.0> : tensor<f64>
  // CHECK-DAG: est.constant dense<[3.000000e+00, 6.000000e+00]> : tensor<2xf32>
  %0 = est.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK-DAG: est.constant dense<[-1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %1 = est.sub %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK-DAG: est.constant dense<[2.000000e+00, 8.000000e+00]> : tensor<2xf32>
  %2 = est.mul %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK-DAG: est.constant dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>
  %3 = est.div %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK-DAG: est.constant dense<[1.000000e+00, 1.600000e+01]> : tensor<2xf32>
  %4 = est.pow %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // Splats stay splats.
  // CHECK-DAG: est.constant dense<9.000000e+00> : tensor<f64>
  %5 = est.mul %c, %c : tensor<f64>, tensor<f64> -> tensor<f64>
  // CHECK-NOT: est.add
  // CHECK-NOT: est.sub
  // CHECK-NOT: est.mul
  // CHECK-NOT: est.div
  // CHECK-NOT: est.pow
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f64>
}

// -----

// A splat broadcasts against a dense operand of the result shape.
// CHECK-LABEL: func.func @fold_broadcast_splat
func.func @fold_broadcast_splat() -> tensor<2x2xf32> {
  %a = est.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = est.constant dense<10.0> : tensor<f32>
  // CHECK: est.constant dense<{{\[}}[1.100000e+01, 1.200000e+01], [1.300000e+01, 1.400000e+01]]> : tensor<2x2xf32>
  // CHECK-NOT: est.add
  %0 = est.add %a, %b : tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @fold_int
func.func @fold_int() -> (tensor<3xi32>, tensor<3xi64>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) {
  %a = est.constant dense<[7, -8, 9]> : tensor<3xi32>
  %b = est.constant dense<2> : tensor<3xi32>
  %l = est.constant dense<[1, 2, 3]> : tensor<3xi64>
  // CHECK-DAG: est.constant dense<[3, -4, 4]> : tensor<3xi32>
  %0 = est.div %a, %b : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  // CHECK-DAG: est.constant dense<[1, 4, 9]> : tensor<3xi64>
  %1 = est.square %l : tensor<3xi64>
  // CHECK-DAG: est.constant dense<[7, 8, 9]> : tensor<3xi32>
  %2 = est.abs %a : tensor<3xi32>
  // CHECK-DAG: est.constant dense<[7, 2, 9]> : tensor<3xi32>
  %3 = est.maximum %a, %b : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  // CHECK-DAG: est.constant dense<[-7, 8, -9]> : tensor<3xi32>
  %4 = est.neg %a : tensor<3xi32>
  return %0, %1, %2, %3, %4 : tensor<3xi32>, tensor<3xi64>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>
}

// -----

// Integer division by zero is left for run time.
// CHECK-LABEL: func.func @no_fold_int_div_by_zero
func.func @no_fold_int_div_by_zero() -> tensor<2xi64> {
  %a = est.constant dense<[1, 2]> : tensor<2xi64>
  %z = est.constant dense<0> : tensor<2xi64>
  // CHECK: est.div
  %0 = est.div %a, %z : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @fold_unary
func.func @fold_unary() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f64>, tensor<f32>) {
  %a = est.constant dense<[-1.0, 0.0, 9.0]> : tensor<3xf32>
  %s = est.constant dense<4.0> : tensor<f64>
  %z = est.constant dense<0.0> : tensor<f32>
  // CHECK-DAG: est.constant dense<[0.000000e+00, 0.000000e+00, 9.000000e+00]> : tensor<3xf32>
  %0 = est.relu %a : tensor<3xf32>
  // CHECK-DAG: est.constant dense<[1.000000e+00, -0.000000e+00, -9.000000e+00]> : tensor<3xf32>
  %1 = est.neg %a : tensor<3xf32>
  // CHECK-DAG: est.constant dense<[1.000000e+00, 0.000000e+00, 8.100000e+01]> : tensor<3xf32>
  %2 = est.square %a : tensor<3xf32>
  // CHECK-DAG: est.constant dense<5.000000e-01> : tensor<f64>
  %3 = est.rsqrt %s : tensor<f64>
  // CHECK-DAG: est.constant dense<5.000000e-01> : tensor<f32>
  %4 = est.sigmoid %z : tensor<f32>
  // CHECK-NOT: est.relu
  // CHECK-NOT: est.neg
  // CHECK-NOT: est.square
  // CHECK-NOT: est.rsqrt
  // CHECK-NOT: est.sigmoid
  return %0, %1, %2, %3, %4 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f64>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @fold_compare
func.func @fold_compare() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %a = est.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = est.constant dense<2.0> : tensor<3xf32>
  %i = est.constant dense<[1, 2, 3]> : tensor<3xi32>
  %j = est.constant dense<2> : tensor<3xi32>
  // CHECK-DAG: %[[LT:.*]] = est.constant dense<[true, false, false]> : tensor<3xi1>
  %0 = est.less %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xi1>
  // CHECK-DAG: %[[GE:.*]] = est.constant dense<[false, true, true]> : tensor<3xi1>
  %1 = est.greater_equal %i, %j : tensor<3xi32>, tensor<3xi32> -> tensor<3xi1>
  // CHECK-DAG: %[[EQ:.*]] = est.constant dense<[false, true, false]> : tensor<3xi1>
  %2 = est.equal %i, %j : tensor<3xi32>, tensor<3xi32> -> tensor<3xi1>
  // CHECK-DAG: %[[OR:.*]] = est.constant dense<true> : tensor<3xi1>
  %3 = est.logical_or %0, %1 : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  // CHECK: return %[[LT]], %[[GE]], %[[EQ]], %[[OR]]
  return %0, %1, %2, %3 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
func.func @identities(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %zero = est.constant dense<0.0> : tensor<f32>
  %one = est.constant dense<1.0> : tensor<4xf32>
  %0 = est.add %x, %zero : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xf32>
  %1 = est.add %zero, %0 : tensor<f32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %2 = est.sub %1, %zero : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xf32>
  %3 = est.mul %one, %2 : tensor<4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  %4 = est.div %3, %one : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x4xf32>
  // CHECK-NOT: est.
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
  return %0, %1, %2, %3, %4 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// x + 0 is kept when the zero changes the result type (broadcast).
// CHECK-LABEL: func.func @identity_needs_same_type
func.func @identity_needs_same_type(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %zero = est.constant dense<0.0> : tensor<3x4xf32>
  // CHECK: est.add
  %0 = est.add %x, %zero : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// x * 2 is not an identity.
// CHECK-LABEL: func.func @not_identity
func.func @not_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = est.constant dense<2.0> : tensor<f32>
  // CHECK: est.mul
  %0 = est.mul %x, %two : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @same_type_shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @same_type_shape_ops(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = est.cast %x to f32 : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = est.reshape %0 {shape = array<i64: 2, 3>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = est.broadcast_to %1 {shape = array<i64: 2, 3>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = est.transpose %2 {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = est.reduce_sum %3 {axes = array<i64>} : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NOT: est.
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Non-trivial shape ops stay.
// CHECK-LABEL: func.func @nontrivial_shape_ops
func.func @nontrivial_shape_ops(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<f32>, tensor<2x3xi32>) {
  // CHECK: est.transpose
  %0 = est.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: est.reduce_sum
  %1 = est.reduce_sum %x : tensor<2x3xf32> -> tensor<f32>
  // CHECK: est.cast
  %2 = est.cast %x to i32 : tensor<2x3xf32> -> tensor<2x3xi32>
  return %0, %1, %2 : tensor<3x2xf32>, tensor<f32>, tensor<2x3xi32>
}

// -----

// Constants reshape and splats broadcast at compile time.
// CHECK-LABEL: func.func @fold_constant_shape_ops
func.func @fold_constant_shape_ops() -> (tensor<2x2xf32>, tensor<3x2xi32>) {
  %a = est.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = est.constant dense<5> : tensor<2xi32>
  // CHECK-DAG: est.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = est.reshape %a {shape = array<i64: 2, -1>} : tensor<4xf32> -> tensor<2x2xf32>
  // CHECK-DAG: est.constant dense<5> : tensor<3x2xi32>
  %1 = est.broadcast_to %s {shape = array<i64: 3, 2>} : tensor<2xi32> -> tensor<3x2xi32>
  // CHECK-NOT: est.reshape
  // CHECK-NOT: est.broadcast_to
  return %0, %1 : tensor<2x2xf32>, tensor<3x2xi32>
}

// -----

// stop_gradient is never folded away.
// CHECK-LABEL: func.func @keep_stop_gradient
func.func @keep_stop_gradient() -> tensor<2xf32> {
  %a = est.constant dense<1.0> : tensor<2xf32>
  // CHECK: est.stop_gradient
  %0 = est.stop_gradient %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// zeros_like / ones_like fold to splats when the shape is static, and stay
// when it is not (the batch is known at run time only).
// CHECK-LABEL: func.func @fold_fill_like
func.func @fold_fill_like(%x: tensor<2x3xf32>, %b: tensor<4xi1>, %d: tensor<?x3xf32>) -> (tensor<2x3xf32>, tensor<4xi1>, tensor<?x3xf32>) {
  // CHECK-DAG: est.constant dense<0.000000e+00> : tensor<2x3xf32>
  %0 = est.zeros_like %x : tensor<2x3xf32>
  // CHECK-DAG: est.constant dense<true> : tensor<4xi1>
  %1 = est.ones_like %b : tensor<4xi1>
  // CHECK-DAG: est.ones_like %{{.*}} : tensor<?x3xf32>
  %2 = est.ones_like %d : tensor<?x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<4xi1>, tensor<?x3xf32>
}
