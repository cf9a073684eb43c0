// RUN: estc-opt %s --split-input-file --est-insert-collectives | FileCheck %s

// Dense gradients of one element type and the loss: one fused buffer, one
// mean all-reduce, sliced back; the sparse gradient (i32 ids, rank-3 rows)
// is gathered.
module attributes {estc.replicas = 3 : i64} {
  est.variable @w : tensor<4x3xf32> {trainable}
  est.variable @b : tensor<3xf32> {trainable}
  est.variable @emb : tensor<10x2x2xf32> {trainable}

  // CHECK-LABEL: func.func @train
  func.func @train(%gw: tensor<4x3xf32>, %gb: tensor<3xf32>, %ids: tensor<?xi32>, %rows: tensor<?x2x2xf32>, %loss: tensor<f32>) -> (tensor<f32> {est.name = "loss"}) {
    // CHECK: %[[W:.*]] = est.reshape %arg0 {shape = array<i64: 12>}
    // CHECK: %[[B:.*]] = est.reshape %arg1 {shape = array<i64: 3>}
    // CHECK: %[[L:.*]] = est.reshape %arg4 {shape = array<i64: 1>}
    // CHECK: %[[ALL:.*]] = est.concat %[[W]], %[[B]], %[[L]] {axis = 0 : i64} : (tensor<12xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<16xf32>
    // CHECK: %[[MEAN:.*]] = est.all_reduce "mean" %[[ALL]] : tensor<16xf32>
    // CHECK: est.slice %[[MEAN]] {begin = array<i64: 0>, size = array<i64: 12>}
    // CHECK: est.slice %[[MEAN]] {begin = array<i64: 12>, size = array<i64: 3>}
    // CHECK: %[[LS:.*]] = est.slice %[[MEAN]] {begin = array<i64: 15>, size = array<i64: 1>}
    // CHECK: %[[LOSS:.*]] = est.reshape %[[LS]] {shape = array<i64>} : tensor<1xf32> -> tensor<f32>
    // CHECK: %[[IDS:.*]] = est.cast %arg2 {{.*}} -> tensor<?xi64>
    // CHECK: %[[ROWS:.*]] = est.reshape %arg3 {shape = array<i64: -1, 4>}
    // CHECK: %[[GI:.*]], %[[GR:.*]] = est.all_gather %[[IDS]], %[[ROWS]] {mean, replicas = 3 : i64} : tensor<?xi64>, tensor<?x4xf32> -> tensor<?xi64>, tensor<?x4xf32>
    // CHECK: est.cast %[[GI]] {{.*}} -> tensor<?xi32>
    // CHECK: est.reshape %[[GR]] {shape = array<i64: -1, 2, 2>}
    // CHECK: est.apply_gradients "adagrad"
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@w, @b] %gw, %gb : tensor<4x3xf32>, tensor<3xf32> sparse [@emb] indices(%ids : tensor<?xi32>) values(%rows : tensor<?x2x2xf32>)
    // CHECK-NOT: est.all_reduce
    // CHECK: return %[[LOSS]]
    return %loss : tensor<f32>
  }

  // A function without updates is left alone.
  // CHECK-LABEL: func.func @eval
  // CHECK-NOT: est.all_reduce
  // CHECK: return
  func.func @eval(%loss: tensor<f32>) -> (tensor<f32> {est.name = "loss"}) {
    return %loss : tensor<f32>
  }
}

// -----

// A loss of another element type than the gradients: averaged on its own.
// CHECK-LABEL: func.func @f64_loss
// CHECK: est.all_reduce "mean" %{{.*}} : tensor<3xf32>
// CHECK: est.apply_gradients
// CHECK: est.all_reduce "mean" %{{.*}} : tensor<1xf64>
module attributes {estc.replicas = 2 : i64} {
  est.variable @u : tensor<3xf32> {trainable}
  func.func @f64_loss(%g: tensor<3xf32>, %loss: tensor<f64>) -> (tensor<f64> {est.name = "loss"}) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@u] %g : tensor<3xf32>
    return %loss : tensor<f64>
  }
}

// -----

// Without estc.replicas (or with 1) the pass does nothing.
// CHECK-LABEL: func.func @one_replica
// CHECK-NOT: est.all_reduce
// CHECK: est.apply_gradients
est.variable @v : tensor<3xf32> {trainable}
func.func @one_replica(%g: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %g : tensor<3xf32>
  return
}

// -----

// Two optimizers in one step (DNNLinearCombined's): est-autodiff computes
// the second one's gradient after the first update, from values computed
// before it. It moves before the first update, into the one fused buffer.
module attributes {estc.replicas = 2 : i64} {
  est.variable @a : tensor<3xf32> {trainable}
  est.variable @b : tensor<2xf32> {trainable}

  // CHECK-LABEL: func.func @two_optimizers
  func.func @two_optimizers(%ga: tensor<3xf32>, %x: tensor<2xf32>, %s: tensor<f32>) {
    // CHECK: %[[GB:.*]] = est.mul %arg1, %arg2
    // CHECK: est.concat
    // CHECK: est.all_reduce "mean" %{{.*}} : tensor<5xf32>
    // CHECK: est.apply_gradients "sgd"
    // CHECK-NOT: est.mul
    // CHECK: est.apply_gradients "adagrad"
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@a] %ga : tensor<3xf32>
    %gb = est.mul %x, %s : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@b] %gb : tensor<2xf32>
    return
  }
}
