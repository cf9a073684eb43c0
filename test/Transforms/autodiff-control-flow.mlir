// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce -verify-diagnostics | FileCheck %s

// est-autodiff through est.scan, est.if and est.while
// (compiler/Transforms/Autodiff.cpp, docs/design/control-flow.md
// "Autodiff").

// A scan's gradient is a scan in the other direction. The forward scan
// gains per-step outputs for the values the gradient rules read: the
// carried value at each step's start (%hp, for the matmul's weight
// gradient) and tanh's output (for tanh's rule); the stacked square
// output is a per-step output already, but the rules read tanh, not it.
// The transpose of the captured weight is loop-invariant: the reverse body
// recomputes it instead of storing one copy per step. The reverse scan
// carries the gradient of the carried value and the sum of the captured
// weight's gradient over the steps (from zeros), and scans the output
// gradient and the stored values.
est.variable @w : tensor<4x4xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[H0:.*]]: tensor<?x4xf32>, %[[XS:.*]]: tensor<?x?x4xf32>)
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[F:.*]]:4 = est.scan inits(%[[H0]] : tensor<?x4xf32>) over(%[[XS]] : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
// CHECK-NEXT: ^bb0(%[[HP:.*]]: tensor<?x4xf32>, %{{.*}}: tensor<?x4xf32>):
// CHECK-NEXT: est.transpose %[[W]]
// CHECK-NEXT: est.matmul %[[HP]]
// CHECK-NEXT: est.add
// CHECK-NEXT: %[[N:.*]] = est.tanh
// CHECK-NEXT: %[[Q:.*]] = est.square %[[N]]
// CHECK-NEXT: est.yield %[[N]], %[[Q]], %[[HP]], %[[N]] : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
// CHECK-NEXT: }
// The gradient of the stacked output (ones, the loss is its sum).
// CHECK: %[[GYS:.*]] = est.mul %{{.*}}, %{{.*}} : tensor<1x1x1xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
// CHECK: %[[GH:.*]] = est.zeros_like %[[F]]#0 : tensor<?x4xf32>
// CHECK: %[[GW0:.*]] = est.zeros_like %[[W]] : tensor<4x4xf32>
// CHECK: %[[R:.*]]:2 = est.scan inits(%[[GH]], %[[GW0]] : tensor<?x4xf32>, tensor<4x4xf32>) over(%[[GYS]], %[[F]]#2, %[[F]]#3 : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {reverse} -> (tensor<?x4xf32>, tensor<4x4xf32>) {
// CHECK-NEXT: ^bb0(%[[DH:.*]]: tensor<?x4xf32>, %[[SUM:.*]]: tensor<4x4xf32>, %[[DY:.*]]: tensor<?x4xf32>, %[[SHP:.*]]: tensor<?x4xf32>, %[[SN:.*]]: tensor<?x4xf32>):
// CHECK-NEXT: %[[WT:.*]] = est.transpose %[[W]] {perm = array<i64: 1, 0>}
// square: dy * 2n, added to the carried gradient.
// CHECK: est.mul %[[SN]], %{{.*}} : tensor<?x4xf32>, tensor<f32>
// CHECK: %[[DQ:.*]] = est.mul %[[DY]], %{{.*}}
// CHECK: %[[DN:.*]] = est.add %[[DH]], %[[DQ]]
// tanh: (1 - n^2) from the stored n.
// CHECK: est.mul %[[SN]], %[[SN]]
// CHECK: %[[DS:.*]] = est.mul %[[DN]], %{{.*}}
// The carried gradient through the matmul, the weight's from the stored
// carried value, added to the running sum.
// CHECK: %[[DHP:.*]] = est.matmul %[[DS]], %[[WT]] {transpose_b = true}
// CHECK: %[[DWT:.*]] = est.matmul %[[SHP]], %[[DS]] {transpose_a = true}
// CHECK: %[[DW:.*]] = est.transpose %[[DWT]]
// CHECK: %[[SUM2:.*]] = est.add %[[SUM]], %[[DW]]
// CHECK: est.yield %[[DHP]], %[[SUM2]] : tensor<?x4xf32>, tensor<4x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %[[R]]#1 : tensor<4x4xf32>
func.func @train(%h0: tensor<?x4xf32>, %xs: tensor<?x?x4xf32>) {
  %w = est.read_variable @w : tensor<4x4xf32>
  %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %wt = est.transpose %w {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %m = est.matmul %hp, %wt : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    %q = est.square %n : tensor<?x4xf32>
    est.yield %n, %q : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %l = est.reduce_sum %ys : tensor<?x?x4xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

// A reversed scan over a sequence computed from the variable: the
// backward scan runs forward (no {reverse}), and its stacked result is
// the gradient of the sequence (one slice per step), which flows on to
// the variable. The final carried value is what the loss reads: its
// gradient seeds the reverse scan's carried value. The mul's rule reads
// the slice and the carried value: the forward scan stores the carried
// value per step, but the slice needs no stored copy: the reverse scan
// takes the sequence itself.
est.variable @v : tensor<5x3xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[H0:.*]]: tensor<3xf32>)
// CHECK: %[[V:.*]] = est.read_variable @v
// CHECK: %[[SEQ:.*]] = est.sin %[[V]]
// CHECK: %[[F:.*]]:2 = est.scan inits(%[[H0]] : tensor<3xf32>) over(%[[SEQ]] : tensor<5x3xf32>) {reverse} -> (tensor<3xf32>, tensor<5x3xf32>) {
// CHECK-NEXT: ^bb0(%[[HP:.*]]: tensor<3xf32>, %[[X:.*]]: tensor<3xf32>):
// CHECK-NEXT: %[[M:.*]] = est.mul %[[HP]], %[[X]]
// CHECK-NEXT: est.yield %[[M]], %[[HP]] : tensor<3xf32>, tensor<3xf32>
// CHECK: %[[SEED:.*]] = est.ones_like %[[F]]#0
// CHECK: %[[G:.*]] = est.mul %{{.*}}, %[[SEED]]
// CHECK: %[[R:.*]]:2 = est.scan inits(%[[G]] : tensor<3xf32>) over(%[[F]]#1, %[[SEQ]] : tensor<5x3xf32>, tensor<5x3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
// CHECK-NEXT: ^bb0(%[[DH:.*]]: tensor<3xf32>, %[[SHP:.*]]: tensor<3xf32>, %[[SX:.*]]: tensor<3xf32>):
// CHECK-NEXT: %[[DHP:.*]] = est.mul %[[DH]], %[[SX]]
// CHECK-NEXT: %[[DX:.*]] = est.mul %[[DH]], %[[SHP]]
// CHECK-NEXT: est.yield %[[DHP]], %[[DX]] : tensor<3xf32>, tensor<3xf32>
// CHECK: %[[COS:.*]] = est.cos %[[V]]
// CHECK: %[[DV:.*]] = est.mul %[[R]]#1, %[[COS]]
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %[[DV]] : tensor<5x3xf32>
func.func @train(%h0: tensor<3xf32>) {
  %v = est.read_variable @v : tensor<5x3xf32>
  %seq = est.sin %v : tensor<5x3xf32>
  %h = est.scan inits(%h0 : tensor<3xf32>) over(%seq : tensor<5x3xf32>) {reverse} -> (tensor<3xf32>) {
  ^bb0(%hp: tensor<3xf32>, %x: tensor<3xf32>):
    %m = est.mul %hp, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    est.yield %m : tensor<3xf32>
  }
  %l = est.reduce_sum %h : tensor<3xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

// An est.if's gradient is an est.if on the same condition: the branch
// that ran recomputes its forward ops (nothing is stored: only one branch
// runs) and yields the gradients of the values it captures; the other
// yields zeros for them.
est.variable @v : tensor<3xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<3xf32>)
// CHECK: %[[V:.*]] = est.read_variable @v
// CHECK: est.if %[[C]] : tensor<i1> -> (tensor<3xf32>) {
// CHECK: est.sin
// CHECK: %[[G:.*]] = est.mul %{{.*}}, %{{.*}} : tensor<1xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK: %[[DV:.*]] = est.if %[[C]] : tensor<i1> -> (tensor<3xf32>) {
// CHECK-NEXT: %[[M:.*]] = est.mul %[[V]], %[[X]]
// CHECK-NEXT: %[[COS:.*]] = est.cos %[[M]]
// CHECK-NEXT: %[[DM:.*]] = est.mul %[[G]], %[[COS]]
// CHECK-NEXT: %[[D:.*]] = est.mul %[[DM]], %[[X]]
// CHECK-NEXT: est.yield %[[D]] : tensor<3xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[Z:.*]] = est.zeros_like %[[V]]
// CHECK-NEXT: est.yield %[[Z]] : tensor<3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %[[DV]] : tensor<3xf32>
func.func @train(%c: tensor<i1>, %x: tensor<3xf32>) {
  %v = est.read_variable @v : tensor<3xf32>
  %r = est.if %c : tensor<i1> -> (tensor<3xf32>) {
    %m = est.mul %v, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %s = est.sin %m : tensor<3xf32>
    est.yield %s : tensor<3xf32>
  } else {
    est.yield %x : tensor<3xf32>
  }
  %l = est.reduce_sum %r : tensor<3xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

// A bounded while is rewritten as a scan over maximum_iterations steps (a
// constant sequence of 6 zeros) carrying its values and whether it still
// runs: each step evaluates the condition only while running, and runs the
// body only when it holds (else passes the values through). That scan is
// then differentiated as any other: the reverse scan's body holds a
// backward est.if on the stored per-step condition. The forward scan stores
// per step what the backward est.if reads (the carried x at the step's
// start and whether the step ran), not the integer counter, which only the
// counter's increment reads (the backward if does not recompute it).
est.variable @v : tensor<3xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[N:.*]]: tensor<i32>, %[[X0:.*]]: tensor<3xf32>)
// CHECK-NOT: est.while
// CHECK: %[[V:.*]] = est.read_variable @v
// CHECK: %[[TRUE:.*]] = est.constant dense<true> : tensor<i1>
// CHECK: %[[STEPS:.*]] = est.constant dense<0> : tensor<6xi32>
// CHECK: %[[F:.*]]:5 = est.scan inits(%{{.*}}, %[[X0]], %[[TRUE]] : tensor<i32>, tensor<3xf32>, tensor<i1>) over(%[[STEPS]] : tensor<6xi32>) -> (tensor<i32>, tensor<3xf32>, tensor<i1>, tensor<6x3xf32>, tensor<6xi1>) {
// CHECK-NEXT: ^bb0(%[[I:.*]]: tensor<i32>, %[[X:.*]]: tensor<3xf32>, %[[LIVE:.*]]: tensor<i1>, %{{.*}}: tensor<i32>):
// CHECK-NEXT: %[[GO:.*]] = est.if %[[LIVE]] : tensor<i1> -> (tensor<i1>) {
// CHECK-NEXT: %[[LT:.*]] = est.less %[[I]], %[[N]]
// CHECK-NEXT: est.yield %[[LT]] : tensor<i1>
// CHECK-NEXT: } else {
// CHECK-NEXT: est.yield %[[LIVE]] : tensor<i1>
// CHECK-NEXT: }
// CHECK-NEXT: %[[STEP:.*]]:2 = est.if %[[GO]] : tensor<i1> -> (tensor<i32>, tensor<3xf32>) {
// CHECK-NEXT: est.add %[[I]]
// CHECK-NEXT: est.mul %[[X]], %[[V]]
// CHECK-NEXT: est.tanh
// CHECK-NEXT: est.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: est.yield %[[I]], %[[X]] : tensor<i32>, tensor<3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: est.yield %[[STEP]]#0, %[[STEP]]#1, %[[GO]], %[[X]], %[[GO]] : tensor<i32>, tensor<3xf32>, tensor<i1>, tensor<3xf32>, tensor<i1>
// CHECK: %[[R:.*]]:2 = est.scan inits(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>) over(%[[F]]#3, %[[F]]#4 : tensor<6x3xf32>, tensor<6xi1>) {reverse} -> (tensor<3xf32>, tensor<3xf32>) {
// CHECK-NEXT: ^bb0(%[[DX:.*]]: tensor<3xf32>, %[[SUM:.*]]: tensor<3xf32>, %[[SX:.*]]: tensor<3xf32>, %[[RAN:.*]]: tensor<i1>):
// CHECK-NEXT: %[[BACK:.*]]:2 = est.if %[[RAN]] : tensor<i1> -> (tensor<3xf32>, tensor<3xf32>) {
// CHECK-NEXT: est.mul %[[SX]], %[[V]]
// CHECK-NEXT: est.tanh
// CHECK-NOT: est.add {{.*}}tensor<i32>
// CHECK: est.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[Z:.*]] = est.zeros_like %[[V]]
// CHECK-NEXT: est.yield %[[DX]], %[[Z]] : tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[SUM2:.*]] = est.add %[[SUM]], %[[BACK]]#1
// CHECK-NEXT: est.yield %[[BACK]]#0, %[[SUM2]]
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %[[R]]#1 : tensor<3xf32>
func.func @train(%n: tensor<i32>, %x0: tensor<3xf32>) {
  %v = est.read_variable @v : tensor<3xf32>
  %z = est.constant dense<0> : tensor<i32>
  %one = est.constant dense<1> : tensor<i32>
  %i, %x = est.while inits(%z, %x0 : tensor<i32>, tensor<3xf32>) {maximum_iterations = 6 : i64} -> (tensor<i32>, tensor<3xf32>) cond {
  ^bb0(%ci: tensor<i32>, %cx: tensor<3xf32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>, %bx: tensor<3xf32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    %m = est.mul %bx, %v : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %y = est.tanh %m : tensor<3xf32>
    est.yield %j, %y : tensor<i32>, tensor<3xf32>
  }
  %l = est.reduce_sum %x : tensor<3xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

// Without maximum_iterations the reverse pass has no bound on what to
// store: the minimize stays (with a warning), so the driver drops @train
// and still compiles eval and predict.
est.variable @v : tensor<3xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK: est.while
// CHECK-NOT: est.scan
// CHECK-NOT: est.apply_gradients
// CHECK: est.minimize
func.func @train(%n: tensor<i32>, %x0: tensor<3xf32>) {
  %v = est.read_variable @v : tensor<3xf32>
  %z = est.constant dense<0> : tensor<i32>
  %one = est.constant dense<1> : tensor<i32>
  %i, %x = est.while inits(%z, %x0 : tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) cond {
  ^bb0(%ci: tensor<i32>, %cx: tensor<3xf32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>, %bx: tensor<3xf32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    %m = est.mul %bx, %v : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    est.yield %j, %m : tensor<i32>, tensor<3xf32>
  }
  %l = est.reduce_sum %x : tensor<3xf32> -> tensor<f32>
  // expected-warning @+1 {{not differentiated: est.while without maximum_iterations cannot be differentiated (its reverse pass needs a bound on the iterations to store; set maximum_iterations, as TF needs for XLA) (needed to train on the loss 'est.reduce_sum')}}
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}

// -----

// A while whose carried values do not depend on a trained variable needs
// no gradient: it stays a while, and the variable the loss reads after it
// trains.
est.variable @v : tensor<3xf32> {trainable}
// CHECK-LABEL: func.func @train
// CHECK: est.while
// CHECK-NOT: est.scan
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v]
func.func @train(%n: tensor<i32>, %x0: tensor<3xf32>) {
  %v = est.read_variable @v : tensor<3xf32>
  %z = est.constant dense<0> : tensor<i32>
  %one = est.constant dense<1> : tensor<i32>
  %i, %x = est.while inits(%z, %x0 : tensor<i32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>) cond {
  ^bb0(%ci: tensor<i32>, %cx: tensor<3xf32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>, %bx: tensor<3xf32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    %m = est.sin %bx : tensor<3xf32>
    est.yield %j, %m : tensor<i32>, tensor<3xf32>
  }
  %p = est.mul %x, %v : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l = est.reduce_sum %p : tensor<3xf32> -> tensor<f32>
  est.minimize %l optimizer "sgd" {learning_rate = 0.1 : f64} : tensor<f32>
  return
}
