// RUN: estc-opt %s --split-input-file --est-ps-task | FileCheck %s

// Task 0 of 2 (placement: global_step, then @w on 1, @b on 0, @emb on 1):
// @train takes @b's gradient and the learning rate, applies the same
// optimizer to @b alone and increments global_step; the forward pass,
// @eval and the other task's variables are gone.
// CHECK-LABEL: module
// CHECK-NOT: est.variable @w
// CHECK-NOT: est.variable @emb
// CHECK: est.variable @b
// CHECK-NOT: func.func @eval
// CHECK: func.func @train(%[[G:.*]]: tensor<3xf32> {est.name = "grad/b"}, %[[LR:.*]]: tensor<f32> {est.name = "learning_rate/0"})
// CHECK-NEXT: %[[LR64:.*]] = est.cast %[[LR]] {{.*}} -> tensor<f64>
// CHECK-NEXT: est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@b] %[[G]] : tensor<3xf32> learning_rate %[[LR64]] : tensor<f64>{{$}}
// CHECK-NEXT: return
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 0 : i64} {
  est.variable @w : tensor<4x3xf32> {trainable}
  est.variable @b : tensor<3xf32> {trainable}
  est.variable @emb : tensor<10x2xf32> {trainable}
  func.func @train(%x: tensor<?x4xf32>, %gw: tensor<4x3xf32>, %gb: tensor<3xf32>, %lr: tensor<f64>, %ids: tensor<?xi64>, %rows: tensor<?x2xf32>) -> (tensor<?x4xf32> {est.name = "x"}) {
    %y = est.relu %x : tensor<?x4xf32> -> tensor<?x4xf32>
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@w, @b] %gw, %gb : tensor<4x3xf32>, tensor<3xf32> learning_rate %lr : tensor<f64> sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x2xf32>)
    return %y : tensor<?x4xf32>
  }
  func.func @eval(%x: tensor<?x4xf32>) -> (tensor<?x4xf32> {est.name = "x"}) {
    return %x : tensor<?x4xf32>
  }
}

// -----

// Task 1 of the same: @w dense and @emb sparse (ids and rows with the
// number of rows as their first dimension); global_step is not counted
// here.
// CHECK-LABEL: module
// CHECK: est.variable @w
// CHECK-NOT: est.variable @b
// CHECK: est.variable @emb
// CHECK: func.func @train(%{{.*}}: tensor<4x3xf32> {est.name = "grad/w"}, %{{.*}}: tensor<?xi64> {est.name = "ids/emb", est.values_dim}, %{{.*}}: tensor<?x2xf32> {est.name = "rows/emb", est.values_dim}, %{{.*}}: tensor<f32> {est.name = "learning_rate/0"})
// CHECK: est.apply_gradients "adagrad" {{.*}} [@w] {{.*}} sparse [@emb] {{.*}} {keep_global_step = true}
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 1 : i64} {
  est.variable @w : tensor<4x3xf32> {trainable}
  est.variable @b : tensor<3xf32> {trainable}
  est.variable @emb : tensor<10x2xf32> {trainable}
  func.func @train(%gw: tensor<4x3xf32>, %gb: tensor<3xf32>, %lr: tensor<f64>, %ids: tensor<?xi64>, %rows: tensor<?x2xf32>) {
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@w, @b] %gw, %gb : tensor<4x3xf32>, tensor<3xf32> learning_rate %lr : tensor<f64> sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x2xf32>)
    return
  }
}

// -----

// Task 0 holding none of the step's variables still counts the steps: an
// empty update.
// CHECK-LABEL: module
// CHECK: func.func @train() {
// CHECK-NEXT: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} []{{$}}
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 0 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
    return
  }
}

// -----

// SyncReplicasOptimizer's hyperparameters: the module records them for the
// task's server (estc.ps_sync = [replicas_to_aggregate, total_num_replicas]).
// CHECK-LABEL: module attributes
// CHECK-SAME: estc.ps_sync = array<i64: 2, 3>
module attributes {estc.ps_tasks = 1 : i64, estc.ps_task = 0 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, replicas_to_aggregate = 2 : i64, total_num_replicas = 3 : i64} [@w] %g : tensor<3xf32>
    return
  }
}

// -----

// A module already split (estc.ps_split: the pipeline's stages run again
// from the start on a lowered module) is left alone.
// CHECK-LABEL: module attributes
// CHECK: func.func @train(%{{.*}}: tensor<3xf32> {est.name = "grad/w"})
// CHECK-NEXT: est.read_variable @w
module attributes {estc.ps_tasks = 2 : i64, estc.ps_task = 1 : i64, estc.ps_split} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32> {est.name = "grad/w"}) {
    %w = est.read_variable @w : tensor<3xf32>
    %n = est.sub %w, %g : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    est.assign_variable @w, %n : tensor<3xf32>
    return
  }
}

// -----

// The learning rate the step computes is an input of every task, also of
// one that holds none of the update's variables (the workers send it to
// all): task 2 of 3 here, where @w is on task 1.
// CHECK-LABEL: module
// CHECK: func.func @train(%{{.*}}: tensor<f32> {est.name = "learning_rate/0"})
// CHECK-NEXT: return
module attributes {estc.ps_tasks = 3 : i64, estc.ps_task = 2 : i64} {
  est.variable @w : tensor<3xf32> {trainable}
  func.func @train(%g: tensor<3xf32>, %lr: tensor<f32>) {
    est.apply_gradients "sgd" {} [@w] %g : tensor<3xf32> learning_rate %lr : tensor<f32>
    return
  }
}
