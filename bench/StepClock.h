//===- StepClock.h - Training-step timing through Estimator::train ------===//
//
// rnn_bench and toolbox_bench time Estimator::train the way
// bench/estimator_bench.cpp times the seed models: a hook records the end
// of every step (steady clock), the process's CPU time there and the
// compiled function's own time in the step; the timing covers the steps
// after `warmup` (compilation, initialization and the first steps' page
// faults left out).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_STEPCLOCK_H
#define ESTC_BENCH_STEPCLOCK_H

#include "estimator/RunConfig.h"
#include "estimator/SessionRunHook.h"

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

namespace estc::bench {

/// The end of every step, and the compiled function's time in it.
struct StepClock : estimator::SessionRunHook {
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> times;
  std::vector<double> cpuSeconds; // the process's CPU time
  std::vector<double> runMicros;

  explicit StepClock(int64_t steps = 0) {
    times.reserve(static_cast<size_t>(steps));
    cpuSeconds.reserve(static_cast<size_t>(steps));
    runMicros.reserve(static_cast<size_t>(steps));
  }
  void after_run(estimator::SessionRunContext &,
                 const estimator::SessionRunValues &v) override {
    times.push_back(Clock::now());
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    cpuSeconds.push_back(static_cast<double>(t.tv_sec) +
                         1e-9 * static_cast<double>(t.tv_nsec));
    runMicros.push_back(v.phases.empty() ? 0.0 : v.phases.back().duration_us);
  }

  /// The JSON fields of the `steps` steps after `warmup`: steps_per_sec,
  /// us_per_step, run_us_per_step (the compiled function), cpu_ms_per_step
  /// (the process), peak_rss_mib; without braces, to append to a line.
  std::string json_fields(int64_t warmup, int64_t steps) const {
    size_t first = static_cast<size_t>(warmup) - 1;
    double seconds =
        std::chrono::duration<double>(times.back() - times[first]).count();
    double perSec = static_cast<double>(steps) / seconds;
    double cpuMs = (cpuSeconds.back() - cpuSeconds[first]) /
                   static_cast<double>(steps) * 1e3;
    double run = 0;
    for (size_t i = first + 1; i < runMicros.size(); ++i)
      run += runMicros[i];
    run /= static_cast<double>(steps);
    struct rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::ostringstream json;
    json << "\"steps_per_sec\": " << perSec
         << ", \"us_per_step\": " << 1e6 / perSec
         << ", \"run_us_per_step\": " << run
         << ", \"cpu_ms_per_step\": " << cpuMs
         << ", \"peak_rss_mib\": " << usage.ru_maxrss / 1024.0;
    return json.str();
  }
};

/// The RunConfig of a timed train(): `model_dir`, seed 1, `threads`
/// kernel threads, no checkpoints, summaries or step logging inside the
/// timed steps.
inline estimator::RunConfig benchRunConfig(const std::string &model_dir,
                                           int threads) {
  estimator::RunConfigOptions o;
  o.model_dir = model_dir;
  o.tf_random_seed = 1;
  o.save_checkpoints_steps = 1000000000;
  o.save_summary_steps = 0;
  o.log_step_count_steps = 1000000000;
  o.intra_op_parallelism_threads = threads;
  return estimator::RunConfig::from_tf_config("", o);
}

} // namespace estc::bench

#endif // ESTC_BENCH_STEPCLOCK_H
