// RUN: estc-opt --est-linalg-to-runtime-calls --canonicalize --split-input-file %s | FileCheck %s

// A 2-D matmul is a batch-1 call; the zero fill is dropped (kernels
// overwrite their output); transposes come from the indexing maps.

// CHECK-LABEL: func.func @transposed(
// CHECK-SAME: %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<16x4xf32>, %[[C:.*]]: memref<8x16xf32>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[A3:.*]] = memref.expand_shape %[[A]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 8] : memref<4x8xf32> into memref<1x4x8xf32>
// CHECK-DAG: %[[AC:.*]] = memref.cast %[[A3]] : memref<1x4x8xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: call @estc_matmul_f32(%[[AC]], %{{.*}}, %{{.*}}, %[[ONE]], %[[ONE]])
// CHECK-NOT: linalg.matmul
func.func @transposed(%a: memref<4x8xf32>, %b: memref<16x4xf32>, %c: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%a, %b : memref<4x8xf32>, memref<16x4xf32>) outs(%c : memref<8x16xf32>)
  return
}
// CHECK: func.func private @estc_matmul_f32(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i64, i64) attributes {llvm.emit_c_interface}

// -----

// A linalg.transpose producer becomes the flag; a non-zero initial value is
// added after the call (f64 kernel).

// CHECK-LABEL: func.func @via_transpose(
// CHECK-SAME: %[[A:.*]]: memref<?x4xf64>, %[[B:.*]]: memref<3x4xf64>, %[[C:.*]]: memref<?x3xf64>)
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[TMP:.*]] = memref.alloc(%{{.*}}) : memref<?x3xf64>
// CHECK: %[[B3:.*]] = memref.expand_shape %[[B]]
// CHECK: %[[T3:.*]] = memref.expand_shape %[[TMP]]
// CHECK: call @estc_matmul_f64(%{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %[[ONE]])
// CHECK: linalg.generic {{.*}} ins(%[[TMP]] : memref<?x3xf64>) outs(%[[C]] : memref<?x3xf64>)
// CHECK: arith.addf
func.func @via_transpose(%a: memref<?x4xf64>, %b: memref<3x4xf64>, %c: memref<?x3xf64>) {
  %t = memref.alloc() : memref<4x3xf64>
  linalg.transpose ins(%b : memref<3x4xf64>) outs(%t : memref<4x3xf64>) permutation = [1, 0]
  linalg.matmul ins(%a, %t : memref<?x4xf64>, memref<4x3xf64>) outs(%c : memref<?x3xf64>)
  return
}

// -----

// CHECK-LABEL: func.func @batched(
// CHECK-SAME: %[[A:.*]]: memref<2x3x4xf32>
// CHECK: %[[AC:.*]] = memref.cast %[[A]] : memref<2x3x4xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: call @estc_matmul_f32(%[[AC]],
func.func @batched(%a: memref<2x3x4xf32>, %b: memref<2x4x5xf32>, %c: memref<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf32>, memref<2x4x5xf32>) outs(%c : memref<2x3x5xf32>)
  return
}

// -----

// No kernel for integers: left for loops.
// CHECK-LABEL: func.func @integer(
// CHECK: linalg.matmul
// CHECK-NOT: call
func.func @integer(%a: memref<2x3xi32>, %b: memref<3x4xi32>, %c: memref<2x4xi32>) {
  linalg.matmul ins(%a, %b : memref<2x3xi32>, memref<3x4xi32>) outs(%c : memref<2x4xi32>)
  return
}

// -----

// A bufferized zero tensor.pad (fill + copy into the interior) folds into
// pad_top / pad_left: the kernel reads the unpadded input, nothing is
// padded. A zero init shared through a copy is dropped too.

// CHECK-LABEL: func.func @padded_conv(
// CHECK-SAME: %[[X:.*]]: memref<?x5x5x2xf32>, %[[W:.*]]: memref<3x3x2x4xf32>, %[[O:.*]]: memref<?x3x3x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.map
// CHECK-NOT: memref.copy
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[XC:.*]] = memref.cast %[[X]] : memref<?x5x5x2xf32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: call @estc_conv2d_nhwc_hwio_f32(%[[XC]], %{{.*}}, %{{.*}}, %[[TWO]], %[[TWO]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]])
// CHECK-NOT: linalg
// CHECK: func.func private @estc_conv2d_nhwc_hwio_f32(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, i64, i64, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
func.func @padded_conv(%x: memref<?x5x5x2xf32>, %w: memref<3x3x2x4xf32>, %out: memref<?x3x3x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x5x5x2xf32>
  %padded = memref.alloc(%n) {alignment = 64 : i64} : memref<?x7x7x2xf32>
  linalg.map outs(%padded : memref<?x7x7x2xf32>)
    (%init: f32) {
      linalg.yield %cst : f32
    }
  %n2 = memref.dim %x, %c0 : memref<?x5x5x2xf32>
  %interior = memref.subview %padded[0, 1, 1, 0] [%n2, 5, 5, 2] [1, 1, 1, 1] : memref<?x7x7x2xf32> to memref<?x5x5x2xf32, strided<[98, 14, 2, 1], offset: 16>>
  memref.copy %x, %interior : memref<?x5x5x2xf32> to memref<?x5x5x2xf32, strided<[98, 14, 2, 1], offset: 16>>
  %zeros = memref.alloc(%n) {alignment = 64 : i64} : memref<?x3x3x4xf32>
  linalg.fill ins(%cst : f32) outs(%zeros : memref<?x3x3x4xf32>)
  memref.copy %zeros, %out : memref<?x3x3x4xf32> to memref<?x3x3x4xf32>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%padded, %w : memref<?x7x7x2xf32>, memref<3x3x2x4xf32>) outs(%out : memref<?x3x3x4xf32>)
  return
}

// -----

// convert-est-to-linalg's f32 conv backprops (bufferized) become their
// kernels: the generic's operand, the buffer its body loads from and its
// output, with the scalars of "estc.conv"; the zero fill is dropped.

#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @conv_backprops(
// CHECK-SAME: %[[X:.*]]: memref<?x5x6x2xf32>, %[[W:.*]]: memref<3x3x2x4xf32>, %[[DY:.*]]: memref<?x3x3x4xf32>, %[[DX:.*]]: memref<?x5x6x2xf32>, %[[DW:.*]]: memref<3x3x2x4xf32>)
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[WC:.*]] = memref.cast %[[W]]
// CHECK-DAG: %[[DYC:.*]] = memref.cast %[[DY]]
// CHECK-DAG: %[[DXC:.*]] = memref.cast %[[DX]]
// CHECK: call @estc_conv2d_backprop_input_f32(%[[WC]], %[[DYC]], %[[DXC]], %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C0]])
// CHECK-DAG: %[[XC:.*]] = memref.cast %[[X]]
// CHECK-DAG: %[[DYC2:.*]] = memref.cast %[[DY]]
// CHECK-DAG: %[[DWC:.*]] = memref.cast %[[DW]]
// CHECK: call @estc_conv2d_backprop_filter_f32(%[[XC]], %[[DYC2]], %[[DWC]], %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C0]])
// CHECK-NOT: linalg.generic
func.func @conv_backprops(%x: memref<?x5x6x2xf32>, %w: memref<3x3x2x4xf32>, %dy: memref<?x3x3x4xf32>, %dx: memref<?x5x6x2xf32>, %dw: memref<3x3x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%dx : memref<?x5x6x2xf32>)
  linalg.generic {indexing_maps = [#filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_input_f32"} ins(%w : memref<3x3x2x4xf32>) outs(%dx : memref<?x5x6x2xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %o = linalg.index 6 : index
    %v = memref.load %dy[%n, %c0, %c0, %o] : memref<?x3x3x4xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dw : memref<3x3x2x4xf32>)
  linalg.generic {indexing_maps = [#dy, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_filter_f32"} ins(%dy : memref<?x3x3x4xf32>) outs(%dw : memref<3x3x2x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 4 : index
    %c = linalg.index 2 : index
    %v = memref.load %x[%n, %c0, %c0, %c] : memref<?x5x6x2xf32>
    %p = arith.mulf %v, %in : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
