// A training step through an est.scan, from the est stage to the llvm
// stage (the registered stages, as the driver runs them): the forward and
// the reverse scan are scf.for loops whose stacks, like every other
// temporary, memory planning places in the arena. After the memplan stage
// no memref.alloc is left (est-memory-planning fails on one it cannot
// place), and the LLVM dialect calls no malloc.
// RUN: estc-opt %s --estc-est-stage --estc-autodiff-stage \
// RUN:   --estc-decompose-stage --estc-linalg-stage --estc-fusion-stage \
// RUN:   --estc-bufferize-stage --estc-memplan-stage -o %t.memplan.mlir
// RUN: FileCheck %s --check-prefix=MEMPLAN --implicit-check-not=memref.alloc < %t.memplan.mlir
// RUN: estc-opt %t.memplan.mlir --estc-llvm-stage | FileCheck %s --check-prefix=LLVM

// The step's arena: a static part and a per-example part.
// MEMPLAN: module attributes {estc.arena = {init = array<i64: {{[0-9]+}}, 0>, train = array<i64: {{[0-9]+}}, {{[1-9][0-9]*}}>}
// MEMPLAN-LABEL: func.func @train(
// MEMPLAN-SAME: %[[ARENA:[^:]*]]: memref<?xi8> {est.name = "arena"}
// The forward scan: the carried h in a stack of T + 1 = 6 slots, a view of
// the arena made before the loop. Its per-step outputs, the stacked h and
// the carried value at each step's start (which the reverse pass reads),
// have no stacks of their own: they are slots [1, 6) and [0, 5) of it.
// MEMPLAN: memref.view %[[ARENA]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<6x?x4xf32>
// MEMPLAN-NOT: memref<5x?x4xf32>
// MEMPLAN: scf.for %{{.*}} = %c0 to %c5 step %c1 {
// The step's [?, 4] x [4, 4] product, vectors in a loop over the rows
// (est-inline-small-matmuls: the weight's 4 rows loaded before it), then
// the tanh.
// MEMPLAN: vector.load %{{.*}} : memref<4x4xf32>, vector<4xf32>
// MEMPLAN: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// MEMPLAN: arith.mulf {{.*}} : vector<4xf32>
// MEMPLAN: math.tanh
// MEMPLAN: }
// The reverse scan: the gradient of h and the sum of the weight's gradient
// over the steps, which no per-step output reads: two slots each.
// MEMPLAN: memref.view %[[ARENA]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<2x?x4xf32>
// MEMPLAN: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<2x4x4xf32>
// MEMPLAN: scf.for %{{.*}} = %c0 to %c5 step %c1 {
// MEMPLAN: }
// MEMPLAN-LABEL: func.func @init(

// LLVM: llvm.func @train(
// LLVM-NOT: malloc
// LLVM: llvm.func @_mlir_ciface_train(
// LLVM-NOT: scf.for
// LLVM-NOT: memref.

est.variable @w : tensor<4x4xf32> {trainable, initializer = #est.init<"glorot_uniform", {seed = 7 : i64}>}
est.variable @u : tensor<4x1xf32> {trainable, initializer = #est.init<"zeros">}

// h_t = tanh(h_{t-1} w + x_t) over 5 time-major steps of a run-time batch,
// from zeros; the loss is the mean squared error of h_5 u.
func.func @train(%xs: tensor<5x?x4xf32> {est.name = "features/x"}, %y: tensor<?x1xf32> {est.name = "labels"}) -> (tensor<f32> {est.name = "loss"}) {
  %w = est.read_variable @w : tensor<4x4xf32>
  %u = est.read_variable @u : tensor<4x1xf32>
  %x0 = est.slice %xs {begin = array<i64: 0, 0, 0>, size = array<i64: 1, -1, 4>} : tensor<5x?x4xf32> -> tensor<1x?x4xf32>
  %r0 = est.reshape %x0 {shape = array<i64: -1, 4>} : tensor<1x?x4xf32> -> tensor<?x4xf32>
  %h0 = est.zeros_like %r0 : tensor<?x4xf32>
  %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<5x?x4xf32>) -> (tensor<?x4xf32>, tensor<5x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %m = est.matmul %hp, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %p = est.matmul %h, %u : tensor<?x4xf32>, tensor<4x1xf32> -> tensor<?x1xf32>
  %d = est.sub %p, %y : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %sq = est.square %d : tensor<?x1xf32>
  %l = est.reduce_mean %sq : tensor<?x1xf32> -> tensor<f32>
  est.minimize %l optimizer "adam" {learning_rate = 0.01 : f64} : tensor<f32>
  return %l : tensor<f32>
}
