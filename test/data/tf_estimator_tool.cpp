//===- tf_estimator_tool.cpp - An Estimator continuing TF's model_dirs ----===//
//
// The estc side of test/e2e/tf_estimator_checkpoint_compat.py: trains a
// model (the JIT Estimator) in MODEL_DIR, which a TF 2.15 Estimator of the
// same model may have written or may continue, on the batches of a data
// file, in order:
//
//   tf_estimator_tool MODEL_DIR DATA MODEL BATCH STEPS FORMAT
//
//   MODEL      a custom model_fn: x [B, 4] -> tf.compat.v1.layers.dense(8,
//              relu) -> dense(3); sparse softmax cross-entropy; TF 1's
//              optimizers: sgd (GradientDescent 0.1), momentum (Momentum
//              0.05, 0.9), adagrad (Adagrad 0.1, initial accumulator 0.1),
//              adam (Adam 0.01);
//              or a canned estimator of 3 classes over numeric_column("x",
//              4) and categorical_column_with_identity("c", 5) (the DNN's
//              as embedding_column(c, 3)), its default optimizer by name
//              unless said: linear, dnn (hidden [8]), dnn_adam ("Adam"), wd
//              (DNNLinearCombined, Ftrl + Adagrad), wd_adam ("Adam" both),
//              baseline
//   DATA       float32 x [n, 4], int64 c [n], int64 labels [n],
//              little-endian
//   FORMAT     RunConfig's checkpoint_format: auto, tf or safetensors
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"
#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Support/FileIO.h"
#include "test/data/ModelDirTurns.h"

#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>

using namespace estc;
using namespace estc::estimator;

namespace {
EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &params,
                       const RunConfig &config) {
  (void)config;
  Tensor hidden = layers::dense(features["x"], 8, nn::relu);
  Tensor logits = layers::dense(hidden, 3);
  EstimatorSpec spec(mode);
  spec.predictions = {{"logits", logits}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  std::string name = params.get<std::string>("optimizer");
  train::Optimizer optimizer =
      name == "sgd"        ? train::GradientDescentOptimizer(0.1)
      : name == "momentum" ? train::MomentumOptimizer(0.05, 0.9)
      : name == "adam"     ? train::AdamOptimizer(0.01)
                           : train::AdagradOptimizer(0.1, 0.1);
  spec.train_op = optimizer.minimize(spec.loss);
  return spec;
}
/// The Estimator that trains `model` in `config`'s model_dir.
std::unique_ptr<Estimator> makeEstimator(const std::string &model,
                                         const RunConfig &config) {
  namespace fc = feature_column;
  if (model == "sgd" || model == "momentum" || model == "adagrad" ||
      model == "adam") {
    Params params;
    params.set("optimizer", model);
    return std::make_unique<Estimator>(model_fn, config, params);
  }
  // One object per column (a wide & deep model's parts share them).
  auto x = fc::numeric_column("x", {4});
  auto c = fc::categorical_column_with_identity("c", 5);
  FeatureColumns linear = {x, c};
  FeatureColumns dnn = {x, fc::embedding_column(c, 3)};
  ClassifierOptions head;
  head.n_classes = 3;
  if (model == "linear")
    return std::make_unique<LinearClassifier>(linear, head, LinearOptions{},
                                              config);
  if (model == "dnn" || model == "dnn_adam") {
    DNNOptions o;
    o.hidden_units = {8};
    if (model == "dnn_adam")
      o.optimizer = "Adam";
    return std::make_unique<DNNClassifier>(dnn, o, head, config);
  }
  if (model == "wd" || model == "wd_adam") {
    DNNLinearCombinedOptions o;
    o.linear_feature_columns = linear;
    o.dnn_feature_columns = dnn;
    o.dnn_hidden_units = {8};
    if (model == "wd_adam")
      o.linear_optimizer = o.dnn_optimizer = "Adam";
    return std::make_unique<DNNLinearCombinedClassifier>(o, head, config);
  }
  if (model == "baseline")
    return std::make_unique<BaselineClassifier>(head, "Ftrl", config);
  throw std::invalid_argument("unknown model '" + model + "'");
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 7) {
    std::cerr << "usage: tf_estimator_tool MODEL_DIR DATA MODEL BATCH "
                 "STEPS FORMAT\n";
    return 2;
  }
  try {
    std::string model = argv[3];
    int64_t batch = std::stoll(argv[4]), steps = std::stoll(argv[5]);
    int64_t n = batch * steps;
    turns::Batches b = turns::readBatches(argv[2], n, 1);
    RunConfigOptions o = turns::runOptions(argv[1], steps);
    o.checkpoint_format = argv[6];
    std::unique_ptr<Estimator> estimator =
        makeEstimator(model, RunConfig::from_tf_config("", o));
    estimator->train(
        numpy_input_fn({{"x", b.x}, {"c", b.c}}, b.y, {batch, 1, false, 0}),
        {.steps = steps});
    std::cout
        << "global_step "
        << estimator->get_variable_value("global_step").values<int64_t>()[0]
        << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "tf_estimator_tool: error: " << e.what() << "\n";
    return 1;
  }
}
