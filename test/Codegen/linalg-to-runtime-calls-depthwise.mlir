// RUN: estc-opt --est-linalg-to-runtime-calls --canonicalize --split-input-file %s | FileCheck %s
// RUN: estc-opt --est-linalg-to-runtime-calls=device=cuda --canonicalize --split-input-file %s | FileCheck %s --check-prefix=CUDA

// convert-est-to-linalg's f32 depthwise convolutions (bufferized) become the
// runtime's depthwise kernels on the CPU: the forward takes (input, filter,
// output), the gradients (filter, grad_output, grad_input) and (input,
// grad_output, grad_filter), with the scalars of "estc.conv"; the zero
// fills are dropped. CUDA has no depthwise kernel: the generics stay loop
// nests (without library_call), which the gpu stage makes kernels.

#wmap = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5, d3, 0)>
#out6 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @depthwise(
// CHECK-SAME: %[[X:.*]]: memref<?x5x5x4xf32>, %[[W:.*]]: memref<3x3x4x1xf32>, %[[DY:.*]]: memref<?x3x3x4xf32>, %[[Y:.*]]: memref<?x3x3x4xf32>, %[[DX:.*]]: memref<?x5x5x4xf32>, %[[DW:.*]]: memref<3x3x4x1xf32>)
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[XC:.*]] = memref.cast %[[X]]
// CHECK-DAG: %[[WC:.*]] = memref.cast %[[W]]
// CHECK-DAG: %[[YC:.*]] = memref.cast %[[Y]]
// CHECK: call @estc_depthwise_conv2d_f32(%[[XC]], %[[WC]], %[[YC]], %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C0]])
// CHECK: call @estc_depthwise_conv2d_backprop_input_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C0]])
// CHECK: call @estc_depthwise_conv2d_backprop_filter_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C0]])
// CHECK-NOT: linalg.generic
// CUDA-LABEL: func.func @depthwise(
// CUDA-NOT: call
// CUDA-NOT: library_call
// CUDA-COUNT-3: linalg.generic
// CUDA-NOT: call
func.func @depthwise(%x: memref<?x5x5x4xf32>, %w: memref<3x3x4x1xf32>, %dy: memref<?x3x3x4xf32>, %y: memref<?x3x3x4xf32>, %dx: memref<?x5x5x4xf32>, %dw: memref<3x3x4x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%y : memref<?x3x3x4xf32>)
  linalg.generic {indexing_maps = [#wmap, #out6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_f32"} ins(%w : memref<3x3x4x1xf32>) outs(%y : memref<?x3x3x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 3 : index
    %v = memref.load %x[%n, %c0, %c0, %c] : memref<?x5x5x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dx : memref<?x5x5x4xf32>)
  linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_backprop_input_f32"} ins(%w : memref<3x3x4x1xf32>) outs(%dx : memref<?x5x5x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 3 : index
    %v = memref.load %dy[%n, %c0, %c0, %c] : memref<?x3x3x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dw : memref<3x3x4x1xf32>)
  linalg.generic {indexing_maps = [#dy, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_backprop_filter_f32"} ins(%dy : memref<?x3x3x4xf32>) outs(%dw : memref<3x3x4x1xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 4 : index
    %c = linalg.index 2 : index
    %v = memref.load %x[%n, %c0, %c0, %c] : memref<?x5x5x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A depthwise generic whose gathered operand folded away (the gradient of
// reduce_sum(y), a splat constant, read in the body as the constant) has no
// buffer to hand a kernel: it stays a loop nest on the CPU too.

#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @folded_gathered(
// CHECK-NOT: call
// CHECK: linalg.generic
// CHECK-NOT: library_call
// CUDA-LABEL: func.func @folded_gathered(
// CUDA: linalg.generic
func.func @folded_gathered(%w: memref<3x3x4x1xf32>, %dx: memref<?x5x5x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%dx : memref<?x5x5x4xf32>)
  linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_depthwise_conv2d_backprop_input_f32"} ins(%w : memref<3x3x4x1xf32>) outs(%dx : memref<?x5x5x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %p = arith.mulf %one, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
