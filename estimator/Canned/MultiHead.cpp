//===- MultiHead.cpp - tf.estimator.MultiHead ----------------------------===//
//
// TF 2.15's head/multi_head.py: several named heads on one logits tensor
// (split) or logits by head name; labels by head name.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Head.h"

#include "estimator/Canned/HeadInternal.h"
#include "estimator/Canned/HeadMetrics.h"
#include "lib/Graph/Ops.h"

#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {

using namespace detail;

namespace {
std::string joinedName(const std::vector<std::shared_ptr<const Head>> &heads) {
  std::string name;
  for (const auto &h : heads)
    if (h)
      name += (name.empty() ? "" : "_") + h->name();
  return name;
}
} // namespace

MultiHead::MultiHead(std::vector<std::shared_ptr<const Head>> heads,
                     std::vector<double> head_weights)
    : Head(joinedName(heads), Reduction::SUM_OVER_BATCH_SIZE),
      heads_(std::move(heads)), headWeights_(std::move(head_weights)) {
  if (heads_.empty())
    throw std::invalid_argument("MultiHead: Must specify heads. Given: none");
  if (!headWeights_.empty() && headWeights_.size() != heads_.size())
    throw std::invalid_argument(
        "MultiHead: heads and head_weights must have the same size. Given "
        "len(heads): " +
        std::to_string(heads_.size()) +
        ". Given len(head_weights): " + std::to_string(headWeights_.size()));
  std::set<std::string> names;
  for (const auto &h : heads_) {
    if (!h)
      throw std::invalid_argument("MultiHead: a head is null");
    if (h->name().empty())
      throw std::invalid_argument(
          "MultiHead: All given heads must have name specified");
    if (!names.insert(h->name()).second)
      throw std::invalid_argument("MultiHead: head name '" + h->name() +
                                  "' is given twice");
    logitsDimension_ += h->logits_dimension();
  }
}

Reduction MultiHead::loss_reduction() const {
  std::set<Reduction> reductions;
  std::string list;
  for (const auto &h : heads_) {
    Reduction r = h->loss_reduction();
    // AUTO is SUM_OVER_BATCH_SIZE for a head.
    reductions.insert(r == Reduction::AUTO ? Reduction::SUM_OVER_BATCH_SIZE
                                           : r);
    list += (list.empty() ? "" : ", ") + std::string(reduction_name(r));
  }
  if (reductions.size() > 1)
    throw std::invalid_argument(
        "MultiHead: The loss_reduction must be the same for different heads. "
        "Given: [" +
        list + "]");
  return heads_.front()->loss_reduction();
}

TensorMap MultiHead::split_logits(const Tensor &logits) const {
  requireTensor("MultiHead", logits, "logits");
  Dims s = logits.shape();
  std::string dims;
  for (const auto &h : heads_)
    dims += (dims.empty() ? "" : ", ") + std::to_string(h->logits_dimension());
  if (s.empty() || s.back() != logitsDimension_)
    throw std::invalid_argument(
        "MultiHead: Could not split logits of shape " + shapeString(s) +
        " among the heads with individual logits dimensions: [" + dims +
        "]. The last dimension of the logits tensor should equal " +
        std::to_string(logitsDimension_));
  auto scope = logits.graph().name_scope("split_logits");
  TensorMap out;
  int64_t begin = 0;
  for (const auto &h : heads_) {
    Dims b(s.size(), 0), size(s.size(), -1);
    b.back() = begin;
    size.back() = h->logits_dimension();
    out.set(h->name(), slice(logits, b, size, scopeName(h->name())));
    begin += h->logits_dimension();
  }
  return out;
}

TensorMap MultiHead::logitsByHead(const Logits &logits) const {
  if (!logits.is_map())
    return split_logits(logits.tensor());
  std::string missing;
  for (const auto &h : heads_)
    if (!logits.map().contains(h->name()))
      missing += (missing.empty() ? "" : ", ") + h->name();
  if (!missing.empty())
    throw std::invalid_argument(
        "MultiHead: logits has missing values for head(s): " + missing);
  return logits.map();
}

void MultiHead::checkLabels(const TensorMap &labels) const {
  std::string missing;
  for (const auto &h : heads_)
    if (!labels.contains(h->name()))
      missing += (missing.empty() ? "" : ", ") + h->name();
  if (!missing.empty())
    throw std::invalid_argument(
        "MultiHead: labels has missing values for head(s): " + missing);
}

Tensor MultiHead::loss(const TensorMap &labels, const Logits &logits,
                       const TensorMap &features, std::optional<ModeKeys> mode,
                       const std::vector<Tensor> &regularization_losses) const {
  TensorMap byHead = logitsByHead(logits);
  checkLabels(labels);
  Graph &g = byHead.begin()->second.graph();
  Tensor merged;
  for (size_t i = 0; i < heads_.size(); ++i) {
    const Head &h = *heads_[i];
    auto scope = g.name_scope(scopeName(h.name()));
    Tensor l = h.loss(labels.at(h.name()), byHead.at(h.name()), features, mode);
    if (!headWeights_.empty())
      l = multiply(l, headWeights_[i]);
    merged = merged.valid() ? add(merged, l) : l;
  }
  auto scope = g.name_scope("merge_losses");
  Tensor regularization = addN("MultiHead", regularization_losses);
  if (!regularization.valid())
    return merged;
  return add(merged, regularization, "regularized_training_loss");
}

Tensor
MultiHead::loss(const Tensor & /*labels*/, const Tensor & /*logits*/,
                const TensorMap & /*features*/,
                std::optional<ModeKeys> /*mode*/,
                const std::vector<Tensor> & /*regularization_losses*/) const {
  throw std::invalid_argument(
      "MultiHead: labels must be a dict keyed by head name (a TensorMap)");
}

TensorMap MultiHead::predictions(const Tensor &logits,
                                 const std::vector<std::string> &keys) const {
  (void)keys; // TF's MultiHead predicts every key of every head.
  return predictions(Logits(logits));
}

TensorMap MultiHead::predictions(const Logits &logits) const {
  TensorMap byHead = logitsByHead(logits);
  Graph &g = byHead.begin()->second.graph();
  auto scope = g.name_scope("merge_pred");
  TensorMap out;
  for (const auto &h : heads_) {
    auto perHead = g.name_scope(scopeName(h->name()));
    for (const auto &[key, t] : h->predictions(byHead.at(h->name())))
      out.set(h->name() + "/" + key, t);
  }
  return out;
}

NamedMetrics
MultiHead::metrics(const TensorMap &features, const Logits &logits,
                   const TensorMap &labels,
                   const std::vector<Tensor> &regularization_losses) const {
  TensorMap byHead = logitsByHead(logits);
  checkLabels(labels);
  Graph &g = byHead.begin()->second.graph();
  NamedMetrics m;
  addRegularizationMetric(m, "MultiHead",
                          summary_key(MetricKeys::LOSS_REGULARIZATION),
                          regularization_losses);
  NamedMetrics headMetrics;
  for (const auto &h : heads_) {
    auto scope = g.name_scope(scopeName(h->name()));
    const Tensor &headLogits = byHead.at(h->name());
    const Tensor &headLabels = labels.at(h->name());
    std::string lossKey = std::string(MetricKeys::LOSS) + "/" + h->name();
    Tensor headLoss = h->loss(headLabels, headLogits, features);
    m.emplace_back(
        lossKey,
        head_metrics::mean(MetricKeys::LOSS, headLoss, Tensor()).metric);
    for (auto &metric : h->metrics(features, headLogits, headLabels))
      headMetrics.push_back(std::move(metric));
  }
  m.insert(m.end(), headMetrics.begin(), headMetrics.end());
  return m;
}

NamedMetrics MultiHead::metrics(
    const TensorMap & /*features*/, const Tensor & /*logits*/,
    const Tensor & /*labels*/,
    const std::vector<Tensor> & /*regularization_losses*/) const {
  throw std::invalid_argument(
      "MultiHead: labels must be a dict keyed by head name (a TensorMap)");
}

EstimatorSpec MultiHead::create_estimator_spec(
    const TensorMap &features, ModeKeys mode, const Logits &logits,
    const TensorMap &labels, const std::optional<train::Optimizer> &optimizer,
    const std::vector<Variable> &trainable_variables,
    const TrainOpFn &train_op_fn, const std::vector<Operation> &update_ops,
    const std::vector<Tensor> &regularization_losses) const {
  TensorMap byHead = logitsByHead(logits);
  Graph &g = byHead.begin()->second.graph();
  auto scope = headScope(g, name());
  EstimatorSpec spec(mode);
  spec.predictions = predictions(Logits(byHead));
  if (mode == ModeKeys::PREDICT) {
    spec.export_outputs = export_outputs(spec.predictions);
    return spec;
  }
  if (labels.empty())
    throw std::invalid_argument(
        "MultiHead: You must provide labels (by head name) in TRAIN and "
        "EVAL");
  spec.loss =
      loss(labels, Logits(byHead), features, mode, regularization_losses);
  if (mode == ModeKeys::EVAL) {
    spec.eval_metric_ops =
        metrics(features, Logits(byHead), labels, regularization_losses);
    return spec;
  }
  loss_reduction(); // The heads must agree, as TF checks here.
  spec.train_op = createTrainOp("MultiHead", spec.loss, optimizer,
                                trainable_variables, train_op_fn, update_ops);
  return spec;
}

EstimatorSpec MultiHead::create_estimator_spec(
    const TensorMap &features, ModeKeys mode, const Tensor &logits,
    const Tensor &labels, const std::optional<train::Optimizer> &optimizer,
    const std::vector<Variable> &trainable_variables,
    const TrainOpFn &train_op_fn, const std::vector<Operation> &update_ops,
    const std::vector<Tensor> &regularization_losses) const {
  if (mode != ModeKeys::PREDICT || labels.valid())
    throw std::invalid_argument(
        "MultiHead: labels must be a dict keyed by head name (a TensorMap)");
  return create_estimator_spec(features, mode, Logits(logits), TensorMap(),
                               optimizer, trainable_variables, train_op_fn,
                               update_ops, regularization_losses);
}

std::map<std::string, ExportOutput>
MultiHead::export_outputs(const TensorMap &predictions) const {
  // TF's _merge_predict_export_outputs.
  std::map<std::string, ExportOutput> out;
  TensorMap mergedPredict;
  for (size_t i = 0; i < heads_.size(); ++i) {
    const Head &h = *heads_[i];
    std::string prefix = h.name() + "/";
    TensorMap headPredictions;
    for (const auto &[key, t] : predictions)
      if (key.compare(0, prefix.size(), prefix) == 0)
        headPredictions.set(key.substr(prefix.size()), t);
    std::map<std::string, ExportOutput> headOutputs =
        h.export_outputs(headPredictions);
    if (i == 0) {
      if (headOutputs.size() == 1)
        out[DEFAULT_SERVING_KEY] = headOutputs.begin()->second;
      else if (headOutputs.count(DEFAULT_SERVING_KEY))
        out[DEFAULT_SERVING_KEY] = headOutputs.at(DEFAULT_SERVING_KEY);
      else
        throw std::invalid_argument(
            "MultiHead: " + h.name() +
            " did not specify default export_outputs (key serving_default)");
    }
    for (const auto &[key, outputs] : headOutputs) {
      out[key == DEFAULT_SERVING_KEY ? h.name() : prefix + key] = outputs;
      if (key == PREDICT_SERVING_KEY)
        for (const auto &[k, t] : outputs.outputs)
          mergedPredict.set(prefix + k, t);
    }
  }
  out[PREDICT_SERVING_KEY] = PredictOutput(mergedPredict);
  return out;
}

std::map<std::string, TensorValue> MultiHead::transform_labels(
    const std::map<std::string, TensorValue> &labels) const {
  std::map<std::string, TensorValue> out;
  for (const auto &h : heads_) {
    auto it = labels.find(h->name());
    if (it == labels.end())
      throw std::invalid_argument(
          "MultiHead: labels has missing values for head(s): " + h->name());
    out[h->name()] = h->transform_labels(it->second);
  }
  return out;
}

TensorValue MultiHead::transform_labels(const TensorValue &labels) const {
  (void)labels;
  throw std::invalid_argument(
      "MultiHead: labels must be a dict keyed by head name");
}

void MultiHead::complete_predictions(HostPrediction &prediction) const {
  for (const auto &h : heads_) {
    std::string prefix = h->name() + "/";
    HostPrediction headPrediction;
    for (const auto &[key, value] : prediction)
      if (key.compare(0, prefix.size(), prefix) == 0)
        headPrediction[key.substr(prefix.size())] = value;
    h->complete_predictions(headPrediction);
    for (auto &[key, value] : headPrediction)
      prediction[prefix + key] = std::move(value);
  }
}

} // namespace estimator
} // namespace estc
