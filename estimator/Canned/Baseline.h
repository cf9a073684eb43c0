//===- Baseline.h - BaselineClassifier, BaselineRegressor, ... -----------===//
//
// TF 2.15's canned/baseline.py: logits = "baseline/bias" for every
// example; Ftrl 0.3. baseline_model() gives the CannedModel (Canned.h; no
// LLVM); the classes are JIT Estimators built from it (link EstcCannedJit).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_BASELINE_H
#define ESTC_ESTIMATOR_CANNED_BASELINE_H

#include "estimator/Canned/CannedEstimator.h"

#include <memory>

namespace estc {
namespace estimator {

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

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_BASELINE_H
