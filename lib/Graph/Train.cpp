//===- Train.cpp - Losses, optimizers and metrics -----------------------===//

#include "lib/Graph/Train.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace estc {

// --- Losses ------------------------------------------------------------------

namespace losses {
namespace {
Scope lossScope(const Tensor &t, const std::string &name, const char *base) {
  Graph &g = t.graph();
  return g.name_scope(name.empty() ? g.unique_layer_name(base) : name);
}

Tensor addLoss(const Tensor &loss) {
  loss.graph().add_to_collection("losses", loss);
  return loss;
}

/// Sum of `terms` (at least one) as one add chain.
Tensor sumOf(const std::vector<Tensor> &terms) {
  Tensor sum = terms.front();
  for (size_t i = 1; i < terms.size(); ++i)
    sum = add(sum, terms[i]);
  return sum;
}
} // namespace

Tensor sparse_softmax_cross_entropy(const Tensor &labels, const Tensor &logits,
                                    const std::string &name) {
  auto s = lossScope(logits, name, "sparse_softmax_cross_entropy_loss");
  return addLoss(
      reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits),
                  std::nullopt, false, "value"));
}

Tensor softmax_cross_entropy(const Tensor &onehot_labels, const Tensor &logits,
                             const std::string &name) {
  auto s = lossScope(logits, name, "softmax_cross_entropy_loss");
  Tensor labels = onehot_labels.dtype() == logits.dtype()
                      ? onehot_labels
                      : cast(onehot_labels, logits.dtype());
  return addLoss(
      reduce_mean(nn::softmax_cross_entropy_with_logits(labels, logits),
                  std::nullopt, false, "value"));
}

Tensor sigmoid_cross_entropy(const Tensor &multi_class_labels,
                             const Tensor &logits, const std::string &name) {
  auto s = lossScope(logits, name, "sigmoid_cross_entropy_loss");
  Tensor labels = multi_class_labels.dtype() == logits.dtype()
                      ? multi_class_labels
                      : cast(multi_class_labels, logits.dtype());
  return addLoss(
      reduce_mean(nn::sigmoid_cross_entropy_with_logits(labels, logits),
                  std::nullopt, false, "value"));
}

Tensor mean_squared_error(const Tensor &labels, const Tensor &predictions,
                          const std::string &name) {
  auto s = lossScope(predictions, name, "mean_squared_error");
  Tensor l = labels.dtype() == predictions.dtype()
                 ? labels
                 : cast(labels, predictions.dtype());
  return addLoss(reduce_mean(square(subtract(predictions, l)), std::nullopt,
                             false, "value"));
}

Tensor l2_loss(const Tensor &t, const std::string &name) {
  Graph &g = t.graph();
  if (!t.has_value() || !is_floating(t.dtype()))
    throw GraphError("l2_loss: input '" + t.name() + "' must be float, got " +
                     to_string(t.dtype()));
  auto s = g.name_scope(name.empty() ? g.unique_layer_name("L2Loss") : name);
  return multiply(reduce_sum(square(t)), g.constant(0.5, t.dtype()), "value");
}

namespace {
Regularizer scaled(const char *what, double scale,
                   std::function<Tensor(const Tensor &)> penalty) {
  if (!(scale >= 0.0) || !std::isfinite(scale))
    throw GraphError(std::string(what) +
                     ": scale must be a finite number >= 0, got " +
                     std::to_string(scale));
  return [scale, penalty](const Tensor &w) {
    Graph &g = w.graph();
    if (!w.has_value() || !is_floating(w.dtype()))
      throw GraphError("regularizer: weights '" + w.name() +
                       "' must be float, got " + to_string(w.dtype()));
    return multiply(penalty(w), g.constant(scale, w.dtype()));
  };
}
} // namespace

Regularizer l1_regularizer(double scale) {
  return scaled("l1_regularizer", scale,
                [](const Tensor &w) { return reduce_sum(abs(w)); });
}

Regularizer l2_regularizer(double scale) {
  return scaled("l2_regularizer", scale,
                [](const Tensor &w) { return l2_loss(w); });
}

Tensor add_regularization_loss(const Regularizer &regularizer,
                               const Tensor &weights) {
  Graph &g = weights.graph();
  Tensor penalty;
  {
    auto s = g.name_scope("Regularizer");
    penalty = regularizer(weights);
  }
  if (!penalty.valid() || !penalty.has_value() ||
      !is_floating(penalty.dtype()) || !penalty.shape().empty())
    throw GraphError("regularizer of '" + weights.name() +
                     "' must return a float scalar, got " +
                     (penalty.valid() && penalty.has_value()
                          ? to_string(penalty.dtype()) + " " +
                                shape::toString(penalty.shape())
                          : std::string("no value")));
  g.add_to_collection("regularization_losses", penalty);
  return penalty;
}

Tensor add_activity_regularization_loss(const Regularizer &regularizer,
                                        const Tensor &y) {
  if (y.rank() < 1)
    throw GraphError("activity regularizer of '" + y.name() +
                     "': the output has no batch dimension");
  Graph &g = y.graph();
  auto s = g.name_scope("activity");
  Dims begin(y.rank(), 0), size(y.rank(), 1);
  size[0] = -1;
  Tensor batch = reduce_sum(ones_like(slice(y, begin, size)));
  return add_regularization_loss(
      [&](const Tensor &t) { return divide(regularizer(t), batch); }, y);
}

Tensor get_regularization_loss(Graph &graph, const std::string &name) {
  std::vector<Tensor> terms = graph.get_collection("regularization_losses");
  if (terms.empty())
    return graph.constant(0.0, DType::Float32, name);
  Tensor sum = sumOf(terms);
  return add(sum, graph.constant(0.0, sum.dtype()), name);
}

Tensor get_total_loss(Graph &graph, bool add_regularization_losses,
                      const std::string &name) {
  std::vector<Tensor> terms = graph.get_collection("losses");
  if (add_regularization_losses)
    for (const Tensor &t : graph.get_collection("regularization_losses"))
      terms.push_back(t);
  if (terms.empty())
    throw GraphError("get_total_loss: no losses in this mode (the losses:: "
                     "functions and layer regularizers add them)");
  Tensor sum = sumOf(terms);
  return add(sum, graph.constant(0.0, sum.dtype()), name);
}
} // namespace losses

// --- Optimizers --------------------------------------------------------------

namespace train {

namespace {
graph::AttrValue hyperparameterDict(
    const std::map<std::string, graph::AttrValue> &hyperparameters) {
  graph::AttrValue hp;
  hp.mutable_dict(); // present even when empty
  for (const auto &kv : hyperparameters)
    (*hp.mutable_dict()->mutable_entry())[kv.first] = kv.second;
  return hp;
}

/// Checks the learning-rate Tensor `lr` of a node of `g` (`where`).
void checkLearningRate(const std::string &where, const Tensor &lr, Graph &g) {
  if (&lr.graph() != &g)
    throw GraphError(where + ": the learning rate '" + lr.name() +
                     "' belongs to another graph");
  if (!lr.has_value() || !lr.shape().empty() || !is_floating(lr.dtype()))
    throw GraphError(where + ": the learning rate '" + lr.name() +
                     "' must be a float scalar, got " +
                     (lr.has_value() ? to_string(lr.dtype()) + " " +
                                           shape::toString(lr.shape())
                                     : std::string("no value")));
}
} // namespace

namespace {
/// The graph collection that holds a variable's constrained value.
std::string constraintKey(const std::string &variable) {
  return "estc_variable_constraint/" + variable;
}

/// The update that assigns the constraints of `vars` (those that have one
/// in this mode) after the optimizer's `update` (ExpandOptimizers'
/// "constraint"), grouped with it; `update` itself when none has one.
Operation withConstraints(Graph &g, const Operation &update,
                          const std::vector<Variable> &vars,
                          const std::string &node) {
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  for (const Variable &v : vars) {
    std::vector<Tensor> c = g.get_collection(constraintKey(v.name()));
    if (c.empty())
      continue;
    inputs.push_back(c.front());
    names.push_back(v.name());
  }
  if (inputs.empty())
    return update;
  Operation constrain = g.add_node(g.unique_node_name(node + "/constraints"),
                                   "apply_gradients", inputs,
                                   {{"optimizer", attr_s("constraint")},
                                    {"hyperparameters", hyperparameterDict({})},
                                    {"variables", attr_strings(names)},
                                    {"keep_global_step", attr_b(true)}},
                                   DType::Invalid, {});
  return group({update, constrain});
}
} // namespace

void set_variable_constraint(
    const Variable &variable,
    const std::function<Tensor(const Tensor &)> &constraint) {
  if (!variable.valid())
    throw GraphError("set_variable_constraint: the variable is empty");
  Graph &g = variable.graph();
  std::string key = constraintKey(variable.name());
  if (!constraint || !g.get_collection(key).empty())
    return;
  Tensor value;
  {
    auto root = g.root_name_scope();
    auto scope = g.name_scope(variable.name() + "/constraint");
    value = constraint(g.read_variable(variable));
  }
  if (!value.valid() || !value.has_value() ||
      value.dtype() != variable.dtype() || value.shape() != variable.shape())
    throw GraphError(
        "set_variable_constraint: the constraint of variable '" +
        variable.name() + "' " + to_string(variable.dtype()) + " " +
        shape::toString(variable.shape()) + " gives " +
        (value.valid() && value.has_value()
             ? to_string(value.dtype()) + " " + shape::toString(value.shape())
             : std::string("no value")) +
        "; it must keep the variable's dtype and shape");
  g.add_to_collection(key, value);
}

Operation Optimizer::minimize(const Tensor &loss,
                              const std::vector<Variable> &var_list,
                              const std::string &name) const {
  Graph &g = loss.graph();
  std::string node = g.unique_node_name(name.empty() ? nodeName_ : name);
  std::string where = "minimize '" + node + "': input '" + loss.name() + "' " +
                      (loss.has_value() ? shape::toString(loss.shape())
                                        : std::string("(no value)"));
  if (!loss.has_value() || !loss.shape().empty() || !is_floating(loss.dtype()))
    throw GraphError(where + ": the loss must be a float scalar, got " +
                     to_string(loss.dtype()) + " " +
                     shape::toString(loss.shape()));
  if (g.trainable_variables().empty() && var_list.empty())
    throw GraphError(where + ": there are no trainable variables");
  Attrs attrs = {{"optimizer", attr_s(kind_)},
                 {"hyperparameters", hyperparameterDict(hyperparameters_)}};
  std::vector<Tensor> inputs = {loss};
  if (Tensor lr = learningRateInput(g, where); lr.valid())
    inputs.push_back(lr);
  if (!var_list.empty()) {
    std::vector<std::string> names;
    for (const Variable &v : var_list) {
      if (&v.graph() != &g || !v.trainable())
        throw GraphError(where + ": var_list entry '" + v.name() +
                         "' is not a trainable variable of this graph");
      names.push_back(v.name());
    }
    attrs.push_back({"var_list", attr_strings(names)});
  }
  Operation update =
      g.add_node(node, "minimize", inputs, attrs, DType::Invalid, {});
  return withConstraints(
      g, update, var_list.empty() ? g.trainable_variables() : var_list, node);
}

Tensor Optimizer::learningRateInput(Graph &g, const std::string &where) const {
  Tensor lr = learningRate_;
  if (!lr.valid() && schedule_) {
    lr = schedule_(g.global_step());
    if (!lr.valid())
      throw GraphError(where + ": the learning-rate schedule returned an "
                               "empty Tensor");
  }
  if (lr.valid())
    checkLearningRate(where, lr, g);
  return lr;
}

Optimizer::GradsAndVars
Optimizer::compute_gradients(const Tensor &loss,
                             const std::vector<Variable> &var_list) const {
  if (!loss.valid())
    throw GraphError("compute_gradients: the loss is an empty Tensor");
  Graph &g = loss.graph();
  if (!loss.has_value() || !loss.shape().empty() || !is_floating(loss.dtype()))
    throw GraphError("compute_gradients: the loss '" + loss.name() +
                     "' must be a float scalar, got " +
                     (loss.has_value() ? to_string(loss.dtype()) + " " +
                                             shape::toString(loss.shape())
                                       : std::string("no value")));
  std::vector<Variable> vars =
      var_list.empty() ? g.trainable_variables() : var_list;
  if (vars.empty())
    throw GraphError("compute_gradients: the loss '" + loss.name() +
                     "': there are no trainable variables");
  std::vector<Tensor> grads = gradients({loss}, vars);
  GradsAndVars out;
  for (size_t i = 0; i < vars.size(); ++i)
    out.push_back({grads[i], vars[i]});
  return out;
}

Operation Optimizer::apply_gradients(const GradsAndVars &grads_and_vars,
                                     const Variable &global_step,
                                     const std::string &name) const {
  if (grads_and_vars.empty())
    throw GraphError("apply_gradients: grads_and_vars is empty");
  // The graph of the gradients (the model's), else of the first variable.
  const auto &[firstGrad, firstVar] = grads_and_vars.front();
  if (!firstGrad.valid() && !firstVar.valid())
    throw GraphError("apply_gradients: the first gradient and variable are "
                     "empty");
  Graph &g = firstGrad.valid() ? firstGrad.graph() : firstVar.graph();
  std::string node = g.unique_node_name(name.empty() ? nodeName_ : name);
  std::string where = "apply_gradients '" + node + "'";
  if (g.in_function())
    throw GraphError(where + ": cannot be inside a loop body or branch");
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  for (size_t i = 0; i < grads_and_vars.size(); ++i) {
    const auto &[grad, var] = grads_and_vars[i];
    if (!var.valid())
      throw GraphError(where + ": variable " + std::to_string(i) +
                       " is an empty Variable");
    if (&var.graph() != &g || !g.find_variable(var.name()))
      throw GraphError(where + ": unknown variable '" + var.name() +
                       "' (not a variable of this graph)");
    if (!is_floating(var.dtype()))
      throw GraphError(where + ": variable '" + var.name() + "' of type " +
                       to_string(var.dtype()) + " cannot be trained");
    if (std::find(names.begin(), names.end(), var.name()) != names.end())
      throw GraphError(where + ": variable '" + var.name() +
                       "' has two gradients");
    if (!grad.valid() || &grad.graph() != &g)
      throw GraphError(where + ": the gradient of variable '" + var.name() +
                       "' is " +
                       (grad.valid() ? "'" + grad.name() + "' of another graph"
                                     : std::string("an empty Tensor")));
    Dims vs = var.shape(), gs = grad.has_value() ? grad.shape() : Dims{};
    bool fits = grad.has_value() && grad.dtype() == var.dtype() &&
                gs.size() == vs.size();
    for (size_t d = 0; fits && d < vs.size(); ++d)
      fits = gs[d] == vs[d] || gs[d] == -1;
    if (!fits)
      throw GraphError(where + ": the gradient '" + grad.name() + "' " +
                       (grad.has_value() ? to_string(grad.dtype()) + " " +
                                               shape::toString(gs)
                                         : std::string("(no value)")) +
                       " does not match variable '" + var.name() + "' " +
                       to_string(var.dtype()) + " " + shape::toString(vs));
    inputs.push_back(grad);
    names.push_back(var.name());
  }
  if (global_step.valid() &&
      (&global_step.graph() != &g || global_step.name() != "global_step"))
    throw GraphError(where + ": global_step '" + global_step.name() +
                     "' must be the graph's global_step variable "
                     "(train::get_or_create_global_step)");
  if (Tensor lr = learningRateInput(g, where); lr.valid())
    inputs.push_back(lr);
  Attrs attrs = {{"optimizer", attr_s(kind_)},
                 {"hyperparameters", hyperparameterDict(hyperparameters_)},
                 {"variables", attr_strings(names)}};
  if (!global_step.valid())
    attrs.push_back({"keep_global_step", attr_b(true)});
  else
    (void)g.global_step_variable(); // incremented: it must exist
  Operation update =
      g.add_node(node, "apply_gradients", inputs, attrs, DType::Invalid, {});
  std::vector<Variable> vars;
  for (const auto &[grad, var] : grads_and_vars)
    vars.push_back(var);
  return withConstraints(g, update, vars, node);
}

Optimizer::Optimizer(std::string kind, std::string node_name,
                     std::map<std::string, graph::AttrValue> hyperparameters,
                     const LearningRate &learning_rate)
    : Optimizer(std::move(kind), std::move(node_name),
                std::move(hyperparameters)) {
  if (learning_rate.is_tensor())
    learningRate_ = learning_rate.tensor();
  else if (learning_rate.is_schedule())
    schedule_ = learning_rate.schedule();
  else
    hyperparameters_["learning_rate"] = attr_f(learning_rate.value());
}

Optimizer Optimizer::clip_gradients_by_global_norm(double clip_norm) const {
  if (!(clip_norm > 0.0) || !std::isfinite(clip_norm))
    throw GraphError("clip_gradients_by_global_norm: clip_norm must be a "
                     "finite number > 0, got " +
                     std::to_string(clip_norm));
  Optimizer copy = *this;
  copy.hyperparameters_["clip_gradients_by_global_norm"] = attr_f(clip_norm);
  return copy;
}

Optimizer Optimizer::clip_gradients_by_norm(double clip_norm) const {
  if (!(clip_norm > 0.0) || !std::isfinite(clip_norm))
    throw GraphError("clip_gradients_by_norm: clip_norm must be a finite "
                     "number > 0, got " +
                     std::to_string(clip_norm));
  Optimizer copy = *this;
  copy.hyperparameters_["clip_gradients_by_norm"] = attr_f(clip_norm);
  return copy;
}

Optimizer Optimizer::clip_gradients_by_value(double clip_value) const {
  if (!(clip_value > 0.0) || !std::isfinite(clip_value))
    throw GraphError("clip_gradients_by_value: clip_value must be a finite "
                     "number > 0, got " +
                     std::to_string(clip_value));
  Optimizer copy = *this;
  copy.hyperparameters_["clip_gradients_by_value"] = attr_f(clip_value);
  return copy;
}

Optimizer Optimizer::with_keras_legacy_names(const std::string &scope,
                                             bool own_iterations) const {
  if (scope.empty())
    throw GraphError("with_keras_legacy_names: the scope is empty");
  Optimizer copy = *this;
  copy.hyperparameters_["slot_scope"] = attr_s(scope);
  if (own_iterations)
    copy.hyperparameters_["own_iterations"] = attr_b(true);
  return copy;
}

namespace {
std::map<std::string, graph::AttrValue>
hp(std::initializer_list<std::pair<const std::string, double>> values) {
  std::map<std::string, graph::AttrValue> out;
  for (const auto &kv : values)
    out[kv.first] = attr_f(kv.second);
  return out;
}
} // namespace

Optimizer GradientDescentOptimizer(LearningRate learning_rate) {
  return Optimizer("sgd", "GradientDescent", {}, learning_rate);
}

Optimizer MomentumOptimizer(LearningRate learning_rate, double momentum,
                            bool use_nesterov) {
  auto h = hp({{"momentum", momentum}});
  h["use_nesterov"] = attr_b(use_nesterov);
  return Optimizer("momentum", "Momentum", h, learning_rate);
}

Optimizer AdagradOptimizer(LearningRate learning_rate,
                           double initial_accumulator_value) {
  return Optimizer(
      "adagrad", "Adagrad",
      hp({{"initial_accumulator_value", initial_accumulator_value}}),
      learning_rate);
}

Optimizer AdamOptimizer(LearningRate learning_rate, double beta1, double beta2,
                        double epsilon) {
  return Optimizer(
      "adam", "Adam",
      hp({{"beta1", beta1}, {"beta2", beta2}, {"epsilon", epsilon}}),
      learning_rate);
}

Optimizer RMSPropOptimizer(LearningRate learning_rate, double decay,
                           double momentum, double epsilon, bool centered) {
  auto h = hp({{"decay", decay}, {"momentum", momentum}, {"epsilon", epsilon}});
  h["centered"] = attr_b(centered);
  return Optimizer("rmsprop", "RMSProp", h, learning_rate);
}

Optimizer FtrlOptimizer(LearningRate learning_rate, double learning_rate_power,
                        double initial_accumulator_value,
                        double l1_regularization_strength,
                        double l2_regularization_strength,
                        double l2_shrinkage_regularization_strength,
                        double beta) {
  auto h = hp({{"learning_rate_power", learning_rate_power},
               {"initial_accumulator_value", initial_accumulator_value},
               {"l1_regularization_strength", l1_regularization_strength},
               {"l2_regularization_strength", l2_regularization_strength}});
  if (l2_shrinkage_regularization_strength != 0.0)
    h["l2_shrinkage_regularization_strength"] =
        attr_f(l2_shrinkage_regularization_strength);
  if (beta != 0.0)
    h["beta"] = attr_f(beta);
  return Optimizer("ftrl", "Ftrl", h, learning_rate);
}

Optimizer AdadeltaOptimizer(LearningRate learning_rate, double rho,
                            double epsilon) {
  return Optimizer("adadelta", "Adadelta",
                   hp({{"rho", rho}, {"epsilon", epsilon}}), learning_rate);
}

Optimizer ProximalGradientDescentOptimizer(LearningRate learning_rate,
                                           double l1_regularization_strength,
                                           double l2_regularization_strength) {
  return Optimizer(
      "proximal_gradient_descent", "ProximalGradientDescent",
      hp({{"l1_regularization_strength", l1_regularization_strength},
          {"l2_regularization_strength", l2_regularization_strength}}),
      learning_rate);
}

Optimizer ProximalAdagradOptimizer(LearningRate learning_rate,
                                   double initial_accumulator_value,
                                   double l1_regularization_strength,
                                   double l2_regularization_strength) {
  return Optimizer(
      "proximal_adagrad", "ProximalAdagrad",
      hp({{"initial_accumulator_value", initial_accumulator_value},
          {"l1_regularization_strength", l1_regularization_strength},
          {"l2_regularization_strength", l2_regularization_strength}}),
      learning_rate);
}

Optimizer AdagradDAOptimizer(LearningRate learning_rate,
                             double initial_gradient_squared_accumulator_value,
                             double l1_regularization_strength,
                             double l2_regularization_strength) {
  return Optimizer(
      "adagrad_da", "AdagradDA",
      hp({{"initial_gradient_squared_accumulator_value",
           initial_gradient_squared_accumulator_value},
          {"l1_regularization_strength", l1_regularization_strength},
          {"l2_regularization_strength", l2_regularization_strength}}),
      learning_rate);
}

Optimizer
AdamWOptimizer(LearningRate learning_rate, double weight_decay, double beta_1,
               double beta_2, double epsilon,
               const std::vector<std::string> &exclude_from_weight_decay) {
  auto h = hp({{"weight_decay", weight_decay},
               {"beta_1", beta_1},
               {"beta_2", beta_2},
               {"epsilon", epsilon}});
  if (!exclude_from_weight_decay.empty())
    h["exclude_from_weight_decay"] = attr_strings(exclude_from_weight_decay);
  return Optimizer("adamw", "AdamW", h, learning_rate);
}

Optimizer AdamaxOptimizer(LearningRate learning_rate, double beta_1,
                          double beta_2, double epsilon) {
  return Optimizer(
      "adamax", "Adamax",
      hp({{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}}),
      learning_rate);
}

Optimizer NadamOptimizer(LearningRate learning_rate, double beta_1,
                         double beta_2, double epsilon) {
  return Optimizer(
      "nadam", "Nadam",
      hp({{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}}),
      learning_rate);
}

Optimizer KerasSGDOptimizer(LearningRate learning_rate, double momentum,
                            bool nesterov) {
  auto h = hp({{"momentum", momentum}});
  h["nesterov"] = attr_b(nesterov);
  return Optimizer("keras_sgd", "SGD", h, learning_rate);
}

Optimizer KerasRMSpropOptimizer(LearningRate learning_rate, double rho,
                                double momentum, double epsilon,
                                bool centered) {
  auto h = hp({{"rho", rho}, {"momentum", momentum}, {"epsilon", epsilon}});
  h["centered"] = attr_b(centered);
  return Optimizer("keras_rmsprop", "RMSprop", h, learning_rate);
}

Optimizer KerasAdagradOptimizer(LearningRate learning_rate,
                                double initial_accumulator_value,
                                double epsilon) {
  return Optimizer("keras_adagrad", "Adagrad",
                   hp({{"initial_accumulator_value", initial_accumulator_value},
                       {"epsilon", epsilon}}),
                   learning_rate);
}

Optimizer KerasAdamOptimizer(LearningRate learning_rate, double beta_1,
                             double beta_2, double epsilon, bool amsgrad) {
  auto h = hp({{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}});
  h["amsgrad"] = attr_b(amsgrad);
  return Optimizer("keras_adam", "Adam", h, learning_rate);
}

Optimizer LazyAdamOptimizer(LearningRate learning_rate, double beta_1,
                            double beta_2, double epsilon) {
  return Optimizer(
      "lazy_adam", "LazyAdam",
      hp({{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}}),
      learning_rate);
}

Optimizer GradientAccumulationOptimizer(const Optimizer &optimizer,
                                        int64_t num_steps) {
  if (num_steps < 1)
    throw GraphError("GradientAccumulationOptimizer: num_steps must be >= 1, "
                     "got " +
                     std::to_string(num_steps));
  Optimizer copy = optimizer;
  copy.hyperparameters_["gradient_accumulation_steps"] = attr_i(num_steps);
  return copy;
}

Optimizer SyncReplicasOptimizer(const Optimizer &optimizer,
                                int64_t replicas_to_aggregate,
                                int64_t total_num_replicas) {
  if (replicas_to_aggregate < 1 || total_num_replicas < 0)
    throw GraphError("SyncReplicasOptimizer: replicas_to_aggregate must be "
                     ">= 1 and total_num_replicas >= 0, got " +
                     std::to_string(replicas_to_aggregate) + " and " +
                     std::to_string(total_num_replicas));
  Optimizer copy = optimizer;
  copy.hyperparameters_["replicas_to_aggregate"] =
      attr_i(replicas_to_aggregate);
  copy.hyperparameters_["total_num_replicas"] = attr_i(total_num_replicas);
  return copy;
}

Variable get_or_create_global_step(Graph &graph) {
  return graph.global_step_variable();
}

namespace {
/// The Initializer a VariableDef was made with (its seed included, so a
/// copy gets the same values).
Initializer initializerOf(const graph::VariableDef &v) {
  Initializer init;
  init.type = v.initializer().type();
  for (const auto &[key, value] : v.initializer().attr()) {
    if (key == "seed" && value.has_i())
      init.seed = value.i();
    else if (key == "values" && value.has_list())
      init.values.assign(value.list().f().begin(), value.list().f().end());
    else if (value.has_f())
      init.floats[key] = value.f();
    else if (value.has_s())
      init.strings[key] = value.s();
  }
  return init;
}
} // namespace

ExponentialMovingAverage::ExponentialMovingAverage(double decay,
                                                   const Tensor &num_updates,
                                                   std::string name)
    : decay_(decay), numUpdates_(num_updates), name_(std::move(name)) {
  if (!(decay >= 0.0 && decay <= 1.0))
    throw GraphError(name_ + ": decay must be in [0, 1], got " +
                     std::to_string(decay));
  if (num_updates.valid() &&
      (!num_updates.has_value() || !num_updates.shape().empty() ||
       num_updates.dtype() == DType::Bool))
    throw GraphError(name_ + ": num_updates '" + num_updates.name() +
                     "' must be a numeric scalar");
}

std::string ExponentialMovingAverage::average_name(const Variable &var) const {
  return var.name() + "/" + name_;
}

Variable ExponentialMovingAverage::average(const Variable &var) const {
  std::optional<Variable> v = var.graph().find_variable(average_name(var));
  if (!v)
    throw GraphError(name_ + ": variable '" + var.name() +
                     "' has no average (apply creates it)");
  return *v;
}

std::map<std::string, std::string>
ExponentialMovingAverage::variables_to_restore(
    const std::optional<std::vector<Variable>> &moving_avg_variables) const {
  std::vector<Variable> moving;
  Graph *g = nullptr;
  if (moving_avg_variables) {
    moving = *moving_avg_variables;
    if (moving.empty())
      throw GraphError(name_ + ": variables_to_restore: moving_avg_variables "
                               "is empty");
  } else {
    if (!averaged_.empty())
      g = &averaged_.front().graph();
    else if (numUpdates_.valid())
      g = &numUpdates_.graph();
    else
      throw GraphError(name_ + ": variables_to_restore: no graph to take the "
                               "trainable variables from (apply has not run "
                               "and num_updates is unset); pass "
                               "moving_avg_variables");
    moving = averaged_;
    for (const Variable &v : g->trainable_variables())
      moving.push_back(v);
  }
  for (const Variable &v : moving)
    if (!v.valid() || !v.graph().find_variable(v.name()))
      throw GraphError(name_ + ": variables_to_restore: unknown variable '" +
                       (v.valid() ? v.name() : std::string()) + "'");
  if (!g)
    g = &moving.front().graph();
  std::map<std::string, std::string> out;
  std::set<std::string> averaged;
  for (const Variable &v : moving) {
    if (&v.graph() != g)
      throw GraphError(name_ + ": variables_to_restore: variable '" + v.name() +
                       "' belongs to another graph");
    out[average_name(v)] = v.name();
    averaged.insert(v.name());
  }
  // TF: every other global variable restores from its own name (unless an
  // average took that name).
  graph::GraphDef def = g->graph_def();
  for (const graph::VariableDef &v : def.variable())
    if (!v.local() && !averaged.count(v.name()) && !out.count(v.name()))
      out[v.name()] = v.name();
  return out;
}

Operation
ExponentialMovingAverage::apply(const std::vector<Variable> &var_list) {
  if (var_list.empty())
    throw GraphError(name_ + ": apply needs variables");
  Graph &g = var_list.front().graph();
  std::string node = g.unique_node_name(name_);
  std::string where = name_ + " '" + node + "'";
  if (numUpdates_.valid() && &numUpdates_.graph() != &g)
    throw GraphError(where + ": num_updates belongs to another graph");
  std::vector<Tensor> inputs;
  std::vector<std::string> shadows;
  for (const Variable &v : var_list) {
    if (!v.valid() || &v.graph() != &g || !g.find_variable(v.name()))
      throw GraphError(where + ": unknown variable '" +
                       (v.valid() ? v.name() : std::string()) + "'");
    if (!is_floating(v.dtype()))
      throw GraphError(where + ": variable '" + v.name() + "' of type " +
                       to_string(v.dtype()) + " cannot be averaged");
    Variable shadow;
    {
      auto root = g.root_name_scope();
      shadow = g.get_variable(average_name(v), v.dtype(), v.shape(),
                              initializerOf(g.variable_def(v.name())),
                              /*trainable=*/false, /*reuse=*/true);
    }
    inputs.push_back(v.read());
    shadows.push_back(shadow.name());
    if (std::find_if(averaged_.begin(), averaged_.end(),
                     [&](const Variable &a) { return a.name() == v.name(); }) ==
        averaged_.end())
      averaged_.push_back(v);
  }
  if (numUpdates_.valid())
    inputs.push_back(numUpdates_.dtype() == DType::Float32
                         ? numUpdates_
                         : cast(numUpdates_, DType::Float32));
  graph::AttrValue hp;
  (*hp.mutable_dict()->mutable_entry())["decay"] = attr_f(decay_);
  return g.add_node(node, "apply_gradients", inputs,
                    {{"optimizer", attr_s("moving_average")},
                     {"hyperparameters", hp},
                     {"variables", attr_strings(shadows)},
                     {"keep_global_step", attr_b(true)}},
                    DType::Invalid, {});
}

Variable create_slot(const Variable &primary, const std::string &name,
                     const Initializer &initializer) {
  if (!primary.valid())
    throw GraphError("create_slot '" + name +
                     "': the primary variable is "
                     "an empty Variable");
  Graph &g = primary.graph();
  auto root = g.root_name_scope();
  return g.get_variable(primary.name() + "/" + name, primary.dtype(),
                        primary.shape(), initializer, /*trainable=*/false,
                        /*reuse=*/true);
}

// --- Learning-rate schedules -------------------------------------------------

namespace {
/// The schedule's step as a float32 scalar; checks the arguments.
Tensor scheduleStep(const char *what, const Tensor &global_step,
                    std::optional<double> decay_steps) {
  if (!global_step.valid() || !global_step.has_value() ||
      !global_step.shape().empty() || global_step.dtype() == DType::Bool)
    throw GraphError(std::string(what) + ": global_step '" +
                     (global_step.valid() ? global_step.name() : "") +
                     "' must be a numeric scalar" +
                     (global_step.valid() && global_step.has_value()
                          ? ", got " + to_string(global_step.dtype()) + " " +
                                shape::toString(global_step.shape())
                          : std::string()));
  if (decay_steps && !(*decay_steps > 0.0 && std::isfinite(*decay_steps)))
    throw GraphError(std::string(what) + ": decay_steps must be > 0, got " +
                     std::to_string(*decay_steps));
  return global_step.dtype() == DType::Float32
             ? global_step
             : cast(global_step, DType::Float32);
}

Scope scheduleScope(Graph &g, const std::string &name, const char *base) {
  return g.name_scope(name.empty() ? g.unique_layer_name(base) : name);
}
} // namespace

Tensor exponential_decay(double learning_rate, const Tensor &global_step,
                         double decay_steps, double decay_rate, bool staircase,
                         const std::string &name) {
  Tensor step = scheduleStep("exponential_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "ExponentialDecay");
  Tensor p = divide(step, g.constant(decay_steps));
  if (staircase)
    p = floor(p);
  return multiply(g.constant(learning_rate), pow(g.constant(decay_rate), p),
                  "value");
}

Tensor piecewise_constant(const Tensor &global_step,
                          const std::vector<double> &boundaries,
                          const std::vector<double> &values,
                          const std::string &name) {
  if (values.size() != boundaries.size() + 1)
    throw GraphError("piecewise_constant: " + std::to_string(values.size()) +
                     " values for " + std::to_string(boundaries.size()) +
                     " boundaries (need boundaries + 1)");
  for (size_t i = 1; i < boundaries.size(); ++i)
    if (!(boundaries[i] > boundaries[i - 1]))
      throw GraphError("piecewise_constant: boundaries must increase, got " +
                       std::to_string(boundaries[i - 1]) + " then " +
                       std::to_string(boundaries[i]));
  // Compared in float64: exact for integer steps up to 2^53.
  if (!global_step.valid() || !global_step.has_value() ||
      !global_step.shape().empty() || global_step.dtype() == DType::Bool)
    (void)scheduleStep("piecewise_constant", global_step, std::nullopt);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "PiecewiseConstant");
  Tensor step = global_step.dtype() == DType::Float64
                    ? global_step
                    : cast(global_step, DType::Float64);
  Tensor result = g.constant(values.back());
  for (size_t i = boundaries.size(); i-- > 0;)
    result = where(less_equal(step, g.constant(boundaries[i], DType::Float64)),
                   g.constant(values[i]), result);
  return add(result, g.constant(0.0), "value");
}

Tensor polynomial_decay(double learning_rate, const Tensor &global_step,
                        double decay_steps, double end_learning_rate,
                        double power, bool cycle, const std::string &name) {
  Tensor step = scheduleStep("polynomial_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "PolynomialDecay");
  Tensor steps = g.constant(decay_steps);
  if (cycle) {
    // decay_steps * ceil(step / decay_steps), 1 at step 0; ceil(x) =
    // -floor(-x).
    Tensor ratio = divide(step, steps);
    Tensor c = negative(floor(negative(ratio)));
    Tensor one = g.constant(1.0);
    c = where(equal(step, g.constant(0.0)), one, c);
    steps = multiply(steps, c);
  } else {
    step = minimum(step, steps);
  }
  Tensor frac = subtract(g.constant(1.0), divide(step, steps));
  return add(multiply(g.constant(learning_rate - end_learning_rate),
                      pow(frac, g.constant(power))),
             g.constant(end_learning_rate), "value");
}

Tensor cosine_decay(double learning_rate, const Tensor &global_step,
                    double decay_steps, double alpha, const std::string &name) {
  Tensor step = scheduleStep("cosine_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "CosineDecay");
  Tensor steps = g.constant(decay_steps);
  Tensor frac = divide(minimum(step, steps), steps);
  Tensor cosine =
      multiply(g.constant(0.5),
               add(g.constant(1.0), cos(multiply(g.constant(M_PI), frac))));
  Tensor decayed =
      add(multiply(g.constant(1.0 - alpha), cosine), g.constant(alpha));
  return multiply(g.constant(learning_rate), decayed, "value");
}

Tensor natural_exp_decay(double learning_rate, const Tensor &global_step,
                         double decay_steps, double decay_rate, bool staircase,
                         const std::string &name) {
  Tensor step = scheduleStep("natural_exp_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "NaturalExpDecay");
  // TF: ExponentialDecay with decay_rate exp(-decay_rate), computed in f32.
  Tensor rate = exp(negative(g.constant(decay_rate)));
  Tensor p = divide(step, g.constant(decay_steps));
  if (staircase)
    p = floor(p);
  return multiply(g.constant(learning_rate), pow(rate, p), "value");
}

Tensor inverse_time_decay(double learning_rate, const Tensor &global_step,
                          double decay_steps, double decay_rate, bool staircase,
                          const std::string &name) {
  Tensor step = scheduleStep("inverse_time_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "InverseTimeDecay");
  Tensor p = divide(step, g.constant(decay_steps));
  if (staircase)
    p = floor(p);
  Tensor denom = add(g.constant(1.0), multiply(g.constant(decay_rate), p));
  return divide(g.constant(learning_rate), denom, "value");
}

Tensor cosine_decay_restarts(double learning_rate, const Tensor &global_step,
                             double first_decay_steps, double t_mul,
                             double m_mul, double alpha,
                             const std::string &name) {
  Tensor step =
      scheduleStep("cosine_decay_restarts", global_step, first_decay_steps);
  if (!(t_mul > 0.0) || !std::isfinite(t_mul))
    throw GraphError("cosine_decay_restarts: t_mul must be > 0, got " +
                     std::to_string(t_mul));
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "SGDRDecay");
  Tensor fraction = divide(step, g.constant(first_decay_steps));
  Tensor one = g.constant(1.0);
  Tensor restart;
  if (static_cast<float>(t_mul) == 1.0f) {
    restart = floor(fraction);
    fraction = subtract(fraction, restart);
  } else {
    // i = floor(log(1 - fraction (1 - t_mul)) / log(t_mul));
    // fraction = (fraction - (1 - t_mul^i) / (1 - t_mul)) / t_mul^i.
    Tensor tm = g.constant(t_mul);
    Tensor oneMinusT = subtract(one, tm);
    restart = floor(
        divide(log(subtract(one, multiply(fraction, oneMinusT))), log(tm)));
    Tensor tPow = pow(tm, restart);
    Tensor sum = divide(subtract(one, tPow), oneMinusT);
    fraction = divide(subtract(fraction, sum), tPow);
  }
  Tensor mFac = pow(g.constant(m_mul), restart);
  Tensor cosine = multiply(multiply(g.constant(0.5), mFac),
                           add(one, cos(multiply(g.constant(M_PI), fraction))));
  Tensor decayed = add(multiply(subtract(one, g.constant(alpha)), cosine),
                       g.constant(alpha));
  return multiply(g.constant(learning_rate), decayed, "value");
}

namespace {
/// (noisy_)linear_cosine_decay's value from the (noisy) linear term:
/// learning_rate * ((alpha + linear) * cosine + beta), cosine =
/// 0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps)).
Tensor linearCosineValue(Graph &g, double learning_rate, const Tensor &step,
                         const Tensor &steps, const Tensor &linear,
                         double num_periods, double alpha, double beta) {
  Tensor completed = divide(step, steps);
  Tensor fraction =
      multiply(multiply(g.constant(2.0), g.constant(num_periods)), completed);
  Tensor cosine =
      multiply(g.constant(0.5),
               add(g.constant(1.0), cos(multiply(g.constant(M_PI), fraction))));
  Tensor decayed =
      add(multiply(add(g.constant(alpha), linear), cosine), g.constant(beta));
  return multiply(g.constant(learning_rate), decayed, "value");
}
} // namespace

Tensor linear_cosine_decay(double learning_rate, const Tensor &global_step,
                           double decay_steps, double num_periods, double alpha,
                           double beta, const std::string &name) {
  Tensor step = scheduleStep("linear_cosine_decay", global_step, decay_steps);
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "LinearCosineDecay");
  Tensor steps = g.constant(decay_steps);
  step = minimum(step, steps);
  Tensor linear = divide(subtract(steps, step), steps);
  return linearCosineValue(g, learning_rate, step, steps, linear, num_periods,
                           alpha, beta);
}

Tensor noisy_linear_cosine_decay(double learning_rate,
                                 const Tensor &global_step, double decay_steps,
                                 double initial_variance, double variance_decay,
                                 double num_periods, double alpha, double beta,
                                 const std::string &name) {
  Tensor step =
      scheduleStep("noisy_linear_cosine_decay", global_step, decay_steps);
  if (!(initial_variance >= 0.0 && std::isfinite(initial_variance)))
    throw GraphError(
        "noisy_linear_cosine_decay: initial_variance must be >= 0, got " +
        std::to_string(initial_variance));
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "NoisyLinearCosineDecay");
  Tensor steps = g.constant(decay_steps);
  step = minimum(step, steps);
  Tensor linear = divide(subtract(steps, step), steps);
  // TF: random_normal(stddev=sqrt(variance)), i.e. a standard normal
  // times the standard deviation (plus the mean, 0).
  Tensor variance =
      divide(g.constant(initial_variance),
             pow(add(g.constant(1.0), step), g.constant(variance_decay)));
  Tensor noise =
      add(multiply(random_normal(g, {}), sqrt(variance)), g.constant(0.0));
  Tensor noisy = add(linear, noise);
  return linearCosineValue(g, learning_rate, step, steps, noisy, num_periods,
                           alpha, beta);
}

Tensor linear_warmup(const Tensor &learning_rate, const Tensor &global_step,
                     int64_t warmup_steps, double warmup_learning_rate,
                     const std::string &name) {
  (void)scheduleStep("linear_warmup", global_step, std::nullopt);
  if (warmup_steps <= 0)
    throw GraphError("linear_warmup: warmup_steps must be > 0, got " +
                     std::to_string(warmup_steps));
  if (!learning_rate.valid() || !learning_rate.has_value() ||
      learning_rate.dtype() != DType::Float32 || !learning_rate.shape().empty())
    throw GraphError("linear_warmup: learning_rate '" +
                     (learning_rate.valid() ? learning_rate.name() : "") +
                     "' must be a float32 scalar");
  Graph &g = global_step.graph();
  auto s = scheduleScope(g, name, "LinearWarmup");
  Tensor stepInt = cast(global_step, DType::Int32);
  Tensor warmupInt =
      g.constant(static_cast<double>(warmup_steps), DType::Int32);
  Tensor percent =
      divide(cast(stepInt, DType::Float32), cast(warmupInt, DType::Float32));
  Tensor warmupRate = multiply(g.constant(warmup_learning_rate), percent);
  Tensor isWarmup = cast(less(stepInt, warmupInt), DType::Float32);
  return add(multiply(subtract(g.constant(1.0), isWarmup), learning_rate),
             multiply(isWarmup, warmupRate), "value");
}

} // namespace train

} // namespace estc
