// RUN: estc-opt %s --split-input-file --est-insert-collectives --verify-diagnostics

// A later optimizer's gradient that reads a variable after the first
// update cannot move before it: the replicas would average another value.
module attributes {estc.replicas = 2 : i64} {
  est.variable @a : tensor<3xf32> {trainable}
  est.variable @b : tensor<2xf32> {trainable}

  func.func @reads_after_update(%ga: tensor<3xf32>) {
    // expected-error @+1 {{est-insert-collectives: a gradient is computed after the first optimizer update and cannot move before it (it reads a variable)}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@a] %ga : tensor<3xf32>
    %gb = est.read_variable @b : tensor<2xf32>
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@b] %gb : tensor<2xf32>
    return
  }
}

// -----

// Optimizer updates in different blocks.
module attributes {estc.replicas = 2 : i64} {
  est.variable @a : tensor<3xf32> {trainable}

  func.func @two_blocks(%ga: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@a] %ga : tensor<3xf32>
    cf.br ^next
  ^next:
    // expected-error @+1 {{est-insert-collectives: optimizer updates in different blocks}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@a] %ga : tensor<3xf32>
    return
  }
}
