//===- Gradients.h - tf.gradients and gradient clipping -----------------===//
//
// tf.gradients as graph nodes, and TF's clipping functions (tf.clip_by_norm,
// tf.clip_by_global_norm, tf.linalg.global_norm) built from ops, so that a
// model_fn transforms gradients or writes an optimizer itself
// (train::Optimizer::compute_gradients / apply_gradients, lib/Graph/Train.h).
//
// `gradients(ys, xs)` emits one `gradient` node per x (op `est.gradient`:
// d target / d x, target a float scalar): the compiler's est-autodiff
// replaces them with the backward ops, built where the node is, one reverse
// sweep per target (docs/autodiff.md). The results are ordinary tensors
// that later ops (clipping, assignments) use.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_GRADIENTS_H
#define ESTC_LIB_GRAPH_GRADIENTS_H

#include "lib/Graph/GraphBuilder.h"

#include <optional>
#include <string>
#include <vector>

namespace estc {

/// tf.gradients(ys, xs, grad_ys): the gradient of sum_i sum(ys[i] *
/// grad_ys[i]) (of sum_i sum(ys[i]) without grad_ys) with respect to each
/// of `xs`, one Tensor of x's dtype and shape each. An x is a Tensor or a
/// Variable (its read in the current mode: the gradient with respect to
/// the variable). ys and xs are float and of one graph; ys share a dtype;
/// grad_ys[i] has ys[i]'s dtype and shape. Differences from TF: an x that
/// the ys do not depend on gets zeros (TF's None;
/// unconnected_gradients="zero"), and the gradient of a gather of a
/// variable is dense (TF's IndexedSlices, converted to a Tensor by any op
/// that uses it). Bad arguments throw GraphError naming the argument.
std::vector<Tensor> gradients(const std::vector<Tensor> &ys,
                              const std::vector<Tensor> &xs,
                              const std::vector<Tensor> &grad_ys = {},
                              const std::string &name = "gradients");
/// The same with respect to variables.
std::vector<Tensor> gradients(const std::vector<Tensor> &ys,
                              const std::vector<Variable> &xs,
                              const std::vector<Tensor> &grad_ys = {},
                              const std::string &name = "gradients");

/// tf.linalg.global_norm: sqrt(sum_i sum(t_i^2)), computed as TF does
/// (2 * the sum of the tensors' l2_loss). The tensors are float and of
/// one dtype; the result is a scalar of it. A dense gradient of a gather
/// (gradients()) holds a repeated id's rows summed, where TF's
/// IndexedSlices hold them one by one and its global norm counts each:
/// the norms differ when a batch repeats an id.
Tensor global_norm(const std::vector<Tensor> &t_list,
                   const std::string &name = "global_norm");

/// tf.clip_by_norm: t * clip_norm / max(l2norm(t), clip_norm), the norm
/// over `axes` (all axes when absent; negative axes count from the end),
/// kept per slice. clip_norm > 0.
Tensor clip_by_norm(const Tensor &t, double clip_norm,
                    std::optional<Dims> axes = std::nullopt,
                    const std::string &name = "clip_by_norm");
/// clip_norm a float scalar Tensor of t's dtype.
Tensor clip_by_norm(const Tensor &t, const Tensor &clip_norm,
                    std::optional<Dims> axes = std::nullopt,
                    const std::string &name = "clip_by_norm");

/// What tf.clip_by_global_norm returns.
struct ClippedTensors {
  std::vector<Tensor> list_clipped;
  Tensor global_norm;
};
/// tf.clip_by_global_norm: each t_i * clip_norm / max(global_norm,
/// clip_norm), as TF computes it (clip_norm * min(1 / global_norm, 1 /
/// clip_norm), NaN everywhere when the norm is not finite). `use_norm`:
/// the global norm when already computed. clip_norm > 0.
ClippedTensors
clip_by_global_norm(const std::vector<Tensor> &t_list, double clip_norm,
                    const Tensor &use_norm = Tensor(),
                    const std::string &name = "clip_by_global_norm");

} // namespace estc

#endif // ESTC_LIB_GRAPH_GRADIENTS_H
