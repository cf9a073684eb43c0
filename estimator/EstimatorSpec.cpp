//===- EstimatorSpec.cpp - What a model_fn returns -----------------------===//

#include "estimator/EstimatorSpec.h"

#include "estimator/EstimatorBackend.h"
#include "lib/Summary/SummaryValues.h"

#include <climits>
#include <optional>
#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {

// --- Params ------------------------------------------------------------------

const char *ParamValue::kind() const {
  static const char *const kKinds[] = {"bool",       "int",      "double",
                                       "string",     "int list", "double list",
                                       "string list"};
  return kKinds[value_.index()];
}

Params &Params::set(const std::string &key, ParamValue value) {
  values_.insert_or_assign(key, std::move(value));
  return *this;
}

namespace {
[[noreturn]] void wrongKind(const std::string &key, const ParamValue &value,
                            const char *wanted) {
  throw std::invalid_argument("params: '" + key + "' is a " + value.kind() +
                              ", not a " + wanted);
}
} // namespace

#define ESTC_PARAMS_GET(T, wanted, body)                                       \
  template <> T Params::get<T>(const std::string &key) const {                 \
    auto it = values_.find(key);                                               \
    if (it == values_.end())                                                   \
      throw std::invalid_argument("params: no '" + key + "'");                 \
    const ParamValue::Storage &v = it->second.storage();                       \
    body wrongKind(key, it->second, wanted);                                   \
  }

ESTC_PARAMS_GET(bool, "bool", if (auto *b = std::get_if<bool>(&v)) return *b;)
ESTC_PARAMS_GET(int64_t, "int",
                if (auto *i = std::get_if<int64_t>(&v)) return *i;)
ESTC_PARAMS_GET(
    int, "int", if (auto *i = std::get_if<int64_t>(&v)) {
      if (*i < INT32_MIN || *i > INT32_MAX)
        throw std::invalid_argument("params: '" + key +
                                    "' = " + std::to_string(*i) +
                                    " does not fit an int");
      return static_cast<int>(*i);
    })
ESTC_PARAMS_GET(
    double, "number", if (auto *d = std::get_if<double>(&v)) return *d;
    if (auto *i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);)
ESTC_PARAMS_GET(std::string, "string",
                if (auto *s = std::get_if<std::string>(&v)) return *s;)
ESTC_PARAMS_GET(std::vector<int64_t>, "int list",
                if (auto *l = std::get_if<std::vector<int64_t>>(&v)) return *l;)
ESTC_PARAMS_GET(
    std::vector<double>, "double list",
    if (auto *l = std::get_if<std::vector<double>>(&v)) return *l;
    if (auto *l = std::get_if<std::vector<int64_t>>(&v)) {
      return std::vector<double>(l->begin(), l->end());
    })
ESTC_PARAMS_GET(
    std::vector<std::string>, "string list",
    if (auto *l = std::get_if<std::vector<std::string>>(&v)) return *l;)
#undef ESTC_PARAMS_GET

// --- EstimatorSpec -----------------------------------------------------------

void EstimatorSpec::validate() const {
  std::string where =
      std::string("EstimatorSpec (mode ") + mode_key(mode) + "): ";
  auto fail = [&](const std::string &message) {
    throw std::invalid_argument(where + message);
  };
  if (mode == ModeKeys::TRAIN || mode == ModeKeys::EVAL) {
    if (!loss.valid())
      fail("Missing loss");
    if (!loss.has_value())
      fail("loss '" + loss.name() + "' produces no value");
    if (!loss.shape().empty())
      fail("Loss must be scalar, given: '" + loss.name() + "' of shape " +
           shape::toString(loss.shape()));
    if (!is_floating(loss.dtype()))
      fail("loss '" + loss.name() + "' must be a float tensor, given " +
           to_string(loss.dtype()));
  }
  if (mode == ModeKeys::TRAIN && !train_op.valid())
    fail("Missing train_op");
  if (mode == ModeKeys::PREDICT && predictions.empty())
    fail("Missing predictions");
  for (const auto &[key, tensor] : predictions)
    if (!tensor.valid() || !tensor.has_value())
      fail("prediction '" + key + "' is not a tensor with a value");
  if (!scaffold.saver_var_list.empty()) {
    if (mode == ModeKeys::TRAIN)
      fail("scaffold.saver_var_list is for EVAL and PREDICT (what evaluate, "
           "predict and export_saved_model restore); training restores and "
           "saves every variable by its own name");
    const Graph &g = mode == ModeKeys::EVAL
                         ? loss.graph()
                         : predictions.begin()->second.graph();
    for (const auto &[checkpointName, variable] : scaffold.saver_var_list) {
      std::optional<Variable> v = g.find_variable(variable);
      if (checkpointName.empty() || !v || v->local())
        fail("scaffold.saver_var_list restores '" + variable + "' from '" +
             checkpointName + "', but " +
             (checkpointName.empty()
                  ? std::string("the checkpoint name is empty")
                  : "'" + variable + "' is not a saved variable of the graph"));
    }
  }
  std::set<std::string> seen;
  for (const auto &[name, metric] : eval_metric_ops) {
    if (name == "loss" || name == "global_step")
      fail("metric name '" + name +
           "' is reserved (the evaluation reports it); rename the metric");
    if (name.empty())
      fail("a metric has an empty name");
    if (!seen.insert(name).second)
      fail("metric '" + name + "' is given twice");
    if (!metric.value.valid() || !metric.value.has_value())
      fail("metric '" + name + "' has no value tensor");
  }
  if (export_outputs.size() > 1 && !export_outputs.count("serving_default"))
    fail("Multiple export_outputs were provided, but none of them is "
         "specified as the default. Do this by naming one of them with "
         "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY "
         "(\"serving_default\")");
  for (const auto &[name, outputs] : export_outputs) {
    if (name.empty())
      fail("an export output has an empty name");
    if (outputs.outputs.empty())
      fail("export output '" + name + "' has no tensors");
  }
}

Signature EstimatorSpec::signature() const {
  Signature sig;
  sig.predictions = predictions;
  sig.loss = loss;
  sig.train_op = train_op;
  sig.metrics = eval_metric_ops;
  return sig;
}

Signature EstimatorSpec::mode_signature() const {
  Signature sig;
  if (mode == ModeKeys::PREDICT) {
    sig.predictions = predictions;
    return sig;
  }
  sig.loss = loss;
  if (mode == ModeKeys::TRAIN)
    sig.train_op = train_op;
  else
    sig.metrics = eval_metric_ops;
  return sig;
}

EstimatorSpec EstimatorSpec::from_signature(ModeKeys mode,
                                            const Signature &signature) {
  EstimatorSpec spec(mode);
  spec.predictions = signature.predictions;
  spec.loss = signature.loss;
  spec.train_op = signature.train_op;
  spec.eval_metric_ops = signature.metrics;
  return spec;
}

// --- The default graph -------------------------------------------------------

namespace {
thread_local Graph *defaultGraph = nullptr;
} // namespace

Graph &get_default_graph() {
  if (!defaultGraph)
    throw std::logic_error("get_default_graph: called outside a model_fn the "
                           "Estimator runs");
  return *defaultGraph;
}

// --- Export outputs ------------------------------------------------------

ExportOutput ClassificationOutput(const Tensor &scores, const Tensor &classes) {
  if (!scores.valid() && !classes.valid())
    throw std::invalid_argument(
        "ClassificationOutput: Cannot create a ClassificationOutput with "
        "empty arguments. At least one of scores and classes must be defined");
  TensorMap out;
  if (scores.valid()) {
    if (!is_floating(scores.dtype()))
      throw std::invalid_argument(
          "ClassificationOutput: scores must be a float tensor; got " +
          to_string(scores.dtype()));
    out.set("scores", scores);
  }
  if (classes.valid()) {
    if (!is_integer(classes.dtype()))
      throw std::invalid_argument(
          "ClassificationOutput: classes must be integer class ids (the host "
          "maps them to strings); got " +
          to_string(classes.dtype()));
    out.set("classes", classes);
  }
  return {ExportOutput::Kind::Classification, out};
}

ExportOutput RegressionOutput(const Tensor &value) {
  if (!value.valid() || !is_floating(value.dtype()))
    throw std::invalid_argument(
        "RegressionOutput: Regression output value must be a float tensor");
  return {ExportOutput::Kind::Regression, TensorMap{{"outputs", value}}};
}

ExportOutput PredictOutput(const TensorMap &outputs) {
  if (outputs.empty())
    throw std::invalid_argument("PredictOutput: no outputs");
  return {ExportOutput::Kind::Predict, outputs};
}

namespace detail {
DefaultGraphScope::DefaultGraphScope(Graph &graph) : previous_(defaultGraph) {
  defaultGraph = &graph;
}
DefaultGraphScope::~DefaultGraphScope() { defaultGraph = previous_; }
} // namespace detail

std::vector<summary::ModelSummary>
summary_hook_summaries(const std::vector<graph::SummaryDef> &defs) {
  std::vector<summary::ModelSummary> out;
  for (const graph::SummaryDef &s : defs) {
    summary::ModelSummary ms;
    ms.tag = s.tag();
    ms.kind = s.kind();
    // The output of @train_summaries that holds its value.
    if (!s.node().empty())
      ms.fetch = "summaries/" + s.tag();
    ms.max_outputs = s.max_outputs();
    ms.text.assign(s.text().begin(), s.text().end());
    ms.text_shape.assign(s.text_shape().begin(), s.text_shape().end());
    out.push_back(std::move(ms));
  }
  return out;
}

} // namespace estimator
} // namespace estc
