//===- serve_test_exports.cpp - Exports and expected answers for estc-serve
//===//
//
//   serve_test_exports OUT
//
// Trains and exports test/serving/TestExports.h's two models as an
// Estimator user would, into OUT/tiny/<version> and OUT/linear/<version>,
// and writes requests with the answers estc-serve must give for them,
// computed in process (serving::SavedModel::run on the request parsed by
// the same codec): OUT/tiny_predict.json / .expected (row predict),
// OUT/linear_classify.json / .expected (classify over tf.Examples). The
// estc-serve end-to-end test (estc_serve_e2e.sh) serves OUT and compares.
//
//===----------------------------------------------------------------------===//

#include "runtime/serving/SavedModel.h"
#include "test/serving/TestExports.h"
#include "tools/estc-serve/RestApi.h"

#include <filesystem>
#include <fstream>
#include <iostream>

using namespace estc;
using namespace estc::serving;

namespace {
void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush())
    throw std::runtime_error("cannot write " + path);
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: serve_test_exports OUT\n";
    return 2;
  }
  std::string out = argv[1];
  try {
    std::filesystem::create_directories(out);
    std::unique_ptr<estimator::Estimator> tinyEst, linearEst;
    std::string tiny =
        serving_test::export_tiny(out + "/work/tiny", out + "/tiny", tinyEst);
    std::string linear = serving_test::export_linear(
        out + "/work/linear", out + "/linear", linearEst);

    const std::string predict =
        R"({"instances": [[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, -3.0, 0.0], [0.0, 0.0, 0.0, 1.0]]})";
    auto tinyModel = SavedModel::load(tiny);
    PredictRequest req =
        parse_predict_request(predict, tinyModel->signatures());
    writeText(out + "/tiny_predict.json", predict);
    writeText(out + "/tiny_predict.expected",
              write_predict_response(
                  tinyModel->run(kDefaultServingSignatureDefKey, req.inputs),
                  req.format));

    const std::string classify =
        R"({"signature_name": "classification", "context": {"x2": 0.5},
            "examples": [{"x1": 0.9, "color": "red"}, {"x1": -0.8, "color": "blue"}]})";
    auto linearModel = SavedModel::load(linear);
    ExamplesRequest ex = parse_examples_request(classify);
    const SignatureDef &sig = examples_signature(
        RestMethod::Classify, ex.signature_name, linearModel->signatures());
    writeText(out + "/linear_classify.json", classify);
    writeText(out + "/linear_classify.expected",
              write_classify_response(
                  linearModel->run(ex.signature_name, examples_inputs(sig, ex)),
                  static_cast<int64_t>(ex.examples.size())));
  } catch (const std::exception &e) {
    std::cerr << "serve_test_exports: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
