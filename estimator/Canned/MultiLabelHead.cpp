//===- MultiLabelHead.cpp - tf.estimator.MultiLabelHead ------------------===//
//
// TF 2.15's head/multi_label_head.py: sigmoid cross-entropy per class,
// labels a multi-hot indicator (dense) or class ids / strings (sparse).
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

MultiLabelHead::MultiLabelHead(int64_t n_classes, std::string weight_column,
                               std::vector<double> thresholds,
                               std::vector<std::string> label_vocabulary,
                               Reduction loss_reduction, LossFn loss_fn,
                               ClassList classes_for_class_based_metrics,
                               std::string name)
    : SingleHead(std::move(name), loss_reduction, std::move(weight_column),
                 std::move(loss_fn)),
      nClasses_(n_classes), thresholds_(std::move(thresholds)),
      labelVocabulary_(std::move(label_vocabulary)) {
  if (n_classes < 2)
    throw std::invalid_argument(
        describe() +
        ": n_classes must be > 1 for multi-label classification. Given: " +
        std::to_string(n_classes));
  for (double t : thresholds_)
    if (!(t > 0.0 && t < 1.0))
      throw std::invalid_argument(
          describe() +
          ": thresholds must be in (0, 1) range. Given: " + formatG(t));
  if (!labelVocabulary_.empty() &&
      static_cast<int64_t>(labelVocabulary_.size()) != n_classes)
    throw std::invalid_argument(
        describe() + ": Length of label_vocabulary must be n_classes (" +
        std::to_string(n_classes) +
        "). Given: " + std::to_string(labelVocabulary_.size()));
  validateReduction(describe(), loss_reduction);
  lookup_ = makeLookup(describe(), labelVocabulary_);
  for (const std::string &className : classes_for_class_based_metrics.names()) {
    if (labelVocabulary_.empty())
      throw std::invalid_argument(
          describe() + ": label_vocabulary must be provided when "
                       "classes_for_class_based_metrics are strings");
    int64_t id = lookup_->lookup(TensorValue::of_strings({1}, {className}))
                     .values<int64_t>()[0];
    if (id < 0)
      throw std::invalid_argument(describe() +
                                  ": classes_for_class_based_metrics: '" +
                                  className + "' is not in label_vocabulary");
    classesForClassBasedMetrics_.push_back(id);
  }
  for (int64_t id : classes_for_class_based_metrics.ids()) {
    if (id < 0 || id >= n_classes)
      throw std::invalid_argument(
          describe() +
          ": All classes_for_class_based_metrics must be in range [0, " +
          std::to_string(n_classes - 1) + "]. Given: " + std::to_string(id));
    classesForClassBasedMetrics_.push_back(id);
  }
}

std::string MultiLabelHead::describe() const {
  return describeHead("MultiLabelHead", name());
}

Tensor MultiLabelHead::processedLabels(const Tensor &logits,
                                       const Tensor &labels) const {
  Tensor l = labelsMatchingLogits(labels, logits, nClasses_);
  if (is_integer(l.dtype()))
    l = check_range(l, 0, 2, "label", "check_label_range");
  return l;
}

Tensor MultiLabelHead::builtinLoss(const Tensor &labels,
                                   const Tensor &logits) const {
  // tf.compat.v1.losses.sigmoid_cross_entropy(reduction=NONE): labels cast
  // to the logits' dtype; then the mean over the classes.
  Tensor l =
      labels.dtype() == DType::Float32 ? labels : cast(labels, DType::Float32);
  Tensor perClass = nn::sigmoid_cross_entropy_with_logits(l, logits);
  return reduce_mean(perClass, Dims{perClass.rank() - 1}, /*keep_dims=*/true);
}

TensorMap
MultiLabelHead::predictions(const Tensor &logits,
                            const std::vector<std::string> &keys) const {
  using K = PredictionKeys;
  checkPredictionKeys(describe(), keys,
                      {K::LOGITS, K::PROBABILITIES, K::CLASSES});
  Tensor lg = checkedLogits(logits);
  auto scope = lg.graph().name_scope("predictions");
  TensorMap out;
  if (wants(keys, K::LOGITS))
    out.set(K::LOGITS, lg);
  // "classes" (every class name) is the host's, in probabilities' shape.
  if (wants(keys, K::PROBABILITIES) || wants(keys, K::CLASSES))
    out.set(K::PROBABILITIES, sigmoid(lg, K::PROBABILITIES));
  return out;
}

NamedMetrics MultiLabelHead::metrics(
    const TensorMap &features, const Tensor &logits, const Tensor &labels,
    const std::vector<Tensor> &regularization_losses) const {
  using K = MetricKeys;
  MetricInputs in =
      metricInputs(features, logits, labels, {PredictionKeys::PROBABILITIES});
  const Tensor &lg = in.logits;
  Tensor probabilities = in.predictions.at(PredictionKeys::PROBABILITIES);
  const Tensor &l = in.labels;
  const Tensor &w = in.weights;
  NamedMetrics &m = in.metrics;
  m.emplace_back(summary_key(K::AUC),
                 head_metrics::auc(K::AUC, l, probabilities, w,
                                   /*pr_curve=*/false));
  m.emplace_back(summary_key(K::AUC_PR),
                 head_metrics::auc(K::AUC_PR, l, probabilities, w,
                                   /*pr_curve=*/true));
  addRegularizationMetric(m, regularization_losses);
  for (double t : thresholds_) {
    std::string accuracyKey = formatKey(K::ACCURACY_AT_THRESHOLD, formatG(t));
    std::string precisionKey = formatKey(K::PRECISION_AT_THRESHOLD, formatG(t));
    std::string recallKey = formatKey(K::RECALL_AT_THRESHOLD, formatG(t));
    m.emplace_back(summary_key(accuracyKey),
                   head_metrics::binary_accuracy(scopeName(accuracyKey), l,
                                                 probabilities, t, w));
    m.emplace_back(summary_key(precisionKey),
                   head_metrics::precision(scopeName(precisionKey), l,
                                           probabilities, t, w));
    m.emplace_back(
        summary_key(recallKey),
        head_metrics::recall(scopeName(recallKey), l, probabilities, t, w));
  }
  for (int64_t c : classesForClassBasedMetrics_) {
    std::string probabilityKey, aucKey, aucPrKey;
    if (labelVocabulary_.empty()) {
      std::string id = std::to_string(c);
      probabilityKey = formatKey(K::PROBABILITY_MEAN_AT_CLASS, id);
      aucKey = formatKey(K::AUC_AT_CLASS, id);
      aucPrKey = formatKey(K::AUC_PR_AT_CLASS, id);
    } else {
      const std::string &className = labelVocabulary_[static_cast<size_t>(c)];
      probabilityKey = formatKey(K::PROBABILITY_MEAN_AT_NAME, className);
      aucKey = formatKey(K::AUC_AT_NAME, className);
      aucPrKey = formatKey(K::AUC_PR_AT_NAME, className);
    }
    // The class's column (TF's tf.slice of probabilities and labels).
    Dims begin(static_cast<size_t>(lg.rank()), 0);
    Dims size(static_cast<size_t>(lg.rank()), -1);
    begin.back() = c;
    size.back() = 1;
    Tensor classProbabilities = slice(probabilities, begin, size);
    Tensor classLabels = slice(l, begin, size);
    // Scopes by class id: a vocabulary entry may hold any character.
    std::string suffix = "class" + std::to_string(c);
    m.emplace_back(
        summary_key(probabilityKey),
        head_metrics::mean("probability_mean/" + suffix, classProbabilities, w)
            .metric);
    m.emplace_back(summary_key(aucKey),
                   head_metrics::auc("auc/" + suffix, classLabels,
                                     classProbabilities, w,
                                     /*pr_curve=*/false));
    m.emplace_back(summary_key(aucPrKey),
                   head_metrics::auc("auc_precision_recall/" + suffix,
                                     classLabels, classProbabilities, w,
                                     /*pr_curve=*/true));
  }
  return std::move(m);
}

std::map<std::string, ExportOutput>
MultiLabelHead::export_outputs(const TensorMap &predictions) const {
  Tensor probabilities = predictions.at(PredictionKeys::PROBABILITIES);
  ExportOutput classification = ClassificationOutput(
      probabilities, allClassIds(probabilities, nClasses_));
  return {{DEFAULT_SERVING_KEY, classification},
          {CLASSIFY_SERVING_KEY, classification},
          {PREDICT_SERVING_KEY, PredictOutput(predictions)}};
}

TensorValue MultiLabelHead::transform_labels(const TensorValue &labels) const {
  if (labels.dtype == DType::String)
    throw std::invalid_argument(
        describe() + ": dense labels must be a numeric indicator [batch, " +
        std::to_string(nClasses_) +
        "]; string labels go in a SparseTensor of vocabulary entries");
  const std::string why =
      " (labels must be an integer indicator Tensor with values in [0, 1])";
  TensorValue values =
      floatLabels(describe(), labels, /*check=*/true, 0.0, 1.0, why);
  if (!is_integer(labels.dtype) && labels.dtype != DType::Bool)
    return values;
  std::vector<int64_t> ids(static_cast<size_t>(labels.num_elements()));
  for (int64_t i = 0; i < labels.num_elements(); ++i)
    ids[static_cast<size_t>(i)] = static_cast<int64_t>(labels.element(i));
  return TensorValue::of<int64_t>(labels.shape, ids);
}

TensorValue
MultiLabelHead::transform_labels(const data::SparseTensor &labels) const {
  if (labels.rank() != 2)
    throw std::invalid_argument(
        describe() +
        ": sparse labels must be [batch, k] (each example's "
        "classes), got dense_shape " +
        shapeString(labels.dense_shape));
  std::vector<int64_t> index = labels.index_values();
  std::vector<int64_t> ids;
  if (labels.values.dtype == DType::String) {
    if (!lookup_)
      throw std::invalid_argument(describe() +
                                  ": string labels need label_vocabulary");
    ids = vocabularyIds(describe(), *lookup_, labels.values,
                        [&index](int64_t k) { return index[2 * k]; });
  } else {
    if (!is_integer(labels.values.dtype))
      throw std::invalid_argument(
          describe() + ": Labels dtype should be integer. Instead got " +
          std::string(dtype_name(labels.values.dtype)));
    ids = labels.values.values<int64_t>();
  }
  int64_t batch = labels.dense_shape[0];
  std::vector<int64_t> indicator(static_cast<size_t>(batch * nClasses_), 0);
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t row = index[2 * k];
    if (ids[k] < 0 || ids[k] >= nClasses_)
      throw data::DataError(
          describe() + ": label " + std::to_string(ids[k]) + " at batch row " +
          std::to_string(row) + " is outside [0, " + std::to_string(nClasses_) +
          ") (labels must be an integer SparseTensor with values in [0, " +
          std::to_string(nClasses_) + "))");
    if (row < 0 || row >= batch)
      throw data::DataError(describe() + ": sparse label index row " +
                            std::to_string(row) + " is outside the batch of " +
                            std::to_string(batch));
    indicator[static_cast<size_t>(row * nClasses_ + ids[k])] = 1;
  }
  return TensorValue::of<int64_t>({batch, nClasses_}, indicator);
}

TensorValue MultiLabelHead::class_names(const TensorValue &class_ids) const {
  return namesOf(describe(), class_ids, nClasses_, labelVocabulary_);
}

void MultiLabelHead::complete_predictions(HostPrediction &prediction) const {
  auto source = prediction.find(PredictionKeys::PROBABILITIES);
  if (source == prediction.end())
    source = prediction.find(PredictionKeys::LOGITS);
  if (source == prediction.end())
    return;
  const std::vector<int64_t> &shape = source->second.shape;
  if (shape.empty() || shape.back() != nClasses_)
    throw std::invalid_argument(describe() + ": prediction '" + source->first +
                                "' " + shapeString(shape) +
                                " does not end in n_classes " +
                                std::to_string(nClasses_));
  std::vector<int64_t> ids(static_cast<size_t>(source->second.num_elements()));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(i) % nClasses_;
  prediction[PredictionKeys::CLASSES] =
      class_names(TensorValue::of<int64_t>(shape, ids));
}

} // namespace estimator
} // namespace estc
