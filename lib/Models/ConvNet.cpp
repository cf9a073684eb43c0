//===- ConvNet.cpp - MNIST convolutional network ------------------------===//

#include "lib/Models/Models.h"

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

  return multi_class_head(logits, labels, mode, params.learning_rate);
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
