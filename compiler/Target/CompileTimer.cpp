//===- CompileTimer.cpp - Wall and CPU seconds of each compile phase -----===//

#include "compiler/Target/CompileTimer.h"

#include "llvm/Support/Format.h"

#include <chrono>
#include <ctime>

namespace estc {

double CompileTimer::wallNow() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double CompileTimer::cpuNow() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double CompileTimer::threadCpuNow() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void CompileTimer::addTask(llvm::StringRef name, double wallSeconds,
                           double cpuSeconds) {
  tasks_.push_back({name.str(), wallSeconds, cpuSeconds});
}

CompileTimer::Scope::Scope(CompileTimer *timer, llvm::StringRef phase)
    : timer_(timer) {
  if (!timer_)
    return;
  phase_ = phase.str();
  wall_ = wallNow();
  cpu_ = cpuNow();
}

CompileTimer::Scope::~Scope() {
  if (timer_)
    timer_->add(phase_, wallNow() - wall_, cpuNow() - cpu_);
}

void CompileTimer::add(llvm::StringRef phase, double wall, double cpu) {
  for (Phase &p : phases_)
    if (p.name == phase) {
      p.wallSeconds += wall;
      p.cpuSeconds += cpu;
      return;
    }
  phases_.push_back({phase.str(), wall, cpu});
}

CompileTimer::Phase CompileTimer::total() const {
  Phase sum{"total"};
  for (const Phase &p : phases_) {
    sum.wallSeconds += p.wallSeconds;
    sum.cpuSeconds += p.cpuSeconds;
  }
  return sum;
}

void CompileTimer::print(llvm::raw_ostream &os) const {
  auto line = [&](const Phase &p) {
    os << llvm::format("  %-12s %8.3f s %8.3f s cpu\n", p.name.c_str(),
                       p.wallSeconds, p.cpuSeconds);
  };
  for (const Phase &p : phases_)
    line(p);
  for (const Phase &p : tasks_)
    line(p);
  line(total());
}

} // namespace estc
