//===- BenchFlags.h - The benchmarks' comma-separated flags -----*- C++ -*-===//
//
// What canned_bench and estimator_bench both parse: a comma-separated list
// (--models) and a list of thread counts (--threads), with the one-line
// flag errors of lib/Support/Flags.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_BENCHFLAGS_H
#define ESTC_BENCH_BENCHFLAGS_H

#include "lib/Support/Flags.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace estc::bench {

/// "a,b,,c" -> {"a", "b", "", "c"}.
inline std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    out.push_back(item);
  return out;
}

/// --<flag>=LIST as positive integers; anything else fails `parser` with
/// `--threads=1,0: '0' is not a positive integer` (exit status 2).
inline std::vector<int64_t> parseIntList(const flags::FlagParser &parser,
                                         const std::string &flag,
                                         const std::string &list) {
  std::vector<int64_t> values;
  for (const std::string &t : splitList(list)) {
    char *end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 1)
      parser.fail("--" + flag + "=" + list + ": '" + t +
                  "' is not a positive integer");
    values.push_back(static_cast<int64_t>(v));
  }
  return values;
}

inline std::vector<int> parseThreadList(const flags::FlagParser &parser,
                                        const std::string &list) {
  std::vector<int> threads;
  for (int64_t v : parseIntList(parser, "threads", list))
    threads.push_back(static_cast<int>(v));
  return threads;
}

/// The CPU's model name (/proc/cpuinfo), for the header of a table.
inline std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(colon + 2);
    }
  return "unknown CPU";
}

} // namespace estc::bench

#endif // ESTC_BENCH_BENCHFLAGS_H
