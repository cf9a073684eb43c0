//===- SavedModelJson.cpp - saved_model.json: reader and writer
//------------===//
//
// saved_model.json is untrusted input (a corrupt or hand-edited export):
// every field is read through the checked accessors below, whose errors
// name the field.
//
//===----------------------------------------------------------------------===//

#include "runtime/format/ModelFormat.h"

#include "rapidjson/document.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#include <algorithm>
#include <set>

namespace estc {
namespace modelformat {

namespace {

using Json = rapidjson::Value;

const Json &member(const Json &object, const char *key,
                   const std::string &where) {
  if (!object.IsObject())
    throw FormatError(where + " is not an object");
  auto it = object.FindMember(key);
  if (it == object.MemberEnd())
    throw FormatError(where + " has no \"" + key + "\"");
  return it->value;
}
std::string str(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsString())
    throw FormatError(where + "." + key + " is not a string");
  return std::string(v.GetString(), v.GetStringLength());
}
int64_t int64(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsInt64())
    throw FormatError(where + "." + key + " is not an integer");
  return v.GetInt64();
}
bool boolean(const Json &object, const char *key, const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsBool())
    throw FormatError(where + "." + key + " is not a boolean");
  return v.GetBool();
}
const Json &array(const Json &object, const char *key,
                  const std::string &where) {
  const Json &v = member(object, key, where);
  if (!v.IsArray())
    throw FormatError(where + "." + key + " is not an array");
  return v;
}
const Json &object(const Json &parent, const char *key,
                   const std::string &where) {
  const Json &v = member(parent, key, where);
  if (!v.IsObject())
    throw FormatError(where + "." + key + " is not an object");
  return v;
}
std::vector<int64_t> shapeOf(const Json &object, const char *key,
                             const std::string &where, int64_t lowest) {
  std::vector<int64_t> shape;
  const Json &a = array(object, key, where);
  if (a.Size() > 16)
    throw FormatError(where + "." + key + " has more than 16 dimensions");
  for (const Json &d : a.GetArray()) {
    if (!d.IsInt64() || d.GetInt64() < lowest ||
        d.GetInt64() > (int64_t(1) << 40))
      throw FormatError(where + "." + key + " has a bad dimension");
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
std::string nameOf(const Json &name) {
  return std::string(name.GetString(), name.GetStringLength());
}

rt::DType abiDType(const std::string &name, const std::string &where) {
  std::optional<rt::DType> d = elementTypeFromName(name);
  if (!d)
    throw FormatError(where + ".dtype '" + name + "' is not an element type");
  return *d;
}

DType hostDType(const std::string &name, const std::string &where) {
  std::optional<DType> d = dtype_from_name(name);
  if (!d)
    throw FormatError(where + ".dtype '" + name + "' is not a dtype");
  return *d;
}

SignatureTensor tensorOf(const Json &t, const char *nameKey,
                         const std::string &where) {
  SignatureTensor info;
  info.name = str(t, nameKey, where);
  info.dtype = hostDType(str(t, "dtype", where), where);
  info.shape = shapeOf(t, "shape", where, -1);
  return info;
}

/// saved_model.json's "model": a manifest, checked strictly (every field
/// the loader's ModelSpec needs, with bounds).
Manifest modelOf(const Json &manifest) {
  Manifest m;
  const Json &vars = array(manifest, "variables", "model");
  const Json &fns = array(manifest, "functions", "model");
  const Json *checks = manifest.HasMember("checks")
                           ? &array(manifest, "checks", "model")
                           : nullptr;
  m.name = str(manifest, "name", "model");
  for (rapidjson::SizeType i = 0; i < vars.Size(); ++i) {
    std::string where = "model.variables[" + std::to_string(i) + "]";
    const Json &v = vars[i];
    VariableInfo info;
    info.shape = shapeOf(v, "shape", where, 0);
    info.name = str(v, "name", where);
    info.dtype = abiDType(str(v, "dtype", where), where);
    info.trainable = boolean(v, "trainable", where);
    info.local = boolean(v, "local", where);
    m.variables.push_back(std::move(info));
  }
  for (rapidjson::SizeType i = 0; i < fns.Size(); ++i) {
    std::string where = "model.functions[" + std::to_string(i) + "]";
    const Json &f = fns[i];
    FunctionInfo info;
    info.name = str(f, "name", where);
    for (const char *side : {"inputs", "outputs"}) {
      const Json &list = array(f, side, where);
      std::vector<TensorInfo> &out =
          side[0] == 'i' ? info.inputs : info.outputs;
      for (rapidjson::SizeType j = 0; j < list.Size(); ++j) {
        std::string w = where + "." + side + "[" + std::to_string(j) + "]";
        TensorInfo t;
        t.shape = shapeOf(list[j], "shape", w, rt::kSequenceDim);
        // A multi-step loop's steps (-3) are never exported.
        if (std::find(t.shape.begin(), t.shape.end(), rt::kStepsDim) !=
            t.shape.end())
          throw FormatError(w + ".shape has a bad dimension");
        t.key = str(list[j], "key", w);
        t.dtype = abiDType(str(list[j], "dtype", w), w);
        t.maxSequenceLength = list[j].HasMember("max_sequence_length")
                                  ? int64(list[j], "max_sequence_length", w)
                                  : 0;
        out.push_back(std::move(t));
      }
    }
    const Json &arena = object(f, "arena", where);
    info.arenaStatic = int64(arena, "static", where + ".arena");
    info.arenaPerBatch = int64(arena, "per_batch", where + ".arena");
    info.arenaPerValue = arena.HasMember("per_value")
                             ? int64(arena, "per_value", where + ".arena")
                             : 0;
    info.arenaPerStep = arena.HasMember("per_step")
                            ? int64(arena, "per_step", where + ".arena")
                            : 0;
    info.arenaPerBatchStep =
        arena.HasMember("per_batch_step")
            ? int64(arena, "per_batch_step", where + ".arena")
            : 0;
    bool hasChecks = arena.HasMember("status");
    info.statusOffset =
        hasChecks ? int64(arena, "status", where + ".arena") : -1;
    if (info.arenaStatic < 0 || info.arenaPerBatch < 0 ||
        info.arenaPerValue < 0 || info.arenaStatic > (int64_t(1) << 40) ||
        info.arenaPerBatch > (int64_t(1) << 32) ||
        info.arenaPerValue > (int64_t(1) << 32) || info.arenaPerStep < 0 ||
        info.arenaPerStep > (int64_t(1) << 32) || info.arenaPerBatchStep < 0 ||
        info.arenaPerBatchStep > (int64_t(1) << 32) ||
        (hasChecks &&
         (info.statusOffset < 0 || info.statusOffset + 24 > info.arenaStatic)))
      throw FormatError(where + ".arena has a bad size or status offset");
    m.functions.push_back(std::move(info));
  }
  if (checks)
    for (rapidjson::SizeType i = 0; i < checks->Size(); ++i) {
      std::string where = "model.checks[" + std::to_string(i) + "]";
      const Json &c = (*checks)[i];
      CheckInfo info;
      info.shape = shapeOf(c, "shape", where, -2);
      info.node = str(c, "node", where);
      info.what = str(c, "what", where);
      info.lower = int64(c, "lower", where);
      info.upper = int64(c, "upper", where);
      m.checks.push_back(std::move(info));
    }
  std::string sequenceError = checkSequenceDims(m);
  if (!sequenceError.empty())
    throw FormatError("model: " + sequenceError);
  return m;
}

} // namespace

SavedModelFile readSavedModel(std::string_view text,
                              const SavedModelHooks &hooks) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    throw FormatError("saved_model.json is not JSON (at byte " +
                      std::to_string(doc.GetErrorOffset()) + ")");
  SavedModelFile file;
  if (!doc.IsObject())
    throw FormatError("saved_model.json is not an object");
  std::string format = str(doc, "format", "saved_model.json");
  if (format != kSavedModelFormat)
    throw FormatError("format '" + format + "' is not " + kSavedModelFormat);
  file.globalStep = int64(doc, "global_step", "saved_model.json");
  const Json &target = object(doc, "target", "saved_model.json");
  file.target.arch = str(target, "arch", "target");
  if (hooks.arch)
    hooks.arch(file.target.arch);
  for (const Json &f : array(target, "features", "target").GetArray()) {
    if (!f.IsString())
      throw FormatError("target.features has a non-string");
    file.target.features.push_back(f.GetString());
  }
  if (hooks.features)
    hooks.features(file.target.features,
                   [&] { return str(target, "cpu", "target"); });
  if (target.HasMember("cpu") && target["cpu"].IsString())
    file.target.cpu = nameOf(target["cpu"]);
  if (target.HasMember("triple") && target["triple"].IsString())
    file.target.triple = nameOf(target["triple"]);

  // The compiled function.
  const Json &model = object(doc, "model", "saved_model.json");
  file.model = modelOf(model);
  file.modelJson = toText(model);
  file.function = str(doc, "function", "saved_model.json");
  int function = -1;
  for (size_t i = 0; i < file.model.functions.size(); ++i)
    if (file.function == file.model.functions[i].name)
      function = static_cast<int>(i);
  if (function < 0 || file.model.functions.size() != 1)
    throw FormatError("model has no single function '" + file.function + "'");

  // Receivers (the first of a name is the one signatures refer to).
  std::map<std::string, const Receiver *> receivers;
  std::vector<std::pair<std::string, Receiver>> read;
  const Json &rs = object(doc, "receivers", "saved_model.json");
  for (auto it = rs.MemberBegin(); it != rs.MemberEnd(); ++it) {
    std::string name = nameOf(it->name);
    std::string where = "receivers['" + name + "']";
    Receiver r;
    const Json &tensors = array(it->value, "tensors", where);
    for (rapidjson::SizeType i = 0; i < tensors.Size(); ++i)
      r.tensors.push_back(tensorOf(
          tensors[i], "name", where + ".tensors[" + std::to_string(i) + "]"));
    r.kind = str(it->value, "kind", where);
    if (r.kind == "parsing") {
      if (r.tensors.size() != 1 || r.tensors[0].dtype != DType::String)
        throw FormatError(where + ": a parsing receiver has one STRING "
                                  "tensor");
      r.parseSpec = toText(object(it->value, "parse_spec", where));
      if (hooks.parseSpec) {
        try {
          hooks.parseSpec(name, r.parseSpec);
        } catch (const std::invalid_argument &e) {
          throw FormatError(where + ".parse_spec: " + e.what());
        }
      }
    } else if (r.kind != "raw") {
      throw FormatError(where + ".kind '" + r.kind + "' is not raw or parsing");
    }
    read.emplace_back(name, std::move(r));
  }
  file.receivers = std::move(read);
  for (const auto &[name, r] : file.receivers)
    receivers.emplace(name, &r);

  // The transform.
  if (doc.HasMember("transform")) {
    const Json &t = object(doc, "transform", "saved_model.json");
    Transform transform;
    transform.json = toText(t);
    if (t.HasMember("feature_columns")) {
      transform.hasFeatureColumns = true;
      transform.featureColumns =
          toText(array(t, "feature_columns", "transform"));
      if (hooks.featureColumns) {
        try {
          hooks.featureColumns(transform.featureColumns);
        } catch (const std::invalid_argument &e) {
          throw FormatError(std::string("transform.feature_columns: ") +
                            e.what());
        }
      }
    }
    if (t.HasMember("ones"))
      for (const Json &o : array(t, "ones", "transform").GetArray()) {
        if (!o.IsString())
          throw FormatError("transform.ones has a non-string");
        transform.ones.push_back(o.GetString());
      }
    if (t.HasMember("batch_zeros"))
      transform.batchZeros = str(t, "batch_zeros", "transform");
    if (t.HasMember("class_names")) {
      transform.hasClassNames = true;
      for (const Json &o : array(t, "class_names", "transform").GetArray()) {
        if (!o.IsString())
          throw FormatError("transform.class_names has a non-string");
        transform.classNames.push_back(o.GetString());
      }
    }
    file.transform = std::move(transform);
  }
  bool classNames = file.transform && !file.transform->classNames.empty();

  // Signatures.
  const FunctionInfo &fn = file.model.functions[static_cast<size_t>(function)];
  const Json &sigs = object(doc, "signatures", "saved_model.json");
  for (auto it = sigs.MemberBegin(); it != sigs.MemberEnd(); ++it) {
    std::string name = nameOf(it->name);
    std::string where = "signatures['" + name + "']";
    Signature sig;
    sig.methodName = str(it->value, "method_name", where);
    sig.receiver = str(it->value, "receiver", where);
    auto r = receivers.find(sig.receiver);
    if (r == receivers.end())
      throw FormatError(where + ".receiver '" + sig.receiver +
                        "' is not a receiver");
    const std::vector<SignatureTensor> &fed = r->second->tensors;
    const Json &inputs = object(it->value, "inputs", where);
    for (auto in = inputs.MemberBegin(); in != inputs.MemberEnd(); ++in) {
      std::string alias = nameOf(in->name);
      SignatureTensor info =
          tensorOf(in->value, "name", where + ".inputs['" + alias + "']");
      bool known =
          std::any_of(fed.begin(), fed.end(), [&](const SignatureTensor &t) {
            return t.name == info.name;
          });
      if (!known)
        throw FormatError(where + ".inputs['" + alias + "'] feeds '" +
                          info.name + "', not a tensor of its receiver");
      sig.inputs[alias] = info;
    }
    if (sig.inputs.size() != fed.size())
      throw FormatError(where + " does not feed every receiver tensor");
    const Json &outputs = object(it->value, "outputs", where);
    for (auto out = outputs.MemberBegin(); out != outputs.MemberEnd(); ++out) {
      std::string alias = nameOf(out->name);
      std::string w = where + ".outputs['" + alias + "']";
      SignatureTensor info = tensorOf(out->value, "source", w);
      if (out->value.HasMember("lookup")) {
        info.lookup = str(out->value, "lookup", w);
        if (info.lookup != "class_names" && info.lookup != "decimal")
          throw FormatError(w + ".lookup '" + info.lookup +
                            "' is not class_names or decimal");
        if (info.lookup == "class_names" && !classNames)
          throw FormatError(w + " looks up class names the transform has "
                                "not");
      }
      bool found =
          std::any_of(fn.outputs.begin(), fn.outputs.end(),
                      [&](const TensorInfo &o) { return info.name == o.key; });
      if (!found)
        throw FormatError(w + ".source '" + info.name +
                          "' is not an output of the compiled function");
      sig.outputs[alias] = info;
    }
    file.signatures.emplace_back(name, std::move(sig));
  }
  if (file.signatures.empty())
    throw FormatError("no signatures");

  // The files, last: everything above is saved_model.json alone.
  file.library = str(doc, "library", "saved_model.json");
  if (file.library.find('/') != std::string::npos)
    throw FormatError("library must be a file of the export folder");
  if (hooks.library)
    hooks.library(file);
  file.variables = str(doc, "variables", "saved_model.json");
  if (file.variables.find('/') != std::string::npos)
    throw FormatError("variables must be a file of the export folder");
  if (doc.HasMember("estc_version") && doc["estc_version"].IsString())
    file.estcVersion = nameOf(doc["estc_version"]);
  if (doc.HasMember("checkpoint") && doc["checkpoint"].IsString())
    file.checkpoint = nameOf(doc["checkpoint"]);
  if (doc.HasMember("mode") && doc["mode"].IsString())
    file.mode = nameOf(doc["mode"]);
  return file;
}

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void writeShape(Writer &w, const std::vector<int64_t> &shape) {
  w.StartArray();
  for (int64_t d : shape)
    w.Int64(d);
  w.EndArray();
}

void writeTensor(Writer &w, const SignatureTensor &t, const char *nameKey) {
  w.StartObject();
  w.Key(nameKey);
  w.String(t.name.c_str());
  w.Key("dtype");
  w.String(dtype_name(t.dtype));
  w.Key("shape");
  writeShape(w, t.shape);
  if (!t.lookup.empty()) {
    w.Key("lookup");
    w.String(t.lookup.c_str());
  }
  w.EndObject();
}

void writeReceiver(Writer &w, const Receiver &r) {
  bool parsing = r.kind == "parsing";
  w.StartObject();
  w.Key("kind");
  w.String(parsing ? "parsing" : "raw");
  w.Key("tensors");
  w.StartArray();
  for (const SignatureTensor &t : r.tensors) {
    w.StartObject();
    w.Key("name");
    w.String(t.name.c_str());
    w.Key("dtype");
    w.String(dtype_name(t.dtype));
    w.Key("shape");
    writeShape(w, t.shape);
    w.EndObject();
  }
  w.EndArray();
  if (parsing) {
    w.Key("parse_spec");
    w.RawValue(r.parseSpec.data(), r.parseSpec.size(), rapidjson::kObjectType);
  }
  w.EndObject();
}

} // namespace

std::string writeSavedModel(const SavedModelFile &file, bool asText) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("format");
  w.String(kSavedModelFormat);
  w.Key("estc_version");
  w.String(file.estcVersion.c_str());
  w.Key("global_step");
  w.Int64(file.globalStep);
  w.Key("checkpoint");
  w.String(file.checkpoint.c_str());
  w.Key("mode");
  w.String(file.mode.c_str());
  w.Key("target");
  w.StartObject();
  w.Key("arch");
  w.String(file.target.arch.c_str());
  w.Key("triple");
  w.String(file.target.triple.c_str());
  w.Key("cpu");
  w.String(file.target.cpu.c_str());
  w.Key("features");
  w.StartArray();
  for (const std::string &f : file.target.features)
    w.String(f.c_str());
  w.EndArray();
  w.EndObject();
  w.Key("library");
  w.String(file.library.c_str());
  w.Key("function");
  w.String(file.function.c_str());
  w.Key("variables");
  w.String(file.variables.c_str());
  w.Key("model");
  std::string model =
      file.modelJson.empty() ? writeManifest(file.model) : file.modelJson;
  w.RawValue(model.data(), model.size(), rapidjson::kObjectType);
  w.Key("receivers");
  w.StartObject();
  for (const auto &[name, r] : file.receivers) {
    w.Key(name.c_str());
    writeReceiver(w, r);
  }
  w.EndObject();
  if (file.transform) {
    w.Key("transform");
    w.RawValue(file.transform->json.data(), file.transform->json.size(),
               rapidjson::kObjectType);
  }
  w.Key("signatures");
  w.StartObject();
  for (const auto &[name, sig] : file.signatures) {
    w.Key(name.c_str());
    w.StartObject();
    w.Key("method_name");
    w.String(sig.methodName.c_str());
    w.Key("receiver");
    w.String(sig.receiver.c_str());
    w.Key("inputs");
    w.StartObject();
    for (const auto &[alias, t] : sig.inputs) {
      w.Key(alias.c_str());
      writeTensor(w, t, "name");
    }
    w.EndObject();
    w.Key("outputs");
    w.StartObject();
    for (const auto &[alias, t] : sig.outputs) {
      w.Key(alias.c_str());
      writeTensor(w, t, "source");
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  std::string json = buffer.GetString();
  if (asText) {
    rapidjson::Document doc;
    doc.Parse(json.c_str());
    rapidjson::StringBuffer pretty;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> pw(pretty);
    pw.SetIndent(' ', 2);
    doc.Accept(pw);
    json = pretty.GetString();
  }
  return json + "\n";
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

} // namespace modelformat
} // namespace estc
