//===- IteratorStatePipeline.h - The iterator_state target's pipeline ----===//
//
// The pipeline the `iterator_state` fuzz target restores states into, and
// make_fuzz_corpus saves its seed states from: most stages of lib/Data.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_FUZZ_ITERATORSTATEPIPELINE_H
#define ESTC_TEST_FUZZ_ITERATORSTATEPIPELINE_H

#include "lib/Data/Dataset.h"

#include <algorithm>

namespace estc {
namespace fuzz {

inline data::Dataset iteratorStatePipeline() {
  using namespace estc::data;
  auto fn = [](const Element &e) {
    int64_t n = 0;
    if (e.is_leaf() && std::holds_alternative<TensorValue>(e.leaf()) &&
        tensor(e).dtype == DType::Int64 && tensor(e).num_elements() == 1)
      n = tensor(e).values<int64_t>()[0] % 5;
    return Dataset::range(0, std::max<int64_t>(n, 0) + 1);
  };
  return Dataset::range(20)
      .shuffle(4, 1)
      .repeat(2)
      .interleave(fn, 2, 2, 1)
      .map([](Element e) { return e; }, 2)
      .filter([](const Element &) { return true; })
      .batch(3)
      .unbatch()
      .cache()
      .take(40)
      .prefetch(2);
}

} // namespace fuzz
} // namespace estc

#endif // ESTC_TEST_FUZZ_ITERATORSTATEPIPELINE_H
