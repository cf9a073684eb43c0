//===- ResNetModel.cpp - A ResNet-style model_fn for Fashion-MNIST ------===//

#include "examples/fashion_mnist/ResNetModel.h"

#include "estc/graph.h"

namespace estc {
namespace examples {

namespace {

Tensor conv(const Tensor &x, int64_t filters, int64_t kernel, int64_t stride) {
  return layers::conv2d(x, filters, {kernel, kernel}, {stride, stride}, "same",
                        nullptr, /*use_bias=*/false,
                        variance_scaling_initializer(2.0, "fan_out"));
}

Tensor batchNorm(const Tensor &x, bool training, const ResNetOptions &o) {
  return layers::batch_normalization(x, training, -1, o.batch_norm_momentum,
                                     1e-5);
}

Tensor basicBlock(const Tensor &x, int64_t filters, int64_t stride,
                  bool training, const ResNetOptions &o) {
  Tensor shortcut = x;
  if (stride != 1 || x.shape().back() != filters)
    shortcut = batchNorm(conv(x, filters, 1, stride), training, o);
  Tensor y = nn::relu(batchNorm(conv(x, filters, 3, stride), training, o));
  y = batchNorm(conv(y, filters, 3, 1), training, o);
  return nn::relu(add(y, shortcut));
}

} // namespace

Tensor resnet_logits(const Tensor &images, bool training,
                     const ResNetOptions &o) {
  Tensor net = nn::relu(batchNorm(conv(images, o.width, 3, 1), training, o));
  for (int64_t stage = 0; stage < 3; ++stage) {
    int64_t filters = o.width << stage;
    for (int64_t block = 0; block < o.blocks_per_stage; ++block)
      net = basicBlock(net, filters, stage > 0 && block == 0 ? 2 : 1, training,
                       o);
  }
  net = reduce_mean(net, Dims{1, 2}); // global average pooling
  return layers::dense(net, o.n_classes);
}

Tensor resnet_loss(Graph &graph, const Tensor &labels, const Tensor &logits,
                   const ResNetOptions &o) {
  Tensor loss = losses::sparse_softmax_cross_entropy(labels, logits);
  std::vector<Tensor> decay;
  for (const Variable &v : graph.trainable_variables())
    if (v.name().find("kernel") != std::string::npos)
      decay.push_back(losses::l2_loss(v.read()));
  if (decay.empty() || o.weight_decay == 0)
    return loss;
  Tensor sum = decay[0];
  for (size_t i = 1; i < decay.size(); ++i)
    sum = add(sum, decay[i]);
  return add(loss, multiply(sum, o.weight_decay));
}

Operation resnet_train_op(Graph &graph, const Tensor &loss,
                          const ResNetOptions &o) {
  Tensor lr = train::piecewise_constant(graph.global_step(), o.lr_boundaries,
                                        o.lr_values);
  std::vector<Operation> ops = graph.get_collection("update_ops");
  ops.insert(ops.begin(),
             train::MomentumOptimizer(lr, o.momentum).minimize(loss));
  return group(ops);
}

estimator::ModelFn resnet_model_fn(ResNetOptions options) {
  return [options](const TensorMap &features, const Tensor &labels,
                   ModeKeys mode, const estimator::Params &,
                   const estimator::RunConfig &) {
    Graph &g = estimator::get_default_graph();
    Tensor logits =
        resnet_logits(features["x"], mode == ModeKeys::TRAIN, options);
    estimator::EstimatorSpec spec(mode);
    spec.predictions = {{"classes", argmax(logits, 1)},
                        {"probabilities", nn::softmax(logits)}};
    if (mode == ModeKeys::PREDICT)
      return spec;
    spec.loss = resnet_loss(g, labels, logits, options);
    if (mode == ModeKeys::TRAIN) {
      spec.train_op = resnet_train_op(g, spec.loss, options);
      return spec;
    }
    spec.eval_metric_ops = {
        {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
    return spec;
  };
}

} // namespace examples
} // namespace estc
