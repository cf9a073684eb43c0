//===- Gradients.cpp - tf.gradients and gradient clipping ---------------===//

#include "lib/Graph/Gradients.h"

#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <cmath>

namespace estc {

namespace {

std::string describe(const Tensor &t) {
  return "'" + t.name() + "' " +
         (t.has_value()
              ? to_string(t.dtype()) + " " + shape::toString(t.shape())
              : std::string("(no value)"));
}

/// Checks that every tensor of `list` (named `what`[i] in errors, for
/// function `fn`) is a float tensor of one graph, returns that graph.
/// `sameDType`: all of one dtype.
Graph &checkFloats(const char *fn, const char *what,
                   const std::vector<Tensor> &list, bool sameDType,
                   Graph *graph = nullptr) {
  if (list.empty())
    throw GraphError(std::string(fn) + ": " + what + " is empty");
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor &t = list[i];
    std::string item = std::string(what) + "[" + std::to_string(i) + "]";
    if (!t.valid())
      throw GraphError(std::string(fn) + ": " + item + " is an empty Tensor");
    if (!graph)
      graph = &t.graph();
    else if (&t.graph() != graph)
      throw GraphError(std::string(fn) + ": " + item + " '" + t.name() +
                       "' belongs to another graph");
    if (!t.has_value() || !is_floating(t.dtype()))
      throw GraphError(std::string(fn) + ": " + item + " " + describe(t) +
                       " must be a float tensor");
    if (sameDType && t.dtype() != list.front().dtype())
      throw GraphError(std::string(fn) + ": " + item + " " + describe(t) +
                       " has another dtype than " + what + "[0] " +
                       describe(list.front()));
  }
  return *graph;
}

} // namespace

std::vector<Tensor> gradients(const std::vector<Tensor> &ys,
                              const std::vector<Tensor> &xs,
                              const std::vector<Tensor> &grad_ys,
                              const std::string &name) {
  Graph &g = checkFloats("gradients", "ys", ys, /*sameDType=*/true);
  checkFloats("gradients", "xs", xs, /*sameDType=*/false, &g);
  if (!grad_ys.empty()) {
    if (grad_ys.size() != ys.size())
      throw GraphError("gradients: " + std::to_string(grad_ys.size()) +
                       " grad_ys for " + std::to_string(ys.size()) +
                       " ys (one each, or none)");
    checkFloats("gradients", "grad_ys", grad_ys, /*sameDType=*/true, &g);
    for (size_t i = 0; i < ys.size(); ++i)
      if (grad_ys[i].dtype() != ys[i].dtype() ||
          !shape::isCompatible(grad_ys[i].shape(), ys[i].shape()))
        throw GraphError("gradients: grad_ys[" + std::to_string(i) + "] " +
                         describe(grad_ys[i]) + " does not match ys[" +
                         std::to_string(i) + "] " + describe(ys[i]));
  }
  if (g.in_function())
    throw GraphError("gradients: cannot be taken inside a loop body or "
                     "branch (take them after the loop)");
  auto scope = g.name_scope(g.unique_layer_name(name));
  // The target: one float scalar whose gradient is TF's sum over the ys.
  Tensor target;
  for (size_t i = 0; i < ys.size(); ++i) {
    Tensor term = grad_ys.empty()
                      ? (ys[i].rank() == 0 ? ys[i] : reduce_sum(ys[i]))
                      : reduce_sum(multiply(ys[i], grad_ys[i]));
    target = target.valid() ? add(target, term) : term;
  }
  std::vector<Tensor> out;
  for (const Tensor &x : xs)
    out.push_back(g.add_node(g.unique_node_name("gradient"), "gradient",
                             {target, x}, {}, x.dtype(), x.shape()));
  return out;
}

std::vector<Tensor> gradients(const std::vector<Tensor> &ys,
                              const std::vector<Variable> &xs,
                              const std::vector<Tensor> &grad_ys,
                              const std::string &name) {
  std::vector<Tensor> reads;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].valid())
      throw GraphError("gradients: xs[" + std::to_string(i) +
                       "] is an empty Variable");
    reads.push_back(xs[i].read());
  }
  return gradients(ys, reads, grad_ys, name);
}

Tensor global_norm(const std::vector<Tensor> &t_list, const std::string &name) {
  Graph &g = checkFloats("global_norm", "t_list", t_list, /*sameDType=*/true);
  auto scope = g.name_scope(g.unique_layer_name(name));
  // TF: sqrt(reduce_sum(stack([l2_loss(t) ...])) * 2).
  Tensor half;
  for (const Tensor &t : t_list) {
    Tensor l = losses::l2_loss(t);
    half = half.valid() ? add(half, l) : l;
  }
  return sqrt(multiply(half, 2.0), "global_norm");
}

Tensor clip_by_norm(const Tensor &t, double clip_norm, std::optional<Dims> axes,
                    const std::string &name) {
  if (!(clip_norm > 0.0) || !std::isfinite(clip_norm))
    throw GraphError("clip_by_norm: clip_norm must be a finite number > 0, "
                     "got " +
                     std::to_string(clip_norm));
  checkFloats("clip_by_norm", "t", {t}, true);
  return clip_by_norm(t, t.graph().constant(clip_norm, t.dtype()), axes, name);
}

Tensor clip_by_norm(const Tensor &t, const Tensor &clip_norm,
                    std::optional<Dims> axes, const std::string &name) {
  Graph &g = checkFloats("clip_by_norm", "t", {t}, true);
  if (!clip_norm.valid() || &clip_norm.graph() != &g ||
      !clip_norm.has_value() || clip_norm.dtype() != t.dtype() ||
      !clip_norm.shape().empty())
    throw GraphError("clip_by_norm: clip_norm " +
                     (clip_norm.valid() ? describe(clip_norm)
                                        : std::string("(empty Tensor)")) +
                     " must be a scalar of t's graph and dtype " +
                     to_string(t.dtype()));
  auto scope = g.name_scope(g.unique_layer_name(name));
  // TF 2.15: l2sum = sum(t * t, axes, keepdims); the norm sqrt(l2sum) where
  // l2sum > 0 (else l2sum, so that its gradient is not NaN);
  // t * clip_norm / maximum(norm, clip_norm).
  Tensor l2sum = reduce_sum(multiply(t, t), axes, /*keep_dims=*/true);
  Tensor positive = greater(l2sum, 0.0);
  Tensor safe = where(positive, l2sum, ones_like(l2sum));
  Tensor norm = where(positive, sqrt(safe), l2sum);
  return divide(multiply(t, clip_norm), maximum(norm, clip_norm), "clipped");
}

ClippedTensors clip_by_global_norm(const std::vector<Tensor> &t_list,
                                   double clip_norm, const Tensor &use_norm,
                                   const std::string &name) {
  Graph &g =
      checkFloats("clip_by_global_norm", "t_list", t_list, /*sameDType=*/true);
  if (!(clip_norm > 0.0) || !std::isfinite(clip_norm))
    throw GraphError("clip_by_global_norm: clip_norm must be a finite number "
                     "> 0, got " +
                     std::to_string(clip_norm));
  DType dtype = t_list.front().dtype();
  if (use_norm.valid() &&
      (&use_norm.graph() != &g || !use_norm.has_value() ||
       use_norm.dtype() != dtype || !use_norm.shape().empty()))
    throw GraphError("clip_by_global_norm: use_norm " + describe(use_norm) +
                     " must be a scalar of the tensors' graph and dtype " +
                     to_string(dtype));
  auto scope = g.name_scope(g.unique_layer_name(name));
  Tensor norm = use_norm.valid() ? use_norm : global_norm(t_list);
  // TF: clip_norm * minimum(1 / norm, 1 / clip_norm) + (norm - norm): the
  // NaN of an infinite norm reaches every value. 1 / clip_norm is computed
  // in the dtype, as TF divides its constant 1 by the clip_norm tensor.
  double inverse =
      dtype == DType::Float64
          ? 1.0 / clip_norm
          : static_cast<double>(1.0f / static_cast<float>(clip_norm));
  Tensor scale =
      add(multiply(g.constant(clip_norm, dtype),
                   minimum(divide(1.0, norm), g.constant(inverse, dtype))),
          subtract(norm, norm), "scale");
  ClippedTensors out;
  out.global_norm = norm;
  for (const Tensor &t : t_list)
    out.list_clipped.push_back(multiply(t, scale));
  return out;
}

} // namespace estc
