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
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>

namespace estc::rt::distribute {

// --- Frames and requests -----------------------------------------------------

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
    if (!c.u32(r.silentMs))
      return bad("a DEAD without its silence");
    break;
  case Op::Ping:
  case Op::Bye:
    break;
  default:
    return bad("an unknown request");
  }
  if (!c.done())
    return bad("trailing bytes after a request");
  return r;
}

bool FrameReader::tooLong(std::string *error) const {
  if (buffer_.size() - at_ < 4)
    return false;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i)
    len |= uint32_t(static_cast<uint8_t>(buffer_[at_ + i])) << (8 * i);
  if (len <= limit_)
    return false;
  if (error)
    *error = "a frame of " + std::to_string(len) + " bytes (at most " +
             std::to_string(limit_) + ")";
  return true;
}

bool FrameReader::append(const char *data, size_t n, std::string *error) {
  if (at_ > 0 && at_ == buffer_.size()) {
    buffer_.clear();
    at_ = 0;
  }
  if (tooLong(error))
    return false;
  buffer_.append(data, n);
  return !tooLong(error);
}

std::optional<std::string> FrameReader::next() {
  if (buffer_.size() - at_ < 4 || tooLong(nullptr))
    return std::nullopt;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i)
    len |= uint32_t(static_cast<uint8_t>(buffer_[at_ + i])) << (8 * i);
  if (buffer_.size() - at_ - 4 < len)
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

// --- Sockets -----------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText() { return std::strerror(errno); }

std::string secondsText(double secs) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", secs);
  return buf;
}

/// Milliseconds left until `deadline` (0 once past), for poll().
int msUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

/// Writes all of `data`; the socket's SO_SNDTIMEO bounds a peer that does
/// not read.
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

void setSendTimeout(int fd, double secs) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(secs);
  tv.tv_usec = static_cast<suseconds_t>((secs - double(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
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

/// Connects a non-blocking socket to `a`, waiting until `deadline` at most
/// (a host that drops the SYNs would otherwise hold connect() for about two
/// minutes); the socket, blocking again, or -1 with `error`.
int connectBefore(const addrinfo *a, Clock::time_point deadline,
                  std::string *error) {
  int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    a->ai_protocol);
  if (fd < 0) {
    *error = errnoText();
    return -1;
  }
  int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready;
    do
      ready = ::poll(&p, 1, msUntil(deadline));
    while (ready < 0 && errno == EINTR);
    int err = ETIMEDOUT;
    socklen_t len = sizeof err;
    if (ready > 0)
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err == 0 ? 0 : -1;
    errno = err;
  }
  if (rc != 0) {
    *error = errno == ETIMEDOUT ? std::string("no answer to the connection "
                                              "(a host that is down, or a "
                                              "firewall)")
                                : errnoText();
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

} // namespace

// --- The chief's store -------------------------------------------------------

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
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                 a->ai_protocol);
    if (fd < 0)
      continue;
    // A relaunched chief binds again while the last job's connections are
    // in TIME_WAIT.
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
                          std::strerror(lastErrno) + " (" + who +
                          (lastErrno == EADDRINUSE
                               ? "; another process serves it: a second chief?)"
                               : ")"));
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
  std::lock_guard<std::mutex> lock(stateMutex_);
  return dead_;
}

std::set<int> StoreServer::silent(std::chrono::milliseconds silence) const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  std::set<int> out;
  Clock::time_point now = Clock::now();
  for (const auto &[rank, seen] : lastSeen_)
    if (rank != 0 && now - seen > silence)
      out.insert(rank);
  return out;
}

void StoreServer::loop() {
  std::vector<Connection> conns;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wakeFd_[0], POLLIN, 0});
    fds.push_back({listenFd_, POLLIN, 0});
    for (const Connection &c : conns)
      fds.push_back({c.fd, POLLIN, 0});
    // Wakes every second at least, to drop connections that never say
    // HELLO.
    if (::poll(fds.data(), fds.size(), 1000) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[0].revents)
      break;
    Clock::time_point now = Clock::now();
    std::vector<bool> closing(conns.size(), false);
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection &c = conns[i];
      if (!fds[i + 2].revents) {
        closing[i] = c.rank < 0 &&
                     now - c.accepted > std::chrono::seconds(kHelloSeconds);
        continue;
      }
      char buf[65536];
      ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        continue;
      bool keep =
          n > 0 && c.reader.append(buf, static_cast<size_t>(n), nullptr);
      while (keep)
        if (std::optional<std::string> payload = c.reader.next())
          keep = handle(c, *payload, conns);
        else
          break;
      closing[i] = !keep || !c.reader.valid();
    }
    for (size_t i = conns.size(); i-- > 0;) {
      if (!closing[i])
        continue;
      Connection &c = conns[i];
      if (c.rank >= 0) {
        std::lock_guard<std::mutex> lock(stateMutex_);
        lastSeen_.erase(c.rank);
        if (!c.bye)
          dead_.insert(c.rank);
      }
      ::close(c.fd);
      conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
    }
    // New connections last: `fds` has no entry for them yet.
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0 && conns.size() >= kMaxConnections) {
        ::close(fd);
      } else if (fd >= 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // A peer that does not read its replies cannot stall the store.
        setSendTimeout(fd, kHelloSeconds);
        conns.push_back(Connection{fd, {}, now});
        conns.back().reader.setLimit(kMaxHello);
      }
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
  if (c.rank >= 0) {
    std::lock_guard<std::mutex> lock(stateMutex_);
    lastSeen_[c.rank] = Clock::now();
  }
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
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (dead_.count(rank))
        return fail("rank " + std::to_string(rank) +
                    " was lost in this job already (relaunch the whole job)");
      lastSeen_[rank] = Clock::now();
    }
    c.rank = rank;
    c.reader.setLimit(kMaxFrame);
    reply.push_back(static_cast<char>(Op::Ok));
    putU64(reply, session_);
    break;
  }
  case Op::Set: {
    auto it = values_.find(r->key);
    size_t old = it == values_.end() ? 0 : it->first.size() + it->second.size();
    size_t grown = valueBytes_ - old + r->key.size() + r->value.size();
    if (grown > kMaxStoreBytes)
      return fail("the rendezvous store is full (" +
                  std::to_string(kMaxStoreBytes >> 20) + " MiB)");
    valueBytes_ = grown;
    values_[r->key] = std::move(r->value);
    reply.push_back(static_cast<char>(Op::Ok));
    break;
  }
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
    std::set<int> d = dead(),
                  s = silent(std::chrono::milliseconds(r->silentMs));
    reply.push_back(static_cast<char>(Op::Ranks));
    for (const std::set<int> *ranks : {&d, &s}) {
      putU32(reply, static_cast<uint32_t>(ranks->size()));
      for (int rank : *ranks)
        putU32(reply, static_cast<uint32_t>(rank));
    }
    break;
  }
  case Op::Ping: // seen above; no reply
    return true;
  case Op::Bye: {
    c.bye = true;
    std::lock_guard<std::mutex> lock(stateMutex_);
    lastSeen_.erase(c.rank);
    reply.push_back(static_cast<char>(Op::Ok));
    break;
  }
  default:
    return fail("an unknown request");
  }
  return writeAll(c.fd, frame(reply));
}

// --- The client --------------------------------------------------------------

StoreClient::StoreClient(const std::string &host, int port, int rank, int size,
                         Clock::time_point deadline, double timeoutSecs,
                         const std::string &who)
    : where_(host + ":" + std::to_string(port)), who_(who),
      timeoutText_(secondsText(timeoutSecs)), timeoutSecs_(timeoutSecs) {
  auto unreachable = [&](const std::string &why) {
    return CollectiveError("cannot reach the chief at " + where_ + " within " +
                           timeoutText_ + " s (task " + who + "): " + why);
  };
  std::string error = "no answer";
  for (;;) {
    addrinfo *addrs = resolve(host, port, false, &error);
    for (addrinfo *a = addrs; a && fd_ < 0; a = a->ai_next)
      fd_ = connectBefore(a, deadline, &error);
    if (addrs)
      ::freeaddrinfo(addrs);
    if (fd_ >= 0)
      break;
    if (Clock::now() >= deadline)
      throw unreachable(error);
    // The chief may start after its workers: try again.
    std::this_thread::sleep_for(std::min<Clock::duration>(
        std::chrono::milliseconds(100), deadline - Clock::now()));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setSendTimeout(fd_, timeoutSecs);
  std::string hello;
  hello.push_back(static_cast<char>(Op::Hello));
  putU32(hello, static_cast<uint32_t>(rank));
  putU32(hello, static_cast<uint32_t>(size));
  // A live chief answers at once; give one that was found just before the
  // deadline a second.
  std::optional<std::string> reply =
      call(hello, std::max(deadline, Clock::now() + std::chrono::seconds(1)));
  if (!reply)
    throw unreachable("it accepted the connection but did not answer (not "
                      "an estc chief, or a frozen one)");
  Cursor c(*reply);
  uint8_t op;
  c.u8(op);
  if (static_cast<Op>(op) != Op::Ok || !c.u64(session_) || !c.done())
    throw CollectiveError("the chief at " + where_ +
                          " sent a malformed reply to HELLO (task " + who +
                          ")");
}

StoreClient::~StoreClient() {
  stopHeartbeat();
  if (fd_ >= 0)
    ::close(fd_);
}

bool StoreClient::acquire(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(useMutex_);
  if (!useCv_.wait_until(lock, deadline, [&] { return !inUse_; }))
    return false;
  inUse_ = true;
  return true;
}

void StoreClient::release() {
  {
    std::lock_guard<std::mutex> lock(useMutex_);
    inUse_ = false;
  }
  useCv_.notify_one();
}

/// The connection acquired for one request, released on every way out.
class StoreClient::Use {
public:
  Use(StoreClient &c, Clock::time_point deadline)
      : c_(c), held_(c.acquire(deadline)) {}
  ~Use() {
    if (held_)
      c_.release();
  }
  explicit operator bool() const { return held_; }

private:
  StoreClient &c_;
  bool held_;
};

std::optional<std::string> StoreClient::call(const std::string &payload,
                                             Clock::time_point deadline) {
  Use use(*this, deadline);
  if (!use)
    return std::nullopt; // another request waits for a chief that is silent
  auto lostConnection = [&](const std::string &why) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    return CollectiveError("lost the connection to the chief at " + where_ +
                           " (task " + who_ + "): " + why);
  };
  if (fd_ < 0)
    throw lostConnection("closed");
  if (!writeAll(fd_, frame(payload)))
    throw lostConnection(errnoText());
  FrameReader reader;
  char buf[65536];
  for (;;) {
    if (std::optional<std::string> reply = reader.next()) {
      if (reply->empty())
        throw lostConnection("an empty reply");
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
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, msUntil(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0) {
      // A late reply would answer the next request: the connection is
      // done, and the chief is the lost one.
      ::close(fd_);
      fd_ = -1;
      return std::nullopt;
    }
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    std::string error;
    if (n <= 0 || !reader.append(buf, static_cast<size_t>(n), &error))
      throw lostConnection(n == 0  ? std::string("closed")
                           : n < 0 ? errnoText()
                                   : error);
  }
}

std::string StoreClient::request(const std::string &payload) {
  std::optional<std::string> reply = call(
      payload, Clock::now() + std::chrono::milliseconds(
                                  static_cast<int64_t>(timeoutSecs_ * 1000)));
  if (!reply)
    throw CollectiveError("the chief at " + where_ + " did not answer within " +
                          timeoutText_ + " s (task " + who_ + ")");
  return *reply;
}

void StoreClient::set(const std::string &key, const std::string &value) {
  std::string p;
  p.push_back(static_cast<char>(Op::Set));
  putBytes(p, key);
  putBytes(p, value);
  request(p);
}

bool StoreClient::has(const std::string &key) {
  std::string p;
  p.push_back(static_cast<char>(Op::Get));
  putBytes(p, key);
  return static_cast<Op>(request(p)[0]) == Op::Found;
}

std::string StoreClient::get(const std::string &key,
                             Clock::time_point deadline) {
  std::string p;
  p.push_back(static_cast<char>(Op::Get));
  putBytes(p, key);
  for (int polls = 0;; ++polls) {
    std::string reply = request(p);
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
    if (Clock::now() >= deadline)
      throw CollectiveError("the rendezvous of task " + who_ +
                            " timed out waiting for '" + key + "'");
    std::this_thread::sleep_for(
        std::chrono::milliseconds(polls < 100 ? 5 : 50));
  }
}

StoreClient::Answer StoreClient::lost(std::chrono::milliseconds silence,
                                      Clock::time_point deadline,
                                      std::set<int> *dead,
                                      std::set<int> *silent) {
  std::string p(1, static_cast<char>(Op::Dead));
  putU32(p,
         static_cast<uint32_t>(std::min<int64_t>(silence.count(), UINT32_MAX)));
  std::optional<std::string> reply;
  try {
    reply = call(p, deadline);
  } catch (const CollectiveError &) {
    return Answer::Closed;
  }
  if (!reply)
    return Answer::Silent;
  Cursor c(*reply);
  uint8_t op;
  c.u8(op);
  for (std::set<int> *ranks : {dead, silent}) {
    uint32_t n;
    if (!c.u32(n))
      return Answer::Closed;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r;
      if (!c.u32(r))
        return Answer::Closed;
      ranks->insert(static_cast<int>(r));
    }
  }
  return Answer::Answered;
}

void StoreClient::startHeartbeat(std::chrono::milliseconds interval) {
  beat_ = std::thread([this, interval] {
    std::string ping = frame(std::string(1, static_cast<char>(Op::Ping)));
    std::unique_lock<std::mutex> lock(beatMutex_);
    while (!beatCv_.wait_for(lock, interval, [&] { return stopBeat_; })) {
      // PING has no reply: it only has to be sent. Skipped while another
      // request holds the connection (that one is seen too).
      Use use(*this, Clock::now() + interval);
      if (use && fd_ >= 0 && !writeAll(fd_, ping)) {
        ::close(fd_);
        fd_ = -1;
      }
    }
  });
}

void StoreClient::stopHeartbeat() {
  if (!beat_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(beatMutex_);
    stopBeat_ = true;
  }
  beatCv_.notify_all();
  beat_.join();
}

void StoreClient::bye(Clock::time_point deadline) {
  stopHeartbeat();
  try {
    call(std::string(1, static_cast<char>(Op::Bye)), deadline);
  } catch (const CollectiveError &) {
  }
}

} // namespace estc::rt::distribute
