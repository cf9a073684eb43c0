//===- ModelDirTurns.h - The estc side of the model_dir-turns tests -------===//
//
// What tf_estimator_tool and tf_partitioned_tool share (their Python
// drivers share test/e2e/model_dir_turns.py): the batches file both read
// and the RunConfig both train with.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_DATA_MODELDIRTURNS_H
#define ESTC_TEST_DATA_MODELDIRTURNS_H

#include "estimator/RunConfig.h"
#include "lib/Support/FileIO.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace estc {
namespace turns {

/// The examples of a batches file.
struct Batches {
  TensorValue x; // float32 [n, 4]
  TensorValue c; // int64 [n, idsPerExample]
  TensorValue y; // int64 [n]
};

/// Reads `path`: float32 x [n, 4], then int64 c [n, idsPerExample], then
/// int64 labels [n], little-endian; std::invalid_argument naming the file
/// when its size is not that of n examples.
inline Batches readBatches(const std::string &path, int64_t n,
                           int64_t idsPerExample) {
  std::string data = fileio::readFile(path);
  size_t xBytes = static_cast<size_t>(n * 4 * 4);
  size_t cBytes = static_cast<size_t>(n * idsPerExample * 8);
  size_t yBytes = static_cast<size_t>(n * 8);
  if (data.size() != xBytes + cBytes + yBytes)
    throw std::invalid_argument(path + ": " + std::to_string(data.size()) +
                                " bytes, not the data of " + std::to_string(n) +
                                " examples");
  Batches b;
  b.x = TensorValue::from_bytes(DType::Float32, {n, 4}, data.substr(0, xBytes));
  b.c = TensorValue::from_bytes(DType::Int64, {n, idsPerExample},
                                data.substr(xBytes, cBytes));
  b.y =
      TensorValue::from_bytes(DType::Int64, {n}, data.substr(xBytes + cBytes));
  return b;
}

/// The RunConfig of a run of `steps` steps in `model_dir`: a checkpoint
/// every `steps` steps (so the one it starts from and the last), no
/// summaries.
inline estimator::RunConfigOptions runOptions(const std::string &model_dir,
                                              int64_t steps) {
  estimator::RunConfigOptions o;
  o.model_dir = model_dir;
  o.save_checkpoints_steps = steps;
  o.save_summary_steps = 0;
  o.log_step_count_steps = steps;
  return o;
}

} // namespace turns
} // namespace estc

#endif // ESTC_TEST_DATA_MODELDIRTURNS_H
