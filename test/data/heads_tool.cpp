//===- heads_tool.cpp - estimator/Canned/Head.h for tf_heads_compat.py ---===//
//
// Reads cases from stdin and evaluates each head through the JIT Estimator
// on one batch whose logits are a feature; prints the loss, every metric
// and every prediction (with the host's string predictions). A case:
//
//   head binary|multiclass|multilabel|regression|poisson|logistic
//   n_classes N | label_dimension D | thresholds T... | vocabulary W...
//   reduction sum|sum_over_batch_size | class_metrics ID... | name NAME
//   logits B D V...
//   labels f32|i64|str B D V...     (strings go through transform_labels)
//   weights B D V...                (the weight column "w")
//   end
//
// answers, then a line "done":
//   metric KEY VALUE
//   pred KEY f|i|s N V...            (row-major; strings space-free)
// Errors: one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Head.h"
#include "estimator/Estimator.h"
#include "lib/Graph/Ops.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

using namespace estc;
using namespace estc::estimator;

namespace {

struct Case {
  std::string kind, name, weightColumn;
  int64_t nClasses = 0, labelDimension = 1;
  std::vector<double> thresholds;
  std::vector<std::string> vocabulary;
  std::vector<int64_t> classMetrics;
  Reduction reduction = Reduction::SUM_OVER_BATCH_SIZE;
  TensorValue logits, labels, weights;
};

std::vector<int64_t> readShape(std::istringstream &in) {
  int64_t b, d;
  in >> b >> d;
  return d == 0 ? std::vector<int64_t>{b} : std::vector<int64_t>{b, d};
}

TensorValue readFloats(std::istringstream &in) {
  std::vector<int64_t> shape = readShape(in);
  std::vector<float> v;
  float x;
  while (in >> x)
    v.push_back(x);
  return TensorValue::of<float>(shape, v);
}

std::shared_ptr<const Head> makeHead(const Case &c) {
  if (c.kind == "binary")
    return std::make_shared<BinaryClassHead>(c.weightColumn, c.thresholds,
                                             c.vocabulary, c.reduction, nullptr,
                                             c.name);
  if (c.kind == "multiclass")
    return std::make_shared<MultiClassHead>(
        c.nClasses, c.weightColumn, c.vocabulary, c.reduction, nullptr, c.name);
  if (c.kind == "multilabel")
    return std::make_shared<MultiLabelHead>(
        c.nClasses, c.weightColumn, c.thresholds, c.vocabulary, c.reduction,
        nullptr, ClassList(c.classMetrics), c.name);
  if (c.kind == "regression")
    return std::make_shared<RegressionHead>(c.labelDimension, c.weightColumn,
                                            c.reduction, nullptr, nullptr,
                                            c.name);
  if (c.kind == "poisson")
    return std::make_shared<PoissonRegressionHead>(
        c.labelDimension, c.weightColumn, c.reduction, true, c.name);
  if (c.kind == "logistic")
    return std::make_shared<LogisticRegressionHead>(c.weightColumn, c.reduction,
                                                    c.name);
  throw std::invalid_argument("unknown head '" + c.kind + "'");
}

void printValue(const std::string &key, const TensorValue &t) {
  std::cout << "pred " << key << " ";
  if (t.dtype == DType::String) {
    std::cout << "s " << t.strings.size();
    for (const std::string &s : t.strings)
      std::cout << " " << s;
  } else {
    std::cout << (is_integer(t.dtype) ? "i " : "f ") << t.num_elements();
    char buffer[40];
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      std::snprintf(buffer, sizeof(buffer), " %.9g", t.element(i));
      std::cout << buffer;
    }
  }
  std::cout << "\n";
}

void run(const Case &c, const std::filesystem::path &dir) {
  std::shared_ptr<const Head> head = makeHead(c);
  RunConfigOptions o;
  o.model_dir = dir.string();
  ModelFn fn = [head](const TensorMap &features, const Tensor &labels,
                      ModeKeys mode, const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    // A zero bias: TRAIN needs a variable to minimize; logits + 0 is exact.
    Variable bias =
        g.get_variable("bias", DType::Float32, {}, zeros_initializer());
    Tensor logits = features["logits"] + bias.read();
    return head->create_estimator_spec(features, mode, logits, labels,
                                       train::GradientDescentOptimizer(0.1));
  };
  Estimator est(fn, RunConfig::from_tf_config("", o));
  Features x = {{"logits", c.logits}};
  if (!c.weightColumn.empty())
    x[c.weightColumn] = c.weights;
  int64_t batch = c.logits.shape[0];
  EvalResults results = est.evaluate(
      numpy_input_fn(x, head->transform_labels(c.labels), {batch, 1}));
  char buffer[40];
  for (const auto &[key, value] : results) {
    std::snprintf(buffer, sizeof(buffer), "%.9g", value);
    std::cout << "metric " << key << " " << buffer << "\n";
  }
  for (Prediction p : est.predict(numpy_input_fn(x, std::nullopt, {batch, 1}),
                                  {.yield_single_examples = false})) {
    head->complete_predictions(p);
    for (const auto &[key, value] : p)
      printValue(key, value);
  }
  std::cout << "done\n";
  std::cout.flush();
}

} // namespace

int main() {
  try {
    auto base = std::filesystem::temp_directory_path() /
                ("estc-heads-tool-" + std::to_string(::getpid()));
    int cases = 0;
    Case c;
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string op;
      in >> op;
      if (op == "head") {
        c = Case();
        in >> c.kind;
      } else if (op == "n_classes") {
        in >> c.nClasses;
      } else if (op == "label_dimension") {
        in >> c.labelDimension;
      } else if (op == "thresholds") {
        for (double t; in >> t;)
          c.thresholds.push_back(t);
      } else if (op == "vocabulary") {
        for (std::string w; in >> w;)
          c.vocabulary.push_back(w);
      } else if (op == "class_metrics") {
        for (int64_t id; in >> id;)
          c.classMetrics.push_back(id);
      } else if (op == "reduction") {
        std::string r;
        in >> r;
        c.reduction =
            r == "sum" ? Reduction::SUM : Reduction::SUM_OVER_BATCH_SIZE;
      } else if (op == "name") {
        in >> c.name;
      } else if (op == "logits") {
        c.logits = readFloats(in);
      } else if (op == "weights") {
        c.weightColumn = "w";
        c.weights = readFloats(in);
      } else if (op == "labels") {
        std::string type;
        in >> type;
        std::vector<int64_t> shape = readShape(in);
        if (type == "f32") {
          std::vector<float> v;
          for (float x; in >> x;)
            v.push_back(x);
          c.labels = TensorValue::of<float>(shape, v);
        } else if (type == "i64") {
          std::vector<int64_t> v;
          for (int64_t x; in >> x;)
            v.push_back(x);
          c.labels = TensorValue::of<int64_t>(shape, v);
        } else {
          std::vector<std::string> v;
          for (std::string x; in >> x;)
            v.push_back(x);
          c.labels = TensorValue::of_strings(shape, v);
        }
      } else if (op == "end") {
        auto dir = base / std::to_string(cases++);
        run(c, dir);
        std::filesystem::remove_all(dir);
      } else if (!op.empty()) {
        throw std::invalid_argument("unknown request '" + op + "'");
      }
    }
    std::filesystem::remove_all(base);
  } catch (const std::exception &e) {
    std::cerr << "heads_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
