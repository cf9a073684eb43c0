//===- RestApi.h - TF Serving's REST API: routes ------------------------===//
//
// The network-free half of estc-serve (docs/serving.md): TensorFlow
// Serving's REST API (tensorflow_serving/g3doc/api_rest.md) as functions of
// (HTTP method, path, body) and the model's signatures, so that it is
// tested and fuzzed without a socket and the HTTP server stays thin. This
// header is the routes; the bodies' JSON <-> tensor codec is RestCodec.h.
//
//   POST /v1/models/NAME[/versions/V|/labels/L]:predict     row ("instances")
//        or columnar ("inputs") tensors, {"b64": ...} bytes
//   POST ...:classify, ...:regress                         "examples" (JSON
//        tf.Example) and "context", run as serialized tf.Example records
//   GET  /v1/models/NAME[/versions/V|/labels/L][/metadata] status, metadata
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TOOLS_ESTC_SERVE_RESTAPI_H
#define ESTC_TOOLS_ESTC_SERVE_RESTAPI_H

#include "tools/estc-serve/RestCodec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace estc {
namespace serving {

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

} // namespace serving
} // namespace estc

#endif // ESTC_TOOLS_ESTC_SERVE_RESTAPI_H
