//===- CompileTimer.h - Wall and CPU seconds of each compile phase -------===//
//
// Where a compile's time goes, phase by phase (import and the est passes,
// lowering to the LLVM dialect, translation to LLVM IR, LLVM's optimizer,
// machine code, loading into the JIT): what `estc --time-phases` prints and
// bench/compile_bench reports. The compile functions take an optional
// timer (null: nothing is timed) and time their own phases with
// CompileTimer::Scope.
//
// Each phase records wall seconds and the process's CPU seconds (user + sys
// of every thread: the MLIR pass manager and the back end run work on
// several threads, and on a shared machine CPU seconds move far less with
// load than wall seconds do).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_COMPILETIMER_H
#define ESTC_COMPILER_TARGET_COMPILETIMER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace estc {

class CompileTimer {
public:
  struct Phase {
    std::string name;
    double wallSeconds = 0;
    double cpuSeconds = 0;
  };

  /// Times one phase from construction to destruction. A phase timed
  /// twice (two runs of a pipeline stage) adds up under one name. A null
  /// timer times nothing.
  class Scope {
  public:
    Scope(CompileTimer *timer, llvm::StringRef phase);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    CompileTimer *timer_;
    std::string phase_;
    double wall_ = 0, cpu_ = 0;
  };

  /// The phases in the order they first ran.
  const std::vector<Phase> &phases() const { return phases_; }
  /// Work a phase ran on threads of its own (SplitCodegen's parts): wall
  /// and CPU seconds of each thread, not counted in total() (the phase
  /// that ran them holds their time).
  void addTask(llvm::StringRef name, double wallSeconds, double cpuSeconds);
  const std::vector<Phase> &tasks() const { return tasks_; }
  /// Wall and CPU seconds of every phase together.
  Phase total() const;
  /// One line per phase, one per task and a total:
  /// "  <name>  <wall> s  <cpu> s cpu".
  void print(llvm::raw_ostream &os) const;

  /// The monotonic wall clock, the process's CPU clock and the calling
  /// thread's CPU clock, in seconds.
  static double wallNow();
  static double cpuNow();
  static double threadCpuNow();

private:
  void add(llvm::StringRef phase, double wall, double cpu);
  std::vector<Phase> phases_;
  std::vector<Phase> tasks_;
};

} // namespace estc

#endif // ESTC_COMPILER_TARGET_COMPILETIMER_H
