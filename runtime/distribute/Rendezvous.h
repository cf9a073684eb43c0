//===- runtime/distribute/Rendezvous.h - Where the replicas meet ---------===//
//
// Gloo's replicas exchange their transport addresses through a key-value
// store (gloo::rendezvous::Store). Debian's Gloo has file, hash and Redis
// stores but no TCP one, and a Redis server is one more service to run, so
// the chief serves this small store itself at its TF_CONFIG address: a
// thread with a poll loop, length-prefixed binary frames. The connection
// every replica keeps to it for the job's lifetime is also how a lost
// replica is named: the chief sees which replica's connection closed
// without a goodbye (a dead one), and which stopped sending its heartbeat
// (a frozen one); the others ask it after a collective fails.
//
// Frames: u32 payload length (little-endian, at most kMaxFrame; kMaxHello
// before a connection's HELLO), then the payload: u8 op, then its fields
// (u32 / u64 little-endian; strings and byte strings as u32 length +
// bytes). Requests and replies:
//
//   HELLO rank:u32 size:u32 -> OK session:u64 | ERROR text
//   SET key value           -> OK | ERROR text (the store is full)
//   GET key                 -> FOUND value | MISSING
//   DEAD silent_ms:u32      -> RANKS n:u32 rank:u32... m:u32 rank:u32...
//                              (closed without BYE; then those not heard
//                              from for silent_ms)
//   PING                    -> OK  (the heartbeat)
//   BYE                     -> OK  (a clean exit: not a lost replica)
//
// The bytes come from the network: parseRequest and FrameReader validate
// every length and field, and test/fuzz/rendezvous_fuzzer.cpp fuzzes them.
// The server bounds what a peer can hold: kMaxHello bytes and
// kHelloSeconds before HELLO, kMaxConnections connections, kMaxStoreBytes
// of values, and a send timeout for a peer that does not read its replies.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H
#define ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace estc::rt::distribute {

constexpr uint32_t kMaxFrame = 64u << 20;
constexpr uint32_t kMaxKey = 1024;
/// A HELLO's payload is 9 bytes: a connection that has not said HELLO may
/// send no longer frame (nor stay longer than kHelloSeconds).
constexpr uint32_t kMaxHello = 16;
constexpr int kHelloSeconds = 10;
constexpr size_t kMaxStoreBytes = size_t(256) << 20;
constexpr size_t kMaxConnections = 1024;

enum class Op : uint8_t {
  Hello = 1,
  Set = 2,
  Get = 3,
  Dead = 4,
  Bye = 5,
  Ping = 6,
  Ok = 0x80,
  Error = 0x81,
  Found = 0x82,
  Missing = 0x83,
  Ranks = 0x84,
};

struct Request {
  Op op = Op::Hello;
  uint32_t rank = 0, size = 0; // Hello
  uint32_t silentMs = 0;       // Dead
  std::string key;             // Set, Get
  std::string value;           // Set
};

/// The request in `payload`; nullopt with the reason in `error` for
/// anything malformed (unknown op, a length past the end, trailing bytes,
/// a key over kMaxKey).
std::optional<Request> parseRequest(const std::string &payload,
                                    std::string *error);

/// Splits a byte stream into frames' payloads.
class FrameReader {
public:
  /// Appends received bytes; false (with `error`) once a frame longer than
  /// the limit has begun: the connection is then closed.
  bool append(const char *data, size_t n, std::string *error);
  /// The next complete payload, if any (none once a frame is too long).
  std::optional<std::string> next();
  /// The longest payload accepted (kMaxFrame unless lowered).
  void setLimit(uint32_t limit) { limit_ = limit; }
  /// False (with `error`) when the next frame is longer than the limit.
  bool valid(std::string *error = nullptr) const { return !tooLong(error); }

private:
  bool tooLong(std::string *error) const;
  std::string buffer_;
  size_t at_ = 0;
  uint32_t limit_ = kMaxFrame;
};

/// Encoding helpers (little-endian).
void putU32(std::string &out, uint32_t v);
void putU64(std::string &out, uint64_t v);
void putBytes(std::string &out, const std::string &s);
std::string frame(const std::string &payload);

/// The chief's store: serves `host:port` until destroyed.
class StoreServer {
public:
  /// Binds and starts serving; throws CollectiveError (one line) when the
  /// address cannot be bound.
  StoreServer(const std::string &host, int port, int size,
              const std::string &who);
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  /// Ranks whose connection closed without BYE.
  std::set<int> dead() const;
  /// Ranks (other than the chief's own 0) still connected that have sent
  /// nothing for `silence`: frozen, or their host or network is down.
  std::set<int> silent(std::chrono::milliseconds silence) const;

private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    int fd;
    FrameReader reader;
    Clock::time_point accepted;
    int rank = -1;
    bool bye = false;
  };
  void loop();
  /// Handles one payload; false closes the connection.
  bool handle(Connection &c, const std::string &payload,
              std::vector<Connection> &all);

  int listenFd_ = -1;
  int wakeFd_[2] = {-1, -1};
  int size_;
  uint64_t session_;
  std::map<std::string, std::string> values_;
  size_t valueBytes_ = 0;
  mutable std::mutex stateMutex_;
  std::set<int> dead_;
  std::map<int, Clock::time_point> lastSeen_; ///< ranks connected, not BYE
  std::thread thread_;
};

/// A replica's connection to the chief's store. Every request waits for
/// its reply until a deadline; a chief that does not answer by then breaks
/// the connection (a late reply would answer the wrong request), and every
/// later request fails at once.
class StoreClient {
public:
  using Clock = std::chrono::steady_clock;
  /// Connects (retrying until `deadline`, each attempt bounded by it), says
  /// HELLO as `rank` of `size`. CollectiveError: "cannot reach the chief at
  /// H:P within N s (task T): ...", or the chief's refusal.
  StoreClient(const std::string &host, int port, int rank, int size,
              Clock::time_point deadline, double timeoutSecs,
              const std::string &who);
  ~StoreClient();

  uint64_t session() const { return session_; }
  void set(const std::string &key, const std::string &value);
  /// The value, waiting for the key until `deadline`.
  std::string get(const std::string &key, Clock::time_point deadline);
  bool has(const std::string &key);
  /// How the chief answered lost(): it did; its connection is closed (it
  /// died); or it did not answer by the deadline (frozen).
  enum class Answer { Answered, Closed, Silent };
  /// The lost replicas the chief knows of: those whose connection closed
  /// (`dead`), and those silent for `silence` (`silent`).
  Answer lost(std::chrono::milliseconds silence, Clock::time_point deadline,
              std::set<int> *dead, std::set<int> *silent);
  /// Sends PING every `interval` from a thread of its own until bye() or
  /// destruction, so the chief can tell a frozen replica from a busy one.
  void startHeartbeat(std::chrono::milliseconds interval);
  /// A clean exit (waits for the chief's answer until `deadline`).
  void bye(Clock::time_point deadline);

private:
  /// Sends a request and returns the reply's payload; nullopt when the
  /// chief did not answer by `deadline` (the connection is then closed).
  /// CollectiveError for a lost connection or the chief's refusal.
  std::optional<std::string> call(const std::string &payload,
                                  Clock::time_point deadline);
  /// call() within the timeout; no answer is a CollectiveError.
  std::string request(const std::string &payload);
  void stopHeartbeat();

  int fd_ = -1;
  std::string where_, who_, timeoutText_;
  double timeoutSecs_;
  uint64_t session_ = 0;
  /// fd_ is used by one request at a time: whoever acquire()d it until
  /// release() (a flag under a mutex, as the waits have deadlines).
  bool acquire(Clock::time_point deadline);
  void release();
  class Use;
  std::mutex useMutex_;
  std::condition_variable useCv_;
  bool inUse_ = false;
  std::mutex beatMutex_;
  std::condition_variable beatCv_;
  bool stopBeat_ = false;
  std::thread beat_;
};

/// "host:port" -> (host, port); IPv6 in brackets. CollectiveError naming
/// `what` on a malformed address.
std::pair<std::string, int> splitAddress(const std::string &address,
                                         const std::string &what);

} // namespace estc::rt::distribute

#endif // ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H
