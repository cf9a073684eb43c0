// RUN: estc-opt %s --split-input-file --verify-diagnostics --est-expand-optimizers

est.variable @w : tensor<3xf32> {trainable}

func.func @bad_clip(%g: tensor<3xf32>) {
  // expected-error @+1 {{clip_gradients_by_global_norm must be a positive number, got -1.000000e+00 : f64}}
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, clip_gradients_by_global_norm = -1.000000e+00 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

est.variable @w : tensor<3xf32> {trainable}

func.func @bad_lr(%g: tensor<3xf32>, %lr: tensor<2xf32>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of}}
  est.apply_gradients "sgd" {} [@w] %g : tensor<3xf32> learning_rate %lr : tensor<2xf32>
  return
}
