// RUN: estc-opt --est-outline-loop-nests --split-input-file %s | FileCheck %s

// What the recorded noalias arguments and loop annotations become in LLVM:
// llvm-stage.mlir.

// A bias gradient on two views of the arena: the loop nest moves into a
// private noinline function (constants cloned in, buffers as
// arguments) called in its place. The two views are different buffers of
// the memory plan, so both are noalias: the allocated and aligned pointers
// of each descriptor (LLVM arguments 0, 1 and 7, 8). A nest with a
// reduction gets no loop annotation.
// CHECK-LABEL: func.func private @step_loop0
// CHECK-SAME: (%[[G:.*]]: memref<?x3xf32>, %[[DB:.*]]: memref<3xf32>)
// CHECK-SAME: attributes {estc.noalias_args = array<i64: 0, 1, 7, 8>, passthrough = ["noinline"]}
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %[[G]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[DB]]
// CHECK-NOT: llvm.loop_annotation
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[ARENA:.*]]: memref<?xi8>, %[[X:.*]]: memref<?x3xf32>)
// CHECK: %[[V0:.*]] = memref.view %[[ARENA]]
// CHECK: %[[V1:.*]] = memref.view %[[ARENA]]
// CHECK: call @step_loop0(%[[V0]], %[[V1]]) : (memref<?x3xf32>, memref<3xf32>) -> ()
// CHECK-NOT: linalg.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#c = affine_map<(d0, d1) -> (d1)>
func.func @step(%arena: memref<?xi8>, %x: memref<?x3xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x3xf32>
  %g = memref.view %arena[%c64][%n] : memref<?xi8> to memref<?x3xf32>
  %db = memref.view %arena[%c0][] : memref<?xi8> to memref<3xf32>
  linalg.generic {indexing_maps = [#rows, #c], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<?x3xf32>) outs(%db : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Arguments of the function are distinct buffers (the ABI), and distinct
// from views of the arena; an op reading a buffer in place (input and
// output the same value) passes it once. Two views of one buffer (a
// reshape of the output) are not distinct: neither gets noalias, the
// others still do. A scalar captured from outside is an argument.
// CHECK-LABEL: func.func private @update_loop0
// CHECK-SAME: (%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: f32)
// CHECK-SAME: estc.noalias_args = array<i64: 0, 1, 5, 6>
// CHECK-LABEL: func.func private @update_loop1
// CHECK-SAME: (%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<2x4xf32>)
// CHECK-SAME: estc.noalias_args = array<i64: 0, 1>
// CHECK-LABEL: func.func @update
// CHECK: call @update_loop0(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8xf32>, memref<8xf32>, f32) -> ()
// CHECK: call @update_loop1
#id = affine_map<(d0) -> (d0)>
func.func @update(%arena: memref<?xi8>, %v: memref<8xf32>, %m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %lr = memref.load %m[%c0] : memref<8xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%v, %m : memref<8xf32>, memref<8xf32>) outs(%v : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %b, %lr : f32
    %r = arith.subf %a, %p : f32
    linalg.yield %r : f32
  }
  %t = memref.view %arena[%c0][] : memref<?xi8> to memref<8xf32>
  %t2 = memref.expand_shape %t [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%v : memref<8xf32>) outs(%t : memref<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = memref.load %t2[%c0, %c0] : memref<2x4xf32>
    %r = arith.addf %a, %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An all-parallel nest whose innermost loop is short: that loop is kept
// rolled (`unroll disable`), so LLVM vectorizes the contiguous channels
// instead of unrolling them and vectorizing across pixels with gathers.
// CHECK-DAG: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[ANN:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func private @mask_loop0
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.select
// CHECK: } {llvm.loop_annotation = #[[ANN]]}
// CHECK-NEXT: }
#nc = affine_map<(d0, d1) -> (d0, d1)>
func.func @mask(%x: memref<?x20xf32>, %g: memref<?x20xf32>, %y: memref<?x20xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#nc, #nc, #nc], iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : memref<?x20xf32>, memref<?x20xf32>) outs(%y : memref<?x20xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.cmpf ogt, %a, %zero : f32
    %r = arith.select %p, %b, %zero : f32
    linalg.yield %r : f32
  }
  return
}
