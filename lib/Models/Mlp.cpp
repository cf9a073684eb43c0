//===- Mlp.cpp - MNIST multi-layer perceptron ---------------------------===//

#include "lib/Models/Models.h"

#include "lib/Graph/Layers.h"
#include "lib/Graph/Train.h"

namespace estc {
namespace models {

InputSpec mlp_inputs(const MlpParams &params) {
  return InputSpec{{{"x", DType::Float32, {-1, params.input_size}}},
                   TensorSpec{"labels", DType::Int64, {-1}}};
}

Signature mlp_model_fn(Graph &g, const TensorMap &features,
                       const Tensor &labels, ModeKeys mode,
                       const MlpParams &params) {
  (void)g;
  Tensor net = features["x"];
  for (int64_t units : params.hidden_units)
    net = layers::dense(net, units, nn::relu);
  Tensor logits = layers::dense(net, params.n_classes);

  return multi_class_head(logits, labels, mode, params.learning_rate);
}

graph::GraphDef build_mlp(int64_t seed, const MlpParams &params) {
  return build_graph_def(
      mlp_inputs(params),
      [&](Graph &g, const TensorMap &f, const Tensor &l, ModeKeys m) {
        return mlp_model_fn(g, f, l, m, params);
      },
      seed);
}

MlpParams iris_params() {
  MlpParams params;
  params.input_size = 4;
  params.hidden_units = {10, 10};
  params.n_classes = 3;
  return params;
}

} // namespace models
} // namespace estc
