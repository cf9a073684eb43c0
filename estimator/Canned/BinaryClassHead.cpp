//===- BinaryClassHead.cpp - tf.estimator.BinaryClassHead ----------------===//
//
// TF 2.15's head/binary_class_head.py: sigmoid cross-entropy over one
// logit, labels 0/1, [0, 1] or a two-entry vocabulary.
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

BinaryClassHead::BinaryClassHead(std::string weight_column,
                                 std::vector<double> thresholds,
                                 std::vector<std::string> label_vocabulary,
                                 Reduction loss_reduction, LossFn loss_fn,
                                 std::string name)
    : SingleHead(std::move(name), loss_reduction, std::move(weight_column),
                 std::move(loss_fn)),
      thresholds_(std::move(thresholds)),
      labelVocabulary_(std::move(label_vocabulary)) {
  for (double t : thresholds_)
    if (!(t > 0.0 && t < 1.0))
      throw std::invalid_argument(describe() +
                                  ": thresholds not in (0, 1): " + formatG(t));
  validateReduction(describe(), loss_reduction);
  if (!labelVocabulary_.empty() && labelVocabulary_.size() != 2)
    throw std::invalid_argument(
        describe() +
        ": label_vocabulary must have 2 entries (class 0, class "
        "1), got " +
        std::to_string(labelVocabulary_.size()));
  lookup_ = makeLookup(describe(), labelVocabulary_);
}

std::string BinaryClassHead::describe() const {
  return describeHead("BinaryClassHead", name());
}

Tensor BinaryClassHead::processedLabels(const Tensor &logits,
                                        const Tensor &labels) const {
  Tensor l = labelsMatchingLogits(labels, logits, 1);
  if (is_integer(l.dtype()))
    l = check_range(l, 0, 2, "label", "check_label_range");
  return l.dtype() == DType::Float32 ? l : cast(l, DType::Float32);
}

Tensor BinaryClassHead::builtinLoss(const Tensor &labels,
                                    const Tensor &logits) const {
  return nn::sigmoid_cross_entropy_with_logits(labels, logits);
}

TensorMap
BinaryClassHead::predictions(const Tensor &logits,
                             const std::vector<std::string> &keys) const {
  using K = PredictionKeys;
  checkPredictionKeys(describe(), keys,
                      {K::LOGITS, K::LOGISTIC, K::PROBABILITIES, K::CLASS_IDS,
                       K::CLASSES, K::ALL_CLASS_IDS, K::ALL_CLASSES});
  Tensor lg = checkedLogits(logits);
  auto scope = lg.graph().name_scope("predictions");
  TensorMap out;
  if (wants(keys, K::LOGITS))
    out.set(K::LOGITS, lg);
  if (wants(keys, K::LOGISTIC))
    out.set(K::LOGISTIC, sigmoid(lg, K::LOGISTIC));
  Tensor twoClassLogits =
      concat({zeros_like(lg), lg}, lg.rank() - 1, "two_class_logits");
  if (wants(keys, K::PROBABILITIES))
    out.set(K::PROBABILITIES,
            nn::softmax(twoClassLogits, -1, K::PROBABILITIES));
  if (wants(keys, K::CLASS_IDS) || wants(keys, K::CLASSES))
    out.set(K::CLASS_IDS, classIds(twoClassLogits));
  if (wants(keys, K::ALL_CLASS_IDS) || wants(keys, K::ALL_CLASSES))
    out.set(K::ALL_CLASS_IDS, allClassIds(twoClassLogits, 2));
  return out;
}

NamedMetrics BinaryClassHead::metrics(
    const TensorMap &features, const Tensor &logits, const Tensor &labels,
    const std::vector<Tensor> &regularization_losses) const {
  using K = MetricKeys;
  MetricInputs in =
      metricInputs(features, logits, labels,
                   {PredictionKeys::LOGISTIC, PredictionKeys::CLASS_IDS});
  Tensor classIdsT = in.predictions[PredictionKeys::CLASS_IDS];
  Tensor logistic = in.predictions[PredictionKeys::LOGISTIC];
  const Tensor &l = in.labels;
  const Tensor &w = in.weights;
  NamedMetrics &m = in.metrics;
  m.emplace_back(summary_key(K::ACCURACY),
                 head_metrics::accuracy(K::ACCURACY, l, classIdsT, w));
  m.emplace_back(summary_key(K::PRECISION),
                 head_metrics::precision(K::PRECISION, l, classIdsT, 0.5, w));
  m.emplace_back(summary_key(K::RECALL),
                 head_metrics::recall(K::RECALL, l, classIdsT, 0.5, w));
  m.emplace_back(summary_key(K::PREDICTION_MEAN),
                 head_metrics::mean(K::PREDICTION_MEAN, logistic, w).metric);
  head_metrics::MeanMetric labelMean = head_metrics::mean(K::LABEL_MEAN, l, w);
  m.emplace_back(summary_key(K::LABEL_MEAN), labelMean.metric);
  // Reads label/mean's state; updated by label/mean's ops.
  m.emplace_back(summary_key(K::ACCURACY_BASELINE),
                 Metric{head_metrics::accuracy_baseline(labelMean), {}});
  m.emplace_back(summary_key(K::AUC),
                 head_metrics::auc(K::AUC, l, logistic, w, /*pr_curve=*/false));
  m.emplace_back(summary_key(K::AUC_PR),
                 head_metrics::auc(K::AUC_PR, l, logistic, w,
                                   /*pr_curve=*/true));
  addRegularizationMetric(m, regularization_losses);
  for (double t : thresholds_) {
    std::string accuracyKey = formatKey(K::ACCURACY_AT_THRESHOLD, formatG(t));
    std::string precisionKey = formatKey(K::PRECISION_AT_THRESHOLD, formatG(t));
    std::string recallKey = formatKey(K::RECALL_AT_THRESHOLD, formatG(t));
    m.emplace_back(summary_key(accuracyKey),
                   head_metrics::binary_accuracy(scopeName(accuracyKey), l,
                                                 logistic, t, w));
    m.emplace_back(
        summary_key(precisionKey),
        head_metrics::precision(scopeName(precisionKey), l, logistic, t, w));
    m.emplace_back(
        summary_key(recallKey),
        head_metrics::recall(scopeName(recallKey), l, logistic, t, w));
  }
  return std::move(m);
}

std::map<std::string, ExportOutput>
BinaryClassHead::export_outputs(const TensorMap &predictions) const {
  Tensor probabilities = predictions.at(PredictionKeys::PROBABILITIES);
  Tensor classes = predictions.contains(PredictionKeys::ALL_CLASS_IDS)
                       ? predictions.at(PredictionKeys::ALL_CLASS_IDS)
                       : allClassIds(probabilities, 2);
  ExportOutput classification = ClassificationOutput(probabilities, classes);
  return {{DEFAULT_SERVING_KEY, classification},
          {CLASSIFY_SERVING_KEY, classification},
          {REGRESS_SERVING_KEY,
           RegressionOutput(predictions.at(PredictionKeys::LOGISTIC))},
          {PREDICT_SERVING_KEY, PredictOutput(predictions)}};
}

TensorValue BinaryClassHead::transform_labels(const TensorValue &labels) const {
  if (lookup_) {
    if (labels.dtype != DType::String)
      throw std::invalid_argument(
          describe() + ": labels must be strings of label_vocabulary, got " +
          std::string(dtype_name(labels.dtype)));
    std::vector<int64_t> ids =
        vocabularyIds(describe(), *lookup_, labels, denseRows(labels));
    return TensorValue::of<float>(labels.shape,
                                  std::vector<float>(ids.begin(), ids.end()));
  }
  return floatLabels(describe(), labels, /*check=*/true, 0.0, 1.0);
}

TensorValue BinaryClassHead::class_names(const TensorValue &class_ids) const {
  return namesOf(describe(), class_ids, 2, labelVocabulary_);
}

void BinaryClassHead::complete_predictions(HostPrediction &prediction) const {
  addClassNames(prediction,
                [this](const TensorValue &ids) { return class_names(ids); });
}

} // namespace estimator
} // namespace estc
