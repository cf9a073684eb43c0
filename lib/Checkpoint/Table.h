//===- Table.h - TF's sorted string table (the bundle's .index file) ----===//
//
// The immutable key/value table TF writes as a tensor bundle's `.index` file
// (tensorflow/core/lib/io/table*, LevelDB's layout):
//
//   data block 0 | trailer | data block 1 | trailer | ... | metaindex block |
//   trailer | index block | trailer | footer (48 bytes)
//
// A block is its entries (shared key bytes varint32, unshared key bytes
// varint32, value bytes varint32, the unshared key bytes, the value), then
// the restart points (fixed32 offsets of entries whose key is stored whole,
// every block_restart_interval entries) and their count (fixed32). Each
// block is followed by a 5-byte trailer: the compression type (0: none) and
// the masked CRC32C of the block and that byte. The index block maps a key
// >= the last key of each data block (and < the first of the next) to the
// block's handle (offset varint64, size varint64); the metaindex block is
// empty. The footer is the metaindex and index handles, zero-padded to 40
// bytes, then the magic number 0xdb4775248b80fb57 (fixed64). Integers are
// little-endian. docs/checkpoint-format.md has the details.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_CHECKPOINT_TABLE_H
#define ESTC_LIB_CHECKPOINT_TABLE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace estc {
namespace train {
namespace table {

constexpr uint64_t kTableMagicNumber = 0xdb4775248b80fb57ull;
/// Two block handles of at most 20 bytes each, then the magic number.
constexpr size_t kFooterSize = 48;
/// Compression type byte and masked CRC32C after every block.
constexpr size_t kBlockTrailerSize = 5;

/// TF's table::Options, as the bundle writer uses them (no compression).
struct TableOptions {
  /// A data block is closed once its contents reach this many bytes.
  size_t block_size = 262144;
  /// Keys stored whole every this many entries.
  int block_restart_interval = 16;
};

/// Builds a table in memory. Keys must be added in strictly increasing
/// bytewise order (std::invalid_argument otherwise).
class TableBuilder {
public:
  explicit TableBuilder(TableOptions options = {});
  void add(std::string_view key, std::string_view value);
  /// The table's bytes; the builder is empty afterwards.
  std::string finish();

private:
  struct Block {
    std::string buffer;
    std::vector<uint32_t> restarts{0};
    int counter = 0;
    std::string lastKey;
    bool empty() const { return buffer.empty(); }
    void add(std::string_view key, std::string_view value, int interval);
    std::string finish();
  };
  void flush();
  /// Appends a block and its trailer; returns the handle's encoding.
  std::string writeBlock(const std::string &contents);

  TableOptions options_;
  std::string out_;
  Block data_, index_;
  std::string lastKey_;
  bool haveKey_ = false;
  bool pendingIndexEntry_ = false;
  std::string pendingHandle_;
};

/// Every entry of a table, in key order. `file` names the table in errors:
/// a corrupt or truncated table throws DataLossError (lib/Checkpoint/
/// Checkpoint.h), one line "<file>: <what is wrong>" (bad footer or magic
/// number, a block past the end of the file, a block CRC32C mismatch, a
/// compressed block, a malformed block, keys out of order).
std::vector<std::pair<std::string, std::string>>
read_table(const std::string &file, std::string_view bytes);

/// A key as errors print it: quoted, every byte that is not printable
/// ASCII escaped (keys are bytes), so the error stays one line.
std::string quoted_key(std::string_view key);

} // namespace table
} // namespace train
} // namespace estc

#endif // ESTC_LIB_CHECKPOINT_TABLE_H
