// RUN: estc-opt --est-linalg-to-runtime-calls --split-input-file --verify-diagnostics %s

// A generic naming a runtime kernel must be one convert-est-to-linalg made.

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @no_scalars(%w: memref<3x3x2x4xf32>, %dw: memref<3x3x2x4xf32>) {
  // expected-error @+1 {{'linalg.generic' op is not a bufferized conv backprop of convert-est-to-linalg}}
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"], library_call = "estc_conv2d_backprop_filter_f32"} ins(%w : memref<3x3x2x4xf32>) outs(%dw : memref<3x3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @unknown_kernel(%w: memref<3x3x2x4xf32>, %dw: memref<3x3x2x4xf32>) {
  // expected-error @+1 {{'linalg.generic' op unknown runtime kernel 'estc_conv3d_f32'}}
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"], library_call = "estc_conv3d_f32"} ins(%w : memref<3x3x2x4xf32>) outs(%dw : memref<3x3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
