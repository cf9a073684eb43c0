//===- tf_partitioned_tool.cpp - A partitioned embedding's model_dirs ----===//
//
// The estc side of test/e2e/tf_partitioned_compat.py: trains a custom
// model_fn with a partitioned embedding (the JIT Estimator) in MODEL_DIR,
// which a TF 2.15 Estimator of the same model may have written or may
// continue, on the batches of a data file, in order:
//
//   tf_partitioned_tool MODEL_DIR DATA STRATEGY OPTIMIZER BATCH STEPS
//                       [EXPORT_DIR]
//
//   model      emb = get_variable("emb", [10, 3],
//              partitioner=fixed_size_partitioner(3)); the ids c [B, 2]
//              looked up with partition_strategy STRATEGY (mod or div),
//              reshaped to [B, 6], concatenated with x [B, 4], then
//              tf.compat.v1.layers.dense(3); sparse softmax cross-entropy;
//              OPTIMIZER: sgd (GradientDescent 0.1) or adagrad (Adagrad
//              0.1, initial accumulator 0.1)
//   DATA       float32 x [n, 4], int64 c [n, 2], int64 labels [n],
//              little-endian
//   EXPORT_DIR after training, export_saved_model there and check that the
//              exported parts emb/part_<i> are the rows of "emb" the
//              checkpoint holds (get_variable_value("emb"), TF's full
//              tensor of a TF-format model_dir); exit 1 otherwise
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/PartitionedVariables.h"
#include "lib/Graph/Train.h"
#include "lib/Support/FileIO.h"
#include "test/data/ModelDirTurns.h"

#include <iostream>
#include <stdexcept>

using namespace estc;
using namespace estc::estimator;

namespace {
EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &params,
                       const RunConfig &config) {
  (void)config;
  Graph &g = features["x"].graph();
  PartitionedVariable emb = get_variable(g, "emb", DType::Float32, {10, 3},
                                         fixed_size_partitioner(3));
  Tensor rows = nn::embedding_lookup(emb, features["c"],
                                     params.get<std::string>("strategy"));
  Tensor net = concat({reshape(rows, {-1, 6}), features["x"]}, 1);
  Tensor logits = layers::dense(net, 3);
  EstimatorSpec spec(mode);
  spec.predictions = {{"logits", logits}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  train::Optimizer optimizer = params.get<std::string>("optimizer") == "sgd"
                                   ? train::GradientDescentOptimizer(0.1)
                                   : train::AdagradOptimizer(0.1, 0.1);
  spec.train_op = optimizer.minimize(spec.loss);
  return spec;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    std::cerr << "usage: tf_partitioned_tool MODEL_DIR DATA STRATEGY "
                 "OPTIMIZER BATCH STEPS [EXPORT_DIR]\n";
    return 2;
  }
  try {
    int64_t batch = std::stoll(argv[5]), steps = std::stoll(argv[6]);
    int64_t n = batch * steps;
    turns::Batches b = turns::readBatches(argv[2], n, 2);
    RunConfigOptions o = turns::runOptions(argv[1], steps);
    Params params;
    params.set("strategy", std::string(argv[3]));
    params.set("optimizer", std::string(argv[4]));
    Estimator estimator(model_fn, RunConfig::from_tf_config("", o), params);
    estimator.train(
        numpy_input_fn({{"x", b.x}, {"c", b.c}}, b.y, {batch, 1, false, 0}),
        {.steps = steps});
    if (argc == 8) {
      std::string exported = estimator.export_saved_model(
          argv[7],
          build_raw_serving_input_receiver_fn(
              {{"x", DType::Float32, {-1, 4}}, {"c", DType::Int64, {-1, 2}}}));
      train::CheckpointReader variables(
          fileio::joinPath(exported, "variables.safetensors"));
      std::string parts;
      for (int i = 0; i < 3; ++i)
        parts += variables.get_tensor("emb/part_" + std::to_string(i)).data;
      if (parts != estimator.get_variable_value("emb").data)
        throw std::runtime_error(exported +
                                 ": the exported parts of emb are not the "
                                 "checkpoint's rows");
      std::cout << "exported " << exported << "\n";
    }
    std::cout
        << "global_step "
        << estimator.get_variable_value("global_step").values<int64_t>()[0]
        << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "tf_partitioned_tool: error: " << e.what() << "\n";
    return 1;
  }
}
