// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// est.gradient (tf.gradients): the gradients of one y with respect to a
// variable (the sum over its reads) and a tensor come from one sweep (one
// seed), built where the first gradient is; nothing is left of the ops.
// CHECK-LABEL: func.func @predict
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: est.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NOT: est.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G:.*]] = est.mul {{.*}} : tensor<1xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NOT: est.gradient
// CHECK: %[[GX:.*]] = est.mul %[[G]], %[[W]]
// CHECK: %[[GW:.*]] = est.mul %[[G]], %[[X]]
// CHECK: return %[[GW]], %[[GX]]
est.variable @w : tensor<3xf32> {trainable}

func.func @predict(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w = est.read_variable @w : tensor<3xf32>
  %0 = est.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y = est.reduce_sum %0 : tensor<3xf32> -> tensor<f32>
  %gw = est.gradient %y wrt %w : tensor<f32>, tensor<3xf32>
  %gx = est.gradient %y wrt %x : tensor<f32>, tensor<3xf32>
  return %gw, %gx : tensor<3xf32>, tensor<3xf32>
}

// -----

// A y that does not depend on x: zeros.
// CHECK-LABEL: func.func @unconnected
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>, %[[U:.*]]: tensor<2xf32>)
// CHECK: %[[Z:.*]] = est.zeros_like %[[U]]
// CHECK: return %[[Z]]
func.func @unconnected(%x: tensor<2xf32>, %u: tensor<2xf32>) -> tensor<2xf32> {
  %y = est.reduce_sum %x : tensor<2xf32> -> tensor<f32>
  %g = est.gradient %y wrt %u : tensor<f32>, tensor<2xf32>
  return %g : tensor<2xf32>
}

// -----

// The gradient of y with respect to itself is 1.
// CHECK-LABEL: func.func @itself
// CHECK: %[[ONE:.*]] = est.constant dense<1.000000e+00> : tensor<f32>
// CHECK: return %[[ONE]]
func.func @itself(%y: tensor<f32>) -> tensor<f32> {
  %g = est.gradient %y wrt %y : tensor<f32>, tensor<f32>
  return %g : tensor<f32>
}

