//===- DatasetInternal.h - What the stages of lib/Data share -------------===//
//
// Internal to lib/Data: the random stream of shuffle and list_files, the
// factories of the threaded stages (DatasetAsync.cpp), and the cache file
// format (element records with CRCs).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_DATASETINTERNAL_H
#define ESTC_LIB_DATA_DATASETINTERNAL_H

#include "lib/Data/Dataset.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace data {
namespace detail {

/// `s` with control characters as \xHH, so that a message stays one line.
std::string printable(std::string_view s);

/// splitmix64's finalizer.
uint64_t mix64(uint64_t x);

/// Uniform draws from a counter-based stream: draw i is a function of the
/// seed and i alone, so the position is the whole state.
class RandomStream {
public:
  explicit RandomStream(uint64_t seed, uint64_t position = 0)
      : seed_(seed), position_(position) {}
  /// Uniform in [0, n), n > 0.
  uint64_t next_below(uint64_t n);
  uint64_t position() const { return position_; }

private:
  uint64_t seed_;
  uint64_t position_;
};

/// The seed, or a fresh one from std::random_device.
uint64_t resolve_seed(std::optional<uint64_t> seed);
/// "42" or "random", for describe().
std::string describe_seed(std::optional<uint64_t> seed);

std::shared_ptr<const DatasetImpl>
make_parallel_map(std::shared_ptr<const DatasetImpl> input, Dataset::MapFn fn,
                  int64_t num_parallel_calls, bool deterministic);
std::shared_ptr<const DatasetImpl>
make_prefetch(std::shared_ptr<const DatasetImpl> input, int64_t buffer_size);
std::shared_ptr<const DatasetImpl>
make_interleave(std::shared_ptr<const DatasetImpl> input, Dataset::DatasetFn fn,
                int64_t cycle_length, int64_t block_length,
                int64_t num_parallel_calls, bool deterministic);

/// padded_batch's stacking of `elements` (at least one): dense leaves
/// padded to `padding`'s shapes (-1: the largest of the elements) with its
/// values (0 or "" without); DataError as padded_batch's.
Element stack_padded(const std::vector<Element> &elements,
                     const Dataset::Padding &padding);

/// cache(filename)'s file: nullptr when it does not exist; DataError when
/// it exists but is not a complete, intact cache file.
std::shared_ptr<const std::vector<Element>>
read_cache_file(const std::string &path);
/// Writes the file atomically (a temporary file renamed into place).
void write_cache_file(const std::string &path,
                      const std::vector<Element> &elements);

} // namespace detail
} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_DATASETINTERNAL_H
