//===- signatures_compat.cpp - estc's export signatures against TF 2.15 ---===//
//
// The C++ half of test/serving/tf_signatures_oracle.py: exports with estc
// (the JIT Estimator, one training step on the oracle's four examples) the
// same models with the same feature columns and receivers as the oracle,
// then compares every export's saved_model.json "signatures" with what TF
// wrote in the oracle's JSON: the signature names (so the ones TF excludes
// for a receiver too), and per signature the method name, the input and
// output aliases and each tensor's dtype and shape. Tensor names are not
// compared (TF's are graph tensor names, estc's receiver keys and compiled
// outputs).
//
// usage: signatures_compat --tf=<oracle JSON> --work=<dir>
// Prints "<case>: ok" or one "DIFFERENCE <case> <signature>: ..." line per
// difference; the differences known and reported (kKnown) are printed as
// KNOWN with their reason. Exits 1 when there is another difference or a
// known one no longer occurs, 77 (ctest: skipped) when the oracle's JSON is
// absent (it was skipped: no TensorFlow), 2 on bad usage.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Estimators.h"
#include "estimator/Estimator.h"
#include "estimator/Export.h"
#include "estimator/FeatureColumnTransform.h"
#include "lib/Data/Dataset.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace estc;
using namespace estc::estimator;
namespace fc = estc::feature_column;
namespace fs = std::filesystem;

namespace {

/// One tensor of a signature: dtype and shape ("null" for unknown rank).
struct Tensor_ {
  std::string dtype;
  std::string shape;
  bool operator!=(const Tensor_ &o) const {
    return dtype != o.dtype || shape != o.shape;
  }
};
std::string str(const Tensor_ &t) { return t.dtype + " " + t.shape; }

struct Sig {
  std::string method;
  std::map<std::string, Tensor_> inputs, outputs;
};
using Sigs = std::map<std::string, Sig>;

std::string shapeOf(const rapidjson::Value &v) {
  if (!v.IsArray())
    return "null";
  std::string s = "[";
  for (const auto &d : v.GetArray())
    s += (s.size() > 1 ? "," : "") + std::to_string(d.GetInt64());
  return s + "]";
}

std::map<std::string, Tensor_> tensorsOf(const rapidjson::Value &v) {
  std::map<std::string, Tensor_> out;
  for (const auto &m : v.GetObject())
    out[m.name.GetString()] = {m.value["dtype"].GetString(),
                               shapeOf(m.value["shape"])};
  return out;
}

/// The signatures of a "signatures" object (TF's JSON and estc's
/// saved_model.json have the same shape for what is compared).
Sigs sigsOf(const rapidjson::Value &v) {
  Sigs out;
  for (const auto &m : v.GetObject()) {
    Sig s;
    s.method = m.value["method_name"].GetString();
    s.inputs = tensorsOf(m.value["inputs"]);
    s.outputs = tensorsOf(m.value["outputs"]);
    out[m.name.GetString()] = s;
  }
  return out;
}

std::string readFile(const fs::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The oracle's four examples: age float [4, 1], color string [4, 1].
std::map<std::string, data::Element> features(bool withAge) {
  std::map<std::string, data::Element> f;
  if (withAge)
    f.emplace("age", TensorValue::of<float>({4, 1}, {25, 40, 61, 33}));
  f.emplace("color",
            TensorValue::of_strings({4, 1}, {"red", "green", "blue", "red"}));
  return f;
}

InputFn inputFn(bool withAge, TensorValue labels) {
  return [=] {
    return Dataset(data::Dataset::from_tensor_slices(
                       data::Element::tuple(
                           {data::Element::dict(features(withAge)), labels}))
                       .repeat()
                       .batch(4));
  };
}

/// The oracle's custom model_fn: a dense layer over input_layer(age,
/// indicator(color)); export_outputs {"predict": PredictOutput({"score",
/// "id"})}.
EstimatorSpec customModelFn(const TensorMap &feats, const Tensor &labels,
                            ModeKeys mode, const Params &params,
                            const RunConfig &config) {
  (void)params;
  (void)config;
  auto color = fc::categorical_column_with_vocabulary_list(
      "color", std::vector<std::string>{"red", "green", "blue"});
  Tensor net = fc::input_layer(
      feats, {fc::numeric_column("age"), fc::indicator_column(color)});
  Tensor score = layers::dense(net, 1);
  Tensor id = argmax(score, 1);
  EstimatorSpec spec(mode);
  spec.predictions = {{"score", score}, {"id", id}};
  if (mode == ModeKeys::PREDICT) {
    spec.export_outputs = {{"predict", PredictOutput(spec.predictions)}};
    return spec;
  }
  spec.loss = reduce_mean(square(score - labels));
  spec.train_op = train::GradientDescentOptimizer(0.01).minimize(spec.loss);
  return spec;
}

struct Model {
  std::function<std::unique_ptr<Estimator>(const RunConfig &, bool withAge)>
      make;
  TensorValue labels;
};

FeatureColumns columns(bool withAge) {
  FeatureColumns c;
  if (withAge)
    c.push_back(fc::numeric_column("age"));
  c.push_back(fc::categorical_column_with_vocabulary_list(
      "color", std::vector<std::string>{"red", "green", "blue"}));
  return c;
}

std::map<std::string, Model> models() {
  std::map<std::string, Model> m;
  m["linear_binary"] = {[](const RunConfig &config, bool withAge) {
                          return std::make_unique<LinearClassifier>(
                              columns(withAge), ClassifierOptions{},
                              LinearOptions{}, config);
                        },
                        TensorValue::of<int64_t>({4, 1}, {0, 1, 1, 0})};
  m["linear_vocab3"] = {[](const RunConfig &config, bool withAge) {
                          ClassifierOptions head;
                          head.n_classes = 3;
                          head.label_vocabulary = {"a", "b", "c"};
                          return std::make_unique<LinearClassifier>(
                              columns(withAge), head, LinearOptions{}, config);
                        },
                        TensorValue::of_strings({4, 1}, {"a", "b", "c", "a"})};
  m["linear_regressor"] = {[](const RunConfig &config, bool withAge) {
                             return std::make_unique<LinearRegressor>(
                                 columns(withAge), RegressorOptions{},
                                 LinearOptions{}, config);
                           },
                           TensorValue::of<float>({4, 1}, {1, 2, 3, 4})};
  m["custom_predict"] = {
      [](const RunConfig &config, bool withAge) {
        auto est = std::make_unique<Estimator>(customModelFn, config);
        est->set_host_transform(fc::make_host_transform(columns(withAge)));
        return est;
      },
      TensorValue::of<float>({4, 1}, {1, 2, 3, 4})};
  return m;
}

/// The oracle's receivers.
ServingInputReceiverFn receiverFn(const std::string &name) {
  std::vector<TensorSpec> raw = {{"age", DType::Float32, {-1, 1}},
                                 {"color", DType::String, {-1, 1}}};
  if (name == "parsing")
    return build_parsing_serving_input_receiver_fn(
        fc::make_parse_example_spec(columns(true)));
  if (name == "raw")
    return build_raw_serving_input_receiver_fn(raw);
  if (name == "raw_string")
    return build_raw_serving_input_receiver_fn(
        {{"color", DType::String, {-1, 1}}});
  if (name == "parsing_alt")
    return [raw] {
      // Dense parsing; the parsed features are the "raw" alternative.
      data::FeatureSpecs spec;
      spec["age"] = data::FixedLenFeature{{1}, DType::Float32, std::nullopt};
      spec["color"] = data::FixedLenFeature{{1}, DType::String, std::nullopt};
      ServingInputReceiver r;
      r.tensors = {{"examples", DType::String, {-1}}};
      r.parse_spec = spec;
      ReceiverTensors alt;
      alt.tensors = raw;
      r.receiver_tensors_alternatives["raw"] = alt;
      return r;
    };
  throw std::invalid_argument("signatures_compat: unknown receiver '" + name +
                              "'");
}

/// The differences between TF's signatures and estc's, one line each.
std::vector<std::string> compare(const Sigs &tf, const Sigs &estc) {
  std::vector<std::string> out;
  for (const auto &[name, t] : tf) {
    auto it = estc.find(name);
    if (it == estc.end()) {
      out.push_back(name + ": in TF's export, not in estc's");
      continue;
    }
    const Sig &e = it->second;
    if (t.method != e.method)
      out.push_back(name + ": method_name TF " + t.method + ", estc " +
                    e.method);
    for (const char *side : {"inputs", "outputs"}) {
      bool in = std::string(side) == "inputs";
      const auto &tt = in ? t.inputs : t.outputs;
      const auto &et = in ? e.inputs : e.outputs;
      for (const auto &[alias, tensor] : tt) {
        auto found = et.find(alias);
        if (found == et.end())
          out.push_back(name + ": " + side + " '" + alias + "' (" +
                        str(tensor) + ") only in TF's");
        else if (found->second != tensor)
          out.push_back(name + ": " + side + " '" + alias + "' TF " +
                        str(tensor) + ", estc " + str(found->second));
      }
      for (const auto &[alias, tensor] : et)
        if (!tt.count(alias))
          out.push_back(name + ": " + side + " '" + alias + "' (" +
                        str(tensor) + ") only in estc's");
    }
  }
  for (const auto &[name, e] : estc)
    if (!tf.count(name))
      out.push_back(name + ": in estc's export, not in TF's (" + e.method +
                    ")");
  return out;
}

/// Differences from TF known and reported, each with why it is there: a
/// difference line containing `text` is printed as KNOWN, not counted. An
/// entry that matches nothing fails the run (it was fixed: remove it).
struct Known {
  const char *text;
  const char *why;
};
// None today; an entry looks like
//   {"outputs 'all_class_ids' TF I32", "why estc differs"}.
const std::vector<Known> kKnown = {};

int run(const std::string &tfPath, const fs::path &work) {
  if (!fs::exists(tfPath)) {
    std::cout << "SKIP: no TF signatures at " << tfPath
              << " (tf_signatures_oracle.py was skipped: no TensorFlow)\n";
    return 77;
  }
  rapidjson::Document tf;
  tf.Parse(readFile(tfPath).c_str());
  if (tf.HasParseError() || !tf.IsObject()) {
    std::cerr << "signatures_compat: " << tfPath << " is not JSON\n";
    return 2;
  }
  std::map<std::string, Model> all = models();
  int differences = 0;
  std::map<std::string, int> used; // known differences seen
  for (const auto &c : tf.GetObject()) {
    std::string name = c.name.GetString();
    std::string model = name.substr(0, name.find('/'));
    std::string receiver = name.substr(name.find('/') + 1);
    bool withAge = receiver != "raw_string";
    fs::path dir = work / model / receiver;
    fs::remove_all(dir);
    RunConfigOptions o;
    o.model_dir = (dir / "model").string();
    o.tf_random_seed = 1;
    o.log_step_count_steps = 100;
    o.save_summary_steps = 0;
    std::vector<std::string> diffs;
    try {
      const Model &m = all.at(model);
      std::unique_ptr<Estimator> est =
          m.make(RunConfig::from_tf_config("", o), withAge);
      est->train(inputFn(withAge, m.labels), {.steps = 1});
      std::string exported = est->export_saved_model((dir / "export").string(),
                                                     receiverFn(receiver));
      rapidjson::Document saved;
      saved.Parse(readFile(fs::path(exported) / "saved_model.json").c_str());
      diffs =
          compare(sigsOf(c.value["signatures"]), sigsOf(saved["signatures"]));
    } catch (const std::exception &e) {
      diffs.push_back(std::string("estc's export failed: ") + e.what());
    }
    bool ok = true;
    for (const std::string &d : diffs) {
      const Known *known = nullptr;
      for (const Known &k : kKnown)
        if (d.find(k.text) != std::string::npos)
          known = &k;
      if (known) {
        ++used[known->text];
        std::cout << "KNOWN DIFFERENCE " << name << " " << d << " ("
                  << known->why << ")\n";
        continue;
      }
      ok = false;
      ++differences;
      std::cout << "DIFFERENCE " << name << " " << d << "\n";
    }
    if (ok)
      std::cout << name << ": ok\n";
  }
  for (const Known &k : kKnown)
    if (!used.count(k.text)) {
      ++differences;
      std::cout << "FIXED: the known difference '" << k.text
                << "' no longer occurs; remove it from kKnown\n";
    }
  std::cout << differences << " unexpected differences from TF 2.15\n";
  return differences ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string tfPath, work;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tf=", 0) == 0)
      tfPath = a.substr(5);
    else if (a.rfind("--work=", 0) == 0)
      work = a.substr(7);
    else {
      std::cerr << "signatures_compat: unknown argument '" << a
                << "' (usage: --tf=FILE --work=DIR)\n";
      return 2;
    }
  }
  if (tfPath.empty() || work.empty()) {
    std::cerr << "signatures_compat: --tf and --work are required\n";
    return 2;
  }
  return run(tfPath, work);
}
