// RUN: estc-opt %s --split-input-file --est-autodiff --est-dce --allow-unregistered-dialect 2>/dev/null | FileCheck %s
// RUN: estc-opt %s --split-input-file --est-autodiff --allow-unregistered-dialect 2>&1 | FileCheck %s --check-prefix=WARN

// Backward graph of a least-squares linear layer: seed 1.0, reduce_mean,
// square, sub, the broadcast add (summed over the batch), matmul.
// @frozen (not trainable) gets no gradient.
// CHECK: est.variable @w
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[L:.*]]: tensor<?x3xf32>)
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[D:.*]] = est.sub
// CHECK: %[[LOSS:.*]] = est.reduce_mean
// CHECK: %[[SEED:.*]] = est.constant dense<1.000000e+00> : tensor<f32>
// reduce_mean: the seed divided by the (run-time) element count, broadcast.
// CHECK: %[[ONES:.*]] = est.ones_like
// CHECK: %[[N:.*]] = est.reduce_sum %[[ONES]] {axes = array<i64: 0, 1>, keep_dims = true}
// CHECK: %[[MEAN:.*]] = est.div %{{.*}}, %[[N]]
// CHECK: %[[GY:.*]] = est.mul %[[MEAN]], %{{.*}} : tensor<1x1xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
// square: 2 x g.
// CHECK: %[[TWO:.*]] = est.constant dense<2.000000e+00>
// CHECK: %[[TWOX:.*]] = est.mul %[[D]], %[[TWO]]
// CHECK: %[[G:.*]] = est.mul %[[GY]], %[[TWOX]]
// The bias gradient is summed over the broadcast batch dim.
// CHECK: %[[GB:.*]] = est.reduce_sum %[[G]] {axes = array<i64: 0>} : tensor<?x3xf32> -> tensor<3xf32>
// matmul: x^T g.
// CHECK: %[[GW:.*]] = est.matmul %[[X]], %[[G]] {transpose_a = true} : tensor<?x4xf32>, tensor<?x3xf32> -> tensor<4x3xf32>
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w, @b] %[[GW]], %[[GB]] : tensor<4x3xf32>, tensor<3xf32>
// CHECK-NEXT: return
est.variable @w : tensor<4x3xf32> {trainable}
est.variable @b : tensor<3xf32> {trainable}
est.variable @frozen : tensor<3xf32>

func.func @train(%x: tensor<?x4xf32>, %label: tensor<?x3xf32>) -> tensor<f32> {
  %w = est.read_variable @w : tensor<4x3xf32>
  %b = est.read_variable @b : tensor<3xf32>
  %f = est.read_variable @frozen : tensor<3xf32>
  %0 = est.matmul %x, %w : tensor<?x4xf32>, tensor<4x3xf32> -> tensor<?x3xf32>
  %1 = est.add %0, %b : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %2 = est.add %1, %f : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %3 = est.sub %2, %label : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  %4 = est.square %3 : tensor<?x3xf32>
  %loss = est.reduce_mean %4 : tensor<?x3xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// No trainable variable influences the loss: a warning, and an
// apply_gradients without variables (global_step is still incremented).
est.variable @v : tensor<3xf32> {trainable}
est.variable @v2 : tensor<2xf32> {trainable}

func.func @train(%x: tensor<?x3xf32>) {
  %v = est.read_variable @v : tensor<3xf32>
  %loss = est.reduce_sum %x : tensor<?x3xf32> -> tensor<f32> loc("train/loss")
  // WARN: warning: no trainable variable influences the loss 'train/loss' (variables: @v, @v2); the train op only increments global_step
  // WARN-NOT: warning
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// An op without a gradient rule leaves the minimize (the driver drops @train).
est.variable @k : tensor<3xf32> {trainable}

func.func @train() {
  %k = est.read_variable @k : tensor<3xf32>
  %loss = "test.no_rule"(%k) : (tensor<3xf32>) -> tensor<f32>
  // WARN: warning: not differentiated: no gradient rule for 'test.no_rule'
  // WARN: est.minimize
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// So does a rule that does not cover its op: conv2d with a run-time height.
est.variable @f : tensor<3x3x1x2xf32> {trainable}

func.func @train(%x: tensor<?x?x4x1xf32>) {
  %f = est.read_variable @f : tensor<3x3x1x2xf32>
  %y = est.conv2d %x, %f {padding = "SAME"} : tensor<?x?x4x1xf32>, tensor<3x3x1x2xf32> -> tensor<?x?x4x2xf32>
  %loss = est.reduce_sum %y : tensor<?x?x4x2xf32> -> tensor<f32>
  // WARN: warning: not differentiated: the gradient of 'est.conv2d' failed: gradient needs static H and W
  // WARN: est.minimize
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// A learning-rate operand goes from the minimize to apply_gradients.
// CHECK-LABEL: func.func @scheduled
// CHECK: %[[STEP:.*]] = est.read_variable @global_step
// CHECK: %[[LR:.*]] = est.cast %[[STEP]]
// CHECK: est.apply_gradients "sgd" {} [@s] %{{.*}} : tensor<3xf32> learning_rate %[[LR]] : tensor<f32>
est.variable @s : tensor<3xf32> {trainable}
est.variable @global_step : tensor<i64>

func.func @scheduled() {
  %s = est.read_variable @s : tensor<3xf32>
  %step = est.read_variable @global_step : tensor<i64>
  %lr = est.cast %step to f32 : tensor<i64> -> tensor<f32>
  %loss = est.reduce_sum %s : tensor<3xf32> -> tensor<f32>
  est.minimize %loss learning_rate %lr : tensor<f32> optimizer "sgd" {} : tensor<f32>
  return
}

// -----

// A var_list entry that does not influence the loss: a one-line warning
// naming it; it gets no update, the others do.
// CHECK-LABEL: func.func @partial
// CHECK: est.apply_gradients "adam" {learning_rate = 1.000000e-01 : f64} [@used]
est.variable @used : tensor<3xf32> {trainable}
est.variable @unused : tensor<3xf32> {trainable}

func.func @partial() {
  %u = est.read_variable @used : tensor<3xf32>
  %n = est.read_variable @unused : tensor<3xf32>
  %loss = est.reduce_sum %u : tensor<3xf32> -> tensor<f32> loc("train/loss")
  // WARN: warning: var_list variable @unused does not influence the loss 'train/loss'; no update
  est.minimize %loss optimizer "adam" {learning_rate = 1.000000e-01 : f64} var_list [@used, @unused] : tensor<f32>
  return
}

// -----

// A gather of a trained variable on axis 0: its gradient stays rows (the
// gather's indices, the incoming gradient) and apply_gradients gets them as
// a sparse gradient: no one_hot, no dense [100, 4] gradient.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[IDS:.*]]: tensor<?xi64>)
// CHECK-NOT: est.one_hot
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%[[IDS]] : tensor<?xi64>) values(%{{.*}} : tensor<?x4xf32>)
est.variable @emb : tensor<100x4xf32> {trainable}

func.func @embedding(%ids: tensor<?xi64>) {
  %e = est.read_variable @emb : tensor<100x4xf32>
  %rows = est.gather %e, %ids : tensor<100x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  %loss = est.reduce_sum %rows : tensor<?x4xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// Also read densely: the rows are scattered into the dense gradient.
// CHECK-LABEL: func.func @embedding_dense
// CHECK: %[[Z:.*]] = est.zeros_like
// CHECK: %[[S:.*]] = est.scatter %[[Z]], %{{.*}}, %{{.*}} :
// CHECK: %[[G:.*]] = est.add %{{.*}}, %[[S]]
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@emb2] %[[G]] : tensor<10x4xf32>
est.variable @emb2 : tensor<10x4xf32> {trainable}

func.func @embedding_dense(%ids: tensor<?xi64>) {
  %e = est.read_variable @emb2 : tensor<10x4xf32>
  %rows = est.gather %e, %ids : tensor<10x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  %a = est.reduce_sum %rows : tensor<?x4xf32> -> tensor<f32>
  %b = est.reduce_sum %e : tensor<10x4xf32> -> tensor<f32>
  %loss = est.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// A gather of a computed value (not a variable's read) is differentiated
// densely: g's rows scatter-added into zeros of params' shape, O(ids x
// row); along axis 1, with the axis moved to the front and back.
// CHECK-LABEL: func.func @gather_dense
// CHECK: %[[Z:.*]] = est.constant dense<0.000000e+00> : tensor<1000x4xf32>
// CHECK: %[[S:.*]] = est.scatter %[[Z]], %{{.*}}, %{{.*}} : tensor<1000x4xf32>, tensor<?x2xi64>, tensor<?x2x4xf32> -> tensor<1000x4xf32>
// CHECK-NOT: est.one_hot
// CHECK-NOT: est.matmul
// CHECK: est.apply_gradients
est.variable @table : tensor<1000x4xf32> {trainable}

func.func @gather_dense(%ids: tensor<?x2xi64>) {
  %t = est.read_variable @table : tensor<1000x4xf32>
  %p = est.mul %t, %t : tensor<1000x4xf32>, tensor<1000x4xf32> -> tensor<1000x4xf32>
  %rows = est.gather %p, %ids : tensor<1000x4xf32>, tensor<?x2xi64> -> tensor<?x2x4xf32>
  %loss = est.reduce_sum %rows : tensor<?x2x4xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// CHECK-LABEL: func.func @gather_dense_axis1
// CHECK: %[[G:.*]] = est.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
// CHECK: %[[Z:.*]] = est.constant dense<0.000000e+00> : tensor<8x3xf32>
// CHECK: %[[S:.*]] = est.scatter %[[Z]], %{{.*}}, %[[G]] : tensor<8x3xf32>, tensor<5xi64>, tensor<5x3xf32> -> tensor<8x3xf32>
// CHECK: est.transpose %[[S]] {perm = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
est.variable @m : tensor<3x8xf32> {trainable}

func.func @gather_dense_axis1(%ids: tensor<5xi64>) {
  %t = est.read_variable @m : tensor<3x8xf32>
  %p = est.mul %t, %t : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  %cols = est.gather %p, %ids {axis = 1 : i64} : tensor<3x8xf32>, tensor<5xi64> -> tensor<3x5xf32>
  %loss = est.reduce_sum %cols : tensor<3x5xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return
}

// -----

// A 2-D weight applied to every row of a batched input (a recurrent
// layer's input projection over [T, batch, features]): the weight's
// gradient is one GEMM over the rows collapsed, not a batched product
// summed over T.
// CHECK-LABEL: func.func @projection
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4xf32>)
// CHECK-DAG: %[[ROWS:.*]] = est.reshape %[[X]] {shape = array<i64: -1, 4>} : tensor<?x?x4xf32> -> tensor<?x4xf32>
// CHECK-DAG: %[[GROWS:.*]] = est.reshape %{{.*}} {shape = array<i64: -1, 3>} : tensor<?x?x3xf32> -> tensor<?x3xf32>
// CHECK: %[[GW:.*]] = est.matmul %[[ROWS]], %[[GROWS]] {transpose_a = true} : tensor<?x4xf32>, tensor<?x3xf32> -> tensor<4x3xf32>
// CHECK-NOT: est.reduce_sum
// CHECK: est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %[[GW]] : tensor<4x3xf32>
est.variable @w : tensor<4x3xf32> {trainable}

func.func @projection(%x: tensor<?x?x4xf32>) -> tensor<f32> {
  %w = est.read_variable @w : tensor<4x3xf32>
  %0 = est.matmul %x, %w : tensor<?x?x4xf32>, tensor<4x3xf32> -> tensor<?x?x3xf32>
  %loss = est.reduce_sum %0 : tensor<?x?x3xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Slices of one value (an LSTM's gates) each with a gradient: the zero
// pads of the slices' gradients, adjacent along the sliced axis, sum into
// one concatenation (written once) instead of pads added together.
// CHECK-LABEL: func.func @gates
// CHECK-NOT: est.pad
// CHECK: %[[GZ:.*]] = est.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x6xf32>
// CHECK-NOT: est.pad
// CHECK: est.matmul %{{.*}}, %[[GZ]] {transpose_a = true}
est.variable @w : tensor<4x6xf32> {trainable}

func.func @gates(%x: tensor<?x4xf32>) -> tensor<f32> {
  %w = est.read_variable @w : tensor<4x6xf32>
  %z = est.matmul %x, %w : tensor<?x4xf32>, tensor<4x6xf32> -> tensor<?x6xf32>
  %i = est.slice %z {begin = array<i64: 0, 0>, size = array<i64: -1, 2>} : tensor<?x6xf32> -> tensor<?x2xf32>
  %f = est.slice %z {begin = array<i64: 0, 2>, size = array<i64: -1, 2>} : tensor<?x6xf32> -> tensor<?x2xf32>
  %o = est.slice %z {begin = array<i64: 0, 4>, size = array<i64: -1, 2>} : tensor<?x6xf32> -> tensor<?x2xf32>
  %si = est.sigmoid %i : tensor<?x2xf32>
  %tf = est.tanh %f : tensor<?x2xf32>
  %so = est.sigmoid %o : tensor<?x2xf32>
  %a = est.mul %si, %tf : tensor<?x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
  %b = est.mul %a, %so : tensor<?x2xf32>, tensor<?x2xf32> -> tensor<?x2xf32>
  %loss = est.reduce_sum %b : tensor<?x2xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// cumsum's gradient is the cumsum of g the other way round (same axis and
// exclusive); cumprod's is TF's cumsum(cumprod(x) g, reversed) / x.
// CHECK-LABEL: func.func @train
// CHECK: %[[W:.*]] = est.read_variable @cw
// CHECK: %[[P:.*]] = est.cumprod %[[W]] {axis = 1 : i64, exclusive = true}
// CHECK: %[[S:.*]] = est.cumsum %[[P]] {reverse = true}
// CHECK: %[[GS:.*]] = est.cumsum %{{.*}} : tensor<2x3xf32>
// CHECK: %[[PG:.*]] = est.mul %[[P]], %[[GS]]
// CHECK: %[[R:.*]] = est.cumsum %[[PG]] {axis = 1 : i64, exclusive = true, reverse = true}
// CHECK: est.div %[[R]], %[[W]]
est.variable @cw : tensor<2x3xf32> {trainable}

func.func @train() -> tensor<f32> {
  %w = est.read_variable @cw : tensor<2x3xf32>
  %p = est.cumprod %w {axis = 1 : i64, exclusive = true} : tensor<2x3xf32>
  %s = est.cumsum %p {axis = 0 : i64, reverse = true} : tensor<2x3xf32>
  %loss = est.reduce_sum %s : tensor<2x3xf32> -> tensor<f32>
  est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} : tensor<f32>
  return %loss : tensor<f32>
}
