//===- PinnedChild.h - One benchmark run in a child pinned to N cores ----===//
//
// estimator_bench, rnn_bench and rnn_torch_bench time each configuration in
// a child process of its own (its own thread pool, its own peak memory)
// pinned to `threads` cores, and read back the JSON line it prints.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_PINNEDCHILD_H
#define ESTC_BENCH_PINNEDCHILD_H

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

namespace estc::bench {

/// Runs `fn` in a child pinned to cores [0, threads) (unpinned when the
/// machine has fewer) and returns what it returned, or "" when it threw
/// (its message on stderr after `errorPrefix`), failed or returned nothing.
/// Throws std::runtime_error when no pipe can be made.
inline std::string runPinnedChild(int threads,
                                  const std::function<std::string()> &fn,
                                  const std::string &errorPrefix) {
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error("pipe failed");
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    cpu_set_t cores;
    CPU_ZERO(&cores);
    for (int c = 0; c < threads && c < CPU_SETSIZE; ++c)
      CPU_SET(c, &cores);
    if (threads <= static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)))
      sched_setaffinity(0, sizeof cores, &cores);
    try {
      std::string json = fn();
      ssize_t written = write(fds[1], json.data(), json.size());
      _exit(written == static_cast<ssize_t>(json.size()) ? 0 : 1);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "%s%s\n", errorPrefix.c_str(), e.what());
      _exit(1);
    }
  }
  close(fds[1]);
  std::string json;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) > 0;)
    json.append(buffer, static_cast<size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "";
  return json;
}

} // namespace estc::bench

#endif // ESTC_BENCH_PINNEDCHILD_H
