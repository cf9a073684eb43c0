//===- GrpcCodec.h - TF Serving's gRPC API: protos <-> tensors -----------===//
//
// The network-free half of estc-serve's gRPC API (docs/serving.md), as
// RestCodec.h is the REST API's: TF's TensorProto to and from TensorValue,
// a PredictRequest checked against the model's signatures, the tf.Examples
// of an Input as serialized records, ClassificationResult,
// RegressionResult, SignatureDefMap and GetModelStatusResponse from what
// the REST API's functions compute. The messages are tf_core.proto's and
// tf_serving_apis.proto's (TF's and TF Serving's names and numbers).
//
// TensorProto decoding is TF's Tensor::FromProto: tensor_content
// (little-endian, row-major) or the dtype's typed list (float_val,
// double_val, int_val, int64_val, bool_val, half_val, string_val), an
// empty list all zeros, a shorter list padded with its last value. Where
// estc is stricter it says so: more values than the shape holds, values in
// another dtype's list, or both tensor_content and a list are
// InvalidArgument (TF ignores the extra values), and so are dtypes estc has
// no DType for (DT_UINT8, DT_COMPLEX64, ...). Outputs are written with the
// typed lists, as TF Serving writes them (Tensor::AsProtoField).
//
// Errors are RestError (RestCodec.h): a Code and one line naming the input
// at fault.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_GRPCCODEC_H
#define ESTC_TOOLS_ESTC_SERVE_GRPCCODEC_H

#include "tools/estc-serve/RestCodec.h"
#include "tools/estc-serve/tf_serving_apis.pb.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace serving {

namespace tfs = ::tensorflow::serving;

/// The DType of a TF DataType; nullopt for those estc has none for.
std::optional<DType> dtype_from_proto(int tf_dtype);
/// TF's DataType of a DType.
::tensorflow::DataType dtype_to_proto(DType dtype);

/// The largest tensor a request may decode to (elements times their size;
/// a string element counts its bytes and 32): a TensorProto of one value
/// and a large shape expands to the whole shape.
constexpr int64_t kMaxDecodedTensorBytes = int64_t(1) << 30;

/// A TensorProto as a TensorValue; `name` (the input alias) names it in
/// errors. RestError InvalidArgument for a dtype estc has no DType for, a
/// negative or unknown dimension, element counts that disagree, a tensor
/// over `max_bytes`.
TensorValue tensor_from_proto(const ::tensorflow::TensorProto &proto,
                              const std::string &name,
                              int64_t max_bytes = kMaxDecodedTensorBytes);
/// A TensorValue as a TensorProto with the typed lists.
void tensor_to_proto(const TensorValue &tensor,
                     ::tensorflow::TensorProto *proto);

/// What a ModelSpec names.
struct ModelSpecRef {
  std::string name;
  std::optional<int64_t> version;
  std::optional<std::string> label;
  /// As given: empty means serving_default.
  std::string signature_name;
};
/// RestError InvalidArgument "Missing ModelSpec" when `has_spec` is false
/// (TF Serving's message).
ModelSpecRef model_spec_of(bool has_spec, const tfs::ModelSpec &spec);
/// The ModelSpec of an answer: the model, the version served,
/// `signature_name` (TF Serving writes the signature it ran).
void set_model_spec(tfs::ModelSpec *spec, const std::string &model,
                    int64_t version, const std::string &signature_name);

/// A PredictRequest's inputs checked against its signature.
struct GrpcPredictRequest {
  ModelSpecRef spec;
  TensorMap inputs;
  std::vector<std::string> output_filter;
};
/// The request's signature (FailedPrecondition "Serving signature key
/// \"k\" not found." as TF Serving) and inputs: exactly the signature's
/// aliases (InvalidArgument naming those sent extra and those missing),
/// each of its input's dtype and, where the signature knows it, rank and
/// dimensions (InvalidArgument naming the input); output_filter aliases
/// of its outputs, each once (InvalidArgument).
GrpcPredictRequest
decode_predict_request(const tfs::PredictRequest &request,
                       const std::map<std::string, SignatureDef> &signatures,
                       int64_t max_tensor_bytes = kMaxDecodedTensorBytes);
/// The serialized PredictRequest `bytes` (InvalidArgument when they do not
/// parse), then decode_predict_request: the fuzz target's entry point.
GrpcPredictRequest decode_predict_request_bytes(
    std::string_view bytes,
    const std::map<std::string, SignatureDef> &signatures,
    int64_t max_tensor_bytes = kMaxDecodedTensorBytes);
/// The outputs a PredictRequest returns: all, or those of output_filter.
void write_predict_outputs(const TensorMap &outputs,
                           const std::vector<std::string> &output_filter,
                           tfs::PredictResponse *response);

/// An Input's tf.Examples as serialized records, each with the context's
/// features (an example's own feature of the same name wins, as with TF
/// Serving's ExampleListWithContext and the REST API's "context").
/// InvalidArgument "Input is empty." without examples.
std::vector<std::string> input_examples(bool has_input,
                                        const tfs::Input &input);

void write_classification_result(
    const std::vector<std::vector<ClassScore>> &results,
    tfs::ClassificationResult *result);
void write_regression_result(const std::vector<float> &values,
                             tfs::RegressionResult *result);

/// TF's SignatureDefMap of a model's signatures (GetModelMetadata's
/// "signature_def").
void write_signature_def_map(
    const std::map<std::string, SignatureDef> &signatures,
    tfs::SignatureDefMap *map);

/// GetModelStatus's answer from ModelManager::status.
void write_model_status(const std::vector<VersionStatus> &versions,
                        tfs::GetModelStatusResponse *response);

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_GRPCCODEC_H
