// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// layer_norm's gradients are one layer_norm_grad (its attributes carried
// over, the statistics recomputed from x): gamma used as both parameters
// gets dgamma + dbeta. x is not a variable: dx is dropped.
est.variable @g : tensor<16xf32> {trainable}

// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x16xf32>)
func.func @train(%x: tensor<?x3x16xf32>) {
  // CHECK: %[[G:.*]] = est.read_variable @g
  %g = est.read_variable @g : tensor<16xf32>
  %y = est.layer_norm %x, %g, %g {begin_norm_axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x3x16xf32>
  %sq = est.mul %y, %y : tensor<?x3x16xf32>, tensor<?x3x16xf32> -> tensor<?x3x16xf32>
  %loss = est.reduce_sum %sq : tensor<?x3x16xf32> -> tensor<f32>
  // CHECK: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = est.layer_norm_grad %[[X]], %[[G]], %{{.*}} {begin_norm_axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<?x3x16xf32>, tensor<16xf32>, tensor<?x3x16xf32> -> tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: %[[SUM:.*]] = est.add %[[DG]], %[[DB]]
  // CHECK: est.apply_gradients "sgd" {{.*}} [@g] %[[SUM]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// attention_softmax: the logits get attention_softmax_grad with the op's
// scale; an additive mask [?, 1, 8, 8] (here a variable's broadcast) gets
// the same op with scale 1 (the default, not printed), summed over the heads it broadcasts along.
est.variable @m : tensor<1x1x8x8xf32> {trainable}

// CHECK-LABEL: func.func @train
func.func @train(%l: tensor<?x2x8x8xf32>) {
  %m = est.read_variable @m : tensor<1x1x8x8xf32>
  // CHECK: %[[P:.*]] = est.attention_softmax
  %p = est.attention_softmax %l, %m {scale = 5.000000e-01 : f64} : tensor<?x2x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<?x2x8x8xf32>
  %pl = est.mul %p, %l : tensor<?x2x8x8xf32>, tensor<?x2x8x8xf32> -> tensor<?x2x8x8xf32>
  %loss = est.reduce_sum %pl : tensor<?x2x8x8xf32> -> tensor<f32>
  // CHECK-NOT: est.attention_softmax_grad %[[P]], %{{.*}} {scale = 5.000000e-01 : f64}
  // CHECK: %[[DZ:.*]] = est.attention_softmax_grad %[[P]], %{{.*}} : tensor<?x2x8x8xf32>
  // CHECK: %[[DM:.*]] = est.reduce_sum %[[DZ]] {axes = array<i64: 0, 1>, keep_dims = true}
  // CHECK: est.apply_gradients "sgd" {{.*}} [@m] %[[DM]]
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
