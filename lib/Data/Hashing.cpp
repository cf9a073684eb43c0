//===- Hashing.cpp - TF's string hashing and hashed feature crosses -------===//

#include "lib/Data/Hashing.h"

#include <farmhash.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace estc {
namespace data {

uint64_t fingerprint64(std::string_view bytes) {
  return util::Fingerprint64(bytes.data(), bytes.size());
}

uint64_t fingerprint_cat64(uint64_t fp1, uint64_t fp2) {
  // TF's FingerprintCat64 (tensorflow/core/platform/fingerprint.h).
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ull;
  auto shiftMix = [](uint64_t v) { return v ^ (v >> 47); };
  uint64_t result = fp1 ^ kMul;
  result ^= shiftMix(fp2 * kMul) * kMul;
  result *= kMul;
  result = shiftMix(result) * kMul;
  return shiftMix(result);
}

TensorValue string_to_hash_bucket_fast(const TensorValue &strings,
                                       int64_t num_buckets) {
  if (strings.dtype != DType::String)
    throw std::invalid_argument("string_to_hash_bucket_fast: a " +
                                strings.spec().str() + " tensor, not strings");
  if (num_buckets < 1)
    throw std::invalid_argument("string_to_hash_bucket_fast: num_buckets "
                                "must be at least 1, not " +
                                std::to_string(num_buckets));
  std::vector<int64_t> ids(strings.strings.size());
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(fingerprint64(strings.strings[i]) %
                                  static_cast<uint64_t>(num_buckets));
  return TensorValue::of<int64_t>(strings.shape, ids);
}

namespace {

/// One input's feature hashes, grouped by batch row.
struct Column {
  std::vector<std::vector<uint64_t>> rows;
};

uint64_t featureHash(const TensorValue &values, int64_t i) {
  if (values.dtype == DType::String)
    return fingerprint64(values.strings[static_cast<size_t>(i)]);
  int64_t v;
  std::memcpy(&v, values.data.data() + 8 * i, 8);
  return static_cast<uint64_t>(v);
}

Column columnOf(const Value &value, size_t index) {
  std::string what = "sparse_cross_hashed: input " + std::to_string(index);
  DType dtype = dtype_of(value);
  if (dtype != DType::Int64 && dtype != DType::String)
    throw std::invalid_argument(what + " is " + dtype_name(dtype) +
                                "; crosses take int64 or strings");
  Column c;
  if (const auto *t = std::get_if<TensorValue>(&value)) {
    if (t->shape.size() != 2)
      throw std::invalid_argument(what + " is " + t->spec().str() +
                                  "; crosses take 2-D inputs");
    c.rows.resize(static_cast<size_t>(t->shape[0]));
    for (int64_t r = 0; r < t->shape[0]; ++r)
      for (int64_t k = 0; k < t->shape[1]; ++k)
        c.rows[r].push_back(featureHash(*t, r * t->shape[1] + k));
    return c;
  }
  const SparseTensor &s = std::get<SparseTensor>(value);
  if (s.rank() != 2)
    throw std::invalid_argument(what + " is a sparse tensor of rank " +
                                std::to_string(s.rank()) +
                                "; crosses take 2-D inputs");
  s.validate(what);
  c.rows.resize(static_cast<size_t>(s.dense_shape[0]));
  std::vector<int64_t> idx = s.index_values();
  for (int64_t v = 0; v < s.nnz(); ++v)
    c.rows[static_cast<size_t>(idx[2 * v])].push_back(featureHash(s.values, v));
  return c;
}

} // namespace

SparseTensor sparse_cross_hashed(const std::vector<Value> &inputs,
                                 int64_t num_buckets, uint64_t hash_key) {
  if (inputs.empty())
    throw std::invalid_argument("sparse_cross_hashed: no inputs");
  if (num_buckets < 0)
    throw std::invalid_argument("sparse_cross_hashed: num_buckets must be "
                                ">= 0, not " +
                                std::to_string(num_buckets));
  std::vector<Column> columns;
  for (size_t i = 0; i < inputs.size(); ++i) {
    columns.push_back(columnOf(inputs[i], i));
    if (columns[i].rows.size() != columns[0].rows.size())
      throw DataError("sparse_cross_hashed: input " + std::to_string(i) +
                      " has " + std::to_string(columns[i].rows.size()) +
                      " rows but input 0 has " +
                      std::to_string(columns[0].rows.size()));
  }
  uint64_t modulus =
      num_buckets > 0
          ? static_cast<uint64_t>(num_buckets)
          : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  int64_t batch = static_cast<int64_t>(columns[0].rows.size());
  std::vector<int64_t> indices;
  std::vector<int64_t> ids;
  int64_t widest = 0;
  std::vector<size_t> at(columns.size());
  for (int64_t r = 0; r < batch; ++r) {
    bool empty = false;
    for (const Column &c : columns)
      empty |= c.rows[r].empty();
    if (empty)
      continue;
    // Every combination, the last input varying fastest (TF's order).
    std::fill(at.begin(), at.end(), 0);
    int64_t j = 0;
    for (;;) {
      uint64_t h = hash_key;
      for (size_t i = 0; i < columns.size(); ++i)
        h = fingerprint_cat64(h, columns[i].rows[r][at[i]]);
      indices.push_back(r);
      indices.push_back(j++);
      ids.push_back(static_cast<int64_t>(h % modulus));
      size_t i = columns.size();
      while (i > 0 && ++at[i - 1] == columns[i - 1].rows[r].size())
        at[--i] = 0;
      if (i == 0)
        break;
    }
    widest = std::max(widest, j);
  }
  auto n = static_cast<int64_t>(ids.size());
  return SparseTensor::make(
      std::move(indices), TensorValue::of<int64_t>({n}, ids), {batch, widest});
}

} // namespace data
} // namespace estc
