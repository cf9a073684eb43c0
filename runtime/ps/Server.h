//===- runtime/ps/Server.h - One parameter-server task over gRPC ---------===//
//
// A ps task (docs/design/distributed.md, "Parameter servers: the engine")
// serves its Shard's variables over gRPC (runtime/ps/ps.proto): pulls run
// concurrently under a shared lock, applies alone under an exclusive one.
//
//   - async (TF's default): each push is applied when it arrives, in
//     arrival order;
//   - sync (TF's SyncReplicasOptimizer): the pushes of a step are collected
//     until replicas_to_aggregate have come, their mean is applied once,
//     and only then does each of them get its answer; a push of an older
//     step, or beyond replicas_to_aggregate, is dropped as stale.
//
// A push is applied once even when the worker retries it (the worker's
// session and sequence number are remembered). serve() returns when a
// client sends Shutdown (the chief ends the job) or stop() is called.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_PS_SERVER_H
#define ESTC_RUNTIME_PS_SERVER_H

#include "runtime/ps/Shard.h"

#include <cstdint>
#include <memory>
#include <string>

namespace estc::ps {

struct ServerOptions {
  /// host:port to serve at; port 0 picks a free port (Server::port()).
  std::string address = "127.0.0.1:0";
  /// This task's index in TF_CONFIG's ps job, and the job's ps tasks.
  int task_index = 0;
  int num_tasks = 1;
  /// Synchronous training: replicas_to_aggregate > 0 aggregates that many
  /// pushes per step (SyncReplicasOptimizer's; total_num_replicas, the
  /// workers there are, is reported to workers); 0 is async.
  int replicas_to_aggregate = 0;
  int total_num_replicas = 0;
  /// The global_step the task starts at (its current step before any
  /// apply); -1: the shard's global_step(), or 0 when it holds none.
  int64_t start_step = -1;
  /// The job's identity (its TF_CONFIG cluster's; "": none): Describe
  /// tells it, and a Shutdown of another job is refused.
  std::string cluster;
};

/// What a server has done since it started.
struct ServerStats {
  int64_t applies = 0;
  int64_t pushes = 0;
  int64_t stale_pushes = 0;
  int64_t duplicate_pushes = 0;
  int64_t pulls = 0;
};

class Server {
public:
  /// The shard must outlive the server. Throws std::invalid_argument (one
  /// line) for bad options or a shard whose inputs do not fit its
  /// variables.
  Server(Shard &shard, ServerOptions options);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  /// Binds and starts answering; returns the bound port. Throws
  /// rt::ParameterServerError: "cannot serve ps:0 at 127.0.0.1:2222:
  /// Address already in use".
  int start();
  /// start() if not started, then blocks until a Shutdown request or
  /// stop(); returns when every call in flight has ended.
  void serve();
  /// Makes serve() return (any thread; calls waiting in a sync step are
  /// answered UNAVAILABLE).
  void stop();

  int port() const;
  /// The task's current step: the start step plus its applies.
  int64_t current_step() const;
  ServerStats stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace estc::ps

#endif // ESTC_RUNTIME_PS_SERVER_H
