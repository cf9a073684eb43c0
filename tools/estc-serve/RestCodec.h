//===- RestCodec.h - TF Serving's REST API: JSON <-> tensors -------------===//
//
// The bodies of TF Serving's REST API (tensorflow_serving/g3doc/api_rest.md)
// without the routes (RestApi.h) or a socket: :predict requests' row
// ("instances") or columnar ("inputs") tensors with {"b64": ...} bytes, and
// their responses; :classify and :regress requests' "examples" (JSON
// tf.Example) and "context" as serialized tf.Example records, and their
// results; the model status and metadata JSON; the error body.
//
// Formats, messages and status codes are TF Serving's
// (tensorflow_serving/util/json_tensor.cc, model_servers/http_rest_api_*):
// JSON numbers convert to the signature input's dtype exactly as TF Serving
// converts them; float outputs are written with the fewest digits that
// round-trip and a ".0" on whole numbers (text::format_decimal); a
// request's error is {"error": "<one line>"} with the HTTP status of its
// code. Where estc differs it says so here and in docs/serving.md: string
// outputs that are not valid UTF-8 are written as {"b64": ...} (TF Serving
// does that only for aliases ending in "_bytes" and otherwise writes invalid
// JSON), error text is one line (TF Serving's pretty-printed JSON spans
// lines), a JSON list nested deeper than a tensor's 254 dimensions is
// refused (TF Serving recurses into it).
//
// Errors are RestError: a Code (TF's status codes, which decide the HTTP
// status) and one line.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_RESTCODEC_H
#define ESTC_TOOLS_ESTC_SERVE_RESTCODEC_H

#include "lib/Support/Printable.h"
#include "runtime/serving/SavedModel.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace serving {

/// TF's status codes that the server returns (absl::StatusCode numbers).
enum class Code {
  Ok = 0,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
};

/// "OK", "INVALID_ARGUMENT", ... (absl::StatusCodeToString).
const char *code_name(Code code);
/// TF Serving's HTTP status of a code (model_servers/http_server.cc):
/// InvalidArgument and FailedPrecondition 400, NotFound 404,
/// ResourceExhausted 429, Unimplemented 501, Internal and Unknown 500,
/// Unavailable 503,
/// DeadlineExceeded 504.
int http_status(Code code);

/// A request that cannot be served: the code and one line.
class RestError : public std::runtime_error {
public:
  /// Messages quote the request (a key, a model or signature name): their
  /// control characters are escaped, so the error stays one line.
  RestError(Code code, const std::string &message)
      : std::runtime_error(escape_control_chars(message)), code_(code) {}
  Code code() const { return code_; }

private:
  Code code_;
};

namespace detail {
/// Throws RestError(code, message).
[[noreturn]] inline void fail(Code code, const std::string &message) {
  throw RestError(code, message);
}
/// Throws RestError(InvalidArgument, message).
[[noreturn]] inline void invalid(const std::string &message) {
  throw RestError(Code::InvalidArgument, message);
}
} // namespace detail

/// The predict request's format, which decides the response's.
enum class PredictFormat { Row, Columnar };

struct PredictRequest {
  /// As given: empty means serving_default.
  std::string signature_name;
  PredictFormat format = PredictFormat::Row;
  /// By signature input alias, each of the input's dtype; row format: first
  /// dimension the number of instances.
  TensorMap inputs;
};

/// Parses a :predict body against the model's signatures (the one named by
/// "signature_name", serving_default without it). Throws RestError.
PredictRequest
parse_predict_request(std::string_view body,
                      const std::map<std::string, SignatureDef> &signatures);

/// A :classify or :regress body: its examples as serialized tf.Example
/// records (each with the context's features; an example's own feature of
/// the same name wins, as TF Serving's ExampleListWithContext).
struct ExamplesRequest {
  std::string signature_name;
  std::vector<std::string> examples;
};

/// Throws RestError.
ExamplesRequest parse_examples_request(std::string_view body);

/// The signature `name` names (serving_default when empty); InvalidArgument
/// "Serving signature name: ... not found in signature def" otherwise.
const SignatureDef &
find_signature(const std::string &name,
               const std::map<std::string, SignatureDef> &signatures);

/// One class of one example: TF Serving's Class (label, score).
struct ClassScore {
  std::string label;
  float score = 0;
};
/// A classify signature's outputs as TF Serving's ClassificationResult, one
/// list of classes per example, from "classes" (STRING [n, k]) and/or
/// "scores" (float [n, k]); labels are "" without classes, scores 0 without
/// scores. RestError: FailedPrecondition without either output,
/// InvalidArgument for a wrong shape or dtype (TF Serving's messages). The
/// REST and gRPC answers both come from it.
std::vector<std::vector<ClassScore>> classify_results(const TensorMap &outputs,
                                                      int64_t batch_size);
/// A regress signature's "outputs" ([n] or [n, 1], floating) as n values;
/// RestError as classify_results.
std::vector<float> regress_results(const TensorMap &outputs,
                                   int64_t batch_size);

/// {"predictions": [...]} (row; one output unnamed, several an object per
/// row) or {"outputs": ...} (columnar; one output unnamed). Outputs must
/// share their first dimension in row format (InvalidArgument).
std::string write_predict_response(const TensorMap &outputs,
                                   PredictFormat format);
/// {"results": [[["label", score], ...], ...]} from a classify signature's
/// "classes" (STRING [n, k]) and/or "scores" (float [n, k]) outputs; labels
/// are "" without classes (TF Serving's ClassificationResult to JSON).
std::string write_classify_response(const TensorMap &outputs,
                                    int64_t batch_size);
/// {"results": [v, ...]} from a regress signature's "outputs" ([n] or
/// [n, 1]).
std::string write_regress_response(const TensorMap &outputs,
                                   int64_t batch_size);
/// {"error": "..."}.
std::string write_error(std::string_view message);

/// One served or failed version for GET /v1/models/NAME.
struct VersionStatus {
  int64_t version = 0;
  /// "AVAILABLE", "LOADING", "END", ... (ModelVersionStatus.State).
  std::string state;
  Code error_code = Code::Ok;
  std::string error_message;
};
/// {"model_version_status": [{"version": "3", "state": ..., "status":
/// {"error_code": "OK", "error_message": ""}}]}.
std::string write_model_status(const std::vector<VersionStatus> &versions);
/// {"model_spec": {...}, "metadata": {"signature_def": {"signature_def":
/// {...}}}}: TF's SignatureDefMap in protobuf's JSON (DT_ dtype names,
/// tensor_shape dims with sizes as strings, -1 unknown).
std::string
write_model_metadata(const std::string &model_name, int64_t version,
                     const std::map<std::string, SignatureDef> &signatures);

/// TF's DataType enum name: "DT_FLOAT", "DT_STRING", ...
const char *tf_dtype_enum_name(DType dtype);

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_RESTCODEC_H
