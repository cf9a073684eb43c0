//===- Hashing.h - TF's string hashing and hashed feature crosses --------===//
//
// The ids TF's feature columns give strings and crosses, bit for bit:
//
//   - fingerprint64: FarmHash's Fingerprint64 (Debian's libfarmhash, the
//     function TF's Fingerprint64 is);
//   - string_to_hash_bucket_fast: Fingerprint64(s) mod num_buckets
//     (tf.strings.to_hash_bucket_fast, categorical_column_with_hash_bucket);
//   - fingerprint_cat64 and sparse_cross_hashed: tf.sparse.cross_hashed
//     (crossed_column): per batch row, every combination of the inputs'
//     values, the last input varying fastest, hashed as
//     FingerprintCat64(...FingerprintCat64(hash_key, h(v1))..., h(vn)) with
//     h = Fingerprint64 for strings and the value itself for int64, then
//     mod num_buckets (or mod 2^63-1 when num_buckets is 0).
//
// test/unit/HashingTest.cpp checks them against values TF 2.15 computed;
// test/e2e/tf_hashing_compat.py against TF itself on random inputs.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_HASHING_H
#define ESTC_LIB_DATA_HASHING_H

#include "lib/Data/Value.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace estc {
namespace data {

/// TF's default hash_key of sparse_cross_hashed (0xDECAFCAFFE).
constexpr uint64_t kDefaultCrossHashKey = 0xDECAFCAFFEull;

uint64_t fingerprint64(std::string_view bytes);
/// TF's FingerprintCat64: a fingerprint of two fingerprints (not
/// commutative).
uint64_t fingerprint_cat64(uint64_t fp1, uint64_t fp2);

/// tf.strings.to_hash_bucket_fast: an I64 tensor of the same shape.
/// std::invalid_argument for a non-string tensor or num_buckets < 1.
TensorValue string_to_hash_bucket_fast(const TensorValue &strings,
                                       int64_t num_buckets);

/// tf.sparse.cross_hashed over 2-D inputs (SparseTensor [B, n] or dense
/// [B, k]) of int64 or strings: an I64 SparseTensor [B, most crosses of a
/// row]. A row where an input has no value has no crosses.
/// std::invalid_argument for no inputs, another rank or dtype, or
/// num_buckets < 0; DataError when the inputs' batch sizes differ.
SparseTensor sparse_cross_hashed(const std::vector<Value> &inputs,
                                 int64_t num_buckets = 0,
                                 uint64_t hash_key = kDefaultCrossHashKey);

/// One input of a hashed cross as its values' hashes (Fingerprint64 of a
/// string, an int64 value itself), row by row: batch row r's are
/// hashes[offsets[r]] .. hashes[offsets[r + 1] - 1] (offsets: batch + 1
/// non-decreasing entries from 0). What feature columns build directly
/// from a batch, without a SparseTensor per input.
struct CrossInput {
  std::vector<int64_t> offsets;
  std::vector<uint64_t> hashes;
};

/// The crosses of sparse_cross_hashed over `inputs` (every input `batch`
/// rows; std::invalid_argument otherwise), in its order: each cross's batch
/// row, column and id appended to rows, cols and ids. Returns the most
/// crosses of a row.
int64_t cross_hashed(const std::vector<CrossInput> &inputs, int64_t batch,
                     int64_t num_buckets, uint64_t hash_key,
                     std::vector<int64_t> &rows, std::vector<int64_t> &cols,
                     std::vector<int64_t> &ids);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_HASHING_H
