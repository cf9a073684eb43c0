//===- Dataset.cpp - Sources, sequential transformations, iterators -----===//
//
// Each stage is a DatasetImpl (its definition) and an IteratorImpl (one
// iteration's state). Stage iterators own their inputs' iterators, whose
// prefixes extend theirs ("root/shuffle/map"), so a saved state is a flat
// map that restores the chain stage by stage. The threaded stages (map
// with workers, prefetch, interleave) are in DatasetAsync.cpp; batching in
// Batching.cpp.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Dataset.h"
#include "lib/Data/DatasetInternal.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <glob.h>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

namespace estc {
namespace data {

using detail::DatasetImpl;
using detail::IteratorImpl;

int64_t autotune_threads() {
  if (const char *env = std::getenv("ESTC_DATA_THREADS")) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0)
      return v;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

detail::IteratorImpl::~IteratorImpl() = default;
detail::DatasetImpl::~DatasetImpl() = default;

//===----------------------------------------------------------------------===//
// IteratorState
//===----------------------------------------------------------------------===//

namespace {
constexpr char kStateMagic[] = "estc-iterator-state-1\n";

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t getU64(std::string_view s, size_t pos) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(s[pos + i])) << (8 * i);
  return v;
}
} // namespace

void IteratorState::put_int(const std::string &key, int64_t value) {
  std::string b;
  putU64(b, static_cast<uint64_t>(value));
  entries_[key] = std::move(b);
}

void IteratorState::put_bytes(const std::string &key, std::string bytes) {
  entries_[key] = std::move(bytes);
}

void IteratorState::put_element(const std::string &key,
                                const Element &element) {
  std::string b;
  encode_element(element, b);
  entries_[key] = std::move(b);
}

const std::string &IteratorState::get_bytes(const std::string &key) const {
  auto it = entries_.find(key);
  if (it == entries_.end())
    throw DataError("input pipeline state: no entry '" + key + "'");
  return it->second;
}

int64_t IteratorState::get_int(const std::string &key) const {
  const std::string &b = get_bytes(key);
  if (b.size() != 8)
    throw DataError("input pipeline state: entry '" + key +
                    "' is not a number");
  return static_cast<int64_t>(getU64(b, 0));
}

Element IteratorState::get_element(const std::string &key) const {
  const std::string &b = get_bytes(key);
  size_t pos = 0;
  Element e = decode_element(b, pos, "input pipeline state '" + key + "'");
  if (pos != b.size())
    throw DataError("input pipeline state: entry '" + key +
                    "' has trailing bytes");
  return e;
}

std::vector<Element> IteratorState::get_tuple(const std::string &key) const {
  Element e = get_element(key);
  if (!e.is_tuple())
    throw DataError("input pipeline state: entry '" + key + "' is not a tuple");
  return e.items();
}

// magic, then per entry: u64 key size, key, u64 value size, value; then the
// CRC-32C of everything before it (u64).
std::string IteratorState::serialize() const {
  std::string out = kStateMagic;
  for (const auto &[k, v] : entries_) {
    putU64(out, k.size());
    out += k;
    putU64(out, v.size());
    out += v;
  }
  putU64(out, crc32c::value(out));
  return out;
}

IteratorState IteratorState::parse(std::string_view bytes) {
  auto fail = [](const std::string &why) -> IteratorState {
    throw DataError("input pipeline state: " + why);
  };
  size_t magic = sizeof kStateMagic - 1;
  if (bytes.size() < magic + 8 || bytes.substr(0, magic) != kStateMagic)
    return fail("not an estc iterator state");
  size_t end = bytes.size() - 8;
  if (getU64(bytes, end) != crc32c::value(bytes.substr(0, end)))
    return fail("CRC mismatch (corrupt)");
  IteratorState state;
  size_t pos = magic;
  auto field = [&](std::string &out) {
    if (end - pos < 8)
      fail("truncated");
    uint64_t n = getU64(bytes, pos);
    pos += 8;
    if (n > end - pos)
      fail("truncated");
    out.assign(bytes.substr(pos, n));
    pos += n;
  };
  while (pos < end) {
    std::string k, v;
    field(k);
    field(v);
    state.entries_[k] = std::move(v);
  }
  return state;
}

//===----------------------------------------------------------------------===//
// Iterator, Dataset plumbing
//===----------------------------------------------------------------------===//

namespace {
constexpr char kRootPrefix[] = "root";
}

Iterator::Iterator(const Dataset &dataset)
    : dataset_(dataset.impl()),
      impl_(dataset.impl()->make_iterator(kRootPrefix)),
      description_(dataset.describe()) {}
Iterator::Iterator(Iterator &&) noexcept = default;
Iterator &Iterator::operator=(Iterator &&o) noexcept {
  // The old stage iterators (and their threads) end before the definition
  // they refer to may.
  impl_.reset();
  impl_ = std::move(o.impl_);
  dataset_ = std::move(o.dataset_);
  description_ = std::move(o.description_);
  return *this;
}
Iterator::~Iterator() = default;

std::optional<Element> Iterator::next() { return impl_->next(); }

IteratorState Iterator::save() {
  IteratorState state;
  state.put_bytes("pipeline", description_);
  impl_->save(state);
  return state;
}

void Iterator::restore(const IteratorState &state) {
  const std::string &saved = state.get_bytes("pipeline");
  if (saved != description_) {
    // The saved description is data from a file: one line, bounded.
    std::string shown = detail::printable(saved.substr(0, 300));
    throw DataError("input pipeline state: saved from another pipeline (" +
                    shown + (saved.size() > 300 ? "..." : "") + "), not " +
                    description_);
  }
  try {
    impl_->restore(state);
  } catch (const DataError &) {
    throw;
  } catch (const std::exception &e) {
    // A stage that finds the state inconsistent (a wrong structure, an
    // index out of range): the state is bad data.
    throw DataError(std::string("input pipeline state: ") + e.what());
  }
}

Dataset Dataset::from_impl(std::shared_ptr<const DatasetImpl> impl) {
  if (!impl)
    throw std::invalid_argument("Dataset::from_impl: null stage");
  return Dataset(std::move(impl));
}

Iterator Dataset::make_iterator() const { return Iterator(*this); }

std::optional<ElementSpec> Dataset::element_spec() const {
  Iterator it(*this);
  std::optional<Element> e = it.next();
  if (!e)
    return std::nullopt;
  return spec_of(*e);
}

int64_t Dataset::cardinality() const { return impl_->cardinality(); }
std::string Dataset::describe() const { return impl_->describe(); }

Dataset::InputIterator::InputIterator(const Dataset &dataset)
    : it_(std::make_shared<Iterator>(dataset)) {
  current_ = it_->next();
}

Dataset::InputIterator &Dataset::InputIterator::operator++() {
  current_ = it_->next();
  return *this;
}

Dataset::InputIterator Dataset::begin() const { return InputIterator(*this); }
Dataset::InputIterator Dataset::end() const { return InputIterator(); }

//===----------------------------------------------------------------------===//
// Random numbers: a counter-based stream (splitmix64 of seed and position),
// so a saved position is one number and every platform draws the same.
//===----------------------------------------------------------------------===//

uint64_t detail::mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t detail::RandomStream::next_below(uint64_t n) {
  uint64_t r = mix64(seed_ ^ mix64(position_++));
  return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * n) >> 64);
}

uint64_t detail::resolve_seed(std::optional<uint64_t> seed) {
  if (seed)
    return *seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string detail::describe_seed(std::optional<uint64_t> seed) {
  return seed ? std::to_string(*seed) : "random";
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

namespace {

class RangeDataset : public DatasetImpl {
public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : start_(start), stop_(stop), step_(step) {}
  std::string describe() const override {
    return "Range(" + std::to_string(start_) + "," + std::to_string(stop_) +
           "," + std::to_string(step_) + ")";
  }
  int64_t cardinality() const override {
    if (step_ > 0)
      return stop_ > start_ ? (stop_ - start_ + step_ - 1) / step_ : 0;
    return start_ > stop_ ? (start_ - stop_ - step_ - 1) / -step_ : 0;
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const RangeDataset &d)
          : IteratorImpl(p), d_(d), next_(d.start_) {}
      std::optional<Element> next() override {
        if (d_.step_ > 0 ? next_ >= d_.stop_ : next_ <= d_.stop_)
          return std::nullopt;
        int64_t v = next_;
        next_ += d_.step_;
        return Element(TensorValue::of<int64_t>({}, {v}));
      }
      void save(IteratorState &s) override { s.put_int(key("next"), next_); }
      void restore(const IteratorState &s) override {
        next_ = s.get_int(key("next"));
      }

    private:
      const RangeDataset &d_;
      int64_t next_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  int64_t start_, stop_, step_;
};

/// A fixed list of elements (from_tensor_slices, from_tensors, list_files).
class ElementsDataset : public DatasetImpl {
public:
  ElementsDataset(std::vector<Element> elements, std::string description)
      : elements_(std::move(elements)), description_(std::move(description)) {}
  std::string describe() const override { return description_; }
  int64_t cardinality() const override {
    return static_cast<int64_t>(elements_.size());
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const ElementsDataset &d)
          : IteratorImpl(p), d_(d) {}
      std::optional<Element> next() override {
        if (next_ >= d_.elements_.size())
          return std::nullopt;
        return d_.elements_[next_++];
      }
      void save(IteratorState &s) override {
        s.put_int(key("next"), static_cast<int64_t>(next_));
      }
      void restore(const IteratorState &s) override {
        int64_t n = s.get_int(key("next"));
        if (n < 0 || n > static_cast<int64_t>(d_.elements_.size()))
          throw DataError("input pipeline state: position " +
                          std::to_string(n) + " is past the " +
                          std::to_string(d_.elements_.size()) + " elements");
        next_ = static_cast<size_t>(n);
      }

    private:
      const ElementsDataset &d_;
      size_t next_ = 0;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::vector<Element> elements_;
  std::string description_;
};

class GeneratorDataset : public DatasetImpl {
public:
  GeneratorDataset(std::function<Dataset::Generator()> make, std::string name)
      : make_(std::move(make)), name_(std::move(name)) {}
  std::string describe() const override { return "Generator(" + name_ + ")"; }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const GeneratorDataset &d)
          : IteratorImpl(p), d_(d) {}
      std::optional<Element> next() override {
        if (!gen_)
          gen_ = d_.make_();
        return gen_();
      }
      void save(IteratorState &) override {
        throw NotResumableError("from_generator ('" + d_.name_ +
                                "') cannot save its position");
      }
      void restore(const IteratorState &) override {
        throw NotResumableError("from_generator ('" + d_.name_ +
                                "') cannot restore a position");
      }

    private:
      const GeneratorDataset &d_;
      Dataset::Generator gen_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::function<Dataset::Generator()> make_;
  std::string name_;
};

} // namespace

Dataset Dataset::range(int64_t stop) { return range(0, stop, 1); }

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0)
    throw std::invalid_argument("Dataset::range: step must not be 0");
  return Dataset(std::make_shared<RangeDataset>(start, stop, step));
}

Dataset Dataset::from_tensor_slices(Element element) {
  std::vector<Element> slices = unstack_element(element);
  return Dataset(std::make_shared<ElementsDataset>(
      std::move(slices), "TensorSlices(" + to_string(spec_of(element)) + ")"));
}

Dataset Dataset::from_tensors(Element element) {
  std::string d = "Tensors(" + to_string(spec_of(element)) + ")";
  return Dataset(std::make_shared<ElementsDataset>(
      std::vector<Element>{std::move(element)}, std::move(d)));
}

Dataset Dataset::from_generator(std::function<Generator()> make,
                                std::string name) {
  if (!make)
    throw std::invalid_argument("Dataset::from_generator: empty function");
  return Dataset(
      std::make_shared<GeneratorDataset>(std::move(make), std::move(name)));
}

Dataset Dataset::list_files(std::vector<std::string> patterns, bool shuffle,
                            std::optional<uint64_t> seed) {
  std::vector<std::string> files;
  for (const std::string &pattern : patterns) {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH)
      throw DataError("list_files: cannot read the directories of '" + pattern +
                      "'");
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) {
    std::string all;
    for (const std::string &p : patterns)
      all += (all.empty() ? "'" : ", '") + p + "'";
    throw DataError("list_files: no files match " + all);
  }
  std::string description = "Files(";
  for (const std::string &f : files)
    description += f + ",";
  std::vector<Element> elements;
  for (std::string &f : files)
    elements.emplace_back(TensorValue::of_strings({}, {std::move(f)}));
  size_t n = elements.size();
  Dataset sorted(std::make_shared<ElementsDataset>(std::move(elements),
                                                   description + ")"));
  // As TF: a shuffle stage over the sorted names (a new order each epoch
  // under repeat; its seed is saved with the position).
  if (shuffle)
    return sorted.shuffle(static_cast<int64_t>(n), seed);
  return sorted;
}

//===----------------------------------------------------------------------===//
// Sequential transformations
//===----------------------------------------------------------------------===//

namespace {

/// A stage with one input.
class UnaryDataset : public DatasetImpl {
public:
  UnaryDataset(std::shared_ptr<const DatasetImpl> input, std::string name)
      : input_(std::move(input)), name_(std::move(name)) {}
  std::string describe() const override {
    return input_->describe() + "." + name_ + "(" + params() + ")";
  }

protected:
  virtual std::string params() const { return ""; }
  std::unique_ptr<IteratorImpl> inputIterator(const std::string &prefix) const {
    return input_->make_iterator(prefix + "/" + name_);
  }
  std::shared_ptr<const DatasetImpl> input_;
  std::string name_;
};

class MapDataset : public UnaryDataset {
public:
  MapDataset(std::shared_ptr<const DatasetImpl> in, Dataset::MapFn fn)
      : UnaryDataset(std::move(in), "map"), fn_(std::move(fn)) {}
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const MapDataset &d)
          : IteratorImpl(p), d_(d), in_(d.inputIterator(p)) {}
      std::optional<Element> next() override {
        std::optional<Element> e = in_->next();
        if (!e)
          return std::nullopt;
        return d_.fn_(std::move(*e));
      }
      void save(IteratorState &s) override { in_->save(s); }
      void restore(const IteratorState &s) override { in_->restore(s); }

    private:
      const MapDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  Dataset::MapFn fn_;
};

class FilterDataset : public UnaryDataset {
public:
  FilterDataset(std::shared_ptr<const DatasetImpl> in, Dataset::Predicate p)
      : UnaryDataset(std::move(in), "filter"), pred_(std::move(p)) {}
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const FilterDataset &d)
          : IteratorImpl(p), d_(d), in_(d.inputIterator(p)) {}
      std::optional<Element> next() override {
        while (std::optional<Element> e = in_->next())
          if (d_.pred_(*e))
            return e;
        return std::nullopt;
      }
      void save(IteratorState &s) override { in_->save(s); }
      void restore(const IteratorState &s) override { in_->restore(s); }

    private:
      const FilterDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  Dataset::Predicate pred_;
};

class ShuffleDataset : public UnaryDataset {
public:
  ShuffleDataset(std::shared_ptr<const DatasetImpl> in, int64_t bufferSize,
                 std::optional<uint64_t> seed, bool reshuffle)
      : UnaryDataset(std::move(in), "shuffle"), bufferSize_(bufferSize),
        seedSpec_(seed), seed_(detail::resolve_seed(seed)),
        reshuffle_(reshuffle) {}
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string params() const override {
    return std::to_string(bufferSize_) +
           ",seed=" + detail::describe_seed(seedSpec_) +
           (reshuffle_ ? ",reshuffle" : "");
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    // Each iteration of this dataset draws from its own stream (TF's seed
    // generator): iteration k uses mix(seed, k) when reshuffling.
    int64_t iteration = reshuffle_ ? iterations_.fetch_add(1) : 0;
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const ShuffleDataset &d, int64_t iteration)
          : IteratorImpl(p), d_(d), in_(d.inputIterator(p)),
            iteration_(iteration),
            rng_(detail::mix64(
                d.seed_.load() ^
                detail::mix64(static_cast<uint64_t>(iteration)))) {}
      std::optional<Element> next() override {
        while (!inputDone_ &&
               static_cast<int64_t>(buffer_.size()) < d_.bufferSize_) {
          std::optional<Element> e = in_->next();
          if (!e) {
            inputDone_ = true;
            break;
          }
          buffer_.push_back(std::move(*e));
        }
        if (buffer_.empty())
          return std::nullopt;
        size_t i = rng_.next_below(buffer_.size());
        Element out = std::move(buffer_[i]);
        buffer_[i] = std::move(buffer_.back());
        buffer_.pop_back();
        return out;
      }
      void save(IteratorState &s) override {
        // The seed too: without one it was drawn at random in this process.
        s.put_int(key("seed"), static_cast<int64_t>(d_.seed_.load()));
        s.put_int(key("iteration"), iteration_);
        s.put_int(key("rng"), static_cast<int64_t>(rng_.position()));
        s.put_int(key("input_done"), inputDone_);
        s.put_element(key("buffer"), Element::tuple(buffer_));
        in_->save(s);
      }
      void restore(const IteratorState &s) override {
        iteration_ = s.get_int(key("iteration"));
        d_.seed_.store(static_cast<uint64_t>(s.get_int(key("seed"))));
        rng_ = detail::RandomStream(
            detail::mix64(d_.seed_.load() ^
                          detail::mix64(static_cast<uint64_t>(iteration_))),
            static_cast<uint64_t>(s.get_int(key("rng"))));
        inputDone_ = s.get_int(key("input_done")) != 0;
        buffer_ = s.get_tuple(key("buffer"));
        // Later iterations of this dataset continue the saved one's count
        // (whatever iterators were made to get here).
        if (d_.reshuffle_)
          d_.iterations_.store(iteration_ + 1);
        in_->restore(s);
      }

    private:
      const ShuffleDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
      int64_t iteration_;
      detail::RandomStream rng_;
      std::vector<Element> buffer_;
      bool inputDone_ = false;
    };
    return std::make_unique<It>(prefix, *this, iteration);
  }

private:
  int64_t bufferSize_;
  std::optional<uint64_t> seedSpec_;
  // A restored iteration brings its seed (drawn at random when none was
  // given) to the later iterations of this dataset.
  mutable std::atomic<uint64_t> seed_;
  bool reshuffle_;
  mutable std::atomic<int64_t> iterations_{0};
};

class RepeatDataset : public UnaryDataset {
public:
  RepeatDataset(std::shared_ptr<const DatasetImpl> in,
                std::optional<int64_t> count)
      : UnaryDataset(std::move(in), "repeat"), count_(count) {}
  std::string params() const override {
    return count_ ? std::to_string(*count_) : "";
  }
  int64_t cardinality() const override {
    int64_t c = input_->cardinality();
    if (c == 0 || (count_ && *count_ == 0))
      return 0;
    if (!count_)
      return c == UNKNOWN_CARDINALITY ? c : INFINITE_CARDINALITY;
    return c < 0 ? c : c * *count_;
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const RepeatDataset &d)
          : IteratorImpl(p), d_(d) {
        // The first pass's iterator exists from the start (as TF's), so
        // that a state saved before the first element holds its seeds.
        if (!d_.count_ || *d_.count_ > 0)
          in_ = d_.inputIterator(prefix());
      }
      std::optional<Element> next() override {
        while (!d_.count_ || epoch_ < *d_.count_) {
          if (!in_)
            in_ = d_.inputIterator(prefix());
          if (std::optional<Element> e = in_->next()) {
            sawElement_ = true;
            return e;
          }
          in_.reset();
          ++epoch_;
          // An endless repeat of an empty pass would spin forever: it ends
          // (TF ends only when the first pass is empty, and spins on a
          // later one). A finite count goes on, as TF's.
          if (!d_.count_ && !sawElement_)
            return std::nullopt;
          sawElement_ = false;
        }
        return std::nullopt;
      }
      void save(IteratorState &s) override {
        s.put_int(key("epoch"), epoch_);
        s.put_int(key("saw_element"), sawElement_);
        s.put_int(key("open"), in_ != nullptr);
        if (in_)
          in_->save(s);
      }
      void restore(const IteratorState &s) override {
        epoch_ = s.get_int(key("epoch"));
        sawElement_ = s.get_int(key("saw_element")) != 0;
        in_.reset();
        if (s.get_int(key("open"))) {
          in_ = d_.inputIterator(prefix());
          in_->restore(s);
        }
      }

    private:
      const RepeatDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
      int64_t epoch_ = 0;
      bool sawElement_ = false;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::optional<int64_t> count_;
};

/// take, skip and shard: positions counted in the input.
class CountingDataset : public UnaryDataset {
public:
  enum class Kind { Take, Skip, Shard };
  CountingDataset(std::shared_ptr<const DatasetImpl> in, Kind kind, int64_t a,
                  int64_t b)
      : UnaryDataset(std::move(in), kind == Kind::Take   ? "take"
                                    : kind == Kind::Skip ? "skip"
                                                         : "shard"),
        kind_(kind), a_(a), b_(b) {}
  std::string params() const override {
    return std::to_string(a_) +
           (kind_ == Kind::Shard ? "," + std::to_string(b_) : "");
  }
  int64_t cardinality() const override {
    int64_t c = input_->cardinality();
    switch (kind_) {
    case Kind::Take:
      if (a_ < 0)
        return c;
      return c == INFINITE_CARDINALITY ? a_ : c < 0 ? c : std::min(c, a_);
    case Kind::Skip:
      if (c < 0)
        return c;
      return a_ < 0 ? 0 : std::max<int64_t>(0, c - a_);
    case Kind::Shard:
      return c < 0 ? c : c / a_ + (b_ < c % a_ ? 1 : 0);
    }
    return c;
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const CountingDataset &d)
          : IteratorImpl(p), d_(d), in_(d.inputIterator(p)) {}
      std::optional<Element> next() override {
        switch (d_.kind_) {
        case Kind::Take: {
          if (d_.a_ >= 0 && seen_ >= d_.a_)
            return std::nullopt;
          std::optional<Element> e = in_->next(); // an error counts not
          if (e)
            ++seen_;
          return e;
        }
        case Kind::Skip:
          while (d_.a_ < 0 || seen_ < d_.a_) {
            ++seen_;
            if (!in_->next())
              return std::nullopt;
          }
          return in_->next();
        case Kind::Shard:
          while (std::optional<Element> e = in_->next())
            if (seen_++ % d_.a_ == d_.b_)
              return e;
          return std::nullopt;
        }
        return std::nullopt;
      }
      void save(IteratorState &s) override {
        s.put_int(key("seen"), seen_);
        in_->save(s);
      }
      void restore(const IteratorState &s) override {
        seen_ = s.get_int(key("seen"));
        in_->restore(s);
      }

    private:
      const CountingDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
      int64_t seen_ = 0;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  Kind kind_;
  int64_t a_, b_;
};

class EnumerateDataset : public UnaryDataset {
public:
  EnumerateDataset(std::shared_ptr<const DatasetImpl> in, int64_t start)
      : UnaryDataset(std::move(in), "enumerate"), start_(start) {}
  std::string params() const override { return std::to_string(start_); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const EnumerateDataset &d)
          : IteratorImpl(p), in_(d.inputIterator(p)), next_(d.start_) {}
      std::optional<Element> next() override {
        std::optional<Element> e = in_->next();
        if (!e)
          return std::nullopt;
        return Element::tuple(
            {Element(TensorValue::of<int64_t>({}, {next_++})), std::move(*e)});
      }
      void save(IteratorState &s) override {
        s.put_int(key("next"), next_);
        in_->save(s);
      }
      void restore(const IteratorState &s) override {
        next_ = s.get_int(key("next"));
        in_->restore(s);
      }

    private:
      std::unique_ptr<IteratorImpl> in_;
      int64_t next_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  int64_t start_;
};

class IgnoreErrorsDataset : public UnaryDataset {
public:
  IgnoreErrorsDataset(std::shared_ptr<const DatasetImpl> in, int64_t logFirst)
      : UnaryDataset(std::move(in), "ignore_errors"), logFirst_(logFirst) {}
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const IgnoreErrorsDataset &d)
          : IteratorImpl(p), d_(d), in_(d.inputIterator(p)) {}
      std::optional<Element> next() override {
        for (;;) {
          try {
            return in_->next();
          } catch (const DataError &e) {
            ++skipped_;
            if (skipped_ <= d_.logFirst_ || skipped_ % 1000 == 0)
              std::cerr << "ignore_errors: skipped a bad element (" << skipped_
                        << " so far): " << e.what() << "\n";
          }
        }
      }
      void save(IteratorState &s) override {
        s.put_int(key("skipped"), skipped_);
        in_->save(s);
      }
      void restore(const IteratorState &s) override {
        skipped_ = s.get_int(key("skipped"));
        in_->restore(s);
      }

    private:
      const IgnoreErrorsDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
      int64_t skipped_ = 0;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  int64_t logFirst_;
};

/// zip (all inputs in step) and concatenate (one after the other).
class MultiDataset : public DatasetImpl {
public:
  MultiDataset(std::vector<std::shared_ptr<const DatasetImpl>> inputs, bool zip)
      : inputs_(std::move(inputs)), zip_(zip) {}
  std::string describe() const override {
    std::string s = zip_ ? "Zip(" : "Concatenate(";
    for (size_t i = 0; i < inputs_.size(); ++i)
      s += (i ? "," : "") + inputs_[i]->describe();
    return s + ")";
  }
  int64_t cardinality() const override {
    int64_t out = zip_ ? INFINITE_CARDINALITY : 0;
    bool unknown = false, infinite = false;
    for (const auto &in : inputs_) {
      int64_t c = in->cardinality();
      unknown |= c == UNKNOWN_CARDINALITY;
      infinite |= c == INFINITE_CARDINALITY;
      if (c >= 0)
        out = zip_ ? (out < 0 ? c : std::min(out, c)) : out + c;
    }
    if (zip_) // TF: unknown when any is, else the shortest
      return unknown ? UNKNOWN_CARDINALITY : out;
    return infinite  ? INFINITE_CARDINALITY
           : unknown ? UNKNOWN_CARDINALITY
                     : out;
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const MultiDataset &d) : IteratorImpl(p), d_(d) {
        for (size_t i = 0; i < d.inputs_.size(); ++i)
          in_.push_back(d.inputs_[i]->make_iterator(
              p + (d.zip_ ? "/zip[" : "/concatenate[") + std::to_string(i) +
              "]"));
      }
      std::optional<Element> next() override {
        if (d_.zip_) {
          if (done_)
            return std::nullopt;
          std::vector<Element> items;
          for (auto &in : in_) {
            std::optional<Element> e = in->next();
            if (!e) {
              done_ = true;
              return std::nullopt;
            }
            items.push_back(std::move(*e));
          }
          return Element::tuple(std::move(items));
        }
        for (; current_ < in_.size(); ++current_)
          if (std::optional<Element> e = in_[current_]->next())
            return e;
        return std::nullopt;
      }
      void save(IteratorState &s) override {
        s.put_int(key("current"), static_cast<int64_t>(current_));
        s.put_int(key("done"), done_);
        for (auto &in : in_)
          in->save(s);
      }
      void restore(const IteratorState &s) override {
        current_ = static_cast<size_t>(s.get_int(key("current")));
        done_ = s.get_int(key("done")) != 0;
        for (auto &in : in_)
          in->restore(s);
      }

    private:
      const MultiDataset &d_;
      std::vector<std::unique_ptr<IteratorImpl>> in_;
      size_t current_ = 0;
      bool done_ = false;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::vector<std::shared_ptr<const DatasetImpl>> inputs_;
  bool zip_;
};

/// cache(): the first complete iteration's elements, replayed after.
class CacheDataset : public UnaryDataset {
public:
  CacheDataset(std::shared_ptr<const DatasetImpl> in, std::string filename)
      : UnaryDataset(std::move(in), "cache"), filename_(std::move(filename)) {}
  std::string params() const override { return filename_; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override;

private:
  friend class CacheIterator;
  std::string filename_;
  // The in-memory cache, complete once the first iteration ended.
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<Element>> memory_;
};

class CacheIterator : public IteratorImpl {
public:
  CacheIterator(const std::string &p, const CacheDataset &d)
      : IteratorImpl(p), d_(d) {}

  std::optional<Element> next() override {
    if (mode_ == Mode::Unstarted)
      start();
    if (mode_ == Mode::Replay) {
      if (pos_ >= replay_->size())
        return std::nullopt;
      return (*replay_)[pos_++];
    }
    std::optional<Element> e = in_->next();
    if (!e) {
      finish(); // now replaying, at the end
      return std::nullopt;
    }
    ++pos_;
    recorded_.push_back(*e);
    return e;
  }

  void save(IteratorState &s) override {
    if (mode_ == Mode::Unstarted)
      start();
    s.put_int(key("replay"), mode_ == Mode::Replay);
    s.put_int(key("pos"), static_cast<int64_t>(pos_));
    if (mode_ == Mode::Record) {
      s.put_element(key("recorded"), Element::tuple(recorded_));
      in_->save(s);
    } else if (d_.filename_.empty()) {
      // The in-memory cache goes with the state (as TF's): a new process
      // could not rebuild the same one from a reshuffling input.
      s.put_element(key("cache"), Element::tuple(*replay_));
    }
  }

  void restore(const IteratorState &s) override {
    pos_ = static_cast<size_t>(s.get_int(key("pos")));
    if (s.get_int(key("replay"))) {
      if (d_.filename_.empty()) {
        auto cache = std::make_shared<const std::vector<Element>>(
            s.get_tuple(key("cache")));
        std::lock_guard<std::mutex> lock(d_.mu_);
        d_.memory_ = cache;
      }
      start();
      if (mode_ != Mode::Replay)
        throw DataError("input pipeline state: the cache file " + d_.filename_ +
                        " is gone; cannot resume in it");
      if (pos_ > replay_->size())
        throw DataError("input pipeline state: cache position " +
                        std::to_string(pos_) + " is past its " +
                        std::to_string(replay_->size()) + " elements");
      return;
    }
    mode_ = Mode::Record;
    recorded_ = s.get_tuple(key("recorded"));
    in_ = d_.inputIterator(prefix());
    in_->restore(s);
  }

private:
  enum class Mode { Unstarted, Record, Replay };

  void start() {
    {
      std::lock_guard<std::mutex> lock(d_.mu_);
      replay_ = d_.memory_;
    }
    if (!replay_ && !d_.filename_.empty())
      replay_ = detail::read_cache_file(d_.filename_);
    if (replay_) {
      mode_ = Mode::Replay;
      return;
    }
    mode_ = Mode::Record;
    in_ = d_.inputIterator(prefix());
  }

  /// The first pass is complete: keep it (and write the file), and stay at
  /// its end in replay mode.
  void finish() {
    auto all =
        std::make_shared<const std::vector<Element>>(std::move(recorded_));
    recorded_.clear();
    in_.reset();
    if (!d_.filename_.empty())
      detail::write_cache_file(d_.filename_, *all);
    {
      std::lock_guard<std::mutex> lock(d_.mu_);
      if (!d_.memory_)
        d_.memory_ = all;
    }
    replay_ = all;
    pos_ = all->size();
    mode_ = Mode::Replay;
  }

  const CacheDataset &d_;
  Mode mode_ = Mode::Unstarted;
  std::unique_ptr<IteratorImpl> in_;
  std::vector<Element> recorded_;
  std::shared_ptr<const std::vector<Element>> replay_;
  size_t pos_ = 0;
};

std::unique_ptr<IteratorImpl>
CacheDataset::make_iterator(const std::string &prefix) const {
  return std::make_unique<CacheIterator>(prefix, *this);
}

} // namespace

//===----------------------------------------------------------------------===//
// Dataset's transformation methods
//===----------------------------------------------------------------------===//

namespace {
void requirePositive(int64_t v, const char *what) {
  if (v <= 0 && v != AUTOTUNE)
    throw std::invalid_argument(std::string(what) +
                                " must be positive or AUTOTUNE, not " +
                                std::to_string(v));
}
} // namespace

Dataset Dataset::map(MapFn fn, int64_t num_parallel_calls,
                     bool deterministic) const {
  if (!fn)
    throw std::invalid_argument("Dataset::map: empty function");
  if (num_parallel_calls == 0)
    return Dataset(std::make_shared<MapDataset>(impl_, std::move(fn)));
  requirePositive(num_parallel_calls, "Dataset::map: num_parallel_calls");
  return Dataset(detail::make_parallel_map(impl_, std::move(fn),
                                           num_parallel_calls, deterministic));
}

Dataset Dataset::filter(Predicate predicate) const {
  if (!predicate)
    throw std::invalid_argument("Dataset::filter: empty predicate");
  return Dataset(std::make_shared<FilterDataset>(impl_, std::move(predicate)));
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  if (buffer_size <= 0)
    throw std::invalid_argument("Dataset::shuffle: buffer_size must be "
                                "positive, not " +
                                std::to_string(buffer_size));
  return Dataset(std::make_shared<ShuffleDataset>(impl_, buffer_size, seed,
                                                  reshuffle_each_iteration));
}

Dataset Dataset::repeat(std::optional<int64_t> count) const {
  if (count && *count < 0)
    count.reset(); // TF: repeat(-1) repeats forever
  return Dataset(std::make_shared<RepeatDataset>(impl_, count));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  if (num_shards <= 0 || index < 0 || index >= num_shards)
    throw std::invalid_argument("Dataset::shard: index " +
                                std::to_string(index) + " of " +
                                std::to_string(num_shards) + " shards");
  return Dataset(std::make_shared<CountingDataset>(
      impl_, CountingDataset::Kind::Shard, num_shards, index));
}

Dataset Dataset::take(int64_t count) const {
  return Dataset(std::make_shared<CountingDataset>(
      impl_, CountingDataset::Kind::Take, count, 0));
}

Dataset Dataset::skip(int64_t count) const {
  return Dataset(std::make_shared<CountingDataset>(
      impl_, CountingDataset::Kind::Skip, count, 0));
}

Dataset Dataset::concatenate(const Dataset &other) const {
  return Dataset(std::make_shared<MultiDataset>(
      std::vector<std::shared_ptr<const DatasetImpl>>{impl_, other.impl_},
      false));
}

Dataset Dataset::zip(std::vector<Dataset> datasets) {
  if (datasets.empty())
    throw std::invalid_argument("Dataset::zip: no datasets");
  std::vector<std::shared_ptr<const DatasetImpl>> inputs;
  for (const Dataset &d : datasets)
    inputs.push_back(d.impl_);
  return Dataset(std::make_shared<MultiDataset>(std::move(inputs), true));
}

Dataset Dataset::enumerate(int64_t start) const {
  return Dataset(std::make_shared<EnumerateDataset>(impl_, start));
}

Dataset Dataset::ignore_errors(int64_t log_first) const {
  return Dataset(std::make_shared<IgnoreErrorsDataset>(impl_, log_first));
}

Dataset Dataset::cache(std::string filename) const {
  return Dataset(std::make_shared<CacheDataset>(impl_, std::move(filename)));
}

Dataset Dataset::prefetch(int64_t buffer_size) const {
  requirePositive(buffer_size, "Dataset::prefetch: buffer_size");
  return Dataset(detail::make_prefetch(impl_, buffer_size));
}

Dataset Dataset::interleave(DatasetFn fn, int64_t cycle_length,
                            int64_t block_length, int64_t num_parallel_calls,
                            bool deterministic) const {
  if (!fn)
    throw std::invalid_argument("Dataset::interleave: empty function");
  requirePositive(cycle_length, "Dataset::interleave: cycle_length");
  if (block_length <= 0)
    throw std::invalid_argument("Dataset::interleave: block_length must be "
                                "positive, not " +
                                std::to_string(block_length));
  if (num_parallel_calls != 0)
    requirePositive(num_parallel_calls,
                    "Dataset::interleave: num_parallel_calls");
  return Dataset(detail::make_interleave(
      impl_, std::move(fn),
      cycle_length == AUTOTUNE ? autotune_threads() : cycle_length,
      block_length, num_parallel_calls, deterministic));
}

Dataset Dataset::flat_map(DatasetFn fn) const {
  return interleave(std::move(fn), 1, 1);
}

} // namespace data
} // namespace estc

//===----------------------------------------------------------------------===//
// cache(filename)'s file: a magic line, then per element a u64 length, the
// element's encoding and its u64 CRC-32C; then an end record (length
// 2^64-1) with the element count, so a file cut short is never replayed.
//===----------------------------------------------------------------------===//

namespace estc {
namespace data {
namespace detail {

namespace {
constexpr char kCacheMagic[] = "estc-dataset-cache-1\n";
constexpr uint64_t kCacheEnd = ~uint64_t(0);
} // namespace

std::shared_ptr<const std::vector<Element>>
read_cache_file(const std::string &path) {
  if (!fileio::exists(path))
    return nullptr;
  std::string bytes = fileio::readFile(path);
  auto fail = [&](const std::string &why) {
    throw DataError(path + ": not a complete dataset cache file: " + why);
  };
  size_t magic = sizeof kCacheMagic - 1;
  if (bytes.compare(0, magic, kCacheMagic) != 0)
    fail("bad magic");
  auto elements = std::make_shared<std::vector<Element>>();
  size_t pos = magic;
  for (;;) {
    if (bytes.size() - pos < 16)
      fail("truncated at byte " + std::to_string(pos));
    uint64_t n = getU64(bytes, pos);
    if (n == kCacheEnd) {
      if (getU64(bytes, pos + 8) != elements->size() ||
          pos + 16 != bytes.size())
        fail("bad end record");
      return elements;
    }
    if (n > bytes.size() - pos - 16)
      fail("truncated at byte " + std::to_string(pos));
    std::string_view record(bytes.data() + pos + 8, n);
    if (getU64(bytes, pos + 8 + n) != crc32c::value(record))
      fail("CRC mismatch at byte " + std::to_string(pos));
    size_t at = 0;
    elements->push_back(decode_element(record, at, path));
    pos += 16 + n;
  }
}

void write_cache_file(const std::string &path,
                      const std::vector<Element> &elements) {
  std::string out = kCacheMagic, record;
  for (const Element &e : elements) {
    record.clear();
    encode_element(e, record);
    putU64(out, record.size());
    out += record;
    putU64(out, crc32c::value(record));
  }
  putU64(out, kCacheEnd);
  putU64(out, elements.size());
  try {
    fileio::writeFileAtomically(path, out);
  } catch (const std::exception &e) {
    throw DataError(std::string("cache: ") + e.what());
  }
}

} // namespace detail
} // namespace data
} // namespace estc
