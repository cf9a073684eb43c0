//===- runtime/ps/Protocol.cpp - Checking what a ps task is sent ---------===//
//
// Every request a ps task serves is checked here against the shard's
// Layout before the server reads or writes a variable (runtime/ps/
// Protocol.h). Built without gRPC, so that the fuzz target links it alone.
//
//===----------------------------------------------------------------------===//
#include "runtime/ps/Protocol.h"

#include "lib/Support/Printable.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace estc::ps {

// Shard's key function: here, in the file every user of a Shard links.
Shard::~Shard() = default;

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i] == rt::kValuesDim ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

std::string quoted(const std::string &text) {
  constexpr size_t kMax = 200;
  std::string s = escape_control_chars(
      std::string_view(text).substr(0, std::min(text.size(), kMax)), true);
  return "'" + s + (text.size() > kMax ? "...'" : "'");
}

std::optional<rt::DType> fromProto(int dtype) {
  switch (dtype) {
  case DT_F32:
    return rt::DType::F32;
  case DT_F64:
    return rt::DType::F64;
  case DT_I8:
    return rt::DType::I8;
  case DT_I32:
    return rt::DType::I32;
  case DT_I64:
    return rt::DType::I64;
  case DT_BOOL:
    return rt::DType::Bool;
  default:
    return std::nullopt;
  }
}

DataType toProto(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return DT_F32;
  case rt::DType::F64:
    return DT_F64;
  case rt::DType::I8:
    return DT_I8;
  case rt::DType::I32:
    return DT_I32;
  case rt::DType::I64:
    return DT_I64;
  case rt::DType::Bool:
    return DT_BOOL;
  }
  return DT_F32;
}

void toProto(rt::DType dtype, const std::vector<int64_t> &shape,
             const void *data, size_t bytes, Tensor *t) {
  t->set_dtype(toProto(dtype));
  t->mutable_shape()->Assign(shape.begin(), shape.end());
  t->set_data(static_cast<const char *>(data), bytes);
}

namespace {

bool hasPrefix(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// The variable an input key names ("grad/emb" -> "emb"), or "".
std::string variableOf(const std::string &key) {
  for (const char *p : {"grad/", "ids/", "rows/"})
    if (hasPrefix(key, p))
      return key.substr(std::strlen(p));
  return "";
}

/// Elements of a shape of non-negative dimensions, or -1 when more than
/// `limit`.
int64_t elementsUpTo(const std::vector<int64_t> &shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > limit / d)
      return -1;
    n *= d;
  }
  return n;
}

std::string keyList(const std::vector<InputSpec> &inputs) {
  std::string s;
  size_t shown = std::min<size_t>(inputs.size(), 8);
  for (size_t i = 0; i < shown; ++i)
    s += (i ? ", " : "") + inputs[i].key;
  if (shown < inputs.size())
    s += ", ...";
  return s;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB",
                static_cast<double>(bytes) / (1 << 30));
  return buf;
}

} // namespace

Layout::Layout(std::vector<Shard::Variable> variables,
               std::vector<InputSpec> inputs)
    : variables_(std::move(variables)), inputs_(std::move(inputs)) {
  auto bad = [](const std::string &what) {
    throw std::invalid_argument("ps shard: " + what);
  };
  for (size_t i = 0; i < variables_.size(); ++i) {
    const Shard::Variable &v = variables_[i];
    if (v.name.empty())
      bad("variable " + std::to_string(i) + " has no name");
    if (!variableIndex_.emplace(v.name, static_cast<int>(i)).second)
      bad("two variables are named " + quoted(v.name));
    if (elementsUpTo(v.shape, std::numeric_limits<int64_t>::max() / 8) < 0)
      bad("variable " + quoted(v.name) + " has shape " + shapeText(v.shape));
    if (!v.data && variableBytes(static_cast<int>(i)) > 0)
      bad("variable " + quoted(v.name) + " has no data");
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const InputSpec &in = inputs_[i];
    if (!inputIndex_.emplace(in.key, static_cast<int>(i)).second)
      bad("two apply inputs are keyed " + quoted(in.key));
    for (size_t d = 0; d < in.shape.size(); ++d)
      if (in.shape[d] < 0 && !(d == 0 && in.shape[d] == rt::kValuesDim))
        bad("apply input " + quoted(in.key) + " has shape " +
            shapeText(in.shape));
    std::string name = variableOf(in.key);
    if (name.empty())
      continue;
    int v = findVariable(name);
    if (v < 0)
      bad("apply input " + quoted(in.key) + " names variable " + quoted(name) +
          ", which the shard does not hold");
    const Shard::Variable &var = variables_[static_cast<size_t>(v)];
    std::vector<int64_t> want = var.shape;
    rt::DType dtype = var.dtype;
    if (hasPrefix(in.key, "ids/")) {
      want = {rt::kValuesDim};
      dtype = rt::DType::I64;
      if (var.shape.empty())
        bad("apply input " + quoted(in.key) + " gives rows of the scalar " +
            quoted(name));
      if (std::none_of(inputs_.begin(), inputs_.end(), [&](const InputSpec &o) {
            return o.key == "rows/" + name;
          }))
        bad("apply input " + quoted(in.key) + " has no 'rows/" + name + "'");
    } else if (hasPrefix(in.key, "rows/")) {
      if (var.shape.empty())
        bad("apply input " + quoted(in.key) + " gives rows of the scalar " +
            quoted(name));
      want[0] = rt::kValuesDim;
      if (std::none_of(inputs_.begin(), inputs_.end(), [&](const InputSpec &o) {
            return o.key == "ids/" + name;
          }))
        bad("apply input " + quoted(in.key) + " has no 'ids/" + name + "'");
    }
    if (in.dtype != dtype || in.shape != want)
      bad("apply input " + quoted(in.key) + " is " + rt::dtypeName(in.dtype) +
          " " + shapeText(in.shape) + ", not " + rt::dtypeName(dtype) + " " +
          shapeText(want));
  }
}

int Layout::findVariable(const std::string &name) const {
  auto it = variableIndex_.find(name);
  return it == variableIndex_.end() ? -1 : it->second;
}

int Layout::findInput(const std::string &key) const {
  auto it = inputIndex_.find(key);
  return it == inputIndex_.end() ? -1 : it->second;
}

int64_t Layout::variableBytes(int i) const {
  const Shard::Variable &v = variables_[static_cast<size_t>(i)];
  return elementsUpTo(v.shape, std::numeric_limits<int64_t>::max() / 8) *
         static_cast<int64_t>(rt::dtypeBytes(v.dtype));
}

int64_t Layout::rowBytes(int i) const {
  const Shard::Variable &v = variables_[static_cast<size_t>(i)];
  std::vector<int64_t> row(v.shape.begin() + (v.shape.empty() ? 0 : 1),
                           v.shape.end());
  return elementsUpTo(row, std::numeric_limits<int64_t>::max() / 8) *
         static_cast<int64_t>(rt::dtypeBytes(v.dtype));
}

Status checkPullDense(const Layout &layout, const PullDenseRequest &request,
                      std::vector<int> *variables, int64_t maxBytes) {
  variables->clear();
  int64_t total = 0;
  for (const std::string &name : request.names()) {
    int v = layout.findVariable(name);
    if (v < 0)
      return Status::invalid("no variable " + quoted(name) + " on this task");
    total += layout.variableBytes(v);
    if (total > maxBytes)
      return Status::invalid("the " + std::to_string(variables->size() + 1) +
                             " variables up to " + quoted(name) + " are " +
                             gib(total) + ", more than a message's " +
                             gib(maxBytes));
    variables->push_back(v);
  }
  return {};
}

Status checkPullRows(const Layout &layout, const PullRowsRequest &request,
                     int *variable, int64_t maxBytes) {
  int v = layout.findVariable(request.variable());
  if (v < 0)
    return Status::invalid("no variable " + quoted(request.variable()) +
                           " on this task");
  const Shard::Variable &var = layout.variables()[static_cast<size_t>(v)];
  if (var.shape.empty())
    return Status::invalid("variable " + quoted(var.name) + " is a scalar");
  int64_t rowBytes = layout.rowBytes(v);
  int64_t n = request.ids_size();
  if (rowBytes > 0 && n > maxBytes / rowBytes)
    return Status::invalid(std::to_string(n) + " rows of variable " +
                           quoted(var.name) + " are more than a message's " +
                           gib(maxBytes));
  for (int64_t id : request.ids())
    if (id < 0 || id >= var.shape[0])
      return Status::invalid("id " + std::to_string(id) + " of variable " +
                             quoted(var.name) + " is outside [0, " +
                             std::to_string(var.shape[0]) + ")");
  *variable = v;
  return {};
}

Status checkPullRowsBatch(const Layout &layout,
                          const PullRowsBatchRequest &request,
                          std::vector<int> *variables, int64_t maxBytes) {
  variables->clear();
  int64_t bytes = 0;
  for (const PullRowsRequest &pull : request.pulls()) {
    int v = -1;
    if (Status s = checkPullRows(layout, pull, &v, maxBytes - bytes); !s.ok())
      return s;
    bytes += layout.rowBytes(v) * pull.ids_size();
    variables->push_back(v);
  }
  return {};
}

Status decodePush(const Layout &layout, const PushRequest &request,
                  std::map<std::string, HostTensor> *inputs) {
  inputs->clear();
  if (request.worker() < 0)
    return Status::invalid("push from worker " +
                           std::to_string(request.worker()) +
                           ": not a worker index");
  if (request.sequence() < 0)
    return Status::invalid("push from worker " +
                           std::to_string(request.worker()) + ": sequence " +
                           std::to_string(request.sequence()) + " is negative");
  const std::vector<InputSpec> &specs = layout.inputs();
  for (const NamedTensor &named : request.tensors()) {
    const std::string &key = named.key();
    int i = layout.findInput(key);
    if (i < 0)
      return Status::invalid(
          "unknown input " + quoted(key) + " (this task's apply takes " +
          std::to_string(specs.size()) +
          (specs.empty() ? "" : ": " + keyList(specs)) + ")");
    const InputSpec &spec = specs[static_cast<size_t>(i)];
    if (inputs->count(key))
      return Status::invalid("input " + quoted(key) + " appears twice");
    const Tensor &t = named.tensor();
    std::optional<rt::DType> dtype = fromProto(t.dtype());
    if (!dtype)
      return Status::invalid("input " + quoted(key) + " has dtype " +
                             std::to_string(t.dtype()) + ", not one of estc's");
    if (*dtype != spec.dtype)
      return Status::invalid("input " + quoted(key) + " is " +
                             rt::dtypeName(*dtype) + ", the task takes " +
                             rt::dtypeName(spec.dtype));
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    bool fits = shape.size() == spec.shape.size();
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = spec.shape[d] == rt::kValuesDim ? shape[d] >= 0
                                             : shape[d] == spec.shape[d];
    if (!fits) {
      // A shape from the wire can be long: show its first dimensions.
      std::vector<int64_t> shown(
          shape.begin(), shape.begin() + std::min<size_t>(shape.size(), 8));
      return Status::invalid("input " + quoted(key) + " has shape " +
                             shapeText(shown) +
                             (shown.size() < shape.size() ? " (first 8)" : "") +
                             ", the task takes " + shapeText(spec.shape));
    }
    size_t size = rt::dtypeBytes(spec.dtype);
    int64_t n =
        elementsUpTo(shape, static_cast<int64_t>(t.data().size() / size) + 1);
    if (n < 0 || static_cast<size_t>(n) * size != t.data().size())
      return Status::invalid(
          "input " + quoted(key) + " holds " + std::to_string(t.data().size()) +
          " bytes, not those of " + rt::dtypeName(spec.dtype) + " " +
          shapeText(shape));
    HostTensor &h = (*inputs)[key];
    h.dtype = spec.dtype;
    h.shape = std::move(shape);
    h.bytes.assign(t.data().begin(), t.data().end());
  }
  for (const InputSpec &spec : specs)
    if (!inputs->count(spec.key))
      return Status::invalid("the push lacks input " + quoted(spec.key));
  // A sparse gradient's ids are rows of its variable, one per row given.
  for (const auto &[key, t] : *inputs) {
    if (!hasPrefix(key, "ids/"))
      continue;
    std::string name = variableOf(key);
    const HostTensor &rows = inputs->at("rows/" + name);
    if (rows.shape[0] != t.shape[0])
      return Status::invalid(quoted(key) + " has " +
                             std::to_string(t.shape[0]) + " ids but " +
                             quoted("rows/" + name) + " " +
                             std::to_string(rows.shape[0]) + " rows");
    int64_t limit =
        layout.variables()[static_cast<size_t>(layout.findVariable(name))]
            .shape[0];
    const int64_t *ids = t.as<int64_t>();
    for (int64_t j = 0; j < t.shape[0]; ++j) {
      int64_t id;
      std::memcpy(&id, ids + j, sizeof id);
      if (id < 0 || id >= limit)
        return Status::invalid("id " + std::to_string(id) + " of input " +
                               quoted(key) + " is outside [0, " +
                               std::to_string(limit) +
                               "), the rows of variable " + quoted(name));
    }
  }
  return {};
}

void Aggregate::add(const std::map<std::string, HostTensor> &inputs) {
  ++count_;
  if (count_ == 1) {
    sum_ = inputs;
    return;
  }
  for (const auto &[key, t] : inputs) {
    HostTensor &s = sum_.at(key);
    if (hasPrefix(key, "grad/")) {
      if (t.dtype == rt::DType::F32) {
        float *a = s.as<float>();
        const float *b = t.as<float>();
        for (int64_t i = 0, n = t.numElements(); i < n; ++i)
          a[i] += b[i];
      } else if (t.dtype == rt::DType::F64) {
        double *a = s.as<double>();
        const double *b = t.as<double>();
        for (int64_t i = 0, n = t.numElements(); i < n; ++i)
          a[i] += b[i];
      }
    } else if (hasPrefix(key, "ids/") || hasPrefix(key, "rows/")) {
      s.shape[0] += t.shape[0];
      s.bytes.insert(s.bytes.end(), t.bytes.begin(), t.bytes.end());
    }
  }
}

std::map<std::string, HostTensor> Aggregate::take() {
  std::map<std::string, HostTensor> mean = std::move(sum_);
  int count = count_;
  sum_.clear();
  count_ = 0;
  if (count <= 1)
    return mean;
  for (auto &[key, t] : mean) {
    if (!hasPrefix(key, "grad/") && !hasPrefix(key, "rows/"))
      continue;
    if (t.dtype == rt::DType::F32) {
      float *a = t.as<float>();
      for (int64_t i = 0, n = t.numElements(); i < n; ++i)
        a[i] /= static_cast<float>(count);
    } else if (t.dtype == rt::DType::F64) {
      double *a = t.as<double>();
      for (int64_t i = 0, n = t.numElements(); i < n; ++i)
        a[i] /= count;
    }
  }
  return mean;
}

} // namespace estc::ps
