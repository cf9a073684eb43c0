//===- ReferenceEvaluator.h - A plain interpreter of model graphs -------===//
//
// The test oracle: evaluates a GraphDef (lib/Graph/graph.proto) node by node,
// every value in double precision, with the op semantics of docs/ops.md.
// It favours being obviously right over being fast; tests compare compiled
// code against it (and, later, finite-difference gradients).
//
// Values keep their graph dtype so integer and boolean semantics are right:
// integer results are truncated toward zero (and i32 wraps like two's
// complement), booleans are 0 or 1, casts to integers truncate toward zero
// (NaN -> 0, out-of-range values saturate), casts to f32 round to float.
// Other float results are not rounded to their dtype (f32, f16 and bf16
// values are kept in double).
//
// Random ops and dropout use lib/Random/Philox.h: the transform is computed
// in float (double for f64 results) and the result stored as double.
//
// Every error (invalid or unsupported graph, missing feed or variable, bad
// feed shape, out-of-range gather index) throws std::runtime_error with one
// line starting "reference: ", naming the node or variable at fault.
// `minimize` is not evaluated (gradients come later). `group` (tf.group)
// runs its inputs and has no value.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_REFERENCE_REFERENCEEVALUATOR_H
#define ESTC_TEST_REFERENCE_REFERENCEEVALUATOR_H

#include "lib/Graph/graph.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace estc {
namespace reference {

/// A dense tensor value: row-major data, always held as double.
struct Value {
  graph::DataType dtype = graph::DT_FLOAT;
  std::vector<int64_t> shape;
  std::vector<double> data;

  Value() = default;
  Value(graph::DataType dtype, std::vector<int64_t> shape,
        std::vector<double> data);
  /// A rank-0 tensor.
  static Value scalar(double value, graph::DataType dtype = graph::DT_FLOAT);

  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  /// The element at a multi-index (one index per dimension).
  double at(const std::vector<int64_t> &index) const;
};

/// "f32[2,3]{1, 2, 3, 4, 5, 6}" (data elided after 32 elements).
std::string toString(const Value &value);

class Evaluator {
public:
  /// Indexes and checks the graph: unique node names, inputs that exist, no
  /// cycles, only ops of docs/ops.md, read/assign of declared variables.
  explicit Evaluator(const graph::GraphDef &graph);

  const graph::GraphDef &graph() const { return graph_; }

  /// Variable state by name. The caller sets initial values (initializers
  /// are not evaluated); a read of a variable without a value is an error,
  /// as is a value whose dtype or shape differs from the declaration.
  std::map<std::string, Value> &variables() { return variables_; }
  const std::map<std::string, Value> &variables() const { return variables_; }

  /// Sets every variable to its initializer's value, like the compiled
  /// @init (test/reference/Initializers.cpp); throws for an unknown
  /// initializer or a random one on a non-float variable.
  void initialize_variables();

  /// Runs one signature ("train", "eval" or "predict") like the compiled
  /// function of the same name:
  /// - `features` are keyed by the signature's feature keys ("x"), `labels`
  ///   by its label keys ("" for a single unnamed label); each bound
  ///   placeholder must be fed, and no other key may be given;
  /// - the result holds "loss" (when the signature has one),
  ///   "predictions/<key>" (predict mode only, as in the importer) and
  ///   "metrics/<key>" (eval mode: the metric values, read in a second pass
  ///   after the updates, like @eval_metrics);
  /// - the train_op and metric update ops run in the same pass as the loss;
  ///   that pass runs every needed node once, in the graph's topological
  ///   order with ties broken by file order (the importer's order), so a
  ///   read_variable sees every assign_variable that precedes it there.
  /// A train_op that is (or needs) `minimize` throws.
  std::map<std::string, Value>
  run(const std::string &mode, const std::map<std::string, Value> &features,
      const std::map<std::string, Value> &labels = {});

  /// Evaluates the named nodes (and what they need, in the order above),
  /// given values for nodes by name; a fed node is not evaluated (feeding a
  /// non-placeholder is allowed). Needed placeholders must be fed. Nodes
  /// without a value (assign_variable) run for their effect and give an
  /// empty Value with dtype DT_INVALID.
  std::vector<Value> evaluate(const std::vector<std::string> &nodes,
                              const std::map<std::string, Value> &feeds = {});

private:
  int nodeIndex(const std::string &name, const std::string &what) const;
  /// Runs everything `targets` need, in topological order.
  std::map<int, Value> execute(const std::vector<int> &targets,
                               const std::map<int, Value> &feeds);
  Value evaluateNode(int index, const std::vector<const Value *> &inputs);
  /// Control flow (scan, if, while): the node's results, computed by
  /// calling its functions (graph.proto FunctionDef) step by step.
  std::vector<Value> runControlFlow(const graph::NodeDef &node,
                                    const std::vector<Value> &args);
  std::vector<Value> callFunction(const std::string &name,
                                  const std::vector<Value> &params);
  /// An "output" node: result `index` of its control-flow node.
  Value outputOf(const graph::NodeDef &node);
  const Value &readVariable(const graph::NodeDef &node);
  void assignVariable(const graph::NodeDef &node, const Value &value);

  graph::GraphDef graph_;
  std::map<std::string, int> nodeIndex_;
  std::vector<std::vector<int>> inputsOf_;
  std::vector<int> topoOrder_;
  std::map<std::string, int> variableIndex_;
  std::map<std::string, Value> variables_;
  std::map<std::string, std::vector<Value>> results_; // control-flow nodes
};

} // namespace reference
} // namespace estc

#endif // ESTC_TEST_REFERENCE_REFERENCEEVALUATOR_H
