//===- DatasetAsync.cpp - map with workers, prefetch, interleave --------===//
//
// AsyncIterator runs a stage's input (and, for map, its function) on worker
// threads into a queue of slots. A worker reserves its slot while it holds
// the input, so the slots are in input order whatever finishes first; the
// consumer takes the front slot (deterministic) or any finished one. save()
// lets the workers fill the queue to capacity (or the input's end), pauses
// them, and saves the input's position together with the queued elements:
// a restored pipeline delivers exactly what the saved one would have, and
// the state depends on the consumer's position only, not on timing (so
// checkpoints of a run and of a restarted run are byte-identical).
//
// Interleave follows TF's cycle algorithm (InterleaveDatasetOp): the cycle
// slot's dataset gives block_length elements, then the next slot; an
// exhausted slot is refilled from the input on its next turn. With
// num_parallel_calls, each open slot reads ahead on its own thread (an
// AsyncIterator without a function), which changes timing, not order.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/DatasetInternal.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace estc {
namespace data {
namespace detail {

namespace {

class AsyncIterator : public IteratorImpl {
public:
  /// `fn` may be null (prefetch). `workers` threads, at most `capacity`
  /// elements queued or in flight.
  AsyncIterator(const std::string &prefix, std::unique_ptr<IteratorImpl> in,
                const Dataset::MapFn *fn, int64_t workers, int64_t capacity,
                bool deterministic)
      : IteratorImpl(prefix), in_(std::move(in)), fn_(fn), workers_(workers),
        capacity_(static_cast<size_t>(capacity)),
        deterministic_(deterministic) {}

  ~AsyncIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }

  std::optional<Element> next() override {
    start();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      for (auto it = slots_.begin(); it != slots_.end(); ++it) {
        if ((*it)->ready) {
          std::shared_ptr<Slot> slot = *it;
          slots_.erase(it);
          // Workers are woken when the queue is down to half (not for every
          // element taken): a read-ahead of many small records otherwise
          // wakes a thread per record, and the wake-ups cost the compiled
          // step its cores.
          bool wake = slots_.size() + reserved_ <= capacity_ / 2;
          lock.unlock();
          if (wake)
            cv_.notify_all();
          if (slot->error)
            std::rethrow_exception(slot->error);
          return std::move(slot->value);
        }
        if (deterministic_)
          break;
      }
      if (slots_.empty() && inputEnded_ && busy_ == 0)
        return std::nullopt;
      cv_.wait(lock);
    }
  }

  void save(IteratorState &s) override {
    start();
    std::unique_lock<std::mutex> lock(mu_);
    // The saved state must not depend on how far ahead the workers happened
    // to be: let them fill the queue to capacity (or to the end of the
    // input), so what is queued — and the input's position — is a function
    // of the consumer's position alone.
    cv_.notify_all();
    cv_.wait(lock, [&] {
      return busy_ == 0 && (slots_.size() >= capacity_ || inputEnded_);
    });
    ++paused_;
    // No worker holds an element or the input now.
    try {
      std::vector<Element> values;
      std::string errors;
      for (const std::shared_ptr<Slot> &slot : slots_) {
        if (slot->error) {
          // A queued error is saved as its message and raised again, in
          // its place, after a restore.
          try {
            std::rethrow_exception(slot->error);
          } catch (const std::exception &e) {
            values.emplace_back(TensorValue::of_strings({}, {e.what()}));
          }
          errors += '1';
        } else {
          values.push_back(*slot->value);
          errors += '0';
        }
      }
      s.put_element(key("queued"), Element::tuple(std::move(values)));
      s.put_bytes(key("queued_errors"), errors);
      s.put_int(key("input_ended"), inputEnded_);
      in_->save(s);
    } catch (...) {
      --paused_;
      cv_.notify_all();
      throw;
    }
    --paused_;
    cv_.notify_all();
  }

  void restore(const IteratorState &s) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Element> values = s.get_tuple(key("queued"));
    const std::string &errors = s.get_bytes(key("queued_errors"));
    if (errors.size() != values.size())
      throw DataError("input pipeline state: '" + key("queued_errors") +
                      "' does not match the queued elements");
    slots_.clear();
    for (size_t i = 0; i < values.size(); ++i) {
      auto slot = std::make_shared<Slot>();
      slot->ready = true;
      if (errors[i] == '1')
        slot->error =
            std::make_exception_ptr(DataError(tensor(values[i]).strings.at(0)));
      else
        slot->value = std::move(values[i]);
      slots_.push_back(std::move(slot));
    }
    inputEnded_ = s.get_int(key("input_ended")) != 0;
    in_->restore(s);
  }

private:
  struct Slot {
    std::optional<Element> value;
    std::exception_ptr error;
    bool ready = false;
  };

  void start() {
    if (!threads_.empty())
      return;
    for (int64_t i = 0; i < workers_; ++i)
      threads_.emplace_back([this] { work(); });
  }

  void work() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          return stopping_ || (!paused_ && !inputEnded_ &&
                               slots_.size() + reserved_ < capacity_);
        });
        if (stopping_)
          return;
        ++busy_;
        ++reserved_; // a place in the queue, taken before reading
      }
      std::shared_ptr<Slot> slot;
      std::optional<Element> input;
      {
        std::lock_guard<std::mutex> inputLock(inputMu_);
        bool ended;
        {
          std::lock_guard<std::mutex> lock(mu_);
          ended = inputEnded_;
        }
        slot = std::make_shared<Slot>();
        if (!ended) {
          try {
            input = in_->next();
          } catch (...) {
            slot->error = std::current_exception();
          }
        }
        std::lock_guard<std::mutex> lock(mu_);
        --reserved_;
        if (!input && !slot->error) {
          inputEnded_ = true;
          --busy_;
          cv_.notify_all();
          continue;
        }
        slots_.push_back(slot); // in input order: we hold the input
      }
      if (input) {
        if (fn_) {
          try {
            slot->value = (*fn_)(std::move(*input));
          } catch (...) {
            slot->error = std::current_exception();
          }
        } else {
          slot->value = std::move(input);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot->ready = true;
        --busy_;
      }
      cv_.notify_all();
    }
  }

  std::unique_ptr<IteratorImpl> in_;
  const Dataset::MapFn *fn_;
  int64_t workers_;
  size_t capacity_;
  bool deterministic_;

  std::mutex inputMu_; // taken before mu_, never while holding it
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Slot>> slots_;
  bool inputEnded_ = false;
  bool stopping_ = false;
  int paused_ = 0;
  int64_t busy_ = 0;    // workers holding an element (reading or computing)
  size_t reserved_ = 0; // workers reading, whose slot is not queued yet
  std::vector<std::thread> threads_;
};

class ParallelMapDataset : public DatasetImpl {
public:
  ParallelMapDataset(std::shared_ptr<const DatasetImpl> in, Dataset::MapFn fn,
                     int64_t workers, bool deterministic)
      : input_(std::move(in)), fn_(std::move(fn)), workers_(workers),
        deterministic_(deterministic) {}
  std::string describe() const override {
    return input_->describe() + ".map(parallel" +
           (deterministic_ ? "" : ",nondeterministic") + ")";
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    int64_t n = workers_ == AUTOTUNE ? autotune_threads() : workers_;
    return std::make_unique<AsyncIterator>(
        prefix, input_->make_iterator(prefix + "/map"), &fn_, n, n,
        deterministic_);
  }

private:
  std::shared_ptr<const DatasetImpl> input_;
  Dataset::MapFn fn_;
  int64_t workers_;
  bool deterministic_;
};

class PrefetchDataset : public DatasetImpl {
public:
  PrefetchDataset(std::shared_ptr<const DatasetImpl> in, int64_t bufferSize)
      : input_(std::move(in)), bufferSize_(bufferSize) {}
  std::string describe() const override {
    // The buffer size changes timing, not elements: not part of identity.
    return input_->describe() + ".prefetch()";
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    int64_t n = bufferSize_ == AUTOTUNE
                    ? std::max<int64_t>(2, 2 * autotune_threads())
                    : bufferSize_;
    return std::make_unique<AsyncIterator>(
        prefix, input_->make_iterator(prefix + "/prefetch"), nullptr, 1, n,
        true);
  }

private:
  std::shared_ptr<const DatasetImpl> input_;
  int64_t bufferSize_;
};

class InterleaveDataset : public DatasetImpl {
public:
  InterleaveDataset(std::shared_ptr<const DatasetImpl> in,
                    Dataset::DatasetFn fn, int64_t cycleLength,
                    int64_t blockLength, int64_t parallel)
      : input_(std::move(in)), fn_(std::move(fn)), cycleLength_(cycleLength),
        blockLength_(blockLength), parallel_(parallel) {}
  std::string describe() const override {
    return input_->describe() + ".interleave(" + std::to_string(cycleLength_) +
           "," + std::to_string(blockLength_) + ")";
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override;

private:
  friend class InterleaveIterator;
  std::shared_ptr<const DatasetImpl> input_;
  Dataset::DatasetFn fn_;
  int64_t cycleLength_, blockLength_, parallel_;
};

class InterleaveIterator : public IteratorImpl {
public:
  InterleaveIterator(const std::string &p, const InterleaveDataset &d)
      : IteratorImpl(p), d_(d), in_(d.input_->make_iterator(p + "/interleave")),
        cycle_(static_cast<size_t>(d.cycleLength_)) {}

  std::optional<Element> next() override {
    while (!inputEnded_ || open_ > 0) {
      Slot &slot = cycle_[current_];
      if (slot.it) {
        std::optional<Element> e = slot.it->next();
        if (e) {
          if (++block_ >= d_.blockLength_)
            advance();
          return e;
        }
        slot.it.reset();
        --open_;
        advance();
      } else if (!inputEnded_) {
        std::optional<Element> source = in_->next();
        if (!source) {
          inputEnded_ = true;
          continue;
        }
        open(slot, current_, std::move(*source));
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

  void save(IteratorState &s) override {
    s.put_int(key("current"), static_cast<int64_t>(current_));
    s.put_int(key("block"), block_);
    s.put_int(key("input_ended"), inputEnded_);
    std::string open;
    for (size_t i = 0; i < cycle_.size(); ++i) {
      open += cycle_[i].it ? '1' : '0';
      if (cycle_[i].it) {
        s.put_element(slotKey(i, "source"), cycle_[i].source);
        cycle_[i].it->save(s);
      }
    }
    s.put_bytes(key("open"), open);
    in_->save(s);
  }

  void restore(const IteratorState &s) override {
    current_ = static_cast<size_t>(s.get_int(key("current")));
    inputEnded_ = s.get_int(key("input_ended")) != 0;
    const std::string &open = s.get_bytes(key("open"));
    if (open.size() != cycle_.size() || current_ >= cycle_.size())
      throw DataError("input pipeline state: interleave of another cycle "
                      "length");
    open_ = 0;
    for (size_t i = 0; i < cycle_.size(); ++i) {
      cycle_[i].it.reset();
      if (open[i] == '1') {
        this->open(cycle_[i], i, s.get_element(slotKey(i, "source")));
        cycle_[i].it->restore(s);
      }
    }
    block_ = s.get_int(key("block")); // after open(), which resets it
    in_->restore(s);
  }

private:
  struct Slot {
    Element source;
    Dataset dataset = Dataset::range(0); // fn(source), which `it` refers to
    std::unique_ptr<IteratorImpl> it;
  };

  std::string slotKey(size_t i, const char *name) const {
    return prefix() + "/interleave[" + std::to_string(i) + "]:" + name;
  }

  void open(Slot &slot, size_t index, Element source) {
    slot.it.reset();
    slot.dataset = d_.fn_(source);
    const Dataset &ds = slot.dataset;
    std::string p = prefix() + "/interleave[" + std::to_string(index) + "]";
    // Each open input reads ahead up to kReadAhead elements (at least a
    // block), refilled when half are taken.
    constexpr int64_t kReadAhead = 32;
    if (d_.parallel_ != 0)
      slot.it = std::make_unique<AsyncIterator>(
          p, ds.impl()->make_iterator(p + "/prefetch"), nullptr, 1,
          std::max(d_.blockLength_, kReadAhead), true);
    else
      slot.it = ds.impl()->make_iterator(p);
    slot.source = std::move(source);
    ++open_;
    block_ = 0;
  }

  void advance() {
    block_ = 0;
    current_ = (current_ + 1) % cycle_.size();
  }

  const InterleaveDataset &d_;
  std::unique_ptr<IteratorImpl> in_;
  std::vector<Slot> cycle_;
  size_t current_ = 0;
  int64_t block_ = 0;
  int64_t open_ = 0;
  bool inputEnded_ = false;
};

std::unique_ptr<IteratorImpl>
InterleaveDataset::make_iterator(const std::string &prefix) const {
  return std::make_unique<InterleaveIterator>(prefix, *this);
}

} // namespace

std::shared_ptr<const DatasetImpl>
make_parallel_map(std::shared_ptr<const DatasetImpl> input, Dataset::MapFn fn,
                  int64_t num_parallel_calls, bool deterministic) {
  return std::make_shared<ParallelMapDataset>(
      std::move(input), std::move(fn), num_parallel_calls, deterministic);
}

std::shared_ptr<const DatasetImpl>
make_prefetch(std::shared_ptr<const DatasetImpl> input, int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

std::shared_ptr<const DatasetImpl>
make_interleave(std::shared_ptr<const DatasetImpl> input, Dataset::DatasetFn fn,
                int64_t cycle_length, int64_t block_length,
                int64_t num_parallel_calls, bool /*deterministic*/) {
  return std::make_shared<InterleaveDataset>(std::move(input), std::move(fn),
                                             cycle_length, block_length,
                                             num_parallel_calls);
}

} // namespace detail
} // namespace data
} // namespace estc
