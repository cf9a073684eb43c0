//===- WarmStart.cpp - Initializing variables from another checkpoint ----===//

#include "estimator/WarmStart.h"

#include "lib/Checkpoint/Partitions.h"
#include "lib/Data/Idx.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <unordered_map>

namespace estc {
namespace estimator {

namespace {

/// The first `size` lines of a vocabulary file (-1: all), without "\n" or
/// "\r\n".
std::vector<std::string> readVocabulary(const std::string &path, int64_t size,
                                        const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data::DataError(path + ": cannot open " + what + " of warm start");
  std::vector<std::string> words;
  std::string line;
  while ((size < 0 || static_cast<int64_t>(words.size()) < size) &&
         std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    words.push_back(line);
  }
  if (size >= 0 && static_cast<int64_t>(words.size()) < size)
    throw data::DataError(path + ": " + what + " has " +
                          std::to_string(words.size()) + " lines, fewer than " +
                          std::to_string(size));
  return words;
}

/// TF's _warm_start_var_with_vocab: `old` (the checkpoint's value) in the
/// new vocabulary's order, as a tensor of `spec`.
TensorValue remap(const std::string &file, const std::string &name,
                  const VocabInfo &info, const TensorValue &old,
                  const VariableSpec &spec) {
  std::string what = file + ": warm start: variable '" + name + "'";
  if (spec.dtype != DType::Float32 || spec.shape.size() != 2 ||
      old.dtype != DType::Float32 || old.shape.size() != 2)
    throw train::CheckpointError(what +
                                 ": a vocabulary remap needs F32 "
                                 "rank-2 variables, got " +
                                 spec.str() + " from " + old.spec().str());
  if (info.axis != 0 && info.axis != 1)
    throw std::invalid_argument("VocabInfo of '" + name +
                                "': axis must be 0 "
                                "or 1, got " +
                                std::to_string(info.axis));
  if (info.new_vocab_size < 1 || info.num_oov_buckets < 0)
    throw std::invalid_argument("VocabInfo of '" + name +
                                "': new_vocab_size must be positive and "
                                "num_oov_buckets non-negative");
  size_t axis = static_cast<size_t>(info.axis), other = 1 - axis;
  if (spec.shape[axis] != info.new_vocab_size + info.num_oov_buckets ||
      old.shape[other] != spec.shape[other])
    throw train::CheckpointError(
        what + " is " + spec.str() + " in the model and " + old.spec().str() +
        " in the checkpoint; with new_vocab_size " +
        std::to_string(info.new_vocab_size) + " + num_oov_buckets " +
        std::to_string(info.num_oov_buckets) + " along axis " +
        std::to_string(info.axis) + " they do not fit");
  std::vector<std::string> fresh =
      readVocabulary(info.new_vocab, info.new_vocab_size, "new_vocab");
  std::vector<std::string> previous =
      readVocabulary(info.old_vocab, info.old_vocab_size, "old_vocab");
  if (static_cast<int64_t>(previous.size()) > old.shape[axis])
    throw train::CheckpointError(what + ": old_vocab has " +
                                 std::to_string(previous.size()) +
                                 " entries but the checkpoint's variable " +
                                 old.spec().str() + " fewer rows");
  std::unordered_map<std::string, int64_t> oldIndex;
  for (size_t i = 0; i < previous.size(); ++i)
    oldIndex.emplace(previous[i], static_cast<int64_t>(i)); // first wins
  int64_t rows = spec.shape[0], cols = spec.shape[1];
  std::vector<float> out(static_cast<size_t>(rows * cols),
                         static_cast<float>(info.backup_initializer));
  std::vector<float> src = old.values<float>();
  int64_t oldCols = old.shape[1];
  for (int64_t n = 0; n < info.new_vocab_size; ++n) {
    auto it = oldIndex.find(fresh[static_cast<size_t>(n)]);
    if (it == oldIndex.end())
      continue;
    int64_t o = it->second;
    if (axis == 0)
      std::memcpy(&out[static_cast<size_t>(n * cols)],
                  &src[static_cast<size_t>(o * oldCols)],
                  static_cast<size_t>(cols) * sizeof(float));
    else
      for (int64_t r = 0; r < rows; ++r)
        out[static_cast<size_t>(r * cols + n)] =
            src[static_cast<size_t>(r * oldCols + o)];
  }
  return TensorValue::of<float>(spec.shape, out);
}

} // namespace

train::VariableMap
warm_start(const WarmStartSettings &settings,
           const std::map<std::string, VariableSpec> &current) {
  std::vector<std::regex> patterns;
  std::vector<std::string> sources = settings.vars_to_warm_start_list;
  if (sources.empty())
    sources.push_back(settings.vars_to_warm_start);
  for (const std::string &source : sources) {
    try {
      patterns.emplace_back(source, std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      throw std::invalid_argument(std::string("WarmStartSettings: ") +
                                  (settings.vars_to_warm_start_list.empty()
                                       ? "vars_to_warm_start"
                                       : "vars_to_warm_start_list") +
                                  " '" + source +
                                  "' is not a valid regex: " + e.what());
    }
  }
  auto selected = [&](const std::string &name) {
    for (const std::regex &pattern : patterns)
      if (std::regex_search(name, pattern,
                            std::regex_constants::match_continuous))
        return true;
    return false;
  };
  train::CheckpointReader reader =
      train::load_checkpoint(settings.ckpt_to_initialize_from);
  const std::string &file = reader.path();

  for (const auto &rename : settings.var_name_to_prev_var_name)
    if (!current.count(rename.first))
      throw train::CheckpointError(
          file + ": warm start: var_name_to_prev_var_name renames '" +
          rename.first + "', which is not a variable of the model");

  for (const auto &entry : settings.var_name_to_vocab_info)
    if (!current.count(entry.first) || !selected(entry.first))
      throw std::invalid_argument(
          "WarmStartSettings: var_name_to_vocab_info names '" + entry.first +
          "', which is not a warm-started variable of the model");

  // The parts of partitioned variables, which a checkpoint in TF's format
  // holds as slices of their full name (lib/Checkpoint/Partitions.h).
  std::map<std::string, train::PartLayout> layouts =
      train::partition_layouts(current);
  train::VariableMap loaded;
  for (const auto &[name, spec] : current) {
    if (!selected(name))
      continue;
    auto rename = settings.var_name_to_prev_var_name.find(name);
    const std::string &old = rename == settings.var_name_to_prev_var_name.end()
                                 ? name
                                 : rename->second;
    std::string what =
        "variable '" + name + "'" + (old == name ? "" : " (as '" + old + "')");
    auto it = reader.variables().find(old);
    auto layout = layouts.find(name);
    if (it == reader.variables().end() && old == name &&
        layout != layouts.end() &&
        reader.variables().count(layout->second.full_name) &&
        !settings.var_name_to_vocab_info.count(name)) {
      loaded.emplace(
          name, train::slice_of(reader.get_tensor(layout->second.full_name),
                                layout->second, file + ": warm start"));
      continue;
    }
    if (it == reader.variables().end())
      throw train::CheckpointError(file + ": warm start: " + what +
                                   " is not in the checkpoint");
    auto vocab = settings.var_name_to_vocab_info.find(name);
    if (vocab != settings.var_name_to_vocab_info.end()) {
      loaded.emplace(
          name, remap(file, name, vocab->second, reader.get_tensor(old), spec));
      continue;
    }
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
