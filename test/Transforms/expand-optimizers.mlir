// RUN: estc-opt %s --split-input-file --est-expand-optimizers | FileCheck %s

// SGD: var -= lr * g; global_step is created and incremented.
// CHECK: est.variable @global_step : tensor<i64> {initializer = #est.init<"zeros">}
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>)
// CHECK: %[[STEP:.*]] = est.read_variable @global_step
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[LR:.*]] = est.constant dense<1.000000e-01> : tensor<f32>
// CHECK: %[[D:.*]] = est.mul %[[LR]], %[[G]]
// CHECK: %[[NEW:.*]] = est.sub %[[W]], %[[D]]
// CHECK: %[[NEXT:.*]] = est.add %[[STEP]]
// CHECK: est.assign_variable @w, %[[NEW]]
// CHECK: est.assign_variable @global_step, %[[NEXT]]
est.variable @w : tensor<3xf32> {trainable}

func.func @sgd(%g: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

// Momentum with Nesterov: a = m a + g; var -= g lr + a m lr (TF's kernel).
// The existing global_step is reused.
// CHECK: est.variable @global_step : tensor<i64>
// CHECK-NOT: est.variable @global_step
// CHECK: est.variable @"w/Momentum" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-LABEL: func.func @momentum
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>)
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[LR:.*]] = est.constant dense<1.000000e-01> : tensor<f32>
// CHECK: %[[M:.*]] = est.constant dense<0.899999976> : tensor<f32>
// CHECK: %[[A:.*]] = est.add %{{.*}}, %[[G]] :
// CHECK: %[[AM:.*]] = est.mul %[[A]], %[[M]]
// CHECK: %[[AMLR:.*]] = est.mul %[[AM]], %[[LR]]
// CHECK: %[[GLR:.*]] = est.mul %[[G]], %[[LR]]
// CHECK: %[[STEP:.*]] = est.add %[[GLR]], %[[AMLR]]
// CHECK: %[[NEW:.*]] = est.sub %[[W]], %[[STEP]]
// CHECK: est.assign_variable @"w/Momentum", %[[A]]
// CHECK: est.assign_variable @w, %[[NEW]]
est.variable @global_step : tensor<i64>
est.variable @w : tensor<3xf32> {trainable}

func.func @momentum(%g: tensor<3xf32>) {
  est.apply_gradients "momentum" {learning_rate = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, use_nesterov = true} [@w] %g : tensor<3xf32>
  return
}

// -----

// Adagrad: the accumulator starts at initial_accumulator_value.
// CHECK: est.variable @"w/Adagrad" : tensor<3xf32> {initializer = #est.init<"constant", {value = 1.000000e-01 : f64}>}
// CHECK-LABEL: func.func @adagrad
// CHECK: est.square
// CHECK: est.sqrt
// CHECK: est.assign_variable @"w/Adagrad"
// CHECK: est.assign_variable @w
est.variable @w : tensor<3xf32> {trainable}

func.func @adagrad(%g: tensor<3xf32>) {
  est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64, initial_accumulator_value = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

// Adam: bias correction from t = global_step + 1, two slots updated as TF's
// kernel does: m += (g - m) (1 - beta1), v += (g^2 - v) (1 - beta2), with
// 1 - beta computed in f32: 1 - 0.9f = 0.100000024, 1 - 0.999f =
// 9.99987125E-4 (the f32 rounding of the double 1 - 0.999 would be
// 1.000000e-03).
// The bias correction from TF 1.x's non-slot beta1_power / beta2_power
// (created at beta1 / beta2, times them after the update).
// CHECK-DAG: est.variable @"w/Adam" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @"w/Adam_1" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @beta1_power : tensor<f32> {initializer = #est.init<"constant", {value = 9.000000e-01 : f64}>}
// CHECK-DAG: est.variable @beta2_power : tensor<f32> {initializer = #est.init<"constant", {value = 0.99899999999999999 : f64}>}
// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>)
// CHECK: %[[B1:.*]] = est.constant dense<0.899999976> : tensor<f32>
// CHECK: %[[B2:.*]] = est.constant dense<9.990000e-01> : tensor<f32>
// CHECK: %[[P1:.*]] = est.read_variable @beta1_power
// CHECK: %[[P2:.*]] = est.read_variable @beta2_power
// CHECK-NOT: est.pow
// CHECK: %[[M0:.*]] = est.read_variable @"w/Adam" :
// CHECK: %[[C1:.*]] = est.constant dense<0.100000024> : tensor<f32>
// CHECK: %[[DM:.*]] = est.sub %[[G]], %[[M0]]
// CHECK: %[[SM:.*]] = est.mul %[[DM]], %[[C1]]
// CHECK: %[[M:.*]] = est.add %[[M0]], %[[SM]]
// CHECK: %[[V0:.*]] = est.read_variable @"w/Adam_1" :
// CHECK: %[[C2:.*]] = est.constant dense<9.99987125E-4> : tensor<f32>
// CHECK: %[[G2:.*]] = est.square %[[G]]
// CHECK: %[[DV:.*]] = est.sub %[[G2]], %[[V0]]
// CHECK: %[[SV:.*]] = est.mul %[[DV]], %[[C2]]
// CHECK: %[[V:.*]] = est.add %[[V0]], %[[SV]]
// CHECK: %[[NP1:.*]] = est.mul %[[P1]], %{{.*}} : tensor<f32>
// CHECK: %[[NP2:.*]] = est.mul %[[P2]], %{{.*}} : tensor<f32>
// CHECK: est.assign_variable @"w/Adam", %[[M]]
// CHECK: est.assign_variable @"w/Adam_1", %[[V]]
// CHECK: est.assign_variable @w,
// CHECK: est.assign_variable @beta1_power, %[[NP1]]
// CHECK: est.assign_variable @beta2_power, %[[NP2]]
// CHECK: est.assign_variable @global_step,
est.variable @w : tensor<3xf32> {trainable}

func.func @adam(%g: tensor<3xf32>) {
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64, beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

// An f64 variable: TF 1.x casts its float32 hyperparameter tensors to f64,
// so beta1 is the double of 0.9f and 1 - beta1 is computed in f64 from it.
// CHECK-LABEL: func.func @adam_f64
// CHECK: est.constant dense<0.89999997615814208> : tensor<f64>
// CHECK: est.constant dense<0.10000002384185791> : tensor<f64>
// CHECK: est.constant dense<9.9998712539672852E-4> : tensor<f64>
est.variable @w : tensor<3xf64> {trainable}

func.func @adam_f64(%g: tensor<3xf64>) {
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64, beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64} [@w] %g : tensor<3xf64>
  return
}

// -----

// Centered RMSProp with momentum: ms starts at ones; mg, then the momentum.
// ms += (g^2 - ms) (1 - decay), mg += (g - mg) (1 - decay), 1 - 0.9f in f32.
// CHECK-DAG: est.variable @"w/RMSProp" : tensor<3xf32> {initializer = #est.init<"ones">}
// CHECK-DAG: est.variable @"w/RMSProp_1" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @"w/RMSProp_2" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-LABEL: func.func @rmsprop
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>)
// CHECK: %[[C:.*]] = est.constant dense<0.100000024> : tensor<f32>
// CHECK: %[[MS0:.*]] = est.read_variable @"w/RMSProp" :
// CHECK: %[[G2:.*]] = est.square %[[G]]
// CHECK: %[[DMS:.*]] = est.sub %[[G2]], %[[MS0]]
// CHECK: %[[SMS:.*]] = est.mul %[[DMS]], %[[C]]
// CHECK: est.add %[[MS0]], %[[SMS]]
// CHECK: %[[MG0:.*]] = est.read_variable @"w/RMSProp_1" :
// CHECK: %[[DMG:.*]] = est.sub %[[G]], %[[MG0]]
// CHECK: %[[SMG:.*]] = est.mul %[[DMG]], %[[C]]
// CHECK: est.add %[[MG0]], %[[SMG]]
// CHECK: est.assign_variable @"w/RMSProp",
// CHECK: est.assign_variable @"w/RMSProp_1",
// CHECK: est.assign_variable @"w/RMSProp_2",
// CHECK: est.assign_variable @w,
est.variable @w : tensor<3xf32> {trainable}

func.func @rmsprop(%g: tensor<3xf32>) {
  est.apply_gradients "rmsprop" {learning_rate = 1.000000e-02 : f64, decay = 9.000000e-01 : f64, momentum = 5.000000e-01 : f64, epsilon = 1.000000e-10 : f64, centered = true} [@w] %g : tensor<3xf32>
  return
}

// -----

// FTRL: accumulator and linear slots; the weight is 0 where |linear| <= l1.
// CHECK-DAG: est.variable @"w/Ftrl" : tensor<3xf32> {initializer = #est.init<"constant", {value = 1.000000e-01 : f64}>}
// CHECK-DAG: est.variable @"w/Ftrl_1" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-LABEL: func.func @ftrl
// CHECK: %[[ABS:.*]] = est.abs
// CHECK: %[[BIG:.*]] = est.greater %[[ABS]]
// CHECK: %[[NEW:.*]] = est.select %[[BIG]]
// CHECK: est.assign_variable @"w/Ftrl",
// CHECK: est.assign_variable @"w/Ftrl_1",
// CHECK: est.assign_variable @w, %[[NEW]]
est.variable @w : tensor<3xf32> {trainable}

func.func @ftrl(%g: tensor<3xf32>) {
  est.apply_gradients "ftrl" {learning_rate = 1.000000e-01 : f64, learning_rate_power = -5.000000e-01 : f64, initial_accumulator_value = 1.000000e-01 : f64, l1_regularization_strength = 1.000000e-02 : f64, l2_regularization_strength = 1.000000e-02 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

// A learning rate computed in the step (a schedule of global_step) is the
// apply_gradients operand; it is cast to the variable's element type.
// CHECK-LABEL: func.func @scheduled
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>, %[[LR:.*]]: tensor<f64>)
// CHECK: %[[W:.*]] = est.read_variable @w
// CHECK: %[[LR32:.*]] = est.cast %[[LR]] to f32
// CHECK-NOT: learning_rate
// CHECK: %[[D:.*]] = est.mul %[[LR32]], %[[G]]
// CHECK: %[[NEW:.*]] = est.sub %[[W]], %[[D]]
// CHECK: est.assign_variable @w, %[[NEW]]
est.variable @w : tensor<3xf32> {trainable}

func.func @scheduled(%g: tensor<3xf32>, %lr: tensor<f64>) {
  est.apply_gradients "sgd" {} [@w] %g : tensor<3xf32> learning_rate %lr : tensor<f64>
  return
}

// -----

// clip_gradients_by_global_norm: every gradient times
// clip / max(sqrt(sum of all squares), clip) before the update.
// CHECK-LABEL: func.func @clipped
// CHECK-SAME: (%[[G1:.*]]: tensor<3xf32>, %[[G2:.*]]: tensor<2x2xf32>)
// CHECK: %[[S1:.*]] = est.reduce_sum %{{.*}} {axes = array<i64: 0>
// CHECK: %[[S2:.*]] = est.reduce_sum %{{.*}} {axes = array<i64: 0, 1>
// CHECK: %[[SUM:.*]] = est.add %[[S1]], %[[S2]]
// CHECK: %[[CLIP:.*]] = est.constant dense<5.000000e+00> : tensor<f32>
// CHECK: %[[NORM:.*]] = est.sqrt %[[SUM]]
// CHECK: %[[MAX:.*]] = est.maximum %[[NORM]], %[[CLIP]]
// CHECK: %[[SCALE:.*]] = est.div %[[CLIP]], %[[MAX]]
// CHECK: %[[C1:.*]] = est.mul %[[G1]], %[[SCALE]]
// CHECK: %[[C2:.*]] = est.mul %[[G2]], %[[SCALE]]
// CHECK: est.mul %{{.*}}, %[[C1]]
// CHECK: est.mul %{{.*}}, %[[C2]]
est.variable @a : tensor<3xf32> {trainable}
est.variable @b : tensor<2x2xf32> {trainable}

func.func @clipped(%g1: tensor<3xf32>, %g2: tensor<2x2xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, clip_gradients_by_global_norm = 5.000000e+00 : f64} [@a, @b] %g1, %g2 : tensor<3xf32>, tensor<2x2xf32>
  return
}

// -----

// Sparse SGD: -lr * rows added into the gathered rows of the variable
// (duplicates add up); nothing of the size of the table is computed.
// CHECK-LABEL: func.func @sparse_sgd
// CHECK-SAME: (%[[IDS:.*]]: tensor<?xi64>, %[[ROWS:.*]]: tensor<?x4xf32>)
// CHECK: %[[E:.*]] = est.read_variable @emb
// CHECK: %[[D:.*]] = est.mul %{{.*}}, %[[ROWS]]
// CHECK: %[[N:.*]] = est.neg %[[D]]
// CHECK: %[[NEW:.*]] = est.scatter %[[E]], %[[IDS]], %[[N]] :
// CHECK: est.assign_variable @emb, %[[NEW]]
est.variable @emb : tensor<1000x4xf32> {trainable}

func.func @sparse_sgd(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x4xf32>)
  return
}

// -----

// Sparse Adagrad (TF's _apply_sparse): duplicate rows summed first (the
// rows with an equal index selected and summed, one fused reduction: no
// [n, n] matrix, nothing of the variable's size), then the dense rule on
// the gathered rows of the variable and the accumulator, scattered back.
// CHECK-LABEL: func.func @sparse_adagrad
// CHECK-SAME: (%[[IDS:.*]]: tensor<?xi64>, %[[ROWS:.*]]: tensor<?x4xf32>)
// CHECK: %[[E:.*]] = est.read_variable @emb
// CHECK-NOT: tensor<1000x4xf32> ->
// CHECK: %[[EQ:.*]] = est.equal {{.*}} -> tensor<?x?x1xi1>
// CHECK: %[[SEL:.*]] = est.select %[[EQ]]
// CHECK: %[[SUM:.*]] = est.reduce_sum %[[SEL]] {axes = array<i64: 1>}
// CHECK: %[[EROWS:.*]] = est.gather %[[E]], %[[IDS]]
// CHECK: %[[ACC:.*]] = est.read_variable @"emb/Adagrad"
// CHECK: %[[ACCROWS:.*]] = est.gather %[[ACC]], %[[IDS]]
// CHECK: %[[NEWACCROWS:.*]] = est.add %[[ACCROWS]],
// CHECK: %[[NEWACC:.*]] = est.scatter %{{.*}}, %[[IDS]], %[[NEWACCROWS]] {mode = "update"}
// CHECK: %[[NEWEROWS:.*]] = est.sub %[[EROWS]],
// CHECK: %[[NEWE:.*]] = est.scatter %{{.*}}, %[[IDS]], %[[NEWEROWS]] {mode = "update"}
// CHECK: est.assign_variable @"emb/Adagrad", %[[NEWACC]]
// CHECK: est.assign_variable @emb, %[[NEWE]]
est.variable @emb : tensor<1000x4xf32> {trainable}

func.func @sparse_adagrad(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x4xf32>)
  return
}

// -----

// Sparse momentum (TF's sparse_apply_momentum): only the gathered rows of
// the accumulator and the variable change; nothing dense is built.
// CHECK-LABEL: func.func @sparse_momentum
// CHECK-SAME: (%[[IDS:.*]]: tensor<?xi64>,
// CHECK-NOT: tensor<1000x4xf32> ->
// CHECK: est.reduce_sum
// CHECK: %[[A:.*]] = est.read_variable @"emb/Momentum"
// CHECK: %[[AROWS:.*]] = est.gather %[[A]], %[[IDS]]
// CHECK: est.scatter %{{.*}}, %[[IDS]], %{{.*}} {mode = "update"}
// CHECK: est.scatter %{{.*}}, %[[IDS]], %{{.*}} {mode = "update"}
// CHECK: est.assign_variable @"emb/Momentum"
// CHECK: est.assign_variable @emb
est.variable @emb : tensor<1000x4xf32> {trainable}

func.func @sparse_momentum(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  est.apply_gradients "momentum" {learning_rate = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x4xf32>)
  return
}

// -----

// Sparse centered RMSProp (TF's sparse_apply_centered_rms_prop): the rows
// of all three slots and of the variable.
// CHECK-LABEL: func.func @sparse_rmsprop
// CHECK-COUNT-4: est.scatter {{.*}} {mode = "update"}
// CHECK-NOT: est.scatter
// CHECK: est.assign_variable @"emb/RMSProp",
// CHECK: est.assign_variable @"emb/RMSProp_1",
// CHECK: est.assign_variable @"emb/RMSProp_2",
// CHECK: est.assign_variable @emb,
est.variable @emb : tensor<1000x4xf32> {trainable}

func.func @sparse_rmsprop(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  est.apply_gradients "rmsprop" {learning_rate = 1.000000e-02 : f64, decay = 9.000000e-01 : f64, momentum = 5.000000e-01 : f64, epsilon = 1.000000e-10 : f64, centered = true} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x4xf32>)
  return
}

// -----

// Adam densifies, as TF 1.x's does: the rows scattered into zeros, then the
// dense rule.
// CHECK-LABEL: func.func @sparse_adam
// CHECK: %[[Z:.*]] = est.constant dense<0.000000e+00> : tensor<1000x4xf32>
// CHECK: %[[G:.*]] = est.scatter %[[Z]],
// CHECK: est.assign_variable @"emb/Adam"
est.variable @emb : tensor<1000x4xf32> {trainable}

func.func @sparse_adam(%ids: tensor<?xi64>, %rows: tensor<?x4xf32>) {
  est.apply_gradients "adam" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x4xf32>)
  return
}

// -----

// Two apply_gradients in one function (a train_op grouping two optimizers'
// minimizes): global_step is read once, before the first, and incremented
// once. Another function steps it on its own.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[STEP:.*]] = est.read_variable @global_step
// CHECK: est.assign_variable @w,
// CHECK: est.assign_variable @global_step,
// CHECK-NOT: est.read_variable @global_step
// CHECK: est.read_variable @beta1_power
// CHECK: est.assign_variable @"v/Adam"
// CHECK-NOT: est.assign_variable @global_step
// CHECK-LABEL: func.func @other
// CHECK: est.read_variable @global_step
// CHECK: est.assign_variable @global_step,
est.variable @w : tensor<3xf32> {trainable}
est.variable @v : tensor<3xf32> {trainable}

func.func @grouped(%gw: tensor<3xf32>, %gv: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %gw : tensor<3xf32>
  est.apply_gradients "adam" {learning_rate = 1.000000e-01 : f64} [@v] %gv : tensor<3xf32>
  return
}

func.func @other(%gw: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %gw : tensor<3xf32>
  return
}

// -----

// keep_global_step (train::Optimizer::apply_gradients without a
// global_step): the update only; global_step is read (for a rule that
// needs the step) but not incremented. A second apply_gradients without
// keep_global_step in the same function increments it once.
// CHECK-LABEL: func.func @keep_global_step
// CHECK: est.assign_variable @w
// CHECK-NOT: est.assign_variable @global_step
// CHECK-LABEL: func.func @keep_then_increment
// CHECK: est.assign_variable @w
// CHECK: est.assign_variable @v
// CHECK: est.assign_variable @global_step
// CHECK-NOT: est.assign_variable @global_step
// CHECK: return
est.variable @w : tensor<3xf32> {trainable}
est.variable @v : tensor<3xf32> {trainable}

func.func @keep_global_step(%g: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32> {keep_global_step = true}
  return
}

func.func @keep_then_increment(%g: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32> {keep_global_step = true}
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %g : tensor<3xf32>
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@v] %g : tensor<3xf32>
  return
}

// -----

// moving_average (train::ExponentialMovingAverage): expanded after the
// function's other apply_gradients, at its end, on the variable's new value
// (TF's control_dependencies([opt_op])): decay = min(0.99, (1 + n) /
// (10 + n)); shadow -= (shadow - w') (1 - decay).
// CHECK-LABEL: func.func @moving_average
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>, %[[N:.*]]: tensor<f32>)
// CHECK: %[[NEW:.*]] = est.sub %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>
// CHECK: est.assign_variable @w, %[[NEW]]
// CHECK: %[[DECAY:.*]] = est.minimum
// CHECK: %[[RATE:.*]] = est.sub %{{.*}}, %[[DECAY]] : tensor<f32>, tensor<f32>
// CHECK: %[[S:.*]] = est.read_variable @"w/ExponentialMovingAverage"
// CHECK: %[[D:.*]] = est.sub %[[S]], %[[NEW]]
// CHECK: %[[M:.*]] = est.mul %[[D]], %[[RATE]]
// CHECK: %[[NS:.*]] = est.sub %[[S]], %[[M]]
// CHECK: est.assign_variable @"w/ExponentialMovingAverage", %[[NS]]
// CHECK-NEXT: return
est.variable @w : tensor<3xf32> {trainable}
est.variable @"w/ExponentialMovingAverage" : tensor<3xf32>

func.func @moving_average(%g: tensor<3xf32>, %n: tensor<f32>) {
  %w = est.read_variable @w : tensor<3xf32>
  est.apply_gradients "moving_average" {decay = 9.900000e-01 : f64} [@"w/ExponentialMovingAverage"] %w : tensor<3xf32> learning_rate %n : tensor<f32> {keep_global_step = true}
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
  return
}

// -----

// constraint (train::set_variable_constraint, a layer's kernel_constraint):
// expanded after the optimizers, before the moving averages: the ops from
// the variable's read to the constraint are cloned onto the new value
// (those that do not depend on the read, %k, are reused), whose assignment
// replaces the optimizer's; the average then takes the constrained value.
// A variable no optimizer of the function updates is left alone.
// CHECK-LABEL: func.func @constraint
// CHECK-SAME: (%[[G:.*]]: tensor<3xf32>, %[[K:.*]]: tensor<3xf32>)
// CHECK: %[[NEW:.*]] = est.sub %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>
// CHECK-NOT: est.assign_variable @w,
// CHECK: %[[C:.*]] = est.mul %[[NEW]], %[[K]]
// CHECK-NOT: est.assign_variable @w,
// CHECK: est.assign_variable @w, %[[C]]
// CHECK: %[[S:.*]] = est.read_variable @"w/ExponentialMovingAverage"
// CHECK: est.sub %[[S]], %[[C]]
// CHECK: est.assign_variable @"w/ExponentialMovingAverage"
// CHECK-NEXT: return
// CHECK-LABEL: func.func @constraint_without_update
// CHECK-NOT: est.assign_variable
// CHECK: return
est.variable @w : tensor<3xf32> {trainable}
est.variable @"w/ExponentialMovingAverage" : tensor<3xf32>

func.func @constraint(%g: tensor<3xf32>, %k: tensor<3xf32>) {
  %w = est.read_variable @w : tensor<3xf32>
  %c = est.mul %w, %k : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  est.apply_gradients "moving_average" {decay = 0.000000e+00 : f64} [@"w/ExponentialMovingAverage"] %w : tensor<3xf32> {keep_global_step = true}
  est.apply_gradients "constraint" {} [@w] %c : tensor<3xf32> {keep_global_step = true}
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w] %g : tensor<3xf32>
  return
}

func.func @constraint_without_update(%k: tensor<3xf32>) {
  %w = est.read_variable @w : tensor<3xf32>
  %c = est.mul %w, %k : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  est.apply_gradients "constraint" {} [@w] %c : tensor<3xf32> {keep_global_step = true}
  return
}

// -----

// gradient_accumulation_steps = 2: the accumulator gets g every step; the
// rule runs on its mean and every assignment is selected by `now`.
// CHECK: est.variable @"w/GradientAccumulator"
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[NOW:.*]] = est.equal
// CHECK: est.select %[[NOW]]
// CHECK: est.assign_variable @"w/GradientAccumulator"
// CHECK: est.assign_variable @w
// CHECK: est.assign_variable @global_step
est.variable @w : tensor<3xf32> {trainable}

func.func @accumulate(%g: tensor<3xf32>) {
  est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64, gradient_accumulation_steps = 2 : i64} [@w] %g : tensor<3xf32>
  return
}

// -----

// slot_scope (train::Optimizer::with_keras_legacy_names, TF 2.15's canned
// estimators): Keras' slot names under the scope, the hyperparameters as
// f32 scalar variables, and with own_iterations an iter counted per step;
// Adam's bias correction from the step (Keras' legacy Adam has no beta
// powers). Two TF 1.x Adams in one function: beta1_power, beta1_power_1.
// CHECK-DAG: est.variable @"training/Ftrl/w/accumulator" : tensor<3xf32> {initializer = #est.init<"constant", {value = 1.000000e-01 : f64}>}
// CHECK-DAG: est.variable @"training/Ftrl/w/linear" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @"training/Ftrl/learning_rate" : tensor<f32> {initializer = #est.init<"constant", {value = 2.000000e-01 : f64}>}
// CHECK-DAG: est.variable @"training/Ftrl/learning_rate_power" : tensor<f32> {initializer = #est.init<"constant", {value = -5.000000e-01 : f64}>}
// CHECK-DAG: est.variable @"training/Ftrl/l1_regularization_strength" : tensor<f32>
// CHECK-DAG: est.variable @"training/Ftrl/l2_regularization_strength" : tensor<f32>
// CHECK-DAG: est.variable @"training/Ftrl/beta" : tensor<f32>
// CHECK-DAG: est.variable @"training/Ftrl/decay" : tensor<f32>
// CHECK-DAG: est.variable @"training/Adam_1/v/m" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @"training/Adam_1/v/v" : tensor<3xf32> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @"training/Adam_1/beta_1" : tensor<f32> {initializer = #est.init<"constant", {value = 9.000000e-01 : f64}>}
// CHECK-DAG: est.variable @"training/Adam_1/iter" : tensor<i64> {initializer = #est.init<"zeros">}
// CHECK-DAG: est.variable @beta1_power : tensor<f32>
// CHECK-DAG: est.variable @beta1_power_1 : tensor<f32>
// CHECK-LABEL: func.func @keras_legacy_names
// CHECK: est.assign_variable @"training/Ftrl/w/accumulator"
// CHECK: est.assign_variable @"training/Ftrl/w/linear"
// CHECK: est.assign_variable @global_step
// CHECK: est.pow
// CHECK: est.read_variable @"training/Adam_1/iter"
// CHECK: est.assign_variable @"training/Adam_1/v/m"
// CHECK: est.assign_variable @"training/Adam_1/v/v"
// CHECK: est.assign_variable @"training/Adam_1/iter"
// CHECK: est.assign_variable @beta1_power,
// CHECK: est.assign_variable @beta1_power_1,
// CHECK-NOT: est.assign_variable @"training/Ftrl/learning_rate"
est.variable @w : tensor<3xf32> {trainable}
est.variable @v : tensor<3xf32> {trainable}
est.variable @x : tensor<3xf32> {trainable}
est.variable @y : tensor<3xf32> {trainable}

func.func @keras_legacy_names(%gw: tensor<3xf32>, %gv: tensor<3xf32>, %gx: tensor<3xf32>, %gy: tensor<3xf32>) {
  est.apply_gradients "ftrl" {learning_rate = 2.000000e-01 : f64, slot_scope = "training/Ftrl"} [@w] %gw : tensor<3xf32>
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64, slot_scope = "training/Adam_1", own_iterations = true} [@v] %gv : tensor<3xf32>
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64} [@x] %gx : tensor<3xf32>
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64} [@y] %gy : tensor<3xf32>
  return
}
