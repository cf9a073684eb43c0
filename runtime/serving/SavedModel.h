//===- SavedModel.h - Load and run an exported estc model ---------------===//
//
// The serving half of issue 14: what `Estimator::export_saved_model`
// (estimator/Export.h) writes, loaded and run with no LLVM, no MLIR and no
// model_fn (docs/design/saved-model.md). TF's
// tensorflow::LoadSavedModel + Session::Run, for estc's export folder:
//
//   auto model = serving::SavedModel::load("/models/titanic/1764150000");
//   const serving::SignatureDef &sig = model->signature("serving_default");
//   serving::TensorMap out = model->run(
//       "predict", {{"examples", TensorValue::of_strings({2}, {ex0, ex1})}});
//   out.at("probabilities");   // F32 [2, 2]
//
// A request goes receiver (raw tensors, or serialized tf.Example parsed with
// the export's parse spec) -> transform (the feature columns' host half) ->
// the compiled serving function (dlopen'd model.so) -> the signature's
// outputs (class ids mapped to class names where the signature says so).
//
// run() is const and safe for concurrent callers: the variables are loaded
// once and shared read-only; each call runs on its own arena and buffers
// (a pool of runners, one per concurrent call, reused).
//
// Errors: a folder that is not a complete, valid export (missing or corrupt
// file, another format or architecture, a CPU lacking a feature the code
// was compiled for, a library without the serving symbol) is a LoadError
// whose what() is one line naming the folder and the fault. A bad request
// (unknown signature, missing or unknown input, wrong dtype or shape, an
// empty batch) is std::invalid_argument; bad data (a malformed tf.Example,
// a feature missing from an example) is data::DataError (lib/Data/Idx.h);
// a failed run-time check of the compiled code (an id out of range) is
// rt::InvalidArgumentError. All are one line.
//
// Library EstcSavedModel: links the runtime, lib/Data, lib/FeatureColumn's
// host half and lib/Checkpoint; no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_SAVEDMODEL_H
#define ESTC_ESTIMATOR_SERVING_SAVEDMODEL_H

#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc {
namespace serving {

/// Tensors by name (inputs by signature input alias, outputs by output
/// alias).
using TensorMap = std::map<std::string, TensorValue>;

/// The method names of TF's signatures.
constexpr const char *kPredictMethodName = "tensorflow/serving/predict";
constexpr const char *kClassifyMethodName = "tensorflow/serving/classify";
constexpr const char *kRegressMethodName = "tensorflow/serving/regress";
constexpr const char *kEvalMethodName = "tensorflow/supervised/eval";
/// The signature a request without signature_name gets.
constexpr const char *kDefaultServingSignatureDefKey = "serving_default";

/// One input or output of a signature (TF's TensorInfo): the tensor's name
/// (for an input, the receiver tensor it feeds), dtype and shape (-1: the
/// batch, or unknown).
struct TensorInfo {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};

/// TF's SignatureDef.
struct SignatureDef {
  std::string method_name;
  /// By alias.
  std::map<std::string, TensorInfo> inputs;
  std::map<std::string, TensorInfo> outputs;
};

/// The export folder is not a valid, complete, loadable export.
class LoadError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct LoadOptions {
  /// Skip the CPU feature check (for tools that only inspect an export;
  /// running code compiled for a missing feature crashes with SIGILL).
  bool skip_cpu_check = false;
};

class SavedModel {
public:
  /// Loads `export_dir` (a folder export_saved_model wrote). Throws
  /// LoadError, one line.
  static std::shared_ptr<const SavedModel>
  load(const std::string &export_dir, const LoadOptions &options = {});

  ~SavedModel();
  SavedModel(const SavedModel &) = delete;
  SavedModel &operator=(const SavedModel &) = delete;

  const std::string &export_dir() const;
  /// Every signature, by name.
  const std::map<std::string, SignatureDef> &signatures() const;
  /// One signature; std::invalid_argument naming it when absent (TF
  /// Serving's "Serving signature name: \"x\" not found in signature def").
  const SignatureDef &signature(const std::string &name) const;
  /// The global step of the checkpoint it was exported from.
  int64_t global_step() const;

  /// Runs `signature` on `inputs` (by input alias; every input required,
  /// first dimension the batch, which must agree) and returns the outputs
  /// whose alias is in `output_filter` (all when empty; an unknown alias is
  /// std::invalid_argument). Shapes: a [-1] input takes [batch]; a
  /// [-1, d...] input also accepts [batch] when d... is all 1s. Numeric
  /// inputs of another numeric dtype are converted where lossless (I64 ->
  /// F32 and F64 values of JSON numbers, as TF Serving converts JSON);
  /// strings for a numeric input and the reverse are std::invalid_argument.
  TensorMap run(const std::string &signature, const TensorMap &inputs,
                const std::vector<std::string> &output_filter = {}) const;

  /// Bytes of the shared variables; and of the runners' arenas and buffers
  /// now (grows with concurrency and batch size).
  int64_t variable_bytes() const;
  int64_t runner_bytes() const;

private:
  struct Impl;
  explicit SavedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The version a folder name stands for: 1 to 18 digits (TF Serving's
/// numbered version folders; export_saved_model's timestamps), else
/// nullopt. Header-only: the exporter (estimator/Export.cpp) picks new
/// names by the same rule without linking the loader.
inline std::optional<int64_t> version_of(const std::string &folder_name) {
  if (folder_name.empty() || folder_name.size() > 18 ||
      folder_name.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(folder_name);
}

/// The export folders under `base_path` whose names are versions
/// (version_of), sorted by number; a missing base path is empty.
std::vector<std::pair<int64_t, std::string>>
list_versions(const std::string &base_path);

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_SAVEDMODEL_H
