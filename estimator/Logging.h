//===- Logging.h - The Estimator's log lines (tf.compat.v1.logging) -----===//
//
// The Estimator and the hooks report progress as TF users know it
// ("loss = 0.35, step = 200 (0.81 sec)", "global_step/sec: 123.4", "Saving
// checkpoints for 200 into ..."). Each line goes to one process-wide sink;
// the default prints "INFO: <line>" to stderr. Tests install their own.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_LOGGING_H
#define ESTC_ESTIMATOR_LOGGING_H

#include <functional>
#include <string>

namespace estc {
namespace estimator {

/// Receives one log line (no trailing newline).
using LogSink = std::function<void(const std::string &line)>;

/// Sends `line` to the current sink.
void log_info(const std::string &line);

/// The default sink: "INFO: <line>" on stderr, flushed.
void log_to_stderr(const std::string &line);

/// Installs `sink` (an empty function restores the default) and returns the
/// previous one. Not thread-safe against concurrent log_info calls.
LogSink set_log_sink(LogSink sink);

/// Installs a sink for the lifetime of the object (tests).
class ScopedLogSink {
public:
  explicit ScopedLogSink(LogSink sink)
      : previous_(set_log_sink(std::move(sink))) {}
  ~ScopedLogSink() { set_log_sink(std::move(previous_)); }
  ScopedLogSink(const ScopedLogSink &) = delete;
  ScopedLogSink &operator=(const ScopedLogSink &) = delete;

private:
  LogSink previous_;
};

/// "0.35", "1.2e-05": a number as TF's %g-style log lines print it.
std::string format_number(double value);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_LOGGING_H
