//===- ConvNetModel.h - The MNIST ConvNet as an Estimator model_fn -------===//
//
// The seeds' MNIST ConvNet written the way a tf.estimator user writes it:
// a model_fn(features, labels, mode, params, config) -> EstimatorSpec.
//
//   conv 20 5x5 VALID + relu, max pool 2x2, conv 40 5x5 VALID + relu,
//   max pool 2x2, dense 256 relu, dropout, dense 256 relu, dropout, dense 10
//
// features {"x": f32 [batch, 28, 28, 1]}, labels i64 [batch].
// params: learning_rate (0.002, Adam), dropout_rate (0.5), n_classes (10).
// Predictions "classes" and "probabilities"; metric "accuracy".
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_FASHION_MNIST_CONVNETMODEL_H
#define ESTC_EXAMPLES_FASHION_MNIST_CONVNETMODEL_H

#include "estc/estimator.h"

namespace estc {
namespace examples {

estimator::EstimatorSpec convnet_model_fn(const TensorMap &features,
                                          const Tensor &labels, ModeKeys mode,
                                          const estimator::Params &params,
                                          const estimator::RunConfig &config);

/// The graph the JIT Estimator builds from convnet_model_fn (TRAIN, EVAL,
/// PREDICT; 28x28x1 images, i64 labels), for estc to compile ahead of time.
graph::GraphDef build_convnet_graph(int64_t seed);

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_FASHION_MNIST_CONVNETMODEL_H
