//===- serving_bench.cpp - Exported models run in process (issue 14) -----===//
//
// The in-process half of bench/serving.sh:
//
//   serving_bench --out=DIR --census=FILE.csv [--calls=20000]
//       [--warmup=2000] [--batches=1,2,4,...,256] [--seconds=0.5]
//       [--models=mlp,wide_deep]
//
// 1. Trains briefly and exports, as an Estimator user would, two models into
//    DIR/models/<name>/<version> (one `--model_config_file` serves both):
//      mlp        a custom model_fn, layers::dense 784-256(relu)-256(relu)-10,
//                 softmax: predictions probabilities, classes; the raw
//                 receiver x F32 [-1, 784] (signature serving_default,
//                 PredictOutput). 100 steps of Adam on uniform x with a
//                 label from a fixed random projection.
//      wide_deep  DNNLinearCombinedClassifier over the census-like table
//                 (bench/make_census_table.py; the columns of
//                 tf_canned_bench.py: vocabulary, hashed, bucketized,
//                 crossed, numeric, indicator and embedding columns, hidden
//                 units [100, 50]), 200 steps of batch 40; the parsing
//                 receiver (serialized tf.Example; serving_default is
//                 :classify).
// 2. Times serving::SavedModel::run on one thread: batch-1 latency over
//    --calls calls after --warmup (p50, p99, mean), then examples/s at each
//    batch of --batches (each batch run for --seconds). The batch-1 time is
//    split into its parts, each timed alone the same way:
//      mlp        compiled: the export's model.so run through an
//                 rt::CompiledModel of its own (the step, no host work);
//      wide_deep  parse (the receiver: tf.Example parsing with the export's
//                 parse spec), transform (the feature columns' host half),
//                 compiled (the step on the transform's output).
//    The rest of a run() is what SavedModel adds: checking the request,
//    copying tensors in and out, mapping class ids to names. Last, the
//    same request through estc-serve's handler in process
//    (serving::RestHandler::handle: JSON parsed, run, JSON written; no
//    HTTP, no socket), so the server's overhead splits into the REST codec
//    and the HTTP server with its network round trip.
// 3. Writes the files the rest of serving.sh reads:
//      DIR/models.config              TF Serving's model_config_list
//      DIR/mlp_predict.json           one instance, row format (:predict)
//      DIR/wide_deep_classify.json    one example (:classify)
//      DIR/mlp_check.json             8 inputs and estc's probabilities of
//                                     them (tf_serving_peer.py compares)
//
// Output: one JSON line per model and measurement:
//   {"model", "export_dir", "p50_us", "p99_us", "mean_us", "calls",
//    "parts": {"compiled_p50_us", ...}}
//   {"model", "rest_handler_p50_us", "rest_handler_p99_us", "request_bytes"}
//   {"model", "batch", "examples_per_sec", "us_per_call"}
//
//===----------------------------------------------------------------------===//

#include "bench/CensusTable.h"
#include "estimator/Canned/Estimators.h"
#include "estimator/Estimator.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Data/Example.h"
#include "lib/Data/Readers.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"
#include "lib/Support/Flags.h"
#include "runtime/CompiledModel.h"
#include "runtime/serving/SavedModel.h"
#include "tools/estc-serve/SavedModelServable.h"
#include "tools/estc-serve/Server.h"

#include <rapidjson/document.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace estc;
namespace fc = estc::feature_column;
using namespace estc::bench;

namespace {

using Clock = std::chrono::steady_clock;

// --- The MLP ---------------------------------------------------------------

constexpr int64_t kPixels = 784;
constexpr int64_t kClasses = 10;

estimator::EstimatorSpec mlpFn(const estc::TensorMap &features,
                               const Tensor &labels, ModeKeys mode,
                               const estimator::Params &,
                               const estimator::RunConfig &) {
  Tensor h = layers::dense(features["x"], 256, nn::relu);
  h = layers::dense(h, 256, nn::relu);
  Tensor logits = layers::dense(h, kClasses);
  estimator::EstimatorSpec spec(mode);
  spec.predictions = {{"probabilities", nn::softmax(logits)},
                      {"classes", argmax(logits, 1)}};
  if (mode == ModeKeys::PREDICT)
    return spec;
  spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  spec.train_op = train::AdamOptimizer(0.001).minimize(spec.loss);
  return spec;
}

/// n rows of x uniform in [0, 1)^784 (seed `seed`).
std::vector<float> mlpInputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> x(static_cast<size_t>(n * kPixels));
  for (float &v : x)
    v = u(rng);
  return x;
}

estimator::RunConfig quietConfig(const std::string &modelDir) {
  estimator::RunConfigOptions o;
  o.model_dir = modelDir;
  o.tf_random_seed = 1;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000;
  return estimator::RunConfig::from_tf_config("", o);
}

std::string exportMlp(const std::string &work, const std::string &base) {
  // The label: the argmax of a fixed random projection of x.
  const int64_t n = 2048;
  std::vector<float> x = mlpInputs(n, 1);
  std::mt19937 rng(2);
  std::normal_distribution<float> g;
  std::vector<float> w(static_cast<size_t>(kPixels * kClasses));
  for (float &v : w)
    v = g(rng);
  std::vector<int64_t> y(n);
  for (int64_t i = 0; i < n; ++i) {
    float best = -1e30f;
    for (int64_t c = 0; c < kClasses; ++c) {
      float s = 0;
      for (int64_t j = 0; j < kPixels; ++j)
        s += x[i * kPixels + j] * w[j * kClasses + c];
      if (s > best) {
        best = s;
        y[i] = c;
      }
    }
  }
  estimator::Estimator est(mlpFn, quietConfig(work));
  est.train(estimator::numpy_input_fn(
                {{"x", TensorValue::of<float>({n, kPixels}, x)}},
                TensorValue::of<int64_t>({n}, y), {64, std::nullopt, true, 7}),
            {.steps = 100});
  return est.export_saved_model(base,
                                estimator::build_raw_serving_input_receiver_fn(
                                    {{"x", DType::Float32, {-1, kPixels}}}));
}

// --- Wide & deep on the census-like table ----------------------------------

/// The first `n` data rows of a census CSV, as the fields of each line
/// (make_census_table.py never quotes).
std::vector<std::vector<std::string>> censusRows(const std::string &file,
                                                 size_t n) {
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error(file + ": cannot read (bench/serving.sh writes "
                                    "it with make_census_table.py)");
  std::string line;
  std::getline(in, line); // the header
  std::vector<std::vector<std::string>> rows;
  while (rows.size() < n && std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ','))
      fields.push_back(f);
    if (fields.size() != kHeader.size())
      throw std::runtime_error(file + ": a line has " +
                               std::to_string(fields.size()) + " fields");
    rows.push_back(std::move(fields));
  }
  return rows;
}

/// One row as a serialized tf.Example (numeric columns are float32 in the
/// parse spec, so every number is a float), and as the JSON of a :classify
/// example (numbers written with ".0": JSON floats are float_list).
std::string censusExample(const std::vector<std::string> &row) {
  data::ExampleBuilder b;
  for (size_t i = 0; i + 1 < kHeader.size(); ++i) {
    if (kHeader[i].second == DType::String)
      b.add_bytes(kHeader[i].first, {row[i]});
    else
      b.add_float(kHeader[i].first, {std::stof(row[i])});
  }
  return b.serialize();
}
std::string censusExampleJson(const std::vector<std::string> &row) {
  std::string out = "{";
  for (size_t i = 0; i + 1 < kHeader.size(); ++i) {
    out += (i ? ", \"" : "\"") + kHeader[i].first + "\": ";
    if (kHeader[i].second == DType::String) {
      out += "\"" + row[i] + "\"";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", std::stod(row[i]));
      // capital_gain has thousandths: keep them.
      out += std::stod(buf) == std::stod(row[i]) ? buf : row[i];
    }
  }
  return out + "}";
}

data::Dataset censusDataset(const std::string &file) {
  data::MakeCsvOptions o;
  for (const auto &[name, dtype] : kHeader)
    o.column_defaults.push_back(data::ColumnDefault::required(dtype));
  o.label_name = "label";
  o.shuffle_seed = 1;
  o.num_parallel_reads = 1;
  return data::make_csv_dataset({file}, 40, o);
}

std::string exportWideDeep(const std::string &census, const std::string &work,
                           const std::string &base,
                           std::unique_ptr<estimator::Estimator> &holder) {
  auto [wide, deep] = censusColumns();
  estimator::DNNLinearCombinedOptions o;
  o.linear_feature_columns = wide;
  o.dnn_feature_columns = deep;
  o.dnn_hidden_units = {100, 50};
  o.linear_optimizer = estimator::OptimizerSpec("Ftrl", 0.2);
  o.dnn_optimizer = estimator::OptimizerSpec("Adagrad", 0.05);
  holder = std::make_unique<estimator::DNNLinearCombinedClassifier>(
      o, estimator::ClassifierOptions{}, quietConfig(work));
  holder->train([&] { return censusDataset(census); }, {.steps = 200});
  fc::FeatureColumns all = wide;
  all.insert(all.end(), deep.begin(), deep.end());
  return holder->export_saved_model(
      base, estimator::build_parsing_serving_input_receiver_fn(
                fc::make_parse_example_spec(all)));
}

// --- The compiled step alone -----------------------------------------------

/// The export's model.so run through an rt::CompiledModel of its own: the
/// manifest in saved_model.json as an rt::ModelSpec (what SavedModel::load
/// builds; only what this bench's two models use), its variables from
/// variables.safetensors.
class CompiledStep {
public:
  explicit CompiledStep(const std::string &dir) {
    std::ifstream in(dir + "/saved_model.json");
    std::stringstream text;
    text << in.rdbuf();
    doc_.Parse(text.str().c_str());
    if (doc_.HasParseError() || !doc_.HasMember("model"))
      throw std::runtime_error(dir + "/saved_model.json: not an export");
    const rapidjson::Value &m = doc_["model"];
    const rapidjson::Value &vars = m["variables"];
    const rapidjson::Value &fns = m["functions"];
    if (fns.Size() != 1)
      throw std::runtime_error(dir + ": the model has several functions");
    shapes_.reserve(vars.Size() + 64);
    for (const rapidjson::Value &v : vars.GetArray()) {
      rt::VariableSpec s{};
      s.name = v["name"].GetString();
      s.dtype = abiDType(v["dtype"].GetString());
      s.rank = static_cast<int32_t>(v["shape"].Size());
      s.shape = keepShape(v["shape"]);
      s.trainable = v["trainable"].GetBool();
      s.local = v["local"].GetBool();
      variables_.push_back(s);
    }
    const rapidjson::Value &f = fns[0];
    for (const char *side : {"inputs", "outputs"}) {
      std::vector<rt::TensorSpec> &list =
          std::strcmp(side, "inputs") == 0 ? inputs_ : outputs_;
      for (const rapidjson::Value &t : f[side].GetArray()) {
        rt::TensorSpec s{};
        s.key = t["key"].GetString();
        s.dtype = abiDType(t["dtype"].GetString());
        s.rank = static_cast<int32_t>(t["shape"].Size());
        s.shape = keepShape(t["shape"]);
        list.push_back(s);
      }
    }
    rt::FunctionSpec fs{};
    fs.name = f["name"].GetString();
    fs.numInputs = static_cast<int32_t>(inputs_.size());
    fs.inputs = inputs_.data();
    fs.numOutputs = static_cast<int32_t>(outputs_.size());
    fs.outputs = outputs_.data();
    const rapidjson::Value &arena = f["arena"];
    fs.arenaStatic = arena["static"].GetInt64();
    fs.arenaPerBatch = arena["per_batch"].GetInt64();
    fs.arenaPerValue =
        arena.HasMember("per_value") ? arena["per_value"].GetInt64() : 0;
    fs.hasChecks = arena.HasMember("status");
    fs.statusOffset = fs.hasChecks ? arena["status"].GetInt64() : -1;
    function_ = fs;
    spec_.name = m["name"].GetString();
    spec_.numVariables = static_cast<int32_t>(variables_.size());
    spec_.variables = variables_.data();
    spec_.numFunctions = 1;
    spec_.functions = &function_;
    spec_.numChecks = 0; // a failed check is reported, not explained

    std::string library = dir + "/" + doc_["library"].GetString();
    library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library_)
      throw std::runtime_error(library + ": " + dlerror());
    std::string symbol = std::string("estc_saved_model_") + fs.name + "_packed";
    entry_ = reinterpret_cast<rt::EntryPoint>(dlsym(library_, symbol.c_str()));
    if (!entry_)
      throw std::runtime_error(library + " has no " + symbol);
    model_ = std::make_unique<rt::CompiledModel>(spec_, &entry_);
    train::CheckpointReader reader(dir + "/" + doc_["variables"].GetString());
    for (int i = 0; i < spec_.numVariables; ++i) {
      if (variables_[static_cast<size_t>(i)].local)
        continue;
      TensorValue t =
          reader.get_tensor(variables_[static_cast<size_t>(i)].name);
      std::memcpy(model_->variable_data(i), t.data.data(), t.data.size());
    }
  }
  ~CompiledStep() {
    model_.reset();
    if (library_)
      dlclose(library_);
  }

  /// Sets the batch and copies the features in (keys "features/<name>";
  /// `values`: the sparse ones, whose first dimension is their values).
  void feed(const std::map<std::string, TensorValue> &features,
            const std::set<std::string> &values, int64_t batch) {
    model_->set_batch(batch);
    for (int i = 0; i < function_.numInputs; ++i) {
      std::string key = inputs_[static_cast<size_t>(i)].key;
      if (key.rfind("features/", 0) == 0)
        key = key.substr(9);
      const TensorValue &t = features.at(key);
      if (values.count(key))
        model_->set_values(0, i, t.shape.empty() ? 0 : t.shape[0]);
      if (!t.data.empty())
        std::memcpy(model_->input_data(0, i), t.data.data(), t.data.size());
    }
  }
  void run() { model_->run(0); }
  const float *output(const std::string &key) {
    return static_cast<const float *>(
        model_->output_data(0, model_->output_index(0, key)));
  }

private:
  static rt::DType abiDType(const std::string &name) {
    for (rt::DType d : {rt::DType::F32, rt::DType::F64, rt::DType::I8,
                        rt::DType::I32, rt::DType::I64, rt::DType::Bool})
      if (name == rt::dtypeName(d))
        return d;
    throw std::runtime_error("dtype " + name);
  }
  const int64_t *keepShape(const rapidjson::Value &shape) {
    std::vector<int64_t> s;
    for (const rapidjson::Value &d : shape.GetArray())
      s.push_back(d.GetInt64());
    shapes_.push_back(std::move(s)); // reserved: pointers stay valid
    return shapes_.back().data();
  }

  rapidjson::Document doc_; // the strings the specs point into
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<rt::VariableSpec> variables_;
  std::vector<rt::TensorSpec> inputs_, outputs_;
  rt::FunctionSpec function_{};
  rt::ModelSpec spec_{};
  void *library_ = nullptr;
  rt::EntryPoint entry_ = nullptr;
  std::unique_ptr<rt::CompiledModel> model_;
};

// --- Timing ----------------------------------------------------------------

struct Latency {
  double p50, p99, mean;
};

/// `f` `warmup` times, then `calls` times timed one by one (µs).
Latency timeCalls(const std::function<void()> &f, int64_t calls,
                  int64_t warmup) {
  for (int64_t i = 0; i < warmup; ++i)
    f();
  std::vector<double> us(static_cast<size_t>(calls));
  for (double &t : us) {
    Clock::time_point start = Clock::now();
    f();
    t = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  double sum = 0;
  for (double t : us)
    sum += t;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))];
  };
  return {at(0.50), at(0.99), sum / static_cast<double>(us.size())};
}

/// Calls of `f` per second over about `seconds` (after a few warm-up calls).
double callsPerSecond(const std::function<void()> &f, double seconds) {
  for (int i = 0; i < 10; ++i)
    f();
  int64_t n = 0;
  Clock::time_point start = Clock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < 10; ++i)
      f();
    n += 10;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return static_cast<double>(n) / elapsed;
}

void printLatency(const std::string &model, const std::string &dir,
                  const Latency &l, int64_t calls, const std::string &parts) {
  std::printf("{\"model\": \"%s\", \"export_dir\": \"%s\", \"calls\": %lld, "
              "\"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, "
              "\"parts\": {%s}}\n",
              model.c_str(), dir.c_str(), static_cast<long long>(calls), l.p50,
              l.p99, l.mean, parts.c_str());
  std::fflush(stdout);
}

std::string part(const std::string &name, const Latency &l) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "\"%s_p50_us\": %.2f", name.c_str(), l.p50);
  return buf;
}

void printRate(const std::string &model, int64_t batch, double callsPerSec) {
  std::printf("{\"model\": \"%s\", \"batch\": %lld, \"examples_per_sec\": "
              "%.0f, \"us_per_call\": %.2f}\n",
              model.c_str(), static_cast<long long>(batch),
              callsPerSec * static_cast<double>(batch), 1e6 / callsPerSec);
  std::fflush(stdout);
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush())
    throw std::runtime_error("cannot write " + path);
}

std::string floats(const float *v, int64_t n) {
  std::string out = "[";
  char buf[32];
  for (int64_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "",
                  static_cast<double>(v[i]));
    out += buf;
  }
  return out + "]";
}

std::vector<int64_t> parseList(const std::string &s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    out.push_back(std::stoll(item));
  return out;
}

struct Settings {
  std::string out, census;
  int64_t calls, warmup;
  std::vector<int64_t> batches;
  double seconds;
};

void benchMlp(const Settings &s) {
  const std::string &out = s.out;
  const int64_t calls = s.calls, warmup = s.warmup;
  // --- MLP.
  std::string mlpDir = exportMlp(out + "/work/mlp", out + "/models/mlp");
  auto mlp = serving::SavedModel::load(mlpDir);
  std::vector<float> x = mlpInputs(256, 3);
  serving::TensorMap one = {
      {"x",
       TensorValue::of<float>(
           {1, kPixels}, std::vector<float>(x.begin(), x.begin() + kPixels))}};
  const std::string sig = serving::kDefaultServingSignatureDefKey;
  Latency l = timeCalls([&] { mlp->run(sig, one); }, calls, warmup);
  CompiledStep mlpStep(mlpDir);
  mlpStep.feed({{"x", one.at("x")}}, {}, 1);
  Latency compiled = timeCalls([&] { mlpStep.run(); }, calls, warmup);
  printLatency("mlp", mlpDir, l, calls, part("compiled", compiled));
  for (int64_t b : s.batches) {
    serving::TensorMap in = {
        {"x", TensorValue::of<float>(
                  {b, kPixels},
                  std::vector<float>(x.begin(), x.begin() + b * kPixels))}};
    printRate("mlp", b, callsPerSecond([&] { mlp->run(sig, in); }, s.seconds));
  }
  // The request and estc's answers for the TF peer.
  writeText(out + "/mlp_predict.json",
            "{\"instances\": [" + floats(x.data(), kPixels) + "]}\n");
  serving::TensorMap eight = {
      {"x", TensorValue::of<float>(
                {8, kPixels},
                std::vector<float>(x.begin(), x.begin() + 8 * kPixels))}};
  TensorValue probs = mlp->run(sig, eight).at("probabilities");
  std::vector<float> p = probs.values<float>();
  std::string check = "{\"x\": [";
  for (int64_t i = 0; i < 8; ++i)
    check += (i ? ", " : "") + floats(x.data() + i * kPixels, kPixels);
  check += "], \"probabilities\": [";
  for (int64_t i = 0; i < 8; ++i)
    check += (i ? ", " : "") + floats(p.data() + i * kClasses, kClasses);
  writeText(out + "/mlp_check.json", check + "]}\n");
}

void benchWideDeep(const Settings &s) {
  const std::string &out = s.out;
  const int64_t calls = s.calls, warmup = s.warmup;
  const std::string sig = serving::kDefaultServingSignatureDefKey;
  // --- Wide & deep.
  std::unique_ptr<estimator::Estimator> wdEst;
  std::string wdDir = exportWideDeep(s.census, out + "/work/wide_deep",
                                     out + "/models/wide_deep", wdEst);
  auto wd = serving::SavedModel::load(wdDir);
  std::vector<std::vector<std::string>> rows = censusRows(s.census, 256);
  std::vector<std::string> examples;
  for (const auto &r : rows)
    examples.push_back(censusExample(r));
  const serving::SignatureDef &wdSig = wd->signature(sig);
  const std::string input = wdSig.inputs.begin()->first; // "inputs"
  serving::TensorMap oneEx = {
      {input, TensorValue::of_strings({1}, {examples[0]})}};
  Latency l = timeCalls([&] { wd->run(sig, oneEx); }, calls, warmup);
  // Its parts: the same library code, each step alone.
  auto [wide, deep] = censusColumns();
  fc::FeatureColumns all = wide;
  all.insert(all.end(), deep.begin(), deep.end());
  data::ExampleParser parser(fc::make_parse_example_spec(all));
  const TensorValue &serialized = oneEx.at(input);
  Latency parse =
      timeCalls([&] { parser.parse_example(serialized); }, calls, warmup);
  data::Element parsed = parser.parse_example(serialized);
  const estimator::HostTransform *transform = wdEst->host_transform();
  Latency transformed =
      timeCalls([&] { transform->transform_input(parsed); }, calls, warmup);
  estimator::Batch modelInputs = transform->transform_input(parsed);
  CompiledStep wdStep(wdDir);
  wdStep.feed(modelInputs.features, modelInputs.values_features, 1);
  Latency compiled = timeCalls([&] { wdStep.run(); }, calls, warmup);
  printLatency("wide_deep", wdDir, l, calls,
               part("parse", parse) + ", " + part("transform", transformed) +
                   ", " + part("compiled", compiled));
  for (int64_t b : s.batches) {
    serving::TensorMap in = {
        {input, TensorValue::of_strings(
                    {b}, std::vector<std::string>(examples.begin(),
                                                  examples.begin() + b))}};
    printRate("wide_deep", b,
              callsPerSecond([&] { wd->run(sig, in); }, s.seconds));
  }
  writeText(out + "/wide_deep_classify.json",
            "{\"examples\": [" + censusExampleJson(rows[0]) + "]}\n");
}

/// estc-serve's request handler in process (no HTTP, no socket): the JSON
/// request parsed, SavedModel::run, the JSON answer written. What of the
/// server's overhead is the REST codec.
void benchRestHandler(const Settings &s, const std::string &model,
                      const std::string &method, const std::string &request) {
  std::ifstream in(s.out + "/" + request);
  std::stringstream body;
  body << in.rdbuf();
  serving::ModelConfig config;
  config.name = model;
  config.base_path = s.out + "/models/" + model;
  serving::ModelManager models({config}, serving::saved_model_loader(),
                               [](const std::string &) {});
  models.poll();
  serving::Metrics metrics;
  serving::RestHandler handler(models, nullptr, metrics);
  const std::string path = "/v1/models/" + model + ":" + method;
  const std::string text = body.str();
  serving::RestHandler::Response r = handler.handle("POST", path, text);
  if (r.status != 200)
    throw std::runtime_error(path + ": HTTP " + std::to_string(r.status) + " " +
                             r.body);
  Latency l =
      timeCalls([&] { handler.handle("POST", path, text); }, s.calls, s.warmup);
  std::printf("{\"model\": \"%s\", \"rest_handler_p50_us\": %.2f, "
              "\"rest_handler_p99_us\": %.2f, \"request_bytes\": %zu}\n",
              model.c_str(), l.p50, l.p99, text.size());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string out, census, batchList = "1,2,4,8,16,32,64,128,256",
                           modelList = "mlp,wide_deep";
  int64_t calls = 20000, warmup = 2000;
  double seconds = 0.5;
  flags::FlagParser parser(
      "serving_bench", "trains and exports an MLP and a wide & deep model, "
                       "times serving::SavedModel::run in process and writes "
                       "the requests bench/serving.sh sends to estc-serve");
  parser.add(Flag("out", &out, "the output folder").value_name("DIR"));
  parser.add(
      Flag("census", &census, "a census CSV (bench/make_census_table.py)")
          .value_name("FILE"));
  parser.add(Flag("calls", &calls, "timed batch-1 calls").positive());
  parser.add(Flag("warmup", &warmup, "untimed calls first").positive());
  parser.add(Flag("batches", &batchList, "batch sizes for the throughput")
                 .value_name("N,..."));
  parser.add(Flag("seconds", &seconds, "time per throughput point"));
  parser.add(Flag("models", &modelList, "the models to export and time")
                 .value_name("mlp,wide_deep"));
  parser.parse_or_exit(argc, argv);
  if (out.empty())
    parser.fail("--out is required");
  if (census.empty() && modelList.find("wide_deep") != std::string::npos)
    parser.fail("--census is required for wide_deep");
  std::vector<int64_t> batches = parseList(batchList);

  try {
    namespace fs = std::filesystem;
    fs::remove_all(out);
    fs::create_directories(out + "/models");

    Settings settings{out, census, calls, warmup, batches, seconds};
    if (modelList.find("mlp") != std::string::npos) {
      benchMlp(settings);
      benchRestHandler(settings, "mlp", "predict", "mlp_predict.json");
    }
    if (modelList.find("wide_deep") != std::string::npos) {
      benchWideDeep(settings);
      benchRestHandler(settings, "wide_deep", "classify",
                       "wide_deep_classify.json");
    }
    writeText(out + "/models.config",
              "model_config_list {\n"
              "  config { name: \"mlp\" base_path: \"" +
                  fs::absolute(out + "/models/mlp").string() +
                  "\" model_platform: \"estc\" }\n"
                  "  config { name: \"wide_deep\" base_path: \"" +
                  fs::absolute(out + "/models/wide_deep").string() +
                  "\" model_platform: \"estc\" }\n}\n");
  } catch (const std::exception &e) {
    std::cerr << "serving_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
