// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce -verify-diagnostics | FileCheck %s

// est.fused_batch_norm's y gets the fused gradient op (dx, dscale,
// doffset); the statistics feed the moving averages, which no gradient
// reads.

est.variable @gamma : tensor<4xf32> {trainable}
est.variable @beta : tensor<4xf32> {trainable}
est.variable @w : tensor<1x3x3x4xf32> {trainable}
est.variable @mean : tensor<4xf32>

// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x3x4xf32>)
func.func @train(%x: tensor<?x3x3x4xf32>) {
  %gamma = est.read_variable @gamma : tensor<4xf32>
  %beta = est.read_variable @beta : tensor<4xf32>
  %w = est.read_variable @w : tensor<1x3x3x4xf32>
  // CHECK: %[[A:.*]] = est.mul %[[X]]
  %a = est.mul %x, %w : tensor<?x3x3x4xf32>, tensor<1x3x3x4xf32> -> tensor<?x3x3x4xf32>
  // CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]], %[[I:.*]] = est.fused_batch_norm %[[A]]
  %y, %m, %v, %inv = est.fused_batch_norm %a, %gamma, %beta {axis = 3 : i64} : tensor<?x3x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  est.assign_variable @mean, %m : tensor<4xf32>
  %loss = est.reduce_sum %y : tensor<?x3x3x4xf32> -> tensor<f32>
  // CHECK: %[[DX:.*]], %[[DS:.*]], %[[DO:.*]] = est.fused_batch_norm_grad %{{.*}}, %[[A]], %{{.*}}, %[[M]], %[[I]] {axis = 3 : i64}
  // CHECK: est.mul %[[DX]], %[[X]]
  // CHECK: est.apply_gradients "sgd" {{.*}} [@gamma, @beta, @w] %[[DS]], %[[DO]], %{{.*}}
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// A loss that reads the batch statistics has no gradient through them (TF's
// FusedBatchNorm neither): the minimize stays, with a warning.
est.variable @gamma : tensor<4xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK-NOT: est.fused_batch_norm_grad
// CHECK: est.minimize
func.func @train(%x: tensor<?x3x3x4xf32>) {
  %gamma = est.read_variable @gamma : tensor<4xf32>
  %y, %m, %v, %inv = est.fused_batch_norm %x, %gamma, %gamma {axis = 3 : i64} : tensor<?x3x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %loss = est.reduce_sum %v : tensor<4xf32> -> tensor<f32>
  // expected-warning @+1 {{not differentiated: the gradient through est.fused_batch_norm's batch statistics is not defined (only y is differentiable, as in TF's FusedBatchNorm) (needed to train on the loss 'est.reduce_sum')}}
  est.minimize %loss optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}
