//===- Logging.cpp - The Estimator's log lines ---------------------------===//

#include "estimator/Logging.h"

#include <cstdio>
#include <utility>

namespace estc {
namespace estimator {

void log_to_stderr(const std::string &line) {
  std::fprintf(stderr, "INFO: %s\n", line.c_str());
  std::fflush(stderr);
}

namespace {
LogSink &currentSink() {
  static LogSink sink;
  return sink;
}
} // namespace

void log_info(const std::string &line) {
  const LogSink &sink = currentSink();
  if (sink)
    sink(line);
  else
    log_to_stderr(line);
}

LogSink set_log_sink(LogSink sink) {
  LogSink previous = std::move(currentSink());
  currentSink() = std::move(sink);
  return previous;
}

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

} // namespace estimator
} // namespace estc
