//===- RestApi.h - TF Serving's REST API: routes and JSON <-> tensors ---===//
//
// The network-free half of estc-serve (docs/serving.md): TensorFlow
// Serving's REST API (tensorflow_serving/g3doc/api_rest.md) as functions of
// (HTTP method, path, body) and the model's signatures, so that the codec is
// tested and fuzzed without a socket and the HTTP server stays thin.
//
//   POST /v1/models/NAME[/versions/V|/labels/L]:predict     row ("instances")
//        or columnar ("inputs") tensors, {"b64": ...} bytes
//   POST ...:classify, ...:regress                         "examples" (JSON
//        tf.Example) and "context", run as serialized tf.Example records
//   GET  /v1/models/NAME[/versions/V|/labels/L][/metadata] status, metadata
//
// Formats, messages and status codes are TF Serving's
// (tensorflow_serving/util/json_tensor.cc, model_servers/http_rest_api_*):
// JSON numbers convert to the signature input's dtype exactly as TF Serving
// converts them; float outputs are written with the fewest digits that
// round-trip and a ".0" on whole numbers; a request's error is
// {"error": "<one line>"} with the HTTP status of its code. Where estc
// differs it says so here and in docs/serving.md: string outputs that are not
// valid UTF-8 are written as {"b64": ...} (TF Serving does that only for
// aliases ending in "_bytes" and otherwise writes invalid JSON), error text
// is one line (TF Serving's pretty-printed JSON spans lines), a JSON list
// nested deeper than a tensor's 254 dimensions is refused (TF Serving
// recurses into it).
//
// Errors are RestError: a Code (TF's status codes, which decide the HTTP
// status) and one line.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_RESTAPI_H
#define ESTC_ESTIMATOR_SERVING_RESTAPI_H

#include "estimator/Serving/SavedModel.h"
#include "lib/Support/Printable.h"

#include <cstdint>
#include <map>
#include <optional>
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

/// What a path asks for.
enum class RestMethod { Predict, Classify, Regress, ModelStatus, Metadata };
/// "predict", "classify", "regress", "status", "metadata" (the metrics'
/// method label).
const char *method_name(RestMethod method);

/// A parsed path: the model and which of its versions (neither: the
/// newest).
struct Route {
  RestMethod method = RestMethod::ModelStatus;
  std::string model_name;
  std::optional<int64_t> version;
  std::optional<std::string> label;
};

/// Parses TF Serving's paths (case-insensitive, the model name and label
/// URL-decoded): POST .../models/NAME[/versions/V|/labels/L]:METHOD and GET
/// .../models[/NAME][/versions/V|/labels/L][/metadata]. Anything else under
/// /v1 is InvalidArgument "Malformed request: POST /v1/..." (TF Serving's
/// 400); GET /v1/models is InvalidArgument "Missing model name in request.";
/// a version and a label is InvalidArgument.
Route parse_route(std::string_view http_method, std::string_view path);

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

/// The signature an examples request runs and its inputs: the signature's
/// method must be classify / regress (FailedPrecondition otherwise, TF's
/// "Expected classification signature method_name to be ...") and its one
/// input takes the records as a STRING [n] tensor.
const SignatureDef &
examples_signature(RestMethod method, const std::string &signature_name,
                   const std::map<std::string, SignatureDef> &signatures);
TensorMap examples_inputs(const SignatureDef &signature,
                          const ExamplesRequest &request);

/// Everything parse_* find in one request: the route and, for the POST
/// methods, the parsed body (the entry point of the fuzz target and of
/// tools that check requests offline).
struct ParsedRequest {
  Route route;
  std::optional<PredictRequest> predict;
  std::optional<ExamplesRequest> examples;
  /// The examples' inputs, for classify and regress.
  TensorMap examples_inputs;
};
ParsedRequest
parse_request(std::string_view http_method, std::string_view path,
              std::string_view body,
              const std::map<std::string, SignatureDef> &signatures);

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
/// A float as TF Serving writes it: "0.5", "3.0", "1e+06", "NaN",
/// "-Infinity" (the last two not strict JSON, as TF Serving).
std::string format_decimal(float value);
std::string format_decimal(double value);
/// RFC 4648 base64 (standard alphabet). decode accepts input with or
/// without "=" padding and returns nullopt on anything else.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);
bool is_valid_utf8(std::string_view bytes);

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_RESTAPI_H
