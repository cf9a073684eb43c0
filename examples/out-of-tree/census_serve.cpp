//===- census_serve.cpp - census_canned's export, loaded and run ----------===//
//
//   census_serve WORK_DIR
//
// Serving from C++ without LLVM (estc::saved_model): loads the newest
// export under WORK_DIR/export with serving::SavedModel, classifies the
// served rows as serialized tf.Examples (the "serving_default"
// classification signature) and runs the raw "raw:predict" signature, and
// checks both against the Estimator's own predictions
// (WORK_DIR/expected_predictions.txt). Exit 0 when they agree.
//
//===----------------------------------------------------------------------===//

#include "Census.h"

#include "estc/data.h"
#include "estc/serving.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace estc;

namespace {

/// The newest version folder under `base` (export_saved_model's layout).
std::string newestExport(const std::string &base) {
  std::string newest;
  for (const auto &entry : std::filesystem::directory_iterator(base))
    if (entry.is_directory() && entry.path().filename().string() > newest &&
        entry.path().filename().string().rfind("temp-", 0) != 0)
      newest = entry.path().filename().string();
  if (newest.empty())
    throw std::runtime_error("no export under " + base);
  return base + "/" + newest;
}

int run(const std::string &work) {
  std::string dir = newestExport(work + "/export");
  auto model = serving::SavedModel::load(dir);

  std::vector<census::Row> rows =
      census::make_rows(census::kServedRows, census::kServedSeed);
  int64_t n = census::kServedRows;
  std::vector<std::string> examples;
  std::vector<float> ages, hours;
  std::vector<std::string> educations, occupations;
  for (const census::Row &r : rows) {
    examples.push_back(data::ExampleBuilder()
                           .add_float("age", {r.age})
                           .add_bytes("education", {r.education})
                           .add_bytes("occupation", {r.occupation})
                           .add_float("hours", {r.hours})
                           .serialize());
    ages.push_back(r.age);
    hours.push_back(r.hours);
    educations.push_back(r.education);
    occupations.push_back(r.occupation);
  }
  serving::TensorMap classified = model->run(
      "serving_default", {{"inputs", TensorValue::of_strings({n}, examples)}});
  serving::TensorMap raw = model->run(
      "raw:predict",
      {{"age", TensorValue::of<float>({n, 1}, ages)},
       {"hours", TensorValue::of<float>({n, 1}, hours)},
       {"education", TensorValue::of_strings({n, 1}, educations)},
       {"occupation", TensorValue::of_strings({n, 1}, occupations)}});
  std::vector<float> scores = classified.at("scores").values<float>();
  std::vector<float> probabilities = raw.at("probabilities").values<float>();

  std::ifstream expected(work + "/" + census::kExpectedFile);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double p = 0;
    std::string cls;
    if (!(expected >> p >> cls))
      throw std::runtime_error("cannot read " +
                               std::string(census::kExpectedFile));
    if (std::fabs(scores[2 * i + 1] - p) > 1e-6 ||
        std::fabs(probabilities[2 * i + 1] - p) > 1e-6) {
      std::printf(
          "row %lld: served %.9g / %.9g, the Estimator predicted %.9g\n",
          static_cast<long long>(i), scores[2 * i + 1],
          probabilities[2 * i + 1], p);
      ++bad;
    }
    const std::string &top = scores[2 * i + 1] > scores[2 * i]
                                 ? classified.at("classes").strings[2 * i + 1]
                                 : classified.at("classes").strings[2 * i];
    if (top != cls) {
      std::printf("row %lld: served class %s, the Estimator predicted %s\n",
                  static_cast<long long>(i), top.c_str(), cls.c_str());
      ++bad;
    }
  }
  std::printf("census_serve: %s: %lld rows, %d disagreements\n", dir.c_str(),
              static_cast<long long>(n), bad);
  return bad == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: census_serve WORK_DIR\n";
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception &e) {
    std::cerr << "census_serve: " << e.what() << "\n";
    return 1;
  }
}
