// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s
// RUN: estc-opt %s --split-input-file --estc-decompose-stage --estc-linalg-stage --estc-fusion-stage | FileCheck %s --check-prefix=FUSED

// layer_norm: one linalg.generic, the rows parallel, then the phase loop
// (its size from an unread tensor<2xi8>) and the row's elements as
// reductions. Phase 0 accumulates the shifted moments into per-row outputs,
// phase 1 turns them into mean and rsqrt (values of the row: no branch on
// the row's first element) and writes the normalized row. No tensor of x's
// size but the result.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-DAG: %[[INV:.*]] = arith.constant 6.250000e-02 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 1.000000e-03 : f32
// CHECK: %[[P:.*]] = tensor.empty() : tensor<2xi8>
// CHECK: %[[R:.*]]:4 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[G]], %[[B]], %[[P]] : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2xi8>)
// CHECK-SAME: outs({{.*}} : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>)
// CHECK: %[[PHASE:.*]] = linalg.index 1 : index
// CHECK: scf.if
// CHECK: arith.mulf %[[D:.*]], %[[D]] : f32
// CHECK: } else {
// CHECK-NOT: scf.if
// CHECK: arith.addf %{{.*}}, %[[EPS]] : f32
// CHECK: math.rsqrt
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#3
func.func @layer_norm(%x: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
  %y = est.layer_norm %x, %g, %b : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Normalized over the trailing two dims with parameters of the last: the
// parameters are indexed by the last loop only.
// CHECK-DAG: #[[X3:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[P3:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @layer_norm_params_suffix
// CHECK: linalg.generic {indexing_maps = [#[[X3]], #[[P3]], #[[P3]],
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK-NOT: linalg.generic
func.func @layer_norm_params_suffix(%x: tensor<?x3x16xf32>, %g: tensor<16xf32>) -> tensor<?x3x16xf32> {
  %y = est.layer_norm %x, %g, %g {begin_norm_axis = 1 : i64, epsilon = 1.0e-12 : f64} : tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x3x16xf32>
  return %y : tensor<?x3x16xf32>
}

// -----

// layer_norm_grad: dx in one loop nest per row of two phases (the sums of
// d, d^2, g and g d; then dx), each row's mean and rstd from its sums, then
// dgamma and dbeta in one reduction over the rows (in x's order: the
// parameters' loop innermost), reading the per-row mean and rstd.
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: tensor.empty() : tensor<2xi8>
// CHECK: %[[ROWS:.*]]:6 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK: math.rsqrt
// CHECK: %[[MOM:.*]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[ROWS]]#0, %[[ROWS]]#1, %[[ROWS]]#2 :
// CHECK: math.rsqrt
// CHECK: %[[COL:.*]]:2 = linalg.generic {indexing_maps = [#[[COLS]], #[[COLS]],
// CHECK-SAME: iterator_types = ["reduction", "reduction", "parallel"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %[[MOM]]#0, %[[MOM]]#1 :
// CHECK-NOT: linalg.generic
// CHECK: return %[[ROWS]]#5, %[[COL]]#0, %[[COL]]#1
func.func @layer_norm_grad(%x: tensor<?x3x16xf32>, %g: tensor<16xf32>, %dy: tensor<?x3x16xf32>) -> (tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r:3 = est.layer_norm_grad %x, %g, %dy {begin_norm_axis = 1 : i64} : tensor<?x3x16xf32>, tensor<16xf32>, tensor<?x3x16xf32> -> tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %r#0, %r#1, %r#2 : tensor<?x3x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// attention_softmax with a bool mask broadcast over the heads (collapsed to
// [?, 8, 8], indexed without the heads' loop) and causal masking: the scale
// and both masks in the same body, then four phases switched on the phase
// loop's index: the row's max, exp(v - max) into y, the sum of y, y / sum.
// CHECK-DAG: #[[M:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
// CHECK-LABEL: func.func @attention_softmax
// CHECK: %[[MC:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3]] : tensor<?x1x8x8xi1> into tensor<?x8x8xi1>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[M]],
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %[[MC]], %{{.*}} : tensor<?x4x8x8xf32>, tensor<?x8x8xi1>, tensor<4xi8>)
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[T:.*]] = linalg.index 2 : index
// CHECK: %[[S:.*]] = linalg.index 4 : index
// CHECK: arith.cmpi ugt, %[[S]], %[[T]] : index
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[P:.*]] = linalg.index 3 : index
// CHECK: scf.index_switch %[[P]]
// CHECK: case 0 {
// CHECK: arith.maxnumf
// CHECK: case 1 {
// CHECK: math.exp
// CHECK: case 2 {
// CHECK: arith.addf
// CHECK: default {
// CHECK: arith.divf
// CHECK-NOT: math.exp
// CHECK-NOT: linalg.generic
func.func @attention_softmax(%l: tensor<?x4x8x8xf32>, %m: tensor<?x1x8x8xi1>) -> tensor<?x4x8x8xf32> {
  %p = est.attention_softmax %l, %m {causal = true, scale = 0.125 : f64} : tensor<?x4x8x8xf32>, tensor<?x1x8x8xi1> -> tensor<?x4x8x8xf32>
  return %p : tensor<?x4x8x8xf32>
}

// -----

// The gradient: sum(dy * y) in phase 0, scale * y * (dy - sum) in phase 1.
// CHECK-LABEL: func.func @attention_softmax_grad
// CHECK: tensor.empty() : tensor<2xi8>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK-NOT: linalg.generic
func.func @attention_softmax_grad(%y: tensor<?x8xf32>, %dy: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %r = est.attention_softmax_grad %y, %dy {scale = 2.0 : f64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// After fusion the additive-mask, scaled attention softmax of a product is
// still one loop nest: the elementwise producer is fused into it.
// CHECK-LABEL: func.func @fused_producer
// FUSED-LABEL: func.func @fused_producer
// FUSED-COUNT-1: linalg.generic
// FUSED-NOT: linalg.generic
// FUSED: return
func.func @fused_producer(%a: tensor<?x8x8xf32>, %b: tensor<?x8x8xf32>, %m: tensor<1x8x8xf32>) -> tensor<?x8x8xf32> {
  %l = est.mul %a, %b : tensor<?x8x8xf32>, tensor<?x8x8xf32> -> tensor<?x8x8xf32>
  %p = est.attention_softmax %l, %m {scale = 0.5 : f64} : tensor<?x8x8xf32>, tensor<1x8x8xf32> -> tensor<?x8x8xf32>
  return %p : tensor<?x8x8xf32>
}
