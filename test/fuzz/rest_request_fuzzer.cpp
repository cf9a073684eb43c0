//===- rest_request_fuzzer.cpp - estc-serve's REST request parsing ------===//
//
// serving::parse_request (tools/estc-serve/RestApi.h) on "METHOD PATH\n"
// and a body, against fixed signatures of every input dtype. The
// documented failure is RestError with one line. A predict request that
// parses must hold whole tensors, and its tensors written as a columnar
// response must parse back as the same tensors (the codec's two halves
// agree).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "tools/estc-serve/RestApi.h"

#include <cmath>
#include <cstring>

using namespace estc;
using namespace estc::fuzz;
using namespace estc::serving;

namespace {
const std::map<std::string, SignatureDef> &signatures() {
  static const std::map<std::string, SignatureDef> sigs = [] {
    std::map<std::string, SignatureDef> s;
    SignatureDef &d = s["serving_default"];
    d.method_name = kPredictMethodName;
    d.inputs["tag"] = {"tag", DType::String, {-1}};
    d.inputs["signal"] = {"signal", DType::Float32, {-1, 5}};
    d.inputs["sensor"] = {"sensor", DType::Int32, {-1, 2, 2}};
    SignatureDef &one = s["one"];
    one.method_name = kPredictMethodName;
    one.inputs["x"] = {"x", DType::Float64, {-1}};
    SignatureDef &typed = s["typed"];
    typed.method_name = kPredictMethodName;
    typed.inputs["n"] = {"n", DType::Int64, {-1}};
    typed.inputs["ok"] = {"ok", DType::Bool, {-1}};
    typed.inputs["h"] = {"h", DType::Float16, {-1}};
    SignatureDef &cls = s["classify"];
    cls.method_name = kClassifyMethodName;
    cls.inputs["inputs"] = {"examples", DType::String, {-1}};
    SignatureDef &reg = s["regress"];
    reg.method_name = kRegressMethodName;
    reg.inputs["inputs"] = {"examples", DType::String, {-1}};
    return s;
  }();
  return sigs;
}

void checkWhole(const std::string &name, const TensorValue &t) {
  int64_t n = t.num_elements();
  bool whole =
      t.dtype == DType::String
          ? static_cast<int64_t>(t.strings.size()) == n && t.data.empty()
          : static_cast<int64_t>(t.data.size()) ==
                n * static_cast<int64_t>(dtype_size(t.dtype));
  if (!whole)
    die("input " + name + " " + t.spec().str() + " does not hold its elements");
}

bool sameValues(const TensorValue &a, const TensorValue &b) {
  if (a.spec() != b.spec() || a.strings != b.strings)
    return false;
  for (int64_t i = 0; a.dtype != DType::String && i < a.num_elements(); ++i) {
    double x = a.element(i), y = b.element(i);
    if (!(x == y || (std::isnan(x) && std::isnan(y))))
      return false;
  }
  return true;
}

/// The tensors written as {"outputs": ...} and read back as {"inputs": ...}.
void checkRoundTrip(const PredictRequest &request) {
  for (const auto &[name, t] : request.inputs)
    if (t.num_elements() == 0)
      return; // [0, 3] writes as [], which reads back as [0]
  std::string written =
      write_predict_response(request.inputs, PredictFormat::Columnar);
  const std::string prefix = "{\"outputs\":";
  if (written.rfind(prefix, 0) != 0)
    die("columnar response without outputs: " + written);
  std::string sig = request.signature_name;
  std::string again = "{\"signature_name\":\"" + sig +
                      "\",\"inputs\":" + written.substr(prefix.size());
  PredictRequest back;
  try {
    back = parse_predict_request(again, signatures());
  } catch (const RestError &e) {
    die(std::string("written tensors do not parse back: ") + e.what() + ": " +
        again);
  }
  for (const auto &[name, t] : request.inputs)
    if (!back.inputs.count(name) || !sameValues(t, back.inputs.at(name)))
      die("tensor " + name + " changed in a round trip: " + again);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input = bytesOf(data, size);
  size_t eol = input.find('\n');
  std::string_view line = input.substr(0, eol);
  std::string_view body = eol == std::string_view::npos ? std::string_view()
                                                        : input.substr(eol + 1);
  size_t space = line.find(' ');
  std::string_view method = line.substr(0, space);
  std::string_view path = space == std::string_view::npos
                              ? std::string_view()
                              : line.substr(space + 1);
  try {
    ParsedRequest parsed = parse_request(method, path, body, signatures());
    if (parsed.predict) {
      for (const auto &[name, t] : parsed.predict->inputs)
        checkWhole(name, t);
      checkRoundTrip(*parsed.predict);
    }
    for (const auto &[name, t] : parsed.examples_inputs)
      checkWhole(name, t);
  } catch (const RestError &e) {
    if (std::strchr(e.what(), '\n'))
      die(std::string("error of more than one line: ") + e.what());
    // Every error body is valid JSON.
    std::string json = write_error(e.what());
    if (json.find('\n') != std::string::npos)
      die("error body of more than one line");
  }
  return 0;
}
