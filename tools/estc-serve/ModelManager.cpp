//===- ModelManager.cpp - Served models, their versions, polling, swaps -===//

#include "tools/estc-serve/ModelManager.h"

#include <algorithm>
#include <iostream>
#include <set>

namespace estc {
namespace serving {

namespace {
std::string versionRequest(const std::string &model,
                           std::optional<int64_t> version) {
  return version ? "Specific(" + model + ", " + std::to_string(*version) + ")"
                 : "Latest(" + model + ")";
}
} // namespace

ModelManager::ModelManager(std::vector<ModelConfig> models, Loader loader,
                           std::function<void(const std::string &)> log)
    : loader_(std::move(loader)), log_(std::move(log)) {
  if (!log_)
    log_ = [](const std::string &line) { std::cerr << line << std::endl; };
  models_ = makeModels(std::move(models), nullptr);
}

std::shared_ptr<const ModelManager::ModelMap>
ModelManager::makeModels(std::vector<ModelConfig> configs,
                         const ModelMap *old) {
  auto models = std::make_shared<ModelMap>();
  for (auto &config : configs) {
    if (config.name.empty())
      throw std::invalid_argument("model config: a model without a name");
    if (config.base_path.empty())
      throw std::invalid_argument("model config: model '" + config.name +
                                  "' has no base_path");
    if (config.policy.kind == VersionPolicy::Kind::Latest &&
        config.policy.num_versions < 1)
      config.policy.num_versions = 1;
    std::string name = config.name;
    // A model already served from the same base path keeps its loaded
    // versions (the next poll applies its new policy).
    std::shared_ptr<const State> state = std::make_shared<const State>();
    if (old) {
      auto it = old->find(name);
      if (it != old->end() && it->second->config.base_path == config.base_path)
        state = stateOf(*it->second);
    }
    auto model = std::make_shared<Model>(Model{std::move(config), state});
    if (!models->emplace(name, std::move(model)).second)
      throw std::invalid_argument("model config: model '" + name +
                                  "' is configured twice");
  }
  return models;
}

void ModelManager::reload(std::vector<ModelConfig> configs) {
  std::lock_guard<std::mutex> lock(pollMutex_);
  std::shared_ptr<const ModelMap> old = std::atomic_load(&models_);
  std::shared_ptr<const ModelMap> next =
      makeModels(std::move(configs), old.get());
  for (const auto &[name, model] : *next)
    pollModel(*model);
  for (const auto &[name, model] : *old)
    if (!next->count(name))
      log_("estc-serve: model " + name +
           ": no longer configured, unloading (when its requests finish)");
  std::atomic_store(&models_, next);
}

ModelManager::~ModelManager() { stop(); }

std::shared_ptr<const ModelManager::State>
ModelManager::stateOf(const Model &model) const {
  return std::atomic_load(&model.state);
}

void ModelManager::poll() {
  std::lock_guard<std::mutex> lock(pollMutex_);
  std::shared_ptr<const ModelMap> models = std::atomic_load(&models_);
  for (const auto &[name, model] : *models)
    pollModel(*model);
}

void ModelManager::pollModel(Model &model) {
  const ModelConfig &config = model.config;
  std::shared_ptr<const State> old = stateOf(model);
  auto next = std::make_shared<State>();
  std::vector<std::pair<int64_t, std::string>> listed;
  try {
    listed = loader_.list_versions(config.base_path);
  } catch (const std::exception &e) {
    log_("estc-serve: model " + config.name + ": cannot list " +
         config.base_path + ": " + e.what());
    return;
  }
  // Newest first: the order the Latest policy takes them in.
  std::reverse(listed.begin(), listed.end());
  const VersionPolicy &policy = config.policy;
  for (const auto &[version, path] : listed) {
    if (policy.kind == VersionPolicy::Kind::Latest &&
        static_cast<int64_t>(next->served.size()) >= policy.num_versions)
      break;
    if (policy.kind == VersionPolicy::Kind::Specific &&
        std::find(policy.versions.begin(), policy.versions.end(), version) ==
            policy.versions.end())
      continue;
    auto have = old->served.find(version);
    if (have != old->served.end() && have->second.path == path) {
      next->served.emplace(version, have->second);
      continue;
    }
    try {
      std::shared_ptr<const Servable> servable = loader_.load(path);
      next->served.emplace(version, Version{path, std::move(servable)});
      log_("estc-serve: model " + config.name + ": loaded version " +
           std::to_string(version) + " from " + path);
    } catch (const std::exception &e) {
      std::string message = e.what();
      auto before = old->failed.find(version);
      if (before == old->failed.end() || before->second != message)
        log_("estc-serve: model " + config.name + ": version " +
             std::to_string(version) + " failed to load: " + message);
      next->failed.emplace(version, message);
    }
  }
  for (const auto &[version, v] : old->served)
    if (!next->served.count(version))
      log_("estc-serve: model " + config.name + ": unloading version " +
           std::to_string(version) + " (when its requests finish)");
  std::shared_ptr<const State> frozen = std::move(next);
  std::atomic_store(&model.state, frozen);
}

void ModelManager::start_polling(std::chrono::milliseconds period) {
  if (period.count() <= 0 || poller_.joinable())
    return;
  poller_ = std::thread([this, period] {
    std::unique_lock<std::mutex> lock(stopMutex_);
    while (!stopCv_.wait_for(lock, period, [this] { return stopping_; })) {
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

void ModelManager::stop() {
  {
    std::lock_guard<std::mutex> lock(stopMutex_);
    stopping_ = true;
  }
  stopCv_.notify_all();
  if (poller_.joinable())
    poller_.join();
}

std::shared_ptr<ModelManager::Model>
ModelManager::find(const std::string &name) const {
  std::shared_ptr<const ModelMap> models = std::atomic_load(&models_);
  auto it = models->find(name);
  return it == models->end() ? nullptr : it->second;
}

int64_t ModelManager::resolveLabel(const Model &model,
                                   const std::string &label) const {
  auto it = model.config.version_labels.find(label);
  if (it == model.config.version_labels.end())
    throw RestError(Code::InvalidArgument,
                    "Unrecognized servable version label: " + label);
  return it->second;
}

ModelManager::Handle
ModelManager::get(const std::string &name, std::optional<int64_t> version,
                  const std::optional<std::string> &label) const {
  std::shared_ptr<Model> found = find(name);
  if (!found)
    throw RestError(Code::NotFound, "Servable not found for request: " +
                                        versionRequest(name, version));
  const Model &model = *found;
  if (label)
    version = resolveLabel(model, *label);
  std::shared_ptr<const State> state = stateOf(model);
  if (!version) {
    if (state->served.empty())
      throw RestError(Code::Unavailable,
                      "Servable not found for request: Latest(" + name +
                          "): no version of the model is loaded (base path " +
                          model.config.base_path + ")");
    auto newest = state->served.rbegin();
    return {name, newest->first, newest->second.servable};
  }
  auto it = state->served.find(*version);
  if (it == state->served.end())
    throw RestError(Code::NotFound, "Servable not found for request: " +
                                        versionRequest(name, version));
  return {name, it->first, it->second.servable};
}

std::vector<VersionStatus>
ModelManager::status(const std::string &name, std::optional<int64_t> version,
                     const std::optional<std::string> &label) const {
  std::shared_ptr<Model> found = find(name);
  if (!found)
    throw RestError(Code::NotFound,
                    version ? "Could not find version " +
                                  std::to_string(*version) + " of model " + name
                            : "Could not find any versions of model " + name);
  const Model &model = *found;
  if (label)
    version = resolveLabel(model, *label);
  std::shared_ptr<const State> state = stateOf(model);
  std::map<int64_t, VersionStatus> all;
  for (const auto &[v, loaded] : state->served)
    all[v] = {v, "AVAILABLE", Code::Ok, ""};
  for (const auto &[v, message] : state->failed)
    all[v] = {v, "END", Code::Unknown, message};
  std::vector<VersionStatus> out;
  if (version) {
    auto v = all.find(*version);
    if (v == all.end())
      throw RestError(Code::NotFound, "Could not find version " +
                                          std::to_string(*version) +
                                          " of model " + name);
    out.push_back(v->second);
    return out;
  }
  if (all.empty())
    throw RestError(Code::NotFound,
                    "Could not find any versions of model " + name);
  // Newest first, as TF Serving lists them.
  for (auto v = all.rbegin(); v != all.rend(); ++v)
    out.push_back(v->second);
  return out;
}

std::vector<int64_t>
ModelManager::served_versions(const std::string &name) const {
  std::vector<int64_t> out;
  std::shared_ptr<Model> model = find(name);
  if (!model)
    return out;
  for (const auto &[v, loaded] : stateOf(*model)->served)
    out.push_back(v);
  return out;
}

} // namespace serving
} // namespace estc
