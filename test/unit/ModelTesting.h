//===- ModelTesting.h - Shared helpers for compiled-model tests ---------===//
//
// Random inputs and weights, and buffer <-> reference::Value conversions, for
// the tests that run compiled models (JIT and AOT) against the reference
// evaluator.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_MODELTESTING_H
#define ESTC_TEST_UNIT_MODELTESTING_H

#include "compiler/Target/Jit.h"
#include "lib/Graph/GraphBuilder.h"
#include "test/reference/ReferenceEvaluator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace estc {
namespace testing {

using reference::Value;

/// A feature of a test graph and the range its random values come from.
struct Feature {
  std::string key;
  DType dtype = DType::Float32;
  Dims shape; // -1: the batch
  double lo = -2.0, hi = 2.0;
};

/// The shape with every -1 replaced by `batch`.
Dims concrete(const Dims &shape, int64_t batch);

/// Random values for `f` at `batch` (f32 values are representable in f32).
Value randomValue(const Feature &f, int64_t batch, std::mt19937 &rng);

/// Writes `value` into a compiled-model buffer of its dtype (i1 as i8).
void store(const Value &value, void *buffer);

/// Element `i` of a compiled-model buffer of `dtype`, as a double.
double load(graph::DataType dtype, const void *buffer, size_t i);

/// Random weights (uniform in [-0.2, 0.2]; integer variables 3) for every
/// variable of `graph`.
std::map<std::string, Value> randomVariables(const graph::GraphDef &graph);

/// Checks a compiled output buffer against the reference value: NaN where
/// NaN, equal infinities, otherwise |got - want| <= tolerance * max(1, |want|).
::testing::AssertionResult outputMatches(const Value &want, const void *got,
                                         double tolerance);

/// Compiles `graph` with the JIT. The cache is a directory made once per test
/// process (unless `options` names one), so a test never loads an object
/// from an earlier build. On failure: one ADD_FAILURE with the error line and
/// null. Warnings are failures too when `warningsFail`.
std::unique_ptr<JitModel> jitCompileForTest(const graph::GraphDef &graph,
                                            llvm::StringRef name,
                                            JitOptions options = {},
                                            bool warningsFail = false);

} // namespace testing
} // namespace estc

#endif // ESTC_TEST_UNIT_MODELTESTING_H
