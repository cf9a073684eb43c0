//===- tf_table_fuzzer.cpp - TF's sorted string table (.index) -----------===//
//
// A TF checkpoint's .index file read with table::read_table: the footer,
// the index block, every data block with its CRC32C, every entry. The
// documented failure is DataLossError, one line naming the file. A table
// that reads has strictly increasing keys, and written back (TableBuilder,
// with small blocks so that the index has many entries) reads to the same
// entries.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/Table.h"

using namespace estc;
using namespace estc::fuzz;
using namespace estc::train;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string file = "model.ckpt-1.index";
  std::vector<std::pair<std::string, std::string>> entries;
  try {
    entries = table::read_table(file, bytesOf(data, size));
  } catch (const DataLossError &e) {
    checkFileError(e.what(), file);
    return 0;
  }
  for (size_t i = 1; i < entries.size(); ++i)
    if (!(entries[i - 1].first < entries[i].first))
      die("read_table returned keys out of order");

  table::TableBuilder builder({.block_size = 64, .block_restart_interval = 3});
  for (const auto &[key, value] : entries)
    builder.add(key, value);
  std::string copy = builder.finish();
  try {
    if (table::read_table(file, copy) != entries)
      die("a table written back reads differently");
  } catch (const DataLossError &e) {
    die(std::string("a table written back does not read: ") + e.what());
  }
  return 0;
}
