//===- grpc_request_fuzzer.cpp - estc-serve's gRPC request decoding -----===//
//
// serving::decode_predict_request_bytes (tools/estc-serve/GrpcCodec.h): the
// bytes as a serialized tensorflow.serving.PredictRequest, decoded against
// fixed signatures of every input dtype into the internal inputs; then the
// same bytes as a ClassificationRequest's Input (input_examples). The
// documented failure is RestError with one line. Decoded inputs must hold
// whole tensors of their signature's dtype, and each written back as a
// TensorProto (tensor_to_proto) must decode to the same tensor.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "tools/estc-serve/GrpcCodec.h"

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
    d.outputs["y"] = {"y", DType::Float32, {-1}};
    d.outputs["z"] = {"z", DType::String, {-1}};
    SignatureDef &one = s["one"];
    one.method_name = kPredictMethodName;
    one.inputs["x"] = {"x", DType::Float64, {}};
    SignatureDef &typed = s["typed"];
    typed.method_name = kPredictMethodName;
    typed.inputs["n"] = {"n", DType::Int64, {-1}};
    typed.inputs["ok"] = {"ok", DType::Bool, {-1}};
    typed.inputs["h"] = {"h", DType::Float16, {-1}};
    typed.inputs["b"] = {"b", DType::BFloat16, {-1, -1}};
    return s;
  }();
  return sigs;
}

void checkOneLine(const RestError &e) {
  if (std::strchr(e.what(), '\n'))
    die(std::string("error of more than one line: ") + e.what());
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes = bytesOf(data, size);
  // Small tensors: one value may fill a large shape.
  constexpr int64_t kMaxBytes = 1 << 20;
  try {
    GrpcPredictRequest request =
        decode_predict_request_bytes(bytes, signatures(), kMaxBytes);
    const SignatureDef &sig = signatures().at(
        request.spec.signature_name.empty() ? std::string("serving_default")
                                            : request.spec.signature_name);
    for (const auto &[name, t] : request.inputs) {
      if (t.dtype != sig.inputs.at(name).dtype)
        die("input " + name + " decoded as " + t.spec().str());
      int64_t n = t.num_elements();
      bool whole =
          t.dtype == DType::String
              ? static_cast<int64_t>(t.strings.size()) == n && t.data.empty()
              : static_cast<int64_t>(t.data.size()) ==
                    n * static_cast<int64_t>(dtype_size(t.dtype));
      if (!whole)
        die("input " + name + " " + t.spec().str() +
            " does not hold its elements");
      ::tensorflow::TensorProto proto;
      tensor_to_proto(t, &proto);
      TensorValue back = tensor_from_proto(proto, name, kMaxBytes);
      if (back.spec() != t.spec() || back.data != t.data ||
          back.strings != t.strings)
        die("input " + name + " changed in a round trip");
    }
  } catch (const RestError &e) {
    checkOneLine(e);
  }
  tfs::ClassificationRequest classify;
  if (classify.ParseFromArray(data, static_cast<int>(size))) {
    try {
      input_examples(classify.has_input(), classify.input());
    } catch (const RestError &e) {
      checkOneLine(e);
    }
  }
  return 0;
}
