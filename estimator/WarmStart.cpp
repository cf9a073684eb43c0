//===- WarmStart.cpp - Initializing variables from another checkpoint ----===//

#include "estimator/WarmStart.h"

#include <regex>

namespace estc {
namespace estimator {

train::VariableMap
warm_start(const WarmStartSettings &settings,
           const std::map<std::string, VariableSpec> &current) {
  std::regex pattern;
  try {
    pattern = std::regex(settings.vars_to_warm_start, std::regex::ECMAScript);
  } catch (const std::regex_error &e) {
    throw std::invalid_argument("WarmStartSettings: vars_to_warm_start '" +
                                settings.vars_to_warm_start +
                                "' is not a valid regex: " + e.what());
  }
  train::CheckpointReader reader =
      train::load_checkpoint(settings.ckpt_to_initialize_from);
  const std::string &file = reader.path();

  for (const auto &rename : settings.var_name_to_prev_var_name)
    if (!current.count(rename.first))
      throw train::CheckpointError(
          file + ": warm start: var_name_to_prev_var_name renames '" +
          rename.first + "', which is not a variable of the model");

  train::VariableMap loaded;
  for (const auto &[name, spec] : current) {
    if (!std::regex_search(name, pattern,
                           std::regex_constants::match_continuous))
      continue;
    auto rename = settings.var_name_to_prev_var_name.find(name);
    const std::string &old = rename == settings.var_name_to_prev_var_name.end()
                                 ? name
                                 : rename->second;
    std::string what =
        "variable '" + name + "'" + (old == name ? "" : " (as '" + old + "')");
    auto it = reader.variables().find(old);
    if (it == reader.variables().end())
      throw train::CheckpointError(file + ": warm start: " + what +
                                   " is not in the checkpoint");
    if (it->second != spec)
      throw train::CheckpointError(
          file + ": warm start: " + what + " is " + it->second.str() +
          " in the checkpoint but " + spec.str() + " in the model");
    loaded.emplace(name, reader.get_tensor(old));
  }
  return loaded;
}

} // namespace estimator
} // namespace estc
