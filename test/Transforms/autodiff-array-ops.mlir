// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce | FileCheck %s

// reverse: the gradient is the same reversal of g.
// CHECK-LABEL: func.func @reverse
// CHECK: %[[G:.*]] = est.reverse %{{.*}} {axes = array<i64: 0, -1>} : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %{{.*}} : tensor<3x4xf32>
est.variable @w : tensor<3x4xf32> {trainable}

func.func @reverse(%x: tensor<3x4xf32>) {
  %w = est.read_variable @w : tensor<3x4xf32>
  %r = est.reverse %w {axes = array<i64: 0, -1>} : tensor<3x4xf32> -> tensor<3x4xf32>
  %p = est.mul %r, %x : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %loss = est.reduce_sum %p : tensor<3x4xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// scatter max (TF's _TensorScatterMinOrMaxGrad): g goes to the elements
// of ref and updates equal to the result, divided by the number of such
// elements at each position (the update hits scatter-added onto ref's).
// CHECK-LABEL: func.func @scatter_max
// CHECK: %[[Y:.*]] = est.scatter %[[REF:.*]], %[[I:.*]], %[[U:.*]] {mode = "max"}
// CHECK-DAG: %[[RH:.*]] = est.equal %[[REF]], %[[Y]]
// CHECK-DAG: %[[YU:.*]] = est.gather %[[Y]], %[[I]]
// CHECK-DAG: %[[UH:.*]] = est.equal %[[U]], %[[YU]]
// CHECK: %[[HITS:.*]] = est.scatter %{{.*}}, %[[I]], %{{.*}} :
// CHECK: est.div %{{.*}}, %[[HITS]]
// CHECK: est.apply_gradients
est.variable @r : tensor<6x3xf32> {trainable}
est.variable @u : tensor<2x3xf32> {trainable}

func.func @scatter_max(%i: tensor<2xi64>) {
  %r = est.read_variable @r : tensor<6x3xf32>
  %u = est.read_variable @u : tensor<2x3xf32>
  %y = est.scatter %r, %i, %u {mode = "max"} : tensor<6x3xf32>, tensor<2xi64>, tensor<2x3xf32> -> tensor<6x3xf32>
  %loss = est.reduce_sum %y : tensor<6x3xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}
