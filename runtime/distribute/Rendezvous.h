//===- runtime/distribute/Rendezvous.h - Where the replicas meet ---------===//
//
// Gloo's replicas exchange their transport addresses through a key-value
// store (gloo::rendezvous::Store). Debian's Gloo has file, hash and Redis
// stores but no TCP one, and a Redis server is one more service to run, so
// the chief serves this small store itself at its TF_CONFIG address: a
// thread with a poll loop, length-prefixed binary frames. The connection
// every replica keeps to it for the job's lifetime is also how a lost
// replica is named: the chief sees which replica's connection closed
// without a goodbye, and the others ask it after a collective fails.
//
// Frames: u32 payload length (little-endian, at most kMaxFrame), then the
// payload: u8 op, then its fields (u32 / u64 little-endian; strings and
// byte strings as u32 length + bytes). Requests and replies:
//
//   HELLO rank:u32 size:u32 -> OK session:u64 | ERROR text
//   SET key value           -> OK
//   GET key                 -> FOUND value | MISSING
//   DEAD                    -> RANKS count:u32 rank:u32...  (lost replicas)
//   BYE                     -> OK  (a clean exit: not a lost replica)
//
// The bytes come from the network: parseRequest and FrameReader validate
// every length and field, and test/fuzz/rendezvous_fuzzer.cpp fuzzes them.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H
#define ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H

#include <atomic>
#include <chrono>
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

enum class Op : uint8_t {
  Hello = 1,
  Set = 2,
  Get = 3,
  Dead = 4,
  Bye = 5,
  Ok = 0x80,
  Error = 0x81,
  Found = 0x82,
  Missing = 0x83,
  Ranks = 0x84,
};

struct Request {
  Op op = Op::Hello;
  uint32_t rank = 0, size = 0; // Hello
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
  /// Appends received bytes; false (with `error`) for a frame longer than
  /// kMaxFrame: the connection is then closed.
  bool append(const char *data, size_t n, std::string *error);
  /// The next complete payload, if any.
  std::optional<std::string> next();

private:
  std::string buffer_;
  size_t at_ = 0;
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

private:
  struct Connection {
    int fd;
    FrameReader reader;
    int rank = -1;
    bool bye = false;
    std::string peer;
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
  mutable std::mutex deadMutex_;
  std::set<int> dead_;
  std::thread thread_;
};

/// A replica's connection to the chief's store.
class StoreClient {
public:
  /// Connects (retrying until `deadline`), says HELLO as `rank` of `size`.
  /// CollectiveError: "cannot reach the chief at H:P within N s (task T)",
  /// or the chief's refusal.
  StoreClient(const std::string &host, int port, int rank, int size,
              std::chrono::steady_clock::time_point deadline,
              double timeoutSecs, const std::string &who);
  ~StoreClient();

  uint64_t session() const { return session_; }
  void set(const std::string &key, const std::string &value);
  /// The value, waiting for the key until `deadline`.
  std::string get(const std::string &key,
                  std::chrono::steady_clock::time_point deadline);
  bool has(const std::string &key);
  /// The lost replicas the chief knows of; empty when it knows of none or
  /// cannot be reached (`reachable` false then).
  std::set<int> dead(bool *reachable);
  void bye();

private:
  /// Sends a request, returns the reply payload (throws CollectiveError).
  std::string call(const std::string &payload);

  int fd_ = -1;
  std::string where_, who_;
  uint64_t session_ = 0;
  std::mutex mutex_;
};

/// "host:port" -> (host, port); IPv6 in brackets. CollectiveError naming
/// `what` on a malformed address.
std::pair<std::string, int> splitAddress(const std::string &address,
                                         const std::string &what);

} // namespace estc::rt::distribute

#endif // ESTC_RUNTIME_DISTRIBUTE_RENDEZVOUS_H
