//===- constraints.cpp - Op oracle cases: Keras weight constraints -------===//
//
// estc's constraints:: (lib/Graph/Layers.h) against Keras 2.15's
// tf.keras.constraints (test/e2e/op_cases/constraints.py holds TF's side):
// max_norm, non_neg, unit_norm, min_max_norm and radial_constraint on
// kernels of dense and conv shapes (values only: a constraint is assigned
// after the optimizer's update, never differentiated).
//
//===----------------------------------------------------------------------===//

#include "lib/Graph/Layers.h"
#include "test/data/OpCases.h"

using namespace estc;
using estc::opcases::Inputs;
using estc::opcases::Outputs;

ESTC_OP_CASE(constraint_max_norm, [](Graph &, const Inputs &in) {
  return Outputs{constraints::max_norm()(in[0])};
});
ESTC_OP_CASE(constraint_max_norm_conv, [](Graph &, const Inputs &in) {
  return Outputs{constraints::max_norm(1.5, {0, 1, 2})(in[0])};
});
ESTC_OP_CASE(constraint_non_neg, [](Graph &, const Inputs &in) {
  return Outputs{constraints::non_neg()(in[0])};
});
ESTC_OP_CASE(constraint_unit_norm, [](Graph &, const Inputs &in) {
  return Outputs{constraints::unit_norm()(in[0])};
});
ESTC_OP_CASE(constraint_unit_norm_last, [](Graph &, const Inputs &in) {
  return Outputs{constraints::unit_norm({-1})(in[0])};
});
ESTC_OP_CASE(constraint_min_max_norm, [](Graph &, const Inputs &in) {
  return Outputs{constraints::min_max_norm(0.8, 1.2, 0.7)(in[0])};
});
ESTC_OP_CASE(constraint_min_max_norm_default, [](Graph &, const Inputs &in) {
  return Outputs{constraints::min_max_norm()(in[0])};
});
ESTC_OP_CASE(constraint_radial_odd, [](Graph &, const Inputs &in) {
  return Outputs{constraints::radial_constraint()(in[0])};
});
ESTC_OP_CASE(constraint_radial_even, [](Graph &, const Inputs &in) {
  return Outputs{constraints::radial_constraint()(in[0])};
});
ESTC_OP_CASE(constraint_radial_five, [](Graph &, const Inputs &in) {
  return Outputs{constraints::radial_constraint()(in[0])};
});
