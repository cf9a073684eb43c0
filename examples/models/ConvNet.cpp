//===- ConvNet.cpp - MNIST convolutional network ------------------------===//

#include "examples/models/Models.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Train.h"

namespace estc {
namespace models {

InputSpec convnet_inputs() {
  return InputSpec{{{"x", DType::Float32, {-1, 28, 28, 1}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
}

Signature convnet_model_fn(Graph &g, const TensorMap &features,
                           const Tensor &labels, ModeKeys mode,
                           const ConvNetParams &params) {
  (void)g;
  bool training = mode == ModeKeys::TRAIN;
  Tensor net = features["x"];
  net = layers::conv2d(net, 20, {5, 5}, {1, 1}, "valid", nn::relu);
  net = layers::max_pooling2d(net, {2, 2}, {2, 2});
  net = layers::conv2d(net, 40, {5, 5}, {1, 1}, "valid", nn::relu);
  net = layers::max_pooling2d(net, {2, 2}, {2, 2});
  net = layers::flatten(net);
  net = layers::dense(net, 256, nn::relu);
  net = layers::dropout(net, params.dropout_rate, training);
  net = layers::dense(net, 256, nn::relu);
  net = layers::dropout(net, params.dropout_rate, training);
  Tensor logits = layers::dense(net, params.n_classes);

  Signature spec;
  TensorMap predictions{{"classes", argmax(logits, 1)},
                        {"probabilities", nn::softmax(logits)}};
  if (mode == ModeKeys::PREDICT) {
    spec.predictions = predictions;
    return spec;
  }
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  if (training) {
    spec.train_op =
        train::AdamOptimizer(params.learning_rate).minimize(spec.loss);
    return spec;
  }
  spec.predictions = predictions;
  spec.metrics = {
      {"accuracy", metrics::accuracy(labels, predictions["classes"])}};
  return spec;
}

graph::GraphDef build_convnet(int64_t seed, const ConvNetParams &params) {
  return build_graph_def(
      convnet_inputs(),
      [&](Graph &g, const TensorMap &f, const Tensor &l, ModeKeys m) {
        return convnet_model_fn(g, f, l, m, params);
      },
      seed);
}

} // namespace models
} // namespace estc
