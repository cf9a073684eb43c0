// RUN: estc-opt %s --split-input-file --est-autodiff --allow-unregistered-dialect --verify-diagnostics

// An op without a gradient rule on the path: one error at the gradient.
func.func @no_rule(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "test.opaque"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %y = est.reduce_sum %0 : tensor<2xf32> -> tensor<f32>
  // expected-error @+1 {{cannot differentiate 'est.reduce_sum': no gradient rule for 'test.opaque'}}
  %g = est.gradient %y wrt %x : tensor<f32>, tensor<2xf32>
  return %g : tensor<2xf32>
}

// -----

// Inside a loop body: an error.
func.func @in_scan(%x: tensor<f32>, %seq: tensor<4xf32>) -> tensor<f32> {
  %r = est.scan inits(%x : tensor<f32>) over(%seq : tensor<4xf32>) -> (tensor<f32>) {
  ^bb0(%c: tensor<f32>, %s: tensor<f32>):
    %y = est.mul %c, %s : tensor<f32>, tensor<f32> -> tensor<f32>
    // expected-error @+1 {{est.gradient must be in a function's body, not in a loop body or branch}}
    %g = est.gradient %y wrt %c : tensor<f32>, tensor<f32>
    est.yield %g : tensor<f32>
  }
  return %r : tensor<f32>
}
