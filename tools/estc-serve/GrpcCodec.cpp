//===- GrpcCodec.cpp - TF Serving's gRPC API: protos <-> tensors ---------===//
//
// TensorProto decoding follows TF's Tensor::FromProto
// (tensorflow/core/framework/tensor.cc), the checks of a PredictRequest TF
// Serving's predict_util.cc, with their messages where they have one.
//
//===----------------------------------------------------------------------===//

#include "tools/estc-serve/GrpcCodec.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace estc {
namespace serving {

using detail::invalid;

namespace {

std::string joined(const std::set<std::string> &names) {
  std::string s;
  for (const auto &n : names)
    s += (s.empty() ? "" : ",") + n;
  return s;
}

std::string dtypeName(int tf_dtype) {
  const std::string &name = ::tensorflow::DataType_Name(tf_dtype);
  return name.empty() ? "DataType " + std::to_string(tf_dtype) : name;
}

/// The typed lists of a TensorProto that hold values, by field name.
std::vector<std::pair<const char *, int>>
listSizes(const ::tensorflow::TensorProto &p) {
  std::vector<std::pair<const char *, int>> sizes = {
      {"half_val", p.half_val_size()},
      {"float_val", p.float_val_size()},
      {"double_val", p.double_val_size()},
      {"int_val", p.int_val_size()},
      {"string_val", p.string_val_size()},
      {"scomplex_val", p.scomplex_val_size()},
      {"int64_val", p.int64_val_size()},
      {"bool_val", p.bool_val_size()},
      {"dcomplex_val", p.dcomplex_val_size()},
      {"uint32_val", p.uint32_val_size()},
      {"uint64_val", p.uint64_val_size()}};
  std::vector<std::pair<const char *, int>> set;
  for (const auto &s : sizes)
    if (s.second > 0)
      set.push_back(s);
  return set;
}

const char *listOf(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "float_val";
  case DType::Float64:
    return "double_val";
  case DType::Int32:
    return "int_val";
  case DType::Int64:
    return "int64_val";
  case DType::Bool:
    return "bool_val";
  case DType::Float16:
  case DType::BFloat16:
    return "half_val";
  case DType::String:
    return "string_val";
  case DType::Invalid:
    break;
  }
  return "";
}

/// Fills n elements of T from a typed list of `in` values: none all
/// zeros, fewer than n padded with the last (TF's FromProto).
template <typename T, typename List>
void fillFrom(const List &list, int64_t n, std::string &data) {
  data.resize(static_cast<size_t>(n) * sizeof(T));
  auto *out = reinterpret_cast<T *>(data.data());
  const int64_t in = list.size();
  for (int64_t i = 0; i < n; ++i) {
    T v = in == 0
              ? T()
              : static_cast<T>(list.Get(static_cast<int>(std::min(i, in - 1))));
    out[i] = v;
  }
}

} // namespace

std::optional<DType> dtype_from_proto(int tf_dtype) {
  switch (tf_dtype) {
  case ::tensorflow::DT_FLOAT:
    return DType::Float32;
  case ::tensorflow::DT_DOUBLE:
    return DType::Float64;
  case ::tensorflow::DT_INT32:
    return DType::Int32;
  case ::tensorflow::DT_INT64:
    return DType::Int64;
  case ::tensorflow::DT_BOOL:
    return DType::Bool;
  case ::tensorflow::DT_HALF:
    return DType::Float16;
  case ::tensorflow::DT_BFLOAT16:
    return DType::BFloat16;
  case ::tensorflow::DT_STRING:
    return DType::String;
  default:
    return std::nullopt;
  }
}

::tensorflow::DataType dtype_to_proto(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return ::tensorflow::DT_FLOAT;
  case DType::Float64:
    return ::tensorflow::DT_DOUBLE;
  case DType::Int32:
    return ::tensorflow::DT_INT32;
  case DType::Int64:
    return ::tensorflow::DT_INT64;
  case DType::Bool:
    return ::tensorflow::DT_BOOL;
  case DType::Float16:
    return ::tensorflow::DT_HALF;
  case DType::BFloat16:
    return ::tensorflow::DT_BFLOAT16;
  case DType::String:
    return ::tensorflow::DT_STRING;
  case DType::Invalid:
    break;
  }
  return ::tensorflow::DT_INVALID;
}

TensorValue tensor_from_proto(const ::tensorflow::TensorProto &proto,
                              const std::string &name, int64_t max_bytes) {
  const std::string at = "Input '" + name + "': ";
  std::optional<DType> dtype = dtype_from_proto(proto.dtype());
  if (!dtype)
    invalid(at + dtypeName(proto.dtype()) +
            " is not a dtype estc-serve takes (DT_FLOAT, DT_DOUBLE, "
            "DT_INT32, DT_INT64, DT_BOOL, DT_HALF, DT_BFLOAT16, DT_STRING)");
  const ::tensorflow::TensorShapeProto &shapeProto = proto.tensor_shape();
  if (shapeProto.unknown_rank())
    invalid(at + "the tensor_shape has an unknown rank");
  TensorValue t;
  t.dtype = *dtype;
  const int64_t elemBytes =
      t.dtype == DType::String ? 32 : static_cast<int64_t>(dtype_size(t.dtype));
  int64_t n = 1;
  for (const auto &dim : shapeProto.dim()) {
    if (dim.size() < 0)
      invalid(at + "dimension " + std::to_string(t.shape.size()) + " is " +
              std::to_string(dim.size()) + " (a tensor's size is known)");
    t.shape.push_back(dim.size());
    if (dim.size() > 0 && n > max_bytes / elemBytes / dim.size())
      invalid(at + "shape " + shape_string(t.shape) +
              "... is larger than estc-serve decodes (" +
              std::to_string(max_bytes) + " bytes)");
    n *= dim.size();
  }
  if (n * elemBytes > max_bytes)
    invalid(at + "shape " + shape_string(t.shape) +
            " is larger than estc-serve decodes (" + std::to_string(max_bytes) +
            " bytes)");
  const char *own = listOf(t.dtype);
  std::vector<std::pair<const char *, int>> lists = listSizes(proto);
  for (const auto &[field, count] : lists)
    if (std::string(field) != own)
      invalid(at + "dtype is " + dtypeName(proto.dtype()) + " but " +
              std::to_string(count) + " values are in " + field);
  const int own_count = lists.empty() ? 0 : lists.front().second;
  const std::string spec =
      std::string(tf_dtype_enum_name(t.dtype)) + " " + shape_string(t.shape);
  if (!proto.tensor_content().empty()) {
    if (t.dtype == DType::String)
      invalid(at + "a DT_STRING tensor's elements are in string_val, not "
                   "tensor_content");
    if (own_count > 0)
      invalid(at + "both tensor_content and " + own + " hold values");
    const int64_t want = n * elemBytes;
    if (static_cast<int64_t>(proto.tensor_content().size()) != want)
      invalid(at + "tensor_content has " +
              std::to_string(proto.tensor_content().size()) + " bytes, a " +
              spec + " tensor " + std::to_string(want));
    t.data = proto.tensor_content();
    return t;
  }
  if (own_count > n)
    invalid(at + std::to_string(own_count) + " values in " + own + " for " +
            spec + " (" + std::to_string(n) + " elements)");
  switch (t.dtype) {
  case DType::Float32:
    fillFrom<float>(proto.float_val(), n, t.data);
    break;
  case DType::Float64:
    fillFrom<double>(proto.double_val(), n, t.data);
    break;
  case DType::Int32:
    fillFrom<int32_t>(proto.int_val(), n, t.data);
    break;
  case DType::Int64:
    fillFrom<int64_t>(proto.int64_val(), n, t.data);
    break;
  case DType::Bool:
    fillFrom<uint8_t>(proto.bool_val(), n, t.data);
    break;
  case DType::Float16:
  case DType::BFloat16:
    fillFrom<uint16_t>(proto.half_val(), n, t.data);
    break;
  case DType::String: {
    const auto &list = proto.string_val();
    const int64_t in = list.size();
    t.strings.reserve(static_cast<size_t>(n));
    int64_t bytes = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::string &s =
          in == 0 ? std::string()
                  : list.Get(static_cast<int>(std::min(i, in - 1)));
      bytes += static_cast<int64_t>(s.size()) + elemBytes;
      if (bytes > max_bytes)
        invalid(at + spec +
                " of these strings is larger than estc-serve "
                "decodes (" +
                std::to_string(max_bytes) + " bytes)");
      t.strings.push_back(s);
    }
    break;
  }
  case DType::Invalid:
    break;
  }
  return t;
}

void tensor_to_proto(const TensorValue &t, ::tensorflow::TensorProto *proto) {
  proto->Clear();
  proto->set_dtype(dtype_to_proto(t.dtype));
  for (int64_t d : t.shape)
    proto->mutable_tensor_shape()->add_dim()->set_size(d);
  const int64_t n = t.num_elements();
  auto get = [&](auto zero, int64_t i) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, t.data.data() + static_cast<size_t>(i) * sizeof(T),
                sizeof(T));
    return v;
  };
  const bool holds =
      t.dtype == DType::String
          ? static_cast<int64_t>(t.strings.size()) == n
          : t.dtype != DType::Invalid &&
                static_cast<int64_t>(t.data.size()) ==
                    n * static_cast<int64_t>(dtype_size(t.dtype));
  if (!holds)
    throw RestError(Code::Internal,
                    "output " + t.spec().str() + " does not hold its elements");
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
    case DType::Float32:
      proto->add_float_val(get(float(), i));
      break;
    case DType::Float64:
      proto->add_double_val(get(double(), i));
      break;
    case DType::Int32:
      proto->add_int_val(get(int32_t(), i));
      break;
    case DType::Int64:
      proto->add_int64_val(get(int64_t(), i));
      break;
    case DType::Bool:
      proto->add_bool_val(get(uint8_t(), i) != 0);
      break;
    case DType::Float16:
    case DType::BFloat16:
      proto->add_half_val(get(uint16_t(), i));
      break;
    case DType::String:
      proto->add_string_val(t.strings[static_cast<size_t>(i)]);
      break;
    case DType::Invalid:
      break;
    }
  }
}

ModelSpecRef model_spec_of(bool has_spec, const tfs::ModelSpec &spec) {
  if (!has_spec)
    invalid("Missing ModelSpec");
  ModelSpecRef ref;
  ref.name = spec.name();
  if (spec.has_version())
    ref.version = spec.version().value();
  else if (spec.version_choice_case() == tfs::ModelSpec::kVersionLabel)
    ref.label = spec.version_label();
  ref.signature_name = spec.signature_name();
  return ref;
}

void set_model_spec(tfs::ModelSpec *spec, const std::string &model,
                    int64_t version, const std::string &signature_name) {
  spec->set_name(model);
  spec->mutable_version()->set_value(version);
  spec->set_signature_name(signature_name);
}

GrpcPredictRequest
decode_predict_request(const tfs::PredictRequest &request,
                       const std::map<std::string, SignatureDef> &signatures,
                       int64_t max_tensor_bytes) {
  GrpcPredictRequest out;
  out.spec = model_spec_of(request.has_model_spec(), request.model_spec());
  const std::string key = out.spec.signature_name.empty()
                              ? std::string(kDefaultServingSignatureDefKey)
                              : out.spec.signature_name;
  auto it = signatures.find(key);
  if (it == signatures.end())
    throw RestError(Code::FailedPrecondition,
                    "Serving signature key \"" + key + "\" not found.");
  const SignatureDef &sig = it->second;
  std::set<std::string> sent, expected;
  for (const auto &kv : request.inputs())
    sent.insert(kv.first);
  for (const auto &kv : sig.inputs)
    expected.insert(kv.first);
  if (sent != expected) {
    std::set<std::string> extra, missing;
    for (const auto &s : sent)
      if (!expected.count(s))
        extra.insert(s);
    for (const auto &e : expected)
      if (!sent.count(e))
        missing.insert(e);
    invalid(
        "input size does not match signature: " + std::to_string(sent.size()) +
        "!=" + std::to_string(expected.size()) + " len({" + joined(sent) +
        "}) != len({" + joined(expected) + "}). Sent extra: {" + joined(extra) +
        "}. Missing but required: {" + joined(missing) + "}.");
  }
  for (const auto &[alias, info] : sig.inputs) {
    const ::tensorflow::TensorProto &proto = request.inputs().at(alias);
    std::optional<DType> dtype = dtype_from_proto(proto.dtype());
    if (dtype && *dtype != info.dtype)
      invalid("Input '" + alias + "' is " + dtypeName(proto.dtype()) +
              " but signature '" + key + "' takes " +
              tf_dtype_enum_name(info.dtype));
    TensorValue t = tensor_from_proto(proto, alias, max_tensor_bytes);
    bool fits = info.shape.empty() || info.shape.size() == t.shape.size();
    for (size_t d = 0; fits && d < info.shape.size(); ++d)
      fits = info.shape[d] < 0 || info.shape[d] == t.shape[d];
    if (!fits)
      invalid("Input '" + alias + "' has shape " + shape_string(t.shape) +
              " but signature '" + key + "' takes " + shape_string(info.shape) +
              " (-1: any size)");
    out.inputs[alias] = std::move(t);
  }
  std::set<std::string> filtered;
  for (const std::string &alias : request.output_filter()) {
    if (!sig.outputs.count(alias)) {
      std::set<std::string> outputs;
      for (const auto &kv : sig.outputs)
        outputs.insert(kv.first);
      invalid("output tensor alias not found in signature: " + alias +
              " Outputs expected to be in the set {" + joined(outputs) + "}.");
    }
    if (!filtered.insert(alias).second)
      invalid("duplicate output tensor alias: " + alias);
    out.output_filter.push_back(alias);
  }
  return out;
}

GrpcPredictRequest decode_predict_request_bytes(
    std::string_view bytes,
    const std::map<std::string, SignatureDef> &signatures,
    int64_t max_tensor_bytes) {
  tfs::PredictRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    invalid("the bytes are not a PredictRequest (" +
            std::to_string(bytes.size()) + " bytes)");
  return decode_predict_request(request, signatures, max_tensor_bytes);
}

void write_predict_outputs(const TensorMap &outputs,
                           const std::vector<std::string> &output_filter,
                           tfs::PredictResponse *response) {
  auto &map = *response->mutable_outputs();
  if (output_filter.empty()) {
    for (const auto &[alias, t] : outputs)
      tensor_to_proto(t, &map[alias]);
    return;
  }
  for (const std::string &alias : output_filter) {
    auto it = outputs.find(alias);
    if (it == outputs.end())
      throw RestError(Code::Internal,
                      "the run returned no output '" + alias + "'");
    tensor_to_proto(it->second, &map[alias]);
  }
}

std::vector<std::string> input_examples(bool has_input,
                                        const tfs::Input &input) {
  std::vector<std::string> records;
  if (!has_input)
    invalid("Input is empty.");
  switch (input.kind_case()) {
  case tfs::Input::kExampleList:
    for (const auto &e : input.example_list().examples())
      records.push_back(e.SerializeAsString());
    break;
  case tfs::Input::kExampleListWithContext: {
    const auto &list = input.example_list_with_context();
    for (const auto &e : list.examples()) {
      ::tensorflow::Example merged = list.context();
      for (const auto &kv : e.features().feature())
        (*merged.mutable_features()->mutable_feature())[kv.first] = kv.second;
      records.push_back(merged.SerializeAsString());
    }
    break;
  }
  case tfs::Input::KIND_NOT_SET:
    break;
  }
  if (records.empty())
    invalid("Input is empty.");
  return records;
}

void write_classification_result(
    const std::vector<std::vector<ClassScore>> &results,
    tfs::ClassificationResult *result) {
  for (const auto &classes : results) {
    tfs::Classifications *c = result->add_classifications();
    for (const ClassScore &cs : classes) {
      tfs::Class *cls = c->add_classes();
      cls->set_label(cs.label);
      cls->set_score(cs.score);
    }
  }
}

void write_regression_result(const std::vector<float> &values,
                             tfs::RegressionResult *result) {
  for (float v : values)
    result->add_regressions()->set_value(v);
}

namespace {
void writeTensorInfos(
    const std::map<std::string, TensorInfo> &infos,
    google::protobuf::Map<std::string, ::tensorflow::TensorInfo> *out) {
  for (const auto &[alias, info] : infos) {
    ::tensorflow::TensorInfo &p = (*out)[alias];
    p.set_name(info.name);
    p.set_dtype(dtype_to_proto(info.dtype));
    auto *shape = p.mutable_tensor_shape();
    for (int64_t d : info.shape)
      shape->add_dim()->set_size(d);
  }
}
} // namespace

void write_signature_def_map(
    const std::map<std::string, SignatureDef> &signatures,
    tfs::SignatureDefMap *map) {
  for (const auto &[name, sig] : signatures) {
    ::tensorflow::SignatureDef &p = (*map->mutable_signature_def())[name];
    p.set_method_name(sig.method_name);
    writeTensorInfos(sig.inputs, p.mutable_inputs());
    writeTensorInfos(sig.outputs, p.mutable_outputs());
  }
}

void write_model_status(const std::vector<VersionStatus> &versions,
                        tfs::GetModelStatusResponse *response) {
  for (const VersionStatus &v : versions) {
    tfs::ModelVersionStatus *s = response->add_model_version_status();
    s->set_version(v.version);
    tfs::ModelVersionStatus::State state = tfs::ModelVersionStatus::UNKNOWN;
    tfs::ModelVersionStatus::State_Parse(v.state, &state);
    s->set_state(state);
    s->mutable_status()->set_error_code(static_cast<int>(v.error_code));
    s->mutable_status()->set_error_message(v.error_message);
  }
}

} // namespace serving
} // namespace estc
