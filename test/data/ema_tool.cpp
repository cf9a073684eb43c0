//===- ema_tool.cpp - Moving-average evaluation for the TF oracle -------===//
//
// test/e2e/tf_ema_compat.py writes a case (the initial weights of a dense
// layer, training and evaluation data); this tool trains the model through
// the JIT Estimator (SGD and an ExponentialMovingAverage(decay,
// num_updates=global_step) of the trainable variables), then evaluates and
// predicts twice: with the raw variables and with the EVAL / PREDICT
// specs' scaffold.saver_var_list = ema.variables_to_restore() (TF's
// Scaffold(saver=Saver(ema.variables_to_restore()))). It prints the
// checkpoint's variables, both evaluations' losses and both predictions,
// which the script compares with TF 2.15's Estimator.
//
// usage: ema_tool CASE_FILE MODEL_DIR
// CASE_FILE lines: `dims F C`, `steps N`, `batch B`, `decay D`, `lr X`,
// `kernel V...` ([F, C]), `bias V...`, `x V...` / `y V...` (training,
// row-major [n, F] / [n]), `ex V...` / `ey V...` (evaluation).
// Output lines: `var NAME V...`, `loss raw|avg X`, `logits raw|avg V...`.
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace estc;
using namespace estc::estimator;

namespace {

[[noreturn]] void die(const std::string &message) {
  std::cerr << "ema_tool: error: " << message << "\n";
  std::exit(1);
}

std::map<std::string, std::vector<double>> readCase(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    die("cannot read " + path);
  std::map<std::string, std::vector<double>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    if (!(s >> key))
      continue;
    double v;
    std::vector<double> values;
    while (s >> v)
      values.push_back(v);
    out[key] = values;
  }
  return out;
}

EstimatorSpec emaModel(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &params, const RunConfig &) {
  Graph &g = get_default_graph();
  Tensor logits = layers::dense(features["x"], params.get<int64_t>("classes"),
                                {.kernel_initializer = constant_initializer(
                                     params.get<std::vector<double>>("kernel")),
                                 .bias_initializer = constant_initializer(
                                     params.get<std::vector<double>>("bias"))});
  EstimatorSpec spec(mode);
  spec.predictions = {{"logits", logits}};
  train::ExponentialMovingAverage ema(params.get<double>("decay"),
                                      g.global_step());
  if (mode == ModeKeys::TRAIN) {
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    spec.train_op =
        group({train::GradientDescentOptimizer(params.get<double>("lr"))
                   .minimize(spec.loss),
               ema.apply(g.trainable_variables())});
    return spec;
  }
  if (params.get<bool>("shadows"))
    spec.scaffold.saver_var_list = ema.variables_to_restore();
  if (mode == ModeKeys::EVAL)
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  return spec;
}

TensorValue floats(const std::vector<double> &v, const Dims &shape) {
  return TensorValue::of<float>(shape, std::vector<float>(v.begin(), v.end()));
}
TensorValue ints(const std::vector<double> &v) {
  return TensorValue::of<int64_t>({static_cast<int64_t>(v.size())},
                                  std::vector<int64_t>(v.begin(), v.end()));
}

void print(const std::string &key, const std::vector<float> &values) {
  std::cout << key;
  for (float v : values) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.9g", v);
    std::cout << buf;
  }
  std::cout << "\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3)
    die("usage: ema_tool CASE_FILE MODEL_DIR");
  try {
    auto k = readCase(argv[1]);
    for (const char *key : {"dims", "steps", "batch", "decay", "lr", "kernel",
                            "bias", "x", "y", "ex", "ey"})
      if (!k.count(key))
        die(std::string("the case has no '") + key + "' line");
    auto F = static_cast<int64_t>(k["dims"].at(0));
    auto C = static_cast<int64_t>(k["dims"].at(1));
    auto batch = static_cast<int64_t>(k["batch"].at(0));
    auto n = static_cast<int64_t>(k["y"].size());
    auto en = static_cast<int64_t>(k["ey"].size());
    Params params{{"classes", C},        {"kernel", k["kernel"]},
                  {"bias", k["bias"]},   {"decay", k["decay"].at(0)},
                  {"lr", k["lr"].at(0)}, {"shadows", false}};
    RunConfigOptions o;
    o.model_dir = argv[2];
    o.save_checkpoints_steps = 1000000;
    o.log_step_count_steps = 1000000;
    RunConfig config = RunConfig::from_tf_config("", o);
    Features x{{"x", floats(k["x"], {n, F})}};
    Features ex{{"x", floats(k["ex"], {en, F})}};
    Estimator raw(emaModel, config, params);
    raw.train(numpy_input_fn(x, ints(k["y"]), {batch, std::nullopt, false, 0}),
              {.steps = static_cast<int64_t>(k["steps"].at(0))});
    for (const std::string &name : raw.get_variable_names()) {
      TensorValue v = raw.get_variable_value(name);
      if (v.dtype == DType::Float32) // not global_step, the input's position
        print("var " + name, v.values<float>());
    }
    Params avgParams = params;
    avgParams.set("shadows", true);
    Estimator avg(emaModel, config, avgParams);
    for (auto [which, est] : {std::pair{"raw", &raw}, std::pair{"avg", &avg}}) {
      EvalResults r = est->evaluate(
          numpy_input_fn(ex, ints(k["ey"]), {batch, 1, false, 0}));
      print(std::string("loss ") + which, {static_cast<float>(r.at("loss"))});
      std::vector<float> logits;
      for (const Prediction &p :
           est->predict(numpy_input_fn(ex, std::nullopt, {batch, 1, false, 0})))
        for (float v : p.at("logits").values<float>())
          logits.push_back(v);
      print(std::string("logits ") + which, logits);
    }
  } catch (const std::exception &e) {
    die(e.what());
  }
  return 0;
}
