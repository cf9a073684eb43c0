//===- ParameterServerTest.cpp - The parameter-server engine on loopback -===//
//
// runtime/ps (docs/design/distributed.md, "Parameter servers: the engine"):
// 1-3 ps servers on loopback ports (port 0, then the bound port), each
// serve() on a thread of the test process, over an in-test Shard of a
// couple of float variables that applies plain SGD by hand; clients
// (ps::Client) as workers. Real gRPC, no mocks. Also the C ABI of
// runtime/ParameterClient.h through MemRefs, and a compiled function's
// recorded error thrown by CompiledModel::run. Every call has a deadline:
// a hung server fails a test, never hangs it.
//
//===----------------------------------------------------------------------===//

#include "runtime/ParameterClient.h"
#include "runtime/ps/Client.h"
#include "runtime/ps/Protocol.h"
#include "runtime/ps/Server.h"
#include "runtime/ps/ps.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace estc;
using namespace estc::ps;
using rt::DType;

namespace {

// --- A shard: w [3, 2], emb [10, 4] and global_step, SGD by hand ---------

constexpr int64_t kRows = 10, kWidth = 4;

class TestShard : public Shard {
public:
  /// Holds w (and global_step) when `dense`, emb when `sparse`.
  TestShard(bool dense, bool sparse) : dense_(dense), sparse_(sparse) {
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = 1.0f + static_cast<float>(i);
    for (size_t i = 0; i < emb.size(); ++i)
      emb[i] = static_cast<float>(i);
  }

  std::vector<Variable> variables() override {
    std::vector<Variable> v;
    if (dense_) {
      v.push_back({"w", DType::F32, {3, 2}, w.data()});
      v.push_back({"global_step", DType::I64, {}, &step});
    }
    if (sparse_)
      v.push_back({"emb", DType::F32, {kRows, kWidth}, emb.data()});
    return v;
  }
  std::vector<InputSpec> inputs() override {
    std::vector<InputSpec> in;
    if (dense_)
      in.push_back({"grad/w", DType::F32, {3, 2}});
    if (sparse_) {
      in.push_back({"ids/emb", DType::I64, {rt::kValuesDim}});
      in.push_back({"rows/emb", DType::F32, {rt::kValuesDim, kWidth}});
    }
    in.push_back({"learning_rate/0", DType::F32, {}});
    return in;
  }
  void apply(const std::map<std::string, HostTensor> &inputs,
             int64_t) override {
    std::unique_lock<std::mutex> lock(gate);
    opened.wait(lock, [&] { return open; });
    float lr = inputs.at("learning_rate/0").as<float>()[0];
    if (dense_) {
      const float *g = inputs.at("grad/w").as<float>();
      firstGrads.push_back(g[0]);
      for (size_t i = 0; i < w.size(); ++i)
        w[i] -= lr * g[i];
      ++step;
    }
    if (sparse_) {
      const HostTensor &ids = inputs.at("ids/emb");
      const float *rows = inputs.at("rows/emb").as<float>();
      for (int64_t i = 0; i < ids.shape[0]; ++i)
        for (int64_t j = 0; j < kWidth; ++j)
          emb[static_cast<size_t>(ids.as<int64_t>()[i] * kWidth + j)] -=
              lr * rows[i * kWidth + j];
    }
    ++applies;
  }
  int64_t global_step() override { return dense_ ? step : -1; }
  void save(const std::string &prefix, int shard, int numShards,
            bool sync) override {
    if (prefix.find("full") != std::string::npos)
      throw std::runtime_error("cannot write " + prefix + ": disk full");
    saved = prefix + " " + std::to_string(shard) + "/" +
            std::to_string(numShards) + (sync ? " sync" : "");
  }

  std::vector<float> w = std::vector<float>(6);
  std::vector<float> emb = std::vector<float>(kRows * kWidth);
  int64_t step = 0;
  std::vector<float> firstGrads; ///< grad/w[0] of each apply, in order
  int applies = 0;
  std::string saved;
  // apply() waits while the gate is closed.
  std::mutex gate;
  std::condition_variable opened;
  bool open = true;

private:
  bool dense_, sparse_;
};

// --- The worker's ModelSpec ------------------------------------------------

const int64_t kWShape[] = {3, 2};
const int64_t kWShape33[] = {3, 3};
const int64_t kEmbShape[] = {kRows, kWidth};
const int64_t kIdsShape[] = {rt::kValuesDim};
const int64_t kRowsShape[] = {rt::kValuesDim, kWidth};

/// The model's variables and ps inputs: w and global_step on ps:`denseTask`,
/// emb, which the worker pulls rows of (ModelSpec::psRemote), on
/// ps:`sparseTask`, for `tasks` ps tasks.
struct Spec {
  Spec(int tasks, int denseTask, int sparseTask,
       const int64_t *wShape = kWShape) {
    variables[0] = {"w", DType::F32, 2, wShape, true, false, denseTask};
    variables[1] = {"global_step", DType::I64, 0,        nullptr,
                    false,         false,      denseTask};
    remote[0] = {"emb", DType::F32, 2, kEmbShape, true, false, sparseTask};
    inputs[0] = {"grad/w", DType::F32, 2, wShape};
    inputs[1] = {"ids/emb", DType::I64, 1, kIdsShape};
    inputs[2] = {"rows/emb", DType::F32, 2, kRowsShape};
    inputs[3] = {"learning_rate/0", DType::F32, 0, nullptr};
    spec.name = "PsModel";
    spec.numVariables = 2;
    spec.variables = variables;
    spec.numFunctions = 0;
    spec.functions = nullptr;
    spec.numChecks = 0;
    spec.checks = nullptr;
    spec.psTasks = tasks;
    spec.numPsInputs = 4;
    spec.psInputs = inputs;
    spec.numPsRemote = 1;
    spec.psRemote = remote;
  }
  rt::VariableSpec variables[2];
  rt::VariableSpec remote[1];
  rt::TensorSpec inputs[4];
  rt::ModelSpec spec{};
};

enum Input { GradW = 0, IdsEmb = 1, RowsEmb = 2, LearningRate = 3 };

/// Servers on loopback, each serve() on its own thread.
class Cluster {
public:
  Cluster(std::vector<TestShard *> shards, int replicasToAggregate = 0,
          const std::string &job = "") {
    for (size_t i = 0; i < shards.size(); ++i) {
      ServerOptions o;
      o.cluster = job;
      o.address = "127.0.0.1:0";
      o.task_index = static_cast<int>(i);
      o.num_tasks = static_cast<int>(shards.size());
      o.replicas_to_aggregate = replicasToAggregate;
      o.total_num_replicas = replicasToAggregate;
      servers.push_back(std::make_unique<Server>(*shards[i], o));
      int port = servers.back()->start();
      addresses.push_back("127.0.0.1:" + std::to_string(port));
    }
    for (auto &s : servers)
      threads.emplace_back([&s] { s->serve(); });
  }
  ~Cluster() {
    for (auto &s : servers)
      s->stop();
    for (std::thread &t : threads)
      t.join();
  }
  /// Stops task i and waits until it no longer serves.
  void stopTask(size_t i) {
    servers[i]->stop();
    threads[i].join();
    threads[i] = std::thread([] {});
  }
  ClientOptions options(int worker = 0, double timeout = 20) const {
    ClientOptions o;
    o.addresses = addresses;
    o.worker = worker;
    o.timeout_secs = timeout;
    o.retries = 2;
    return o;
  }

  std::vector<std::unique_ptr<Server>> servers;
  std::vector<std::string> addresses;
  std::vector<std::thread> threads;
};

/// Stages one step: grad/w all `g`, emb rows `ids` each all `r`, lr.
void stageStep(Client &c, float g, std::vector<int64_t> ids, float r,
               float lr = 0.5f) {
  std::vector<float> grad(6, g);
  std::vector<float> rows(ids.size() * kWidth, r);
  c.push(GradW, grad.data(), 6);
  c.push(IdsEmb, ids.data(), static_cast<int64_t>(ids.size()));
  c.push(RowsEmb, rows.data(), static_cast<int64_t>(rows.size()));
  c.push(LearningRate, &lr, 1);
}

/// The message `fn` throws as ParameterServerError ("" when none).
template <typename Fn> std::string errorOf(Fn &&fn) {
  try {
    fn();
  } catch (const rt::ParameterServerError &e) {
    EXPECT_EQ(std::strchr(e.what(), '\n'), nullptr) << e.what();
    return e.what();
  }
  return "";
}

} // namespace

// --- connect: Describe against the spec ----------------------------------

TEST(ParameterServer, ConnectChecksTheTasksAgainstTheModel) {
  TestShard s0(true, false), s1(false, true);
  Cluster cluster({&s0, &s1});
  Spec ok(2, 0, 1);
  Client client(cluster.options(), ok.spec);
  EXPECT_NO_THROW(client.connect());
  EXPECT_EQ(client.global_step(), 0);

  // Another shape of w: refused, naming the task and the variable.
  Spec wider(2, 0, 1, kWShape33);
  Client c2(cluster.options(), wider.spec);
  EXPECT_EQ(errorOf([&] { c2.connect(); }),
            "model 'PsModel' does not fit ps:0 (" + cluster.addresses[0] +
                "): variable 'w' is f32 [3, 2] there, f32 [3, 3] in the model");

  // The tasks' roles swapped: emb placed on ps:0, which does not hold it.
  Spec swapped(2, 1, 0);
  Client c3(cluster.options(), swapped.spec);
  EXPECT_EQ(errorOf([&] { c3.connect(); }),
            "model 'PsModel' does not fit ps:0 (" + cluster.addresses[0] +
                "): it does not hold variable 'emb', which the model places "
                "there");
}

TEST(ParameterServer, ConnectRefusesAnotherClusterSize) {
  TestShard s0(true, true), s1(false, false);
  Cluster cluster({&s0, &s1}); // started as 2 ps tasks
  Spec one(1, 0, 0);
  ClientOptions o = cluster.options();
  o.addresses.resize(1);
  Client client(o, one.spec);
  EXPECT_EQ(errorOf([&] { client.connect(); }),
            "model 'PsModel' does not fit ps:0 (" + cluster.addresses[0] +
                "): it was started for 2 ps tasks, the model was compiled "
                "for 1");
}

TEST(ParameterServer, ClientRefusesAddressesOtherThanTheModelsTasks) {
  Spec two(2, 0, 1);
  ClientOptions o;
  o.addresses = {"127.0.0.1:1"};
  try {
    Client client(o, two.spec);
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "ps client for model 'PsModel': the model was "
                           "compiled for 2 ps tasks, but 1 addresses are "
                           "given");
  }
}

TEST(ParameterServer, ConnectWaitsForATaskThatStartsLate) {
  // A free port: bound, then closed; the task starts there after the
  // worker began to connect.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Spec spec(1, 0, 0);
  ClientOptions o;
  o.addresses = {address};
  o.timeout_secs = 30;
  Client client(o, spec.spec);
  auto connected = std::async(std::launch::async, [&] { client.connect(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  TestShard s0(true, true);
  ServerOptions so;
  so.address = address;
  Server server(s0, so);
  server.start();
  EXPECT_NO_THROW(connected.get());
  EXPECT_EQ(client.global_step(), 0);
}

TEST(ParameterServer, ThreeTasksEachGetTheirOwnInputs) {
  // w and global_step on ps:0, nothing but the learning rate on ps:1, emb
  // on ps:2.
  TestShard s0(true, false), s1(false, false), s2(false, true);
  Cluster cluster({&s0, &s1, &s2});
  Spec spec(3, 0, 2);
  Client client(cluster.options(), spec.spec);
  client.connect();
  std::vector<float> w0 = s0.w, emb0 = s2.emb;
  std::vector<int64_t> ids = {9, 0};
  std::vector<float> rows(2 * kWidth);
  client.pullRows(0, ids.data(), 2, rows.data(), kWidth);
  EXPECT_EQ(rows[0], s2.emb[9 * kWidth]);
  stageStep(client, 1.0f, {9}, 2.0f);
  EXPECT_TRUE(client.flush(0));
  EXPECT_EQ(s0.applies, 1);
  EXPECT_EQ(s1.applies, 1);
  EXPECT_EQ(s2.applies, 1);
  EXPECT_FLOAT_EQ(s0.w[5], w0[5] - 0.5f);
  EXPECT_FLOAT_EQ(s2.emb[9 * kWidth + 1], emb0[9 * kWidth + 1] - 1.0f);
  EXPECT_EQ(client.global_step(), 1);
  client.save({"/tmp/m/p0", "/tmp/m/p1", "/tmp/m/p2"}, 4, false);
  EXPECT_EQ(s1.saved, "/tmp/m/p1 1/4");
  EXPECT_EQ(s2.saved, "/tmp/m/p2 2/4");
}

// --- pulls ---------------------------------------------------------------

TEST(ParameterServer, PullDenseFillsTheRemoteVariables) {
  TestShard s0(true, false), s1(false, true);
  Cluster cluster({&s0, &s1});
  Spec spec(2, 0, 1);
  Client client(cluster.options(), spec.spec);
  client.connect();
  // The model's copies: w and global_step (emb is pulled by rows).
  EXPECT_EQ(client.dense_variables(), (std::vector<int>{0, 1}));
  s0.step = 5;
  rt::CompiledModel model(spec.spec, nullptr);
  client.pull_dense(model);
  std::vector<float> w(6);
  std::memcpy(w.data(), model.variable_data(0), sizeof(float) * 6);
  EXPECT_EQ(w, s0.w);
  int64_t step = -1;
  std::memcpy(&step, model.variable_data(1), sizeof step);
  EXPECT_EQ(step, 5);
  // Named targets.
  s0.step = 7;
  client.pull_dense({{1, &step}});
  EXPECT_EQ(step, 7);
  ClientStats stats = client.stats();
  EXPECT_EQ(stats.pulls, 2);
  EXPECT_EQ(stats.pull_bytes, 6 * 4 + 8 + 8);
}

TEST(ParameterServer, PullRowsDeduplicatesAndScattersBack) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  std::vector<int64_t> ids = {3, 1, 3, 9, 1};
  std::vector<float> rows(ids.size() * kWidth, -1.0f);
  client.pullRows(0, ids.data(), 5, rows.data(), kWidth);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t j = 0; j < kWidth; ++j)
      EXPECT_EQ(rows[i * kWidth + j], s0.emb[ids[i] * kWidth + j]);
  EXPECT_EQ(client.stats().rows_pulled, 3); // 1, 3, 9
}

TEST(ParameterServer, ATaskOfAnotherJobIsRefusedAndKeepsServing) {
  // A port a later job reuses: its worker does not train on the task, and
  // its chief does not end it.
  TestShard s0(true, true);
  Cluster cluster({&s0}, 0, "job-a");
  Spec spec(1, 0, 0);
  ClientOptions o = cluster.options();
  o.cluster = "job-b";
  Client other(o, spec.spec);
  EXPECT_EQ(errorOf([&] { other.connect(); }),
            "model 'PsModel' does not fit ps:0 (" + cluster.addresses[0] +
                "): it serves another job (cluster job-a, this one job-b)");
  EXPECT_EQ(errorOf([&] { other.shutdown(); }),
            "ps:0 (" + cluster.addresses[0] +
                ") refused shutdown: ps:0 serves another job (its cluster is "
                "job-a, the chief's job-b)");
  // Nor does it write another job's checkpoint.
  EXPECT_EQ(errorOf([&] { other.save({"/tmp/m/part"}, 2, false); }),
            "ps:0 (" + cluster.addresses[0] +
                ") refused save: ps:0 serves another job (its cluster is "
                "job-a, the chief's job-b)");
  EXPECT_EQ(s0.saved, "");
  o.cluster = "job-a";
  Client mine(o, spec.spec);
  mine.connect(); // still serving
}

TEST(ParameterServer, DeferredPullsTravelAsOneCallPerTask) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  // A step's lookups: asked one by one, sent at the wait.
  std::vector<int64_t> a = {4, 2}, b = {7, 4, 7};
  std::vector<float> rowsA(a.size() * kWidth, -1.0f),
      rowsB(b.size() * kWidth, -1.0f);
  client.pullRowsLater(0, a.data(), 2, rowsA.data(), kWidth);
  client.pullRowsLater(0, b.data(), 3, rowsB.data(), kWidth);
  EXPECT_EQ(rowsA[0], -1.0f); // not yet
  EXPECT_EQ(client.stats().pulls, 0);
  client.waitRows();
  for (auto [ids, rows] : {std::pair{&a, &rowsA}, std::pair{&b, &rowsB}})
    for (size_t i = 0; i < ids->size(); ++i)
      for (int64_t j = 0; j < kWidth; ++j)
        EXPECT_EQ((*rows)[i * kWidth + j], s0.emb[(*ids)[i] * kWidth + j]);
  EXPECT_EQ(client.stats().pulls, 1);
  EXPECT_EQ(client.stats().rows_pulled, 4); // {2, 4} and {4, 7}
  client.waitRows();                        // nothing pending: no call
  EXPECT_EQ(client.stats().pulls, 1);
}

TEST(ParameterServer, PullRowsOutOfRangeIsOneLineNamingTheVariableAndId) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  std::vector<int64_t> ids = {2, 10};
  std::vector<float> rows(2 * kWidth);
  EXPECT_EQ(
      errorOf([&] { client.pullRows(0, ids.data(), 2, rows.data(), kWidth); }),
      "ps:0 (" + cluster.addresses[0] +
          ") refused pull_rows: id 10 of variable 'emb' is outside "
          "[0, 10)");
  ids = {-1};
  EXPECT_EQ(
      errorOf([&] { client.pullRows(0, ids.data(), 1, rows.data(), kWidth); }),
      "ps:0 (" + cluster.addresses[0] +
          ") refused pull_rows: id -1 of variable 'emb' is outside "
          "[0, 10)");
}

// --- pushes --------------------------------------------------------------

TEST(ParameterServer, AsyncPushesAreAppliedInArrivalOrder) {
  TestShard s0(true, false), s1(false, true);
  Cluster cluster({&s0, &s1});
  Spec spec(2, 0, 1);
  Client client(cluster.options(), spec.spec);
  client.connect();
  std::vector<float> w0 = s0.w, emb0 = s1.emb;
  stageStep(client, 1.0f, {2, 2}, 1.0f);
  EXPECT_TRUE(client.flush(0));
  stageStep(client, 2.0f, {5}, 4.0f);
  EXPECT_TRUE(client.flush(1));
  EXPECT_EQ(s0.firstGrads, (std::vector<float>{1.0f, 2.0f}));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(s0.w[i], w0[i] - 0.5f * 1.0f - 0.5f * 2.0f);
  // Row 2 twice (ids are not deduplicated in a push), row 5 once.
  EXPECT_FLOAT_EQ(s1.emb[2 * kWidth], emb0[2 * kWidth] - 2 * 0.5f);
  EXPECT_FLOAT_EQ(s1.emb[5 * kWidth + 3], emb0[5 * kWidth + 3] - 0.5f * 4.0f);
  EXPECT_EQ(s1.emb[7 * kWidth], emb0[7 * kWidth]);
  EXPECT_EQ(client.global_step(), 2);
  EXPECT_EQ(s1.applies, 2);
  ClientStats stats = client.stats();
  EXPECT_EQ(stats.pushes, 2);
  EXPECT_GT(stats.push_bytes, 0);
}

TEST(ParameterServer, AsyncPushesOfTwoWorkersAreEachApplied) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client a(cluster.options(0), spec.spec), b(cluster.options(1), spec.spec);
  a.connect();
  b.connect();
  std::vector<float> w0 = s0.w;
  auto pa = std::async(std::launch::async, [&] {
    stageStep(a, 1.0f, {0}, 0.0f);
    return a.flush(0);
  });
  stageStep(b, 3.0f, {1}, 0.0f);
  EXPECT_TRUE(b.flush(0));
  EXPECT_TRUE(pa.get());
  EXPECT_EQ(s0.applies, 2);
  EXPECT_FLOAT_EQ(s0.w[0], w0[0] - 0.5f * 4.0f);
}

TEST(ParameterServer, SyncAppliesTheMeanOfReplicasToAggregatePushesOnce) {
  TestShard s0(true, true);
  Cluster cluster({&s0}, /*replicasToAggregate=*/2);
  Spec spec(1, 0, 0);
  Client a(cluster.options(0), spec.spec), b(cluster.options(1), spec.spec);
  a.connect();
  b.connect();
  std::vector<float> w0 = s0.w, emb0 = s0.emb;
  std::atomic<bool> aReturned{false};
  auto pa = std::async(std::launch::async, [&] {
    stageStep(a, 1.0f, {1}, 2.0f);
    bool applied = a.flush(0);
    aReturned = true;
    return applied;
  });
  // Worker a's push has arrived; it waits for the step's second one.
  while (cluster.servers[0]->stats().pushes < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(cluster.servers[0]->stats().applies, 0);
  EXPECT_FALSE(aReturned);
  stageStep(b, 3.0f, {1, 4}, 6.0f);
  EXPECT_TRUE(b.flush(0));
  EXPECT_TRUE(pa.get());
  // One apply of the mean: dense (1 + 3) / 2; rows concatenated, / 2.
  EXPECT_EQ(s0.applies, 1);
  EXPECT_EQ(cluster.servers[0]->current_step(), 1);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(s0.w[i], w0[i] - 0.5f * 2.0f);
  EXPECT_FLOAT_EQ(s0.emb[1 * kWidth], emb0[1 * kWidth] - 0.5f * (2 + 6) / 2);
  EXPECT_FLOAT_EQ(s0.emb[4 * kWidth], emb0[4 * kWidth] - 0.5f * 6 / 2);
  EXPECT_EQ(s0.emb[2 * kWidth], emb0[2 * kWidth]);

  // A push of step 0 when the task is at step 1: stale, dropped.
  stageStep(a, 100.0f, {1}, 100.0f);
  EXPECT_FALSE(a.flush(0));
  EXPECT_EQ(s0.applies, 1);
  EXPECT_EQ(a.stats().stale_pushes, 1);
  EXPECT_EQ(cluster.servers[0]->stats().stale_pushes, 1);
  // The worker pulls the step and goes on: step 1 by both is applied.
  EXPECT_EQ(a.global_step(), 1);
  auto pa2 = std::async(std::launch::async, [&] {
    stageStep(a, 1.0f, {0}, 0.0f);
    return a.flush(1);
  });
  stageStep(b, 1.0f, {0}, 0.0f);
  EXPECT_TRUE(b.flush(1));
  EXPECT_TRUE(pa2.get());
  EXPECT_EQ(s0.applies, 2);
  EXPECT_EQ(a.global_step(), 2);
}

TEST(ParameterServer, SyncPushWithoutTheOtherReplicasMissesItsDeadline) {
  TestShard s0(true, true);
  Cluster cluster({&s0}, /*replicasToAggregate=*/2);
  Spec spec(1, 0, 0);
  Client a(cluster.options(0, /*timeout=*/2), spec.spec);
  a.connect();
  stageStep(a, 1.0f, {1}, 2.0f);
  EXPECT_EQ(errorOf([&] { a.flush(0); }),
            "ps:0 (" + cluster.addresses[0] +
                ") did not finish push within 2 s: step 0 has 1 of the 2 "
                "pushes it aggregates (replicas_to_aggregate): another "
                "worker is slow, or gone");
  EXPECT_EQ(s0.applies, 0);
}

/// Sends `request` to `address` as a raw Push (what a client's retry does).
grpc::Status rawPush(const std::string &address, const PushRequest &request,
                     PushResponse *response) {
  auto stub = ParameterServer::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  return stub->Push(&context, request, response);
}

PushRequest stepRequest(int worker, uint64_t session, int64_t sequence,
                        float g) {
  PushRequest r;
  r.set_worker(worker);
  r.set_session(session);
  r.set_sequence(sequence);
  r.set_global_step(0);
  std::vector<float> grad(6, g);
  float lr = 1.0f;
  auto add = [&](const char *key, DType dtype, std::vector<int64_t> shape,
                 const void *data, size_t bytes) {
    NamedTensor *t = r.add_tensors();
    t->set_key(key);
    toProto(dtype, shape, data, bytes, t->mutable_tensor());
  };
  add("grad/w", DType::F32, {3, 2}, grad.data(), 24);
  add("learning_rate/0", DType::F32, {}, &lr, 4);
  return r;
}

TEST(ParameterServer, ARetriedPushIsAppliedOnce) {
  TestShard s0(true, false);
  Cluster cluster({&s0});
  PushRequest first = stepRequest(3, 42, 1, 1.0f);
  PushResponse response;
  ASSERT_TRUE(rawPush(cluster.addresses[0], first, &response).ok());
  EXPECT_EQ(response.outcome(), PushResponse::APPLIED);
  // The same push again (its answer was lost): answered, not applied.
  ASSERT_TRUE(rawPush(cluster.addresses[0], first, &response).ok());
  EXPECT_EQ(response.outcome(), PushResponse::APPLIED);
  EXPECT_EQ(s0.applies, 1);
  EXPECT_EQ(cluster.servers[0]->stats().duplicate_pushes, 1);
  // The next one is applied; an older one is refused.
  ASSERT_TRUE(
      rawPush(cluster.addresses[0], stepRequest(3, 42, 2, 1.0f), &response)
          .ok());
  EXPECT_EQ(s0.applies, 2);
  grpc::Status old =
      rawPush(cluster.addresses[0], stepRequest(3, 42, 1, 1.0f), &response);
  EXPECT_EQ(old.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(old.error_message(),
            "push 1 of worker 3 is older than its last, 2");
  // A relaunched worker (a new session) starts its sequence again.
  ASSERT_TRUE(
      rawPush(cluster.addresses[0], stepRequest(3, 43, 1, 1.0f), &response)
          .ok());
  EXPECT_EQ(s0.applies, 3);
}

TEST(ParameterServer, BadPushesAreRefusedWithOneLine) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  stageStep(client, 1.0f, {3, 12}, 1.0f);
  EXPECT_EQ(errorOf([&] { client.flush(0); }),
            "ps:0 (" + cluster.addresses[0] +
                ") refused push: id 12 of input 'ids/emb' is outside [0, "
                "10), the rows of variable 'emb'");
  EXPECT_EQ(s0.applies, 0);
  // A step that staged only part of its inputs.
  float lr = 0.1f;
  client.push(LearningRate, &lr, 1);
  EXPECT_EQ(errorOf([&] { client.flush(0); }),
            "flush: the step staged no 'grad/w' (ps input 0)");
  // Raw requests: an unknown key, a wrong dtype, too few bytes.
  PushResponse response;
  PushRequest r = stepRequest(0, 1, 1, 1.0f);
  r.mutable_tensors(0)->set_key("grad/v\nx");
  grpc::Status s = rawPush(cluster.addresses[0], r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "unknown input 'grad/v\\nx' (this task's apply takes 4: grad/w, "
            "ids/emb, rows/emb, learning_rate/0)");
  r = stepRequest(0, 1, 1, 1.0f);
  r.mutable_tensors(0)->mutable_tensor()->set_dtype(DT_I32);
  EXPECT_EQ(rawPush(cluster.addresses[0], r, &response).error_message(),
            "input 'grad/w' is i32, the task takes f32");
  r = stepRequest(0, 1, 1, 1.0f);
  r.mutable_tensors(0)->mutable_tensor()->mutable_data()->resize(20);
  EXPECT_EQ(rawPush(cluster.addresses[0], r, &response).error_message(),
            "input 'grad/w' holds 20 bytes, not those of f32 [3, 2]");
  r = stepRequest(0, 1, 1, 1.0f);
  r.mutable_tensors(0)->mutable_tensor()->set_shape(0, 4);
  EXPECT_EQ(rawPush(cluster.addresses[0], r, &response).error_message(),
            "input 'grad/w' has shape [4, 2], the task takes [3, 2]");
  r = stepRequest(0, 1, 1, 1.0f); // lacks ids/emb and rows/emb
  EXPECT_EQ(rawPush(cluster.addresses[0], r, &response).error_message(),
            "the push lacks input 'ids/emb'");
  EXPECT_EQ(s0.applies, 0);
}

TEST(ParameterServer, AFailedApplyFailsThePush) {
  class Failing : public TestShard {
  public:
    Failing() : TestShard(true, true) {}
    void apply(const std::map<std::string, HostTensor> &, int64_t) override {
      throw std::runtime_error("NaN in grad/w");
    }
  } s0;
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  stageStep(client, 1.0f, {1}, 1.0f);
  EXPECT_EQ(errorOf([&] { client.flush(0); }),
            "ps:0 (" + cluster.addresses[0] +
                ") failed push: apply failed on ps:0: NaN in grad/w");
}

// --- deadlines and lost tasks ---------------------------------------------

TEST(ParameterServer, ATaskThatNeverAnswersIsAnErrorWithinTheTimeout) {
  // A listening socket that never accepts: the kernel completes the
  // handshake, nobody answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Spec spec(1, 0, 0);
  ClientOptions o;
  o.addresses = {address};
  o.timeout_secs = 1;
  o.connect_timeout_secs = 1;
  Client client(o, spec.spec);
  EXPECT_EQ(errorOf([&] { client.connect(); }),
            "cannot reach ps:0 at " + address +
                " within 1 s: no answer (not an estc ps task, a frozen one, "
                "or a host that drops the connection)");
  ::close(fd);
}

TEST(ParameterServer, AnUnreachableTaskIsNamedAfterTheTimeout) {
  // A port nobody serves: bound, then closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Spec spec(1, 0, 0);
  ClientOptions o;
  o.addresses = {address};
  o.timeout_secs = 1;
  o.connect_timeout_secs = 1;
  Client client(o, spec.spec);
  EXPECT_EQ(errorOf([&] { client.connect(); }),
            "cannot reach ps:0 at " + address +
                " within 1 s: Connection refused");
}

TEST(ParameterServer, ALostTaskIsNamedInTheCallsError) {
  TestShard s0(true, false), s1(false, true);
  Cluster cluster({&s0, &s1});
  Spec spec(2, 0, 1);
  Client client(cluster.options(0, 5), spec.spec);
  client.connect();
  cluster.stopTask(1);
  std::vector<int64_t> ids = {1};
  std::vector<float> rows(kWidth);
  EXPECT_EQ(
      errorOf([&] { client.pullRows(0, ids.data(), 1, rows.data(), kWidth); }),
      "lost task ps:1 (" + cluster.addresses[1] +
          ") during pull_rows: Connection refused");
  stageStep(client, 1.0f, {1}, 1.0f);
  EXPECT_EQ(errorOf([&] { client.flush(0); }),
            "lost task ps:1 (" + cluster.addresses[1] +
                ") during push: Connection refused");
  EXPECT_GT(client.stats().retries, 0);
}

TEST(ParameterServer, AStuckApplyIsADeadline) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(0, 1), spec.spec);
  client.connect();
  {
    std::lock_guard<std::mutex> lock(s0.gate);
    s0.open = false;
  }
  stageStep(client, 1.0f, {1}, 1.0f);
  EXPECT_EQ(errorOf([&] { client.flush(0); }),
            "lost task ps:0 (" + cluster.addresses[0] +
                ") during push: no answer within 1 s (it stopped answering: "
                "frozen, or its host or network is down)");
  {
    std::lock_guard<std::mutex> lock(s0.gate);
    s0.open = true;
  }
  s0.opened.notify_all();
}

// --- serving: bind errors, save, shutdown ---------------------------------

TEST(ParameterServer, ASecondServerAtTheSameAddressIsRefused) {
  TestShard s0(true, false), s1(true, false);
  Server first(s0, {});
  int port = first.start();
  ServerOptions o;
  o.address = "127.0.0.1:" + std::to_string(port);
  Server second(s1, o);
  EXPECT_EQ(errorOf([&] { second.start(); }),
            "cannot serve ps:0 at " + o.address + ": Address already in use");
}

TEST(ParameterServer, BadServerOptionsAndShardsAreOneLine) {
  TestShard s0(true, false);
  ServerOptions o;
  o.task_index = 2;
  o.num_tasks = 2;
  EXPECT_THROW(
      {
        try {
          Server s(s0, o);
        } catch (const std::invalid_argument &e) {
          EXPECT_STREQ(e.what(), "ps server: task index 2 is not one of the "
                                 "job's 2 ps tasks");
          throw;
        }
      },
      std::invalid_argument);
  class Bad : public TestShard {
  public:
    Bad() : TestShard(true, false) {}
    std::vector<InputSpec> inputs() override {
      return {{"grad/v", DType::F32, {3, 2}}};
    }
  } bad;
  try {
    Server s(bad, {});
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "ps shard: apply input 'grad/v' names variable "
                           "'v', which the shard does not hold");
  }
}

TEST(ParameterServer, SaveWritesEveryShardAndShutdownEndsServe) {
  TestShard s0(true, false), s1(false, true);
  Cluster cluster({&s0, &s1});
  Spec spec(2, 0, 1);
  Client client(cluster.options(), spec.spec);
  client.connect();
  EXPECT_THROW(client.save({"/tmp/m/a"}, 3, true), std::invalid_argument);
  EXPECT_THROW(client.save({"/tmp/m/a", "/tmp/m/b"}, 1, true),
               std::invalid_argument);
  EXPECT_EQ(errorOf([&] { client.save({"", "/tmp/m/b"}, 3, true); }),
            "ps:0 (" + cluster.addresses[0] +
                ") refused save: save: no checkpoint prefix");
  client.save({"/tmp/m/a", "/tmp/m/b"}, 3, true);
  EXPECT_EQ(s0.saved, "/tmp/m/a 0/3 sync");
  EXPECT_EQ(s1.saved, "/tmp/m/b 1/3 sync");
  EXPECT_EQ(errorOf([&] { client.save({"/full/a", "/tmp/m/b"}, 3, true); }),
            "ps:0 (" + cluster.addresses[0] +
                ") failed save: save: cannot write /full/a: disk full");
  // The chief ends the job: both serve() calls return (the cluster's
  // destructor joins their threads).
  client.shutdown();
  for (std::thread &t : cluster.threads)
    t.join();
  cluster.threads.clear();
  cluster.servers.clear();
}

// --- the C ABI compiled code calls ----------------------------------------

namespace {

template <typename T, int N>
rt::MemRef<T, N> view(T *data, std::array<int64_t, N> sizes,
                      std::array<int64_t, N> strides) {
  rt::MemRef<T, N> m{};
  m.allocated = m.aligned = data;
  m.offset = 0;
  for (int d = 0; d < N; ++d) {
    m.sizes[d] = sizes[d];
    m.strides[d] = strides[d];
  }
  return m;
}

/// Installs a client for the calling thread, and removes it.
struct ThreadClient {
  explicit ThreadClient(rt::ParameterClient *c) {
    rt::setThreadParameterClient(c);
  }
  ~ThreadClient() { rt::setThreadParameterClient(nullptr); }
};

} // namespace

TEST(ParameterServer, CAbiWithoutAClientIsAnError) {
  rt::setParameterClient(nullptr);
  std::vector<int64_t> ids = {1};
  std::vector<float> rows(kWidth, 7.0f);
  auto idView = view<int64_t, 1>(ids.data(), {1}, {1});
  auto rowView = view<float, 2>(rows.data(), {1, kWidth}, {kWidth, 1});
  _mlir_ciface_estc_ps_pull_rows_f32(&idView, &rowView, 0);
  _mlir_ciface_estc_ps_wait_rows();
  ASSERT_NE(estc_ps_error(), nullptr);
  EXPECT_STREQ(estc_ps_error(), "no parameter-server client: the model was "
                                "compiled for ps training");
  EXPECT_EQ(rows, std::vector<float>(kWidth, 0.0f));
  rt::setParameterClient(nullptr); // clears the error
  EXPECT_EQ(estc_ps_error(), nullptr);
  float g = 1;
  auto gView = view<float, 1>(&g, {1}, {1});
  _mlir_ciface_estc_ps_push_f32(&gView, 0);
  EXPECT_STREQ(estc_ps_error(), "no parameter-server client: the model was "
                                "compiled for ps training");
  rt::setParameterClient(nullptr);
}

TEST(ParameterServer, CAbiPullsAndPushesThroughStridedMemRefs) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  Client client(cluster.options(), spec.spec);
  client.connect();
  ThreadClient installed(&client);
  std::vector<float> w0 = s0.w, emb0 = s0.emb;

  // ids 4, 2, 4 at stride 2; rows into the columns of a transposed
  // [kWidth, 3] buffer (strides {1, 3}).
  std::vector<int64_t> idBuffer = {4, -9, 2, -9, 4, -9};
  std::vector<float> rowBuffer(3 * kWidth, -1.0f);
  auto ids = view<int64_t, 1>(idBuffer.data(), {3}, {2});
  auto rows = view<float, 2>(rowBuffer.data(), {3, kWidth}, {1, 3});
  _mlir_ciface_estc_ps_pull_rows_f32(&ids, &rows, 0);
  _mlir_ciface_estc_ps_wait_rows();
  ASSERT_EQ(estc_ps_error(), nullptr);
  int64_t want[] = {4, 2, 4};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < kWidth; ++j)
      EXPECT_EQ(rowBuffer[j * 3 + i], s0.emb[want[i] * kWidth + j]);

  // grad/w at stride 2; ids contiguous; rows at stride 3; lr a scalar.
  std::vector<float> gradBuffer(12);
  for (size_t i = 0; i < 6; ++i)
    gradBuffer[2 * i] = 1.0f + static_cast<float>(i);
  auto grad = view<float, 1>(gradBuffer.data(), {6}, {2});
  _mlir_ciface_estc_ps_push_f32(&grad, GradW);
  std::vector<int64_t> pushIds = {1};
  auto pushIdView = view<int64_t, 1>(pushIds.data(), {1}, {1});
  _mlir_ciface_estc_ps_push_i64(&pushIdView, IdsEmb);
  std::vector<float> pushRows(3 * kWidth, 2.0f);
  auto pushRowView = view<float, 1>(pushRows.data(), {kWidth}, {3});
  _mlir_ciface_estc_ps_push_f32(&pushRowView, RowsEmb);
  float lr = 0.5f;
  auto lrView = view<float, 1>(&lr, {1}, {1});
  _mlir_ciface_estc_ps_push_f32(&lrView, LearningRate);
  ASSERT_EQ(estc_ps_error(), nullptr);
  EXPECT_TRUE(client.flush(0));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(s0.w[i], w0[i] - 0.5f * (1.0f + static_cast<float>(i)));
  EXPECT_FLOAT_EQ(s0.emb[1 * kWidth + 2], emb0[1 * kWidth + 2] - 1.0f);

  // A refused pull is recorded (one line), its rows are zeros, and later
  // calls are no-ops until the client is set again.
  idBuffer = {11, 0, 0, 0, 0, 0};
  _mlir_ciface_estc_ps_pull_rows_f32(&ids, &rows, 0);
  _mlir_ciface_estc_ps_wait_rows();
  ASSERT_NE(estc_ps_error(), nullptr);
  EXPECT_EQ(std::string(estc_ps_error()),
            "ps:0 (" + cluster.addresses[0] +
                ") refused pull_rows: id 11 of variable 'emb' is outside "
                "[0, 10)");
  for (int64_t j = 0; j < kWidth; ++j)
    EXPECT_EQ(rowBuffer[j * 3], 0.0f);
  int64_t pulls = client.stats().pulls;
  idBuffer = {1, 0, 1, 0, 1, 0};
  _mlir_ciface_estc_ps_pull_rows_f32(&ids, &rows, 0);
  _mlir_ciface_estc_ps_wait_rows();
  EXPECT_EQ(client.stats().pulls, pulls);
  // Set again (the error cleared), a push of the wrong size is recorded.
  rt::setThreadParameterClient(&client);
  EXPECT_EQ(estc_ps_error(), nullptr);
  auto shortGrad = view<float, 1>(gradBuffer.data(), {5}, {1});
  _mlir_ciface_estc_ps_push_f32(&shortGrad, GradW);
  ASSERT_NE(estc_ps_error(), nullptr);
  EXPECT_STREQ(estc_ps_error(), "push: ps input 'grad/w' [3, 2] cannot hold "
                                "the 5 elements the step pushed");
}

namespace {
/// A "compiled" function that pulls row 11 of emb (out of range).
void pullsABadRow(void **) {
  int64_t id = 11;
  float row[kWidth];
  auto ids = view<int64_t, 1>(&id, {1}, {1});
  auto rows = view<float, 2>(row, {1, kWidth}, {kWidth, 1});
  _mlir_ciface_estc_ps_pull_rows_f32(&ids, &rows, 0);
  _mlir_ciface_estc_ps_wait_rows();
}
} // namespace

TEST(ParameterServer, CompiledModelRunThrowsTheRecordedError) {
  TestShard s0(true, true);
  Cluster cluster({&s0});
  Spec spec(1, 0, 0);
  rt::FunctionSpec fn{"train", 0, nullptr, 0, nullptr, 0, 0, false, 0, 0};
  spec.spec.numFunctions = 1;
  spec.spec.functions = &fn;
  rt::EntryPoint entries[] = {pullsABadRow};
  rt::CompiledModel model(spec.spec, entries);
  Client client(cluster.options(), spec.spec);
  client.connect();
  ThreadClient installed(&client);
  try {
    model.run("train");
    FAIL() << "no error";
  } catch (const rt::ParameterServerError &e) {
    EXPECT_EQ(std::string(e.what()),
              "ps:0 (" + cluster.addresses[0] +
                  ") refused pull_rows: id 11 of variable 'emb' is outside "
                  "[0, 10)");
  }
}
