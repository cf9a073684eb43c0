// RUN: estc-opt %s --split-input-file --verify-diagnostics | estc-opt | FileCheck %s

// CHECK-LABEL: func.func @round_trip
func.func @round_trip(%x: tensor<8xf32>, %ids: tensor<?xi64>, %rows: tensor<?x4xf64>) -> (tensor<8xf32>, tensor<?xi64>, tensor<?x4xf64>) {
  // CHECK: est.all_reduce "mean" %{{.*}} : tensor<8xf32>
  %m = est.all_reduce "mean" %x : tensor<8xf32>
  // CHECK: est.all_gather %{{.*}}, %{{.*}} {mean, replicas = 2 : i64} : tensor<?xi64>, tensor<?x4xf64> -> tensor<?xi64>, tensor<?x4xf64>
  %i, %r = est.all_gather %ids, %rows {mean, replicas = 2 : i64} : tensor<?xi64>, tensor<?x4xf64> -> tensor<?xi64>, tensor<?x4xf64>
  return %m, %i, %r : tensor<8xf32>, tensor<?xi64>, tensor<?x4xf64>
}

// -----

func.func @bad_reduction(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{reduction 'sum' is not supported ("mean")}}
  %m = est.all_reduce "sum" %x : tensor<8xf32>
  return %m : tensor<8xf32>
}

// -----

func.func @bad_rank(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{operand #0 must be 1D tensor}}
  %m = est.all_reduce "mean" %x : tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

// -----

func.func @bad_rows(%ids: tensor<3xi64>, %rows: tensor<5x4xf32>) {
  // expected-error @+1 {{3 indices but 5 rows}}
  %i, %r = est.all_gather %ids, %rows {replicas = 2 : i64} : tensor<3xi64>, tensor<5x4xf32> -> tensor<?xi64>, tensor<?x4xf32>
  return
}

// -----

func.func @bad_width(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  // expected-error @+1 {{gathered rows 'tensor<?x5xf32>' do not match 'tensor<?x4xf32>'}}
  %i, %r = est.all_gather %ids, %rows {replicas = 2 : i64} : tensor<?xi64>, tensor<?x4xf32> -> tensor<?xi64>, tensor<?x5xf32>
  return
}

// -----

func.func @bad_replicas(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  // expected-error @+1 {{replicas must be >= 1, not 0}}
  %i, %r = est.all_gather %ids, %rows {replicas = 0 : i64} : tensor<?xi64>, tensor<?x4xf32> -> tensor<?xi64>, tensor<?x4xf32>
  return
}

// -----

func.func @bad_gathered_size(%ids: tensor<3xi64>, %rows: tensor<3x4xf32>) {
  // expected-error @+1 {{gathered 5 rows, not replicas x 3}}
  %i, %r = est.all_gather %ids, %rows {replicas = 2 : i64} : tensor<3xi64>, tensor<3x4xf32> -> tensor<5xi64>, tensor<?x4xf32>
  return
}

// -----

func.func @bad_element(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  // expected-error @+1 {{gathered rows 'tensor<?x4xf64>' do not match 'tensor<?x4xf32>'}}
  %i, %r = est.all_gather %ids, %rows {replicas = 2 : i64} : tensor<?xi64>, tensor<?x4xf32> -> tensor<?xi64>, tensor<?x4xf64>
  return
}
