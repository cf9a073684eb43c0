//===- ProgressBar.cpp - The progress bar train() draws on a terminal --===//

#include "estimator/ProgressBar.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace estc {
namespace estimator {
namespace detail {

ProgressBar::ProgressBar(int64_t first, int64_t last)
    : first_(first), last_(last),
      enabled_(isatty(STDERR_FILENO) && last > first) {}

void ProgressBar::update(int64_t step, double loss) {
  if (!enabled_)
    return;
  if (step < last_ && secondsSince(lastDraw_) < 0.1)
    return;
  lastDraw_ = SteadyClock::now();
  double fraction = std::clamp(static_cast<double>(step - first_) /
                                   static_cast<double>(last_ - first_),
                               0.0, 1.0);
  const int width = 30;
  int filled = static_cast<int>(fraction * width);
  std::string bar(filled, '=');
  if (filled < width)
    bar += '>' + std::string(width - filled - 1, ' ');
  double rate = (step - first_) / std::max(secondsSince(start_), 1e-9);
  std::fprintf(stderr, "\r\033[K[%s] %lld/%lld  loss %s  %.1f steps/s",
               bar.c_str(), static_cast<long long>(step),
               static_cast<long long>(last_), format_number(loss).c_str(),
               rate);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    drawn_ = false;
  }
  enabled_ = false;
}

ClearBarBeforeLogLines::ClearBarBeforeLogLines(ProgressBar &bar)
    : active_(bar.enabled()) {
  if (!active_)
    return;
  previous_ = set_log_sink([this, &bar](const std::string &line) {
    bar.clear();
    if (previous_)
      previous_(line);
    else
      log_to_stderr(line);
  });
}

ClearBarBeforeLogLines::~ClearBarBeforeLogLines() {
  if (active_)
    set_log_sink(std::move(previous_));
}

} // namespace detail
} // namespace estimator
} // namespace estc
