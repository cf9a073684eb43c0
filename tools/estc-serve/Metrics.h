//===- Metrics.h - estc-serve's Prometheus metrics -----------------------===//
//
// What GET /monitoring/prometheus/metrics returns, in Prometheus' text
// exposition format (version 0.0.4), with TF Serving's metric names:
//
//   :tensorflow:serving:request_count{model_name,method,status}     counter
//   :tensorflow:serving:request_latency{model_name,API,entrypoint}   histogram
//       (microseconds, TF Serving's buckets 10 * 1.8^i)
//   :tensorflow:serving:batching_session:processed_batch_size
//       {model_name,signature_name}                                  histogram
//
// Recording is thread-safe (one mutex: a request records twice, under a
// microsecond each).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_METRICS_H
#define ESTC_ESTIMATOR_SERVING_METRICS_H

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace estc {
namespace serving {

class Metrics {
public:
  /// One finished request: its model ("" when the path named none), method
  /// ("predict", ...), status code name ("OK", "NOT_FOUND", ...) and
  /// latency.
  void record_request(const std::string &model, const std::string &method,
                      const std::string &status, double latency_us);
  /// One batch the batcher ran.
  void record_batch(const std::string &model, const std::string &signature,
                    int64_t size);
  /// The text format.
  std::string prometheus_text() const;

private:
  struct Histogram {
    std::vector<uint64_t> counts; // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  static void observe(Histogram &h, const std::vector<double> &bounds,
                      double v);

  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t>
      requests_;
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
  std::map<std::pair<std::string, std::string>, Histogram> batches_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_METRICS_H
