//===- KerasEstimator.h - tf.keras.estimator.model_to_estimator ---------===//
//
// A Keras model saved by Keras (`.keras`, or a legacy `.h5` full model,
// compiled before it was saved) as an Estimator: its graph built from the
// file's config (lib/Keras/KerasGraph.h), its weights the initial values,
// its compile config the training (estimator/KerasCompile.h), as TF 2.15's
// tf.keras.estimator.model_to_estimator does:
//
//   estimator::KerasEstimatorOptions o;
//   o.model_dir = "/tmp/mobilenet";
//   std::unique_ptr<estimator::KerasEstimator> est =
//       estimator::model_to_estimator("mobilenet_v2.keras", o);
//   est->train(input_fn, {.max_steps = 100});   // features keyed by the
//                                               // model's input names
//   est->evaluate(eval_input_fn);               // {"loss", "accuracy", ...}
//   est->export_saved_model("/tmp/export",      // serving::SavedModel
//                           est->serving_input_receiver_fn());
//   est->save_keras_model("fine_tuned.keras");  // Keras loads it
//
// Mirroring keras_lib.py:
//   - features: a dict keyed by the model's input names (extra features are
//     ignored); a model with one input also takes the lone feature of a
//     dict with one entry, whatever its key, as TF takes a tensor. A
//     feature missing, of another dtype than the input's, or of another
//     rank or known dimension throws std::invalid_argument, one line.
//   - labels: the labels tensor for a model with one output. estc's batches
//     hold one labels tensor, so a model with several outputs takes each
//     output's labels as the feature "labels/<output name>" (TF: a labels
//     dict keyed by output name); an output with a loss and no labels is an
//     error naming it.
//   - predictions keyed by the output names; export outputs: TF's
//     {"serving_default": PredictOutput(predictions)}, plus one signature
//     per entry of `export_outputs` (output name -> the kind of output).
//   - the first checkpoint: model_dir/keras/keras_model.ckpt holds the
//     file's weights under the Keras variable names ("dense/kernel",
//     "bn/moving_mean"), written unless model_dir/keras already holds a
//     checkpoint, which is then used (TF's _save_first_checkpoint); the
//     Estimator warm-starts from it (when model_dir has no checkpoint of
//     its own) every Keras variable, trainable or not (TF's default regex
//     form would take the trainable ones only, leaving batch-norm
//     statistics and frozen layers at their initializers). Checkpoints
//     name the variables as Keras does; optimizer slots "<var>/<slot>".
//   - loss: sum over the outputs of loss_weight * the output's Keras loss
//     (reduced over the batch as Keras does) plus the layers'
//     regularization losses; train_op: the optimizer's minimize grouped
//     with the "update_ops" (BatchNormalization's moving statistics);
//     Dropout active only in training.
//   - eval_metric_ops: the compiled metrics, named as Keras's v1 training
//     names them ("accuracy", "auc"; "<output>_<name>" with several
//     outputs), renamed by `metric_names_map`.
//
// Errors: the file's (KerasError, "<file>: ..."), an uncompiled model or a
// compile config estc cannot map (KerasError "<file>: compile config:
// ..."), bad options (std::invalid_argument), all one line, when
// model_to_estimator is called.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_KERASESTIMATOR_H
#define ESTC_ESTIMATOR_KERASESTIMATOR_H

#include "estimator/Estimator.h"
#include "lib/Keras/KerasModel.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

/// model_to_estimator's keyword arguments (keras_model_path is the
/// function's argument; keras_model and custom_objects have no C++
/// counterpart).
struct KerasEstimatorOptions {
  /// Overrides config's model_dir; both set and different:
  /// std::invalid_argument (TF's ValueError).
  std::string model_dir{};
  RunConfig config{};
  /// "checkpoint" (TF's default) or "saver"; anything else is an error.
  /// estc's checkpoints are name-based either way (Keras variable names, as
  /// TF's "saver" format): TF's object-graph keys are not written.
  std::string checkpoint_format{};
  /// Keras metric name -> name in evaluate's result; when given, it must
  /// name every metric and only them (TF's check).
  std::map<std::string, std::string> metric_names_map{};
  /// Output name -> the kind of output exported under that name as a
  /// signature (TF: {name: ExportOutput class}); names must be outputs of
  /// the model.
  std::map<std::string, ExportOutput::Kind> export_outputs{};
};

class KerasEstimator : public Estimator {
public:
  /// Use model_to_estimator.
  KerasEstimator(std::shared_ptr<const keras::KerasModel> model,
                 ModelFn model_fn, RunConfig config,
                 std::optional<WarmStartSettings> warm_start_from);

  /// The model as read from the file.
  const keras::KerasModel &keras_model() const { return *model_; }
  /// The model's input and output names (Keras's input_names,
  /// output_names).
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;

  /// The serving input receiver of the model's inputs
  /// (build_raw_serving_input_receiver_fn of each input's name, dtype and
  /// shape): export_saved_model(dir, est->serving_input_receiver_fn()).
  ServingInputReceiverFn serving_input_receiver_fn(
      std::optional<int64_t> default_batch_size = {}) const;

  /// Writing back: the file read, in its form (.keras, .h5), with every
  /// Keras weight set to its value in `checkpoint_path` (default: the
  /// latest checkpoint; none: std::invalid_argument), everything else as
  /// read; Keras loads it (keras.models.load_model). Returns how many
  /// weights were written.
  size_t save_keras_model(const std::string &out_path,
                          const std::string &checkpoint_path = "") const;

private:
  std::shared_ptr<const keras::KerasModel> model_;
};

/// tf.keras.estimator.model_to_estimator(keras_model_path=...): the
/// Estimator of the compiled Keras model saved at `keras_model_path`
/// (.keras or .h5). Writes model_dir/keras/keras_model.ckpt (the file's
/// weights) when model_dir/keras has no checkpoint yet, on the chief.
std::unique_ptr<KerasEstimator>
model_to_estimator(const std::string &keras_model_path,
                   const KerasEstimatorOptions &options = {});

/// Writing back from any Estimator whose variables carry the Keras names
/// (e.g. one rebuilt over the same model_dir): the Keras model file at
/// `keras_model_path` with its weights from `checkpoint_path` (a checkpoint
/// prefix or file; empty: estimator's latest) written to `out_path`.
size_t save_keras_model(const Estimator &estimator,
                        const std::string &keras_model_path,
                        const std::string &out_path,
                        const std::string &checkpoint_path = "");

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_KERASESTIMATOR_H
