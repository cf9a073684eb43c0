//===- Export.cpp - Receivers and Estimator::export_saved_model ----------===//
//
// Writes the export folder of docs/design/saved-model.md: the serving
// function the backend compiles, linked into a shared library by the system
// linker; the variables of the checkpoint it reads; the host transform and
// its assets; the signatures of export_outputs with TF's rules; and
// saved_model.json (runtime/format). Everything goes into a temporary folder
// renamed into place when complete.
//
//===----------------------------------------------------------------------===//

#include "estimator/Export.h"
#include "estimator/Estimator.h"
#include "estimator/EstimatorBackend.h"
#include "estimator/Logging.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/Partitions.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Printable.h"
#include "runtime/format/ModelFormat.h"
#include "runtime/serving/SavedModel.h"

#include "rapidjson/document.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <spawn.h>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace estc {
namespace estimator {

// --- Receivers ---------------------------------------------------------------

namespace {

void validateReceiver(const ReceiverTensors &r, const std::string &what) {
  if (r.tensors.empty())
    throw std::invalid_argument(what + ": no receiver tensors");
  std::set<std::string> seen;
  for (const TensorSpec &t : r.tensors) {
    if (t.key.empty())
      throw std::invalid_argument(what + ": a receiver tensor has no name");
    if (!seen.insert(t.key).second)
      throw std::invalid_argument(what + ": receiver tensor '" + t.key +
                                  "' is given twice");
    if (t.shape.empty())
      throw std::invalid_argument(what + ": receiver tensor '" + t.key +
                                  "' must have a batch dimension");
  }
  if (r.parse_spec &&
      (r.tensors.size() != 1 || r.tensors[0].dtype != DType::String ||
       r.tensors[0].shape.size() != 1))
    throw std::invalid_argument(
        what + ": a parsing receiver takes one STRING tensor of rank 1 "
               "(serialized tf.Example)");
  if (r.parse_spec && r.parse_spec->empty())
    throw std::invalid_argument(what + ": the parse spec is empty");
}

} // namespace

void ServingInputReceiver::validate() const {
  validateReceiver(*this, "ServingInputReceiver");
  for (const auto &[name, r] : receiver_tensors_alternatives) {
    if (name.empty())
      throw std::invalid_argument(
          "ServingInputReceiver: receiver_tensors_alternatives has an empty "
          "name");
    validateReceiver(r, "ServingInputReceiver: receiver_tensors_alternatives "
                        "'" +
                            name + "'");
  }
}

ServingInputReceiverFn build_parsing_serving_input_receiver_fn(
    data::FeatureSpecs feature_spec,
    std::optional<int64_t> default_batch_size) {
  if (feature_spec.empty())
    throw std::invalid_argument(
        "build_parsing_serving_input_receiver_fn: feature_spec is empty");
  return [spec = std::move(feature_spec), default_batch_size] {
    ServingInputReceiver r;
    r.tensors.push_back(
        {"examples", DType::String, {default_batch_size.value_or(-1)}});
    r.parse_spec = spec;
    return r;
  };
}

ServingInputReceiverFn
build_raw_serving_input_receiver_fn(std::vector<TensorSpec> features,
                                    std::optional<int64_t> default_batch_size) {
  if (features.empty())
    throw std::invalid_argument(
        "build_raw_serving_input_receiver_fn: features is empty");
  for (TensorSpec &f : features) {
    if (f.shape.empty())
      throw std::invalid_argument("build_raw_serving_input_receiver_fn: "
                                  "feature '" +
                                  f.key + "' needs a batch dimension");
    f.shape[0] = default_batch_size.value_or(-1);
  }
  return [features = std::move(features)] {
    ServingInputReceiver r;
    r.tensors = features;
    return r;
  };
}

// --- export_saved_model ------------------------------------------------------

namespace {

using namespace fileio;

using serving::kDefaultServingSignatureDefKey;

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument("Estimator.export_saved_model: " + message);
}

/// Runs the system linker: `object` into the shared library `library`.
/// $ESTC_LINKER names another linker (ld.lld, gold); "ld" by default, which
/// every machine that builds C++ has.
void linkSharedLibrary(const std::string &object, const std::string &library,
                       const std::string &logFile) {
  const char *env = std::getenv("ESTC_LINKER");
  std::string linker = env && *env ? env : "ld";
  std::vector<std::string> args = {linker, "-shared", "-z",  "noexecstack",
                                   "-o",   library,   object};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, linker.c_str(), &actions, nullptr, argv.data(),
                        environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    fail("cannot run the linker '" + linker + "' (" + std::strerror(rc) +
         "; set ESTC_LINKER to a linker)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string log;
    try {
      log = readFile(logFile);
    } catch (const std::exception &) {
    }
    size_t nl = log.find('\n');
    fail("the linker '" + linker +
         "' failed: " + (log.empty() ? "no output" : log.substr(0, nl)));
  }
}

/// A signature output or input as saved_model.json writes it.
struct SignatureTensor {
  std::string name; // input: the receiver tensor; output: the source key
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::string lookup; // outputs: "class_names" or "decimal"
};

struct Signature {
  std::string method;
  std::string receiver;
  std::map<std::string, SignatureTensor> inputs, outputs;
};

/// A compiled output's dtype and shape, from the manifest.
struct OutputInfo {
  DType dtype;
  std::vector<int64_t> shape;
};

std::map<std::string, OutputInfo>
compiledOutputs(const modelformat::Manifest &manifest,
                const std::string &function) {
  std::map<std::string, OutputInfo> out;
  const modelformat::FunctionInfo *f = manifest.findFunction(function);
  if (!f)
    return out;
  for (const modelformat::TensorInfo &o : f->outputs) {
    const char *abiName = modelformat::elementTypeName(o.dtype);
    std::optional<DType> dtype = dtype_from_abi_name(abiName);
    if (!dtype)
      fail("output '" + o.key +
           "' has an element type a signature cannot return (" + abiName + ")");
    std::vector<int64_t> shape;
    for (int64_t d : o.shape)
      shape.push_back(d < 0 ? -1 : d);
    out[o.key] = {*dtype, shape};
  }
  return out;
}

/// TF's build_all_signature_defs for one receiver: the signatures of every
/// export output valid for it (the others logged as excluded).
void addSignatures(const std::string &receiverName, const ReceiverTensors &r,
                   const detail::ServingCode &code,
                   const std::map<std::string, OutputInfo> &outputs,
                   bool hasClassNames, std::map<std::string, Signature> &out) {
  auto output = [&](const std::string &source) {
    auto it = outputs.find(source);
    if (it == outputs.end())
      fail("no compiled output '" + source + "'");
    return SignatureTensor{source, it->second.dtype, it->second.shape, ""};
  };
  // TF: classification and regression signatures take one string tensor
  // (serialized tf.Example).
  bool singleString =
      r.tensors.size() == 1 && r.tensors[0].dtype == DType::String;
  for (const auto &[key, kind] : code.output_kinds) {
    std::string name = receiverName.empty() ? key : receiverName + ":" + key;
    const std::map<std::string, std::string> &sources =
        code.output_sources.at(key);
    Signature sig;
    sig.receiver = receiverName;
    if (kind != ExportOutput::Kind::Predict) {
      if (!singleString) {
        log_info("export_saved_model: signature '" + name + "' excluded: " +
                 (kind == ExportOutput::Kind::Classification ? "Classification"
                                                             : "Regression") +
                 " input must be a single string Tensor");
        continue;
      }
      const TensorSpec &in = r.tensors[0];
      sig.inputs["inputs"] = {in.key, DType::String, in.shape, ""};
    } else {
      for (const TensorSpec &t : r.tensors)
        sig.inputs[t.key] = {t.key, t.dtype, t.shape, ""};
    }
    if (kind == ExportOutput::Kind::Classification) {
      sig.method = serving::kClassifyMethodName;
      if (sources.count("classes")) {
        SignatureTensor classes = output(sources.at("classes"));
        classes.dtype = DType::String;
        classes.lookup = hasClassNames ? "class_names" : "decimal";
        sig.outputs["classes"] = classes;
      }
      if (sources.count("scores"))
        sig.outputs["scores"] = output(sources.at("scores"));
    } else if (kind == ExportOutput::Kind::Regression) {
      sig.method = serving::kRegressMethodName;
      sig.outputs["outputs"] = output(sources.at("outputs"));
    } else {
      sig.method = serving::kPredictMethodName;
      for (const auto &[alias, source] : sources)
        sig.outputs[alias] = output(source);
      // The string predictions a classifier's host half adds (TF computes
      // them in the graph): "classes" from "class_ids", "all_classes" from
      // "all_class_ids", under any head prefix.
      if (hasClassNames)
        for (const auto &[alias, source] : sources) {
          for (const char *ids : {"class_ids", "all_class_ids"}) {
            std::string suffix = ids;
            if (alias.size() < suffix.size() ||
                alias.compare(alias.size() - suffix.size(), suffix.size(),
                              suffix) != 0)
              continue;
            std::string named =
                alias.substr(0, alias.size() - suffix.size()) +
                (suffix == "class_ids" ? "classes" : "all_classes");
            if (sources.count(named))
              continue;
            SignatureTensor t = output(source);
            t.dtype = DType::String;
            t.lookup = "class_names";
            sig.outputs[named] = t;
          }
        }
    }
    out[name] = std::move(sig);
  }
}

/// A receiver as saved_model.json writes it.
modelformat::Receiver receiverOf(const ReceiverTensors &r) {
  modelformat::Receiver out;
  out.kind = r.parse_spec ? "parsing" : "raw";
  for (const TensorSpec &t : r.tensors)
    out.tensors.push_back({t.key, t.dtype, t.shape, ""});
  if (r.parse_spec)
    out.parseSpec = feature_column::parse_spec_to_json(*r.parse_spec);
  return out;
}

/// The model inputs the serving function takes: the host transform's, or
/// the receiver's features (raw tensors, or the parse spec's dense ones).
InputSpec servingInputs(const HostTransform *transform,
                        const ServingInputReceiver &receiver) {
  if (transform) {
    std::optional<ElementSpec> spec = transform->input_spec(false);
    if (!spec)
      fail("the host transform cannot say its model inputs before any data");
    spec->labels.reset();
    return *spec;
  }
  InputSpec inputs;
  if (!receiver.parse_spec) {
    for (const TensorSpec &t : receiver.tensors) {
      if (t.dtype == DType::String)
        fail("receiver tensor '" + t.key +
             "' is a string: strings reach a model through feature columns "
             "(Estimator::set_host_transform)");
      TensorSpec f = t;
      f.shape[0] = -1;
      inputs.features.push_back(f);
    }
    return inputs;
  }
  for (const auto &[key, spec] : *receiver.parse_spec) {
    const auto *fixed = std::get_if<data::FixedLenFeature>(&spec);
    if (!fixed)
      fail("parse spec feature '" + key +
           "' is sparse: sparse features reach a model through feature "
           "columns (Estimator::set_host_transform)");
    if (fixed->dtype == DType::String)
      fail("parse spec feature '" + key +
           "' is a string: strings reach a model through feature columns "
           "(Estimator::set_host_transform)");
    TensorSpec f{key, fixed->dtype, {-1}};
    f.shape.insert(f.shape.end(), fixed->shape.begin(), fixed->shape.end());
    inputs.features.push_back(f);
  }
  return inputs;
}

/// The raw features a receiver gives the model: its parse spec's keys, or
/// its tensors' names.
std::set<std::string> receiverFeatures(const ReceiverTensors &r) {
  std::set<std::string> keys;
  if (r.parse_spec) {
    for (const auto &[key, spec] : *r.parse_spec)
      keys.insert(key);
  } else {
    for (const TensorSpec &t : r.tensors)
      keys.insert(t.key);
  }
  return keys;
}

/// TF fails at export time when model_fn meets a receiver's features that
/// lack one it reads; so does estc, before anything is compiled or written:
/// one line naming the receiver and the features it lacks. `needed`: the
/// host transform's feature keys, or (no transform) the features the
/// serving function was compiled for, which every alternative must give.
void checkReceiverFeatures(const std::set<std::string> &needed,
                           const ServingInputReceiver &receiver) {
  auto check = [&](const ReceiverTensors &r, const std::string &name) {
    std::set<std::string> given = receiverFeatures(r);
    std::string missing;
    for (const std::string &key : needed)
      if (!given.count(key))
        missing += (missing.empty() ? "" : ", ") + escape_control_chars(key);
    if (missing.empty())
      return;
    std::string have;
    for (const std::string &key : given)
      have += (have.empty() ? "" : ", ") + escape_control_chars(key);
    fail(name + " does not provide the features the model reads: " + missing +
         " (it " + (r.parse_spec ? "parses" : "takes") + " " +
         (have.empty() ? "none" : have) + ")");
  };
  check(receiver, "the serving input receiver");
  for (const auto &[name, alt] : receiver.receiver_tensors_alternatives)
    check(alt,
          "receiver_tensors_alternatives '" + escape_control_chars(name) + "'");
}

/// The export's version: now, or one more than the newest version (or
/// temporary folder) in `base`, so versions grow with every export as TF's
/// (which waits for the next second): several exports in one second must
/// not reuse a version the exporters' garbage collection freed, or it
/// would keep an older export and delete the new one.
std::string timestampFolder(const std::string &base, int64_t seconds) {
  for (std::string name : listDir(base)) {
    if (name.rfind("temp-", 0) == 0)
      name = name.substr(5);
    if (std::optional<int64_t> version = serving::version_of(name))
      seconds = std::max<int64_t>(seconds, *version + 1);
  }
  return std::to_string(seconds);
}

void copyFile(const std::string &from, const std::string &to) {
  std::string bytes;
  try {
    bytes = readFile(from);
  } catch (const std::exception &e) {
    fail(std::string("cannot read asset: ") + e.what());
  }
  writeFileAtomically(to, bytes);
}

} // namespace

std::string Estimator::export_saved_model(
    const std::string &export_dir_base,
    const ServingInputReceiverFn &serving_input_receiver_fn,
    const ExportOptions &options) {
  const std::map<std::string, std::string> &assets_extra = options.assets_extra;
  const bool as_text = options.as_text;
  const std::string &checkpoint_path = options.checkpoint_path;
  const ModeKeys experimental_mode = options.experimental_mode;
  const ExportTarget &target = options.target;
  if (experimental_mode == ModeKeys::TRAIN)
    fail("experimental_mode TRAIN is not exported (a training job needs "
         "the model_fn and a checkpoint, not an export)");
  if (!serving_input_receiver_fn)
    fail("serving_input_receiver_fn is empty");
  if (export_dir_base.empty())
    fail("export_dir_base is empty");
  std::string checkpoint = checkpoint_path;
  if (checkpoint.empty()) {
    std::optional<std::string> latest = latest_checkpoint();
    if (!latest)
      fail("Couldn't find trained model at " + model_dir() + ".");
    checkpoint = *latest;
  }
  train::CheckpointReader reader(checkpoint);
  ServingInputReceiver receiver = serving_input_receiver_fn();
  receiver.validate();

  const HostTransform *transform = host_transform();
  InputSpec inputs = servingInputs(transform, receiver);
  if (std::optional<std::set<std::string>> keys =
          transform ? transform->feature_keys() : std::nullopt) {
    checkReceiverFeatures(*keys, receiver);
  } else if (!transform) {
    std::set<std::string> compiled;
    for (const TensorSpec &t : inputs.features)
      compiled.insert(t.key);
    checkReceiverFeatures(compiled, receiver);
  }
  backend_->bind(config_, params_);
  detail::ServingCode code =
      backend_->compile_serving(experimental_mode, inputs, target);
  if (code.output_kinds.empty()) {
    // TF's default: the predictions as one PredictOutput.
    code.output_kinds[kDefaultServingSignatureDefKey] =
        ExportOutput::Kind::Predict;
    for (const std::string &key : code.prediction_keys)
      code.output_sources[kDefaultServingSignatureDefKey][key] =
          "predictions/" + key;
  } else if (code.output_kinds.size() == 1 &&
             !code.output_kinds.count(kDefaultServingSignatureDefKey)) {
    // TF's EstimatorSpec serves a lone export output by default too.
    std::string only = code.output_kinds.begin()->first;
    code.output_kinds[kDefaultServingSignatureDefKey] =
        code.output_kinds.at(only);
    code.output_sources[kDefaultServingSignatureDefKey] =
        code.output_sources.at(only);
  }

  modelformat::Manifest manifest;
  try {
    manifest = modelformat::readManifest(code.manifest_json);
  } catch (const modelformat::FormatError &e) {
    fail(std::string("the compiler's ") + e.what());
  }
  std::map<std::string, OutputInfo> outputs =
      compiledOutputs(manifest, code.function);

  makeDirs(export_dir_base);
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  std::string folder = timestampFolder(export_dir_base, now);
  std::string temp = joinPath(export_dir_base, "temp-" + folder);
  std::string final = joinPath(export_dir_base, folder);
  makeDirs(temp);
  try {
    // The code.
    std::string object = joinPath(temp, "model.o");
    writeFileAtomically(object, code.object);
    linkSharedLibrary(object, joinPath(temp, "model.so"),
                      joinPath(temp, "link.log"));
    removeFile(object);
    removeFile(joinPath(temp, "link.log"));

    // The variables the serving function reads (those of the PREDICT
    // spec's scaffold.saver_var_list from their checkpoint names).
    std::map<std::string, std::string> sourceOf;
    for (const auto &[checkpointName, variable] : code.saver_var_list)
      sourceOf[variable] = checkpointName;
    train::VariableMap variables;
    // The parts of partitioned variables, which a checkpoint in TF's format
    // holds as slices of their full name (lib/Checkpoint/Partitions.h).
    std::map<std::string, VariableSpec> specs;
    for (const modelformat::VariableInfo &v : manifest.variables)
      if (!v.local)
        specs[v.name] = VariableSpec{
            dtype_from_abi_name(modelformat::elementTypeName(v.dtype))
                .value_or(DType::Invalid),
            v.shape};
    std::map<std::string, train::PartLayout> layouts =
        train::partition_layouts(specs);
    for (const modelformat::VariableInfo &v : manifest.variables) {
      const std::string &name = v.name;
      if (v.local)
        continue;
      auto renamed = sourceOf.find(name);
      auto layout = layouts.find(name);
      if (renamed == sourceOf.end() && !reader.has_tensor(name) &&
          layout != layouts.end() &&
          reader.has_tensor(layout->second.full_name)) {
        variables[name] =
            train::slice_of(reader.get_tensor(layout->second.full_name),
                            layout->second, "checkpoint " + reader.path());
        continue;
      }
      if (renamed != sourceOf.end()) {
        if (!reader.has_tensor(renamed->second))
          fail("checkpoint " + reader.path() + " has no variable '" +
               renamed->second +
               "', which the EstimatorSpec's scaffold.saver_var_list "
               "restores '" +
               name + "' from");
      } else if (!reader.has_tensor(name)) {
        fail("checkpoint " + reader.path() + " has no variable '" + name +
             "' that the serving function reads");
      }
      TensorValue value =
          reader.get_tensor(renamed != sourceOf.end() ? renamed->second : name);
      VariableSpec want;
      want.dtype = dtype_from_abi_name(modelformat::elementTypeName(v.dtype))
                       .value_or(DType::Invalid);
      want.shape = v.shape;
      if (value.spec() != want)
        fail("variable '" + name + "' is " + value.spec().str() +
             " in the checkpoint, the serving function reads " + want.str() +
             " (do the receiver's features differ from training's?)");
      variables[name] = std::move(value);
    }
    train::write_checkpoint(joinPath(temp, "variables.safetensors"), variables,
                            reader.global_step());

    // The host transform and its assets.
    std::string transformJson;
    bool hasClassNames = false;
    if (transform) {
      int assetCount = 0;
      auto addAsset = [&](const std::string &path) {
        std::string name = std::to_string(assetCount++) + "_" + baseName(path);
        makeDirs(joinPath(temp, "assets"));
        copyFile(path, joinPath(joinPath(temp, "assets"), name));
        return name;
      };
      std::optional<std::string> config = transform->serving_config(addAsset);
      if (!config)
        fail("the Estimator's host transform cannot be exported (its "
             "serving_config gives nothing)");
      transformJson = *config;
      rapidjson::Document t;
      t.Parse(transformJson.c_str());
      if (t.HasParseError() || !t.IsObject())
        fail("the host transform's serving_config is not a JSON object");
      hasClassNames = t.HasMember("class_names");
    }
    if (!assets_extra.empty()) {
      makeDirs(joinPath(temp, "assets.extra"));
      for (const auto &[name, source] : assets_extra) {
        if (name.empty() || name.find("..") != std::string::npos ||
            name[0] == '/')
          fail("assets_extra name '" + name +
               "' must be a relative path inside assets.extra");
        std::string to = joinPath(joinPath(temp, "assets.extra"), name);
        makeDirs(dirName(to));
        copyFile(source, to);
      }
    }

    // Signatures.
    std::map<std::string, Signature> signatures;
    addSignatures("", receiver, code, outputs, hasClassNames, signatures);
    for (const auto &[name, alt] : receiver.receiver_tensors_alternatives)
      addSignatures(name, alt, code, outputs, hasClassNames, signatures);
    if (signatures.empty())
      fail("no valid signature: every export output needs a receiver of "
           "one string tensor (classification, regression) or is not there");
    if (!signatures.count(kDefaultServingSignatureDefKey))
      log_info("export_saved_model: warning: export includes no default "
               "signature (serving_default)");

    // saved_model.json.
    modelformat::SavedModelFile file;
    file.estcVersion = ESTC_VERSION_STRING;
    file.globalStep = reader.global_step();
    file.checkpoint = baseName(checkpoint);
    file.mode = mode_key(experimental_mode);
    file.target = {modelformat::hostArch(), code.triple, code.cpu,
                   code.features};
    file.function = code.function;
    file.modelJson = code.manifest_json;
    file.receivers.emplace_back("", receiverOf(receiver));
    for (const auto &[name, alt] : receiver.receiver_tensors_alternatives)
      file.receivers.emplace_back(name, receiverOf(alt));
    if (transform) {
      file.transform.emplace();
      file.transform->json = transformJson;
    }
    for (const auto &[name, sig] : signatures) {
      modelformat::Signature out{sig.method, sig.receiver, {}, {}};
      for (const auto &[alias, t] : sig.inputs)
        out.inputs[alias] = {t.name, t.dtype, t.shape, t.lookup};
      for (const auto &[alias, t] : sig.outputs)
        out.outputs[alias] = {t.name, t.dtype, t.shape, t.lookup};
      file.signatures.emplace_back(name, std::move(out));
    }
    std::string json = modelformat::writeSavedModel(file, as_text);
    writeFileAtomically(joinPath(temp, "saved_model.json"), json);

    if (std::rename(temp.c_str(), final.c_str()) != 0)
      fail("cannot rename " + temp + " to " + final + ": " +
           std::strerror(errno));
  } catch (...) {
    std::error_code ignored; // the export's own error is the one to report
    std::filesystem::remove_all(temp, ignored);
    throw;
  }
  log_info("Exported the serving model of " + baseName(checkpoint) + " to " +
           final);
  return final;
}

std::string Estimator::experimental_export_all_saved_models(
    const std::string &export_dir_base,
    const std::map<ModeKeys, ServingInputReceiverFn> &input_receiver_fn_map,
    const ExportAllOptions &options) {
  if (input_receiver_fn_map.empty())
    fail("input_receiver_fn_map is empty");
  for (const auto &[mode, fn] : input_receiver_fn_map)
    if (mode != ModeKeys::PREDICT)
      fail(std::string("experimental_export_all_saved_models: mode ") +
           mode_key(mode) +
           " is not exported (estc exports PREDICT; a TRAIN or EVAL "
           "artifact is the checkpoint plus the model_fn)");
  return export_saved_model(export_dir_base,
                            input_receiver_fn_map.at(ModeKeys::PREDICT),
                            {.assets_extra = options.assets_extra,
                             .as_text = options.as_text,
                             .checkpoint_path = options.checkpoint_path,
                             .experimental_mode = ModeKeys::PREDICT,
                             .target = options.target});
}

} // namespace estimator
} // namespace estc
