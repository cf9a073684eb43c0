// RUN: estc-opt --est-lower-parallel-calls --split-input-file --verify-diagnostics %s

// A marker must name a function defined in the module ...

// expected-error @+1 {{est-lower-parallel-calls: estc.parallel_body of @f_pfor0_launch must name a function defined in the module}}
llvm.func @f_pfor0_launch(i64, i64, !llvm.ptr) attributes {estc.parallel_body = @f_pfor0}
llvm.func @f(%n: i64, %p: !llvm.ptr) {
  llvm.call @f_pfor0_launch(%n, %n, %p) : (i64, i64, !llvm.ptr) -> ()
  llvm.return
}

// -----

// ... taking the same (i64 lo, i64 hi, captures...) as the marker.

llvm.func @g_pfor0(%lo: i64, %hi: i64, %x: f32) {
  llvm.return
}
// expected-error @+1 {{est-lower-parallel-calls: @g_pfor0_launch and @g_pfor0 must both take (i64, i64, captures...) and return nothing}}
llvm.func @g_pfor0_launch(i64, i64, !llvm.ptr) attributes {estc.parallel_body = @g_pfor0}
llvm.func @g(%n: i64, %p: !llvm.ptr) {
  llvm.call @g_pfor0_launch(%n, %n, %p) : (i64, i64, !llvm.ptr) -> ()
  llvm.return
}
