//===- Train.h - Losses, optimizers and metrics -------------------------===//
//
// tf.losses, tf.train and tf.metrics for the graph builder.
//
// Optimizers are descriptions: `minimize(loss)` emits one `minimize` node
// (attrs `optimizer`, `hyperparameters`, optional `var_list`) that the
// compiler's training pass expands into gradients and updates; it also bumps
// global_step. The metrics (tf.metrics) are in lib/Graph/Metrics.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_TRAIN_H
#define ESTC_LIB_GRAPH_TRAIN_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"

#include <map>
#include <string>
#include <vector>

namespace estc {

namespace losses {
/// Mean over the batch of the per-example losses (a float scalar).
Tensor sparse_softmax_cross_entropy(const Tensor &labels, const Tensor &logits,
                                    const std::string &name = "");
Tensor softmax_cross_entropy(const Tensor &onehot_labels, const Tensor &logits,
                             const std::string &name = "");
/// Labels are cast to the logits' dtype.
Tensor sigmoid_cross_entropy(const Tensor &multi_class_labels,
                             const Tensor &logits,
                             const std::string &name = "");
/// Labels are cast to the predictions' dtype.
Tensor mean_squared_error(const Tensor &labels, const Tensor &predictions,
                          const std::string &name = "");
} // namespace losses

namespace train {

/// An optimizer description: the `minimize` node's `optimizer` attribute
/// (sgd, momentum, adagrad, adam, rmsprop, ftrl) and hyperparameters.
class Optimizer {
public:
  Optimizer(std::string kind, std::string node_name,
            std::map<std::string, graph::AttrValue> hyperparameters)
      : kind_(std::move(kind)), nodeName_(std::move(node_name)),
        hyperparameters_(std::move(hyperparameters)) {}

  const std::string &kind() const { return kind_; }
  const std::map<std::string, graph::AttrValue> &hyperparameters() const {
    return hyperparameters_;
  }

  /// Emits the train op. `var_list` empty: all trainable variables.
  Operation minimize(const Tensor &loss,
                     const std::vector<Variable> &var_list = {},
                     const std::string &name = "") const;

private:
  std::string kind_;
  std::string nodeName_; // default node base name ("Adam")
  std::map<std::string, graph::AttrValue> hyperparameters_;
};

Optimizer GradientDescentOptimizer(double learning_rate);
Optimizer MomentumOptimizer(double learning_rate, double momentum,
                            bool use_nesterov = false);
Optimizer AdagradOptimizer(double learning_rate,
                           double initial_accumulator_value = 0.1);
Optimizer AdamOptimizer(double learning_rate = 0.001, double beta1 = 0.9,
                        double beta2 = 0.999, double epsilon = 1e-8);
Optimizer RMSPropOptimizer(double learning_rate, double decay = 0.9,
                           double momentum = 0.0, double epsilon = 1e-10,
                           bool centered = false);
Optimizer FtrlOptimizer(double learning_rate,
                        double learning_rate_power = -0.5,
                        double initial_accumulator_value = 0.1,
                        double l1_regularization_strength = 0.0,
                        double l2_regularization_strength = 0.0);

/// tf.train.get_or_create_global_step: the global_step variable.
Variable get_or_create_global_step(Graph &graph);

} // namespace train

} // namespace estc

#endif // ESTC_LIB_GRAPH_TRAIN_H
