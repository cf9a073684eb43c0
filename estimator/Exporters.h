//===- Exporters.h - tf.estimator's LatestExporter, BestExporter, ... ----===//
//
// The Exporters of TF 2.15 (tensorflow_estimator/python/estimator/
// exporter.py) that train_and_evaluate calls after each evaluation with the
// evaluated checkpoint (estimator/Training.h). Each one writes
// Estimator::export_saved_model(export_path, serving_input_receiver_fn,
// {assets_extra, as_text, checkpoint_path}) into model_dir/export/<name>/ and
// returns the export folder, or "" when it exported nothing:
//
//   - LatestExporter: after every evaluation; then deletes all but the
//     exports_to_keep newest exports (folders named by a 10-digit timestamp;
//     nothing else in export_path is touched);
//   - BestExporter: when compare_fn(best so far, this evaluation) says the
//     new one is better (default: a smaller "loss"), with the same garbage
//     collection. As TF 2.15: the first call of an exporter always exports
//     (so a job has an export to serve), and whenever the Estimator's
//     model_dir is not the one seen last, the best result so far is read
//     back from the evaluations in that model_dir's event files
//     (event_file_pattern);
//   - FinalExporter: only when is_the_final_export (the evaluation reached
//     TrainSpec::max_steps).
//
//   auto receiver = estimator::build_parsing_serving_input_receiver_fn(spec);
//   EvalSpec eval;
//   eval.exporters = {std::make_shared<BestExporter>("best", receiver),
//                     std::make_shared<FinalExporter>("final", receiver)};
//
// Bad arguments are std::invalid_argument with TF's one-line message.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_EXPORTERS_H
#define ESTC_ESTIMATOR_EXPORTERS_H

#include "estimator/Estimator.h"
#include "estimator/Export.h"
#include "estimator/Training.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace estc {
namespace estimator {

/// BestExporter's compare_fn: true when current_eval_result is better than
/// best_eval_result.
using CompareFn = std::function<bool(const EvalResults &best_eval_result,
                                     const EvalResults &current_eval_result)>;

/// TF's default compare_fn (exporter._loss_smaller): the current "loss" is
/// smaller than the best one. std::invalid_argument when either result has
/// no "loss".
bool loss_smaller(const EvalResults &best_eval_result,
                  const EvalResults &current_eval_result);

/// tf.estimator.LatestExporter.
class LatestExporter : public Exporter {
public:
  /// exports_to_keep: how many of the newest exports to keep; nullopt keeps
  /// all; <= 0 is std::invalid_argument. An empty serving_input_receiver_fn
  /// is std::invalid_argument (TF fails at the first export instead).
  LatestExporter(std::string name,
                 ServingInputReceiverFn serving_input_receiver_fn,
                 std::map<std::string, std::string> assets_extra = {},
                 bool as_text = false,
                 std::optional<int64_t> exports_to_keep = 5);

  std::string name() const override { return name_; }
  std::string export_model(Estimator &estimator, const std::string &export_path,
                           const std::string &checkpoint_path,
                           const EvalResults &eval_result,
                           bool is_the_final_export) override;

private:
  std::string name_;
  ServingInputReceiverFn receiverFn_;
  std::map<std::string, std::string> assetsExtra_;
  bool asText_;
  std::optional<int64_t> exportsToKeep_;
};

/// tf.estimator.BestExporter.
class BestExporter : public Exporter {
public:
  /// event_file_pattern: a glob relative to model_dir (or absolute) of the
  /// event files whose evaluations give the best result so far; empty:
  /// none are read (TF's None). compare_fn: empty is std::invalid_argument.
  /// exports_to_keep and serving_input_receiver_fn as LatestExporter's.
  BestExporter(std::string name = "best_exporter",
               ServingInputReceiverFn serving_input_receiver_fn = {},
               std::string event_file_pattern = "eval/*.tfevents.*",
               CompareFn compare_fn = loss_smaller,
               std::map<std::string, std::string> assets_extra = {},
               bool as_text = false,
               std::optional<int64_t> exports_to_keep = 5);

  std::string name() const override { return name_; }
  std::string export_model(Estimator &estimator, const std::string &export_path,
                           const std::string &checkpoint_path,
                           const EvalResults &eval_result,
                           bool is_the_final_export) override;

private:
  /// The best evaluation in the event files matching `pattern`, by
  /// compare_fn; nullopt when they hold none.
  std::optional<EvalResults> bestInEventFiles(const std::string &pattern) const;

  std::string name_;
  ServingInputReceiverFn receiverFn_;
  std::string eventFilePattern_;
  CompareFn compareFn_;
  std::map<std::string, std::string> assetsExtra_;
  bool asText_;
  std::optional<int64_t> exportsToKeep_;
  /// The model_dir whose event files were read last.
  std::optional<std::string> modelDir_;
  std::optional<EvalResults> bestEvalResult_;
  bool hasExported_ = false;
};

/// tf.estimator.FinalExporter.
class FinalExporter : public Exporter {
public:
  /// An empty serving_input_receiver_fn is std::invalid_argument.
  FinalExporter(std::string name,
                ServingInputReceiverFn serving_input_receiver_fn,
                std::map<std::string, std::string> assets_extra = {},
                bool as_text = false);

  std::string name() const override { return name_; }
  std::string export_model(Estimator &estimator, const std::string &export_path,
                           const std::string &checkpoint_path,
                           const EvalResults &eval_result,
                           bool is_the_final_export) override;

private:
  std::string name_;
  ServingInputReceiverFn receiverFn_;
  std::map<std::string, std::string> assetsExtra_;
  bool asText_;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_EXPORTERS_H
