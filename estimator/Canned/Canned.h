//===- Canned.h - What every canned estimator is made of -----------------===//
//
// A canned estimator (Linear.h, Dnn.h, DnnLinearCombined.h, Baseline.h;
// Estimators.h includes the four) is three things, independent of how its
// graph is compiled:
//
//   - a head (Head.h): loss, predictions, metrics, train op, label
//     vocabulary;
//   - a model_fn (TF's _linear_model_fn_v2, _dnn_model_fn_v2, ...) that
//     computes the logits from the feature columns' graph half and hands
//     them to the head;
//   - the host transform: the columns' Transformer (strings and sparse
//     values to ids) plus the head's label transform and class names
//     (docs/design/feature-columns.md).
//
// CannedModel holds the three. The JIT classes (LinearClassifier, ...)
// are Estimators built from one (CannedEstimator.h); an ahead-of-time
// trainer writes CannedModel::graph_def() with a small program, compiles
// it with estc_add_model, and runs it with
// Estimator(std::make_unique<Generated>()) plus
// set_host_transform(model.transform): no LLVM.
//
// Optimizers are given as TF allows: by name ("Adagrad", "Adam", "Ftrl",
// "RMSProp", "SGD"; the canned estimator's default learning rate), by name
// with a learning rate, or as an optimizer object (lib/Graph/Train.h).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_CANNED_H
#define ESTC_ESTIMATOR_CANNED_CANNED_H

#include "estimator/Canned/Head.h"
#include "estimator/EstimatorSpec.h"
#include "estimator/Input.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/FeatureColumn/Transformer.h"
#include "lib/Graph/Train.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace estc {
namespace estimator {

using feature_column::FeatureColumns;

/// An optimizer by name (with an optional learning rate) or as an object.
class OptimizerSpec {
public:
  OptimizerSpec(const char *name) : name_(name) {} // NOLINT: as TF's 'Ftrl'
  OptimizerSpec(std::string name, std::optional<double> learning_rate = {})
      : name_(std::move(name)), learningRate_(learning_rate) {}
  OptimizerSpec(train::Optimizer optimizer) // NOLINT: an object, as in TF
      : optimizer_(std::move(optimizer)) {}
  /// A named optimizer whose learning rate is a schedule of global_step
  /// (a Keras LearningRateSchedule: train::LearningRateSchedule).
  OptimizerSpec(std::string name, train::LearningRateSchedule schedule)
      : name_(std::move(name)), schedule_(std::move(schedule)) {}

  /// The optimizer: the object, or the named one with the learning rate
  /// given or `default_learning_rate` (TF's canned defaults: Adagrad's
  /// initial accumulator 0.1, Ftrl's learning_rate_power -0.5 and
  /// accumulator 0.1, Adam's betas 0.9 / 0.999 and epsilon 1e-7 as Keras'
  /// legacy optimizers). A `default_learning_rate` of nullopt is the Keras
  /// optimizer's own (0.001; SGD 0.01): TF 2.15's DNN estimators pass
  /// none. std::invalid_argument naming an unknown name.
  ///
  /// Known differences from Keras' legacy optimizers (the compiled rules
  /// are TF 1.x's kernels, compiler/Transforms/ExpandOptimizers.cpp):
  /// Adagrad has no epsilon (Keras adds 1e-7 to sqrt(accumulator), a
  /// relative 3e-7 at most); RMSProp's mean square starts at one (Keras:
  /// zero) with epsilon inside the square root (Keras, without momentum:
  /// outside).
  ///
  /// A named optimizer's variables are named as TF 2.15's canned estimators
  /// name their Keras legacy optimizer's (train::Optimizer::
  /// with_keras_legacy_names, scope "training/<keras_name()>"), so that
  /// their checkpoints move between TF and estc; an object keeps its own.
  train::Optimizer get(std::optional<double> default_learning_rate) const;
  /// As get(), a named optimizer under `scope` (TF's "training/Adam_1" for a
  /// second optimizer of one class), counting its own iterations when
  /// `own_iterations` (a wide & deep model's linear optimizer).
  train::Optimizer get(std::optional<double> default_learning_rate,
                       const std::string &scope, bool own_iterations) const;
  /// The Keras class of a named optimizer ("Ftrl", "RMSprop"); empty for an
  /// object.
  std::string keras_name() const;
  /// Whether the optimizer was given by name (RNN estimators then add
  /// TF's default clipnorm).
  bool is_name() const { return !optimizer_; }

private:
  /// The named optimizer with TF 1.x's slot names.
  train::Optimizer named(std::optional<double> default_learning_rate) const;
  std::string name_;
  std::optional<double> learningRate_;
  train::LearningRateSchedule schedule_;
  std::optional<train::Optimizer> optimizer_;
};

/// The host half of a model over feature columns (and a head): what the
/// Estimator applies to every batch before the compiled step, and to its
/// predictions after. `weight_column` (the head's) is passed through as a
/// numeric feature; prediction input need not have it, as in TF (it is
/// then ones, unread). Without a head the labels pass unchanged.
std::shared_ptr<const HostTransform>
make_host_transform(const FeatureColumns &feature_columns,
                    std::shared_ptr<const Head> head = nullptr,
                    const std::string &weight_column = "");

/// A batch's raw labels as a canned model takes them: the head's
/// transform_labels, rank-1 labels as [batch, 1] (as the heads expand them).
TensorValue head_labels(const Head &head, const data::Value &labels);

/// The labels placeholder of a canned model with `head`: what
/// transform_labels gives (I64 class ids, F32 values), [batch, 1] or
/// [batch, d].
TensorSpec head_label_spec(const Head &head);

/// The names of class ids 0..n-1 of a classification head (label
/// vocabulary or decimal ids); empty for other heads.
std::vector<std::string> head_class_names(const Head &head);

/// A canned host transform as saved_model.json's "transform" object
/// (docs/design/saved-model.md): `columns_config` (a feature column host
/// transform's serving_config, or empty), the inputs fed as ones when a
/// request lacks them, the [batch, 1] zeros input (the baseline's), and
/// the head's class names.
std::string canned_serving_config(const std::string &columns_config,
                                  const std::vector<std::string> &ones,
                                  const std::string &batch_zeros,
                                  const Head *head);

/// A canned estimator's parts (above).
struct CannedModel {
  std::shared_ptr<const Head> head;
  ModelFn model_fn;
  std::shared_ptr<const HostTransform> transform;
  /// The raw feature keys the model reads, for parse specs and errors.
  FeatureColumns feature_columns;

  /// The model's input spec (placeholders), from the columns alone; labels
  /// as the head takes them (absent without `with_labels`).
  InputSpec input_spec(bool with_labels = true) const;
  /// Every mode of the model's graph, for estc (ahead of time).
  graph::GraphDef graph_def(int64_t seed = 0, const Params &params = {}) const;
};

/// TF's classifier head choice: BinaryClassHead for 2 classes, else
/// MultiClassHead.
std::shared_ptr<const Head>
classifier_head(int64_t n_classes, const std::string &weight_column,
                const std::vector<std::string> &label_vocabulary,
                Reduction loss_reduction);

/// The head arguments of the canned classifiers.
struct ClassifierOptions {
  int64_t n_classes = 2;
  std::string weight_column;
  std::vector<std::string> label_vocabulary;
  Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE;
};

/// The head arguments of the canned regressors.
struct RegressorOptions {
  int64_t label_dimension = 1;
  std::string weight_column;
  Reduction loss_reduction = Reduction::SUM_OVER_BATCH_SIZE;
};

/// TF's regressor head: RegressionHead(label_dimension, weight_column,
/// loss_reduction).
std::shared_ptr<const Head> regressor_head(const RegressorOptions &options);
std::shared_ptr<const Head> classifier_head(const ClassifierOptions &options);

/// TF's _check_no_sync_replicas / argument checks shared by the canned
/// estimators: no feature columns, duplicate names. std::invalid_argument
/// naming `who`.
void check_feature_columns(const std::string &who,
                           const FeatureColumns &feature_columns);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_CANNED_H
