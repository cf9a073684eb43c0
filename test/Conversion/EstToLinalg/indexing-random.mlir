// RUN: estc-opt %s --split-input-file --convert-est-to-linalg --canonicalize | FileCheck %s

// gather: one generic over the result; the index is clamped into
// [0, dim - 1] and params read with tensor.extract.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:.*]]: tensor<100x16xf32>, %[[IDS:.*]]: tensor<?x4xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS]] : tensor<?x4xi64>)
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[I]], %c0
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %c99
// CHECK: %[[J:.*]] = linalg.index 2
// CHECK: tensor.extract %[[T]][%[[C]], %[[J]]] : tensor<100x16xf32>
func.func @gather(%t: tensor<100x16xf32>, %ids: tensor<?x4xi64>) -> tensor<?x4x16xf32> {
  %0 = est.gather %t, %ids : tensor<100x16xf32>, tensor<?x4xi64> -> tensor<?x4x16xf32>
  return %0 : tensor<?x4x16xf32>
}

// -----

// one_hot at axis 0: the index compared with linalg.index 0; out-of-range
// indices give off_value everywhere.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @one_hot
// CHECK-DAG: %[[ON:.*]] = arith.constant 3.000000e+00 : f64
// CHECK-DAG: %[[OFF:.*]] = arith.constant -1.000000e+00 : f64
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #{{.*}}]
// CHECK: %[[P:.*]] = linalg.index 0
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]] : index to i32
// CHECK: %[[HOT:.*]] = arith.cmpi eq, %{{.*}}, %[[PI]] : i32
// CHECK: arith.select %[[HOT]], %[[ON]], %[[OFF]] : f64
func.func @one_hot(%l: tensor<?xi32>) -> tensor<5x?xf64> {
  %0 = est.one_hot %l {depth = 5 : i64, axis = 0 : i64, on_value = 3.0 : f64, off_value = -1.0 : f64, dtype = f64} : tensor<?xi32> -> tensor<5x?xf64>
  return %0 : tensor<5x?xf64>
}

// -----

// dropout: Philox4x32-10 of (seed, counter, linear index) computed inline,
// 10 rounds of 32x32->64 multiplies by 0xD2511F53 / 0xCD9E8D57; keep
// iff uniform01(r0) >= rate,
// then x / (1 - rate).
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[STEP:.*]]: tensor<i64>)
// CHECK: %[[CTR:.*]] = tensor.extract %[[STEP]][] : tensor<i64>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<?x8xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.index_castui %{{.*}} : index to i64
// CHECK: arith.mului_extended %{{.*}}, %c-766435501_i32 : i32
// CHECK: %[[S:.*]] = arith.shrui %{{.*}}, %c8_i32 : i32
// CHECK: %[[F:.*]] = arith.uitofp %[[S]] : i32 to f32
// CHECK: %[[U:.*]] = arith.mulf %[[F]], %cst{{.*}} : f32
// CHECK: %[[KEEP:.*]] = arith.cmpf oge, %[[U]], %cst{{.*}} : f32
// CHECK: %[[D:.*]] = arith.divf %{{.*}}, %cst{{.*}} : f32
// CHECK: arith.select %[[KEEP]], %[[D]], %cst{{.*}} : f32
func.func @dropout(%x: tensor<?x8xf32>, %step: tensor<i64>) -> tensor<?x8xf32> {
  %0 = est.dropout %x, %step {rate = 0.5 : f64, seed = 3 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @random
// CHECK: linalg.generic
// CHECK: arith.mului_extended %{{.*}}, %c-766435501_i32 : i32
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// CHECK: linalg.generic
// CHECK: arith.mului_extended %{{.*}}, %c-766435501_i32 : i32
// Box-Muller in f64.
// CHECK: math.log %{{.*}} : f64
// CHECK: math.sqrt %{{.*}} : f64
// CHECK: math.cos %{{.*}} : f64
// CHECK: linalg.generic
// CHECK: arith.mului_extended %{{.*}}, %c-766435501_i32 : i32
// Truncated normal: Giles' erfinv, clamped to [-2, 2], computed in f32 and
// rounded to f16.
// CHECK: math.log %{{.*}} : f32
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @random(%step: tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xf64>, tensor<4xf16>) {
  %0 = est.random_uniform %step {seed = 1 : i64, shape = array<i64: 2, 3>, minval = -1.0 : f64, maxval = 1.0 : f64} : tensor<i64> -> tensor<2x3xf32>
  %1 = est.random_normal %step {seed = 1 : i64, shape = array<i64: 2, 3>, dtype = f64} : tensor<i64> -> tensor<2x3xf64>
  %2 = est.truncated_normal %step {seed = -5 : i64, shape = array<i64: 4>, dtype = f16, stddev = 0.1 : f64} : tensor<i64> -> tensor<4xf16>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf64>, tensor<4xf16>
}
