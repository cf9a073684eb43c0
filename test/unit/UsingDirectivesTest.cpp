//===- UsingDirectivesTest.cpp - User code with both using-directives ----===//
//
// The user guide's and README's code says `using namespace estc; using
// namespace estc::estimator;`. Every name such code spells must then be
// unambiguous; this file compiles only if it is (the graph builder's
// model_fn type is GraphModelFn, the Estimator's ModelFn).
//
//===----------------------------------------------------------------------===//

#include "estimator/Estimator.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Train.h"

#include <gtest/gtest.h>

#include <type_traits>

using namespace estc;
using namespace estc::estimator;

namespace {

EstimatorSpec model_fn(const TensorMap &features, const Tensor &labels,
                       ModeKeys mode, const Params &, const RunConfig &) {
  EstimatorSpec spec(mode);
  Tensor logits = layers::dense(features["x"], 2);
  spec.predictions = {{"positive", greater(nn::sigmoid(logits), 0.5)}};
  if (mode != ModeKeys::PREDICT)
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
  return spec;
}

TEST(UsingDirectives, ModelFnIsTheEstimators) {
  static_assert(std::is_same_v<ModelFn, estimator::ModelFn>);
  static_assert(!std::is_same_v<ModelFn, GraphModelFn>);
  ModelFn fn = model_fn;
  GraphModelFn graphFn = [](Graph &, const TensorMap &, const Tensor &,
                            ModeKeys) { return Signature(); };
  EXPECT_TRUE(static_cast<bool>(fn));
  EXPECT_TRUE(static_cast<bool>(graphFn));
}

} // namespace
