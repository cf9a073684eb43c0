//===- runtime/distribute/Rendezvous.cpp - Where the replicas meet -------===//

#include "runtime/distribute/Rendezvous.h"

#include "runtime/Collective.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace estc::rt::distribute {

// --- Frames and requests
// ------------------------------------------------------

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putBytes(std::string &out, const std::string &s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

std::string frame(const std::string &payload) {
  std::string out;
  putU32(out, static_cast<uint32_t>(payload.size()));
  return out + payload;
}

namespace {

/// Reads fields off a payload, failing on anything past its end.
class Cursor {
public:
  explicit Cursor(const std::string &s) : s_(s) {}
  bool u8(uint8_t &v) {
    if (at_ + 1 > s_.size())
      return false;
    v = static_cast<uint8_t>(s_[at_++]);
    return true;
  }
  bool u32(uint32_t &v) {
    if (s_.size() - at_ < 4)
      return false;
    v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(static_cast<uint8_t>(s_[at_ + i])) << (8 * i);
    at_ += 4;
    return true;
  }
  bool u64(uint64_t &v) {
    uint32_t lo, hi;
    if (!u32(lo) || !u32(hi))
      return false;
    v = uint64_t(hi) << 32 | lo;
    return true;
  }
  bool bytes(std::string &v, uint32_t limit) {
    uint32_t n;
    if (!u32(n) || n > limit || s_.size() - at_ < n)
      return false;
    v = s_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool done() const { return at_ == s_.size(); }

private:
  const std::string &s_;
  size_t at_ = 0;
};

} // namespace

std::optional<Request> parseRequest(const std::string &payload,
                                    std::string *error) {
  Cursor c(payload);
  Request r;
  uint8_t op;
  auto bad = [&](const char *why) -> std::optional<Request> {
    if (error)
      *error = why;
    return std::nullopt;
  };
  if (!c.u8(op))
    return bad("an empty frame");
  r.op = static_cast<Op>(op);
  switch (r.op) {
  case Op::Hello:
    if (!c.u32(r.rank) || !c.u32(r.size))
      return bad("a HELLO without its rank and size");
    if (r.size == 0 || r.size > 1u << 20 || r.rank >= r.size)
      return bad("a HELLO with a rank outside its size");
    break;
  case Op::Set:
    if (!c.bytes(r.key, kMaxKey) || !c.bytes(r.value, kMaxFrame))
      return bad("a SET without its key and value");
    break;
  case Op::Get:
    if (!c.bytes(r.key, kMaxKey))
      return bad("a GET without its key");
    break;
  case Op::Dead:
  case Op::Bye:
    break;
  default:
    return bad("an unknown request");
  }
  if (!c.done())
    return bad("trailing bytes after a request");
  return r;
}

bool FrameReader::append(const char *data, size_t n, std::string *error) {
  if (at_ > 0 && at_ == buffer_.size()) {
    buffer_.clear();
    at_ = 0;
  }
  buffer_.append(data, n);
  if (buffer_.size() - at_ >= 4) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i)
      len |= uint32_t(static_cast<uint8_t>(buffer_[at_ + i])) << (8 * i);
    if (len > kMaxFrame) {
      if (error)
        *error = "a frame of " + std::to_string(len) + " bytes (at most " +
                 std::to_string(kMaxFrame) + ")";
      return false;
    }
  }
  return true;
}

std::optional<std::string> FrameReader::next() {
  if (buffer_.size() - at_ < 4)
    return std::nullopt;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i)
    len |= uint32_t(static_cast<uint8_t>(buffer_[at_ + i])) << (8 * i);
  if (len > kMaxFrame || buffer_.size() - at_ - 4 < len)
    return std::nullopt;
  std::string payload = buffer_.substr(at_ + 4, len);
  at_ += 4 + len;
  if (at_ > (1u << 20)) { // drop what was read
    buffer_.erase(0, at_);
    at_ = 0;
  }
  return payload;
}

std::pair<std::string, int> splitAddress(const std::string &address,
                                         const std::string &what) {
  std::string host, port;
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    if (close != std::string::npos && close + 1 < address.size() &&
        address[close + 1] == ':') {
      host = address.substr(1, close - 1);
      port = address.substr(close + 2);
    }
  } else if (size_t colon = address.rfind(':'); colon != std::string::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  int p = digits ? std::stoi(port) : 0;
  if (host.empty() || p <= 0 || p > 65535)
    throw CollectiveError(what + " '" + address +
                          "' is not host:port (a port in 1..65535)");
  return {host, p};
}

// --- Sockets
// ------------------------------------------------------------------

namespace {

std::string errnoText() { return std::strerror(errno); }

bool writeAll(int fd, const std::string &data) {
  size_t at = 0;
  while (at < data.size()) {
    ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

/// The addresses of host:port (getaddrinfo), or a one-line error.
addrinfo *resolve(const std::string &host, int port, bool passive,
                  std::string *error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive)
    hints.ai_flags = AI_PASSIVE;
  addrinfo *result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                         &result);
  if (rc != 0) {
    *error = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    return nullptr;
  }
  return result;
}

} // namespace

StoreServer::StoreServer(const std::string &host, int port, int size,
                         const std::string &who)
    : size_(size) {
  std::random_device rd;
  session_ = (uint64_t(rd()) << 32) ^ rd() ^
             static_cast<uint64_t>(
                 std::chrono::steady_clock::now().time_since_epoch().count());
  std::string where = host + ":" + std::to_string(port), error;
  addrinfo *addrs = resolve(host, port, true, &error);
  if (!addrs)
    throw CollectiveError("cannot serve the rendezvous at " + where + ": " +
                          error + " (" + who + ")");
  int lastErrno = 0;
  for (addrinfo *a = addrs; a && listenFd_ < 0; a = a->ai_next) {
    int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listenFd_ = fd;
      break;
    }
    lastErrno = errno;
    ::close(fd);
  }
  ::freeaddrinfo(addrs);
  if (listenFd_ < 0)
    throw CollectiveError("cannot serve the rendezvous at " + where + ": " +
                          std::strerror(lastErrno) + " (" + who + ")");
  if (::pipe2(wakeFd_, O_CLOEXEC) != 0) {
    ::close(listenFd_);
    throw CollectiveError("cannot serve the rendezvous: pipe: " + errnoText());
  }
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  char c = 0;
  if (::write(wakeFd_[1], &c, 1) < 0) {
    // The loop also ends when the pipe closes below.
  }
  thread_.join();
  ::close(wakeFd_[0]);
  ::close(wakeFd_[1]);
  ::close(listenFd_);
}

std::set<int> StoreServer::dead() const {
  std::lock_guard<std::mutex> lock(deadMutex_);
  return dead_;
}

void StoreServer::loop() {
  std::vector<Connection> conns;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wakeFd_[0], POLLIN, 0});
    fds.push_back({listenFd_, POLLIN, 0});
    for (const Connection &c : conns)
      fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (fds[0].revents)
      break;
    if (fds[1].revents & POLLIN) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr *>(&peer), &len,
                         SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conns.push_back(Connection{fd, {}, -1, false, {}});
      }
    }
    std::vector<size_t> closed;
    for (size_t i = 0; i < conns.size(); ++i) {
      short revents = fds[i + 2].revents;
      if (!revents)
        continue;
      Connection &c = conns[i];
      char buf[65536];
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      bool keep = n > 0;
      std::string error;
      if (keep)
        keep = c.reader.append(buf, static_cast<size_t>(n), &error);
      while (keep)
        if (std::optional<std::string> payload = c.reader.next())
          keep = handle(c, *payload, conns);
        else
          break;
      if (!keep)
        closed.push_back(i);
    }
    for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
      Connection &c = conns[*it];
      if (c.rank >= 0 && !c.bye) {
        std::lock_guard<std::mutex> lock(deadMutex_);
        dead_.insert(c.rank);
      }
      ::close(c.fd);
      conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(*it));
    }
  }
  for (Connection &c : conns)
    ::close(c.fd);
}

bool StoreServer::handle(Connection &c, const std::string &payload,
                         std::vector<Connection> &all) {
  std::string error;
  std::optional<Request> r = parseRequest(payload, &error);
  std::string reply;
  auto fail = [&](const std::string &text) {
    reply.push_back(static_cast<char>(Op::Error));
    putBytes(reply, text);
    writeAll(c.fd, frame(reply));
    return false;
  };
  if (!r)
    return fail("malformed request: " + error);
  if (r->op != Op::Hello && c.rank < 0)
    return fail("a request before HELLO");
  switch (r->op) {
  case Op::Hello: {
    if (c.rank >= 0)
      return fail("a second HELLO");
    if (static_cast<int>(r->size) != size_)
      return fail("this job has " + std::to_string(size_) +
                  " replicas, the replica says " + std::to_string(r->size));
    int rank = static_cast<int>(r->rank);
    for (const Connection &o : all)
      if (&o != &c && o.rank == rank)
        return fail("rank " + std::to_string(rank) +
                    " has joined already (two tasks with one TF_CONFIG "
                    "task?)");
    c.rank = rank;
    reply.push_back(static_cast<char>(Op::Ok));
    putU64(reply, session_);
    break;
  }
  case Op::Set:
    values_[r->key] = r->value;
    reply.push_back(static_cast<char>(Op::Ok));
    break;
  case Op::Get: {
    auto it = values_.find(r->key);
    if (it == values_.end()) {
      reply.push_back(static_cast<char>(Op::Missing));
    } else {
      reply.push_back(static_cast<char>(Op::Found));
      putBytes(reply, it->second);
    }
    break;
  }
  case Op::Dead: {
    std::set<int> d = dead();
    reply.push_back(static_cast<char>(Op::Ranks));
    putU32(reply, static_cast<uint32_t>(d.size()));
    for (int rank : d)
      putU32(reply, static_cast<uint32_t>(rank));
    break;
  }
  case Op::Bye:
    c.bye = true;
    reply.push_back(static_cast<char>(Op::Ok));
    break;
  default:
    return fail("an unknown request");
  }
  return writeAll(c.fd, frame(reply));
}

// --- The client
// ---------------------------------------------------------------

StoreClient::StoreClient(const std::string &host, int port, int rank, int size,
                         std::chrono::steady_clock::time_point deadline,
                         double timeoutSecs, const std::string &who)
    : where_(host + ":" + std::to_string(port)), who_(who) {
  std::string error;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", timeoutSecs);
  for (;;) {
    addrinfo *addrs = resolve(host, port, false, &error);
    for (addrinfo *a = addrs; a && fd_ < 0; a = a->ai_next) {
      int fd =
          ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0)
        continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
        break;
      }
      error = errnoText();
      ::close(fd);
    }
    if (addrs)
      ::freeaddrinfo(addrs);
    if (fd_ >= 0)
      break;
    if (std::chrono::steady_clock::now() >= deadline)
      throw CollectiveError("cannot reach the chief at " + where_ + " within " +
                            secs + " s (task " + who + "): " + error);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Replies never take long once connected, but a frozen chief must not
  // hang us: every read is bounded by the timeout.
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeoutSecs);
  tv.tv_usec =
      static_cast<suseconds_t>((timeoutSecs - double(tv.tv_sec)) * 1e6);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string hello;
  hello.push_back(static_cast<char>(Op::Hello));
  putU32(hello, static_cast<uint32_t>(rank));
  putU32(hello, static_cast<uint32_t>(size));
  std::string reply = call(hello);
  Cursor c(reply);
  uint8_t op;
  c.u8(op);
  if (!c.u64(session_) || !c.done())
    throw CollectiveError("the chief at " + where_ +
                          " sent a malformed reply to HELLO (task " + who +
                          ")");
}

StoreClient::~StoreClient() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string StoreClient::call(const std::string &payload) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0 || !writeAll(fd_, frame(payload)))
    throw CollectiveError("lost the connection to the chief at " + where_ +
                          " (task " + who_ + ")");
  FrameReader reader;
  char buf[65536];
  for (;;) {
    if (std::optional<std::string> reply = reader.next()) {
      if (reply->empty())
        throw CollectiveError("the chief at " + where_ +
                              " sent an empty reply");
      if (static_cast<Op>((*reply)[0]) == Op::Error) {
        Cursor c(*reply);
        uint8_t op;
        std::string text;
        c.u8(op);
        if (!c.bytes(text, kMaxFrame))
          text = "(malformed error)";
        throw CollectiveError("the chief at " + where_ + " refused task " +
                              who_ + ": " + text);
      }
      return *reply;
    }
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    std::string error;
    if (n <= 0 || !reader.append(buf, static_cast<size_t>(n), &error))
      throw CollectiveError("lost the connection to the chief at " + where_ +
                            " (task " + who_ + "): " +
                            (n == 0  ? std::string("closed")
                             : n < 0 ? errnoText()
                                     : error));
  }
}

void StoreClient::set(const std::string &key, const std::string &value) {
  std::string p;
  p.push_back(static_cast<char>(Op::Set));
  putBytes(p, key);
  putBytes(p, value);
  call(p);
}

bool StoreClient::has(const std::string &key) {
  std::string p;
  p.push_back(static_cast<char>(Op::Get));
  putBytes(p, key);
  return static_cast<Op>(call(p)[0]) == Op::Found;
}

std::string StoreClient::get(const std::string &key,
                             std::chrono::steady_clock::time_point deadline) {
  std::string p;
  p.push_back(static_cast<char>(Op::Get));
  putBytes(p, key);
  for (int polls = 0;; ++polls) {
    std::string reply = call(p);
    if (static_cast<Op>(reply[0]) == Op::Found) {
      Cursor c(reply);
      uint8_t op;
      std::string value;
      c.u8(op);
      if (!c.bytes(value, kMaxFrame) || !c.done())
        throw CollectiveError("the chief at " + where_ +
                              " sent a malformed value for '" + key + "'");
      return value;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw CollectiveError("the rendezvous of task " + who_ +
                            " timed out waiting for '" + key + "'");
    std::this_thread::sleep_for(
        std::chrono::milliseconds(polls < 100 ? 5 : 50));
  }
}

std::set<int> StoreClient::dead(bool *reachable) {
  std::set<int> out;
  *reachable = false;
  try {
    std::string p(1, static_cast<char>(Op::Dead));
    std::string reply = call(p);
    Cursor c(reply);
    uint8_t op;
    uint32_t n;
    c.u8(op);
    if (!c.u32(n))
      return out;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r;
      if (!c.u32(r))
        break;
      out.insert(static_cast<int>(r));
    }
    *reachable = true;
  } catch (const CollectiveError &) {
  }
  return out;
}

void StoreClient::bye() {
  try {
    call(std::string(1, static_cast<char>(Op::Bye)));
  } catch (const CollectiveError &) {
  }
}

} // namespace estc::rt::distribute
