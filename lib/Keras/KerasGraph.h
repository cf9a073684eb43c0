//===- KerasGraph.h - estc graphs from Keras model configs ------*- C++ -*-===//
//
// Builds the graph of a Keras model (a KerasModel read by KerasModel.h: a
// Sequential or Functional config, nested models, shared layers, several
// inputs and outputs) with estc's graph builder, so that the model can be
// trained, evaluated, exported and served as any model_fn's graph (issue
// 29; model_to_estimator in estimator/KerasEstimator.h sits on top).
//
// Variables are named as tf.keras names them (a Weight's name without
// ":0": "dense/kernel", "lstm/lstm_cell/recurrent_kernel",
// "batch_normalization/moving_mean"; a nested model's layers by their own
// names), created with the initializers of the layers' configs; the file's
// weights are their values through `variable_values` (a checkpoint to warm
// start from, or values assigned by name). Layers whose `trainable` is
// false (or inside a model whose `trainable` is false) create non-trainable
// variables, and a non-trainable BatchNormalization runs in inference mode
// in training too, as TF 2's Keras does.
//
// A layer estc cannot build (Lambda, a custom class, an argument value
// outside what is supported) throws KerasError, one line naming the layer,
// its class and the model file.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_KERASGRAPH_H
#define ESTC_LIB_KERAS_KERASGRAPH_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Keras/KerasModel.h"

#include <map>
#include <string>
#include <vector>

namespace estc {
namespace keras {

/// One input of the model: its InputLayer's name, dtype and shape (batch
/// dimension -1, and -1 for each None).
struct InputSpec {
  std::string name;
  DType dtype = DType::Float32;
  Dims shape;
  /// Dimension 1 is None in Keras (shape [-1, -1, ...]): a padded batch's
  /// run-time sequence length (TensorSpec / PlaceholderOptions::
  /// sequence_dim; the compiled model's set_sequence_length).
  bool sequence_dim = false;
};

/// The model's inputs in Keras's order (model.input_names); KerasError for
/// a file without a config.
std::vector<InputSpec> model_inputs(const KerasModel &model);
/// The model's output names in Keras's order (model.output_names: the
/// layers producing the outputs).
std::vector<std::string> model_output_names(const KerasModel &model);

struct BuildOptions {
  /// Keras's `training` argument of the call: dropout active, batch
  /// normalization from the batch's statistics with its moving-statistics
  /// updates in the mode's "update_ops" collection.
  bool training = false;
};

/// The model's graph as built.
struct KerasGraph {
  std::vector<std::string> input_names;
  std::vector<Tensor> inputs;
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;
  /// Every variable the model created, in Keras's order (model.weights).
  std::vector<Variable> variables;
};

/// Builds `model` in g's current mode and name scope on `inputs`, one per
/// model input in model_inputs' order (dtype and known dims must match).
KerasGraph build_model(Graph &g, const KerasModel &model,
                       const std::vector<Tensor> &inputs,
                       const BuildOptions &options = {});
/// The same on placeholders named by the inputs' names (sequence_dim ones
/// for inputs whose dimension 1 is None).
KerasGraph build_model(Graph &g, const KerasModel &model,
                       const BuildOptions &options = {});

/// The file's weights keyed by the variable names build_model gives them
/// ("dense/kernel"): the initial values of a model built from the file.
std::map<std::string, TensorValue> variable_values(const KerasModel &model);

/// Writing back: each weight of `model` whose variable is in `values` takes
/// that value (shapes must match: KerasError naming the weight otherwise);
/// then write_keras_file writes the file. Returns how many were set.
size_t set_variable_values(KerasModel &model,
                           const std::map<std::string, TensorValue> &values);

} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_KERASGRAPH_H
