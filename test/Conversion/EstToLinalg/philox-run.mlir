// Runs the lowered Philox4x32-10 end to end: the values are those of
// lib/Random/Philox.h (estc::random::uniform<float>(randomBits(42, 7, i))).
// RUN: estc-opt %s --convert-est-to-linalg --canonicalize \
// RUN: | mlir-opt --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --expand-strided-metadata --lower-affine \
// RUN:   --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_runner_utils.so \
// RUN: | FileCheck %s

// CHECK: [0.405982,  0.897917,  0.144241,  0.579526]
func.func @main() {
  %step = arith.constant dense<7> : tensor<i64>
  %0 = est.random_uniform %step {seed = 42 : i64, shape = array<i64: 4>} : tensor<i64> -> tensor<4xf32>
  %u = tensor.cast %0 : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
