//===- ControlFlow.h - Loops and conditionals in model graphs -----------===//
//
// The graph builder's structured control flow (docs/design/control-flow.md):
//
//   scan        jax.lax.scan / tf.scan: a loop over dimension 0 of
//               sequences (time major), carried values, stacked per-step
//               outputs. Its length is the sequences' (known at run time:
//               a padded batch's longest sequence). What every recurrent
//               layer is built on (lib/Graph/Recurrent.h).
//   cond        tf.cond: one of two branches on a boolean scalar.
//   while_loop  tf.while_loop: carried values while a condition holds, at
//               most `maximum_iterations` times (needed to train through
//               it, as in TF with XLA).
//
// Bodies are C++ callables run once while building: the ops they create
// form a function of the graph (graph.proto FunctionDef); tensors of the
// enclosing graph they use are passed in as captures, and variables they
// read are read once, before the loop. Everything is differentiated
// (est-autodiff): a scan's reverse pass runs over the values its forward
// pass stored per step.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_CONTROLFLOW_H
#define ESTC_LIB_GRAPH_CONTROLFLOW_H

#include "lib/Graph/GraphBuilder.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace estc {

/// What a scan body returns for one step: the next carried values (one per
/// initial value, same dtype and shape), then the per-step outputs.
struct ScanStep {
  std::vector<Tensor> carried;
  std::vector<Tensor> outputs;
};

/// A scan body: (carried values, this step's slice of each sequence).
using ScanBody = std::function<ScanStep(const std::vector<Tensor> &carried,
                                        const std::vector<Tensor> &slices)>;

/// The final carried values and the per-step outputs stacked along a new
/// dimension 0 (`[T] + shape`, step t at index t also when reversed).
struct ScanResult {
  std::vector<Tensor> carried;
  std::vector<Tensor> stacked;
};

/// Runs `body` for t = 0 .. T-1 (T-1 .. 0 with `reverse`), T being
/// dimension 0 of every sequence (they must agree). At least one sequence.
ScanResult scan(const ScanBody &body, const std::vector<Tensor> &initial,
                const std::vector<Tensor> &sequences, bool reverse = false,
                const std::string &name = "scan");

/// A branch of `cond`: the values it returns.
using Branch = std::function<std::vector<Tensor>()>;

/// tf.cond: `true_fn()` where `pred` (a bool scalar) holds, else
/// `false_fn()`; both return the same number of values with equal dtypes
/// and shapes.
std::vector<Tensor> cond(const Tensor &pred, const Branch &true_fn,
                         const Branch &false_fn,
                         const std::string &name = "cond");

/// A while_loop condition (a bool scalar) and body (the next values).
using LoopCond = std::function<Tensor(const std::vector<Tensor> &vars)>;
using LoopBody =
    std::function<std::vector<Tensor>(const std::vector<Tensor> &vars)>;

/// tf.while_loop: while `cond_fn(vars)`, `vars = body_fn(vars)`, at most
/// `maximum_iterations` times when given. Returns the final values.
std::vector<Tensor>
while_loop(const LoopCond &cond_fn, const LoopBody &body_fn,
           const std::vector<Tensor> &loop_vars,
           std::optional<int64_t> maximum_iterations = std::nullopt,
           const std::string &name = "while");

} // namespace estc

#endif // ESTC_LIB_GRAPH_CONTROLFLOW_H
