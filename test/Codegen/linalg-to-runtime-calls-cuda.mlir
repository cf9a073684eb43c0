// RUN: estc-opt --est-linalg-to-runtime-calls=device=cuda --canonicalize --split-input-file %s | FileCheck %s
// RUN: not estc-opt --est-linalg-to-runtime-calls=device=tpu %s 2>&1 | FileCheck %s --check-prefix=DEVICE
// DEVICE: est-linalg-to-runtime-calls: device=tpu: unknown device (cpu or cuda)

// On CUDA the kernels are the estc_cuda_* ones, with the CPU's operands.
// CHECK-LABEL: func.func @matmul(
// CHECK: call @estc_cuda_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.matmul
// CHECK: func.func private @estc_cuda_matmul_f32(
func.func @matmul(%a: memref<?x3xf32>, %b: memref<3x4xf32>, %c: memref<?x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x4xf32>)
  linalg.matmul ins(%a, %b : memref<?x3xf32>, memref<3x4xf32>) outs(%c : memref<?x4xf32>)
  return
}

// -----

// Padding one on every side (5x5 -> 7x7, 3x3 window, stride 2: 3x3 out),
// which cuDNN can do: the kernel call, the pad folded.
// CHECK-LABEL: func.func @symmetric_conv(
// CHECK: call @estc_cuda_conv2d_nhwc_hwio_f32(
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
func.func @symmetric_conv(%x: memref<?x5x5x2xf32>, %w: memref<3x3x2x4xf32>, %out: memref<?x3x3x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x5x5x2xf32>
  %padded = memref.alloc(%n) {alignment = 64 : i64} : memref<?x7x7x2xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<?x7x7x2xf32>)
  %interior = memref.subview %padded[0, 1, 1, 0] [%n, 5, 5, 2] [1, 1, 1, 1] : memref<?x7x7x2xf32> to memref<?x5x5x2xf32, strided<[98, 14, 2, 1], offset: 16>>
  memref.copy %x, %interior : memref<?x5x5x2xf32> to memref<?x5x5x2xf32, strided<[98, 14, 2, 1], offset: 16>>
  linalg.fill ins(%cst : f32) outs(%out : memref<?x3x3x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%padded, %w : memref<?x7x7x2xf32>, memref<3x3x2x4xf32>) outs(%out : memref<?x3x3x4xf32>)
  return
}

// -----

// TF's SAME padding of 4x4 by a 3x3 window at stride 2 is 0 before and 1
// after (4x4 -> 5x5): cuDNN pads both sides alike, so the convolution
// stays a loop nest (the gpu stage makes it a kernel), its pad untouched.
// CHECK-LABEL: func.func @asymmetric_conv(
// CHECK-NOT: call
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0]
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @asymmetric_conv(%x: memref<?x4x4x2xf32>, %w: memref<3x3x2x4xf32>, %out: memref<?x2x2x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4x4x2xf32>
  %padded = memref.alloc(%n) {alignment = 64 : i64} : memref<?x5x5x2xf32>
  linalg.fill ins(%cst : f32) outs(%padded : memref<?x5x5x2xf32>)
  %interior = memref.subview %padded[0, 0, 0, 0] [%n, 4, 4, 2] [1, 1, 1, 1] : memref<?x5x5x2xf32> to memref<?x4x4x2xf32, strided<[50, 10, 2, 1]>>
  memref.copy %x, %interior : memref<?x4x4x2xf32> to memref<?x4x4x2xf32, strided<[50, 10, 2, 1]>>
  linalg.fill ins(%cst : f32) outs(%out : memref<?x2x2x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%padded, %w : memref<?x5x5x2xf32>, memref<3x3x2x4xf32>) outs(%out : memref<?x2x2x4xf32>)
  return
}

// -----

// The conv backprops: with padding one on both sides (5x5 input, 3x3 out)
// the cuDNN kernels; with one before and none after along W (6 columns, 3
// out: cuDNN's symmetric rule gives 2), the generic stays, as a loop nest
// that names no kernel.
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @conv_backprops(
// CHECK: call @estc_cuda_conv2d_backprop_input_f32(
// CHECK: call @estc_cuda_conv2d_backprop_filter_f32(
// CHECK: linalg.generic
// CHECK-NOT: library_call
// CHECK-NOT: estc.conv
// CHECK-SAME: outs(%{{.*}} : memref<?x5x6x2xf32>)
// CHECK-NOT: call
// CHECK: return
func.func @conv_backprops(%x: memref<?x5x5x2xf32>, %w: memref<3x3x2x4xf32>, %dy: memref<?x3x3x4xf32>, %dx: memref<?x5x5x2xf32>, %dw: memref<3x3x2x4xf32>, %dx2: memref<?x5x6x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%dx : memref<?x5x5x2xf32>)
  linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_input_f32"} ins(%w : memref<3x3x2x4xf32>) outs(%dx : memref<?x5x5x2xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %o = linalg.index 6 : index
    %v = memref.load %dy[%n, %c0, %c0, %o] : memref<?x3x3x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dw : memref<3x3x2x4xf32>)
  linalg.generic {indexing_maps = [#dy, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_filter_f32"} ins(%dy : memref<?x3x3x4xf32>) outs(%dw : memref<3x3x2x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 4 : index
    %c = linalg.index 2 : index
    %v = memref.load %x[%n, %c0, %c0, %c] : memref<?x5x5x2xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dx2 : memref<?x5x6x2xf32>)
  linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_input_f32"} ins(%w : memref<3x3x2x4xf32>) outs(%dx2 : memref<?x5x6x2xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %o = linalg.index 6 : index
    %v = memref.load %dy[%n, %c0, %c0, %o] : memref<?x3x3x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A constant operand is host memory: on CUDA the kernel reads a copy of it
// in a temporary (which est-memory-planning puts in the arena).
// CHECK-LABEL: func.func @matmul_by_constant(
// CHECK: %[[G:.*]] = memref.get_global @w : memref<3x4xf32>
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<3x4xf32>
// CHECK: memref.copy %[[G]], %[[COPY]]
// CHECK: memref.expand_shape %[[COPY]]
// CHECK: call @estc_cuda_matmul_f32(
memref.global "private" constant @w : memref<3x4xf32> = dense<1.0>
func.func @matmul_by_constant(%a: memref<?x3xf32>, %c: memref<?x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = memref.get_global @w : memref<3x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x4xf32>)
  linalg.matmul ins(%a, %w : memref<?x3xf32>, memref<3x4xf32>) outs(%c : memref<?x4xf32>)
  return
}
