//===- GraphBuilder.cpp - Building model graphs from C++ ----------------===//

#include "lib/Graph/GraphBuilder.h"

#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Ops.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

namespace estc {

namespace {
std::string shapeStr(const Dims &d) { return shape::toString(d); }

// FNV-1a, 64 bit: a stable hash of a name.
uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64 finalizer.
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void setDims(graph::TensorShape *s, const Dims &d) {
  s->clear_dim();
  for (int64_t v : d)
    s->add_dim(v);
}

Dims getDims(const graph::TensorShape &s) {
  return Dims(s.dim().begin(), s.dim().end());
}

bool isValidName(const std::string &name) {
  if (name.empty() || name.front() == '/' || name.back() == '/')
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' ||
          c == '-' || c == '.'))
      return false;
  return name.find("//") == std::string::npos;
}
} // namespace

// --- DType / ModeKeys --------------------------------------------------------

static_assert(graph::DT_INVALID == static_cast<int>(DType::Invalid) &&
                  graph::DT_FLOAT == static_cast<int>(DType::Float32) &&
                  graph::DT_DOUBLE == static_cast<int>(DType::Float64) &&
                  graph::DT_INT32 == static_cast<int>(DType::Int32) &&
                  graph::DT_INT64 == static_cast<int>(DType::Int64) &&
                  graph::DT_BOOL == static_cast<int>(DType::Bool) &&
                  graph::DT_HALF == static_cast<int>(DType::Float16) &&
                  graph::DT_BFLOAT16 == static_cast<int>(DType::BFloat16),
              "to_proto / from_proto: DType has graph.proto's numbers");

const char *mode_key(ModeKeys mode) {
  switch (mode) {
  case ModeKeys::TRAIN:
    return "train";
  case ModeKeys::EVAL:
    return "eval";
  case ModeKeys::PREDICT:
    return "predict";
  }
  return "?";
}

// --- Attributes -----------------------------------------------------------

graph::AttrValue attr_i(int64_t v) {
  graph::AttrValue a;
  a.set_i(v);
  return a;
}
graph::AttrValue attr_f(double v) {
  graph::AttrValue a;
  a.set_f(v);
  return a;
}
graph::AttrValue attr_b(bool v) {
  graph::AttrValue a;
  a.set_b(v);
  return a;
}
graph::AttrValue attr_s(const std::string &v) {
  graph::AttrValue a;
  a.set_s(v);
  return a;
}
graph::AttrValue attr_type(DType v) {
  graph::AttrValue a;
  a.set_type(to_proto(v));
  return a;
}
graph::AttrValue attr_shape(const Dims &v) {
  graph::AttrValue a;
  setDims(a.mutable_shape(), v);
  return a;
}
graph::AttrValue attr_list(const Dims &v) {
  graph::AttrValue a;
  auto *l = a.mutable_list();
  for (int64_t x : v)
    l->add_i(x);
  return a;
}
graph::AttrValue attr_strings(const std::vector<std::string> &v) {
  graph::AttrValue a;
  auto *l = a.mutable_list();
  for (const std::string &s : v)
    l->add_s(s);
  return a;
}

// --- Initializers ------------------------------------------------------------

bool Initializer::is_random() const {
  return type == "random_uniform" || type == "random_normal" ||
         type == "truncated_normal" || type == "glorot_uniform" ||
         type == "glorot_normal" || type == "variance_scaling" ||
         type == "orthogonal";
}

Initializer zeros_initializer() { return Initializer{"zeros", {}, {}, {}, {}}; }
Initializer ones_initializer() { return Initializer{"ones", {}, {}, {}, {}}; }
Initializer constant_initializer(double value) {
  return Initializer{"constant", {{"value", value}}, {}, {}, {}};
}
Initializer constant_initializer(const std::vector<double> &values) {
  return Initializer{"constant", {}, {}, {}, values};
}
Initializer random_uniform_initializer(double minval, double maxval,
                                       std::optional<int64_t> seed) {
  return Initializer{
      "random_uniform", {{"minval", minval}, {"maxval", maxval}}, {}, seed, {}};
}
Initializer random_normal_initializer(double mean, double stddev,
                                      std::optional<int64_t> seed) {
  return Initializer{
      "random_normal", {{"mean", mean}, {"stddev", stddev}}, {}, seed, {}};
}
Initializer truncated_normal_initializer(double mean, double stddev,
                                         std::optional<int64_t> seed) {
  return Initializer{
      "truncated_normal", {{"mean", mean}, {"stddev", stddev}}, {}, seed, {}};
}
Initializer glorot_uniform_initializer(std::optional<int64_t> seed) {
  return Initializer{"glorot_uniform", {}, {}, seed, {}};
}
Initializer orthogonal_initializer(double gain, std::optional<int64_t> seed) {
  return Initializer{"orthogonal", {{"gain", gain}}, {}, seed, {}};
}
Initializer glorot_normal_initializer(std::optional<int64_t> seed) {
  return Initializer{"glorot_normal", {}, {}, seed, {}};
}
Initializer variance_scaling_initializer(double scale, const std::string &mode,
                                         const std::string &distribution,
                                         std::optional<int64_t> seed) {
  return Initializer{"variance_scaling",
                     {{"scale", scale}},
                     {{"mode", mode}, {"distribution", distribution}},
                     seed,
                     {}};
}

// --- Tensor / Variable -------------------------------------------------------

Graph &Tensor::graph() const {
  if (!graph_)
    throw GraphError("use of an empty Tensor (not produced by any op)");
  return *graph_;
}
const std::string &Tensor::op() const { return graph().node(name_).op(); }
DType Tensor::dtype() const { return from_proto(graph().node(name_).dtype()); }
Dims Tensor::shape() const { return getDims(graph().node(name_).shape()); }

Graph &Variable::graph() const {
  if (!graph_)
    throw GraphError("use of an empty Variable");
  return *graph_;
}
DType Variable::dtype() const {
  return from_proto(graph().variable_def(name_).dtype());
}
Dims Variable::shape() const {
  return getDims(graph().variable_def(name_).shape());
}
bool Variable::trainable() const {
  return graph().variable_def(name_).trainable();
}
bool Variable::local() const { return graph().variable_def(name_).local(); }
Tensor Variable::read() const { return graph().read_variable(*this); }

// --- TensorMap ---------------------------------------------------------------

TensorMap::TensorMap(
    std::initializer_list<std::pair<const std::string, Tensor>> items) {
  for (const auto &kv : items)
    set(kv.first, kv.second);
}

void TensorMap::set(const std::string &key, const Tensor &value) {
  for (auto &kv : items_)
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  items_.emplace_back(key, value);
}

bool TensorMap::contains(const std::string &key) const {
  for (const auto &kv : items_)
    if (kv.first == key)
      return true;
  return false;
}

const Tensor &TensorMap::at(const std::string &key) const {
  for (const auto &kv : items_)
    if (kv.first == key)
      return kv.second;
  std::string keys;
  for (const auto &kv : items_)
    keys += (keys.empty() ? "'" : ", '") + kv.first + "'";
  throw GraphError("no tensor with key '" + key +
                   "' (keys: " + (keys.empty() ? "none" : keys) + ")");
}

// --- Graph -------------------------------------------------------------------

Graph::Graph() {
  def_.set_version(graph::kGraphVersion);
  def_.set_seed(0);
}

void Graph::set_seed(int64_t seed) {
  if (def_.node_size() || def_.variable_size())
    throw GraphError("set_seed(" + std::to_string(seed) +
                     "): the graph seed must be set before the first node or "
                     "variable is created");
  def_.set_seed(seed);
}

int64_t Graph::derive_seed(const std::string &key,
                           std::optional<int64_t> op_seed) const {
  uint64_t g = splitmix(static_cast<uint64_t>(def_.seed()));
  uint64_t k =
      op_seed
          ? splitmix(static_cast<uint64_t>(*op_seed) ^ 0x5eed5eed5eed5eedULL)
          : fnv1a(key);
  return static_cast<int64_t>(splitmix(g ^ k) >> 1);
}

std::string Graph::modePrefix() const {
  return mode_ ? std::string(mode_key(*mode_)) + "/" : std::string();
}

std::string Graph::current_scope() const {
  std::string s;
  for (const std::string &p : scopes_)
    s += (s.empty() ? "" : "/") + p;
  return s;
}

Scope Graph::name_scope(const std::string &name) {
  if (!isValidName(name))
    throw GraphError("name_scope: invalid scope name '" + name + "'");
  scopes_.push_back(name);
  size_t depth = scopes_.size();
  return Scope([this, depth] { scopes_.resize(depth - 1); });
}

Scope Graph::root_name_scope() {
  std::vector<std::string> saved;
  saved.swap(scopes_);
  return Scope([this, saved] { scopes_ = saved; });
}

Scope Graph::mode_scope(ModeKeys mode) {
  if (mode_)
    throw GraphError(std::string("mode_scope(") + mode_key(mode) +
                     "): already building mode '" + mode_key(*mode_) +
                     "'; mode scopes do not nest");
  mode_ = mode;
  layerCounts_.clear();
  createdInContext_.clear();
  std::vector<std::string> savedScopes;
  savedScopes.swap(scopes_);
  return Scope([this, savedScopes] {
    mode_.reset();
    layerCounts_.clear();
    createdInContext_.clear();
    scopes_ = savedScopes;
  });
}

std::string Graph::unique_layer_name(const std::string &base) {
  if (!isValidName(base) || base.find('/') != std::string::npos)
    throw GraphError("invalid layer name '" + base + "'");
  std::string scope = current_scope();
  std::string key = scope.empty() ? base : scope + "/" + base;
  int n = layerCounts_[key]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::string Graph::unique_node_name(const std::string &base) const {
  if (!isValidName(base))
    throw GraphError("invalid node name '" + base + "'");
  std::string scope = current_scope();
  std::string name = modePrefix() + (scope.empty() ? "" : scope + "/") + base;
  if (!nodeIndex_.count(name))
    return name;
  for (int i = 1;; ++i) {
    std::string candidate = name + "_" + std::to_string(i);
    if (!nodeIndex_.count(candidate))
      return candidate;
  }
}

bool Graph::has_node(const std::string &name) const {
  return nodeIndex_.count(name) != 0;
}

const graph::NodeDef &Graph::node(const std::string &name) const {
  auto it = nodeIndex_.find(name);
  if (it == nodeIndex_.end())
    throw GraphError("no node named '" + name + "' in the graph");
  const NodeRef &ref = it->second;
  return ref.function < 0 ? def_.node(ref.index)
                          : def_.function(ref.function).node(ref.index);
}

graph::NodeDef &Graph::mutableNode(const NodeRef &ref) {
  return ref.function < 0
             ? *def_.mutable_node(ref.index)
             : *def_.mutable_function(ref.function)->mutable_node(ref.index);
}

std::string Graph::resolveIn(int frame, const Tensor &t) {
  const NodeRef &ref = nodeIndex_.at(t.name());
  int function = frame < 0 ? -1 : frames_[frame].function;
  if (ref.function == function)
    return t.name();
  // Visible here only if it belongs to an enclosing graph: capture it
  // through every function in between.
  bool enclosing = ref.function < 0;
  for (int f = 0; f < frame && !enclosing; ++f)
    enclosing = frames_[f].function == ref.function;
  if (frame < 0 || !enclosing)
    throw GraphError("tensor '" + t.name() +
                     "' was built inside the body of '" +
                     def_.function(ref.function).name() +
                     "' and cannot be used outside it (return it from the "
                     "body instead)");
  std::string outer = resolveIn(frame - 1, t);
  Frame &f = frames_[frame];
  auto it = f.captureParams.find(outer);
  if (it != f.captureParams.end())
    return it->second;
  graph::FunctionDef *fn = def_.mutable_function(f.function);
  int index = f.numParams + static_cast<int>(f.captures.size());
  std::string name = fn->name() + "/capture_" + std::to_string(index);
  graph::NodeDef *n = fn->add_node();
  n->set_name(name);
  n->set_op("arg");
  const graph::NodeDef &source = node(t.name());
  (*n->mutable_attr())["index"] = attr_i(index);
  (*n->mutable_attr())["dtype"] = attr_type(from_proto(source.dtype()));
  (*n->mutable_attr())["shape"] = attr_shape(getDims(source.shape()));
  n->set_dtype(source.dtype());
  *n->mutable_shape() = source.shape();
  nodeIndex_[name] = {f.function, fn->node_size() - 1};
  f.captureParams[outer] = name;
  f.captures.push_back(outer);
  return name;
}

Tensor Graph::add_node(const std::string &name, const std::string &op,
                       const std::vector<Tensor> &inputs, const Attrs &attrs,
                       DType dtype, const Dims &shape) {
  if (nodeIndex_.count(name))
    throw GraphError(op + " '" + name + "': a node with this name exists");
  int frame = static_cast<int>(frames_.size()) - 1;
  std::vector<std::string> resolved;
  for (const Tensor &t : inputs) {
    checkOwn(t, op + " '" + name + "'");
    resolved.push_back(resolveIn(frame, t));
  }
  graph::NodeDef *n =
      frame < 0 ? def_.add_node()
                : def_.mutable_function(frames_[frame].function)->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string &input : resolved)
    n->add_input(input);
  for (const auto &kv : attrs)
    (*n->mutable_attr())[kv.first] = kv.second;
  n->set_dtype(to_proto(dtype));
  setDims(n->mutable_shape(), shape);
  nodeIndex_[name] =
      frame < 0
          ? NodeRef{-1, def_.node_size() - 1}
          : NodeRef{frames_[frame].function,
                    def_.function(frames_[frame].function).node_size() - 1};
  return Tensor(this, name);
}

std::vector<Tensor>
Graph::begin_function(const std::string &name,
                      const std::vector<std::pair<DType, Dims>> &params) {
  for (const graph::FunctionDef &f : def_.function())
    if (f.name() == name)
      throw GraphError("function '" + name + "' exists");
  graph::FunctionDef *fn = def_.add_function();
  fn->set_name(name);
  Frame frame;
  frame.function = def_.function_size() - 1;
  frame.numParams = static_cast<int>(params.size());
  frames_.push_back(frame);
  std::vector<Tensor> args;
  for (size_t i = 0; i < params.size(); ++i) {
    auto [dtype, shape] = params[i];
    std::string arg = name + "/arg_" + std::to_string(i);
    args.push_back(add_node(arg, "arg", {},
                            {{"index", attr_i(static_cast<int64_t>(i))},
                             {"dtype", attr_type(dtype)},
                             {"shape", attr_shape(shape)}},
                            dtype, shape));
  }
  return args;
}

void Graph::discard_functions(int mark) {
  while (!frames_.empty() && frames_.back().function >= mark)
    frames_.pop_back();
  for (auto it = nodeIndex_.begin(); it != nodeIndex_.end();)
    it = it->second.function >= mark ? nodeIndex_.erase(it) : std::next(it);
  if (mark < def_.function_size())
    def_.mutable_function()->DeleteSubrange(mark, def_.function_size() - mark);
}

std::vector<Tensor> Graph::end_function(const std::vector<Tensor> &outputs) {
  if (frames_.empty())
    throw GraphError("end_function: no function is being built");
  int frame = static_cast<int>(frames_.size()) - 1;
  std::vector<std::string> names;
  for (const Tensor &t : outputs) {
    checkOwn(t, "output of function '" +
                    def_.function(frames_[frame].function).name() + "'");
    if (!t.has_value())
      throw GraphError("output of function '" +
                       def_.function(frames_[frame].function).name() +
                       "': node '" + t.name() + "' (" + t.op() +
                       ") has no value");
    names.push_back(resolveIn(frame, t));
  }
  graph::FunctionDef *fn = def_.mutable_function(frames_[frame].function);
  for (const std::string &n : names)
    fn->add_output(n);
  std::vector<Tensor> captures;
  for (const std::string &c : frames_[frame].captures)
    captures.emplace_back(this, c);
  frames_.pop_back();
  return captures;
}

Tensor Graph::placeholder(const std::string &name, DType dtype,
                          const Dims &shape, bool values_dim) {
  return placeholder(name, dtype, shape,
                     PlaceholderOptions{.values_dim = values_dim});
}

Tensor Graph::placeholder(const std::string &name, DType dtype,
                          const Dims &shape,
                          const PlaceholderOptions &options) {
  bool values_dim = options.values_dim;
  std::string node = unique_node_name(name);
  if (in_function())
    throw GraphError("placeholder '" + node +
                     "': a model input cannot be created inside a loop body "
                     "or branch");
  if (dtype == DType::Invalid)
    throw GraphError("placeholder '" + node + "': invalid dtype");
  for (int64_t d : shape)
    if (d < -1)
      throw GraphError("placeholder '" + node + "': invalid shape " +
                       shapeStr(shape));
  Attrs attrs = {{"dtype", attr_type(dtype)}, {"shape", attr_shape(shape)}};
  if (values_dim) {
    if (shape.empty() || shape[0] != -1)
      throw GraphError("placeholder '" + node +
                       "': a values_dim input needs "
                       "shape [-1, ...], not " +
                       shapeStr(shape));
    attrs.push_back({"values_dim", attr_b(true)});
  }
  if (options.max_sequence_length < 0)
    throw GraphError("placeholder '" + node + "': max_sequence_length " +
                     std::to_string(options.max_sequence_length) +
                     " is negative");
  if (options.max_sequence_length != 0 && !options.sequence_dim)
    throw GraphError("placeholder '" + node +
                     "': max_sequence_length needs sequence_dim");
  if (options.sequence_dim) {
    if (values_dim)
      throw GraphError("placeholder '" + node +
                       "': sequence_dim and values_dim cannot be combined");
    if (shape.size() < 2 || shape[0] != -1 || shape[1] != -1)
      throw GraphError("placeholder '" + node +
                       "': a sequence_dim input needs shape [-1, -1, ...], "
                       "not " +
                       shapeStr(shape));
    attrs.push_back({"sequence_dim", attr_b(true)});
    if (options.max_sequence_length > 0)
      attrs.push_back(
          {"max_sequence_length", attr_i(options.max_sequence_length)});
  }
  return add_node(node, "placeholder", {}, attrs, dtype, shape);
}

namespace {
// Stores `v` in the field of `t` matching its dtype; throws if `v` is not
// representable.
void appendValue(graph::TensorProto &t, double v, const std::string &what) {
  DType d = from_proto(t.dtype());
  auto notRepresentable = [&] {
    std::ostringstream os;
    os << what << ": value " << v << " is not representable as "
       << to_string(d);
    throw GraphError(os.str());
  };
  switch (d) {
  case DType::Float32:
  case DType::Float16:
  case DType::BFloat16:
    t.add_float_val(static_cast<float>(v));
    break;
  case DType::Float64:
    t.add_double_val(v);
    break;
  case DType::Int32:
    if (v != std::trunc(v) || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max())
      notRepresentable();
    t.add_int_val(static_cast<int32_t>(v));
    break;
  case DType::Int64:
    if (v != std::trunc(v) || std::fabs(v) > 9.2e18)
      notRepresentable();
    t.add_int64_val(static_cast<int64_t>(v));
    break;
  case DType::Bool:
    if (v != 0.0 && v != 1.0)
      notRepresentable();
    t.add_bool_val(v != 0.0);
    break;
  case DType::String:
    throw GraphError(what + ": string constants are not supported");
  case DType::Invalid:
    throw GraphError(what + ": invalid dtype");
  }
}
} // namespace

Tensor Graph::constant(double value, DType dtype, const std::string &name) {
  return constant(std::vector<double>{value}, Dims{}, dtype, name);
}

Tensor Graph::constant(const std::vector<double> &values, const Dims &shape,
                       DType dtype, const std::string &name) {
  std::string node = unique_node_name(name.empty() ? "Const" : name);
  std::string what = "constant '" + node + "'";
  if (!shape::isFullyKnown(shape))
    throw GraphError(what + ": shape " + shapeStr(shape) +
                     " must be fully known");
  int64_t n = shape::numElements(shape);
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != n)
    throw GraphError(what + ": " + std::to_string(values.size()) +
                     " values do not fill shape " + shapeStr(shape) + " (" +
                     std::to_string(n) + " elements)");
  graph::TensorProto t;
  t.set_dtype(to_proto(dtype));
  setDims(t.mutable_shape(), shape);
  for (double v : values)
    appendValue(t, v, what);
  graph::AttrValue a;
  *a.mutable_tensor() = t;
  return add_node(node, "constant", {}, {{"value", a}}, dtype, shape);
}

Tensor Graph::constant(const graph::TensorProto &value,
                       const std::string &name) {
  std::string node = unique_node_name(name.empty() ? "Const" : name);
  Dims shape = getDims(value.shape());
  if (!shape::isFullyKnown(shape) || value.dtype() == graph::DT_INVALID)
    throw GraphError("constant '" + node +
                     "': needs a valid dtype and a fully known shape, got " +
                     shapeStr(shape));
  graph::AttrValue a;
  *a.mutable_tensor() = value;
  return add_node(node, "constant", {}, {{"value", a}},
                  from_proto(value.dtype()), shape);
}

// --- Variables ---------------------------------------------------------------

Variable Graph::get_variable(const std::string &name, DType dtype,
                             const Dims &shape, const Initializer &initializer,
                             bool trainable, bool reuse) {
  std::string scope = current_scope();
  std::string full = scope.empty() ? name : scope + "/" + name;
  std::string what = "get_variable '" + full + "'";
  if (!isValidName(name))
    throw GraphError("get_variable: invalid variable name '" + name + "'");
  if (dtype == DType::Invalid)
    throw GraphError(what + ": invalid dtype");
  if (!shape::isFullyKnown(shape))
    throw GraphError(what + ": variable shape " + shapeStr(shape) +
                     " must be fully known");
  auto it = variableIndex_.find(full);
  if (it != variableIndex_.end()) {
    const graph::VariableDef &v = def_.variable(it->second);
    if (createdInContext_.count(full) && !reuse)
      throw GraphError(what + ": variable already exists in this mode (use "
                              "reuse=true to share it)");
    Dims existing = getDims(v.shape());
    if (from_proto(v.dtype()) != dtype || existing != shape)
      throw GraphError(what + ": requested " + to_string(dtype) + " " +
                       shapeStr(shape) + " but the existing variable is " +
                       to_string(from_proto(v.dtype())) + " " +
                       shapeStr(existing));
    createdInContext_.insert(full);
    return Variable(this, full);
  }
  graph::VariableDef *v = def_.add_variable();
  v->set_name(full);
  v->set_dtype(to_proto(dtype));
  setDims(v->mutable_shape(), shape);
  v->set_trainable(trainable);
  graph::InitializerDef *init = v->mutable_initializer();
  init->set_type(initializer.type);
  for (const auto &kv : initializer.floats)
    (*init->mutable_attr())[kv.first] = attr_f(kv.second);
  for (const auto &kv : initializer.strings)
    (*init->mutable_attr())[kv.first] = attr_s(kv.second);
  if (!initializer.values.empty()) {
    if (static_cast<int64_t>(initializer.values.size()) !=
        shape::numElements(shape))
      throw GraphError("variable '" + full + "': constant initializer has " +
                       std::to_string(initializer.values.size()) +
                       " values for shape " + shapeStr(shape));
    graph::AttrValue list;
    for (double v : initializer.values)
      list.mutable_list()->add_f(v);
    (*init->mutable_attr())["values"] = list;
  }
  if (initializer.is_random())
    (*init->mutable_attr())["seed"] =
        attr_i(derive_seed(full, initializer.seed));
  variableIndex_[full] = def_.variable_size() - 1;
  createdInContext_.insert(full);
  return Variable(this, full);
}

Variable Graph::get_local_variable(const std::string &name, DType dtype,
                                   const Dims &shape, bool reuse) {
  std::string scope = current_scope();
  std::string full = scope.empty() ? name : scope + "/" + name;
  bool existed = variableIndex_.count(full) != 0;
  Variable v = get_variable(name, dtype, shape, zeros_initializer(),
                            /*trainable=*/false, reuse);
  graph::VariableDef &def = *def_.mutable_variable(variableIndex_.at(full));
  if (!existed)
    def.set_local(true);
  else if (!def.local())
    throw GraphError("get_local_variable '" + full +
                     "': a variable of that name exists and is not local");
  return v;
}

std::optional<Variable> Graph::find_variable(const std::string &name) const {
  if (!variableIndex_.count(name))
    return std::nullopt;
  return Variable(const_cast<Graph *>(this), name);
}

const graph::VariableDef &Graph::variable_def(const std::string &name) const {
  auto it = variableIndex_.find(name);
  if (it == variableIndex_.end())
    throw GraphError("no variable named '" + name + "' in the graph");
  return def_.variable(it->second);
}

std::vector<Variable> Graph::trainable_variables() const {
  std::vector<Variable> out;
  for (const auto &v : def_.variable())
    if (v.trainable())
      out.emplace_back(const_cast<Graph *>(this), v.name());
  return out;
}

std::vector<Variable> Graph::local_variables() const {
  std::vector<Variable> out;
  for (const auto &v : def_.variable())
    if (v.local())
      out.emplace_back(const_cast<Graph *>(this), v.name());
  return out;
}

Tensor Graph::read_variable(const Variable &variable) {
  if (&variable.graph() != this)
    throw GraphError("variable '" + variable.name() +
                     "' belongs to another graph");
  const graph::VariableDef &v = variable_def(variable.name());
  std::string key = modePrefix() + "|" + v.name();
  auto it = readCache_.find(key);
  if (it != readCache_.end())
    return Tensor(this, it->second);
  std::string name = modePrefix() + v.name() + "/read";
  for (int i = 1; nodeIndex_.count(name); ++i)
    name = modePrefix() + v.name() + "/read_" + std::to_string(i);
  // Reads belong to the graph itself (a loop body captures them): compiled
  // code reads a variable once per step.
  std::vector<Frame> frames;
  frames.swap(frames_);
  Tensor t =
      add_node(name, "read_variable", {}, {{"variable", attr_s(v.name())}},
               from_proto(v.dtype()), getDims(v.shape()));
  frames_.swap(frames);
  readCache_[key] = name;
  return t;
}

Variable Graph::global_step_variable() {
  if (auto v = find_variable("global_step"))
    return *v;
  // Created outside every name scope and without the per-mode duplicate
  // check: any mode may ask for it first.
  std::vector<std::string> saved;
  saved.swap(scopes_);
  Variable v = get_variable("global_step", DType::Int64, {},
                            zeros_initializer(), /*trainable=*/false);
  scopes_ = saved;
  return v;
}

Tensor Graph::global_step() { return read_variable(global_step_variable()); }

void Graph::add_to_collection(const std::string &key, const Tensor &value) {
  checkOwn(value, "collection '" + key + "'");
  collections_[modePrefix() + "|" + key].push_back(value);
}

std::vector<Tensor> Graph::get_collection(const std::string &key) const {
  auto it = collections_.find(modePrefix() + "|" + key);
  return it == collections_.end() ? std::vector<Tensor>() : it->second;
}

// --- Summaries ---------------------------------------------------------------

void Graph::add_summary(const graph::SummaryDef &summary) {
  if (has_summary(summary.tag()))
    throw GraphError("summary '" + summary.tag() + "': tag already used in " +
                     (mode_ ? mode_key(*mode_) : "this graph"));
  if (!summary.node().empty() && !has_node(summary.node()))
    throw GraphError("summary '" + summary.tag() + "': no node '" +
                     summary.node() + "'");
  summaries_[modePrefix()].push_back(summary);
}

std::vector<graph::SummaryDef> Graph::summaries() const {
  auto it = summaries_.find(modePrefix());
  return it == summaries_.end() ? std::vector<graph::SummaryDef>() : it->second;
}

bool Graph::has_summary(const std::string &tag) const {
  for (const graph::SummaryDef &s : summaries())
    if (s.tag() == tag)
      return true;
  return false;
}

// --- Signatures --------------------------------------------------------------

bool Graph::has_signature(ModeKeys mode) const {
  return def_.signature().count(mode_key(mode)) != 0;
}

void Graph::checkOwn(const Tensor &t, const std::string &what) const {
  if (!t.valid())
    throw GraphError(what + ": empty Tensor");
  if (&t.graph() != this)
    throw GraphError(what + ": tensor '" + t.name() +
                     "' belongs to another graph");
  if (!nodeIndex_.count(t.name()))
    throw GraphError(what + ": no node named '" + t.name() + "'");
}

graph::Binding Graph::binding(const std::string &key, const Tensor &t,
                              const std::string &what) const {
  if (key.empty())
    throw GraphError(what + ": empty key");
  checkOwn(t, what + " '" + key + "'");
  if (nodeIndex_.at(t.name()).function >= 0)
    throw GraphError(what + " '" + key + "': node '" + t.name() +
                     "' is inside a loop body or branch; bind what the "
                     "control-flow op returns");
  if (!t.has_value())
    throw GraphError(what + " '" + key + "': node '" + t.name() + "' (" +
                     t.op() + ") has no value");
  graph::Binding b;
  b.set_key(key);
  b.set_node(t.name());
  return b;
}

void Graph::set_signature(ModeKeys mode, const Signature &sig) {
  std::string where = std::string("signature '") + mode_key(mode) + "'";
  if (has_signature(mode))
    throw GraphError(where + ": already set");
  graph::SignatureDef def;
  for (const auto &kv : sig.features)
    *def.add_features() = binding(kv.first, kv.second, where + " feature");
  for (const auto &kv : sig.labels)
    *def.add_labels() = binding(kv.first, kv.second, where + " label");
  for (const auto &kv : sig.predictions)
    *def.add_predictions() =
        binding(kv.first, kv.second, where + " prediction");
  if (sig.loss.valid()) {
    checkOwn(sig.loss, where + " loss");
    if (!sig.loss.shape().empty() || !is_floating(sig.loss.dtype()))
      throw GraphError(where + ": loss '" + sig.loss.name() +
                       "' must be a float scalar, got " +
                       to_string(sig.loss.dtype()) + " " +
                       shapeStr(sig.loss.shape()));
    def.set_loss(sig.loss.name());
  }
  if (sig.train_op.valid()) {
    checkOwn(sig.train_op, where + " train_op");
    def.set_train_op(sig.train_op.name());
  }
  if (mode == ModeKeys::TRAIN && (def.loss().empty() || def.train_op().empty()))
    throw GraphError(where + ": training needs a loss and a train_op");
  std::set<std::string> metricKeys;
  for (const auto &kv : sig.metrics) {
    if (!metricKeys.insert(kv.first).second)
      throw GraphError(where + ": metric '" + kv.first + "' is repeated");
    graph::MetricBinding *m = def.add_metrics();
    graph::Binding b = binding(kv.first, kv.second.value, where + " metric");
    m->set_key(b.key());
    m->set_value(b.node());
    for (const Operation &u : kv.second.update_ops) {
      checkOwn(u, where + " metric '" + kv.first + "' update");
      m->add_update(u.name());
    }
  }
  auto checkUnique = [&](const auto &list, const char *what) {
    std::set<std::string> seen;
    for (const auto &b : list)
      if (!seen.insert(b.key()).second)
        throw GraphError(where + ": " + what + " key '" + b.key() +
                         "' is repeated");
  };
  checkUnique(def.features(), "feature");
  checkUnique(def.labels(), "label");
  checkUnique(def.predictions(), "prediction");
  auto summaries = summaries_.find(std::string(mode_key(mode)) + "/");
  if (summaries != summaries_.end())
    for (const graph::SummaryDef &s : summaries->second)
      *def.add_summaries() = s;
  (*def_.mutable_signature())[mode_key(mode)] = def;
}

graph::GraphDef Graph::graph_def() const {
  graph::GraphDef out = def_;
  out.set_version(graph::kGraphVersion);
  return out;
}

// --- Operators ---------------------------------------------------------------

Tensor operator+(const Tensor &a, const Tensor &b) { return add(a, b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return subtract(a, b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return multiply(a, b); }
Tensor operator/(const Tensor &a, const Tensor &b) { return divide(a, b); }
Tensor operator+(const Tensor &a, double b) { return add(a, b); }
Tensor operator-(const Tensor &a, double b) { return subtract(a, b); }
Tensor operator*(const Tensor &a, double b) { return multiply(a, b); }
Tensor operator/(const Tensor &a, double b) { return divide(a, b); }
Tensor operator+(double a, const Tensor &b) { return add(a, b); }
Tensor operator-(double a, const Tensor &b) { return subtract(a, b); }
Tensor operator*(double a, const Tensor &b) { return multiply(a, b); }
Tensor operator/(double a, const Tensor &b) { return divide(a, b); }
Tensor operator-(const Tensor &x) { return negative(x); }

// --- Building every mode ---------------------------------------------------

void build_mode(Graph &g, ModeKeys mode, const InputSpec &inputs,
                const GraphModelFn &model_fn) {
  auto scope = g.mode_scope(mode);
  TensorMap features;
  for (const TensorSpec &f : inputs.features)
    features.set(f.key, g.placeholder(
                            f.key, f.dtype, f.shape,
                            Graph::PlaceholderOptions{
                                .values_dim = f.values_dim,
                                .sequence_dim = f.sequence_dim,
                                .max_sequence_length = f.max_sequence_length}));
  Tensor labels;
  if (inputs.labels && mode != ModeKeys::PREDICT)
    labels = g.placeholder(inputs.labels->key, inputs.labels->dtype,
                           inputs.labels->shape);
  Signature sig = model_fn(g, features, labels, mode);
  if (sig.features.empty())
    sig.features = features;
  if (sig.labels.empty() && labels.valid())
    sig.labels.set(inputs.labels->key, labels);
  g.set_signature(mode, sig);
}

graph::GraphDef build_graph_def(const InputSpec &inputs,
                                const GraphModelFn &model_fn, int64_t seed) {
  Graph g;
  g.set_seed(seed);
  for (ModeKeys mode : {ModeKeys::TRAIN, ModeKeys::EVAL, ModeKeys::PREDICT})
    build_mode(g, mode, inputs, model_fn);
  return g.graph_def();
}

} // namespace estc
