//===- RestCodec.cpp - TF Serving's REST API: JSON <-> tensors ----------===//
//
// Parsing is RapidJSON's DOM (iterative parser, NaN/Infinity accepted, text
// after the document ignored: TF Serving's flags); writing is RapidJSON's
// Writer. The conversions follow tensorflow_serving/util/json_tensor.cc
// rule by rule; the messages are its messages.
//
//===----------------------------------------------------------------------===//

#include "tools/estc-serve/RestCodec.h"

#include "lib/Data/example.pb.h"
#include "lib/Support/Text.h"
#include "lib/Tensor/TensorValue.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <set>

namespace estc {
namespace serving {

using detail::fail;
using detail::invalid;

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

/// TensorShape's limit: deeper JSON lists cannot be a tensor.
constexpr int kMaxRank = 254;
/// JSON values in messages are cut here (TF Serving's
/// kMaxJsonDebugStringBytes).
constexpr size_t kMaxDebugBytes = 256;

const char *json_type_name(const rapidjson::Value &v) {
  switch (v.GetType()) {
  case rapidjson::kNullType:
    return "Null";
  case rapidjson::kFalseType:
    return "False";
  case rapidjson::kTrueType:
    return "True";
  case rapidjson::kObjectType:
    return "Object";
  case rapidjson::kArrayType:
    return "Array";
  case rapidjson::kStringType:
    return "String";
  case rapidjson::kNumberType:
    return "Number";
  }
  return "Unknown";
}

/// Compact JSON of `v`, cut after kMaxDebugBytes. Recursion stops once the
/// output is long enough, so its depth is bounded by the limit, whatever the
/// document's nesting.
void appendDebug(const rapidjson::Value &v, std::string &out) {
  if (out.size() >= kMaxDebugBytes)
    return;
  if (v.IsArray()) {
    out += '[';
    bool first = true;
    for (const auto &e : v.GetArray()) {
      if (out.size() >= kMaxDebugBytes)
        return;
      if (!first)
        out += ',';
      first = false;
      appendDebug(e, out);
    }
    out += ']';
  } else if (v.IsObject()) {
    out += '{';
    bool first = true;
    for (const auto &m : v.GetObject()) {
      if (out.size() >= kMaxDebugBytes)
        return;
      if (!first)
        out += ',';
      first = false;
      appendDebug(m.name, out);
      out += ':';
      appendDebug(m.value, out);
    }
    out += '}';
  } else {
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    v.Accept(w);
    out.append(buf.GetString(), buf.GetSize());
  }
}

std::string debug(const rapidjson::Value &v) {
  std::string out;
  appendDebug(v, out);
  if (out.size() > kMaxDebugBytes)
    out.resize(kMaxDebugBytes);
  return out;
}

/// TF's DataTypeString.
const char *tf_type_string(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "float";
  case DType::Float64:
    return "double";
  case DType::Int32:
    return "int32";
  case DType::Int64:
    return "int64";
  case DType::Bool:
    return "bool";
  case DType::Float16:
    return "half";
  case DType::BFloat16:
    return "bfloat16";
  case DType::String:
    return "string";
  case DType::Invalid:
    break;
  }
  return "INVALID";
}

[[noreturn]] void typeError(const rapidjson::Value &v, DType dtype) {
  invalid("JSON Value: " + debug(v) + " Type: " + json_type_name(v) +
          " is not of expected type: " + tf_type_string(dtype));
}

bool isBase64Object(const rapidjson::Value &v) {
  if (!v.IsObject() || v.MemberCount() != 1)
    return false;
  auto it = v.FindMember("b64");
  return it != v.MemberEnd() && it->value.IsString();
}

std::string decodeBase64Object(const rapidjson::Value &v) {
  if (!isBase64Object(v))
    invalid("JSON Value: " + debug(v) +
            " not formatted correctly for base64 data");
  const auto &s = v.FindMember("b64")->value;
  auto decoded = text::base64_decode({s.GetString(), s.GetStringLength()});
  if (!decoded)
    invalid("Unable to base64 decode");
  return *decoded;
}

/// One tensor being filled from JSON values of one dtype.
struct TensorFill {
  DType dtype;
  std::vector<int64_t> shape;
  std::string data;
  std::vector<std::string> strings;
  int64_t count = 0;

  template <typename T> void put(T v) {
    data.append(reinterpret_cast<const char *>(&v), sizeof(T));
  }

  /// AddValueToTensor.
  void add(const rapidjson::Value &v) {
    switch (dtype) {
    case DType::Float32:
      if (!v.IsNumber())
        typeError(v, dtype);
      put(v.GetFloat());
      break;
    case DType::Float64:
      if (!v.IsNumber())
        typeError(v, dtype);
      put(v.GetDouble());
      break;
    case DType::Int32:
      if (!v.IsInt())
        typeError(v, dtype);
      put(static_cast<int32_t>(v.GetInt()));
      break;
    case DType::Int64:
      if (!v.IsInt64())
        typeError(v, dtype);
      put(static_cast<int64_t>(v.GetInt64()));
      break;
    case DType::Bool:
      if (!v.IsBool())
        typeError(v, dtype);
      data.push_back(v.GetBool() ? 1 : 0);
      break;
    case DType::String:
      if (!v.IsString())
        typeError(v, dtype);
      strings.emplace_back(v.GetString(), v.GetStringLength());
      break;
    default:
      fail(Code::Unimplemented, "Conversion of JSON Value: " + debug(v) +
                                    " to type: " + tf_type_string(dtype));
    }
    ++count;
  }

  /// FillTensorProto: every leaf at depth rank, every list at depth d of
  /// size shape[d].
  void fill(const rapidjson::Value &v, size_t level) {
    size_t rank = shape.size();
    if (!v.IsArray()) {
      if (level != rank)
        invalid("JSON Value: " + debug(v) +
                " found at incorrect level: " + std::to_string(level + 1) +
                " in the JSON DOM. Expected at level: " + std::to_string(rank));
      if (v.IsObject()) {
        if (dtype != DType::String)
          typeError(v, dtype);
        strings.push_back(decodeBase64Object(v));
        ++count;
      } else {
        add(v);
      }
      return;
    }
    if (level >= rank)
      invalid("Encountered list at unexpected level: " + std::to_string(level) +
              " expected < " + std::to_string(rank));
    if (static_cast<int64_t>(v.Size()) != shape[level])
      invalid("Encountered list at unexpected size: " +
              std::to_string(v.Size()) + " at level: " + std::to_string(level) +
              " expected size: " + std::to_string(shape[level]));
    for (const auto &e : v.GetArray())
      fill(e, level + 1);
  }

  TensorValue take(std::vector<int64_t> finalShape) {
    TensorValue t;
    t.dtype = dtype;
    t.shape = std::move(finalShape);
    t.data = std::move(data);
    t.strings = std::move(strings);
    return t;
  }
};

/// GetDenseTensorShape, iterative: the sizes of the first elements' lists.
std::vector<int64_t> denseShape(const rapidjson::Value &v) {
  std::vector<int64_t> shape;
  const rapidjson::Value *cur = &v;
  while (cur->IsArray()) {
    if (shape.size() >= kMaxRank)
      invalid("JSON Value: " + debug(v) + " nests lists deeper than " +
              std::to_string(kMaxRank) + " (the most dimensions of a tensor)");
    shape.push_back(cur->Size());
    if (cur->Size() == 0)
      break;
    cur = &(*cur)[0];
  }
  return shape;
}

void parseJson(std::string_view body, rapidjson::Document &doc) {
  if (body.empty())
    invalid("JSON Parse error: The document is empty");
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseNanAndInfFlag |
                              rapidjson::kParseStopWhenDoneFlag;
  doc.Parse<kFlags>(body.data(), body.size());
  if (doc.HasParseError())
    invalid(std::string("JSON Parse error: ") +
            rapidjson::GetParseError_En(doc.GetParseError()) +
            " at offset: " + std::to_string(doc.GetErrorOffset()));
  if (!doc.IsObject())
    invalid("JSON Value: " + debug(doc) + " Is not object");
}

std::string signatureName(const rapidjson::Document &doc) {
  auto it = doc.FindMember("signature_name");
  if (it == doc.MemberEnd())
    return "";
  if (!it->value.IsString())
    invalid("JSON Value: " + debug(doc) +
            " not formatted correctly. 'signature_name' key must be a string "
            "value.");
  return {it->value.GetString(), it->value.GetStringLength()};
}

/// Per named input of a row-format request: the values so far and the
/// shape every instance must have.
struct RowInput {
  std::optional<TensorFill> fill;
  std::vector<int64_t> itemShape;
  int64_t itemSize = -1;
};

/// AddInstanceItem.
void addInstanceItem(const rapidjson::Value &item, const std::string &name,
                     const std::map<std::string, TensorInfo> &infos,
                     std::map<std::string, RowInput> &rows) {
  auto info = infos.find(name);
  if (info == infos.end())
    invalid("JSON object: does not have named input: " + name);
  RowInput &row = rows[name];
  std::vector<int64_t> shape = denseShape(item);
  TensorFill one{info->second.dtype, shape, {}, {}, 0};
  if (one.dtype != DType::String && one.dtype != DType::Invalid) {
    // One allocation for the item's values (784 floats: 8 µs of appends).
    int64_t n = 1;
    for (int64_t d : shape)
      n = d > 0 && n <= (int64_t(1) << 24) / d ? n * d : n;
    one.data.reserve(static_cast<size_t>(n) * dtype_size(one.dtype));
  }
  one.fill(item, 0);
  if (row.itemSize < 0) {
    row.itemSize = one.count;
    row.itemShape = shape;
    row.fill = TensorFill{info->second.dtype, {}, {}, {}, 0};
  } else if (row.itemSize != one.count) {
    invalid("Expecting tensor size: " + std::to_string(row.itemSize) +
            " but got: " + std::to_string(one.count));
  } else if (row.itemShape != shape) {
    invalid("Expecting shape " + shape_string(row.itemShape) +
            " but got: " + shape_string(shape));
  }
  row.fill->data += one.data;
  for (auto &s : one.strings)
    row.fill->strings.push_back(std::move(s));
  row.fill->count += one.count;
}

std::string joined(const std::set<std::string> &names) {
  std::string s;
  for (const auto &n : names)
    s += (s.empty() ? "" : ",") + n;
  return s;
}

TensorMap inputsFromInstances(const rapidjson::Value &instances,
                              const std::map<std::string, TensorInfo> &infos) {
  if (!instances[0].IsObject() && infos.size() > 1)
    invalid("instances is a plain list, but expecting list of objects as "
            "multiple input tensors required as per tensorinfo_map");
  auto isElementObject = [](const rapidjson::Value &v) {
    return v.IsObject() && !isBase64Object(v);
  };
  const bool objects = isElementObject(instances[0]);
  std::set<std::string> inputNames;
  for (const auto &kv : infos)
    inputNames.insert(kv.first);

  std::map<std::string, RowInput> rows;
  int64_t count = 0;
  for (const auto &elem : instances.GetArray()) {
    std::string at = "Failed to process element: " + std::to_string(count);
    if (objects) {
      if (!isElementObject(elem))
        invalid("Expecting object but got list at item " +
                std::to_string(count) + " of input list");
      std::set<std::string> keys;
      for (const auto &m : elem.GetObject()) {
        std::string name(m.name.GetString(), m.name.GetStringLength());
        if (!keys.insert(name).second)
          invalid(at + " of 'instances' list. JSON object: " + debug(elem) +
                  " has key " + name + " twice");
        try {
          addInstanceItem(m.value, name, infos, rows);
        } catch (const RestError &e) {
          invalid(at + " key: " + name + " of 'instances' list. Error: " +
                  code_name(e.code()) + ": " + e.what());
        }
      }
      if (keys != inputNames)
        invalid(at + " of 'instances' list. JSON object: " + debug(elem) +
                " keys must be equal to: " + joined(inputNames));
    } else {
      if (isElementObject(elem))
        invalid("Expecting value/list but got object at item " +
                std::to_string(count) + " of input list");
      try {
        addInstanceItem(elem, infos.begin()->first, infos, rows);
      } catch (const RestError &e) {
        invalid(at + " of 'instances' list. Error: " + code_name(e.code()) +
                ": " + e.what());
      }
    }
    ++count;
  }
  TensorMap inputs;
  for (auto &[name, row] : rows) {
    std::vector<int64_t> shape{count};
    shape.insert(shape.end(), row.itemShape.begin(), row.itemShape.end());
    inputs[name] = row.fill->take(std::move(shape));
  }
  return inputs;
}

TensorValue tensorOf(const rapidjson::Value &v, DType dtype) {
  TensorFill fill{dtype, denseShape(v), {}, {}, 0};
  fill.fill(v, 0);
  std::vector<int64_t> shape = fill.shape;
  return fill.take(std::move(shape));
}

TensorMap inputsFromColumns(const rapidjson::Value &v,
                            const std::map<std::string, TensorInfo> &infos) {
  TensorMap inputs;
  if (!v.IsObject() || isBase64Object(v)) {
    if (infos.size() > 1)
      invalid("inputs is a plain value/list, but expecting an object as "
              "multiple input tensors required as per tensorinfo_map");
    inputs[infos.begin()->first] = tensorOf(v, infos.begin()->second.dtype);
    return inputs;
  }
  for (const auto &[name, info] : infos) {
    auto it = v.FindMember(rapidjson::StringRef(name.data(), name.size()));
    if (it == v.MemberEnd())
      invalid("Missing named input: " + name + " in 'inputs' object.");
    inputs[name] = tensorOf(it->value, info.dtype);
  }
  return inputs;
}

// --- tf.Example from JSON (MakeExampleFromJsonObject) -----------------------

using data::proto::Feature;

const char *kindName(const Feature &f) {
  switch (f.kind_case()) {
  case Feature::kBytesList:
    return "bytes";
  case Feature::kFloatList:
    return "float";
  case Feature::kInt64List:
    return "int64";
  case Feature::KIND_NOT_SET:
    break;
  }
  return "UNKNOWN";
}

void checkKind(const Feature &f, Feature::KindCase kind,
               const std::string &name) {
  if (f.kind_case() != Feature::KIND_NOT_SET && f.kind_case() != kind)
    invalid("Unexpected element type in feature: " + name +
            " expecting type: " + kindName(f));
}

void addToFeature(const rapidjson::Value &v, const std::string &name,
                  Feature &f) {
  const std::string unexpected =
      "Feature: " + name +
      " has element with unexpected JSON type: " + json_type_name(v);
  switch (v.GetType()) {
  case rapidjson::kNullType:
  case rapidjson::kArrayType:
    invalid(unexpected);
  case rapidjson::kFalseType:
  case rapidjson::kTrueType:
    checkKind(f, Feature::kInt64List, name);
    f.mutable_int64_list()->add_value(v.GetBool() ? 1 : 0);
    break;
  case rapidjson::kObjectType:
    if (!isBase64Object(v))
      invalid(unexpected);
    checkKind(f, Feature::kBytesList, name);
    f.mutable_bytes_list()->add_value(decodeBase64Object(v));
    break;
  case rapidjson::kStringType:
    checkKind(f, Feature::kBytesList, name);
    f.mutable_bytes_list()->add_value(
        std::string(v.GetString(), v.GetStringLength()));
    break;
  case rapidjson::kNumberType:
    if (v.IsDouble()) {
      checkKind(f, Feature::kFloatList, name);
      f.mutable_float_list()->add_value(v.GetFloat());
    } else {
      checkKind(f, Feature::kInt64List, name);
      if (!v.IsInt64())
        invalid("Feature: " + name +
                " has uint64_t element. Only int64_t is supported.");
      f.mutable_int64_list()->add_value(v.GetInt64());
    }
    break;
  }
}

void addFeatures(const rapidjson::Value &v, data::proto::Example &example) {
  if (!v.IsObject())
    invalid(std::string("Example must be JSON object but got JSON ") +
            json_type_name(v));
  auto &features = *example.mutable_features()->mutable_feature();
  for (const auto &m : v.GetObject()) {
    std::string name(m.name.GetString(), m.name.GetStringLength());
    Feature f;
    if (m.value.IsArray()) {
      for (const auto &e : m.value.GetArray())
        addToFeature(e, name, f);
    } else {
      addToFeature(m.value, name, f);
    }
    features[name] = std::move(f);
  }
}

std::string serialize(const data::proto::Example &example) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  example.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// --- writing tensors ---------------------------------------------------------

void writeDecimal(JsonWriter &w, const std::string &text) {
  w.RawValue(text.data(), text.size(), rapidjson::kNumberType);
}

void writeString(JsonWriter &w, const std::string &s, bool asBytes) {
  if (asBytes || !text::is_valid_utf8(s)) {
    std::string b64 = text::base64_encode(s);
    w.StartObject();
    w.Key("b64");
    w.String(b64.data(), static_cast<rapidjson::SizeType>(b64.size()));
    w.EndObject();
  } else {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  }
}

/// AddSingleValueAndAdvance.
void writeElement(JsonWriter &w, const TensorValue &t, int64_t i,
                  bool asBytes) {
  const char *p = t.data.data();
  switch (t.dtype) {
  case DType::Float32: {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    writeDecimal(w, text::format_decimal(v));
    break;
  }
  case DType::Float64: {
    double v;
    std::memcpy(&v, p + i * 8, 8);
    writeDecimal(w, text::format_decimal(v));
    break;
  }
  case DType::Float16:
  case DType::BFloat16:
    writeDecimal(w, text::format_decimal(static_cast<float>(t.element(i))));
    break;
  case DType::Int32: {
    int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    w.Int(v);
    break;
  }
  case DType::Int64: {
    int64_t v;
    std::memcpy(&v, p + i * 8, 8);
    w.Int64(v);
    break;
  }
  case DType::Bool:
    w.Bool(p[i] != 0);
    break;
  case DType::String:
    writeString(w, t.strings[static_cast<size_t>(i)], asBytes);
    break;
  case DType::Invalid:
    fail(Code::Internal, "Failed to write JSON value for tensor type: INVALID");
  }
}

/// AddTensorValues: dims [dim, rank) of the tensor from element `offset`.
void writeValues(JsonWriter &w, const TensorValue &t, bool asBytes, size_t dim,
                 int64_t &offset) {
  if (dim >= t.shape.size()) {
    writeElement(w, t, offset++, asBytes);
    return;
  }
  w.StartArray();
  for (int64_t i = 0; i < t.shape[dim]; ++i)
    writeValues(w, t, asBytes, dim + 1, offset);
  w.EndArray();
}

bool isBytesAlias(const std::string &name, const TensorValue &t) {
  static const std::string kSuffix = "_bytes";
  return t.dtype == DType::String && name.size() >= kSuffix.size() &&
         name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) ==
             0;
}

void checkElements(const std::string &name, const TensorValue &t) {
  int64_t n = t.num_elements();
  bool ok = t.dtype == DType::String
                ? static_cast<int64_t>(t.strings.size()) == n
                : t.dtype != DType::Invalid &&
                      static_cast<int64_t>(t.data.size()) ==
                          n * static_cast<int64_t>(dtype_size(t.dtype));
  if (!ok)
    fail(Code::Internal, "output " + name + " " + t.spec().str() +
                             " does not hold its elements");
}

std::string finish(rapidjson::StringBuffer &buf) {
  return std::string(buf.GetString(), buf.GetSize());
}

} // namespace

const char *code_name(Code code) {
  switch (code) {
  case Code::Ok:
    return "OK";
  case Code::Unknown:
    return "UNKNOWN";
  case Code::InvalidArgument:
    return "INVALID_ARGUMENT";
  case Code::DeadlineExceeded:
    return "DEADLINE_EXCEEDED";
  case Code::NotFound:
    return "NOT_FOUND";
  case Code::ResourceExhausted:
    return "RESOURCE_EXHAUSTED";
  case Code::FailedPrecondition:
    return "FAILED_PRECONDITION";
  case Code::Unimplemented:
    return "UNIMPLEMENTED";
  case Code::Internal:
    return "INTERNAL";
  case Code::Unavailable:
    return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

int http_status(Code code) {
  switch (code) {
  case Code::Ok:
    return 200;
  case Code::InvalidArgument:
  case Code::FailedPrecondition:
    return 400;
  case Code::NotFound:
    return 404;
  case Code::ResourceExhausted:
    return 429;
  case Code::Unimplemented:
    return 501;
  case Code::Unavailable:
    return 503;
  case Code::DeadlineExceeded:
    return 504;
  case Code::Internal:
  case Code::Unknown:
    break;
  }
  return 500;
}

const SignatureDef &
find_signature(const std::string &name,
               const std::map<std::string, SignatureDef> &signatures) {
  const std::string &key =
      name.empty() ? std::string(kDefaultServingSignatureDefKey) : name;
  auto it = signatures.find(key);
  if (it == signatures.end())
    invalid("Serving signature name: \"" + key +
            "\" not found in signature def");
  return it->second;
}

PredictRequest
parse_predict_request(std::string_view body,
                      const std::map<std::string, SignatureDef> &signatures) {
  rapidjson::Document doc;
  parseJson(body, doc);
  PredictRequest request;
  request.signature_name = signatureName(doc);
  const SignatureDef &sig = find_signature(request.signature_name, signatures);
  if (sig.inputs.empty())
    invalid("Failed to get input map for signature: " +
            (request.signature_name.empty() ? std::string("DEFAULT")
                                            : request.signature_name));
  auto instances = doc.FindMember("instances");
  auto inputs = doc.FindMember("inputs");
  const std::string both =
      "JSON Value: " + debug(doc) +
      " Not formatted correctly expecting only one of 'inputs' or "
      "'instances' keys to exist ";
  if (instances != doc.MemberEnd()) {
    if (inputs != doc.MemberEnd())
      invalid(both);
    if (!instances->value.IsArray())
      invalid("JSON Value: " + debug(doc) +
              " Expecting 'instances' to be an list/array");
    if (instances->value.Empty())
      invalid("JSON Value: " + debug(doc) + " No values in 'instances' array");
    request.format = PredictFormat::Row;
    request.inputs = inputsFromInstances(instances->value, sig.inputs);
    return request;
  }
  if (inputs != doc.MemberEnd()) {
    request.format = PredictFormat::Columnar;
    request.inputs = inputsFromColumns(inputs->value, sig.inputs);
    return request;
  }
  invalid("Missing 'inputs' or 'instances' key");
}

ExamplesRequest parse_examples_request(std::string_view body) {
  rapidjson::Document doc;
  parseJson(body, doc);
  ExamplesRequest request;
  request.signature_name = signatureName(doc);
  data::proto::Example context;
  auto ctx = doc.FindMember("context");
  if (ctx != doc.MemberEnd())
    addFeatures(ctx->value, context);
  auto examples = doc.FindMember("examples");
  if (examples == doc.MemberEnd())
    invalid("JSON Value: " + debug(doc) +
            " When method is classify, key 'examples' is expected and was "
            "not found");
  if (!examples->value.IsArray())
    invalid("JSON Value: " + debug(doc) +
            " Expecting 'examples' value to be an list/array");
  if (examples->value.Empty())
    invalid("JSON Value: " + debug(doc) +
            " 'examples' value is an empty array");
  for (const auto &e : examples->value.GetArray()) {
    data::proto::Example example;
    addFeatures(e, example);
    if (ctx != doc.MemberEnd()) {
      // The example's own features win over the context's.
      data::proto::Example merged = context;
      for (const auto &kv : example.features().feature())
        (*merged.mutable_features()->mutable_feature())[kv.first] = kv.second;
      example = std::move(merged);
    }
    request.examples.push_back(serialize(example));
  }
  return request;
}

std::string write_predict_response(const TensorMap &outputs,
                                   PredictFormat format) {
  if (outputs.empty())
    invalid("Cannot convert empty tensor map to JSON");
  for (const auto &[name, t] : outputs)
    checkElements(name, t);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  const bool named = outputs.size() > 1;
  if (format == PredictFormat::Row) {
    int64_t batch = -1;
    for (const auto &[name, t] : outputs) {
      if (t.shape.empty())
        invalid("Tensor name: " + name + " has no shape information ");
      if (batch >= 0 && batch != t.shape[0])
        invalid("Tensor name: " + name +
                " has inconsistent batch size: " + std::to_string(t.shape[0]) +
                " expecting: " + std::to_string(batch));
      batch = t.shape[0];
    }
    std::map<std::string, int64_t> offsets;
    w.Key("predictions");
    w.StartArray();
    for (int64_t item = 0; item < batch; ++item) {
      if (named)
        w.StartObject();
      for (const auto &[name, t] : outputs) {
        if (named)
          w.Key(name.data(), static_cast<rapidjson::SizeType>(name.size()));
        writeValues(w, t, isBytesAlias(name, t), 1, offsets[name]);
      }
      if (named)
        w.EndObject();
    }
    w.EndArray();
  } else {
    w.Key("outputs");
    if (named)
      w.StartObject();
    for (const auto &[name, t] : outputs) {
      if (named)
        w.Key(name.data(), static_cast<rapidjson::SizeType>(name.size()));
      int64_t offset = 0;
      writeValues(w, t, isBytesAlias(name, t), 0, offset);
    }
    if (named)
      w.EndObject();
  }
  w.EndObject();
  return finish(buf);
}

std::vector<std::vector<ClassScore>> classify_results(const TensorMap &outputs,
                                                      int64_t batch_size) {
  auto classesIt = outputs.find("classes");
  auto scoresIt = outputs.find("scores");
  const TensorValue *classes =
      classesIt == outputs.end() ? nullptr : &classesIt->second;
  const TensorValue *scores =
      scoresIt == outputs.end() ? nullptr : &scoresIt->second;
  if (!classes && !scores)
    fail(Code::FailedPrecondition,
         "Classification signature has neither a 'classes' nor a 'scores' "
         "output");
  int64_t numClasses = -1;
  for (auto [alias, t] :
       {std::pair{"classes", classes}, std::pair{"scores", scores}}) {
    if (!t)
      continue;
    checkElements(alias, *t);
    if (t->shape.size() != 2 || t->shape[0] != batch_size)
      fail(Code::InvalidArgument,
           std::string("Expected Tensor shape: [batch_size num_classes] of ") +
               alias + " with batch_size " + std::to_string(batch_size) +
               " but got " + t->spec().str());
    if (numClasses >= 0 && numClasses != t->shape[1])
      fail(Code::InvalidArgument,
           "Tensors class and score should match in shape, but had " +
               classes->spec().str() + " and " + scores->spec().str());
    numClasses = t->shape[1];
  }
  if (classes && classes->dtype != DType::String)
    fail(Code::InvalidArgument,
         std::string("Expected classes Tensor of DT_STRING. Got: ") +
             tf_dtype_enum_name(classes->dtype));
  if (scores && !is_floating(scores->dtype))
    fail(Code::InvalidArgument,
         std::string("Expected scores Tensor of DT_FLOAT. Got: ") +
             tf_dtype_enum_name(scores->dtype));
  std::vector<std::vector<ClassScore>> results(static_cast<size_t>(batch_size));
  for (int64_t i = 0; i < batch_size; ++i) {
    for (int64_t c = 0; c < numClasses; ++c) {
      int64_t k = i * numClasses + c;
      ClassScore cs;
      if (classes)
        cs.label = classes->strings[static_cast<size_t>(k)];
      cs.score = static_cast<float>(scores ? scores->element(k) : 0.0);
      results[static_cast<size_t>(i)].push_back(std::move(cs));
    }
  }
  return results;
}

std::vector<float> regress_results(const TensorMap &outputs,
                                   int64_t batch_size) {
  auto it = outputs.find("outputs");
  if (it == outputs.end())
    fail(Code::FailedPrecondition,
         "No output Tensor 'outputs' in the regression signature");
  const TensorValue &t = it->second;
  checkElements("outputs", t);
  bool shapeOk =
      !t.shape.empty() && t.shape[0] == batch_size &&
      (t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[1] == 1));
  if (!shapeOk)
    fail(Code::InvalidArgument,
         "Expected output Tensor shape to be either [batch_size] or "
         "[batch_size, 1] with batch_size " +
             std::to_string(batch_size) + " but got " + t.spec().str());
  if (!is_floating(t.dtype))
    fail(Code::InvalidArgument,
         std::string("Expected output Tensor of DT_FLOAT. Got: ") +
             tf_dtype_enum_name(t.dtype));
  std::vector<float> values;
  for (int64_t i = 0; i < batch_size; ++i)
    values.push_back(static_cast<float>(t.element(i)));
  return values;
}

std::string write_classify_response(const TensorMap &outputs,
                                    int64_t batch_size) {
  std::vector<std::vector<ClassScore>> results =
      classify_results(outputs, batch_size);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("results");
  w.StartArray();
  for (const auto &classes : results) {
    w.StartArray();
    for (const ClassScore &c : classes) {
      w.StartArray();
      writeString(w, c.label, false);
      writeDecimal(w, text::format_decimal(c.score));
      w.EndArray();
    }
    w.EndArray();
  }
  w.EndArray();
  w.EndObject();
  return finish(buf);
}

std::string write_regress_response(const TensorMap &outputs,
                                   int64_t batch_size) {
  std::vector<float> values = regress_results(outputs, batch_size);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("results");
  w.StartArray();
  for (float v : values)
    writeDecimal(w, text::format_decimal(v));
  w.EndArray();
  w.EndObject();
  return finish(buf);
}

std::string write_error(std::string_view message) {
  // One line of valid UTF-8 whatever the message echoes of a request:
  // control characters become spaces, bytes that are not UTF-8 '?'.
  std::string text;
  for (size_t i = 0; i < message.size();) {
    unsigned char c = static_cast<unsigned char>(message[i]);
    if (c < 0x80) {
      text += c < 0x20 ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    std::string_view ch = message.substr(i, len);
    if (ch.size() == len && text::is_valid_utf8(ch)) {
      text += ch;
      i += len;
    } else {
      text += '?';
      ++i;
    }
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("error");
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  w.EndObject();
  return finish(buf);
}

std::string write_model_status(const std::vector<VersionStatus> &versions) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("model_version_status");
  w.StartArray();
  for (const auto &v : versions) {
    w.StartObject();
    w.Key("version");
    w.String(std::to_string(v.version).c_str());
    w.Key("state");
    w.String(v.state.c_str());
    w.Key("status");
    w.StartObject();
    w.Key("error_code");
    w.String(code_name(v.error_code));
    w.Key("error_message");
    w.String(v.error_message.c_str());
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return finish(buf);
}

namespace {
void writeTensorInfos(JsonWriter &w,
                      const std::map<std::string, TensorInfo> &infos) {
  w.StartObject();
  for (const auto &[alias, info] : infos) {
    w.Key(alias.c_str());
    w.StartObject();
    w.Key("dtype");
    w.String(tf_dtype_enum_name(info.dtype));
    w.Key("tensor_shape");
    w.StartObject();
    w.Key("dim");
    w.StartArray();
    for (int64_t d : info.shape) {
      w.StartObject();
      w.Key("size");
      w.String(std::to_string(d).c_str());
      w.Key("name");
      w.String("");
      w.EndObject();
    }
    w.EndArray();
    w.Key("unknown_rank");
    w.Bool(false);
    w.EndObject();
    w.Key("name");
    w.String(info.name.c_str());
    w.EndObject();
  }
  w.EndObject();
}
} // namespace

std::string
write_model_metadata(const std::string &model_name, int64_t version,
                     const std::map<std::string, SignatureDef> &signatures) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("model_spec");
  w.StartObject();
  w.Key("name");
  w.String(model_name.c_str());
  w.Key("signature_name");
  w.String("");
  w.Key("version");
  w.String(std::to_string(version).c_str());
  w.EndObject();
  w.Key("metadata");
  w.StartObject();
  w.Key("signature_def");
  w.StartObject();
  w.Key("signature_def");
  w.StartObject();
  for (const auto &[name, sig] : signatures) {
    w.Key(name.c_str());
    w.StartObject();
    w.Key("inputs");
    writeTensorInfos(w, sig.inputs);
    w.Key("outputs");
    writeTensorInfos(w, sig.outputs);
    w.Key("method_name");
    w.String(sig.method_name.c_str());
    w.Key("defaults");
    w.StartObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return finish(buf);
}

const char *tf_dtype_enum_name(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "DT_FLOAT";
  case DType::Float64:
    return "DT_DOUBLE";
  case DType::Int32:
    return "DT_INT32";
  case DType::Int64:
    return "DT_INT64";
  case DType::Bool:
    return "DT_BOOL";
  case DType::Float16:
    return "DT_HALF";
  case DType::BFloat16:
    return "DT_BFLOAT16";
  case DType::String:
    return "DT_STRING";
  case DType::Invalid:
    break;
  }
  return "DT_INVALID";
}

} // namespace serving
} // namespace estc
