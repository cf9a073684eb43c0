//===- SavedModel.cpp - Load and run an exported estc model -------------===//
//
// saved_model.json is untrusted input (a corrupt or hand-edited export):
// every field is read through the checked accessors below, whose errors
// name the field, and become one LoadError line naming the folder.
//
//===----------------------------------------------------------------------===//

#include "estimator/Serving/SavedModel.h"

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Data/Example.h"
#include "lib/Data/Idx.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Printable.h"
#include "runtime/CompiledModel.h"

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <set>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace estc {
namespace serving {

namespace {

using fileio::joinPath;
using Json = rapidjson::Value;

constexpr const char *kFormat = "estc-saved-model-1";
constexpr const char *kModelName = "estc_saved_model";

/// A malformed field of saved_model.json (becomes a LoadError). Messages
/// quote the file (a receiver's name, a kind): its control characters are
/// escaped, so the error stays one line.
struct FieldError : std::runtime_error {
  explicit FieldError(const std::string &message)
      : std::runtime_error(escape_control_chars(message)) {}
};

const Json &member(const Json &object, const char *key,
                   const std::string &where) {
  if (!object.IsObject())
    throw FieldError(where + " is not an object");
  auto it = object.FindMember(key);
  if (it == object.MemberEnd())
    throw FieldError(where + " has no \"" + key + "\"");
  return it->value;
}
std::string str(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsString())
    throw FieldError(where + "." + key + " is not a string");
  return std::string(v.GetString(), v.GetStringLength());
}
int64_t int64(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsInt64())
    throw FieldError(where + "." + key + " is not an integer");
  return v.GetInt64();
}
bool boolean(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsBool())
    throw FieldError(where + "." + key + " is not a boolean");
  return v.GetBool();
}
const Json &array(const Json &object, const char *key,
                  const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsArray())
    throw FieldError(where + "." + key + " is not an array");
  return v;
}
const Json &object(const Json &parent, const char *key,
                   const std::string &where) {
  const Json &v = member(parent, key, where);
  if (!v.IsObject())
    throw FieldError(where + "." + key + " is not an object");
  return v;
}
std::vector<int64_t> shapeOf(const Json &object, const char *key,
                             const std::string &where, int64_t lowest) {
  std::vector<int64_t> shape;
  const Json &a = array(object, key, where);
  if (a.Size() > 16)
    throw FieldError(where + "." + key + " has more than 16 dimensions");
  for (const Json &d : a.GetArray()) {
    if (!d.IsInt64() || d.GetInt64() < lowest ||
        d.GetInt64() > (int64_t(1) << 40))
      throw FieldError(where + "." + key + " has a bad dimension");
    shape.push_back(d.GetInt64());
  }
  return shape;
}
std::string toText(const Json &value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  value.Accept(w);
  return buffer.GetString();
}

// --- CPU features
// --------------------------------------------------------------

#if defined(__x86_64__)
/// LLVM's name of an x86 feature and where cpuid reports it.
struct CpuFeature {
  const char *name;
  unsigned leaf, subleaf;
  int reg; // 0 eax, 1 ebx, 2 ecx, 3 edx
  int bit;
};
/// The ISA extensions code generation uses for arithmetic, data movement
/// and bit manipulation. Features outside this table (cache hints, system
/// instructions) do not change what a compiled model executes.
constexpr CpuFeature kCpuFeatures[] = {
    {"sse3", 1, 0, 2, 0},
    {"pclmul", 1, 0, 2, 1},
    {"ssse3", 1, 0, 2, 9},
    {"fma", 1, 0, 2, 12},
    {"cx16", 1, 0, 2, 13},
    {"sse4.1", 1, 0, 2, 19},
    {"sse4.2", 1, 0, 2, 20},
    {"movbe", 1, 0, 2, 22},
    {"popcnt", 1, 0, 2, 23},
    {"aes", 1, 0, 2, 25},
    {"avx", 1, 0, 2, 28},
    {"f16c", 1, 0, 2, 29},
    {"sse", 1, 0, 3, 25},
    {"sse2", 1, 0, 3, 26},
    {"bmi", 7, 0, 1, 3},
    {"avx2", 7, 0, 1, 5},
    {"bmi2", 7, 0, 1, 8},
    {"avx512f", 7, 0, 1, 16},
    {"avx512dq", 7, 0, 1, 17},
    {"adx", 7, 0, 1, 19},
    {"avx512ifma", 7, 0, 1, 21},
    {"avx512cd", 7, 0, 1, 28},
    {"sha", 7, 0, 1, 29},
    {"avx512bw", 7, 0, 1, 30},
    {"avx512vl", 7, 0, 1, 31},
    {"avx512vbmi", 7, 0, 2, 1},
    {"avx512vbmi2", 7, 0, 2, 6},
    {"gfni", 7, 0, 2, 8},
    {"vaes", 7, 0, 2, 9},
    {"vpclmulqdq", 7, 0, 2, 10},
    {"avx512vnni", 7, 0, 2, 11},
    {"avx512bitalg", 7, 0, 2, 12},
    {"avx512vpopcntdq", 7, 0, 2, 14},
    {"avx512fp16", 7, 0, 3, 23},
    {"avxvnni", 7, 1, 0, 4},
    {"avx512bf16", 7, 1, 0, 5},
    {"lzcnt", 0x80000001, 0, 2, 5},
    {"sse4a", 0x80000001, 0, 2, 6},
};

bool hostHas(const CpuFeature &f) {
  unsigned regs[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(f.leaf, f.subleaf, &regs[0], &regs[1], &regs[2],
                         &regs[3]))
    return false;
  return (regs[f.reg] >> f.bit) & 1u;
}
#endif

/// The features of `wanted` this CPU lacks (among those the table knows).
std::vector<std::string> missingFeatures(const std::vector<std::string> &want) {
  std::vector<std::string> missing;
#if defined(__x86_64__)
  for (const std::string &name : want)
    for (const CpuFeature &f : kCpuFeatures)
      if (name == f.name && !hostHas(f))
        missing.push_back(name);
#else
  (void)want;
#endif
  return missing;
}

const char *hostArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

// --- The compiled model's spec
// -------------------------------------------------

/// rt::ModelSpec from the manifest, with the storage it points into.
struct SpecStorage {
  std::vector<std::string> strings; // deque-like: reserved up front
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<rt::TensorSpec>> tensors;
  std::vector<rt::VariableSpec> variables;
  std::vector<rt::FunctionSpec> functions;
  std::vector<rt::CheckSpec> checks;
  rt::ModelSpec spec{};

  const char *keep(std::string s) {
    strings.push_back(std::move(s));
    return strings.back().c_str();
  }
  const int64_t *keep(std::vector<int64_t> shape) {
    shapes.push_back(std::move(shape));
    return shapes.back().data();
  }
};

rt::DType abiDType(const std::string &name, const std::string &where) {
  if (name == "f32")
    return rt::DType::F32;
  if (name == "f64")
    return rt::DType::F64;
  if (name == "i8")
    return rt::DType::I8;
  if (name == "i32")
    return rt::DType::I32;
  if (name == "i64")
    return rt::DType::I64;
  if (name == "i1")
    return rt::DType::Bool;
  throw FieldError(where + ".dtype '" + name + "' is not an element type");
}

std::unique_ptr<SpecStorage> buildSpec(const Json &manifest) {
  auto s = std::make_unique<SpecStorage>();
  const Json &vars = array(manifest, "variables", "model");
  const Json &fns = array(manifest, "functions", "model");
  const Json *checks = manifest.HasMember("checks")
                           ? &array(manifest, "checks", "model")
                           : nullptr;
  size_t n = vars.Size() + fns.Size() + (checks ? checks->Size() : 0);
  for (const Json &f : fns.GetArray())
    if (f.IsObject() && f.HasMember("inputs") && f["inputs"].IsArray() &&
        f.HasMember("outputs") && f["outputs"].IsArray())
      n += f["inputs"].Size() + f["outputs"].Size();
  // Pointers into these vectors are kept: no reallocation after this.
  s->strings.reserve(2 * n + 1);
  s->shapes.reserve(n);
  s->tensors.reserve(2 * fns.Size());
  s->spec.name = s->keep(str(manifest, "name", "model"));
  for (rapidjson::SizeType i = 0; i < vars.Size(); ++i) {
    std::string where = "model.variables[" + std::to_string(i) + "]";
    const Json &v = vars[i];
    std::vector<int64_t> shape = shapeOf(v, "shape", where, 0);
    rt::VariableSpec spec{};
    spec.name = s->keep(str(v, "name", where));
    spec.dtype = abiDType(str(v, "dtype", where), where);
    spec.rank = static_cast<int32_t>(shape.size());
    spec.shape = s->keep(shape);
    spec.trainable = boolean(v, "trainable", where);
    spec.local = boolean(v, "local", where);
    s->variables.push_back(spec);
  }
  for (rapidjson::SizeType i = 0; i < fns.Size(); ++i) {
    std::string where = "model.functions[" + std::to_string(i) + "]";
    const Json &f = fns[i];
    rt::FunctionSpec spec{};
    spec.name = s->keep(str(f, "name", where));
    for (const char *side : {"inputs", "outputs"}) {
      const Json &list = array(f, side, where);
      s->tensors.emplace_back();
      for (rapidjson::SizeType j = 0; j < list.Size(); ++j) {
        std::string w = where + "." + side + "[" + std::to_string(j) + "]";
        std::vector<int64_t> shape = shapeOf(list[j], "shape", w, -2);
        rt::TensorSpec t{};
        t.key = s->keep(str(list[j], "key", w));
        t.dtype = abiDType(str(list[j], "dtype", w), w);
        t.rank = static_cast<int32_t>(shape.size());
        t.shape = s->keep(shape);
        s->tensors.back().push_back(t);
      }
    }
    const std::vector<rt::TensorSpec> &outs = s->tensors.back();
    const std::vector<rt::TensorSpec> &ins = s->tensors[s->tensors.size() - 2];
    spec.numInputs = static_cast<int32_t>(ins.size());
    spec.inputs = ins.data();
    spec.numOutputs = static_cast<int32_t>(outs.size());
    spec.outputs = outs.data();
    const Json &arena = object(f, "arena", where);
    spec.arenaStatic = int64(arena, "static", where + ".arena");
    spec.arenaPerBatch = int64(arena, "per_batch", where + ".arena");
    spec.arenaPerValue = arena.HasMember("per_value")
                             ? int64(arena, "per_value", where + ".arena")
                             : 0;
    spec.hasChecks = arena.HasMember("status");
    spec.statusOffset =
        spec.hasChecks ? int64(arena, "status", where + ".arena") : -1;
    if (spec.arenaStatic < 0 || spec.arenaPerBatch < 0 ||
        spec.arenaPerValue < 0 || spec.arenaStatic > (int64_t(1) << 40) ||
        spec.arenaPerBatch > (int64_t(1) << 32) ||
        spec.arenaPerValue > (int64_t(1) << 32) ||
        (spec.hasChecks &&
         (spec.statusOffset < 0 || spec.statusOffset + 24 > spec.arenaStatic)))
      throw FieldError(where + ".arena has a bad size or status offset");
    s->functions.push_back(spec);
  }
  if (checks)
    for (rapidjson::SizeType i = 0; i < checks->Size(); ++i) {
      std::string where = "model.checks[" + std::to_string(i) + "]";
      const Json &c = (*checks)[i];
      std::vector<int64_t> shape = shapeOf(c, "shape", where, -2);
      rt::CheckSpec spec{};
      spec.node = s->keep(str(c, "node", where));
      spec.what = s->keep(str(c, "what", where));
      spec.lower = int64(c, "lower", where);
      spec.upper = int64(c, "upper", where);
      spec.rank = static_cast<int32_t>(shape.size());
      spec.shape = s->keep(shape);
      s->checks.push_back(spec);
    }
  s->spec.numVariables = static_cast<int32_t>(s->variables.size());
  s->spec.variables = s->variables.data();
  s->spec.numFunctions = static_cast<int32_t>(s->functions.size());
  s->spec.functions = s->functions.data();
  s->spec.numChecks = static_cast<int32_t>(s->checks.size());
  s->spec.checks = s->checks.data();
  return s;
}

DType hostDType(const std::string &name, const std::string &where) {
  std::optional<DType> d = dtype_from_name(name);
  if (!d)
    throw FieldError(where + ".dtype '" + name + "' is not a dtype");
  return *d;
}

TensorInfo tensorInfo(const Json &t, const char *nameKey,
                      const std::string &where) {
  TensorInfo info;
  info.name = str(t, nameKey, where);
  info.dtype = hostDType(str(t, "dtype", where), where);
  info.shape = shapeOf(t, "shape", where, -1);
  return info;
}

struct Receiver {
  std::vector<TensorInfo> tensors;
  std::optional<data::ExampleParser> parser;
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
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError())
    throw fault("saved_model.json is not JSON (at byte " +
                std::to_string(doc.GetErrorOffset()) + ")");
  try {
    if (!doc.IsObject())
      throw FieldError("saved_model.json is not an object");
    std::string format = str(doc, "format", "saved_model.json");
    if (format != kFormat)
      throw FieldError("format '" + format + "' is not " + kFormat);
    impl->globalStep = int64(doc, "global_step", "saved_model.json");
    const Json &target = object(doc, "target", "saved_model.json");
    std::string arch = str(target, "arch", "target");
    if (arch != hostArch())
      throw FieldError("compiled for " + arch + ", this machine is " +
                       hostArch());
    std::vector<std::string> features;
    for (const Json &f : array(target, "features", "target").GetArray()) {
      if (!f.IsString())
        throw FieldError("target.features has a non-string");
      features.push_back(f.GetString());
    }
    if (!options.skip_cpu_check) {
      std::vector<std::string> missing = missingFeatures(features);
      if (!missing.empty()) {
        std::string list;
        for (const std::string &m : missing)
          list += (list.empty() ? "" : ", ") + m;
        throw FieldError("compiled for CPU " + str(target, "cpu", "target") +
                         ", this CPU lacks " + list);
      }
    }

    // The compiled function.
    impl->spec = buildSpec(object(doc, "model", "saved_model.json"));
    std::string function = str(doc, "function", "saved_model.json");
    impl->function = -1;
    for (int i = 0; i < impl->spec->spec.numFunctions; ++i)
      if (function == impl->spec->spec.functions[i].name)
        impl->function = i;
    if (impl->function < 0 || impl->spec->spec.numFunctions != 1)
      throw FieldError("model has no single function '" + function + "'");
    const rt::ModelSpec &spec = impl->spec->spec;
    // Receivers.
    const Json &receivers = object(doc, "receivers", "saved_model.json");
    for (auto it = receivers.MemberBegin(); it != receivers.MemberEnd(); ++it) {
      std::string name(it->name.GetString(), it->name.GetStringLength());
      std::string where = "receivers['" + name + "']";
      Receiver r;
      const Json &tensors = array(it->value, "tensors", where);
      for (rapidjson::SizeType i = 0; i < tensors.Size(); ++i)
        r.tensors.push_back(tensorInfo(
            tensors[i], "name", where + ".tensors[" + std::to_string(i) + "]"));
      std::string kind = str(it->value, "kind", where);
      if (kind == "parsing") {
        if (r.tensors.size() != 1 || r.tensors[0].dtype != DType::String)
          throw FieldError(where + ": a parsing receiver has one STRING "
                                   "tensor");
        try {
          r.parser.emplace(feature_column::parse_spec_from_json(
              toText(object(it->value, "parse_spec", where))));
        } catch (const std::invalid_argument &e) {
          throw FieldError(where + ".parse_spec: " + e.what());
        }
      } else if (kind != "raw") {
        throw FieldError(where + ".kind '" + kind + "' is not raw or parsing");
      }
      impl->receivers.emplace(name, std::move(r));
    }

    // The transform.
    if (doc.HasMember("transform")) {
      const Json &t = object(doc, "transform", "saved_model.json");
      if (t.HasMember("feature_columns")) {
        std::string assets = joinPath(export_dir, "assets");
        try {
          impl->transformer.emplace(feature_column::feature_columns_from_json(
              toText(array(t, "feature_columns", "transform")),
              [&](const std::string &name) {
                if (name.find('/') != std::string::npos || name == ".." ||
                    name.empty())
                  throw std::invalid_argument("asset name '" + name +
                                              "' is not a file name");
                return joinPath(assets, name);
              }));
        } catch (const std::invalid_argument &e) {
          throw FieldError(std::string("transform.feature_columns: ") +
                           e.what());
        }
      }
      if (t.HasMember("ones"))
        for (const Json &o : array(t, "ones", "transform").GetArray()) {
          if (!o.IsString())
            throw FieldError("transform.ones has a non-string");
          impl->ones.push_back(o.GetString());
        }
      if (t.HasMember("batch_zeros"))
        impl->batchZeros = str(t, "batch_zeros", "transform");
      if (t.HasMember("class_names"))
        for (const Json &o : array(t, "class_names", "transform").GetArray()) {
          if (!o.IsString())
            throw FieldError("transform.class_names has a non-string");
          impl->classNames.push_back(o.GetString());
        }
    }

    // Signatures.
    const rt::FunctionSpec &fn = spec.functions[impl->function];
    const Json &sigs = object(doc, "signatures", "saved_model.json");
    for (auto it = sigs.MemberBegin(); it != sigs.MemberEnd(); ++it) {
      std::string name(it->name.GetString(), it->name.GetStringLength());
      std::string where = "signatures['" + name + "']";
      Signature sig;
      sig.def.method_name = str(it->value, "method_name", where);
      sig.receiver = str(it->value, "receiver", where);
      auto r = impl->receivers.find(sig.receiver);
      if (r == impl->receivers.end())
        throw FieldError(where + ".receiver '" + sig.receiver +
                         "' is not a receiver");
      const Json &inputs = object(it->value, "inputs", where);
      for (auto in = inputs.MemberBegin(); in != inputs.MemberEnd(); ++in) {
        std::string alias(in->name.GetString(), in->name.GetStringLength());
        TensorInfo info =
            tensorInfo(in->value, "name", where + ".inputs['" + alias + "']");
        bool known = std::any_of(
            r->second.tensors.begin(), r->second.tensors.end(),
            [&](const TensorInfo &t) { return t.name == info.name; });
        if (!known)
          throw FieldError(where + ".inputs['" + alias + "'] feeds '" +
                           info.name + "', not a tensor of its receiver");
        sig.def.inputs[alias] = info;
      }
      if (sig.def.inputs.size() != r->second.tensors.size())
        throw FieldError(where + " does not feed every receiver tensor");
      const Json &outputs = object(it->value, "outputs", where);
      for (auto out = outputs.MemberBegin(); out != outputs.MemberEnd();
           ++out) {
        std::string alias(out->name.GetString(), out->name.GetStringLength());
        std::string w = where + ".outputs['" + alias + "']";
        TensorInfo info = tensorInfo(out->value, "source", w);
        OutputSource source{info.name, ""};
        if (out->value.HasMember("lookup")) {
          source.lookup = str(out->value, "lookup", w);
          if (source.lookup != "class_names" && source.lookup != "decimal")
            throw FieldError(w + ".lookup '" + source.lookup +
                             "' is not class_names or decimal");
          if (source.lookup == "class_names" && impl->classNames.empty())
            throw FieldError(w + " looks up class names the transform has "
                                 "not");
        }
        bool found = false;
        for (int o = 0; o < fn.numOutputs; ++o)
          found |= source.source == fn.outputs[o].key;
        if (!found)
          throw FieldError(w + ".source '" + source.source +
                           "' is not an output of the compiled function");
        info.name = alias;
        sig.def.outputs[alias] = info;
        sig.sources[alias] = source;
      }
      impl->defs[name] = sig.def;
      impl->signatures.emplace(name, std::move(sig));
    }
    if (impl->signatures.empty())
      throw FieldError("no signatures");

    // The files, last: everything above is saved_model.json alone (what
    // the fuzz target reaches without an export folder).
    std::string library = str(doc, "library", "saved_model.json");
    if (library.find('/') != std::string::npos)
      throw FieldError("library must be a file of the export folder");
    std::string libraryPath = joinPath(export_dir, library);
    if (!fileio::exists(libraryPath))
      throw FieldError("the library " + library + " is missing");
    impl->library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!impl->library) {
      const char *e = dlerror();
      throw FieldError("cannot load " + library + ": " +
                       (e ? std::string(e) : "dlopen failed"));
    }
    std::string symbol = std::string(kModelName) + "_" + function + "_packed";
    impl->entries[0] =
        reinterpret_cast<rt::EntryPoint>(dlsym(impl->library, symbol.c_str()));
    if (!impl->entries[0])
      throw FieldError(library + " has no symbol " + symbol);

    // Variables.
    std::string variables = str(doc, "variables", "saved_model.json");
    if (variables.find('/') != std::string::npos)
      throw FieldError("variables must be a file of the export folder");
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
  auto str = [](const std::vector<int64_t> &s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i)
      out += (i ? "," : "") + std::to_string(s[i]);
    return out + "]";
  };
  if (t.shape.size() == 1 && info.shape.size() > 1 &&
      std::all_of(info.shape.begin() + 1, info.shape.end(),
                  [](int64_t d) { return d == 1; }))
    t.shape.resize(info.shape.size(), 1);
  bool ok = t.shape.size() == info.shape.size();
  for (size_t i = 0; ok && i < t.shape.size(); ++i)
    ok = info.shape[i] < 0 || info.shape[i] == t.shape[i];
  if (!ok)
    throw std::invalid_argument(what + " has shape " + str(t.shape) +
                                ", the signature takes " + str(info.shape));
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
  const rt::FunctionSpec &fn = spec->spec.functions[function];
  runner->set_batch(batch);
  for (int i = 0; i < fn.numInputs; ++i) {
    const rt::TensorSpec &in = fn.inputs[i];
    std::string key = in.key;
    const std::string prefix = "features/";
    std::string feature = key.compare(0, prefix.size(), prefix) == 0
                              ? key.substr(prefix.size())
                              : key;
    auto it = features.find(feature);
    if (it == features.end())
      throw std::invalid_argument("the model needs feature '" + feature +
                                  "', which the request does not give");
    TensorValue &t = it->second;
    std::optional<DType> want = dtype_from_abi_name(rt::dtypeName(in.dtype));
    if (!want)
      throw std::invalid_argument("feature '" + feature +
                                  "': the model takes i8");
    if (t.dtype != *want)
      t = convertTo(t, *want, "feature '" + feature + "'");
    bool values = in.rank > 0 && in.shape[0] == rt::kValuesDim;
    if (values && !valuesInputs.count(feature))
      throw std::invalid_argument("feature '" + feature +
                                  "' must be sparse values");
    int64_t n = values && !t.shape.empty() ? t.shape[0] : 0;
    if (values)
      runner->set_values(function, i, n);
    // The shape must be the spec's with the batch (and values) filled in.
    bool ok = static_cast<int32_t>(t.shape.size()) == in.rank;
    for (int32_t d = 0; ok && d < in.rank; ++d) {
      int64_t expect = in.shape[d] == rt::kBatchDim    ? batch
                       : in.shape[d] == rt::kValuesDim ? n
                                                       : in.shape[d];
      ok = t.shape[d] == expect;
    }
    if (!ok)
      throw std::invalid_argument(
          "feature '" + feature + "' has shape " + t.spec().str() +
          ", not what the model takes for batch " + std::to_string(batch));
    if (!t.data.empty())
      std::memcpy(runner->input_data(function, i), t.data.data(),
                  t.data.size());
  }
  runner->run(function);
  TensorMap out;
  for (int o = 0; o < fn.numOutputs; ++o) {
    const rt::TensorSpec &os = fn.outputs[o];
    std::vector<int64_t> shape(os.shape, os.shape + os.rank);
    for (int64_t &d : shape)
      if (d == rt::kBatchDim)
        d = batch;
    std::optional<DType> dtype = dtype_from_abi_name(rt::dtypeName(os.dtype));
    if (!dtype)
      continue;
    size_t bytes =
        static_cast<size_t>(rt::numElements(os.rank, os.shape, batch)) *
        rt::dtypeBytes(os.dtype);
    const char *p = static_cast<const char *>(runner->output_data(function, o));
    out[os.key] = TensorValue::from_bytes(*dtype, std::move(shape),
                                          std::string(p, p + bytes));
  }
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
