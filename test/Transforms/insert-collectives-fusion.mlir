// RUN: estc-opt %s --split-input-file --est-insert-collectives --verify-diagnostics | FileCheck %s

// Two optimizers in one step (a linear part with ftrl, a DNN with adagrad):
// the dense gradients of both are one buffer per element type, reduced
// before the first update -- one collective per type and step, f32 and f64
// apart; every update sees the reduced slices.
module attributes {estc.replicas = 2 : i64} {
  est.variable @lin : tensor<5xf32> {trainable}
  est.variable @w : tensor<2x2xf32> {trainable}
  est.variable @d : tensor<3xf64> {trainable}

  // CHECK-LABEL: func.func @two_updates
  // CHECK: %[[F32:.*]] = est.concat {{.*}} -> tensor<9xf32>
  // CHECK: %[[M32:.*]] = est.all_reduce "mean" %[[F32]] : tensor<9xf32>
  // CHECK: %[[LIN:.*]] = est.slice %[[M32]] {begin = array<i64: 0>, size = array<i64: 5>}
  // CHECK: %[[LIN2:.*]] = est.reshape %[[LIN]] {shape = array<i64: 5>}
  // CHECK: %[[W:.*]] = est.slice %[[M32]] {begin = array<i64: 5>, size = array<i64: 4>}
  // CHECK: %[[W2:.*]] = est.reshape %[[W]] {shape = array<i64: 2, 2>}
  // CHECK: %[[M64:.*]] = est.all_reduce "mean" %{{.*}} : tensor<3xf64>
  // CHECK-NOT: est.all_reduce
  // CHECK: est.apply_gradients "ftrl" {{.*}} [@lin] %[[LIN2]]
  // CHECK: est.apply_gradients "adagrad" {{.*}} [@w, @d] %[[W2]], %{{.*}} :
  // CHECK-NOT: est.all_reduce
  // CHECK: return
  func.func @two_updates(%glin: tensor<5xf32>, %gw: tensor<2x2xf32>, %gd: tensor<3xf64>) {
    est.apply_gradients "ftrl" {learning_rate = 1.000000e-01 : f64} [@lin] %glin : tensor<5xf32>
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@w, @d] %gw, %gd : tensor<2x2xf32>, tensor<3xf64>
    return
  }
}

// -----

module attributes {estc.replicas = 2 : i64} {
  est.variable @v : tensor<3xf32> {trainable}
  func.func @dynamic_gradient(%g: tensor<?xf32>) {
    // expected-error @+1 {{est-insert-collectives: a gradient of dynamic shape 'tensor<?xf32>'}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %g : tensor<?xf32>
    return
  }
}
