//===- Head.cpp - The heads' base: Head, SingleHead, shared helpers ------===//
//
// TF 2.15's head/base_head.py: what every head shares (the helpers of
// HeadInternal.h, Head's create_estimator_spec, SingleHead's labels,
// weights, loss and metrics prologue). Each head is in a file of its own,
// as TF's head modules: BinaryClassHead.cpp, MultiClassHead.cpp,
// MultiLabelHead.cpp, RegressionHead.cpp (with the Poisson and logistic
// heads), MultiHead.cpp. Each follows its TF counterpart step by step (the
// comments name the TF function a block mirrors); the metrics are
// estimator/Canned/HeadMetrics.h's Keras metrics.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Head.h"

#include "estimator/Canned/HeadInternal.h"
#include "estimator/Canned/HeadMetrics.h"
#include "lib/Graph/Ops.h"
#include "lib/Shape/ShapeFunctions.h"

#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

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

void addRegularizationMetric(NamedMetrics &metrics, const std::string &who,
                             const std::string &key,
                             const std::vector<Tensor> &losses) {
  Tensor regularization = addN(who, losses);
  if (!regularization.valid())
    return;
  metrics.emplace_back(key, head_metrics::mean(MetricKeys::LOSS_REGULARIZATION,
                                               regularization, Tensor())
                                .metric);
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
Tensor allClassIds(const Tensor &like, int64_t n, const std::string &name) {
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
                        const std::string &why) {
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

} // namespace detail

using namespace detail;

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

// --- Head --------------------------------------------------------------------

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
  if (!shape::isCompatible(expected, s))
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
  bool ok =
      shape::isCompatible(withOne, w.shape()) ||
      (allowPerLogitWeights() && shape::isCompatible(logitsShape, w.shape()));
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
  if (!is_floating(l.dtype()) || !shape::isCompatible(expected, l.shape()))
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

SingleHead::MetricInputs SingleHead::metricInputs(
    const TensorMap &features, const Tensor &logits, const Tensor &labels,
    const std::vector<std::string> &prediction_keys) const {
  Tensor lg = checkedLogits(logits);
  TensorMap preds = predictions(lg, prediction_keys);
  Scope scope = lg.graph().name_scope("metrics");
  Tensor l = processedLabels(lg, labels);
  Tensor unweighted = unweightedLoss(l, lg, features);
  Tensor w = weights(features, lg);
  NamedMetrics m;
  m.emplace_back(
      summary_key(MetricKeys::LOSS_MEAN),
      head_metrics::mean(MetricKeys::LOSS_MEAN, unweighted, w).metric);
  return {lg, std::move(preds), l, w, std::move(m), std::move(scope)};
}

void SingleHead::addRegularizationMetric(
    NamedMetrics &metrics, const std::vector<Tensor> &losses) const {
  detail::addRegularizationMetric(metrics, describe(),
                                  summary_key(MetricKeys::LOSS_REGULARIZATION),
                                  losses);
}

} // namespace estimator
} // namespace estc
