//===- TinyModel.h - The out-of-tree example's model and data -----------===//
//
// A classifier of 4 features into 3 classes (dense 16 relu, dense 3, SGD)
// as a tf.estimator model_fn, the synthetic data it learns (x uniform in
// [-1, 1]^4, class = argmax(x0 + x1, x2, x3)), and the check both trainers
// run: train, evaluate, and compare with the untrained model.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_OUT_OF_TREE_TINYMODEL_H
#define ESTC_OUT_OF_TREE_TINYMODEL_H

#include "estc/estimator.h"

#include <cstdint>
#include <functional>
#include <memory>

namespace classifier {

estc::estimator::EstimatorSpec
model_fn(const estc::TensorMap &features, const estc::Tensor &labels,
         estc::ModeKeys mode, const estc::estimator::Params &params,
         const estc::estimator::RunConfig &config);

/// The graph the JIT Estimator builds from model_fn, for estc.
estc::graph::GraphDef build_graph(int64_t seed);

/// The random seed of both runs (the AOT graph is built with it).
constexpr int64_t kSeed = 42;

/// Evaluates the untrained model, trains `steps` steps, evaluates again;
/// prints both and returns 0 when the loss dropped below half and the
/// accuracy is above 0.8 (chance: 1/3), 1 otherwise. `make` builds the
/// Estimator for a RunConfig (model_dir under the temporary directory).
int train_and_check(
    const char *name,
    const std::function<std::unique_ptr<estc::estimator::Estimator>(
        const estc::estimator::RunConfig &)> &make,
    int64_t steps = 300);

} // namespace classifier

#endif // ESTC_OUT_OF_TREE_TINYMODEL_H
