//===- Canned.cpp - What every canned estimator is made of ---------------===//

#include "estimator/Canned/Canned.h"

#include "estimator/Canned/CannedInternal.h"
#include "estimator/EstimatorBackend.h"
#include "estimator/FeatureColumnTransform.h"
#include "lib/Data/Idx.h"

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

std::string OptimizerSpec::keras_name() const {
  if (optimizer_)
    return "";
  return name_ == "RMSProp" ? "RMSprop" : name_;
}

train::Optimizer
OptimizerSpec::get(std::optional<double> default_learning_rate) const {
  return get(default_learning_rate, "training/" + keras_name(), false);
}

train::Optimizer OptimizerSpec::get(std::optional<double> default_learning_rate,
                                    const std::string &scope,
                                    bool own_iterations) const {
  if (optimizer_)
    return *optimizer_;
  return named(default_learning_rate)
      .with_keras_legacy_names(scope, own_iterations);
}

train::Optimizer
OptimizerSpec::named(std::optional<double> default_learning_rate) const {
  // Keras' legacy optimizers' own default rates.
  double kerasRate = name_ == "SGD" ? 0.01 : 0.001;
  train::LearningRate lr =
      schedule_ ? train::LearningRate(schedule_)
                : train::LearningRate(learningRate_.value_or(
                      default_learning_rate.value_or(kerasRate)));
  // TF's _OPTIMIZER_CLS_NAMES, instantiated with Keras' legacy defaults.
  if (name_ == "Adagrad")
    return train::AdagradOptimizer(lr, 0.1);
  if (name_ == "Adam")
    return train::AdamOptimizer(lr, 0.9, 0.999, 1e-7);
  if (name_ == "Ftrl")
    return train::FtrlOptimizer(lr, -0.5, 0.1, 0.0, 0.0);
  if (name_ == "RMSProp")
    return train::RMSPropOptimizer(lr, 0.9, 0.0, 1e-7);
  if (name_ == "SGD")
    return train::GradientDescentOptimizer(lr);
  throw std::invalid_argument("optimizer '" + name_ +
                              "' is not one of Adagrad, Adam, Ftrl, "
                              "RMSProp, SGD (or give an optimizer object)");
}

TensorValue head_labels(const Head &head, const data::Value &labels) {
  TensorValue y = head.transform_labels(labels);
  if (y.shape.size() == 1)
    y.shape.push_back(1);
  return y;
}

TensorSpec head_label_spec(const Head &head) {
  int64_t d = head.logits_dimension();
  // Class-id heads take one id per example whatever their logits; the
  // others d values.
  std::vector<TensorValue> candidates;
  for (int64_t width : {int64_t{1}, d}) {
    candidates.push_back(TensorValue::of<int64_t>(
        {1, width}, std::vector<int64_t>(static_cast<size_t>(width), 0)));
    candidates.push_back(TensorValue::of<float>(
        {1, width}, std::vector<float>(static_cast<size_t>(width), 0.0f)));
  }
  for (const TensorValue &raw : candidates) {
    try {
      TensorValue y = head.transform_labels(data::Value(raw));
      Dims shape = y.shape;
      shape[0] = -1;
      return TensorSpec{"labels", y.dtype, shape};
    } catch (const std::exception &) {
      // Not this head's kind of labels: try the next.
    }
  }
  // A head with a label vocabulary takes strings, as ids I64 [batch, 1].
  return TensorSpec{"labels", DType::Int64, {-1, 1}};
}

std::vector<std::string> head_class_names(const Head &head) {
  int64_t n = 0;
  if (dynamic_cast<const BinaryClassHead *>(&head))
    n = 2;
  else if (const auto *m = dynamic_cast<const MultiClassHead *>(&head))
    n = m->n_classes();
  else if (const auto *l = dynamic_cast<const MultiLabelHead *>(&head))
    n = l->n_classes();
  if (n == 0)
    return {};
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = i;
  TensorValue t = TensorValue::of<int64_t>({n}, ids);
  if (const auto *b = dynamic_cast<const BinaryClassHead *>(&head))
    return b->class_names(t).strings;
  if (const auto *m = dynamic_cast<const MultiClassHead *>(&head))
    return m->class_names(t).strings;
  return dynamic_cast<const MultiLabelHead &>(head).class_names(t).strings;
}

std::string canned_serving_config(const std::string &columns_config,
                                  const std::vector<std::string> &ones,
                                  const std::string &batch_zeros,
                                  const Head *head) {
  rapidjson::Document doc;
  doc.SetObject();
  if (!columns_config.empty())
    doc.Parse(columns_config.c_str());
  auto &a = doc.GetAllocator();
  auto strings = [&](const std::vector<std::string> &list) {
    rapidjson::Value v(rapidjson::kArrayType);
    for (const std::string &s : list)
      v.PushBack(rapidjson::Value(s.c_str(), a), a);
    return v;
  };
  if (!ones.empty())
    doc.AddMember("ones", strings(ones), a);
  if (!batch_zeros.empty())
    doc.AddMember("batch_zeros", rapidjson::Value(batch_zeros.c_str(), a), a);
  if (head) {
    std::vector<std::string> names = head_class_names(*head);
    if (!names.empty())
      doc.AddMember("class_names", strings(names), a);
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  doc.Accept(w);
  return buffer.GetString();
}

namespace {

/// The canned host half: the feature columns' (FeatureColumnHostTransform)
/// for the features, the head's label transform with labels of rank 1 as
/// [batch, 1] (as the heads expand them), and the head's class names in
/// predictions. The head's weight column, when no feature column reads it,
/// is one more numeric model input; prediction input need not have it (TF's
/// heads read it in TRAIN and EVAL only): it is then ones, which PREDICT
/// does not read.
class CannedTransform final : public HostTransform {
public:
  CannedTransform(FeatureColumns columns, std::shared_ptr<const Head> head,
                  const std::string &weight_column)
      : features_(std::move(columns)), head_(std::move(head)),
        weightColumn_(weight_column) {
    if (!weight_column.empty())
      weights_.emplace(FeatureColumns{fc::numeric_column(weight_column)});
  }

  Batch transform_input(const data::Element &element) const override {
    if (!element.is_tuple()) {
      Batch batch = features_.transform_input(element);
      addWeights(element, false, batch);
      return batch;
    }
    if (element.size() != 2 || !element[1].is_leaf())
      throw data::DataError("input: an element must be a features dict or a "
                            "(features dict, labels) tuple");
    Batch batch = features_.transform_input(element[0]);
    addWeights(element[0], true, batch);
    batch.labels = head_ ? head_labels(*head_, element[1].leaf())
                         : data::tensor(element[1]);
    if (batch.labels->shape.size() == 1)
      batch.labels->shape.push_back(1);
    return batch;
  }

  std::optional<ElementSpec> input_spec(bool with_labels) const override {
    std::optional<ElementSpec> spec = features_.input_spec(false);
    if (spec && weights_)
      for (const TensorSpec &w : weights_->input_specs())
        spec->features.push_back(w);
    if (spec && with_labels && head_)
      spec->labels = head_label_spec(*head_);
    return spec;
  }

  /// The columns' feature keys: what a prediction reads (the weight
  /// column only in TRAIN and EVAL).
  std::optional<std::set<std::string>> feature_keys() const override {
    return features_.feature_keys();
  }

  void transform_predictions(Features &predictions) const override {
    if (head_)
      head_->complete_predictions(predictions);
  }

  std::optional<std::string>
  serving_config(const AddAssetFn &add_asset) const override {
    std::optional<std::string> columns = features_.serving_config(add_asset);
    std::vector<std::string> ones;
    if (weights_)
      ones.push_back(weightColumn_);
    return canned_serving_config(*columns, ones, "", head_.get());
  }

private:
  /// The weight column's input: the features' (required with labels), or
  /// ones for prediction input without it.
  void addWeights(const data::Element &features, bool labeled,
                  Batch &batch) const {
    if (!weights_)
      return;
    if (labeled || (features.is_dict() && features.contains(weightColumn_))) {
      for (auto &[key, value] : weights_->transform(features))
        batch.features[key] = std::move(value);
      return;
    }
    int64_t n = batch.size();
    batch.features[weightColumn_] = TensorValue::of<float>(
        {n, 1}, std::vector<float>(static_cast<size_t>(n), 1.0f));
  }

  fc::FeatureColumnHostTransform features_;
  std::shared_ptr<const Head> head_;
  std::string weightColumn_;
  std::optional<fc::Transformer> weights_;
};

} // namespace

std::shared_ptr<const HostTransform>
make_host_transform(const FeatureColumns &feature_columns,
                    std::shared_ptr<const Head> head,
                    const std::string &weight_column) {
  bool read = std::any_of(feature_columns.begin(), feature_columns.end(),
                          [&](const fc::FeatureColumnPtr &c) {
                            return c->name() == weight_column;
                          });
  return std::make_shared<CannedTransform>(feature_columns, std::move(head),
                                           read ? "" : weight_column);
}

InputSpec CannedModel::input_spec(bool with_labels) const {
  std::optional<ElementSpec> spec = transform->input_spec(with_labels);
  if (!spec)
    throw std::logic_error("CannedModel: the host transform has no input spec");
  return *spec;
}

graph::GraphDef CannedModel::graph_def(int64_t seed,
                                       const Params &params) const {
  RunConfig config = RunConfig::from_tf_config("", {});
  return build_graph_def(
      input_spec(true),
      [&](Graph &g, const TensorMap &features, const Tensor &labels,
          ModeKeys mode) {
        detail::DefaultGraphScope scope(g);
        EstimatorSpec spec = model_fn(features, labels, mode, params, config);
        spec.validate();
        return spec.mode_signature();
      },
      seed);
}

std::shared_ptr<const Head>
classifier_head(int64_t n_classes, const std::string &weight_column,
                const std::vector<std::string> &label_vocabulary,
                Reduction loss_reduction) {
  if (n_classes < 2)
    throw std::invalid_argument("n_classes must be > 1: " +
                                std::to_string(n_classes));
  if (n_classes == 2)
    return std::make_shared<BinaryClassHead>(
        weight_column, std::vector<double>{}, label_vocabulary, loss_reduction);
  return std::make_shared<MultiClassHead>(n_classes, weight_column,
                                          label_vocabulary, loss_reduction);
}

std::shared_ptr<const Head> regressor_head(const RegressorOptions &o) {
  return std::make_shared<RegressionHead>(o.label_dimension, o.weight_column,
                                          o.loss_reduction);
}

std::shared_ptr<const Head> classifier_head(const ClassifierOptions &o) {
  return classifier_head(o.n_classes, o.weight_column, o.label_vocabulary,
                         o.loss_reduction);
}

void check_feature_columns(const std::string &who,
                           const FeatureColumns &feature_columns) {
  if (feature_columns.empty())
    throw std::invalid_argument(who + ": feature_columns must not be empty");
  std::set<std::string> names;
  for (const fc::FeatureColumnPtr &c : feature_columns) {
    if (!c)
      throw std::invalid_argument(who + ": a feature column is null");
    if (!names.insert(c->name()).second)
      throw std::invalid_argument(who + ": duplicate feature column name '" +
                                  c->name() + "'");
  }
}

namespace detail {

void checkHead(const std::string &who, const std::shared_ptr<const Head> &h) {
  if (!h)
    throw std::invalid_argument(who + ": head is null");
}

/// The head's weight column, for the host transform (SingleHead keeps it).
std::string weightColumnOf(const Head &head) {
  if (auto *single = dynamic_cast<const SingleHead *>(&head))
    return single->weight_column();
  return "";
}

CannedModel makeModel(std::shared_ptr<const Head> head, ModelFn fn,
                      FeatureColumns columns) {
  CannedModel m;
  m.transform = make_host_transform(columns, head, weightColumnOf(*head));
  m.head = std::move(head);
  m.model_fn = std::move(fn);
  m.feature_columns = std::move(columns);
  return m;
}

} // namespace detail

} // namespace estimator
} // namespace estc
