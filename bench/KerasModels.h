//===- KerasModels.h - keras.applications models in estc's graph builder -===//
//
// The models of issue 29's benchmarks written layer for layer with
// lib/Graph's layers, as keras.applications (tf.keras 2.15) builds them,
// under the Keras layers' names (so their variables are Keras's:
// "Conv1/kernel", "bn_Conv1/gamma", "block_1_expand/kernel",
// "expanded_conv_depthwise/depthwise_kernel", "predictions/kernel", ...):
//
//   mobilenet_v2_logits  keras.applications.MobileNetV2(alpha=1.0,
//       include_top=True, weights=None, classes=n_classes,
//       classifier_activation=None) of keras/src/applications/mobilenet_v2.py:
//       Conv1 3x3/2 "same" (no bias) + BatchNormalization(epsilon 1e-3,
//       momentum 0.999) + ReLU(6); 17 inverted residual blocks (1x1 expand
//       + BN + ReLU6 unless block 0, ZeroPadding2D(correct_pad) before a
//       stride-2 3x3 depthwise conv ("same" at stride 1) + BN + ReLU6, 1x1
//       project + BN, Add when the shapes agree); Conv_1 1x1 1280 + BN +
//       ReLU6; GlobalAveragePooling2D; Dense(n_classes) "predictions".
//
// bench/tf_keras_peer.py builds the same model with tf.keras 2.15 and saves
// it; keras_bench --keras_model trains that file through model_to_estimator
// (the graph lib/Keras builds from its config), so bench/keras.sh times both
// graphs side by side: their step times agree (docs/results.md).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_KERASMODELS_H
#define ESTC_BENCH_KERASMODELS_H

#include "estc/estimator.h"
#include "estc/graph.h"

#include <string>

namespace estc::bench {

struct MobileNetV2Options {
  int64_t n_classes = 10;
  /// Keras's compile(optimizer=Adam()) defaults.
  double learning_rate = 0.001;
  double epsilon = 1e-7;
};

namespace mobilenet_v2_detail {

/// Keras's _make_divisible(v, 8).
inline int64_t makeDivisible(double v, int64_t divisor = 8) {
  int64_t nv = std::max<int64_t>(
      divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (static_cast<double>(nv) < 0.9 * v)
    nv += divisor;
  return nv;
}

inline Tensor bn(const Tensor &x, bool training, const std::string &name) {
  return layers::batch_normalization(x, training, -1, /*momentum=*/0.999,
                                     /*epsilon=*/1e-3, true, true, name);
}

inline Tensor conv(const Tensor &x, int64_t filters, int64_t kernel,
                   int64_t stride, const std::string &name) {
  return layers::conv2d(x, filters, {kernel, kernel}, {stride, stride}, "same",
                        nullptr, /*use_bias=*/false,
                        glorot_uniform_initializer(), zeros_initializer(),
                        {1, 1}, name);
}

/// Keras's _inverted_res_block.
inline Tensor invertedResBlock(const Tensor &inputs, int64_t expansion,
                               int64_t stride, int64_t filters, int64_t blockId,
                               bool training) {
  int64_t in = inputs.shape().back();
  int64_t pointwise = makeDivisible(static_cast<double>(filters));
  std::string prefix = "block_" + std::to_string(blockId) + "_";
  Tensor x = inputs;
  if (blockId) {
    x = conv(x, expansion * in, 1, 1, prefix + "expand");
    x = nn::relu6(bn(x, training, prefix + "expand_BN"));
  } else {
    prefix = "expanded_conv_";
  }
  if (stride == 2) {
    // imagenet_utils.correct_pad(x, 3): one more row and column after than
    // before for an even size.
    int64_t h = x.shape()[1], w = x.shape()[2];
    x = pad(x, {0, 0, 1 - (1 - h % 2), 1, 1 - (1 - w % 2), 1, 0, 0}, 0.0,
            prefix + "pad");
  }
  x = layers::depthwise_conv2d(
      x, {3, 3}, {stride, stride}, stride == 1 ? "same" : "valid", 1, nullptr,
      /*use_bias=*/false, glorot_uniform_initializer(), zeros_initializer(),
      {1, 1}, prefix + "depthwise");
  x = nn::relu6(bn(x, training, prefix + "depthwise_BN"));
  x = conv(x, pointwise, 1, 1, prefix + "project");
  x = bn(x, training, prefix + "project_BN");
  if (in == pointwise && stride == 1)
    return add(inputs, x, prefix + "add");
  return x;
}

} // namespace mobilenet_v2_detail

/// keras.applications.MobileNetV2 (alpha 1.0, include_top, no classifier
/// activation) on `images` [batch, H, W, 3]: the logits [batch, n_classes].
inline Tensor mobilenet_v2_logits(const Tensor &images, bool training,
                                  int64_t n_classes = 10) {
  using namespace mobilenet_v2_detail;
  Tensor x = conv(images, makeDivisible(32), 3, 2, "Conv1");
  x = nn::relu6(bn(x, training, "bn_Conv1"));
  struct Block {
    int64_t filters, stride, expansion;
  };
  const Block blocks[] = {
      {16, 1, 1},  {24, 2, 6},  {24, 1, 6}, {32, 2, 6},  {32, 1, 6},
      {32, 1, 6},  {64, 2, 6},  {64, 1, 6}, {64, 1, 6},  {64, 1, 6},
      {96, 1, 6},  {96, 1, 6},  {96, 1, 6}, {160, 2, 6}, {160, 1, 6},
      {160, 1, 6}, {320, 1, 6},
  };
  int64_t id = 0;
  for (const Block &b : blocks)
    x = invertedResBlock(x, b.expansion, b.stride, b.filters, id++, training);
  x = conv(x, 1280, 1, 1, "Conv_1");
  x = nn::relu6(bn(x, training, "Conv_1_bn"));
  x = layers::global_average_pooling2d(x, false, "global_average_pooling2d");
  layers::DenseOptions head;
  head.name = "predictions";
  return layers::dense(x, n_classes, head);
}

/// The Estimator's model_fn of MobileNetV2 as Keras's compile(Adam(),
/// SparseCategoricalCrossentropy(from_logits=True)) trains it: features
/// {"x": f32 [batch, H, W, 3]}, labels i64 [batch]; the batch norm updates
/// in the train_op. Predictions "classes" and "probabilities".
inline estimator::ModelFn mobilenet_v2_model_fn(MobileNetV2Options o = {}) {
  return [o](const TensorMap &features, const Tensor &labels, ModeKeys mode,
             const estimator::Params &, const estimator::RunConfig &) {
    Graph &g = estimator::get_default_graph();
    Tensor logits = mobilenet_v2_logits(features["x"], mode == ModeKeys::TRAIN,
                                        o.n_classes);
    estimator::EstimatorSpec spec(mode);
    spec.predictions = {{"classes", argmax(logits, 1)},
                        {"probabilities", nn::softmax(logits)}};
    if (mode == ModeKeys::PREDICT)
      return spec;
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    if (mode == ModeKeys::TRAIN) {
      std::vector<Operation> ops = g.get_collection("update_ops");
      ops.insert(ops.begin(),
                 train::AdamOptimizer(o.learning_rate, 0.9, 0.999, o.epsilon)
                     .minimize(spec.loss));
      spec.train_op = group(ops);
      return spec;
    }
    spec.eval_metric_ops = {
        {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
    return spec;
  };
}

} // namespace estc::bench

#endif // ESTC_BENCH_KERASMODELS_H
