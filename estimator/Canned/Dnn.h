//===- Dnn.h - DNNClassifier, DNNRegressor, DNNEstimator -----------------===//
//
// TF 2.15's canned/dnn.py: input_layer under
// "dnn/input_from_feature_columns", then "dnn/hiddenlayer_<i>"
// (activation_fn, dropout in TRAIN, batch norm
// "dnn/hiddenlayer_<i>/batchnorm_<i>" with momentum 0.999), then
// "dnn/logits"; Adagrad at Keras' default learning rate 0.001 (TF 2.15's
// _dnn_model_fn_v2 passes a named optimizer no rate; the v1 estimator's
// 0.05 is not used). dnn_model() gives the CannedModel (Canned.h; no LLVM);
// the classes are JIT Estimators built from it (link EstcCannedJit).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_DNN_H
#define ESTC_ESTIMATOR_CANNED_DNN_H

#include "estimator/Canned/CannedEstimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/PartitionedVariables.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace estc {
namespace estimator {

struct DNNOptions {
  std::vector<int64_t> hidden_units;
  OptimizerSpec optimizer = "Adagrad";
  Activation activation_fn = nn::relu;
  /// The probability of dropping a hidden unit in TRAIN; none when unset.
  std::optional<double> dropout;
  bool batch_norm = false;
  /// TF 1's input_layer_partitioner: the input layer's embedding tables as
  /// partitioned variables (".../embedding_weights/part_<i>", looked up
  /// with the "div" strategy), spread over the ps tasks of parameter-server
  /// training; e.g. min_max_variable_partitioner(num_ps, 0, 64 << 20),
  /// TF 1's default in a cluster with ps tasks. None: one variable each
  /// (TF 2's canned estimators).
  Partitioner input_layer_partitioner = nullptr;
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

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_DNN_H
