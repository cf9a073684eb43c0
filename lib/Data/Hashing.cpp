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

uint64_t featureHash(const TensorValue &values, int64_t i) {
  if (values.dtype == DType::String)
    return fingerprint64(values.strings[static_cast<size_t>(i)]);
  int64_t v;
  std::memcpy(&v, values.data.data() + 8 * i, 8);
  return static_cast<uint64_t>(v);
}

CrossInput crossInputOf(const Value &value, size_t index) {
  std::string what = "sparse_cross_hashed: input " + std::to_string(index);
  DType dtype = dtype_of(value);
  if (dtype != DType::Int64 && dtype != DType::String)
    throw std::invalid_argument(what + " is " + dtype_name(dtype) +
                                "; crosses take int64 or strings");
  CrossInput c;
  if (const auto *t = std::get_if<TensorValue>(&value)) {
    if (t->shape.size() != 2)
      throw std::invalid_argument(what + " is " + t->spec().str() +
                                  "; crosses take 2-D inputs");
    int64_t n = t->shape[0] * t->shape[1];
    for (int64_t r = 0; r <= t->shape[0]; ++r)
      c.offsets.push_back(r * t->shape[1]);
    c.hashes.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      c.hashes.push_back(featureHash(*t, i));
    return c;
  }
  const SparseTensor &s = std::get<SparseTensor>(value);
  if (s.rank() != 2)
    throw std::invalid_argument(what + " is a sparse tensor of rank " +
                                std::to_string(s.rank()) +
                                "; crosses take 2-D inputs");
  s.validate(what);
  // Grouped by row, each row's values in their order in the tensor (the
  // indices need not be sorted): a counting sort.
  std::vector<int64_t> idx = s.index_values();
  c.offsets.assign(static_cast<size_t>(s.dense_shape[0]) + 1, 0);
  for (int64_t v = 0; v < s.nnz(); ++v)
    ++c.offsets[static_cast<size_t>(idx[2 * v]) + 1];
  for (size_t r = 1; r < c.offsets.size(); ++r)
    c.offsets[r] += c.offsets[r - 1];
  std::vector<int64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  c.hashes.resize(static_cast<size_t>(s.nnz()));
  for (int64_t v = 0; v < s.nnz(); ++v)
    c.hashes[static_cast<size_t>(next[static_cast<size_t>(idx[2 * v])]++)] =
        featureHash(s.values, v);
  return c;
}

} // namespace

int64_t cross_hashed(const std::vector<CrossInput> &inputs, int64_t batch,
                     int64_t num_buckets, uint64_t hash_key,
                     std::vector<int64_t> &rows, std::vector<int64_t> &cols,
                     std::vector<int64_t> &ids) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].offsets.size() != static_cast<size_t>(batch) + 1)
      throw std::invalid_argument(
          "cross_hashed: input " + std::to_string(i) + " has " +
          std::to_string(static_cast<int64_t>(inputs[i].offsets.size()) - 1) +
          " rows, not " + std::to_string(batch));
  uint64_t modulus =
      num_buckets > 0
          ? static_cast<uint64_t>(num_buckets)
          : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  int64_t widest = 0;
  std::vector<int64_t> at(inputs.size()), end(inputs.size());
  for (int64_t r = 0; r < batch && !inputs.empty(); ++r) {
    bool empty = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      at[i] = inputs[i].offsets[static_cast<size_t>(r)];
      end[i] = inputs[i].offsets[static_cast<size_t>(r) + 1];
      empty |= at[i] == end[i];
    }
    if (empty)
      continue;
    // Every combination, the last input varying fastest (TF's order).
    int64_t j = 0;
    for (;;) {
      uint64_t h = hash_key;
      for (size_t i = 0; i < inputs.size(); ++i)
        h = fingerprint_cat64(h, inputs[i].hashes[static_cast<size_t>(at[i])]);
      rows.push_back(r);
      cols.push_back(j++);
      ids.push_back(static_cast<int64_t>(h % modulus));
      size_t i = inputs.size();
      while (i > 0 && ++at[i - 1] == end[i - 1]) {
        --i;
        at[i] = inputs[i].offsets[static_cast<size_t>(r)];
      }
      if (i == 0)
        break;
    }
    widest = std::max(widest, j);
  }
  return widest;
}

SparseTensor sparse_cross_hashed(const std::vector<Value> &inputs,
                                 int64_t num_buckets, uint64_t hash_key) {
  if (inputs.empty())
    throw std::invalid_argument("sparse_cross_hashed: no inputs");
  if (num_buckets < 0)
    throw std::invalid_argument("sparse_cross_hashed: num_buckets must be "
                                ">= 0, not " +
                                std::to_string(num_buckets));
  std::vector<CrossInput> columns;
  for (size_t i = 0; i < inputs.size(); ++i) {
    columns.push_back(crossInputOf(inputs[i], i));
    if (columns[i].offsets.size() != columns[0].offsets.size())
      throw DataError("sparse_cross_hashed: input " + std::to_string(i) +
                      " has " + std::to_string(columns[i].offsets.size() - 1) +
                      " rows but input 0 has " +
                      std::to_string(columns[0].offsets.size() - 1));
  }
  auto batch = static_cast<int64_t>(columns[0].offsets.size()) - 1;
  std::vector<int64_t> rows, cols, ids;
  int64_t widest =
      cross_hashed(columns, batch, num_buckets, hash_key, rows, cols, ids);
  std::vector<int64_t> indices;
  indices.reserve(rows.size() * 2);
  for (size_t v = 0; v < rows.size(); ++v) {
    indices.push_back(rows[v]);
    indices.push_back(cols[v]);
  }
  auto n = static_cast<int64_t>(ids.size());
  return SparseTensor::make(
      std::move(indices), TensorValue::of<int64_t>({n}, ids), {batch, widest});
}

} // namespace data
} // namespace estc
