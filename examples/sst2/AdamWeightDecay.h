//===- AdamWeightDecay.h - BERT's optimizer, written with estc's API ----===//
//
// google-research/bert's optimization.py (AdamWeightDecayOptimizer and
// create_optimizer) line for line with the graph builder: gradients(),
// clip_by_global_norm, polynomial decay with a linear warmup, the m and v
// slots as variables, their updates as assignments grouped into the
// train_op, and global_step incremented by the train_op itself. Adam
// without bias correction, and the weight decay added to the update
// (decoupled from the gradient's moments) except for the variables whose
// name matches one of exclude_from_weight_decay.
//
// examples/sst2/Bert.cpp trains the BERT-style encoder with it;
// test/data/optimizer_tool.cpp trains a small model with it and
// test/e2e/tf_optimizer_compat.py compares that with TF 2.15 running
// BERT's Python code (tf.compat.v1) on the same model; docs/user-guide.md
// ("Writing an optimizer") prints the same code.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_SST2_ADAMWEIGHTDECAY_H
#define ESTC_EXAMPLES_SST2_ADAMWEIGHTDECAY_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <regex>
#include <string>
#include <vector>

namespace estc {
namespace bert {

/// A basic Adam optimizer that includes "correct" L2 weight decay.
class AdamWeightDecayOptimizer {
public:
  AdamWeightDecayOptimizer(
      Tensor learning_rate, double weight_decay_rate = 0.0, double beta_1 = 0.9,
      double beta_2 = 0.999, double epsilon = 1e-6,
      std::vector<std::string> exclude_from_weight_decay = {})
      : learning_rate(learning_rate), weight_decay_rate(weight_decay_rate),
        beta_1(beta_1), beta_2(beta_2), epsilon(epsilon),
        exclude_from_weight_decay(std::move(exclude_from_weight_decay)) {}

  Operation
  apply_gradients(const train::Optimizer::GradsAndVars &grads_and_vars,
                  const std::string &name = "") const {
    std::vector<Operation> assignments;
    for (const auto &[grad, param] : grads_and_vars) {
      Graph &g = param.graph();
      std::string param_name = param.name();
      Variable m =
          g.get_variable(param_name + "/adam_m", param.dtype(), param.shape(),
                         zeros_initializer(), /*trainable=*/false);
      Variable v =
          g.get_variable(param_name + "/adam_v", param.dtype(), param.shape(),
                         zeros_initializer(), /*trainable=*/false);
      // Standard Adam update.
      Tensor next_m = add(multiply(beta_1, m), multiply(1.0 - beta_1, grad));
      Tensor next_v =
          add(multiply(beta_2, v), multiply(1.0 - beta_2, square(grad)));
      Tensor update = divide(next_m, add(sqrt(next_v), epsilon));
      // Just adding the square of the weights to the loss function is *not*
      // the correct way of using L2 regularization/weight decay with Adam:
      // the decay is added to the update, where it does not interact with
      // the m and v parameters.
      if (do_use_weight_decay(param_name))
        update = add(update, multiply(weight_decay_rate, param));
      Tensor update_with_lr = multiply(learning_rate, update);
      Tensor next_param = subtract(param, update_with_lr);
      assignments.push_back(assign(param, next_param));
      assignments.push_back(assign(m, next_m));
      assignments.push_back(assign(v, next_v));
    }
    return group(assignments, name);
  }

private:
  /// Whether to use L2 weight decay for `param_name`.
  bool do_use_weight_decay(const std::string &param_name) const {
    if (weight_decay_rate == 0.0)
      return false;
    for (const std::string &r : exclude_from_weight_decay)
      if (std::regex_search(param_name, std::regex(r)))
        return false;
    return true;
  }

  Tensor learning_rate;
  double weight_decay_rate, beta_1, beta_2, epsilon;
  std::vector<std::string> exclude_from_weight_decay;
};

/// Creates an optimizer training op.
inline Operation create_optimizer(const Tensor &loss, double init_lr,
                                  int64_t num_train_steps,
                                  int64_t num_warmup_steps) {
  Graph &g = loss.graph();
  Variable global_step = train::get_or_create_global_step(g);
  // Implements linear decay of the learning rate.
  Tensor learning_rate = train::polynomial_decay(
      init_lr, global_step, static_cast<double>(num_train_steps),
      /*end_learning_rate=*/0.0, /*power=*/1.0, /*cycle=*/false);
  // Implements linear warmup: the learning rate is
  // global_step / num_warmup_steps * init_lr while global_step <
  // num_warmup_steps.
  if (num_warmup_steps) {
    Tensor global_steps_int = cast(global_step, DType::Int32);
    Tensor warmup_steps_int =
        g.constant(static_cast<double>(num_warmup_steps), DType::Int32);
    Tensor global_steps_float = cast(global_steps_int, DType::Float32);
    Tensor warmup_steps_float = cast(warmup_steps_int, DType::Float32);
    Tensor warmup_percent_done = divide(global_steps_float, warmup_steps_float);
    Tensor warmup_learning_rate = multiply(init_lr, warmup_percent_done);
    Tensor is_warmup =
        cast(less(global_steps_int, warmup_steps_int), DType::Float32);
    learning_rate = add(multiply(subtract(1.0, is_warmup), learning_rate),
                        multiply(is_warmup, warmup_learning_rate));
  }
  // It is recommended that you use this optimizer for fine tuning, since
  // this is how the model was trained (note that the Adam m/v variables are
  // NOT loaded from init_checkpoint).
  AdamWeightDecayOptimizer optimizer(learning_rate,
                                     /*weight_decay_rate=*/0.01,
                                     /*beta_1=*/0.9, /*beta_2=*/0.999,
                                     /*epsilon=*/1e-6,
                                     {"LayerNorm", "layer_norm", "bias"});
  std::vector<Variable> tvars = g.trainable_variables();
  std::vector<Tensor> grads = gradients({loss}, tvars);
  // This is how the model was pre-trained.
  grads = clip_by_global_norm(grads, /*clip_norm=*/1.0).list_clipped;
  train::Optimizer::GradsAndVars grads_and_vars;
  for (size_t i = 0; i < tvars.size(); ++i)
    grads_and_vars.push_back({grads[i], tvars[i]});
  Operation train_op = optimizer.apply_gradients(grads_and_vars);
  // Normally the global step update is done inside of `apply_gradients`.
  // However, `AdamWeightDecayOptimizer` doesn't do this. But if you use
  // a different optimizer, you should probably take this line out.
  Tensor new_global_step = add(global_step, 1.0);
  return group({train_op, assign(global_step, new_global_step)});
}

} // namespace bert
} // namespace estc

#endif // ESTC_EXAMPLES_SST2_ADAMWEIGHTDECAY_H
