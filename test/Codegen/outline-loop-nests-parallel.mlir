// RUN: estc-opt --pass-pipeline='builtin.module(est-parallelize-loops,est-outline-loop-nests)' %s | FileCheck %s

// A max-pool over a batch (parallel outermost loop, so est-parallelize-loops
// moves it into @pool_pfor0 of (lo, hi, captures...)). est-outline-loop-nests
// marks the body's buffers noalias from the launch call's operands (the
// input, the window's shape-only buffer and the output are different views
// of the arena: LLVM arguments of the body 2, 3 (after lo and hi), 13, 14
// and 20, 21) and keeps the short channel loop rolled, although the window
// loops around it are reductions.
// CHECK-DAG: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[ANN:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-DAG: #[[WIDTH:.*]] = #llvm.loop_vectorize<disable = false, width = 8 : i32>
// CHECK-DAG: #[[EIGHT:.*]] = #llvm.loop_annotation<vectorize = #[[WIDTH]]>
// CHECK-LABEL: func.func @pool
// CHECK: call @pool_pfor0_launch
// CHECK-LABEL: func.func private @pool_pfor0(
// CHECK-SAME: estc.noalias_args = array<i64: 2, 3, 13, 14, 20, 21>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: } {llvm.loop_annotation = #[[ANN]]}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @pool_pfor0_launch
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
func.func @pool(%arena: memref<?xi8>, %x: memref<?x8x8x20xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %x, %c0 : memref<?x8x8x20xf32>
  %a = memref.view %arena[%c64][%n] : memref<?xi8> to memref<?x8x8x20xf32>
  %w = memref.view %arena[%c0][] : memref<?xi8> to memref<2x2xf32>
  %y = memref.view %arena[%c128][%n] : memref<?xi8> to memref<?x4x4x20xf32>
  linalg.generic {indexing_maps = [#in, #win, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
      ins(%a, %w : memref<?x8x8x20xf32>, memref<2x2xf32>) outs(%y : memref<?x4x4x20xf32>) {
  ^bb0(%v: f32, %unused: f32, %acc: f32):
    %r = arith.maximumf %acc, %v : f32
    linalg.yield %r : f32
  }
  return
}

// A row sum of exps over 3 classes (a softmax's denominator) and a row max:
// each short class loop computes a math function or reduces the row, so it
// is unrolled, not kept rolled, and the loop over rows is the innermost one
// (LLVM vectorizes it, 8 rows at a time). Subtracting the max from each
// element neither reduces nor computes a math function: kept rolled.
// CHECK-LABEL: func.func private @softmax_rows_pfor0(
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK-COUNT-3: math.exp
// CHECK-NOT: scf.for
// CHECK-NOT: llvm.loop_annotation = #[[EIGHT]]
// CHECK: return
// CHECK-LABEL: func.func private @softmax_rows_pfor1(
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK-COUNT-3: arith.maximumf
// CHECK-NOT: scf.for
// CHECK-NOT: llvm.loop_annotation = #[[EIGHT]]
// CHECK: return
// CHECK-LABEL: func.func private @softmax_rows_pfor2(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.subf
// CHECK: } {llvm.loop_annotation = #[[ANN]]}
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax_rows(%arena: memref<?xi8>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %x = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x3xf32>
  %s = memref.view %arena[%c1024][%n] : memref<?xi8> to memref<?xf32>
  %m = memref.view %arena[%c2048][%n] : memref<?xi8> to memref<?xf32>
  %y = memref.view %arena[%c4096][%n] : memref<?xi8> to memref<?x3xf32>
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x3xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %e = math.exp %v : f32
    %r = arith.addf %acc, %e : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x3xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.maximumf %acc, %v : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<?x3xf32>, memref<?xf32>) outs(%y : memref<?x3xf32>) {
  ^bb0(%v: f32, %max: f32, %out: f32):
    %r = arith.subf %v, %max : f32
    linalg.yield %r : f32
  }
  return
}

// A cross-entropy's row over 3 classes reads the row's i64 label beside its
// f32 logits: the class loop is unrolled as above, and the loop over rows is
// asked to vectorize 8 wide (LLVM's AVX2 cost model would take 4: an i64
// vector of 8 lanes is two registers), where a row loop without i64 (the
// softmax above) is left to LLVM's choice.
// CHECK-LABEL: func.func private @labelled_rows_pfor0(
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK-COUNT-3: math.exp
// CHECK-NOT: scf.for
// CHECK: } {llvm.loop_annotation = #[[EIGHT]]}
// CHECK: return
func.func @labelled_rows(%arena: memref<?xi8>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %x = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x3xf32>
  %l = memref.view %arena[%c1024][%n] : memref<?xi8> to memref<?xi64>
  %s = memref.view %arena[%c2048][%n] : memref<?xi8> to memref<?xf32>
  linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %l : memref<?x3xf32>, memref<?xi64>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %label: i64, %acc: f32):
    %e = math.exp %v : f32
    %f = arith.sitofp %label : i64 to f32
    %p = arith.mulf %e, %f : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
