//===- runtime/cuda/CudaProfile.cpp - The CUDA profile's switch, table, report
//-===//
//
// The switch (ESTC_CUDA_PROFILE, read once when the library loads, and
// rt::set_cuda_profiling), the process-wide table the CUDA runs add their
// steps to, and the report. Built with and without CUDA: without it nothing
// is ever added, and the report says so.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaProfile.h"
#include "runtime/cuda/Cuda.h"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace estc::rt {
namespace {

bool profilingByEnvironment() {
  const char *env = std::getenv("ESTC_CUDA_PROFILE");
  return env && *env && std::strcmp(env, "0") != 0;
}

std::atomic<bool> gProfiling{profilingByEnvironment()};

/// The rows of the report printed at most.
constexpr size_t kReportRows = 40;

struct Totals {
  double ms = 0;
  int64_t calls = 0;
};

struct ProfileTable {
  std::mutex mutex;
  std::unordered_map<std::string, Totals> byName;
  int64_t steps = 0;
  double stepMs = 0;
};

/// Never destroyed: the exit report reads it after global destructors may
/// have run.
ProfileTable &table() {
  static ProfileTable &t = *new ProfileTable;
  return t;
}

void appendf(std::string &out, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void appendf(std::string &out, const char *format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (n > 0)
    out.append(line, std::min(size_t(n), sizeof line - 1));
}

/// The report of `t` (locked by the caller); empty when no step was added.
std::string formatReport(const ProfileTable &t) {
  if (t.steps == 0)
    return {};
  std::vector<std::pair<const std::string *, Totals>> rows;
  rows.reserve(t.byName.size());
  double profiledMs = 0;
  for (const auto &[name, totals] : t.byName) {
    rows.emplace_back(&name, totals);
    profiledMs += totals.ms;
  }
  // By total time, then by name, so equal rows print in a stable order.
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms != b.second.ms ? a.second.ms > b.second.ms
                                      : *a.first < *b.first;
  });
  auto percent = [&](double ms) {
    return profiledMs > 0 ? 100.0 * ms / profiledMs : 0.0;
  };
  std::string out;
  appendf(out,
          "estc CUDA profile: %lld step%s, %.3f ms of GPU time from each "
          "step's first to last work (%.3f ms a step)\n",
          static_cast<long long>(t.steps), t.steps == 1 ? "" : "s", t.stepMs,
          t.stepMs / double(t.steps));
  appendf(out,
          "estc CUDA profile: %.3f ms of it (%.3f ms a step, %.1f%%) in the "
          "%zu kinds of work below; the rest is the GPU idle between them\n",
          profiledMs, profiledMs / double(t.steps),
          t.stepMs > 0 ? 100.0 * profiledMs / t.stepMs : 0.0, rows.size());
  appendf(out, "%12s %9s %11s %7s  %s\n", "total ms", "calls", "mean us", "%",
          "name");
  size_t shown = std::min(rows.size(), kReportRows);
  for (size_t i = 0; i < shown; ++i) {
    const Totals &r = rows[i].second;
    appendf(out, "%12.3f %9lld %11.2f %6.2f%%  %s\n", r.ms,
            static_cast<long long>(r.calls),
            r.calls ? 1000.0 * r.ms / double(r.calls) : 0.0, percent(r.ms),
            rows[i].first->c_str());
  }
  if (rows.size() > shown) {
    Totals rest;
    for (size_t i = shown; i < rows.size(); ++i) {
      rest.ms += rows[i].second.ms;
      rest.calls += rows[i].second.calls;
    }
    appendf(out, "%12.3f %9lld %11s %6.2f%%  (%zu more kinds of work)\n",
            rest.ms, static_cast<long long>(rest.calls), "", percent(rest.ms),
            rows.size() - shown);
  }
  return out;
}

void printAtExit() {
  ProfileTable &t = table();
  std::string report;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    report = formatReport(t);
  }
  if (report.empty())
    return;
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
}

} // namespace

void set_cuda_profiling(bool on) { gProfiling.store(on); }

bool cuda_profiling() { return gProfiling.load(std::memory_order_relaxed); }

std::string cuda_profile_report() {
  ProfileTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::string report = formatReport(t);
  return report.empty() ? "estc CUDA profile: no CUDA work profiled\n" : report;
}

void cuda_profile_reset() {
  ProfileTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.byName.clear();
  t.steps = 0;
  t.stepMs = 0;
}

namespace cuda {

void addProfiledStep(float stepMs, const ProfileSample *samples, size_t count) {
  // Registered with the first step, so it runs before the destructors of
  // statics constructed earlier; the driver is not needed (every time was
  // read after its step) and the table is never destroyed.
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(printAtExit); });
  ProfileTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  ++t.steps;
  t.stepMs += stepMs;
  for (size_t i = 0; i < count; ++i) {
    Totals &totals = t.byName[samples[i].name];
    totals.ms += samples[i].ms;
    ++totals.calls;
  }
}

} // namespace cuda
} // namespace estc::rt
