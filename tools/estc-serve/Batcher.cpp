//===- Batcher.cpp - Server-side batching of concurrent requests --------===//

#include "tools/estc-serve/Batcher.h"

#include "tools/estc-serve/Metrics.h"

#include <algorithm>
#include <exception>
#include <future>

namespace estc {
namespace serving {

using Clock = std::chrono::steady_clock;

struct Batcher::Task {
  const TensorMap *inputs;
  int64_t rows;
  std::promise<TensorMap> result;
};

struct Batcher::Batch {
  std::shared_ptr<const Servable> servable;
  std::string model;
  std::string signature;
  std::vector<std::string> filter;
  std::vector<Task *> tasks;
  int64_t rows = 0;
  Clock::time_point opened;
  bool closed = false;
};

/// The batches of one key, oldest first; the last one may be open.
struct Batcher::Queue {
  std::deque<std::shared_ptr<Batch>> batches;
};

namespace {
int64_t rowBytes(const TensorValue &t) {
  int64_t inner = 1;
  for (size_t i = 1; i < t.shape.size(); ++i)
    inner *= t.shape[i];
  return t.dtype == DType::String
             ? inner
             : inner * static_cast<int64_t>(dtype_size(t.dtype));
}

/// The rows of a request (its inputs' common first dimension) or -1 when
/// it cannot be batched (a scalar input, inputs that disagree, elements
/// that do not match the shape): such a request runs alone and gets the
/// servable's own error.
int64_t batchRows(const TensorMap &inputs) {
  int64_t rows = -1;
  for (const auto &[name, t] : inputs) {
    if (t.shape.empty() || t.shape[0] < 1 || t.dtype == DType::Invalid)
      return -1;
    bool complete =
        t.dtype == DType::String
            ? static_cast<int64_t>(t.strings.size()) == t.num_elements()
            : static_cast<int64_t>(t.data.size()) ==
                  t.num_elements() * static_cast<int64_t>(dtype_size(t.dtype));
    if (!complete || (rows >= 0 && rows != t.shape[0]))
      return -1;
    rows = t.shape[0];
  }
  return rows;
}

/// The queue of requests that can share a batch: same servable,
/// signature, outputs, and input names, dtypes and trailing dimensions.
std::string keyOf(const Servable *servable, const std::string &signature,
                  const std::vector<std::string> &filter,
                  const TensorMap &inputs) {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(servable));
  auto add = [&key](const std::string &s) {
    key += '\0';
    key += std::to_string(s.size());
    key += ':';
    key += s;
  };
  add(signature);
  for (const auto &f : filter)
    add(f);
  key += '\1';
  for (const auto &[name, t] : inputs) {
    add(name);
    key += std::to_string(static_cast<int>(t.dtype));
    for (size_t i = 1; i < t.shape.size(); ++i)
      key += "," + std::to_string(t.shape[i]);
  }
  return key;
}
} // namespace

TensorValue concat_rows(const std::vector<const TensorValue *> &parts) {
  if (parts.empty())
    throw std::invalid_argument("concat_rows: no tensors");
  TensorValue out;
  out.dtype = parts[0]->dtype;
  out.shape = parts[0]->shape;
  if (out.shape.empty())
    throw std::invalid_argument("concat_rows: a scalar has no rows");
  out.shape[0] = 0;
  for (const TensorValue *p : parts) {
    if (p->dtype != out.dtype || p->shape.size() != out.shape.size() ||
        !std::equal(p->shape.begin() + 1, p->shape.end(),
                    out.shape.begin() + 1))
      throw std::invalid_argument("concat_rows: " + p->spec().str() +
                                  " does not match " + parts[0]->spec().str());
    out.shape[0] += p->shape[0];
    out.data += p->data;
    out.strings.insert(out.strings.end(), p->strings.begin(), p->strings.end());
  }
  return out;
}

TensorValue slice_rows(const TensorValue &t, int64_t begin, int64_t end) {
  if (t.shape.empty() || begin < 0 || end < begin || end > t.shape[0])
    throw std::invalid_argument("slice_rows: rows [" + std::to_string(begin) +
                                ", " + std::to_string(end) + ") of " +
                                t.spec().str());
  TensorValue out;
  out.dtype = t.dtype;
  out.shape = t.shape;
  out.shape[0] = end - begin;
  int64_t row = rowBytes(t);
  if (t.dtype == DType::String)
    out.strings.assign(t.strings.begin() + begin * row,
                       t.strings.begin() + end * row);
  else
    out.data = t.data.substr(static_cast<size_t>(begin * row),
                             static_cast<size_t>((end - begin) * row));
  return out;
}

Batcher::Batcher(BatchingOptions options, Metrics *metrics)
    : options_(options), metrics_(metrics) {
  if (options_.num_batch_threads == 0)
    options_.num_batch_threads =
        std::max(1u, std::thread::hardware_concurrency());
  auto check = [](int64_t v, const char *name, int64_t lo) {
    if (v < lo)
      throw std::invalid_argument(std::string("batching parameters: ") + name +
                                  " is " + std::to_string(v) +
                                  ", must be at least " + std::to_string(lo));
  };
  check(options_.max_batch_size, "max_batch_size", 1);
  check(options_.batch_timeout_micros, "batch_timeout_micros", 0);
  check(options_.max_enqueued_batches, "max_enqueued_batches", 1);
  check(options_.num_batch_threads, "num_batch_threads", 1);
  for (int64_t i = 0; i < options_.num_batch_threads; ++i)
    threads_.emplace_back([this] { worker(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    flushing_ = true;
  }
  cv_.notify_all();
  for (auto &t : threads_)
    t.join();
}

void Batcher::flush() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;
  }
  cv_.notify_all();
}

TensorMap Batcher::run(const std::shared_ptr<const Servable> &servable,
                       const std::string &model, const std::string &signature,
                       const TensorMap &inputs,
                       const std::vector<std::string> &output_filter) {
  int64_t rows = batchRows(inputs);
  if (rows < 0 || rows > options_.max_batch_size) {
    if (metrics_ && rows > 0)
      metrics_->record_batch(model, signature, rows);
    return servable->run(signature, inputs, output_filter);
  }
  Task task{&inputs, rows, {}};
  std::future<TensorMap> result = task.result.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &queue =
        queues_[keyOf(servable.get(), signature, output_filter, inputs)];
    if (!queue)
      queue = std::make_unique<Queue>();
    auto &batches = queue->batches;
    if (!batches.empty() && !batches.back()->closed &&
        batches.back()->rows + rows > options_.max_batch_size)
      batches.back()->closed = true;
    if (batches.empty() || batches.back()->closed) {
      if (static_cast<int64_t>(batches.size()) >= options_.max_enqueued_batches)
        throw RestError(Code::Unavailable,
                        "The batch scheduling queue to which this task was "
                        "submitted is full");
      auto batch = std::make_shared<Batch>();
      batch->servable = servable;
      batch->model = model;
      batch->signature = signature;
      batch->filter = output_filter;
      batch->opened = Clock::now();
      batches.push_back(std::move(batch));
    }
    Batch &batch = *batches.back();
    batch.tasks.push_back(&task);
    batch.rows += rows;
    if (batch.rows >= options_.max_batch_size)
      batch.closed = true;
  }
  cv_.notify_one();
  return result.get();
}

std::shared_ptr<Batcher::Batch> Batcher::takeReady(Clock::time_point now,
                                                   Clock::time_point &wake) {
  const auto timeout = std::chrono::microseconds(options_.batch_timeout_micros);
  // The oldest batch that is full or has waited long enough.
  auto best = queues_.end();
  Clock::time_point bestOpened = Clock::time_point::max();
  for (auto it = queues_.begin(); it != queues_.end(); ++it) {
    const auto &batches = it->second->batches;
    if (batches.empty())
      continue;
    const Batch &front = *batches.front();
    Clock::time_point due = front.opened + timeout;
    if (front.closed || flushing_ || due <= now) {
      if (front.opened < bestOpened) {
        best = it;
        bestOpened = front.opened;
      }
    } else {
      wake = std::min(wake, due);
    }
  }
  if (best == queues_.end())
    return nullptr;
  auto batch = best->second->batches.front();
  best->second->batches.pop_front();
  if (best->second->batches.empty())
    queues_.erase(best);
  return batch;
}

void Batcher::worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Clock::time_point wake = Clock::time_point::max();
    std::shared_ptr<Batch> batch = takeReady(Clock::now(), wake);
    if (batch) {
      lock.unlock();
      runBatch(*batch);
      lock.lock();
      continue;
    }
    if (stopping_ && queues_.empty())
      return;
    if (wake == Clock::time_point::max())
      cv_.wait(lock);
    else
      cv_.wait_until(lock, wake);
  }
}

void Batcher::runBatch(Batch &batch) {
  if (metrics_)
    metrics_->record_batch(batch.model, batch.signature, batch.rows);
  auto runAlone = [&batch](Task *task) {
    try {
      task->result.set_value(
          batch.servable->run(batch.signature, *task->inputs, batch.filter));
    } catch (...) {
      task->result.set_exception(std::current_exception());
    }
  };
  if (batch.tasks.size() == 1) {
    runAlone(batch.tasks[0]);
    return;
  }
  TensorMap outputs;
  try {
    TensorMap inputs;
    for (const auto &[name, first] : *batch.tasks[0]->inputs) {
      std::vector<const TensorValue *> parts;
      for (Task *task : batch.tasks)
        parts.push_back(&task->inputs->at(name));
      inputs[name] = concat_rows(parts);
    }
    outputs = batch.servable->run(batch.signature, inputs, batch.filter);
    for (const auto &[name, t] : outputs)
      if (t.shape.empty() || t.shape[0] != batch.rows)
        throw std::invalid_argument("output " + name + " is not batched");
  } catch (...) {
    // One request's bad data must not fail the others, and an output that
    // is not per example cannot be split: each runs alone.
    for (Task *task : batch.tasks)
      runAlone(task);
    return;
  }
  int64_t row = 0;
  for (Task *task : batch.tasks) {
    TensorMap mine;
    for (const auto &[name, t] : outputs)
      mine[name] = slice_rows(t, row, row + task->rows);
    row += task->rows;
    task->result.set_value(std::move(mine));
  }
}

} // namespace serving
} // namespace estc
