// RUN: estc-opt %s --split-input-file --est-create-init-function | FileCheck %s
// The pass is idempotent: a second run rebuilds the same @init.
// RUN: estc-opt %s --split-input-file --est-create-init-function --est-create-init-function | FileCheck %s

// Every initializer kind, in variable order; random ops draw at counter 0.
est.variable @zeros : tensor<2x3xf32> {initializer = #est.init<"zeros">}
est.variable @ones : tensor<4xf32> {initializer = #est.init<"ones">}
est.variable @constant : tensor<2xf32> {initializer = #est.init<"constant", {value = 2.5 : f64}>}
est.variable @step : tensor<i64> {initializer = #est.init<"zeros">}
est.variable @flag : tensor<3xi1> {initializer = #est.init<"ones">}
est.variable @no_init : tensor<2xf32>
est.variable @uniform : tensor<5xf32> {initializer = #est.init<"random_uniform", {maxval = 3.0 : f64, minval = -1.0 : f64, seed = 11 : i64}>}
est.variable @normal : tensor<5xf32> {initializer = #est.init<"random_normal", {mean = 0.5 : f64, seed = 12 : i64, stddev = 2.0 : f64}>}
est.variable @truncated : tensor<5xf32> {initializer = #est.init<"truncated_normal", {mean = 1.0 : f64, seed = 13 : i64, stddev = 0.5 : f64}>}
// fan_in 2, fan_out 4: l = sqrt(6 / 6) = 1.
est.variable @glorot_uniform : tensor<2x4xf32> {initializer = #est.init<"glorot_uniform", {seed = 14 : i64}>, trainable}
// HWIO: receptive field 4, fan_in 4, fan_out 12: sqrt(2 / 16) / .8796...
est.variable @glorot_normal : tensor<2x2x1x3xf32> {initializer = #est.init<"glorot_normal", {seed = 15 : i64}>, trainable}
// He: scale 2 / fan_in 8, stddev sqrt(0.25) / .8796...
est.variable @he : tensor<8x4xf32> {initializer = #est.init<"variance_scaling", {distribution = "truncated_normal", mode = "fan_in", scale = 2.0 : f64, seed = 16 : i64}>}
// fan_out = 3 * 3 * 4 = 36: stddev sqrt(1 / 36).
est.variable @untruncated : tensor<3x3x2x4xf32> {initializer = #est.init<"variance_scaling", {distribution = "untruncated_normal", mode = "fan_out", scale = 1.0 : f64, seed = 17 : i64}>}
// Rank 1: fan_in = fan_out = 6; limit sqrt(3 * 3 / 6).
est.variable @rank1 : tensor<6xf32> {initializer = #est.init<"variance_scaling", {distribution = "uniform", mode = "fan_avg", scale = 3.0 : f64, seed = 18 : i64}>}
// Rank 0: fans 1; limit sqrt(3 * 4).
est.variable @scalar : tensor<f32> {initializer = #est.init<"variance_scaling", {distribution = "uniform", scale = 4.0 : f64, seed = 19 : i64}>}
est.variable @double : tensor<2x4xf64> {initializer = #est.init<"glorot_uniform", {seed = 20 : i64}>}

// A stale @init is replaced.
func.func @init() {
  %c = est.constant dense<7> : tensor<i64>
  est.assign_variable @step, %c : tensor<i64>
  return
}

func.func @predict(%x: tensor<?x2xf32> {est.name = "features/x"}) -> (tensor<?x2xf32> {est.name = "predictions"}) {
  return %x : tensor<?x2xf32>
}

// CHECK-LABEL: func.func @predict
// CHECK-LABEL: func.func @init()
// CHECK-NEXT: %[[Z:.*]] = est.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT: est.assign_variable @zeros, %[[Z]] : tensor<2x3xf32>
// CHECK-NEXT: %[[O:.*]] = est.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: est.assign_variable @ones, %[[O]]
// CHECK-NEXT: %[[C:.*]] = est.constant dense<2.500000e+00> : tensor<2xf32>
// CHECK-NEXT: est.assign_variable @constant, %[[C]]
// CHECK-NEXT: %[[S:.*]] = est.constant dense<0> : tensor<i64>
// CHECK-NEXT: est.assign_variable @step, %[[S]]
// CHECK-NEXT: %[[F:.*]] = est.constant dense<true> : tensor<3xi1>
// CHECK-NEXT: est.assign_variable @flag, %[[F]]
// CHECK-NEXT: %[[N:.*]] = est.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-NEXT: est.assign_variable @no_init, %[[N]]
// CHECK-NEXT: %[[CTR:.*]] = est.constant dense<0> : tensor<i64>
// CHECK-NEXT: %[[U:.*]] = est.random_uniform %[[CTR]] {maxval = 3.000000e+00 : f64, minval = -1.000000e+00 : f64, seed = 11 : i64, shape = array<i64: 5>} : tensor<i64> -> tensor<5xf32>
// CHECK-NEXT: est.assign_variable @uniform, %[[U]]
// CHECK-NEXT: %[[RN:.*]] = est.random_normal %[[CTR]] {mean = 5.000000e-01 : f64, seed = 12 : i64, shape = array<i64: 5>, stddev = 2.000000e+00 : f64} : tensor<i64> -> tensor<5xf32>
// CHECK-NEXT: est.assign_variable @normal, %[[RN]]
// CHECK-NEXT: %[[TN:.*]] = est.truncated_normal %[[CTR]] {mean = 1.000000e+00 : f64, seed = 13 : i64, shape = array<i64: 5>, stddev = 5.000000e-01 : f64}
// CHECK-NEXT: est.assign_variable @truncated, %[[TN]]
// CHECK-NEXT: %[[GU:.*]] = est.random_uniform %[[CTR]] {minval = -1.000000e+00 : f64, seed = 14 : i64, shape = array<i64: 2, 4>}
// CHECK-NEXT: est.assign_variable @glorot_uniform, %[[GU]]
// CHECK-NEXT: %[[GN:.*]] = est.truncated_normal %[[CTR]] {seed = 15 : i64, shape = array<i64: 2, 2, 1, 3>, stddev = 0.401936194286982{{[0-9]*}} : f64}
// CHECK-NEXT: est.assign_variable @glorot_normal, %[[GN]]
// CHECK-NEXT: %[[HE:.*]] = est.truncated_normal %[[CTR]] {seed = 16 : i64, shape = array<i64: 8, 4>, stddev = 0.568423617169278{{[0-9]*}} : f64}
// CHECK-NEXT: est.assign_variable @he, %[[HE]]
// CHECK-NEXT: %[[UN:.*]] = est.random_normal %[[CTR]] {seed = 17 : i64, shape = array<i64: 3, 3, 2, 4>, stddev = 0.1666666666666666{{[0-9]*}} : f64}
// CHECK-NEXT: est.assign_variable @untruncated, %[[UN]]
// CHECK-NEXT: %[[R1:.*]] = est.random_uniform %[[CTR]] {maxval = 1.22474487139158{{[0-9]*}} : f64, minval = -1.22474487139158{{[0-9]*}} : f64, seed = 18 : i64, shape = array<i64: 6>}
// CHECK-NEXT: est.assign_variable @rank1, %[[R1]]
// CHECK-NEXT: %[[R0:.*]] = est.random_uniform %[[CTR]] {maxval = 3.46410161513775{{[0-9]*}} : f64, minval = -3.46410161513775{{[0-9]*}} : f64, seed = 19 : i64, shape = array<i64>} : tensor<i64> -> tensor<f32>
// CHECK-NEXT: est.assign_variable @scalar, %[[R0]]
// CHECK-NEXT: %[[D:.*]] = est.random_uniform %[[CTR]] {dtype = f64, minval = -1.000000e+00 : f64, seed = 20 : i64, shape = array<i64: 2, 4>} : tensor<i64> -> tensor<2x4xf64>
// CHECK-NEXT: est.assign_variable @double, %[[D]]
// CHECK-NEXT: return
// CHECK-NOT: func.func @init

// -----

// Without variables, @init does nothing.
// CHECK-LABEL: func.func @init()
// CHECK-NEXT: return

