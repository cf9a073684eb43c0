//===- EstimatorsJit.cpp - The canned estimators as JIT Estimators -------===//
//
// Each class is an Estimator over its CannedModel's model_fn (compiled in
// process, estimator/EstimatorJit.cpp) with the model's host transform
// installed. Library EstcCannedJit: the only canned code linking LLVM.
// One file for the four families (Linear.h, Dnn.h, DnnLinearCombined.h,
// Baseline.h), unlike their models (Linear.cpp, ...): each constructor
// only forwards its family's `*_model` to CannedEstimator, and keeping the
// JIT boundary to one translation unit keeps EstcCannedJit one source.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"

namespace estc {
namespace estimator {

CannedEstimator::CannedEstimator(CannedModel model, RunConfig config,
                                 std::optional<WarmStartSettings> warm)
    : Estimator(model.model_fn, std::move(config), Params(), std::move(warm)),
      model_(std::move(model)) {
  set_host_transform(model_.transform);
}

LinearEstimator::LinearEstimator(std::shared_ptr<const Head> head,
                                 FeatureColumns feature_columns,
                                 LinearOptions options, RunConfig config,
                                 std::optional<WarmStartSettings> warm)
    : CannedEstimator(linear_model(std::move(head), std::move(feature_columns),
                                   std::move(options)),
                      std::move(config), std::move(warm)) {}

LinearClassifier::LinearClassifier(FeatureColumns feature_columns,
                                   ClassifierOptions head,
                                   LinearOptions options, RunConfig config,
                                   std::optional<WarmStartSettings> warm)
    : LinearEstimator(classifier_head(head), std::move(feature_columns),
                      std::move(options), std::move(config), std::move(warm)) {}

LinearRegressor::LinearRegressor(FeatureColumns feature_columns,
                                 RegressorOptions head, LinearOptions options,
                                 RunConfig config,
                                 std::optional<WarmStartSettings> warm)
    : LinearEstimator(regressor_head(head), std::move(feature_columns),
                      std::move(options), std::move(config), std::move(warm)) {}

DNNEstimator::DNNEstimator(std::shared_ptr<const Head> head,
                           FeatureColumns feature_columns, DNNOptions options,
                           RunConfig config,
                           std::optional<WarmStartSettings> warm)
    : CannedEstimator(dnn_model(std::move(head), std::move(feature_columns),
                                std::move(options)),
                      std::move(config), std::move(warm)) {}

DNNClassifier::DNNClassifier(FeatureColumns feature_columns, DNNOptions options,
                             ClassifierOptions head, RunConfig config,
                             std::optional<WarmStartSettings> warm)
    : DNNEstimator(classifier_head(head), std::move(feature_columns),
                   std::move(options), std::move(config), std::move(warm)) {}

DNNRegressor::DNNRegressor(FeatureColumns feature_columns, DNNOptions options,
                           RegressorOptions head, RunConfig config,
                           std::optional<WarmStartSettings> warm)
    : DNNEstimator(regressor_head(head), std::move(feature_columns),
                   std::move(options), std::move(config), std::move(warm)) {}

DNNLinearCombinedEstimator::DNNLinearCombinedEstimator(
    std::shared_ptr<const Head> head, DNNLinearCombinedOptions options,
    RunConfig config, std::optional<WarmStartSettings> warm)
    : CannedEstimator(
          dnn_linear_combined_model(std::move(head), std::move(options)),
          std::move(config), std::move(warm)) {}

DNNLinearCombinedClassifier::DNNLinearCombinedClassifier(
    DNNLinearCombinedOptions options, ClassifierOptions head, RunConfig config,
    std::optional<WarmStartSettings> warm)
    : DNNLinearCombinedEstimator(classifier_head(head), std::move(options),
                                 std::move(config), std::move(warm)) {}

DNNLinearCombinedRegressor::DNNLinearCombinedRegressor(
    DNNLinearCombinedOptions options, RegressorOptions head, RunConfig config,
    std::optional<WarmStartSettings> warm)
    : DNNLinearCombinedEstimator(regressor_head(head), std::move(options),
                                 std::move(config), std::move(warm)) {}

BaselineEstimator::BaselineEstimator(std::shared_ptr<const Head> head,
                                     OptimizerSpec optimizer, RunConfig config)
    : CannedEstimator(baseline_model(std::move(head), std::move(optimizer)),
                      std::move(config)) {}

BaselineClassifier::BaselineClassifier(ClassifierOptions head,
                                       OptimizerSpec optimizer,
                                       RunConfig config)
    : BaselineEstimator(classifier_head(head), std::move(optimizer),
                        std::move(config)) {}

BaselineRegressor::BaselineRegressor(RegressorOptions head,
                                     OptimizerSpec optimizer, RunConfig config)
    : BaselineEstimator(regressor_head(head), std::move(optimizer),
                        std::move(config)) {}

RNNEstimator::RNNEstimator(std::shared_ptr<const Head> head,
                           FeatureColumns sequence_feature_columns,
                           RNNOptions options, RunConfig config,
                           std::optional<WarmStartSettings> warm)
    : CannedEstimator(rnn_model(std::move(head),
                                std::move(sequence_feature_columns),
                                std::move(options)),
                      std::move(config), std::move(warm)) {}

RNNClassifier::RNNClassifier(FeatureColumns sequence_feature_columns,
                             RNNOptions options, RNNClassifierOptions head,
                             RunConfig config,
                             std::optional<WarmStartSettings> warm)
    : RNNEstimator(classifier_head(head), std::move(sequence_feature_columns),
                   std::move(options), std::move(config), std::move(warm)) {}

} // namespace estimator
} // namespace estc
