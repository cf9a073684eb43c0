// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of est.scan, est.if, est.while and est.yield
// (docs/design/control-flow.md).

// A scan with a carried value, a captured weight and a per-step output,
// time-major over a run-time number of steps.
// CHECK-LABEL: func.func @rnn
// CHECK-SAME: (%[[H0:.*]]: tensor<?x4xf32>, %[[XS:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<4x4xf32>)
// CHECK: %[[R:.*]]:2 = est.scan inits(%[[H0]] : tensor<?x4xf32>) over(%[[XS]] : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
// CHECK-NEXT: ^bb0(%[[HP:.*]]: tensor<?x4xf32>, %[[X:.*]]: tensor<?x4xf32>):
// CHECK-NEXT: %[[M:.*]] = est.matmul %[[HP]], %[[W]] : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: %[[S:.*]] = est.add %[[M]], %[[X]]
// CHECK-NEXT: %[[N:.*]] = est.tanh %[[S]] : tensor<?x4xf32>
// CHECK-NEXT: est.yield %[[N]], %[[N]] : tensor<?x4xf32>, tensor<?x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1 : tensor<?x4xf32>, tensor<?x?x4xf32>
func.func @rnn(%h0: tensor<?x4xf32>, %xs: tensor<?x?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %m = est.matmul %hp, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  return %h, %ys : tensor<?x4xf32>, tensor<?x?x4xf32>
}

// No carried values, two sequences (one of them integer), reversed, a
// static number of steps.
// CHECK-LABEL: func.func @reverse_no_inits
// CHECK: est.scan over(%{{.*}}, %{{.*}} : tensor<5x3xf32>, tensor<5x2xi32>) {reverse} -> (tensor<5x3xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<3xf32>, %{{.*}}: tensor<2xi32>):
// CHECK-NEXT: est.exp
// CHECK-NEXT: est.yield %{{.*}} : tensor<3xf32>
func.func @reverse_no_inits(%xs: tensor<5x3xf32>, %ys: tensor<5x2xi32>) -> tensor<5x3xf32> {
  %r = est.scan over(%xs, %ys : tensor<5x3xf32>, tensor<5x2xi32>) {reverse} -> (tensor<5x3xf32>) {
  ^bb0(%x: tensor<3xf32>, %y: tensor<2xi32>):
    %e = est.exp %x : tensor<3xf32>
    est.yield %e : tensor<3xf32>
  }
  return %r : tensor<5x3xf32>
}

// Two carried values and no per-step output: only the final values.
// CHECK-LABEL: func.func @carried_only
// CHECK: %{{.*}}:2 = est.scan inits(%{{.*}}, %{{.*}} : tensor<f32>, tensor<i32>) over(%{{.*}} : tensor<7xf32>) -> (tensor<f32>, tensor<i32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<f32>, %{{.*}}: tensor<i32>, %{{.*}}: tensor<f32>):
func.func @carried_only(%s0: tensor<f32>, %n0: tensor<i32>, %xs: tensor<7xf32>, %one: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %s, %n = est.scan inits(%s0, %n0 : tensor<f32>, tensor<i32>) over(%xs : tensor<7xf32>) -> (tensor<f32>, tensor<i32>) {
  ^bb0(%acc: tensor<f32>, %cnt: tensor<i32>, %x: tensor<f32>):
    %a = est.add %acc, %x : tensor<f32>, tensor<f32> -> tensor<f32>
    %c = est.add %cnt, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    est.yield %a, %c : tensor<f32>, tensor<i32>
  }
  return %s, %n : tensor<f32>, tensor<i32>
}

// CHECK-LABEL: func.func @cond
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<?x3xf32>)
// CHECK: %[[R:.*]]:2 = est.if %[[C]] : tensor<i1> -> (tensor<?x3xf32>, tensor<f32>) {
// CHECK-NEXT: %[[N:.*]] = est.neg %[[A]] : tensor<?x3xf32>
// CHECK-NEXT: %[[K:.*]] = est.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: est.yield %[[N]], %[[K]] : tensor<?x3xf32>, tensor<f32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[Z:.*]] = est.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: est.yield %[[B]], %[[Z]] : tensor<?x3xf32>, tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func @cond(%c: tensor<i1>, %a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<f32>) {
  %r, %k = est.if %c : tensor<i1> -> (tensor<?x3xf32>, tensor<f32>) {
    %n = est.neg %a : tensor<?x3xf32>
    %one = est.constant dense<1.0> : tensor<f32>
    est.yield %n, %one : tensor<?x3xf32>, tensor<f32>
  } else {
    %zero = est.constant dense<0.0> : tensor<f32>
    est.yield %b, %zero : tensor<?x3xf32>, tensor<f32>
  }
  return %r, %k : tensor<?x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @loops
// CHECK-SAME: (%[[I0:.*]]: tensor<i32>, %[[N:.*]]: tensor<i32>, %[[ONE:.*]]: tensor<i32>, %[[X0:.*]]: tensor<?x2xf32>)
// CHECK: %[[U:.*]]:2 = est.while inits(%[[I0]], %[[X0]] : tensor<i32>, tensor<?x2xf32>) -> (tensor<i32>, tensor<?x2xf32>) cond {
// CHECK-NEXT: ^bb0(%[[CI:.*]]: tensor<i32>, %{{.*}}: tensor<?x2xf32>):
// CHECK-NEXT: %[[LT:.*]] = est.less %[[CI]], %[[N]] : tensor<i32>, tensor<i32> -> tensor<i1>
// CHECK-NEXT: est.yield %[[LT]] : tensor<i1>
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[BI:.*]]: tensor<i32>, %[[BX:.*]]: tensor<?x2xf32>):
// CHECK-NEXT: %[[J:.*]] = est.add %[[BI]], %[[ONE]]
// CHECK-NEXT: %[[Y:.*]] = est.sin %[[BX]]
// CHECK-NEXT: est.yield %[[J]], %[[Y]] : tensor<i32>, tensor<?x2xf32>
// CHECK-NEXT: }
// CHECK-NOT: maximum_iterations
// CHECK: est.while inits(%[[I0]] : tensor<i32>) {maximum_iterations = 10 : i64} -> (tensor<i32>) cond {
// CHECK: } do {
// CHECK: return %[[U]]#0, %[[U]]#1, %{{.*}} : tensor<i32>, tensor<?x2xf32>, tensor<i32>
func.func @loops(%i0: tensor<i32>, %n: tensor<i32>, %one: tensor<i32>, %x0: tensor<?x2xf32>) -> (tensor<i32>, tensor<?x2xf32>, tensor<i32>) {
  %i, %x = est.while inits(%i0, %x0 : tensor<i32>, tensor<?x2xf32>) -> (tensor<i32>, tensor<?x2xf32>) cond {
  ^bb0(%ci: tensor<i32>, %cx: tensor<?x2xf32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>, %bx: tensor<?x2xf32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    %y = est.sin %bx : tensor<?x2xf32>
    est.yield %j, %y : tensor<i32>, tensor<?x2xf32>
  }
  %m = est.while inits(%i0 : tensor<i32>) {maximum_iterations = 10 : i64} -> (tensor<i32>) cond {
  ^bb0(%ci: tensor<i32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    est.yield %j : tensor<i32>
  }
  return %i, %x, %m : tensor<i32>, tensor<?x2xf32>, tensor<i32>
}

// Nested: a scan inside a scan's body, an if inside a while.
// CHECK-LABEL: func.func @nested
// CHECK: est.scan over(%{{.*}} : tensor<3x5x2xf32>) -> (tensor<3x5x2xf32>) {
// CHECK: est.scan inits(%{{.*}} : tensor<2xf32>) over(%{{.*}} : tensor<5x2xf32>) {reverse} -> (tensor<2xf32>, tensor<5x2xf32>) {
// CHECK: est.while inits(%{{.*}} : tensor<f32>) {maximum_iterations = 4 : i64} -> (tensor<f32>) cond {
// CHECK: } do {
// CHECK: est.if %{{.*}} : tensor<i1> -> (tensor<f32>) {
func.func @nested(%xss: tensor<3x5x2xf32>, %z: tensor<2xf32>, %f0: tensor<f32>, %p: tensor<i1>) -> (tensor<3x5x2xf32>, tensor<f32>) {
  %o = est.scan over(%xss : tensor<3x5x2xf32>) -> (tensor<3x5x2xf32>) {
  ^bb0(%xs: tensor<5x2xf32>):
    %last, %inner = est.scan inits(%z : tensor<2xf32>) over(%xs : tensor<5x2xf32>) {reverse} -> (tensor<2xf32>, tensor<5x2xf32>) {
    ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
      %a = est.add %acc, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      est.yield %a, %a : tensor<2xf32>, tensor<2xf32>
    }
    est.yield %inner : tensor<5x2xf32>
  }
  %w = est.while inits(%f0 : tensor<f32>) {maximum_iterations = 4 : i64} -> (tensor<f32>) cond {
  ^bb0(%v: tensor<f32>):
    est.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    %r = est.if %p : tensor<i1> -> (tensor<f32>) {
      %s = est.square %v : tensor<f32>
      est.yield %s : tensor<f32>
    } else {
      est.yield %v : tensor<f32>
    }
    est.yield %r : tensor<f32>
  }
  return %o, %w : tensor<3x5x2xf32>, tensor<f32>
}
