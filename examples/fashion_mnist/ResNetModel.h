//===- ResNetModel.h - A ResNet-style model_fn for Fashion-MNIST --------===//
//
// A small ResNet (He et al. 2015, the CIFAR form) written as a tf.estimator
// user writes it, with tf.compat.v1.layers:
//
//   conv 3x3 `width` + batch norm + relu
//   3 stages of `blocks_per_stage` basic blocks (width, 2 width, 4 width
//   channels; the first block of stages 2 and 3 strides 2 and projects its
//   shortcut with a 1x1 conv + batch norm):
//     y = relu(bn(conv3x3(x))); y = bn(conv3x3(y)); out = relu(y + shortcut)
//   global average pooling, dense n_classes
//
// Convolutions have no bias (batch norm follows). Trained with momentum
// (0.9) and weight decay (L2 of every kernel, added to the loss, as TF's
// official ResNet does) on a piecewise-constant learning rate; the batch
// norm moving averages are updated by the train_op (update_ops).
//
// features {"x": f32 [batch, 28, 28, 1]}, labels i64 [batch]. Predictions
// "classes" and "probabilities"; metric "accuracy".
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_FASHION_MNIST_RESNETMODEL_H
#define ESTC_EXAMPLES_FASHION_MNIST_RESNETMODEL_H

#include "estc/estimator.h"

#include <vector>

namespace estc {
namespace examples {

struct ResNetOptions {
  int64_t width = 16;           // channels of stage 1 (x2 per stage)
  int64_t blocks_per_stage = 2; // basic blocks per stage (3 stages)
  int64_t n_classes = 10;
  double weight_decay = 5e-4; // times the kernels' l2_loss
  double momentum = 0.9;
  double batch_norm_momentum = 0.99;
  /// piecewise_constant(global_step, boundaries, values): 0.1 until step
  /// 3752, 0.01 until 5628, then 0.001 (epochs 8 and 12 of 15 at batch 128
  /// on Fashion-MNIST's 60,000 images).
  std::vector<double> lr_boundaries = {3752, 5628};
  std::vector<double> lr_values = {0.1, 0.01, 0.001};
};

/// The logits [batch, n_classes] of `images` [batch, H, W, C]; `training`
/// selects batch statistics (and adds the moving-average updates to the
/// mode's "update_ops").
Tensor resnet_logits(const Tensor &images, bool training,
                     const ResNetOptions &options);

/// The loss: mean sparse softmax cross-entropy plus weight_decay times the
/// l2_loss of every trainable kernel of `graph`'s current mode.
Tensor resnet_loss(Graph &graph, const Tensor &labels, const Tensor &logits,
                   const ResNetOptions &options);

/// The train_op: momentum on the piecewise-constant schedule, grouped with
/// the batch norm updates.
Operation resnet_train_op(Graph &graph, const Tensor &loss,
                          const ResNetOptions &options);

/// The Estimator's model_fn for `options`.
estimator::ModelFn resnet_model_fn(ResNetOptions options);

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_FASHION_MNIST_RESNETMODEL_H
