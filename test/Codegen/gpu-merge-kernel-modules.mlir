// RUN: estc-opt --split-input-file --verify-diagnostics --est-gpu-merge-kernel-modules %s | FileCheck %s

// Outlining's modules, each holding a kernel named after the function and
// a copy of one constant global: one module, each kernel named after its
// old module, the global once, the launches pointed at it.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @estc_kernels {
// CHECK: memref.global "private" constant @table : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK: gpu.func @f_kernel(%{{.*}}: memref<2xf32>) kernel
// CHECK: gpu.func @f_kernel_0(%{{.*}}: memref<2xf32>) kernel
// CHECK-NOT: memref.global
// CHECK-NOT: gpu.module
// CHECK: func.func @f(
// CHECK: gpu.launch_func @estc_kernels::@f_kernel blocks
// CHECK: gpu.launch_func @estc_kernels::@f_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @f_kernel(%out: memref<2xf32>) kernel {
      %t = memref.get_global @table : memref<2xf32>
      memref.copy %t, %out : memref<2xf32> to memref<2xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @f_kernel(%out: memref<2xf32>) kernel {
      %t = memref.get_global @table : memref<2xf32>
      memref.copy %t, %out : memref<2xf32> to memref<2xf32>
      gpu.return
    }
  }
  func.func @f(%out: memref<2xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<2xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<2xf32>)
    return
  }
}

// -----

// Two different definitions of one global name cannot be merged.
module attributes {gpu.container_module} {
  gpu.module @g_kernel {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @g_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @g_kernel_0 {
    // expected-error @+1 {{est-gpu-merge-kernel-modules: two kernel modules define 'table' differently}}
    memref.global "private" constant @table : memref<2xf32> = dense<[3.0, 4.0]>
    gpu.func @g_kernel() kernel {
      gpu.return
    }
  }
}
