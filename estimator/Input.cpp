//===- Input.cpp - Datasets of batches ------------------------------------===//

#include "estimator/Input.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace estc {
namespace estimator {

namespace {

TensorSpec specOf(const std::string &key, const TensorValue &t) {
  TensorSpec spec;
  spec.key = key;
  spec.dtype = t.dtype;
  spec.shape = t.shape;
  if (!spec.shape.empty())
    spec.shape[0] = -1;
  return spec;
}

/// The rows of `t` along its first dimension, gathered by `rows` (string
/// tensors too: their values are `strings`, not bytes).
TensorValue gatherRows(const TensorValue &t, const std::vector<int64_t> &rows) {
  TensorValue out;
  out.dtype = t.dtype;
  out.shape = t.shape;
  out.shape[0] = static_cast<int64_t>(rows.size());
  if (t.dtype == DType::String) {
    size_t width = t.shape[0] == 0 ? 0 : t.strings.size() / t.shape[0];
    out.strings.reserve(width * rows.size());
    for (int64_t row : rows)
      out.strings.insert(out.strings.end(), t.strings.begin() + width * row,
                         t.strings.begin() + width * (row + 1));
    return out;
  }
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

/// numpy_input_fn's iterator as Dataset::next_rows reads it: the rows of
/// the next batch instead of the batch.
class ArrayRows {
public:
  virtual ~ArrayRows() = default;
  virtual void next_rows(std::vector<int64_t> &rows) = 0;
};

} // namespace

int64_t Batch::size() const {
  int64_t n = -1;
  const std::string *first = nullptr;
  for (const auto &[key, t] : features) {
    if (t.shape.empty())
      throw std::invalid_argument("input: feature '" + key +
                                  "' is a scalar; features need a batch "
                                  "dimension");
    if (!values_features.empty() && values_features.count(key))
      continue; // a number of sparse values, not the batch
    if (n < 0) {
      n = t.shape[0];
      first = &key;
    } else if (t.shape[0] != n) {
      throw std::invalid_argument("input: feature '" + key + "' has " +
                                  std::to_string(t.shape[0]) + " examples " +
                                  shape_string(t.shape) + " but feature '" +
                                  *first + "' has " + std::to_string(n));
    }
  }
  if (n < 0)
    throw std::invalid_argument("input: a batch has no features");
  if (labels) {
    if (labels->shape.empty() || labels->shape[0] != n)
      throw std::invalid_argument(
          "input: labels " + shape_string(labels->shape) + " do not have " +
          std::to_string(n) + " examples like feature '" + *first + "'");
  }
  return n;
}

ElementSpec element_spec_of(const Batch &batch) {
  batch.size(); // checks the batch dimension
  ElementSpec spec;
  for (const auto &[key, t] : batch.features) {
    spec.features.push_back(specOf(key, t));
    spec.features.back().values_dim = batch.values_features.count(key) > 0;
    if (batch.sequence_features.count(key) && t.shape.size() >= 2) {
      spec.features.back().sequence_dim = true;
      spec.features.back().shape[1] = -1;
    }
  }
  if (batch.labels)
    spec.labels = specOf("labels", *batch.labels);
  return spec;
}

TensorValue pack_bytes(const std::string &bytes) {
  std::vector<int64_t> words(1 + (bytes.size() + 7) / 8, 0);
  words[0] = static_cast<int64_t>(bytes.size());
  if (!bytes.empty())
    std::memcpy(&words[1], bytes.data(), bytes.size());
  return TensorValue::of<int64_t>({static_cast<int64_t>(words.size())}, words);
}

std::string unpack_bytes(const TensorValue &t) {
  if (t.dtype != DType::Int64 || t.shape.size() != 1 || t.shape[0] < 1)
    throw data::DataError(std::string(kInputStateTensor) + " is " +
                          t.spec().str() + ", not I64[n]");
  int64_t n;
  std::memcpy(&n, t.data.data(), 8);
  if (n < 0 || static_cast<uint64_t>(n) > (t.data.size() - 8))
    throw data::DataError(std::string(kInputStateTensor) + ": a length of " +
                          std::to_string(n) + " bytes in " +
                          std::to_string(t.data.size() - 8));
  return t.data.substr(8, static_cast<size_t>(n));
}

Batch to_batch(const data::Element &element) {
  const data::Element *features = &element;
  const data::Element *labels = nullptr;
  if (element.is_tuple()) {
    if (element.size() < 1 || element.size() > 2)
      throw std::invalid_argument(
          "input: an element must be features or (features, labels), not a "
          "tuple of " +
          std::to_string(element.size()));
    features = &element[0];
    if (element.size() == 2)
      labels = &element[1];
  }
  if (!features->is_dict())
    throw std::invalid_argument("input: features must be a dict of named "
                                "tensors, not " +
                                data::to_string(data::spec_of(*features)));
  auto dense = [](const data::Element &e,
                  const std::string &what) -> const TensorValue & {
    if (!e.is_leaf())
      throw std::invalid_argument("input: " + what + " is a nested " +
                                  data::to_string(data::spec_of(e)) +
                                  "; it must be one tensor");
    if (std::holds_alternative<data::SparseTensor>(e.leaf()))
      throw std::invalid_argument(
          "input: " + what +
          " is sparse (a SparseTensor); sparse and string features reach a "
          "model through feature columns: use a canned estimator or "
          "Estimator::set_host_transform");
    const TensorValue &t = data::tensor(e);
    if (t.dtype == DType::String)
      throw std::invalid_argument(
          "input: " + what +
          " is a string tensor; sparse and string features reach a model "
          "through feature columns: use a canned estimator or "
          "Estimator::set_host_transform");
    return t;
  };
  Batch batch;
  for (const auto &[name, value] : features->fields())
    batch.features[name] = dense(value, "feature '" + name + "'");
  if (labels)
    batch.labels = dense(*labels, "the labels");
  return batch;
}

data::Element to_element(const Batch &batch) {
  std::map<std::string, data::Element> fields;
  for (const auto &[key, t] : batch.features)
    fields.emplace(key, data::Element(t));
  data::Element features = data::Element::dict(std::move(fields));
  if (!batch.labels)
    return features;
  return data::Element::tuple(
      {std::move(features), data::Element(*batch.labels)});
}

struct Dataset::State {
  /// A legacy generator of batches (not resumable) ...
  Generator next;
  /// ... or a data pipeline and its current iteration.
  std::optional<data::Dataset> source;
  std::unique_ptr<data::Iterator> iterator;
  std::optional<ElementSpec> spec;
  std::optional<Batch> peeked;
  /// The position before the peeked batch; its absence (with a peeked
  /// batch) means the pipeline cannot save one.
  std::optional<std::string> statePeeked;
  std::string notResumable;
  bool exhausted = false;
  /// Whether a batch (or rows) was read: map and shard come before.
  bool started = false;

  /// The Estimator's host half (feature columns, label vocabularies).
  std::shared_ptr<const HostTransform> transform;

  /// from_arrays / numpy_input_fn: the arrays, and the iterator's rows.
  std::shared_ptr<const Batch> arrays;
  ArrayRows *arrayRows = nullptr;
  /// Points arrayRows at the current iterator (a new one after a restore).
  void findArrayRows() {
    arrayRows = arrays ? dynamic_cast<ArrayRows *>(&iterator->root()) : nullptr;
  }

  std::optional<Batch> pull() {
    started = true;
    if (!source) {
      std::optional<Batch> batch = next();
      if (batch && transform)
        return transform->transform_input(to_element(*batch));
      return batch;
    }
    std::optional<data::Element> e = iterator->next();
    if (!e) {
      exhausted = true;
      return std::nullopt;
    }
    return transform ? transform->transform_input(*e) : to_batch(*e);
  }
};

Dataset::Dataset(std::unique_ptr<State> state) : state_(std::move(state)) {}
Dataset::Dataset(Dataset &&) noexcept = default;
Dataset &Dataset::operator=(Dataset &&) noexcept = default;
Dataset::~Dataset() = default;

Dataset::Dataset(data::Dataset dataset) : state_(std::make_unique<State>()) {
  state_->iterator = std::make_unique<data::Iterator>(dataset);
  state_->source = std::move(dataset);
}

Dataset Dataset::from_generator(Generator next,
                                std::optional<ElementSpec> spec) {
  if (!next)
    throw std::invalid_argument("Dataset::from_generator: empty generator");
  auto state = std::make_unique<State>();
  state->next = std::move(next);
  state->spec = std::move(spec);
  state->notResumable = "a Dataset::from_generator of batches cannot save "
                        "its position";
  return Dataset(std::move(state));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) && {
  if (num_shards < 1 || index < 0 || index >= num_shards)
    throw std::invalid_argument(
        "Dataset::shard: index " + std::to_string(index) +
        " is not in [0, num_shards = " + std::to_string(num_shards) + ")");
  State &s = *state_;
  if (s.started || s.transform)
    throw std::logic_error("Dataset::shard after reading a batch or "
                           "installing a transform");
  if (num_shards == 1)
    return std::move(*this);
  if (!s.source) {
    // A generator: skip the other shards' batches.
    auto next = std::make_shared<Generator>(std::move(s.next));
    auto seen = std::make_shared<int64_t>(0);
    Dataset out = from_generator(
        [next, seen, num_shards, index]() -> std::optional<Batch> {
          while (std::optional<Batch> b = (*next)())
            if ((*seen)++ % num_shards == index)
              return b;
          return std::nullopt;
        },
        std::move(s.spec));
    return out;
  }
  // A pipeline: its shard. In-memory arrays lose next_rows(), which would
  // read past the shard.
  Dataset out(s.source->shard(num_shards, index));
  out.state_->spec = std::move(s.spec);
  return out;
}

Dataset Dataset::map(data::Dataset::MapFn fn, int64_t num_parallel_calls) && {
  State &s = *state_;
  if (!fn)
    throw std::invalid_argument("Dataset::map: empty function");
  if (!s.source)
    throw std::logic_error("Dataset::map: a Dataset::from_generator has no "
                           "pipeline to map (map inside the generator)");
  if (s.started || s.transform)
    throw std::logic_error("Dataset::map after reading a batch or "
                           "installing a transform");
  // The element spec is the mapped batches' (read from the first one).
  return Dataset(s.source->map(std::move(fn), num_parallel_calls));
}

void Dataset::set_transform(std::shared_ptr<const HostTransform> transform) {
  if (state_->peeked)
    throw std::logic_error("Dataset::set_transform after reading a batch");
  state_->transform = std::move(transform);
  // A declared spec describes the raw elements, not the transformed ones.
  state_->spec.reset();
}

std::optional<Batch> Dataset::next() {
  if (state_->peeked) {
    std::optional<Batch> batch = std::move(state_->peeked);
    state_->peeked.reset();
    state_->statePeeked.reset();
    return batch;
  }
  return state_->pull();
}

const Batch *Dataset::arrays() const {
  const State &s = *state_;
  return s.arrayRows && !s.transform && !s.peeked ? s.arrays.get() : nullptr;
}

void Dataset::next_rows(std::vector<int64_t> &rows) {
  if (!arrays())
    throw std::logic_error("Dataset::next_rows: not a dataset of in-memory "
                           "arrays without a transform");
  state_->started = true;
  state_->arrayRows->next_rows(rows);
  if (rows.empty())
    state_->exhausted = true;
}

std::optional<ElementSpec> Dataset::element_spec() {
  if (state_->spec)
    return state_->spec;
  if (!state_->peeked) {
    if (state_->source && state_->notResumable.empty()) {
      try {
        state_->statePeeked = state_->iterator->save().serialize();
      } catch (const data::NotResumableError &e) {
        state_->notResumable = e.what();
      }
    }
    state_->peeked = state_->pull();
  }
  if (!state_->peeked)
    return std::nullopt;
  state_->spec = element_spec_of(*state_->peeked);
  return state_->spec;
}

std::optional<std::string> Dataset::save_state(std::string *why) {
  auto no = [&](const std::string &reason) -> std::optional<std::string> {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  State &s = *state_;
  if (!s.notResumable.empty())
    return no(s.notResumable);
  if (s.exhausted)
    return no("the input ran out");
  if (s.peeked)
    return s.statePeeked;
  try {
    return s.iterator->save().serialize();
  } catch (const data::NotResumableError &e) {
    s.notResumable = e.what();
    return no(s.notResumable);
  }
}

bool Dataset::restore_state(const std::string &bytes, std::string *why) {
  State &s = *state_;
  if (!s.source) {
    if (why)
      *why = s.notResumable;
    return false;
  }
  try {
    auto fresh = std::make_unique<data::Iterator>(*s.source);
    fresh->restore(data::IteratorState::parse(bytes));
    s.iterator = std::move(fresh);
    s.findArrayRows();
    s.peeked.reset();
    s.statePeeked.reset();
    s.exhausted = false;
    return true;
  } catch (const std::exception &e) {
    if (why)
      *why = e.what();
    return false;
  }
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
  auto all =
      std::make_shared<const Batch>(Batch{std::move(x), std::move(y), {}});
  all->size(); // checks the features agree
  return fromSharedArrays(std::move(all), options);
}

namespace {

/// numpy_input_fn's batches as a data pipeline stage: the arrays' rows in a
/// per-epoch permutation from (seed, epoch), cut into batches that run
/// across epoch boundaries. The position is (epoch, row in the epoch).
class ArrayBatchesDataset : public data::detail::DatasetImpl {
public:
  ArrayBatchesDataset(std::shared_ptr<const Batch> arrays,
                      const Dataset::ArrayOptions &options)
      : arrays_(std::move(arrays)), options_(options),
        examples_(arrays_->size()) {}

  std::string describe() const override {
    std::string s = "Arrays(";
    for (const auto &[k, t] : arrays_->features)
      s += k + ":" + t.spec().str() + ",";
    if (arrays_->labels)
      s += "labels:" + arrays_->labels->spec().str() + ",";
    return s + "batch=" + std::to_string(options_.batch_size) + ",epochs=" +
           (options_.num_epochs ? std::to_string(*options_.num_epochs) : "") +
           (options_.shuffle ? ",seed=" + std::to_string(options_.seed) : "") +
           ")";
  }

  std::unique_ptr<data::detail::IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public data::detail::IteratorImpl, public ArrayRows {
    public:
      It(const std::string &p, const ArrayBatchesDataset &d)
          : IteratorImpl(p), d_(d) {
        startEpoch(0);
      }
      void next_rows(std::vector<int64_t> &rows) override {
        rows.clear();
        if (d_.examples_ == 0)
          return;
        while (static_cast<int64_t>(rows.size()) < d_.options_.batch_size) {
          if (position_ == d_.examples_) {
            if (d_.options_.num_epochs && epoch_ + 1 >= *d_.options_.num_epochs)
              break;
            startEpoch(epoch_ + 1);
          }
          // The rest of the batch, or of the epoch, at once.
          int64_t take = std::min(d_.options_.batch_size -
                                      static_cast<int64_t>(rows.size()),
                                  d_.examples_ - position_);
          rows.insert(rows.end(), order_.begin() + position_,
                      order_.begin() + position_ + take);
          position_ += take;
        }
      }
      std::optional<data::Element> next() override {
        std::vector<int64_t> rows;
        next_rows(rows);
        if (rows.empty())
          return std::nullopt;
        std::map<std::string, data::Element> features;
        for (const auto &[key, t] : d_.arrays_->features)
          features.emplace(key, data::Element(gatherRows(t, rows)));
        data::Element f = data::Element::dict(std::move(features));
        if (!d_.arrays_->labels)
          return f;
        return data::Element::tuple(
            {std::move(f),
             data::Element(gatherRows(*d_.arrays_->labels, rows))});
      }
      void save(data::IteratorState &s) override {
        s.put_int(key("epoch"), epoch_);
        s.put_int(key("position"), position_);
      }
      void restore(const data::IteratorState &s) override {
        int64_t position = s.get_int(key("position"));
        if (position < 0 || position > d_.examples_)
          throw data::DataError("input pipeline state: row " +
                                std::to_string(position) + " of " +
                                std::to_string(d_.examples_));
        startEpoch(s.get_int(key("epoch")));
        position_ = position;
      }

    private:
      void startEpoch(int64_t epoch) {
        epoch_ = epoch;
        position_ = 0;
        int64_t n = d_.examples_;
        order_.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
          order_[i] = i;
        if (d_.options_.shuffle) {
          uint64_t state = d_.options_.seed * 0x9E3779B97F4A7C15ull +
                           static_cast<uint64_t>(epoch);
          for (int64_t i = n - 1; i > 0; --i) {
            int64_t j = static_cast<int64_t>(splitmix(state) %
                                             static_cast<uint64_t>(i + 1));
            std::swap(order_[i], order_[j]);
          }
        }
      }
      const ArrayBatchesDataset &d_;
      int64_t epoch_ = 0;
      int64_t position_ = 0;
      std::vector<int64_t> order_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::shared_ptr<const Batch> arrays_;
  Dataset::ArrayOptions options_;
  int64_t examples_;
};

} // namespace

Dataset Dataset::fromSharedArrays(std::shared_ptr<const Batch> all,
                                  const ArrayOptions &options) {
  ElementSpec spec = element_spec_of(*all);
  Dataset out(data::Dataset::from_impl(
      std::make_shared<ArrayBatchesDataset>(all, options)));
  out.state_->spec = std::move(spec);
  out.state_->arrays = std::move(all);
  out.state_->findArrayRows();
  return out;
}

InputFn numpy_input_fn(Features x, std::optional<TensorValue> y,
                       const Dataset::ArrayOptions &options) {
  // Checked now, where the mistake is made.
  if (x.empty())
    throw std::invalid_argument("numpy_input_fn: no features");
  checkArrayOptions(options);
  auto data =
      std::make_shared<const Batch>(Batch{std::move(x), std::move(y), {}});
  data->size();
  return [data, options]() { return Dataset::fromSharedArrays(data, options); };
}

} // namespace estimator
} // namespace estc
