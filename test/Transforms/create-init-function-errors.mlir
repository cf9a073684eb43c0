// RUN: estc-opt %s --split-input-file --est-create-init-function -verify-diagnostics -o /dev/null

// An initializer the pass cannot compute is one error naming the variable.

// expected-error @+1 {{variable 'w': initializer 'he_normal' is unknown}}
est.variable @w : tensor<2xf32> {initializer = #est.init<"he_normal", {seed = 1 : i64}>}

// -----

// expected-error @+1 {{variable 'w': initializer 'glorot_uniform' requires an integer parameter 'seed'}}
est.variable @w : tensor<2x2xf32> {initializer = #est.init<"glorot_uniform">}

// -----

// expected-error @+1 {{variable 'n': initializer 'random_normal' needs a float variable}}
est.variable @n : tensor<2xi32> {initializer = #est.init<"random_normal", {seed = 1 : i64}>}

// -----

// expected-error @+1 {{variable 'w': initializer 'variance_scaling' has mode 'fan_sum' (expected fan_in, fan_out or fan_avg)}}
est.variable @w : tensor<2x2xf32> {initializer = #est.init<"variance_scaling", {mode = "fan_sum", seed = 1 : i64}>}

// -----

// expected-error @+1 {{variable 'w': initializer 'variance_scaling' has distribution 'gamma'}}
est.variable @w : tensor<2x2xf32> {initializer = #est.init<"variance_scaling", {distribution = "gamma", seed = 1 : i64}>}

// -----

// expected-error @+1 {{variable 'w': initializer 'variance_scaling' needs scale > 0}}
est.variable @w : tensor<2x2xf32> {initializer = #est.init<"variance_scaling", {scale = 0.0 : f64, seed = 1 : i64}>}
