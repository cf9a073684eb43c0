//===- RnnModels.h - The recurrent benchmarks' models and data --*- C++ -*-===//
//
// What rnn_bench and rnn_torch_bench share: the SST-2-shaped token file of
// bench/make_sst2_like.py, read into batches of 64 padded to each batch's
// longest sentence, and (rnn_bench) the two estc models:
//
//   sst2     ids [batch, T] (T: the run-time sequence length) -> embedding
//            16384 x 128 -> LSTM 128 (lib/Graph/Recurrent.h layers::lstm,
//            masked by `lengths`) -> dense 2; softmax cross-entropy, Adam
//            0.002 (models::multi_class_head)
//   lstm512  x [batch, T, 512] -> LSTM 512 -> dense 2; the same head
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_RNNMODELS_H
#define ESTC_BENCH_RNNMODELS_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc::bench {

/// bench/make_sst2_like.py's file.
struct TokenData {
  int64_t examples = 0, maxLength = 0, vocab = 0;
  std::vector<int64_t> lengths, labels;
  std::vector<int32_t> ids; // [examples, maxLength]
};

inline TokenData readTokenData(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path +
                             ": cannot open (write it with "
                             "bench/make_sst2_like.py --out " +
                             path + ")");
  char magic[8];
  TokenData d;
  int64_t header[3];
  in.read(magic, 8);
  in.read(reinterpret_cast<char *>(header), sizeof header);
  if (!in || std::memcmp(magic, "SST2LIKE", 8) != 0 || header[0] < 1 ||
      header[1] < 1 || header[2] < 2)
    throw std::runtime_error(path + ": not a make_sst2_like.py file");
  d.examples = header[0];
  d.maxLength = header[1];
  d.vocab = header[2];
  d.lengths.resize(d.examples);
  d.labels.resize(d.examples);
  d.ids.resize(d.examples * d.maxLength);
  in.read(reinterpret_cast<char *>(d.lengths.data()), d.examples * 8);
  in.read(reinterpret_cast<char *>(d.labels.data()), d.examples * 8);
  in.read(reinterpret_cast<char *>(d.ids.data()), d.examples * d.maxLength * 4);
  if (!in)
    throw std::runtime_error(path + ": truncated");
  return d;
}

/// One padded batch: ids [batch, length] (row-major), lengths, labels.
struct TokenBatch {
  int64_t batch = 0, length = 0;
  std::vector<int64_t> ids, lengths, labels;
};

/// The file's examples in order, `batch` at a time (the remainder
/// dropped), each padded to its longest sentence.
inline std::vector<TokenBatch> paddedBatches(const TokenData &d,
                                             int64_t batch) {
  std::vector<TokenBatch> out;
  for (int64_t first = 0; first + batch <= d.examples; first += batch) {
    TokenBatch b;
    b.batch = batch;
    b.length = *std::max_element(d.lengths.begin() + first,
                                 d.lengths.begin() + first + batch);
    b.ids.assign(batch * b.length, 0);
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t t = 0; t < b.length; ++t)
        b.ids[i * b.length + t] = d.ids[(first + i) * d.maxLength + t];
    b.lengths.assign(d.lengths.begin() + first,
                     d.lengths.begin() + first + batch);
    b.labels.assign(d.labels.begin() + first, d.labels.begin() + first + batch);
    out.push_back(std::move(b));
  }
  return out;
}

} // namespace estc::bench

#endif // ESTC_BENCH_RNNMODELS_H
