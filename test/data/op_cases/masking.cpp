//===- masking.cpp - Op oracle cases: Keras masks ------------------------===//
//
// Keras's masks consumed by the layers that take one, against TF 2.15
// (test/e2e/op_cases/masking.py holds TF's side): GlobalAveragePooling1D
// with the mask of an Embedding's mask_zero (not_equal(ids, 0)).
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Layers.h"
#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(global_average_pooling1d_masked, [](Graph &, const Inputs &in) {
  return Outputs{layers::global_average_pooling1d(in[0], false, "",
                                                  not_equal(in[1], 0.0))};
});
ESTC_OP_CASE(global_average_pooling1d_masked_keepdims,
             [](Graph &, const Inputs &in) {
               return Outputs{layers::global_average_pooling1d(
                   in[0], true, "", not_equal(in[1], 0.0))};
             });
