//===- RestApiTest.cpp - TF Serving's REST API codec, no network --------===//
//
// tools/estc-serve/RestApi.h and RestCodec.h against TF Serving's
// documented requests (tensorflow_serving/g3doc/api_rest.md) and the exact
// formats and messages of tensorflow_serving/util/json_tensor.cc: paths, row
// and columnar predict requests, {"b64": ...}, tf.Example from JSON with
// context, responses, status and metadata JSON, and the errors with their
// codes. The text utilities they use (base64, decimals) are TextTest's.
//
//===----------------------------------------------------------------------===//

#include "tools/estc-serve/RestApi.h"

#include "lib/Data/example.pb.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <limits>

using namespace estc;
using namespace estc::serving;

namespace {

/// The signatures of api_rest.md's examples: three named inputs, one
/// single-input signature, a classify and a regress signature.
std::map<std::string, SignatureDef> signatures() {
  std::map<std::string, SignatureDef> sigs;
  SignatureDef &def = sigs["serving_default"];
  def.method_name = kPredictMethodName;
  def.inputs["tag"] = {"tag", DType::String, {-1}};
  def.inputs["signal"] = {"signal", DType::Float32, {-1, 5}};
  def.inputs["sensor"] = {"sensor", DType::Int32, {-1, 2, 2}};
  def.outputs["out"] = {"out", DType::Float32, {-1}};
  SignatureDef &one = sigs["one"];
  one.method_name = kPredictMethodName;
  one.inputs["x"] = {"x", DType::Float32, {-1}};
  one.outputs["y"] = {"y", DType::Float32, {-1}};
  SignatureDef &bytes = sigs["bytes"];
  bytes.method_name = kPredictMethodName;
  bytes.inputs["b"] = {"b", DType::String, {-1}};
  SignatureDef &i64 = sigs["i64"];
  i64.method_name = kPredictMethodName;
  i64.inputs["n"] = {"n", DType::Int64, {-1}};
  i64.inputs["ok"] = {"ok", DType::Bool, {-1}};
  SignatureDef &cls = sigs["classify"];
  cls.method_name = kClassifyMethodName;
  cls.inputs["inputs"] = {"examples", DType::String, {-1}};
  cls.outputs["classes"] = {"classes", DType::String, {-1, 2}};
  cls.outputs["scores"] = {"scores", DType::Float32, {-1, 2}};
  SignatureDef &reg = sigs["regress"];
  reg.method_name = kRegressMethodName;
  reg.inputs["inputs"] = {"examples", DType::String, {-1}};
  reg.outputs["outputs"] = {"outputs", DType::Float32, {-1, 1}};
  return sigs;
}

/// The RestError's code and message of `f`.
template <typename F> std::pair<Code, std::string> errorOf(F f) {
  try {
    f();
  } catch (const RestError &e) {
    return {e.code(), e.what()};
  }
  return {Code::Ok, ""};
}

PredictRequest predict(const std::string &body) {
  return parse_predict_request(body, signatures());
}

std::string predictError(const std::string &body) {
  auto [code, message] = errorOf([&] { predict(body); });
  EXPECT_EQ(code, Code::InvalidArgument) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

} // namespace

// --- paths -------------------------------------------------------------------

TEST(RestApiTest, RoutesOfEveryForm) {
  Route r = parse_route("POST", "/v1/models/titanic:predict");
  EXPECT_EQ(r.method, RestMethod::Predict);
  EXPECT_EQ(r.model_name, "titanic");
  EXPECT_FALSE(r.version);
  EXPECT_FALSE(r.label);
  r = parse_route("POST", "/v1/models/titanic/versions/17:classify");
  EXPECT_EQ(r.method, RestMethod::Classify);
  EXPECT_EQ(r.version, 17);
  r = parse_route("POST", "/v1/models/titanic/labels/stable:regress");
  EXPECT_EQ(r.method, RestMethod::Regress);
  EXPECT_EQ(r.label, "stable");
  r = parse_route("GET", "/v1/models/titanic");
  EXPECT_EQ(r.method, RestMethod::ModelStatus);
  r = parse_route("GET", "/v1/models/titanic/versions/3/metadata");
  EXPECT_EQ(r.method, RestMethod::Metadata);
  EXPECT_EQ(r.version, 3);
  r = parse_route("GET", "/v1/models/titanic/labels/canary");
  EXPECT_EQ(r.label, "canary");
  // TF Serving's paths are case-insensitive; names are URL-decoded.
  r = parse_route("POST", "/V1/Models/my%20model:PREDICT");
  EXPECT_EQ(r.model_name, "my model");
  EXPECT_EQ(r.method, RestMethod::Predict);
}

TEST(RestApiTest, MalformedPathsAreTfServings400) {
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/models/x:predict"},
           {"POST", "/v1/models/x"},
           {"POST", "/v1/models/x:explain"},
           {"POST", "/v1/models/x/versions/abc:predict"},
           {"GET", "/v1/models/x/versions"},
           {"GET", "/v1/models/"},
           {"GET", "/v1/models/x/metadata/more"},
           {"DELETE", "/v1/models/x"}}) {
    auto [code, message] = errorOf([&] { parse_route(method, path); });
    EXPECT_EQ(code, Code::InvalidArgument) << path;
    EXPECT_EQ(message, "Malformed request: " + method + " " + path);
  }
  EXPECT_EQ(errorOf([] { parse_route("GET", "/v1/models"); }).second,
            "Missing model name in request.");
  EXPECT_EQ(errorOf([] {
              parse_route("POST",
                          "/v1/models/x/versions/99999999999999999999:predict");
            }).second,
            "Failed to convert version: 99999999999999999999 to numeric.");
}

TEST(RestApiTest, HttpStatusOfCodes) {
  EXPECT_EQ(http_status(Code::Ok), 200);
  EXPECT_EQ(http_status(Code::InvalidArgument), 400);
  EXPECT_EQ(http_status(Code::FailedPrecondition), 400);
  EXPECT_EQ(http_status(Code::NotFound), 404);
  EXPECT_EQ(http_status(Code::Unimplemented), 501);
  EXPECT_EQ(http_status(Code::Internal), 500);
  EXPECT_EQ(http_status(Code::Unavailable), 503);
}

// --- predict requests
// ----------------------------------------------------------

TEST(RestApiTest, RowFormatOfTheDocumentedExample) {
  PredictRequest r = predict(R"({
    "instances": [
      {"tag": "foo", "signal": [1, 2, 3, 4, 5], "sensor": [[1, 2], [3, 4]]},
      {"tag": "bar", "signal": [3, 4, 1, 2, 5], "sensor": [[4, 5], [6, 8]]}
    ]})");
  EXPECT_EQ(r.format, PredictFormat::Row);
  EXPECT_EQ(r.signature_name, "");
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.inputs.at("tag").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(r.inputs.at("tag").strings,
            (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ(r.inputs.at("signal").shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(r.inputs.at("signal").values<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 3, 4, 1, 2, 5}));
  EXPECT_EQ(r.inputs.at("sensor").dtype, DType::Int32);
  EXPECT_EQ(r.inputs.at("sensor").shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(r.inputs.at("sensor").values<int32_t>(),
            (std::vector<int32_t>{1, 2, 3, 4, 4, 5, 6, 8}));
}

TEST(RestApiTest, ColumnarFormatGivesTheSameTensors) {
  PredictRequest row = predict(R"({"instances": [
      {"tag": "foo", "signal": [1, 2, 3, 4, 5], "sensor": [[1, 2], [3, 4]]},
      {"tag": "bar", "signal": [3, 4, 1, 2, 5], "sensor": [[4, 5], [6, 8]]}]})");
  PredictRequest col = predict(R"({"inputs": {
      "tag": ["foo", "bar"],
      "signal": [[1, 2, 3, 4, 5], [3, 4, 1, 2, 5]],
      "sensor": [[[1, 2], [3, 4]], [[4, 5], [6, 8]]]}})");
  EXPECT_EQ(col.format, PredictFormat::Columnar);
  for (const auto &[name, t] : row.inputs) {
    EXPECT_EQ(col.inputs.at(name).spec(), t.spec()) << name;
    EXPECT_EQ(col.inputs.at(name).data, t.data) << name;
    EXPECT_EQ(col.inputs.at(name).strings, t.strings) << name;
  }
}

TEST(RestApiTest, SingleInputPlainListsAndSignatureName) {
  PredictRequest r =
      predict(R"({"signature_name": "one", "instances": [1.0, 2, -3.5]})");
  EXPECT_EQ(r.signature_name, "one");
  EXPECT_EQ(r.inputs.at("x").shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(r.inputs.at("x").values<float>(), (std::vector<float>{1, 2, -3.5}));
  r = predict(R"({"signature_name": "one", "inputs": [0.5, 1]})");
  EXPECT_EQ(r.inputs.at("x").values<float>(), (std::vector<float>{0.5, 1}));
  // A scalar is a scalar (the servable refuses it: it has no batch).
  r = predict(R"({"signature_name": "one", "inputs": 7})");
  EXPECT_TRUE(r.inputs.at("x").shape.empty());
}

TEST(RestApiTest, Base64Bytes) {
  PredictRequest r = predict(
      R"({"signature_name": "bytes", "instances": [{"b64": "aGVsbG8="}, {"b64": "AP8"}, "plain"]})");
  EXPECT_EQ(
      r.inputs.at("b").strings,
      (std::vector<std::string>{"hello", std::string("\0\xff", 2), "plain"}));
  r = predict(R"({"signature_name": "bytes", "inputs": {"b64": "aGk="}})");
  EXPECT_TRUE(r.inputs.at("b").shape.empty());
  EXPECT_EQ(r.inputs.at("b").strings, (std::vector<std::string>{"hi"}));
  EXPECT_EQ(
      predictError(
          R"({"signature_name": "bytes", "instances": [{"b64": "a$=="}]})"),
      "Failed to process element: 0 of 'instances' list. Error: "
      "INVALID_ARGUMENT: Unable to base64 decode");
}

TEST(RestApiTest, IntegersAndBools) {
  PredictRequest r = predict(
      R"({"signature_name": "i64", "instances": [{"n": 9007199254740993, "ok": true}, {"n": -1, "ok": false}]})");
  EXPECT_EQ(r.inputs.at("n").values<int64_t>(),
            (std::vector<int64_t>{9007199254740993LL, -1}));
  EXPECT_EQ(r.inputs.at("ok").values<bool>(), (std::vector<bool>{true, false}));
  EXPECT_NE(
      predictError(
          R"({"signature_name": "i64", "inputs": {"n": [1.5], "ok": [true]}})")
          .find("JSON Value: 1.5 Type: Number is not of expected type: "
                "int64"),
      std::string::npos);
  // int32: a number that does not fit is refused, as TF Serving's IsInt().
  EXPECT_NE(predictError(R"({"instances": [{"tag": "a", "signal": [1,2,3,4,5],
                                             "sensor": [[1, 2], [3, 4294967296]]}]})")
                .find("4294967296 Type: Number is not of expected type: int32"),
            std::string::npos);
}

TEST(RestApiTest, RequestErrorsWithTfServingsMessages) {
  EXPECT_EQ(predictError(""), "JSON Parse error: The document is empty");
  EXPECT_EQ(predictError("instances = [1, 2]"),
            "JSON Parse error: Invalid value. at offset: 0");
  EXPECT_EQ(predictError("[1]"), "JSON Value: [1] Is not object");
  // A key with a line break: the message quotes it escaped, on one line.
  EXPECT_EQ(predictError("{\"instances\": [{\"a\\nb\": 1}]}"),
            "Failed to process element: 0 key: a\\nb of 'instances' list. "
            "Error: INVALID_ARGUMENT: JSON object: does not have named "
            "input: a\\nb");
  // NaN and Inf are numbers here (TF Serving's codec reads them), but take
  // no fraction or exponent (cmake/EstcRapidJSON.cmake).
  EXPECT_EQ(predictError(R"({"instances": [Infe0]})"),
            "JSON Parse error: Missing a comma or ']' after an array "
            "element. at offset: 18");
  EXPECT_EQ(
      predictError(R"({"instances": [1], "inputs": [1]})"),
      R"(JSON Value: {"instances":[1],"inputs":[1]} Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist )");
  EXPECT_EQ(
      predictError(R"({"instances": 1})"),
      R"(JSON Value: {"instances":1} Expecting 'instances' to be an list/array)");
  EXPECT_EQ(predictError(R"({"instances": []})"),
            R"(JSON Value: {"instances":[]} No values in 'instances' array)");
  EXPECT_EQ(
      predictError(R"({"signature_name": 1, "instances": [1]})"),
      R"(JSON Value: {"signature_name":1,"instances":[1]} not formatted correctly. 'signature_name' key must be a string value.)");
  EXPECT_EQ(predictError(R"({"signature_name": "nope", "instances": [1]})"),
            "Serving signature name: \"nope\" not found in signature def");
  EXPECT_EQ(predictError(R"({"foo": 1})"),
            "Missing 'inputs' or 'instances' key");
  EXPECT_EQ(predictError(R"({"instances": [1, 2]})"),
            "instances is a plain list, but expecting list of objects as "
            "multiple input tensors required as per tensorinfo_map");
  EXPECT_EQ(predictError(R"({"inputs": [1, 2]})"),
            "inputs is a plain value/list, but expecting an object as "
            "multiple input tensors required as per tensorinfo_map");
  EXPECT_EQ(
      predictError(R"({"inputs": {"tag": ["a"], "signal": [[1,2,3,4,5]]}})"),
      "Missing named input: sensor in 'inputs' object.");
  EXPECT_EQ(predictError(R"({"signature_name": "one", "instances": [1, [2]]})"),
            "Failed to process element: 1 of 'instances' list. Error: "
            "INVALID_ARGUMENT: Expecting shape [] but got: [1]");
  EXPECT_EQ(
      predictError(R"({"signature_name": "one", "instances": [[1, 2], [3]]})"),
      "Failed to process element: 1 of 'instances' list. Error: "
      "INVALID_ARGUMENT: Expecting tensor size: 2 but got: 1");
  EXPECT_EQ(
      predictError(R"({"signature_name": "one", "inputs": [[1, 2], [3]]})"),
      "Encountered list at unexpected size: 1 at level: 1 expected size: 2");
  EXPECT_EQ(predictError(R"({"signature_name": "one", "inputs": [[1, 2], 3]})"),
            "JSON Value: 3 found at incorrect level: 2 in the JSON DOM. "
            "Expected at level: 2");
  EXPECT_EQ(predictError(R"({"signature_name": "one", "instances": ["a"]})"),
            "Failed to process element: 0 of 'instances' list. Error: "
            "INVALID_ARGUMENT: JSON Value: \"a\" Type: String is not of "
            "expected type: float");
  std::string keys = predictError(
      R"({"instances": [{"tag": "a", "signal": [1,2,3,4,5], "sensor": [[1,2],[3,4]], "extra": 1}]})");
  EXPECT_EQ(keys, "Failed to process element: 0 key: extra of 'instances' "
                  "list. Error: INVALID_ARGUMENT: JSON object: does not have "
                  "named input: extra");
  EXPECT_NE(predictError(R"({"instances": [{"tag": "a"}]})")
                .find("keys must be equal to: sensor,signal,tag"),
            std::string::npos);
  EXPECT_EQ(
      predictError(
          R"({"instances": [{"tag": "a", "signal": [1,2,3,4,5], "sensor": [[1,2],[3,4]]}, [1]]})"),
      "Expecting object but got list at item 1 of input list");
}

TEST(RestApiTest, DeepNestingIsRefusedNotRecursedInto) {
  std::string deep(100000, '[');
  std::string message =
      predictError(R"({"signature_name": "one", "instances": )" + deep + "1" +
                   std::string(100000, ']') + "}");
  EXPECT_NE(message.find("nests lists deeper than 254"), std::string::npos);
  // Messages quote at most 256 bytes of the value.
  EXPECT_LT(message.size(), 700u);
}

TEST(RestApiTest, UnsupportedDtypeIsUnimplemented) {
  auto sigs = signatures();
  sigs["half"].inputs["h"] = {"h", DType::Float16, {-1}};
  auto [code, message] = errorOf([&] {
    parse_predict_request(R"({"signature_name": "half", "inputs": [1]})", sigs);
  });
  EXPECT_EQ(code, Code::Unimplemented);
  EXPECT_EQ(message, "Conversion of JSON Value: 1 to type: half");
}

// --- classify and regress
// ------------------------------------------------------

TEST(RestApiTest, ExamplesBecomeTfExamplesWithTheContext) {
  ExamplesRequest r = parse_examples_request(R"({
    "signature_name": "classify",
    "context": {"country": "ch", "ids": [1, 2]},
    "examples": [
      {"age": 30, "height": 1.8, "name": "a", "img": {"b64": "AAE="}, "ok": true},
      {"age": [1, 2], "country": "fr", "tags": ["x", "y"]}
    ]})");
  EXPECT_EQ(r.signature_name, "classify");
  ASSERT_EQ(r.examples.size(), 2u);
  data::proto::Example e0, e1;
  ASSERT_TRUE(e0.ParseFromString(r.examples[0]));
  ASSERT_TRUE(e1.ParseFromString(r.examples[1]));
  const auto &f0 = e0.features().feature();
  EXPECT_EQ(f0.at("age").int64_list().value(0), 30);
  EXPECT_FLOAT_EQ(f0.at("height").float_list().value(0), 1.8f);
  EXPECT_EQ(f0.at("name").bytes_list().value(0), "a");
  EXPECT_EQ(f0.at("img").bytes_list().value(0), std::string("\0\1", 2));
  EXPECT_EQ(f0.at("ok").int64_list().value(0), 1);
  EXPECT_EQ(f0.at("country").bytes_list().value(0), "ch");
  EXPECT_EQ(f0.at("ids").int64_list().value_size(), 2);
  const auto &f1 = e1.features().feature();
  EXPECT_EQ(f1.at("age").int64_list().value_size(), 2);
  // The example's own feature wins over the context's.
  EXPECT_EQ(f1.at("country").bytes_list().value(0), "fr");
  EXPECT_EQ(f1.at("tags").bytes_list().value(1), "y");

  // examples_signature returns a reference into the map: keep it alive.
  auto sigs = signatures();
  const SignatureDef &sig =
      examples_signature(RestMethod::Classify, r.signature_name, sigs);
  TensorMap inputs = examples_inputs(sig, r);
  EXPECT_EQ(inputs.at("inputs").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(inputs.at("inputs").strings, r.examples);
}

TEST(RestApiTest, ExamplesErrors) {
  auto err = [](const std::string &body) {
    return errorOf([&] { parse_examples_request(body); }).second;
  };
  EXPECT_EQ(err(R"({"examples": [{"a": [1, 2.5]}]})"),
            "Unexpected element type in feature: a expecting type: int64");
  EXPECT_EQ(err(R"({"examples": [{"a": null}]})"),
            "Feature: a has element with unexpected JSON type: Null");
  EXPECT_EQ(err(R"({"examples": [{"a": [[1]]}]})"),
            "Feature: a has element with unexpected JSON type: Array");
  EXPECT_EQ(err(R"({"examples": [{"a": 18446744073709551615}]})"),
            "Feature: a has uint64_t element. Only int64_t is supported.");
  EXPECT_EQ(err(R"({"examples": [1]})"),
            "Example must be JSON object but got JSON Number");
  EXPECT_EQ(
      err(R"({"context": {}})"),
      R"(JSON Value: {"context":{}} When method is classify, key 'examples' is expected and was not found)");
  EXPECT_EQ(
      err(R"({"examples": []})"),
      R"(JSON Value: {"examples":[]} 'examples' value is an empty array)");
  auto sigs = signatures();
  auto [code, message] = errorOf(
      [&] { examples_signature(RestMethod::Classify, "regress", sigs); });
  EXPECT_EQ(code, Code::FailedPrecondition);
  EXPECT_EQ(message, "Expected classification signature method_name to be "
                     "tensorflow/serving/classify. Was: "
                     "tensorflow/serving/regress");
  EXPECT_EQ(errorOf([&] {
              examples_signature(RestMethod::Regress, "", sigs);
            }).second,
            "Expected regression signature method_name to be "
            "tensorflow/serving/regress. Was: tensorflow/serving/predict");
}

// --- responses
// -----------------------------------------------------------------

TEST(RestApiTest, PredictResponsesAsTfServingShapesThem) {
  TensorMap one;
  one["y"] = TensorValue::of<float>({2, 2}, {0.5f, 3, 1e6f, 0.1f});
  EXPECT_EQ(write_predict_response(one, PredictFormat::Row),
            R"({"predictions":[[0.5,3.0],[1e+06,0.1]]})");
  EXPECT_EQ(write_predict_response(one, PredictFormat::Columnar),
            R"({"outputs":[[0.5,3.0],[1e+06,0.1]]})");
  TensorMap two;
  two["classes"] = TensorValue::of<int64_t>({2}, {1, 0});
  two["probs"] = TensorValue::of<double>({2, 1}, {0.25, 0.75});
  EXPECT_EQ(
      write_predict_response(two, PredictFormat::Row),
      R"({"predictions":[{"classes":1,"probs":[0.25]},{"classes":0,"probs":[0.75]}]})");
  EXPECT_EQ(write_predict_response(two, PredictFormat::Columnar),
            R"({"outputs":{"classes":[1,0],"probs":[[0.25],[0.75]]}})");
  two["bad"] = TensorValue::of<float>({3}, {1, 2, 3});
  EXPECT_EQ(
      errorOf([&] { write_predict_response(two, PredictFormat::Row); }).second,
      "Tensor name: classes has inconsistent batch size: 2 expecting: 3");
}

TEST(RestApiTest, StringOutputsAndBytes) {
  TensorMap out;
  out["s"] = TensorValue::of_strings(
      {3}, {"ok", std::string("\xff\xfe", 2), "caf\xc3\xa9"});
  EXPECT_EQ(write_predict_response(out, PredictFormat::Columnar),
            "{\"outputs\":[\"ok\",{\"b64\":\"//4=\"},\"caf\xc3\xa9\"]}");
  TensorMap bytes;
  bytes["img_bytes"] = TensorValue::of_strings({1}, {"hi"});
  EXPECT_EQ(write_predict_response(bytes, PredictFormat::Row),
            R"({"predictions":[{"b64":"aGk="}]})");
}

TEST(RestApiTest, ClassifyAndRegressResults) {
  TensorMap out;
  out["classes"] = TensorValue::of_strings({2, 2}, {"no", "yes", "no", "yes"});
  out["scores"] = TensorValue::of<float>({2, 2}, {0.75f, 0.25f, 0.5f, 0.5f});
  EXPECT_EQ(
      write_classify_response(out, 2),
      R"({"results":[[["no",0.75],["yes",0.25]],[["no",0.5],["yes",0.5]]]})");
  TensorMap scoresOnly;
  scoresOnly["scores"] = TensorValue::of<float>({1, 1}, {12});
  EXPECT_EQ(write_classify_response(scoresOnly, 1),
            R"({"results":[[["",12.0]]]})");
  EXPECT_EQ(errorOf([&] { write_classify_response(out, 3); }).first,
            Code::InvalidArgument);
  TensorMap reg;
  reg["outputs"] = TensorValue::of<float>({2, 1}, {42, 0.5f});
  EXPECT_EQ(write_regress_response(reg, 2), R"({"results":[42.0,0.5]})");
  reg["outputs"] = TensorValue::of<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(errorOf([&] { write_regress_response(reg, 2); }).first,
            Code::InvalidArgument);
}

TEST(RestApiTest, StatusAndMetadataJson) {
  EXPECT_EQ(
      write_model_status({{123, "AVAILABLE", Code::Ok, ""}}),
      R"({"model_version_status":[{"version":"123","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})");
  std::string meta = write_model_metadata("m", 7, signatures());
  rapidjson::Document doc;
  doc.Parse(meta.c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_STREQ(doc["model_spec"]["name"].GetString(), "m");
  EXPECT_STREQ(doc["model_spec"]["version"].GetString(), "7");
  const auto &defs = doc["metadata"]["signature_def"]["signature_def"];
  const auto &signal = defs["serving_default"]["inputs"]["signal"];
  EXPECT_STREQ(signal["dtype"].GetString(), "DT_FLOAT");
  EXPECT_STREQ(signal["tensor_shape"]["dim"][0]["size"].GetString(), "-1");
  EXPECT_STREQ(signal["tensor_shape"]["dim"][1]["size"].GetString(), "5");
  EXPECT_FALSE(signal["tensor_shape"]["unknown_rank"].GetBool());
  EXPECT_STREQ(defs["classify"]["method_name"].GetString(),
               kClassifyMethodName);
  EXPECT_STREQ(defs["classify"]["inputs"]["inputs"]["dtype"].GetString(),
               "DT_STRING");
}

TEST(RestApiTest, ErrorBodyIsOneLineOfValidJson) {
  std::string body = write_error("bad \"x\"\nline\xff");
  EXPECT_EQ(body, R"({"error":"bad \"x\" line?"})");
}

TEST(RestApiTest, ParseRequestCombinesRouteAndBody) {
  ParsedRequest p = parse_request("POST", "/v1/models/m:classify",
                                  R"({"signature_name": "classify",
                                      "examples": [{"x": 1}]})",
                                  signatures());
  EXPECT_TRUE(p.examples);
  EXPECT_EQ(p.examples_inputs.at("inputs").shape, (std::vector<int64_t>{1}));
  p = parse_request("GET", "/v1/models/m/metadata", "", signatures());
  EXPECT_EQ(p.route.method, RestMethod::Metadata);
  EXPECT_FALSE(p.predict);
}
