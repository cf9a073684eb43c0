// REQUIRES: cuda-toolkit
// CUDA's last stage on a memplan-level function: every loop nest a kernel,
// all in one gpu.binary, estc_kernels (format=isa: PTX for the arch, math through
// libdevice, linked in), the host in the LLVM dialect launching them through
// the runtime's mgpu* ABI, kernel calls as calls of estc_cuda_* kernels.
// RUN: estc-opt --estc-gpu-stage='gpu-arch=sm_80 format=isa' %s | FileCheck %s
// RUN: estc-opt --estc-gpu-stage %s | FileCheck %s --check-prefix=FATBIN
// RUN: not estc-opt --estc-bufferize-stage=device=tpu %s 2>&1 | FileCheck %s --check-prefix=DEVICE
// DEVICE: for the --device option: Cannot find option named 'tpu'!

// CHECK: module attributes {gpu.container_module}
// CHECK: llvm.func @step(
// CHECK: gpu.launch_func @estc_kernels::@step_kernel blocks
// CHECK: llvm.call @estc_cuda_matmul_f32(
// CHECK: gpu.launch_func @estc_kernels::@step_kernel_0
// CHECK: llvm.func @_mlir_ciface_step(
// CHECK: gpu.binary @estc_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">, {{.*}}assembly = "{{.*}}.target sm_80
// CHECK-SAME: .entry step_kernel(
// CHECK-SAME: .entry step_kernel_0(
// CHECK-NOT: __nv_expf
// CHECK-SAME: ">]
// CHECK-NOT: gpu.binary
// CHECK-NOT: gpu.module
// CHECK-NOT: memref.
// CHECK-NOT: linalg.

// FATBIN: gpu.binary @estc_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, "P\EDU\BA
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @step(%arena: memref<?xi8>, %x: memref<?x4xf32>, %w: memref<4x4xf32>, %y: memref<?x4xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %t = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x4xf32>) outs(%t : memref<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  %t3 = memref.expand_shape %t [[0, 1], [2]] output_shape [1, %n, 4] : memref<?x4xf32> into memref<1x?x4xf32>
  %tc = memref.cast %t3 : memref<1x?x4xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %w3 = memref.expand_shape %w [[0, 1], [2]] output_shape [1, 4, 4] : memref<4x4xf32> into memref<1x4x4xf32>
  %wc = memref.cast %w3 : memref<1x4x4xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %y3 = memref.expand_shape %y [[0, 1], [2]] output_shape [1, %n, 4] : memref<?x4xf32> into memref<1x?x4xf32>
  %yc = memref.cast %y3 : memref<1x?x4xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %f = arith.constant 0 : i64
  func.call @estc_cuda_matmul_f32(%tc, %wc, %yc, %f, %f) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i64, i64) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x4xf32>) outs(%y : memref<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  return
}
func.func private @estc_cuda_matmul_f32(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i64, i64) attributes {llvm.emit_c_interface}
