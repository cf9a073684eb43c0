module {
  est.variable @emb : tensor<1000000x16xf32> {trainable, initializer = #est.init<"zeros">}
  func.func @train(%ids: tensor<?xi64>, %t: tensor<?x16xf32>) -> tensor<f32> {
    %e = est.read_variable @emb : tensor<1000000x16xf32>
    %rows = est.gather %e, %ids : tensor<1000000x16xf32>, tensor<?xi64> -> tensor<?x16xf32>
    %d = est.sub %rows, %t : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %s = est.square %d : tensor<?x16xf32>
    %loss = est.reduce_sum %s : tensor<?x16xf32> -> tensor<f32>
    est.minimize %loss optimizer "adagrad" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
    return %loss : tensor<f32>
  }
}
