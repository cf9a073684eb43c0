//===- Train.h - Losses, optimizers and metrics -------------------------===//
//
// tf.losses, tf.train and tf.metrics for the graph builder.
//
// Optimizers are descriptions: `minimize(loss)` emits one `minimize` node
// (attrs `optimizer`, `hyperparameters`, optional `var_list`) that the
// compiler's training pass expands into gradients and updates; it also bumps
// global_step (once per step, however many minimizes a train_op groups:
// `group(opt1.minimize(loss, a), opt2.minimize(loss, b))` trains both var
// lists from the same gradients, as DNNLinearCombined does). The metrics
// (tf.metrics) are in lib/Graph/Metrics.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_TRAIN_H
#define ESTC_LIB_GRAPH_TRAIN_H

#include "lib/Graph/Gradients.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
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
// Each loss above is also added to the mode's "losses" collection.

/// tf.nn.l2_loss: sum(t^2) / 2 (a scalar of t's float dtype).
Tensor l2_loss(const Tensor &t, const std::string &name = "");

/// A weight regularizer: weights -> a float scalar penalty.
using Regularizer = std::function<Tensor(const Tensor &weights)>;
/// tf.contrib.layers.l1_regularizer: scale * sum(|w|). scale >= 0.
Regularizer l1_regularizer(double scale);
/// tf.contrib.layers.l2_regularizer: scale * l2_loss(w) = scale * sum(w^2)/2.
Regularizer l2_regularizer(double scale);
/// Applies `regularizer` to `weights` and adds the penalty to the mode's
/// "regularization_losses" collection (what layers do with
/// kernel_regularizer); returns the penalty.
Tensor add_regularization_loss(const Regularizer &regularizer,
                               const Tensor &weights);
/// Keras's activity regularization of a layer's output `y`: the penalty of
/// y divided by the batch size (the rows of y, a run-time size), added to
/// the "regularization_losses" collection under the name scope "activity";
/// returns it.
Tensor add_activity_regularization_loss(const Regularizer &regularizer,
                                        const Tensor &y);

/// tf.losses.get_regularization_loss: the sum of the mode's regularization
/// losses (0.0 when there are none).
Tensor
get_regularization_loss(Graph &graph,
                        const std::string &name = "total_regularization_loss");
/// tf.losses.get_total_loss: the sum of the mode's "losses" collection, plus
/// the regularization losses when `add_regularization_losses`. Throws when
/// the sum would be empty.
Tensor get_total_loss(Graph &graph, bool add_regularization_losses = true,
                      const std::string &name = "total_loss");
} // namespace losses

namespace train {

/// A learning-rate schedule as Keras and TF 2 give one: a callable of the
/// step (the graph's global_step, read in the mode that trains) returning
/// a float scalar Tensor, e.g. `[](const Tensor &step) { return
/// train::exponential_decay(0.1, step, 1000, 0.96); }`.
using LearningRateSchedule = std::function<Tensor(const Tensor &global_step)>;

/// An optimizer's learning rate: a number (the `learning_rate`
/// hyperparameter), a float scalar Tensor computed in the step, such as a
/// schedule of global_step (the `minimize` node's second input), or a
/// LearningRateSchedule called with global_step when the optimizer builds
/// its update (so an optimizer made before the graph, a canned
/// estimator's, can have a schedule).
class LearningRate {
public:
  LearningRate(double value) : value_(value) {}
  LearningRate(const Tensor &tensor) : tensor_(tensor) {}
  template <typename F, typename = std::enable_if_t<
                            std::is_invocable_r_v<Tensor, F, const Tensor &> &&
                            !std::is_convertible_v<F, Tensor> &&
                            !std::is_convertible_v<F, double>>>
  LearningRate(F schedule) : schedule_(std::move(schedule)) {}
  bool is_tensor() const { return tensor_.valid(); }
  bool is_schedule() const { return static_cast<bool>(schedule_); }
  double value() const { return value_; }
  const Tensor &tensor() const { return tensor_; }
  const LearningRateSchedule &schedule() const { return schedule_; }

private:
  double value_ = 0.0;
  Tensor tensor_;
  LearningRateSchedule schedule_;
};

/// An optimizer description: the `minimize` node's `optimizer` attribute
/// (sgd, momentum, adagrad, adam, rmsprop, ftrl, adadelta,
/// proximal_gradient_descent, proximal_adagrad, adagrad_da, adamw, adamax,
/// nadam, lazy_adam) and hyperparameters.
class Optimizer {
public:
  Optimizer(std::string kind, std::string node_name,
            std::map<std::string, graph::AttrValue> hyperparameters)
      : kind_(std::move(kind)), nodeName_(std::move(node_name)),
        hyperparameters_(std::move(hyperparameters)) {}
  /// Sets the learning rate (the hyperparameter or the Tensor input).
  Optimizer(std::string kind, std::string node_name,
            std::map<std::string, graph::AttrValue> hyperparameters,
            const LearningRate &learning_rate);

  const std::string &kind() const { return kind_; }
  const std::map<std::string, graph::AttrValue> &hyperparameters() const {
    return hyperparameters_;
  }
  /// The learning-rate Tensor; invalid when it is a hyperparameter or a
  /// schedule.
  const Tensor &learning_rate_tensor() const { return learningRate_; }
  /// A copy that clips the gradients by their global norm before the
  /// update (tf.clip_by_global_norm; the hyperparameter
  /// clip_gradients_by_global_norm). clip_norm > 0.
  Optimizer clip_gradients_by_global_norm(double clip_norm) const;
  /// A copy that clips each gradient by its own norm before the update
  /// (Keras' clipnorm: tf.clip_by_norm per variable; the hyperparameter
  /// clip_gradients_by_norm). clip_norm > 0.
  Optimizer clip_gradients_by_norm(double clip_norm) const;
  /// A copy that clips each gradient element to [-clip_value, clip_value]
  /// before the update (Keras' clipvalue: tf.clip_by_value; the
  /// hyperparameter clip_gradients_by_value). clip_value > 0.
  Optimizer clip_gradients_by_value(double clip_value) const;
  /// A copy whose variables are named as TF 2.15's canned estimators name
  /// a Keras legacy optimizer's (the hyperparameter slot_scope): slots
  /// `<scope>/<var>/<Keras's slot name>` ("training/Ftrl/<var>/accumulator"
  /// and ".../linear", "training/Adam/<var>/m" and ".../v",
  /// "training/Adagrad/<var>/accumulator", RMSprop's rms / mg / momentum,
  /// SGD's momentum), the hyperparameters as f32 scalar variables
  /// `<scope>/learning_rate`, `<scope>/decay`, ... holding the values
  /// compiled into the rule, and with `own_iterations` an int64
  /// `<scope>/iter` that counts the steps (the second optimizer of a wide &
  /// deep model; the first one's iterations are global_step). The rule is
  /// unchanged. `scope` not empty.
  Optimizer with_keras_legacy_names(const std::string &scope,
                                    bool own_iterations = false) const;
  friend Optimizer GradientAccumulationOptimizer(const Optimizer &optimizer,
                                                 int64_t num_steps);
  friend Optimizer SyncReplicasOptimizer(const Optimizer &optimizer,
                                         int64_t replicas_to_aggregate,
                                         int64_t total_num_replicas);

  /// Emits the train op. `var_list` empty: all trainable variables.
  Operation minimize(const Tensor &loss,
                     const std::vector<Variable> &var_list = {},
                     const std::string &name = "") const;

  /// (gradient, variable) pairs (tf.train.Optimizer's grads_and_vars).
  using GradsAndVars = std::vector<std::pair<Tensor, Variable>>;
  /// tf.compat.v1.train.Optimizer.compute_gradients: gradients(loss,
  /// var_list) (lib/Graph/Gradients.h), `var_list` empty: all trainable
  /// variables. A variable the loss does not depend on gets zeros (TF's
  /// None); a gather's gradient is dense (minimize keeps it sparse).
  GradsAndVars
  compute_gradients(const Tensor &loss,
                    const std::vector<Variable> &var_list = {}) const;
  /// tf.compat.v1.train.Optimizer.apply_gradients: this optimizer's update
  /// of each variable from the given gradient (of the variable's dtype and
  /// shape; any tensor: clipped, averaged, computed by hand), with the same
  /// slots as minimize. With `global_step` (the graph's global_step
  /// variable) the step increments it, else it does not (as in TF: a
  /// train op must then increment it itself). Bad arguments throw
  /// GraphError naming the node and the variable.
  Operation apply_gradients(const GradsAndVars &grads_and_vars,
                            const Variable &global_step = Variable(),
                            const std::string &name = "") const;

private:
  std::string kind_;
  std::string nodeName_; // default node base name ("Adam")
  std::map<std::string, graph::AttrValue> hyperparameters_;
  Tensor learningRate_;
  LearningRateSchedule schedule_;
  /// The learning-rate input of a node of `g` (`where`): the Tensor, the
  /// schedule's value at global_step, or invalid (the hyperparameter).
  Tensor learningRateInput(Graph &g, const std::string &where) const;
};

Optimizer GradientDescentOptimizer(LearningRate learning_rate);
Optimizer MomentumOptimizer(LearningRate learning_rate, double momentum,
                            bool use_nesterov = false);
Optimizer AdagradOptimizer(LearningRate learning_rate,
                           double initial_accumulator_value = 0.1);
Optimizer AdamOptimizer(LearningRate learning_rate = 0.001, double beta1 = 0.9,
                        double beta2 = 0.999, double epsilon = 1e-8);
Optimizer RMSPropOptimizer(LearningRate learning_rate, double decay = 0.9,
                           double momentum = 0.0, double epsilon = 1e-10,
                           bool centered = false);
/// TF 2's tf.compat.v1.train.FtrlOptimizer: l2_shrinkage_regularization
/// _strength (ApplyFtrlV2: 2 l2_shrinkage var added to the linear term's
/// gradient) and beta (l2 + beta / (2 learning_rate)) too.
Optimizer FtrlOptimizer(LearningRate learning_rate,
                        double learning_rate_power = -0.5,
                        double initial_accumulator_value = 0.1,
                        double l1_regularization_strength = 0.0,
                        double l2_regularization_strength = 0.0,
                        double l2_shrinkage_regularization_strength = 0.0,
                        double beta = 0.0);
/// tf.compat.v1.train.AdadeltaOptimizer (slots <var>/Adadelta: accum,
/// <var>/Adadelta_1: accum_update).
Optimizer AdadeltaOptimizer(LearningRate learning_rate = 0.001,
                            double rho = 0.95, double epsilon = 1e-8);
/// tf.compat.v1.train.ProximalGradientDescentOptimizer (no slots).
Optimizer
ProximalGradientDescentOptimizer(LearningRate learning_rate,
                                 double l1_regularization_strength = 0.0,
                                 double l2_regularization_strength = 0.0);
/// tf.compat.v1.train.ProximalAdagradOptimizer (slot <var>/ProximalAdagrad).
Optimizer ProximalAdagradOptimizer(LearningRate learning_rate,
                                   double initial_accumulator_value = 0.1,
                                   double l1_regularization_strength = 0.0,
                                   double l2_regularization_strength = 0.0);
/// tf.compat.v1.train.AdagradDAOptimizer at global_step + 1 (TF's
/// global_step argument is the graph's global_step; slots <var>/AdagradDA:
/// gradient_accumulator, <var>/AdagradDA_1:
/// gradient_squared_accumulator).
Optimizer
AdagradDAOptimizer(LearningRate learning_rate,
                   double initial_gradient_squared_accumulator_value = 0.1,
                   double l1_regularization_strength = 0.0,
                   double l2_regularization_strength = 0.0);
/// tf.keras.optimizers.AdamW (TF 2.15): variable -= variable * weight_decay
/// * learning_rate, then Adam's update (Keras' rule and defaults; slots
/// <var>/AdamW: m, <var>/AdamW_1: v). Variables whose name matches one of
/// `exclude_from_weight_decay` (regular expressions, re.search) are not
/// decayed. tfa's AdamW decays by weight_decay alone (not times the
/// learning rate): its weight_decay is this one's times the learning rate.
Optimizer
AdamWOptimizer(LearningRate learning_rate = 0.001, double weight_decay = 0.004,
               double beta_1 = 0.9, double beta_2 = 0.999,
               double epsilon = 1e-7,
               const std::vector<std::string> &exclude_from_weight_decay = {});
/// tf.keras.optimizers.Adamax (TF 2.15; slots <var>/Adamax: m,
/// <var>/Adamax_1: u).
Optimizer AdamaxOptimizer(LearningRate learning_rate = 0.001,
                          double beta_1 = 0.9, double beta_2 = 0.999,
                          double epsilon = 1e-7);
/// tf.keras.optimizers.Nadam (TF 2.15; slots <var>/Nadam: m, <var>/Nadam_1:
/// v, and the scalar <var>/Nadam_2: the product of the momentum schedule,
/// Keras' _u_product).
Optimizer NadamOptimizer(LearningRate learning_rate = 0.001,
                         double beta_1 = 0.9, double beta_2 = 0.999,
                         double epsilon = 1e-7);
// Keras 2.15's own rules where they differ from TF 1.x's optimizers above
// (tf.keras.optimizers.*, which Keras's train_on_batch and TF's
// model_to_estimator run; estimator/KerasEstimator.h maps a compile config
// to them). Slots <var>/<Keras's slot name>.

/// tf.keras.optimizers.SGD: m = momentum m - lr g, variable += m (nesterov:
/// += momentum m - lr g); slot <var>/momentum when momentum > 0. TF 1.x's
/// MomentumOptimizer keeps lr out of its accumulator, which a schedule
/// makes differ.
Optimizer KerasSGDOptimizer(LearningRate learning_rate = 0.01,
                            double momentum = 0.0, bool nesterov = false);
/// tf.keras.optimizers.RMSprop: velocity from zeros (TF 1.x's RMSProp
/// starts at ones), epsilon added to the denominator inside the square
/// root; slots <var>/velocity, <var>/average_gradient (centered),
/// <var>/momentum (momentum > 0).
Optimizer KerasRMSpropOptimizer(LearningRate learning_rate = 0.001,
                                double rho = 0.9, double momentum = 0.0,
                                double epsilon = 1e-7, bool centered = false);
/// tf.keras.optimizers.Adagrad: variable -= lr g / sqrt(accumulator +
/// epsilon); slot <var>/accumulator.
Optimizer KerasAdagradOptimizer(LearningRate learning_rate = 0.001,
                                double initial_accumulator_value = 0.1,
                                double epsilon = 1e-7);
/// tf.keras.optimizers.Adam, amsgrad included (the running maximum of v
/// in <var>/velocity_hat); slots <var>/m, <var>/v.
Optimizer KerasAdamOptimizer(LearningRate learning_rate = 0.001,
                             double beta_1 = 0.9, double beta_2 = 0.999,
                             double epsilon = 1e-7, bool amsgrad = false);

/// tfa.optimizers.LazyAdam: Adam on dense gradients; on a sparse one (a
/// gather of the variable, through minimize) only the gathered rows of the
/// variable, m and v move (slots <var>/LazyAdam: m, <var>/LazyAdam_1: v).
Optimizer LazyAdamOptimizer(LearningRate learning_rate = 0.001,
                            double beta_1 = 0.9, double beta_2 = 0.999,
                            double epsilon = 1e-7);

/// Gradient accumulation over `num_steps` batches (Keras 3's
/// gradient_accumulation_steps): a copy of `optimizer` that adds every
/// step's gradient to `<var>/GradientAccumulator` and, on every
/// num_steps-th step ((global_step + 1) % num_steps == 0), applies its rule
/// to the mean of the accumulated gradients and zeroes the accumulators;
/// between them the variables and slots keep their values. global_step
/// still counts every batch; the rule's own step (Adam's t) counts the
/// updates. Sparse gradients are densified. num_steps >= 1.
Optimizer GradientAccumulationOptimizer(const Optimizer &optimizer,
                                        int64_t num_steps);

/// tf.compat.v1.train.SyncReplicasOptimizer(opt, replicas_to_aggregate,
/// total_num_replicas): synchronous parameter-server training
/// (docs/design/distributed.md, "Parameter servers"). Each ps task applies
/// `optimizer`'s rule once per step, to the mean of the gradients of the
/// first `replicas_to_aggregate` workers' pushes computed at that step;
/// a push computed at an older step is dropped (stale), and the workers
/// wait for the step's update before their next one. total_num_replicas:
/// the workers of the job (0: replicas_to_aggregate; more than it gives
/// backup workers, whose late pushes are dropped). In a single process, or
/// with all-reduce training, the optimizer alone (as TF with one replica).
/// replicas_to_aggregate >= 1; total_num_replicas >= 0. The step's
/// optimizers are all wrapped, or none.
Optimizer SyncReplicasOptimizer(const Optimizer &optimizer,
                                int64_t replicas_to_aggregate,
                                int64_t total_num_replicas = 0);

/// tf.train.get_or_create_global_step: the global_step variable.
Variable get_or_create_global_step(Graph &graph);

/// tf.compat.v1.train.ExponentialMovingAverage: shadow variables
/// `<var>/ExponentialMovingAverage` (not trainable, initialized like their
/// variable) that `apply` moves toward the variables every step:
///   decay = min(decay, (1 + num_updates) / (10 + num_updates))  (with
///           num_updates, e.g. g.global_step(); f32)
///   shadow -= (shadow - var) * (1 - decay)
/// A variable that an optimizer of the same train_op updates is averaged at
/// its updated value, and num_updates read from global_step is the
/// incremented step, as TF's `with tf.control_dependencies([opt_op]):
/// ema.apply(...)` (compiler/Transforms/ExpandOptimizers.cpp); group the
/// optimizer's op and apply's into the train_op.
class ExponentialMovingAverage {
public:
  explicit ExponentialMovingAverage(
      double decay, const Tensor &num_updates = Tensor(),
      std::string name = "ExponentialMovingAverage");
  /// The update of `var_list`'s shadows (created on first use). Float
  /// variables of one graph; GraphError otherwise.
  Operation apply(const std::vector<Variable> &var_list);
  /// The shadow of `var` ("<var>/ExponentialMovingAverage").
  std::string average_name(const Variable &var) const;
  /// The shadow variable of `var` (GraphError before apply created it).
  Variable average(const Variable &var) const;
  /// TF's variables_to_restore(moving_avg_variables): the Saver var_list
  /// (checkpoint name -> variable) that restores each of
  /// `moving_avg_variables` from its shadow ("<var>/ExponentialMovingAverage")
  /// and every other non-local variable of their graph from its own name.
  /// Unset, as TF: the graph's trainable variables and those apply averaged
  /// (the graph: the averaged variables', else num_updates'; with neither,
  /// GraphError). For evaluation, prediction and export with the shadows in
  /// the variables, a model_fn sets it as its EVAL / PREDICT spec's
  /// `scaffold.saver_var_list` (estimator/EstimatorSpec.h), TF's
  /// Scaffold(saver=Saver(ema.variables_to_restore())). The averaged
  /// variables' entries, inverted, are WarmStartSettings::
  /// var_name_to_prev_var_name for a model whose training starts from the
  /// averaged weights.
  std::map<std::string, std::string> variables_to_restore(
      const std::optional<std::vector<Variable>> &moving_avg_variables =
          std::nullopt) const;

private:
  double decay_;
  Tensor numUpdates_;
  std::string name_;
  std::vector<Variable> averaged_;
};

/// TF's variable constraint (get_variable(constraint=...), a Keras layer's
/// kernel_constraint: Layers.h's constraints::): `constraint` of
/// `variable`'s value, in the current mode. An optimizer of this mode that
/// updates the variable (minimize, apply_gradients) then assigns the
/// constraint of the variable's new value in the same step, after the
/// update, as TF 1.x's optimizers assign var.constraint(var) under the
/// update's control dependency (an ExponentialMovingAverage applied with it
/// averages the constrained value). The constraint must keep the
/// variable's dtype and shape (GraphError otherwise); a second constraint
/// of the variable in the same mode is ignored (a shared layer's).
void set_variable_constraint(
    const Variable &variable,
    const std::function<Tensor(const Tensor &)> &constraint);

/// An optimizer slot of `primary` (TF's slot_creator.create_slot): the
/// non-trainable variable `<primary>/<name>` of primary's dtype and shape,
/// whatever the current name scope; shared when it exists (another mode, a
/// second call). For optimizers written with apply_gradients' building
/// blocks (docs/user-guide.md, "Writing an optimizer").
Variable create_slot(const Variable &primary, const std::string &name,
                     const Initializer &initializer = zeros_initializer());

// Learning-rate schedules (tf.compat.v1.train.*): float32 scalars computed
// from `global_step` (an integer or float scalar, usually
// graph.global_step()) inside the step. Bad arguments throw GraphError.

/// lr * decay_rate ^ (step / decay_steps); staircase: the exponent is
/// floor(step / decay_steps). decay_steps > 0.
Tensor exponential_decay(double learning_rate, const Tensor &global_step,
                         double decay_steps, double decay_rate,
                         bool staircase = false, const std::string &name = "");
/// values[0] while step <= boundaries[0], values[i] while
/// boundaries[i-1] < step <= boundaries[i], values.back() after the last
/// boundary. Boundaries strictly increasing; values.size() ==
/// boundaries.size() + 1.
Tensor piecewise_constant(const Tensor &global_step,
                          const std::vector<double> &boundaries,
                          const std::vector<double> &values,
                          const std::string &name = "");
/// (lr - end) * (1 - step / decay_steps) ^ power + end, step clipped to
/// decay_steps; cycle: decay_steps * ceil(step / decay_steps) (1 at step 0)
/// instead of clipping. decay_steps > 0.
Tensor polynomial_decay(double learning_rate, const Tensor &global_step,
                        double decay_steps, double end_learning_rate = 0.0001,
                        double power = 1.0, bool cycle = false,
                        const std::string &name = "");
/// lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
/// decay_steps)) + alpha). decay_steps > 0.
Tensor cosine_decay(double learning_rate, const Tensor &global_step,
                    double decay_steps, double alpha = 0.0,
                    const std::string &name = "");
/// lr * exp(-decay_rate) ^ (step / decay_steps) (staircase: the exponent
/// floored). decay_steps > 0.
Tensor natural_exp_decay(double learning_rate, const Tensor &global_step,
                         double decay_steps, double decay_rate,
                         bool staircase = false, const std::string &name = "");
/// lr / (1 + decay_rate * step / decay_steps) (staircase: the ratio
/// floored). decay_steps > 0.
Tensor inverse_time_decay(double learning_rate, const Tensor &global_step,
                          double decay_steps, double decay_rate,
                          bool staircase = false, const std::string &name = "");
/// SGDR: cosine decay over first_decay_steps, restarted with periods
/// t_mul times longer and peaks m_mul times lower each restart;
/// lr * ((1 - alpha) * 0.5 * m_mul^i * (1 + cos(pi * fraction)) + alpha).
/// first_decay_steps > 0, t_mul > 0.
Tensor cosine_decay_restarts(double learning_rate, const Tensor &global_step,
                             double first_decay_steps, double t_mul = 2.0,
                             double m_mul = 1.0, double alpha = 0.0,
                             const std::string &name = "");
/// lr * ((alpha + (decay_steps - s) / decay_steps) * 0.5 * (1 + cos(2 pi
/// num_periods s / decay_steps)) + beta), s = min(step, decay_steps).
/// decay_steps > 0.
Tensor linear_cosine_decay(double learning_rate, const Tensor &global_step,
                           double decay_steps, double num_periods = 0.5,
                           double alpha = 0.0, double beta = 0.001,
                           const std::string &name = "");
/// linear_cosine_decay with noise on the linear term, as TF computes it:
/// lr * ((alpha + (decay_steps - s) / decay_steps + eps) * 0.5 * (1 +
/// cos(2 pi num_periods s / decay_steps)) + beta), s = min(step,
/// decay_steps), eps = random_normal() * sqrt(initial_variance / (1 +
/// s)^variance_decay) (a new draw every step: the random ops' counter is
/// global_step; the graph seed and the node name give its seed).
/// decay_steps > 0, initial_variance >= 0.
Tensor noisy_linear_cosine_decay(double learning_rate,
                                 const Tensor &global_step, double decay_steps,
                                 double initial_variance = 1.0,
                                 double variance_decay = 0.55,
                                 double num_periods = 0.5, double alpha = 0.0,
                                 double beta = 0.001,
                                 const std::string &name = "");
/// BERT's linear warmup in front of a schedule: warmup_learning_rate *
/// step / warmup_steps while step < warmup_steps (int32 comparison),
/// `learning_rate` (a float32 scalar, e.g. a decay) after; computed as
/// (1 - is_warmup) * learning_rate + is_warmup * warmup_rate, as BERT's
/// create_optimizer does. warmup_steps > 0.
Tensor linear_warmup(const Tensor &learning_rate, const Tensor &global_step,
                     int64_t warmup_steps, double warmup_learning_rate,
                     const std::string &name = "");

} // namespace train

} // namespace estc

#endif // ESTC_LIB_GRAPH_TRAIN_H
