// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of the sorting and image ops; absent attributes take their
// defaults (axis -1, ASCENDING, the whole axis; bilinear, half-pixel).

// CHECK-LABEL: func.func @sorting
func.func @sorting(%x: tensor<?x10xf32>, %i: tensor<?x3xi64>, %u: tensor<?x3xf32>) -> (tensor<?x10xi32>, tensor<?x3xi32>, tensor<?x3xf32>, tensor<?x10xf32>) {
  // CHECK: est.argsort %{{.*}} : tensor<?x10xf32> -> tensor<?x10xi32>
  %a = est.argsort %x : tensor<?x10xf32> -> tensor<?x10xi32>
  // CHECK: est.argsort %{{.*}} {direction = "DESCENDING", k = 3 : i64} : tensor<?x10xf32> -> tensor<?x3xi32>
  %t = est.argsort %x {direction = "DESCENDING", k = 3 : i64} : tensor<?x10xf32> -> tensor<?x3xi32>
  // CHECK: est.take_along_axis %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<?x10xf32>, tensor<?x3xi32> -> tensor<?x3xf32>
  %v = est.take_along_axis %x, %t {axis = 1 : i64} : tensor<?x10xf32>, tensor<?x3xi32> -> tensor<?x3xf32>
  // CHECK: est.scatter_along_axis %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32> -> tensor<?x10xf32>
  %s = est.scatter_along_axis %x, %i, %u : tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32> -> tensor<?x10xf32>
  return %a, %t, %v, %s : tensor<?x10xi32>, tensor<?x3xi32>, tensor<?x3xf32>, tensor<?x10xf32>
}

// CHECK-LABEL: func.func @images
func.func @images(%x: tensor<?x4x3x2xf32>, %g: tensor<?x8x6x2xf32>) -> (tensor<?x8x6x2xf32>, tensor<?x2x2x2xf32>, tensor<?x4x3x2xf32>) {
  // CHECK: est.resize_images %{{.*}} {size = array<i64: 8, 6>} : tensor<?x4x3x2xf32> -> tensor<?x8x6x2xf32>
  %up = est.resize_images %x {size = array<i64: 8, 6>} : tensor<?x4x3x2xf32> -> tensor<?x8x6x2xf32>
  // CHECK: est.resize_images %{{.*}} {align_corners = true, half_pixel_centers = false, method = "nearest", size = array<i64: 2, 2>} : tensor<?x4x3x2xf32> -> tensor<?x2x2x2xf32>
  %down = est.resize_images %x {align_corners = true, half_pixel_centers = false, method = "nearest", size = array<i64: 2, 2>} : tensor<?x4x3x2xf32> -> tensor<?x2x2x2xf32>
  // CHECK: est.resize_images_grad %{{.*}} {input_size = array<i64: 4, 3>} : tensor<?x8x6x2xf32> -> tensor<?x4x3x2xf32>
  %dx = est.resize_images_grad %g {input_size = array<i64: 4, 3>} : tensor<?x8x6x2xf32> -> tensor<?x4x3x2xf32>
  return %up, %down, %dx : tensor<?x8x6x2xf32>, tensor<?x2x2x2xf32>, tensor<?x4x3x2xf32>
}
