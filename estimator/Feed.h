//===- Feed.h - An input_fn's batches into a compiled function ---------===//
//
// Internal to the Estimator. Batches (estimator/Input.h) fed into a compiled
// function's inputs through the tensor binding (runtime/binding), with the
// Estimator's errors; numpy_input_fn's arrays gathered straight into the
// input buffers.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_FEED_H
#define ESTC_ESTIMATOR_FEED_H

#include "estimator/Input.h"
#include "runtime/binding/TensorBinding.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace estimator {
namespace detail {

/// Copies a batch into the inputs of `inputs`' function after checking
/// names, dtypes and shapes against it. `call` ("train", ...) names the
/// Estimator call in the errors.
void feed(rt::CompiledModel &m, const binding::InputBinding &inputs,
          const Batch &batch, const std::string &call);

/// numpy_input_fn's arrays fed straight into a function's inputs, each
/// batch's rows gathered from the arrays into the input buffers: no Batch
/// is built. Worked out once for the arrays; `ok` only when every batch of
/// them passes feed()'s checks (otherwise feed() reads them, and throws
/// what it throws).
struct ArrayFeed {
  const Batch *arrays = nullptr;
  bool ok = false;
  /// Per input: the array's bytes and the bytes of one of its rows.
  std::vector<std::pair<const char *, size_t>> sources;
};

ArrayFeed arrayFeed(const binding::InputBinding &inputs, const Batch &arrays);

/// Gathers `rows` of each of `feed`'s arrays into `fn`'s inputs (what
/// feed() does with the batch those rows make).
void feedRows(rt::CompiledModel &m, int fn, const ArrayFeed &feed,
              const std::vector<int64_t> &rows);

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_FEED_H
