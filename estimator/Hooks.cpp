//===- Hooks.cpp - The built-in SessionRunHooks --------------------------===//

#include "estimator/Hooks.h"

#include "estimator/Logging.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace estc {
namespace estimator {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

double monotonic_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

namespace {
std::string formatFloat(double value, bool single) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto res =
      single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(value))
             : std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string formatElement(const TensorValue &t, int64_t i) {
  switch (t.dtype) {
  case DType::Float32:
  case DType::Float16:
  case DType::BFloat16:
    return formatFloat(t.element(i), true);
  case DType::Float64:
    return formatFloat(t.element(i), false);
  case DType::Int32:
  case DType::Int64:
    return std::to_string(static_cast<long long>(t.element(i)));
  case DType::Bool:
    return t.element(i) != 0 ? "True" : "False";
  case DType::String:
    return "b'" + t.strings[static_cast<size_t>(i)] + "'";
  case DType::Invalid:
    break;
  }
  return "?";
}

std::string fmtSeconds(double secs) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", secs);
  return buf;
}

/// Exactly one of a seconds and a steps period, positive; the hook's own
/// argument names in the message.
void checkPeriod(const char *who, const char *secsName,
                 const std::optional<double> &secs, const char *stepsName,
                 const std::optional<int64_t> &steps) {
  std::string prefix = std::string(who) + ": ";
  if (secs.has_value() == steps.has_value())
    throw std::invalid_argument(prefix + "exactly one of " + secsName +
                                " and " + stepsName + " must be given");
  if (secs && !(*secs > 0))
    throw std::invalid_argument(prefix + secsName + " must be > 0, got " +
                                formatFloat(*secs, false));
  if (steps && *steps <= 0)
    throw std::invalid_argument(prefix + stepsName + " must be > 0, got " +
                                std::to_string(*steps));
}

SecondOrStepTimer makeTimer(const char *who, const char *secsName,
                            const std::optional<double> &secs,
                            const char *stepsName,
                            const std::optional<int64_t> &steps, Clock clock) {
  checkPeriod(who, secsName, secs, stepsName, steps);
  return SecondOrStepTimer(secs, steps, std::move(clock));
}

int64_t fetchedStep(const SessionRunValues &values, const char *who) {
  static const std::string kFetch = kGlobalStepFetch;
  const TensorValue &v = fetched(values, kFetch, who);
  if (v.num_elements() != 1)
    throw std::runtime_error(std::string(who) +
                             ": fetch 'global_step' is not a scalar (" +
                             v.spec().str() + ")");
  return static_cast<int64_t>(v.element(0));
}

bool hasVariable(Session &session, const std::string &name) {
  auto names = session.variable_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// A variable's value, with "global_step" read from Session::global_step()
/// when the session does not list it as a variable.
std::optional<TensorValue> variableValue(Session &session,
                                         const std::string &name) {
  if (hasVariable(session, name))
    return session.variable_value(name);
  if (name == kGlobalStepFetch)
    return TensorValue::of<int64_t>({}, {session.global_step()});
  return std::nullopt;
}
} // namespace

std::string format_tensor(const TensorValue &value) {
  const int64_t n = value.num_elements();
  const size_t rank = value.shape.size();
  if (rank == 0)
    return formatElement(value, 0);
  if (n == 0)
    return std::string(rank, '[') + std::string(rank, ']');
  constexpr int64_t kThreshold = 1000, kEdge = 3;
  if (n > kThreshold) {
    std::string out = "[";
    for (int64_t i = 0; i < kEdge; ++i)
      out += formatElement(value, i) + " ";
    out += "...";
    for (int64_t i = n - kEdge; i < n; ++i)
      out += " " + formatElement(value, i);
    return out + "]";
  }
  // Row-major nesting: before element i a '[' opens for every dimension d
  // whose sub-array (shape[d] * ... * shape[rank-1] elements) starts at i.
  std::vector<int64_t> span(rank, 1);
  for (size_t d = rank; d-- > 0;)
    span[d] = value.shape[d] * (d + 1 < rank ? span[d + 1] : 1);
  auto starts = [&](int64_t i) {
    size_t c = 0;
    for (int64_t s : span)
      c += (i % s == 0) ? 1 : 0;
    return c;
  };
  std::string out;
  for (int64_t i = 0; i < n; ++i) {
    out += std::string(starts(i), '[');
    out += formatElement(value, i);
    out += std::string(starts(i + 1), ']');
    if (i + 1 < n)
      out += ' ';
  }
  return out;
}

const TensorValue &fetched(const SessionRunValues &values,
                           const std::string &name, const char *who) {
  auto it = values.results.find(name);
  if (it == values.results.end())
    throw std::runtime_error(std::string(who) + ": no value for fetch '" +
                             name + "'");
  return it->second;
}

std::vector<std::string>
graph_fetches_of(const std::vector<std::string> &fetches) {
  const std::string prefix = kGraphTensorPrefix;
  std::vector<std::string> nodes;
  for (const std::string &f : fetches)
    if (f.size() > prefix.size() && f.compare(0, prefix.size(), prefix) == 0)
      nodes.push_back(f.substr(prefix.size()));
  return nodes;
}

//===----------------------------------------------------------------------===//
// SecondOrStepTimer
//===----------------------------------------------------------------------===//

SecondOrStepTimer::SecondOrStepTimer(std::optional<double> every_secs,
                                     std::optional<int64_t> every_steps,
                                     Clock clock)
    : everySecs_(every_secs), everySteps_(every_steps),
      clock_(std::move(clock)) {
  checkPeriod("SecondOrStepTimer", "every_secs", every_secs, "every_steps",
              every_steps);
}

double SecondOrStepTimer::now() const {
  return clock_ ? clock_() : monotonic_seconds();
}

void SecondOrStepTimer::reset() {
  lastStep_.reset();
  lastTime_ = 0;
}

bool SecondOrStepTimer::should_trigger_for_step(int64_t step) const {
  if (!lastStep_)
    return true;
  if (*lastStep_ == step)
    return false;
  if (everySecs_ && now() >= lastTime_ + *everySecs_)
    return true;
  if (everySteps_ && step >= *lastStep_ + *everySteps_)
    return true;
  return false;
}

std::optional<std::pair<double, int64_t>>
SecondOrStepTimer::update_last_triggered_step(int64_t step) {
  double t = now();
  std::optional<std::pair<double, int64_t>> elapsed;
  if (lastStep_)
    elapsed = std::make_pair(t - lastTime_, step - *lastStep_);
  lastTime_ = t;
  lastStep_ = step;
  return elapsed;
}

//===----------------------------------------------------------------------===//
// LoggingTensorHook
//===----------------------------------------------------------------------===//

namespace {
void checkLoggingOptions(const LoggingTensorHook::Options &o, size_t count) {
  const char *who = "LoggingTensorHook: ";
  if (count == 0)
    throw std::invalid_argument(std::string(who) + "no tensors to log");
  bool onlyAtEnd = o.at_end && !o.every_n_iter && !o.every_n_secs;
  if (!onlyAtEnd && o.every_n_iter.has_value() == o.every_n_secs.has_value())
    throw std::invalid_argument(
        std::string(who) + "either at_end and/or exactly one of every_n_iter "
                           "and every_n_secs must be given");
  if (o.every_n_iter && *o.every_n_iter <= 0)
    throw std::invalid_argument(std::string(who) + "invalid every_n_iter=" +
                                std::to_string(*o.every_n_iter));
  if (o.every_n_secs && !(*o.every_n_secs > 0))
    throw std::invalid_argument(std::string(who) + "invalid every_n_secs=" +
                                formatFloat(*o.every_n_secs, false));
}
} // namespace

LoggingTensorHook::LoggingTensorHook(std::vector<std::string> tensors,
                                     Options options)
    : options_(std::move(options)) {
  checkLoggingOptions(options_, tensors.size());
  for (auto &name : tensors)
    tensors_.emplace_back(name, name);
  if (options_.every_n_iter || options_.every_n_secs)
    timer_.emplace(options_.every_n_secs, options_.every_n_iter,
                   options_.clock);
}

LoggingTensorHook::LoggingTensorHook(
    const std::map<std::string, std::string> &tensors, Options options)
    : options_(std::move(options)) {
  checkLoggingOptions(options_, tensors.size());
  for (const auto &entry : tensors)
    tensors_.emplace_back(entry.first, entry.second);
  if (options_.every_n_iter || options_.every_n_secs)
    timer_.emplace(options_.every_n_secs, options_.every_n_iter,
                   options_.clock);
}

std::vector<std::string> LoggingTensorHook::graph_fetches() const {
  std::vector<std::string> fetches;
  for (const auto &entry : tensors_)
    fetches.push_back(entry.second);
  return graph_fetches_of(fetches);
}

void LoggingTensorHook::begin() {
  if (timer_)
    timer_->reset();
  iterCount_ = 0;
  last_.clear();
}

SessionRunArgs LoggingTensorHook::before_run(SessionRunContext &context) {
  (void)context;
  shouldTrigger_ = timer_ && timer_->should_trigger_for_step(iterCount_);
  SessionRunArgs args;
  if (shouldTrigger_ || options_.at_end)
    for (const auto &entry : tensors_)
      args.fetches.push_back(entry.second);
  return args;
}

void LoggingTensorHook::after_run(SessionRunContext &context,
                                  const SessionRunValues &values) {
  (void)context;
  if (shouldTrigger_ || options_.at_end) {
    std::map<std::string, TensorValue> byTag;
    for (const auto &[tag, fetch] : tensors_)
      byTag[tag] = fetched(values, fetch, "LoggingTensorHook");
    if (shouldTrigger_)
      logValues(byTag);
    if (options_.at_end)
      last_ = std::move(byTag);
  }
  ++iterCount_;
}

void LoggingTensorHook::end(Session &session) {
  if (!options_.at_end)
    return;
  std::map<std::string, TensorValue> byTag;
  for (const auto &[tag, fetch] : tensors_) {
    if (auto v = variableValue(session, fetch))
      byTag[tag] = std::move(*v);
    else if (auto it = last_.find(tag); it != last_.end())
      byTag[tag] = it->second;
  }
  if (!byTag.empty())
    logValues(byTag);
}

void LoggingTensorHook::logValues(
    const std::map<std::string, TensorValue> &byTag) {
  std::optional<std::pair<double, int64_t>> elapsed;
  if (timer_)
    elapsed = timer_->update_last_triggered_step(iterCount_);
  if (options_.formatter) {
    log_info(options_.formatter(byTag));
    return;
  }
  std::string line;
  for (const auto &entry : tensors_) {
    auto it = byTag.find(entry.first);
    if (it == byTag.end())
      continue;
    if (!line.empty())
      line += ", ";
    line += entry.first + " = " + format_tensor(it->second);
  }
  if (elapsed)
    line += " (" + fmtSeconds(elapsed->first) + " sec)";
  log_info(line);
}

//===----------------------------------------------------------------------===//
// StopAtStepHook
//===----------------------------------------------------------------------===//

StopAtStepHook::StopAtStepHook(std::optional<int64_t> num_steps,
                               std::optional<int64_t> last_step)
    : numSteps_(num_steps), lastStep_(last_step) {
  if (!num_steps && !last_step)
    throw std::invalid_argument(
        "StopAtStepHook: one of num_steps or last_step must be given");
  if (num_steps && last_step)
    throw std::invalid_argument(
        "StopAtStepHook: only one of num_steps or last_step can be given");
  if (num_steps && *num_steps < 0)
    throw std::invalid_argument("StopAtStepHook: num_steps must be >= 0, got " +
                                std::to_string(*num_steps));
  if (last_step && *last_step < 0)
    throw std::invalid_argument("StopAtStepHook: last_step must be >= 0, got " +
                                std::to_string(*last_step));
}

void StopAtStepHook::after_create_session(Session &session) {
  if (numSteps_)
    lastStep_ = session.global_step() + *numSteps_;
}

SessionRunArgs StopAtStepHook::before_run(SessionRunContext &context) {
  (void)context;
  return {{kGlobalStepFetch}};
}

void StopAtStepHook::after_run(SessionRunContext &context,
                               const SessionRunValues &values) {
  int64_t step = fetchedStep(values, "StopAtStepHook");
  if (lastStep_ && step >= *lastStep_)
    context.request_stop();
}

//===----------------------------------------------------------------------===//
// CheckpointSaverHook
//===----------------------------------------------------------------------===//

CheckpointSaverHook::CheckpointSaverHook(std::string checkpoint_dir,
                                         Options options)
    : checkpointDir_(std::move(checkpoint_dir)), options_(std::move(options)),
      timer_(makeTimer("CheckpointSaverHook", "save_secs", options_.save_secs,
                       "save_steps", options_.save_steps, options_.clock)) {
  if (options_.saver)
    checkpointDir_ = options_.saver->model_dir();
  if (checkpointDir_.empty())
    throw std::invalid_argument("CheckpointSaverHook: checkpoint_dir is empty");
  for (const auto &l : options_.listeners)
    if (!l)
      throw std::invalid_argument("CheckpointSaverHook: a listener is null");
}

void CheckpointSaverHook::add_listener(ListenerPtr listener) {
  if (!listener)
    throw std::invalid_argument("CheckpointSaverHook: a listener is null");
  auto &all = options_.listeners;
  if (std::find(all.begin(), all.end(), listener) == all.end())
    all.push_back(std::move(listener));
}

void CheckpointSaverHook::begin() {
  timer_.reset();
  saver_ = options_.saver ? options_.saver
                          : std::make_shared<train::Saver>(
                                checkpointDir_, options_.saver_options);
  for (const auto &l : options_.listeners)
    l->begin();
}

void CheckpointSaverHook::after_create_session(Session &session) {
  int64_t step = session.global_step();
  // The checkpoint saved here is the state at step `step`.
  save(session, step);
  timer_.update_last_triggered_step(step);
}

SessionRunArgs CheckpointSaverHook::before_run(SessionRunContext &context) {
  (void)context;
  return {{kGlobalStepFetch}};
}

void CheckpointSaverHook::after_run(SessionRunContext &context,
                                    const SessionRunValues &values) {
  int64_t step = fetchedStep(values, "CheckpointSaverHook");
  if (timer_.should_trigger_for_step(step)) {
    timer_.update_last_triggered_step(step);
    if (save(context.session(), step))
      context.request_stop();
  }
}

void CheckpointSaverHook::end(Session &session) {
  int64_t step = session.global_step();
  if (timer_.last_triggered_step() != step)
    save(session, step);
  for (const auto &l : options_.listeners)
    l->end(session, step);
}

bool CheckpointSaverHook::save(Session &session, int64_t step) {
  std::string s = std::to_string(step);
  log_info("Calling checkpoint listeners before saving checkpoint " + s +
           "...");
  for (const auto &l : options_.listeners)
    l->before_save(session, step);
  log_info("Saving checkpoints for " + s + " into " +
           fileio::joinPath(checkpointDir_, options_.saver_options.prefix) +
           ".");
  session.save_checkpoint(*saver_, step);
  log_info("Calling checkpoint listeners after saving checkpoint " + s + "...");
  bool stop = false;
  for (const auto &l : options_.listeners)
    if (l->after_save(session, step)) {
      log_info("A CheckpointSaverListener requested that training be stopped.");
      stop = true;
    }
  return stop;
}

//===----------------------------------------------------------------------===//
// StepCounterHook
//===----------------------------------------------------------------------===//

StepCounterHook::StepCounterHook(Options options)
    : options_(std::move(options)),
      timer_(makeTimer("StepCounterHook", "every_n_secs", options_.every_n_secs,
                       "every_n_steps", options_.every_n_steps,
                       options_.clock)) {}

void StepCounterHook::begin() {
  timer_.reset();
  lastGlobalStep_.reset();
  warnings_ = 0;
  writer_ = options_.summary_writer;
  if (!writer_ && !options_.output_dir.empty())
    writer_ = SummaryWriterCache::get(options_.output_dir);
}

SessionRunArgs StepCounterHook::before_run(SessionRunContext &context) {
  (void)context;
  return {{kGlobalStepFetch}};
}

void StepCounterHook::after_run(SessionRunContext &context,
                                const SessionRunValues &values) {
  (void)context;
  int64_t step = fetchedStep(values, "StepCounterHook");
  if (timer_.should_trigger_for_step(step)) {
    auto elapsed = timer_.update_last_triggered_step(step);
    if (elapsed && elapsed->first > 0) {
      double rate = static_cast<double>(elapsed->second) / elapsed->first;
      if (writer_)
        writer_->add_scalar("global_step/sec", rate, step);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", rate);
      log_info(std::string("global_step/sec: ") + buf);
    }
  }
  if (lastGlobalStep_ && *lastGlobalStep_ == step && warnings_ < 5) {
    ++warnings_;
    log_info("It seems that global step has not been increased. "
             "Current value (could be stable): " +
             std::to_string(step) +
             " vs previous value: " + std::to_string(*lastGlobalStep_) +
             ". The train function must increment global_step.");
  }
  lastGlobalStep_ = step;
}

void StepCounterHook::end(Session &session) {
  (void)session;
  if (writer_)
    writer_->flush();
}

//===----------------------------------------------------------------------===//
// NanTensorHook
//===----------------------------------------------------------------------===//

NanTensorHook::NanTensorHook(std::string loss_tensor, bool fail_on_nan_loss)
    : loss_(std::move(loss_tensor)), fail_(fail_on_nan_loss) {
  if (loss_.empty())
    throw std::invalid_argument("NanTensorHook: loss_tensor is empty");
}

std::vector<std::string> NanTensorHook::graph_fetches() const {
  return graph_fetches_of({loss_});
}

SessionRunArgs NanTensorHook::before_run(SessionRunContext &context) {
  (void)context;
  return {{loss_}};
}

void NanTensorHook::after_run(SessionRunContext &context,
                              const SessionRunValues &values) {
  const TensorValue &loss = fetched(values, loss_, "NanTensorHook");
  bool nan = false;
  for (int64_t i = 0, n = loss.num_elements(); i < n && !nan; ++i)
    nan = std::isnan(loss.element(i));
  if (!nan)
    return;
  std::string message = "Model diverged with loss = NaN.";
  if (fail_) {
    log_info(message);
    throw NanLossDuringTrainingError(
        "NaN loss during training: fetch '" + loss_ + "' is NaN at step " +
        std::to_string(context.session().global_step()));
  }
  log_info(message);
  context.request_stop();
}

//===----------------------------------------------------------------------===//
// SummarySaverHook
//===----------------------------------------------------------------------===//

SummarySaverHook::SummarySaverHook(std::map<std::string, std::string> scalars,
                                   Options options)
    : scalars_(std::move(scalars)), options_(std::move(options)),
      timer_(makeTimer("SummarySaverHook", "save_secs", options_.save_secs,
                       "save_steps", options_.save_steps, options_.clock)) {
  if (scalars_.empty() && options_.summaries.empty())
    throw std::invalid_argument("SummarySaverHook: no scalars to save");
  if (options_.output_dir.empty() && !options_.summary_writer)
    throw std::invalid_argument(
        "SummarySaverHook: one of output_dir and summary_writer must be given");
}

namespace {
std::map<std::string, std::string>
identityTags(const std::vector<std::string> &names) {
  std::map<std::string, std::string> out;
  for (const auto &n : names)
    out[n] = n;
  return out;
}
} // namespace

SummarySaverHook::SummarySaverHook(const std::vector<std::string> &scalars,
                                   Options options)
    : SummarySaverHook(identityTags(scalars), std::move(options)) {}

std::vector<std::string> SummarySaverHook::graph_fetches() const {
  std::vector<std::string> fetches;
  for (const auto &entry : scalars_)
    fetches.push_back(entry.second);
  return graph_fetches_of(fetches);
}

void SummarySaverHook::begin() {
  timer_.reset();
  nextStep_.reset();
  writer_ = options_.summary_writer
                ? options_.summary_writer
                : SummaryWriterCache::get(options_.output_dir);
}

SessionRunArgs SummarySaverHook::before_run(SessionRunContext &context) {
  (void)context;
  requestSummary_ = !nextStep_ || timer_.should_trigger_for_step(*nextStep_);
  SessionRunArgs args{{kGlobalStepFetch}};
  if (requestSummary_) {
    for (const auto &entry : scalars_)
      args.fetches.push_back(entry.second);
    for (const summary::ModelSummary &s : options_.summaries)
      if (!s.fetch.empty())
        args.fetches.push_back(s.fetch);
  }
  return args;
}

void SummarySaverHook::after_run(SessionRunContext &context,
                                 const SessionRunValues &values) {
  (void)context;
  int64_t step = fetchedStep(values, "SummarySaverHook");
  if (requestSummary_) {
    timer_.update_last_triggered_step(step);
    summary::Event event;
    event.set_step(step);
    tensorboard::Summary *out = event.mutable_summary();
    for (const summary::ModelSummary &s : options_.summaries) {
      TensorValue none;
      const TensorValue &v =
          s.fetch.empty() ? none : fetched(values, s.fetch, "SummarySaverHook");
      for (summary::SummaryValue &value : summary::summary_values(s, v))
        *out->add_value() = std::move(value);
    }
    for (const auto &[tag, fetch] : scalars_) {
      const TensorValue &v = fetched(values, fetch, "SummarySaverHook");
      if (v.num_elements() != 1)
        throw std::invalid_argument("SummarySaverHook: fetch '" + fetch +
                                    "' is " + v.spec().str() +
                                    ", not a scalar");
      tensorboard::Summary::Value *value = out->add_value();
      value->set_tag(tag);
      value->set_simple_value(static_cast<float>(v.element(0)));
    }
    writer_->add_event(std::move(event));
  }
  nextStep_ = step + 1;
}

void SummarySaverHook::end(Session &session) {
  (void)session;
  if (writer_)
    writer_->flush();
}

//===----------------------------------------------------------------------===//
// FinalOpsHook
//===----------------------------------------------------------------------===//

FinalOpsHook::FinalOpsHook(std::vector<std::string> final_ops)
    : ops_(std::move(final_ops)) {
  if (ops_.empty())
    throw std::invalid_argument("FinalOpsHook: no final_ops");
}

std::vector<std::string> FinalOpsHook::graph_fetches() const {
  return graph_fetches_of(ops_);
}

void FinalOpsHook::begin() {
  last_.clear();
  final_.clear();
  fetches_.clear();
}

void FinalOpsHook::after_create_session(Session &session) {
  auto names = session.variable_names();
  std::set<std::string> vars(names.begin(), names.end());
  vars.insert(kGlobalStepFetch);
  fetches_.clear();
  for (const auto &op : ops_)
    if (!vars.count(op))
      fetches_.push_back(op);
}

SessionRunArgs FinalOpsHook::before_run(SessionRunContext &context) {
  (void)context;
  return {fetches_};
}

void FinalOpsHook::after_run(SessionRunContext &context,
                             const SessionRunValues &values) {
  (void)context;
  for (const auto &name : fetches_)
    last_[name] = fetched(values, name, "FinalOpsHook");
}

void FinalOpsHook::end(Session &session) {
  final_.clear();
  for (const auto &op : ops_) {
    if (auto v = variableValue(session, op))
      final_[op] = std::move(*v);
    else if (auto it = last_.find(op); it != last_.end())
      final_[op] = it->second;
  }
}

//===----------------------------------------------------------------------===//
// GlobalStepWaiterHook
//===----------------------------------------------------------------------===//

GlobalStepWaiterHook::GlobalStepWaiterHook(int64_t wait_until_step)
    : GlobalStepWaiterHook(wait_until_step, Options()) {}

GlobalStepWaiterHook::GlobalStepWaiterHook(int64_t wait_until_step,
                                           Options options)
    : waitUntil_(wait_until_step), options_(std::move(options)) {
  if (!(options_.poll_secs > 0))
    throw std::invalid_argument("GlobalStepWaiterHook: poll_secs must be > 0");
  if (options_.timeout_secs && !(*options_.timeout_secs >= 0))
    throw std::invalid_argument(
        "GlobalStepWaiterHook: timeout_secs must be >= 0");
}

void GlobalStepWaiterHook::begin() { started_ = waitUntil_ <= 0; }

SessionRunArgs GlobalStepWaiterHook::before_run(SessionRunContext &context) {
  if (started_)
    return {};
  Session &session = context.session();
  auto read = [&] {
    return options_.global_step ? options_.global_step(session)
                                : session.global_step();
  };
  auto now = [&] {
    return options_.clock ? options_.clock() : monotonic_seconds();
  };
  std::string target = std::to_string(waitUntil_);
  log_info("Waiting for global step " + target + " before starting training.");
  double start = now();
  int64_t lastLogged = 0;
  while (true) {
    int64_t current = read();
    if (current >= waitUntil_) {
      started_ = true;
      return {};
    }
    if (current - lastLogged > 1000) {
      log_info("Waiting for global step " + target +
               " before starting training. Current step is " +
               std::to_string(current) + ".");
      lastLogged = current;
    }
    double waited = now() - start;
    if (options_.timeout_secs && waited >= *options_.timeout_secs)
      throw std::runtime_error(
          "GlobalStepWaiterHook: global step is " + std::to_string(current) +
          ", still below " + target + " after waiting " + fmtSeconds(waited) +
          " sec (timeout_secs " + fmtSeconds(*options_.timeout_secs) + ")");
    if (options_.sleep)
      options_.sleep(options_.poll_secs);
    else
      std::this_thread::sleep_for(
          std::chrono::duration<double>(options_.poll_secs));
  }
}

//===----------------------------------------------------------------------===//
// ProfilerHook
//===----------------------------------------------------------------------===//

std::string chrome_trace_json(const std::vector<StepPhase> &phases,
                              int64_t global_step) {
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  std::string step = std::to_string(global_step);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out += "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": "
         "0, \"args\": {\"name\": " +
         json::quote("estc step " + step) + "}}";
  for (const auto &p : phases) {
    std::string cat = p.name.substr(0, p.name.find(':'));
    out +=
        ",\n  {\"name\": " + json::quote(p.name) +
        ", \"cat\": " + json::quote(cat) +
        ", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": " + num(p.start_us) +
        ", \"dur\": " + num(p.duration_us) +
        ", \"args\": {\"global_step\": " + step + "}}";
  }
  out += "\n]}\n";
  return out;
}

ProfilerHook::ProfilerHook(Options options)
    : options_(std::move(options)),
      timer_(makeTimer("ProfilerHook", "save_secs", options_.save_secs,
                       "save_steps", options_.save_steps, options_.clock)) {}

void ProfilerHook::begin() {
  timer_.reset();
  nextStep_.reset();
  written_.clear();
}

void ProfilerHook::after_create_session(Session &session) {
  dir_ =
      options_.output_dir.empty() ? session.model_dir() : options_.output_dir;
  if (dir_.empty())
    throw std::invalid_argument(
        "ProfilerHook: no output_dir and the session has no model_dir");
}

SessionRunArgs ProfilerHook::before_run(SessionRunContext &context) {
  (void)context;
  requestTrace_ = nextStep_ && timer_.should_trigger_for_step(*nextStep_);
  return {{kGlobalStepFetch}};
}

void ProfilerHook::after_run(SessionRunContext &context,
                             const SessionRunValues &values) {
  (void)context;
  int64_t step = fetchedStep(values, "ProfilerHook");
  if (!nextStep_)
    timer_.update_last_triggered_step(step - 1);
  if (requestTrace_) {
    timer_.update_last_triggered_step(step);
    fileio::makeDirs(dir_);
    std::string file =
        fileio::joinPath(dir_, "timeline-" + std::to_string(step) + ".json");
    fileio::writeFileAtomically(file, chrome_trace_json(values.phases, step));
    written_.push_back(file);
  }
  nextStep_ = step + 1;
}

} // namespace estimator
} // namespace estc
