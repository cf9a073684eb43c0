//===- runtime/ps/Server.cpp - One parameter-server task over gRPC -------===//
//
// The ParameterServer service (runtime/ps/ps.proto) over a Shard, with
// gRPC's synchronous server: each call runs on one of gRPC's threads.
// Locks: `vars_` (shared: pulls, Describe, Save; exclusive: apply) guards
// the shard's variables; `mutex_` guards the pushes' state (workers'
// sequence numbers, the sync step's aggregate, the counters) and is held
// across an apply, so pushes are applied one at a time in arrival order
// while pulls go on until the apply itself.
//
//===----------------------------------------------------------------------===//
#include "runtime/ps/Server.h"

#include "lib/Support/Printable.h"
#include "runtime/ParameterClient.h"
#include "runtime/ps/Protocol.h"
#include "runtime/ps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <netdb.h>
#include <shared_mutex>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace estc::ps {

namespace {

/// How long a task answers kJobEnded after the chief's Shutdown before it
/// stops serving: the workers' steps in flight end (as the chief's did)
/// instead of finding the task gone.
constexpr std::chrono::seconds kJobEndGrace{2};

grpc::Status toGrpc(const Status &s) {
  if (s.ok())
    return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code), s.message);
}

/// Why `address` cannot be bound (gRPC says only that it failed): binds a
/// socket of our own to it and returns strerror, or "" when that works.
std::string bindError(const std::string &address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    return "not host:port";
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo *found = nullptr;
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(),
                         &hints, &found);
  if (rc != 0)
    return ::gai_strerror(rc);
  std::string error;
  int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd < 0) {
    error = std::strerror(errno);
  } else {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0)
      error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return error;
}

} // namespace

struct Server::Impl final : public ParameterServer::Service {
  Impl(Shard &s, ServerOptions o)
      : shard(s), options(std::move(o)),
        layout(shard.variables(), shard.inputs()) {
    if (options.num_tasks < 1 || options.task_index < 0 ||
        options.task_index >= options.num_tasks)
      throw std::invalid_argument(
          "ps server: task index " + std::to_string(options.task_index) +
          " is not one of the job's " + std::to_string(options.num_tasks) +
          " ps tasks");
    if (options.replicas_to_aggregate < 0 ||
        (options.total_num_replicas > 0 &&
         options.replicas_to_aggregate > options.total_num_replicas))
      throw std::invalid_argument(
          "ps server: replicas_to_aggregate " +
          std::to_string(options.replicas_to_aggregate) +
          " is not in [0, total_num_replicas " +
          std::to_string(options.total_num_replicas) + "]");
    int64_t step = options.start_step;
    if (step < 0)
      step = std::max<int64_t>(shard.global_step(), 0);
    current = step;
  }

  std::string task() const {
    return "ps:" + std::to_string(options.task_index);
  }
  bool sync() const { return options.replicas_to_aggregate > 0; }

  // --- The service --------------------------------------------------------

  grpc::Status Describe(grpc::ServerContext *, const DescribeRequest *,
                        DescribeResponse *response) override {
    response->set_task_index(options.task_index);
    response->set_num_tasks(options.num_tasks);
    for (const Shard::Variable &v : layout.variables()) {
      TensorInfo *info = response->add_variables();
      info->set_name(v.name);
      info->set_dtype(toProto(v.dtype));
      info->mutable_shape()->Assign(v.shape.begin(), v.shape.end());
    }
    for (const InputSpec &in : layout.inputs()) {
      TensorInfo *info = response->add_inputs();
      info->set_name(in.key);
      info->set_dtype(toProto(in.dtype));
      info->mutable_shape()->Assign(in.shape.begin(), in.shape.end());
    }
    {
      std::shared_lock<std::shared_mutex> read(vars);
      response->set_global_step(shard.global_step());
    }
    response->set_sync(sync());
    response->set_replicas_to_aggregate(options.replicas_to_aggregate);
    response->set_total_num_replicas(options.total_num_replicas);
    response->set_cluster(options.cluster);
    std::lock_guard<std::mutex> lock(mutex);
    response->set_current_step(current);
    return grpc::Status::OK;
  }

  grpc::Status GetState(grpc::ServerContext *, const GetStateRequest *,
                        GetStateResponse *response) override {
    {
      std::shared_lock<std::shared_mutex> read(vars);
      response->set_global_step(shard.global_step());
    }
    std::lock_guard<std::mutex> lock(mutex);
    response->set_current_step(current);
    response->set_applies(counters.applies);
    response->set_pushes(counters.pushes);
    response->set_stale_pushes(counters.stale_pushes);
    response->set_duplicate_pushes(counters.duplicate_pushes);
    return grpc::Status::OK;
  }

  /// After the chief's Shutdown, every pull and push is answered so (the
  /// workers then stop as the chief did) until the task stops serving.
  grpc::Status ended() const {
    return grpc::Status(grpc::StatusCode::ABORTED, kJobEnded);
  }

  grpc::Status PullDense(grpc::ServerContext *, const PullDenseRequest *request,
                         PullDenseResponse *response) override {
    if (jobEnded)
      return ended();
    std::vector<int> which;
    if (Status s = checkPullDense(layout, *request, &which); !s.ok())
      return toGrpc(s);
    ++pulls;
    std::shared_lock<std::shared_mutex> read(vars);
    for (int i : which) {
      const Shard::Variable &v = layout.variables()[static_cast<size_t>(i)];
      toProto(v.dtype, v.shape, v.data,
              static_cast<size_t>(layout.variableBytes(i)),
              response->add_tensors());
    }
    return grpc::Status::OK;
  }

  grpc::Status PullRows(grpc::ServerContext *, const PullRowsRequest *request,
                        PullRowsResponse *response) override {
    if (jobEnded)
      return ended();
    int v = -1;
    if (Status s = checkPullRows(layout, *request, &v); !s.ok())
      return toGrpc(s);
    ++pulls;
    std::shared_lock<std::shared_mutex> read(vars);
    copyRows(v, *request, response->mutable_rows());
    return grpc::Status::OK;
  }

  grpc::Status PullRowsBatch(grpc::ServerContext *,
                             const PullRowsBatchRequest *request,
                             PullRowsBatchResponse *response) override {
    if (jobEnded)
      return ended();
    std::vector<int> which;
    if (Status s = checkPullRowsBatch(layout, *request, &which); !s.ok())
      return toGrpc(s);
    ++pulls;
    std::shared_lock<std::shared_mutex> read(vars);
    for (size_t i = 0; i < which.size(); ++i)
      copyRows(which[i], request->pulls(static_cast<int>(i)),
               response->add_rows());
    return grpc::Status::OK;
  }

  /// `rows` := the rows `request` asks of variable v (checked).
  void copyRows(int v, const PullRowsRequest &request, Tensor *rows) {
    const Shard::Variable &var = layout.variables()[static_cast<size_t>(v)];
    size_t rowBytes = static_cast<size_t>(layout.rowBytes(v));
    std::vector<int64_t> shape = var.shape;
    shape[0] = request.ids_size();
    rows->set_dtype(toProto(var.dtype));
    rows->mutable_shape()->Assign(shape.begin(), shape.end());
    std::string *data = rows->mutable_data();
    data->resize(rowBytes * static_cast<size_t>(request.ids_size()));
    const char *from = static_cast<const char *>(var.data);
    for (int i = 0; i < request.ids_size(); ++i)
      std::memcpy(data->data() + rowBytes * static_cast<size_t>(i),
                  from + rowBytes * static_cast<size_t>(request.ids(i)),
                  rowBytes);
  }

  grpc::Status Push(grpc::ServerContext *context, const PushRequest *request,
                    PushResponse *response) override {
    if (jobEnded)
      return ended();
    std::map<std::string, HostTensor> inputs;
    if (Status s = decodePush(layout, *request, &inputs); !s.ok())
      return toGrpc(s);
    std::vector<int> pullAfter;
    if (request->pull_names_size() > 0) {
      PullDenseRequest names;
      *names.mutable_names() = request->pull_names();
      if (Status s = checkPullDense(layout, names, &pullAfter); !s.ok())
        return toGrpc(s);
    }
    grpc::Status st = pushAndAnswer(context, request, response, inputs);
    if (st.ok() && !pullAfter.empty()) {
      ++pulls;
      std::shared_lock<std::shared_mutex> read(vars);
      for (int i : pullAfter) {
        const Shard::Variable &v = layout.variables()[static_cast<size_t>(i)];
        toProto(v.dtype, v.shape, v.data,
                static_cast<size_t>(layout.variableBytes(i)),
                response->add_pulled());
      }
    }
    return st;
  }

  /// The push's part of Push: applied now (async), into the step's
  /// aggregate (sync), dropped (stale) or answered from the first time
  /// (a retry).
  grpc::Status pushAndAnswer(grpc::ServerContext *context,
                             const PushRequest *request, PushResponse *response,
                             std::map<std::string, HostTensor> &inputs) {
    std::unique_lock<std::mutex> lock(mutex);
    ++counters.pushes;
    // Worker ids come from the wire: their state is bounded.
    constexpr size_t kMaxWorkers = 1 << 16;
    if (workers.size() >= kMaxWorkers && !workers.count(request->worker()))
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "push from worker " +
                              std::to_string(request->worker()) +
                              ": the task already holds the state of " +
                              std::to_string(kMaxWorkers) + " workers");
    Worker &w = workers[request->worker()];
    if (w.session != request->session()) {
      w = Worker{};
      w.session = request->session();
    }
    if (request->sequence() == w.sequence) {
      // A retry of a push this task has seen: its first outcome.
      ++counters.duplicate_pushes;
      return answer(lock, w, context, response);
    }
    if (request->sequence() < w.sequence)
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          "push " + std::to_string(request->sequence()) + " of worker " +
              std::to_string(request->worker()) + " is older than its last, " +
              std::to_string(w.sequence));
    w.sequence = request->sequence();
    w.done = false;
    if (!sync()) {
      finish(w, applyNow(inputs), PushResponse::APPLIED);
      return answer(lock, w, context, response);
    }
    if (request->global_step() < current) {
      // An older step's push (or one beyond replicas_to_aggregate, which
      // comes after its step's apply): dropped.
      ++counters.stale_pushes;
      finish(w, {}, PushResponse::STALE);
      return answer(lock, w, context, response);
    }
    aggregate.add(inputs);
    pending.push_back({request->worker(), w.session, w.sequence});
    if (aggregate.count() >= options.replicas_to_aggregate) {
      Status applied = applyNow(aggregate.take());
      for (const Pending &p : pending) {
        Worker &other = workers[p.worker];
        if (other.session == p.session && other.sequence == p.sequence)
          finish(other, applied, PushResponse::APPLIED);
      }
      pending.clear();
      changed.notify_all();
    }
    return answer(lock, w, context, response);
  }

  grpc::Status Save(grpc::ServerContext *, const SaveRequest *request,
                    SaveResponse *) override {
    if (request->num_shards() < 1 || request->shard() < 0 ||
        request->shard() >= request->num_shards())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "save: shard " + std::to_string(request->shard()) +
                              " is not one of " +
                              std::to_string(request->num_shards()));
    if (request->prefix().empty())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "save: no checkpoint prefix");
    if (grpc::Status other = otherJob(request->cluster()); !other.ok())
      return other;
    std::shared_lock<std::shared_mutex> read(vars);
    try {
      shard.save(request->prefix(), request->shard(), request->num_shards(),
                 request->sync());
    } catch (const std::exception &e) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "save: " + escape_control_chars(e.what()));
    }
    return grpc::Status::OK;
  }

  /// FAILED_PRECONDITION for the chief of another job (a request naming a
  /// cluster other than the task's).
  grpc::Status otherJob(const std::string &cluster) const {
    if (!options.cluster.empty() && cluster != options.cluster)
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          task() + " serves another job (its cluster is " +
                              options.cluster + ", the chief's " +
                              escape_control_chars(cluster) + ")");
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext *, const ShutdownRequest *request,
                        ShutdownResponse *) override {
    if (grpc::Status other = otherJob(request->cluster()); !other.ok())
      return other;
    // The workers still training get kJobEnded for a grace period, then
    // the task stops serving (serve() returns).
    jobEnded = true;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    std::lock_guard<std::mutex> lock(stopMutex);
    endRequested = true;
    stopCv.notify_all();
    return grpc::Status::OK;
  }

  // --- Pushes -------------------------------------------------------------

  /// A worker's last push: its session and sequence, and once done, its
  /// outcome.
  struct Worker {
    uint64_t session = 0;
    int64_t sequence = -1;
    bool done = true;
    Status status;
    PushResponse::Outcome outcome = PushResponse::APPLIED;
  };
  /// A push in the sync step's aggregate.
  struct Pending {
    int worker;
    uint64_t session;
    int64_t sequence;
  };

  /// One apply of the shard, alone.
  Status applyNow(const std::map<std::string, HostTensor> &inputs) {
    std::unique_lock<std::shared_mutex> write(vars);
    try {
      shard.apply(inputs, current);
    } catch (const std::exception &e) {
      return {Code::Internal, "apply failed on " + task() + ": " +
                                  escape_control_chars(e.what())};
    }
    ++counters.applies;
    ++current;
    return {};
  }

  void finish(Worker &w, Status status, PushResponse::Outcome outcome) {
    w.done = true;
    w.status = std::move(status);
    w.outcome = outcome;
  }

  /// Waits (with sync) until w's push is done, the server stops or shortly
  /// before the caller's deadline, and answers.
  grpc::Status answer(std::unique_lock<std::mutex> &lock, Worker &w,
                      grpc::ServerContext *context, PushResponse *response) {
    auto deadline = context->deadline();
    auto now = std::chrono::system_clock::now();
    if (deadline > now && deadline - now < std::chrono::hours(24 * 365)) {
      // Answer before the caller gives up, so it learns why.
      auto margin = std::min<std::chrono::system_clock::duration>(
          std::chrono::milliseconds(500), (deadline - now) / 4);
      changed.wait_until(lock, deadline - margin,
                         [&] { return w.done || stopping; });
    } else {
      changed.wait(lock, [&] { return w.done || stopping; });
    }
    if (!w.done) {
      if (jobEnded)
        return ended();
      if (stopping)
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            task() + " is shutting down");
      return grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          "step " + std::to_string(current) + " has " +
              std::to_string(aggregate.count()) + " of the " +
              std::to_string(options.replicas_to_aggregate) +
              " pushes it aggregates (replicas_to_aggregate): another "
              "worker is slow, or gone");
    }
    response->set_outcome(w.outcome);
    response->set_current_step(current);
    return toGrpc(w.status);
  }

  // --- Lifetime -----------------------------------------------------------

  void requestStop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    std::lock_guard<std::mutex> lock(stopMutex);
    stopRequested = true;
    stopCv.notify_all();
  }

  /// Ends serving (once): calls in flight get 5 s, then are cancelled.
  void shutdownServer() {
    std::lock_guard<std::mutex> lock(shutdownMutex);
    if (!server)
      return;
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    server->Wait();
    server.reset();
  }

  Shard &shard;
  ServerOptions options;
  Layout layout;

  std::shared_mutex vars;
  std::mutex mutex;
  std::condition_variable changed;
  int64_t current = 0;
  Aggregate aggregate;
  std::vector<Pending> pending;
  std::map<int, Worker> workers;
  ServerStats counters;
  std::atomic<int64_t> pulls{0};
  bool stopping = false;

  std::atomic<bool> jobEnded{false};
  std::mutex stopMutex;
  std::condition_variable stopCv;
  bool stopRequested = false;
  bool endRequested = false;

  std::mutex shutdownMutex;
  std::unique_ptr<grpc::Server> server;
  int boundPort = 0;
};

Server::Server(Shard &shard, ServerOptions options)
    : impl_(std::make_unique<Impl>(shard, std::move(options))) {}

Server::~Server() {
  impl_->requestStop();
  impl_->shutdownServer();
}

int Server::start() {
  std::lock_guard<std::mutex> lock(impl_->shutdownMutex);
  if (impl_->server)
    return impl_->boundPort;
  const std::string &address = impl_->options.address;
  // Ask the system first: gRPC would log its own multi-line report of a
  // port in use before failing.
  if (address.size() < 2 || address.compare(address.size() - 2, 2, ":0") != 0)
    if (std::string why = bindError(address); !why.empty())
      throw rt::ParameterServerError("cannot serve " + impl_->task() + " at " +
                                     address + ": " + why);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(impl_.get());
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  // gRPC binds with SO_REUSEPORT by default: a second task at the same
  // address would then share the port instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::string why = bindError(address);
    throw rt::ParameterServerError(
        "cannot serve " + impl_->task() + " at " + address + ": " +
        (why.empty() ? "gRPC could not listen there" : why));
  }
  impl_->server = std::move(server);
  impl_->boundPort = port;
  return port;
}

void Server::serve() {
  start();
  {
    std::unique_lock<std::mutex> lock(impl_->stopMutex);
    impl_->stopCv.wait(
        lock, [&] { return impl_->stopRequested || impl_->endRequested; });
    if (!impl_->stopRequested)
      impl_->stopCv.wait_for(lock, kJobEndGrace,
                             [&] { return impl_->stopRequested; });
  }
  impl_->shutdownServer();
}

void Server::stop() { impl_->requestStop(); }

int Server::port() const { return impl_->boundPort; }

int64_t Server::current_step() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->current;
}

ServerStats Server::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  ServerStats s = impl_->counters;
  s.pulls = impl_->pulls.load();
  return s;
}

} // namespace estc::ps
