// RUN: estc-opt %s -split-input-file -verify-diagnostics

// The verifiers of est.scan, est.if and est.while
// (dialects/Est/IR/EstOps.cpp, docs/design/control-flow.md).

// A scan's steps are dimension 0 of its sequences: it needs one (the
// custom syntax cannot even spell an empty `over`).
func.func @scan_no_sequences(%h0: tensor<4xf32>) {
  // expected-error @+1 {{'est.scan' op needs at least one sequence (its dimension 0 is the number of steps)}}
  %h = "est.scan"(%h0) <{operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%h: tensor<4xf32>):
    est.yield %h : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scan_scalar_sequence(%xs: tensor<f32>) {
  // expected-error @+1 {{'est.scan' op sequence #0 is a scalar; a sequence has its steps in dimension 0}}
  %r = est.scan over(%xs : tensor<f32>) -> (tensor<?xf32>) {
  ^bb0(%x: tensor<f32>):
    est.yield %x : tensor<f32>
  }
  return
}

// -----

func.func @scan_lengths_differ(%a: tensor<5x3xf32>, %b: tensor<?x2xf32>, %c: tensor<6x2xf32>) {
  // expected-error @+1 {{'est.scan' op sequences have 5 and 6 steps; all need the same}}
  %r = est.scan over(%a, %b, %c : tensor<5x3xf32>, tensor<?x2xf32>, tensor<6x2xf32>) -> (tensor<5x3xf32>) {
  ^bb0(%x: tensor<3xf32>, %y: tensor<2xf32>, %z: tensor<2xf32>):
    est.yield %x : tensor<3xf32>
  }
  return
}

// -----

func.func @scan_body_arguments(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op body has 1 arguments, expected 2 (the carried values, then one slice per sequence)}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @scan_carried_type(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op carried value #0 is 'tensor<4xf32>' but the body takes 'tensor<4xf64>'}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%h: tensor<4xf64>, %x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @scan_carried_static_mismatch(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op carried value #0 is 'tensor<4xf32>' but the body takes 'tensor<3xf32>'}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%h: tensor<3xf32>, %x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @scan_slice_type(%xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op the slice of sequence #0 is 'tensor<4xf32>' but the body takes 'tensor<?x4xf32>'}}
  %r = est.scan over(%xs : tensor<?x4xf32>) -> (tensor<?x?x4xf32>) {
  ^bb0(%x: tensor<?x4xf32>):
    est.yield %x : tensor<?x4xf32>
  }
  return
}

// -----

func.func @scan_yields_fewer_than_carried(%h0: tensor<4xf32>, %g0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op body yields 1 values but carries 2}}
  %h:2 = est.scan inits(%h0, %g0 : tensor<4xf32>, tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @scan_yield_type(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op body yields 'tensor<4xi32>' as value #0, expected 'tensor<4xf32>'}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %x: tensor<4xf32>):
    %i = est.cast %x to i32 : tensor<4xf32> -> tensor<4xi32>
    est.yield %i : tensor<4xi32>
  }
  return
}

// -----

func.func @scan_result_count(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op has 1 results but its body yields 2}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %x: tensor<4xf32>):
    est.yield %h, %x : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// A per-step output is stacked: [T] + its shape, T from the sequences.
func.func @scan_stacked_result_type(%xs: tensor<5x4xf32>) {
  // expected-error @+1 {{'est.scan' op result #0 is 'tensor<6x4xf32>', expected 'tensor<5x4xf32>'}}
  %r = est.scan over(%xs : tensor<5x4xf32>) -> (tensor<6x4xf32>) {
  ^bb0(%x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @scan_carried_result_type(%h0: tensor<4xf32>, %xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op result #0 is 'tensor<4xf64>', expected 'tensor<4xf32>'}}
  %h = est.scan inits(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32>) -> (tensor<4xf64>) {
  ^bb0(%h: tensor<4xf32>, %x: tensor<4xf32>):
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

est.variable @w : tensor<4xf32> {trainable}

// Variables are threaded through the step outside any loop: a body reads
// none and assigns none.
func.func @scan_reads_variable(%xs: tensor<?x4xf32>) {
  // expected-error @+1 {{'est.scan' op cannot contain est.read_variable: read variables before the loop and pass the values in}}
  %r = est.scan over(%xs : tensor<?x4xf32>) -> (tensor<?x4xf32>) {
  ^bb0(%x: tensor<4xf32>):
    %w = est.read_variable @w : tensor<4xf32>
    %y = est.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    est.yield %y : tensor<4xf32>
  }
  return
}

// -----

est.variable @w : tensor<4xf32> {trainable}

func.func @if_assigns_variable(%c: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'est.if' op cannot contain est.assign_variable: read variables before the loop and pass the values in}}
  %r = est.if %c : tensor<i1> -> (tensor<4xf32>) {
    est.yield %x : tensor<4xf32>
  } else {
    est.assign_variable @w, %x : tensor<4xf32>
    est.yield %x : tensor<4xf32>
  }
  return
}

// -----

est.variable @w : tensor<4xf32> {trainable}

// The condition of a while is a region too.
func.func @while_cond_reads_variable(%i0: tensor<4xf32>) {
  // expected-error @+1 {{'est.while' op cannot contain est.read_variable}}
  %r = est.while inits(%i0 : tensor<4xf32>) -> (tensor<4xf32>) cond {
  ^bb0(%i: tensor<4xf32>):
    %w = est.read_variable @w : tensor<4xf32>
    %s = est.reduce_sum %w : tensor<4xf32> -> tensor<f32>
    %z = est.constant dense<0.0> : tensor<f32>
    %t = est.less %s, %z : tensor<f32>, tensor<f32> -> tensor<i1>
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<4xf32>):
    est.yield %i : tensor<4xf32>
  }
  return
}

// -----

func.func @if_region_arguments(%c: tensor<i1>, %a: tensor<f32>) {
  // expected-error @+1 {{'est.if' op regions take no arguments}}
  %r = est.if %c : tensor<i1> -> (tensor<f32>) {
  ^bb0(%x: tensor<f32>):
    est.yield %x : tensor<f32>
  } else {
    est.yield %a : tensor<f32>
  }
  return
}

// -----

func.func @if_then_yield_count(%c: tensor<i1>, %a: tensor<f32>) {
  // expected-error @+1 {{'est.if' op then yields 2 values, expected 1}}
  %r = est.if %c : tensor<i1> -> (tensor<f32>) {
    est.yield %a, %a : tensor<f32>, tensor<f32>
  } else {
    est.yield %a : tensor<f32>
  }
  return
}

// -----

func.func @if_else_yield_type(%c: tensor<i1>, %a: tensor<f32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'est.if' op else yields 'tensor<2xf32>' as value #0, expected 'tensor<f32>'}}
  %r = est.if %c : tensor<i1> -> (tensor<f32>) {
    est.yield %a : tensor<f32>
  } else {
    est.yield %b : tensor<2xf32>
  }
  return
}

// -----

func.func @if_cond_not_scalar(%c: tensor<2xi1>, %a: tensor<f32>) {
  // expected-error @+1 {{'est.if' op operand #0 must be 0D tensor of 1-bit signless integer values}}
  %r = est.if %c : tensor<2xi1> -> (tensor<f32>) {
    est.yield %a : tensor<f32>
  } else {
    est.yield %a : tensor<f32>
  }
  return
}

// -----

func.func @while_cond_not_i1(%i0: tensor<i32>) {
  // expected-error @+1 {{'est.while' op cond yields 'tensor<i32>' as value #0, expected 'tensor<i1>'}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_cond_yields_two(%i0: tensor<i32>, %t: tensor<i1>) {
  // expected-error @+1 {{'est.while' op cond yields 2 values, expected 1}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %t, %t : tensor<i1>, tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_negative_maximum(%i0: tensor<i32>, %t: tensor<i1>) {
  // expected-error @+1 {{'est.while' op maximum_iterations must be >= 0, got -1}}
  %r = est.while inits(%i0 : tensor<i32>) {maximum_iterations = -1 : i64} -> (tensor<i32>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_result_types(%i0: tensor<i32>, %t: tensor<i1>) {
  // expected-error @+1 {{'est.while' op results must have the types of the carried values}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i64>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_body_arguments(%i0: tensor<i32>, %t: tensor<i1>) {
  // expected-error @+1 {{'est.while' op body has 2 arguments, expected 1}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %j: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_cond_argument_type(%i0: tensor<i32>, %t: tensor<i1>) {
  // expected-error @+1 {{'est.while' op cond takes 'tensor<f32>' for a carried 'tensor<i32>'}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
  ^bb0(%i: tensor<f32>):
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %i : tensor<i32>
  }
  return
}

// -----

func.func @while_body_yield_type(%i0: tensor<i32>, %t: tensor<i1>, %f: tensor<f32>) {
  // expected-error @+1 {{'est.while' op body yields 'tensor<f32>' as value #0, expected 'tensor<i32>'}}
  %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
  ^bb0(%i: tensor<i32>):
    est.yield %t : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    est.yield %f : tensor<f32>
  }
  return
}

// -----

// est.yield ends only the regions of the control-flow ops.
func.func @yield_outside() {
  // expected-error @+1 {{'est.yield' op expects parent op to be one of 'est.scan, est.if, est.while'}}
  est.yield
}
