// The llvm stage on a loop est-parallelize-loops outlines: the captures
// (the two descriptors, expanded into their fields, and the scalar) are
// stored into a struct allocated in the entry block, and the marker call
// becomes estc_parallel_for(trampoline, ctx, n, cost); the trampoline loads
// the fields and calls the loop nest with [lo, hi). The result translates to
// LLVM IR.
// RUN: estc-opt %s --estc-llvm-stage -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=IR

// CHECK-LABEL: llvm.func @scale_relu(
// CHECK: %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, i64, i64, i64, i64, i64, ptr, ptr, i64, i64, i64, i64, i64, f32)>
// CHECK-COUNT-15: llvm.store
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @scale_relu_pfor0_trampoline : !llvm.ptr
// CHECK: llvm.call @estc_parallel_for(%[[FN]], %[[CTX]], %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-NOT: _launch
// CHECK: llvm.func @scale_relu_pfor0(%{{.*}}: i64, %{{.*}}: i64,
// CHECK: llvm.func internal @scale_relu_pfor0_trampoline(%[[ARG:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK-COUNT-15: llvm.load
// CHECK: llvm.call @scale_relu_pfor0(%[[LO]], %[[HI]],
// CHECK-NOT: _launch

// IR: declare void @estc_parallel_for(ptr, ptr, i64, i64)
// IR: define void @scale_relu(
// IR: call void @estc_parallel_for(ptr @scale_relu_pfor0_trampoline, ptr %
// IR: define internal void @scale_relu_pfor0_trampoline(ptr %0, i64 %1, i64 %2)
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
