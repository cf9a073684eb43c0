// RUN: estc-opt %s -split-input-file -verify-diagnostics

// The errors of the sorting and image ops, one line each.

func.func @k_too_large(%x: tensor<?x8xf32>) -> tensor<?x9xi32> {
  // expected-error @+2 {{'est.argsort' op k = 9 is larger than the size 8 of axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %i = est.argsort %x {direction = "DESCENDING", k = 9 : i64} : tensor<?x8xf32> -> tensor<?x9xi32>
  return %i : tensor<?x9xi32>
}

// -----

func.func @k_of_runtime_axis(%x: tensor<4x?xf32>) -> tensor<4x2xi32> {
  // expected-error @+2 {{'est.argsort' op k = 2 needs a static size of axis 1, which is only known at run time}}
  // expected-error @+1 {{failed to infer returned types}}
  %i = est.argsort %x {k = 2 : i64} : tensor<4x?xf32> -> tensor<4x2xi32>
  return %i : tensor<4x2xi32>
}

// -----

func.func @bad_direction(%x: tensor<4x8xf32>) -> tensor<4x8xi32> {
  // expected-error @+2 {{direction must be "ASCENDING" or "DESCENDING", got "UP"}}
  // expected-error @+1 {{failed to infer returned types}}
  %i = est.argsort %x {direction = "UP"} : tensor<4x8xf32> -> tensor<4x8xi32>
  return %i : tensor<4x8xi32>
}

// -----

func.func @take_mismatch(%x: tensor<4x8xf32>, %i: tensor<3x2xi32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'est.take_along_axis' op indices [3,2] must have the shape of [4,8] except along axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %v = est.take_along_axis %x, %i : tensor<4x8xf32>, tensor<3x2xi32> -> tensor<3x2xf32>
  return %v : tensor<3x2xf32>
}

// -----

func.func @scatter_mismatch(%x: tensor<4x8xf32>, %i: tensor<4x2xi32>, %u: tensor<4x3xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{'est.scatter_along_axis' op updates [4,3] must have the shape of indices [4,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.scatter_along_axis %x, %i, %u : tensor<4x8xf32>, tensor<4x2xi32>, tensor<4x3xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @resize_rank(%x: tensor<4x8x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+2 {{'est.resize_images' op images must be NHWC (rank 4), got [4,8,3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.resize_images %x {size = array<i64: 2, 3>} : tensor<4x8x3xf32> -> tensor<4x2x3xf32>
  return %y : tensor<4x2x3xf32>
}

// -----

func.func @resize_size(%x: tensor<?x8x8x3xf32>) -> tensor<?x0x4x3xf32> {
  // expected-error @+2 {{'est.resize_images' op size must be [height, width], both >= 1, got [0,4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.resize_images %x {size = array<i64: 0, 4>} : tensor<?x8x8x3xf32> -> tensor<?x0x4x3xf32>
  return %y : tensor<?x0x4x3xf32>
}

// -----

func.func @resize_method(%x: tensor<?x8x8x3xf32>) -> tensor<?x4x4x3xf32> {
  // expected-error @+2 {{method must be "bilinear" or "nearest", got "bicubic"}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.resize_images %x {method = "bicubic", size = array<i64: 4, 4>} : tensor<?x8x8x3xf32> -> tensor<?x4x4x3xf32>
  return %y : tensor<?x4x4x3xf32>
}

// -----

func.func @resize_bilinear_int(%x: tensor<?x8x8x3xi32>) -> tensor<?x4x4x3xi32> {
  // expected-error @+2 {{bilinear resizing needs float images}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.resize_images %x {size = array<i64: 4, 4>} : tensor<?x8x8x3xi32> -> tensor<?x4x4x3xi32>
  return %y : tensor<?x4x4x3xi32>
}

// -----

func.func @resize_runtime_height(%x: tensor<1x?x8x3xf32>) -> tensor<1x4x4x3xf32> {
  // expected-error @+2 {{images [1,?,8,3] must have a static height and width}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.resize_images %x {size = array<i64: 4, 4>} : tensor<1x?x8x3xf32> -> tensor<1x4x4x3xf32>
  return %y : tensor<1x4x4x3xf32>
}
