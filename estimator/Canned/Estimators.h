//===- Estimators.h - TF 2.15's canned estimators ------------------------===//
//
// tf.estimator's canned models over feature columns, with TF 2.15's
// arguments, defaults and variable names (tensorflow_estimator/python/
// estimator/canned/{linear,dnn,dnn_linear_combined,baseline}.py):
//
//   LinearClassifier / LinearRegressor / LinearEstimator
//       logits = linear_model(features) under "linear"
//       ("linear/linear_model/<column>/weights", ".../bias_weights");
//       Ftrl, learning rate min(0.2, 1/sqrt(number of columns)).
//   DNNClassifier / DNNRegressor / DNNEstimator
//       input_layer under "dnn/input_from_feature_columns", then
//       "dnn/hiddenlayer_<i>" (activation_fn, dropout in TRAIN, batch norm
//       "dnn/hiddenlayer_<i>/batchnorm_<i>" with momentum 0.999), then
//       "dnn/logits"; Adagrad at Keras' default learning rate 0.001 (TF
//       2.15's _dnn_model_fn_v2 passes a named optimizer no rate; the
//       v1 estimator's 0.05 is not used).
//   DNNLinearCombinedClassifier / Regressor / Estimator
//       the two above summed; each part trained by its own optimizer on its
//       own variables in one step (linear: Ftrl, min(0.005, 1/sqrt(n));
//       dnn: Adagrad 0.001).
//   BaselineClassifier / BaselineRegressor / BaselineEstimator
//       logits = "baseline/bias" for every example; Ftrl 0.3.
//
// Each family has a `*_model` function giving its CannedModel (Canned.h:
// head + model_fn + host transform; no LLVM, for ahead-of-time graphs) and
// JIT classes, Estimators built from it (link EstcCannedJit).
//
//   auto age = feature_column::numeric_column("age");
//   auto sex = feature_column::categorical_column_with_vocabulary_list(
//       "sex", {"male", "female"});
//   estimator::LinearClassifier model({age, sex});
//   model.train(train_input_fn, {}, std::nullopt, 1000);
//   estimator::EvalResults r = model.evaluate(eval_input_fn);  // accuracy,
//                                                      // auc, average_loss...
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_ESTIMATORS_H
#define ESTC_ESTIMATOR_CANNED_ESTIMATORS_H

#include "estimator/Canned/Canned.h"
#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

/// An Estimator over a CannedModel: its model_fn compiled by the JIT, its
/// host transform installed. The canned classes below are these.
class CannedEstimator : public Estimator {
public:
  CannedEstimator(CannedModel model, RunConfig config = RunConfig(),
                  std::optional<WarmStartSettings> warm_start_from = {});
  /// The head, model_fn and host transform (for AOT graphs, export).
  const CannedModel &canned_model() const { return model_; }

private:
  CannedModel model_;
};

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

// --- Linear ------------------------------------------------------------------

struct LinearOptions {
  OptimizerSpec optimizer = "Ftrl";
  std::string sparse_combiner = "sum";
};

CannedModel linear_model(std::shared_ptr<const Head> head,
                         FeatureColumns feature_columns,
                         LinearOptions options = {});

class LinearEstimator : public CannedEstimator {
public:
  LinearEstimator(std::shared_ptr<const Head> head,
                  FeatureColumns feature_columns, LinearOptions options = {},
                  RunConfig config = RunConfig(),
                  std::optional<WarmStartSettings> warm_start_from = {});
};

class LinearClassifier : public LinearEstimator {
public:
  LinearClassifier(FeatureColumns feature_columns, ClassifierOptions head = {},
                   LinearOptions options = {}, RunConfig config = RunConfig(),
                   std::optional<WarmStartSettings> warm_start_from = {});
};

class LinearRegressor : public LinearEstimator {
public:
  LinearRegressor(FeatureColumns feature_columns, RegressorOptions head = {},
                  LinearOptions options = {}, RunConfig config = RunConfig(),
                  std::optional<WarmStartSettings> warm_start_from = {});
};

// --- DNN ---------------------------------------------------------------------

struct DNNOptions {
  std::vector<int64_t> hidden_units;
  OptimizerSpec optimizer = "Adagrad";
  Activation activation_fn = nn::relu;
  /// The probability of dropping a hidden unit in TRAIN; none when unset.
  std::optional<double> dropout;
  bool batch_norm = false;
};

CannedModel dnn_model(std::shared_ptr<const Head> head,
                      FeatureColumns feature_columns, DNNOptions options);

class DNNEstimator : public CannedEstimator {
public:
  DNNEstimator(std::shared_ptr<const Head> head, FeatureColumns feature_columns,
               DNNOptions options, RunConfig config = RunConfig(),
               std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNClassifier : public DNNEstimator {
public:
  DNNClassifier(FeatureColumns feature_columns, DNNOptions options,
                ClassifierOptions head = {}, RunConfig config = RunConfig(),
                std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNRegressor : public DNNEstimator {
public:
  DNNRegressor(FeatureColumns feature_columns, DNNOptions options,
               RegressorOptions head = {}, RunConfig config = RunConfig(),
               std::optional<WarmStartSettings> warm_start_from = {});
};

// --- DNN + linear -----------------------------------------------------------

struct DNNLinearCombinedOptions {
  FeatureColumns linear_feature_columns;
  OptimizerSpec linear_optimizer = "Ftrl";
  FeatureColumns dnn_feature_columns;
  OptimizerSpec dnn_optimizer = "Adagrad";
  std::vector<int64_t> dnn_hidden_units;
  Activation dnn_activation_fn = nn::relu;
  std::optional<double> dnn_dropout;
  bool batch_norm = false;
  std::string linear_sparse_combiner = "sum";
};

CannedModel dnn_linear_combined_model(std::shared_ptr<const Head> head,
                                      DNNLinearCombinedOptions options);

class DNNLinearCombinedEstimator : public CannedEstimator {
public:
  DNNLinearCombinedEstimator(
      std::shared_ptr<const Head> head, DNNLinearCombinedOptions options,
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNLinearCombinedClassifier : public DNNLinearCombinedEstimator {
public:
  DNNLinearCombinedClassifier(
      DNNLinearCombinedOptions options, ClassifierOptions head = {},
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

class DNNLinearCombinedRegressor : public DNNLinearCombinedEstimator {
public:
  DNNLinearCombinedRegressor(
      DNNLinearCombinedOptions options, RegressorOptions head = {},
      RunConfig config = RunConfig(),
      std::optional<WarmStartSettings> warm_start_from = {});
};

// --- Baseline ----------------------------------------------------------------

/// The baseline reads no feature, but needs the batch size: its host
/// transform feeds this one input, F32 [batch, 1] of zeros.
constexpr const char *kBaselineBatchInput = "_estc_batch";

CannedModel baseline_model(std::shared_ptr<const Head> head,
                           OptimizerSpec optimizer = "Ftrl");

class BaselineEstimator : public CannedEstimator {
public:
  BaselineEstimator(std::shared_ptr<const Head> head,
                    OptimizerSpec optimizer = "Ftrl",
                    RunConfig config = RunConfig());
};

class BaselineClassifier : public BaselineEstimator {
public:
  explicit BaselineClassifier(ClassifierOptions head = {},
                              OptimizerSpec optimizer = "Ftrl",
                              RunConfig config = RunConfig());
};

class BaselineRegressor : public BaselineEstimator {
public:
  explicit BaselineRegressor(RegressorOptions head = {},
                             OptimizerSpec optimizer = "Ftrl",
                             RunConfig config = RunConfig());
};

/// TF's regressor head: RegressionHead(label_dimension, weight_column,
/// loss_reduction).
std::shared_ptr<const Head> regressor_head(const RegressorOptions &options);
std::shared_ptr<const Head> classifier_head(const ClassifierOptions &options);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_ESTIMATORS_H
