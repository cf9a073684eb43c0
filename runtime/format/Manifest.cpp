//===- Manifest.cpp - manifest.json: reader, writer, ModelSpec
//-------------===//
//
// The text is LLVM's JSON writer's, byte for byte, as the compiler wrote it
// with llvm::json before this library (strings: quoteString; doubles:
// formatDouble; an initializer parameter read back: compact, keys sorted).
//
//===----------------------------------------------------------------------===//

#include "runtime/format/JsonText.h"
#include "runtime/format/ModelFormat.h"

#include "lib/Support/Printable.h"

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace estc {
namespace modelformat {

FormatError::FormatError(const std::string &message)
    : std::runtime_error(escape_control_chars(message)) {}

const FunctionInfo *Manifest::findFunction(std::string_view name) const {
  for (const FunctionInfo &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

namespace {

constexpr rt::DType kElementTypes[] = {rt::DType::F32, rt::DType::F64,
                                       rt::DType::I8,  rt::DType::I32,
                                       rt::DType::I64, rt::DType::Bool};

/// Appends U+FFFD.
void replacement(std::string &out) { out += "\xef\xbf\xbd"; }

/// `s` with each maximal subpart of an ill-formed UTF-8 sequence replaced
/// by U+FFFD (LLVM's fixUTF8, lenient conversion).
std::string fixUTF8(std::string_view s) {
  std::string out;
  size_t i = 0, n = s.size();
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {
    unsigned char c = byte(i);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    int need = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0)
        lo = 0xa0;
      if (c == 0xed)
        hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0)
        lo = 0x90;
      if (c == 0xf4)
        hi = 0x8f;
    } else {
      replacement(out);
      ++i;
      continue;
    }
    size_t j = i + 1;
    int got = 0;
    while (got < need && j < n) {
      unsigned char b = byte(j);
      if (b < (got == 0 ? lo : 0x80) || b > (got == 0 ? hi : 0xbf))
        break;
      ++j;
      ++got;
    }
    if (got == need)
      out.append(s.substr(i, j - i));
    else
      replacement(out);
    i = j;
  }
  return out;
}

bool isUTF8(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c & 0x80) == 0; }) ||
         fixUTF8(s) == s;
}

/// A number as llvm::json::Value::getAsInteger reads it: an integer, or a
/// double with no fraction in int64's range.
std::optional<int64_t> integerOf(const rapidjson::Value &v) {
  if (v.IsInt64())
    return v.GetInt64();
  if (v.IsUint64())
    return std::nullopt;
  if (v.IsDouble()) {
    double d = v.GetDouble();
    if (std::modf(d, &d) == 0.0 &&
        d >= double(std::numeric_limits<int64_t>::min()) &&
        d <= double(std::numeric_limits<int64_t>::max()))
      return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

const rapidjson::Value *field(const rapidjson::Value &o, const char *key) {
  auto it = o.FindMember(key);
  return it == o.MemberEnd() ? nullptr : &it->value;
}
std::optional<std::string> stringField(const rapidjson::Value &o,
                                       const char *key) {
  const rapidjson::Value *v = field(o, key);
  if (!v || !v->IsString())
    return std::nullopt;
  return std::string(v->GetString(), v->GetStringLength());
}
std::optional<int64_t> integerField(const rapidjson::Value &o,
                                    const char *key) {
  const rapidjson::Value *v = field(o, key);
  return v && v->IsNumber() ? integerOf(*v) : std::nullopt;
}
std::optional<bool> boolField(const rapidjson::Value &o, const char *key) {
  const rapidjson::Value *v = field(o, key);
  if (!v || !v->IsBool())
    return std::nullopt;
  return v->GetBool();
}
const rapidjson::Value *arrayField(const rapidjson::Value &o, const char *key) {
  const rapidjson::Value *v = field(o, key);
  return v && v->IsArray() ? v : nullptr;
}
const rapidjson::Value *objectField(const rapidjson::Value &o,
                                    const char *key) {
  const rapidjson::Value *v = field(o, key);
  return v && v->IsObject() ? v : nullptr;
}

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

std::string quoteString(std::string_view in) {
  std::string fixed;
  if (!isUTF8(in)) {
    fixed = fixUTF8(in);
    in = fixed;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : in) {
    if (c == 0x22 || c == 0x5c)
      out += '\\';
    if (c >= 0x20) {
      out += static_cast<char>(c);
      continue;
    }
    out += '\\';
    switch (c) {
    case '\t':
      out += 't';
      break;
    case '\n':
      out += 'n';
      break;
    case '\r':
      out += 'r';
      break;
    default:
      out += "u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      break;
    }
  }
  return out + "\"";
}

std::string formatDouble(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g",
                std::numeric_limits<double>::max_digits10, value);
  return buffer;
}

namespace detail {

std::string compactJson(const rapidjson::Value &v) {
  switch (v.GetType()) {
  case rapidjson::kNullType:
    return "null";
  case rapidjson::kFalseType:
    return "false";
  case rapidjson::kTrueType:
    return "true";
  case rapidjson::kNumberType:
    if (v.IsInt64())
      return std::to_string(v.GetInt64());
    if (v.IsUint64())
      return std::to_string(v.GetUint64());
    return formatDouble(v.GetDouble());
  case rapidjson::kStringType:
    return quoteString(std::string_view(v.GetString(), v.GetStringLength()));
  case rapidjson::kArrayType: {
    std::string s = "[";
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
      s += (i ? "," : "") + compactJson(v[i]);
    return s + "]";
  }
  case rapidjson::kObjectType: {
    std::vector<std::pair<std::string, const rapidjson::Value *>> members;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it)
      members.emplace_back(
          std::string(it->name.GetString(), it->name.GetStringLength()),
          &it->value);
    std::stable_sort(
        members.begin(), members.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    std::string s = "{";
    for (size_t i = 0; i < members.size(); ++i)
      s += (i ? "," : "") + quoteString(members[i].first) + ":" +
           compactJson(*members[i].second);
    return s + "}";
  }
  }
  return "null";
}

} // namespace detail

const char *elementTypeName(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return "f32";
  case rt::DType::F64:
    return "f64";
  case rt::DType::I8:
    return "i8";
  case rt::DType::I32:
    return "i32";
  case rt::DType::I64:
    return "i64";
  case rt::DType::Bool:
    return "i1";
  }
  return "?";
}

std::optional<rt::DType> elementTypeFromName(std::string_view name) {
  for (rt::DType d : kElementTypes)
    if (name == elementTypeName(d))
      return d;
  return std::nullopt;
}

std::string writeManifest(const Manifest &m) {
  std::string os;
  os += "{\n  \"format\": \"estc-manifest-1\",\n  \"name\": " +
        quoteString(m.name);
  if (m.device == rt::Device::Cuda)
    os +=
        ",\n  \"device\": \"cuda\",\n  \"gpu_arch\": " + quoteString(m.gpuArch);
  if (m.replicas > 1)
    os += ",\n  \"replicas\": " + std::to_string(m.replicas);
  if (m.psTasks > 0) {
    os += ",\n  \"ps_tasks\": " + std::to_string(m.psTasks);
    if (m.psTask >= 0)
      os += ",\n  \"ps_task\": " + std::to_string(m.psTask);
    if (m.psReplicasToAggregate > 0)
      os += ",\n  \"ps_sync\": [" + std::to_string(m.psReplicasToAggregate) +
            ", " + std::to_string(m.psTotalNumReplicas) + "]";
    os += ",\n  \"ps_inputs\": [";
    for (size_t i = 0; i < m.psInputs.size(); ++i)
      os += (i ? ", " : "") + std::string("{\"key\": ") +
            quoteString(m.psInputs[i].key) + ", \"dtype\": \"" +
            elementTypeName(m.psInputs[i].dtype) +
            "\", \"shape\": " + shapeJson(m.psInputs[i].shape) + "}";
    os += "]";
  }
  auto variables = [&](const char *name, const std::vector<VariableInfo> &vs) {
    os += std::string(",\n  \"") + name + "\": [";
    for (size_t i = 0; i < vs.size(); ++i) {
      const VariableInfo &v = vs[i];
      os += (i ? ",\n" : "\n");
      os += "    {\"name\": " + quoteString(v.name) + ", \"dtype\": \"" +
            elementTypeName(v.dtype) + "\", \"shape\": " + shapeJson(v.shape) +
            ", \"trainable\": " + (v.trainable ? "true" : "false") +
            ", \"local\": " + (v.local ? "true" : "false");
      if (!v.initializer.empty()) {
        os += ", \"initializer\": " + quoteString(v.initializer);
        if (!v.initializerParams.empty()) {
          os += ", \"initializer_params\": {";
          for (size_t p = 0; p < v.initializerParams.size(); ++p)
            os += (p ? ", " : "") + quoteString(v.initializerParams[p].first) +
                  ": " + v.initializerParams[p].second;
          os += "}";
        }
      }
      if (v.psTask >= 0)
        os += ", \"ps_task\": " + std::to_string(v.psTask);
      os += "}";
    }
    os += vs.empty() ? "]" : "\n  ]";
  };
  if (m.psTasks > 0)
    variables("ps_remote", m.psRemote);
  variables("variables", m.variables);
  os += ",\n";
  os += "  \"functions\": [";
  auto tensors = [&](const char *name, const std::vector<TensorInfo> &ts) {
    os += std::string("      \"") + name + "\": [";
    for (size_t i = 0; i < ts.size(); ++i)
      os += (i ? ",\n" : "\n") + std::string("        {\"key\": ") +
            quoteString(ts[i].key) + ", \"dtype\": \"" +
            elementTypeName(ts[i].dtype) +
            "\", \"shape\": " + shapeJson(ts[i].shape) +
            (ts[i].maxSequenceLength > 0
                 ? ", \"max_sequence_length\": " +
                       std::to_string(ts[i].maxSequenceLength)
                 : std::string()) +
            "}";
    os += ts.empty() ? "],\n" : "\n      ],\n";
  };
  for (size_t i = 0; i < m.functions.size(); ++i) {
    const FunctionInfo &f = m.functions[i];
    os += (i ? ",\n" : "\n");
    os += "    {\n      \"name\": " + quoteString(f.name) + ",\n";
    if (!f.loopOf.empty())
      os += "      \"loop_of\": " + quoteString(f.loopOf) + ",\n";
    tensors("inputs", f.inputs);
    tensors("outputs", f.outputs);
    os += "      \"arena\": {\"static\": " + std::to_string(f.arenaStatic) +
          ", \"per_batch\": " + std::to_string(f.arenaPerBatch);
    if (f.arenaPerValue != 0)
      os += ", \"per_value\": " + std::to_string(f.arenaPerValue);
    if (f.arenaPerStep != 0)
      os += ", \"per_step\": " + std::to_string(f.arenaPerStep);
    if (f.arenaPerBatchStep != 0)
      os += ", \"per_batch_step\": " + std::to_string(f.arenaPerBatchStep);
    if (f.statusOffset >= 0)
      os += ", \"status\": " + std::to_string(f.statusOffset);
    os += "}\n    }";
  }
  os += m.functions.empty() ? "]" : "\n  ]";
  if (!m.checks.empty()) {
    os += ",\n  \"checks\": [";
    for (size_t i = 0; i < m.checks.size(); ++i) {
      const CheckInfo &c = m.checks[i];
      os += (i ? ",\n" : "\n");
      os += "    {\"node\": " + quoteString(c.node) +
            ", \"what\": " + quoteString(c.what) +
            ", \"lower\": " + std::to_string(c.lower) +
            ", \"upper\": " + std::to_string(c.upper) +
            ", \"shape\": " + shapeJson(c.shape) + "}";
    }
    os += "\n  ]";
  }
  os += "\n}\n";
  return os;
}

std::string checkSequenceDims(const Manifest &m) {
  auto sequenceAt = [](const std::vector<int64_t> &shape) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == rt::kSequenceDim)
        return static_cast<int64_t>(d);
    return int64_t(-1);
  };
  for (const VariableInfo &v : m.variables)
    if (sequenceAt(v.shape) >= 0)
      return "variable '" + v.name +
             "': a sequence length dimension (-4) in a variable's shape";
  for (const CheckInfo &c : m.checks)
    if (sequenceAt(c.shape) >= 0)
      return "check of node '" + c.node +
             "': a sequence length dimension (-4) in a check's shape";
  for (const FunctionInfo &f : m.functions) {
    for (const TensorInfo &t : f.inputs) {
      std::string where = "@" + f.name + " input '" + t.key + "': ";
      for (size_t d = 0; d < t.shape.size(); ++d) {
        if (t.shape[d] != rt::kSequenceDim)
          continue;
        // [batch, length, ...], or a loop's [steps, batch, length, ...].
        size_t at = !t.shape.empty() && t.shape[0] == rt::kStepsDim ? 2 : 1;
        if (d != at || t.shape[at - 1] != rt::kBatchDim)
          return where + "the sequence length (-4) is dimension " +
                 std::to_string(d) +
                 "; it can only be dimension 1, after the batch";
      }
      if (t.maxSequenceLength < 0)
        return where + "max_sequence_length " +
               std::to_string(t.maxSequenceLength) + " is negative";
      if (t.maxSequenceLength > 0 && sequenceAt(t.shape) < 0)
        return where + "max_sequence_length without a sequence length "
                       "dimension (-4)";
    }
    if (f.arenaPerStep < 0 || f.arenaPerBatchStep < 0)
      return "@" + f.name + ": a negative per-step arena size";
  }
  return "";
}

Manifest readManifest(std::string_view json) {
  auto error = [](const std::string &message) {
    return FormatError("manifest: " + message);
  };
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag |
            rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    // Where, as LLVM's JSON parser said it: [line:column, byte=N].
    size_t at = std::min(doc.GetErrorOffset(), json.size());
    size_t line = 1, lineStart = 0;
    for (size_t i = 0; i < at; ++i)
      if (json[i] == '\n') {
        ++line;
        lineStart = i + 1;
      }
    throw error("[" + std::to_string(line) + ":" +
                std::to_string(at - lineStart) +
                ", byte=" + std::to_string(at) +
                "]: " + rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject() || stringField(doc, "format") != kManifestFormat)
    throw error("not an estc-manifest-1 document");
  Manifest m;
  m.name = stringField(doc, "name").value_or("");
  if (std::optional<std::string> device = stringField(doc, "device")) {
    if (*device == "cuda")
      m.device = rt::Device::Cuda;
    else if (*device != "cpu")
      throw error("device '" + *device + "' is not one of cpu, cuda");
  }
  m.gpuArch = stringField(doc, "gpu_arch").value_or("");
  if (std::optional<int64_t> replicas = integerField(doc, "replicas")) {
    if (*replicas < 2 || *replicas > (1 << 20))
      throw error("replicas " + std::to_string(*replicas) +
                  " is not in 2..1048576");
    m.replicas = static_cast<int32_t>(*replicas);
  }
  auto readShape = [](const rapidjson::Value &o, std::vector<int64_t> &shape) {
    const rapidjson::Value *a = arrayField(o, "shape");
    if (!a)
      return false;
    for (const rapidjson::Value &d : a->GetArray()) {
      std::optional<int64_t> v =
          d.IsNumber() ? integerOf(d) : std::optional<int64_t>();
      if (!v)
        return false;
      shape.push_back(*v);
    }
    return true;
  };
  auto readDType = [](const rapidjson::Value &o, rt::DType &dtype) {
    std::optional<rt::DType> d =
        elementTypeFromName(stringField(o, "dtype").value_or(""));
    if (d)
      dtype = *d;
    return d.has_value();
  };
  if (std::optional<int64_t> tasks = integerField(doc, "ps_tasks")) {
    if (*tasks < 1 || *tasks > (1 << 16))
      throw error("ps_tasks " + std::to_string(*tasks) + " is not in 1..65536");
    m.psTasks = static_cast<int32_t>(*tasks);
    int64_t task = integerField(doc, "ps_task").value_or(-1);
    if (task < -1 || task >= *tasks)
      throw error("ps_task " + std::to_string(task) + " is not in -1.." +
                  std::to_string(*tasks - 1));
    m.psTask = static_cast<int32_t>(task);
    if (const rapidjson::Value *sync = arrayField(doc, "ps_sync")) {
      std::optional<int64_t> r, n;
      if (sync->Size() == 2 && (*sync)[0].IsNumber() && (*sync)[1].IsNumber()) {
        r = integerOf((*sync)[0]);
        n = integerOf((*sync)[1]);
      }
      if (!r || !n || *r < 1 || *r > (1 << 20) || *n < 0 || *n > (1 << 20))
        throw error("ps_sync is not [replicas_to_aggregate >= 1, "
                    "total_num_replicas >= 0]");
      m.psReplicasToAggregate = static_cast<int32_t>(*r);
      m.psTotalNumReplicas = static_cast<int32_t>(*n);
    }
  }
  if (const rapidjson::Value *inputs = arrayField(doc, "ps_inputs")) {
    for (const rapidjson::Value &to : inputs->GetArray()) {
      TensorInfo t;
      if (!to.IsObject() || !stringField(to, "key") ||
          !readDType(to, t.dtype) || !readShape(to, t.shape))
        throw error("malformed ps_inputs entry");
      t.key = *stringField(to, "key");
      m.psInputs.push_back(std::move(t));
    }
  }
  for (auto [field, list] : {std::pair{"ps_remote", &m.psRemote},
                             std::pair{"variables", &m.variables}}) {
    const rapidjson::Value *vars = arrayField(doc, field);
    if (!vars)
      continue;
    for (const rapidjson::Value &o : vars->GetArray()) {
      VariableInfo v;
      if (!o.IsObject() || !stringField(o, "name") || !readDType(o, v.dtype) ||
          !readShape(o, v.shape))
        throw error("malformed variable entry");
      v.name = *stringField(o, "name");
      v.trainable = boolField(o, "trainable").value_or(false);
      v.local = boolField(o, "local").value_or(false);
      v.initializer = stringField(o, "initializer").value_or("");
      if (const rapidjson::Value *params =
              objectField(o, "initializer_params")) {
        for (auto it = params->MemberBegin(); it != params->MemberEnd(); ++it)
          v.initializerParams.emplace_back(
              std::string(it->name.GetString(), it->name.GetStringLength()),
              detail::compactJson(it->value));
        std::sort(v.initializerParams.begin(), v.initializerParams.end());
      }
      int64_t task = integerField(o, "ps_task").value_or(-1);
      if (task < -1 || (task >= 0 && task >= m.psTasks))
        throw error("variable '" + v.name + "': ps_task " +
                    std::to_string(task) + " is not a task of the " +
                    std::to_string(m.psTasks) + " ps tasks");
      v.psTask = static_cast<int32_t>(task);
      list->push_back(std::move(v));
    }
  }
  if (const rapidjson::Value *fns = arrayField(doc, "functions")) {
    for (const rapidjson::Value &o : fns->GetArray()) {
      if (!o.IsObject() || !stringField(o, "name"))
        throw error("malformed function entry");
      FunctionInfo f;
      f.name = *stringField(o, "name");
      f.loopOf = stringField(o, "loop_of").value_or("");
      for (auto [name, list] :
           {std::pair{"inputs", &f.inputs}, std::pair{"outputs", &f.outputs}}) {
        if (const rapidjson::Value *ts = arrayField(o, name)) {
          for (const rapidjson::Value &to : ts->GetArray()) {
            TensorInfo t;
            if (!to.IsObject() || !stringField(to, "key") ||
                !readDType(to, t.dtype) || !readShape(to, t.shape))
              throw error("@" + f.name + ": malformed " + name + " entry");
            t.key = *stringField(to, "key");
            t.maxSequenceLength =
                integerField(to, "max_sequence_length").value_or(0);
            list->push_back(std::move(t));
          }
        }
      }
      if (const rapidjson::Value *arena = objectField(o, "arena")) {
        f.arenaStatic = integerField(*arena, "static").value_or(0);
        f.arenaPerBatch = integerField(*arena, "per_batch").value_or(0);
        f.arenaPerValue = integerField(*arena, "per_value").value_or(0);
        f.arenaPerStep = integerField(*arena, "per_step").value_or(0);
        f.arenaPerBatchStep =
            integerField(*arena, "per_batch_step").value_or(0);
        f.statusOffset = integerField(*arena, "status").value_or(-1);
      }
      m.functions.push_back(std::move(f));
    }
  }
  if (const rapidjson::Value *checks = arrayField(doc, "checks")) {
    for (const rapidjson::Value &o : checks->GetArray()) {
      CheckInfo c;
      if (!o.IsObject() || !stringField(o, "node") || !stringField(o, "what") ||
          !integerField(o, "lower") || !integerField(o, "upper") ||
          !readShape(o, c.shape))
        throw error("malformed check entry");
      c.node = *stringField(o, "node");
      c.what = *stringField(o, "what");
      c.lower = *integerField(o, "lower");
      c.upper = *integerField(o, "upper");
      m.checks.push_back(std::move(c));
    }
  }
  std::string sequenceError = checkSequenceDims(m);
  if (!sequenceError.empty())
    throw error(sequenceError);
  for (const FunctionInfo &f : m.functions)
    if (f.statusOffset >= 0 && m.checks.empty())
      throw error("@" + f.name +
                  " has a status slot but the "
                  "model has no checks");
  return m;
}

struct ModelSpecStorage {
  std::vector<rt::VariableSpec> variables;
  std::vector<rt::VariableSpec> psRemote;
  std::vector<rt::TensorSpec> psInputs;
  std::vector<std::vector<rt::TensorSpec>> tensors;
  std::vector<rt::FunctionSpec> functions;
  std::vector<rt::CheckSpec> checks;
  Manifest manifest; // owns the strings and shapes
};

rt::ModelSpec toModelSpec(const Manifest &manifest,
                          std::shared_ptr<ModelSpecStorage> &storage) {
  storage = std::make_shared<ModelSpecStorage>();
  ModelSpecStorage &s = *storage;
  s.manifest = manifest;
  const Manifest &m = s.manifest;
  for (auto [from, to] : {std::pair{&m.variables, &s.variables},
                          std::pair{&m.psRemote, &s.psRemote}})
    for (const VariableInfo &v : *from)
      to->push_back({v.name.c_str(), v.dtype,
                     static_cast<int32_t>(v.shape.size()), v.shape.data(),
                     v.trainable, v.local, v.psTask});
  for (const TensorInfo &t : m.psInputs)
    s.psInputs.push_back({t.key.c_str(), t.dtype,
                          static_cast<int32_t>(t.shape.size()), t.shape.data(),
                          0});
  s.tensors.reserve(2 * m.functions.size());
  for (const FunctionInfo &f : m.functions) {
    auto specs = [&](const std::vector<TensorInfo> &ts) {
      std::vector<rt::TensorSpec> out;
      for (const TensorInfo &t : ts)
        out.push_back({t.key.c_str(), t.dtype,
                       static_cast<int32_t>(t.shape.size()), t.shape.data(),
                       t.maxSequenceLength});
      s.tensors.push_back(std::move(out));
      return s.tensors.back().data();
    };
    const rt::TensorSpec *inputs = specs(f.inputs);
    const rt::TensorSpec *outputs = specs(f.outputs);
    s.functions.push_back(
        {f.name.c_str(), static_cast<int32_t>(f.inputs.size()), inputs,
         static_cast<int32_t>(f.outputs.size()), outputs, f.arenaStatic,
         f.arenaPerBatch, f.statusOffset >= 0, f.statusOffset, f.arenaPerValue,
         f.arenaPerStep, f.arenaPerBatchStep});
  }
  for (const CheckInfo &c : m.checks)
    s.checks.push_back({c.node.c_str(), c.what.c_str(), c.lower, c.upper,
                        static_cast<int32_t>(c.shape.size()), c.shape.data()});
  return {m.name.c_str(),
          static_cast<int32_t>(s.variables.size()),
          s.variables.data(),
          static_cast<int32_t>(s.functions.size()),
          s.functions.data(),
          static_cast<int32_t>(s.checks.size()),
          s.checks.data(),
          m.device,
          m.replicas,
          m.psTasks,
          m.psTask,
          static_cast<int32_t>(s.psInputs.size()),
          s.psInputs.data(),
          static_cast<int32_t>(s.psRemote.size()),
          s.psRemote.data(),
          m.psReplicasToAggregate,
          m.psTotalNumReplicas};
}

} // namespace modelformat
} // namespace estc
