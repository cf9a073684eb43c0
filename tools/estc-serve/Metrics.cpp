//===- Metrics.cpp - estc-serve's Prometheus metrics ---------------------===//

#include "tools/estc-serve/Metrics.h"

#include <cmath>
#include <cstdio>

namespace estc {
namespace serving {

namespace {
const std::vector<double> &latencyBounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b;
    for (int i = 0; i < 33; ++i)
      b.push_back(10 * std::pow(1.8, i));
    return b;
  }();
  return bounds;
}

const std::vector<double> &batchBounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b;
    for (double v = 1; v <= 65536; v *= 2)
      b.push_back(v);
    return b;
  }();
  return bounds;
}

/// A label value: backslash, double quote and newline escaped.
std::string escape(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void writeHistogram(std::string &out, const std::string &name,
                    const std::string &labels,
                    const std::vector<double> &bounds,
                    const std::vector<uint64_t> &counts, double sum,
                    uint64_t count) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    char le[32] = "+Inf";
    if (i < bounds.size())
      std::snprintf(le, sizeof le, "%g", bounds[i]);
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + number(sum) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count) + "\n";
}
} // namespace

void Metrics::observe(Histogram &h, const std::vector<double> &bounds,
                      double v) {
  if (h.counts.empty())
    h.counts.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i])
    ++i;
  ++h.counts[i];
  h.sum += v;
  ++h.count;
}

void Metrics::record_request(const std::string &model,
                             const std::string &method,
                             const std::string &status, double latency_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{model, method, status}];
  observe(latency_[{model, method}], latencyBounds(), latency_us);
}

void Metrics::record_batch(const std::string &model,
                           const std::string &signature, int64_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  observe(batches_[{model, signature}], batchBounds(),
          static_cast<double>(size));
}

std::string Metrics::prometheus_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  const std::string count = ":tensorflow:serving:request_count";
  out += "# HELP " + count +
         " The number of requests by model, method and status.\n";
  out += "# TYPE " + count + " counter\n";
  for (const auto &[key, n] : requests_) {
    const auto &[model, method, status] = key;
    out += count + "{model_name=\"" + escape(model) + "\",method=\"" +
           escape(method) + "\",status=\"" + escape(status) + "\"} " +
           std::to_string(n) + "\n";
  }
  const std::string latency = ":tensorflow:serving:request_latency";
  out += "# HELP " + latency +
         " Request latency in microseconds, by model and method.\n";
  out += "# TYPE " + latency + " histogram\n";
  for (const auto &[key, h] : latency_)
    writeHistogram(out, latency,
                   "model_name=\"" + escape(key.first) + "\",API=\"" +
                       escape(key.second) + "\",entrypoint=\"REST\"",
                   latencyBounds(), h.counts, h.sum, h.count);
  const std::string batch =
      ":tensorflow:serving:batching_session:processed_batch_size";
  out +=
      "# HELP " + batch + " Examples per batch the server-side batcher ran.\n";
  out += "# TYPE " + batch + " histogram\n";
  for (const auto &[key, h] : batches_)
    writeHistogram(out, batch,
                   "model_name=\"" + escape(key.first) +
                       "\",signature_name=\"" + escape(key.second) + "\"",
                   batchBounds(), h.counts, h.sum, h.count);
  return out;
}

} // namespace serving
} // namespace estc
