//===- Linear.cpp - Logistic regression over numeric features -----------===//

#include "lib/Models/Models.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Train.h"

namespace estc {
namespace models {

InputSpec linear_inputs(const LinearParams &params) {
  InputSpec spec;
  for (const std::string &key : params.feature_keys)
    spec.features.push_back({key, DType::Float32, {-1, 1}});
  spec.labels = TensorSpec{"labels", DType::Int64, {-1, 1}};
  return spec;
}

Signature linear_model_fn(Graph &g, const TensorMap &features,
                          const Tensor &labels, ModeKeys mode,
                          const LinearParams &params) {
  // Like tf.estimator.LinearClassifier over numeric_columns: the columns
  // are concatenated and fed to one dense unit.
  std::vector<Tensor> columns;
  for (const std::string &key : params.feature_keys)
    columns.push_back(features[key]);
  Tensor inputs;
  {
    auto s = g.name_scope("input_layer");
    inputs = concat(columns, 1);
  }
  Tensor logits = layers::dense(inputs, 1, nullptr, true, zeros_initializer(),
                                zeros_initializer(), "linear");

  Signature spec;
  Tensor probabilities = sigmoid(logits, "probabilities");
  Tensor classes =
      cast(greater(logits, g.constant(0.0)), DType::Int64, "classes");
  TensorMap predictions{{"probabilities", probabilities}, {"classes", classes}};
  if (mode == ModeKeys::PREDICT) {
    spec.predictions = predictions;
    return spec;
  }
  spec.loss = losses::sigmoid_cross_entropy(labels, logits);
  if (mode == ModeKeys::TRAIN) {
    spec.train_op =
        train::FtrlOptimizer(params.learning_rate).minimize(spec.loss);
    return spec;
  }
  spec.predictions = predictions;
  spec.metrics = {{"accuracy", metrics::accuracy(labels, classes)}};
  return spec;
}

graph::GraphDef build_linear(int64_t seed, const LinearParams &params) {
  return build_graph_def(
      linear_inputs(params),
      [&](Graph &g, const TensorMap &f, const Tensor &l, ModeKeys m) {
        return linear_model_fn(g, f, l, m, params);
      },
      seed);
}

} // namespace models
} // namespace estc
