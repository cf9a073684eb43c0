//===- GraphBuilder.h - Building model graphs from C++ ------------------===//
//
// The C++ analogue of a TF1 `tf.Graph` as a model_fn sees it: tensors are
// cheap handles into a Graph, every op infers its dtype and shape while it is
// built (lib/Shape/ShapeFunctions.h), and the result is a GraphDef
// (lib/Graph/graph.proto) holding the variables and one signature per mode.
//
//   estc::Graph g;
//   g.set_seed(42);
//   {
//     auto m = g.mode_scope(estc::ModeKeys::TRAIN);
//     estc::Tensor x = g.placeholder("x", estc::DType::Float32, {-1, 784});
//     estc::Tensor h = estc::layers::dense(x, 256, estc::nn::relu);
//     ...
//     g.set_signature(estc::ModeKeys::TRAIN, sig);
//   }
//   estc::graph::GraphDef def = g.graph_def();
//
// Naming:
//   node      [<mode>/][<scope>/...]<base>[_N]   "train/dense_1/MatMul"
//   variable  [<scope>/...]<name>                "dense_1/kernel" (no mode)
//   read      [<mode>/]<variable>/read           "eval/dense_1/kernel/read"
// Layer names ("dense", "dense_1", ...) are counted per mode, so a model_fn
// called once per mode creates the same variable names each time, and those
// variables are shared by all modes.
//
// Errors a model_fn can make (shape or dtype mismatches, bad attributes,
// duplicate variables) throw estc::GraphError with a one-line message naming
// the op, the node and each input with its shape.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_GRAPHBUILDER_H
#define ESTC_LIB_GRAPH_GRAPHBUILDER_H

#include "lib/Graph/graph.pb.h"
#include "lib/Shape/ShapeFunctions.h"
#include "lib/Tensor/DType.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace estc {

using Dims = shape::Dims;

/// A model-building error: one line naming the op, node and inputs at fault.
class GraphError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// DType (lib/Tensor/DType.h) and graph.proto's DataType have the same
/// numbers.
inline graph::DataType to_proto(DType d) {
  return static_cast<graph::DataType>(static_cast<int>(d));
}
inline DType from_proto(graph::DataType d) {
  return static_cast<DType>(static_cast<int>(d));
}

/// tf.estimator.ModeKeys.
enum class ModeKeys { TRAIN, EVAL, PREDICT };
/// "train", "eval", "predict": the signature keys and node-name prefixes.
const char *mode_key(ModeKeys mode);

class Graph;
class Variable;

/// A handle to a node's output: the graph and the node name. Cheap to copy.
/// Nodes without an output (assign_variable, minimize) are also referred to
/// by a Tensor (see `Operation`); their dtype is Invalid.
class Tensor {
public:
  Tensor() = default;
  Tensor(Graph *graph, std::string name)
      : graph_(graph), name_(std::move(name)) {}

  bool valid() const { return graph_ != nullptr; }
  Graph &graph() const;
  const std::string &name() const { return name_; }
  /// The node's op ("matmul").
  const std::string &op() const;
  DType dtype() const;
  Dims shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  /// False for nodes that produce no value (assign_variable, minimize).
  bool has_value() const { return dtype() != DType::Invalid; }

private:
  Graph *graph_ = nullptr;
  std::string name_;
};

/// A node run for its effect (tf.Operation).
using Operation = Tensor;

/// How a variable gets its first value; becomes a graph InitializerDef and is
/// computed by the compiled init function. Random initializers get a seed
/// derived from the graph seed and the variable name unless one is given.
struct Initializer {
  std::string type = "zeros";
  std::map<std::string, double> floats; // value, minval, maxval, mean, ...
  std::map<std::string, std::string> strings; // mode, distribution
  std::optional<int64_t> seed;
  /// "constant" with every element given (row major): tf.constant_initializer
  /// of a list (graph attr `values`).
  std::vector<double> values;

  bool is_random() const;
};

Initializer zeros_initializer();
Initializer ones_initializer();
Initializer constant_initializer(double value);
/// Every element, row major (the variable must have values.size() of them).
Initializer constant_initializer(const std::vector<double> &values);
Initializer random_uniform_initializer(double minval = -0.05,
                                       double maxval = 0.05,
                                       std::optional<int64_t> seed = {});
Initializer random_normal_initializer(double mean = 0.0, double stddev = 1.0,
                                      std::optional<int64_t> seed = {});
Initializer truncated_normal_initializer(double mean = 0.0, double stddev = 1.0,
                                         std::optional<int64_t> seed = {});
Initializer glorot_uniform_initializer(std::optional<int64_t> seed = {});
Initializer glorot_normal_initializer(std::optional<int64_t> seed = {});
/// tf.keras.initializers.Orthogonal (the recurrent kernels' default): an
/// f32 variable of rank >= 2 whose [prod(shape[:-1]), shape[-1]] matrix has
/// orthonormal rows or columns (whichever are fewer), times `gain`.
Initializer orthogonal_initializer(double gain = 1.0,
                                   std::optional<int64_t> seed = {});
/// mode: fan_in / fan_out / fan_avg; distribution: truncated_normal /
/// untruncated_normal / uniform.
Initializer variance_scaling_initializer(
    double scale = 1.0, const std::string &mode = "fan_in",
    const std::string &distribution = "truncated_normal",
    std::optional<int64_t> seed = {});

/// A handle to a graph variable. Used as a Tensor it reads the variable in
/// the current mode (one `read_variable` node per variable and mode).
class Variable {
public:
  Variable() = default;
  Variable(Graph *graph, std::string name)
      : graph_(graph), name_(std::move(name)) {}

  bool valid() const { return graph_ != nullptr; }
  Graph &graph() const;
  const std::string &name() const { return name_; }
  DType dtype() const;
  Dims shape() const;
  bool trainable() const;
  /// A local variable (Graph::get_local_variable).
  bool local() const;
  /// The variable's value in the current mode.
  Tensor read() const;
  operator Tensor() const { return read(); }

private:
  Graph *graph_ = nullptr;
  std::string name_;
};

/// An ordered list of named tensors (features, predictions).
class TensorMap {
public:
  TensorMap() = default;
  TensorMap(std::initializer_list<std::pair<const std::string, Tensor>> items);
  void set(const std::string &key, const Tensor &value);
  bool contains(const std::string &key) const;
  /// Throws GraphError naming the key and the keys present.
  const Tensor &at(const std::string &key) const;
  const Tensor &operator[](const std::string &key) const { return at(key); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

private:
  std::vector<std::pair<std::string, Tensor>> items_;
};

/// A streaming metric: `value` reads the result, `update_ops` fold one batch
/// into the metric's state (tf.metrics' (value, update_op) pair).
struct Metric {
  Tensor value;
  std::vector<Operation> update_ops;
};

/// What one mode computes (the graph part of tf.estimator.EstimatorSpec).
struct Signature {
  TensorMap features;
  TensorMap labels;
  TensorMap predictions;
  Tensor loss;
  Operation train_op;
  std::vector<std::pair<std::string, Metric>> metrics;
};

/// Attribute list of a node, in insertion order.
using Attrs = std::vector<std::pair<std::string, graph::AttrValue>>;
graph::AttrValue attr_i(int64_t v);
graph::AttrValue attr_f(double v);
graph::AttrValue attr_b(bool v);
graph::AttrValue attr_s(const std::string &v);
graph::AttrValue attr_type(DType v);
graph::AttrValue attr_shape(const Dims &v);
graph::AttrValue attr_list(const Dims &v);
graph::AttrValue attr_strings(const std::vector<std::string> &v);

/// RAII scope returned by Graph::name_scope / Graph::mode_scope; leaves the
/// scope when destroyed.
class [[nodiscard]] Scope {
public:
  explicit Scope(std::function<void()> exit) : exit_(std::move(exit)) {}
  Scope(Scope &&other) noexcept : exit_(std::move(other.exit_)) {
    other.exit_ = nullptr;
  }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;
  Scope &operator=(Scope &&) = delete;
  ~Scope() {
    if (exit_)
      exit_();
  }

private:
  std::function<void()> exit_;
};

/// A model graph under construction.
class Graph {
public:
  Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  // --- Randomness ----------------------------------------------------------
  /// Graph-level seed (RunConfig.tf_random_seed). Must be set before the
  /// first node or variable is created.
  void set_seed(int64_t seed);
  int64_t seed() const { return def_.seed(); }
  /// Deterministic op-level seed from the graph seed and `key` (a node name
  /// without its mode prefix, or a variable name), or from an explicit op
  /// seed. Non-negative; stable across platforms.
  int64_t derive_seed(const std::string &key,
                      std::optional<int64_t> op_seed = {}) const;

  // --- Scopes --------------------------------------------------------------
  Scope name_scope(const std::string &name);
  /// Leaves every name scope until the Scope ends (still in the mode): what
  /// gets a variable by its full name, as TF creates an optimizer's slots
  /// under their variable's name wherever minimize is called.
  Scope root_name_scope();
  /// Builds one mode: node names get the "<mode>/" prefix and layer-name
  /// counters restart. Mode scopes do not nest.
  Scope mode_scope(ModeKeys mode);
  std::optional<ModeKeys> mode() const { return mode_; }
  bool is_training() const { return mode_ == ModeKeys::TRAIN; }
  /// The current name scope without the mode prefix ("" or "block/dense").
  std::string current_scope() const;
  /// tf.layers-style unique layer name in the current scope and mode:
  /// "dense", then "dense_1", ...
  std::string unique_layer_name(const std::string &base);

  // --- Sources -------------------------------------------------------------
  /// A model input. With `values_dim`, dimension 0 (which must be -1) is a
  /// run-time number of values of a sparse input, not the batch: compiled
  /// code sizes it separately (docs/design/feature-columns.md; graph attr
  /// `values_dim`).
  Tensor placeholder(const std::string &name, DType dtype, const Dims &shape,
                     bool values_dim = false);
  /// What else a placeholder's dimensions mean (run-time sizes besides the
  /// batch; docs/design/run-time-dimensions.md).
  struct PlaceholderOptions {
    /// Dimension 0 is a sparse input's number of values (above).
    bool values_dim = false;
    /// Dimension 1 (which must be -1, after the batch -1) is the sequence
    /// length of a padded batch: the longest sequence of the batch, set per
    /// call; every sequence input of one call has the same length (graph
    /// attr `sequence_dim`).
    bool sequence_dim = false;
    /// The longest sequence the model accepts (graph attr
    /// `max_sequence_length`); 0: no maximum. Only with sequence_dim.
    int64_t max_sequence_length = 0;
  };
  Tensor placeholder(const std::string &name, DType dtype, const Dims &shape,
                     const PlaceholderOptions &options);
  /// A scalar of `dtype` (the value must be representable).
  Tensor constant(double value, DType dtype = DType::Float32,
                  const std::string &name = "");
  /// A dense constant; `values` has one element (splatted) or
  /// numElements(shape) elements.
  Tensor constant(const std::vector<double> &values, const Dims &shape,
                  DType dtype = DType::Float32, const std::string &name = "");
  Tensor constant(const graph::TensorProto &value,
                  const std::string &name = "");

  // --- Variables -----------------------------------------------------------
  /// tf.get_variable: the name is prefixed with the current name scope. An
  /// existing variable created in another mode is reused (dtype and shape
  /// must match); getting one twice in the same mode needs `reuse`
  /// (tf.AUTO_REUSE: create if absent, share if present).
  Variable
  get_variable(const std::string &name, DType dtype, const Dims &shape,
               const Initializer &initializer = glorot_uniform_initializer(),
               bool trainable = true, bool reuse = false);
  /// tf.get_local_variable: a non-trainable, zeros-initialized variable in
  /// TF's LOCAL_VARIABLES collection (metric state). Local variables are not
  /// saved in checkpoints and are reset to zeros at the start of every
  /// evaluation (rt::CompiledModel::reset_local_variables). Sharing and
  /// `reuse` as in get_variable; an existing non-local variable of the same
  /// name is an error.
  Variable get_local_variable(const std::string &name, DType dtype,
                              const Dims &shape, bool reuse = false);
  /// Looks a variable up by its full name.
  std::optional<Variable> find_variable(const std::string &name) const;
  const graph::VariableDef &variable_def(const std::string &name) const;
  std::vector<Variable> trainable_variables() const;
  /// tf.local_variables(): the local variables, in creation order.
  std::vector<Variable> local_variables() const;
  /// The value of `variable` in the current mode (cached per mode).
  Tensor read_variable(const Variable &variable);
  /// The scalar i64 "global_step" variable (non-trainable, zeros), created
  /// on first use, read in the current mode.
  Tensor global_step();
  Variable global_step_variable();

  // --- Collections ---------------------------------------------------------
  /// tf.add_to_collection / tf.get_collection for Tensors, per mode (each
  /// mode's model_fn call starts empty): "losses" (the tf.losses functions
  /// add their result), "regularization_losses" (layer regularizers).
  void add_to_collection(const std::string &key, const Tensor &value);
  std::vector<Tensor> get_collection(const std::string &key) const;

  // --- Summaries (lib/Graph/Summaries.h) -----------------------------------
  /// Adds `summary` to the current mode's summaries (TF's SUMMARIES
  /// collection); set_signature records them in the mode's signature. Its
  /// tag must be new in the mode (GraphError).
  void add_summary(const graph::SummaryDef &summary);
  /// The current mode's summaries, in the order they were added.
  std::vector<graph::SummaryDef> summaries() const;
  /// Whether the current mode has a summary tagged `tag`.
  bool has_summary(const std::string &tag) const;

  // --- Nodes ---------------------------------------------------------------
  /// A unique node name for `base` in the current mode and name scope.
  std::string unique_node_name(const std::string &base) const;
  /// Adds a node whose dtype and shape the caller inferred. Used by the op
  /// library; `name` must come from unique_node_name.
  Tensor add_node(const std::string &name, const std::string &op,
                  const std::vector<Tensor> &inputs, const Attrs &attrs,
                  DType dtype, const Dims &shape);
  bool has_node(const std::string &name) const;
  const graph::NodeDef &node(const std::string &name) const;

  // --- Functions (bodies of control-flow nodes; lib/Graph/ControlFlow.h) ---
  /// Starts building the function `name` (a loop body, a branch): nodes
  /// added until end_function belong to it, and `params` become its first
  /// parameters (nodes of op "arg"). A tensor of an enclosing graph used by
  /// one of its nodes becomes a further parameter (a capture); variable
  /// reads are placed in the outermost graph and captured.
  std::vector<Tensor>
  begin_function(const std::string &name,
                 const std::vector<std::pair<DType, Dims>> &params);
  /// Ends the innermost function with `outputs` (tensors of it or of an
  /// enclosing graph, captured then). Returns the tensors it captured, in
  /// parameter order: the control-flow node passes them in after `params`.
  std::vector<Tensor> end_function(const std::vector<Tensor> &outputs);
  /// Whether a function is being built.
  bool in_function() const { return !frames_.empty(); }
  /// The number of functions begun so far: a mark for discard_functions.
  int function_count() const { return def_.function_size(); }
  /// Forgets every function begun since `mark` (being built or ended) and
  /// their nodes: a control-flow node whose building failed leaves the
  /// graph as it was (variable reads it placed in the graph stay).
  void discard_functions(int mark);

  // --- Signatures and result ----------------------------------------------
  /// Records what `mode` computes. Each mode's signature is set once.
  void set_signature(ModeKeys mode, const Signature &signature);
  bool has_signature(ModeKeys mode) const;
  /// The graph: version, seed, nodes, variables and signatures.
  graph::GraphDef graph_def() const;

private:
  friend class Tensor;
  friend class Variable;
  std::string modePrefix() const;
  void checkOwn(const Tensor &t, const std::string &what) const;
  graph::Binding binding(const std::string &key, const Tensor &t,
                         const std::string &what) const;

  /// Where a node is: the function (-1: the graph itself) and its index.
  struct NodeRef {
    int function = -1;
    int index = 0;
  };
  /// A function being built: its index in def_.function(), how many
  /// declared parameters it has, and its captures (outer tensor name ->
  /// parameter node) in parameter order.
  struct Frame {
    int function = 0;
    int numParams = 0;
    std::map<std::string, std::string> captureParams;
    std::vector<std::string> captures;
  };
  /// `t` as seen from frame `frame` (-1: the graph): itself when it is a
  /// node there, else the parameter capturing it (created on first use).
  std::string resolveIn(int frame, const Tensor &t);
  graph::NodeDef &mutableNode(const NodeRef &ref);

  graph::GraphDef def_;
  std::map<std::string, NodeRef> nodeIndex_;
  std::vector<Frame> frames_;
  std::map<std::string, int> variableIndex_;
  std::vector<std::string> scopes_;
  std::optional<ModeKeys> mode_;
  std::map<std::string, int> layerCounts_;
  std::set<std::string> createdInContext_;
  std::map<std::string, std::string> readCache_;           // mode|var -> node
  std::map<std::string, std::vector<Tensor>> collections_; // mode|key
  std::map<std::string, std::vector<graph::SummaryDef>> summaries_; // mode
};

// --- Arithmetic operators (add / sub / mul / div, broadcasting) ----------
// Scalars become constants of the tensor's dtype.
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator+(const Tensor &a, double b);
Tensor operator-(const Tensor &a, double b);
Tensor operator*(const Tensor &a, double b);
Tensor operator/(const Tensor &a, double b);
Tensor operator+(double a, const Tensor &b);
Tensor operator-(double a, const Tensor &b);
Tensor operator*(double a, const Tensor &b);
Tensor operator/(double a, const Tensor &b);
Tensor operator-(const Tensor &x);

// --- Building every mode of a model --------------------------------------

/// One input of a signature: a placeholder's key, dtype and shape.
struct TensorSpec {
  std::string key;
  DType dtype = DType::Float32;
  Dims shape;
  /// Dimension 0 is a run-time number of values (a sparse input's ids),
  /// not the batch (Graph::placeholder).
  bool values_dim = false;
  /// Dimension 1 is the run-time sequence length of a padded batch
  /// (Graph::PlaceholderOptions::sequence_dim); shape [-1, -1, ...].
  bool sequence_dim = false;
  /// The longest sequence the model accepts; 0: none.
  int64_t max_sequence_length = 0; // 0: none
};

/// The inputs of a model: feature placeholders (in order) and the labels
/// placeholder (bound under its key, usually "labels"; absent in PREDICT).
struct InputSpec {
  std::vector<TensorSpec> features;
  std::optional<TensorSpec> labels;
};

/// The graph builder's model_fn(graph, features, labels, mode) -> what the
/// mode computes. `labels` is an empty Tensor in PREDICT. The returned
/// Signature's features and labels may be left empty: build_mode fills them
/// with the placeholders. (The Estimator's model_fn, returning an
/// EstimatorSpec, is estc::estimator::ModelFn; the two names differ so that
/// code using both namespaces compiles.)
using GraphModelFn =
    std::function<Signature(Graph &graph, const TensorMap &features,
                            const Tensor &labels, ModeKeys mode)>;

/// Creates the placeholders of `inputs` in `mode`, calls `model_fn` once and
/// sets the mode's signature.
void build_mode(Graph &graph, ModeKeys mode, const InputSpec &inputs,
                const GraphModelFn &model_fn);
/// Builds TRAIN, EVAL and PREDICT into one GraphDef.
graph::GraphDef build_graph_def(const InputSpec &inputs,
                                const GraphModelFn &model_fn, int64_t seed = 0);

} // namespace estc

#endif // ESTC_LIB_GRAPH_GRAPHBUILDER_H
