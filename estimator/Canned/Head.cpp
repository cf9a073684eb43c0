//===- Head.cpp - tf.estimator heads: loss, predictions, metrics, specs --===//
//
// Each head follows its TF 2.15 counterpart step by step (the comments name
// the TF function a block mirrors); the metrics are estimator/Canned/
// HeadMetrics.h's Keras metrics.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Head.h"

#include "estimator/Canned/HeadMetrics.h"
#include "lib/Graph/Ops.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace {

using NamedMetrics = Head::NamedMetrics;

/// Python's '%g' % value (metric keys: "accuracy/positive_threshold_0.5").
std::string formatG(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// A label value in a message: integers as they are, floats to 9 digits.
std::string formatValue(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

/// `format` (one %g, %d or %s) filled with `value`.
std::string formatKey(const std::string &format, const std::string &value) {
  size_t at = format.find('%');
  return format.substr(0, at) + value + format.substr(at + 2);
}

std::string shapeString(const Dims &dims) { return shape::toString(dims); }

/// A name scope made of a metric key or head name: characters a node name
/// cannot hold become '_'.
std::string scopeName(const std::string &key) {
  std::string out;
  for (char c : key)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
            c == '-' || c == '.' || c == '/')
               ? c
               : '_';
  while (!out.empty() && out.front() == '/')
    out.erase(out.begin());
  while (!out.empty() && out.back() == '/')
    out.pop_back();
  for (size_t at; (at = out.find("//")) != std::string::npos;)
    out.erase(at, 1);
  return out.empty() ? "_" : out;
}

/// A head's name scope: unique in the mode, one level ('/' becomes '_').
Scope headScope(Graph &g, const std::string &name) {
  std::string base = scopeName(name);
  for (char &c : base)
    if (c == '/')
      c = '_';
  return g.name_scope(g.unique_layer_name(base));
}

/// The batch row of element `i` of a tensor of `shape`.
int64_t batchRow(const std::vector<int64_t> &shape, int64_t i) {
  if (shape.empty() || shape[0] == 0)
    return 0;
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  int64_t perRow = total / shape[0];
  return perRow == 0 ? 0 : i / perRow;
}

void validateReduction(const std::string &who, Reduction reduction) {
  if (reduction == Reduction::NONE)
    throw std::invalid_argument(who +
                                ": Invalid loss_reduction: none (it gives no "
                                "scalar loss; use sum or sum_over_batch_size)");
}

std::string describeHead(const char *kind, const std::string &name) {
  return name.empty() ? std::string(kind)
                      : std::string(kind) + " '" + name + "'";
}

void requireTensor(const std::string &who, const Tensor &t, const char *what) {
  if (!t.valid() || !t.has_value())
    throw std::invalid_argument(who + ": " + what +
                                " must be a tensor with a value");
}

/// Dims compatible (an unknown dimension matches anything).
bool compatible(const Dims &a, const Dims &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && a[i] != shape::kUnknownDim &&
        b[i] != shape::kUnknownDim)
      return false;
  return true;
}

/// The sum of the regularization losses (tf.math.add_n), or invalid.
Tensor addN(const std::string &who, const std::vector<Tensor> &losses) {
  Tensor sum;
  for (const Tensor &l : losses) {
    requireTensor(who, l, "a regularization loss");
    if (!l.shape().empty() || !is_floating(l.dtype()))
      throw std::invalid_argument(who + ": regularization loss '" + l.name() +
                                  "' must be a float scalar, got " +
                                  to_string(l.dtype()) + " " +
                                  shapeString(l.shape()));
    Tensor f = l.dtype() == DType::Float32 ? l : cast(l, DType::Float32);
    sum = sum.valid() ? add(sum, f) : f;
  }
  return sum;
}

/// Keras's compute_weighted_loss: losses * weights, then summed (SUM) or
/// summed and divided by the number of weighted loss elements
/// (SUM_OVER_BATCH_SIZE, AUTO; divide_no_nan).
Tensor computeWeightedLoss(const Tensor &losses, const Tensor &weights,
                           Reduction reduction) {
  Tensor weighted = weights.valid() ? multiply(losses, weights) : losses;
  Tensor sum = reduce_sum(weighted);
  if (reduction == Reduction::SUM)
    return sum;
  Tensor count = reduce_sum(ones_like(weighted));
  return where(not_equal(count, 0.0), divide(sum, count), 0.0, "value");
}

/// tf.group(train_op, *update_ops): the one place a head groups its train
/// op (batch normalization's moving-statistics updates run with it).
Operation groupTrainOp(const std::string &who, const Operation &train_op,
                       const std::vector<Operation> &update_ops) {
  if (update_ops.empty())
    return train_op;
  for (const Operation &op : update_ops)
    if (!op.valid())
      throw std::invalid_argument(who + ": update_ops holds an invalid op");
  std::vector<Operation> ops = {train_op};
  ops.insert(ops.end(), update_ops.begin(), update_ops.end());
  return group(ops);
}

/// TF's base_head.create_estimator_spec_train_op.
Operation createTrainOp(const std::string &who, const Tensor &loss,
                        const std::optional<train::Optimizer> &optimizer,
                        const std::vector<Variable> &trainable_variables,
                        const Head::TrainOpFn &train_op_fn,
                        const std::vector<Operation> &update_ops) {
  auto scope = loss.graph().name_scope("training");
  Operation trainOp;
  if (optimizer) {
    if (train_op_fn)
      throw std::invalid_argument(
          who + ": train_op_fn and optimizer cannot both be set");
    trainOp = optimizer->minimize(loss, trainable_variables);
  } else if (train_op_fn) {
    trainOp = train_op_fn(loss);
    if (!trainOp.valid())
      throw std::invalid_argument(who + ": train_op_fn returned an invalid op");
  } else {
    throw std::invalid_argument(
        who + ": train_op_fn and optimizer cannot both be None");
  }
  return groupTrainOp(who, trainOp, update_ops);
}

/// TF's base_head.all_class_ids: I64 [D0, ..., n] holding 0..n-1 in every
/// row (`like` has the batch dimensions and n in its last).
Tensor allClassIds(const Tensor &like, int64_t n,
                   const std::string &name = PredictionKeys::ALL_CLASS_IDS) {
  std::vector<double> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = static_cast<double>(i);
  // TF tiles tf.range(n_classes): INT32.
  Tensor iota = like.graph().constant(ids, {n}, DType::Int32, "class_range");
  return add(zeros_like(like, DType::Int32), iota, name);
}

/// argmax over the last axis, as [D0, ..., 1] I64.
Tensor classIds(const Tensor &logits) {
  Tensor ids = argmax(logits, logits.rank() - 1);
  return expand_dims(ids, -1, PredictionKeys::CLASS_IDS);
}

void checkPredictionKeys(const std::string &who,
                         const std::vector<std::string> &keys,
                         const std::vector<std::string> &valid) {
  for (const std::string &key : keys) {
    bool ok = false;
    for (const std::string &v : valid)
      ok = ok || v == key;
    if (!ok) {
      std::string list;
      for (const std::string &v : valid)
        list += (list.empty() ? "" : ", ") + v;
      throw std::invalid_argument(who +
                                  ": Prediction key must be in "
                                  "PredictionKeys, given: '" +
                                  key + "'. Valid prediction keys include " +
                                  list);
    }
  }
}

bool wants(const std::vector<std::string> &keys, const char *key) {
  if (keys.empty())
    return true;
  for (const std::string &k : keys)
    if (k == key)
      return true;
  return false;
}

/// The names of class ids (vocabulary entries or decimal ids), same shape.
TensorValue namesOf(const std::string &who, const TensorValue &ids,
                    int64_t n_classes,
                    const std::vector<std::string> &vocabulary) {
  if (!is_integer(ids.dtype))
    throw std::invalid_argument(who + ": class ids must be integers, got " +
                                std::string(dtype_name(ids.dtype)));
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(ids.num_elements()));
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    double id = ids.element(i);
    if (id < 0 || id >= static_cast<double>(n_classes))
      throw std::invalid_argument(who + ": class id " + formatValue(id) +
                                  " is outside [0, " +
                                  std::to_string(n_classes) + ")");
    auto k = static_cast<int64_t>(id);
    names.push_back(vocabulary.empty() ? std::to_string(k)
                                       : vocabulary[static_cast<size_t>(k)]);
  }
  return TensorValue::of_strings(ids.shape, std::move(names));
}

/// "classes" / "all_classes" of a prediction from its "class_ids" /
/// "all_class_ids".
void addClassNames(HostPrediction &prediction,
                   const std::function<TensorValue(const TensorValue &)> &f) {
  auto ids = prediction.find(PredictionKeys::CLASS_IDS);
  if (ids != prediction.end())
    prediction[PredictionKeys::CLASSES] = f(ids->second);
  auto all = prediction.find(PredictionKeys::ALL_CLASS_IDS);
  if (all != prediction.end())
    prediction[PredictionKeys::ALL_CLASSES] = f(all->second);
}

/// Class ids of string labels through `lookup`; DataError for a label not
/// in the vocabulary, naming it and its batch row (`rowOf` its position).
std::vector<int64_t>
vocabularyIds(const std::string &who, const data::VocabularyLookup &lookup,
              const TensorValue &labels,
              const std::function<int64_t(int64_t)> &rowOf) {
  std::vector<int64_t> ids = lookup.lookup(labels).values<int64_t>();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0)
      throw data::DataError(who + ": label '" + labels.strings[i] +
                            "' at batch row " +
                            std::to_string(rowOf(static_cast<int64_t>(i))) +
                            " is not in label_vocabulary");
  return ids;
}

/// The batch row of each element of a dense tensor.
std::function<int64_t(int64_t)> denseRows(const TensorValue &t) {
  return [shape = t.shape](int64_t i) { return batchRow(shape, i); };
}

/// Numeric labels as float32, each checked in [lo, hi] when `check`.
TensorValue floatLabels(const std::string &who, const TensorValue &labels,
                        bool check, double lo, double hi,
                        const std::string &why = "") {
  if (labels.dtype == DType::String)
    throw std::invalid_argument(
        who + ": labels are strings; give label_vocabulary, or numeric labels");
  if (labels.dtype == DType::Invalid)
    throw std::invalid_argument(who + ": labels have no dtype");
  std::vector<float> values(static_cast<size_t>(labels.num_elements()));
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    double v = labels.element(i);
    if (check && !(v >= lo && v <= hi))
      throw data::DataError(
          who + ": label " + formatValue(v) + " at batch row " +
          std::to_string(batchRow(labels.shape, i)) + " is outside [" +
          formatValue(lo) + ", " + formatValue(hi) + "]" + why);
    values[static_cast<size_t>(i)] = static_cast<float>(v);
  }
  return TensorValue::of<float>(labels.shape, values);
}

std::optional<data::VocabularyLookup>
makeLookup(const std::string &who, const std::vector<std::string> &vocabulary) {
  if (vocabulary.empty())
    return std::nullopt;
  try {
    return data::VocabularyLookup(vocabulary);
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(who + ": label_vocabulary: " + e.what());
  }
}

} // namespace

const char *reduction_name(Reduction reduction) {
  switch (reduction) {
  case Reduction::AUTO:
    return "auto";
  case Reduction::NONE:
    return "none";
  case Reduction::SUM:
    return "sum";
  case Reduction::SUM_OVER_BATCH_SIZE:
    return "sum_over_batch_size";
  }
  return "?";
}

// --- Head
// ----------------------------------------------------------------------

Head::Head(std::string name, Reduction loss_reduction)
    : name_(std::move(name)), lossReduction_(loss_reduction) {}

Head::~Head() = default;

std::string Head::summary_key(const std::string &key) const {
  return name_.empty() ? key : key + "/" + name_;
}

TensorValue Head::transform_labels(const data::SparseTensor &labels) const {
  (void)labels;
  throw std::invalid_argument(
      describe() +
      ": SparseTensor labels are not supported; labels must be a dense "
      "tensor [D0, ..., DN, " +
      std::to_string(logits_dimension()) + "]");
}

TensorValue Head::transform_labels(const data::Value &labels) const {
  if (const auto *sparse = std::get_if<data::SparseTensor>(&labels))
    return transform_labels(*sparse);
  return transform_labels(std::get<TensorValue>(labels));
}

void Head::complete_predictions(HostPrediction &prediction) const {
  (void)prediction;
}

EstimatorSpec Head::create_estimator_spec(
    const TensorMap &features, ModeKeys mode, const Tensor &logits,
    const Tensor &labels, const std::optional<train::Optimizer> &optimizer,
    const std::vector<Variable> &trainable_variables,
    const TrainOpFn &train_op_fn, const std::vector<Operation> &update_ops,
    const std::vector<Tensor> &regularization_losses) const {
  requireTensor(describe(), logits, "logits");
  Graph &g = logits.graph();
  auto scope = headScope(g, name_.empty() ? "head" : name_);
  EstimatorSpec spec(mode);
  spec.predictions = predictions(logits);
  if (mode == ModeKeys::PREDICT) {
    spec.export_outputs = export_outputs(spec.predictions);
    return spec;
  }
  spec.loss = loss(labels, logits, features, mode, regularization_losses);
  if (mode == ModeKeys::EVAL) {
    spec.eval_metric_ops =
        metrics(features, logits, labels, regularization_losses);
    return spec;
  }
  spec.train_op = createTrainOp(describe(), spec.loss, optimizer,
                                trainable_variables, train_op_fn, update_ops);
  return spec;
}

// --- SingleHead --------------------------------------------------------------

SingleHead::SingleHead(std::string name, Reduction loss_reduction,
                       std::string weight_column, LossFn loss_fn)
    : Head(std::move(name), loss_reduction),
      weightColumn_(std::move(weight_column)), lossFn_(std::move(loss_fn)) {}

Tensor SingleHead::checkedLogits(const Tensor &logits) const {
  requireTensor(describe(), logits, "logits");
  Dims s = logits.shape();
  if (s.size() < 2)
    throw std::invalid_argument(
        describe() + ": logits must have rank at least 2. Received rank " +
        std::to_string(s.size()) + ", shape " + shapeString(s));
  if (s.back() != logits_dimension())
    throw std::invalid_argument(
        describe() + ": logits shape must be [D0, D1, ... DN, " +
        std::to_string(logits_dimension()) + "], got " + shapeString(s));
  if (logits.dtype() == DType::Float32)
    return logits;
  if (!is_floating(logits.dtype()) && !is_integer(logits.dtype()))
    throw std::invalid_argument(describe() + ": logits must be numeric, got " +
                                to_string(logits.dtype()));
  return cast(logits, DType::Float32);
}

Tensor SingleHead::labelsMatchingLogits(const Tensor &labels,
                                        const Tensor &logits,
                                        int64_t expected_dimension) const {
  if (!labels.valid())
    throw std::invalid_argument(
        describe() +
        ": You must provide a labels Tensor. Given: None. Check that your "
        "input_fn returns labels");
  requireTensor(describe(), labels, "labels");
  if (labels.dtype() == DType::String)
    throw std::invalid_argument(describe() +
                                ": string labels must be transformed on the "
                                "host first (transform_labels)");
  Tensor l = labels;
  if (l.rank() == logits.rank() - 1)
    l = expand_dims(l, -1);
  Dims s = l.shape();
  if (s.size() < 2)
    throw std::invalid_argument(
        describe() + ": labels must have rank at least 2. Received rank " +
        std::to_string(s.size()) + ", shape " + shapeString(s));
  if (s.back() != shape::kUnknownDim && s.back() != expected_dimension)
    throw std::invalid_argument(
        describe() + ": Mismatched label shape. Expected labels dimension=" +
        std::to_string(expected_dimension) + ". Received " +
        std::to_string(s.back()) +
        ". Check n_classes / label_dimension and "
        "the shape of your labels");
  Dims expected = logits.shape();
  expected.back() = expected_dimension;
  if (!compatible(expected, s))
    throw std::invalid_argument(
        describe() + ": labels shape must be [D0, D1, ... DN, " +
        std::to_string(expected_dimension) + "], expected_labels_shape: " +
        shapeString(expected) + ". labels_shape: " + shapeString(s));
  return l;
}

Tensor SingleHead::weights(const TensorMap &features,
                           const Tensor &logits) const {
  if (weightColumn_.empty())
    return Tensor();
  if (!features.contains(weightColumn_)) {
    std::string keys;
    for (const auto &[key, t] : features)
      keys += (keys.empty() ? "" : ", ") + key;
    throw std::invalid_argument(describe() + ": weight_column '" +
                                weightColumn_ + "' is not a feature (" +
                                (keys.empty() ? "no features" : keys) + ")");
  }
  Tensor w = features.at(weightColumn_);
  requireTensor(describe(), w, "the weight column");
  if (!is_floating(w.dtype()) && !is_integer(w.dtype()))
    throw std::invalid_argument(
        describe() + ": Weight column '" + weightColumn_ +
        "' should be castable to float. Given dtype: " + to_string(w.dtype()));
  if (w.dtype() != DType::Float32)
    w = cast(w, DType::Float32);
  Dims logitsShape = logits.shape();
  if (w.rank() == logits.rank() - 1)
    w = expand_dims(w, -1, "weights");
  Dims withOne = logitsShape;
  withOne.back() = 1;
  bool ok = compatible(withOne, w.shape()) ||
            (allowPerLogitWeights() && compatible(logitsShape, w.shape()));
  if (!ok)
    throw std::invalid_argument(
        describe() + ": weights shape must be [D0, D1, ... DN]" +
        (allowPerLogitWeights() ? ", [D0, D1, ... DN, 1] or [D0, D1, ... DN, "
                                  "logits_dimension]"
                                : " or [D0, D1, ... DN, 1]") +
        ", logits_shape: " + shapeString(logitsShape) +
        ". weights_shape: " + shapeString(features.at(weightColumn_).shape()) +
        " (weight_column '" + weightColumn_ + "')");
  return w;
}

Tensor SingleHead::unweightedLoss(const Tensor &labels, const Tensor &logits,
                                  const TensorMap &features) const {
  if (!lossFn_)
    return builtinLoss(labels, logits);
  Tensor l = lossFn_(labels, logits, features);
  requireTensor(describe(), l, "loss_fn's result");
  Dims expected = logits.shape();
  expected.back() = lossDimension();
  if (!is_floating(l.dtype()) || !compatible(expected, l.shape()))
    throw std::invalid_argument(
        describe() +
        ": loss_fn must return a float Tensor of shape [D0, D1, "
        "... DN, " +
        std::to_string(lossDimension()) +
        "]. logits_shape: " + shapeString(logits.shape()) +
        ", loss: " + to_string(l.dtype()) + " " + shapeString(l.shape()));
  return l.dtype() == DType::Float32 ? l : cast(l, DType::Float32);
}

Tensor
SingleHead::loss(const Tensor &labels, const Tensor &logits,
                 const TensorMap &features, std::optional<ModeKeys> mode,
                 const std::vector<Tensor> &regularization_losses) const {
  (void)mode; // Unused, as in TF.
  Tensor lg = checkedLogits(logits);
  auto scope = lg.graph().name_scope("losses");
  Tensor processed = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(processed, lg, features);
  Tensor w = weights(features, lg);
  Tensor training = computeWeightedLoss(unweighted, w, loss_reduction());
  Tensor regularization = addN(describe(), regularization_losses);
  if (!regularization.valid())
    return training;
  return add(training, regularization, "regularized_training_loss");
}

void SingleHead::addRegularizationMetric(
    NamedMetrics &metrics, const std::vector<Tensor> &losses) const {
  Tensor regularization = addN(describe(), losses);
  if (!regularization.valid())
    return;
  metrics.emplace_back(summary_key(MetricKeys::LOSS_REGULARIZATION),
                       head_metrics::mean(MetricKeys::LOSS_REGULARIZATION,
                                          regularization, Tensor())
                           .metric);
}

// --- BinaryClassHead ---------------------------------------------------------

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
  Tensor lg = checkedLogits(logits);
  TensorMap preds =
      predictions(lg, {PredictionKeys::LOGISTIC, PredictionKeys::CLASS_IDS});
  Tensor classIdsT = preds[PredictionKeys::CLASS_IDS];
  Tensor logistic = preds[PredictionKeys::LOGISTIC];
  auto scope = lg.graph().name_scope("metrics");
  Tensor l = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(l, lg, features);
  Tensor w = weights(features, lg);
  NamedMetrics m;
  m.emplace_back(summary_key(K::LOSS_MEAN),
                 head_metrics::mean(K::LOSS_MEAN, unweighted, w).metric);
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
  return m;
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

// --- MultiClassHead ----------------------------------------------------------

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
  Tensor lg = checkedLogits(logits);
  Tensor classIdsT = predictions(lg, {PredictionKeys::CLASS_IDS})
                         .at(PredictionKeys::CLASS_IDS);
  auto scope = lg.graph().name_scope("metrics");
  Tensor ids = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(ids, lg, features);
  Tensor w = weights(features, lg);
  NamedMetrics m;
  m.emplace_back(summary_key(K::LOSS_MEAN),
                 head_metrics::mean(K::LOSS_MEAN, unweighted, w).metric);
  addRegularizationMetric(m, regularization_losses);
  m.emplace_back(summary_key(K::ACCURACY),
                 head_metrics::accuracy(K::ACCURACY, ids, classIdsT, w));
  return m;
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

// --- MultiLabelHead ----------------------------------------------------------

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
  Tensor lg = checkedLogits(logits);
  Tensor probabilities = predictions(lg, {PredictionKeys::PROBABILITIES})
                             .at(PredictionKeys::PROBABILITIES);
  auto scope = lg.graph().name_scope("metrics");
  Tensor l = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(l, lg, features);
  Tensor w = weights(features, lg);
  NamedMetrics m;
  m.emplace_back(summary_key(K::LOSS_MEAN),
                 head_metrics::mean(K::LOSS_MEAN, unweighted, w).metric);
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
  return m;
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

// --- RegressionHead ----------------------------------------------------------

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
  Tensor lg = checkedLogits(logits);
  Tensor predicted = predictions(lg, {PredictionKeys::PREDICTIONS})
                         .at(PredictionKeys::PREDICTIONS);
  auto scope = lg.graph().name_scope("metrics");
  Tensor l = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(l, lg, features);
  Tensor w = weights(features, lg);
  NamedMetrics m;
  m.emplace_back(summary_key(K::LOSS_MEAN),
                 head_metrics::mean(K::LOSS_MEAN, unweighted, w).metric);
  m.emplace_back(summary_key(K::PREDICTION_MEAN),
                 head_metrics::mean(K::PREDICTION_MEAN, predicted, w).metric);
  m.emplace_back(summary_key(K::LABEL_MEAN),
                 head_metrics::mean(K::LABEL_MEAN, l, w).metric);
  addRegularizationMetric(m, regularization_losses);
  return m;
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

// --- MultiHead ---------------------------------------------------------------

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
  Tensor regularization = addN("MultiHead", regularization_losses);
  if (regularization.valid())
    m.emplace_back(summary_key(MetricKeys::LOSS_REGULARIZATION),
                   head_metrics::mean(MetricKeys::LOSS_REGULARIZATION,
                                      regularization, Tensor())
                       .metric);
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
