// RUN: estc-opt %s --split-input-file --convert-est-to-linalg | FileCheck %s

// est.scan, est.if and est.while to scf on tensors, in destination style
// (compiler/Conversion/EstToLinalg/ControlFlow.cpp,
// docs/design/control-flow.md "Lowering").

// A scan becomes an scf.for over the steps. The carried value lives in
// two slots made before the loop (bufferization.alloc_tensor, not
// tensor.empty, which CSE could merge with the other stack); the init is
// written to slot 0, iteration i reads slot i % 2 and writes slot
// (i + 1) % 2, and the final value is slot T % 2. The per-step output has a
// stack of T slots, written at t. The body's linalg ops are moved into the
// loop.
// CHECK-LABEL: func.func @rnn
// CHECK-SAME: (%[[H0:.*]]: tensor<?x4xf32>, %[[XS:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<4x4xf32>)
// CHECK: %[[T:.*]] = tensor.dim %[[XS]], %{{.*}} : tensor<?x?x4xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[B:.*]] = tensor.dim %[[H0]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[STACK:.*]] = bufferization.alloc_tensor(%[[B]]) : tensor<2x?x4xf32>
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %[[H0]] into %[[STACK]][%[[C0]], 0, 0] [1, %{{.*}}, 4] [1, 1, 1]
// CHECK: %[[YS:.*]] = bufferization.alloc_tensor(%[[T]], %{{.*}}) : tensor<?x?x4xf32>
// CHECK-NOT: tensor.empty
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = %[[C0]] to %[[T]] step %[[C1]] iter_args(%[[HS:.*]] = %[[FIRST]], %[[OUT:.*]] = %[[YS]]) -> (tensor<2x?x4xf32>, tensor<?x?x4xf32>) {
// CHECK: %[[IN:.*]] = arith.remui %[[I]], %[[C2]] : index
// CHECK: %[[I1:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK: %[[NEXT:.*]] = arith.remui %[[I1]], %[[C2]] : index
// CHECK: %[[HP:.*]] = tensor.extract_slice %[[HS]][%[[IN]], 0, 0] [1, %{{.*}}, 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
// CHECK: %[[X:.*]] = tensor.extract_slice %[[XS]][%[[I]], 0, 0] [1, %{{.*}}, 4] [1, 1, 1] : tensor<?x?x4xf32> to tensor<?x4xf32>
// CHECK: linalg.matmul ins(%[[HP]], %[[W]] : tensor<?x4xf32>, tensor<4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[X]] :
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: %[[HS2:.*]] = tensor.insert_slice %[[H]] into %[[HS]][%[[NEXT]], 0, 0]
// CHECK: %[[OUT2:.*]] = tensor.insert_slice %[[H]] into %[[OUT]][%[[I]], 0, 0]
// CHECK: scf.yield %[[HS2]], %[[OUT2]] : tensor<2x?x4xf32>, tensor<?x?x4xf32>
// CHECK: }
// CHECK: %[[LAST:.*]] = arith.remui %[[T]], %[[C2]] : index
// CHECK: %[[FINAL:.*]] = tensor.extract_slice %[[LOOP]]#0[%[[LAST]], 0, 0] [1, %{{.*}}, 4] [1, 1, 1] : tensor<2x?x4xf32> to tensor<?x4xf32>
// CHECK: return %[[FINAL]], %[[LOOP]]#1 : tensor<?x4xf32>, tensor<?x?x4xf32>
func.func @rnn(%h0: tensor<?x4xf32>, %xs: tensor<?x?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
    %m = est.matmul %hp, %w : tensor<?x4xf32>, tensor<4x4xf32> -> tensor<?x4xf32>
    %s = est.add %m, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
    %n = est.tanh %s : tensor<?x4xf32>
    est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  return %h, %ys : tensor<?x4xf32>, tensor<?x?x4xf32>
}

// -----

// Reversed, with 5 static steps: iteration i runs step t = T - 1 - i
// (its sequence slice and its per-step output at index t); the carried
// value's slots are the same as forward: init in slot 0, iteration i reads
// slot i % 2 and writes (i + 1) % 2, the final value is slot T % 2.
// CHECK-LABEL: func.func @reverse
// CHECK-SAME: (%[[H0:.*]]: tensor<3xf32>, %[[XS:.*]]: tensor<5x3xf32>)
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[STACK:.*]] = bufferization.alloc_tensor() : tensor<2x3xf32>
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %[[H0]] into %[[STACK]][%[[C0]], 0] [1, 3] [1, 1]
// CHECK: %[[YS:.*]] = bufferization.alloc_tensor() : tensor<5x3xf32>
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = %[[C0]] to %[[C5]] step %[[C1]] iter_args(%[[HS:.*]] = %[[FIRST]], %[[OUT:.*]] = %[[YS]])
// CHECK: %[[LAST:.*]] = arith.subi %[[C5]], %[[C1]] : index
// CHECK: %[[T:.*]] = arith.subi %[[LAST]], %[[I]] : index
// CHECK: %[[IN:.*]] = arith.remui %[[I]], %[[C2]] : index
// CHECK: %[[I1:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK: %[[NEXT:.*]] = arith.remui %[[I1]], %[[C2]] : index
// CHECK: %[[HP:.*]] = tensor.extract_slice %[[HS]][%[[IN]], 0] [1, 3] [1, 1] : tensor<2x3xf32> to tensor<3xf32>
// CHECK: %[[X:.*]] = tensor.extract_slice %[[XS]][%[[T]], 0] [1, 3] [1, 1] : tensor<5x3xf32> to tensor<3xf32>
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[HP]], %[[X]] :
// CHECK: arith.mulf
// CHECK: %[[HS2:.*]] = tensor.insert_slice %[[H]] into %[[HS]][%[[NEXT]], 0] [1, 3] [1, 1]
// CHECK: %[[OUT2:.*]] = tensor.insert_slice %[[H]] into %[[OUT]][%[[T]], 0] [1, 3] [1, 1]
// CHECK: scf.yield %[[HS2]], %[[OUT2]]
// CHECK: %[[END:.*]] = arith.remui %[[C5]], %[[C2]] : index
// CHECK: %[[FINAL:.*]] = tensor.extract_slice %[[LOOP]]#0[%[[END]], 0] [1, 3] [1, 1]
// CHECK: return %[[FINAL]], %[[LOOP]]#1 : tensor<3xf32>, tensor<5x3xf32>
func.func @reverse(%h0: tensor<3xf32>, %xs: tensor<5x3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  %h, %ys = est.scan inits(%h0 : tensor<3xf32>) over(%xs : tensor<5x3xf32>) {reverse} -> (tensor<3xf32>, tensor<5x3xf32>) {
  ^bb0(%hp: tensor<3xf32>, %x: tensor<3xf32>):
    %s = est.mul %hp, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    est.yield %s, %s : tensor<3xf32>, tensor<3xf32>
  }
  return %h, %ys : tensor<3xf32>, tensor<5x3xf32>
}

// -----

// A per-step output whose size is computed in the body (a reduction of the
// slice keeps the batch): its stack is sized before the loop from the
// sequence's shape, traced back through the body.
// CHECK-LABEL: func.func @traced_size
// CHECK-SAME: (%[[XS:.*]]: tensor<?x?x4xf32>)
// CHECK: %[[T:.*]] = tensor.dim %[[XS]], %{{.*}} : tensor<?x?x4xf32>
// CHECK: %[[B:.*]] = tensor.dim %[[XS]], %{{.*}} : tensor<?x?x4xf32>
// CHECK: bufferization.alloc_tensor(%[[T]], %[[B]]) : tensor<?x?xf32>
// CHECK: scf.for
func.func @traced_size(%xs: tensor<?x?x4xf32>) -> tensor<?x?xf32> {
  %r = est.scan over(%xs : tensor<?x?x4xf32>) -> (tensor<?x?xf32>) {
  ^bb0(%x: tensor<?x4xf32>):
    %s = est.reduce_sum %x {axes = array<i64: 1>} : tensor<?x4xf32> -> tensor<?xf32>
    est.yield %s : tensor<?xf32>
  }
  return %r : tensor<?x?xf32>
}

// -----

// est.if: the result's buffer is made before the branch (its size traced
// out of the then branch: the captured %a's rows); each branch writes its
// value into it with a linalg.copy and yields that, so neither branch
// yields a buffer of its own.
// CHECK-LABEL: func.func @cond
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<?x3xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<?x3xf32>
// CHECK: %[[DEST:.*]] = bufferization.alloc_tensor(%[[N]]) : tensor<?x3xf32>
// CHECK: %[[P:.*]] = tensor.extract %[[C]][] : tensor<i1>
// CHECK: %[[R:.*]] = scf.if %[[P]] -> (tensor<?x3xf32>) {
// CHECK: %[[NEG:.*]] = linalg.generic {{.*}} ins(%[[A]] :
// CHECK: arith.negf
// CHECK: %[[W1:.*]] = linalg.copy ins(%[[NEG]] : tensor<?x3xf32>) outs(%[[DEST]] : tensor<?x3xf32>)
// CHECK: scf.yield %[[W1]]
// CHECK: } else {
// CHECK: %[[W2:.*]] = linalg.copy ins(%[[B]] : tensor<?x3xf32>) outs(%[[DEST]] : tensor<?x3xf32>)
// CHECK: scf.yield %[[W2]]
// CHECK: }
// CHECK: return %[[R]]
func.func @cond(%c: tensor<i1>, %a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %r = est.if %c : tensor<i1> -> (tensor<?x3xf32>) {
    %n = est.neg %a : tensor<?x3xf32>
    est.yield %n : tensor<?x3xf32>
  } else {
    est.yield %b : tensor<?x3xf32>
  }
  return %r : tensor<?x3xf32>
}

// -----

// est.while: two slots per carried value (ping-pong) made before the loop,
// the init in slot 0, and an iteration counter carried as an index.
// Iteration i reads slot i % 2 (in the condition and the body) and writes
// slot (i + 1) % 2; the results are slot count % 2. maximum_iterations
// ends the loop once the counter reaches it, whatever the condition says.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[I0:.*]]: tensor<i32>, %[[X0:.*]]: tensor<?x2xf32>, %[[N:.*]]: tensor<i32>, %[[ONE:.*]]: tensor<i32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[S0:.*]] = bufferization.alloc_tensor() : tensor<2xi32>
// CHECK: %[[I0S:.*]] = tensor.insert_slice %[[I0]] into %[[S0]][%[[C0]]] [1] [1] : tensor<i32> into tensor<2xi32>
// CHECK: %[[S1:.*]] = bufferization.alloc_tensor(%{{.*}}) : tensor<2x?x2xf32>
// CHECK: %[[X0S:.*]] = tensor.insert_slice %[[X0]] into %[[S1]][%[[C0]], 0, 0]
// CHECK: %[[LOOP:.*]]:3 = scf.while (%[[A0:.*]] = %[[I0S]], %[[A1:.*]] = %[[X0S]], %[[K:.*]] = %[[C0]]) : (tensor<2xi32>, tensor<2x?x2xf32>, index) -> (tensor<2xi32>, tensor<2x?x2xf32>, index) {
// CHECK: %[[SLOT:.*]] = arith.remui %[[K]], %[[C2]] : index
// CHECK: %[[CI:.*]] = tensor.extract_slice %[[A0]][%[[SLOT]]] [1] [1] : tensor<2xi32> to tensor<i32>
// CHECK: %[[LT:.*]] = linalg.generic {{.*}} ins(%[[CI]], %[[N]] :
// CHECK: arith.cmpi slt
// CHECK: %[[GO:.*]] = tensor.extract %[[LT]][] : tensor<i1>
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: %[[BELOW:.*]] = arith.cmpi slt, %[[K]], %[[C7]] : index
// CHECK: %[[BOTH:.*]] = arith.andi %[[GO]], %[[BELOW]] : i1
// CHECK: scf.condition(%[[BOTH]]) %[[A0]], %[[A1]], %[[K]]
// CHECK: } do {
// CHECK: ^bb0(%[[B0:.*]]: tensor<2xi32>, %[[B1:.*]]: tensor<2x?x2xf32>, %[[BK:.*]]: index):
// CHECK: %[[BSLOT:.*]] = arith.remui %[[BK]], %[[C2]] : index
// CHECK: %[[BI:.*]] = tensor.extract_slice %[[B0]][%[[BSLOT]]] [1] [1]
// CHECK: %[[BX:.*]] = tensor.extract_slice %[[B1]][%[[BSLOT]], 0, 0]
// CHECK: %[[J:.*]] = linalg.generic {{.*}} ins(%[[BI]], %[[ONE]] :
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[BX]] :
// CHECK: math.sin
// CHECK: %[[NK:.*]] = arith.addi %[[BK]], %[[C1]] : index
// CHECK: %[[NSLOT:.*]] = arith.remui %[[NK]], %[[C2]] : index
// CHECK: %[[W0:.*]] = tensor.insert_slice %[[J]] into %[[B0]][%[[NSLOT]]] [1] [1]
// CHECK: %[[W1:.*]] = tensor.insert_slice %[[Y]] into %[[B1]][%[[NSLOT]], 0, 0]
// CHECK: scf.yield %[[W0]], %[[W1]], %[[NK]] : tensor<2xi32>, tensor<2x?x2xf32>, index
// CHECK: }
// CHECK: %[[LAST:.*]] = arith.remui %[[LOOP]]#2, %[[C2]] : index
// CHECK: %[[RI:.*]] = tensor.extract_slice %[[LOOP]]#0[%[[LAST]]] [1] [1]
// CHECK: %[[RX:.*]] = tensor.extract_slice %[[LOOP]]#1[%[[LAST]], 0, 0]
// CHECK: return %[[RI]], %[[RX]] : tensor<i32>, tensor<?x2xf32>
func.func @loop(%i0: tensor<i32>, %x0: tensor<?x2xf32>, %n: tensor<i32>, %one: tensor<i32>) -> (tensor<i32>, tensor<?x2xf32>) {
  %i, %x = est.while inits(%i0, %x0 : tensor<i32>, tensor<?x2xf32>) {maximum_iterations = 7 : i64} -> (tensor<i32>, tensor<?x2xf32>) cond {
  ^bb0(%ci: tensor<i32>, %cx: tensor<?x2xf32>):
    %c = est.less %ci, %n : tensor<i32>, tensor<i32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%bi: tensor<i32>, %bx: tensor<?x2xf32>):
    %j = est.add %bi, %one : tensor<i32>, tensor<i32> -> tensor<i32>
    %y = est.sin %bx : tensor<?x2xf32>
    est.yield %j, %y : tensor<i32>, tensor<?x2xf32>
  }
  return %i, %x : tensor<i32>, tensor<?x2xf32>
}

// -----

// Without maximum_iterations the condition alone ends the loop.
// CHECK-LABEL: func.func @unbounded
// CHECK: scf.while
// CHECK: %[[GO:.*]] = tensor.extract %{{.*}}[] : tensor<i1>
// CHECK-NOT: arith.andi
// CHECK: scf.condition(%[[GO]])
func.func @unbounded(%x0: tensor<f32>, %lim: tensor<f32>) -> tensor<f32> {
  %x = est.while inits(%x0 : tensor<f32>) -> (tensor<f32>) cond {
  ^bb0(%v: tensor<f32>):
    %c = est.less %v, %lim : tensor<f32>, tensor<f32> -> tensor<i1>
    est.yield %c : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    %y = est.add %v, %v : tensor<f32>, tensor<f32> -> tensor<f32>
    est.yield %y : tensor<f32>
  }
  return %x : tensor<f32>
}
