//===- RestApi.cpp - TF Serving's REST API: routes -----------------------===//
//
// TF Serving's paths (model_servers/http_rest_api_handler.cc), parsed by
// hand, and what a route parses and runs; the bodies' JSON <-> tensor codec
// is RestCodec.cpp.
//
//===----------------------------------------------------------------------===//

#include "tools/estc-serve/RestApi.h"

#include "lib/Support/Text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace estc {
namespace serving {

using detail::fail;
using detail::invalid;

namespace {

bool consumePrefix(std::string_view &s, std::string_view prefix) {
  if (s.size() < prefix.size() ||
      !text::equals_ignore_case(s.substr(0, prefix.size()), prefix))
    return false;
  s.remove_prefix(prefix.size());
  return true;
}

/// A segment up to the next '/' or ':' (TF's [^/:]+); empty when none.
std::string_view segment(std::string_view &s) {
  size_t n = s.find_first_of("/:");
  if (n == std::string_view::npos)
    n = s.size();
  std::string_view seg = s.substr(0, n);
  s.remove_prefix(n);
  return seg;
}

} // namespace

const char *method_name(RestMethod method) {
  switch (method) {
  case RestMethod::Predict:
    return "predict";
  case RestMethod::Classify:
    return "classify";
  case RestMethod::Regress:
    return "regress";
  case RestMethod::ModelStatus:
    return "status";
  case RestMethod::Metadata:
    return "metadata";
  }
  return "unknown";
}

Route parse_route(std::string_view http_method, std::string_view path) {
  const std::string malformed =
      "Malformed request: " + std::string(http_method) + " " +
      std::string(path);
  const bool post = http_method == "POST";
  if (!post && http_method != "GET")
    invalid(malformed);
  std::string_view s = path;
  if (!consumePrefix(s, "/v1/models"))
    invalid(malformed);
  Route route;
  std::string versionText, labelText;
  if (s.empty() && !post)
    invalid("Missing model name in request.");
  if (!consumePrefix(s, "/"))
    invalid(malformed);
  std::string_view name = segment(s);
  if (name.empty())
    invalid(malformed);
  route.model_name = text::percent_decode(name);
  // [/versions/\d+ | /labels/[^/:]+]
  std::string_view rest = s;
  if (consumePrefix(rest, "/versions/")) {
    std::string_view v = segment(rest);
    if (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      versionText = std::string(v);
      s = rest;
    }
  } else if (consumePrefix(rest, "/labels/")) {
    std::string_view l = segment(rest);
    if (!l.empty()) {
      labelText = std::string(l);
      s = rest;
    }
  }
  if (post) {
    if (!consumePrefix(s, ":"))
      invalid(malformed);
    if (text::equals_ignore_case(s, "predict"))
      route.method = RestMethod::Predict;
    else if (text::equals_ignore_case(s, "classify"))
      route.method = RestMethod::Classify;
    else if (text::equals_ignore_case(s, "regress"))
      route.method = RestMethod::Regress;
    else
      invalid(malformed);
  } else {
    route.method = RestMethod::ModelStatus;
    if (consumePrefix(s, "/metadata"))
      route.method = RestMethod::Metadata;
    if (!s.empty())
      invalid(malformed);
  }
  if (!versionText.empty()) {
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(versionText.c_str(), &end, 10);
    if (errno == ERANGE || *end)
      invalid("Failed to convert version: " + versionText + " to numeric.");
    route.version = v;
  }
  if (!labelText.empty())
    route.label = text::percent_decode(labelText);
  if (route.version && route.label)
    invalid("Both model version (" + std::to_string(*route.version) +
            ") and model version label (" + *route.label +
            ") cannot be supplied.");
  return route;
}

const SignatureDef &
examples_signature(RestMethod method, const std::string &signature_name,
                   const std::map<std::string, SignatureDef> &signatures) {
  const SignatureDef &sig = find_signature(signature_name, signatures);
  const bool classify = method == RestMethod::Classify;
  const char *expected = classify ? kClassifyMethodName : kRegressMethodName;
  if (sig.method_name != expected)
    fail(Code::FailedPrecondition,
         std::string("Expected ") +
             (classify ? "classification" : "regression") +
             " signature method_name to be " + expected +
             ". Was: " + sig.method_name);
  if (sig.inputs.size() != 1 ||
      sig.inputs.begin()->second.dtype != DType::String)
    fail(Code::FailedPrecondition,
         std::string(classify ? "Classification" : "Regression") +
             " signature must have one string input of serialized "
             "tf.Example records, has " +
             std::to_string(sig.inputs.size()) + " inputs");
  return sig;
}

TensorMap examples_inputs(const SignatureDef &signature,
                          const ExamplesRequest &request) {
  TensorMap inputs;
  inputs[signature.inputs.begin()->first] = TensorValue::of_strings(
      {static_cast<int64_t>(request.examples.size())}, request.examples);
  return inputs;
}

ParsedRequest
parse_request(std::string_view http_method, std::string_view path,
              std::string_view body,
              const std::map<std::string, SignatureDef> &signatures) {
  ParsedRequest parsed;
  parsed.route = parse_route(http_method, path);
  switch (parsed.route.method) {
  case RestMethod::Predict:
    parsed.predict = parse_predict_request(body, signatures);
    break;
  case RestMethod::Classify:
  case RestMethod::Regress: {
    parsed.examples = parse_examples_request(body);
    const SignatureDef &sig = examples_signature(
        parsed.route.method, parsed.examples->signature_name, signatures);
    parsed.examples_inputs = examples_inputs(sig, *parsed.examples);
    break;
  }
  case RestMethod::ModelStatus:
  case RestMethod::Metadata:
    break;
  }
  return parsed;
}

} // namespace serving
} // namespace estc
