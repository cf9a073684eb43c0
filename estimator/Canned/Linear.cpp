//===- Linear.cpp - TF 2.15's linear canned model (no LLVM) --------------===//
//
// TF's canned/linear.py: _linear_model_fn_builder_v2 (also DNNLinearCombined's
// linear part) and _linear_model_fn_v2 as linear_model()'s CannedModel. The
// JIT classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Linear.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/Checkpoint/Partitions.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Summaries.h"
#include "lib/Shape/ShapeFunctions.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

namespace detail {

/// TF's _linear_model_fn_builder_v2: the linear logits under "linear", and
/// its summaries in TRAIN.
Tensor linearLogits(const TensorMap &features, const FeatureColumns &columns,
                    int64_t units, const std::string &sparse_combiner,
                    ModeKeys mode, const Partitioner &partitioner) {
  Graph &g = get_default_graph();
  Tensor logits;
  {
    Scope scope = g.name_scope("linear");
    logits = fc::linear_model(features, columns, units, sparse_combiner, true,
                              partitioner);
  }
  if (mode != ModeKeys::TRAIN)
    return logits;
  // TF's summaries, outside the "linear" scope: tags "bias" and
  // "fraction_of_zero_weights" (_compute_fraction_of_zero: the zeros of
  // every weight but the bias over their total size).
  std::vector<Tensor> biasParts; // bias_weights, or its parts in order
  Tensor zeros;
  int64_t size = 0;
  for (const Variable &v : variablesUnder(g, "linear")) {
    std::optional<std::pair<std::string, int64_t>> part =
        train::parse_part_name(v.name());
    if ((part ? part->first : v.name()).ends_with("/bias_weights")) {
      biasParts.push_back(v.read());
      continue;
    }
    size += shape::numElements(v.shape()); // variables' shapes are known
    Tensor z = reduce_sum(cast(equal(v.read(), 0.0), DType::Int32));
    zeros = zeros.valid() ? add(zeros, z) : z;
  }
  Tensor bias = biasParts.empty()       ? Tensor()
                : biasParts.size() == 1 ? biasParts[0]
                                        : concat(biasParts, 0);
  if (bias.valid()) {
    if (units > 1)
      summary::histogram("bias", bias);
    else
      summary::scalar("bias", reshape(bias, {}));
  }
  if (zeros.valid())
    summary::scalar("fraction_of_zero_weights",
                    cast(zeros, DType::Float32) / static_cast<double>(size));
  return logits;
}

std::vector<Variable> variablesUnder(Graph &g, const std::string &scope) {
  std::vector<Variable> out;
  for (const Variable &v : g.trainable_variables())
    if (v.name().compare(0, scope.size() + 1, scope + "/") == 0)
      out.push_back(v);
  return out;
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
    Tensor logits =
        linearLogits(features, columns, head->logits_dimension(),
                     options.sparse_combiner, mode, options.partitioner);
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
