//===- Linear.cpp - TF 2.15's linear canned model (no LLVM) --------------===//
//
// TF's canned/linear.py: _linear_model_fn_builder_v2 (also DNNLinearCombined's
// linear part) and _linear_model_fn_v2 as linear_model()'s CannedModel. The
// JIT classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Linear.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/FeatureColumn/FeatureLayers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

namespace detail {

/// TF's _linear_model_fn_builder_v2: the linear logits under "linear".
Tensor linearLogits(const TensorMap &features, const FeatureColumns &columns,
                    int64_t units, const std::string &sparse_combiner) {
  Graph &g = get_default_graph();
  Scope scope = g.name_scope("linear");
  return fc::linear_model(features, columns, units, sparse_combiner);
}

} // namespace detail

using namespace detail;

CannedModel linear_model(std::shared_ptr<const Head> head,
                         FeatureColumns feature_columns,
                         LinearOptions options) {
  checkHead("LinearEstimator", head);
  check_feature_columns("LinearEstimator", feature_columns);
  if (options.sparse_combiner != "sum" && options.sparse_combiner != "mean" &&
      options.sparse_combiner != "sqrtn")
    throw std::invalid_argument("LinearEstimator: sparse_combiner must be "
                                "one of sum, mean, sqrtn; got '" +
                                options.sparse_combiner + "'");
  // TF's _linear_learning_rate.
  double lr = std::min(
      0.2, 1.0 / std::sqrt(static_cast<double>(feature_columns.size())));
  // An unknown optimizer name fails here, not at the first train().
  options.optimizer.get(lr);
  ModelFn fn = [head, columns = feature_columns, options,
                lr](const TensorMap &features, const Tensor &labels,
                    ModeKeys mode, const Params &, const RunConfig &) {
    Tensor logits = linearLogits(features, columns, head->logits_dimension(),
                                 options.sparse_combiner);
    std::optional<train::Optimizer> optimizer;
    if (mode == ModeKeys::TRAIN)
      optimizer = options.optimizer.get(lr);
    return head->create_estimator_spec(features, mode, logits, labels,
                                       optimizer);
  };
  return makeModel(std::move(head), std::move(fn), std::move(feature_columns));
}

} // namespace estimator
} // namespace estc
