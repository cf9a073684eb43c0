//===- TestExports.h - Trained, exported models for the serving tests ---===//
//
// Two small models trained for a few steps and exported as an Estimator
// user would (Estimator::export_saved_model), for the loader's and the
// server's tests:
//
//   tiny     a custom model_fn (test/unit/TinyClassifier.h: x F32 [4] ->
//            3 classes), raw receiver {"x": F32 [-1, 4]}: signature
//            serving_default (PredictOutput: classes, probabilities)
//   linear   a LinearClassifier over numeric x1, x2 and a vocabulary column
//            "color" (red, green, blue), label vocabulary no / yes; a parsing
//            receiver (serialized tf.Example) with a raw alternative "raw":
//            serving_default / classification (classify), regression
//            (regress), predict, raw:predict
//
// Each export_* trains in `model_dir`, exports into `export_base` and
// returns the export folder; the Estimator stays alive in `holder` so the
// caller can compare with Estimator::predict.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_SERVING_TESTEXPORTS_H
#define ESTC_TEST_SERVING_TESTEXPORTS_H

#include "estimator/Canned/Estimators.h"
#include "estimator/Estimator.h"
#include "lib/Data/Example.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "test/unit/TinyClassifier.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace estc {
namespace serving_test {

using namespace estimator;
namespace fc = feature_column;

inline RunConfig quietConfig(const std::string &model_dir) {
  RunConfigOptions o;
  o.model_dir = model_dir;
  o.tf_random_seed = 1;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000;
  return RunConfig::from_tf_config("", o);
}

inline std::string export_tiny(const std::string &model_dir,
                               const std::string &export_base,
                               std::unique_ptr<Estimator> &holder) {
  holder =
      std::make_unique<Estimator>(tiny::classifier_fn, quietConfig(model_dir));
  holder->train(tiny::trainInput(), {.steps = 30});
  return holder->export_saved_model(
      export_base,
      build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}}));
}

/// The linear model's raw examples: x1, x2 in [-1, 1], a color, a label.
struct LinearData {
  Features x;
  TensorValue y;
};
inline LinearData linear_data(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const char *colors[] = {"red", "green", "blue"};
  std::vector<float> x1(n), x2(n);
  std::vector<std::string> color(n), label(n);
  for (int64_t i = 0; i < n; ++i) {
    x1[i] = u(rng);
    x2[i] = u(rng);
    int c = static_cast<int>(rng() % 3);
    color[i] = colors[c];
    float s = x1[i] + x2[i] / 2 + (c == 0 ? 1.0f : c == 2 ? -1.0f : 0.0f);
    label[i] = s > 0.2f ? "yes" : "no";
  }
  return {{{"x1", TensorValue::of<float>({n, 1}, x1)},
           {"x2", TensorValue::of<float>({n, 1}, x2)},
           {"color", TensorValue::of_strings({n, 1}, color)}},
          TensorValue::of_strings({n}, label)};
}

inline fc::FeatureColumns linear_columns() {
  return {fc::numeric_column("x1"), fc::numeric_column("x2"),
          fc::categorical_column_with_vocabulary_list(
              "color", {"red", "green", "blue"})};
}

/// Serialized tf.Example of rows [begin, end) of `d`.
inline std::vector<std::string> linear_examples(const LinearData &d,
                                                int64_t begin, int64_t end) {
  std::vector<float> x1 = d.x.at("x1").values<float>();
  std::vector<float> x2 = d.x.at("x2").values<float>();
  std::vector<std::string> out;
  for (int64_t i = begin; i < end; ++i)
    out.push_back(data::ExampleBuilder()
                      .add_float("x1", {x1[i]})
                      .add_float("x2", {x2[i]})
                      .add_bytes("color", {d.x.at("color").strings[i]})
                      .serialize());
  return out;
}

inline std::string export_linear(const std::string &model_dir,
                                 const std::string &export_base,
                                 std::unique_ptr<Estimator> &holder) {
  ClassifierOptions head;
  head.label_vocabulary = {"no", "yes"};
  holder = std::make_unique<LinearClassifier>(
      linear_columns(), head, LinearOptions(), quietConfig(model_dir));
  LinearData train = linear_data(400, 1);
  holder->train(numpy_input_fn(train.x, train.y, {32, std::nullopt, true, 7}),
                {.steps = 60});
  ServingInputReceiverFn parsing = build_parsing_serving_input_receiver_fn(
      fc::make_parse_example_spec(linear_columns()));
  ServingInputReceiverFn withRaw = [parsing] {
    ServingInputReceiver r = parsing();
    ReceiverTensors raw;
    raw.tensors = {{"x1", DType::Float32, {-1, 1}},
                   {"x2", DType::Float32, {-1, 1}},
                   {"color", DType::String, {-1, 1}}};
    r.receiver_tensors_alternatives["raw"] = raw;
    return r;
  };
  return holder->export_saved_model(export_base, withRaw);
}

} // namespace serving_test
} // namespace estc

#endif // ESTC_TEST_SERVING_TESTEXPORTS_H
