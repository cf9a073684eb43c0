//===- Feed.cpp - An input_fn's batches into a compiled function -------===//

#include "estimator/Feed.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

void feed(rt::CompiledModel &m, const binding::InputBinding &inputs,
          const Batch &batch, const std::string &call) {
  const rt::FunctionSpec &f = m.spec().functions[inputs.function()];
  auto where = [&] { return "Estimator." + call + ": "; };
  auto listKeys = [&] {
    std::string s;
    for (const binding::InputBinding::Input &in : inputs.inputs())
      if (in.feature)
        s += (s.empty() ? "" : ", ") + *in.feature;
    return s;
  };
  auto isInput = [&](const std::string &feature) {
    return std::any_of(inputs.inputs().begin(), inputs.inputs().end(),
                       [&](const binding::InputBinding::Input &in) {
                         return in.feature == feature;
                       });
  };
  // Each input finds a distinct feature: the batch has no other feature
  // when it has as many as the inputs found.
  size_t found = 0;
  for (const binding::InputBinding::Input &in : inputs.inputs())
    found += in.feature && batch.features.count(*in.feature);
  if (found != batch.features.size())
    for (const auto &entry : batch.features)
      if (!isInput(entry.first))
        throw std::invalid_argument(
            where() + "input_fn feature '" + entry.first +
            "' is not an input of the model's " + f.name +
            " function (features: " + listKeys() + ")");
  int64_t n;
  try {
    n = batch.size();
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(where() + e.what());
  }
  if (n == 0)
    throw std::invalid_argument(where() + "input_fn gave an empty batch");
  m.set_batch(n);
  // The sequence inputs bring the call's sequence length (all the same).
  std::vector<const TensorValue *> fed(inputs.size());
  bool sequences = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sequences |= inputs[i].sequence;
    if (inputs[i].feature) {
      auto it = batch.features.find(*inputs[i].feature);
      fed[i] = it == batch.features.end() ? nullptr : &it->second;
    } else if (batch.labels) {
      fed[i] = &*batch.labels;
    }
  }
  if (sequences) {
    int64_t length;
    try {
      length = inputs.sequence_length(fed);
    } catch (const std::invalid_argument &e) {
      throw std::invalid_argument(where() + e.what());
    }
    if (length > 0)
      m.set_sequence_length(length);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const rt::TensorSpec &spec = *inputs[i].spec;
    const std::optional<std::string> &feature = inputs[i].feature;
    const TensorValue *value = nullptr;
    if (feature) {
      auto it = batch.features.find(*feature);
      if (it == batch.features.end())
        throw std::invalid_argument(where() + "input_fn gave no feature '" +
                                    *feature + "'; the model's " + f.name +
                                    " function takes " +
                                    binding::specString(spec));
      value = &it->second;
    } else {
      if (!batch.labels)
        throw std::invalid_argument(where() +
                                    "input_fn gave no labels; the "
                                    "model's " +
                                    std::string(f.name) + " function takes " +
                                    binding::specString(spec));
      value = &*batch.labels;
    }
    if (!inputs.accepts(i, *value, n))
      throw std::invalid_argument(
          where() + (feature ? "feature '" + *feature + "'" : "labels") +
          " is " + binding::valueString(*value) + "; the model's " + f.name +
          " function takes " + binding::specString(spec));
    inputs.write(m, i, *value);
  }
}

ArrayFeed arrayFeed(const binding::InputBinding &inputs, const Batch &arrays) {
  ArrayFeed feed;
  feed.arrays = &arrays;
  size_t found = 0;
  for (const binding::InputBinding::Input &in : inputs.inputs())
    found += in.feature && arrays.features.count(*in.feature);
  if (found != arrays.features.size() || !arrays.values_features.empty() ||
      !arrays.sequence_features.empty())
    return feed;
  for (const binding::InputBinding::Input &in : inputs.inputs()) {
    const rt::TensorSpec &spec = *in.spec;
    const TensorValue *value = nullptr;
    if (in.feature) {
      auto it = arrays.features.find(*in.feature);
      if (it == arrays.features.end())
        return feed;
      value = &it->second;
    } else {
      if (!arrays.labels)
        return feed;
      value = &*arrays.labels;
    }
    // Every batch has the arrays' shape but for dimension 0, the batch.
    if (value->dtype != in.dtype.value_or(DType::Invalid) || spec.rank < 1 ||
        spec.shape[0] != rt::kBatchDim ||
        value->shape.size() != static_cast<size_t>(spec.rank))
      return feed;
    for (int32_t d = 1; d < spec.rank; ++d)
      if (spec.shape[d] < 0 ||
          value->shape[static_cast<size_t>(d)] != spec.shape[d])
        return feed;
    size_t rowBytes =
        value->shape[0] > 0
            ? value->data.size() / static_cast<size_t>(value->shape[0])
            : 0;
    feed.sources.emplace_back(value->data.data(), rowBytes);
  }
  feed.ok = true;
  return feed;
}

void feedRows(rt::CompiledModel &m, int fn, const ArrayFeed &feed,
              const std::vector<int64_t> &rows) {
  m.set_batch(static_cast<int64_t>(rows.size()));
  // Consecutive rows (every batch unless shuffled): one copy per input. The
  // test has no early exit, so that it vectorizes.
  bool consecutive = !rows.empty();
  for (size_t r = 0; r < rows.size(); ++r)
    consecutive &= rows[r] == rows[0] + static_cast<int64_t>(r);
  for (size_t i = 0; i < feed.sources.size(); ++i) {
    auto [source, rowBytes] = feed.sources[i];
    char *to = static_cast<char *>(m.input_data(fn, static_cast<int>(i)));
    if (consecutive) {
      std::memcpy(to, source + static_cast<size_t>(rows[0]) * rowBytes,
                  rows.size() * rowBytes);
      continue;
    }
    // Runs of consecutive rows, each in one copy.
    for (size_t r = 0; r < rows.size();) {
      size_t run = 1;
      while (r + run < rows.size() &&
             rows[r + run] == rows[r] + static_cast<int64_t>(run))
        ++run;
      std::memcpy(to + r * rowBytes,
                  source + static_cast<size_t>(rows[r]) * rowBytes,
                  run * rowBytes);
      r += run;
    }
  }
}

} // namespace detail
} // namespace estimator
} // namespace estc
