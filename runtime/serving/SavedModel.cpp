//===- SavedModel.cpp - Load and run an exported estc model -------------===//
//
// saved_model.json is untrusted input (a corrupt or hand-edited export):
// runtime/format reads it, with errors naming the field, which become one
// LoadError line naming the folder; this file makes the host's checks (its
// hooks) and loads the library, the variables and the transform.
//
//===----------------------------------------------------------------------===//

#include "runtime/serving/SavedModel.h"

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Data/Example.h"
#include "lib/Data/Idx.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Printable.h"
#include "runtime/CompiledModel.h"
#include "runtime/binding/TensorBinding.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/format/ModelFormat.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#if defined(__x86_64__)
#endif

namespace estc {
namespace serving {

namespace {

using fileio::joinPath;
constexpr const char *kModelName = "estc_saved_model";

/// A malformed field of saved_model.json (becomes a LoadError). Messages
/// quote the file (a receiver's name, a kind): its control characters are
/// escaped, so the error stays one line.
struct FieldError : std::runtime_error {
  explicit FieldError(const std::string &message)
      : std::runtime_error(escape_control_chars(message)) {}
};

// --- The compiled model's spec
// -------------------------------------------------

/// rt::ModelSpec from the manifest, with the storage it points into.
struct SpecStorage {
  std::shared_ptr<modelformat::ModelSpecStorage> storage;
  rt::ModelSpec spec{};
};

struct Receiver {
  std::vector<TensorInfo> tensors;
  std::shared_ptr<const data::ExampleParser> parser;
};

struct OutputSource {
  std::string source;
  std::string lookup; // "", "class_names", "decimal"
};

struct Signature {
  SignatureDef def;
  std::string receiver;
  std::map<std::string, OutputSource> sources;
};

/// Aligned, zero-initialized storage of one variable.
struct AlignedBuffer {
  std::unique_ptr<char, void (*)(void *)> data{nullptr, std::free};
  explicit AlignedBuffer(size_t bytes) {
    size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void *p = std::aligned_alloc(64, rounded);
    if (!p)
      throw std::bad_alloc();
    std::memset(p, 0, rounded);
    data.reset(static_cast<char *>(p));
  }
};

} // namespace

struct SavedModel::Impl {
  std::string dir;
  int64_t globalStep = 0;
  std::unique_ptr<SpecStorage> spec;
  void *library = nullptr;
  rt::EntryPoint entries[1] = {nullptr};
  int function = 0;
  std::vector<AlignedBuffer> variables;
  std::vector<void *> variablePointers;
  int64_t variableBytes = 0;
  std::map<std::string, Receiver> receivers;
  // The transform.
  std::optional<feature_column::Transformer> transformer;
  std::vector<std::string> ones;
  std::string batchZeros;
  std::vector<std::string> classNames;
  std::map<std::string, Signature> signatures;
  std::map<std::string, SignatureDef> defs;

  // Runners: a free list; each concurrent run() takes one.
  mutable std::mutex mutex;
  mutable std::vector<std::unique_ptr<rt::CompiledModel>> idle;
  mutable int64_t runnerCount = 0;

  ~Impl() {
    idle.clear();
    if (library)
      dlclose(library);
  }

  std::unique_ptr<rt::CompiledModel> acquire() const {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!idle.empty()) {
        std::unique_ptr<rt::CompiledModel> r = std::move(idle.back());
        idle.pop_back();
        return r;
      }
      ++runnerCount;
    }
    return std::make_unique<rt::CompiledModel>(spec->spec, entries,
                                               variablePointers.data());
  }
  void release(std::unique_ptr<rt::CompiledModel> runner) const {
    std::lock_guard<std::mutex> lock(mutex);
    idle.push_back(std::move(runner));
  }

  TensorMap runCompiled(std::map<std::string, TensorValue> features,
                        const std::set<std::string> &valuesInputs,
                        int64_t batch) const;
};

SavedModel::SavedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SavedModel::~SavedModel() = default;

const std::string &SavedModel::export_dir() const { return impl_->dir; }
const std::map<std::string, SignatureDef> &SavedModel::signatures() const {
  return impl_->defs;
}
int64_t SavedModel::global_step() const { return impl_->globalStep; }
int64_t SavedModel::variable_bytes() const { return impl_->variableBytes; }
int64_t SavedModel::runner_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  int64_t bytes = 0;
  for (const auto &r : impl_->idle)
    bytes += r->arena_bytes(std::max<int64_t>(r->batch(), 0));
  return bytes;
}

const SignatureDef &SavedModel::signature(const std::string &name) const {
  auto it = impl_->defs.find(name);
  if (it == impl_->defs.end())
    throw std::invalid_argument("Serving signature name: \"" + name +
                                "\" not found in signature def");
  return it->second;
}

std::shared_ptr<const SavedModel>
SavedModel::load(const std::string &export_dir, const LoadOptions &options) {
  auto impl = std::make_unique<Impl>();
  impl->dir = export_dir;
  auto fault = [&](const std::string &what) -> LoadError {
    return LoadError("SavedModel " + export_dir + ": " + what);
  };
  std::string text;
  try {
    text = fileio::readFile(joinPath(export_dir, "saved_model.json"));
  } catch (const std::exception &e) {
    throw fault(std::string("cannot read saved_model.json: ") + e.what());
  }
  try {
    modelformat::SavedModelHooks hooks;
    hooks.arch = [](const std::string &arch) {
      if (arch != modelformat::hostArch())
        throw FieldError("compiled for " + arch + ", this machine is " +
                         modelformat::hostArch());
    };
    hooks.features = [&](const std::vector<std::string> &features,
                         const std::function<std::string()> &cpu) {
      if (options.skip_cpu_check)
        return;
      std::vector<std::string> missing = rt::missing_cpu_features(features);
      if (!missing.empty()) {
        std::string list;
        for (const std::string &m : missing)
          list += (list.empty() ? "" : ", ") + m;
        throw FieldError("compiled for CPU " + cpu() + ", this CPU lacks " +
                         list);
      }
    };
    // The parsing receivers' parsers, in file order.
    std::vector<std::shared_ptr<const data::ExampleParser>> parsers;
    hooks.parseSpec = [&](const std::string &, const std::string &json) {
      parsers.push_back(std::make_shared<const data::ExampleParser>(
          feature_column::parse_spec_from_json(json)));
    };
    hooks.featureColumns = [&](const std::string &json) {
      std::string assets = joinPath(export_dir, "assets");
      impl->transformer.emplace(feature_column::feature_columns_from_json(
          json, [&](const std::string &name) {
            if (name.find('/') != std::string::npos || name == ".." ||
                name.empty())
              throw std::invalid_argument("asset name '" + name +
                                          "' is not a file name");
            return joinPath(assets, name);
          }));
    };
    hooks.library = [&](const modelformat::SavedModelFile &file) {
      const std::string &library = file.library;
      std::string libraryPath = joinPath(export_dir, library);
      if (!fileio::exists(libraryPath))
        throw FieldError("the library " + library + " is missing");
      impl->library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!impl->library) {
        const char *e = dlerror();
        throw FieldError("cannot load " + library + ": " +
                         (e ? std::string(e) : "dlopen failed"));
      }
      std::string symbol =
          std::string(kModelName) + "_" + file.function + "_packed";
      impl->entries[0] = reinterpret_cast<rt::EntryPoint>(
          dlsym(impl->library, symbol.c_str()));
      if (!impl->entries[0])
        throw FieldError(library + " has no symbol " + symbol);
    };
    modelformat::SavedModelFile file = modelformat::readSavedModel(text, hooks);
    impl->globalStep = file.globalStep;

    // The compiled function (the model's only one).
    impl->spec = std::make_unique<SpecStorage>();
    impl->spec->spec =
        modelformat::toModelSpec(file.model, impl->spec->storage);
    impl->function = 0;
    const rt::ModelSpec &spec = impl->spec->spec;

    // Receivers.
    auto hostTensor = [](const modelformat::SignatureTensor &t) {
      return TensorInfo{t.name, t.dtype, t.shape};
    };
    size_t parsed = 0;
    for (const auto &[name, receiver] : file.receivers) {
      Receiver r;
      for (const modelformat::SignatureTensor &t : receiver.tensors)
        r.tensors.push_back(hostTensor(t));
      if (receiver.kind == "parsing")
        r.parser = parsers.at(parsed++);
      impl->receivers.emplace(name, std::move(r));
    }

    // The transform.
    if (file.transform) {
      impl->ones = file.transform->ones;
      impl->batchZeros = file.transform->batchZeros;
      impl->classNames = file.transform->classNames;
    }

    // Signatures.
    for (const auto &[name, read] : file.signatures) {
      Signature sig;
      sig.def.method_name = read.methodName;
      sig.receiver = read.receiver;
      for (const auto &[alias, t] : read.inputs)
        sig.def.inputs[alias] = hostTensor(t);
      for (const auto &[alias, t] : read.outputs) {
        TensorInfo info = hostTensor(t);
        info.name = alias;
        sig.def.outputs[alias] = info;
        sig.sources[alias] = OutputSource{t.name, t.lookup};
      }
      impl->defs[name] = sig.def;
      impl->signatures.emplace(name, std::move(sig));
    }

    std::string variables = file.variables;
    // Variables.
    train::CheckpointReader reader(joinPath(export_dir, variables));
    for (int i = 0; i < spec.numVariables; ++i) {
      const rt::VariableSpec &v = spec.variables[i];
      int64_t elements = rt::numElements(v.rank, v.shape, 0);
      size_t bytes = static_cast<size_t>(elements) * rt::dtypeBytes(v.dtype);
      impl->variables.emplace_back(bytes);
      impl->variablePointers.push_back(impl->variables.back().data.get());
      impl->variableBytes += static_cast<int64_t>(bytes);
      if (v.local)
        continue;
      if (!reader.has_tensor(v.name))
        throw FieldError(variables + " has no variable '" +
                         std::string(v.name) + "'");
      TensorValue t = reader.get_tensor(v.name);
      std::vector<int64_t> shape(v.shape, v.shape + v.rank);
      if (t.shape != shape || t.data.size() != bytes)
        throw FieldError(variables + ": variable '" + std::string(v.name) +
                         "' is " + t.spec().str() +
                         ", the compiled model reads another shape or dtype");
      std::memcpy(impl->variablePointers.back(), t.data.data(), bytes);
    }

  } catch (const FieldError &e) {
    throw fault(e.what());
  } catch (const modelformat::FormatError &e) {
    throw fault(e.what());
  } catch (const train::CheckpointError &e) {
    throw fault(e.what());
  } catch (const std::invalid_argument &e) {
    throw fault(e.what());
  }
  return std::shared_ptr<const SavedModel>(new SavedModel(std::move(impl)));
}

namespace {

/// `t` as `dtype` where the conversion loses nothing a client meant (JSON
/// numbers arrive as I64 or F64).
TensorValue convertTo(const TensorValue &t, DType dtype,
                      const std::string &what) {
  if (t.dtype == dtype)
    return t;
  bool fromNumber = t.dtype != DType::String && t.dtype != DType::Invalid;
  bool toNumber = dtype != DType::String && dtype != DType::Invalid;
  if (!fromNumber || !toNumber || dtype == DType::Float16 ||
      dtype == DType::BFloat16 || (is_integer(dtype) && is_floating(t.dtype)))
    throw std::invalid_argument(what + " must be " + dtype_name(dtype) +
                                ", got " + dtype_name(t.dtype));
  int64_t n = t.num_elements();
  TensorValue out;
  out.dtype = dtype;
  out.shape = t.shape;
  out.data.resize(static_cast<size_t>(n) * dtype_size(dtype));
  for (int64_t i = 0; i < n; ++i) {
    double v = t.element(i);
    char *p = out.data.data() + i * dtype_size(dtype);
    switch (dtype) {
    case DType::Float32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::Float64:
      std::memcpy(p, &v, 8);
      break;
    case DType::Int32: {
      if (v < -2147483648.0 || v > 2147483647.0)
        throw std::invalid_argument(what + ": value " + std::to_string(v) +
                                    " does not fit INT32");
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::Int64: {
      int64_t x = 0;
      if (t.dtype == DType::Int32) {
        int32_t y;
        std::memcpy(&y, t.data.data() + i * 4, 4);
        x = y;
      } else {
        x = static_cast<int64_t>(v);
      }
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::Bool:
      *p = v != 0;
      break;
    default:
      throw std::invalid_argument(what + " must be " + dtype_name(dtype));
    }
  }
  return out;
}

/// `t` checked against the signature's shape: [batch, dims...], a
/// [batch] tensor for [-1, 1, ..., 1].
TensorValue conform(TensorValue t, const TensorInfo &info,
                    const std::string &what) {
  if (t.shape.size() == 1 && info.shape.size() > 1 &&
      std::all_of(info.shape.begin() + 1, info.shape.end(),
                  [](int64_t d) { return d == 1; }))
    t.shape.resize(info.shape.size(), 1);
  bool ok = t.shape.size() == info.shape.size();
  for (size_t i = 0; ok && i < t.shape.size(); ++i)
    ok = info.shape[i] < 0 || info.shape[i] == t.shape[i];
  if (!ok)
    throw std::invalid_argument(what + " has shape " + shape_string(t.shape) +
                                ", the signature takes " +
                                shape_string(info.shape));
  return t;
}

TensorValue lookupNames(const TensorValue &ids,
                        const std::vector<std::string> &names,
                        const std::string &what) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(ids.num_elements()));
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    int64_t id = static_cast<int64_t>(ids.element(i));
    if (names.empty()) {
      out.push_back(std::to_string(id));
      continue;
    }
    if (id < 0 || id >= static_cast<int64_t>(names.size()))
      throw std::runtime_error(what + ": class id " + std::to_string(id) +
                               " has no class name");
    out.push_back(names[static_cast<size_t>(id)]);
  }
  return TensorValue::of_strings(ids.shape, std::move(out));
}

} // namespace

TensorMap
SavedModel::Impl::runCompiled(std::map<std::string, TensorValue> features,
                              const std::set<std::string> &valuesInputs,
                              int64_t batch) const {
  std::unique_ptr<rt::CompiledModel> runner = acquire();
  struct Release {
    const Impl *impl;
    std::unique_ptr<rt::CompiledModel> &runner;
    ~Release() {
      if (runner)
        impl->release(std::move(runner));
    }
  } release{this, runner};
  runner->set_batch(batch);
  binding::InputBinding inputs(*runner, function);
  // The request's sequence inputs size the sequence length (all the same).
  std::vector<const TensorValue *> fed(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = features.find(inputs[i].feature.value_or(inputs[i].spec->key));
    fed[i] = inputs[i].sequence && it != features.end() ? &it->second : nullptr;
  }
  if (int64_t length = inputs.sequence_length(fed))
    runner->set_sequence_length(length);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const binding::InputBinding::Input &in = inputs[i];
    std::string feature = in.feature.value_or(in.spec->key);
    auto it = features.find(feature);
    if (it == features.end())
      throw std::invalid_argument("the model needs feature '" + feature +
                                  "', which the request does not give");
    TensorValue &t = it->second;
    if (!in.dtype)
      throw std::invalid_argument("feature '" + feature +
                                  "': the model takes i8");
    if (t.dtype != *in.dtype)
      t = convertTo(t, *in.dtype, "feature '" + feature + "'");
    if (in.values && !valuesInputs.count(feature))
      throw std::invalid_argument("feature '" + feature +
                                  "' must be sparse values");
    // The shape must be the spec's with the batch (and values) filled in.
    if (!inputs.shape_fits(i, t, batch))
      throw std::invalid_argument(
          "feature '" + feature + "' has shape " + t.spec().str() +
          ", not what the model takes for batch " + std::to_string(batch));
    inputs.write(*runner, i, t);
  }
  runner->run(function);
  TensorMap out = binding::readOutputs(*runner, function);
  return out;
}

TensorMap SavedModel::run(const std::string &signature_name,
                          const TensorMap &inputs,
                          const std::vector<std::string> &output_filter) const {
  auto sit = impl_->signatures.find(signature_name);
  if (sit == impl_->signatures.end())
    throw std::invalid_argument("Serving signature name: \"" + signature_name +
                                "\" not found in signature def");
  const Signature &sig = sit->second;
  const Receiver &receiver = impl_->receivers.at(sig.receiver);
  for (const auto &[alias, t] : inputs)
    if (!sig.def.inputs.count(alias))
      throw std::invalid_argument("input '" + alias +
                                  "' is not an input of signature '" +
                                  signature_name + "'");
  for (const std::string &alias : output_filter)
    if (!sig.def.outputs.count(alias))
      throw std::invalid_argument("output '" + alias +
                                  "' is not an output of signature '" +
                                  signature_name + "'");

  // The receiver tensors, checked.
  std::map<std::string, TensorValue> received;
  int64_t batch = -1;
  for (const auto &[alias, info] : sig.def.inputs) {
    auto it = inputs.find(alias);
    if (it == inputs.end())
      throw std::invalid_argument("signature '" + signature_name +
                                  "' needs input '" + alias + "'");
    std::string what = "input '" + alias + "'";
    TensorValue t =
        conform(convertTo(it->second, info.dtype, what), info, what);
    if (t.shape.empty())
      throw std::invalid_argument(what + " needs a batch dimension");
    if (batch >= 0 && t.shape[0] != batch)
      throw std::invalid_argument(
          what + " has batch " + std::to_string(t.shape[0]) +
          ", another input has " + std::to_string(batch));
    batch = t.shape[0];
    received[info.name] = std::move(t);
  }
  if (batch <= 0)
    throw std::invalid_argument("signature '" + signature_name +
                                "': the batch is empty");

  // Receiver and transform: the compiled function's features.
  data::Element element;
  if (receiver.parser) {
    element = receiver.parser->parse_example(received.begin()->second);
  } else {
    std::map<std::string, data::Element> fields;
    for (auto &[name, t] : received)
      fields.emplace(name, data::Element(std::move(t)));
    element = data::Element::dict(std::move(fields));
  }
  std::map<std::string, TensorValue> features;
  std::set<std::string> valuesInputs;
  if (impl_->transformer) {
    features = impl_->transformer->transform(element);
    valuesInputs = impl_->transformer->values_inputs();
  } else {
    for (const auto &[key, value] : element.fields()) {
      if (!value.is_leaf() ||
          !std::holds_alternative<TensorValue>(value.leaf()))
        throw data::DataError("feature '" + key +
                              "' is sparse; the model takes dense features");
      features[key] = data::tensor(value);
    }
  }
  for (const std::string &key : impl_->ones)
    if (!features.count(key))
      features[key] = TensorValue::of<float>(
          {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 1.0f));
  if (!impl_->batchZeros.empty())
    features[impl_->batchZeros] = TensorValue::of<float>(
        {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 0.0f));

  TensorMap compiled =
      impl_->runCompiled(std::move(features), valuesInputs, batch);
  TensorMap out;
  for (const auto &[alias, source] : sig.sources) {
    if (!output_filter.empty() &&
        std::find(output_filter.begin(), output_filter.end(), alias) ==
            output_filter.end())
      continue;
    const TensorValue &value = compiled.at(source.source);
    if (source.lookup == "class_names")
      out[alias] = lookupNames(value, impl_->classNames, alias);
    else if (source.lookup == "decimal")
      out[alias] = lookupNames(value, {}, alias);
    else
      out[alias] = value;
  }
  return out;
}

std::vector<std::pair<int64_t, std::string>>
list_versions(const std::string &base_path) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (!fileio::isDirectory(base_path))
    return out;
  for (const std::string &name : fileio::listDir(base_path)) {
    std::optional<int64_t> version = version_of(name);
    std::string path = joinPath(base_path, name);
    if (version && fileio::isDirectory(path))
      out.emplace_back(*version, path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace serving
} // namespace estc
