// RUN: estc-opt %s --split-input-file --est-ps-worker | FileCheck %s

// Two ps tasks. Placement (TF's round robin): global_step on task 0, then
// the updated variables in module order: @w on 1, @b on 0, @emb on 1. The
// update becomes pushes (the learning rate the step computes, the dense
// gradients flattened, the sparse one's ids as i64 and rows); @emb, only
// gathered, is pulled by rows and leaves the module; @w and @b stay as
// copies marked with their task. @frozen, not updated, stays as it is.
// CHECK-LABEL: module attributes
// CHECK-SAME: estc.ps_inputs = [{key = "learning_rate/0", type = tensor<f32>}, {key = "grad/w", type = tensor<4x3xf32>}, {key = "grad/b", type = tensor<3xf32>}, {key = "ids/emb", type = tensor<?xi64>}, {key = "rows/emb", type = tensor<?x2xf32>}]
// CHECK-SAME: estc.ps_remote = [{name = "emb", task = 1 : i64, type = tensor<10x2xf32>}]
// CHECK-NOT: est.variable @emb
// CHECK-DAG: est.variable @w : tensor<4x3xf32> {{{.*}}est.ps_task = 1 : i64
// CHECK-DAG: est.variable @b : tensor<3xf32> {{{.*}}est.ps_task = 0 : i64
// CHECK-DAG: est.variable @frozen : tensor<3xf32>{{$}}
// CHECK-DAG: est.variable @global_step : tensor<i64> {{{.*}}est.ps_task = 0 : i64
module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @w : tensor<4x3xf32> {trainable}
  est.variable @b : tensor<3xf32> {trainable}
  est.variable @emb : tensor<10x2xf32> {trainable}
  est.variable @frozen : tensor<3xf32>

  // CHECK-LABEL: func.func @train
  func.func @train(%ids: tensor<?x3xi32>, %gw: tensor<4x3xf32>, %gb: tensor<3xf32>, %lr: tensor<f64>) -> (tensor<?x3x2xf32> {est.name = "rows"}) {
    // CHECK: %[[FLAT:.*]] = est.reshape %arg0 {shape = array<i64: -1>}
    // CHECK: %[[IDS:.*]] = est.cast %[[FLAT]] {{.*}} -> tensor<?xi64>
    // CHECK: %[[ROWS:.*]] = est.ps_pull_rows "emb"[0] (%[[IDS]] : tensor<?xi64>) -> tensor<?x2xf32>
    // CHECK: %[[READY:.*]] = est.ps_wait %[[ROWS]] : tensor<?x2xf32> -> tensor<?x2xf32>
    // CHECK: %[[E:.*]] = est.reshape %[[READY]] {shape = array<i64: -1, 3, 2>}
    %t = est.read_variable @emb : tensor<10x2xf32>
    %e = est.gather %t, %ids : tensor<10x2xf32>, tensor<?x3xi32> -> tensor<?x3x2xf32>
    %fi = est.reshape %ids {shape = array<i64: -1>} : tensor<?x3xi32> -> tensor<?xi32>
    %fr = est.reshape %e {shape = array<i64: -1, 2>} : tensor<?x3x2xf32> -> tensor<?x2xf32>
    // CHECK: %[[LR:.*]] = est.cast %arg3 {{.*}} -> tensor<f32>
    // CHECK: %[[LR1:.*]] = est.reshape %[[LR]] {shape = array<i64: 1>}
    // CHECK: est.ps_push "learning_rate/0"[0] %[[LR1]] : tensor<1xf32>
    // CHECK: est.ps_push "grad/w"[1] %{{.*}} : tensor<12xf32>
    // CHECK: est.ps_push "grad/b"[2] %{{.*}} : tensor<3xf32>
    // CHECK: est.ps_push "ids/emb"[3] %{{.*}} : tensor<?xi64>
    // CHECK: est.ps_push "rows/emb"[4] %{{.*}} : tensor<?xf32>
    // CHECK-NOT: est.apply_gradients
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [@w, @b] %gw, %gb : tensor<4x3xf32>, tensor<3xf32> learning_rate %lr : tensor<f64> sparse [@emb] indices(%fi : tensor<?xi32>) values(%fr : tensor<?x2xf32>)
    // CHECK: return %[[E]]
    return %e : tensor<?x3x2xf32>
  }
}

// -----

// A table also read densely stays as the worker's copy (pulled whole).
// CHECK-LABEL: module attributes
// CHECK-SAME: estc.ps_remote = []
// CHECK: est.variable @emb : tensor<10x2xf32> {{{.*}}est.ps_task = 1 : i64
// CHECK-NOT: est.ps_pull_rows
module attributes {estc.ps_tasks = 3 : i64} {
  est.variable @emb : tensor<10x2xf32> {trainable}
  func.func @train(%ids: tensor<?xi64>, %rows: tensor<?x2xf32>) -> (tensor<10x2xf32> {est.name = "table"}) {
    %t = est.read_variable @emb : tensor<10x2xf32>
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x2xf32>)
    return %t : tensor<10x2xf32>
  }
}

// -----

// Without estc.ps_tasks, or on a task's module, the pass does nothing.
// CHECK-LABEL: func.func @untouched
// CHECK: est.apply_gradients
module {
  est.variable @u : tensor<3xf32> {trainable}
  func.func @untouched(%g: tensor<3xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@u] %g : tensor<3xf32>
    return
  }
}

// -----

// Two tables looked up in one step: both pulls are asked as soon as their
// ids are known, and one wait precedes the first read of their rows.
// CHECK-LABEL: func.func @two_tables
// CHECK-DAG: est.ps_pull_rows "a"[0] (%arg0
// CHECK-DAG: est.ps_pull_rows "b"[1] (%arg1
// CHECK: est.ps_wait %{{.*}}, %{{.*}} : tensor<?x2xf32>, tensor<?x2xf32>
// CHECK-NOT: est.ps_wait
// CHECK: est.add
module attributes {estc.ps_tasks = 2 : i64} {
  est.variable @a : tensor<10x2xf32> {trainable}
  est.variable @b : tensor<20x2xf32> {trainable}
  func.func @two_tables(%ia: tensor<?xi64>, %ib: tensor<?xi64>, %ga: tensor<?x2xf32>, %gb: tensor<?x2xf32>) -> (tensor<?x2xf32> {est.name = "sum"}) {
    %ta = est.read_variable @a : tensor<10x2xf32>
    %ea = est.gather %ta, %ia : tensor<10x2xf32>, tensor<?xi64> -> tensor<?x2xf32>
    %tb = est.read_variable @b : tensor<20x2xf32>
    %eb = est.gather %tb, %ib : tensor<20x2xf32>, tensor<?xi64> -> tensor<?x2xf32>
    %s = est.add %ea, %eb : tensor<?x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [] sparse [@a, @b] indices(%ia, %ib : tensor<?xi64>, tensor<?xi64>) values(%ga, %gb : tensor<?x2xf32>, tensor<?x2xf32>)
    return %s : tensor<?x2xf32>
  }
}

// -----

// The greedy strategy (TF's GreedyLoadBalancingStrategy, byte_size_load_fn):
// global_step on task 0 (8 bytes), @big on the emptier task 1 (1600), then
// @s1 and @s2 on task 0, still the lighter one (24, then 40 bytes); round
// robin would have put @s2 on task 1.
// CHECK-LABEL: module attributes
// CHECK-SAME: estc.ps_strategy = "greedy"
// CHECK-DAG: est.variable @big : tensor<100x4xf32> {{{.*}}est.ps_task = 1 : i64
// CHECK-DAG: est.variable @s1 : tensor<4xf32> {{{.*}}est.ps_task = 0 : i64
// CHECK-DAG: est.variable @s2 : tensor<4xf32> {{{.*}}est.ps_task = 0 : i64
// CHECK-DAG: est.variable @global_step : tensor<i64> {{{.*}}est.ps_task = 0 : i64
module attributes {estc.ps_tasks = 2 : i64, estc.ps_strategy = "greedy"} {
  est.variable @global_step : tensor<i64>
  est.variable @big : tensor<100x4xf32> {trainable}
  est.variable @s1 : tensor<4xf32> {trainable}
  est.variable @s2 : tensor<4xf32> {trainable}
  func.func @greedy(%g: tensor<100x4xf32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>) {
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@big, @s1, @s2] %g, %g1, %g2 : tensor<100x4xf32>, tensor<4xf32>, tensor<4xf32>
    return
  }
}
