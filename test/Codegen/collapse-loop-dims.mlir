// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-collapse-loop-dims))' --split-input-file %s | FileCheck %s
// RUN: estc-opt --pass-pipeline='builtin.module(func.func(est-collapse-loop-dims,cse))' --split-input-file %s | FileCheck %s --check-prefix=CSE

// A ReLU after a convolution whose bias the runtime kernel added: the bias
// input is never read and is dropped; the four parallel loops over NHWC
// become one loop over the collapsed buffers.
// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: memref<?x4x4x3xf32>, %[[B:.*]]: memref<3xf32>, %[[Y:.*]]: memref<?x4x4x3xf32>)
// CHECK-DAG: %[[XC:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1, 2, 3]] : memref<?x4x4x3xf32> into memref<?xf32>
// CHECK-DAG: %[[YC:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1, 2, 3]] : memref<?x4x4x3xf32> into memref<?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[XC]] : memref<?xf32>) outs(%[[YC]] : memref<?xf32>)
// CHECK: arith.maximumf
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @relu(%x: memref<?x4x4x3xf32>, %b: memref<3xf32>, %y: memref<?x4x4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#nhwc, #c, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<?x4x4x3xf32>, memref<3xf32>) outs(%y : memref<?x4x4x3xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A bias gradient: the reductions over N, H and W become one reduction over
// rows of C (same order of the sums), the channel loop stays innermost.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[GC:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : memref<?x4x4x3xf32> into memref<?x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ROWS]], #[[C]]], iterator_types = ["reduction", "parallel"]} ins(%[[GC]] : memref<?x3xf32>) outs(%{{.*}} : memref<3xf32>)
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @bias_grad(%g: memref<?x4x4x3xf32>, %db: memref<3xf32>) {
  linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "reduction", "reduction", "parallel"]}
      ins(%g : memref<?x4x4x3xf32>) outs(%db : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// linalg.fill becomes a generic over one loop.
// CHECK-LABEL: func.func @fill
// CHECK: %[[C:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : memref<?x2x2x5xf32> into memref<?xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.*}} : f32) outs(%[[C]] : memref<?xf32>)
// CHECK-NOT: linalg.fill
func.func @fill(%y: memref<?x2x2x5xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%y : memref<?x2x2x5xf32>)
  return
}

// -----

// What stays: loops whose index the body reads (here the pooling window's
// taps and the pixels), and a window input that only gives the taps their
// count although the body never reads it.
// CHECK-LABEL: func.func @window
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%{{.*}} : memref<2x2xf32>) outs(%{{.*}} : memref<?x2x2x3xf32>)
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
func.func @window(%x: memref<?x4x4x3xf32>, %y: memref<?x2x2x3xf32>) {
  %w = memref.alloca() : memref<2x2xf32>
  %c2 = arith.constant 2 : index
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
      ins(%w : memref<2x2xf32>) outs(%y : memref<?x2x2x3xf32>) {
  ^bb0(%unused: f32, %acc: f32):
    %n = linalg.index 0 : index
    %oh = linalg.index 1 : index
    %ow = linalg.index 2 : index
    %kh = linalg.index 3 : index
    %kw = linalg.index 4 : index
    %c = linalg.index 5 : index
    %h0 = arith.muli %oh, %c2 : index
    %h = arith.addi %h0, %kh : index
    %w0 = arith.muli %ow, %c2 : index
    %w1 = arith.addi %w0, %kw : index
    %v = memref.load %x[%n, %h, %w1, %c] : memref<?x4x4x3xf32>
    %r = arith.maximumf %acc, %v : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An in-place update (the variable read and written, as the optimizers'
// loops do): each operand gets its own collapse_shape; the pipeline's CSE
// after this pass leaves one view of the variable, so LLVM sees one pointer
// for the read and the write (with two, its overlap check fails at run time
// and the scalar loop runs).
// CHECK-LABEL: func.func @in_place
// CHECK-COUNT-2: memref.collapse_shape %arg0
// CSE-LABEL: func.func @in_place
// CSE: %[[V:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<4x8xf32> into memref<32xf32>
// CSE-NOT: memref.collapse_shape %arg0
// CSE: linalg.generic {{.*}} ins(%[[V]], %{{.*}} : memref<32xf32>, memref<32xf32>) outs(%[[V]] : memref<32xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @in_place(%v: memref<4x8xf32>, %g: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%v, %g : memref<4x8xf32>, memref<4x8xf32>) outs(%v : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  }
  return
}
