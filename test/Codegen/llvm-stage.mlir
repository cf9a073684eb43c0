// The llvm stage keeps what est-outline-loop-nests records for LLVM: the
// pointers of distinct buffers become noalias arguments of the outlined
// loop nests (est-noalias-to-llvm), and a rolled short innermost loop keeps
// its annotation on its latch branch, translated to !llvm.loop metadata.
// RUN: estc-opt %s --estc-llvm-stage -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=IR

// A bias gradient on two views of the arena: different buffers of the
// memory plan, so the allocated and aligned pointers of both descriptors
// (LLVM arguments 0, 1 and 7, 8) are noalias. A nest with a reduction gets
// no loop annotation.
// CHECK: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[ANN:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK: llvm.func @step_loop0(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-NOT: estc.noalias_args
// CHECK-NOT: loop_annotation
// CHECK: llvm.func @step(
// IR: define void @step_loop0(ptr noalias %0, ptr noalias %1, i64 %2, i64 %3, i64 %4, i64 %5, i64 %6, ptr noalias %7, ptr noalias %8,
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

// A bias add over NHWC: the loops over N, H and W merge into one
// (est-collapse-loop-dims), the channels stay the innermost loop, short and
// kept rolled (`unroll disable`) so LLVM vectorizes the channels.
// CHECK-LABEL: llvm.func @bias_loop0(
// CHECK: llvm.mlir.constant(1152 : index) : i64
// CHECK: llvm.br ^{{.*}} {loop_annotation = #[[ANN]]}
// CHECK-LABEL: llvm.func @bias(
// IR-LABEL: define void @bias_loop0(ptr noalias %0, ptr noalias %1,
// IR: br label %{{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// IR: ![[LOOP]] = distinct !{![[LOOP]], ![[DISABLE:[0-9]+]]}
// IR: ![[DISABLE]] = !{!"llvm.loop.unroll.disable"}
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @bias(%x: memref<2x24x24x20xf32>, %b: memref<20xf32>, %y: memref<2x24x24x20xf32>) {
  linalg.generic {indexing_maps = [#nhwc, #ch, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<2x24x24x20xf32>, memref<20xf32>) outs(%y : memref<2x24x24x20xf32>) {
  ^bb0(%a: f32, %bb: f32, %out: f32):
    %r = arith.addf %a, %bb : f32
    linalg.yield %r : f32
  }
  return
}
