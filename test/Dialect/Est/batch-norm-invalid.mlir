// RUN: estc-opt %s -split-input-file -verify-diagnostics

func.func @scale_not_channels(%x: tensor<?x4x4x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{'est.fused_batch_norm' op scale [4] must have the shape [8] of x's channel dim 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v, %i = est.fused_batch_norm %x, %s, %s {axis = -1 : i64} : tensor<?x4x4x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @axis_out_of_range(%x: tensor<?x4x4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{'est.fused_batch_norm' op axis 4 is out of range for rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v, %i = est.fused_batch_norm %x, %s, %s {axis = 4 : i64} : tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @negative_epsilon(%x: tensor<?x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{'est.fused_batch_norm' op epsilon must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v, %i = est.fused_batch_norm %x, %s, %s {epsilon = -1.0 : f64} : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @grad_dy_shape(%dy: tensor<?x4x4x4xf32>, %x: tensor<?x4x4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{'est.fused_batch_norm_grad' op dy [?,4,4,4] must have the shape of x [?,4,4,8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %do = est.fused_batch_norm_grad %dy, %x, %s, %s, %s {axis = 3 : i64} : tensor<?x4x4x4xf32>, tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @grad_inv_std_shape(%x: tensor<?x4x4x8xf32>, %s: tensor<8xf32>, %i: tensor<3xf32>) {
  // expected-error @+2 {{'est.fused_batch_norm_grad' op inv_std [3] must have the shape [8] of x's channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %do = est.fused_batch_norm_grad %x, %x, %s, %s, %i {axis = 3 : i64} : tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<3xf32> -> tensor<?x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @int_x(%x: tensor<?x8xi32>, %s: tensor<8xi32>) {
  // expected-error @+1 {{'est.fused_batch_norm' op operand #0 must be}}
  %y, %m, %v, %i = est.fused_batch_norm %x, %s, %s : tensor<?x8xi32>, tensor<8xi32>, tensor<8xi32> -> tensor<?x8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
  return
}
