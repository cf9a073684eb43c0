//===- CannedEstimator.h - The JIT Estimator of a CannedModel ------------===//
//
// The base of every canned class (LinearClassifier, DNNRegressor, ...; the
// families' headers Linear.h, Dnn.h, DnnLinearCombined.h, Baseline.h): an
// Estimator whose model_fn is a CannedModel's (Canned.h), compiled in
// process, with the model's host transform installed. Defined in
// EstimatorsJit.cpp (library EstcCannedJit, the only canned code linking
// LLVM); an ahead-of-time trainer uses the CannedModel alone (EstcCanned).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_CANNEDESTIMATOR_H
#define ESTC_ESTIMATOR_CANNED_CANNEDESTIMATOR_H

#include "estimator/Canned/Canned.h"
#include "estimator/Estimator.h"

#include <optional>

namespace estc {
namespace estimator {

/// An Estimator over a CannedModel: its model_fn compiled by the JIT, its
/// host transform installed. The canned classes are these.
class CannedEstimator : public Estimator {
public:
  CannedEstimator(CannedModel model, RunConfig config = RunConfig(),
                  std::optional<WarmStartSettings> warm_start_from = {});
  /// The head, model_fn and host transform (for AOT graphs, export).
  const CannedModel &canned_model() const { return model_; }

private:
  CannedModel model_;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_CANNEDESTIMATOR_H
