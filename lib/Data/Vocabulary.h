//===- Vocabulary.h - Ids of strings and integers from a vocabulary -----===//
//
// TF's vocabulary lookup (index_table_from_tensor / _from_file, behind
// categorical_column_with_vocabulary_list and _file): a key's id is its
// position in the vocabulary; a key that is not there gets
//   - with num_oov_buckets > 0: vocabulary size + Fingerprint64(key) mod
//     num_oov_buckets (an int64 key hashed as its decimal string, as TF
//     does), or
//   - default_value (-1 unless given).
// Checked against TF 2.15 (VocabularyTest holds ids TF computed).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_VOCABULARY_H
#define ESTC_LIB_DATA_VOCABULARY_H

#include "lib/Data/Value.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace estc {
namespace data {

class VocabularyLookup {
public:
  /// A string vocabulary. std::invalid_argument for an empty or duplicated
  /// vocabulary, num_oov_buckets < 0, or both num_oov_buckets > 0 and a
  /// default_value other than -1 (TF refuses both).
  VocabularyLookup(const std::vector<std::string> &vocabulary,
                   int64_t num_oov_buckets = 0, int64_t default_value = -1);
  /// An int64 vocabulary (a named factory: {"a", "b"} would also convert
  /// to a vector<int64_t>, as an iterator range).
  static VocabularyLookup of_ints(const std::vector<int64_t> &vocabulary,
                                  int64_t num_oov_buckets = 0,
                                  int64_t default_value = -1);
  /// A vocabulary file: one key per line (the whole line, without "\n" or
  /// "\r\n"); its first vocabulary_size lines (-1: all). DataError naming
  /// the file for a missing file, fewer lines than vocabulary_size, or a
  /// duplicated key (with its line). `int64_keys`: the lines are integers.
  static VocabularyLookup from_file(const std::string &path,
                                    int64_t vocabulary_size = -1,
                                    int64_t num_oov_buckets = 0,
                                    int64_t default_value = -1,
                                    bool int64_keys = false);

  /// The ids (I64, the keys' shape) of a String or Int64 tensor (the
  /// vocabulary's dtype; std::invalid_argument otherwise).
  TensorValue lookup(const TensorValue &keys) const;
  /// One key's id, as lookup() gives it (no dtype check: a key of the
  /// other kind is out of vocabulary).
  int64_t id_of(const std::string &key) const;
  int64_t id_of(int64_t key) const;
  /// Vocabulary size + num_oov_buckets: the number of ids there are.
  int64_t num_ids() const { return size_ + numOov_; }
  int64_t size() const { return size_; }

private:
  VocabularyLookup(int64_t numOov, int64_t defaultValue, DType dtype);
  int64_t oovId(const std::string &key) const;
  int64_t numOov_;
  int64_t defaultValue_;
  DType dtype_;
  int64_t size_ = 0;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<int64_t, int64_t> ints_;
};

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_VOCABULARY_H
