//===- canned_tool.cpp - Canned estimators for tf_canned_compat.py --------===//
//
// Trains a LinearClassifier or a DNNClassifier (the JIT Estimator) on the
// batches it reads from stdin, in order, and prints each step's loss and
// the final variables, for test/e2e/tf_canned_compat.py to compare with TF
// 2.15's estimator on the same batches. The feature columns are fixed here
// and in the script (keep them equal):
//
//   linear  numeric_column("age"); bucketized_column(age, [25, 40, 60]);
//           categorical_column_with_vocabulary_list("sex", ["m", "f"]);
//           categorical_column_with_hash_bucket("city", 10);
//           categorical_column_with_identity("n", 4);
//           crossed_column([age_bucketized, "sex"], 20)
//   dnn     numeric_column("age"); indicator_column(sex);
//           embedding_column(city, 3); indicator_column(n)
//
// Input (one case):
//   model linear|dnn
//   hidden U...               dnn hidden_units
//   batch_norm                dnn: batch normalization on
//   optimizer NAME [RATE]     default: the estimator's
//   batch_size B
//   steps S
//   f KEY V...                a float feature, every example
//   i KEY V...                an int64 feature
//   s KEY V...                a string feature (space-free values)
//   labels V...               int64 class ids
//   init NAME D,D V...        a variable's starting value (warm start; TF's
//                             initial variables for the dnn)
// Output: "loss STEP VALUE" per step, then "var NAME V..." for every
// variable of the final checkpoint (optimizer slots included), then "done".
// Errors: one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

using namespace estc;
using namespace estc::estimator;
namespace fc = estc::feature_column;

namespace {

/// Fetches the loss of every step.
class LossHook : public SessionRunHook {
public:
  SessionRunArgs before_run(SessionRunContext &) override { return {{"loss"}}; }
  void after_run(SessionRunContext &, const SessionRunValues &v) override {
    losses.push_back(v.results.at("loss").values<float>().at(0));
  }
  std::vector<float> losses;
};

FeatureColumns linearColumns() {
  auto age = fc::numeric_column("age");
  auto ageBuckets = fc::bucketized_column(age, {25, 40, 60});
  return {age,
          ageBuckets,
          fc::categorical_column_with_vocabulary_list(
              "sex", std::vector<std::string>{"m", "f"}),
          fc::categorical_column_with_hash_bucket("city", 10),
          fc::categorical_column_with_identity("n", 4),
          fc::crossed_column({fc::CrossKey(ageBuckets), "sex"}, 20)};
}

FeatureColumns dnnColumns() {
  return {fc::numeric_column("age"),
          fc::indicator_column(fc::categorical_column_with_vocabulary_list(
              "sex", std::vector<std::string>{"m", "f"})),
          fc::embedding_column(
              fc::categorical_column_with_hash_bucket("city", 10), 3),
          fc::indicator_column(fc::categorical_column_with_identity("n", 4))};
}

void printFloats(const std::string &head, const TensorValue &t) {
  std::cout << head;
  char buffer[40];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    std::snprintf(buffer, sizeof(buffer), " %.9g", t.element(i));
    std::cout << buffer;
  }
  std::cout << "\n";
}

int run() {
  std::string model, optimizer;
  std::optional<double> rate;
  std::vector<int64_t> hidden;
  bool batchNorm = false;
  int64_t batchSize = 8, steps = 10;
  Features x;
  std::optional<TensorValue> labels;
  train::VariableMap init;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string op, key;
    in >> op;
    if (op == "model") {
      in >> model;
    } else if (op == "hidden") {
      for (int64_t u; in >> u;)
        hidden.push_back(u);
    } else if (op == "batch_norm") {
      batchNorm = true;
    } else if (op == "optimizer") {
      in >> optimizer;
      if (double r; in >> r)
        rate = r;
    } else if (op == "batch_size") {
      in >> batchSize;
    } else if (op == "steps") {
      in >> steps;
    } else if (op == "f") {
      in >> key;
      std::vector<float> v;
      for (float f; in >> f;)
        v.push_back(f);
      x[key] = TensorValue::of<float>({static_cast<int64_t>(v.size())}, v);
    } else if (op == "i" || op == "labels") {
      if (op == "i")
        in >> key;
      std::vector<int64_t> v;
      for (int64_t i; in >> i;)
        v.push_back(i);
      TensorValue t =
          TensorValue::of<int64_t>({static_cast<int64_t>(v.size())}, v);
      if (op == "i")
        x[key] = t;
      else
        labels = t;
    } else if (op == "s") {
      in >> key;
      std::vector<std::string> v;
      for (std::string s; in >> s;)
        v.push_back(s);
      x[key] = TensorValue::of_strings({static_cast<int64_t>(v.size())}, v);
    } else if (op == "init") {
      std::string name, dims;
      in >> name >> dims;
      std::vector<int64_t> shape;
      std::istringstream ds(dims);
      for (std::string d; std::getline(ds, d, ',');)
        if (!d.empty())
          shape.push_back(std::stoll(d));
      std::vector<float> v;
      for (float f; in >> f;)
        v.push_back(f);
      init[name] = TensorValue::of<float>(shape, v);
    } else if (!op.empty()) {
      throw std::invalid_argument("unknown line '" + op + "'");
    }
  }
  if (!labels)
    throw std::invalid_argument("no labels");

  auto dir = std::filesystem::temp_directory_path() /
             ("estc-canned-tool-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::optional<WarmStartSettings> warm;
  if (!init.empty()) {
    std::string file = (dir / "init.safetensors").string();
    train::write_checkpoint(file, init, 0);
    warm = WarmStartSettings();
    warm->ckpt_to_initialize_from = file;
  }
  RunConfigOptions o;
  o.model_dir = (dir / "model").string();
  o.tf_random_seed = 1;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000;
  RunConfig config = RunConfig::from_tf_config("", o);

  std::unique_ptr<Estimator> est;
  if (model == "linear") {
    LinearOptions lo;
    if (!optimizer.empty())
      lo.optimizer = OptimizerSpec(optimizer, rate);
    est = std::make_unique<LinearClassifier>(
        linearColumns(), ClassifierOptions{}, lo, config, warm);
  } else if (model == "dnn") {
    DNNOptions dnn;
    dnn.hidden_units = hidden;
    dnn.batch_norm = batchNorm;
    if (!optimizer.empty())
      dnn.optimizer = OptimizerSpec(optimizer, rate);
    est = std::make_unique<DNNClassifier>(dnnColumns(), dnn,
                                          ClassifierOptions{}, config, warm);
  } else {
    throw std::invalid_argument("unknown model '" + model + "'");
  }
  auto losses = std::make_shared<LossHook>();
  est->train(numpy_input_fn(x, labels, {batchSize, 1, false, 0}),
             {.hooks = {losses}, .steps = steps});
  char buffer[40];
  for (size_t i = 0; i < losses->losses.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%.9g", losses->losses[i]);
    std::cout << "loss " << i + 1 << " " << buffer << "\n";
  }
  for (const std::string &name : est->get_variable_names())
    printFloats("var " + name, est->get_variable_value(name));
  std::cout << "done\n";
  std::filesystem::remove_all(dir);
  return 0;
}

} // namespace

int main() {
  try {
    return run();
  } catch (const std::exception &e) {
    std::cerr << "canned_tool: " << e.what() << "\n";
    return 1;
  }
}
