//===- MonitoredSession.cpp - The one hooked loop of the Estimator -------===//

#include "estimator/MonitoredSession.h"

#include <set>
#include <stdexcept>

namespace estc {
namespace estimator {

using SteadyClock = std::chrono::steady_clock;

MonitoredSession::MonitoredSession(Session &session, StepRunner &step,
                                   Hooks hooks,
                                   const std::function<void()> &create_session)
    : session_(&session), step_(&step), hooks_(std::move(hooks)),
      start_(SteadyClock::now()) {
  for (const HookPtr &h : hooks_)
    h->begin();
  if (create_session)
    create_session();
  for (const HookPtr &h : hooks_)
    h->after_create_session(session);
}

double MonitoredSession::microsSinceStart(SteadyClock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - start_).count();
}

bool MonitoredSession::sameFetchesAsLastStep(
    const std::vector<std::string> &fetches) {
  if (fetchesBuilt_ && fetches == lastCallerFetches_ &&
      lastHookFetches_.size() == args_.size()) {
    bool same = true;
    for (size_t i = 0; i < args_.size() && same; ++i)
      same = args_[i].fetches == lastHookFetches_[i];
    if (same)
      return true;
  }
  lastCallerFetches_ = fetches;
  lastHookFetches_.resize(args_.size());
  for (size_t i = 0; i < args_.size(); ++i)
    lastHookFetches_[i] = args_[i].fetches;
  fetchesBuilt_ = true;
  return false;
}

void MonitoredSession::rebuildFetches() {
  std::set<std::string> all(lastCallerFetches_.begin(),
                            lastCallerFetches_.end());
  for (const SessionRunArgs &a : args_)
    all.insert(a.fetches.begin(), a.fetches.end());
  allFetches_.assign(all.begin(), all.end());
  values_.clear();
  valueSlots_.clear();
  for (const std::string &fetch : allFetches_) {
    auto it = values_.emplace(fetch, TensorValue{}).first;
    valueSlots_.emplace_back(&it->first, &it->second);
  }
  hookValues_.resize(hooks_.size());
  hookCopies_.resize(hooks_.size());
  for (size_t i = 0; i < hooks_.size(); ++i) {
    hookValues_[i].results.clear();
    hookCopies_[i].clear();
    for (const std::string &fetch : args_[i].fetches) {
      auto [it, inserted] =
          hookValues_[i].results.emplace(fetch, TensorValue{});
      if (inserted)
        hookCopies_[i].emplace_back(&it->second, &values_.at(fetch));
    }
  }
}

std::optional<FetchValues>
MonitoredSession::run(const std::vector<std::string> &fetches) {
  if (!run_step(fetches))
    return std::nullopt;
  FetchValues out;
  for (const std::string &fetch : fetches)
    out[fetch] = values_.at(fetch);
  return out;
}

bool MonitoredSession::run_step(const std::vector<std::string> &fetches) {
  if (stop_ || closed_)
    throw std::logic_error("MonitoredSession: run() after the loop stopped");
  SessionRunContext context(*session_);
  SteadyClock::time_point t0 = SteadyClock::now();
  args_.resize(hooks_.size());
  for (size_t i = 0; i < hooks_.size(); ++i)
    args_[i] = hooks_[i]->before_run(context);
  SteadyClock::time_point t1 = SteadyClock::now();
  if (!step_->next_batch()) {
    // TF's OutOfRangeError: the step does not run, end() still will.
    stop_ = true;
    return false;
  }
  SteadyClock::time_point t2 = SteadyClock::now();
  if (!sameFetchesAsLastStep(fetches))
    rebuildFetches();
  step_->run(allFetches_);
  SteadyClock::time_point t3 = SteadyClock::now();
  ++stepsRun_;

  // Every fetch is read once, right after the step (as TF fetches them in
  // the step's own session.run): a hook's after_run cannot change what the
  // next hook sees.
  for (size_t i = 0; i < valueSlots_.size(); ++i)
    step_->read(i, *valueSlots_[i].first, *valueSlots_[i].second);
  // The phases' names are set once (and when the function changes).
  std::string function = step_->function_name();
  bool renamed = runFunction_ != function;
  if (renamed)
    runFunction_ = function;
  const SteadyClock::time_point times[] = {t0, t1, t2, t3};
  double start[3], duration[3];
  for (size_t p = 0; p < 3; ++p) {
    start[p] = microsSinceStart(times[p]);
    duration[p] =
        std::chrono::duration<double, std::micro>(times[p + 1] - times[p])
            .count();
  }
  for (size_t i = 0; i < hooks_.size(); ++i) {
    SessionRunValues &hookValues = hookValues_[i];
    for (auto &[to, from] : hookCopies_[i])
      *to = *from;
    std::vector<StepPhase> &phases = hookValues.phases;
    if (renamed || phases.size() != 3)
      phases = {{"before_run"}, {"input"}, {"run:" + function}};
    for (size_t p = 0; p < 3; ++p) {
      phases[p].start_us = start[p];
      phases[p].duration_us = duration[p];
    }
    hooks_[i]->after_run(context, hookValues);
  }
  if (context.stop_requested())
    stop_ = true;
  return true;
}

void MonitoredSession::close() {
  if (closed_)
    return;
  closed_ = true;
  stop_ = true;
  for (const HookPtr &h : hooks_)
    h->end(*session_);
}

} // namespace estimator
} // namespace estc
