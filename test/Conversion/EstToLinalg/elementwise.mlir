// RUN: estc-opt %s --split-input-file --convert-est-to-linalg | FileCheck %s

// Broadcasting: a static size-1 dim reads index 0, a missing leading dim is
// dropped from the map, the dynamic batch comes from the operand.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ONE:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x3xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<?x3xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ONE]], #[[ID]]]
// CHECK: arith.divsi
func.func @add_broadcast(%x: tensor<?x3xf32>, %b: tensor<3xf32>) -> (tensor<?x3xf32>, tensor<?x3xi32>) {
  %0 = est.add %x, %b : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %i = est.cast %x to i32 : tensor<?x3xf32> -> tensor<?x3xi32>
  %j = est.constant dense<[[1, 2, 3]]> : tensor<1x3xi32>
  %1 = est.div %i, %j : tensor<?x3xi32>, tensor<1x3xi32> -> tensor<?x3xi32>
  return %0, %1 : tensor<?x3xf32>, tensor<?x3xi32>
}

// -----

// CHECK-LABEL: func.func @binary
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: math.powf
// NaN-propagating maximum / minimum, like the reference.
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: math.ipowi
func.func @binary(%a: tensor<4xf32>, %b: tensor<f32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %0 = est.sub %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = est.mul %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %2 = est.pow %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %3 = est.maximum %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %4 = est.minimum %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %5 = est.maximum %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %6 = est.minimum %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %7 = est.pow %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK: arith.negf
// CHECK: arith.subi
// CHECK: math.absf
// CHECK: math.absi
// CHECK: %[[S:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.rsqrt
// CHECK: math.tanh
// sigmoid: 1 / (1 + exp(-x)).
// CHECK: arith.negf
// CHECK-NEXT: math.exp
// CHECK: arith.addf
// CHECK-NEXT: arith.divf
// relu: maximumf(x, 0) (NaN stays NaN).
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// relu6.
// CHECK: arith.maximumf
// CHECK-NEXT: arith.constant 6.0
// CHECK-NEXT: arith.minimumf
// elu: x > 0 ? x : expm1(x).
// CHECK: arith.cmpf ogt
// CHECK-NEXT: math.expm1
// CHECK-NEXT: arith.select
// softplus: max(x, 0) + log1p(exp(-|x|)).
// CHECK: arith.maximumf
// CHECK-NEXT: math.absf
// CHECK-NEXT: arith.negf
// CHECK-NEXT: math.exp
// CHECK-NEXT: math.log1p
// CHECK-NEXT: arith.addf
func.func @unary(%x: tensor<?xf32>, %i: tensor<?xi32>) -> (tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = est.neg %x : tensor<?xf32>
  %1 = est.neg %i : tensor<?xi32>
  %2 = est.abs %x : tensor<?xf32>
  %3 = est.abs %i : tensor<?xi32>
  %4 = est.square %x : tensor<?xf32>
  %5 = est.exp %x : tensor<?xf32>
  %6 = est.log %x : tensor<?xf32>
  %7 = est.sqrt %x : tensor<?xf32>
  %8 = est.rsqrt %x : tensor<?xf32>
  %9 = est.tanh %x : tensor<?xf32>
  %10 = est.sigmoid %x : tensor<?xf32>
  %11 = est.relu %x : tensor<?xf32>
  %12 = est.relu6 %x : tensor<?xf32>
  %13 = est.elu %x : tensor<?xf32>
  %14 = est.softplus %x : tensor<?xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @compare_logic_select
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpf une
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ole
// CHECK: arith.cmpi sgt
// CHECK: arith.cmpi sge
// CHECK: arith.andi
// CHECK: arith.ori
// CHECK: arith.xori %{{.*}}, %true
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @compare_logic_select(%a: tensor<?x2xf32>, %b: tensor<2xf32>, %i: tensor<?x2xi64>) -> (tensor<?x2xi1>, tensor<?x2xi1>, tensor<?x2xf32>) {
  %0 = est.equal %a, %b : tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xi1>
  %1 = est.not_equal %a, %b : tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xi1>
  %2 = est.less %a, %b : tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xi1>
  %3 = est.less_equal %a, %b : tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xi1>
  %4 = est.greater %i, %i : tensor<?x2xi64>, tensor<?x2xi64> -> tensor<?x2xi1>
  %5 = est.greater_equal %i, %i : tensor<?x2xi64>, tensor<?x2xi64> -> tensor<?x2xi1>
  %6 = est.logical_and %0, %1 : tensor<?x2xi1>, tensor<?x2xi1> -> tensor<?x2xi1>
  %7 = est.logical_or %2, %3 : tensor<?x2xi1>, tensor<?x2xi1> -> tensor<?x2xi1>
  %8 = est.logical_not %4 : tensor<?x2xi1>
  %9 = est.select %5, %a, %b : tensor<?x2xi1>, tensor<?x2xf32>, tensor<2xf32> -> tensor<?x2xf32>
  return %6, %7, %9 : tensor<?x2xi1>, tensor<?x2xi1>, tensor<?x2xf32>
}

// -----

// float -> int truncates toward zero (fptosi), x -> i1 is x != 0, i1 -> x
// is 0 / 1.
// CHECK-LABEL: func.func @cast
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: arith.cmpf une
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: arith.extui %{{.*}} : i1 to i64
// CHECK: arith.truncf %{{.*}} : f64 to f16
// CHECK: arith.extsi %{{.*}} : i32 to i64
func.func @cast(%x: tensor<3xf32>) -> (tensor<3xf64>, tensor<3xf32>, tensor<3xi64>, tensor<3xf16>, tensor<3xi64>) {
  %0 = est.cast %x to i32 : tensor<3xf32> -> tensor<3xi32>
  %1 = est.cast %0 to f64 : tensor<3xi32> -> tensor<3xf64>
  %2 = est.cast %x to i1 : tensor<3xf32> -> tensor<3xi1>
  %3 = est.cast %2 to f32 : tensor<3xi1> -> tensor<3xf32>
  %4 = est.cast %2 to i64 : tensor<3xi1> -> tensor<3xi64>
  %5 = est.cast %1 to f16 : tensor<3xf64> -> tensor<3xf16>
  %6 = est.cast %0 to i64 : tensor<3xi32> -> tensor<3xi64>
  return %1, %3, %4, %5, %6 : tensor<3xf64>, tensor<3xf32>, tensor<3xi64>, tensor<3xf16>, tensor<3xi64>
}

// -----

// CHECK-LABEL: func.func @constants
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<?x2xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<?x2xf32>)
func.func @constants(%x: tensor<?x2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %0 = est.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = est.zeros_like %x : tensor<?x2xf32>
  %2 = est.ones_like %x : tensor<?x2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// A splat constant only assigned to variables (a constant initializer) is a
// fill, not a constant the size of the variable; one with another user stays
// a constant (elementwise fusion folds splat constants into loop bodies).
// CHECK-LABEL: func.func @splat_initializer
// CHECK: %[[V:.*]] = arith.constant 1.000000e-01 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1000x64xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[V]] : f32) outs(%[[E]] : tensor<1000x64xf32>)
// CHECK: est.assign_variable @emb, %[[F]]
// CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK: est.assign_variable @w, %[[C]]
// CHECK: return %[[C]]
est.variable @emb : tensor<1000x64xf32>
est.variable @w : tensor<4xf32>
func.func @splat_initializer() -> tensor<4xf32> {
  %0 = est.constant dense<0.1> : tensor<1000x64xf32>
  est.assign_variable @emb, %0 : tensor<1000x64xf32>
  %1 = est.constant dense<2.0> : tensor<4xf32>
  est.assign_variable @w, %1 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// broadcast_to: one generic copying through a broadcasting map; the
// stop_gradient disappears.
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @broadcast_to
// CHECK-NOT: stop_gradient
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #{{.*}}]
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[A]]
func.func @broadcast_to(%x: tensor<?x3xf32>) -> tensor<4x?x3xf32> {
  %s = est.stop_gradient %x : tensor<?x3xf32>
  %0 = est.broadcast_to %s {shape = array<i64: 4, -1, 3>} : tensor<?x3xf32> -> tensor<4x?x3xf32>
  return %0 : tensor<4x?x3xf32>
}

// -----

// ceil, round (halves to even; an integer is itself), sign (x > 0 ? 1 :
// x < 0 ? -1 : x), erf, log1p, expm1: one math op or compare/select each.
// CHECK-LABEL: func.func @math
// CHECK: math.ceil
// CHECK: math.roundeven
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: arith.select %{{.*}}, %{{.*}}, %in : f32
// CHECK: arith.select
// CHECK: arith.cmpi sgt
// CHECK: arith.cmpi slt
// CHECK: math.erf
// CHECK: math.log1p
// CHECK: math.expm1
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: linalg.yield %[[IN]] : i32
func.func @math(%x: tensor<?xf32>, %i: tensor<?xi32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>) {
  %0 = est.ceil %x : tensor<?xf32>
  %1 = est.round %x : tensor<?xf32>
  %2 = est.sign %x : tensor<?xf32>
  %3 = est.sign %i : tensor<?xi32>
  %4 = est.erf %x : tensor<?xf32>
  %5 = est.log1p %x : tensor<?xf32>
  %6 = est.expm1 %x : tensor<?xf32>
  %7 = est.round %i : tensor<?xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>
}
