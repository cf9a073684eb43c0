// RUN: estc-opt --est-parallelize-loops --split-input-file %s | FileCheck %s
// RUN: estc-opt --est-parallelize-loops=min-work=1 --split-input-file %s | FileCheck %s --check-prefix=ALL

// An elementwise loop over a dynamic batch (large: the batch is unknown)
// becomes a private function of [lo, hi) of the batch loop and the values it
// captures (buffers, the loaded scalar, the inner size); the constant it
// uses is cloned in. Where the loops were, the marker is called with the
// batch and the operations per batch row (3 body ops x 256).

// CHECK-LABEL: func.func @scale_relu(
// CHECK-SAME: %[[X:.*]]: memref<?x256xf32>, %[[S:.*]]: memref<f32>, %[[Y:.*]]: memref<?x256xf32>)
// CHECK: %[[SCALE:.*]] = memref.load %[[S]][]
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[COST:.*]] = arith.muli %c3, %c256
// CHECK: call @scale_relu_pfor0_launch(%[[N]], %[[COST]], %[[X]], %[[Y]], %[[SCALE]])
// CHECK-NOT: scf.for
// CHECK: return
// CHECK: func.func private @scale_relu_pfor0(%[[LO:.*]]: index, %[[HI:.*]]: index, %[[BX:.*]]: memref<?x256xf32>, %[[BY:.*]]: memref<?x256xf32>, %[[BS:.*]]: f32)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %[[C1]]
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %[[BX]][
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[M:.*]] = arith.mulf %{{.*}}, %[[BS]]
// CHECK: %[[R:.*]] = arith.maximumf %[[M]], %[[ZERO]]
// CHECK: memref.store %[[R]], %[[BY]][
// CHECK: return
// CHECK: func.func private @scale_relu_pfor0_launch(index, index, memref<?x256xf32>, memref<?x256xf32>, f32) attributes {estc.parallel_body = @scale_relu_pfor0}
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @scale_relu(%x: memref<?x256xf32>, %s: memref<f32>, %y: memref<?x256xf32>) {
  %scale = memref.load %s[] : memref<f32>
  linalg.generic {indexing_maps = [#id, #scalar, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %scale : memref<?x256xf32>, f32) outs(%y : memref<?x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.mulf %a, %b : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Softmax's row maximum: the rows are parallel, the reduction along a row
// runs whole inside one outer iteration. Static shape with enough work
// (512 x 1000 x 1 op); a math op counts 10, so the cost of a row of
// exp(x - max) is 1000 x 11.

// CHECK-LABEL: func.func @row_max_and_exp(
// CHECK: %[[COST0:.*]] = arith.muli %c1{{.*}}, %c1000
// CHECK: call @row_max_and_exp_pfor0_launch(%c512{{.*}}, %[[COST0]],
// CHECK: %[[COST1:.*]] = arith.muli %c11, %c1000
// CHECK: call @row_max_and_exp_pfor1_launch(%c512{{.*}}, %[[COST1]],
// CHECK: func.func private @row_max_and_exp_pfor0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<512x1000xf32>, %{{.*}}: memref<512xf32>)
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: func.func private @row_max_and_exp_pfor0_launch(
// CHECK: func.func private @row_max_and_exp_pfor1(
// CHECK: math.exp
// CHECK: func.func private @row_max_and_exp_pfor1_launch(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_max_and_exp(%x: memref<512x1000xf32>, %max: memref<512xf32>, %e: memref<512x1000xf32>) {
  linalg.generic {indexing_maps = [#id, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<512x1000xf32>) outs(%max : memref<512xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<512x1000xf32>, memref<512xf32>) outs(%e : memref<512x1000xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// What stays in place, whatever the work: an outermost reduction (a bias
// gradient sums over the batch), a reduction-only nest, an output not
// indexed by the outer loop (every chunk would write all of it), a kernel
// call left to the runtime (library_call), and ops on tensors. The small
// fill stays only under the default min-work.

// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: call @
// CHECK: return
// ALL-LABEL: func.func @left_alone(
// ALL: call @left_alone_pfor0_launch(%c4,
// ALL-NOT: call @
// ALL: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
func.func @left_alone(%g: memref<?x256xf32>, %db: memref<256xf32>, %v: memref<?xf32>,
                      %sum: memref<f32>, %small: memref<4x4xf32>, %t: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #col],
                  iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<?x256xf32>) outs(%db : memref<256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#vec, #none], iterator_types = ["reduction"]}
      ins(%v : memref<?xf32>) outs(%sum : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #col],
                  iterator_types = ["parallel", "parallel"]}
      ins(%g : memref<?x256xf32>) outs(%db : memref<256xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"],
                  library_call = "estc_some_kernel"}
      ins(%g : memref<?x256xf32>) outs(%g : memref<?x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.fill ins(%zero : f32) outs(%small : memref<4x4xf32>)
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<?x256xf32>) outs(%t : tensor<?x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// -----

// Named ops are loops too: a max pooling over a dynamic batch, split along
// the batch (the window taps are reductions inside one image).

// CHECK-LABEL: func.func @pool(
// CHECK: call @pool_pfor0_launch(
// CHECK: func.func private @pool_pfor0(
// CHECK-COUNT-6: scf.for
func.func @pool(%x: memref<?x24x24x20xf32>, %w: memref<2x2xf32>, %y: memref<?x12x12x20xf32>) {
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<?x24x24x20xf32>, memref<2x2xf32>) outs(%y : memref<?x12x12x20xf32>)
  return
}

// -----

// Buffers in the arena: each buffer (a memref.view) is one argument, and a
// reshape of it is cloned into the function, so the two views of the
// output are one pointer there.

// CHECK-LABEL: func.func @arena_views(
// CHECK-SAME: %[[ARENA:.*]]: memref<?xi8>, %[[IN:.*]]: memref<?x64xf32>)
// CHECK: %[[B:.*]] = memref.dim %[[IN]], %c0
// CHECK: %[[X:.*]] = memref.view %[[ARENA]]
// CHECK: %[[Y:.*]] = memref.view %[[ARENA]]
// CHECK: call @arena_views_pfor0_launch(%[[B]], %{{.*}}, %[[X]], %[[Y]], %[[B]])
// CHECK: func.func private @arena_views_pfor0(%{{.*}}: index, %{{.*}}: index, %[[BX:.*]]: memref<?x64xf32>, %[[BY:.*]]: memref<?x64xf32>, %[[N:.*]]: index)
// CHECK: %[[Y3:.*]] = memref.expand_shape %[[BY]] {{.*}} output_shape [%[[N]], 4, 16]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %[[BX]]
// CHECK: memref.load %[[Y3]]
// CHECK: memref.store %{{.*}}, %[[Y3]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#split = affine_map<(d0, d1, d2) -> (d0, d1 * 16 + d2)>
func.func @arena_views(%arena: memref<?xi8>, %in: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %b = memref.dim %in, %c0 : memref<?x64xf32>
  %off = arith.muli %b, %c256 : index
  %x = memref.view %arena[%off][%b] : memref<?xi8> to memref<?x64xf32>
  %y = memref.view %arena[%c0][%b] : memref<?xi8> to memref<?x64xf32>
  %y3 = memref.expand_shape %y [[0], [1, 2]] output_shape [%b, 4, 16] : memref<?x64xf32> into memref<?x4x16xf32>
  linalg.generic {indexing_maps = [#split, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %y3 : memref<?x64xf32>, memref<?x4x16xf32>) outs(%y3 : memref<?x4x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %n = arith.subf %a, %c : f32
    linalg.yield %n : f32
  }
  return
}
