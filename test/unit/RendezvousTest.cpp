//===- RendezvousTest.cpp - The chief's rendezvous store -----------------===//
//
// runtime/distribute/Rendezvous.h: the request parser and the frame reader
// (what the store reads from any TCP peer, also fuzzed), then the store in
// process on a loopback port: HELLO and its refusals, SET / GET, which
// replicas are dead (closed without BYE) or silent (no heartbeat), and what
// the server does with a peer that breaks the protocol.
//
//===----------------------------------------------------------------------===//

#include "runtime/distribute/Rendezvous.h"

#include "runtime/Collective.h"
#include "runtime/distribute/Distribute.h"
#include "test/distributed/LoopbackPort.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

using namespace estc::rt;
using namespace estc::rt::distribute;
using Clock = std::chrono::steady_clock;

namespace {

std::string hello(uint32_t rank, uint32_t size) {
  std::string p(1, static_cast<char>(Op::Hello));
  putU32(p, rank);
  putU32(p, size);
  return p;
}

std::string parseError(const std::string &payload) {
  std::string error;
  EXPECT_FALSE(parseRequest(payload, &error).has_value());
  return error;
}

/// A raw TCP connection to the store, for what a client never sends.
class Raw {
public:
  explicit Raw(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  }
  ~Raw() { ::close(fd_); }
  void send(const std::string &bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  /// Everything the server sends until it closes the connection (or 5 s).
  std::string untilClosed() {
    std::string out;
    char buf[4096];
    pollfd p{fd_, POLLIN, 0};
    while (::poll(&p, 1, 5000) > 0) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0)
        return out;
      out.append(buf, static_cast<size_t>(n));
    }
    ADD_FAILURE() << "the store kept the connection open";
    return out;
  }

private:
  int fd_;
};

/// The ERROR frame the store sends before it closes a connection.
std::string errorFrame(const std::string &text) {
  std::string p(1, static_cast<char>(Op::Error));
  putBytes(p, text);
  return frame(p);
}

struct Store {
  explicit Store(int size = 2)
      : port(estc::test::free_loopback_port()),
        server("127.0.0.1", port, size, "chief:0") {}
  std::unique_ptr<StoreClient> join(int rank, int size = 2) {
    return std::make_unique<StoreClient>(
        "127.0.0.1", port, rank, size, Clock::now() + std::chrono::seconds(5),
        5.0, rank == 0 ? "chief:0" : "worker:" + std::to_string(rank - 1));
  }
  /// Waits (up to 5 s) until the server's view satisfies `pred`.
  template <typename Pred> bool eventually(Pred pred) {
    for (auto end = Clock::now() + std::chrono::seconds(5);
         Clock::now() < end;) {
      if (pred())
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  int port;
  StoreServer server;
};

std::string refusal(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const CollectiveError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Rendezvous, RequestsParseAndMalformedOnesAreNamed) {
  std::optional<Request> r = parseRequest(hello(1, 3), nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, Op::Hello);
  EXPECT_EQ(r->rank, 1u);
  EXPECT_EQ(r->size, 3u);
  std::string set(1, static_cast<char>(Op::Set));
  putBytes(set, "k");
  putBytes(set, std::string("v\0w", 3));
  r = parseRequest(set, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->key, "k");
  EXPECT_EQ(r->value, std::string("v\0w", 3));
  std::string dead(1, static_cast<char>(Op::Dead));
  putU32(dead, 1500);
  r = parseRequest(dead, nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->silentMs, 1500u);

  EXPECT_EQ(parseError(""), "an empty frame");
  EXPECT_EQ(parseError("\x7f"), "an unknown request");
  EXPECT_EQ(parseError(hello(3, 3)), "a HELLO with a rank outside its size");
  EXPECT_EQ(parseError(hello(0, 0)), "a HELLO with a rank outside its size");
  EXPECT_EQ(parseError(hello(0, 2).substr(0, 6)),
            "a HELLO without its rank and size");
  EXPECT_EQ(parseError(set.substr(0, set.size() - 1)),
            "a SET without its key and value");
  EXPECT_EQ(parseError(set + "x"), "trailing bytes after a request");
  EXPECT_EQ(parseError(std::string(1, static_cast<char>(Op::Dead))),
            "a DEAD without its silence");
  std::string longKey(1, static_cast<char>(Op::Get));
  putBytes(longKey, std::string(kMaxKey + 1, 'k'));
  EXPECT_EQ(parseError(longKey), "a GET without its key");
}

TEST(Rendezvous, FramesSplitAcrossReadsAndTooLongOnesAreRefused) {
  FrameReader reader;
  std::string stream = frame("ab") + frame("") + frame("cde");
  std::string error;
  for (char c : stream) // a byte at a time
    ASSERT_TRUE(reader.append(&c, 1, &error));
  EXPECT_EQ(reader.next(), "ab");
  EXPECT_EQ(reader.next(), "");
  EXPECT_EQ(reader.next(), "cde");
  EXPECT_EQ(reader.next(), std::nullopt);

  FrameReader small;
  small.setLimit(kMaxHello);
  std::string big = frame(std::string(kMaxHello + 1, 'x'));
  EXPECT_FALSE(small.append(big.data(), 4, &error));
  EXPECT_EQ(error, "a frame of 17 bytes (at most 16)");
  // A good frame, then the header of a too-long one behind it: the first
  // is read, then the reader is no longer valid.
  FrameReader both;
  std::string header;
  putU32(header, kMaxFrame + 1);
  std::string two = frame("ok") + header;
  EXPECT_TRUE(both.append(two.data(), two.size(), &error));
  EXPECT_TRUE(both.valid());
  EXPECT_EQ(both.next(), "ok");
  EXPECT_EQ(both.next(), std::nullopt);
  EXPECT_FALSE(both.valid(&error));
  EXPECT_EQ(error, "a frame of " + std::to_string(kMaxFrame + 1) +
                       " bytes (at most " + std::to_string(kMaxFrame) + ")");
  EXPECT_FALSE(both.append("x", 1, &error));
}

TEST(Rendezvous, ReplicasJoinAndShareValues) {
  Store store;
  auto chief = store.join(0);
  auto worker = store.join(1);
  EXPECT_NE(chief->session(), 0u);
  EXPECT_EQ(worker->session(), chief->session());
  EXPECT_FALSE(worker->has("k"));
  chief->set("k", std::string("v\0", 2));
  EXPECT_TRUE(worker->has("k"));
  EXPECT_EQ(worker->get("k", Clock::now()), std::string("v\0", 2));
  // A key set later is waited for.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    chief->set("late", "x");
  });
  EXPECT_EQ(worker->get("late", Clock::now() + std::chrono::seconds(5)), "x");
  later.join();
  EXPECT_EQ(refusal([&] {
              worker->get("never",
                          Clock::now() + std::chrono::milliseconds(50));
            }),
            "the rendezvous of task worker:0 timed out waiting for 'never'");
}

TEST(Rendezvous, TheChiefRefusesAnotherSizeAndATakenRank) {
  Store store;
  auto worker = store.join(1);
  std::string where = "the chief at 127.0.0.1:" + std::to_string(store.port);
  EXPECT_EQ(refusal([&] { store.join(1, 3); }),
            where + " refused task worker:0: this job has 2 replicas, the "
                    "replica says 3");
  EXPECT_EQ(refusal([&] { store.join(1); }),
            where + " refused task worker:0: rank 1 has joined already (two "
                    "tasks with one TF_CONFIG task?)");
  // Two chiefs: the port is taken.
  EXPECT_EQ(
      refusal(
          [&] { StoreServer second("127.0.0.1", store.port, 2, "chief:0"); }),
      "cannot serve the rendezvous at 127.0.0.1:" + std::to_string(store.port) +
          ": Address already in use (chief:0; another process serves "
          "it: a second chief?)");
}

TEST(Rendezvous, DeadAndSilentReplicas) {
  Store store(3);
  auto chief = store.join(0, 3);
  auto w0 = store.join(1, 3);
  auto w1 = store.join(2, 3);
  w0->startHeartbeat(std::chrono::milliseconds(20));
  // w1 sends nothing: after 300 ms it is silent, w0 (beating) is not, and
  // the chief (rank 0) never is.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(store.server.silent(std::chrono::milliseconds(300)),
            (std::set<int>{2}));
  std::set<int> dead, silent;
  EXPECT_EQ(w0->lost(std::chrono::milliseconds(300),
                     Clock::now() + std::chrono::seconds(5), &dead, &silent),
            StoreClient::Answer::Answered);
  EXPECT_EQ(dead, std::set<int>{});
  EXPECT_EQ(silent, std::set<int>{2});
  // A clean exit is not a lost replica; a closed connection is.
  w0->bye(Clock::now() + std::chrono::seconds(5));
  w0.reset();
  w1.reset();
  EXPECT_TRUE(store.eventually([&] { return !store.server.dead().empty(); }));
  EXPECT_EQ(store.server.dead(), std::set<int>{2});
  EXPECT_EQ(store.server.silent(std::chrono::milliseconds(0)), std::set<int>{});
  // A lost rank cannot join again in this job.
  EXPECT_EQ(refusal([&] { store.join(2, 3); }),
            "the chief at 127.0.0.1:" + std::to_string(store.port) +
                " refused task worker:1: rank 2 was lost in this job already "
                "(relaunch the whole job)");
}

TEST(Rendezvous, AChiefThatIsGoneIsLost) {
  int port = estc::test::free_loopback_port();
  auto server = std::make_unique<StoreServer>("127.0.0.1", port, 2, "chief:0");
  StoreClient worker("127.0.0.1", port, 1, 2,
                     Clock::now() + std::chrono::seconds(5), 5.0, "worker:0");
  server.reset();
  std::set<int> dead, silent;
  EXPECT_EQ(worker.lost(std::chrono::milliseconds(100),
                        Clock::now() + std::chrono::seconds(5), &dead, &silent),
            StoreClient::Answer::Closed);
  EXPECT_EQ(refusal([&] { worker.set("k", "v"); }),
            "lost the connection to the chief at 127.0.0.1:" +
                std::to_string(port) + " (task worker:0): closed");
}

TEST(Rendezvous, APeerBreakingTheProtocolIsAnsweredAndClosed) {
  Store store;
  {
    Raw raw(store.port);
    raw.send(frame(std::string(1, static_cast<char>(Op::Ping))));
    EXPECT_EQ(raw.untilClosed(), errorFrame("a request before HELLO"));
  }
  {
    Raw raw(store.port);
    raw.send(frame("\x7f"));
    EXPECT_EQ(raw.untilClosed(),
              errorFrame("malformed request: an unknown request"));
  }
  {
    // Before HELLO a frame may not be longer than a HELLO: the store does
    // not buffer megabytes for a stranger.
    Raw raw(store.port);
    std::string header;
    putU32(header, 1000);
    raw.send(header);
    EXPECT_EQ(raw.untilClosed(), "");
  }
  {
    Raw raw(store.port);
    raw.send(frame(hello(1, 2)) + frame(hello(1, 2)));
    std::string got = raw.untilClosed();
    EXPECT_EQ(got.substr(4 + 9), errorFrame("a second HELLO"));
  }
  // The store still serves (rank 1, closed after its HELLO, is lost).
  EXPECT_EQ(store.server.dead(), std::set<int>{1});
  auto chief = store.join(0);
  chief->set("k", "v");
  EXPECT_TRUE(chief->has("k"));
}

TEST(Rendezvous, ConnectGlooRefusesBadOptionsInOneLine) {
  auto error = [](distribute::GlooOptions o) {
    return refusal([&] { distribute::connect_gloo(o); });
  };
  distribute::GlooOptions o;
  o.rendezvous = "127.0.0.1:1";
  o.rank = 2;
  o.size = 2;
  EXPECT_EQ(error(o), "gloo: rank 2 is not in [0, 2)");
  o.rank = 0;
  o.timeout_secs = 0;
  EXPECT_EQ(error(o),
            "gloo: timeout_secs 0.000000 is not a positive number of seconds");
  o.timeout_secs = 1;
  o.rendezvous = "chief";
  EXPECT_EQ(error(o), "the chief's address 'chief' is not host:port (a port "
                      "in 1..65535)");
}
