//===- Estimators.cpp - TF 2.15's canned models (no LLVM) ----------------===//
//
// The model_fns of the canned estimators (TF's _linear_model_fn_v2,
// _dnn_model_fn_v2, _dnn_linear_combined_model_fn_v2,
// _baseline_model_fn_v2) and their CannedModels. The JIT classes are in
// EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"

#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Ops.h"

#include <cmath>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

namespace {

/// The trainable variables whose names start with `scope` + "/".
std::vector<Variable> variablesUnder(Graph &g, const std::string &scope) {
  std::vector<Variable> out;
  for (const Variable &v : g.trainable_variables())
    if (v.name().compare(0, scope.size() + 1, scope + "/") == 0)
      out.push_back(v);
  return out;
}

/// TF's _linear_model_fn_builder_v2: the linear logits under "linear".
Tensor linearLogits(const TensorMap &features, const FeatureColumns &columns,
                    int64_t units, const std::string &sparse_combiner) {
  Graph &g = get_default_graph();
  Scope scope = g.name_scope("linear");
  return fc::linear_model(features, columns, units, sparse_combiner);
}

/// TF's _dnn_model_fn_builder_v2: the DNN logits under "dnn", and the batch
/// norm updates of TRAIN.
Tensor dnnLogits(const TensorMap &features, const FeatureColumns &columns,
                 int64_t units, const std::vector<int64_t> &hidden_units,
                 const Activation &activation, std::optional<double> dropout,
                 bool batch_norm, ModeKeys mode) {
  Graph &g = get_default_graph();
  Scope dnn = g.name_scope("dnn");
  bool training = mode == ModeKeys::TRAIN;
  Tensor net;
  {
    Scope input = g.name_scope("input_from_feature_columns");
    net = fc::input_layer(features, columns);
  }
  for (size_t i = 0; i < hidden_units.size(); ++i) {
    std::string name = "hiddenlayer_" + std::to_string(i);
    net =
        layers::dense(net, hidden_units[i], activation, true,
                      glorot_uniform_initializer(), zeros_initializer(), name);
    if (dropout && training)
      net = layers::dropout(net, *dropout, true);
    if (batch_norm)
      net = layers::batch_normalization(
          net, training, -1, 0.999, 1e-3, true, true,
          name + "/batchnorm_" + std::to_string(i));
  }
  return layers::dense(net, units, nullptr, true, glorot_uniform_initializer(),
                       zeros_initializer(), "logits");
}

void checkHead(const std::string &who, const std::shared_ptr<const Head> &h) {
  if (!h)
    throw std::invalid_argument(who + ": head is null");
}

void checkHiddenUnits(const std::string &who,
                      const std::vector<int64_t> &hidden_units) {
  if (hidden_units.empty())
    throw std::invalid_argument(who + ": hidden_units must be given");
  for (int64_t u : hidden_units)
    if (u < 1)
      throw std::invalid_argument(
          who + ": hidden_units must be positive, got " + std::to_string(u));
}

void checkDropout(const std::string &who, std::optional<double> dropout) {
  if (dropout && (*dropout < 0 || *dropout >= 1))
    throw std::invalid_argument(who + ": dropout must be in [0, 1), got " +
                                std::to_string(*dropout));
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

} // namespace

std::shared_ptr<const Head> regressor_head(const RegressorOptions &o) {
  return std::make_shared<RegressionHead>(o.label_dimension, o.weight_column,
                                          o.loss_reduction);
}

std::shared_ptr<const Head> classifier_head(const ClassifierOptions &o) {
  return classifier_head(o.n_classes, o.weight_column, o.label_vocabulary,
                         o.loss_reduction);
}

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

CannedModel dnn_model(std::shared_ptr<const Head> head,
                      FeatureColumns feature_columns, DNNOptions options) {
  checkHead("DNNEstimator", head);
  check_feature_columns("DNNEstimator", feature_columns);
  checkHiddenUnits("DNNEstimator", options.hidden_units);
  checkDropout("DNNEstimator", options.dropout);
  // TF 2.15's _dnn_model_fn_v2 gives a named optimizer no learning rate:
  // Keras' default (Adagrad 0.001), not the v1 estimator's 0.05.
  options.optimizer.get(std::nullopt);
  ModelFn fn = [head, columns = feature_columns,
                options](const TensorMap &features, const Tensor &labels,
                         ModeKeys mode, const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    Tensor logits = dnnLogits(features, columns, head->logits_dimension(),
                              options.hidden_units, options.activation_fn,
                              options.dropout, options.batch_norm, mode);
    std::optional<train::Optimizer> optimizer;
    std::vector<Operation> updates;
    if (mode == ModeKeys::TRAIN) {
      optimizer = options.optimizer.get(std::nullopt);
      updates = g.get_collection("update_ops");
    }
    return head->create_estimator_spec(features, mode, logits, labels,
                                       optimizer, {}, nullptr, updates);
  };
  return makeModel(std::move(head), std::move(fn), std::move(feature_columns));
}

CannedModel dnn_linear_combined_model(std::shared_ptr<const Head> head,
                                      DNNLinearCombinedOptions o) {
  const std::string who = "DNNLinearCombinedEstimator";
  checkHead(who, head);
  if (o.linear_feature_columns.empty() && o.dnn_feature_columns.empty())
    throw std::invalid_argument(who + ": Either linear_feature_columns or "
                                      "dnn_feature_columns must be defined.");
  if (!o.linear_feature_columns.empty())
    check_feature_columns(who, o.linear_feature_columns);
  if (!o.dnn_feature_columns.empty()) {
    check_feature_columns(who, o.dnn_feature_columns);
    if (o.dnn_hidden_units.empty())
      throw std::invalid_argument(who + ": dnn_hidden_units must be defined "
                                        "when dnn_feature_columns is "
                                        "specified.");
    checkHiddenUnits(who, o.dnn_hidden_units);
  }
  checkDropout(who, o.dnn_dropout);
  double linearLr =
      o.linear_feature_columns.empty()
          ? 0.005
          : std::min(0.005, 1.0 / std::sqrt(static_cast<double>(
                                      o.linear_feature_columns.size())));
  o.linear_optimizer.get(linearLr);
  o.dnn_optimizer.get(0.001);
  ModelFn fn = [head, o, linearLr](const TensorMap &features,
                                   const Tensor &labels, ModeKeys mode,
                                   const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    int64_t units = head->logits_dimension();
    Tensor dnn, linear;
    if (!o.dnn_feature_columns.empty())
      dnn =
          dnnLogits(features, o.dnn_feature_columns, units, o.dnn_hidden_units,
                    o.dnn_activation_fn, o.dnn_dropout, o.batch_norm, mode);
    if (!o.linear_feature_columns.empty())
      linear = linearLogits(features, o.linear_feature_columns, units,
                            o.linear_sparse_combiner);
    Tensor logits = dnn.valid() && linear.valid() ? add(dnn, linear)
                    : dnn.valid()                 ? dnn
                                                  : linear;
    if (mode != ModeKeys::TRAIN)
      return head->create_estimator_spec(features, mode, logits, labels);
    // TF's _train_op_fn: each part's optimizer on its own variables, the
    // batch norm updates, one group.
    std::vector<Operation> updates = g.get_collection("update_ops");
    Head::TrainOpFn trainOpFn = [&](const Tensor &loss) {
      std::vector<Operation> ops;
      if (dnn.valid()) {
        ops.push_back(o.dnn_optimizer.get(0.001).minimize(
            loss, variablesUnder(g, "dnn")));
        ops.insert(ops.end(), updates.begin(), updates.end());
      }
      if (linear.valid())
        ops.push_back(o.linear_optimizer.get(linearLr).minimize(
            loss, variablesUnder(g, "linear")));
      return ops.size() == 1 ? ops[0] : group(ops);
    };
    return head->create_estimator_spec(features, mode, logits, labels,
                                       std::nullopt, {}, trainOpFn);
  };
  FeatureColumns all = o.linear_feature_columns;
  for (const fc::FeatureColumnPtr &c : o.dnn_feature_columns) {
    bool seen = false;
    for (const fc::FeatureColumnPtr &l : all)
      seen |= l->name() == c->name();
    if (!seen)
      all.push_back(c);
  }
  return makeModel(std::move(head), std::move(fn), std::move(all));
}

namespace {
/// The baseline's host transform: only the batch size reaches the model.
class BaselineTransform final : public HostTransform {
public:
  explicit BaselineTransform(std::shared_ptr<const Head> head)
      : head_(std::move(head)), weightColumn_(weightColumnOf(*head_)) {}

  Batch transform_input(const data::Element &element) const override {
    const data::Element &features =
        element.is_tuple() && element.size() > 0 ? element[0] : element;
    if (!features.is_dict() || features.fields().empty())
      throw std::invalid_argument("Baseline: features must be a non-empty "
                                  "dict (their batch size is the model's)");
    int64_t batch = -1;
    for (const auto &[key, value] : features.fields()) {
      if (!value.is_leaf())
        continue;
      const data::Value &leaf = value.leaf();
      int64_t n = -1;
      if (const auto *t = std::get_if<TensorValue>(&leaf))
        n = t->shape.empty() ? -1 : t->shape[0];
      else if (const auto *s = std::get_if<data::SparseTensor>(&leaf))
        n = s->dense_shape.empty() ? -1 : s->dense_shape[0];
      if (n >= 0) {
        batch = n;
        break;
      }
    }
    if (batch < 0)
      throw std::invalid_argument("Baseline: no feature has a batch dimension");
    Batch out;
    out.features[kBaselineBatchInput] = TensorValue::of<float>(
        {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 0.0f));
    bool labeled = element.is_tuple() && element.size() == 2;
    if (!weightColumn_.empty()) {
      // Prediction input need not have the weights (PREDICT reads none).
      if (labeled || features.contains(weightColumn_)) {
        fc::Transformer weights({fc::numeric_column(weightColumn_)});
        fc::ModelInputs w = weights.transform(features);
        out.features[weightColumn_] = w.at(weightColumn_);
      } else {
        out.features[weightColumn_] = TensorValue::of<float>(
            {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 1.0f));
      }
    }
    if (labeled)
      out.labels = head_labels(*head_, element[1].leaf());
    return out;
  }

  std::optional<ElementSpec> input_spec(bool with_labels) const override {
    ElementSpec spec;
    spec.features.push_back({kBaselineBatchInput, DType::Float32, {-1, 1}});
    if (!weightColumn_.empty())
      spec.features.push_back({weightColumn_, DType::Float32, {-1, 1}});
    if (with_labels)
      spec.labels = head_label_spec(*head_);
    return spec;
  }

  void transform_predictions(Features &predictions) const override {
    head_->complete_predictions(predictions);
  }

  std::optional<std::string> serving_config(const AddAssetFn &) const override {
    std::vector<std::string> ones;
    if (!weightColumn_.empty())
      ones.push_back(weightColumn_);
    return canned_serving_config("", ones, kBaselineBatchInput, head_.get());
  }

private:
  std::shared_ptr<const Head> head_;
  std::string weightColumn_;
};
} // namespace

CannedModel baseline_model(std::shared_ptr<const Head> head,
                           OptimizerSpec optimizer) {
  checkHead("BaselineEstimator", head);
  optimizer.get(0.3);
  ModelFn fn = [head, optimizer](const TensorMap &features,
                                 const Tensor &labels, ModeKeys mode,
                                 const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    Tensor logits;
    {
      Scope scope = g.name_scope("baseline");
      Variable bias =
          g.get_variable("bias", DType::Float32, {head->logits_dimension()},
                         zeros_initializer());
      // Every example gets the bias: [batch, 1] zeros + [d].
      logits = add(features.at(kBaselineBatchInput), g.read_variable(bias));
    }
    std::optional<train::Optimizer> opt;
    if (mode == ModeKeys::TRAIN)
      opt = optimizer.get(0.3);
    return head->create_estimator_spec(features, mode, logits, labels, opt);
  };
  CannedModel m;
  m.transform = std::make_shared<BaselineTransform>(head);
  m.head = std::move(head);
  m.model_fn = std::move(fn);
  return m;
}

} // namespace estimator
} // namespace estc
