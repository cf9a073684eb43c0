// RUN: estc-opt %s --split-input-file --estc-autodiff-stage --estc-decompose-stage --estc-linalg-stage --estc-fusion-stage | FileCheck %s

// Every optimizer's elementwise math for one variable is one loop: the slot
// updates become extra results of the variable's update (multi-result
// fusion), each computed once and assigned from that loop.

// Adam: m, v and the variable in one loop. The bias-corrected learning rate
// is a 0-d loop of beta1_power and beta2_power, read by every variable's
// update through a broadcast; the powers' and global_step's updates are 0-d
// loops of their own.
// CHECK-LABEL: func.func @adam
// CHECK-DAG: %[[W:.*]] = est.read_variable @w :
// CHECK-DAG: %[[LR:.*]] = linalg.generic {{.*}} iterator_types = []
// CHECK-DAG: %[[M:.*]] = est.read_variable @"w/Adam" :
// CHECK-DAG: %[[V:.*]] = est.read_variable @"w/Adam_1" :
// CHECK: %[[UPD:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[W]], %[[M]], %[[G:.*]], %[[LR]], %[[V]] :
// CHECK: math.sqrt
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic {{.*}} ["parallel", "parallel"]
// CHECK-DAG: est.assign_variable @"w/Adam", %[[UPD]]#
// CHECK-DAG: est.assign_variable @"w/Adam_1", %[[UPD]]#
// CHECK-DAG: est.assign_variable @w, %[[UPD]]#
// CHECK-DAG: est.assign_variable @beta1_power,
// CHECK-DAG: est.assign_variable @beta2_power,
// CHECK-DAG: est.assign_variable @global_step,
est.variable @w : tensor<4x3xf32> {trainable}

func.func @adam(%g: tensor<4x3xf32>) {
  est.apply_gradients "adam" {learning_rate = 1.000000e-03 : f64, beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64} [@w] %g : tensor<4x3xf32>
  return
}

// -----

// Momentum (Nesterov): the accumulator and the variable.
// CHECK-LABEL: func.func @momentum
// CHECK: %[[UPD:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT: linalg.generic {{.*}} ["parallel", "parallel"]
// CHECK-DAG: est.assign_variable @"w/Momentum", %[[UPD]]#
// CHECK-DAG: est.assign_variable @w, %[[UPD]]#
est.variable @w : tensor<4x3xf32> {trainable}

func.func @momentum(%g: tensor<4x3xf32>) {
  est.apply_gradients "momentum" {learning_rate = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, use_nesterov = true} [@w] %g : tensor<4x3xf32>
  return
}

// -----

// Adagrad: the accumulator and the variable.
// CHECK-LABEL: func.func @adagrad
// CHECK: %[[UPD:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT: linalg.generic {{.*}} ["parallel", "parallel"]
// CHECK-DAG: est.assign_variable @"w/Adagrad", %[[UPD]]#
// CHECK-DAG: est.assign_variable @w, %[[UPD]]#
est.variable @w : tensor<4x3xf32> {trainable}

func.func @adagrad(%g: tensor<4x3xf32>) {
  est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64, initial_accumulator_value = 1.000000e-01 : f64} [@w] %g : tensor<4x3xf32>
  return
}

// -----

// Centered RMSProp with momentum: mean square, mean gradient, momentum and
// the variable, four results of one loop.
// CHECK-LABEL: func.func @rmsprop
// CHECK: %[[UPD:.*]]:4 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT: linalg.generic {{.*}} ["parallel", "parallel"]
// CHECK-DAG: est.assign_variable @"w/RMSProp", %[[UPD]]#
// CHECK-DAG: est.assign_variable @"w/RMSProp_1", %[[UPD]]#
// CHECK-DAG: est.assign_variable @"w/RMSProp_2", %[[UPD]]#
// CHECK-DAG: est.assign_variable @w, %[[UPD]]#
est.variable @w : tensor<4x3xf32> {trainable}

func.func @rmsprop(%g: tensor<4x3xf32>) {
  est.apply_gradients "rmsprop" {learning_rate = 1.000000e-02 : f64, decay = 9.000000e-01 : f64, momentum = 5.000000e-01 : f64, epsilon = 1.000000e-10 : f64, centered = true} [@w] %g : tensor<4x3xf32>
  return
}

// -----

// FTRL: accumulator, linear term and the variable.
// CHECK-LABEL: func.func @ftrl
// CHECK: %[[UPD:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT: linalg.generic {{.*}} ["parallel", "parallel"]
// CHECK-DAG: est.assign_variable @"w/Ftrl", %[[UPD]]#
// CHECK-DAG: est.assign_variable @"w/Ftrl_1", %[[UPD]]#
// CHECK-DAG: est.assign_variable @w, %[[UPD]]#
est.variable @w : tensor<4x3xf32> {trainable}

func.func @ftrl(%g: tensor<4x3xf32>) {
  est.apply_gradients "ftrl" {learning_rate = 1.000000e-01 : f64, learning_rate_power = -5.000000e-01 : f64, initial_accumulator_value = 1.000000e-01 : f64, l1_regularization_strength = 1.000000e-02 : f64, l2_regularization_strength = 1.000000e-02 : f64} [@w] %g : tensor<4x3xf32>
  return
}
