//===- LoopbackPort.h - A free TCP port on 127.0.0.1, for tests -----------===//
//
// The tests and benchmarks that start a rendezvous store or a job of
// replicas on loopback (RendezvousTest, bench/distributed_bench) pick their
// ports here: the port the kernel gives a socket bound to port 0, closed
// again, so the caller can bind it. Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_DISTRIBUTED_LOOPBACKPORT_H
#define ESTC_TEST_DISTRIBUTED_LOOPBACKPORT_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace estc::test {

/// A TCP port on 127.0.0.1 that was free a moment ago.
inline int free_loopback_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

} // namespace estc::test

#endif // ESTC_TEST_DISTRIBUTED_LOOPBACKPORT_H
