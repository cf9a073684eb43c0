//===- Exporters.cpp - tf.estimator's LatestExporter, BestExporter, ... --===//

#include "estimator/Exporters.h"

#include "estimator/Logging.h"
#include "lib/Summary/Summary.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace estc {
namespace estimator {

namespace fs = std::filesystem;

namespace {

ServingInputReceiverFn checkReceiverFn(ServingInputReceiverFn fn,
                                       const std::string &who) {
  if (!fn)
    throw std::invalid_argument(who + ": serving_input_receiver_fn is empty");
  return fn;
}

/// An export version: a folder name of exactly 10 digits (TF's
/// _export_version_parser; export_saved_model's timestamps), else nullopt.
std::optional<int64_t> exportVersion(const std::string &name) {
  if (name.size() != 10 || !std::all_of(name.begin(), name.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return std::nullopt;
  return std::stoll(name);
}

/// TF's _garbage_collect_exports: deletes every export version in
/// `exportDirBase` but the `keep` largest; other entries stay.
void garbageCollectExports(const std::string &exportDirBase,
                           std::optional<int64_t> keep) {
  if (!keep)
    return;
  std::vector<std::pair<int64_t, fs::path>> versions;
  for (const fs::directory_entry &entry : fs::directory_iterator(exportDirBase))
    if (std::optional<int64_t> v =
            exportVersion(entry.path().filename().string()))
      versions.emplace_back(*v, entry.path());
  std::sort(versions.begin(), versions.end());
  size_t drop = versions.size() > size_t(*keep) ? versions.size() - *keep : 0;
  for (size_t i = 0; i < drop; ++i) {
    std::error_code ec;
    fs::remove_all(versions[i].second, ec);
    if (ec) // TF warns and goes on
      log_info("Can not delete " + versions[i].second.string() +
               " recursively: " + ec.message());
  }
}

/// The files matching a glob pattern, sorted; none when nothing matches.
std::vector<std::string> globFiles(const std::string &pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      files.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH)
    throw std::runtime_error("BestExporter: cannot list the event files " +
                             pattern);
  return files;
}

std::optional<int64_t> checkExportsToKeep(std::optional<int64_t> keep,
                                          const std::string &message) {
  if (keep && *keep <= 0)
    throw std::invalid_argument(message);
  return keep;
}

} // namespace

bool loss_smaller(const EvalResults &best_eval_result,
                  const EvalResults &current_eval_result) {
  auto best = best_eval_result.find("loss");
  if (best == best_eval_result.end())
    throw std::invalid_argument(
        "best_eval_result cannot be empty or no loss is found in it.");
  auto current = current_eval_result.find("loss");
  if (current == current_eval_result.end())
    throw std::invalid_argument(
        "current_eval_result cannot be empty or no loss is found in it.");
  return best->second > current->second;
}

//===----------------------------------------------------------------------===//
// LatestExporter
//===----------------------------------------------------------------------===//

LatestExporter::LatestExporter(std::string name,
                               ServingInputReceiverFn serving_input_receiver_fn,
                               std::map<std::string, std::string> assets_extra,
                               bool as_text,
                               std::optional<int64_t> exports_to_keep)
    : name_(std::move(name)),
      receiverFn_(checkReceiverFn(std::move(serving_input_receiver_fn),
                                  "LatestExporter")),
      assetsExtra_(std::move(assets_extra)), asText_(as_text),
      exportsToKeep_(checkExportsToKeep(
          exports_to_keep, "LatestExporter: `exports_to_keep`, if provided, "
                           "must be positive number, got " +
                               std::to_string(exports_to_keep.value_or(0)))) {}

std::string LatestExporter::export_model(Estimator &estimator,
                                         const std::string &export_path,
                                         const std::string &checkpoint_path,
                                         const EvalResults &eval_result,
                                         bool is_the_final_export) {
  (void)eval_result;
  (void)is_the_final_export;
  std::string exported =
      estimator.export_saved_model(export_path, receiverFn_,
                                   {.assets_extra = assetsExtra_,
                                    .as_text = asText_,
                                    .checkpoint_path = checkpoint_path});
  garbageCollectExports(export_path, exportsToKeep_);
  return exported;
}

//===----------------------------------------------------------------------===//
// BestExporter
//===----------------------------------------------------------------------===//

BestExporter::BestExporter(std::string name,
                           ServingInputReceiverFn serving_input_receiver_fn,
                           std::string event_file_pattern, CompareFn compare_fn,
                           std::map<std::string, std::string> assets_extra,
                           bool as_text, std::optional<int64_t> exports_to_keep)
    : name_(std::move(name)), eventFilePattern_(std::move(event_file_pattern)),
      compareFn_(std::move(compare_fn)), assetsExtra_(std::move(assets_extra)),
      asText_(as_text) {
  // TF's order of checks: compare_fn, then exports_to_keep.
  if (!compareFn_)
    throw std::invalid_argument("BestExporter: `compare_fn` must not be None.");
  receiverFn_ =
      checkReceiverFn(std::move(serving_input_receiver_fn), "BestExporter");
  exportsToKeep_ = checkExportsToKeep(
      exports_to_keep,
      "BestExporter: `exports_to_keep`, if provided, must be a positive "
      "number. Got " +
          std::to_string(exports_to_keep.value_or(0)));
}

std::string BestExporter::export_model(Estimator &estimator,
                                       const std::string &export_path,
                                       const std::string &checkpoint_path,
                                       const EvalResults &eval_result,
                                       bool is_the_final_export) {
  (void)is_the_final_export;
  // A new model_dir (the first call, or another Estimator): its evaluations
  // so far set the bar.
  if (modelDir_ != estimator.model_dir() && !eventFilePattern_.empty()) {
    log_info("Loading best metric from event files.");
    modelDir_ = estimator.model_dir();
    std::string pattern =
        eventFilePattern_.front() == '/'
            ? eventFilePattern_
            : (fs::path(*modelDir_) / eventFilePattern_).string();
    bestEvalResult_ = bestInEventFiles(pattern);
  }
  // TF 2.15 exports on an exporter's first call whatever the event files
  // say, so that there is always a best export to serve.
  if (bestEvalResult_ && hasExported_ &&
      !compareFn_(*bestEvalResult_, eval_result))
    return "";
  log_info("Performing best model export.");
  bestEvalResult_ = eval_result;
  std::string exported =
      estimator.export_saved_model(export_path, receiverFn_,
                                   {.assets_extra = assetsExtra_,
                                    .as_text = asText_,
                                    .checkpoint_path = checkpoint_path});
  garbageCollectExports(export_path, exportsToKeep_);
  hasExported_ = true;
  return exported;
}

std::optional<EvalResults>
BestExporter::bestInEventFiles(const std::string &pattern) const {
  std::optional<EvalResults> best;
  for (const std::string &file : globFiles(pattern))
    for (const summary::Event &event : summary::read_events(file)) {
      if (!event.has_summary())
        continue;
      EvalResults result;
      for (const auto &value : event.summary().value())
        if (value.value_case() == tensorboard::Summary::Value::kSimpleValue)
          result[value.tag()] = value.simple_value();
      if (!result.empty() && (!best || compareFn_(*best, result)))
        best = std::move(result);
    }
  return best;
}

//===----------------------------------------------------------------------===//
// FinalExporter
//===----------------------------------------------------------------------===//

FinalExporter::FinalExporter(std::string name,
                             ServingInputReceiverFn serving_input_receiver_fn,
                             std::map<std::string, std::string> assets_extra,
                             bool as_text)
    : name_(std::move(name)),
      receiverFn_(checkReceiverFn(std::move(serving_input_receiver_fn),
                                  "FinalExporter")),
      assetsExtra_(std::move(assets_extra)), asText_(as_text) {}

std::string FinalExporter::export_model(Estimator &estimator,
                                        const std::string &export_path,
                                        const std::string &checkpoint_path,
                                        const EvalResults &eval_result,
                                        bool is_the_final_export) {
  (void)eval_result;
  if (!is_the_final_export)
    return "";
  log_info("Performing the final export in the end of training.");
  return estimator.export_saved_model(export_path, receiverFn_,
                                      {.assets_extra = assetsExtra_,
                                       .as_text = asText_,
                                       .checkpoint_path = checkpoint_path});
}

} // namespace estimator
} // namespace estc
