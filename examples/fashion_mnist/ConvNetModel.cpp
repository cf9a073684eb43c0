//===- ConvNetModel.cpp - The MNIST ConvNet as an Estimator model_fn -----===//

#include "examples/fashion_mnist/ConvNetModel.h"

#include "estc/graph.h"

namespace estc {
namespace examples {

using estimator::EstimatorSpec;

EstimatorSpec convnet_model_fn(const TensorMap &features, const Tensor &labels,
                               ModeKeys mode, const estimator::Params &params,
                               const estimator::RunConfig &config) {
  (void)config;
  double rate = params.get<double>("dropout_rate", 0.5);
  bool training = mode == ModeKeys::TRAIN;

  Tensor net = features["x"];
  net = layers::conv2d(net, 20, {5, 5}, {1, 1}, "valid", nn::relu);
  net = layers::max_pooling2d(net, {2, 2}, {2, 2});
  net = layers::conv2d(net, 40, {5, 5}, {1, 1}, "valid", nn::relu);
  net = layers::max_pooling2d(net, {2, 2}, {2, 2});
  net = layers::flatten(net);
  net = layers::dense(net, 256, nn::relu);
  net = layers::dropout(net, rate, training);
  net = layers::dense(net, 256, nn::relu);
  net = layers::dropout(net, rate, training);
  Tensor logits = layers::dense(net, params.get<int64_t>("n_classes", 10));

  EstimatorSpec spec(mode);
  spec.predictions = {{"classes", argmax(logits, 1)},
                      {"probabilities", nn::softmax(logits)}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  if (mode == ModeKeys::TRAIN) {
    spec.train_op =
        train::AdamOptimizer(params.get<double>("learning_rate", 0.002))
            .minimize(spec.loss);
    return spec;
  }
  spec.eval_metric_ops = {
      {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
  return spec;
}

graph::GraphDef build_convnet_graph(int64_t seed) {
  InputSpec inputs{{{"x", DType::Float32, {-1, 28, 28, 1}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
  estimator::Params params;
  estimator::RunConfig config = estimator::RunConfig::from_tf_config("", {});
  return build_graph_def(
      inputs,
      [&](Graph &, const TensorMap &features, const Tensor &labels,
          ModeKeys mode) {
        EstimatorSpec spec =
            convnet_model_fn(features, labels, mode, params, config);
        spec.validate();
        return spec.mode_signature();
      },
      seed);
}

} // namespace examples
} // namespace estc
