// RUN: estc-opt %s --split-input-file --estc-bufferize-stage | FileCheck %s

// A variable's update computed by a loop that does not read its init is
// computed in the variable's own buffer: an optimizer step (here
// m = 0.9 m + g; w = w - 0.1 m, one loop with two results) updates both
// variables in place, with no temporary and no copy.
// CHECK-LABEL: func.func @momentum(
// CHECK-SAME: %[[W:[^:]*]]: memref<4x3xf32> {est.name = "w", est.variable},
// CHECK-SAME: %[[M:[^:]*]]: memref<4x3xf32> {est.name = "w/Momentum", est.variable},
// CHECK-SAME: %[[G:[^:]*]]: memref<4x3xf32>)
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[W]], %[[M]], %[[G]] : {{.*}}) outs(%[[M]], %[[W]] :
// CHECK-NOT: memref.copy
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  est.variable @w : tensor<4x3xf32> {trainable}
  est.variable @"w/Momentum" : tensor<4x3xf32>
  func.func @momentum(%g: tensor<4x3xf32>) {
    %w = est.read_variable @w : tensor<4x3xf32>
    %m = est.read_variable @"w/Momentum" : tensor<4x3xf32>
    %e = tensor.empty() : tensor<4x3xf32>
    %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %m, %g : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) outs(%e, %e : tensor<4x3xf32>, tensor<4x3xf32>) {
    ^bb0(%wi: f32, %mi: f32, %gi: f32, %o0: f32, %o1: f32):
      %mom = arith.constant 0.9 : f32
      %lr = arith.constant 0.1 : f32
      %a = arith.mulf %mi, %mom : f32
      %m2 = arith.addf %a, %gi : f32
      %d = arith.mulf %m2, %lr : f32
      %w2 = arith.subf %wi, %d : f32
      linalg.yield %m2, %w2 : f32, f32
    } -> (tensor<4x3xf32>, tensor<4x3xf32>)
    est.assign_variable @"w/Momentum", %r#0 : tensor<4x3xf32>
    est.assign_variable @w, %r#1 : tensor<4x3xf32>
    return
  }
}

// -----

// The old value is still read after the update (it is returned): the update
// cannot overwrite the buffer, so it goes to a temporary, copied into the
// variable at the end, after the old value was read.
// CHECK-LABEL: func.func @old_value_read_later(
// CHECK-SAME: %[[W:[^:]*]]: memref<3xf32> {est.name = "w", est.variable},
// CHECK-SAME: %[[OUT:[^:]*]]: memref<3xf32> {est.name = "old", est.output})
// CHECK: %[[TMP:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[W]] : memref<3xf32>) outs(%[[TMP]] :
// CHECK: memref.copy %[[W]], %[[OUT]]
// CHECK: memref.copy %[[TMP]], %[[W]]
#v = affine_map<(d0) -> (d0)>
module {
  est.variable @w : tensor<3xf32>
  func.func @old_value_read_later() -> (tensor<3xf32> {est.name = "old"}) {
    %w = est.read_variable @w : tensor<3xf32>
    %e = tensor.empty() : tensor<3xf32>
    %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%w : tensor<3xf32>) outs(%e : tensor<3xf32>) {
    ^bb0(%wi: f32, %o: f32):
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %wi, %two : f32
      linalg.yield %y : f32
    } -> tensor<3xf32>
    est.assign_variable @w, %r : tensor<3xf32>
    return %w : tensor<3xf32>
  }
}

// -----

// A loop that reads its init (an accumulation into the current value) keeps
// its own init: only loops that overwrite every element are redirected.
// CHECK-LABEL: func.func @reads_its_init(
// CHECK-SAME: %[[S:[^:]*]]: memref<f32> {est.name = "total", est.variable},
// CHECK-SAME: %[[X:[^:]*]]: memref<3xf32>)
// CHECK: %[[ACC:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[ACC]] :
// CHECK: memref.copy %[[ACC]], %[[S]]
#r0 = affine_map<(d0) -> (d0)>
#r1 = affine_map<(d0) -> ()>
module {
  est.variable @total : tensor<f32>
  func.func @reads_its_init(%x: tensor<3xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#r0, #r1], iterator_types = ["reduction"]} ins(%x : tensor<3xf32>) outs(%init : tensor<f32>) {
    ^bb0(%xi: f32, %acc: f32):
      %y = arith.addf %xi, %acc : f32
      linalg.yield %y : f32
    } -> tensor<f32>
    est.assign_variable @total, %s : tensor<f32>
    return
  }
}

// -----

// A constant initializer's fill goes straight into the variable.
// CHECK-LABEL: func.func @fill_initializer(
// CHECK-SAME: %[[E:[^:]*]]: memref<1000x64xf32> {est.name = "emb", est.variable})
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : memref<1000x64xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
module {
  est.variable @emb : tensor<1000x64xf32>
  func.func @fill_initializer() {
    %v = arith.constant 0.1 : f32
    %e = tensor.empty() : tensor<1000x64xf32>
    %f = linalg.fill ins(%v : f32) outs(%e : tensor<1000x64xf32>) -> tensor<1000x64xf32>
    est.assign_variable @emb, %f : tensor<1000x64xf32>
    return
  }
}
