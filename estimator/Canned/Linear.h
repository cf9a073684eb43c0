//===- Linear.h - LinearClassifier, LinearRegressor, LinearEstimator -----===//
//
// TF 2.15's canned/linear.py: logits = linear_model(features) under
// "linear" ("linear/linear_model/<column>/weights", ".../bias_weights");
// Ftrl, learning rate min(0.2, 1/sqrt(number of columns)). linear_model()
// gives the CannedModel (Canned.h; no LLVM, for ahead-of-time graphs); the
// classes are JIT Estimators built from it (link EstcCannedJit).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_LINEAR_H
#define ESTC_ESTIMATOR_CANNED_LINEAR_H

#include "estimator/Canned/CannedEstimator.h"
#include "lib/Graph/PartitionedVariables.h"

#include <memory>
#include <optional>
#include <string>

namespace estc {
namespace estimator {

struct LinearOptions {
  OptimizerSpec optimizer = "Ftrl";
  std::string sparse_combiner = "sum";
  /// TF 1's LinearClassifier `partitioner`: every weight of the linear
  /// model a partitioned variable (".../weights/part_<i>"), the
  /// categorical columns' looked up with the "div" strategy. None: one
  /// variable each (TF 2).
  Partitioner partitioner = nullptr;
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

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_LINEAR_H
