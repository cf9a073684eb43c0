//===- make_test_exports.cpp - Export the serving tests' models ---------===//
//
//   make_test_exports OUT_DIR
//
// Trains and exports the two models of TestExports.h as an Estimator user
// would: OUT_DIR/tiny/<version>/ and OUT_DIR/linear/<version>/ (model_dirs
// under OUT_DIR/train/), and prints the two export folders. The server's
// end-to-end tests serve them with estc-serve.
//
//===----------------------------------------------------------------------===//

#include "test/serving/TestExports.h"

#include <cstdio>
#include <exception>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_exports OUT_DIR\n");
    return 2;
  }
  std::string out = argv[1];
  try {
    std::unique_ptr<estc::estimator::Estimator> holder;
    std::string tiny = estc::serving_test::export_tiny(out + "/train/tiny",
                                                       out + "/tiny", holder);
    std::string linear = estc::serving_test::export_linear(
        out + "/train/linear", out + "/linear", holder);
    std::printf("%s\n%s\n", tiny.c_str(), linear.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "make_test_exports: %s\n", e.what());
    return 1;
  }
  return 0;
}
