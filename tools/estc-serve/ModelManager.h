//===- ModelManager.h - Served models, their versions, polling, swaps ---===//
//
// TF Serving's ServerCore for estc-serve: each configured model is a base
// path whose all-digit subfolders are its versions; a version policy picks
// which are served (the newest by default); a poll (every
// --file_system_poll_wait_seconds) loads new versions beside the served ones
// and swaps the model's version set in with one atomic pointer store, so a
// request sees either the old set or the new one and never fails for the
// swap. A request holds its version by shared_ptr: a version dropped from
// the set is unloaded when its last request finishes. A version that fails to
// load is logged once (one line) and skipped: the versions served before
// keep serving; it is tried again at each poll (an export still being
// copied in can succeed later).
//
// What is served is a Servable (TF Serving's servable, behind its Loader):
// in estc-serve a serving::SavedModel (SavedModelServable.h); tests serve
// their own.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_SERVING_MODELMANAGER_H
#define ESTC_ESTIMATOR_SERVING_MODELMANAGER_H

#include "runtime/serving/SavedModel.h"
#include "tools/estc-serve/RestApi.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace estc {
namespace serving {

/// A loaded model version: its signatures and run() (SavedModel's contract:
/// const, safe for concurrent callers, std::invalid_argument /
/// data::DataError for a bad request).
class Servable {
public:
  virtual ~Servable() = default;
  virtual const std::map<std::string, SignatureDef> &signatures() const = 0;
  virtual TensorMap
  run(const std::string &signature, const TensorMap &inputs,
      const std::vector<std::string> &output_filter) const = 0;
};

/// How versions are found and loaded.
struct Loader {
  /// The versions under a base path, (number, folder) sorted by number
  /// (serving::list_versions).
  std::function<std::vector<std::pair<int64_t, std::string>>(
      const std::string &base_path)>
      list_versions;
  /// Loads one version folder; throws LoadError (one line).
  std::function<std::shared_ptr<const Servable>(const std::string &dir)> load;
};

/// TF Serving's ServableVersionPolicy.
struct VersionPolicy {
  enum class Kind { Latest, All, Specific };
  Kind kind = Kind::Latest;
  /// Latest: how many of the newest.
  int64_t num_versions = 1;
  /// Specific: which.
  std::vector<int64_t> versions;
};

/// One model of --model_config_file (or --model_name/--model_base_path).
struct ModelConfig {
  std::string name;
  std::string base_path;
  VersionPolicy policy;
  /// Label -> version (/v1/models/NAME/labels/LABEL).
  std::map<std::string, int64_t> version_labels;
};

class ModelManager {
public:
  /// `log` receives one line per load, unload and load failure (stderr by
  /// default). Loads nothing yet: call poll(). std::invalid_argument for a
  /// config without a name or base path, or a name given twice.
  ModelManager(std::vector<ModelConfig> models, Loader loader,
               std::function<void(const std::string &)> log = {});
  ~ModelManager();
  ModelManager(const ModelManager &) = delete;
  ModelManager &operator=(const ModelManager &) = delete;

  /// One pass over every model: loads the versions its policy picks that
  /// are not loaded yet, then swaps in the new set.
  void poll();
  /// poll() every `period` on a thread of its own until stop().
  void start_polling(std::chrono::milliseconds period);
  void stop();

  /// A served version, held for one request.
  struct Handle {
    std::string model;
    int64_t version = 0;
    std::shared_ptr<const Servable> servable;
  };
  /// The version a request names (neither: the newest served). RestError:
  /// NotFound for an unknown model or a version not served ("Servable not
  /// found for request: Specific(m, 3)"), InvalidArgument for an unknown
  /// label ("Unrecognized servable version label: x", TF Serving's 400),
  /// Unavailable when the model has no version loaded (nothing to serve
  /// yet: 503).
  Handle get(const std::string &model, std::optional<int64_t> version,
             const std::optional<std::string> &label) const;
  /// GET /v1/models/NAME: the served versions (AVAILABLE) and those that
  /// failed to load (END, the error); one version when given. RestError
  /// NotFound as TF Serving ("Could not find any versions of model m").
  std::vector<VersionStatus>
  status(const std::string &model, std::optional<int64_t> version,
         const std::optional<std::string> &label) const;
  /// TF Serving's HandleReloadConfigRequest: serves `models` from now on.
  /// A model still configured with the same base path keeps its loaded
  /// versions; new ones are loaded (as poll()) before the new set is
  /// swapped in, and models no longer configured are unloaded when their
  /// requests finish. std::invalid_argument as the constructor (nothing
  /// changes then).
  void reload(std::vector<ModelConfig> models);
  /// The served version numbers of a model (tests, logs).
  std::vector<int64_t> served_versions(const std::string &model) const;

private:
  struct Version {
    std::string path;
    std::shared_ptr<const Servable> servable;
  };
  struct State {
    std::map<int64_t, Version> served;
    std::map<int64_t, std::string> failed;
  };
  struct Model {
    ModelConfig config;
    /// Read by requests with std::atomic_load, replaced by poll() with
    /// std::atomic_store.
    std::shared_ptr<const State> state;
  };

  using ModelMap = std::map<std::string, std::shared_ptr<Model>>;

  std::shared_ptr<const ModelMap> makeModels(std::vector<ModelConfig> configs,
                                             const ModelMap *old);
  void pollModel(Model &model);
  /// Null for a model not configured.
  std::shared_ptr<Model> find(const std::string &name) const;
  std::shared_ptr<const State> stateOf(const Model &model) const;
  int64_t resolveLabel(const Model &model, const std::string &label) const;

  /// Read by requests with std::atomic_load, replaced by reload() with
  /// std::atomic_store (under pollMutex_, as poll() reads it).
  std::shared_ptr<const ModelMap> models_;
  Loader loader_;
  std::function<void(const std::string &)> log_;
  std::mutex pollMutex_;
  std::mutex stopMutex_;
  std::condition_variable stopCv_;
  bool stopping_ = false;
  std::thread poller_;
};

} // namespace serving
} // namespace estc

#endif // ESTC_ESTIMATOR_SERVING_MODELMANAGER_H
