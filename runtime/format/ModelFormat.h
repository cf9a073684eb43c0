//===- ModelFormat.h - manifest.json and saved_model.json
//------------------===//
//
// The one home of a compiled model's file formats (docs/architecture.md):
// their schema as C++ structs, their readers and their writers.
//
//  - manifest.json (estc-manifest-1, docs/design/codegen-abi.md): what a
//    compiled model looks like from outside, written next to the object by
//    the compiler (compiler/Target/Manifest.h wraps it) and embedded in an
//    export's saved_model.json as "model".
//  - saved_model.json (estc-saved-model-1, docs/design/saved-model.md): an
//    export folder's index, written by Estimator::export_saved_model
//    (estimator/Export.cpp) and read by the loader
//    (runtime/serving/SavedModel.cpp).
//
// The writers' texts are part of the format (golden files compare them
// byte for byte); the readers' errors are one line naming the field. No
// LLVM: library EstcModelFormat, on RapidJSON (linked privately).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_FORMAT_MODELFORMAT_H
#define ESTC_RUNTIME_FORMAT_MODELFORMAT_H

#include "lib/Tensor/DType.h"
#include "runtime/CompiledModel.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace estc {
namespace modelformat {

/// A malformed file: what() is one line (control characters escaped).
class FormatError : public std::runtime_error {
public:
  explicit FormatError(const std::string &message);
};

// --- manifest.json -----------------------------------------------------------

constexpr const char *kManifestFormat = "estc-manifest-1";

struct TensorInfo {
  std::string key;
  rt::DType dtype = rt::DType::F32;
  /// rt::kBatchDim for the batch, rt::kValuesDim for a sparse input's
  /// number of values, rt::kSequenceDim for the sequence length (dimension
  /// 1 of a sequence input; any dimension of an output).
  std::vector<int64_t> shape;
  /// A sequence input's declared maximum length ("max_sequence_length");
  /// 0: none.
  int64_t maxSequenceLength = 0;
};

struct VariableInfo {
  std::string name;
  rt::DType dtype = rt::DType::F32;
  std::vector<int64_t> shape;
  bool trainable = false;
  bool local = false; // metric state: not checkpointed, reset by evaluate()
  std::string initializer; // "" if none
  /// Initializer parameters as (name, value as JSON text), sorted by name.
  std::vector<std::pair<std::string, std::string>> initializerParams;
  /// The ps task holding it (rt::VariableSpec::psTask); -1: none.
  int32_t psTask = -1;
};

struct FunctionInfo {
  std::string name;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  int64_t arenaStatic = 0;
  int64_t arenaPerBatch = 0;
  /// Bytes per sparse value (rt::FunctionSpec::arenaPerValue).
  int64_t arenaPerValue = 0;
  /// Bytes per step of the sequence length, and per example and step
  /// (rt::FunctionSpec::arenaPerStep, arenaPerBatchStep; "per_step",
  /// "per_batch_step").
  int64_t arenaPerStep = 0;
  int64_t arenaPerBatchStep = 0;
  /// Byte offset of the run-time checks' status slot in the arena; -1 when
  /// the function has no checks.
  int64_t statusOffset = -1;
  /// A multi-step loop (addStepLoop): the function it runs once per step;
  /// empty for the others.
  std::string loopOf = "";
};

/// A run-time check (rt::CheckSpec), from the module's estc.runtime_checks.
struct CheckInfo {
  std::string node;
  std::string what;
  int64_t lower = 0;
  int64_t upper = 0;
  std::vector<int64_t> shape; // rt::kBatchDim for the batch
};

struct Manifest {
  std::string name; // the C++ class name (--name)
  rt::Device device = rt::Device::Cpu;
  std::string gpuArch; // CUDA: "sm_90"; empty on the CPU
  /// Data-parallel replicas the step averages over (estc.replicas); 0: none.
  int32_t replicas = 0;
  /// Parameter-server training (rt::ModelSpec's psTasks, psTask, psInputs,
  /// psRemote; "ps_tasks", "ps_task", "ps_inputs", "ps_remote").
  int32_t psTasks = 0;
  int32_t psTask = -1;
  std::vector<TensorInfo> psInputs;
  std::vector<VariableInfo> psRemote;
  /// "ps_sync": [replicas_to_aggregate, total_num_replicas]; 0, 0: async.
  int32_t psReplicasToAggregate = 0;
  int32_t psTotalNumReplicas = 0;
  std::vector<VariableInfo> variables;
  std::vector<FunctionInfo> functions;
  std::vector<CheckInfo> checks; // indexed by est.check_range's `check`

  const FunctionInfo *findFunction(std::string_view name) const;
};

/// The manifest's name of an element type ("f32", "i1", ...) and back.
const char *elementTypeName(rt::DType dtype);
std::optional<rt::DType> elementTypeFromName(std::string_view name);

/// manifest.json's text: deterministic (fixed key order, 2-space indent,
/// final newline), as the compiler has always written it.
std::string writeManifest(const Manifest &manifest);

/// Reads the compiler's manifest.json. Throws FormatError, one line
/// starting "manifest: ".
Manifest readManifest(std::string_view json);

/// Where a manifest misuses the sequence length (rt::kSequenceDim): in a
/// variable's or check's shape, anywhere in an input but dimension 1 after
/// the batch, a negative or stray max_sequence_length, a negative per-step
/// arena size. One line naming it, or "" when it is consistent.
std::string checkSequenceDims(const Manifest &manifest);

/// JSON text as manifest.json writes it (LLVM's JSON writer): a string
/// (quotes and escapes; invalid UTF-8 replaced by U+FFFD) and a double
/// (%.17g).
std::string quoteString(std::string_view s);
std::string formatDouble(double value);

/// The manifest as a runtime ModelSpec. The spec points into `storage`,
/// which must outlive it.
struct ModelSpecStorage;
rt::ModelSpec toModelSpec(const Manifest &manifest,
                          std::shared_ptr<ModelSpecStorage> &storage);

// --- saved_model.json --------------------------------------------------------

constexpr const char *kSavedModelFormat = "estc-saved-model-1";

/// A receiver tensor, or a signature's input (name: the receiver tensor it
/// feeds) or output (name: the compiled output it returns, its "source";
/// lookup: "", "class_names" or "decimal"). -1 in a shape: the batch.
struct SignatureTensor {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::string lookup;
};

struct Receiver {
  /// "raw", or "parsing" (one STRING tensor of serialized tf.Examples
  /// parsed with parseSpec).
  std::string kind = "raw";
  std::vector<SignatureTensor> tensors;
  /// parsing: the parse spec's JSON text (lib/FeatureColumn/Serialization.h).
  std::string parseSpec;
};

struct Signature {
  std::string methodName;
  std::string receiver;
  std::map<std::string, SignatureTensor> inputs;  // by alias
  std::map<std::string, SignatureTensor> outputs; // by alias
};

struct Target {
  std::string arch; // "x86_64", "aarch64" (hostArch())
  std::string triple;
  std::string cpu;
  std::vector<std::string> features;
};

/// target.arch of this machine: "x86_64", "aarch64" or "unknown".
const char *hostArch();

/// The host transform (absent: the model takes the receiver's tensors).
struct Transform {
  /// The transform's JSON text as written (the host transform's
  /// serving_config); the fields below are read from it.
  std::string json;
  /// The feature columns' JSON text (lib/FeatureColumn); empty: none.
  std::string featureColumns;
  bool hasFeatureColumns = false;
  std::vector<std::string> ones;
  std::string batchZeros;
  std::vector<std::string> classNames;
  bool hasClassNames = false;
};

struct SavedModelFile {
  std::string estcVersion;
  int64_t globalStep = 0;
  std::string checkpoint;
  std::string mode;
  Target target;
  std::string library = "model.so";
  std::string function;
  std::string variables = "variables.safetensors";
  /// The compiled model: its manifest.json text (written verbatim) and, as
  /// read, its schema.
  std::string modelJson;
  Manifest model;
  /// In file order; the writer writes them in this order.
  std::vector<std::pair<std::string, Receiver>> receivers;
  std::optional<Transform> transform;
  /// In file order (the writer: name order).
  std::vector<std::pair<std::string, Signature>> signatures;
};

/// saved_model.json's text, compact (or, as_text, indented by 2), with a
/// final newline.
std::string writeSavedModel(const SavedModelFile &file, bool asText);

/// The reader's calls out to the loader, at the point of the file where the
/// loader has always made its check (so that a file's first fault is the one
/// reported). Each may throw FormatError; the std::invalid_argument of
/// parseSpec and featureColumns becomes a FormatError naming the field.
struct SavedModelHooks {
  /// target.arch, read.
  std::function<void(const std::string &arch)> arch;
  /// target.features, read; `cpu` reads target.cpu.
  std::function<void(const std::vector<std::string> &features,
                     const std::function<std::string()> &cpu)>
      features;
  /// A parsing receiver's parse spec.
  std::function<void(const std::string &receiver, const std::string &json)>
      parseSpec;
  /// transform.feature_columns.
  std::function<void(const std::string &json)> featureColumns;
  /// The library's file name, read (the file so far: everything but
  /// "variables").
  std::function<void(const SavedModelFile &file)> library;
};

/// Reads saved_model.json: the format, every field, and the file's own
/// consistency (one compiled function; receivers, signatures and compiled
/// outputs that agree). Throws FormatError: "saved_model.json is not JSON
/// (at byte N)" or one line naming the field.
SavedModelFile readSavedModel(std::string_view json,
                              const SavedModelHooks &hooks = {});

} // namespace modelformat
} // namespace estc

#endif // ESTC_RUNTIME_FORMAT_MODELFORMAT_H
