//===- canned_tool.cpp - Canned estimators for tf_canned_compat.py --------===//
//
// Trains a LinearClassifier, a DNNClassifier or an RNNClassifier (the JIT
// Estimator) on the batches it reads from stdin, in order, and prints each
// step's loss and the final variables, for test/e2e/tf_canned_compat.py to
// compare with TF 2.15's estimator on the same batches. The feature columns are
// fixed here and in the script (keep them equal):
//
//   linear  numeric_column("age"); bucketized_column(age, [25, 40, 60]);
//           categorical_column_with_vocabulary_list("sex", ["m", "f"]);
//           categorical_column_with_hash_bucket("city", 10);
//           categorical_column_with_identity("n", 4);
//           crossed_column([age_bucketized, "sex"], 20)
//   dnn     numeric_column("age"); indicator_column(sex);
//           embedding_column(city, 3); indicator_column(n)
//   rnn     sequence: embedding_column(
//             sequence_categorical_column_with_identity("tok", 7), 3),
//             sequence_numeric_column("x"); context: numeric_column("age")
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
//   rnn: cell C; units U...; n_classes N; then per batch, in order:
//   batch B T                 a new batch of B sequences of T steps
//   tok V...                  B * T ids, -1 where a step has none
//   x V...                    B * T values, nan where a step has none
//                             (a SparseTensor of the others)
//   age V...                  B values; labels V...: B class ids
//   init NAME D,D V...        a variable's starting value (warm start; TF's
//                             initial variables for the dnn)
// Output: "loss STEP VALUE" per step, then "var NAME V..." for every
// variable of the final checkpoint (optimizer slots included), then "done".
// Errors: one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"
#include "lib/Summary/Summary.h"

#include <unistd.h>

#include <cmath>
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

FeatureColumns rnnSequenceColumns() {
  return {fc::embedding_column(
              fc::sequence_categorical_column_with_identity("tok", 7), 3),
          fc::sequence_numeric_column("x")};
}

/// The rnn batches: features tok (dense, -1 missing), x (sparse), age.
struct RnnBatch {
  int64_t batch = 0, steps = 0;
  std::vector<int64_t> tok, labels;
  std::vector<float> x, age;
  data::Element element() const {
    std::vector<int64_t> indices;
    std::vector<float> values;
    for (int64_t i = 0; i < batch * steps; ++i)
      if (!std::isnan(x[static_cast<size_t>(i)])) {
        indices.push_back(i / steps);
        indices.push_back(i % steps);
        values.push_back(x[static_cast<size_t>(i)]);
      }
    auto n = static_cast<int64_t>(values.size());
    std::map<std::string, data::Element> f;
    f.emplace("tok", TensorValue::of<int64_t>({batch, steps}, tok));
    f.emplace("x", data::Element(data::SparseTensor::make(
                       indices, TensorValue::of<float>({n}, values),
                       {batch, steps})));
    f.emplace("age", TensorValue::of<float>({batch, 1}, age));
    return data::Element::tuple(
        {data::Element::dict(std::move(f)),
         data::Element(TensorValue::of<int64_t>({batch, 1}, labels))});
  }
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
  std::string cell = "simple_rnn";
  std::vector<int64_t> units;
  int64_t nClasses = 2;
  std::vector<RnnBatch> rnnBatches;
  auto floats = [](std::istringstream &in) {
    std::vector<float> v;
    for (std::string w; in >> w;)
      v.push_back(w == "nan" ? std::nanf("") : std::stof(w));
    return v;
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string op, key;
    in >> op;
    if (op == "model") {
      in >> model;
    } else if (op == "cell") {
      in >> cell;
    } else if (op == "units") {
      for (int64_t u; in >> u;)
        units.push_back(u);
    } else if (op == "n_classes") {
      in >> nClasses;
    } else if (op == "batch") {
      rnnBatches.emplace_back();
      in >> rnnBatches.back().batch >> rnnBatches.back().steps;
    } else if (!rnnBatches.empty() && op == "tok") {
      for (int64_t i; in >> i;)
        rnnBatches.back().tok.push_back(i);
    } else if (!rnnBatches.empty() && op == "x") {
      rnnBatches.back().x = floats(in);
    } else if (!rnnBatches.empty() && op == "age") {
      rnnBatches.back().age = floats(in);
    } else if (!rnnBatches.empty() && op == "labels") {
      for (int64_t i; in >> i;)
        rnnBatches.back().labels.push_back(i);
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
  if (!labels && rnnBatches.empty())
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
  // Every step's summaries, as the TF side's RunConfig (compared by
  // tf_canned_compat.py).
  o.save_summary_steps = 1;
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
  } else if (model == "rnn") {
    RNNOptions ro;
    ro.context_feature_columns = {fc::numeric_column("age")};
    ro.units = units;
    ro.cell_type = cell;
    if (!optimizer.empty())
      ro.optimizer = OptimizerSpec(optimizer, rate);
    RNNClassifierOptions head;
    head.n_classes = nClasses;
    est = std::make_unique<RNNClassifier>(rnnSequenceColumns(), ro, head,
                                          config, warm);
  } else {
    throw std::invalid_argument("unknown model '" + model + "'");
  }
  auto losses = std::make_shared<LossHook>();
  if (model == "rnn") {
    auto batches = std::make_shared<std::vector<RnnBatch>>(rnnBatches);
    InputFn input = [batches]() -> Dataset {
      return data::Dataset::range(static_cast<int64_t>(batches->size()))
          .map([batches](data::Element e) {
            int64_t i = data::tensor(e).values<int64_t>()[0];
            return (*batches)[static_cast<size_t>(i)].element();
          });
    };
    est->train(input, {.hooks = {losses}, .steps = steps});
  } else {
    est->train(numpy_input_fn(x, labels, {batchSize, 1, false, 0}),
               {.hooks = {losses}, .steps = steps});
  }
  char buffer[40];
  for (size_t i = 0; i < losses->losses.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%.9g", losses->losses[i]);
    std::cout << "loss " << i + 1 << " " << buffer << "\n";
  }
  for (const std::string &name : est->get_variable_names())
    printFloats("var " + name, est->get_variable_value(name));
  // The summaries the model wrote (the event files of model_dir): scalars
  // and the histograms' statistics, by step and tag.
  for (const std::string &file : summary::list_event_files(*o.model_dir))
    for (const summary::Event &event : summary::read_events(file)) {
      if (!event.has_summary())
        continue;
      for (const auto &value : event.summary().value()) {
        std::cout << "summary " << event.step() << " " << value.tag();
        if (value.has_histo()) {
          const auto &h = value.histo();
          std::snprintf(buffer, sizeof(buffer), " histo %.9g", h.min());
          std::cout << buffer;
          for (double v : {h.max(), h.num(), h.sum(), h.sum_squares()}) {
            std::snprintf(buffer, sizeof(buffer), " %.9g", v);
            std::cout << buffer;
          }
        } else if (value.value_case() ==
                   estc::tensorboard::Summary::Value::kSimpleValue) {
          std::snprintf(buffer, sizeof(buffer), " scalar %.9g",
                        value.simple_value());
          std::cout << buffer;
        } else {
          std::cout << " other";
        }
        std::cout << "\n";
      }
    }
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
