//===- tf_estimator_tool.cpp - An Estimator continuing TF's model_dirs ----===//
//
// The estc side of test/e2e/tf_estimator_checkpoint_compat.py: trains the
// custom model_fn below (the JIT Estimator) in MODEL_DIR, which a TF 2.15
// Estimator with the same model_fn may have written or may continue, on the
// batches of a data file, in order:
//
//   tf_estimator_tool MODEL_DIR DATA OPTIMIZER BATCH STEPS FORMAT
//
//   model_fn   x [B, 4] -> tf.compat.v1.layers.dense(8, relu) -> dense(3);
//              sparse softmax cross-entropy; OPTIMIZER (TF 1's names):
//              sgd (GradientDescent 0.1), momentum (Momentum 0.05, 0.9),
//              adagrad (Adagrad 0.1, initial accumulator 0.1)
//   DATA       float32 x [n, 4] then int64 labels [n], little-endian
//   FORMAT     RunConfig's checkpoint_format: auto, tf or safetensors
//
// It trains STEPS steps from the model_dir's latest checkpoint (one epoch of
// STEPS * BATCH examples, in order), saving every STEPS steps (so the state
// it starts from and the last), and prints "global_step N".
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Support/FileIO.h"

#include <cstring>
#include <iostream>
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
                           : train::AdagradOptimizer(0.1, 0.1);
  spec.train_op = optimizer.minimize(spec.loss);
  return spec;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 7) {
    std::cerr << "usage: tf_estimator_tool MODEL_DIR DATA OPTIMIZER BATCH "
                 "STEPS FORMAT\n";
    return 2;
  }
  try {
    std::string optimizer = argv[3];
    if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adagrad")
      throw std::invalid_argument("unknown optimizer '" + optimizer + "'");
    int64_t batch = std::stoll(argv[4]), steps = std::stoll(argv[5]);
    int64_t n = batch * steps;
    std::string data = fileio::readFile(argv[2]);
    size_t xBytes = static_cast<size_t>(n * 4 * 4);
    if (data.size() != xBytes + static_cast<size_t>(n * 8))
      throw std::invalid_argument(
          std::string(argv[2]) + ": " + std::to_string(data.size()) +
          " bytes, not the data of " + std::to_string(n) + " examples");
    TensorValue x =
        TensorValue::from_bytes(DType::Float32, {n, 4}, data.substr(0, xBytes));
    TensorValue y =
        TensorValue::from_bytes(DType::Int64, {n}, data.substr(xBytes));
    RunConfigOptions o;
    o.model_dir = argv[1];
    o.save_checkpoints_steps = steps;
    o.save_summary_steps = 0;
    o.log_step_count_steps = steps;
    o.checkpoint_format = argv[6];
    Params params;
    params.set("optimizer", optimizer);
    Estimator estimator(model_fn, RunConfig::from_tf_config("", o), params);
    estimator.train(numpy_input_fn({{"x", x}}, y, {batch, 1, false, 0}),
                    {.steps = steps});
    std::cout
        << "global_step "
        << estimator.get_variable_value("global_step").values<int64_t>()[0]
        << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "tf_estimator_tool: error: " << e.what() << "\n";
    return 1;
  }
}
