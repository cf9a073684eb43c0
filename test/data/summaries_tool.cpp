//===- summaries_tool.cpp - In-graph summaries for tf_summaries_compat.py ===//
//
//   summaries_tool MODEL_DIR IMAGES.f32 N H W C STEPS SAVE_SUMMARY_STEPS
//
// Trains a small regression Estimator (JIT) on the N images of IMAGES.f32
// (raw little-endian float32, [N, H, W, C]; one batch of all N every step)
// for STEPS steps with save_summary_steps SAVE_SUMMARY_STEPS, then
// evaluates it once. Its model_fn defines one summary of each kind, as the
// Python side defines them in TensorFlow:
//
//   summary::scalar("x_mean", reduce_mean(x))
//   summary::histogram("x_hist", x)
//   summary::image("x_img", x, 2)
//   summary::text(graph, "notes", "hello **estc**")
//   name_scope("extra"): summary::scalar("x_max", reduce_max(x))
//   summary::scalar("x_min", reduce_min(x), "fam")   (a family)
//   summary::scalar("x_mean", reduce_mean(x) * 2)    (a repeated name)
//
// in every mode (only TRAIN's are written). Errors: one line on stderr,
// exit 1.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Summaries.h"
#include "lib/Graph/Train.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

using namespace estc;
using namespace estc::estimator;

namespace {

EstimatorSpec modelFn(const TensorMap &features, const Tensor &labels,
                      ModeKeys mode, const Params &, const RunConfig &) {
  Tensor x = features["x"];
  summary::scalar("x_mean", reduce_mean(x));
  summary::histogram("x_hist", x);
  summary::image("x_img", x, 2);
  summary::text(get_default_graph(), "notes", "hello **estc**");
  {
    Scope scope = get_default_graph().name_scope("extra");
    summary::scalar("x_max", reduce_max(x));
  }
  summary::scalar("x_min", reduce_min(x), "fam");
  summary::scalar("x_mean", reduce_mean(x) * 2.0);

  Dims shape = x.shape();
  Tensor flat = reshape(x, {-1, shape[1] * shape[2] * shape[3]});
  Tensor prediction = layers::dense(flat, 1);
  EstimatorSpec spec(mode);
  spec.predictions = {{"y", prediction}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::mean_squared_error(labels, prediction);
  spec.train_op = train::GradientDescentOptimizer(0.01).minimize(spec.loss);
  return spec;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 9) {
    std::cerr << "usage: summaries_tool MODEL_DIR IMAGES.f32 N H W C STEPS "
                 "SAVE_SUMMARY_STEPS\n";
    return 2;
  }
  try {
    std::string modelDir = argv[1];
    int64_t n = std::stoll(argv[3]), h = std::stoll(argv[4]),
            w = std::stoll(argv[5]), c = std::stoll(argv[6]);
    int64_t steps = std::stoll(argv[7]), every = std::stoll(argv[8]);
    std::ifstream in(argv[2], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof())
      throw std::runtime_error(std::string(argv[2]) + ": cannot read");
    TensorValue x =
        TensorValue::from_bytes(DType::Float32, {n, h, w, c}, std::move(bytes));
    std::vector<float> ys(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      ys[static_cast<size_t>(i)] = static_cast<float>(i % 3);
    TensorValue y = TensorValue::of<float>({n, 1}, ys);

    RunConfigOptions o;
    o.model_dir = modelDir;
    o.tf_random_seed = 1;
    o.save_summary_steps = every;
    o.log_step_count_steps = 1000000;
    Estimator est(modelFn, RunConfig::from_tf_config("", o), Params{});
    TrainOptions train;
    train.steps = steps;
    est.train(numpy_input_fn({{"x", x}}, y, {n, std::nullopt, false, 0}),
              train);
    est.evaluate(numpy_input_fn({{"x", x}}, y, {n, 1, false, 0}));
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
