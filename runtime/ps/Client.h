//===- runtime/ps/Client.h - A worker's connection to its ps tasks -------===//
//
// rt::ParameterClient over gRPC (runtime/ps/ps.proto): a worker checks
// every ps task against the ModelSpec it was compiled with (connect),
// pulls the dense variables before a step (pull_dense) and the embedding
// rows its step reads (pullRows, which compiled code calls), stages the
// step's gradients (push, which compiled code calls) and sends them after
// the step (flush). Every call has a deadline (timeout_secs); an
// UNAVAILABLE task is retried with backoff, a bounded number of times
// (pulls always, pushes too: the task applies a retried push once). Every
// failure is one line naming the task, its address and the call: "lost task
// ps:1 (127.0.0.1:2223) during push: Connection refused".
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_PS_CLIENT_H
#define ESTC_RUNTIME_PS_CLIENT_H

#include "runtime/CompiledModel.h"
#include "runtime/ParameterClient.h"
#include "runtime/ps/Shard.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace estc::ps {

struct ClientOptions {
  /// host:port of each ps task, in TF_CONFIG's order (task i = ps:i).
  std::vector<std::string> addresses;
  /// This worker's index (its pushes are remembered per worker).
  int worker = 0;
  /// The deadline of every call.
  double timeout_secs = 60;
  /// How long connect() waits for a task to come up (a ps task compiles
  /// its apply function and restores its variables first; on a loaded
  /// machine that takes a while).
  double connect_timeout_secs = 300;
  /// Retries of a call a task answered UNAVAILABLE (backoff 50 ms,
  /// doubling, at most 1 s apart).
  int retries = 5;
  /// The deadline of save() (a large shard takes a while to write).
  double save_timeout_secs = 600;
  /// The job's identity (ServerOptions::cluster; "": not checked): a task
  /// serving another job is refused at connect(), and shutdown() ends
  /// only this job's tasks.
  std::string cluster;
};

/// What the client has moved, for the bench: calls, payload bytes and wall
/// seconds of pulls (dense and rows) and pushes.
struct ClientStats {
  int64_t pulls = 0;
  int64_t pull_bytes = 0;
  double pull_seconds = 0;
  int64_t rows_pulled = 0; ///< distinct rows fetched (after deduplication)
  int64_t pushes = 0;      ///< flushes
  int64_t push_bytes = 0;
  double push_seconds = 0;
  int64_t stale_pushes = 0; ///< flushes some task dropped as stale
  int64_t retries = 0;
};

/// A variable of the model and where pull_dense writes it
/// (rt::CompiledModel::variable_bytes(variable) bytes).
struct DenseTarget {
  int variable = 0;
  void *data = nullptr;
};

class Client final : public rt::ParameterClient {
public:
  /// `spec` (its variables' psTask, psTasks and psInputs) must outlive the
  /// client. Throws std::invalid_argument (one line) when the addresses do
  /// not match spec.psTasks or a ps input names no remote variable.
  Client(ClientOptions options, const rt::ModelSpec &spec);
  ~Client() override;
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;

  /// Waits for every task (up to connect_timeout_secs; "cannot reach ps:1 at
  /// 127.0.0.1:2223 within 60 s: Connection refused") and checks what it
  /// holds against the spec: a task started for another cluster or
  /// placement is refused with one line naming it and the first mismatch.
  void connect();

  /// The variables pull_dense(model) fills: the model's copies of variables
  /// a ps task holds (psTask >= 0: the ones its optimizers update densely,
  /// global_step).
  std::vector<int> dense_variables() const;
  /// Fills dense_variables() of `model` from their tasks: with the copies
  /// the last flush()'s answers carried back (each task sends them once the
  /// push is applied: no call), else one PullDense per task, the tasks
  /// concurrently.
  void pull_dense(rt::CompiledModel &model);
  void pull_dense(const std::vector<DenseTarget> &targets);

  // rt::ParameterClient: what compiled code calls (through the C ABI).
  void pullRows(int variable, const int64_t *ids, int64_t n, float *rows,
                int64_t rowElements) override;
  /// Deferred to waitRows(): one PullRowsBatch per task, the tasks
  /// concurrently.
  void pullRowsLater(int variable, const int64_t *ids, int64_t n, float *rows,
                     int64_t rowElements) override;
  void waitRows() override;
  void push(int input, const float *data, int64_t n) override;
  void push(int input, const int64_t *data, int64_t n) override;

  /// Sends the staged tensors, one Push per task, the tasks concurrently
  /// (each asking back the model's copies the task holds, for the next
  /// pull_dense(model)),
  /// tagged with `global_step` (the step's, as read before it), and clears
  /// them. True when every task applied it; false when one dropped it as
  /// stale (sync: the worker then pulls and goes on).
  bool flush(int64_t global_step);

  /// global_step, from task 0.
  int64_t global_step();
  /// Task 0's step after the last flush() (its global_step then, from the
  /// push's answer: no call of its own); -1 before the first.
  int64_t step_after_flush() const;
  /// Task t writes its part of a sharded checkpoint at part_prefixes[t]
  /// (one per task), concurrently (deadline save_timeout_secs); the parts
  /// are numbered among `num_parts` (the tasks', and the chief's own).
  void save(const std::vector<std::string> &part_prefixes, int num_parts,
            bool sync);
  /// Every variable every task holds (a checkpoint's worth: slots and
  /// tables too); one kept by several tasks, the first task's.
  std::map<std::string, HostTensor> pull_all();

  /// Ends the job: every task answers every later pull and push with
  /// "the chief ended the job" for a grace period, then stops serving (a
  /// task already gone is fine).
  void shutdown();
  /// Whether a task answered a call so: a worker then stops training.
  bool job_ended() const;

  ClientStats stats() const;
  void reset_stats();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The floor of a step's calls: the median seconds of `calls` empty calls
/// (GetState) to the task at `address`, after 10% more unmeasured, over one
/// connection as a Client makes it. Waits up to `timeout_secs` for the
/// task to serve; std::runtime_error naming the address otherwise, or
/// when a call fails.
double measure_round_trip(const std::string &address, int calls,
                          double timeout_secs = 300);

} // namespace estc::ps

#endif // ESTC_RUNTIME_PS_CLIENT_H
