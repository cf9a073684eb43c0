// RUN: estc-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<?x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'est.add' op shapes [?,3] and [4] cannot be broadcast (dimension 1: 3 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.add %a, %b : tensor<?x3xf32>, tensor<4xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @mixed_element_types(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{'est.add' op requires the same element type for all operands and results}}
  %0 = est.add %a, %b : tensor<3xf32>, tensor<3xi32> -> tensor<3xf32>
  return
}

// -----

func.func @declared_more_static_than_inferred(%a: tensor<?x3xf32>) {
  // expected-error @+2 {{'est.relu' op inferred type(s) 'tensor<?x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "est.relu"(%a) : (tensor<?x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @matmul_inner_dim(%a: tensor<?x784xf32>, %b: tensor<256x10xf32>) {
  // expected-error @+2 {{'est.matmul' op matmul inner dimensions differ: [?,784] x [256,10] (784 vs 256)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.matmul %a, %b : tensor<?x784xf32>, tensor<256x10xf32> -> tensor<?x10xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<?x28x28x3xf32>, %w: tensor<5x5x1x32xf32>) {
  // expected-error @+2 {{'est.conv2d' op conv2d input channels 3 do not match filter input channels 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.conv2d %x, %w {padding = "SAME"} : tensor<?x28x28x3xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x32xf32>
  return
}

// -----

func.func @bad_padding(%x: tensor<?x28x28x1xf32>, %w: tensor<5x5x1x32xf32>) {
  // expected-error @+2 {{'est.conv2d' op padding must be "SAME" or "VALID", got "FULL"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.conv2d %x, %w {padding = "FULL"} : tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x32xf32>
  return
}

// -----

func.func @missing_padding(%x: tensor<?x28x28x1xf32>, %w: tensor<5x5x1x32xf32>) {
  // expected-error @+1 {{'est.conv2d' op requires attribute 'padding'}}
  %0 = "est.conv2d"(%x, %w) : (tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32>) -> tensor<?x28x28x32xf32>
  return
}

// -----

func.func @missing_ksize(%x: tensor<?x28x28x1xf32>) {
  // expected-error @+1 {{'est.max_pool' op requires attribute 'ksize'}}
  %0 = "est.max_pool"(%x) {padding = "SAME", strides = array<i64: 2, 2>} : (tensor<?x28x28x1xf32>) -> tensor<?x14x14x1xf32>
  return
}

// -----

func.func @missing_rate(%x: tensor<?x8xf32>, %step: tensor<i64>) {
  // expected-error @+1 {{'est.dropout' op requires attribute 'rate'}}
  %0 = "est.dropout"(%x, %step) {seed = 1 : i64} : (tensor<?x8xf32>, tensor<i64>) -> tensor<?x8xf32>
  return
}

// -----

func.func @wrong_operand_count(%a: tensor<3xf32>) {
  // expected-error @+1 {{'est.add' op expected 2 operands, but found 1}}
  %0 = "est.add"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @bad_perm(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'est.transpose' op [0,0] is not a permutation of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{'est.reshape' op cannot reshape [4,6] (24 elements) to [5,5] (25 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.reshape %x {shape = array<i64: 5, 5>} : tensor<4x6xf32> -> tensor<5x5xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{'est.reduce_sum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.reduce_sum %x {axes = array<i64: 2>} : tensor<4x6xf32> -> tensor<4xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'est.concat' op concat inputs differ outside axis 1: [2,3] and [4,5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{'est.slice' op slice [2, 6) is out of bounds for dimension 0 of [4,6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.slice %x {begin = array<i64: 2, 0>, size = array<i64: 4, -1>} : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @squeeze_non_unit(%x: tensor<4x6xf32>) {
  // expected-error @+2 {{'est.squeeze' op cannot squeeze dimension 1 of [4,6]: its size is not 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.squeeze %x {axes = array<i64: 1>} : tensor<4x6xf32> -> tensor<4xf32>
  return
}

// -----

func.func @int_exp(%x: tensor<4xi32>) {
  // expected-error @+1 {{'est.exp' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = est.exp %x : tensor<4xi32>
  return
}

// -----

func.func @compare_result_not_i1(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'est.less' op result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = est.less %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @select_cond_not_i1(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'est.select' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = est.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @float_sparse_labels(%logits: tensor<?x10xf32>, %labels: tensor<?xf32>) {
  // expected-error @+1 {{'est.sparse_softmax_cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = est.sparse_softmax_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @sparse_labels_shape(%logits: tensor<?x10xf32>, %labels: tensor<?x10xi64>) {
  // expected-error @+2 {{'est.sparse_softmax_cross_entropy' op labels [?,10] must have the shape of logits [?,10] without its last dimension}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.sparse_softmax_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?x10xi64> -> tensor<?xf32>
  return
}

// -----

func.func @float_gather_indices(%p: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'est.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = est.gather %p, %i : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @one_hot_depth(%i: tensor<3xi64>) {
  // expected-error @+2 {{'est.one_hot' op one_hot depth must be positive, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.one_hot %i {depth = 0 : i64} : tensor<3xi64> -> tensor<3x0xf32>
  return
}

// -----

func.func @cast_dtype_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'est.cast' op failed to verify that dtype is the result element type}}
  %0 = est.cast %x to i64 : tensor<4xf32> -> tensor<4xi32>
  return
}

// -----

func.func @dropout_rate(%x: tensor<?x8xf32>, %step: tensor<i64>) {
  // expected-error @+2 {{'est.dropout' op rate must be in [0, 1), got 1.5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.dropout %x, %step {rate = 1.5 : f64, seed = 1 : i64} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  return
}

// -----

func.func @dropout_counter(%x: tensor<?x8xf32>, %step: tensor<i32>) {
  // expected-error @+1 {{'est.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = est.dropout %x, %step {rate = 0.5 : f64, seed = 1 : i64} : tensor<?x8xf32>, tensor<i32> -> tensor<?x8xf32>
  return
}

// -----

func.func @random_int_dtype(%step: tensor<i64>) {
  // expected-error @+2 {{'est.random_uniform' op dtype must be a float type, got i32}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "est.random_uniform"(%step) {seed = 1 : i64, shape = array<i64: 2>, dtype = i32} : (tensor<i64>) -> tensor<2xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{'est.softmax' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.softmax %x {axis = 2 : i64} : tensor<4x10xf32>
  return
}

// -----

// expected-error @+1 {{'est.variable' op variable type must have a static shape, got 'tensor<?x10xf32>'}}
est.variable @w : tensor<?x10xf32>

// -----

// expected-error @+1 {{'est.variable' op a local variable must have the zeros initializer}}
est.variable @"accuracy/total" : tensor<f32> {initializer = #est.init<"ones">, local}

// -----

// expected-error @+1 {{'est.variable' op a local variable must have the zeros initializer}}
est.variable @"accuracy/total" : tensor<f32> {local}

// -----

// expected-error @+1 {{'est.variable' op a local variable cannot be trainable}}
est.variable @"accuracy/total" : tensor<f32> {initializer = #est.init<"zeros">, local, trainable}

// -----

func.func @unknown_variable() {
  // expected-error @+1 {{'est.read_variable' op references unknown variable @nope}}
  %0 = est.read_variable @nope : tensor<f32>
  return
}

// -----

func.func @not_a_variable() {
  // expected-error @+1 {{'est.read_variable' op references @not_a_variable, which is not an est.variable}}
  %0 = est.read_variable @not_a_variable : tensor<f32>
  return
}

// -----

est.variable @w : tensor<784x10xf32>
func.func @read_type_mismatch() {
  // expected-error @+1 {{'est.read_variable' op result type 'tensor<10x784xf32>' does not match the type 'tensor<784x10xf32>' of variable @w}}
  %0 = est.read_variable @w : tensor<10x784xf32>
  return
}

// -----

est.variable @total : tensor<f32>
func.func @assign_type_mismatch(%v: tensor<f64>) {
  // expected-error @+1 {{'est.assign_variable' op value type 'tensor<f64>' does not match the type 'tensor<f32>' of variable @total}}
  est.assign_variable @total, %v : tensor<f64>
  return
}

// -----

func.func @loss_not_scalar(%loss: tensor<4xf32>) {
  // expected-error @+1 {{'est.minimize' op operand #0 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  est.minimize %loss optimizer "sgd" {} : tensor<4xf32>
  return
}

// -----

func.func @unknown_optimizer(%loss: tensor<f32>) {
  // expected-error @+1 {{'est.minimize' op unknown optimizer "lion" (expected sgd, momentum, adagrad, adam, rmsprop, ftrl, adadelta, proximal_gradient_descent, proximal_adagrad, adagrad_da, adamw, adamax, nadam, lazy_adam, keras_sgd, keras_rmsprop, keras_adagrad or keras_adam)}}
  est.minimize %loss optimizer "lion" {} : tensor<f32>
  return
}

// -----

est.variable @step : tensor<i64>
func.func @train_int_variable(%loss: tensor<f32>) {
  // expected-error @+1 {{'est.minimize' op cannot train variable @step of non-float type 'tensor<i64>'}}
  est.minimize %loss optimizer "sgd" {} var_list [@step] : tensor<f32>
  return
}

// -----

func.func @minimize_unknown_variable(%loss: tensor<f32>) {
  // expected-error @+1 {{'est.minimize' op references unknown variable @nope}}
  est.minimize %loss optimizer "sgd" {} var_list [@nope] : tensor<f32>
  return
}

// -----

func.func @missing_hyperparameters(%loss: tensor<f32>) {
  // expected-error @+1 {{'est.minimize' op requires attribute 'hyperparameters'}}
  "est.minimize"(%loss) {optimizer = "sgd"} : (tensor<f32>) -> ()
  return
}

// -----

func.func @backprop_input_mismatch(%dy: tensor<?x13x14x32xf32>, %w: tensor<5x5x1x32xf32>) {
  // expected-error @+2 {{'est.conv2d_backprop_input' op conv2d_backprop_input grad_output [?,13,14,32] does not match the forward result [?,14,14,32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.conv2d_backprop_input %dy, %w {input_size = array<i64: 28, 28>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x13x14x32xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x1xf32>
  return
}

// -----

func.func @backprop_input_missing_size(%dy: tensor<?x14x14x32xf32>, %w: tensor<5x5x1x32xf32>) {
  // expected-error @+1 {{'est.conv2d_backprop_input' op requires attribute 'input_size'}}
  %0 = "est.conv2d_backprop_input"(%dy, %w) {padding = "SAME"} : (tensor<?x14x14x32xf32>, tensor<5x5x1x32xf32>) -> tensor<?x28x28x1xf32>
  return
}

// -----

func.func @backprop_filter_result(%x: tensor<?x28x28x1xf32>, %dy: tensor<?x24x24x32xf32>) {
  // expected-error @+2 {{'est.conv2d_backprop_filter' op inferred type(s) 'tensor<5x5x1x32xf32>' are incompatible with return type(s) of operation 'tensor<3x3x1x32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.conv2d_backprop_filter %x, %dy {filter_size = array<i64: 5, 5>, padding = "VALID"} : tensor<?x28x28x1xf32>, tensor<?x24x24x32xf32> -> tensor<3x3x1x32xf32>
  return
}

// -----

func.func @backprop_filter_bad_padding(%x: tensor<?x28x28x1xf32>, %dy: tensor<?x24x24x32xf32>) {
  // expected-error @+2 {{'est.conv2d_backprop_filter' op padding must be "SAME" or "VALID", got "FULL"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.conv2d_backprop_filter %x, %dy {filter_size = array<i64: 5, 5>, padding = "FULL"} : tensor<?x28x28x1xf32>, tensor<?x24x24x32xf32> -> tensor<5x5x1x32xf32>
  return
}

// -----

func.func @max_pool_grad_mismatch(%x: tensor<?x28x28x8xf32>, %dy: tensor<?x14x14x4xf32>) {
  // expected-error @+2 {{'est.max_pool_grad' op max_pool_grad grad_output [?,14,14,4] does not match the forward result [?,14,14,8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.max_pool_grad %x, %dy {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x28x28x8xf32>, tensor<?x14x14x4xf32> -> tensor<?x28x28x8xf32>
  return
}

// -----

func.func @avg_pool_grad_element_type(%dy: tensor<?x3x3x8xi32>) {
  // expected-error @+1 {{'est.avg_pool_grad' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<?x3x3x8xi32>'}}
  %0 = est.avg_pool_grad %dy {input_size = array<i64: 5, 5>, ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x8xi32> -> tensor<?x5x5x8xi32>
  return
}

// -----

func.func @avg_pool_grad_missing_input_size(%dy: tensor<?x3x3x8xf32>) {
  // expected-error @+1 {{'est.avg_pool_grad' op requires attribute 'input_size'}}
  %0 = "est.avg_pool_grad"(%dy) {ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : (tensor<?x3x3x8xf32>) -> tensor<?x5x5x8xf32>
  return
}

// -----

func.func @scatter_bad_updates(%r: tensor<10x4xf32>, %i: tensor<3xi64>, %u: tensor<3x5xf32>) {
  // expected-error @+2 {{'est.scatter' op updates [3,5] must have the shape indices + ref[1:] = [3,4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.scatter %r, %i, %u : tensor<10x4xf32>, tensor<3xi64>, tensor<3x5xf32> -> tensor<10x4xf32>
  return
}

// -----

func.func @scatter_bad_mode(%r: tensor<10x4xf32>, %i: tensor<3xi64>, %u: tensor<3x4xf32>) {
  // expected-error @+2 {{'est.scatter' op mode must be "add", "update", "min" or "max", got "mul"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.scatter %r, %i, %u {mode = "mul"} : tensor<10x4xf32>, tensor<3xi64>, tensor<3x4xf32> -> tensor<10x4xf32>
  return
}

// -----

func.func @segment_sum_bad_ids(%d: tensor<7x3xf32>, %i: tensor<6xi64>, %l: tensor<4xi64>) {
  // expected-error @+2 {{'est.unsorted_segment_sum' op segment_ids [6] must have one id per row of data [7,3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<7x3xf32>, tensor<6xi64>, tensor<4xi64> -> tensor<4x3xf32>
  return
}

// -----

func.func @segment_sum_ids_rank(%d: tensor<7x3xf32>, %i: tensor<7x1xi64>, %l: tensor<4xi64>) {
  // expected-error @+2 {{'est.unsorted_segment_sum' op segment_ids must have rank 1, got [7,1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<7x3xf32>, tensor<7x1xi64>, tensor<4xi64> -> tensor<4x3xf32>
  return
}

// -----

func.func @segment_sum_scalar_like(%d: tensor<7x3xf32>, %i: tensor<7xi64>, %l: tensor<i64>) {
  // expected-error @+2 {{'est.unsorted_segment_sum' op num_segments_like must have rank >= 1, got a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<7x3xf32>, tensor<7xi64>, tensor<i64> -> tensor<4x3xf32>
  return
}

// -----

func.func @segment_sum_rows_from_data(%d: tensor<7x3xf32>, %i: tensor<7xi64>, %l: tensor<4xi64>) {
  // The number of segments is the third operand's dim 0, not data's.
  // expected-error @+2 {{'est.unsorted_segment_sum' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<7x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = est.unsorted_segment_sum %d, %i, %l : tensor<7x3xf32>, tensor<7xi64>, tensor<4xi64> -> tensor<7x3xf32>
  return
}

// -----

func.func @bucketize_unsorted(%x: tensor<?xf32>) {
  // expected-error @+1 {{'est.bucketize' op boundaries must be sorted ascending, but boundary 2 (1.000000e+00) < boundary 1 (2.000000e+00)}}
  %0 = est.bucketize %x {boundaries = array<f64: 0.0, 2.0, 1.0>} : tensor<?xf32> -> tensor<?xi64>
  return
}

// -----

func.func @bucketize_nan(%x: tensor<?xf32>) {
  // expected-error @+1 {{'est.bucketize' op boundary 1 is NaN}}
  %0 = est.bucketize %x {boundaries = array<f64: 0.0, 0x7FF8000000000000>} : tensor<?xf32> -> tensor<?xi64>
  return
}

// -----

func.func @bucketize_bool(%x: tensor<?xi1>) {
  // expected-error @+1 {{'est.bucketize' op operand #0 must be ranked tensor of}}
  %0 = est.bucketize %x {boundaries = array<f64: 0.0>} : tensor<?xi1> -> tensor<?xi64>
  return
}

// -----

est.variable @emb : tensor<10x4xf32> {trainable}

func.func @sparse_counts(%i: tensor<3xi64>, %u: tensor<3x4xf32>) {
  // expected-error @+1 {{'est.apply_gradients' op 2 sparse variables but 1 indices and 1 values}}
  est.apply_gradients "sgd" {} [] sparse [@emb, @emb] indices(%i : tensor<3xi64>) values(%u : tensor<3x4xf32>)
  return
}

// -----

func.func @sequence_mask_without_maxlen(%len: tensor<?xi32>) -> tensor<?x?xi1> {
  // expected-error @+2 {{needs maxlen_like or a maxlen >= 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %m = est.sequence_mask %len : tensor<?xi32> -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}

// -----

func.func @reverse_sequence_same_axes(%x: tensor<4x5xf32>, %len: tensor<4xi64>) -> tensor<4x5xf32> {
  // expected-error @+2 {{seq_axis and batch_axis must be distinct axes}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.reverse_sequence %x, %len {seq_axis = 0 : i64, batch_axis = 0 : i64} : tensor<4x5xf32>, tensor<4xi64> -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

func.func @reverse_sequence_batch_mismatch(%x: tensor<4x5xf32>, %len: tensor<3xi64>) -> tensor<4x5xf32> {
  // expected-error @+2 {{lengths has 3 entries for a batch of 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.reverse_sequence %x, %len {seq_axis = 1 : i64} : tensor<4x5xf32>, tensor<3xi64> -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

func.func @erf_of_integers(%i: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'est.erf' op operand #0 must be}}
  %r = est.erf %i : tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @sign_of_bools(%c: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'est.sign' op operand #0 must be}}
  %r = est.sign %c : tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

func.func @cumsum_axis_out_of_range(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+2 {{'est.cumsum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.cumsum %x {axis = 2 : i64} : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

func.func @layer_norm_gamma_shape(%x: tensor<?x16xf32>, %g: tensor<8xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{gamma [8] must have the shape [16] of x's dims from 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.layer_norm %x, %g, %g : tensor<?x16xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @cumprod_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+2 {{'est.cumprod' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.cumprod %x : tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @layer_norm_params_before_norm(%x: tensor<?x6x16xf32>, %g: tensor<6x16xf32>) -> tensor<?x6x16xf32> {
  // expected-error @+2 {{begin_params_axis 1 must not come before begin_norm_axis 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.layer_norm %x, %g, %g {begin_norm_axis = 2 : i64, begin_params_axis = 1 : i64} : tensor<?x6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32> -> tensor<?x6x16xf32>
  return %y : tensor<?x6x16xf32>
}

// -----

func.func @cumsum_result_shape(%x: tensor<4x5xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{'est.cumsum' op inferred type(s) 'tensor<4x5xf32>' are incompatible with return type(s) of operation 'tensor<4x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.cumsum %x {axis = 1 : i64} : tensor<4x5xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<?x16xf32>, %g: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{epsilon must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = est.layer_norm %x, %g, %g {epsilon = -1.0 : f64} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @layer_norm_grad_dy_shape(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %dy: tensor<5x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+2 {{dy [5,16] must have the shape of x [4,16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %r:3 = est.layer_norm_grad %x, %g, %dy : tensor<4x16xf32>, tensor<16xf32>, tensor<5x16xf32> -> tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %r#0 : tensor<4x16xf32>
}

// -----

func.func @attention_softmax_grad_dy_shape(%y: tensor<2x4x8x8xf32>, %dy: tensor<2x4x8x7xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+2 {{'est.attention_softmax_grad' op dy [2,4,8,7] must have the shape of y [2,4,8,8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.attention_softmax_grad %y, %dy : tensor<2x4x8x8xf32>, tensor<2x4x8x7xf32> -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}

// -----

func.func @sigmoid_cross_entropy_labels_shape(%logits: tensor<?x10xf32>, %labels: tensor<?x9xf32>) -> tensor<?x10xf32> {
  // expected-error @+2 {{'est.sigmoid_cross_entropy' op labels [?,9] must have the shape of logits [?,10]}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = est.sigmoid_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?x9xf32> -> tensor<?x10xf32>
  return %r : tensor<?x10xf32>
}

// -----

func.func @attention_softmax_mask_shape(%l: tensor<2x4x8x8xf32>, %m: tensor<2x8x8xi1>) -> tensor<2x4x8x8xf32> {
  // expected-error @+2 {{mask [2,8,8] must have the rank of logits [2,4,8,8] and each dim 1 or logits'}}
  // expected-error @+1 {{failed to infer returned types}}
  %p = est.attention_softmax %l, %m : tensor<2x4x8x8xf32>, tensor<2x8x8xi1> -> tensor<2x4x8x8xf32>
  return %p : tensor<2x4x8x8xf32>
}

// -----

func.func @attention_softmax_mask_type(%l: tensor<8x8xf32>, %m: tensor<8x8xi32>) -> tensor<8x8xf32> {
  // expected-error @+2 {{mask must be a bool tensor or a float tensor of the logits' element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %p = est.attention_softmax %l, %m : tensor<8x8xf32>, tensor<8x8xi32> -> tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}

// -----

func.func @attention_softmax_rank(%l: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{logits must have rank >= 2 ([..., T, S]), got [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %p = est.attention_softmax %l : tensor<8xf32> -> tensor<8xf32>
  return %p : tensor<8xf32>
}
