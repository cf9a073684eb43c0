// RUN: estc-opt --est-linalg-to-runtime-calls --est-fuse-epilogues --est-inline-small-matmuls --canonicalize --split-input-file %s | FileCheck %s
// RUN: estc-opt --est-linalg-to-runtime-calls --est-fuse-epilogues --est-inline-small-matmuls="max-row-work=16 max-column-work=4" --canonicalize --split-input-file %s | FileCheck %s --check-prefix=LIMITS

// est-inline-small-matmuls after est-fuse-epilogues: a matmul kernel call
// small in its static dimensions becomes vector code. A row of C is vectors
// of 8 lanes and one for the rest (masked when the rest is 3, 5, 6 or 7);
// every sum runs over k in order, a multiply and an add at a time.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// The rows form with the fused bias and relu: N = 10 is 8 + 2 lanes, the
// bias and W's 2-lane tails loaded once, W's 8-lane chunks in the loop over
// C's rows (each folded into its multiply).

// CHECK-LABEL: func.func @dense_relu(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<?x4xf32>, %[[W:[a-z0-9_]+]]: memref<4x10xf32>, %[[BIAS:[a-z0-9_]+]]: memref<10xf32>, %[[Y:[a-z0-9_]+]]: memref<?x10xf32>)
// CHECK-NOT: call
// CHECK-DAG: %[[Z8:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[B8:.*]] = vector.load %[[BIAS]][%{{.*}}] : memref<10xf32>, vector<8xf32>
// CHECK-DAG: %[[B2:.*]] = vector.load %[[BIAS]][%{{.*}}] : memref<10xf32>, vector<2xf32>
// CHECK-DAG: vector.load %[[W]][%c0, %c8] : memref<4x10xf32>, vector<2xf32>
// CHECK-DAG: vector.load %[[W]][%c1, %c8] : memref<4x10xf32>, vector<2xf32>
// CHECK-DAG: vector.load %[[W]][%c2, %c8] : memref<4x10xf32>, vector<2xf32>
// CHECK-DAG: vector.load %[[W]][%c3, %c8] : memref<4x10xf32>, vector<2xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: vector<2xf32>
// CHECK: %[[W0:.*]] = vector.load %[[W]][%{{.*}}, %{{.*}}] : memref<4x10xf32>, vector<8xf32>
// CHECK: %[[A0:.*]] = memref.load %[[X]][%[[I]], %{{.*}}] : memref<?x4xf32>
// CHECK: %[[S0:.*]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK: %[[P0:.*]] = arith.mulf %[[S0]], %[[W0]] : vector<8xf32>
// CHECK: %[[W1:.*]] = vector.load %[[W]][%{{.*}}, %{{.*}}] : memref<4x10xf32>, vector<8xf32>
// CHECK: %[[P1:.*]] = arith.mulf %{{.*}}, %[[W1]] : vector<8xf32>
// CHECK: arith.addf %[[P0]], %[[P1]] : vector<8xf32>
// CHECK-COUNT-2: arith.mulf {{.*}} : vector<8xf32>
// CHECK: %[[ACC:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[B8]] : vector<8xf32>
// CHECK: %[[RELU:.*]] = arith.maximumf %[[SUM]], %[[Z8]] : vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<2xf32>
// CHECK: vector.store %[[RELU]], %[[Y]][%[[I]], %{{.*}}] : memref<?x10xf32>, vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[Y]][%[[I]], %{{.*}}] : memref<?x10xf32>, vector<2xf32>
// CHECK-NOT: func.func private @estc_matmul
// LIMITS-LABEL: func.func @dense_relu(
// LIMITS: call @estc_matmul_bias_act_f32(
func.func @dense_relu(%x: memref<?x4xf32>, %w: memref<4x10xf32>, %bias: memref<10xf32>, %y: memref<?x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %c = memref.alloc(%n) : memref<?x10xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x10xf32>)
  linalg.matmul ins(%x, %w : memref<?x4xf32>, memref<4x10xf32>) outs(%c : memref<?x10xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<?x10xf32>, memref<10xf32>) outs(%y : memref<?x10xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// The rows form with B transposed: op(B)'s rows (W's columns) gathered once
// before the loop.

// CHECK-LABEL: func.func @input_gradient(
// CHECK-SAME: %[[DY:[a-z0-9_]+]]: memref<?x3xf32>, %[[W:[a-z0-9_]+]]: memref<10x3xf32>, %[[DX:[a-z0-9_]+]]: memref<?x10xf32>)
// CHECK-COUNT-8: memref.load %[[W]]
// CHECK: %[[R0:.*]] = vector.from_elements {{.*}} : vector<8xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: memref.load %[[W]]
// CHECK: %[[A0:.*]] = memref.load %[[DY]][%[[I]], %{{.*}}] : memref<?x3xf32>
// CHECK: %[[S0:.*]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK: arith.mulf %[[S0]], %[[R0]] : vector<8xf32>
// CHECK-NOT: call
// CHECK: return
func.func @input_gradient(%dy: memref<?x3xf32>, %w: memref<10x3xf32>, %dx: memref<?x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%dx : memref<?x10xf32>)
  linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%dy, %w : memref<?x3xf32>, memref<10x3xf32>) outs(%dx : memref<?x10xf32>)
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// The columns form (x^T dy over the batch): M = 4 rows of N = 3 columns,
// each one 4-lane vector (its last lane masked off), carried through the
// loop over k and stored after it, 2 + 1 columns.

// CHECK-LABEL: func.func @weight_gradient(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<?x4xf32>, %[[DY:[a-z0-9_]+]]: memref<?x3xf32>, %[[DW:[a-z0-9_]+]]: memref<4x3xf32>)
// CHECK-DAG: %[[MASK:.*]] = arith.constant dense<[true, true, true, false]> : vector<4xi1>
// CHECK-DAG: %[[Z4:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK: %[[K:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[R:.*]]:4 = scf.for %[[k:.*]] = %{{.*}} to %[[K]] step %{{.*}} iter_args(%[[ACC0:[a-z0-9_]+]] = %[[Z4]], {{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK: %[[ROW:.*]] = vector.maskedload %[[DY]][%[[k]], %{{.*}}], %[[MASK]], %[[Z4]] : memref<?x3xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
// CHECK: %[[A:.*]] = memref.load %[[X]][%[[k]], %{{.*}}] : memref<?x4xf32>
// CHECK: %[[S:.*]] = vector.broadcast %[[A]] : f32 to vector<4xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[S]], %[[ROW]] : vector<4xf32>
// CHECK: arith.addf %[[ACC0]], %[[P]] : vector<4xf32>
// CHECK: scf.yield
// CHECK: %[[LO:.*]] = vector.extract_strided_slice %[[R]]#0 {offsets = [0], sizes = [2], strides = [1]}
// CHECK: vector.store %[[LO]], %[[DW]][%{{.*}}, %{{.*}}] : memref<4x3xf32>, vector<2xf32>
// CHECK: %[[HI:.*]] = vector.extract_strided_slice %[[R]]#0 {offsets = [2], sizes = [1], strides = [1]}
// CHECK: vector.store %[[HI]], %[[DW]][%{{.*}}, %{{.*}}] : memref<4x3xf32>, vector<1xf32>
// CHECK-COUNT-6: vector.store
// CHECK-NOT: call
// LIMITS-LABEL: func.func @weight_gradient(
// LIMITS: call @estc_matmul_f32(
func.func @weight_gradient(%x: memref<?x4xf32>, %dy: memref<?x3xf32>, %dw: memref<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%dw : memref<4x3xf32>)
  linalg.matmul indexing_maps = [#km, #kn, #mn] ins(%x, %dy : memref<?x4xf32>, memref<?x3xf32>) outs(%dw : memref<4x3xf32>)
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// Past max-row-work (N * K = 2560): the runtime's kernel.

// CHECK-LABEL: func.func @large(
// CHECK: call @estc_matmul_f32(
// CHECK-NOT: scf.for
// CHECK: func.func private @estc_matmul_f32(
func.func @large(%x: memref<?x256xf32>, %w: memref<256x10xf32>, %y: memref<?x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x10xf32>)
  linalg.matmul ins(%x, %w : memref<?x256xf32>, memref<256x10xf32>) outs(%y : memref<?x10xf32>)
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// An output that is not zero first: computed into a temporary, then added
// (est-linalg-to-runtime-calls' accumulate), the product inlined.

// CHECK-LABEL: func.func @accumulate(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<?x4xf32>, %[[W:[a-z0-9_]+]]: memref<4x2xf32>, %[[Y:[a-z0-9_]+]]: memref<?x2xf32>)
// CHECK: %[[T:.*]] = memref.alloc
// CHECK: scf.for
// CHECK: vector.store %{{.*}}, %[[T]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[T]] : memref<?x2xf32>) outs(%[[Y]] : memref<?x2xf32>)
func.func @accumulate(%x: memref<?x4xf32>, %w: memref<4x2xf32>, %y: memref<?x2xf32>) {
  linalg.matmul ins(%x, %w : memref<?x4xf32>, memref<4x2xf32>) outs(%y : memref<?x2xf32>)
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// relu6: maximumf with 0, then minimumf with 6; N = 7 is one 8-lane
// vector (the bias and W's rows masked loads), stored as 4 + 2 + 1.

// CHECK-LABEL: func.func @dense_relu6(
// CHECK-DAG: %[[SIX:.*]] = arith.constant dense<6.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[MASK:.*]] = arith.constant dense<[true, true, true, true, true, true, true, false]> : vector<8xi1>
// CHECK: vector.maskedload %{{.*}}, %[[MASK]]
// CHECK: scf.for
// CHECK: vector.maskedload
// CHECK: %[[M:.*]] = arith.maximumf {{.*}} : vector<8xf32>
// CHECK: %[[Y:.*]] = arith.minimumf %[[M]], %[[SIX]] : vector<8xf32>
// CHECK: vector.extract_strided_slice %[[Y]] {offsets = [0], sizes = [4], strides = [1]}
// CHECK: vector.store {{.*}} vector<4xf32>
// CHECK: vector.extract_strided_slice %[[Y]] {offsets = [4], sizes = [2], strides = [1]}
// CHECK: vector.store {{.*}} vector<2xf32>
// CHECK: vector.extract_strided_slice %[[Y]] {offsets = [6], sizes = [1], strides = [1]}
// CHECK: vector.store {{.*}} vector<1xf32>
// CHECK-NOT: call
func.func @dense_relu6(%x: memref<?x5xf32>, %w: memref<5x7xf32>, %bias: memref<7xf32>, %y: memref<?x7xf32>) {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x5xf32>
  %c = memref.alloc(%n) : memref<?x7xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x7xf32>)
  linalg.matmul ins(%x, %w : memref<?x5xf32>, memref<5x7xf32>) outs(%c : memref<?x7xf32>)
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<?x7xf32>, memref<7xf32>) outs(%y : memref<?x7xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    %r = arith.maximumf %s, %zero : f32
    %r6 = arith.minimumf %r, %six : f32
    linalg.yield %r6 : f32
  }
  return
}

// -----

#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// The columns form in register blocks: 10 rows of 10 columns (8 + 2 lanes)
// are 20 accumulators, past the 12 kept in registers: two loops over k,
// 5 rows each.

// CHECK-LABEL: func.func @weight_gradient_blocks(
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>)
// CHECK-COUNT-10: vector.store
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>, vector<8xf32>, vector<2xf32>)
// CHECK-COUNT-10: vector.store
// CHECK-NOT: call
func.func @weight_gradient_blocks(%x: memref<?x10xf32>, %dy: memref<?x10xf32>, %dw: memref<10x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%dw : memref<10x10xf32>)
  linalg.matmul indexing_maps = [#km, #kn, #mn] ins(%x, %dy : memref<?x10xf32>, memref<?x10xf32>) outs(%dw : memref<10x10xf32>)
  return
}
