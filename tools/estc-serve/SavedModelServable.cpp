//===- SavedModelServable.cpp - serving::SavedModel as a servable -------===//

#include "tools/estc-serve/SavedModelServable.h"

namespace estc {
namespace serving {

Loader saved_model_loader(LoadOptions options) {
  Loader loader;
  loader.list_versions = [](const std::string &base_path) {
    return list_versions(base_path);
  };
  loader.load =
      [options](const std::string &dir) -> std::shared_ptr<const Servable> {
    return std::make_shared<SavedModelServable>(SavedModel::load(dir, options));
  };
  return loader;
}

} // namespace serving
} // namespace estc
