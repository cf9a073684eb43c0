//===- KerasModel.h - Keras model and weights files, read and written ---===//
//
// estc reads the files Keras saves a model in, so that a model defined in
// Keras can be built as an estc graph and fine-tuned from its weights, and
// writes trained values back into the same kind of file for Keras to load
// (issue 29; the formats and the choices are docs/design/keras.md):
//
//   .keras           a zip archive: config.json (the model's config),
//                    metadata.json (keras_version, date_saved) and
//                    model.weights.h5 (Keras 3's weights layout below), as
//                    tf.keras 2.13-2.15 and Keras 3 write it
//   .h5 (model)      legacy HDF5: root attributes model_config,
//                    keras_version, backend, training_config; group
//                    model_weights with a group per layer listing its
//                    weights in attribute weight_names
//   .weights.h5      weights only, Keras 3's layout (tf.keras 2.13+'s
//                    save_weights too): layers/<snake_case class>[_n]/vars/0..
//   .h5 (weights)    legacy weights only: root attribute layer_names, a
//                    group per layer with weight_names
//
// Every form reads into one KerasModel: the config (when the file has one),
// the compile config, the Keras version and backend, and the weights per
// layer in Keras's own order (Model.weights): a layer's weights are named
// as tf.keras names its variables ("dense/kernel:0",
// "lstm/lstm_cell/recurrent_kernel:0", for Keras 3's vars-by-index too).
// write_keras_file writes the same kind of file with new weight values,
// everything else kept as read (configs, metadata, optimizer state).
//
// Every problem a user's file can cause throws KerasError, one line naming
// the file.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_KERASMODEL_H
#define ESTC_LIB_KERAS_KERASMODEL_H

#include "lib/Support/FileError.h"
#include "lib/Tensor/TensorValue.h"

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace keras {

/// A file that is not a Keras model or weights file, or a corrupt,
/// truncated or inconsistent one: what() is "<file>: <problem>".
class KerasError : public FileError {
public:
  using FileError::FileError;
};

enum class FileFormat {
  KerasArchive,   ///< .keras: zip with config.json, model.weights.h5
  H5Model,        ///< legacy .h5 full model (model_config, model_weights)
  WeightsH5,      ///< Keras 3 layout weights file (.weights.h5)
  LegacyWeightsH5 ///< legacy .h5 weights (layer_names, weight_names)
};
/// "keras", "h5", "weights.h5", "legacy_weights.h5".
const char *format_name(FileFormat format);

/// One weight of a layer.
struct Weight {
  /// tf.keras's variable name: "hidden/kernel:0", "bi/forward_lstm/
  /// lstm_cell/bias:0"; in a nested model, the inner layer's name first
  /// ("inner_dense/kernel:0"), as Keras names it; always with a layer's
  /// name (an adapted Normalization's "norm/mean:0", which tf.keras names
  /// "mean:0").
  std::string name;
  /// The dataset in the HDF5 weights file: "model_weights/hidden/hidden/
  /// kernel:0" (legacy), "layers/dense/vars/0" (Keras 3 layout).
  std::string path;
  /// Its value, in the file's dtype (float32 for nearly every model;
  /// float16, float64, int32, int64 and bool read as such).
  TensorValue value;
};

/// The weights of one layer of the model (a nested model is one layer
/// holding all its layers' weights), in Keras's order.
struct LayerWeights {
  std::string layer;
  std::string class_name; ///< the config's class_name; "" without a config
  std::vector<Weight> weights;
};

struct KerasModel {
  std::string file; ///< the path read
  FileFormat format = FileFormat::KerasArchive;
  /// The model's config as Keras serialized it ({"class_name":
  /// "Functional", "config": {...}}); a null value for weights-only files.
  rapidjson::Document config;
  /// The compile config: a .keras file's config["compile_config"], a legacy
  /// .h5's training_config; null when the model was not compiled.
  rapidjson::Document training_config;
  std::string keras_version; ///< "2.15.0", "3.5.0"; "" when not recorded
  std::string backend;       ///< "tensorflow", "jax"; "" when not recorded
  /// The layers with their weights in the model's layer order (config order
  /// for Functional models and Sequential ones; layer_names for legacy
  /// files), layers without weights included.
  std::vector<LayerWeights> layers;

  bool has_config() const { return config.IsObject(); }
  /// The config's top-level class_name ("Functional", "Sequential"); "".
  std::string class_name() const;
  /// A layer by name; nullptr when absent.
  const LayerWeights *find_layer(std::string_view name) const;
  LayerWeights *find_layer(std::string_view name);
  /// A weight by its name ("dense/kernel:0"); nullptr when absent.
  const Weight *find_weight(std::string_view name) const;
  Weight *find_weight(std::string_view name);
  /// Every weight in Keras's order (Model.weights).
  std::vector<const Weight *> weights() const;
  /// The config of a layer of the model (an entry of config["config"]
  /// ["layers"]: {"class_name", "config", "inbound_nodes", ...}) by its
  /// name; nullptr when absent or without a config.
  const rapidjson::Value *layer_config(std::string_view name) const;

  /// What write_keras_file needs: the bytes as read.
  std::string original_bytes;
};

/// Reads any of the four forms, by content (zip or HDF5). A weights-only
/// file in Keras 3's layout has no config of its own: with `config` (a
/// model's config, e.g. another KerasModel's `config`) its weights are
/// named and ordered by it; without, each group of vars is a layer named
/// by its path ("dense", "lstm/cell") and each weight by its dataset path.
KerasModel read_keras_file(const std::string &path,
                           const rapidjson::Value *config = nullptr);
/// The same from bytes in memory; `name` stands for the file in errors.
KerasModel read_keras_bytes(std::string_view bytes, const std::string &name,
                            const rapidjson::Value *config = nullptr);

/// A model file (.keras or a legacy .h5 full model): KerasError when the
/// file has no model config (a weights-only file).
KerasModel load_model(const std::string &path);

/// The bytes of `model`'s file with its weights' current values (same
/// shapes as read; HDF5 converts between float types), everything else as
/// read: the format read, the configs and metadata, other archive entries,
/// other datasets (optimizer state).
std::string serialize_keras_file(const KerasModel &model);
/// serialize_keras_file written crash-safely to `path`.
void write_keras_file(const KerasModel &model, const std::string &path);

/// Parses a config.json / metadata.json / model_config text: KerasError
/// "<name>: ..." when it is not a JSON object (what a .keras archive and a
/// legacy .h5 hold).
rapidjson::Document parse_config_json(std::string_view text,
                                      const std::string &name);

/// Keras's generic_utils.to_snake_case: "BatchNormalization" ->
/// "batch_normalization", "Conv2D" -> "conv2d", "PReLU" -> "p_re_lu".
std::string to_snake_case(std::string_view class_name);

} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_KERASMODEL_H
