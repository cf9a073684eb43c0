//===- Predictions.cpp - The lazy range predict() returns --------------===//
//
// Predictions (estimator/Estimator.h): predict()'s loop, one MonitoredSession
// over the predict function started by the range's first begin(), each batch
// read and run when the iteration reaches it.
//
//===----------------------------------------------------------------------===//

#include "estimator/Runner.h"

#include <stdexcept>

namespace estc {
namespace estimator {

Predictions::Predictions(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
Predictions::Predictions(Predictions &&) noexcept = default;
Predictions &Predictions::operator=(Predictions &&) noexcept = default;
Predictions::~Predictions() = default;

namespace {
/// Row `index` of `t` (first dimension removed).
TensorValue row(const TensorValue &t, int64_t index) {
  TensorValue out;
  out.dtype = t.dtype;
  out.shape.assign(t.shape.begin() + 1, t.shape.end());
  if (t.dtype == DType::String) { // host predictions: class names
    size_t n = t.strings.size() / static_cast<size_t>(t.shape[0]);
    out.strings.assign(t.strings.begin() + static_cast<ptrdiff_t>(n * index),
                       t.strings.begin() +
                           static_cast<ptrdiff_t>(n * (index + 1)));
    return out;
  }
  size_t bytes = t.data.size() / static_cast<size_t>(t.shape[0]);
  out.data = t.data.substr(bytes * index, bytes);
  return out;
}
} // namespace

Predictions::iterator Predictions::begin() {
  State &s = *state_;
  if (!s.loop) {
    s.session = std::make_unique<detail::ModelSession>(
        *s.model, s.runner->config().model_dir());
    s.step = std::make_unique<detail::ModelStep>(*s.model, s.fn, -1, s.data,
                                                 "predict");
    s.loop =
        std::make_unique<MonitoredSession>(*s.session, *s.step, s.hooks, [&s] {
          s.runner->restoreForInference(*s.model, s.checkpointPath, "predict",
                                        ModeKeys::PREDICT);
        });
    if (!advance())
      return end();
  }
  return s.done ? end() : iterator(this);
}

bool Predictions::advance() {
  State &s = *state_;
  if (s.done)
    return false;
  if (s.single && s.index + 1 < s.batchSize) {
    ++s.index;
    s.current.clear();
    for (const auto &[key, value] : s.batchValues)
      s.current[key] = row(value, s.index);
    return true;
  }
  std::optional<FetchValues> values;
  if (!s.loop->should_stop())
    values = s.loop->run(s.fetches);
  if (!values) { // the input ran out, or a hook asked for a stop
    s.done = true;
    s.loop->close();
    return false;
  }
  s.batchValues.clear();
  for (auto &[fetch, value] : *values)
    s.batchValues[fetch.substr(std::string("predictions/").size())] =
        std::move(value);
  if (s.transform)
    s.transform->transform_predictions(s.batchValues);
  s.batchSize = s.step->batch_size();
  s.index = 0;
  if (s.single) {
    s.current.clear();
    for (const auto &[key, value] : s.batchValues)
      s.current[key] = row(value, 0);
  } else {
    s.current = s.batchValues;
    s.batchSize = 0; // one element per batch
  }
  return true;
}

const Prediction &Predictions::iterator::operator*() const {
  if (!range_)
    throw std::logic_error("Predictions: dereferencing the end iterator");
  return range_->state_->current;
}

Predictions::iterator &Predictions::iterator::operator++() {
  if (range_ && !range_->advance())
    range_ = nullptr;
  return *this;
}

bool Predictions::iterator::operator==(const iterator &other) const {
  return range_ == other.range_;
}

} // namespace estimator
} // namespace estc
