//===- ProgressBar.h - The progress bar train() draws on a terminal ----===//
//
// Internal to the Estimator: the bar train() draws on stderr when it is a
// terminal, and the log sink that clears it before every log line.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_PROGRESSBAR_H
#define ESTC_ESTIMATOR_PROGRESSBAR_H

#include "estimator/Logging.h"

#include <chrono>
#include <cstdint>

namespace estc {
namespace estimator {
namespace detail {

using SteadyClock = std::chrono::steady_clock;

/// Seconds since `t`.
inline double secondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

/// The progress bar train() draws on a terminal: steps `first` to `last`.
class ProgressBar {
public:
  ProgressBar(int64_t first, int64_t last);
  ~ProgressBar() { finish(); }
  bool enabled() const { return enabled_; }

  void update(int64_t step, double loss);
  /// Clears the bar before a log line.
  void clear();
  void finish();

private:
  int64_t first_, last_;
  bool enabled_;
  bool drawn_ = false;
  SteadyClock::time_point start_ = SteadyClock::now();
  SteadyClock::time_point lastDraw_{};
};

/// While it lives (and the bar is drawn at all), every log line first
/// clears the progress bar, then goes where it went before.
class ClearBarBeforeLogLines {
public:
  explicit ClearBarBeforeLogLines(ProgressBar &bar);
  ~ClearBarBeforeLogLines();
  ClearBarBeforeLogLines(const ClearBarBeforeLogLines &) = delete;
  ClearBarBeforeLogLines &operator=(const ClearBarBeforeLogLines &) = delete;

private:
  bool active_;
  LogSink previous_;
};

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_PROGRESSBAR_H
