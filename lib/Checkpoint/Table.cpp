//===- Table.cpp - TF's sorted string table -------------------------------===//

#include "lib/Checkpoint/Table.h"

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/Printable.h"

#include <optional>
#include <stdexcept>

namespace estc {
namespace train {
namespace table {

namespace {
void putFixed32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint32_t getFixed32(const char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

/// Decodes a varint of at most `maxBytes` bytes from the front of `in`.
std::optional<uint64_t> getVarint(std::string_view &in, int maxBytes) {
  uint64_t v = 0;
  for (int i = 0; i < maxBytes && i < static_cast<int>(in.size()); ++i) {
    auto byte = static_cast<unsigned char>(in[i]);
    v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if (!(byte & 0x80)) {
      in.remove_prefix(i + 1);
      return v;
    }
  }
  return std::nullopt;
}

// TF's BytewiseComparator: the shortest key k with start <= k < limit
// (start itself when there is no shorter one).
void shortestSeparator(std::string &start, std::string_view limit) {
  size_t n = std::min(start.size(), limit.size());
  size_t i = 0;
  while (i < n && start[i] == limit[i])
    ++i;
  if (i >= n)
    return; // one is a prefix of the other
  auto byte = static_cast<unsigned char>(start[i]);
  if (byte < 0xff && byte + 1 < static_cast<unsigned char>(limit[i])) {
    start[i] = static_cast<char>(byte + 1);
    start.resize(i + 1);
  }
}

// The shortest key >= key.
void shortSuccessor(std::string &key) {
  for (size_t i = 0; i < key.size(); ++i) {
    auto byte = static_cast<unsigned char>(key[i]);
    if (byte != 0xff) {
      key[i] = static_cast<char>(byte + 1);
      key.resize(i + 1);
      return;
    }
  }
}

} // namespace

std::string quoted_key(std::string_view key) {
  return "'" + escape_control_chars(key, true) + "'";
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void TableBuilder::Block::add(std::string_view key, std::string_view value,
                              int interval) {
  size_t shared = 0;
  if (counter < interval) {
    size_t n = std::min(lastKey.size(), key.size());
    while (shared < n && lastKey[shared] == key[shared])
      ++shared;
  } else {
    restarts.push_back(static_cast<uint32_t>(buffer.size()));
    counter = 0;
  }
  putVarint(buffer, shared);
  putVarint(buffer, key.size() - shared);
  putVarint(buffer, value.size());
  buffer.append(key.substr(shared));
  buffer.append(value);
  lastKey.assign(key);
  ++counter;
}

std::string TableBuilder::Block::finish() {
  std::string out = std::move(buffer);
  for (uint32_t r : restarts)
    putFixed32(out, r);
  putFixed32(out, static_cast<uint32_t>(restarts.size()));
  *this = Block();
  return out;
}

TableBuilder::TableBuilder(TableOptions options) : options_(options) {
  if (options_.block_restart_interval < 1)
    throw std::invalid_argument(
        "TableBuilder: block_restart_interval must be >= 1");
}

std::string TableBuilder::writeBlock(const std::string &contents) {
  std::string handle;
  putVarint(handle, out_.size());
  putVarint(handle, contents.size());
  out_ += contents;
  const char type = 0; // kNoCompression
  uint32_t crc = crc32c::extend(crc32c::value(contents), &type, 1);
  out_.push_back(type);
  putFixed32(out_, crc32c::mask(crc));
  return handle;
}

void TableBuilder::add(std::string_view key, std::string_view value) {
  if (haveKey_ && key <= std::string_view(lastKey_))
    throw std::invalid_argument("TableBuilder: key " + quoted_key(key) +
                                " is not after the previous key " +
                                quoted_key(lastKey_));
  if (pendingIndexEntry_) {
    std::string separator = lastKey_;
    shortestSeparator(separator, key);
    index_.add(separator, pendingHandle_, 1);
    pendingIndexEntry_ = false;
  }
  lastKey_.assign(key);
  haveKey_ = true;
  data_.add(key, value, options_.block_restart_interval);
  if (data_.buffer.size() + 4 * data_.restarts.size() + 4 >=
      options_.block_size)
    flush();
}

void TableBuilder::flush() {
  if (data_.empty())
    return;
  pendingHandle_ = writeBlock(data_.finish());
  pendingIndexEntry_ = true;
}

std::string TableBuilder::finish() {
  flush();
  std::string metaindexHandle = writeBlock(Block().finish());
  if (pendingIndexEntry_) {
    std::string successor = lastKey_;
    shortSuccessor(successor);
    index_.add(successor, pendingHandle_, 1);
    pendingIndexEntry_ = false;
  }
  std::string indexHandle = writeBlock(index_.finish());
  std::string footer = metaindexHandle + indexHandle;
  footer.resize(kFooterSize - 8, '\0');
  putFixed32(footer, static_cast<uint32_t>(kTableMagicNumber & 0xffffffffu));
  putFixed32(footer, static_cast<uint32_t>(kTableMagicNumber >> 32));
  out_ += footer;
  std::string out = std::move(out_);
  *this = TableBuilder(options_);
  return out;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
struct Handle {
  uint64_t offset = 0, size = 0;
};

class TableReader {
public:
  TableReader(const std::string &file, std::string_view bytes)
      : file_(file), bytes_(bytes) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw DataLossError(file_ + ": " + what);
  }

  Handle decodeHandle(std::string_view in, const std::string &what) const {
    auto offset = getVarint(in, 10);
    auto size = offset ? getVarint(in, 10) : std::nullopt;
    if (!offset || !size)
      fail("malformed " + what + " block handle (corrupt table)");
    return {*offset, *size};
  }

  /// The contents of a block, its trailer checked.
  std::string_view readBlock(const Handle &h, const std::string &what) const {
    if (h.offset > bytes_.size() || h.size > bytes_.size() ||
        h.offset + h.size + kBlockTrailerSize > bytes_.size() - kFooterSize)
      fail(what + " block at offset " + std::to_string(h.offset) + " (" +
           std::to_string(h.size) + " bytes) extends past the end of the " +
           "table's blocks (truncated or corrupt file)");
    std::string_view contents = bytes_.substr(h.offset, h.size);
    const char *trailer = bytes_.data() + h.offset + h.size;
    uint32_t stored = crc32c::unmask(getFixed32(trailer + 1));
    uint32_t actual = crc32c::extend(crc32c::value(contents), trailer, 1);
    if (stored != actual)
      fail(what + " block at offset " + std::to_string(h.offset) +
           ": block checksum mismatch (the file is corrupt)");
    if (trailer[0] != 0)
      fail(what + " block at offset " + std::to_string(h.offset) +
           " is compressed (type " +
           std::to_string(static_cast<unsigned char>(trailer[0])) +
           "); estc reads uncompressed tables only, as TF writes them");
    return contents;
  }

  /// The entries of one block, appended to `out`.
  void decodeBlock(std::string_view block, const std::string &what,
                   std::vector<std::pair<std::string, std::string>> &out) {
    auto bad = [&](const std::string &why) {
      fail(what + " block: " + why + " (corrupt table)");
    };
    if (block.size() < 4)
      bad("shorter than its restart count");
    uint64_t restarts = getFixed32(block.data() + block.size() - 4);
    if (restarts > (block.size() - 4) / 4)
      bad(std::to_string(restarts) + " restart points do not fit in " +
          std::to_string(block.size()) + " bytes");
    std::string_view in = block.substr(0, block.size() - 4 - 4 * restarts);
    std::string key;
    while (!in.empty()) {
      auto shared = getVarint(in, 5);
      auto unshared = shared ? getVarint(in, 5) : std::nullopt;
      auto valueSize = unshared ? getVarint(in, 5) : std::nullopt;
      if (!valueSize)
        bad("malformed entry header");
      if (*shared > key.size())
        bad("an entry shares " + std::to_string(*shared) +
            " bytes with a previous key of " + std::to_string(key.size()));
      if (*unshared > in.size() || *valueSize > in.size() - *unshared)
        bad("an entry extends past the end of the block");
      key.resize(*shared);
      key.append(in.substr(0, *unshared));
      std::string value(in.substr(*unshared, *valueSize));
      in.remove_prefix(*unshared + *valueSize);
      if (haveLast_ && key <= lastKey_)
        fail("key " + quoted_key(key) + " is not after the previous key " +
             quoted_key(lastKey_) + " (corrupt table)");
      lastKey_ = key;
      haveLast_ = true;
      out.emplace_back(key, std::move(value));
    }
  }

  std::vector<std::pair<std::string, std::string>> readAll() {
    if (bytes_.size() < kFooterSize)
      fail("file is " + std::to_string(bytes_.size()) +
           " bytes, too short for a table footer (truncated?)");
    std::string_view footer = bytes_.substr(bytes_.size() - kFooterSize);
    uint64_t magic = getFixed32(footer.data() + 40) |
                     static_cast<uint64_t>(getFixed32(footer.data() + 44))
                         << 32;
    if (magic != kTableMagicNumber)
      fail("bad magic number in the table footer (not a TF checkpoint "
           "index, or truncated)");
    std::string_view handles = footer.substr(0, 40);
    auto metaOffset = getVarint(handles, 10);
    auto metaSize = metaOffset ? getVarint(handles, 10) : std::nullopt;
    if (!metaSize)
      fail("malformed metaindex handle in the table footer");
    Handle index = decodeHandle(handles, "index");
    std::vector<std::pair<std::string, std::string>> indexEntries;
    decodeBlock(readBlock(index, "index"), "index", indexEntries);
    haveLast_ = false;
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &[separator, handle] : indexEntries) {
      Handle h = decodeHandle(handle, "data");
      std::string what = "data";
      size_t first = out.size();
      decodeBlock(readBlock(h, what), what, out);
      // Every key of the block is <= its index key.
      if (out.size() > first && out.back().first > separator)
        fail("key " + quoted_key(out.back().first) +
             " is after its index entry " + quoted_key(separator) +
             " (corrupt table)");
    }
    return out;
  }

private:
  const std::string &file_;
  std::string_view bytes_;
  std::string lastKey_;
  bool haveLast_ = false;
};
} // namespace

std::vector<std::pair<std::string, std::string>>
read_table(const std::string &file, std::string_view bytes) {
  return TableReader(file, bytes).readAll();
}

} // namespace table
} // namespace train
} // namespace estc
