// RUN: estc-opt %s --est-shape-inference -split-input-file | FileCheck %s

// est-shape-inference through the regions of est.scan, est.if and est.while
// (est::inferShapes, dialects/Est/IR/EstOps.cpp): a region's arguments
// are refined from the op's operands, its ops re-inferred in order, then
// the op's results from what the regions yield.

// A static batch of 8 flows from the arguments into the scan body (the
// carried value from its init, the slice from the sequence: dimension 0 of
// the sequence is the steps and is dropped), through the body's ops, and
// out into the final carried value and the stacked per-step output, which
// keeps the static number of steps 6.
// CHECK-LABEL: func.func @scan_batch
// CHECK-SAME: -> (tensor<8x4xf32>, tensor<6x4xf32>)
// CHECK: est.scan inits(%{{.*}} : tensor<8x4xf32>) over(%{{.*}} : tensor<6x8x4xf32>) -> (tensor<8x4xf32>, tensor<6x8x4xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<8x4xf32>):
// CHECK-NEXT: est.matmul {{.*}} -> tensor<8x4xf32>
// CHECK-NEXT: est.add {{.*}} -> tensor<8x4xf32>
// CHECK-NEXT: est.tanh %{{.*}} : tensor<8x4xf32>{{$}}
// CHECK-NEXT: est.yield %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: est.reduce_sum {{.*}} : tensor<6x8x4xf32> -> tensor<6x4xf32>
// CHECK: return {{.*}} : tensor<8x4xf32>, tensor<6x4xf32>
func.func @scan_batch(%h0: tensor<8x4xf32>, %xs: tensor<6x8x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %h, %ys = est.scan inits(%h0 : tensor<8x4xf32>) over(%xs : tensor<6x8x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %m = est.matmul %hp, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %r = est.reduce_sum %ys {axes = array<i64: 1>} : tensor<?x?x4xf32> -> tensor<?x4xf32>
  return %h, %r : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// The number of steps known at run time only stays `?` in the stack; the
// batch still flows in. A reduction inside the body (per-step output of
// another shape) is stacked with its own refined shape.
// CHECK-LABEL: func.func @scan_dynamic_steps
// CHECK: est.scan over(%{{.*}} : tensor<?x8x4xf32>) {reverse} -> (tensor<?x8xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x4xf32>):
// CHECK-NEXT: est.reduce_sum {{.*}} : tensor<8x4xf32> -> tensor<8xf32>
// CHECK-NEXT: est.yield %{{.*}} : tensor<8xf32>
// CHECK: return %{{.*}} : tensor<?x8xf32>
func.func @scan_dynamic_steps(%xs: tensor<?x8x4xf32>) -> tensor<?x?xf32> {
  %r = est.scan over(%xs : tensor<?x8x4xf32>) {reverse} -> (tensor<?x?xf32>) {
  ^bb0(%x: tensor<?x4xf32>):
    %s = est.reduce_sum %x {axes = array<i64: 1>} : tensor<?x4xf32> -> tensor<?xf32>
    est.yield %s : tensor<?xf32>
  }
  return %r : tensor<?x?xf32>
}

// -----

// Branches that yield the same refined type refine the result; branches
// that disagree (8 rows against a run-time count) leave it dynamic.
// CHECK-LABEL: func.func @cond
// CHECK: est.if %{{.*}} : tensor<i1> -> (tensor<8x3xf32>, tensor<?x3xf32>) {
// CHECK-NEXT: est.add {{.*}} -> tensor<8x3xf32>
// CHECK-NEXT: est.relu %{{.*}} : tensor<8x3xf32>{{$}}
// CHECK-NEXT: est.yield %{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<8x3xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: est.sub {{.*}} -> tensor<8x3xf32>
// CHECK-NEXT: est.yield %{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<?x3xf32>
// CHECK: est.mul {{.*}} -> tensor<8x3xf32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<?x3xf32>
func.func @cond(%c: tensor<i1>, %a: tensor<8x3xf32>, %b: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>) {
  %r, %s = est.if %c : tensor<i1> -> (tensor<?x3xf32>, tensor<?x3xf32>) {
    %d = est.add %a, %a : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<?x3xf32>
    %n = est.relu %d : tensor<?x3xf32>
    est.yield %n, %n : tensor<?x3xf32>, tensor<?x3xf32>
  } else {
    %m = est.sub %a, %a : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<?x3xf32>
    est.yield %m, %b : tensor<?x3xf32>, tensor<?x3xf32>
  }
  %p = est.mul %r, %r : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  return %p, %s : tensor<?x3xf32>, tensor<?x3xf32>
}

// -----

// A while's two regions take the carried values' types; its results are
// the carried values'.
// CHECK-LABEL: func.func @loop
// CHECK: est.while inits(%{{.*}} : tensor<8x2xf32>) -> (tensor<8x2xf32>) cond {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x2xf32>):
// CHECK-NEXT: est.reduce_sum {{.*}} : tensor<8x2xf32> -> tensor<f32>
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x2xf32>):
// CHECK-NEXT: est.mul {{.*}} -> tensor<8x2xf32>
// CHECK: return %{{.*}} : tensor<8x2xf32>
func.func @loop(%x0: tensor<8x2xf32>, %lim: tensor<f32>, %k: tensor<f32>) -> tensor<?x2xf32> {
  %r = est.while inits(%x0 : tensor<8x2xf32>) -> (tensor<?x2xf32>) cond {
  ^bb0(%x: tensor<?x2xf32>):
    %s = est.reduce_sum %x : tensor<?x2xf32> -> tensor<f32>
    %c = est.less %s, %lim : tensor<f32>, tensor<f32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%x: tensor<?x2xf32>):
    %y = est.mul %x, %k : tensor<?x2xf32>, tensor<f32> -> tensor<?x2xf32>
    est.yield %y : tensor<?x2xf32>
  }
  return %r : tensor<?x2xf32>
}
