// A training step through an est.scan over a run-time number of steps: the
// sequence length T of a batch-major input marked est.sequence_dim
// (docs/design/run-time-dimensions.md), transposed to time major. The
// scans' stacks of T + 1 or T slots of [batch, 4] grow with batch * T, so
// memory planning places them in the per-example-step region of the arena
// (R * batch * T bytes after the per-step region), and nothing is
// allocated. A time-major input whose dimension 0 is not marked would be
// taken for the batch, and a stack of batch * batch elements has no place
// in the arena (est-memory-planning: "not linear in the batch size").
// RUN: estc-opt %s --estc-est-stage --estc-autodiff-stage \
// RUN:   --estc-decompose-stage --estc-linalg-stage --estc-fusion-stage \
// RUN:   --estc-bufferize-stage --estc-memplan-stage \
// RUN:   | FileCheck %s --implicit-check-not=memref.alloc

// Arena [S, P, status, V, Q, R]: per-example-step buffers (R > 0).
// CHECK: module attributes {estc.arena = {{{.*}}train = array<i64: {{[0-9]+}}, {{[0-9]+}}, -1, 0, {{[0-9]+}}, {{[1-9][0-9]*}}>}
// CHECK-LABEL: func.func @train(
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<?xi8> {est.name = "arena"}
// CHECK-SAME: %[[X:[^:]*]]: memref<?x?x4xf32> {est.name = "features/x", est.sequence_dim}
// CHECK-DAG: %[[T:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[B:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[BT:.*]] = arith.muli %[[B]], %[[T]]
// CHECK: memref.view %[[ARENA]]{{.*}} to memref<?x?x4xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK: math.tanh
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK-LABEL: func.func @init(

est.variable @w : tensor<4x4xf32> {trainable, initializer = #est.init<"glorot_uniform", {seed = 7 : i64}>}

func.func @train(%xb: tensor<?x?x4xf32> {est.name = "features/x", est.sequence_dim}) -> (tensor<f32> {est.name = "loss"}) {
  %w = est.read_variable @w : tensor<4x4xf32>
  %xs = est.transpose %xb {perm = array<i64: 1, 0, 2>} : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %x0 = est.reduce_sum %xb {axes = array<i64: 1>} : tensor<?x?x4xf32> -> tensor<?x4xf32>
  %h0 = est.zeros_like %x0 : tensor<?x4xf32>
  %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %m = est.matmul %hp, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %sq = est.square %ys : tensor<?x?x4xf32>
  %l = est.reduce_mean %sq : tensor<?x?x4xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.01 : f64} : tensor<f32>
  return %l : tensor<f32>
}
