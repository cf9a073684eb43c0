// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// keep_dims writes the reduced dim through a constant-0 map result; max
// starts at -inf and uses NaN-propagating maximumf.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[KEPT:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-LABEL: func.func @reduce_max_keep
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.*}} : tensor<?x1x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[KEPT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<?x1x4xf32>)
// CHECK: arith.maximumf
func.func @reduce_max_keep(%a: tensor<?x3x4xf32>) -> tensor<?x1x4xf32> {
  %0 = est.reduce_max %a {axes = array<i64: 1>, keep_dims = true} : tensor<?x3x4xf32> -> tensor<?x1x4xf32>
  return %0 : tensor<?x1x4xf32>
}

// -----

// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @reduce_prod_min
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[OUT]]], iterator_types = ["reduction", "reduction", "parallel"]}
// CHECK: arith.mulf
// CHECK: linalg.fill ins(%c9223372036854775807_i64 : i64)
// CHECK: arith.minsi
func.func @reduce_prod_min(%a: tensor<?x3x4xf32>, %i: tensor<?x3xi64>) -> (tensor<4xf32>, tensor<?xi64>) {
  %0 = est.reduce_prod %a {axes = array<i64: 0, -2>} : tensor<?x3x4xf32> -> tensor<4xf32>
  %1 = est.reduce_min %i {axes = array<i64: 1>} : tensor<?x3xi64> -> tensor<?xi64>
  return %0, %1 : tensor<4xf32>, tensor<?xi64>
}

// -----

// reduce_mean that reaches the lowering (a dynamic reduced dim) divides by
// the product of the runtime dims.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[N:.*]] = tensor.dim
// CHECK: %[[COUNT:.*]] = arith.muli %[[N]], %c12 : index
// CHECK: %[[I:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK: %[[F:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<f32>)
// CHECK: arith.divf %{{.*}}, %[[F]] : f32
func.func @reduce_mean(%a: tensor<?x3x4xf32>) -> tensor<f32> {
  %0 = est.reduce_mean %a : tensor<?x3x4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// argmax: one generic, two outputs (value, index). A candidate wins when
// the best so far is not NaN and the candidate is NaN or greater: the first
// index wins ties, the first NaN wins.
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @argmax
// CHECK: %[[V:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK: %[[I:.*]] = linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<?x4xi32>)
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#{{.*}}, #[[OUT]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[V]], %[[I]] : tensor<?x4xf32>, tensor<?x4xi32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[BEST:.*]]: f32, %[[BI:.*]]: i32):
// CHECK: %[[ORD:.*]] = arith.cmpf ord, %[[BEST]], %[[BEST]]
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[BEST]]
// CHECK: %[[OR:.*]] = arith.ori %[[NAN]], %[[GT]]
// CHECK: %[[BETTER:.*]] = arith.andi %[[ORD]], %[[OR]]
// CHECK: linalg.index 1
// CHECK: return %[[R]]#1
func.func @argmax(%a: tensor<?x3x4xf32>) -> tensor<?x4xi32> {
  %0 = est.argmax %a {axis = 1 : i64, output_type = i32} : tensor<?x3x4xf32> -> tensor<?x4xi32>
  return %0 : tensor<?x4xi32>
}

// -----

// CHECK-LABEL: func.func @argmin
// CHECK: linalg.fill ins(%c9223372036854775807_i64 : i64)
// CHECK: linalg.generic
// CHECK: arith.cmpi slt
// CHECK: linalg.index 1
func.func @argmin(%i: tensor<?x3xi64>) -> tensor<?xi64> {
  %0 = est.argmin %i {axis = -1 : i64} : tensor<?x3xi64> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// cumsum: zeros, then an scf.for along the axis carrying the result; each
// step a loop over the other dims reads the previous position's result
// (the identity at the first step) and adds the input element.
// CHECK-LABEL: func.func @cumsum_axis1
// CHECK: %[[INIT:.*]] = linalg.fill
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %[[INIT]]) -> (tensor<?x5xf32>)
// CHECK: arith.cmpi eq, %[[K]]
// CHECK: scf.for %[[I:[a-z0-9_]+]] = {{.*}} iter_args(%[[R:[a-z0-9_]+]] = %[[ACC]])
// CHECK: tensor.extract %[[R]]
// CHECK: arith.select
// CHECK: tensor.extract %{{.*}}[%[[I]], %[[K]]]
// CHECK: arith.addf
// CHECK: tensor.insert %{{.*}} into %[[R]][%[[I]], %[[K]]]
func.func @cumsum_axis1(%a: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %0 = est.cumsum %a {axis = 1 : i64} : tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

// cumprod, exclusive and reversed: position n - 1 - k, the identity 1 at
// the first step for both the previous result and the input element.
// CHECK-LABEL: func.func @cumprod_exclusive_reverse
// CHECK: scf.for %[[K:[a-z0-9_]+]] =
// CHECK: arith.subi %{{.*}}, %[[K]] : index
// CHECK: arith.cmpi eq, %[[K]]
// CHECK: arith.select
// CHECK: arith.select
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<7xi64>
// CHECK: arith.select
// CHECK: arith.muli
// CHECK: tensor.insert
func.func @cumprod_exclusive_reverse(%a: tensor<7xi64>) -> tensor<7xi64> {
  %0 = est.cumprod %a {exclusive = true, reverse = true} : tensor<7xi64>
  return %0 : tensor<7xi64>
}
