// RUN: estc-opt %s --split-input-file --verify-diagnostics --est-ps-worker

module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  est.variable @mean : tensor<3xf32>
  func.func @train(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
    // expected-error @below {{est-ps-worker: @train assigns variable 'mean' itself (not through an optimizer)}}
    est.assign_variable @mean, %g : tensor<3xf32>
    return
  }
}

// -----

module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>) {
    // expected-error @below {{est-ps-worker: clip_gradients_by_global_norm needs every gradient of the step}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, clip_gradients_by_global_norm = 1.000000e+00 : f64} [@w] %g : tensor<3xf32>
    return
  }
}

// -----

module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<3xf64> {trainable}
  func.func @train(%g: tensor<3xf64>) {
    // expected-error @below {{est-ps-worker: variable 'w' is 'tensor<3xf64>'; parameter-server training updates float32 variables}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf64>
    return
  }
}

// -----

module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
    // expected-error @below {{est-ps-worker: variable 'w' is updated by two optimizers of one step}}
    est.apply_gradients "adam" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
    return
  }
}

// -----

module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  est.variable @v : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, replicas_to_aggregate = 2 : i64} [@w] %g : tensor<3xf32>
    // expected-error @below {{est-ps-worker: the step's optimizers differ in synchronous training}}
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %g : tensor<3xf32>
    return
  }
}
