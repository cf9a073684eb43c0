// RUN: estc-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: estc-opt %s -split-input-file -verify-diagnostics --canonicalize | FileCheck %s --check-prefix=FOLD

// est.reverse and est.shape: parse, print, infer; est.shape of a static
// shape folds to a constant.
// CHECK-LABEL: func.func @parse
// CHECK: est.reverse %{{.*}} {axes = array<i64: 0, -1>} : tensor<?x7xf32> -> tensor<?x7xf32>
// CHECK: est.shape %{{.*}} : tensor<?x7xf32> -> tensor<2xi32>
// FOLD-LABEL: func.func @parse
// FOLD: est.shape %{{.*}} : tensor<?x7xf32> -> tensor<2xi32>
func.func @parse(%x: tensor<?x7xf32>) -> (tensor<?x7xf32>, tensor<2xi32>) {
  %r = est.reverse %x {axes = array<i64: 0, -1>} : tensor<?x7xf32> -> tensor<?x7xf32>
  %s = est.shape %x : tensor<?x7xf32> -> tensor<2xi32>
  return %r, %s : tensor<?x7xf32>, tensor<2xi32>
}

// -----

// FOLD-LABEL: func.func @fold_static
// FOLD: %[[C:.*]] = est.constant dense<[3, 7]> : tensor<2xi64>
// FOLD: return %[[C]]
func.func @fold_static(%x: tensor<3x7xf32>) -> tensor<2xi64> {
  %s = est.shape %x {out_type = i64} : tensor<3x7xf32> -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// -----

func.func @reverse_repeated_axis(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {
  // expected-error @+2 {{'est.reverse' op axis -2 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.reverse %x {axes = array<i64: 0, -2>} : tensor<3x7xf32> -> tensor<3x7xf32>
  return %r : tensor<3x7xf32>
}

// -----

func.func @reverse_axis_out_of_range(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {
  // expected-error @+2 {{'est.reverse' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.reverse %x {axes = array<i64: 2>} : tensor<3x7xf32> -> tensor<3x7xf32>
  return %r : tensor<3x7xf32>
}

// -----

func.func @shape_wrong_rank(%x: tensor<3x7xf32>) -> tensor<3xi32> {
  // expected-error @+2 {{'est.shape' op inferred type(s) 'tensor<2xi32>' are incompatible with return type(s) of operation 'tensor<3xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = est.shape %x : tensor<3x7xf32> -> tensor<3xi32>
  return %s : tensor<3xi32>
}
