// RUN: estc-opt --est-gpu-map-loops --split-input-file --verify-diagnostics %s

// expected-error @below {{est-gpu-map-loops: 'g' has run-time checks but no status slot (run est-memory-planning first)}}
func.func @g(%arena: memref<?xi8>, %b: i1, %v: i64) {
  est.check_fail_if %b, %v, %v {check = 0 : i64}
  return
}

// -----

// Every buffer is device memory: the host cannot write one.
func.func @host_store(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  // expected-error @below {{est-gpu-map-loops: 'host_store': host code memref.store of a buffer (every buffer is device memory)}}
  memref.store %one, %x[%c0] : memref<4xf32>
  return
}

// -----

// A scalar the host read from %s before a kernel overwrote %s cannot be
// recomputed by a later kernel.
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @stale_read(%s: memref<f32>, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @below {{est-gpu-map-loops: a value read from device memory on the host is used by a kernel after another kernel may have overwritten it}}
  %v = memref.load %s[] : memref<f32>
  linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<4xf32>) outs(%s : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %v : f32
    linalg.yield %m : f32
  }
  return
}

// -----

func.func @on_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{est-gpu-map-loops: 'linalg.copy' is not on buffers (run bufferization first)}}
  %r = linalg.copy ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

memref.global "private" constant @w : memref<4xf32> = dense<1.0>
func.func private @estc_cuda_kernel(memref<4xf32>)
func.func @call_reads_constant() {
  %w = memref.get_global @w : memref<4xf32>
  // expected-error @below {{est-gpu-map-loops: 'call_reads_constant': a kernel call reads a constant in host memory (copy it into a buffer first: est-linalg-to-runtime-calls device=cuda)}}
  func.call @estc_cuda_kernel(%w) : (memref<4xf32>) -> ()
  return
}
