//===- Train.cpp - Losses, optimizers and metrics -----------------------===//

#include "lib/Graph/Train.h"

#include <cmath>

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
  graph::AttrValue hp;
  hp.mutable_dict(); // present even when empty
  for (const auto &kv : hyperparameters_)
    (*hp.mutable_dict()->mutable_entry())[kv.first] = kv.second;
  Attrs attrs = {{"optimizer", attr_s(kind_)}, {"hyperparameters", hp}};
  std::vector<Tensor> inputs = {loss};
  if (learningRate_.valid()) {
    const Tensor &lr = learningRate_;
    if (&lr.graph() != &g)
      throw GraphError(where + ": the learning rate '" + lr.name() +
                       "' belongs to another graph");
    if (!lr.has_value() || !lr.shape().empty() || !is_floating(lr.dtype()))
      throw GraphError(where + ": the learning rate '" + lr.name() +
                       "' must be a float scalar, got " +
                       (lr.has_value() ? to_string(lr.dtype()) + " " +
                                             shape::toString(lr.shape())
                                       : std::string("no value")));
    inputs.push_back(lr);
  }
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
  return g.add_node(node, "minimize", inputs, attrs, DType::Invalid, {});
}

Optimizer::Optimizer(std::string kind, std::string node_name,
                     std::map<std::string, graph::AttrValue> hyperparameters,
                     const LearningRate &learning_rate)
    : Optimizer(std::move(kind), std::move(node_name),
                std::move(hyperparameters)) {
  if (learning_rate.is_tensor())
    learningRate_ = learning_rate.tensor();
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
                        double l2_regularization_strength) {
  return Optimizer(
      "ftrl", "Ftrl",
      hp({{"learning_rate_power", learning_rate_power},
          {"initial_accumulator_value", initial_accumulator_value},
          {"l1_regularization_strength", l1_regularization_strength},
          {"l2_regularization_strength", l2_regularization_strength}}),
      learning_rate);
}

Variable get_or_create_global_step(Graph &graph) {
  return graph.global_step_variable();
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

} // namespace train

} // namespace estc
