//===- KerasCompile.h - A Keras compile config as estc's training ------===//
//
// What model_to_estimator (estimator/KerasEstimator.h) makes of a Keras
// model's compile config (KerasModel::training_config: a .keras file's
// compile_config, a legacy .h5's training_config; tf.keras 2.13-2.15's and
// Keras 3's spellings): the optimizer (train::Optimizer, Keras's rules),
// the loss of each output with its weight, and the metrics of each output
// as streaming metrics named as TF's model_to_estimator names them in
// evaluate's result. The table of what maps to what is docs/design/
// keras.md, "The estimator mapping".
//
// parse_compile_config checks everything that does not need the graph (one
// KerasError line naming the file: "<file>: compile config: ..."), so that
// model_to_estimator refuses a model before any training; the builders
// below then build the graph pieces in a model_fn.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_KERASCOMPILE_H
#define ESTC_ESTIMATOR_KERASCOMPILE_H

#include "lib/Graph/Train.h"
#include "lib/Keras/KerasModel.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {
namespace keras_compile {

/// A learning rate: a number, or a Keras LearningRateSchedule.
struct LearningRateSpec {
  /// "" (a number: `value`), "ExponentialDecay", "PiecewiseConstantDecay",
  /// "PolynomialDecay", "InverseTimeDecay", "CosineDecay",
  /// "CosineDecayRestarts".
  std::string schedule;
  double value = 0.001;
  /// The schedule's numeric arguments by Keras's names.
  std::map<std::string, double> args;
  std::vector<double> boundaries, values; ///< PiecewiseConstantDecay
  bool flag = false; ///< staircase (Exponential, InverseTime); cycle (Poly)
};

struct OptimizerSpec {
  /// Keras's class name: "SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
  /// "Adadelta", "Adamax", "Nadam", "Ftrl".
  std::string class_name;
  LearningRateSpec learning_rate;
  /// The numeric arguments by Keras's names (beta_1, momentum, rho, ...),
  /// Keras's defaults filled in.
  std::map<std::string, double> args;
  /// nesterov (SGD), amsgrad (Adam), centered (RMSprop).
  std::map<std::string, bool> flags;
  std::vector<std::string> exclude_from_weight_decay; ///< AdamW
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
};

struct LossSpec {
  /// Keras's function name: "sparse_categorical_crossentropy",
  /// "categorical_crossentropy", "binary_crossentropy",
  /// "mean_squared_error", "mean_absolute_error",
  /// "mean_absolute_percentage_error", "mean_squared_logarithmic_error",
  /// "huber", "hinge", "squared_hinge", "kl_divergence", "poisson",
  /// "cosine_similarity", "log_cosh".
  std::string fn;
  bool from_logits = false;
  double label_smoothing = 0.0;
  double delta = 1.0; ///< huber
  int64_t axis = -1;  ///< crossentropies, cosine_similarity
};

struct MetricSpec {
  /// What it computes: "accuracy" (resolved from the loss and the output's
  /// shape as Keras does), "binary_accuracy", "categorical_accuracy",
  /// "sparse_categorical_accuracy", "auc", "precision", "recall", or a
  /// loss function's name (its mean over the examples), "root_mean_
  /// squared_error".
  std::string kind;
  /// The name Keras gives it ("acc", "accuracy", "auc", "mse"), before
  /// the output's prefix.
  std::string name;
  double threshold = 0.5;       ///< binary_accuracy, precision, recall
  int64_t num_thresholds = 200; ///< auc
  std::string curve = "ROC";    ///< auc
  std::string summation_method = "interpolation"; ///< auc
  bool from_logits = false;                       ///< auc, crossentropies
  LossSpec loss; ///< a loss function's metric: its arguments
};

struct CompileConfig {
  OptimizerSpec optimizer;
  /// Per output, in the model's output order: its loss (nullopt: none, as
  /// Keras's `loss={"a": ...}` without "b") and its weight.
  std::vector<std::optional<LossSpec>> losses;
  std::vector<double> loss_weights;
  /// Per output: its metrics.
  std::vector<std::vector<MetricSpec>> metrics;
};

/// Reads `model.training_config` for the outputs `output_names` (the
/// model's, in order). KerasError "<file>: ..." for a model without a
/// compile config ("the model was not compiled: model_to_estimator needs
/// model.compile(...) before model.save, as TF's"), an unknown optimizer,
/// loss, metric or schedule name, an unsupported argument value
/// (weight_decay outside AdamW, use_ema, a schedule's warmup, Precision's
/// top_k, ...), a loss or weight for an output the model does not have,
/// or lists of the wrong length.
CompileConfig
parse_compile_config(const keras::KerasModel &model,
                     const std::vector<std::string> &output_names);

/// The optimizer (Keras's rule, learning rate, schedule at global_step and
/// clipping).
train::Optimizer make_optimizer(const OptimizerSpec &spec);

/// Keras's loss: the per-example losses of `loss` reduced as Keras does
/// (SUM_OVER_BATCH_SIZE: their sum over their number), a float scalar.
/// `y_true` is cast to the prediction's dtype (sparse labels: class ids).
Tensor keras_loss(const LossSpec &loss, const Tensor &y_true,
                  const Tensor &y_pred);

/// The streaming metric `metric` for one output, with its output's loss
/// (accuracy's resolution), named `name` (its state's variables).
Metric keras_metric(const MetricSpec &metric,
                    const std::optional<LossSpec> &output_loss,
                    const Tensor &y_true, const Tensor &y_pred,
                    const std::string &name);

} // namespace keras_compile
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_KERASCOMPILE_H
