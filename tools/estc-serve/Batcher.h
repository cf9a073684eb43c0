//===- Batcher.h - Server-side batching of concurrent requests ----------===//
//
// TF Serving's --enable_batching for estc-serve: requests for the same
// served version and signature, whose inputs agree in dtype and in every
// dimension but the first, wait in one queue; a batch thread runs up to
// max_batch_size examples of them as ONE Servable::run on the inputs
// concatenated along the first dimension, then gives each request its rows
// of every output. A batch runs when it is full or when its first request
// has waited batch_timeout_micros (TF's SharedBatchScheduler). Requests of
// other shapes queue apart, so they run in other batches.
//
// The result of a request is the one it gets alone: outputs whose first
// dimension is not the batch's are not split but the batch's requests run
// one by one, and so do they when the batched run throws (one bad request
// then fails alone, with its own error). A request of more than
// max_batch_size examples runs alone (TF Serving refuses it unless
// enable_large_batch_splitting). A queue holding max_enqueued_batches
// batches refuses more with Unavailable (TF's "The batch scheduling queue
// to which this task was submitted is full", 503).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_BATCHER_H
#define ESTC_ESTIMATOR_SERVING_BATCHER_H

#include "tools/estc-serve/ModelManager.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace estc {
namespace serving {

class Metrics;

/// TF Serving's BatchingParameters (its defaults: SharedBatchScheduler's).
struct BatchingOptions {
  int64_t max_batch_size = 1000;
  int64_t batch_timeout_micros = 0;
  int64_t max_enqueued_batches = 10;
  /// 0: the number of CPUs.
  int64_t num_batch_threads = 0;
};

class Batcher {
public:
  /// std::invalid_argument for an option below 1 (the timeout below 0).
  explicit Batcher(BatchingOptions options, Metrics *metrics = nullptr);
  /// Runs what is queued, then joins the threads.
  ~Batcher();
  Batcher(const Batcher &) = delete;
  Batcher &operator=(const Batcher &) = delete;

  /// servable->run(signature, inputs, output_filter) as part of a batch;
  /// blocks until done and rethrows what the run threw for this request.
  /// `model` labels the batch-size metric.
  TensorMap run(const std::shared_ptr<const Servable> &servable,
                const std::string &model, const std::string &signature,
                const TensorMap &inputs,
                const std::vector<std::string> &output_filter = {});

  /// From now on batches run as soon as a thread is free (no timeout
  /// wait): graceful shutdown.
  void flush();

  const BatchingOptions &options() const { return options_; }

private:
  struct Task;
  struct Batch;
  struct Queue;
  struct Key;

  void worker();
  void runBatch(Batch &batch);
  std::shared_ptr<Batch> takeReady(std::chrono::steady_clock::time_point now,
                                   std::chrono::steady_clock::time_point &wake);

  BatchingOptions options_;
  Metrics *metrics_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Queue>> queues_;
  bool flushing_ = false;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

/// Tensors concatenated along their first dimension (same dtype and
/// trailing dimensions; std::invalid_argument otherwise), and row range
/// [begin, end) of one.
TensorValue concat_rows(const std::vector<const TensorValue *> &parts);
TensorValue slice_rows(const TensorValue &t, int64_t begin, int64_t end);

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_BATCHER_H
