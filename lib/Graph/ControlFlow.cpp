//===- ControlFlow.cpp - Loops and conditionals in model graphs ---------===//

#include "lib/Graph/ControlFlow.h"

#include <utility>

namespace estc {

namespace {

using Params = std::vector<std::pair<DType, Dims>>;

Graph &graphOf(const std::vector<Tensor> &tensors, const std::string &what) {
  for (const Tensor &t : tensors)
    if (t.valid())
      return t.graph();
  throw GraphError(what + ": no input tensor to find the graph from");
}

void requireValues(const std::vector<Tensor> &tensors, const std::string &what,
                   const std::string &node) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].valid())
      throw GraphError(what + " '" + node + "': value #" + std::to_string(i) +
                       " is an empty Tensor");
    if (!tensors[i].has_value())
      throw GraphError(what + " '" + node + "': node '" + tensors[i].name() +
                       "' (" + tensors[i].op() + ") has no value");
  }
}

/// Checks that `got[i]` matches `want[i]` in dtype and shape.
void requireMatching(const std::vector<Tensor> &got,
                     const std::vector<Tensor> &want, const std::string &what,
                     const std::string &node) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (got[i].dtype() != want[i].dtype() ||
        !shape::isCompatible(got[i].shape(), want[i].shape()))
      throw GraphError(what + " '" + node + "': value #" + std::to_string(i) +
                       " is " + to_string(got[i].dtype()) + " " +
                       shape::toString(got[i].shape()) + " but must be " +
                       to_string(want[i].dtype()) + " " +
                       shape::toString(want[i].shape()));
}

std::vector<Tensor> concat(std::vector<Tensor> a,
                           const std::vector<Tensor> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The "output" nodes standing for a control-flow node's results.
std::vector<Tensor> outputs(Graph &g, const Tensor &node,
                            const std::vector<std::pair<DType, Dims>> &types) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < types.size(); ++i)
    out.push_back(g.add_node(g.unique_node_name("output"), "output", {node},
                             {{"index", attr_i(static_cast<int64_t>(i))}},
                             types[i].first, types[i].second));
  return out;
}

/// Discards the functions a control-flow builder began unless it commits:
/// a builder that throws leaves the graph as it was.
class FunctionsGuard {
public:
  explicit FunctionsGuard(Graph &g) : g_(g), mark_(g.function_count()) {}
  ~FunctionsGuard() {
    if (!committed_)
      g_.discard_functions(mark_);
  }
  void commit() { committed_ = true; }

private:
  Graph &g_;
  int mark_;
  bool committed_ = false;
};

} // namespace

ScanResult scan(const ScanBody &body, const std::vector<Tensor> &initial,
                const std::vector<Tensor> &sequences, bool reverse,
                const std::string &name) {
  Graph &g = graphOf(sequences, "scan");
  std::string node = g.unique_node_name(name);
  if (sequences.empty())
    throw GraphError("scan '" + node +
                     "': needs at least one sequence (its dimension 0 is "
                     "the number of steps)");
  requireValues(initial, "scan", node);
  requireValues(sequences, "scan", node);
  int64_t length = -1;
  Params params;
  for (const Tensor &t : initial)
    params.push_back({t.dtype(), t.shape()});
  for (const Tensor &seq : sequences) {
    Dims s = seq.shape();
    if (s.empty())
      throw GraphError("scan '" + node + "': sequence '" + seq.name() +
                       "' is a scalar; a sequence has its steps in "
                       "dimension 0");
    if (s[0] >= 0 && length >= 0 && s[0] != length)
      throw GraphError("scan '" + node + "': sequences have " +
                       std::to_string(length) + " and " + std::to_string(s[0]) +
                       " steps ('" + seq.name() + "' " + shape::toString(s) +
                       "); all need the same");
    if (s[0] >= 0)
      length = s[0];
    params.push_back({seq.dtype(), Dims(s.begin() + 1, s.end())});
  }

  FunctionsGuard guard(g);
  std::vector<Tensor> args = g.begin_function(node + "/body", params);
  ScanStep step;
  {
    auto scope = g.name_scope(node.substr(node.rfind('/') + 1));
    step =
        body(std::vector<Tensor>(args.begin(), args.begin() + initial.size()),
             std::vector<Tensor>(args.begin() + initial.size(), args.end()));
  }
  if (step.carried.size() != initial.size())
    throw GraphError("scan '" + node + "': the body returns " +
                     std::to_string(step.carried.size()) +
                     " carried values for " + std::to_string(initial.size()) +
                     " initial ones");
  requireValues(step.carried, "scan", node);
  requireValues(step.outputs, "scan", node);
  requireMatching(step.carried, initial, "scan body's carried", node);
  std::vector<Tensor> captures =
      g.end_function(concat(step.carried, step.outputs));

  Tensor scanNode = g.add_node(
      node, "scan", concat(concat(initial, sequences), captures),
      {{"body", attr_s(node + "/body")},
       {"num_carried", attr_i(static_cast<int64_t>(initial.size()))},
       {"num_sequences", attr_i(static_cast<int64_t>(sequences.size()))},
       {"reverse", attr_b(reverse)}},
      DType::Invalid, {});
  guard.commit();
  Params types;
  for (const Tensor &t : initial)
    types.push_back({t.dtype(), t.shape()});
  for (const Tensor &y : step.outputs) {
    Dims s = {length};
    Dims ys = y.shape();
    s.insert(s.end(), ys.begin(), ys.end());
    types.push_back({y.dtype(), s});
  }
  std::vector<Tensor> results = outputs(g, scanNode, types);
  ScanResult r;
  r.carried.assign(results.begin(), results.begin() + initial.size());
  r.stacked.assign(results.begin() + initial.size(), results.end());
  return r;
}

namespace {

/// Builds one branch function; returns (its outputs, its captures).
std::pair<std::vector<Tensor>, std::vector<Tensor>>
buildBranch(Graph &g, const std::string &function, const Branch &fn,
            const std::string &scope) {
  g.begin_function(function, {});
  std::vector<Tensor> values;
  {
    auto s = g.name_scope(scope);
    values = fn();
  }
  std::vector<Tensor> captures = g.end_function(values);
  return {values, captures};
}

} // namespace

std::vector<Tensor> cond(const Tensor &pred, const Branch &true_fn,
                         const Branch &false_fn, const std::string &name) {
  if (!pred.valid())
    throw GraphError("cond: the predicate is an empty Tensor");
  Graph &g = pred.graph();
  std::string node = g.unique_node_name(name);
  if (pred.dtype() != DType::Bool || !pred.shape().empty())
    throw GraphError("cond '" + node + "': the predicate '" + pred.name() +
                     "' must be a bool scalar, got " + to_string(pred.dtype()) +
                     " " + shape::toString(pred.shape()));
  std::string base = node.substr(node.rfind('/') + 1);
  FunctionsGuard guard(g);
  auto [thenValues, thenCaptures] =
      buildBranch(g, node + "/then", true_fn, base + "/then");
  auto [elseValues, elseCaptures] =
      buildBranch(g, node + "/else", false_fn, base + "/else");
  if (thenValues.size() != elseValues.size())
    throw GraphError("cond '" + node + "': the true branch returns " +
                     std::to_string(thenValues.size()) +
                     " values, the false branch " +
                     std::to_string(elseValues.size()));
  requireValues(thenValues, "cond", node);
  requireValues(elseValues, "cond", node);
  requireMatching(elseValues, thenValues, "cond's false branch", node);
  Tensor condNode =
      g.add_node(node, "if", concat(concat({pred}, thenCaptures), elseCaptures),
                 {{"then_branch", attr_s(node + "/then")},
                  {"else_branch", attr_s(node + "/else")},
                  {"num_then_captures",
                   attr_i(static_cast<int64_t>(thenCaptures.size()))}},
                 DType::Invalid, {});
  guard.commit();
  Params types;
  for (const Tensor &t : thenValues)
    types.push_back({t.dtype(), t.shape()});
  return outputs(g, condNode, types);
}

std::vector<Tensor> while_loop(const LoopCond &cond_fn, const LoopBody &body_fn,
                               const std::vector<Tensor> &loop_vars,
                               std::optional<int64_t> maximum_iterations,
                               const std::string &name) {
  Graph &g = graphOf(loop_vars, "while_loop");
  std::string node = g.unique_node_name(name);
  if (loop_vars.empty())
    throw GraphError("while_loop '" + node + "': needs loop variables");
  requireValues(loop_vars, "while_loop", node);
  if (maximum_iterations && *maximum_iterations < 0)
    throw GraphError("while_loop '" + node +
                     "': maximum_iterations must be >= 0, got " +
                     std::to_string(*maximum_iterations));
  Params params;
  for (const Tensor &t : loop_vars)
    params.push_back({t.dtype(), t.shape()});
  std::string base = node.substr(node.rfind('/') + 1);

  FunctionsGuard guard(g);
  auto build = [&](const std::string &function, const std::string &scope,
                   auto &&fn) {
    std::vector<Tensor> args = g.begin_function(function, params);
    std::vector<Tensor> values;
    {
      auto s = g.name_scope(scope);
      values = fn(args);
    }
    requireValues(values, "while_loop", node);
    return std::make_pair(values, g.end_function(values));
  };
  auto [condValues, condCaptures] =
      build(node + "/cond", base + "/cond", [&](const std::vector<Tensor> &a) {
        return std::vector<Tensor>{cond_fn(a)};
      });
  if (condValues[0].dtype() != DType::Bool || !condValues[0].shape().empty())
    throw GraphError("while_loop '" + node +
                     "': the condition must be a bool "
                     "scalar, got " +
                     to_string(condValues[0].dtype()) + " " +
                     shape::toString(condValues[0].shape()));
  auto [bodyValues, bodyCaptures] =
      build(node + "/body", base + "/body",
            [&](const std::vector<Tensor> &a) { return body_fn(a); });
  if (bodyValues.size() != loop_vars.size())
    throw GraphError("while_loop '" + node + "': the body returns " +
                     std::to_string(bodyValues.size()) + " values for " +
                     std::to_string(loop_vars.size()) + " loop variables");
  requireMatching(bodyValues, loop_vars, "while_loop body's", node);
  Attrs attrs = {
      {"cond", attr_s(node + "/cond")},
      {"body", attr_s(node + "/body")},
      {"num_carried", attr_i(static_cast<int64_t>(loop_vars.size()))},
      {"num_cond_captures", attr_i(static_cast<int64_t>(condCaptures.size()))}};
  if (maximum_iterations)
    attrs.push_back({"maximum_iterations", attr_i(*maximum_iterations)});
  Tensor loop = g.add_node(
      node, "while", concat(concat(loop_vars, condCaptures), bodyCaptures),
      attrs, DType::Invalid, {});
  guard.commit();
  Params types;
  for (const Tensor &t : loop_vars)
    types.push_back({t.dtype(), t.shape()});
  return outputs(g, loop, types);
}

} // namespace estc
