// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-load-scalar-operands))' --split-input-file %s | FileCheck %s
// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-load-scalar-operands,convert-linalg-to-loops))' --split-input-file %s | FileCheck %s --check-prefix=LOOPS

// Adam's update of a variable: the step size is a rank-0 buffer in the
// arena. It is loaded once, before the op, and passed as a scalar; the
// other operands and the indexing maps are unchanged.

// CHECK-LABEL: func.func @adam_update(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8>, %[[VAR:.*]]: memref<4x8xf32>)
// CHECK: %[[LR_BUF:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8> to memref<f32>
// CHECK: %[[M:.*]] = memref.view %[[ARENA]][%c64][]
// CHECK: %[[OUT:.*]] = memref.view %[[ARENA]][%c192][]
// CHECK: %[[LR:.*]] = memref.load %[[LR_BUF]][] : memref<f32>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[VAR]], %[[LR]], %[[M]] : memref<4x8xf32>, f32, memref<4x8xf32>)
// CHECK-SAME: outs(%[[OUT]] : memref<4x8xf32>)

// In the loops, the step size is read before them, not in the innermost one.
// LOOPS-LABEL: func.func @adam_update(
// LOOPS: %[[LR:.*]] = memref.load %{{.*}}[] : memref<f32>
// LOOPS: scf.for
// LOOPS: scf.for
// LOOPS-NOT: memref<f32>
// LOOPS: arith.mulf %[[LR]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @adam_update(%arena: memref<?xi8>, %var: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c192 = arith.constant 192 : index
  %lr = memref.view %arena[%c0][] : memref<?xi8> to memref<f32>
  %m = memref.view %arena[%c64][] : memref<?xi8> to memref<4x8xf32>
  %out = memref.view %arena[%c192][] : memref<?xi8> to memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #scalar, #id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%var, %lr, %m : memref<4x8xf32>, memref<f32>, memref<4x8xf32>)
      outs(%out : memref<4x8xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %o: f32):
    %step = arith.mulf %s, %g : f32
    %new = arith.subf %v, %step : f32
    linalg.yield %new : f32
  }
  return
}

// -----

// Rank-0 outputs, tensors and buffers of rank 1 are left alone.
// CHECK-LABEL: func.func @others(
// CHECK-NOT: memref.load
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : memref<8xf32>, memref<8xf32>) outs(%{{.*}} : memref<f32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<f32>)
#vec = affine_map<(d0) -> (d0)>
#red = affine_map<(d0) -> ()>
func.func @others(%a: memref<8xf32>, %b: memref<8xf32>, %sum: memref<f32>,
                  %t: tensor<f32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  linalg.generic {indexing_maps = [#vec, #vec, #red],
                  iterator_types = ["reduction"]}
      ins(%a, %b : memref<8xf32>, memref<8xf32>) outs(%sum : memref<f32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %r = linalg.generic {indexing_maps = [#red, #vec],
                       iterator_types = ["parallel"]}
      ins(%t : tensor<f32>) outs(%init : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
