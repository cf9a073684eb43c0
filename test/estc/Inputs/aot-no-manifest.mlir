// A module without `estc.manifest` (aot-errors.test).
module {
  func.func @twice(%x: memref<4xf32>) attributes {llvm.emit_c_interface} {
    return
  }
}
