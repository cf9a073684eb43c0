//===- Heads.cpp - What a canned head adds to a model's logits ----------===//

#include "lib/Models/Models.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Train.h"

namespace estc {
namespace models {

Signature multi_class_head(const Tensor &logits, const Tensor &labels,
                           ModeKeys mode, double learning_rate) {
  Signature spec;
  TensorMap predictions{{"classes", argmax(logits, 1)},
                        {"probabilities", nn::softmax(logits)}};
  if (mode == ModeKeys::PREDICT) {
    spec.predictions = predictions;
    return spec;
  }
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  if (mode == ModeKeys::TRAIN) {
    spec.train_op = train::AdamOptimizer(learning_rate).minimize(spec.loss);
    return spec;
  }
  spec.predictions = predictions;
  spec.metrics = {
      {"accuracy", metrics::accuracy(labels, predictions["classes"])}};
  return spec;
}

} // namespace models
} // namespace estc
