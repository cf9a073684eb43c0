//===- Input.cpp - Datasets of batches ------------------------------------===//

#include "estimator/Input.h"

#include <stdexcept>
#include <utility>

namespace estc {
namespace estimator {

namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

TensorSpec specOf(const std::string &key, const TensorValue &t) {
  TensorSpec spec;
  spec.key = key;
  spec.dtype = t.dtype;
  spec.shape = t.shape;
  if (!spec.shape.empty())
    spec.shape[0] = -1;
  return spec;
}

/// Rows [begin, begin + count) of `t` along its first dimension, gathered
/// by `rows`.
TensorValue gatherRows(const TensorValue &t, const std::vector<int64_t> &rows) {
  TensorValue out;
  out.dtype = t.dtype;
  out.shape = t.shape;
  out.shape[0] = static_cast<int64_t>(rows.size());
  size_t rowBytes = t.shape[0] == 0 ? 0 : t.data.size() / t.shape[0];
  out.data.resize(rowBytes * rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(t.data.data() + rowBytes * rows[i], rowBytes,
                out.data.data() + rowBytes * i);
  return out;
}

/// SplitMix64: a portable 64-bit generator (std's distributions are not
/// the same on every platform).
uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

} // namespace

int64_t Batch::size() const {
  int64_t n = -1;
  std::string first;
  for (const auto &[key, t] : features) {
    if (t.shape.empty())
      throw std::invalid_argument("input: feature '" + key +
                                  "' is a scalar; features need a batch "
                                  "dimension");
    if (n < 0) {
      n = t.shape[0];
      first = key;
    } else if (t.shape[0] != n) {
      throw std::invalid_argument("input: feature '" + key + "' has " +
                                  std::to_string(t.shape[0]) + " examples " +
                                  shapeString(t.shape) + " but feature '" +
                                  first + "' has " + std::to_string(n));
    }
  }
  if (n < 0)
    throw std::invalid_argument("input: a batch has no features");
  if (labels) {
    if (labels->shape.empty() || labels->shape[0] != n)
      throw std::invalid_argument(
          "input: labels " + shapeString(labels->shape) + " do not have " +
          std::to_string(n) + " examples like feature '" + first + "'");
  }
  return n;
}

ElementSpec element_spec_of(const Batch &batch) {
  batch.size(); // checks the batch dimension
  ElementSpec spec;
  for (const auto &[key, t] : batch.features)
    spec.features.push_back(specOf(key, t));
  if (batch.labels)
    spec.labels = specOf("labels", *batch.labels);
  return spec;
}

struct Dataset::State {
  Generator next;
  std::optional<ElementSpec> spec;
  std::optional<Batch> peeked;
};

Dataset::Dataset(std::unique_ptr<State> state) : state_(std::move(state)) {}
Dataset::Dataset(Dataset &&) noexcept = default;
Dataset &Dataset::operator=(Dataset &&) noexcept = default;
Dataset::~Dataset() = default;

Dataset Dataset::from_generator(Generator next,
                                std::optional<ElementSpec> spec) {
  if (!next)
    throw std::invalid_argument("Dataset::from_generator: empty generator");
  auto state = std::make_unique<State>();
  state->next = std::move(next);
  state->spec = std::move(spec);
  return Dataset(std::move(state));
}

std::optional<Batch> Dataset::next() {
  if (state_->peeked) {
    std::optional<Batch> batch = std::move(state_->peeked);
    state_->peeked.reset();
    return batch;
  }
  return state_->next();
}

std::optional<ElementSpec> Dataset::element_spec() {
  if (state_->spec)
    return state_->spec;
  if (!state_->peeked)
    state_->peeked = state_->next();
  if (!state_->peeked)
    return std::nullopt;
  state_->spec = element_spec_of(*state_->peeked);
  return state_->spec;
}

namespace {
void checkArrayOptions(const Dataset::ArrayOptions &options) {
  if (options.batch_size < 1)
    throw std::invalid_argument("numpy_input_fn: batch_size must be >= 1, "
                                "got " +
                                std::to_string(options.batch_size));
  if (options.num_epochs && *options.num_epochs < 1)
    throw std::invalid_argument("numpy_input_fn: num_epochs must be >= 1 "
                                "(or unset: forever), got " +
                                std::to_string(*options.num_epochs));
}
} // namespace

Dataset Dataset::from_arrays(Features x, std::optional<TensorValue> y,
                             const ArrayOptions &options) {
  if (x.empty())
    throw std::invalid_argument("numpy_input_fn: no features");
  checkArrayOptions(options);
  auto all = std::make_shared<const Batch>(Batch{std::move(x), std::move(y)});
  all->size(); // checks the features agree
  return fromSharedArrays(std::move(all), options);
}

Dataset Dataset::fromSharedArrays(std::shared_ptr<const Batch> all,
                                  const ArrayOptions &options) {
  int64_t n = all->size();
  ElementSpec spec = element_spec_of(*all);

  struct Cursor {
    std::shared_ptr<const Batch> data;
    int64_t examples;
    ArrayOptions options;
    int64_t epoch = 0;
    int64_t position = 0; // within the epoch
    std::vector<int64_t> order;
  };
  auto cursor =
      std::make_shared<Cursor>(Cursor{std::move(all), n, options, 0, 0, {}});
  auto startEpoch = [](Cursor &c) {
    c.order.resize(c.examples);
    for (int64_t i = 0; i < c.examples; ++i)
      c.order[i] = i;
    if (c.options.shuffle) {
      uint64_t state = c.options.seed * 0x9E3779B97F4A7C15ull +
                       static_cast<uint64_t>(c.epoch);
      for (int64_t i = c.examples - 1; i > 0; --i) {
        int64_t j = static_cast<int64_t>(splitmix(state) %
                                         static_cast<uint64_t>(i + 1));
        std::swap(c.order[i], c.order[j]);
      }
    }
    c.position = 0;
  };
  if (n > 0)
    startEpoch(*cursor);
  Generator next = [cursor, startEpoch]() -> std::optional<Batch> {
    Cursor &c = *cursor;
    if (c.examples == 0)
      return std::nullopt;
    std::vector<int64_t> rows;
    while (static_cast<int64_t>(rows.size()) < c.options.batch_size) {
      if (c.position == c.examples) {
        if (c.options.num_epochs && c.epoch + 1 >= *c.options.num_epochs)
          break;
        ++c.epoch;
        startEpoch(c);
      }
      rows.push_back(c.order[c.position++]);
    }
    if (rows.empty())
      return std::nullopt;
    Batch batch;
    for (const auto &[key, t] : c.data->features)
      batch.features[key] = gatherRows(t, rows);
    if (c.data->labels)
      batch.labels = gatherRows(*c.data->labels, rows);
    return batch;
  };
  return from_generator(std::move(next), std::move(spec));
}

InputFn numpy_input_fn(Features x, std::optional<TensorValue> y,
                       const Dataset::ArrayOptions &options) {
  // Checked now, where the mistake is made.
  if (x.empty())
    throw std::invalid_argument("numpy_input_fn: no features");
  checkArrayOptions(options);
  auto data = std::make_shared<const Batch>(Batch{std::move(x), std::move(y)});
  data->size();
  return [data, options]() { return Dataset::fromSharedArrays(data, options); };
}

} // namespace estimator
} // namespace estc
