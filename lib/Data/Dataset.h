//===- Dataset.h - tf.data for C++: sources, transformations, iterators -===//
//
// A Dataset is an immutable description of a stream of elements (Value.h),
// built as tf.data builds one: a source (range, from_tensor_slices, files)
// and a chain of transformations (map, shuffle, batch, prefetch, ...).
// Datasets are cheap to copy (they share their definition); iterating one
// makes an Iterator, which holds all the mutable state: positions in files,
// shuffle buffers, worker threads.
//
// Determinism: the same seeds give the same elements in the same order
// whatever the parallelism (map and interleave deliver in input order
// unless deterministic=false is asked for). A shuffle without a seed draws
// one from std::random_device, as TF does without a seed.
//
// Resumption: Iterator::save() captures the whole pipeline's position —
// file offsets, shuffle buffer contents and random-stream positions, the
// epoch of repeat, elements already computed by parallel stages — and
// restore() puts a fresh iterator of the same pipeline back there. The
// Estimator saves it with every checkpoint. A stage that cannot be saved
// (from_generator) throws NotResumableError from save().
//
// Threads: map(num_parallel_calls = N) runs N workers; prefetch runs one;
// interleave(num_parallel_calls > 0) runs one per open input in the cycle
// (at most cycle_length). AUTOTUNE means the number of cores
// (std::thread::hardware_concurrency, or ESTC_DATA_THREADS when set). The
// threads start at the first next() and stop when the iterator dies.
//
// Errors: DataError (one line naming the file, record or element and what
// is wrong) from next(); ignore_errors() drops the elements that raised
// one. std::invalid_argument for misuse (a batch size of 0, ...).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_DATASET_H
#define ESTC_LIB_DATA_DATASET_H

#include "lib/Data/Value.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace data {

/// tf.data.AUTOTUNE: "as many as the machine has cores".
constexpr int64_t AUTOTUNE = -1;
/// Dataset::cardinality() values, as tf.data's.
constexpr int64_t INFINITE_CARDINALITY = -1;
constexpr int64_t UNKNOWN_CARDINALITY = -2;

/// The number of threads AUTOTUNE stands for.
int64_t autotune_threads();

/// save() on a pipeline with a stage whose position cannot be saved.
class NotResumableError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An iterator's saved position: named entries, each iterator's under its
/// own prefix. serialize()/parse() give the bytes the Estimator stores in a
/// checkpoint.
class IteratorState {
public:
  void put_int(const std::string &key, int64_t value);
  void put_bytes(const std::string &key, std::string bytes);
  void put_element(const std::string &key, const Element &element);
  bool has(const std::string &key) const { return entries_.count(key) != 0; }
  /// DataError naming the key when it is missing or malformed.
  int64_t get_int(const std::string &key) const;
  const std::string &get_bytes(const std::string &key) const;
  Element get_element(const std::string &key) const;
  /// A tuple entry's items (DataError when the entry is not a tuple).
  std::vector<Element> get_tuple(const std::string &key) const;

  std::string serialize() const;
  /// DataError for bytes that serialize() did not write.
  static IteratorState parse(std::string_view bytes);
  size_t size() const { return entries_.size(); }

private:
  std::map<std::string, std::string> entries_;
};

namespace detail {
/// One stage's iterator. Called from one thread at a time.
class IteratorImpl {
public:
  explicit IteratorImpl(std::string prefix) : prefix_(std::move(prefix)) {}
  virtual ~IteratorImpl();
  IteratorImpl(const IteratorImpl &) = delete;
  IteratorImpl &operator=(const IteratorImpl &) = delete;

  /// The next element, nullopt at the end (and on every call after).
  virtual std::optional<Element> next() = 0;
  /// Writes this stage's position (and its inputs') under prefix().
  virtual void save(IteratorState &state) = 0;
  /// Puts a fresh iterator at the position save() wrote.
  virtual void restore(const IteratorState &state) = 0;

  const std::string &prefix() const { return prefix_; }

protected:
  std::string key(const char *name) const { return prefix_ + ":" + name; }

private:
  std::string prefix_;
};

/// One stage's definition: immutable, shared by the Datasets built on it.
class DatasetImpl {
public:
  virtual ~DatasetImpl();
  /// An iterator whose state lives under `prefix`.
  virtual std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const = 0;
  /// What the stage is, with its parameters and inputs ("Batch(32, ...)");
  /// a saved state is restored only into a pipeline with the same
  /// description.
  virtual std::string describe() const = 0;
  virtual int64_t cardinality() const { return UNKNOWN_CARDINALITY; }
};
} // namespace detail

class Iterator;

class Dataset {
public:
  /// Transforms one element.
  using MapFn = std::function<Element(Element)>;
  using Predicate = std::function<bool(const Element &)>;
  /// Makes the dataset of one input element (interleave, flat_map).
  using DatasetFn = std::function<class Dataset(const Element &)>;
  /// Returns the next element, nullopt at the end.
  using Generator = std::function<std::optional<Element>()>;

  // Sources ---------------------------------------------------------------

  /// int64 scalars start, start + step, ... before stop.
  static Dataset range(int64_t stop);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  /// One element per slice of every leaf's first dimension (a sparse leaf
  /// is sliced by its first index); std::invalid_argument when the leaves'
  /// first dimensions differ or a leaf is a scalar.
  static Dataset from_tensor_slices(Element element);
  /// The element, once.
  static Dataset from_tensors(Element element);
  /// Elements from a generator that `make` creates anew for every
  /// iteration (as TF calls a Python generator function). Not resumable.
  static Dataset from_generator(std::function<Generator()> make,
                                std::string name = "generator");
  /// tf.data.Dataset.list_files: the files matching the glob patterns as
  /// string scalars, sorted, then (as TF) through a shuffle stage when
  /// `shuffle` (from `seed`, or a random seed when nullopt; a new order for
  /// each pass under repeat). DataError when nothing matches.
  static Dataset list_files(std::vector<std::string> patterns,
                            bool shuffle = true,
                            std::optional<uint64_t> seed = std::nullopt);
  /// Elements of every dataset in turn: tf.data's zip.
  static Dataset zip(std::vector<Dataset> datasets);

  /// A stage defined outside this file (file sources, user extensions).
  static Dataset from_impl(std::shared_ptr<const detail::DatasetImpl> impl);

  // Transformations ------------------------------------------------------

  /// fn on every element. num_parallel_calls 0: in the caller's thread; N
  /// (or AUTOTUNE): N worker threads, results in input order unless
  /// deterministic is false (then as soon as any is ready).
  Dataset map(MapFn fn, int64_t num_parallel_calls = 0,
              bool deterministic = true) const;
  Dataset filter(Predicate predicate) const;
  /// TF's buffer semantics: a buffer of buffer_size elements, each next()
  /// returns a uniformly chosen one and refills its place from the input.
  /// With reshuffle_each_iteration, each iteration (e.g. each epoch under
  /// repeat) gets its own order.
  Dataset shuffle(int64_t buffer_size,
                  std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  /// count passes; nullopt repeats forever (then a pass that gives
  /// nothing ends it: TF ends when the first pass is empty and spins
  /// forever on a later empty one).
  Dataset repeat(std::optional<int64_t> count = std::nullopt) const;
  /// Stacks batch_size elements (dense leaves: a new first dimension, every
  /// element the same shape; sparse leaves: concatenated with the batch
  /// row as a new first index). The final batch may be smaller unless
  /// drop_remainder.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  /// Padding per leaf: the shape to pad to (-1: the batch's largest), and
  /// the value (a scalar of the leaf's dtype).
  struct Padding {
    std::optional<Nest<std::vector<int64_t>>> padded_shapes;
    std::optional<Element> padding_values;
  };
  /// batch, dense leaves padded to a common shape (to padded_shapes where
  /// given; DataError when an element is larger than its padded shape).
  Dataset padded_batch(int64_t batch_size, Padding padding = {},
                       bool drop_remainder = false) const;
  /// An element's length, for bucket_by_sequence_length.
  using LengthFn = std::function<int64_t(const Element &)>;
  /// tf.data.Dataset.bucket_by_sequence_length (TF 2.15): element i goes to
  /// the first bucket b with lower <= length < upper, the bounds being
  /// [INT32_MIN] + bucket_boundaries and bucket_boundaries + [INT32_MAX]
  /// (TF does not ask the boundaries to increase; neither does this); a
  /// bucket that holds bucket_batch_sizes[b] elements becomes one
  /// padded_batch of them (with `padding`; batch when no_padding), and when
  /// the input ends, the partial buckets follow in bucket order (none when
  /// drop_remainder). pad_to_bucket_boundary pads the -1 dimensions of
  /// padding.padded_shapes to boundary[b] - 1 instead of the batch's
  /// largest (estc's datasets have no static shapes: padded_shapes, e.g.
  /// from a parser's element_spec(false), says which dimensions TF would
  /// find unknown, so it is required); a batch of the last bucket is then
  /// a DataError. std::invalid_argument: len(bucket_batch_sizes) !=
  /// len(bucket_boundaries) + 1, a batch size below 1 (TF: when that
  /// bucket is first used), pad_to_bucket_boundary without padded_shapes.
  /// DataError: a length in no bucket (>= INT32_MAX or < INT32_MIN).
  Dataset bucket_by_sequence_length(LengthFn element_length_func,
                                    std::vector<int64_t> bucket_boundaries,
                                    std::vector<int64_t> bucket_batch_sizes,
                                    Padding padding = {},
                                    bool pad_to_bucket_boundary = false,
                                    bool no_padding = false,
                                    bool drop_remainder = false) const;
  /// The inverse of batch: one element per row of the first dimension.
  Dataset unbatch() const;
  /// Computes up to buffer_size elements ahead on a background thread
  /// (AUTOTUNE: 2 per core).
  Dataset prefetch(int64_t buffer_size) const;
  /// The first iteration's elements are kept (in memory, or in `filename`
  /// as a record file written when that iteration completes); later
  /// iterations replay them without running the input.
  Dataset cache(std::string filename = "") const;
  /// Every num_shards-th element from index.
  Dataset shard(int64_t num_shards, int64_t index) const;
  /// Opens cycle_length datasets fn(element) of input elements at a time
  /// and takes block_length elements from each in turn; a finished one is
  /// replaced by the next input element's. num_parallel_calls > 0 (or
  /// AUTOTUNE) reads the open datasets ahead on threads; the order is the
  /// same (deterministic=false is accepted and changes nothing: the cycle
  /// order is always kept). cycle_length AUTOTUNE: the number of cores.
  Dataset interleave(DatasetFn fn, int64_t cycle_length = AUTOTUNE,
                     int64_t block_length = 1, int64_t num_parallel_calls = 0,
                     bool deterministic = true) const;
  /// interleave with cycle_length 1.
  Dataset flat_map(DatasetFn fn) const;
  Dataset take(int64_t count) const;
  Dataset skip(int64_t count) const;
  Dataset concatenate(const Dataset &other) const;
  /// (int64 index from start, element) tuples.
  Dataset enumerate(int64_t start = 0) const;
  /// Drops the elements whose computation raised DataError, counting them;
  /// the first `log_first` and then every 1000th are logged to stderr
  /// with their error.
  Dataset ignore_errors(int64_t log_first = 10) const;

  // Iteration --------------------------------------------------------------

  Iterator make_iterator() const;
  /// The spec of the first element (read from a fresh iterator, which
  /// counts as an iteration for a reshuffling shuffle); nullopt for an
  /// empty dataset.
  std::optional<ElementSpec> element_spec() const;
  /// Elements per iteration when known without iterating;
  /// INFINITE_CARDINALITY or UNKNOWN_CARDINALITY otherwise.
  int64_t cardinality() const;
  /// The pipeline, as a saved state identifies it.
  std::string describe() const;

  const std::shared_ptr<const detail::DatasetImpl> &impl() const {
    return impl_;
  }

  /// Range-for over a fresh iterator: for (const Element &e : dataset).
  class InputIterator;
  InputIterator begin() const;
  InputIterator end() const;

private:
  explicit Dataset(std::shared_ptr<const detail::DatasetImpl> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::DatasetImpl> impl_;
};

/// An iteration over a Dataset. Move-only.
class Iterator {
public:
  explicit Iterator(const Dataset &dataset);
  Iterator(Iterator &&) noexcept;
  Iterator &operator=(Iterator &&other) noexcept;
  ~Iterator();

  /// The next element; nullopt at the end. DataError for bad input.
  std::optional<Element> next();
  /// The position (NotResumableError when a stage cannot save its own).
  IteratorState save();
  /// Restores a state saved from an iterator of the same pipeline (a
  /// Dataset with the same describe()), before the first next(); DataError
  /// when the state is of another pipeline or malformed (whatever a stage
  /// finds wrong in it: the state is data from a file).
  void restore(const IteratorState &state);
  const std::string &description() const { return description_; }
  /// The last stage's own iterator, for a consumer that knows that stage and
  /// reads it in a faster way than element by element (the Estimator's
  /// in-memory arrays, estimator/Input.cpp); next() and save() see the
  /// position it leaves.
  detail::IteratorImpl &root() { return *impl_; }

private:
  // The definition the stage iterators refer to, kept alive with them.
  std::shared_ptr<const detail::DatasetImpl> dataset_;
  std::unique_ptr<detail::IteratorImpl> impl_;
  std::string description_;
};

class Dataset::InputIterator {
public:
  using value_type = Element;
  using reference = const Element &;
  using pointer = const Element *;
  using difference_type = std::ptrdiff_t;
  using iterator_category = std::input_iterator_tag;

  InputIterator() = default;
  explicit InputIterator(const Dataset &dataset);
  const Element &operator*() const { return *current_; }
  const Element *operator->() const { return &*current_; }
  InputIterator &operator++();
  bool operator==(const InputIterator &o) const {
    return !current_ && !o.current_;
  }
  bool operator!=(const InputIterator &o) const { return !(*this == o); }

private:
  std::shared_ptr<Iterator> it_;
  std::optional<Element> current_;
};

/// Stacks elements of the same structure (Dataset::batch's rule);
/// DataError naming the leaf path when shapes or dtypes differ.
Element stack_elements(const std::vector<Element> &elements);
/// Splits an element along its leaves' first dimension (unbatch's rule).
std::vector<Element> unstack_element(const Element &element);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_DATASET_H
