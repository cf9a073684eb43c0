//===- Models.h - Seed models written with the graph-builder API --------===//
//
// Each model is a model_fn (features, labels, mode) -> Signature, as a
// tf.estimator model_fn would be, plus a builder that runs it for TRAIN, EVAL
// and PREDICT into one GraphDef. `estc-models --model=NAME` writes them.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_MODELS_MODELS_H
#define ESTC_LIB_MODELS_MODELS_H

#include "lib/Graph/GraphBuilder.h"

#include <string>
#include <vector>

namespace estc {
namespace models {

// --- Heads ------------------------------------------------------------------
/// What tf.estimator's multi-class head does with logits [?, n_classes] and
/// integer labels [?]: predictions {classes, probabilities}; sparse softmax
/// cross-entropy loss; Adam(learning_rate) in TRAIN; accuracy in EVAL.
Signature multi_class_head(const Tensor &logits, const Tensor &labels,
                           ModeKeys mode, double learning_rate);

// --- MLP on MNIST: 784-256-256-10 ----------------------------------------
struct MlpParams {
  int64_t input_size = 784;
  std::vector<int64_t> hidden_units = {256, 256};
  int64_t n_classes = 10;
  double learning_rate = 0.002;
};
/// features {"x": f32 [?,input_size]}, labels i64 [?].
InputSpec mlp_inputs(const MlpParams &params = {});
Signature mlp_model_fn(Graph &g, const TensorMap &features,
                       const Tensor &labels, ModeKeys mode,
                       const MlpParams &params = {});
graph::GraphDef build_mlp(int64_t seed = 0, const MlpParams &params = {});
/// The iris-sized net of estimator_bench: 4-10-10-3 (relu), Adam 0.002.
MlpParams iris_params();

// --- ConvNet on MNIST ------------------------------------------------------
struct ConvNetParams {
  int64_t n_classes = 10;
  double dropout_rate = 0.5;
  double learning_rate = 0.002;
};
/// features {"x": f32 [?,28,28,1]}, labels i64 [?].
InputSpec convnet_inputs();
Signature convnet_model_fn(Graph &g, const TensorMap &features,
                           const Tensor &labels, ModeKeys mode,
                           const ConvNetParams &params = {});
graph::GraphDef build_convnet(int64_t seed = 0,
                              const ConvNetParams &params = {});

// --- Linear (logistic) classifier over numeric features ------------------
struct LinearParams {
  std::vector<std::string> feature_keys = {"age", "fare", "pclass"};
  double learning_rate = 0.1;
};
/// One f32 [?,1] feature per key, labels i64 [?,1] (0 or 1).
InputSpec linear_inputs(const LinearParams &params = {});
Signature linear_model_fn(Graph &g, const TensorMap &features,
                          const Tensor &labels, ModeKeys mode,
                          const LinearParams &params = {});
graph::GraphDef build_linear(int64_t seed = 0, const LinearParams &params = {});

// --- Registry (estc-models) ------------------------------------------------
struct ModelEntry {
  std::string name;
  std::string description;
  graph::GraphDef (*build)(int64_t seed);
};
const std::vector<ModelEntry> &model_registry();
/// nullptr when no model has that name.
const ModelEntry *find_model(const std::string &name);

} // namespace models
} // namespace estc

#endif // ESTC_LIB_MODELS_MODELS_H
