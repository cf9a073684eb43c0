// RUN: estc-opt %s | estc-opt | FileCheck %s
// RUN: estc-opt %s --mlir-print-op-generic | estc-opt | FileCheck %s

// Round trip of every est op.

// CHECK-LABEL: est.variable @"dense/kernel" : tensor<784x256xf32> {initializer = #est.init<"glorot_uniform", {seed = 7 : i64}>, trainable}
est.variable @"dense/kernel" : tensor<784x256xf32> {trainable, initializer = #est.init<"glorot_uniform", {seed = 7 : i64}>}
// CHECK: est.variable @"dense/bias" : tensor<256xf32> {initializer = #est.init<"zeros">, trainable}
est.variable @"dense/bias" : tensor<256xf32> {trainable, initializer = #est.init<"zeros">}
// CHECK: est.variable @total : tensor<f32>{{$}}
est.variable @total : tensor<f32>
// CHECK: est.variable @"accuracy/count" : tensor<f32> {initializer = #est.init<"zeros">, local}
est.variable @"accuracy/count" : tensor<f32> {local, initializer = #est.init<"zeros">}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<?x256xf32>, %b: tensor<256xf32>, %i: tensor<4xi32>, %c: tensor<?x256xi1>) {
  // CHECK: est.constant dense<1.000000e+00> : tensor<f32>
  %k = est.constant dense<1.0> : tensor<f32>
  // CHECK: est.add %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %0 = est.add %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  // CHECK: est.sub
  %1 = est.sub %a, %k : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  // CHECK: est.mul
  %2 = est.mul %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  // CHECK: est.div
  %3 = est.div %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  // CHECK: est.pow
  %4 = est.pow %a, %k : tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  // CHECK: est.maximum
  %5 = est.maximum %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  // CHECK: est.minimum %{{.*}}, %{{.*}} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %6 = est.minimum %i, %i : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  // CHECK: est.neg %{{.*}} : tensor<4xi32>
  %7 = est.neg %i : tensor<4xi32>
  // CHECK: est.abs
  %8 = est.abs %a : tensor<?x256xf32>
  // CHECK: est.square
  %9 = est.square %a : tensor<?x256xf32>
  // CHECK: est.exp
  %10 = est.exp %a : tensor<?x256xf32>
  // CHECK: est.log
  %11 = est.log %a : tensor<?x256xf32>
  // CHECK: est.sqrt
  %12 = est.sqrt %a : tensor<?x256xf32>
  // CHECK: est.rsqrt
  %13 = est.rsqrt %a : tensor<?x256xf32>
  // CHECK: est.tanh
  %14 = est.tanh %a : tensor<?x256xf32>
  // CHECK: est.sigmoid
  %15 = est.sigmoid %a : tensor<?x256xf32>
  // CHECK: est.relu %{{.*}} : tensor<?x256xf32>{{$}}
  %16 = est.relu %a : tensor<?x256xf32>
  // CHECK: est.relu6
  %17 = est.relu6 %a : tensor<?x256xf32>
  // CHECK: est.elu
  %18 = est.elu %a : tensor<?x256xf32>
  // CHECK: est.softplus %{{.*}} : tensor<256xf32> -> tensor<?xf32>
  %19 = est.softplus %b : tensor<256xf32> -> tensor<?xf32>
  // CHECK: est.equal %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  %20 = est.equal %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.not_equal
  %21 = est.not_equal %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.less
  %22 = est.less %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.less_equal
  %23 = est.less_equal %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.greater
  %24 = est.greater %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.greater_equal
  %25 = est.greater_equal %a, %b : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xi1>
  // CHECK: est.logical_and
  %26 = est.logical_and %20, %c : tensor<?x256xi1>, tensor<?x256xi1> -> tensor<?x256xi1>
  // CHECK: est.logical_or
  %27 = est.logical_or %20, %c : tensor<?x256xi1>, tensor<?x256xi1> -> tensor<?x256xi1>
  // CHECK: est.logical_not %{{.*}} : tensor<?x256xi1>
  %28 = est.logical_not %c : tensor<?x256xi1>
  // CHECK: est.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x256xi1>, tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  %29 = est.select %c, %a, %k : tensor<?x256xi1>, tensor<?x256xf32>, tensor<f32> -> tensor<?x256xf32>
  // CHECK: est.cast %{{.*}} to i32 : tensor<?x256xf32> -> tensor<?x256xi32>
  %30 = est.cast %a to i32 : tensor<?x256xf32> -> tensor<?x256xi32>
  // CHECK: est.ceil %{{.*}} : tensor<?x256xf32>{{$}}
  %31 = est.ceil %a : tensor<?x256xf32>
  // CHECK: est.round %{{.*}} : tensor<4xi32>{{$}}
  %32 = est.round %i : tensor<4xi32>
  // CHECK: est.sign %{{.*}} : tensor<?x256xf32>{{$}}
  %33 = est.sign %a : tensor<?x256xf32>
  // CHECK: est.erf %{{.*}} : tensor<256xf32> -> tensor<?xf32>
  %34 = est.erf %b : tensor<256xf32> -> tensor<?xf32>
  // CHECK: est.log1p
  %35 = est.log1p %a : tensor<?x256xf32>
  // CHECK: est.expm1
  %36 = est.expm1 %a : tensor<?x256xf32>
  // CHECK: est.cumsum %{{.*}} {axis = 1 : i64, exclusive = true} : tensor<?x256xf32>{{$}}
  %37 = est.cumsum %a {axis = 1 : i64, exclusive = true} : tensor<?x256xf32>
  // CHECK: est.cumprod %{{.*}} {reverse = true} : tensor<4xi32>{{$}}
  %38 = est.cumprod %i {reverse = true} : tensor<4xi32>
  return
}

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<?x784xf32>, %img: tensor<?x28x28x1xf32>, %w: tensor<5x5x1x32xf32>, %labels: tensor<?xi64>, %step: tensor<i64>) {
  %k = est.read_variable @"dense/kernel" : tensor<784x256xf32>
  // CHECK: est.matmul %{{.*}}, %{{.*}} : tensor<?x784xf32>, tensor<784x256xf32> -> tensor<?x256xf32>
  %0 = est.matmul %x, %k : tensor<?x784xf32>, tensor<784x256xf32> -> tensor<?x256xf32>
  // CHECK: est.matmul %{{.*}}, %{{.*}} {transpose_b = true} : tensor<?x256xf32>, tensor<784x256xf32> -> tensor<?x784xf32>
  %1 = est.matmul %0, %k {transpose_b = true} : tensor<?x256xf32>, tensor<784x256xf32> -> tensor<?x784xf32>
  // CHECK: est.conv2d %{{.*}}, %{{.*}} {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32> -> tensor<?x14x14x32xf32>
  %2 = est.conv2d %img, %w {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32> -> tensor<?x14x14x32xf32>
  // CHECK: est.max_pool %{{.*}} {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32> -> tensor<?x7x7x32xf32>
  %3 = est.max_pool %2 {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32> -> tensor<?x7x7x32xf32>
  // CHECK: est.avg_pool
  %4 = est.avg_pool %2 {ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 1, 1>} : tensor<?x14x14x32xf32> -> tensor<?x14x14x32xf32>
  // CHECK: est.reduce_sum %{{.*}} {axes = array<i64: 1>} : tensor<?x784xf32> -> tensor<?xf32>
  %5 = est.reduce_sum %x {axes = array<i64: 1>} : tensor<?x784xf32> -> tensor<?xf32>
  // CHECK: est.reduce_mean %{{.*}} : tensor<?x784xf32> -> tensor<f32>
  %6 = est.reduce_mean %x : tensor<?x784xf32> -> tensor<f32>
  // CHECK: est.reduce_max %{{.*}} {axes = array<i64: -1>, keep_dims = true} : tensor<?x784xf32> -> tensor<?x1xf32>
  %7 = est.reduce_max %x {axes = array<i64: -1>, keep_dims = true} : tensor<?x784xf32> -> tensor<?x1xf32>
  // CHECK: est.reduce_min
  %8 = est.reduce_min %x {axes = array<i64: 0>} : tensor<?x784xf32> -> tensor<784xf32>
  // CHECK: est.reduce_prod
  %9 = est.reduce_prod %x {axes = array<i64: 0>} : tensor<?x784xf32> -> tensor<784xf32>
  // CHECK: est.argmax %{{.*}} {axis = 1 : i64} : tensor<?x784xf32> -> tensor<?xi64>
  %10 = est.argmax %x {axis = 1 : i64} : tensor<?x784xf32> -> tensor<?xi64>
  // CHECK: est.argmin %{{.*}} {axis = 1 : i64, output_type = i32} : tensor<?x784xf32> -> tensor<?xi32>
  %11 = est.argmin %x {axis = 1 : i64, output_type = i32} : tensor<?x784xf32> -> tensor<?xi32>
  // CHECK: est.reshape %{{.*}} {shape = array<i64: -1, 28, 28, 1>} : tensor<?x784xf32> -> tensor<?x28x28x1xf32>
  %12 = est.reshape %x {shape = array<i64: -1, 28, 28, 1>} : tensor<?x784xf32> -> tensor<?x28x28x1xf32>
  // CHECK: est.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<?x784xf32> -> tensor<784x?xf32>
  %13 = est.transpose %x {perm = array<i64: 1, 0>} : tensor<?x784xf32> -> tensor<784x?xf32>
  // CHECK: est.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<?x784xf32>, tensor<?x256xf32>) -> tensor<?x1040xf32>
  %14 = est.concat %x, %0 {axis = 1 : i64} : (tensor<?x784xf32>, tensor<?x256xf32>) -> tensor<?x1040xf32>
  // CHECK: est.slice %{{.*}} {begin = array<i64: 0, 2>, size = array<i64: -1, 3>} : tensor<?x784xf32> -> tensor<?x3xf32>
  %15 = est.slice %x {begin = array<i64: 0, 2>, size = array<i64: -1, 3>} : tensor<?x784xf32> -> tensor<?x3xf32>
  // CHECK: est.pad %{{.*}} {constant_value = 1.000000e+00 : f64, paddings = array<i64: 0, 0, 1, 1>} : tensor<?x784xf32> -> tensor<?x786xf32>
  %16 = est.pad %x {paddings = array<i64: 0, 0, 1, 1>, constant_value = 1.0 : f64} : tensor<?x784xf32> -> tensor<?x786xf32>
  // CHECK: est.broadcast_to %{{.*}} {shape = array<i64: 4, 784>} : tensor<?x784xf32> -> tensor<4x784xf32>
  %17 = est.broadcast_to %x {shape = array<i64: 4, 784>} : tensor<?x784xf32> -> tensor<4x784xf32>
  // CHECK: est.squeeze %{{.*}} {axes = array<i64: 3>} : tensor<?x28x28x1xf32> -> tensor<?x28x28xf32>
  %18 = est.squeeze %12 {axes = array<i64: 3>} : tensor<?x28x28x1xf32> -> tensor<?x28x28xf32>
  // CHECK: est.expand_dims %{{.*}} {axis = -1 : i64} : tensor<?xi64> -> tensor<?x1xi64>
  %19 = est.expand_dims %labels {axis = -1 : i64} : tensor<?xi64> -> tensor<?x1xi64>
  // CHECK: est.gather %{{.*}}, %{{.*}} : tensor<784x256xf32>, tensor<?xi64> -> tensor<?x256xf32>
  %20 = est.gather %k, %labels : tensor<784x256xf32>, tensor<?xi64> -> tensor<?x256xf32>
  // CHECK: est.one_hot %{{.*}} {depth = 10 : i64} : tensor<?xi64> -> tensor<?x10xf32>
  %21 = est.one_hot %labels {depth = 10 : i64} : tensor<?xi64> -> tensor<?x10xf32>
  // CHECK: est.one_hot %{{.*}} {axis = 0 : i64, depth = 10 : i64, dtype = f64, off_value = -1.000000e+00 : f64} : tensor<?xi64> -> tensor<10x?xf64>
  %22 = est.one_hot %labels {depth = 10 : i64, axis = 0 : i64, dtype = f64, off_value = -1.0 : f64} : tensor<?xi64> -> tensor<10x?xf64>
  // CHECK: est.unsorted_segment_sum %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<?xi64>, tensor<?x10xf32> -> tensor<?x256xf32>
  %uss = est.unsorted_segment_sum %20, %labels, %21 : tensor<?x256xf32>, tensor<?xi64>, tensor<?x10xf32> -> tensor<?x256xf32>
  // CHECK: est.bucketize %{{.*}} {boundaries = array<f64: -1.000000e+00, 0.000000e+00, 2.500000e+00>} : tensor<?x784xf32> -> tensor<?x784xi64>
  %bkt = est.bucketize %x {boundaries = array<f64: -1.0, 0.0, 2.5>} : tensor<?x784xf32> -> tensor<?x784xi64>
  // CHECK: est.bucketize %{{.*}} {boundaries = array<f64>} : tensor<?xi64> -> tensor<?xi64>
  %bkt2 = est.bucketize %labels {boundaries = array<f64>} : tensor<?xi64> -> tensor<?xi64>
  // CHECK: est.softmax %{{.*}} : tensor<?x10xf32>
  %23 = est.softmax %21 : tensor<?x10xf32>
  // CHECK: est.log_softmax %{{.*}} {axis = 0 : i64} : tensor<?x10xf32>
  %24 = est.log_softmax %21 {axis = 0 : i64} : tensor<?x10xf32>
  // CHECK: est.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?xf32>
  %25 = est.softmax_cross_entropy %23, %21 : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?xf32>
  // CHECK: est.sparse_softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
  %26 = est.sparse_softmax_cross_entropy %23, %labels : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
  // CHECK: est.sigmoid_cross_entropy %{{.*}}, %{{.*}} : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?x10xf32>
  %27 = est.sigmoid_cross_entropy %23, %21 : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?x10xf32>
  // CHECK: est.stop_gradient %{{.*}} : tensor<?x10xf32>
  %28 = est.stop_gradient %23 : tensor<?x10xf32>
  // CHECK: est.zeros_like %{{.*}} : tensor<?x10xf32>
  %zl = est.zeros_like %23 : tensor<?x10xf32>
  // CHECK: est.ones_like %{{.*}} : tensor<?xi64>
  %ol = est.ones_like %labels : tensor<?xi64>
  // CHECK: est.dropout %{{.*}}, %{{.*}} {rate = 5.000000e-01 : f64, seed = 3 : i64} : tensor<?x256xf32>, tensor<i64> -> tensor<?x256xf32>
  %29 = est.dropout %0, %step {rate = 0.5 : f64, seed = 3 : i64} : tensor<?x256xf32>, tensor<i64> -> tensor<?x256xf32>
  // CHECK: est.random_uniform %{{.*}} {maxval = 2.000000e+00 : f64, seed = 1 : i64, shape = array<i64: 2, 3>} : tensor<i64> -> tensor<2x3xf32>
  %30 = est.random_uniform %step {seed = 1 : i64, shape = array<i64: 2, 3>, maxval = 2.0 : f64} : tensor<i64> -> tensor<2x3xf32>
  // CHECK: est.random_normal %{{.*}} {dtype = f64, seed = 1 : i64, shape = array<i64: 4>} : tensor<i64> -> tensor<4xf64>
  %31 = est.random_normal %step {seed = 1 : i64, shape = array<i64: 4>, dtype = f64} : tensor<i64> -> tensor<4xf64>
  // CHECK: est.truncated_normal %{{.*}} {seed = 2 : i64, shape = array<i64: 4>, stddev = 1.000000e-01 : f64} : tensor<i64> -> tensor<4xf32>
  %32 = est.truncated_normal %step {seed = 2 : i64, shape = array<i64: 4>, stddev = 0.1 : f64} : tensor<i64> -> tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @state
func.func @state(%loss: tensor<f32>) -> tensor<784x256xf32> {
  // CHECK: est.read_variable @"dense/kernel" : tensor<784x256xf32>
  %k = est.read_variable @"dense/kernel" : tensor<784x256xf32>
  // CHECK: est.assign_variable @total, %{{.*}} : tensor<f32>
  est.assign_variable @total, %loss : tensor<f32>
  // CHECK: est.minimize %{{.*}} optimizer "adam" {learning_rate = 2.000000e-03 : f64} : tensor<f32>
  est.minimize %loss optimizer "adam" {learning_rate = 2.0e-3 : f64} : tensor<f32>
  // CHECK: est.minimize %{{.*}} optimizer "sgd" {} var_list [@"dense/kernel", @"dense/bias"] : tensor<f32>
  est.minimize %loss optimizer "sgd" {} var_list [@"dense/kernel", @"dense/bias"] : tensor<f32>
  return %k : tensor<784x256xf32>
}

// Generic form, as the importer creates ops.
// CHECK-LABEL: func.func @generic
func.func @generic(%x: tensor<?x28x28x1xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<?x26x26x8xf32> {
  // CHECK: est.conv2d %{{.*}}, %{{.*}} {padding = "VALID"} : tensor<?x28x28x1xf32>, tensor<3x3x1x8xf32> -> tensor<?x26x26x8xf32>
  %0 = "est.conv2d"(%x, %w) {padding = "VALID"} : (tensor<?x28x28x1xf32>, tensor<3x3x1x8xf32>) -> tensor<?x26x26x8xf32>
  // CHECK: est.relu %{{.*}} : tensor<?x26x26x8xf32>
  %1 = "est.relu"(%0) : (tensor<?x26x26x8xf32>) -> tensor<?x26x26x8xf32>
  return %1 : tensor<?x26x26x8xf32>
}

// The gradient ops of conv2d and pooling.
// CHECK-LABEL: func.func @window_gradients
func.func @window_gradients(%x: tensor<?x28x28x1xf32>, %w: tensor<5x5x1x32xf32>, %dy: tensor<?x14x14x32xf32>, %p: tensor<?x28x28x32xf32>, %dp: tensor<?x3x3x8xf32>) -> (tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32>, tensor<?x28x28x32xf32>, tensor<?x5x5x8xf32>) {
  // CHECK: est.conv2d_backprop_input %{{.*}}, %{{.*}} {input_size = array<i64: 28, 28>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x1xf32>
  %0 = est.conv2d_backprop_input %dy, %w {input_size = array<i64: 28, 28>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x1xf32>
  // CHECK: est.conv2d_backprop_filter %{{.*}}, %{{.*}} {filter_size = array<i64: 5, 5>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<?x14x14x32xf32> -> tensor<5x5x1x32xf32>
  %1 = est.conv2d_backprop_filter %x, %dy {dilations = array<i64: 1, 1>, filter_size = array<i64: 5, 5>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<?x14x14x32xf32> -> tensor<5x5x1x32xf32>
  // CHECK: est.max_pool_grad %{{.*}}, %{{.*}} {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32>, tensor<?x14x14x32xf32> -> tensor<?x28x28x32xf32>
  %2 = est.max_pool_grad %p, %dy {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32>, tensor<?x14x14x32xf32> -> tensor<?x28x28x32xf32>
  // CHECK: est.avg_pool_grad %{{.*}} {input_size = array<i64: 5, 5>, ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x8xf32> -> tensor<?x5x5x8xf32>
  %3 = est.avg_pool_grad %dp {input_size = array<i64: 5, 5>, ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x8xf32> -> tensor<?x5x5x8xf32>
  return %0, %1, %2, %3 : tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32>, tensor<?x28x28x32xf32>, tensor<?x5x5x8xf32>
}

// The fused row ops and their gradients.
// CHECK-LABEL: func.func @fused_rows
func.func @fused_rows(%x: tensor<?x6x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %l: tensor<?x4x8x8xf32>, %m: tensor<?x1x8x8xi1>, %a: tensor<1x4x8x8xf32>) -> (tensor<?x6x16xf32>, tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  // CHECK: est.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {begin_norm_axis = 1 : i64, epsilon = 9.9999999999999998E-13 : f64} : tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x6x16xf32>
  %0 = est.layer_norm %x, %g, %b {begin_norm_axis = 1 : i64, epsilon = 1.0e-12 : f64} : tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x6x16xf32>
  // CHECK: est.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x6x16xf32>, tensor<16xf32>, tensor<?x6x16xf32> -> tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32>
  %1:3 = est.layer_norm_grad %x, %g, %0 : tensor<?x6x16xf32>, tensor<16xf32>, tensor<?x6x16xf32> -> tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: est.attention_softmax %{{.*}} {causal = true, scale = 1.250000e-01 : f64} : tensor<?x4x8x8xf32> -> tensor<?x4x8x8xf32>
  %2 = est.attention_softmax %l {causal = true, scale = 0.125 : f64} : tensor<?x4x8x8xf32> -> tensor<?x4x8x8xf32>
  // CHECK: est.attention_softmax %{{.*}}, %{{.*}} : tensor<?x4x8x8xf32>, tensor<?x1x8x8xi1> -> tensor<?x4x8x8xf32>
  %3 = est.attention_softmax %l, %m : tensor<?x4x8x8xf32>, tensor<?x1x8x8xi1> -> tensor<?x4x8x8xf32>
  // CHECK: est.attention_softmax %{{.*}}, %{{.*}} : tensor<?x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<?x4x8x8xf32>
  %4 = est.attention_softmax %l, %a : tensor<?x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<?x4x8x8xf32>
  // CHECK: est.attention_softmax_grad %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32> -> tensor<?x4x8x8xf32>
  %5 = est.attention_softmax_grad %2, %l {scale = 0.125 : f64} : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32> -> tensor<?x4x8x8xf32>
  return %0, %1#0, %1#1, %1#2, %2, %3, %4, %5 : tensor<?x6x16xf32>, tensor<?x6x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}
