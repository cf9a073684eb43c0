//===- keras_estimator_tool.cpp - model_to_estimator for the TF oracle ---===//
//
// What test/e2e/tf_keras_estimator_compat.py runs: model_to_estimator on a
// Keras model file, trained on given batches (one step each), evaluated,
// predicting, and written back, as a JSON case says:
//
//   {"model": "m.keras", "model_dir": "...", "seed": 1,
//    "train": [batch...], "eval": [batch...], "predict": batch,
//    "write_back": "out.keras",
//    "train_first": 1,                                   (optional)
//    "metric_names_map": {"accuracy": "acc"}}           (optional)
//   batch: {"features": {name: tensor}, "labels": tensor,
//           "sequence_features": [name...]}      (optional: dimension 1 is
//                                                 the batch's length)
//   tensor: {"dtype": "float32" | "int64" | "int32", "shape": [...],
//            "values": [...]}
//
// It prints one JSON object: "variables" (every Keras variable of the last
// checkpoint: name -> {"shape", "values"}), "checkpoint" (every variable
// name of the last checkpoint), "eval" (evaluate's result), "predictions"
// (output name -> {"shape", "values"}, the predict batch as one batch) and
// "written" (how many weights the write-back set). With "train_first": N,
// the first N batches are one train call and the rest a second one (from
// the checkpoint the first wrote), and "variables_first" holds the Keras
// variables of the checkpoint after the first N steps. An error prints
// "error: <what>" on stderr and exits 1 (the Python test checks the one
// line of the refusals it provokes).
//
//===----------------------------------------------------------------------===//

#include "estimator/KerasEstimator.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Keras/KerasGraph.h"

#include <rapidjson/document.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace estc;
using namespace estc::estimator;

namespace {

TensorValue read_tensor(const rapidjson::Value &v) {
  std::string dtype = v["dtype"].GetString();
  std::vector<int64_t> shape;
  for (const auto &d : v["shape"].GetArray())
    shape.push_back(d.GetInt64());
  const auto &values = v["values"].GetArray();
  if (dtype == "float32") {
    std::vector<float> x;
    for (const auto &e : values)
      x.push_back(static_cast<float>(e.GetDouble()));
    return TensorValue::of<float>(shape, x);
  }
  if (dtype == "int32") {
    std::vector<int32_t> x;
    for (const auto &e : values)
      x.push_back(e.GetInt());
    return TensorValue::of<int32_t>(shape, x);
  }
  if (dtype == "float64") {
    std::vector<double> x;
    for (const auto &e : values)
      x.push_back(e.GetDouble());
    return TensorValue::of<double>(shape, x);
  }
  std::vector<int64_t> x;
  for (const auto &e : values)
    x.push_back(e.GetInt64());
  return TensorValue::of<int64_t>(shape, x);
}

Batch read_batch(const rapidjson::Value &v) {
  Batch b;
  for (const auto &m : v["features"].GetObject())
    b.features[m.name.GetString()] = read_tensor(m.value);
  if (v.HasMember("labels"))
    b.labels = read_tensor(v["labels"]);
  if (v.HasMember("sequence_features"))
    for (const auto &k : v["sequence_features"].GetArray())
      b.sequence_features.insert(k.GetString());
  return b;
}

InputFn batches_fn(std::vector<Batch> batches) {
  return [batches]() {
    auto i = std::make_shared<size_t>(0);
    return Dataset::from_generator([batches, i]() -> std::optional<Batch> {
      if (*i >= batches.size())
        return std::nullopt;
      return batches[(*i)++];
    });
  };
}

void print_tensor(std::ostream &os, const TensorValue &t) {
  os << "{\"shape\": [";
  for (size_t i = 0; i < t.shape.size(); ++i)
    os << (i ? ", " : "") << t.shape[i];
  os << "], \"values\": [";
  char buf[40];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", t.element(i));
    os << (i ? ", " : "") << buf;
  }
  os << "]}";
}

std::string quoted(const std::string &s) { return "\"" + s + "\""; }

int run(const std::string &case_path) {
  std::ifstream in(case_path);
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document c;
  c.Parse(ss.str().c_str());
  if (!c.IsObject())
    throw std::invalid_argument(case_path + ": not a JSON object");

  KerasEstimatorOptions o;
  o.model_dir = c["model_dir"].GetString();
  RunConfigOptions rc;
  rc.tf_random_seed = c.HasMember("seed") ? c["seed"].GetInt64() : 1;
  rc.save_checkpoints_steps = 1000000;
  rc.save_summary_steps = 0;
  rc.log_step_count_steps = 1000;
  o.config = RunConfig(rc);
  if (c.HasMember("metric_names_map"))
    for (const auto &m : c["metric_names_map"].GetObject())
      o.metric_names_map[m.name.GetString()] = m.value.GetString();
  std::unique_ptr<KerasEstimator> est =
      model_to_estimator(c["model"].GetString(), o);

  std::vector<Batch> train, eval;
  if (c.HasMember("train"))
    for (const auto &b : c["train"].GetArray())
      train.push_back(read_batch(b));
  if (c.HasMember("eval"))
    for (const auto &b : c["eval"].GetArray())
      eval.push_back(read_batch(b));
  std::ostringstream os;
  os << "{";
  size_t first = c.HasMember("train_first")
                     ? static_cast<size_t>(c["train_first"].GetInt64())
                     : 0;
  if (first > 0 && first < train.size()) {
    est->train(batches_fn({train.begin(), train.begin() + first}),
               {.steps = static_cast<int64_t>(first)});
    train.erase(train.begin(), train.begin() + first);
    train::CheckpointReader reader =
        train::load_checkpoint(*est->latest_checkpoint());
    os << "\"variables_first\": {";
    bool comma = false;
    for (const auto &[name, value] :
         keras::variable_values(est->keras_model())) {
      (void)value;
      os << (comma ? ", " : "") << quoted(name) << ": ";
      print_tensor(os, reader.get_tensor(name));
      comma = true;
    }
    os << "}, ";
  }
  if (!train.empty())
    est->train(batches_fn(train),
               {.steps = static_cast<int64_t>(train.size())});

  std::optional<std::string> latest = est->latest_checkpoint();
  if (latest) {
    train::CheckpointReader reader = train::load_checkpoint(*latest);
    os << "\"checkpoint\": [";
    bool first = true;
    for (const auto &[name, spec] : reader.variables()) {
      (void)spec;
      os << (first ? "" : ", ") << quoted(name);
      first = false;
    }
    os << "], \"variables\": {";
    first = true;
    for (const auto &[name, value] :
         keras::variable_values(est->keras_model())) {
      (void)value;
      os << (first ? "" : ", ") << quoted(name) << ": ";
      print_tensor(os, reader.get_tensor(name));
      first = false;
    }
    os << "}, ";
  }
  if (!eval.empty()) {
    EvalResults r = est->evaluate(batches_fn(eval));
    os << "\"eval\": {";
    bool first = true;
    for (const auto &[k, v] : r) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      os << (first ? "" : ", ") << quoted(k) << ": " << buf;
      first = false;
    }
    os << "}, ";
  }
  if (c.HasMember("predict")) {
    os << "\"predictions\": {";
    bool first = true;
    for (const Prediction &p :
         est->predict(batches_fn({read_batch(c["predict"])}),
                      {.yield_single_examples = false}))
      for (const auto &[k, v] : p) {
        os << (first ? "" : ", ") << quoted(k) << ": ";
        print_tensor(os, v);
        first = false;
      }
    os << "}, ";
  }
  size_t written = 0;
  if (c.HasMember("write_back"))
    written = est->save_keras_model(c["write_back"].GetString());
  os << "\"written\": " << written << "}";
  std::cout << os.str() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: keras_estimator_tool CASE.json\n";
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
