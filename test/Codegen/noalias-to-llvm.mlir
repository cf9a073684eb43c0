// RUN: estc-opt --est-noalias-to-llvm --split-input-file --verify-diagnostics %s | FileCheck %s

// The LLVM arguments est-outline-loop-nests listed (the pointers of two
// distinct buffers' descriptors) become noalias; the list is dropped and
// the other arguments are left alone.
// CHECK-LABEL: llvm.func @step_loop0(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr {llvm.noalias}, %{{[^:]*}}: !llvm.ptr {llvm.noalias}, %{{[^:]*}}: i64, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr {llvm.noalias})
// CHECK-NOT: estc.noalias_args
llvm.func @step_loop0(%a: !llvm.ptr, %b: !llvm.ptr, %n: i64, %c: !llvm.ptr, %d: !llvm.ptr) attributes {estc.noalias_args = array<i64: 0, 1, 4>} {
  llvm.return
}

// A function without the list is unchanged.
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr)
llvm.func @plain(%a: !llvm.ptr) {
  llvm.return
}

// -----

// scf-to-cf leaves an scf.for's loop annotation on the latch branch as a
// discardable attribute; it becomes the branch's loop_annotation, which the
// translation to LLVM IR emits as !llvm.loop metadata.
// CHECK: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[ANNOTATION:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: llvm.func @loop(
// CHECK: llvm.br ^bb1(%{{.*}} : i64) {loop_annotation = #[[ANNOTATION]]}
// CHECK-NOT: llvm.loop_annotation =
#unroll = #llvm.loop_unroll<disable = true>
#annotation = #llvm.loop_annotation<unroll = #unroll>
llvm.func @loop(%n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^bb1(%c0 : i64)
^bb1(%i: i64):
  %cond = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %cond, ^bb2, ^bb3
^bb2:
  %next = llvm.add %i, %c1 : i64
  llvm.br ^bb1(%next : i64) {llvm.loop_annotation = #annotation}
^bb3:
  llvm.return
}

// -----

// A listed position that is not a pointer argument.
// expected-error @+1 {{est-noalias-to-llvm: argument 1 of @bad is not a pointer (was func-to-llvm's calling convention changed?)}}
llvm.func @bad(%a: !llvm.ptr, %n: i64) attributes {estc.noalias_args = array<i64: 0, 1>} {
  llvm.return
}
