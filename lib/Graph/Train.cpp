//===- Train.cpp - Losses, optimizers and metrics -----------------------===//

#include "lib/Graph/Train.h"

namespace estc {

// --- Losses ----------------------------------------------------------------------

namespace losses {
namespace {
Scope lossScope(const Tensor &t, const std::string &name,
                const char *base) {
  Graph &g = t.graph();
  return g.name_scope(name.empty() ? g.unique_layer_name(base) : name);
}
} // namespace

Tensor sparse_softmax_cross_entropy(const Tensor &labels, const Tensor &logits,
                                    const std::string &name) {
  auto s = lossScope(logits, name, "sparse_softmax_cross_entropy_loss");
  return reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels,
                                                                  logits),
                     std::nullopt, false, "value");
}

Tensor softmax_cross_entropy(const Tensor &onehot_labels, const Tensor &logits,
                             const std::string &name) {
  auto s = lossScope(logits, name, "softmax_cross_entropy_loss");
  Tensor labels = onehot_labels.dtype() == logits.dtype()
                      ? onehot_labels
                      : cast(onehot_labels, logits.dtype());
  return reduce_mean(nn::softmax_cross_entropy_with_logits(labels, logits),
                     std::nullopt, false, "value");
}

Tensor sigmoid_cross_entropy(const Tensor &multi_class_labels,
                             const Tensor &logits, const std::string &name) {
  auto s = lossScope(logits, name, "sigmoid_cross_entropy_loss");
  Tensor labels = multi_class_labels.dtype() == logits.dtype()
                      ? multi_class_labels
                      : cast(multi_class_labels, logits.dtype());
  return reduce_mean(nn::sigmoid_cross_entropy_with_logits(labels, logits),
                     std::nullopt, false, "value");
}

Tensor mean_squared_error(const Tensor &labels, const Tensor &predictions,
                          const std::string &name) {
  auto s = lossScope(predictions, name, "mean_squared_error");
  Tensor l = labels.dtype() == predictions.dtype()
                 ? labels
                 : cast(labels, predictions.dtype());
  return reduce_mean(square(subtract(predictions, l)), std::nullopt, false,
                     "value");
}
} // namespace losses

// --- Optimizers -------------------------------------------------------------------

namespace train {

Operation Optimizer::minimize(const Tensor &loss,
                              const std::vector<Variable> &var_list,
                              const std::string &name) const {
  Graph &g = loss.graph();
  std::string node = g.unique_node_name(name.empty() ? nodeName_ : name);
  std::string where = "minimize '" + node + "': input '" + loss.name() + "' " +
                      (loss.has_value() ? shape::toString(loss.shape())
                                        : std::string("(no value)"));
  if (!loss.has_value() || !loss.shape().empty() ||
      !is_floating(loss.dtype()))
    throw GraphError(where + ": the loss must be a float scalar, got " +
                     to_string(loss.dtype()) + " " +
                     shape::toString(loss.shape()));
  if (g.trainable_variables().empty() && var_list.empty())
    throw GraphError(where + ": there are no trainable variables");
  graph::AttrValue hp;
  for (const auto &kv : hyperparameters_)
    (*hp.mutable_dict()->mutable_entry())[kv.first] = kv.second;
  Attrs attrs = {{"optimizer", attr_s(kind_)}, {"hyperparameters", hp}};
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
  return g.add_node(node, "minimize", {loss}, attrs, DType::Invalid, {});
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

Optimizer GradientDescentOptimizer(double learning_rate) {
  return Optimizer("sgd", "GradientDescent",
                   hp({{"learning_rate", learning_rate}}));
}

Optimizer MomentumOptimizer(double learning_rate, double momentum,
                            bool use_nesterov) {
  auto h = hp({{"learning_rate", learning_rate}, {"momentum", momentum}});
  h["use_nesterov"] = attr_b(use_nesterov);
  return Optimizer("momentum", "Momentum", h);
}

Optimizer AdagradOptimizer(double learning_rate,
                           double initial_accumulator_value) {
  return Optimizer("adagrad", "Adagrad",
                   hp({{"learning_rate", learning_rate},
                       {"initial_accumulator_value",
                        initial_accumulator_value}}));
}

Optimizer AdamOptimizer(double learning_rate, double beta1, double beta2,
                        double epsilon) {
  return Optimizer("adam", "Adam",
                   hp({{"learning_rate", learning_rate},
                       {"beta1", beta1},
                       {"beta2", beta2},
                       {"epsilon", epsilon}}));
}

Optimizer RMSPropOptimizer(double learning_rate, double decay,
                           double momentum, double epsilon, bool centered) {
  auto h = hp({{"learning_rate", learning_rate},
               {"decay", decay},
               {"momentum", momentum},
               {"epsilon", epsilon}});
  h["centered"] = attr_b(centered);
  return Optimizer("rmsprop", "RMSProp", h);
}

Optimizer FtrlOptimizer(double learning_rate, double learning_rate_power,
                        double initial_accumulator_value,
                        double l1_regularization_strength,
                        double l2_regularization_strength) {
  return Optimizer(
      "ftrl", "Ftrl",
      hp({{"learning_rate", learning_rate},
          {"learning_rate_power", learning_rate_power},
          {"initial_accumulator_value", initial_accumulator_value},
          {"l1_regularization_strength", l1_regularization_strength},
          {"l2_regularization_strength", l2_regularization_strength}}));
}

Variable get_or_create_global_step(Graph &graph) {
  return graph.global_step_variable();
}

} // namespace train

} // namespace estc
