//===- runtime/ps/Client.cpp - A worker's connection to its ps tasks -----===//
//
// One gRPC channel per ps task; calls to several tasks (a dense pull, a
// flush, a save) go out concurrently, one thread each, and the first
// failure (in task order) is thrown once all have ended.
//
//===----------------------------------------------------------------------===//
#include "runtime/ps/Client.h"

#include "lib/Support/Printable.h"
#include "runtime/ps/Protocol.h"
#include "runtime/ps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

namespace estc::ps {

namespace {

using Clock = std::chrono::steady_clock;

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

std::chrono::system_clock::time_point deadlineIn(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// What a task that accepted the connection but never answered is.
constexpr const char *kNoAnswer =
    "no answer (not an estc ps task, a frozen one, or a host that drops the "
    "connection)";

/// The cause in gRPC's message for an unreachable task ("failed to connect
/// to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:2223: Failed to
/// connect to remote host: Connection refused" -> "Connection refused").
/// A connection whose HTTP/2 handshake got no answer ends in "tcp
/// handshaker shutdown" (the deadline cut it short) or "connection attempt
/// timed out before receiving SETTINGS frame": the peer never answered.
std::string unavailableReason(const std::string &message) {
  for (const char *known : {"Connection refused", "Connection reset by peer",
                            "Socket closed", "Broken pipe"})
    if (message.find(known) != std::string::npos)
      return known;
  if (message.find("handshaker shutdown") != std::string::npos ||
      message.find("before receiving SETTINGS frame") != std::string::npos)
    return kNoAnswer;
  size_t last = message.rfind("last error: ");
  return escape_control_chars(
      last == std::string::npos ? message : message.substr(last + 12));
}

bool isGrpcDeadline(const grpc::Status &s) {
  return s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
         s.error_message() == "Deadline Exceeded";
}

std::string prefixOf(const std::string &key) {
  size_t slash = key.find('/');
  return slash == std::string::npos ? key : key.substr(0, slash + 1);
}

std::vector<int64_t> specShape(int32_t rank, const int64_t *shape) {
  return std::vector<int64_t>(shape, shape + rank);
}

/// The options of a client's channel to a task.
grpc::ChannelArguments channelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A task that comes up late is found within 0.1-1 s, not gRPC's
  // default 1-120 s backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Retries are ours (UNAVAILABLE, bounded), and each client has its
  // own connections.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

std::string describeTensor(rt::DType dtype, const std::vector<int64_t> &shape) {
  return std::string(rt::dtypeName(dtype)) + " " + shapeText(shape);
}

} // namespace

struct Client::Impl {
  struct Task {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<ParameterServer::Stub> stub;
  };
  struct Staged {
    bool set = false;
    std::vector<int64_t> shape;
    std::string bytes;
  };

  Impl(ClientOptions o, const rt::ModelSpec &s)
      : options(std::move(o)), spec(s) {
    auto bad = [&](const std::string &what) {
      throw std::invalid_argument("ps client for model '" +
                                  std::string(spec.name ? spec.name : "") +
                                  "': " + what);
    };
    if (spec.psTasks < 1)
      bad("the model was not compiled for ps training (no ps tasks)");
    if (static_cast<size_t>(spec.psTasks) != options.addresses.size())
      bad("the model was compiled for " + std::to_string(spec.psTasks) +
          " ps tasks, but " + std::to_string(options.addresses.size()) +
          " addresses are given");
    if (options.timeout_secs <= 0 || options.connect_timeout_secs <= 0 ||
        options.retries < 0)
      bad("timeout_secs and connect_timeout_secs must be > 0 and retries "
          ">= 0");
    for (const auto &[vars, n] : {std::pair{spec.variables, spec.numVariables},
                                  std::pair{spec.psRemote, spec.numPsRemote}})
      for (int32_t v = 0; v < n; ++v) {
        const rt::VariableSpec &var = vars[v];
        if (var.psTask < -1 || var.psTask >= spec.psTasks ||
            (vars == spec.psRemote && var.psTask < 0))
          bad("variable '" + std::string(var.name) + "' is placed on ps:" +
              std::to_string(var.psTask) + ", which the job does not have");
        variables[var.name] = &var;
      }
    for (int32_t i = 0; i < spec.numPsInputs; ++i) {
      std::string key = spec.psInputs[i].key;
      std::string prefix = prefixOf(key);
      if (prefix == "learning_rate/") {
        inputTask.push_back(-1);
        continue;
      }
      if (prefix != "grad/" && prefix != "ids/" && prefix != "rows/")
        bad("ps input '" + key +
            "' is not grad/, ids/, rows/ or learning_rate/");
      std::string name = key.substr(prefix.size());
      auto it = variables.find(name);
      if (it == variables.end() || it->second->psTask < 0)
        bad("ps input '" + key + "' names variable '" + name +
            "', which no ps task holds");
      inputTask.push_back(it->second->psTask);
    }
    staged.resize(static_cast<size_t>(spec.numPsInputs));
    std::random_device random;
    session = (uint64_t(random()) << 32) ^ random() ^
              uint64_t(Clock::now().time_since_epoch().count());
    for (const std::string &address : options.addresses) {
      Task t;
      t.address = address;
      tasks.push_back(std::move(t));
      openChannel(tasks.size() - 1);
    }
  }

  /// A new channel (and connection) to task t. connect() opens one after
  /// each refused attempt: a channel whose first connection was refused
  /// (the task not listening yet) found the task up to 10 s after it
  /// began listening in Debian's gRPC 1.51 (its later connects stayed in
  /// progress until then), which was the start of every worker racing a
  /// ps task's bind. Only there: later, other threads may be calling the
  /// task's stub, and a refused connection means the task is gone.
  void openChannel(size_t t) {
    tasks[t].channel = grpc::CreateCustomChannel(
        tasks[t].address, grpc::InsecureChannelCredentials(),
        channelArguments());
    tasks[t].stub = ParameterServer::NewStub(tasks[t].channel);
  }

  std::string where(size_t t) const {
    return "ps:" + std::to_string(t) + " (" + tasks[t].address + ")";
  }

  /// One call to task t, deadline `timeout`, retried (when `retry`) while
  /// the task is UNAVAILABLE.
  template <typename Fn>
  grpc::Status call(size_t t, bool retry, double timeout, Fn &&rpc) {
    double backoff = 0.05;
    for (int attempt = 0;; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(deadlineIn(timeout));
      grpc::Status s = rpc(*tasks[t].stub, &context);
      if (s.ok() || s.error_code() != grpc::StatusCode::UNAVAILABLE || !retry ||
          attempt >= options.retries)
        return s;
      {
        std::lock_guard<std::mutex> lock(statsMutex);
        ++counters.retries;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
      backoff = std::min(backoff * 2, 1.0);
    }
  }

  [[noreturn]] void fail(size_t t, const char *what, const grpc::Status &s,
                         double timeout) const {
    std::string message = escape_control_chars(s.error_message());
    switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      throw rt::ParameterServerError("lost task " + where(t) + " during " +
                                     what + ": " +
                                     unavailableReason(s.error_message()));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (isGrpcDeadline(s))
        throw rt::ParameterServerError(
            "lost task " + where(t) + " during " + what +
            ": no answer within " + secondsText(timeout) +
            " (it stopped answering: frozen, or its host or network is down)");
      throw rt::ParameterServerError(where(t) + " did not finish " + what +
                                     " within " + secondsText(timeout) + ": " +
                                     message);
    case grpc::StatusCode::ABORTED:
      if (s.error_message() == kJobEnded) {
        jobEnded = true;
        throw rt::ParameterServerError(where(t) + " answered " + what + ": " +
                                       kJobEnded);
      }
      throw rt::ParameterServerError(where(t) + " failed " + what + ": " +
                                     message);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
      throw rt::ParameterServerError(where(t) + " refused " + what + ": " +
                                     message);
    default:
      throw rt::ParameterServerError(where(t) + " failed " + what + ": " +
                                     message);
    }
  }

  [[noreturn]] void badAnswer(size_t t, const char *what,
                              const std::string &why) const {
    throw rt::ParameterServerError(where(t) + " answered " + what + " with " +
                                   why);
  }

  /// fn(t) for every task in `which`, concurrently; then throws the first
  /// failure in task order.
  void forTasks(const std::vector<size_t> &which,
                const std::function<void(size_t)> &fn) {
    if (which.size() == 1) {
      fn(which[0]);
      return;
    }
    std::vector<std::future<void>> done;
    for (size_t t : which)
      done.push_back(std::async(std::launch::async, fn, t));
    std::exception_ptr first;
    for (std::future<void> &f : done) {
      try {
        f.get();
      } catch (...) {
        if (!first)
          first = std::current_exception();
      }
    }
    if (first)
      std::rethrow_exception(first);
  }

  std::vector<size_t> allTasks() const {
    std::vector<size_t> all(tasks.size());
    for (size_t t = 0; t < all.size(); ++t)
      all[t] = t;
    return all;
  }

  // --- connect ------------------------------------------------------------

  /// Task t's description, waiting up to `seconds` for the task to come up;
  /// with `reopen` (connect() only), on a new channel after each refusal.
  DescribeResponse describe(size_t t, double seconds, bool reopen = false) {
    auto start = Clock::now();
    std::string last;
    for (;;) {
      double left = seconds - since(start);
      if (left <= 0)
        break;
      DescribeResponse response;
      grpc::ClientContext context;
      context.set_deadline(deadlineIn(left));
      grpc::Status s = tasks[t].stub->Describe(&context, {}, &response);
      if (s.ok())
        return response;
      // Keep the first cause that says more than "no answer": the
      // attempt the deadline cuts short says only that.
      if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
        std::string why = unavailableReason(s.error_message());
        if (last.empty() || last == kNoAnswer)
          last = why;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (reopen)
          openChannel(t);
        continue;
      }
      if (isGrpcDeadline(s)) {
        if (last.empty())
          last = kNoAnswer;
        break;
      }
      fail(t, "describe", s, seconds);
    }
    throw rt::ParameterServerError("cannot reach ps:" + std::to_string(t) +
                                   " at " + tasks[t].address + " within " +
                                   secondsText(seconds) + ": " +
                                   (last.empty() ? "no answer" : last));
  }

  /// The first way task t's description does not fit the spec, or "".
  std::string mismatch(size_t t, const DescribeResponse &d) const {
    if (d.task_index() != static_cast<int>(t))
      return "it is task ps:" + std::to_string(d.task_index()) +
             " (the workers' and the ps tasks' TF_CONFIG differ)";
    if (!options.cluster.empty() && !d.cluster().empty() &&
        d.cluster() != options.cluster)
      return "it serves another job (cluster " + d.cluster() + ", this one " +
             options.cluster + ")";
    if (d.num_tasks() != spec.psTasks)
      return "it was started for " + std::to_string(d.num_tasks()) +
             " ps tasks, the model was compiled for " +
             std::to_string(spec.psTasks);
    std::map<std::string, const TensorInfo *> held, takes;
    for (const TensorInfo &v : d.variables())
      held[v.name()] = &v;
    for (const TensorInfo &in : d.inputs())
      takes[in.name()] = &in;
    auto differs = [](const TensorInfo &info, rt::DType dtype,
                      const std::vector<int64_t> &shape, std::string *there) {
      std::optional<rt::DType> theirs = fromProto(info.dtype());
      std::vector<int64_t> theirShape(info.shape().begin(), info.shape().end());
      *there = theirs ? describeTensor(*theirs, theirShape)
                      : "of dtype " + std::to_string(info.dtype());
      return !theirs || *theirs != dtype || theirShape != shape;
    };
    for (const auto &[name, info] : variables) {
      const rt::VariableSpec &var = *info;
      if (var.psTask != static_cast<int>(t))
        continue;
      auto it = held.find(var.name);
      if (it == held.end())
        return "it does not hold variable " + quoted(var.name) +
               ", which the model places there";
      std::vector<int64_t> shape = specShape(var.rank, var.shape);
      std::string there;
      if (differs(*it->second, var.dtype, shape, &there))
        return "variable " + quoted(var.name) + " is " + there + " there, " +
               describeTensor(var.dtype, shape) + " in the model";
    }
    std::set<std::string> pushed;
    for (int32_t i = 0; i < spec.numPsInputs; ++i) {
      int to = inputTask[static_cast<size_t>(i)];
      if (to != -1 && to != static_cast<int>(t))
        continue;
      const rt::TensorSpec &in = spec.psInputs[i];
      pushed.insert(in.key);
      auto it = takes.find(in.key);
      if (it == takes.end())
        return "its apply function takes no " + quoted(in.key) +
               ", which the model pushes there";
      std::vector<int64_t> shape = specShape(in.rank, in.shape);
      std::string there;
      if (differs(*it->second, in.dtype, shape, &there))
        return "apply input " + quoted(in.key) + " is " + there + " there, " +
               describeTensor(in.dtype, shape) + " in the model";
    }
    for (const TensorInfo &in : d.inputs())
      if (!pushed.count(in.name()))
        return "its apply function takes " + quoted(in.name()) +
               ", which the model does not push there";
    return "";
  }

  // --- push ---------------------------------------------------------------

  /// Stages n elements as ps input `input` (checked against the spec).
  template <typename T>
  void stage(int input, const T *data, int64_t n, rt::DType dtype) {
    if (input < 0 || input >= spec.numPsInputs)
      throw std::invalid_argument("push: input " + std::to_string(input) +
                                  " is not one of the model's " +
                                  std::to_string(spec.numPsInputs) +
                                  " ps inputs");
    const rt::TensorSpec &in = spec.psInputs[input];
    if (in.dtype != dtype)
      throw std::invalid_argument("push: ps input " + quoted(in.key) + " is " +
                                  rt::dtypeName(in.dtype) +
                                  ", the step pushed " + rt::dtypeName(dtype));
    std::vector<int64_t> shape = specShape(in.rank, in.shape);
    int64_t fixed = 1;
    int values = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == rt::kValuesDim)
        values = static_cast<int>(d);
      else
        fixed *= shape[d];
    }
    bool fits = n >= 0 && (values < 0 ? n == fixed
                                      : (fixed == 0 ? n == 0 : n % fixed == 0));
    if (!fits)
      throw std::invalid_argument("push: ps input " + quoted(in.key) + " " +
                                  shapeText(shape) + " cannot hold the " +
                                  std::to_string(n) +
                                  " elements the step pushed");
    if (values >= 0)
      shape[static_cast<size_t>(values)] = fixed == 0 ? 0 : n / fixed;
    std::string bytes(reinterpret_cast<const char *>(data),
                      static_cast<size_t>(n) * sizeof(T));
    std::lock_guard<std::mutex> lock(stageMutex);
    staged[static_cast<size_t>(input)] = {true, std::move(shape),
                                          std::move(bytes)};
  }

  // --- state --------------------------------------------------------------

  ClientOptions options;
  const rt::ModelSpec &spec;
  std::vector<Task> tasks;
  /// A pull waiting for waitRows(): the ids as asked, each id once, and
  /// where the rows go.
  struct Pull {
    const rt::VariableSpec *var = nullptr;
    std::vector<int64_t> ids, unique;
    float *rows = nullptr;
    int64_t rowElements = 0;
  };
  std::mutex pullMutex;
  std::vector<Pull> pending;
  /// The model's copies the last flush's answers carried (per task:
  /// variable index and tensor), for the next pull_dense(model).
  std::mutex prefetchMutex;
  std::vector<std::vector<std::pair<int, Tensor>>> prefetched;
  bool prefetchValid = false;
  /// Task 0's current step after the last flush (its global_step).
  std::atomic<int64_t> stepAfterPush{-1};
  /// Whether a task answered kJobEnded.
  mutable std::atomic<bool> jobEnded{false};
  /// The model's variables and the ones it pulls rows of, by name.
  std::map<std::string, const rt::VariableSpec *> variables;
  /// Per ps input: the task it goes to, -1 for every task.
  std::vector<int> inputTask;

  std::mutex stageMutex;
  std::vector<Staged> staged;
  uint64_t session = 0;
  int64_t sequence = 0;

  mutable std::mutex statsMutex;
  ClientStats counters;
};

Client::Client(ClientOptions options, const rt::ModelSpec &spec)
    : impl_(std::make_unique<Impl>(std::move(options), spec)) {}

Client::~Client() = default;

void Client::connect() {
  Impl &m = *impl_;
  m.forTasks(m.allTasks(), [&](size_t t) {
    DescribeResponse d =
        m.describe(t, m.options.connect_timeout_secs, /*reopen=*/true);
    std::string why = m.mismatch(t, d);
    if (!why.empty())
      throw rt::ParameterServerError(
          "model '" + std::string(m.spec.name ? m.spec.name : "") +
          "' does not fit " + m.where(t) + ": " + why);
  });
}

std::vector<int> Client::dense_variables() const {
  const rt::ModelSpec &spec = impl_->spec;
  std::vector<int> out;
  for (int32_t v = 0; v < spec.numVariables; ++v)
    if (spec.variables[v].psTask >= 0)
      out.push_back(v);
  return out;
}

void Client::pull_dense(rt::CompiledModel &model) {
  Impl &m = *impl_;
  {
    // The copies the last push's answers brought back, once.
    std::lock_guard<std::mutex> lock(m.prefetchMutex);
    if (m.prefetchValid) {
      m.prefetchValid = false;
      for (size_t t = 0; t < m.prefetched.size(); ++t)
        for (auto &[v, tensor] : m.prefetched[t]) {
          const rt::VariableSpec &var = m.spec.variables[v];
          std::vector<int64_t> shape = specShape(var.rank, var.shape);
          size_t bytes =
              static_cast<size_t>(rt::numElements(var.rank, var.shape, 0)) *
              rt::dtypeBytes(var.dtype);
          if (fromProto(tensor.dtype()) != var.dtype ||
              std::vector<int64_t>(tensor.shape().begin(),
                                   tensor.shape().end()) != shape ||
              tensor.data().size() != bytes)
            m.badAnswer(t, "push",
                        "a tensor for variable " + quoted(var.name) +
                            " that is not its " +
                            describeTensor(var.dtype, shape));
          std::memcpy(model.variable_data(v), tensor.data().data(), bytes);
        }
      m.prefetched.clear();
      return;
    }
  }
  std::vector<DenseTarget> targets;
  for (int v : dense_variables())
    targets.push_back({v, model.variable_data(v)});
  pull_dense(targets);
}

void Client::pull_dense(const std::vector<DenseTarget> &targets) {
  Impl &m = *impl_;
  const rt::ModelSpec &spec = m.spec;
  auto start = Clock::now();
  // Per task, its variables in groups of at most a message's bytes.
  std::vector<std::vector<std::vector<DenseTarget>>> groups(m.tasks.size());
  std::vector<int64_t> groupBytes(m.tasks.size(), 0);
  for (const DenseTarget &target : targets) {
    if (target.variable < 0 || target.variable >= spec.numVariables)
      throw std::invalid_argument(
          "pull_dense: variable " + std::to_string(target.variable) +
          " is not one of the model's " + std::to_string(spec.numVariables));
    const rt::VariableSpec &var = spec.variables[target.variable];
    if (var.psTask < 0)
      throw std::invalid_argument("pull_dense: variable " + quoted(var.name) +
                                  " is not on a ps task");
    size_t t = static_cast<size_t>(var.psTask);
    int64_t bytes = rt::numElements(var.rank, var.shape, 0) *
                    static_cast<int64_t>(rt::dtypeBytes(var.dtype));
    if (groups[t].empty() ||
        (groupBytes[t] > 0 && groupBytes[t] + bytes > kMaxMessageBytes)) {
      groups[t].emplace_back();
      groupBytes[t] = 0;
    }
    groups[t].back().push_back(target);
    groupBytes[t] += bytes;
  }
  std::vector<size_t> which;
  for (size_t t = 0; t < groups.size(); ++t)
    if (!groups[t].empty())
      which.push_back(t);
  std::atomic<int64_t> calls{0}, received{0};
  m.forTasks(which, [&](size_t t) {
    for (const std::vector<DenseTarget> &group : groups[t]) {
      PullDenseRequest request;
      for (const DenseTarget &target : group)
        request.add_names(spec.variables[target.variable].name);
      PullDenseResponse response;
      grpc::Status s =
          m.call(t, true, m.options.timeout_secs,
                 [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                   response.Clear();
                   return stub.PullDense(c, request, &response);
                 });
      if (!s.ok())
        m.fail(t, "pull_dense", s, m.options.timeout_secs);
      ++calls;
      if (response.tensors_size() != static_cast<int>(group.size()))
        m.badAnswer(t, "pull_dense",
                    std::to_string(response.tensors_size()) + " tensors for " +
                        std::to_string(group.size()) + " variables");
      for (size_t i = 0; i < group.size(); ++i) {
        const rt::VariableSpec &var = spec.variables[group[i].variable];
        const Tensor &got = response.tensors(static_cast<int>(i));
        std::vector<int64_t> shape = specShape(var.rank, var.shape);
        size_t bytes =
            static_cast<size_t>(rt::numElements(var.rank, var.shape, 0)) *
            rt::dtypeBytes(var.dtype);
        if (fromProto(got.dtype()) != var.dtype ||
            std::vector<int64_t>(got.shape().begin(), got.shape().end()) !=
                shape ||
            got.data().size() != bytes)
          m.badAnswer(t, "pull_dense",
                      "a tensor for variable " + quoted(var.name) +
                          " that is not its " +
                          describeTensor(var.dtype, shape));
        std::memcpy(group[i].data, got.data().data(), bytes);
        received += static_cast<int64_t>(bytes);
      }
    }
  });
  std::lock_guard<std::mutex> lock(m.statsMutex);
  m.counters.pulls += calls;
  m.counters.pull_bytes += received;
  m.counters.pull_seconds += since(start);
}

/// The variable a pull of `variable` with rows of `rowElements` reads,
/// checked against the spec.
static const rt::VariableSpec &
pulledVariable(const rt::ModelSpec &spec, int variable, int64_t rowElements) {
  if (variable < 0 || variable >= spec.numPsRemote)
    throw std::invalid_argument(
        "pull_rows: variable " + std::to_string(variable) +
        " is not one of the model's " + std::to_string(spec.numPsRemote) +
        " pulled by rows");
  const rt::VariableSpec &var = spec.psRemote[variable];
  if (var.psTask < 0 || var.dtype != rt::DType::F32 || var.rank < 1)
    throw std::invalid_argument(
        "pull_rows: variable " + quoted(var.name) +
        " is not an f32 variable of rank >= 1 on a ps task");
  int64_t perRow = rt::numElements(var.rank - 1, var.shape + 1, 0);
  if (perRow != rowElements)
    throw std::invalid_argument("pull_rows: a row of variable " +
                                quoted(var.name) + " has " +
                                std::to_string(perRow) + " elements, not " +
                                std::to_string(rowElements));
  return var;
}

void Client::pullRows(int variable, const int64_t *ids, int64_t n, float *rows,
                      int64_t rowElements) {
  pullRowsLater(variable, ids, n, rows, rowElements);
  waitRows();
}

void Client::pullRowsLater(int variable, const int64_t *ids, int64_t n,
                           float *rows, int64_t rowElements) {
  Impl &m = *impl_;
  const rt::VariableSpec &var = pulledVariable(m.spec, variable, rowElements);
  if (n <= 0)
    return;
  Impl::Pull pull;
  pull.var = &var;
  pull.ids.assign(ids, ids + n);
  pull.unique = pull.ids;
  std::sort(pull.unique.begin(), pull.unique.end());
  pull.unique.erase(std::unique(pull.unique.begin(), pull.unique.end()),
                    pull.unique.end());
  pull.rows = rows;
  pull.rowElements = rowElements;
  std::lock_guard<std::mutex> lock(m.pullMutex);
  m.pending.push_back(std::move(pull));
}

void Client::waitRows() {
  Impl &m = *impl_;
  std::vector<Impl::Pull> pulls;
  {
    std::lock_guard<std::mutex> lock(m.pullMutex);
    pulls.swap(m.pending);
  }
  if (pulls.empty())
    return;
  auto start = Clock::now();
  // Per task, its pulls in order.
  std::vector<std::vector<const Impl::Pull *>> byTask(m.tasks.size());
  for (const Impl::Pull &p : pulls)
    byTask[static_cast<size_t>(p.var->psTask)].push_back(&p);
  std::vector<size_t> which;
  for (size_t t = 0; t < byTask.size(); ++t)
    if (!byTask[t].empty())
      which.push_back(t);
  std::atomic<int64_t> rowsPulled{0}, received{0};
  m.forTasks(which, [&](size_t t) {
    PullRowsBatchRequest request;
    for (const Impl::Pull *p : byTask[t]) {
      PullRowsRequest *one = request.add_pulls();
      one->set_variable(p->var->name);
      one->mutable_ids()->Assign(p->unique.begin(), p->unique.end());
    }
    PullRowsBatchResponse response;
    grpc::Status s =
        m.call(t, true, m.options.timeout_secs,
               [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                 response.Clear();
                 return stub.PullRowsBatch(c, request, &response);
               });
    if (!s.ok())
      m.fail(t, "pull_rows", s, m.options.timeout_secs);
    if (response.rows_size() != static_cast<int>(byTask[t].size()))
      m.badAnswer(t, "pull_rows",
                  std::to_string(response.rows_size()) + " tensors for " +
                      std::to_string(byTask[t].size()) + " pulls");
    for (size_t k = 0; k < byTask[t].size(); ++k) {
      const Impl::Pull &p = *byTask[t][k];
      const Tensor &got = response.rows(static_cast<int>(k));
      size_t rowBytes = static_cast<size_t>(p.rowElements) * sizeof(float);
      if (got.dtype() != DT_F32 || got.shape_size() != p.var->rank ||
          got.shape(0) != static_cast<int64_t>(p.unique.size()) ||
          got.data().size() != p.unique.size() * rowBytes)
        m.badAnswer(t, "pull_rows",
                    "rows that are not " + std::to_string(p.unique.size()) +
                        " rows of variable " + quoted(p.var->name));
      const char *from = got.data().data();
      for (size_t i = 0; i < p.ids.size(); ++i) {
        size_t j = static_cast<size_t>(
            std::lower_bound(p.unique.begin(), p.unique.end(), p.ids[i]) -
            p.unique.begin());
        std::memcpy(p.rows + static_cast<int64_t>(i) * p.rowElements,
                    from + j * rowBytes, rowBytes);
      }
      rowsPulled += static_cast<int64_t>(p.unique.size());
      received += static_cast<int64_t>(got.data().size());
    }
  });
  std::lock_guard<std::mutex> lock(m.statsMutex);
  m.counters.pulls += static_cast<int64_t>(which.size());
  m.counters.rows_pulled += rowsPulled;
  m.counters.pull_bytes += received;
  m.counters.pull_seconds += since(start);
}

void Client::push(int input, const float *data, int64_t n) {
  impl_->stage(input, data, n, rt::DType::F32);
}

void Client::push(int input, const int64_t *data, int64_t n) {
  impl_->stage(input, data, n, rt::DType::I64);
}

bool Client::flush(int64_t globalStep) {
  Impl &m = *impl_;
  const rt::ModelSpec &spec = m.spec;
  auto start = Clock::now();
  std::vector<Impl::Staged> staged(m.staged.size());
  int64_t sequence;
  {
    std::lock_guard<std::mutex> lock(m.stageMutex);
    staged.swap(m.staged);
    m.staged.resize(staged.size());
    sequence = ++m.sequence;
  }
  for (size_t i = 0; i < staged.size(); ++i)
    if (!staged[i].set)
      throw rt::ParameterServerError("flush: the step staged no " +
                                     quoted(spec.psInputs[i].key) +
                                     " (ps input " + std::to_string(i) + ")");
  std::vector<PushRequest> requests(m.tasks.size());
  int64_t bytes = 0;
  // The model's copies come back with each task's answer: the next
  // pull_dense(model) needs no call of its own.
  std::vector<std::vector<int>> copies(m.tasks.size());
  for (int v : dense_variables())
    copies[static_cast<size_t>(spec.variables[v].psTask)].push_back(v);
  for (size_t t = 0; t < m.tasks.size(); ++t) {
    PushRequest &r = requests[t];
    r.set_worker(m.options.worker);
    r.set_session(m.session);
    r.set_sequence(sequence);
    r.set_global_step(globalStep);
    for (int v : copies[t])
      r.add_pull_names(spec.variables[v].name);
  }
  {
    std::lock_guard<std::mutex> lock(m.prefetchMutex);
    m.prefetched.assign(m.tasks.size(), {});
    m.prefetchValid = false;
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    const rt::TensorSpec &in = spec.psInputs[i];
    int to = m.inputTask[i];
    for (size_t t = 0; t < m.tasks.size(); ++t) {
      if (to != -1 && to != static_cast<int>(t))
        continue;
      NamedTensor *named = requests[t].add_tensors();
      named->set_key(in.key);
      Tensor *tensor = named->mutable_tensor();
      tensor->set_dtype(toProto(in.dtype));
      tensor->mutable_shape()->Assign(staged[i].shape.begin(),
                                      staged[i].shape.end());
      if (to == -1)
        tensor->set_data(staged[i].bytes);
      else
        tensor->set_data(std::move(staged[i].bytes));
      bytes += static_cast<int64_t>(tensor->data().size());
    }
  }
  std::vector<int> stale(m.tasks.size(), 0);
  m.forTasks(m.allTasks(), [&](size_t t) {
    PushResponse response;
    grpc::Status s =
        m.call(t, true, m.options.timeout_secs,
               [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                 return stub.Push(c, requests[t], &response);
               });
    if (!s.ok())
      m.fail(t, "push", s, m.options.timeout_secs);
    stale[t] = response.outcome() == PushResponse::STALE;
    if (t == 0)
      m.stepAfterPush = response.current_step();
    if (response.pulled_size() != static_cast<int>(copies[t].size()))
      m.badAnswer(t, "push",
                  std::to_string(response.pulled_size()) +
                      " variables for the " + std::to_string(copies[t].size()) +
                      " asked back");
    std::lock_guard<std::mutex> lock(m.prefetchMutex);
    for (int k = 0; k < response.pulled_size(); ++k)
      m.prefetched[t].emplace_back(copies[t][static_cast<size_t>(k)],
                                   std::move(*response.mutable_pulled(k)));
  });
  {
    std::lock_guard<std::mutex> lock(m.prefetchMutex);
    m.prefetchValid = true;
  }
  bool applied = std::find(stale.begin(), stale.end(), 1) == stale.end();
  std::lock_guard<std::mutex> lock(m.statsMutex);
  m.counters.pushes += 1;
  m.counters.push_bytes += bytes;
  m.counters.push_seconds += since(start);
  m.counters.stale_pushes += applied ? 0 : 1;
  return applied;
}

int64_t Client::step_after_flush() const { return impl_->stepAfterPush; }

int64_t Client::global_step() {
  Impl &m = *impl_;
  GetStateResponse response;
  grpc::Status s =
      m.call(0, true, m.options.timeout_secs,
             [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
               return stub.GetState(c, {}, &response);
             });
  if (!s.ok())
    m.fail(0, "global_step", s, m.options.timeout_secs);
  return response.global_step();
}

void Client::save(const std::vector<std::string> &part_prefixes, int num_parts,
                  bool sync) {
  Impl &m = *impl_;
  if (part_prefixes.size() != m.tasks.size() ||
      num_parts < static_cast<int>(m.tasks.size()))
    throw std::invalid_argument(
        "ps::Client::save: " + std::to_string(part_prefixes.size()) +
        " part prefixes of " + std::to_string(num_parts) + " parts for " +
        std::to_string(m.tasks.size()) + " ps tasks");
  m.forTasks(m.allTasks(), [&](size_t t) {
    SaveRequest request;
    request.set_prefix(part_prefixes[t]);
    request.set_shard(static_cast<int>(t));
    request.set_num_shards(num_parts);
    request.set_sync(sync);
    request.set_cluster(m.options.cluster);
    SaveResponse response;
    grpc::Status s =
        m.call(t, true, m.options.save_timeout_secs,
               [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                 return stub.Save(c, request, &response);
               });
    if (!s.ok())
      m.fail(t, "save", s, m.options.save_timeout_secs);
  });
}

std::map<std::string, HostTensor> Client::pull_all() {
  Impl &m = *impl_;
  std::vector<std::map<std::string, HostTensor>> got(m.tasks.size());
  m.forTasks(m.allTasks(), [&](size_t t) {
    DescribeResponse d = m.describe(t, m.options.timeout_secs);
    // In groups of at most a message's bytes.
    std::vector<std::vector<const TensorInfo *>> groups(1);
    int64_t bytes = 0;
    for (const TensorInfo &v : d.variables()) {
      std::optional<rt::DType> dtype = fromProto(v.dtype());
      if (!dtype)
        m.badAnswer(t, "describe",
                    "variable " + quoted(v.name()) + " of an unknown dtype");
      int64_t n = static_cast<int64_t>(rt::dtypeBytes(*dtype));
      for (int64_t d : v.shape())
        n *= d;
      if (bytes > 0 && bytes + n > kMaxMessageBytes) {
        groups.emplace_back();
        bytes = 0;
      }
      groups.back().push_back(&v);
      bytes += n;
    }
    for (const std::vector<const TensorInfo *> &group : groups) {
      if (group.empty())
        continue;
      PullDenseRequest request;
      for (const TensorInfo *v : group)
        request.add_names(v->name());
      PullDenseResponse response;
      grpc::Status s =
          m.call(t, true, m.options.timeout_secs,
                 [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                   response.Clear();
                   return stub.PullDense(c, request, &response);
                 });
      if (!s.ok())
        m.fail(t, "pull_all", s, m.options.timeout_secs);
      if (response.tensors_size() != static_cast<int>(group.size()))
        m.badAnswer(t, "pull_all",
                    std::to_string(response.tensors_size()) + " tensors for " +
                        std::to_string(group.size()) + " variables");
      for (size_t i = 0; i < group.size(); ++i) {
        const Tensor &tensor = response.tensors(static_cast<int>(i));
        HostTensor h;
        h.dtype = *fromProto(tensor.dtype());
        h.shape.assign(tensor.shape().begin(), tensor.shape().end());
        h.bytes.assign(tensor.data().begin(), tensor.data().end());
        if (static_cast<int64_t>(h.bytes.size()) !=
            h.numElements() * static_cast<int64_t>(rt::dtypeBytes(h.dtype)))
          m.badAnswer(t, "pull_all",
                      "a tensor for " + quoted(group[i]->name()) +
                          " whose bytes do not fit its shape");
        got[t].emplace(group[i]->name(), std::move(h));
      }
    }
  });
  // A variable several tasks keep (an optimizer's non-slot state, as TF 1
  // Adam's beta powers): the first task's.
  std::map<std::string, HostTensor> all;
  for (std::map<std::string, HostTensor> &task : got)
    for (auto &[name, tensor] : task)
      all.emplace(name, std::move(tensor));
  return all;
}

bool Client::job_ended() const { return impl_->jobEnded; }

void Client::shutdown() {
  Impl &m = *impl_;
  ShutdownRequest request;
  request.set_cluster(m.options.cluster);
  m.forTasks(m.allTasks(), [&](size_t t) {
    ShutdownResponse response;
    grpc::Status s =
        m.call(t, false, m.options.timeout_secs,
               [&](ParameterServer::Stub &stub, grpc::ClientContext *c) {
                 return stub.Shutdown(c, request, &response);
               });
    // A task that is gone already is what shutdown wants.
    if (!s.ok() && s.error_code() != grpc::StatusCode::UNAVAILABLE)
      m.fail(t, "shutdown", s, m.options.timeout_secs);
  });
}

ClientStats Client::stats() const {
  std::lock_guard<std::mutex> lock(impl_->statsMutex);
  return impl_->counters;
}

void Client::reset_stats() {
  std::lock_guard<std::mutex> lock(impl_->statsMutex);
  impl_->counters = {};
}

double measure_round_trip(const std::string &address, int calls,
                          double timeout_secs) {
  auto channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), channelArguments());
  if (!channel->WaitForConnected(
          std::chrono::system_clock::now() +
          std::chrono::milliseconds(static_cast<int64_t>(timeout_secs * 1e3))))
    throw std::runtime_error("ps task at " + address + ": not serving within " +
                             std::to_string(timeout_secs) + " s");
  auto stub = ParameterServer::NewStub(channel);
  std::vector<double> seconds;
  int warmup = std::max(1, calls / 10);
  for (int i = 0; i < warmup + calls; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    GetStateRequest request;
    GetStateResponse response;
    auto start = std::chrono::steady_clock::now();
    grpc::Status s = stub->GetState(&context, request, &response);
    double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!s.ok())
      throw std::runtime_error("ps task at " + address +
                               ": GetState failed: " + s.error_message());
    if (i >= warmup)
      seconds.push_back(took);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2,
                   seconds.end());
  return seconds[seconds.size() / 2];
}

} // namespace estc::ps
