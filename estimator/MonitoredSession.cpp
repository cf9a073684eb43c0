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

std::optional<FetchValues>
MonitoredSession::run(const std::vector<std::string> &fetches) {
  if (stop_ || closed_)
    throw std::logic_error("MonitoredSession: run() after the loop stopped");
  SessionRunContext context(*session_);
  SteadyClock::time_point t0 = SteadyClock::now();
  std::vector<SessionRunArgs> args;
  args.reserve(hooks_.size());
  for (const HookPtr &h : hooks_)
    args.push_back(h->before_run(context));
  SteadyClock::time_point t1 = SteadyClock::now();
  if (!step_->next_batch()) {
    // TF's OutOfRangeError: the step does not run, end() still will.
    stop_ = true;
    return std::nullopt;
  }
  SteadyClock::time_point t2 = SteadyClock::now();
  std::set<std::string> all(fetches.begin(), fetches.end());
  for (const SessionRunArgs &a : args)
    all.insert(a.fetches.begin(), a.fetches.end());
  std::vector<std::string> allFetches(all.begin(), all.end());
  step_->run(allFetches);
  SteadyClock::time_point t3 = SteadyClock::now();
  ++stepsRun_;

  // Every fetch is read once, right after the step (as TF fetches them in
  // the step's own session.run): a hook's after_run cannot change what the
  // next hook sees.
  FetchValues values;
  for (const std::string &fetch : allFetches)
    values.emplace(fetch, step_->value(fetch));
  auto phase = [&](std::string name, SteadyClock::time_point from,
                   SteadyClock::time_point to) {
    return StepPhase{
        std::move(name), microsSinceStart(from),
        std::chrono::duration<double, std::micro>(to - from).count()};
  };
  std::vector<StepPhase> phases{phase("before_run", t0, t1),
                                phase("input", t1, t2),
                                phase("run:" + step_->function_name(), t2, t3)};
  for (size_t i = 0; i < hooks_.size(); ++i) {
    SessionRunValues hookValues;
    for (const std::string &fetch : args[i].fetches)
      hookValues.results[fetch] = values.at(fetch);
    hookValues.phases = phases;
    hooks_[i]->after_run(context, hookValues);
  }
  FetchValues out;
  for (const std::string &fetch : fetches)
    out[fetch] = values.at(fetch);
  if (context.stop_requested())
    stop_ = true;
  return out;
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
