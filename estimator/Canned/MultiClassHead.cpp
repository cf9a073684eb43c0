//===- MultiClassHead.cpp - tf.estimator.MultiClassHead ------------------===//
//
// TF 2.15's head/multi_class_head.py: softmax cross-entropy over
// n_classes > 2, labels class ids or vocabulary strings.
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

MultiClassHead::MultiClassHead(int64_t n_classes, std::string weight_column,
                               std::vector<std::string> label_vocabulary,
                               Reduction loss_reduction, LossFn loss_fn,
                               std::string name)
    : SingleHead(std::move(name), loss_reduction, std::move(weight_column),
                 std::move(loss_fn)),
      nClasses_(n_classes), labelVocabulary_(std::move(label_vocabulary)) {
  if (!labelVocabulary_.empty() &&
      static_cast<int64_t>(labelVocabulary_.size()) != n_classes)
    throw std::invalid_argument(
        describe() +
        ": \"label_vocabulary\" does not have \"n_classes\" items. "
        "len(label_vocabulary)=" +
        std::to_string(labelVocabulary_.size()) +
        ", n_classes=" + std::to_string(n_classes));
  validateReduction(describe(), loss_reduction);
  if (n_classes <= 2)
    throw std::invalid_argument(
        describe() + ": n_classes must be > 2: " + std::to_string(n_classes) +
        " (two classes: BinaryClassHead)");
  lookup_ = makeLookup(describe(), labelVocabulary_);
}

std::string MultiClassHead::describe() const {
  return describeHead("MultiClassHead", name());
}

Tensor MultiClassHead::processedLabels(const Tensor &logits,
                                       const Tensor &labels) const {
  Tensor l = labelsMatchingLogits(labels, logits, 1);
  if (!is_integer(l.dtype()))
    throw std::invalid_argument(
        describe() +
        ": Labels dtype should be integer (class ids). Instead "
        "got " +
        to_string(l.dtype()));
  return check_range(l, 0, nClasses_, "label", "check_label_range");
}

Tensor MultiClassHead::builtinLoss(const Tensor &labels,
                                   const Tensor &logits) const {
  // tf.compat.v1.losses.sparse_softmax_cross_entropy(reduction=NONE), then
  // expand_dims(-1).
  Tensor ids = squeeze(labels, Dims{labels.rank() - 1});
  Tensor l = nn::sparse_softmax_cross_entropy_with_logits(ids, logits);
  return expand_dims(l, -1);
}

TensorMap
MultiClassHead::predictions(const Tensor &logits,
                            const std::vector<std::string> &keys) const {
  using K = PredictionKeys;
  checkPredictionKeys(describe(), keys,
                      {K::LOGITS, K::PROBABILITIES, K::CLASS_IDS, K::CLASSES,
                       K::ALL_CLASS_IDS, K::ALL_CLASSES});
  Tensor lg = checkedLogits(logits);
  auto scope = lg.graph().name_scope("predictions");
  TensorMap out;
  if (wants(keys, K::LOGITS))
    out.set(K::LOGITS, lg);
  if (wants(keys, K::PROBABILITIES))
    out.set(K::PROBABILITIES, nn::softmax(lg, -1, K::PROBABILITIES));
  if (wants(keys, K::CLASS_IDS) || wants(keys, K::CLASSES))
    out.set(K::CLASS_IDS, classIds(lg));
  if (wants(keys, K::ALL_CLASS_IDS) || wants(keys, K::ALL_CLASSES))
    out.set(K::ALL_CLASS_IDS, allClassIds(lg, nClasses_));
  return out;
}

NamedMetrics MultiClassHead::metrics(
    const TensorMap &features, const Tensor &logits, const Tensor &labels,
    const std::vector<Tensor> &regularization_losses) const {
  using K = MetricKeys;
  MetricInputs in =
      metricInputs(features, logits, labels, {PredictionKeys::CLASS_IDS});
  Tensor classIdsT = in.predictions.at(PredictionKeys::CLASS_IDS);
  const Tensor &ids = in.labels;
  const Tensor &w = in.weights;
  NamedMetrics &m = in.metrics;
  addRegularizationMetric(m, regularization_losses);
  m.emplace_back(summary_key(K::ACCURACY),
                 head_metrics::accuracy(K::ACCURACY, ids, classIdsT, w));
  return std::move(m);
}

std::map<std::string, ExportOutput>
MultiClassHead::export_outputs(const TensorMap &predictions) const {
  Tensor probabilities = predictions.at(PredictionKeys::PROBABILITIES);
  Tensor classes = predictions.contains(PredictionKeys::ALL_CLASS_IDS)
                       ? predictions.at(PredictionKeys::ALL_CLASS_IDS)
                       : allClassIds(probabilities, nClasses_);
  ExportOutput classification = ClassificationOutput(probabilities, classes);
  return {{DEFAULT_SERVING_KEY, classification},
          {CLASSIFY_SERVING_KEY, classification},
          {PREDICT_SERVING_KEY, PredictOutput(predictions)}};
}

TensorValue MultiClassHead::transform_labels(const TensorValue &labels) const {
  std::vector<int64_t> ids;
  if (lookup_) {
    if (labels.dtype != DType::String)
      throw std::invalid_argument(
          describe() +
          ": Labels dtype should be string if there is a vocabulary. Instead "
          "got " +
          std::string(dtype_name(labels.dtype)));
    ids = vocabularyIds(describe(), *lookup_, labels, denseRows(labels));
  } else {
    if (!is_integer(labels.dtype))
      throw std::invalid_argument(
          describe() +
          ": Labels dtype should be integer (class ids). "
          "Instead got " +
          std::string(dtype_name(labels.dtype)) +
          (labels.dtype == DType::String ? " (give label_vocabulary)" : ""));
    ids.resize(static_cast<size_t>(labels.num_elements()));
    for (int64_t i = 0; i < labels.num_elements(); ++i) {
      double v = labels.element(i);
      if (v < 0 || v >= static_cast<double>(nClasses_))
        throw data::DataError(
            describe() + ": label " + formatValue(v) + " at batch row " +
            std::to_string(batchRow(labels.shape, i)) + " is outside [0, " +
            std::to_string(nClasses_) + ")");
      ids[static_cast<size_t>(i)] = static_cast<int64_t>(v);
    }
  }
  return TensorValue::of<int64_t>(labels.shape, ids);
}

TensorValue MultiClassHead::class_names(const TensorValue &class_ids) const {
  return namesOf(describe(), class_ids, nClasses_, labelVocabulary_);
}

void MultiClassHead::complete_predictions(HostPrediction &prediction) const {
  addClassNames(prediction,
                [this](const TensorValue &ids) { return class_names(ids); });
}

} // namespace estimator
} // namespace estc
