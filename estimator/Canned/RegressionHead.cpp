//===- RegressionHead.cpp - tf.estimator.RegressionHead and GLM heads ----===//
//
// TF 2.15's head/regression_head.py: RegressionHead (mean squared
// error), PoissonRegressionHead and LogisticRegressionHead.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Head.h"

#include "estimator/Canned/HeadInternal.h"
#include "estimator/Canned/HeadMetrics.h"
#include "lib/Graph/Ops.h"

#include <stdexcept>

namespace estc {
namespace estimator {

using namespace detail;

RegressionHead::RegressionHead(int64_t label_dimension,
                               std::string weight_column,
                               Reduction loss_reduction, LossFn loss_fn,
                               InverseLinkFn inverse_link_fn, std::string name)
    : RegressionHead("RegressionHead", label_dimension,
                     std::move(weight_column), loss_reduction,
                     std::move(loss_fn), std::move(inverse_link_fn),
                     std::move(name)) {}

RegressionHead::RegressionHead(const char *kind, int64_t label_dimension,
                               std::string weight_column,
                               Reduction loss_reduction, LossFn loss_fn,
                               InverseLinkFn inverse_link_fn, std::string name)
    : SingleHead(std::move(name), loss_reduction, std::move(weight_column),
                 std::move(loss_fn)),
      kind_(kind), labelDimension_(label_dimension),
      inverseLinkFn_(std::move(inverse_link_fn)) {
  if (label_dimension < 1)
    throw std::invalid_argument(describe() + ": Invalid label_dimension " +
                                std::to_string(label_dimension));
  validateReduction(describe(), loss_reduction);
}

std::string RegressionHead::describe() const {
  return describeHead(kind_, name());
}

Tensor RegressionHead::processedLabels(const Tensor &logits,
                                       const Tensor &labels) const {
  Tensor l = labelsMatchingLogits(labels, logits, labelDimension_);
  return l.dtype() == DType::Float32 ? l : cast(l, DType::Float32);
}

Tensor RegressionHead::builtinLoss(const Tensor &labels,
                                   const Tensor &logits) const {
  // tf.compat.v1.losses.mean_squared_error(reduction=NONE).
  return square(subtract(labels, logits));
}

TensorMap
RegressionHead::predictions(const Tensor &logits,
                            const std::vector<std::string> &keys) const {
  using K = PredictionKeys;
  std::vector<std::string> valid = {K::PREDICTIONS};
  if (inverseLinkFn_)
    valid.push_back(K::LOGITS);
  checkPredictionKeys(describe(), keys, valid);
  Tensor lg = checkedLogits(logits);
  auto scope = lg.graph().name_scope("predictions");
  TensorMap out;
  if (!inverseLinkFn_) {
    out.set(K::PREDICTIONS, lg);
    return out;
  }
  if (wants(keys, K::PREDICTIONS)) {
    Tensor value = inverseLinkFn_(lg);
    requireTensor(describe(), value, "inverse_link_fn's result");
    out.set(K::PREDICTIONS, value);
  }
  if (wants(keys, K::LOGITS))
    out.set(K::LOGITS, lg);
  return out;
}

NamedMetrics RegressionHead::metrics(
    const TensorMap &features, const Tensor &logits, const Tensor &labels,
    const std::vector<Tensor> &regularization_losses) const {
  using K = MetricKeys;
  MetricInputs in =
      metricInputs(features, logits, labels, {PredictionKeys::PREDICTIONS});
  Tensor predicted = in.predictions.at(PredictionKeys::PREDICTIONS);
  const Tensor &l = in.labels;
  const Tensor &w = in.weights;
  NamedMetrics &m = in.metrics;
  m.emplace_back(summary_key(K::PREDICTION_MEAN),
                 head_metrics::mean(K::PREDICTION_MEAN, predicted, w).metric);
  m.emplace_back(summary_key(K::LABEL_MEAN),
                 head_metrics::mean(K::LABEL_MEAN, l, w).metric);
  addRegularizationMetric(m, regularization_losses);
  return std::move(m);
}

std::map<std::string, ExportOutput>
RegressionHead::export_outputs(const TensorMap &predictions) const {
  ExportOutput regression =
      RegressionOutput(predictions.at(PredictionKeys::PREDICTIONS));
  return {{DEFAULT_SERVING_KEY, regression},
          {REGRESS_SERVING_KEY, regression},
          {PREDICT_SERVING_KEY, PredictOutput(predictions)}};
}

TensorValue RegressionHead::transform_labels(const TensorValue &labels) const {
  return floatLabels(describe(), labels, /*check=*/false, 0.0, 0.0);
}

PoissonRegressionHead::PoissonRegressionHead(int64_t label_dimension,
                                             std::string weight_column,
                                             Reduction loss_reduction,
                                             bool compute_full_loss,
                                             std::string name)
    : RegressionHead(
          "PoissonRegressionHead", label_dimension, std::move(weight_column),
          loss_reduction,
          // tf.nn.log_poisson_loss(targets=labels, log_input=logits).
          [compute_full_loss](const Tensor &labels, const Tensor &logits,
                              const TensorMap &) {
            Tensor result = subtract(exp(logits), multiply(logits, labels));
            if (!compute_full_loss)
              return result;
            // The Stirling approximation of log(labels!), 0 for labels in
            // [0, 1] (TF's 2 * math.pi).
            const double kTwoPi = 6.283185307179586;
            Tensor stirling =
                add(subtract(multiply(labels, log(labels)), labels),
                    multiply(0.5, log(multiply(kTwoPi, labels))));
            Tensor inUnit = logical_and(greater_equal(labels, 0.0),
                                        less_equal(labels, 1.0));
            return add(result, where(inUnit, zeros_like(labels), stirling));
          },
          [](const Tensor &logits) { return exp(logits); }, std::move(name)) {}

LogisticRegressionHead::LogisticRegressionHead(std::string weight_column,
                                               Reduction loss_reduction,
                                               std::string name)
    : RegressionHead(
          "LogisticRegressionHead", 1, std::move(weight_column), loss_reduction,
          [](const Tensor &labels, const Tensor &logits, const TensorMap &) {
            return nn::sigmoid_cross_entropy_with_logits(labels, logits);
          },
          [](const Tensor &logits) { return sigmoid(logits); },
          std::move(name)) {}

Tensor LogisticRegressionHead::processedLabels(const Tensor &logits,
                                               const Tensor &labels) const {
  Tensor l = labelsMatchingLogits(labels, logits, 1);
  if (is_integer(l.dtype()))
    l = check_range(l, 0, 2, "label", "check_label_range");
  return l.dtype() == DType::Float32 ? l : cast(l, DType::Float32);
}

TensorValue
LogisticRegressionHead::transform_labels(const TensorValue &labels) const {
  return floatLabels(describe(), labels, /*check=*/true, 0.0, 1.0);
}

} // namespace estimator
} // namespace estc
