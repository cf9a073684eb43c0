// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-approximate-math{ops=exp,log,tanh,erf}))' --split-input-file %s | FileCheck %s
// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-approximate-math))' --split-input-file %s | FileCheck %s --check-prefix=NONE

// f32 exp: our expansion, no math op left: the round to k, the
// polynomial, 2^k as two exponent fields, the underflow to 0 and NaN.
// CHECK-LABEL: func.func @exp_f32
// CHECK-NOT: math.exp
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: math.floor
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.shrsi
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpf uno
// CHECK-NOT: math.exp
// CHECK: return
// NONE-LABEL: func.func @exp_f32
// NONE: math.exp
func.func @exp_f32(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// -----

// f64 stays a libm call.
// CHECK-LABEL: func.func @exp_f64
// CHECK: math.exp %{{.*}} : f64
func.func @exp_f64(%x: f64) -> f64 {
  %y = math.exp %x : f64
  return %y : f64
}

// -----

// log: a subnormal argument scaled by 2^23 (8388608), MLIR's approximation,
// 23 ln 2 taken off; no math.log left.
// CHECK-LABEL: func.func @log_f32
// CHECK-NOT: math.log
// CHECK-NOT: math.fma
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: math.log
// CHECK: return
func.func @log_f32(%x: f32) -> f32 {
  %y = math.log %x : f32
  return %y : f32
}

// -----

// tanh: +-1 (copysign) past 13 ln 2, MLIR's approximation below, its
// multiply-adds without FMA (the same bits on targets with and without).
// CHECK-LABEL: func.func @tanh_f32
// CHECK-NOT: math.tanh
// CHECK-NOT: math.fma
// CHECK: math.absf
// CHECK: math.copysign
// CHECK-NOT: math.tanh
// CHECK-NOT: math.fma
// CHECK: return
func.func @tanh_f32(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  return %y : f32
}

// -----

// An op not named (sin) stays.
// CHECK-LABEL: func.func @sin_f32
// CHECK: math.sin
func.func @sin_f32(%x: f32) -> f32 {
  %y = math.sin %x : f32
  return %y : f32
}
