// A hand-written stand-in for what the lowering stages produce (codegen-abi.md):
// @scale_add(arena, variables "scale/v" and "steps", input "features/x",
// output "y") computes y = 2 * x + v and counts its calls in "steps" (a
// rank-0 variable updated in place). Lower it to the LLVM dialect with
//   mlir-opt --convert-linalg-to-loops --convert-scf-to-cf
//     --expand-strided-metadata --finalize-memref-to-llvm
//     --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm
//     --reconcile-unrealized-casts
// The manifest is what `estc` attaches before lowering (`estc.manifest`).
module attributes {
  estc.arena = {scale_add = array<i64: 64, 16>},
  estc.manifest = "{\22format\22: \22estc-manifest-1\22, \22name\22: \22ScaleAdd\22, \22variables\22: [{\22name\22: \22scale/v\22, \22dtype\22: \22f32\22, \22shape\22: [4], \22trainable\22: true, \22initializer\22: \22zeros\22}, {\22name\22: \22steps\22, \22dtype\22: \22f32\22, \22shape\22: [], \22trainable\22: false}], \22functions\22: [{\22name\22: \22scale_add\22, \22inputs\22: [{\22key\22: \22features/x\22, \22dtype\22: \22f32\22, \22shape\22: [-1, 4]}], \22outputs\22: [{\22key\22: \22y\22, \22dtype\22: \22f32\22, \22shape\22: [-1, 4]}]}]}"
} {
  func.func @scale_add(%arena: memref<?xi8>, %v: memref<4xf32>,
                       %steps: memref<f32>, %x: memref<?x4xf32>,
                       %y: memref<?x4xf32>) attributes {llvm.emit_c_interface} {
    linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (j)>,
                         affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%x, %v : memref<?x4xf32>, memref<4xf32>)
        outs(%y : memref<?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %two = arith.constant 2.0 : f32
      %m = arith.mulf %a, %two : f32
      %s = arith.addf %m, %b : f32
      linalg.yield %s : f32
    }
    %n = memref.load %steps[] : memref<f32>
    %one = arith.constant 1.0 : f32
    %n1 = arith.addf %n, %one : f32
    memref.store %n1, %steps[] : memref<f32>
    return
  }
}
