//===- Dnn.cpp - TF 2.15's DNN canned model (no LLVM) --------------------===//
//
// TF's canned/dnn.py: _dnn_model_fn_builder_v2 (also DNNLinearCombined's
// dnn part) and _dnn_model_fn_v2 as dnn_model()'s CannedModel. The JIT
// classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Dnn.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Summaries.h"

#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

namespace detail {

/// TF's _dnn_model_fn_builder_v2: the DNN logits under "dnn", and the batch
/// norm updates of TRAIN.
Tensor dnnLogits(const TensorMap &features, const FeatureColumns &columns,
                 int64_t units, const std::vector<int64_t> &hidden_units,
                 const Activation &activation, std::optional<double> dropout,
                 bool batch_norm, ModeKeys mode,
                 const Partitioner &input_layer_partitioner) {
  Graph &g = get_default_graph();
  Scope dnn = g.name_scope("dnn");
  bool training = mode == ModeKeys::TRAIN;
  Tensor net;
  {
    Scope input = g.name_scope("input_from_feature_columns");
    net = fc::input_layer(features, columns, true, input_layer_partitioner);
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
    if (training)
      addLayerSummary(net, name);
  }
  Tensor logits =
      layers::dense(net, units, nullptr, true, glorot_uniform_initializer(),
                    zeros_initializer(), "logits");
  if (training)
    addLayerSummary(logits, "logits");
  return logits;
}

void addLayerSummary(const Tensor &value, const std::string &tag) {
  summary::scalar(tag + "/fraction_of_zero_values", nn::zero_fraction(value));
  summary::histogram(tag + "/activation", value);
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

} // namespace detail

using namespace detail;

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
    Tensor logits =
        dnnLogits(features, columns, head->logits_dimension(),
                  options.hidden_units, options.activation_fn, options.dropout,
                  options.batch_norm, mode, options.input_layer_partitioner);
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

} // namespace estimator
} // namespace estc
