//===- StepRunners.cpp - One step of a compiled function on the input --===//

#include "estimator/StepRunners.h"

#include "estimator/Distributed.h"
#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "estimator/ModelSession.h"
#include "estimator/ProgressBar.h"
#include "runtime/Collective.h"
#include "runtime/CompiledModel.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace estc {
namespace estimator {
namespace detail {

namespace {
std::string outputList(rt::CompiledModel &m, int fn) {
  const rt::FunctionSpec &f = m.spec().functions[fn];
  std::string s;
  for (int i = 0; i < f.numOutputs; ++i)
    s += (i ? ", " : "") + std::string(f.outputs[i].key);
  return s;
}
} // namespace

// --- ModelStep ---------------------------------------------------------------

ModelStep::ModelStep(rt::CompiledModel &m, int fn, int metricsFn, Dataset &data,
                     std::string call)
    : m_(m), fn_(fn), metricsFn_(metricsFn), data_(data),
      call_(std::move(call)), inputs_(m, fn) {}

std::string ModelStep::function_name() const {
  return m_.spec().functions[ranSummaries_ ? summariesFn_ : fn_].name;
}

bool ModelStep::next_batch() {
  if (const Batch *arrays = data_.arrays()) {
    if (arrayFeed_.arrays != arrays)
      arrayFeed_ = arrayFeed(inputs_, *arrays);
    if (arrayFeed_.ok) {
      data_.next_rows(rows_);
      if (rows_.empty())
        return false;
      feedRows(m_, fn_, arrayFeed_, rows_);
      batchSize_ = m_.batch();
      return true;
    }
  }
  std::optional<Batch> batch = data_.next();
  if (!batch)
    return false;
  feed(m_, inputs_, *batch, call_);
  batchSize_ = m_.batch();
  return true;
}

void ModelStep::run(const std::vector<std::string> &fetches) {
  // The fetches are nearly always the last step's: resolved once.
  if (fetches != lastFetches_) {
    std::vector<Item> items;
    for (const std::string &fetch : fetches)
      items.push_back(resolve(fetch));
    lastFetches_ = fetches;
    lastItems_ = std::move(items);
  }
  bool metrics = false, summaries = false;
  for (const Item &item : lastItems_) {
    metrics |= item.kind == Kind::Metric;
    summaries |= item.kind == Kind::Summary;
  }
  ranSummaries_ = summaries;
  if (summaries)
    runSummaries(fn_);
  else
    m_.run(fn_);
  if (metrics)
    m_.run(metricsFn_);
}

void ModelStep::runSummaries(int from) {
  // The same inputs as the step function's: `train_summaries` is the train
  // signature with more outputs.
  const rt::FunctionSpec &f = m_.spec().functions[from];
  for (int i = 0; i < f.numInputs; ++i) {
    const rt::TensorSpec &t = f.inputs[i];
    int64_t values = m_.values(from, i);
    bool sparse = false;
    for (int d = 0; d < t.rank; ++d)
      sparse |= t.shape[d] == rt::kValuesDim;
    if (sparse)
      m_.set_values(summariesFn_, i, values);
    std::vector<int64_t> shape =
        binding::concreteShape(t, m_.batch(), values, m_.sequence_length());
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::memcpy(m_.input_data(summariesFn_, i), m_.input_data(from, i),
                static_cast<size_t>(n) * rt::dtypeBytes(t.dtype));
  }
  m_.run(summariesFn_);
}

TensorValue ModelStep::value(const std::string &fetch) {
  TensorValue value;
  readItem(lastItem(fetch), fetch, value);
  return value;
}

void ModelStep::read(size_t i, const std::string &fetch, TensorValue &into) {
  readItem(i < lastFetches_.size() && lastFetches_[i] == fetch
               ? lastItems_[i]
               : lastItem(fetch),
           fetch, into);
}

void ModelStep::readItem(const Item &item, const std::string &fetch,
                         TensorValue &into) {
  switch (item.kind) {
  case Kind::Output:
    if (ranSummaries_)
      binding::readOutput(m_, summariesFn_,
                          m_.output_index(summariesFn_, fetch), into);
    else
      binding::readOutput(m_, fn_, item.index, into);
    return;
  case Kind::Summary:
    binding::readOutput(m_, summariesFn_, item.index, into);
    return;
  case Kind::Metric:
    binding::readOutput(m_, metricsFn_, item.index, into);
    return;
  case Kind::Variable:
    binding::readVariable(m_, item.index, into);
    return;
  }
}

ModelStep::Item ModelStep::lastItem(const std::string &fetch) {
  for (size_t i = 0; i < lastFetches_.size(); ++i)
    if (lastFetches_[i] == fetch)
      return lastItems_[i];
  return resolve(fetch);
}

ModelStep::Item ModelStep::resolve(const std::string &fetch) {
  auto it = cache_.find(fetch);
  if (it != cache_.end())
    return it->second;
  Item item{Kind::Output, m_.find_output(fn_, fetch)};
  if (item.index < 0 && metricsFn_ >= 0)
    item = {Kind::Metric, m_.find_output(metricsFn_, fetch)};
  if (item.index < 0 && summariesFn_ >= 0)
    item = {Kind::Summary, m_.find_output(summariesFn_, fetch)};
  if (item.index < 0)
    item = {Kind::Variable, m_.find_variable(fetch)};
  if (item.index < 0) {
    std::string outputs = outputList(m_, fn_);
    if (metricsFn_ >= 0)
      outputs += (outputs.empty() ? "" : ", ") + outputList(m_, metricsFn_);
    throw std::invalid_argument("Estimator: hook fetch '" + fetch +
                                "' is neither an output of the "
                                "model's " +
                                m_.spec().functions[fn_].name + " function (" +
                                outputs + ") nor a variable");
  }
  cache_.emplace(fetch, item);
  return item;
}

// --- LoopStep ----------------------------------------------------------------

LoopStep::LoopStep(rt::CompiledModel &m, int stepFn, int loopFn, Dataset &data,
                   const Session &session, int64_t iterations,
                   const std::optional<int64_t> &lastStep)
    : ModelStep(m, loopFn >= 0 ? loopFn : stepFn, /*metricsFn=*/-1, data,
                "train"),
      stepFn_(stepFn), loopFn_(loopFn), session_(session),
      iterations_(iterations), lastStep_(lastStep), stepInputs_(m, stepFn) {}

namespace {
/// The batch's size; -1 when it has none (feed() then says why).
int64_t sizeOf(const Batch &batch) {
  try {
    return batch.size();
  } catch (const std::invalid_argument &) {
    return -1;
  }
}
} // namespace

bool LoopStep::next_batch() {
  int64_t want = iterations_;
  if (lastStep_)
    want = std::clamp<int64_t>(*lastStep_ - session_.global_step(), 1,
                               iterations_);
  staged_.clear();
  steps_ = 0;
  while (steps_ < want) {
    std::optional<Batch> batch = std::move(pending_);
    pending_.reset();
    if (!batch)
      batch = data_.next();
    if (!batch)
      break;
    if (steps_ > 0 && sizeOf(*batch) != batchSize_) {
      pending_ = std::move(batch);
      break;
    }
    if (loopFn_ < 0) {
      batchSize_ = batch->size();
      staged_.push_back(std::move(*batch));
    } else {
      stage(*batch, want);
    }
    ++steps_;
  }
  return steps_ > 0;
}

void LoopStep::run(const std::vector<std::string> &fetches) {
  bool summaries = false;
  for (const std::string &fetch : fetches) // an unknown fetch fails first
    summaries |= resolve(fetch).kind == Kind::Summary;
  // The summaries are the last step's: it runs as `train_summaries`.
  ranSummaries_ = summaries;
  if (loopFn_ >= 0) {
    if (!summaries || steps_ > 1) {
      m_.set_steps(loopFn_, summaries ? steps_ - 1 : steps_);
      m_.run(loopFn_);
    }
    // The step function's inputs still hold the last batch staged.
    if (summaries)
      runSummaries(stepFn_);
    return;
  }
  for (size_t k = 0; k < staged_.size(); ++k) {
    feed(m_, stepInputs_, staged_[k], call_);
    if (summaries && k + 1 == staged_.size())
      runSummaries(stepFn_);
    else
      m_.run(stepFn_);
  }
}

void LoopStep::stage(const Batch &batch, int64_t want) {
  feed(m_, stepInputs_, batch, call_);
  batchSize_ = m_.batch();
  if (steps_ == 0)
    m_.set_steps(loopFn_, want);
  const rt::FunctionSpec &f = m_.spec().functions[stepFn_];
  for (int i = 0; i < f.numInputs; ++i) {
    const rt::TensorSpec &t = f.inputs[i];
    size_t bytes =
        static_cast<size_t>(rt::numElements(t.rank, t.shape, batchSize_)) *
        rt::dtypeBytes(t.dtype);
    std::memcpy(static_cast<char *>(m_.input_data(loopFn_, i)) +
                    static_cast<size_t>(steps_) * bytes,
                m_.input_data(stepFn_, i), bytes);
  }
}

// --- DistributedStep ---------------------------------------------------------

bool DistributedStep::next_batch() {
  bool have = inner_.next_batch();
  int64_t after = session_.global_step() + (have ? inner_.steps_in_batch() : 0);
  int64_t flags[2] = {have ? 0 : 1, 0};
  if (group_.rank() == 0 && have && saver_)
    flags[1] =
        saver_->will_save_at(after) || (lastStep_ && after >= *lastStep_);
  auto start = SteadyClock::now();
  group_.collective().allReduceSum(flags, 2);
  rt::recordCollective(secondsSince(start), sizeof flags);
  if (flags[0] > 0) {
    if (have)
      log_info("The input of " + std::to_string(flags[0]) +
               " other replica(s) ran out: every replica stops.");
    return false;
  }
  if (flags[1] > 0) {
    std::string mine;
    if (std::optional<std::string> state = data_.save_state())
      mine = *state;
    std::vector<std::string> all = group_.all_gather(mine);
    std::map<int, std::string> states;
    for (size_t r = 1; r < all.size(); ++r)
      if (!all[r].empty())
        states[static_cast<int>(r)] = std::move(all[r]);
    session_.set_replica_input_states(std::move(states), after);
  }
  return true;
}

} // namespace detail
} // namespace estimator
} // namespace estc
