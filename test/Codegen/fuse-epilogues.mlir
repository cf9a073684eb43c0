// RUN: estc-opt --est-linalg-to-runtime-calls --est-fuse-epilogues --canonicalize --split-input-file %s | FileCheck %s

// est-fuse-epilogues after est-linalg-to-runtime-calls: act(C + bias) after
// a matmul or convolution becomes part of the kernel call.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Dense + relu, as fusion and bufferization leave it: the generic writes
// another buffer; the kernel writes it directly and C disappears.

// CHECK-LABEL: func.func @dense_relu(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<?x8xf32>, %[[W:[a-z0-9_]+]]: memref<8x16xf32>, %[[BIAS:[a-z0-9_]+]]: memref<16xf32>, %[[Y:[a-z0-9_]+]]: memref<?x16xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[RELU:.*]] = arith.constant 1 : i64
// CHECK-NOT: memref.alloc
// CHECK: %[[Y3:.*]] = memref.expand_shape %[[Y]]
// CHECK: %[[YC:.*]] = memref.cast %[[Y3]]
// CHECK: %[[BC:.*]] = memref.cast %[[BIAS]] : memref<16xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: call @estc_matmul_bias_act_f32(%{{.*}}, %{{.*}}, %[[YC]], %[[BC]], %[[ZERO]], %[[ZERO]], %[[RELU]])
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK: func.func private @estc_matmul_bias_act_f32(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, i64, i64, i64) attributes {llvm.emit_c_interface}
func.func @dense_relu(%x: memref<?x8xf32>, %w: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<?x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %c = memref.alloc(%n) : memref<?x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x16xf32>)
  linalg.matmul ins(%x, %w : memref<?x8xf32>, memref<8x16xf32>) outs(%c : memref<?x16xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<?x16xf32>, memref<16xf32>) outs(%y : memref<?x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Conv + relu with the generic in place (ins(C, bias) outs(C)), the
// ConvNet's form, and C read afterwards (the pooling); strides are kept.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d3)>

// CHECK-LABEL: func.func @conv_relu_in_place(
// CHECK-SAME: %[[IN:[a-z0-9_]+]]: memref<2x8x8x3xf32>, %[[F:[a-z0-9_]+]]: memref<3x3x3x4xf32>, %[[BIAS:[a-z0-9_]+]]: memref<4xf32>, %[[OUT:[a-z0-9_]+]]: memref<2x3x3x4xf32>, %[[Z:[a-z0-9_]+]]: memref<2x3x3x4xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[OC:.*]] = memref.cast %[[OUT]] : memref<2x3x3x4xf32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-DAG: %[[BC:.*]] = memref.cast %[[BIAS]]
// CHECK: call @estc_conv2d_nhwc_hwio_bias_act_f32(%{{.*}}, %{{.*}}, %[[OC]], %[[BC]], %[[TWO]], %[[TWO]], %[[ONE]], %[[ONE]], %{{.*}}, %{{.*}}, %[[ONE]])
// CHECK-NOT: linalg.generic
// CHECK: memref.copy %[[OUT]], %[[Z]]
// CHECK: func.func private @estc_conv2d_nhwc_hwio_bias_act_f32({{.*}}, memref<?xf32, strided<[?], offset: ?>>, i64, i64, i64, i64, i64, i64, i64)
func.func @conv_relu_in_place(%in: memref<2x8x8x3xf32>, %f: memref<3x3x3x4xf32>, %bias: memref<4xf32>, %out: memref<2x3x3x4xf32>, %z: memref<2x3x3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<2x3x3x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%in, %f : memref<2x8x8x3xf32>, memref<3x3x3x4xf32>) outs(%out : memref<2x3x3x4xf32>)
  linalg.generic {indexing_maps = [#id4, #chan, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%out, %bias : memref<2x3x3x4xf32>, memref<4xf32>) outs(%out : memref<2x3x3x4xf32>) {
  ^bb0(%c: f32, %b: f32, %o: f32):
    %s = arith.addf %c, %b : f32
    %r = arith.maximumf %zero, %s : f32
    linalg.yield %r : f32
  }
  memref.copy %out, %z : memref<2x3x3x4xf32> to memref<2x3x3x4xf32>
  return
}

// -----

// Bias only, in place through the init (ins(bias) outs(C)), operands
// reversed; batch matmul.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last3 = affine_map<(d0, d1, d2) -> (d2)>

// CHECK-LABEL: func.func @batched_bias_in_init(
// CHECK-SAME: %[[C:[a-z0-9_]+]]: memref<2x3x5xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[CC:.*]] = memref.cast %[[C]]
// CHECK: call @estc_matmul_bias_act_f32(%{{.*}}, %{{.*}}, %[[CC]], %{{.*}}, %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CHECK-NOT: linalg.generic
func.func @batched_bias_in_init(%a: memref<2x3x4xf32>, %b: memref<2x4x5xf32>, %bias: memref<5xf32>, %c: memref<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf32>, memref<2x4x5xf32>) outs(%c : memref<2x3x5xf32>)
  linalg.generic {indexing_maps = [#last3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bias : memref<5xf32>) outs(%c : memref<2x3x5xf32>) {
  ^bb0(%bv: f32, %cv: f32):
    %s = arith.addf %bv, %cv : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Relu6 (constants on either side).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @relu6(
// CHECK-DAG: %[[RELU6:.*]] = arith.constant 2 : i64
// CHECK: call @estc_matmul_bias_act_f32({{.*}}, %[[RELU6]])
// CHECK-NOT: linalg.generic
func.func @relu6(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %b, %c : f32
    %r = arith.maximumf %s, %zero : f32
    %m = arith.minimumf %six, %r : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Logits read by several consumers that all add the same bias first (the
// seed models' softmax and argmax): the kernel adds the bias, the consumers
// read C.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @shared_bias_add(
// CHECK-SAME: %[[BIAS:[a-z0-9_]+]]: memref<10xf32>, %[[MAX:[a-z0-9_]+]]: memref<4xf32>, %[[P:[a-z0-9_]+]]: memref<4x10xf32>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x10xf32>
// CHECK: call @estc_matmul_bias_act_f32(
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[BIAS]] : memref<4x10xf32>, memref<10xf32>) outs(%[[MAX]] : memref<4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: arith.maximumf %[[IN]], %[[OUT]]
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[BIAS]], %[[MAX]] : {{.*}}) outs(%[[P]] : memref<4x10xf32>)
// CHECK-NEXT: ^bb0(%[[IN2:.*]]: f32, %{{.*}}: f32, %[[M:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.subf %[[IN2]], %[[M]]
// CHECK-NOT: arith.addf
func.func @shared_bias_add(%x: memref<4x8xf32>, %w: memref<8x10xf32>, %bias: memref<10xf32>, %max: memref<4xf32>, %p: memref<4x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x10xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x10xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x10xf32>) outs(%c : memref<4x10xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #col], iterator_types = ["parallel", "reduction"]}
      ins(%c, %bias : memref<4x10xf32>, memref<10xf32>) outs(%max : memref<4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %m = arith.maximumf %s, %out : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id2, #row, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias, %max : memref<4x10xf32>, memref<10xf32>, memref<4xf32>) outs(%p : memref<4x10xf32>) {
  ^bb0(%in: f32, %b: f32, %m: f32, %out: f32):
    %s = arith.addf %b, %in : f32
    %d = arith.subf %s, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// Not fused: C is also copied elsewhere.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @c_used_twice(
// CHECK: call @estc_matmul_f32(
// CHECK: linalg.generic
// CHECK: memref.copy
// CHECK-NOT: estc_matmul_bias_act_f32
func.func @c_used_twice(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<4x16xf32>, %z: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x16xf32>, memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %c, %z : memref<4x16xf32> to memref<4x16xf32>
  return
}

// -----

// Not fused: the "bias" is a full matrix, not a 1-D broadcast; nor a bias
// broadcast along the rows.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @bias_not_broadcast(
// CHECK: call @estc_matmul_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @bias_along_rows(
// CHECK: call @estc_matmul_f32(
// CHECK: linalg.generic
// CHECK-NOT: estc_matmul_bias_act_f32
func.func @bias_not_broadcast(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %bias: memref<4x16xf32>, %y: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<4x16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return
}
func.func @bias_along_rows(%x: memref<4x8xf32>, %w: memref<8x4xf32>, %bias: memref<4xf32>, %y: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x4xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x4xf32>) outs(%y : memref<4x4xf32>)
  linalg.generic {indexing_maps = [#col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<4xf32>) outs(%y : memref<4x4xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not fused: other bodies (subtraction; max with -0.0, which differs from
// relu on -0; relu then exp).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @other_bodies(
// CHECK-COUNT-3: call @estc_matmul_f32(
// CHECK-NOT: estc_matmul_bias_act_f32
func.func @other_bodies(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %negzero = arith.constant -0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.subf %c, %b : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    %r = arith.maximumf %s, %negzero : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    %r = arith.maximumf %s, %zero : f32
    %e = math.exp %r : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// Not fused: the generic writes the kernel's own input (the buffer of the
// previous layer), which the kernel cannot overwrite while reading it.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @writes_kernel_input(
// CHECK: call @estc_matmul_f32(
// CHECK: linalg.generic
// CHECK-NOT: estc_matmul_bias_act_f32
func.func @writes_kernel_input(%x: memref<4x16xf32>, %w: memref<16x16xf32>, %bias: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x16xf32>, memref<16x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x16xf32>, memref<16xf32>) outs(%x : memref<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The epilogue in place on C, which a later matmul reads: the later kernel
// call reads C through the views made for it, a read of C like any other
// (the epilogue's result is what it reads).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @in_place_then_matmul(
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK: %[[C3:.*]] = memref.expand_shape %[[C]]
// CHECK: %[[CC:.*]] = memref.cast %[[C3]]
// CHECK: call @estc_matmul_bias_act_f32(%{{.*}}, %{{.*}}, %[[CC]],
// CHECK: %[[C3B:.*]] = memref.expand_shape %[[C]]
// CHECK: %[[CCB:.*]] = memref.cast %[[C3B]]
// CHECK: call @estc_matmul_f32(%[[CCB]],
// CHECK-NOT: linalg.generic
func.func @in_place_then_matmul(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %w2: memref<16x4xf32>, %bias: memref<16xf32>, %y: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%b: f32, %o: f32):
    %s = arith.addf %o, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<4x4xf32>)
  linalg.matmul ins(%c, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// The epilogue writes the kernel's input D, a temporary that a later matmul
// reads: the fused call writes C and the later call reads C.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @redirect_to_later_kernel(
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK: %[[C3:.*]] = memref.expand_shape %[[C]]
// CHECK: %[[CC:.*]] = memref.cast %[[C3]]
// CHECK: call @estc_matmul_bias_act_f32(%{{.*}}, %{{.*}}, %[[CC]],
// CHECK: %[[C3B:.*]] = memref.expand_shape %[[C]]
// CHECK: %[[CCB:.*]] = memref.cast %[[C3B]]
// CHECK: call @estc_matmul_f32(%[[CCB]],
func.func @redirect_to_later_kernel(%x: memref<4x16xf32>, %w: memref<16x16xf32>, %w2: memref<16x4xf32>, %bias: memref<16xf32>, %y: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %d = memref.alloc() : memref<4x16xf32>
  memref.copy %x, %d : memref<4x16xf32> to memref<4x16xf32>
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%d, %w : memref<4x16xf32>, memref<16x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x16xf32>, memref<16xf32>) outs(%d : memref<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<4x4xf32>)
  linalg.matmul ins(%d, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// Two matmuls, then their epilogues: each call is fused with its own.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @interleaved(
// CHECK-COUNT-2: call @estc_matmul_bias_act_f32(
// CHECK-NOT: linalg.generic
func.func @interleaved(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %w2: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<4x16xf32>, %y2: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  %c2 = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x16xf32>)
  linalg.matmul ins(%x, %w2 : memref<4x8xf32>, memref<8x16xf32>) outs(%c2 : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<4x16xf32>, memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c2, %bias : memref<4x16xf32>, memref<16xf32>) outs(%y2 : memref<4x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Conv + relu in place on C, which a conv backprop then gathers (reads at
// computed coordinates): not fused. When the backprop streams C instead
// (below), it is.

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @gathered_by_backprop(
// CHECK: call @estc_conv2d_nhwc_hwio_f32(
// CHECK: linalg.generic
// CHECK: call @estc_conv2d_backprop_filter_f32(
// CHECK-NOT: bias_act
func.func @gathered_by_backprop(%in: memref<2x5x6x2xf32>, %f: memref<1x1x2x2xf32>, %bias: memref<2xf32>, %dy: memref<2x3x3x4xf32>, %dw: memref<3x3x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c = memref.alloc() : memref<2x5x6x2xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x5x6x2xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %f : memref<2x5x6x2xf32>, memref<1x1x2x2xf32>) outs(%c : memref<2x5x6x2xf32>)
  linalg.generic {indexing_maps = [#ch, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bias : memref<2xf32>) outs(%c : memref<2x5x6x2xf32>) {
  ^bb0(%b: f32, %o: f32):
    %s = arith.addf %o, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%dw : memref<3x3x2x4xf32>)
  linalg.generic {indexing_maps = [#dy, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_filter_f32"} ins(%dy : memref<2x3x3x4xf32>) outs(%dw : memref<3x3x2x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%i: f32, %out: f32):
    %n = linalg.index 4 : index
    %k = linalg.index 2 : index
    %v = memref.load %c[%n, %c0, %c0, %k] : memref<2x5x6x2xf32>
    %p = arith.mulf %v, %i : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @streamed_by_backprop(
// CHECK: %[[C:.*]] = memref.alloc() : memref<2x3x3x4xf32>
// CHECK: %[[CC:.*]] = memref.cast %[[C]]
// CHECK: call @estc_conv2d_nhwc_hwio_bias_act_f32(%{{.*}}, %{{.*}}, %[[CC]],
// CHECK-NOT: linalg.generic
// CHECK: %[[CC2:.*]] = memref.cast %[[C]]
// CHECK: call @estc_conv2d_backprop_filter_f32(%{{.*}}, %[[CC2]],
func.func @streamed_by_backprop(%in: memref<2x3x3x2xf32>, %f: memref<1x1x2x4xf32>, %bias: memref<4xf32>, %x: memref<2x5x6x2xf32>, %dw: memref<3x3x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c = memref.alloc() : memref<2x3x3x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x3x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %f : memref<2x3x3x2xf32>, memref<1x1x2x4xf32>) outs(%c : memref<2x3x3x4xf32>)
  linalg.generic {indexing_maps = [#ch, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bias : memref<4xf32>) outs(%c : memref<2x3x3x4xf32>) {
  ^bb0(%b: f32, %o: f32):
    %s = arith.addf %o, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%dw : memref<3x3x2x4xf32>)
  linalg.generic {indexing_maps = [#dy, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "estc_conv2d_backprop_filter_f32"} ins(%c : memref<2x3x3x4xf32>) outs(%dw : memref<3x3x2x4xf32>) attrs = {estc.conv = array<i64: 2, 2, 1, 1, 1, 0>} {
  ^bb0(%i: f32, %out: f32):
    %n = linalg.index 4 : index
    %k = linalg.index 2 : index
    %v = memref.load %x[%n, %c0, %c0, %k] : memref<2x5x6x2xf32>
    %p = arith.mulf %v, %i : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Kernels are declared in the order the calls first need them: the
// unfused convolution's kernel, then the matmul's and its fused kernel
// (declared where est-linalg-to-runtime-calls declared kernels as it
// went), then the f64 matmul's.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @declaration_order(
// CHECK: func.func private @estc_conv2d_nhwc_hwio_f32(
// CHECK-NEXT: func.func private @estc_matmul_f32(
// CHECK-NEXT: func.func private @estc_matmul_bias_act_f32(
// CHECK-NEXT: func.func private @estc_matmul_f64(
func.func @declaration_order(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %bias: memref<16xf32>, %y: memref<4x16xf32>,
                             %in: memref<1x4x4x2xf32>, %f: memref<1x1x2x3xf32>, %o: memref<1x4x4x3xf32>,
                             %xd: memref<2x2xf64>, %yd: memref<2x2xf64>) {
  %zero = arith.constant 0.0 : f32
  %zd = arith.constant 0.0 : f64
  linalg.fill ins(%zero : f32) outs(%o : memref<1x4x4x3xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %f : memref<1x4x4x2xf32>, memref<1x1x2x3xf32>) outs(%o : memref<1x4x4x3xf32>)
  linalg.fill ins(%zero : f32) outs(%y : memref<4x16xf32>)
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%y : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zd : f64) outs(%yd : memref<2x2xf64>)
  linalg.matmul ins(%xd, %xd : memref<2x2xf64>, memref<2x2xf64>) outs(%yd : memref<2x2xf64>)
  return
}
