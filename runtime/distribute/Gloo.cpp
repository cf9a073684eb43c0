//===- runtime/distribute/Gloo.cpp - rt::Collective over Gloo's TCP ------===//
//
// Gloo (Debian's libgloo-dev) moves the bytes: a full mesh of TCP pairs set
// up through the chief's rendezvous store (Rendezvous.h), and its ring
// algorithms. The all-reduce is Gloo's ring (reduce-scatter, then
// all-gather): each segment's sum is computed once, by one replica, in an
// order fixed by the replica count, then copied to the others -- so every
// replica gets the same bits, run after run.
//
// A failed collective (Gloo's IoException: a closed connection, a timeout)
// is named after the replica that was lost: the chief's store knows which
// replica's connection closed without a goodbye (it died) and which
// stopped its heartbeat (it froze); the others ask it. A chief that cannot
// be asked is itself the lost one.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Distribute.h"
#include "runtime/distribute/Rendezvous.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace estc::rt::distribute {

namespace {

using SteadyClock = std::chrono::steady_clock;

/// gloo::rendezvous::Store over the chief's store.
class Store : public gloo::rendezvous::Store {
public:
  Store(StoreClient &client, double timeoutSecs)
      : client_(client), timeout_(timeoutSecs) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    client_.set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string &key) override {
    std::string v = getNamed(key, deadline());
    return std::vector<char>(v.begin(), v.end());
  }
  /// Gloo's keys end in the rank whose address they hold: a missing one
  /// names that replica.
  std::function<std::string(int)> describe;
  void wait(const std::vector<std::string> &keys) override {
    wait(keys,
         std::chrono::milliseconds(static_cast<int64_t>(timeout_ * 1000)));
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    auto end = SteadyClock::now() + timeout;
    for (const std::string &key : keys)
      if (!client_.has(key))
        getNamed(key, end);
  }

private:
  std::string getNamed(const std::string &key, SteadyClock::time_point end) {
    try {
      return client_.get(key, end);
    } catch (const CollectiveError &e) {
      size_t slash = key.rfind('/');
      std::string tail =
          slash == std::string::npos ? "" : key.substr(slash + 1);
      if (tail.empty() || tail.size() > 7 ||
          tail.find_first_not_of("0123456789") != std::string::npos ||
          !describe)
        throw;
      throw CollectiveError(describe(std::stoi(tail)) +
                            " did not join within " + timeoutText() + " s (" +
                            e.what() + ")");
    }
  }
  std::string timeoutText() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", timeout_);
    return buf;
  }
  SteadyClock::time_point deadline() const {
    return SteadyClock::now() +
           std::chrono::milliseconds(static_cast<int64_t>(timeout_ * 1000));
  }
  StoreClient &client_;
  double timeout_;
};

class GlooCollective : public Collective {
public:
  explicit GlooCollective(const GlooOptions &o) : options_(o) {
    if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
      throw CollectiveError("gloo: rank " + std::to_string(o.rank) +
                            " is not in [0, " + std::to_string(o.size) + ")");
    if (!(o.timeout_secs > 0 && o.timeout_secs < 1e7))
      throw CollectiveError("gloo: timeout_secs " +
                            std::to_string(o.timeout_secs) +
                            " is not a positive number of seconds");
    auto [host, port] = splitAddress(o.rendezvous, "the chief's address");
    auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.timeout_secs * 1000));
    auto deadline = SteadyClock::now() + timeout;
    if (o.rank == 0)
      server_ = std::make_unique<StoreServer>(host, port, o.size, task(0));
    client_ = std::make_unique<StoreClient>(
        host, port, o.rank, o.size, deadline, o.timeout_secs, task(o.rank));
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = o.host;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      Store store(*client_, o.timeout_secs);
      store.describe = [this](int r) { return described(r); };
      gloo::rendezvous::PrefixStore prefixed(
          "estc-" + std::to_string(client_->session()), store);
      context_ = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
      context_->setTimeout(timeout);
      context_->connectFullMesh(prefixed, device);
    } catch (const CollectiveError &) {
      throw;
    } catch (const std::exception &e) {
      throw CollectiveError(
          "gloo: " + task(o.rank) +
          " could not connect to the other replicas: " + firstLine(e.what()));
    }
    if (o.rank != 0) // the chief's store knows the chief is alive
      client_->startHeartbeat(heartbeat());
  }

  ~GlooCollective() override {
    // A clean exit: the chief must not report this replica as lost. A
    // chief that does not answer is not waited for long.
    if (client_)
      client_->bye(SteadyClock::now() + queryWait());
    context_.reset();
    client_.reset();
    server_.reset();
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  const char *engine() const override { return "gloo"; }

  void allReduceSum(float *data, size_t n) override {
    allReduce(data, n, &gloo::sum<float>);
  }
  void allReduceSum(double *data, size_t n) override {
    allReduce(data, n, &gloo::sum<double>);
  }
  void allReduceSum(int64_t *data, size_t n) override {
    allReduce(data, n, &gloo::sum<int64_t>);
  }

  void allGatherV(const void *in, void *out,
                  const size_t *bytesPerRank) override {
    std::vector<size_t> counts(bytesPerRank, bytesPerRank + size());
    size_t total = 0;
    for (size_t c : counts)
      total += c;
    if (total == 0)
      return;
    run("all_gather", [&] {
      gloo::AllgathervOptions opts(context_);
      // Gloo wants a non-null input pointer even for zero bytes.
      char dummy = 0;
      const char *src = counts[static_cast<size_t>(rank())]
                            ? static_cast<const char *>(in)
                            : &dummy;
      opts.setInput(const_cast<char *>(src),
                    counts[static_cast<size_t>(rank())]);
      opts.setOutput(static_cast<char *>(out), counts);
      opts.setTag(nextTag());
      gloo::allgatherv(opts);
    });
  }

  void broadcast(void *data, size_t bytes, int root) override {
    if (bytes == 0)
      return;
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<char *>(data), bytes);
      opts.setRoot(root);
      opts.setTag(nextTag());
      gloo::broadcast(opts);
    });
  }

  void barrier() override {
    run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(nextTag());
      gloo::barrier(opts);
    });
  }

private:
  template <typename T>
  void allReduce(T *data, size_t n,
                 void (*sum)(void *, const void *, const void *, size_t)) {
    if (n == 0 || size() == 1)
      return;
    run("all_reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, n);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setReduceFunction(sum);
      opts.setTag(nextTag());
      gloo::allreduce(opts);
    });
  }

  uint32_t nextTag() { return tag_++ & 0x7fffffff; }

  std::string task(int r) const {
    if (r >= 0 && static_cast<size_t>(r) < options_.task_names.size())
      return options_.task_names[static_cast<size_t>(r)];
    return "rank " + std::to_string(r);
  }
  std::string described(int r) const {
    std::string s = "task " + task(r);
    if (r >= 0 && static_cast<size_t>(r) < options_.addresses.size())
      s += " (" + options_.addresses[static_cast<size_t>(r)] + ")";
    return s;
  }
  static std::string firstLine(const std::string &s) {
    std::string line = s.substr(0, s.find('\n'));
    // Gloo prefixes its messages with the source location.
    size_t bracket = line.find("] ");
    if (line.rfind("[", 0) == 0 && bracket != std::string::npos)
      line = line.substr(bracket + 2);
    return line;
  }

  /// Runs a Gloo collective; its failure becomes one line naming the lost
  /// replica.
  template <typename Fn> void run(const char *what, Fn &&fn) {
    if (broken_)
      throw CollectiveError(*broken_);
    try {
      fn();
    } catch (const std::exception &e) {
      broken_ = lostMessage(what, firstLine(e.what()));
      throw CollectiveError(*broken_);
    }
  }

  /// How often a replica tells the chief it is alive, and how long a
  /// replica may be silent before the chief calls it frozen: long against
  /// the beat, so a busy machine is not mistaken for a frozen replica, and
  /// short against the timeout, which a frozen replica's peers wait out
  /// before they ask.
  std::chrono::milliseconds heartbeat() const {
    double secs = std::clamp(options_.timeout_secs / 10, 0.05, 1.0);
    return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
  }
  std::chrono::milliseconds silence() const {
    return std::max(3 * heartbeat(),
                    std::chrono::milliseconds(
                        static_cast<int64_t>(options_.timeout_secs * 500)));
  }
  /// How long a replica waits for the chief's answer after a failure.
  std::chrono::milliseconds queryWait() const {
    double secs = std::clamp(options_.timeout_secs / 2, 1.0, 5.0);
    return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
  }

  /// "lost task worker:1 (127.0.0.1:2223) during all_reduce: <gloo's
  /// text>": the chief's store says which replica's connection closed (or
  /// which stopped its heartbeat); it may learn of a closed one a moment
  /// after the collective failed, so it is asked for up to two seconds.
  std::string lostMessage(const char *what, const std::string &text) {
    std::set<int> dead, silent;
    const char *frozen = " (it stopped answering: frozen, or its host or "
                         "network is down)";
    auto end = SteadyClock::now() + std::chrono::seconds(2);
    for (;;) {
      if (server_) {
        dead = server_->dead();
        silent = server_->silent(silence());
      } else {
        StoreClient::Answer a = client_->lost(
            silence(), SteadyClock::now() + queryWait(), &dead, &silent);
        if (a != StoreClient::Answer::Answered)
          return "lost " + described(0) + " during " + what + ": " + text +
                 (a == StoreClient::Answer::Silent ? frozen : "");
      }
      dead.erase(rank());
      silent.erase(rank());
      if (!dead.empty() || !silent.empty() || SteadyClock::now() >= end)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (dead.empty() && silent.empty())
      return std::string(what) + " failed on " + described(rank()) +
             " (no replica is known to have died or frozen: the network "
             "may be down): " +
             text;
    std::string names;
    for (int r : dead.empty() ? silent : dead)
      names += (names.empty() ? "" : ", ") + described(r);
    return "lost " + names + " during " + what + ": " + text +
           (dead.empty() ? frozen : "");
  }

  GlooOptions options_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t tag_ = 1;
  std::optional<std::string> broken_;
};

} // namespace

std::unique_ptr<Collective> connect_gloo(const GlooOptions &options) {
  return std::make_unique<GlooCollective>(options);
}

} // namespace estc::rt::distribute
