//===- KerasCompile.cpp - A Keras compile config as estc's training ----===//

#include "estimator/KerasCompile.h"

#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace estc {
namespace estimator {
namespace keras_compile {

namespace {

using rapidjson::Value;

/// Throws "<file>: compile config: <what>".
[[noreturn]] void fail(const keras::KerasModel &model,
                       const std::string &what) {
  throw keras::KerasError(model.file + ": compile config: " + what);
}

const Value *member(const Value &object, const char *name) {
  if (!object.IsObject())
    return nullptr;
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || it->value.IsNull())
    return nullptr;
  return &it->value;
}

std::string describe(const Value &v) {
  if (v.IsString())
    return std::string("\"") + v.GetString() + "\"";
  if (v.IsBool())
    return v.GetBool() ? "true" : "false";
  if (v.IsNumber()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.GetDouble());
    return buf;
  }
  if (v.IsNull())
    return "null";
  return v.IsArray() ? "a list" : "an object";
}

/// A serialized Keras object: {"class_name", "config", "module"?,
/// "registered_name"?}; the class name without tf.keras's "Custom>" of a
/// legacy .h5's optimizer.
struct Object {
  std::string class_name;
  const Value *config = nullptr; // an object, or nullptr
};

std::optional<Object> as_object(const Value &v) {
  if (!v.IsObject())
    return std::nullopt;
  const Value *c = member(v, "class_name");
  if (!c || !c->IsString())
    return std::nullopt;
  Object o;
  o.class_name = c->GetString();
  if (o.class_name.rfind("Custom>", 0) == 0)
    o.class_name = o.class_name.substr(7);
  o.config = member(v, "config");
  if (o.config && !o.config->IsObject())
    o.config = nullptr;
  return o;
}

/// The arguments of one serialized object, each checked once: what is left
/// unread is an unsupported argument.
class Args {
public:
  Args(const keras::KerasModel &model, std::string what, const Value *config)
      : model_(model), what_(std::move(what)), config_(config) {}

  bool has(const char *name) const {
    return config_ && member(*config_, name) != nullptr;
  }
  double number(const char *name, double dflt) {
    seen_.insert(name);
    const Value *v = config_ ? member(*config_, name) : nullptr;
    if (!v)
      return dflt;
    if (!v->IsNumber())
      fail(model_,
           what_ + ": " + name + " must be a number, got " + describe(*v));
    return v->GetDouble();
  }
  std::optional<double> optional_number(const char *name) {
    if (!has(name)) {
      seen_.insert(name);
      return std::nullopt;
    }
    return number(name, 0.0);
  }
  bool flag(const char *name, bool dflt) {
    seen_.insert(name);
    const Value *v = config_ ? member(*config_, name) : nullptr;
    if (!v)
      return dflt;
    if (!v->IsBool())
      fail(model_,
           what_ + ": " + name + " must be true or false, got " + describe(*v));
    return v->GetBool();
  }
  std::string string(const char *name, const std::string &dflt) {
    seen_.insert(name);
    const Value *v = config_ ? member(*config_, name) : nullptr;
    if (!v)
      return dflt;
    if (!v->IsString())
      fail(model_,
           what_ + ": " + name + " must be a string, got " + describe(*v));
    return v->GetString();
  }
  std::vector<double> numbers(const char *name) {
    seen_.insert(name);
    const Value *v = config_ ? member(*config_, name) : nullptr;
    std::vector<double> out;
    if (!v)
      return out;
    if (!v->IsArray())
      fail(model_, what_ + ": " + name + " must be a list of numbers");
    for (const Value &x : v->GetArray()) {
      if (!x.IsNumber())
        fail(model_, what_ + ": " + name + " must be a list of numbers");
      out.push_back(x.GetDouble());
    }
    return out;
  }
  const Value *raw(const char *name) {
    seen_.insert(name);
    return config_ ? member(*config_, name) : nullptr;
  }
  /// Arguments that change nothing estc computes (names, dtype float32,
  /// jit_compile, ...).
  void ignore(std::initializer_list<const char *> names) {
    for (const char *n : names)
      seen_.insert(n);
  }
  /// `name` may be absent, null or `ok` only.
  void require(const char *name, const std::string &ok, bool allow_false) {
    seen_.insert(name);
    const Value *v = config_ ? member(*config_, name) : nullptr;
    if (!v || (allow_false && v->IsBool() && !v->GetBool()) ||
        (v->IsString() && v->GetString() == ok) ||
        (v->IsNumber() && v->GetDouble() == 0.0 && ok == "0"))
      return;
    fail(model_,
         what_ + ": " + name + " = " + describe(*v) + " is not supported");
  }
  /// Refuses the first argument that no call above read.
  void done() const {
    if (!config_)
      return;
    for (const auto &m : config_->GetObject()) {
      std::string name = m.name.GetString();
      if (!seen_.count(name))
        fail(model_, what_ + ": argument " + name + " = " + describe(m.value) +
                         " is not supported");
    }
  }

private:
  const keras::KerasModel &model_;
  std::string what_;
  const Value *config_;
  std::set<std::string> seen_;
};

// --- Learning rates -------------------------------------------------------

LearningRateSpec parse_learning_rate(const keras::KerasModel &model,
                                     const Value &v) {
  LearningRateSpec lr;
  if (v.IsNumber()) {
    lr.value = v.GetDouble();
    return lr;
  }
  std::optional<Object> o = as_object(v);
  if (!o)
    fail(model, "learning_rate must be a number or a serialized "
                "LearningRateSchedule, got " +
                    describe(v));
  lr.schedule = o->class_name;
  Args a(model, "learning-rate schedule " + o->class_name, o->config);
  a.ignore({"name"});
  if (lr.schedule == "ExponentialDecay" || lr.schedule == "InverseTimeDecay") {
    lr.value = a.number("initial_learning_rate", 0.0);
    lr.args["decay_steps"] = a.number("decay_steps", 0.0);
    lr.args["decay_rate"] = a.number("decay_rate", 0.0);
    lr.flag = a.flag("staircase", false);
  } else if (lr.schedule == "PiecewiseConstantDecay") {
    lr.boundaries = a.numbers("boundaries");
    lr.values = a.numbers("values");
    if (lr.values.size() != lr.boundaries.size() + 1)
      fail(model, "PiecewiseConstantDecay: values must have one more entry "
                  "than boundaries, got " +
                      std::to_string(lr.values.size()) + " and " +
                      std::to_string(lr.boundaries.size()));
  } else if (lr.schedule == "PolynomialDecay") {
    lr.value = a.number("initial_learning_rate", 0.0);
    lr.args["decay_steps"] = a.number("decay_steps", 0.0);
    lr.args["end_learning_rate"] = a.number("end_learning_rate", 0.0001);
    lr.args["power"] = a.number("power", 1.0);
    lr.flag = a.flag("cycle", false);
  } else if (lr.schedule == "CosineDecay") {
    lr.value = a.number("initial_learning_rate", 0.0);
    lr.args["decay_steps"] = a.number("decay_steps", 0.0);
    lr.args["alpha"] = a.number("alpha", 0.0);
    a.require("warmup_target", "", false);
    a.require("warmup_steps", "0", false);
  } else if (lr.schedule == "CosineDecayRestarts") {
    lr.value = a.number("initial_learning_rate", 0.0);
    lr.args["first_decay_steps"] = a.number("first_decay_steps", 0.0);
    lr.args["t_mul"] = a.number("t_mul", 2.0);
    lr.args["m_mul"] = a.number("m_mul", 1.0);
    lr.args["alpha"] = a.number("alpha", 0.0);
  } else {
    fail(model, "unknown learning-rate schedule \"" + lr.schedule +
                    "\" (ExponentialDecay, PiecewiseConstantDecay, "
                    "PolynomialDecay, InverseTimeDecay, CosineDecay, "
                    "CosineDecayRestarts)");
  }
  for (const char *steps : {"decay_steps", "first_decay_steps"})
    if (lr.args.count(steps) && !(lr.args[steps] > 0.0))
      fail(model, lr.schedule + ": " + steps + " must be > 0");
  a.done();
  return lr;
}

// --- Optimizers -----------------------------------------------------------

/// Keras's optimizer names as compile("adam") takes them.
std::string optimizer_class(const std::string &name) {
  static const std::map<std::string, std::string> names = {
      {"sgd", "SGD"},         {"adam", "Adam"},       {"adamw", "AdamW"},
      {"rmsprop", "RMSprop"}, {"adagrad", "Adagrad"}, {"adadelta", "Adadelta"},
      {"adamax", "Adamax"},   {"nadam", "Nadam"},     {"ftrl", "Ftrl"}};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  auto it = names.find(lower);
  return it == names.end() ? name : it->second;
}

OptimizerSpec parse_optimizer(const keras::KerasModel &model, const Value &v) {
  OptimizerSpec spec;
  const Value *config = nullptr;
  if (v.IsString()) {
    spec.class_name = optimizer_class(v.GetString());
  } else if (std::optional<Object> o = as_object(v)) {
    spec.class_name = o->class_name;
    config = o->config;
  } else {
    fail(model, "optimizer must be a name or a serialized optimizer, got " +
                    describe(v));
  }
  const std::string &c = spec.class_name;
  Args a(model, "optimizer " + c, config);
  // Arguments that change nothing estc computes.
  a.ignore({"name", "jit_compile", "is_legacy_optimizer", "ema_momentum",
            "ema_overwrite_frequency", "mesh"});
  // tf.keras.optimizers.legacy.Nadam has another rule (Keras 2's schedule
  // of the momentum cache) than tf.keras.optimizers.Nadam's, estc's.
  if (c == "Nadam")
    a.require("is_legacy_optimizer", "", true);
  a.require("use_ema", "", true);
  a.require("loss_scale_factor", "", false);
  a.require("decay", "0", false); // the legacy optimizers' time decay
  if (const Value *lr = a.raw("learning_rate"))
    spec.learning_rate = parse_learning_rate(model, *lr);
  else if (const Value *lr2 = a.raw("lr")) // tf.keras 2's legacy spelling
    spec.learning_rate = parse_learning_rate(model, *lr2);
  spec.clipnorm = a.optional_number("clipnorm");
  spec.clipvalue = a.optional_number("clipvalue");
  spec.global_clipnorm = a.optional_number("global_clipnorm");
  int clips = spec.clipnorm.has_value() + spec.clipvalue.has_value() +
              spec.global_clipnorm.has_value();
  if (clips > 1)
    fail(model, "optimizer " + c +
                    ": only one of clipnorm, clipvalue and global_clipnorm "
                    "may be set (Keras refuses more)");
  for (const auto &[name, value] :
       {std::pair{"clipnorm", spec.clipnorm},
        std::pair{"clipvalue", spec.clipvalue},
        std::pair{"global_clipnorm", spec.global_clipnorm}})
    if (value && !(*value > 0.0))
      fail(model, "optimizer " + c + ": " + name + " must be > 0");
  if (const Value *steps = a.raw("gradient_accumulation_steps")) {
    if (!steps->IsNumber() || steps->GetDouble() < 1)
      fail(model, "optimizer " + c +
                      ": gradient_accumulation_steps must be a number >= 1");
    spec.args["gradient_accumulation_steps"] = steps->GetDouble();
  }
  // weight_decay: AdamW's own; the others' (Keras 2.11+'s decoupled decay
  // of every optimizer) is refused unless 0.
  if (c != "AdamW")
    a.require("weight_decay", "0", false);
  double defaultLr = c == "SGD" ? 0.01 : 0.001;
  if (!a.has("learning_rate") && !a.has("lr"))
    spec.learning_rate.value = defaultLr;
  auto arg = [&](const char *name, double dflt) {
    spec.args[name] = a.number(name, dflt);
  };
  if (c == "SGD") {
    arg("momentum", 0.0);
    spec.flags["nesterov"] = a.flag("nesterov", false);
  } else if (c == "Adam") {
    arg("beta_1", 0.9);
    arg("beta_2", 0.999);
    arg("epsilon", 1e-7);
    spec.flags["amsgrad"] = a.flag("amsgrad", false);
  } else if (c == "AdamW") {
    arg("weight_decay", 0.004);
    arg("beta_1", 0.9);
    arg("beta_2", 0.999);
    arg("epsilon", 1e-7);
    a.require("amsgrad", "", true);
  } else if (c == "RMSprop") {
    arg("rho", 0.9);
    arg("momentum", 0.0);
    arg("epsilon", 1e-7);
    spec.flags["centered"] = a.flag("centered", false);
  } else if (c == "Adagrad") {
    arg("initial_accumulator_value", 0.1);
    arg("epsilon", 1e-7);
  } else if (c == "Adadelta") {
    arg("rho", 0.95);
    arg("epsilon", 1e-7);
  } else if (c == "Adamax" || c == "Nadam") {
    arg("beta_1", 0.9);
    arg("beta_2", 0.999);
    arg("epsilon", 1e-7);
  } else if (c == "Ftrl") {
    arg("learning_rate_power", -0.5);
    arg("initial_accumulator_value", 0.1);
    arg("l1_regularization_strength", 0.0);
    arg("l2_regularization_strength", 0.0);
    arg("l2_shrinkage_regularization_strength", 0.0);
    arg("beta", 0.0);
  } else {
    fail(model, "unknown optimizer \"" + c +
                    "\" (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, "
                    "Adamax, Nadam, Ftrl)");
  }
  a.done();
  return spec;
}

// --- Losses ---------------------------------------------------------------

/// Keras's loss function names (and their aliases) -> the canonical name.
std::optional<std::string> loss_function(const std::string &name) {
  static const std::map<std::string, std::string> names = {
      {"sparse_categorical_crossentropy", "sparse_categorical_crossentropy"},
      {"categorical_crossentropy", "categorical_crossentropy"},
      {"binary_crossentropy", "binary_crossentropy"},
      {"mean_squared_error", "mean_squared_error"},
      {"mse", "mean_squared_error"},
      {"MSE", "mean_squared_error"},
      {"mean_absolute_error", "mean_absolute_error"},
      {"mae", "mean_absolute_error"},
      {"MAE", "mean_absolute_error"},
      {"mean_absolute_percentage_error", "mean_absolute_percentage_error"},
      {"mape", "mean_absolute_percentage_error"},
      {"MAPE", "mean_absolute_percentage_error"},
      {"mean_squared_logarithmic_error", "mean_squared_logarithmic_error"},
      {"msle", "mean_squared_logarithmic_error"},
      {"MSLE", "mean_squared_logarithmic_error"},
      {"huber", "huber"},
      {"huber_loss", "huber"},
      {"hinge", "hinge"},
      {"squared_hinge", "squared_hinge"},
      {"kl_divergence", "kl_divergence"},
      {"kullback_leibler_divergence", "kl_divergence"},
      {"kld", "kl_divergence"},
      {"KLD", "kl_divergence"},
      {"poisson", "poisson"},
      {"cosine_similarity", "cosine_similarity"},
      {"log_cosh", "log_cosh"},
      {"logcosh", "log_cosh"}};
  auto it = names.find(name);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

/// Keras's loss classes -> their function.
std::optional<std::string> loss_class(const std::string &name) {
  static const std::map<std::string, std::string> names = {
      {"SparseCategoricalCrossentropy", "sparse_categorical_crossentropy"},
      {"CategoricalCrossentropy", "categorical_crossentropy"},
      {"BinaryCrossentropy", "binary_crossentropy"},
      {"MeanSquaredError", "mean_squared_error"},
      {"MeanAbsoluteError", "mean_absolute_error"},
      {"MeanAbsolutePercentageError", "mean_absolute_percentage_error"},
      {"MeanSquaredLogarithmicError", "mean_squared_logarithmic_error"},
      {"Huber", "huber"},
      {"Hinge", "hinge"},
      {"SquaredHinge", "squared_hinge"},
      {"KLDivergence", "kl_divergence"},
      {"Poisson", "poisson"},
      {"CosineSimilarity", "cosine_similarity"},
      {"LogCosh", "log_cosh"}};
  auto it = names.find(name);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

const char *kLossNames =
    "(sparse_categorical_crossentropy, categorical_crossentropy, "
    "binary_crossentropy, mse, mae, mape, msle, huber, hinge, squared_hinge, "
    "kld, poisson, cosine_similarity, log_cosh, or their classes)";

/// The arguments of a loss object's config (a loss class, or a metric
/// class of a loss function).
void loss_args(Args &a, LossSpec &loss) {
  a.ignore({"name", "fn", "dtype"});
  if (loss.fn == "sparse_categorical_crossentropy") {
    loss.from_logits = a.flag("from_logits", false);
    a.require("ignore_class", "", false);
    loss.axis = static_cast<int64_t>(a.number("axis", -1));
  } else if (loss.fn == "categorical_crossentropy" ||
             loss.fn == "binary_crossentropy") {
    loss.from_logits = a.flag("from_logits", false);
    loss.label_smoothing = a.number("label_smoothing", 0.0);
    loss.axis = static_cast<int64_t>(a.number("axis", -1));
  } else if (loss.fn == "huber") {
    loss.delta = a.number("delta", 1.0);
  } else if (loss.fn == "cosine_similarity") {
    loss.axis = static_cast<int64_t>(a.number("axis", -1));
  }
  if (loss.axis != -1)
    a.require("axis", "-1", false);
}

LossSpec parse_loss(const keras::KerasModel &model, const Value &v,
                    const std::string &output) {
  LossSpec loss;
  std::string where = "loss of output \"" + output + "\"";
  if (v.IsString()) {
    std::optional<std::string> fn = loss_function(v.GetString());
    if (!fn)
      fn = loss_class(v.GetString());
    if (!fn)
      fail(model,
           where + ": unknown loss \"" + v.GetString() + "\" " + kLossNames);
    loss.fn = *fn;
    return loss;
  }
  std::optional<Object> o = as_object(v);
  if (!o)
    fail(model,
         where + " must be a name or a serialized loss, got " + describe(v));
  std::optional<std::string> fn = loss_class(o->class_name);
  if (!fn && o->class_name == "LossFunctionWrapper" && o->config)
    if (const Value *f = member(*o->config, "fn"); f && f->IsString())
      fn = loss_function(f->GetString());
  if (!fn)
    fail(model,
         where + ": unknown loss \"" + o->class_name + "\" " + kLossNames);
  loss.fn = *fn;
  Args a(model, where + " (" + o->class_name + ")", o->config);
  std::string reduction = a.string("reduction", "auto");
  if (reduction != "auto" && reduction != "sum_over_batch_size")
    fail(model, where + ": reduction \"" + reduction +
                    "\" is not supported (Keras's fit reduces by "
                    "sum_over_batch_size)");
  loss_args(a, loss);
  a.done();
  return loss;
}

// --- Metrics --------------------------------------------------------------

const char *kMetricNames =
    "(accuracy, acc, binary_accuracy, categorical_accuracy, "
    "sparse_categorical_accuracy, AUC, Precision, Recall, "
    "RootMeanSquaredError, mse, mae, mape, msle, a loss function's name or "
    "metric class)";

/// Metric classes that are the mean of a loss function.
std::optional<std::string> metric_loss_class(const std::string &name) {
  static const std::map<std::string, std::string> names = {
      {"MeanSquaredError", "mean_squared_error"},
      {"MeanAbsoluteError", "mean_absolute_error"},
      {"MeanAbsolutePercentageError", "mean_absolute_percentage_error"},
      {"MeanSquaredLogarithmicError", "mean_squared_logarithmic_error"},
      {"BinaryCrossentropy", "binary_crossentropy"},
      {"CategoricalCrossentropy", "categorical_crossentropy"},
      {"SparseCategoricalCrossentropy", "sparse_categorical_crossentropy"},
      {"Hinge", "hinge"},
      {"SquaredHinge", "squared_hinge"},
      {"KLDivergence", "kl_divergence"},
      {"Poisson", "poisson"},
      {"LogCoshError", "log_cosh"}};
  auto it = names.find(name);
  if (it == names.end())
    return std::nullopt;
  return it->second;
}

bool accuracy_kind(const std::string &s) {
  return s == "binary_accuracy" || s == "categorical_accuracy" ||
         s == "sparse_categorical_accuracy";
}

MetricSpec parse_metric(const keras::KerasModel &model, const Value &v,
                        const std::string &output) {
  MetricSpec m;
  std::string where = "metric of output \"" + output + "\"";
  if (v.IsString()) {
    std::string s = v.GetString();
    m.name = s;
    if (s == "accuracy" || s == "acc") {
      m.kind = "accuracy";
    } else if (accuracy_kind(s)) {
      m.kind = s;
    } else if (std::optional<std::string> fn = loss_function(s);
               fn && *fn != "cosine_similarity" && *fn != "huber") {
      m.kind = *fn;
      m.loss.fn = *fn;
    } else {
      fail(model, where + ": unknown metric \"" + s + "\" " + kMetricNames);
    }
    return m;
  }
  std::optional<Object> o = as_object(v);
  if (!o)
    fail(model,
         where + " must be a name or a serialized metric, got " + describe(v));
  const std::string &c = o->class_name;
  Args a(model, where + " (" + c + ")", o->config);
  m.name = a.string("name", "");
  a.require("dtype", "float32", false);
  if (c == "MeanMetricWrapper") {
    // tf.keras's .h5 keeps a string metric as a wrapper of the function
    // Keras resolved it to, and Keras loads it as such (even the
    // categorical_accuracy a compile that saw no data resolves "accuracy"
    // to, whatever the labels): so does estc.
    std::string fn = a.string("fn", "");
    if (fn.empty() && (m.name == "accuracy" || m.name == "acc"))
      m.kind = "accuracy";
    else if (accuracy_kind(fn))
      m.kind = fn;
    else if (std::optional<std::string> lf = loss_function(fn)) {
      m.kind = *lf;
      m.loss.fn = *lf;
    } else
      fail(model,
           where + ": unknown metric function \"" + fn + "\" " + kMetricNames);
  } else if (c == "BinaryAccuracy") {
    m.kind = "binary_accuracy";
    m.threshold = a.number("threshold", 0.5);
  } else if (c == "CategoricalAccuracy") {
    m.kind = "categorical_accuracy";
  } else if (c == "SparseCategoricalAccuracy") {
    m.kind = "sparse_categorical_accuracy";
  } else if (c == "AUC") {
    m.kind = "auc";
    m.num_thresholds = static_cast<int64_t>(a.number("num_thresholds", 200));
    if (m.num_thresholds < 2)
      fail(model, where + ": num_thresholds must be > 1");
    m.curve = a.string("curve", "ROC");
    if (m.curve != "ROC" && m.curve != "PR")
      fail(model, where + ": curve \"" + m.curve + "\" (ROC or PR)");
    m.summation_method = a.string("summation_method", "interpolation");
    if (m.summation_method != "interpolation" &&
        m.summation_method != "minoring" && m.summation_method != "majoring")
      fail(model, where + ": summation_method \"" + m.summation_method +
                      "\" (interpolation, minoring or majoring)");
    m.from_logits = a.flag("from_logits", false);
    a.require("multi_label", "", true);
    a.require("num_labels", "", false);
    a.require("label_weights", "", false);
    a.require("thresholds", "", false);
  } else if (c == "Precision" || c == "Recall") {
    m.kind = c == "Precision" ? "precision" : "recall";
    if (const Value *t = a.raw("thresholds")) {
      if (t->IsNumber())
        m.threshold = t->GetDouble();
      else if (t->IsArray() && t->Size() == 1 && (*t)[0].IsNumber())
        m.threshold = (*t)[0].GetDouble();
      else
        fail(model, where + ": thresholds must be one number");
    }
    a.require("top_k", "", false);
    a.require("class_id", "", false);
  } else if (c == "RootMeanSquaredError") {
    m.kind = "root_mean_squared_error";
  } else if (std::optional<std::string> fn = metric_loss_class(c)) {
    m.kind = *fn;
    m.loss.fn = *fn;
    loss_args(a, m.loss);
  } else {
    fail(model, where + ": unknown metric \"" + c + "\" " + kMetricNames);
  }
  if (m.name.empty())
    m.name = keras::to_snake_case(c);
  a.done();
  return m;
}

/// `v` per output: a dict by output name, a list (one per output), or one
/// value for every output (`broadcast`); calls `f(output index, value)`.
template <typename F>
void per_output(const keras::KerasModel &model, const Value &v,
                const std::vector<std::string> &outputs, const char *what,
                bool list_is_per_output, F f) {
  if (v.IsObject() && !as_object(v)) {
    for (const auto &m : v.GetObject()) {
      std::string name = m.name.GetString();
      auto it = std::find(outputs.begin(), outputs.end(), name);
      if (it == outputs.end())
        fail(model, std::string(what) + " for \"" + name +
                        "\", which is not an output of the model");
      f(static_cast<size_t>(it - outputs.begin()), m.value);
    }
    return;
  }
  if (v.IsArray() && list_is_per_output) {
    if (v.Size() != outputs.size())
      fail(model, std::string(what) + ": a list of " +
                      std::to_string(v.Size()) + " for " +
                      std::to_string(outputs.size()) + " outputs");
    for (size_t i = 0; i < outputs.size(); ++i)
      f(i, v[static_cast<rapidjson::SizeType>(i)]);
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    f(i, v);
}

} // namespace

CompileConfig
parse_compile_config(const keras::KerasModel &model,
                     const std::vector<std::string> &output_names) {
  const Value &tc = model.training_config;
  if (!tc.IsObject())
    fail(model, "the model was not compiled (no compile_config / "
                "training_config): model_to_estimator needs a model saved "
                "after model.compile(...), as TF's does");
  CompileConfig cc;
  const Value *opt = member(tc, "optimizer");
  if (!opt)
    opt = member(tc, "optimizer_config");
  if (!opt)
    fail(model, "no optimizer: model_to_estimator needs a compiled model");
  cc.optimizer = parse_optimizer(model, *opt);

  size_t n = output_names.size();
  cc.losses.assign(n, std::nullopt);
  cc.loss_weights.assign(n, 1.0);
  cc.metrics.assign(n, {});
  const Value *loss = member(tc, "loss");
  if (!loss)
    fail(model, "no loss: model_to_estimator needs a model compiled with "
                "a loss");
  per_output(model, *loss, output_names, "loss", true,
             [&](size_t i, const Value &v) {
               if (!v.IsNull())
                 cc.losses[i] = parse_loss(model, v, output_names[i]);
             });
  if (std::none_of(cc.losses.begin(), cc.losses.end(),
                   [](const auto &l) { return l.has_value(); }))
    fail(model, "no output has a loss");
  if (const Value *w = member(tc, "loss_weights"))
    per_output(model, *w, output_names, "loss_weights", true,
               [&](size_t i, const Value &v) {
                 if (!v.IsNumber())
                   fail(model, "loss_weights of output \"" + output_names[i] +
                                   "\" must be a number, got " + describe(v));
                 cc.loss_weights[i] = v.GetDouble();
               });
  if (const Value *w = member(tc, "weighted_metrics");
      w && !(w->IsArray() && w->Empty()))
    fail(model, "weighted_metrics are not supported (TF's model_to_estimator "
                "does not convert them either)");
  if (const Value *metrics = member(tc, "metrics")) {
    // A flat list applies to every output; a list of lists (or of nulls)
    // is per output, as Keras reads it.
    bool per =
        metrics->IsArray() && metrics->Size() == n && n > 0 &&
        std::all_of(metrics->Begin(), metrics->End(),
                    [](const Value &x) { return x.IsArray() || x.IsNull(); });
    per_output(
        model, *metrics, output_names, "metrics", per,
        [&](size_t i, const Value &v) {
          if (v.IsNull())
            return;
          if (v.IsArray()) {
            for (const Value &x : v.GetArray())
              cc.metrics[i].push_back(parse_metric(model, x, output_names[i]));
          } else {
            cc.metrics[i].push_back(parse_metric(model, v, output_names[i]));
          }
        });
  }
  return cc;
}

train::Optimizer make_optimizer(const OptimizerSpec &spec) {
  const LearningRateSpec lrs = spec.learning_rate;
  train::LearningRate lr(lrs.value);
  if (!lrs.schedule.empty()) {
    lr = train::LearningRate([lrs](const Tensor &step) -> Tensor {
      auto arg = [&](const char *n) { return lrs.args.at(n); };
      const std::string &s = lrs.schedule;
      if (s == "ExponentialDecay")
        return train::exponential_decay(lrs.value, step, arg("decay_steps"),
                                        arg("decay_rate"), lrs.flag);
      if (s == "InverseTimeDecay")
        return train::inverse_time_decay(lrs.value, step, arg("decay_steps"),
                                         arg("decay_rate"), lrs.flag);
      if (s == "PiecewiseConstantDecay")
        return train::piecewise_constant(step, lrs.boundaries, lrs.values);
      if (s == "PolynomialDecay")
        return train::polynomial_decay(lrs.value, step, arg("decay_steps"),
                                       arg("end_learning_rate"), arg("power"),
                                       lrs.flag);
      if (s == "CosineDecay")
        return train::cosine_decay(lrs.value, step, arg("decay_steps"),
                                   arg("alpha"));
      return train::cosine_decay_restarts(
          lrs.value, step, arg("first_decay_steps"), arg("t_mul"), arg("m_mul"),
          arg("alpha"));
    });
  }
  auto a = [&](const char *n) { return spec.args.at(n); };
  auto flag = [&](const char *n) {
    auto it = spec.flags.find(n);
    return it != spec.flags.end() && it->second;
  };
  const std::string &c = spec.class_name;
  std::optional<train::Optimizer> opt;
  if (c == "SGD")
    opt = train::KerasSGDOptimizer(lr, a("momentum"), flag("nesterov"));
  else if (c == "Adam")
    opt = train::KerasAdamOptimizer(lr, a("beta_1"), a("beta_2"), a("epsilon"),
                                    flag("amsgrad"));
  else if (c == "AdamW")
    opt = train::AdamWOptimizer(lr, a("weight_decay"), a("beta_1"), a("beta_2"),
                                a("epsilon"));
  else if (c == "RMSprop")
    opt = train::KerasRMSpropOptimizer(lr, a("rho"), a("momentum"),
                                       a("epsilon"), flag("centered"));
  else if (c == "Adagrad")
    opt = train::KerasAdagradOptimizer(lr, a("initial_accumulator_value"),
                                       a("epsilon"));
  else if (c == "Adadelta")
    opt = train::AdadeltaOptimizer(lr, a("rho"), a("epsilon"));
  else if (c == "Adamax")
    opt = train::AdamaxOptimizer(lr, a("beta_1"), a("beta_2"), a("epsilon"));
  else if (c == "Nadam")
    opt = train::NadamOptimizer(lr, a("beta_1"), a("beta_2"), a("epsilon"));
  else
    opt = train::FtrlOptimizer(
        lr, a("learning_rate_power"), a("initial_accumulator_value"),
        a("l1_regularization_strength"), a("l2_regularization_strength"),
        a("l2_shrinkage_regularization_strength"), a("beta"));
  if (spec.clipnorm)
    opt = opt->clip_gradients_by_norm(*spec.clipnorm);
  if (spec.global_clipnorm)
    opt = opt->clip_gradients_by_global_norm(*spec.global_clipnorm);
  if (spec.clipvalue)
    opt = opt->clip_gradients_by_value(*spec.clipvalue);
  if (auto it = spec.args.find("gradient_accumulation_steps");
      it != spec.args.end() && it->second > 1)
    opt = train::GradientAccumulationOptimizer(
        *opt, static_cast<int64_t>(it->second));
  return *opt;
}

namespace {

constexpr double kEpsilon = 1e-7; // keras.backend.epsilon()

/// Keras's losses_utils.squeeze_or_expand_dimensions, as far as the
/// per-example values go: labels of rank one less than a prediction whose
/// last dimension is 1 get that dimension; labels of rank one more with a
/// last dimension 1 lose it.
Tensor match_labels(const Tensor &y_true, const Tensor &y_pred) {
  int64_t rt = y_true.rank(), rp = y_pred.rank();
  if (rt == rp - 1 && y_pred.shape().back() == 1)
    return expand_dims(y_true, -1);
  if (rt == rp + 1 && y_true.shape().back() == 1)
    return squeeze(y_true, Dims{-1});
  return y_true;
}

/// Labels as Keras's fit, evaluate and train_on_batch pass them on:
/// data_adapter.expand_1d makes labels of rank 1 [batch, 1].
Tensor expand_1d(const Tensor &y) {
  return y.rank() == 1 ? expand_dims(y, -1) : y;
}

/// Sparse class ids as a [batch...] integer tensor (a trailing 1 dropped).
Tensor sparse_ids(const Tensor &y_true, const Tensor &y_pred) {
  Tensor ids = y_true;
  if (ids.rank() == y_pred.rank() && ids.shape().back() == 1)
    ids = squeeze(ids, Dims{-1});
  if (ids.dtype() != DType::Int32 && ids.dtype() != DType::Int64)
    ids = cast(ids, DType::Int64);
  return ids;
}

/// The per-example values of loss function `loss` (one value per example:
/// the last axis reduced).
Tensor per_example(const LossSpec &loss, const Tensor &y_true_1d,
                   const Tensor &y_pred) {
  Tensor y_true_in = expand_1d(y_true_1d);
  Graph &g = y_pred.graph();
  DType dt = y_pred.dtype();
  auto c = [&](double v) { return g.constant(v, dt); };
  const std::string &fn = loss.fn;
  if (fn == "sparse_categorical_crossentropy") {
    Tensor ids = sparse_ids(y_true_in, y_pred);
    Tensor logits =
        loss.from_logits
            ? y_pred
            : log(clip_by_value(y_pred, c(kEpsilon), c(1.0 - kEpsilon)));
    return nn::sparse_softmax_cross_entropy_with_logits(ids, logits);
  }
  Tensor y_true = match_labels(y_true_in, y_pred);
  if (y_true.dtype() != dt)
    y_true = cast(y_true, dt);
  if (fn == "categorical_crossentropy") {
    if (loss.label_smoothing > 0.0) {
      double k = static_cast<double>(y_pred.shape().back());
      y_true =
          y_true * (1.0 - loss.label_smoothing) + c(loss.label_smoothing / k);
    }
    if (loss.from_logits)
      return nn::softmax_cross_entropy_with_logits(y_true, y_pred);
    Tensor p = y_pred / reduce_sum(y_pred, Dims{-1}, true);
    p = clip_by_value(p, c(kEpsilon), c(1.0 - kEpsilon));
    return negative(reduce_sum(y_true * log(p), Dims{-1}));
  }
  if (fn == "binary_crossentropy") {
    if (loss.label_smoothing > 0.0)
      y_true =
          y_true * (1.0 - loss.label_smoothing) + c(0.5 * loss.label_smoothing);
    Tensor bce;
    if (loss.from_logits) {
      bce = nn::sigmoid_cross_entropy_with_logits(y_true, y_pred);
    } else {
      Tensor p = clip_by_value(y_pred, c(kEpsilon), c(1.0 - kEpsilon));
      bce = negative(y_true * log(p + kEpsilon) +
                     (1.0 - y_true) * log(1.0 - p + kEpsilon));
    }
    return reduce_mean(bce, Dims{-1});
  }
  Tensor diff = y_pred - y_true;
  if (fn == "mean_squared_error")
    return reduce_mean(square(diff), Dims{-1});
  if (fn == "mean_absolute_error")
    return reduce_mean(abs(diff), Dims{-1});
  if (fn == "mean_absolute_percentage_error")
    return reduce_mean(abs(diff / maximum(abs(y_true), c(kEpsilon))),
                       Dims{-1}) *
           100.0;
  if (fn == "mean_squared_logarithmic_error")
    return reduce_mean(square(log(maximum(y_pred, c(kEpsilon)) + 1.0) -
                              log(maximum(y_true, c(kEpsilon)) + 1.0)),
                       Dims{-1});
  if (fn == "huber") {
    Tensor e = abs(diff);
    Tensor d = c(loss.delta);
    return reduce_mean(where(less_equal(e, d), square(diff) * 0.5,
                             d * e - c(0.5 * loss.delta * loss.delta)),
                       Dims{-1});
  }
  if (fn == "hinge" || fn == "squared_hinge") {
    // Keras's _maybe_convert_labels: labels all in {0, 1} become {-1, 1}.
    Tensor is01 = logical_or(equal(y_true, c(0.0)), equal(y_true, c(1.0)));
    Tensor all01 = equal(reduce_min(cast(is01, dt)), c(1.0));
    Tensor signed_true = where(all01, y_true * 2.0 - 1.0, y_true);
    Tensor h = maximum(1.0 - signed_true * y_pred, c(0.0));
    return reduce_mean(fn == "hinge" ? h : square(h), Dims{-1});
  }
  if (fn == "kl_divergence") {
    Tensor t = clip_by_value(y_true, c(kEpsilon), c(1.0));
    Tensor p = clip_by_value(y_pred, c(kEpsilon), c(1.0));
    return reduce_sum(t * log(t / p), Dims{-1});
  }
  if (fn == "poisson")
    return reduce_mean(y_pred - y_true * log(y_pred + kEpsilon), Dims{-1});
  if (fn == "cosine_similarity")
    return negative(reduce_sum(nn::l2_normalize(y_true, Dims{-1}) *
                                   nn::l2_normalize(y_pred, Dims{-1}),
                               Dims{-1}));
  // log_cosh: x + softplus(-2x) - log(2).
  return reduce_mean(diff + nn::softplus(diff * -2.0) - c(std::log(2.0)),
                     Dims{-1});
}

} // namespace

Tensor keras_loss(const LossSpec &loss, const Tensor &y_true,
                  const Tensor &y_pred) {
  Tensor values = per_example(loss, y_true, y_pred);
  // SUM_OVER_BATCH_SIZE: the sum over the number of values.
  Tensor count = cast(estc::size(values), values.dtype());
  return reduce_sum(values) / count;
}

Metric keras_metric(const MetricSpec &metric,
                    const std::optional<LossSpec> &output_loss,
                    const Tensor &y_true_1d, const Tensor &y_pred,
                    const std::string &name) {
  Tensor y_true = expand_1d(y_true_1d);
  Graph &g = y_pred.graph();
  DType dt = y_pred.dtype();
  std::string kind = metric.kind;
  if (kind == "accuracy") {
    // training_utils_v1.get_metric_function, as model_to_estimator's v1
    // graph runs it: binary for a last dimension of 1 or a binary
    // crossentropy, sparse for a sparse categorical crossentropy, else
    // categorical.
    std::string lf = output_loss ? output_loss->fn : "";
    if (y_pred.shape().back() == 1 || lf == "binary_crossentropy")
      kind = "binary_accuracy";
    else if (lf == "sparse_categorical_crossentropy")
      kind = "sparse_categorical_accuracy";
    else
      kind = "categorical_accuracy";
  }
  if (kind == "binary_accuracy") {
    Tensor t = match_labels(y_true, y_pred);
    if (t.dtype() != dt)
      t = cast(t, dt);
    Tensor p = cast(greater(y_pred, g.constant(metric.threshold, dt)), dt);
    return metrics::mean(
        reduce_mean(cast(equal(t, p), DType::Float32), Dims{-1}), {}, name);
  }
  if (kind == "sparse_categorical_accuracy") {
    Tensor ids = sparse_ids(y_true, y_pred);
    Tensor p = argmax(y_pred, -1, ids.dtype());
    return metrics::mean(cast(equal(ids, p), DType::Float32), {}, name);
  }
  if (kind == "categorical_accuracy") {
    Tensor t = argmax(match_labels(y_true, y_pred), -1);
    Tensor p = argmax(y_pred, -1);
    return metrics::mean(cast(equal(t, p), DType::Float32), {}, name);
  }
  if (kind == "auc" || kind == "precision" || kind == "recall") {
    Tensor p = metric.from_logits ? sigmoid(y_pred) : y_pred;
    Tensor t = match_labels(y_true, p);
    if (t.dtype() != dt)
      t = cast(t, dt);
    if (kind == "auc") {
      std::string method = metric.summation_method;
      if (method == "interpolation")
        method = metric.curve == "PR" ? "careful_interpolation" : "trapezoidal";
      return metrics::auc(t, p, {}, metric.num_thresholds, metric.curve, name,
                          method);
    }
    Tensor positive = greater(p, g.constant(metric.threshold, dt));
    return kind == "precision" ? metrics::precision(t, positive, {}, name)
                               : metrics::recall(t, positive, {}, name);
  }
  if (kind == "root_mean_squared_error") {
    Tensor t = match_labels(y_true, y_pred);
    if (t.dtype() != dt)
      t = cast(t, dt);
    return metrics::root_mean_squared_error(t, y_pred, {}, name);
  }
  // The mean of a loss function's per-example values.
  return metrics::mean(per_example(metric.loss, y_true, y_pred), {}, name);
}

} // namespace keras_compile
} // namespace estimator
} // namespace estc
