//===- OpCases.h - The op oracle's cases, estc side ---------------------===//
//
// test/e2e/tf_ops_compat.py runs each case of test/e2e/op_cases/*.py in
// TensorFlow 2.15 and the case of the same name here through ops_tool
// (test/data/ops_tool.cpp: fed inputs, the JIT, gradients through the
// compiler's autodiff), and compares outputs and gradients.
//
// A case builds its outputs from its inputs, in the order the Python case
// lists them:
//
//   ESTC_OP_CASE(erf, [](Graph &, const Inputs &in) {
//     return Outputs{erf(in[0])};
//   });
//
// Cases live in test/data/op_cases/<group>.cpp (a CONFIGURE_DEPENDS glob
// compiles every file there into ops_tool).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_DATA_OPCASES_H
#define ESTC_TEST_DATA_OPCASES_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace estc::opcases {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using Build = std::function<Outputs(Graph &, const Inputs &)>;

/// Every case, by name (filled by ESTC_OP_CASE's static registrars).
std::map<std::string, Build> &registry();

struct Registrar {
  Registrar(const char *name, Build build);
};

} // namespace estc::opcases

#define ESTC_OP_CASE(NAME, ...)                                                \
  static const ::estc::opcases::Registrar estcOpCase_##NAME(#NAME, __VA_ARGS__)

#endif // ESTC_TEST_DATA_OPCASES_H
