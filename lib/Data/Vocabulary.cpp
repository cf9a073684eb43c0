//===- Vocabulary.cpp - Ids of strings and integers from a vocabulary ---===//

#include "lib/Data/Vocabulary.h"
#include "lib/Data/Hashing.h"
#include "lib/Data/TextLine.h"

#include <stdexcept>

namespace estc {
namespace data {

VocabularyLookup::VocabularyLookup(int64_t numOov, int64_t defaultValue,
                                   DType dtype)
    : numOov_(numOov), defaultValue_(defaultValue), dtype_(dtype) {
  if (numOov < 0)
    throw std::invalid_argument("vocabulary: num_oov_buckets must be >= 0, "
                                "not " +
                                std::to_string(numOov));
  if (numOov > 0 && defaultValue != -1)
    throw std::invalid_argument("vocabulary: can't specify both "
                                "num_oov_buckets and default_value");
}

VocabularyLookup::VocabularyLookup(const std::vector<std::string> &vocabulary,
                                   int64_t num_oov_buckets,
                                   int64_t default_value)
    : VocabularyLookup(num_oov_buckets, default_value, DType::String) {
  if (vocabulary.empty())
    throw std::invalid_argument("vocabulary: empty vocabulary_list");
  for (const std::string &key : vocabulary)
    if (!strings_.emplace(key, size_++).second)
      throw std::invalid_argument("vocabulary: duplicate key '" + key +
                                  "' in vocabulary_list");
}

VocabularyLookup
VocabularyLookup::of_ints(const std::vector<int64_t> &vocabulary,
                          int64_t num_oov_buckets, int64_t default_value) {
  VocabularyLookup v(num_oov_buckets, default_value, DType::Int64);
  if (vocabulary.empty())
    throw std::invalid_argument("vocabulary: empty vocabulary_list");
  for (int64_t key : vocabulary)
    if (!v.ints_.emplace(key, v.size_++).second)
      throw std::invalid_argument("vocabulary: duplicate key " +
                                  std::to_string(key) + " in vocabulary_list");
  return v;
}

VocabularyLookup VocabularyLookup::from_file(const std::string &path,
                                             int64_t vocabulary_size,
                                             int64_t num_oov_buckets,
                                             int64_t default_value,
                                             bool int64_keys) {
  VocabularyLookup v(num_oov_buckets, default_value,
                     int64_keys ? DType::Int64 : DType::String);
  TextLineReader reader(path);
  std::string line;
  while ((vocabulary_size < 0 || v.size_ < vocabulary_size) &&
         reader.read(line)) {
    bool fresh;
    if (int64_keys) {
      size_t end = 0;
      int64_t key = 0;
      try {
        key = std::stoll(line, &end);
      } catch (const std::exception &) {
        end = std::string::npos;
      }
      if (end != line.size())
        throw DataError(path + ":" + std::to_string(reader.line_number()) +
                        ": '" + line + "' is not an int64 key");
      fresh = v.ints_.emplace(key, v.size_).second;
    } else {
      fresh = v.strings_.emplace(line, v.size_).second;
    }
    if (!fresh)
      throw DataError(path + ":" + std::to_string(reader.line_number()) +
                      ": duplicate vocabulary key '" + line + "'");
    ++v.size_;
  }
  if (v.size_ == 0)
    throw DataError(path + ": empty vocabulary file");
  if (vocabulary_size >= 0 && v.size_ < vocabulary_size)
    throw DataError(path + ": vocabulary_size " +
                    std::to_string(vocabulary_size) + " but the file has " +
                    std::to_string(v.size_) + " lines");
  return v;
}

int64_t VocabularyLookup::oovId(const std::string &key) const {
  if (numOov_ == 0)
    return defaultValue_;
  return size_ + static_cast<int64_t>(fingerprint64(key) %
                                      static_cast<uint64_t>(numOov_));
}

int64_t VocabularyLookup::id_of(const std::string &key) const {
  auto it = strings_.find(key);
  return it != strings_.end() ? it->second : oovId(key);
}

int64_t VocabularyLookup::id_of(int64_t key) const {
  auto it = ints_.find(key);
  return it != ints_.end() ? it->second : oovId(std::to_string(key));
}

TensorValue VocabularyLookup::lookup(const TensorValue &keys) const {
  if (keys.dtype != dtype_)
    throw std::invalid_argument("vocabulary: " + keys.spec().str() +
                                " keys for a " + tf_name(dtype_) +
                                " vocabulary");
  std::vector<int64_t> ids(static_cast<size_t>(keys.num_elements()));
  if (dtype_ == DType::String) {
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = id_of(keys.strings[i]);
  } else {
    std::vector<int64_t> k = keys.values<int64_t>();
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = id_of(k[i]);
  }
  return TensorValue::of<int64_t>(keys.shape, ids);
}

} // namespace data
} // namespace estc
